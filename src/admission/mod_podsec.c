/* admission/mod_podsec: see mod_podsec.h. */
#include "admission/mod_podsec.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "peering/resources.h"

#define MOD "admission"

int adm_podsec_init(struct agent *a, struct adm_podsec *ps)
{
    memset(ps, 0, sizeof(*ps));
    return agent_informer(a, &peer_res_clusterconfigs, NULL, NULL, 0, NULL, NULL, &ps->config);
}

enum adm_podsec_level adm_podsec_level_now(const struct adm_podsec *ps, const char *id)
{
    json_t *cc = ps->config ? inf_get(ps->config, NULL, PEER_CLUSTER_CONFIG) : NULL;
    bool bad = false;
    enum adm_podsec_level l = adm_podsec_level_for(cc, id, &bad);

    if (bad)
        log_warn(MOD,
                 "ClusterConfig %s: offloadingConfig.podSecurity names a level that is not "
                 "privileged, baseline or restricted: restricted applies to %s",
                 PEER_CLUSTER_CONFIG, id ? id : "every consumer");
    json_decref(cc);
    return l;
}

int adm_podsec_enforce(const struct adm_podsec *ps, const struct adm_request *req,
                       const char *origin, struct adm_verdict *ret)
{
    int r;

    if (!ps->config || !inf_synced(ps->config)) {
        ret->allowed = false;
        ret->code = 403;
        snprintf(ret->message, sizeof(ret->message),
                 "the provider's ClusterConfig is not known to its agent yet: try again");
        return -EAGAIN;
    }
    r = adm_podsec_check(adm_podsec_level_now(ps, origin), req->object, ret->message,
                         sizeof(ret->message));
    if (r == 0)
        return 0;
    ret->allowed = false;
    ret->code = r == -EACCES ? 403 : 400;
    if (r != -EACCES)
        snprintf(ret->message, sizeof(ret->message), "the review carries no pod to check");
    return r;
}
