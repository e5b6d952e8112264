/* offloading: see offloading.h. */
#include "offloading/offloading.h"
#include "admission/admission.h"
#include "agent/ctl.h"
#include "agent/identity.h"
#include "offloading/nsof.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "peering/objects.h"
#include "peering/resources.h"

#define MOD         "offloading"
#define MAX_PEERS   256
#define VNODE_SEL   NSOF_VNODE_LABEL "=" NSOF_VNODE_VALUE
#define LABELLED_NS NSOF_LABEL_SCHEDULING "=true"

/* The module's state (agent_module_data "offloading"). */
struct offl {
    struct ctl_module mod; /* first */
    struct inf_informer *nsofs, *vnodes, *labelled, *config;
    struct metrics_family *m_phase;
};

struct rec {
    struct ctl_rec h; /* first */
    struct offl *o;
    char ns[64], name[128];
};

static const json_t *meta_of(const json_t *o)
{
    return json_object_get(o, "metadata");
}

static bool deleting(const json_t *o)
{
    return json_object_get(meta_of(o), "deletionTimestamp") != NULL;
}

/* ---- writes ----------------------------------------------------------------------------------
 */

static void set_label(struct rec *r, const char *ns, bool on)
{
    log_info(MOD, "%s namespace %s %s=true", on ? "labelling" : "unlabelling", ns,
             NSOF_LABEL_SCHEDULING);
    ctl_merge_patch(&r->h, &kapi_namespaces, NULL, ns, NULL,
                    json_pack("{s:{s:{s:o}}}", "metadata", "labels", NSOF_LABEL_SCHEDULING,
                              on ? json_string("true") : json_null()));
}

static void set_finalizer(struct rec *r, const json_t *obj, bool on)
{
    ctl_set_finalizer(&r->h, &peer_res_namespaceoffloadings, obj, NSOF_FINALIZER, on);
}

/* ---- reconcile -------------------------------------------------------------------------------
 */

struct selected {
    const json_t *selector;
    const char *ids[MAX_PEERS];
    size_t n;
    json_t *keep; /* holds the nodes whose IDs are listed */
};

static void select_visit(json_t *node, void *data)
{
    struct selected *s = data;
    const char *id = jsn_label(node, PEER_LABEL_REMOTE_CLUSTER);
    const json_t *labels = json_object_get(meta_of(node), "labels");

    if (!id || s->n >= MAX_PEERS || !nsof_selector_match(s->selector, kapi_obj_name(node), labels))
        return;
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->ids[i], id) == 0)
            return;
    json_array_append(s->keep, node);
    s->ids[s->n++] =
        jsn_label(json_array_get(s->keep, json_array_size(s->keep) - 1), PEER_LABEL_REMOTE_CLUSTER);
}

struct has_peer {
    const char *id;
    bool found;
};

static void peer_visit(json_t *node, void *data)
{
    struct has_peer *h = data;
    const char *id = jsn_label(node, PEER_LABEL_REMOTE_CLUSTER);

    if (id && strcmp(id, h->id) == 0)
        h->found = true;
}

/* Writes the status fields this module owns when they differ. Returns true when a write went
 * out (the pass then ends in the write's callback). */
static bool write_status(struct rec *r, const json_t *obj, enum nsof_phase phase,
                         const char *remote, const char *message)
{
    const json_t *status = json_object_get(obj, "status");
    const char *cur_phase = json_string_value(json_object_get(status, "offloadingPhase"));
    const char *cur_remote = json_string_value(json_object_get(status, "remoteNamespaceName"));
    const char *cur_msg = json_string_value(json_object_get(status, "message"));
    const json_t *gen = json_object_get(meta_of(obj), "generation");
    const json_t *cur_gen = json_object_get(status, "observedGeneration");
    json_t *patch;

    if (cur_phase && strcmp(cur_phase, nsof_phase_name(phase)) == 0 &&
        ((!remote && !cur_remote) || (remote && cur_remote && strcmp(remote, cur_remote) == 0)) &&
        ((!message && !cur_msg) || (message && cur_msg && strcmp(message, cur_msg) == 0)) &&
        (!json_is_integer(gen) || json_equal((json_t *)gen, (json_t *)cur_gen)))
        return false;
    if (!cur_phase || strcmp(cur_phase, nsof_phase_name(phase)) != 0)
        log_info(MOD, "%s: %s%s%s", r->h.key, nsof_phase_name(phase), message ? ": " : "",
                 message ? message : "");
    patch = json_pack("{s:{s:s,s:o,s:o}}", "status", "offloadingPhase", nsof_phase_name(phase),
                      "remoteNamespaceName", remote ? json_string(remote) : json_null(), "message",
                      message ? json_string(message) : json_null());
    if (patch && json_is_integer(gen))
        json_object_set(json_object_get(patch, "status"), "observedGeneration", (json_t *)gen);
    ctl_merge_patch(&r->h, &peer_res_namespaceoffloadings, r->ns, r->name, "status", patch);
    return true;
}

