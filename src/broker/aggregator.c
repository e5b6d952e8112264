/* brk aggregator: see aggregator.h. */
#include "broker/aggregator.h"
#include "broker/aggregate.h"
#include "broker/core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/ctl.h"
#include "common/json.h"
#include "common/log.h"
#include "kube/names.h"
#include "peering/objects.h"
#include "peering/resources.h"

#define MOD           BRK_MODULE_AGGREGATOR
#define FIELD_MANAGER "cliqo-broker"
#define MANAGED_BY    "app.kubernetes.io/managed-by"

struct agg {
    struct ctl_module mod; /* first */
    struct brk_core *core;
    struct inf_informer *cms;
};

bool brk_is_consumer(const json_t *fc)
{
    const json_t *conds = json_object_get(json_object_get(fc, "status"), "peeringConditions");
    size_t i;
    json_t *c;

    json_array_foreach(conds, i, c)
    {
        const char *t = jsn_str(c, "type"), *s = jsn_str(c, "status");

        if (t && s && strcmp(t, "IncomingPeering") == 0)
            return strcmp(s, "Established") == 0;
    }
    return false;
}

struct offers {
    struct brk_offer_in *in;
    size_t n, cap;
};

static void offer_visit(const struct brk_provider_view *p, void *data)
{
    struct offers *o = data;

    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 16;
        struct brk_offer_in *n = realloc(o->in, cap * sizeof(*n));

        if (!n)
            return;
        o->in = n;
        o->cap = cap;
    }
    o->in[o->n++] =
        (struct brk_offer_in){.provider = p->id, .selected = p->selected, .resources = p->offer};
}

static void reconcile(struct ctl *c, const char *key)
{
    struct agg *g = ctl_data(c);
    char name[sizeof(BRK_OFFER_PREFIX) + BRK_ID_MAX];
    json_t *fc = peer_fc_find(brk_core_fcs(g->core), key), *cur, *sum = NULL, *obj = NULL;
    struct offers of = {0};
    struct brk_agg_stats st;
    struct ctl_rec *r;
    char *text = NULL;

    snprintf(name, sizeof(name), "%s%s", BRK_OFFER_PREFIX, key);
    cur = inf_get(g->cms, agent_namespace(ctl_agent(c)), name);
    if (!fc || !brk_is_consumer(fc)) {
        if (!cur) {
            ctl_skip(c, key, CTL_DONE);
            goto out;
        }
        if (!(r = ctl_rec_begin(c, key)))
            goto out;
        log_info(MOD, "%s is no longer a consumer of this cluster: deleting ConfigMap %s", key,
                 name);
        if (kapi_delete(agent_kube(ctl_agent(c)), &kapi_configmaps, agent_namespace(ctl_agent(c)),
                        name, NULL, ctl_after_write, r) < 0)
            ctl_rec_end(r, CTL_RETRY);
        goto out;
    }
    brk_core_foreach_provider(g->core, offer_visit, &of);
    sum = brk_aggregate(of.in, of.n, key, &st);
    text = sum ? json_dumps(sum, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    if (!text) {
        ctl_skip(c, key, CTL_RETRY);
        goto out;
    }
    if (cur && jsn_str_at(cur, "data", "resources", NULL) &&
        strcmp(jsn_str_at(cur, "data", "resources", NULL), text) == 0) {
        ctl_skip(c, key, CTL_DONE);
        goto out;
    }
    if (!(r = ctl_rec_begin(c, key)))
        goto out;
    log_info(MOD, "consumer %s: offering the sum of %zu selected provider(s): %s", key,
             st.providers, text);
    obj = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s,s:s}},s:{s:s}}", "apiVersion", "v1", "kind",
                    "ConfigMap", "metadata", "name", name, "namespace",
                    agent_namespace(ctl_agent(c)), "labels", BRK_OFFER_LABEL, "true", MANAGED_BY,
                    FIELD_MANAGER, "data", "resources", text);
    if (!obj ||
        kapi_apply(agent_kube(ctl_agent(c)), &kapi_configmaps, agent_namespace(ctl_agent(c)), name,
                   NULL, obj, FIELD_MANAGER, true, ctl_after_write, r) < 0)
        ctl_rec_end(r, CTL_RETRY);
out:
    free(text);
    free(of.in);
    json_decref(obj);
    json_decref(sum);
    json_decref(cur);
    json_decref(fc);
}

static void enqueue_fc(json_t *fc, void *data)
{
    struct agg *g = data;
    const char *id = jsn_str_at(fc, "spec", "clusterIdentity", "clusterID", NULL);

    if (id && kname_dns_label(id) && strlen(id) < BRK_ID_MAX)
        ctl_enqueue(g->mod.ctl, id);
}

static void enqueue_cm(json_t *cm, void *data)
{
    struct agg *g = data;
    const char *name = kapi_obj_name(cm);

    if (name && strncmp(name, BRK_OFFER_PREFIX, strlen(BRK_OFFER_PREFIX)) == 0)
        ctl_enqueue(g->mod.ctl, name + strlen(BRK_OFFER_PREFIX));
}

static void on_changed(unsigned what, void *data)
{
    struct agg *g = data;

    (void)what;
    inf_foreach(brk_core_fcs(g->core), enqueue_fc, g);
    inf_foreach(g->cms, enqueue_cm, g);
}

static void on_cm(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    enqueue_cm(obj, data);
}

static void on_cm_update(struct inf_informer *inf, json_t *old, json_t *obj, void *data)
{
    (void)old;
    on_cm(inf, obj, data);
}

int brk_agg_init(struct agent *a)
{
    struct inf_handlers h = {.on_add = on_cm, .on_update = on_cm_update, .on_delete = on_cm};
    struct ctl_options co = {.name = MOD,
                             .rec_size = sizeof(struct ctl_rec),
                             .reconcile = reconcile,
                             .queue = {.max_concurrent = 4}};
    struct agg *g = ctl_module_new(a, MOD, sizeof(*g));
    int r;

    if (!g)
        return -ENOMEM;
    g->core = brk_core_of(a);
    if (!g->core)
        return -EINVAL;
    r = agent_informer(a, &kapi_configmaps, agent_namespace(a), BRK_OFFER_LABEL "=true", 0, &h, g,
                       &g->cms);
    if (r == 0)
        r = ctl_new(a, &co, g, &g->mod.ctl);
    if (r == 0)
        r = brk_core_subscribe(g->core, on_changed, g);
    return r;
}
