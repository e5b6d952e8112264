/* provider_namespacemap: the agent module `namespacemap`, offloading's provider half: the
 * provider's side of the namespaces a consumer asks for (docs/advertisement.md, "Namespace maps").
 *
 * A NamespaceMap named <consumer ID> in the consumer's tenant namespace lists, in
 * spec.desiredMapping, "consumer namespace -> namespace here". For each entry this controller
 * refuses a name that is not a DNS label, a reserved name (nsof_reserved: default, kube-*, the
 * agent's namespace, cliqo-*, well-known system namespaces), a namespace that exists and was not
 * created for that consumer, or a name that is neither the consumer's DefaultName shape nor allowed
 * by ClusterConfig spec.offloadingConfig.allowedRemoteNamespaces (docs/security.md, "Namespaces");
 * otherwise it
 * creates the namespace (label virtualkubelet.liqo.io/origin=<consumer>, annotation naming the
 * map), binds cliqo-virtual-kubelet-remote there to the consumer's virtual kubelet (ServiceAccount
 * vk-<consumer> of the tenant namespace), and reports the entry Accepted. Namespaces of the
 * consumer no longer asked for are deleted (Terminating until gone). A deleted map (finalizer
 * cliqo.io/namespacemap) deletes them all first. Level-triggered: one write per pass, requeued.
 *
 * Every namespace of a consumer carries the consumer's Pod Security level from the ClusterConfig
 * (admission/podsec.h; labels pod-security.kubernetes.io/enforce=<level> and enforce-version=
 * latest), set at creation and patched when the ClusterConfig changes it (a ClusterConfig event
 * requeues every map): Kubernetes' own PodSecurity admission enforces it where the cluster has it,
 * the agent's pod webhook enforces it everywhere. */
#include "admission/podsec.h"
#include "admission/quota.h"
#include "agent/agent.h"
#include "agent/identity.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "kube/names.h"
#include "offloading/nsof.h"
#include "agent/ctl.h"
#include "peering/objects.h"
#include "peering/identity.h"
#include "peering/resources.h"
#include "offloading/provider_namespacemap.h"

#define MOD            "namespacemap"
#define MAX_ENTRIES    512
#define VK_BINDING     "cliqo-virtual-kubelet"
#define GUARD_SELECTOR "app.kubernetes.io/managed-by=cliqo-agent"

/* The module's state (agent_module_data "namespacemap"). */
struct nsmapc {
    struct ctl_module mod; /* first */
    struct inf_informer *maps, *nss, *config, *fcs, *quotas, *limits;
};

struct rec {
    struct ctl_rec h; /* first */
    struct nsmapc *m;
    char ns[64], name[64];
    json_t *map;    /* working copy or NULL */
    json_t *status; /* the status we want */
};

static void rec_release(struct ctl_rec *h)
{
    struct rec *r = (struct rec *)h;

    json_decref(r->map);
    json_decref(r->status);
}

bool nsmap_reserved(const char *name, const char *agent_ns)
{
    return !kname_dns_label(name) || nsof_reserved(name, agent_ns) ||
           strncmp(name, PEER_TENANT_PREFIX, strlen(PEER_TENANT_PREFIX)) == 0;
}

/* spec.offloadingConfig.allowedRemoteNamespaces of the ClusterConfig (a new reference, NULL when
 * absent). */
static json_t *allowed_patterns(struct nsmapc *m)
{
    json_t *cc = m->config ? inf_get(m->config, NULL, PEER_CLUSTER_CONFIG) : NULL;
    json_t *p = json_object_get(json_object_get(json_object_get(cc, "spec"), "offloadingConfig"),
                                "allowedRemoteNamespaces");

    json_incref(p);
    json_decref(cc);
    return p;
}

/* ---- namespaces of the consumer
 * ------------------------------------------------------------------ */

struct ours {
    const char *key; /* "<tenant ns>/<consumer id>" */
    const char *id;
    json_t *list; /* namespaces created for this map */
};