static void reconcile_deleting(struct rec *r, const json_t *obj, json_t *nsobj)
{
    const json_t *conds =
        json_object_get(json_object_get(obj, "status"), "remoteNamespacesConditions");
    const char *k;
    json_t *v;

    if (!peer_has_finalizer(obj, NSOF_FINALIZER)) {
        ctl_rec_end(&r->h, CTL_DONE);
        return;
    }
    if (write_status(r, obj, NSOF_PHASE_TERMINATING,
                     json_string_value(
                         json_object_get(json_object_get(obj, "status"), "remoteNamespaceName")),
                     NULL))
        return;
    /* A provider with no virtual node here any more will never remove its key. */
    json_object_foreach((json_t *)conds, k, v)
    {
        struct has_peer h = {k, false};

        inf_foreach(r->o->vnodes, peer_visit, &h);
        if (!h.found) {
            log_info(MOD, "%s: provider %s has no virtual node any more: removing its key",
                     r->h.key, k);
            ctl_merge_patch(&r->h, &peer_res_namespaceoffloadings, r->ns, r->name, "status",
                            json_pack("{s:{s:{s:n}}}", "status", "remoteNamespacesConditions", k));
            return;
        }
    }
    if (json_object_size(conds) > 0) {
        ctl_rec_end(&r->h, CTL_WAIT); /* the virtual kubelets remove their namespaces and keys */
        return;
    }
    if (nsobj && jsn_label(nsobj, NSOF_LABEL_SCHEDULING)) {
        set_label(r, r->ns, false);
        return;
    }
    log_info(MOD, "%s: every provider released the namespace: removing the finalizer", r->h.key);
    set_finalizer(r, obj, false);
}

