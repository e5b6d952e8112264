/* dppeers: the peers the data plane serves; see dppeers.h. */
#include "network/dppeers.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "network/peernet.h"
#include "peering/identity.h"
#include "peering/objects.h"
#include "peering/resources.h"

bool dpp_fc_peer(const json_t *fc, const char **ret_id, const char **ret_tenant)
{
    const char *id = json_string_value(json_object_get(
        json_object_get(json_object_get(fc, "spec"), "clusterIdentity"), "clusterID"));
    const char *tns = json_string_value(json_object_get(
        json_object_get(json_object_get(fc, "status"), "tenantNamespace"), "local"));
    bool peered = strcmp(peer_fc_condition(fc, "OutgoingPeering"), "Established") == 0 ||
                  strcmp(peer_fc_condition(fc, "IncomingPeering"), "Established") == 0;

    if (!id || !peer_cluster_id_valid(id) || !tns || !*tns || !peered || !pnet_enabled(fc))
        return false;
    *ret_id = id;
    *ret_tenant = tns;
    return true;
}

int dpp_peer_net(const struct inf_informer *ncs, const char *tenant, const char *id,
                 struct dpo_peer_net *ret, char *reason, size_t len)
{
    char name[128];
    json_t *nc;
    int r;

    snprintf(name, sizeof(name), PEER_NETCFG_PREFIX "%s", id);
    nc = inf_get(ncs, tenant, name);
    if (!nc) {
        snprintf(reason, len, "no NetworkConfig of the peer here yet");
        return -EAGAIN;
    }
    r = dpo_nc_parse(nc, ret, reason, len);
    json_decref(nc);
    return r;
}

bool dpp_conflicts(const struct dpo_peer_net *a, const struct dpo_peer_net *b)
{
    if (a->local.family != b->local.family)
        return false;
    return !cidr_equal(&a->local, &b->local) || cidr_overlaps(&a->nat.seen_here, &b->nat.seen_here);
}