static void ours_visit(json_t *ns, void *data)
{
    struct ours *o = data;
    const char *origin = jsn_label(ns, PEER_LABEL_ORIGIN),
               *map = jsn_annotation(ns, PEER_ANNOT_NSMAP);

    if (origin && map && strcmp(origin, o->id) == 0 && strcmp(map, o->key) == 0)
        json_array_append(o->list, ns);
}

static json_t *namespaces_of(struct nsmapc *m, const char *key, const char *id)
{
    struct ours o = {key, id, json_array()};

    if (o.list)
        inf_foreach(m->nss, ours_visit, &o);
    return o.list;
}

static int delete_ns(struct rec *r, const char *name)
{
    log_info(MOD, "%s: deleting namespace %s (no longer asked for)", r->h.key, name);
    r->h.ch.next = ctl_chain_after_write;
    return kapi_delete(agent_kube(r->m->mod.a), &kapi_namespaces, NULL, name, NULL, ctl_call_cb, r);
}

/* ---- reconcile --------------------------------------------------------------------------------
 */

static void set_entry(json_t *cur, const char *local, const char *remote, const char *phase,
                      const char *reason, const char *msg)
{
    json_t *e = json_pack("{s:s,s:s}", "remoteNamespace", remote, "phase", phase);

    if (!e)
        return;
    if (reason && *reason)
        json_object_set_new(e, "reason", json_string(reason));
    if (msg && *msg)
        json_object_set_new(e, "message", json_string(msg));
    json_object_set_new(cur, local, e);
}

/* Merge-patches status.currentMapping with the entries computed so far; with `complete`, the
 * entries of the old status that are no longer asked for are removed. */