static void reconcile(struct ctl *c, const char *key)
{
    struct offl *o = ctl_data(c);
    const char *slash = strchr(key, '/');
    struct rec *r;
    json_t *obj = NULL, *nsobj = NULL;
    struct nsof_spec spec;
    struct selected sel = {0};
    char err[256], remote[NSOF_NS_MAX + 1];
    bool invalid;
    enum nsof_phase phase;

    if (!slash || (size_t)(slash - key) >= sizeof(r->ns) || strlen(slash + 1) >= sizeof(r->name)) {
        wq_done(ctl_queue(c), key);
        return;
    }
    r = (struct rec *)ctl_rec_begin(c, key);
    if (!r)
        return;
    r->o = o;
    snprintf(r->ns, sizeof(r->ns), "%.*s", (int)(slash - key), key);
    snprintf(r->name, sizeof(r->name), "%s", slash + 1);
    obj = inf_get(o->nsofs, r->ns, r->name);
    nsobj = inf_get(o->labelled, NULL, r->ns);
    if (!obj) {
        json_t *other = inf_get(o->nsofs, r->ns, NSOF_NAME);

        /* Labelled = has a NamespaceOffloading `offloading`. */
        if (nsobj && !other && !deleting(nsobj))
            set_label(r, r->ns, false);
        else
            ctl_rec_end(&r->h, CTL_DONE);
        json_decref(other);
        goto out;
    }
    if (strcmp(r->name, NSOF_NAME) != 0) {
        char msg[128];

        snprintf(msg, sizeof(msg), "a NamespaceOffloading must be named '%s' (one per namespace)",
                 NSOF_NAME);
        if (!write_status(r, obj, NSOF_PHASE_INVALID, NULL, msg))
            ctl_rec_end(&r->h, CTL_DONE);
        goto out;
    }
    if (deleting(obj)) {
        reconcile_deleting(r, obj, nsobj);
        goto out;
    }
    /* Reserved namespaces are never labelled (the pod webhook would act in them) nor asked of
     * providers (mapxlate.c refuses them too). */
    if (nsof_home_offloadable(r->ns, agent_namespace(o->mod.a), false, err, sizeof(err)) < 0) {
        if (nsobj && jsn_label(nsobj, NSOF_LABEL_SCHEDULING))
            set_label(r, r->ns, false);
        else if (!write_status(r, obj, NSOF_PHASE_INVALID, NULL, err))
            ctl_rec_end(&r->h, CTL_DONE);
        goto out;
    }
    if (!peer_has_finalizer(obj, NSOF_FINALIZER)) {
        set_finalizer(r, obj, true);
        goto out;
    }
    if (!nsobj) {
        set_label(r, r->ns, true);
        goto out;
    }
    invalid = nsof_spec_parse(obj, &spec, err, sizeof(err)) < 0;
    remote[0] = '\0';
    if (!invalid) {
        if (!identity_cluster_id(o->mod.a)) {
            ctl_rec_end_after(&r->h, 500); /* the identity module has not read the cluster ID yet */
            goto out;
        }
        if (nsof_remote_namespace(r->ns, spec.mapping, identity_cluster_name(o->mod.a),
                                  identity_cluster_id(o->mod.a), remote, sizeof(remote)) < 0)
            remote[0] = '\0';
        sel.selector = spec.selector;
        sel.keep = json_array();
        if (!sel.keep) {
            ctl_rec_end(&r->h, CTL_RETRY);
            goto out;
        }
        inf_foreach(o->vnodes, select_visit, &sel);
    }
    phase =
        nsof_phase_of(invalid, false,
                      json_object_get(json_object_get(obj, "status"), "remoteNamespacesConditions"),
                      sel.ids, sel.n);
    if (!write_status(r, obj, phase, remote[0] ? remote : NULL, invalid ? err : NULL))
        ctl_rec_end(&r->h, CTL_DONE);
out:
    json_decref(sel.keep);
    json_decref(obj);
    json_decref(nsobj);
}

/* ---- the pod webhook ---------------------------------------------------------------------------
 */

static long long grace_seconds(struct offl *o)
{
    json_t *cc = inf_get(o->config, NULL, PEER_CLUSTER_CONFIG);
    const json_t *g =
        json_object_get(json_object_get(json_object_get(cc, "spec"), "offloadingConfig"),
                        "unreachableGraceSeconds");
    long long v = OFFL_GRACE_DEFAULT;

    if (json_is_integer(g) && json_integer_value(g) >= 0 && json_integer_value(g) <= OFFL_GRACE_MAX)
        v = json_integer_value(g);
    json_decref(cc);
    return v;
}

static void mutate(const struct adm_request *req, struct adm_verdict *v, void *data)
{
    struct offl *o = data;
    json_t *nsof;
    struct nsof_spec spec;
    char err[256];
    int rc;

    if (strcmp(req->operation, "CREATE") != 0 || strcmp(req->kind, "Pod") != 0 || req->group[0])
        return;
    nsof = inf_get(o->nsofs, req->ns, NSOF_NAME);
    if (!nsof)
        return; /* not offloaded (any more): Local */
    if (deleting(nsof) || nsof_spec_parse(nsof, &spec, err, sizeof(err)) < 0) {
        json_decref(nsof);
        return; /* terminating or invalid: Local */
    }
    rc = nsof_pod_patch(req->object, spec.pods, spec.selector, grace_seconds(o), &v->patch, err,
                        sizeof(err));
    if (rc < 0) {
        v->allowed = false;
        v->code = 400;
        snprintf(v->message, sizeof(v->message),
                 "cannot apply the %s offloading of namespace %s to this pod: %s",
                 nsof_pods_name(spec.pods), req->ns, rc == -ENOMEM ? "out of memory" : err);
        v->patch = NULL;
    }
    json_decref(nsof);
}

