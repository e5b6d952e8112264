/* brk orchestrator: see orchestrator.h. */
#include "broker/orchestrator.h"
#include "broker/core.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent/ctl.h"
#include "common/json.h"
#include "common/log.h"
#include "kube/names.h"
#include "offloading/nsof.h"
#include "peering/resources.h"

#define MOD           BRK_MODULE_ORCHESTRATOR
#define FIELD_MANAGER "cliqo-broker"
#define MANAGED_BY    "app.kubernetes.io/managed-by"
#define NOBODY        "none.invalid" /* a valid cluster ID value no virtual node carries */

struct orch {
    struct ctl_module mod; /* first */
    struct brk_core *core;
    struct inf_informer *ns, *nsofs;
};

json_t *brk_orch_spec(const char *origin, const char *const *selected, size_t n)
{
    json_t *in = json_array(), *exprs, *spec;

    if (!in)
        return NULL;
    for (size_t i = 0; i < n && i < NSOF_MAX_VALUES; i++)
        json_array_append_new(in, json_string(selected[i]));
    if (json_array_size(in) == 0)
        json_array_append_new(in, json_string(NOBODY));
    exprs = json_pack("[{s:s,s:s,s:[s]},{s:s,s:s,s:[s]},{s:s,s:s,s:o}]", "key", PEER_LABEL_TYPE,
                      "operator", "In", "values", PEER_VIRTUAL_NODE, "key",
                      PEER_LABEL_REMOTE_CLUSTER, "operator", "NotIn", "values", origin, "key",
                      PEER_LABEL_REMOTE_CLUSTER, "operator", "In", "values", in);
    if (!exprs)
        return NULL;
    spec = json_pack("{s:s,s:s,s:{s:[{s:o}]}}", "namespaceMappingStrategy", "EnforceSameName",
                     "podOffloadingStrategy", "Remote", "clusterSelector", "nodeSelectorTerms",
                     "matchExpressions", exprs);
    return spec;
}

static void reconcile(struct ctl *c, const char *key)
{
    struct orch *o = ctl_data(c);
    json_t *ns = inf_get(o->ns, NULL, key), *cur = NULL, *spec = NULL, *obj = NULL;
    const char *origin = jsn_label(ns, PEER_LABEL_ORIGIN);
    const char *ids[NSOF_MAX_VALUES];
    struct ctl_rec *r;
    size_t n;

    if (!ns || json_object_get(json_object_get(ns, "metadata"), "deletionTimestamp") || !origin ||
        !kname_dns_label(origin)) {
        ctl_skip(c, key, CTL_DONE);
        goto out;
    }
    n = brk_core_selected(o->core, ids, NSOF_MAX_VALUES);
    if (n > NSOF_MAX_VALUES)
        log_warn(MOD, "%zu providers selected: the NamespaceOffloading of %s lists the first %d", n,
                 key, NSOF_MAX_VALUES);
    /* Never the origin: its pods would go back where they came from. */
    {
        size_t m = n < NSOF_MAX_VALUES ? n : NSOF_MAX_VALUES, j = 0;

        for (size_t i = 0; i < m; i++)
            if (strcmp(ids[i], origin) != 0)
                ids[j++] = ids[i];
        n = j;
    }
    spec = brk_orch_spec(origin, ids, n);
    cur = inf_get(o->nsofs, key, NSOF_NAME);
    if (!spec) {
        ctl_skip(c, key, CTL_RETRY);
        goto out;
    }
    if (cur && json_equal(json_object_get(cur, "spec"), spec)) {
        ctl_skip(c, key, CTL_DONE);
        goto out;
    }
    r = ctl_rec_begin(c, key);
    if (!r)
        goto out;
    log_info(MOD, "namespace %s (offloaded here by %s): offloading to %zu selected provider(s)",
             key, origin, n);
    obj = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:O}", "apiVersion", NSOF_GROUP_VERSION, "kind",
                    NSOF_KIND, "metadata", "name", NSOF_NAME, "namespace", key, "labels",
                    MANAGED_BY, FIELD_MANAGER, "spec", spec);
    if (!obj || kapi_apply(agent_kube(ctl_agent(c)), &peer_res_namespaceoffloadings, key, NSOF_NAME,
                           NULL, obj, FIELD_MANAGER, true, ctl_after_write, r) < 0)
        ctl_rec_end(r, CTL_RETRY);
out:
    json_decref(obj);
    json_decref(spec);
    json_decref(cur);
    json_decref(ns);
}

static void enqueue_ns(json_t *ns, void *data)
{
    struct orch *o = data;

    ctl_enqueue(o->mod.ctl, kapi_obj_name(ns));
}

static void on_changed(unsigned what, void *data)
{
    struct orch *o = data;

    if (what & BRK_CHANGED_SELECTION)
        inf_foreach(o->ns, enqueue_ns, o);
}

static void on_ns(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    enqueue_ns(obj, data);
}

static void on_ns_update(struct inf_informer *inf, json_t *old, json_t *obj, void *data)
{
    (void)old;
    on_ns(inf, obj, data);
}

static void on_nsof(struct inf_informer *inf, json_t *obj, void *data)
{
    struct orch *o = data;

    (void)inf;
    ctl_enqueue(o->mod.ctl, kapi_obj_namespace(obj));
}

static void on_nsof_update(struct inf_informer *inf, json_t *old, json_t *obj, void *data)
{
    (void)old;
    on_nsof(inf, obj, data);
}

int brk_orch_init(struct agent *a)
{
    struct inf_handlers nh = {.on_add = on_ns, .on_update = on_ns_update, .on_delete = on_ns};
    struct inf_handlers oh = {.on_add = on_nsof, .on_update = on_nsof_update, .on_delete = on_nsof};
    struct ctl_options co = {.name = MOD,
                             .rec_size = sizeof(struct ctl_rec),
                             .reconcile = reconcile,
                             .queue = {.max_concurrent = 4}};
    struct orch *o = ctl_module_new(a, MOD, sizeof(*o));
    int r;

    if (!o)
        return -ENOMEM;
    o->core = brk_core_of(a);
    if (!o->core)
        return -EINVAL;
    /* The namespaces made here for a consumer's offloading carry its ID (the namespace-map
     * controller's label); a resync catches what an event missed. */
    r = agent_informer(a, &kapi_namespaces, NULL, PEER_LABEL_ORIGIN, 0, &nh, o, &o->ns);
    if (r == 0)
        r = agent_informer(a, &peer_res_namespaceoffloadings, NULL, MANAGED_BY "=" FIELD_MANAGER, 0,
                           &oh, o, &o->nsofs);
    if (r == 0)
        r = ctl_new(a, &co, o, &o->mod.ctl);
    if (r == 0)
        r = brk_core_subscribe(o->core, on_changed, o);
    return r;
}