static void write_status(struct rec *r, bool complete)
{
    json_t *cur = json_object_get(r->status, "currentMapping");
    json_t *old = json_object_get(json_object_get(r->map, "status"), "currentMapping");
    json_t *patch;
    const char *k;
    json_t *v;
    char *body;

    if (complete) {
        json_object_foreach(old, k, v)
        {
            if (!json_object_get(cur, k))
                json_object_set_new(cur, k, json_null());
        }
    }
    patch = json_pack("{s:{s:O},s:{s:O}}", "metadata", "resourceVersion",
                      json_object_get(json_object_get(r->map, "metadata"), "resourceVersion"),
                      "status", "currentMapping", cur);
    body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    r->h.ch.next = ctl_chain_after_write;
    if (!body || kapi_patch(agent_kube(r->m->mod.a), &peer_res_namespacemaps, r->ns, r->name,
                            "status", KAPI_PATCH_MERGE, body, ctl_call_cb, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
    x_free(body);
}

static void set_finalizer(struct rec *r, bool on)
{
    json_t *fins = json_array(),
           *old = json_object_get(json_object_get(r->map, "metadata"), "finalizers"), *f, *patch;
    size_t i;
    char *body;

    json_array_foreach(old, i, f)
    {
        if (!json_is_string(f) || strcmp(json_string_value(f), PEER_NSMAP_FINALIZER) != 0)
            json_array_append(fins, f);
    }
    if (on)
        json_array_append_new(fins, json_string(PEER_NSMAP_FINALIZER));
    patch = json_pack("{s:{s:O,s:o}}", "metadata", "resourceVersion",
                      json_object_get(json_object_get(r->map, "metadata"), "resourceVersion"),
                      "finalizers", fins);
    body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    r->h.ch.next = ctl_chain_after_write;
    if (!body || kapi_patch(agent_kube(r->m->mod.a), &peer_res_namespacemaps, r->ns, r->name, NULL,
                            KAPI_PATCH_MERGE, body, ctl_call_cb, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
    x_free(body);
}

/* The map is gone or going: its namespaces first, then the finalizer. */
static void remove_all(struct rec *r)
{
    json_t *list = namespaces_of(r->m, r->h.key, r->name), *ns;
    size_t i;

    json_array_foreach(list, i, ns)
    {
        if (json_object_get(json_object_get(ns, "metadata"), "deletionTimestamp"))
            continue;
        if (delete_ns(r, kapi_obj_name(ns)) < 0)
            ctl_rec_end(&r->h, CTL_RETRY);
        json_decref(list);
        return;
    }
    if (json_array_size(list) > 0) {
        json_decref(list);
        ctl_rec_end(&r->h, CTL_RETRY); /* terminating: wait until they are gone */
        return;
    }
    json_decref(list);
    if (r->map && json_object_get(json_object_get(r->map, "metadata"), "deletionTimestamp") &&
        peer_has_finalizer(r->map, PEER_NSMAP_FINALIZER)) {
        log_info(MOD, "%s: all namespaces of the consumer deleted; releasing the NamespaceMap",
                 r->h.key);
        set_finalizer(r, false);
        return;
    }
    ctl_rec_end(&r->h, CTL_DONE);
}

/* The consumer's Pod Security level now. */
static const char *podsec_level(const struct rec *r)
{
    json_t *cc = inf_get(r->m->config, NULL, PEER_CLUSTER_CONFIG);
    enum adm_podsec_level l = adm_podsec_level_for(cc, r->name, NULL);

    json_decref(cc);
    return adm_podsec_level_name(l);
}

/* Patches the Pod Security labels of ns when they are not the consumer's level. Returns true
 * when a write was started (or failed: the pass has ended either way). */
static bool podsec_labels(struct rec *r, const json_t *ns)
{
    const char *want = podsec_level(r), *have = jsn_label(ns, ADM_PODSEC_LABEL),
               *ver = jsn_label(ns, ADM_PODSEC_VERSION_LABEL), *name = kapi_obj_name(ns);
    json_t *patch;
    char *body;

    if (have && strcmp(have, want) == 0 && ver && strcmp(ver, "latest") == 0)
        return false;
    log_info(MOD, "%s: namespace %s: Pod Security level %s (was %s), from the ClusterConfig",
             r->h.key, name, want, have ? have : "unset");
    patch = json_pack("{s:{s:{s:s,s:s}}}", "metadata", "labels", ADM_PODSEC_LABEL, want,
                      ADM_PODSEC_VERSION_LABEL, "latest");
    body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    r->h.ch.next = ctl_chain_after_write;
    if (!body || kapi_patch(agent_kube(r->m->mod.a), &kapi_namespaces, NULL, name, NULL,
                            KAPI_PATCH_MERGE, body, ctl_call_cb, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
    x_free(body);
    return true;
}

/* ---- what Kubernetes enforces behind the webhook (admission/quota.h) ----------------------- */

static json_t *managed_meta(const char *name, const char *ns)
{
    return json_pack("{s:s,s:s,s:{s:s,s:s}}", "name", name, "namespace", ns, "labels",
                     "app.kubernetes.io/managed-by", "cliqo-agent", "app.kubernetes.io/part-of",
                     "cliqo");
}

/* The consumer's offer as its ForeignCluster records it (status.advertisement.sent), NULL when
 * none is in force. A new reference. */
static json_t *offer_of(struct nsmapc *m, const char *id)
{
    json_t *fc;
    const json_t *sent;
    const char *status;
    json_t *res = NULL;

    fc = peer_fc_find(m->fcs, id);
    sent = json_object_get(json_object_get(json_object_get(fc, "status"), "advertisement"), "sent");
    status = json_string_value(json_object_get(sent, "status"));
    if (json_is_object(json_object_get(sent, "resources")) &&
        !(status && strcmp(status, "Withdrawn") == 0))
        res = json_incref(json_object_get(sent, "resources"));
    json_decref(fc);
    return res;
}

/* Creates kind `res` named `name` in ns with spec, or merge-patches its spec. */
static void write_guard(struct rec *r, const struct kapi_resource *res, const char *ns,
                        const char *name, bool exists, json_t *spec_patch, json_t *spec)
{
    json_t *o = NULL;
    char *body = NULL;
    int e = -ENOMEM;

    r->h.ch.next = ctl_chain_after_write;
    if (exists) {
        o = json_pack("{s:O}", "spec", spec_patch);
        body = o ? json_dumps(o, JSON_COMPACT) : NULL;
        if (body)
            e = kapi_patch(agent_kube(r->m->mod.a), res, ns, name, NULL, KAPI_PATCH_MERGE, body,
                           ctl_call_cb, r);
    } else {
        o = json_pack("{s:s,s:s,s:o,s:O}", "apiVersion", "v1", "kind", res->kind, "metadata",
                      managed_meta(name, ns), "spec", spec);
        if (o)
            e = kapi_create(agent_kube(r->m->mod.a), res, ns, o, ctl_call_cb, r);
    }
    if (e < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
    x_free(body);
    json_decref(o);
}

/* The LimitRange of defaults and the ResourceQuota of the offer in namespace ns of the consumer.
 * Returns true when a write was started (or failed: the pass has ended either way). */
static bool guards(struct rec *r, const char *ns)
{
    json_t *cc = inf_get(r->m->config, NULL, PEER_CLUSTER_CONFIG);
    json_t *want = adm_limitrange_spec(cc, NULL), *have, *offer, *hard, *patch;
    const json_t *have_hard;
    bool wrote = false;

    json_decref(cc);
    if (!want) {
        ctl_rec_end(&r->h, CTL_RETRY);
        return true;
    }
    have = inf_get(r->m->limits, ns, ADM_LIMITRANGE_NAME);
    if (!have || !adm_limitrange_equal(want, json_object_get(have, "spec"))) {
        log_info(MOD,
                 "%s: namespace %s: %s LimitRange " ADM_LIMITRANGE_NAME
                 " (default requests of containers that set none)",
                 r->h.key, ns, have ? "updating" : "creating");
        write_guard(r, &kapi_limitranges, ns, ADM_LIMITRANGE_NAME, have != NULL, want, want);
        wrote = true;
    }
    json_decref(have);
    json_decref(want);
    if (wrote)
        return true;
    offer = offer_of(r->m, r->name);
    hard = adm_quota_consumer_hard(offer, NULL);
    json_decref(offer);
    if (!hard) {
        ctl_rec_end(&r->h, CTL_RETRY);
        return true;
    }
    have = inf_get(r->m->quotas, ns, ADM_QUOTA_OFFER_NAME);
    have_hard = json_object_get(json_object_get(have, "spec"), "hard");
    if (!have || !adm_quantities_equal(hard, have_hard)) {
        json_t *spec = json_pack("{s:O}", "hard", hard);

        patch = json_pack("{s:o}", "hard", adm_quantities_merge_patch(hard, have_hard));
        log_info(MOD,
                 "%s: namespace %s: %s ResourceQuota " ADM_QUOTA_OFFER_NAME
                 " (the consumer's offer%s and object counts)",
                 r->h.key, ns, have ? "updating" : "creating",
                 json_object_get(hard, "pods") ? "" : ": none yet");
        if (spec && patch)
            write_guard(r, &kapi_resourcequotas, ns, ADM_QUOTA_OFFER_NAME, have != NULL, patch,
                        spec);
        else
            ctl_rec_end(&r->h, CTL_RETRY);
        json_decref(spec);
        json_decref(patch);
        wrote = true;
    }
    json_decref(have);
    json_decref(hard);
    return wrote;
}

static void create_ns(struct rec *r, const char *name)
{
    json_t *o = json_pack("{s:s,s:s,s:{s:s,s:{s:s,s:s,s:s},s:{s:s}}}", "apiVersion", "v1", "kind",
                          "Namespace", "metadata", "name", name, "labels", PEER_LABEL_ORIGIN,
                          r->name, ADM_PODSEC_LABEL, podsec_level(r), ADM_PODSEC_VERSION_LABEL,
                          "latest", "annotations", PEER_ANNOT_NSMAP, r->h.key);

    log_info(MOD, "%s: creating namespace %s for the consumer (Pod Security level %s)", r->h.key,
             name, podsec_level(r));
    r->h.ch.next = ctl_chain_after_write;
    if (!o || kapi_create(agent_kube(r->m->mod.a), &kapi_namespaces, NULL, o, ctl_call_cb, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
    json_decref(o);
}

static void after_bind(void *owner)
{
    struct rec *r = owner;

    if (r->h.ch.last.err < 0 && r->h.ch.last.err != -EEXIST) {
        log_warn(MOD, "%s: cannot bind the virtual kubelet's role: %s", r->h.key,
                 r->h.ch.last.message);
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    write_status(r, false); /* the entry was set Accepted by the caller */
}

static void bind_role(struct rec *r, const char *name)
{
    char sa[96];
    json_t *o;

    snprintf(sa, sizeof(sa), PEER_VK_SA_PREFIX "%s", r->name);
    o = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s,s:s,s:s},s:[{s:s,s:s,s:s}]}", "apiVersion",
                  "rbac.authorization.k8s.io/v1", "kind", "RoleBinding", "metadata", "name",
                  VK_BINDING, "namespace", name, "labels", "app.kubernetes.io/managed-by",
                  "cliqo-agent", "roleRef", "apiGroup", "rbac.authorization.k8s.io", "kind",
                  "ClusterRole", "name", PEER_VK_REMOTE_ROLE, "subjects", "kind", "ServiceAccount",
                  "name", sa, "namespace", r->ns);
    r->h.ch.next = after_bind;
    if (!o ||
        kapi_create(agent_kube(r->m->mod.a), &peer_res_rolebindings, name, o, ctl_call_cb, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
    json_decref(o);
}

static void reconcile(struct ctl *c, const char *key)
{
    const char *slash = strchr(key, '/');
    struct rec *r;
    json_t *cached, *tenant, *desired, *cur, *old_cur, *list, *ns, *v, *patterns;
    const char *local, *id;
    char why[320];
    size_t i, n = 0;

    if (!slash || (size_t)(slash - key) >= sizeof(r->ns) || strlen(slash + 1) >= sizeof(r->name)) {
        wq_done(ctl_queue(c), key);
        return;
    }
    r = (struct rec *)ctl_rec_begin(c, key);
    if (!r)
        return;
    r->m = ctl_data(c);
    snprintf(r->ns, sizeof(r->ns), "%.*s", (int)(slash - key), key);
    snprintf(r->name, sizeof(r->name), "%s", slash + 1);
    cached = inf_get(r->m->maps, r->ns, r->name);
    r->map = cached ? json_deep_copy(cached) : NULL;
    json_decref(cached);
    if (!r->map || json_object_get(json_object_get(r->map, "metadata"), "deletionTimestamp")) {
        remove_all(r);
        return;
    }
    tenant = inf_get(r->m->nss, NULL, r->ns);
    id = jsn_label(tenant, PEER_LABEL_CLUSTER_ID);
    r->status = json_pack("{s:{}}", "currentMapping");
    cur = json_object_get(r->status, "currentMapping");
    old_cur = json_object_get(json_object_get(r->map, "status"), "currentMapping");
    desired = json_object_get(json_object_get(r->map, "spec"), "desiredMapping");
    if (!tenant || !id || strcmp(id, r->name) != 0 || !jsn_label(tenant, PEER_LABEL_TENANT) ||
        strcmp(jsn_label(tenant, PEER_LABEL_TENANT), "true") != 0) {
        json_decref(tenant);
        json_object_foreach(desired, local, v)
        {
            set_entry(cur, local, json_string_value(v) ? json_string_value(v) : "", "Refused",
                      "IdentityMismatch",
                      "a NamespaceMap must live in a tenant namespace and be named after its "
                      "peer's cluster ID");
        }
        if (json_equal(old_cur, cur))
            ctl_rec_end(&r->h, CTL_DONE);
        else
            write_status(r, true);
        return;
    }
    json_decref(tenant);
    if (!peer_has_finalizer(r->map, PEER_NSMAP_FINALIZER)) {
        set_finalizer(r, true);
        return;
    }
    list = namespaces_of(r->m, r->h.key, r->name);
    patterns = allowed_patterns(r->m);
    json_object_foreach(desired, local, v)
    {
        const char *remote = json_string_value(v);
        const char *origin, *phase;
        json_t *existing, *old_entry = json_object_get(old_cur, local);
        bool dup = false;
        const char *k2;
        json_t *v2;

        if (++n > MAX_ENTRIES) {
            set_entry(cur, local, remote ? remote : "", "Refused", "TooManyEntries",
                      "at most 512 namespaces per consumer");
            continue;
        }
        if (!remote || nsmap_reserved(remote, agent_namespace(r->m->mod.a))) {
            set_entry(cur, local, remote ? remote : "", "Refused", "ReservedName",
                      "the name is reserved on this cluster or not a valid namespace name");
            continue;
        }
        json_object_foreach(desired, k2, v2)
        {
            if (strcmp(k2, local) < 0 && json_is_string(v2) &&
                strcmp(json_string_value(v2), remote) == 0)
                dup = true;
        }
        if (dup) {
            set_entry(cur, local, remote, "Refused", "Duplicate",
                      "another entry of this map asks for the same namespace");
            continue;
        }
        existing = inf_get(r->m->nss, NULL, remote);
        origin = jsn_label(existing, PEER_LABEL_ORIGIN);
        if (existing && (!origin || strcmp(origin, r->name) != 0 ||
                         !jsn_annotation(existing, PEER_ANNOT_NSMAP) ||
                         strcmp(jsn_annotation(existing, PEER_ANNOT_NSMAP), r->h.key) != 0)) {
            json_decref(existing);
            set_entry(cur, local, remote, "Refused", "AlreadyExists",
                      "a namespace with this name exists on the provider and was not created "
                      "for this consumer");
            continue;
        }
        if (nsof_remote_allowed(local, remote, r->name, patterns, agent_namespace(r->m->mod.a), why,
                                sizeof(why)) < 0) {
            const char *was = json_string_value(json_object_get(old_entry, "reason"));

            json_decref(existing);
            if (!was || strcmp(was, "NotAllowed") != 0)
                log_info(MOD, "%s: namespace %s refused for %s: %s", r->h.key, remote, local, why);
            set_entry(cur, local, remote, "Refused", "NotAllowed", why);
            continue;
        }
        if (existing &&
            json_object_get(json_object_get(existing, "metadata"), "deletionTimestamp")) {
            json_decref(existing);
            set_entry(cur, local, remote, "Terminating", "Terminating",
                      "the namespace is being deleted; it will be created again");
            continue;
        }
        if (!existing) {
            json_decref(list);
            json_decref(patterns);
            create_ns(r, remote);
            return;
        }
        if (podsec_labels(r, existing) || guards(r, remote)) {
            json_decref(existing);
            json_decref(list);
            json_decref(patterns);
            return;
        }
        json_decref(existing);
        phase = json_string_value(json_object_get(old_entry, "phase"));
        set_entry(cur, local, remote, "Accepted", "", "");
        if (!phase || strcmp(phase, "Accepted") != 0) {
            /* Newly created: bind the virtual kubelet's role before reporting it usable. */
            json_decref(list);
            json_decref(patterns);
            bind_role(r, remote);
            return;
        }
    }
    json_decref(patterns);
    /* Namespaces of this consumer nobody asks for any more. */
    json_array_foreach(list, i, ns)
    {
        const char *name = kapi_obj_name(ns);
        bool wanted = false;

        json_object_foreach(desired, local, v)
        {
            if (json_is_string(v) && strcmp(json_string_value(v), name) == 0)
                wanted = true;
        }
        if (wanted || json_object_get(json_object_get(ns, "metadata"), "deletionTimestamp"))
            continue;
        if (delete_ns(r, name) < 0) /* name is borrowed from list: free it after */
            ctl_rec_end(&r->h, CTL_RETRY);
        json_decref(list);
        return;
    }
    json_decref(list);
    if (json_equal(old_cur, cur)) {
        ctl_rec_end(&r->h, CTL_DONE);
        return;
    }
    write_status(r, true);
}

/* ---- module -----------------------------------------------------------------------------------
 */

/* The ClusterConfig changed: every map looks again (Pod Security levels, the allow list of
 * remote namespace names). */
static void on_config(struct inf_informer *inf, json_t *obj, void *data)
{
    struct nsmapc *m = data;

    (void)inf;
    (void)obj;
    ctl_enqueue_all(m->mod.ctl, m->maps);
}

static void on_config_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_config(inf, new_obj, data);
}

/* A namespace of a consumer changed (created, terminating, gone): its map looks again. */
static void on_ns(struct inf_informer *inf, json_t *obj, void *data)
{
    struct nsmapc *m = data;
    const char *map = jsn_annotation(obj, PEER_ANNOT_NSMAP);

    (void)inf;
    if (map && jsn_label(obj, PEER_LABEL_ORIGIN) && strlen(map) < 192)
        ctl_enqueue(m->mod.ctl, map);
}

static void on_ns_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_ns(inf, new_obj, data);
}

/* A consumer's offer changed: the maps of that consumer look again (their quotas). */
struct id_match {
    struct nsmapc *m;
    const char *id;
};

static void requeue_if_named(json_t *map, void *data)
{
    const struct id_match *im = data;

    if (kapi_obj_name(map) && strcmp(kapi_obj_name(map), im->id) == 0)
        ctl_enqueue_obj(im->m->mod.ctl, map);
}

static const json_t *sent_of(const json_t *fc)
{
    return json_object_get(json_object_get(json_object_get(fc, "status"), "advertisement"), "sent");
}

static void on_fc(struct inf_informer *inf, json_t *obj, void *data)
{
    struct nsmapc *m = data;
    struct id_match im = {
        m, json_string_value(json_object_get(
               json_object_get(json_object_get(obj, "spec"), "clusterIdentity"), "clusterID"))};

    (void)inf;
    if (im.id && m->maps)
        inf_foreach(m->maps, requeue_if_named, &im);
}

static void on_fc_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    if (!json_equal(sent_of(old_obj), sent_of(new_obj)))
        on_fc(inf, new_obj, data);
}

/* One of our LimitRanges or ResourceQuotas changed (or was deleted): the map of its namespace
 * looks again. */
static void on_guard(struct inf_informer *inf, json_t *obj, void *data)
{
    struct nsmapc *m = data;
    json_t *ns = m->nss ? inf_get(m->nss, NULL, kapi_obj_namespace(obj)) : NULL;

    (void)inf;
    if (ns)
        on_ns(NULL, ns, data);
    json_decref(ns);
}

static void on_guard_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_guard(inf, new_obj, data);
}

int nsmap_init(struct agent *a)
{
    struct inf_handlers nh = {.on_add = on_ns, .on_update = on_ns_update, .on_delete = on_ns};
    struct inf_handlers ch = {
        .on_add = on_config, .on_update = on_config_update, .on_delete = on_config};
    struct inf_handlers fh = {.on_add = on_fc, .on_update = on_fc_update, .on_delete = on_fc};
    struct inf_handlers gh = {
        .on_add = on_guard, .on_update = on_guard_update, .on_delete = on_guard};
    struct ctl_options co = {.name = "namespacemaps",
                             .log_module = MOD,
                             .queue = {.max_concurrent = 8},
                             .rec_size = sizeof(struct rec),
                             .reconcile = reconcile,
                             .rec_release = rec_release};
    struct nsmapc *m = ctl_module_new(a, MOD, sizeof(*m));
    int r;

    if (!m)
        return -ENOMEM;
    r = agent_informer(a, &peer_res_namespacemaps, NULL, NULL, 0, &ctl_module_obj_handlers, m,
                       &m->maps);
    if (r == 0)
        r = agent_informer(a, &kapi_namespaces, NULL, NULL, 0, &nh, m, &m->nss);
    if (r == 0)
        r = agent_informer(a, &peer_res_clusterconfigs, NULL, NULL, 0, &ch, m, &m->config);
    if (r == 0)
        r = agent_informer(a, &peer_res_foreignclusters, NULL, NULL, 0, &fh, m, &m->fcs);
    if (r == 0)
        r = agent_informer(a, &kapi_limitranges, NULL, GUARD_SELECTOR, 0, &gh, m, &m->limits);
    if (r == 0)
        r = agent_informer(a, &kapi_resourcequotas, NULL, GUARD_SELECTOR, 0, &gh, m, &m->quotas);
    if (r == 0)
        r = ctl_new(a, &co, m, &m->mod.ctl);
    return r;
}