/* ---- module ------------------------------------------------------------------------------------
 */

/* A virtual node came, went or changed its labels: every selection may change. */
static void on_vnode(struct inf_informer *inf, json_t *obj, void *data)
{
    struct offl *o = data;

    (void)inf;
    (void)obj;
    ctl_enqueue_all(o->mod.ctl, o->nsofs);
}

static void on_vnode_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    const json_t *a = json_object_get(meta_of(old_obj), "labels");
    const json_t *b = json_object_get(meta_of(new_obj), "labels");

    if (!json_equal((json_t *)a, (json_t *)b) || deleting(old_obj) != deleting(new_obj))
        on_vnode(inf, new_obj, data);
}

static void on_labelled(struct inf_informer *inf, json_t *obj, void *data)
{
    struct offl *o = data;

    (void)inf;
    ctl_enqueue_ns_name(o->mod.ctl, kapi_obj_name(obj), NSOF_NAME);
}

static void on_labelled_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj,
                               void *data)
{
    (void)old_obj;
    on_labelled(inf, new_obj, data);
}

struct phase_count {
    double n[NSOF_PHASE_INVALID + 1];
    double unknown;
};

static void count_visit(json_t *obj, void *data)
{
    struct phase_count *c = data;
    const char *p =
        json_string_value(json_object_get(json_object_get(obj, "status"), "offloadingPhase"));

    for (int i = 0; p && i <= NSOF_PHASE_INVALID; i++)
        if (strcmp(p, nsof_phase_name((enum nsof_phase)i)) == 0) {
            c->n[i]++;
            return;
        }
    c->unknown++;
}

static void collect(struct metrics_registry *reg, void *data)
{
    struct offl *o = data;
    struct phase_count c = {0};

    (void)reg;
    inf_foreach(o->nsofs, count_visit, &c);
    for (int i = 0; i <= NSOF_PHASE_INVALID; i++) {
        const char *l[2] = {nsof_phase_name((enum nsof_phase)i), NULL};

        metrics_set(o->m_phase, l, c.n[i]);
    }
    {
        const char *l[2] = {"", NULL};

        metrics_set(o->m_phase, l, c.unknown);
    }
}

int offl_init(struct agent *a)
{
    static const char *const labels[] = {"phase", NULL};
    struct inf_handlers vh = {
        .on_add = on_vnode, .on_update = on_vnode_update, .on_delete = on_vnode};
    struct inf_handlers lh = {
        .on_add = on_labelled, .on_update = on_labelled_update, .on_delete = on_labelled};
    struct ctl_options co = {.name = MOD,
                             .queue = {.max_concurrent = 4},
                             .rec_size = sizeof(struct rec),
                             .reconcile = reconcile};
    struct offl *o = ctl_module_new(a, MOD, sizeof(*o));
    int r;

    if (!o)
        return -ENOMEM;
    r = agent_informer(a, &peer_res_namespaceoffloadings, NULL, NULL, 0, &ctl_module_obj_handlers,
                       o, &o->nsofs);
    if (r == 0)
        r = agent_informer(a, &kapi_nodes, NULL, VNODE_SEL, 0, &vh, o, &o->vnodes);
    if (r == 0)
        r = agent_informer(a, &kapi_namespaces, NULL, LABELLED_NS, 0, &lh, o, &o->labelled);
    if (r == 0)
        r = agent_informer(a, &peer_res_clusterconfigs, NULL, NULL, 0, NULL, NULL, &o->config);
    if (r == 0)
        r = ctl_new(a, &co, o, &o->mod.ctl);
    if (r == 0)
        r = adm_webhook_register(a, "pod-offloading", ADM_PATH_MUTATE, mutate, o);
    if (r == 0)
        r = metrics_family_new(agent_metrics(a), METRICS_GAUGE, "cliqo_offloading_namespaces",
                               "NamespaceOffloadings by status.offloadingPhase (\"\": none yet).",
                               labels, NULL, 0, &o->m_phase);
    if (r == 0)
        r = metrics_add_collector(agent_metrics(a), collect, o);
    return r;
}
