/* advoperator: the consumer side of the advertisement protocol (docs/advertisement.md,
 * "Advertisement operator").
 *
 * Key: the Advertisement's "namespace/name". A pass reads the cached Advertisement and does the
 * first thing missing, then requeues:
 *   gone              -> a virtual kubelet still running is torn down (the finalizer was removed
 *                        by someone else), other waiting Advertisements get a look (a slot freed);
 *   being deleted     -> the virtual kubelet tears down (cordon, drain, clean the provider, delete
 *                        the node), then the finalizer cliqo.io/virtual-kubelet is removed;
 *   expired           -> deleted (the provider stopped refreshing it);
 *   otherwise         -> validated (the credential Secret must exist), decided (policy.h), and:
 *                        accepted: finalizer, the credential installed in the provider's unit
 *                        (role PU_VK), the virtual kubelet started (embedded) or its Deployment
 *                        ensured; refused after acceptance: torn down, finalizer removed;
 *                        then the status (decision, virtual node, pod-CIDR remapping) and the
 *                        ForeignCluster's received-sharing status are written, with an Event when
 *                        the decision changes.
 * The count of accepted Advertisements is exact: it is recounted from the informer on every
 * decision (decisions written but not yet seen back are remembered in `pending`). */
#include "agent/agent.h"
#include "agent/config.h"
#include "agent/ctl.h"
#include "agent/identity.h"
#include "agent/peers.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "advertisement/advertisement.h"
#include "advertisement/config.h"
#include "advertisement/policy.h"
#include "common/json.h"
#include "common/log.h"
#include "common/rfc3339.h"
#include "common/xalloc.h"
#include "kube/kubeconfig.h"
#include "peering/controllers/controllers.h"
#include "peering/identity.h"
#include "peering/objects.h"
#include "peering/resources.h"
#include "kubeletapi/module.h"
#include "network/dpobj.h"
#include "offer/share.h"
#include "offloading/pods.h"
#include "virtualkubelet/vk.h"

#define MOD           "advoperator"
#define OWNER         "advoperator"
#define RETRY_MS      1000
#define WAIT_MS       300
#define RESYNC_MS     30000
#define TEARDOWN_MS   (5 * RETRY_MS) /* a virtual kubelet tearing down: on_torn_down is sooner */
#define NODE_LEASE_NS "kube-node-lease"

struct advop;

struct vkent {
    struct advop *m;
    char key[256], ns[64], name[128], peer[64]; /* key: as a record's (ctl_rec.key) */
    struct pu_unit *unit;
    struct vk *vk;
    bool torn_down;
    bool deployment_ensured;
    char copied_rv[32]; /* Deployment mode: the credential Secret's version the copy holds */
    struct vkent *next;
};

/* The module's state (agent_module_data "advoperator"). */
struct advop {
    struct ctl_module mod; /* first */
    struct inf_informer *advs, *config, *tenants, *nodes, *fcs;
    struct inf_informer *teps, *cms; /* TunnelEndpoints; the agent's namespace's ConfigMaps */
    struct adv_config cfg;
    bool cfg_loaded;
    json_t *pending; /* key -> "Accepted" | "Refused" written, not yet seen back */
    struct vkent *vks;
    struct vk_pods_shared *pods; /* what the pods reflectors of vks share (vk_params.pods) */
};

struct rec {
    struct ctl_rec h; /* first */
    struct advop *m;
    char ns[64], name[128], peer[64];
    json_t *adv; /* working copy */
    struct vkent *e;
    struct advpol_result d;
    const char *invalid_reason;
    char invalid_msg[256];
    json_t *secret;
    int step; /* Deployment mode chain */
};

static void rec_release(struct ctl_rec *h)
{
    struct rec *r = (struct rec *)h;

    json_decref(r->adv);
    json_decref(r->secret);
}

static uint64_t remote_timeout_ms(struct advop *m)
{
    json_t *cc = inf_get(m->config, NULL, PEER_CLUSTER_CONFIG);
    json_int_t s = json_integer_value(json_object_get(
        json_object_get(json_object_get(cc, "spec"), "peeringConfig"), "unpeerTimeoutSeconds"));

    json_decref(cc);
    return s > 0 && s <= 3600 ? (uint64_t)s * 1000 : 30000;
}

static bool deleting(const json_t *obj)
{
    return json_object_get(json_object_get(obj, "metadata"), "deletionTimestamp") != NULL;
}

/* The peer of a tenant namespace (its cluster-id label), or NULL. */
static const char *tenant_peer(struct advop *m, const char *ns, char *buf, size_t size)
{
    json_t *t = inf_get(m->tenants, NULL, ns);
    const char *id = json_string_value(json_object_get(
        json_object_get(json_object_get(t, "metadata"), "labels"), PEER_LABEL_CLUSTER_ID));
    bool ok = id && peer_cluster_id_valid(id);

    if (ok)
        snprintf(buf, size, "%s", id);
    json_decref(t);
    return ok ? buf : NULL;
}

/* ---- entries: the virtual kubelets
 * --------------------------------------------------------------- */

static struct vkent *ent_find(struct advop *m, const char *key)
{
    for (struct vkent *e = m->vks; e; e = e->next)
        if (strcmp(e->key, key) == 0)
            return e;
    return NULL;
}

static struct vkent *ent_by_peer(struct advop *m, const char *peer)
{
    for (struct vkent *e = m->vks; e; e = e->next)
        if (strcmp(e->peer, peer) == 0)
            return e;
    return NULL;
}

static struct vkent *ent_ensure(struct rec *r)
{
    struct advop *m = r->m;
    struct vkent *e = ent_find(m, r->h.key);

    if (e)
        return e;
    e = x_calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->m = m;
    snprintf(e->key, sizeof(e->key), "%s", r->h.key);
    snprintf(e->ns, sizeof(e->ns), "%s", r->ns);
    snprintf(e->name, sizeof(e->name), "%s", r->name);
    snprintf(e->peer, sizeof(e->peer), "%s", r->peer);
    e->next = m->vks;
    m->vks = e;
    return e;
}

static void ent_free(struct vkent *e)
{
    struct advop *m = e->m;

    for (struct vkent **pp = &m->vks; *pp; pp = &(*pp)->next) {
        if (*pp == e) {
            *pp = e->next;
            break;
        }
    }
    vk_free(e->vk);
    if (e->unit)
        pu_release(e->unit, OWNER);
    x_free(e);
}

static json_t *src_adv(void *data)
{
    struct vkent *e = data;

    return inf_get(e->m->advs, e->ns, e->name);
}

static json_t *src_node(void *data, bool *ret_known)
{
    struct vkent *e = data;
    char node[96];

    *ret_known = inf_synced(e->m->nodes);
    if (vk_node_name_for(e->peer, node, sizeof(node)) < 0)
        return NULL;
    return inf_get(e->m->nodes, NULL, node);
}

/* The provider's TunnelEndpoint in its tenant namespace (the Advertisement's), and whether this
 * cluster runs a data plane: its gateway's record exists (docs/dataplane.md, section 6). */
static json_t *src_tunnel(void *data, bool *ret_dataplane)
{
    struct vkent *e = data;
    json_t *cm = inf_get(e->m->cms, agent_namespace(e->m->mod.a), DPO_GW_CONFIGMAP);
    char name[96];

    *ret_dataplane = cm != NULL;
    json_decref(cm);
    snprintf(name, sizeof(name), DPO_TEP_PREFIX "%s", e->peer);
    return inf_get(e->m->teps, e->ns, name);
}

static int ent_start_vk(struct vkent *e)
{
    struct advop *m = e->m;
    struct vk_params p = {
        .loop = agent_loop(m->mod.a),
        .local = agent_kube(m->mod.a),
        .unit = e->unit,
        .peer_id = e->peer,
        .home_id = identity_cluster_id(m->mod.a),
        .home_name = identity_cluster_name(m->mod.a),
        .node_address = agent_config(m->mod.a)->node_address,
        .kubelet_port = agent_config(m->mod.a)->kubelet_port,
        .src = {src_adv, src_node, src_tunnel, e},
        .pods = m->pods,
        .remote_timeout_ms = remote_timeout_ms(m),
    };
    int r;

    if (e->vk)
        return 0;
    r = vk_new(&p, &e->vk);
    if (r == 0) {
        json_t *cc = inf_get(m->config, NULL, PEER_CLUSTER_CONFIG);

        vk_set_keepalive(e->vk, m->cfg.keepalive_retry_s, m->cfg.keepalive_threshold);
        vk_set_config(e->vk, cc);
        json_decref(cc);
    }
    return r;
}

/* data is the entry: it owns the virtual kubelet, which never calls back once freed. */
static void on_torn_down(struct vk *v, int err, void *data)
{
    struct vkent *e = data;

    (void)v;
    if (err == 0)
        e->torn_down = true;
    ctl_enqueue(e->m->mod.ctl, e->key);
}

/* Starts (or follows) the teardown of an entry's virtual kubelet; true once it is over. */
static bool ent_teardown(struct vkent *e)
{
    if (e->torn_down)
        return true;
    if (!e->vk && ent_start_vk(e) < 0)
        return false;
    if (vk_tearing_down(e->vk))
        return false;
    vk_set_remote_timeout(e->vk, remote_timeout_ms(e->m));
    vk_teardown(e->vk, on_torn_down, e);
    return false;
}

/* ---- small writes
 * -------------------------------------------------------------------------------- */

static void on_event_written(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    (void)c;
    (void)data;
    if (res->err < 0)
        log_debug(MOD, "cannot record an Event: %s", res->status.message);
}

static void emit_event(struct advop *m, const json_t *adv, bool warning, const char *reason,
                       const char *message)
{
    char name[256], now[32];
    struct timespec ts;
    json_t *ev;

    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(name, sizeof(name), "%.200s.%lx%05lx", kapi_obj_name(adv), (long)ts.tv_sec,
             (long)(ts.tv_nsec / 10000));
    rfc3339_now(0, now, sizeof(now));
    ev =
        json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s,s:s,s:s,s:s?},s:s,s:s,s:s,s:{s:s},s:s,s:s,"
                  "s:i}",
                  "apiVersion", "v1", "kind", "Event", "metadata", "name", name, "namespace",
                  kapi_obj_namespace(adv), "involvedObject", "apiVersion",
                  "sharing.liqo.io/v1alpha1", "kind", "Advertisement", "name", kapi_obj_name(adv),
                  "namespace", kapi_obj_namespace(adv), "uid", kapi_obj_uid(adv), "reason", reason,
                  "message", message, "type", warning ? "Warning" : "Normal", "source", "component",
                  "cliqo-agent", "firstTimestamp", now, "lastTimestamp", now, "count", 1);
    if (ev)
        kapi_create(agent_kube(m->mod.a), &kapi_events, kapi_obj_namespace(adv), ev,
                    on_event_written, NULL);
    json_decref(ev);
}

/* The finalizer's write is a step of the pass: on success it goes on at once (ctl.h). */
static void set_finalizer(struct rec *r, bool on)
{
    ctl_set_finalizer_then(&r->h, &peer_res_advertisements, r->adv, PEER_VK_FINALIZER, on,
                           ctl_chain_after_write);
}

static void on_fc_written(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    (void)c;
    (void)data;
    if (res->err < 0 && res->err != -ENOENT)
        log_debug(MOD, "cannot update a ForeignCluster's sharing status: %s", res->status.message);
}

static void write_fc_received(struct advop *m, const char *peer, json_t *received)
{
    json_t *fc = peer_fc_find(m->fcs, peer), *cur, *patch, *v;
    const char *k;
    char *body;

    cur = json_object_get(json_object_get(json_object_get(fc, "status"), "advertisement"),
                          "received");
    if (!fc || json_equal(cur, received)) {
        json_decref(fc);
        json_decref(received);
        return;
    }
    /* A merge patch keeps what it does not name: a field of the last copy that this one lacks (the
     * virtual node of an Advertisement no longer accepted) is removed with a null. */
    json_object_foreach((json_t *)cur, k, v)
    {
        if (!json_object_get(received, k))
            json_object_set_new(received, k, json_null());
    }
    patch = json_pack("{s:{s:{s:o}}}", "status", "advertisement", "received", received);
    body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    if (body)
        kapi_patch(agent_kube(m->mod.a), &peer_res_foreignclusters, NULL, kapi_obj_name(fc),
                   "status", KAPI_PATCH_MERGE, body, on_fc_written, NULL);
    x_free(body);
    json_decref(patch);
    json_decref(fc);
}

/* ---- counting
 * ------------------------------------------------------------------------------------- */

struct count {
    struct advop *m;
    const char *key;
    const char *created; /* of the one being decided */
    const char *name;
    size_t accepted, waiting_before;
};

static const char *effective_status(struct advop *m, const json_t *adv, const char *key)
{
    const char *p = json_string_value(json_object_get(m->pending, key));

    return p ? p : jsn_str_or_empty(json_object_get(adv, "status"), "advertisementStatus");
}

static void count_visit(json_t *adv, void *data)
{
    struct count *c = data;
    struct advop *m = c->m;
    char key[192], pbuf[64];
    const json_t *status = json_object_get(adv, "status");
    const char *created = jsn_str_or_empty(json_object_get(adv, "metadata"), "creationTimestamp");
    const char *peer;
    int cmp;

    snprintf(key, sizeof(key), "%s/%s", kapi_obj_namespace(adv), kapi_obj_name(adv));
    if (strcmp(key, c->key) == 0 || deleting(adv))
        return;
    if (strcmp(effective_status(m, adv, key), "Accepted") == 0) {
        c->accepted++;
        return;
    }
    if (!advpol_waiting(effective_status(m, adv, key), jsn_str_or_empty(status, "reason"),
                        strcmp(jsn_str_or_empty(status, "decidedBy"), "Operator") == 0))
        return;
    peer = tenant_peer(m, kapi_obj_namespace(adv), pbuf, sizeof(pbuf));
    if (!peer || advcfg_list_has(m->cfg.deny, peer) ||
        (json_array_size(m->cfg.allow) > 0 && !advcfg_list_has(m->cfg.allow, peer)))
        return;
    cmp = strcmp(created, c->created);
    if (cmp < 0 || (cmp == 0 && strcmp(kapi_obj_name(adv), c->name) < 0))
        c->waiting_before++;
}

/* ---- status
 * ---------------------------------------------------------------------------------------- */

static json_t *desired_status(struct rec *r)
{
    struct advop *m = r->m;
    const json_t *cur = json_object_get(r->adv, "status");
    const char *status = r->d.accept ? "Accepted" : "Refused";
    struct agent_peer_network ns;
    char now[32], node[96];
    json_t *s;

    rfc3339_now(0, now, sizeof(now));
    s = json_pack("{s:s,s:s,s:s,s:s,s:s,s:b}", "advertisementStatus", status, "reason", r->d.reason,
                  "message", r->d.message, "decidedBy", r->d.by_operator ? "Operator" : "Policy",
                  "lastTransitionTime",
                  strcmp(jsn_str_or_empty(cur, "advertisementStatus"), status) == 0 &&
                          json_string_value(json_object_get(cur, "lastTransitionTime"))
                      ? jsn_str_or_empty(cur, "lastTransitionTime")
                      : now,
                  "vkCreated", r->d.accept && r->e != NULL);
    if (!s)
        return NULL;
    if (r->d.accept && r->e && vk_node_name_for(r->peer, node, sizeof(node)) == 0) {
        json_object_set_new(s, "vnodeReference", json_pack("{s:s}", "name", node));
        if (m->cfg.vk_mode == ADVCFG_VK_DEPLOYMENT) {
            char dep[128];

            snprintf(dep, sizeof(dep), "virtual-kubelet-%s", r->peer);
            json_object_set_new(
                s, "vkReference",
                json_pack("{s:s,s:s}", "name", dep, "namespace", agent_namespace(m->mod.a)));
        }
    }
    if (agent_peer_network(m->mod.a, r->peer, &ns) == 0) {
        json_t *n = json_pack("{s:b,s:b}", "settled", ns.settled, "enabled", !ns.disabled);

        if (n && ns.remote_cidr[0])
            json_object_set_new(n, "remotePodCIDR", json_string(ns.remote_cidr));
        if (n && ns.remote_mapped[0])
            json_object_set_new(n, "remoteRemappedPodCIDR", json_string(ns.remote_mapped));
        if (n && ns.local_mapped[0])
            json_object_set_new(n, "localRemappedPodCIDR", json_string(ns.local_mapped));
        if (n && ns.message[0])
            json_object_set_new(n, "message", json_string(ns.message));
        if (n)
            json_object_set_new(s, "network", n);
    }
    return s;
}

static bool status_differs(const json_t *cur, const json_t *want)
{
    const char *k;
    json_t *v;

    json_object_foreach((json_t *)want, k, v)
    {
        if (strcmp(k, "lastTransitionTime") == 0)
            continue;
        if (!json_equal(json_object_get(cur, k), v))
            return true;
    }
    json_object_foreach((json_t *)cur, k, v)
    {
        if (!json_object_get(want, k))
            return true;
    }
    return false;
}

static void after_status(void *owner)
{
    struct rec *r = owner;
    struct advop *m = r->m;

    if (r->h.ch.last.err < 0) {
        json_object_del(m->pending, r->h.key);
        if (r->h.ch.last.err != -ENOENT && r->h.ch.last.err != -ESTALE)
            log_warn(MOD, "%s: cannot write the status: %s", r->h.key, r->h.ch.last.message);
        ctl_rec_end(&r->h, r->h.ch.last.err == -ESTALE ? CTL_STALE : CTL_RETRY);
        return;
    }
    ctl_rec_end(&r->h, CTL_NOW);
}

/* Writes the status if it changed; the pass ends there (or at the next resync). */
static void finish(struct rec *r)
{
    struct advop *m = r->m;
    json_t *cur = json_object_get(r->adv, "status"), *want = desired_status(r), *patch, *recv;
    const char *old = jsn_str_or_empty(cur, "advertisementStatus"), *now_status;
    char *body;
    int64_t ttl = 0, left;
    char node[96];

    if (!want) {
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    now_status = jsn_str_or_empty(want, "advertisementStatus");
    recv = json_pack("{s:s,s:s,s:s}", "status", now_status, "reason", r->d.reason, "message",
                     r->d.message);
    if (recv && r->d.accept && vk_node_name_for(r->peer, node, sizeof(node)) == 0)
        json_object_set_new(recv, "virtualNode", json_string(node));
    if (recv)
        write_fc_received(m, r->peer, recv);
    if (!status_differs(cur, want)) {
        json_decref(want);
        rfc3339_parse(
            json_string_value(json_object_get(json_object_get(r->adv, "spec"), "timeToLive")),
            RFC3339_OFFSET, &ttl);
        left = (ttl - (int64_t)time(NULL)) * 1000 + 500;
        /* Deployment mode looks at its Deployment on every pass: sooner. */
        if (left > 0 && left < RESYNC_MS)
            ctl_rec_end_after(&r->h, (uint32_t)left);
        else
            ctl_rec_end_after(&r->h, m->cfg.vk_mode == ADVCFG_VK_DEPLOYMENT && r->d.accept
                                         ? RESYNC_MS / 3
                                         : RESYNC_MS);
        return;
    }
    if (strcmp(old, now_status) != 0 || strcmp(jsn_str_or_empty(cur, "reason"), r->d.reason) != 0) {
        log_info(MOD, "Advertisement %s of cluster %s: %s (%s) %s", r->h.key, r->peer, now_status,
                 r->d.reason, r->d.message);
        emit_event(m, r->adv, !r->d.accept,
                   r->d.accept ? "AdvertisementAccepted" : "AdvertisementRefused", r->d.message);
        json_object_set_new(m->pending, r->h.key, json_string(now_status));
    }
    /* A merge patch keeps what it does not name, at every depth: a member this status no longer
     * has (the network's message once it settled) is removed with a null, or every pass would find
     * the status different and write it again, unchanged. */
    if (jsn_merge_patch_removals(want, cur) < 0) {
        json_decref(want);
        json_object_del(m->pending, r->h.key);
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    patch = json_pack("{s:{s:O},s:o}", "metadata", "resourceVersion",
                      json_object_get(json_object_get(r->adv, "metadata"), "resourceVersion"),
                      "status", want);
    body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    r->h.ch.next = after_status;
    if (!body || kapi_patch(agent_kube(m->mod.a), &peer_res_advertisements, r->ns, r->name,
                            "status", KAPI_PATCH_MERGE, body, ctl_call_cb, r) < 0) {
        json_object_del(m->pending, r->h.key);
        ctl_rec_end(&r->h, CTL_RETRY);
    }
    x_free(body);
}

/* ---- Deployment mode
 * ------------------------------------------------------------------------------ */

static json_t *binding(const char *kind, const char *name, const char *ns, const char *role,
                       const char *sa, const char *sa_ns)
{
    json_t *b =
        json_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:{s:s,s:s,s:s},s:[{s:s,s:s,s:s}]}", "apiVersion",
                  "rbac.authorization.k8s.io/v1", "kind", kind, "metadata", "name", name, "labels",
                  "app.kubernetes.io/managed-by", "cliqo-agent", "roleRef", "apiGroup",
                  "rbac.authorization.k8s.io", "kind", "ClusterRole", "name", role, "subjects",
                  "kind", "ServiceAccount", "name", sa, "namespace", sa_ns);

    if (b && ns)
        json_object_set_new(json_object_get(b, "metadata"), "namespace", json_string(ns));
    return b;
}

/* Adds (or removes) ServiceAccount ns/sa to the subjects of ClusterRoleBinding crb; true when it
 * changed. */
static bool crb_set_subject(json_t *crb, const char *sa, const char *ns, bool add)
{
    json_t *subjects = json_object_get(crb, "subjects"), *s;
    size_t i;

    json_array_foreach(subjects, i, s)
    {
        if (strcmp(jsn_str_or_empty(s, "kind"), "ServiceAccount") == 0 &&
            strcmp(jsn_str_or_empty(s, "name"), sa) == 0 &&
            strcmp(jsn_str_or_empty(s, "namespace"), ns) == 0) {
            if (add)
                return false;
            json_array_remove(subjects, i);
            return true;
        }
    }
    if (!add)
        return false;
    if (!json_is_array(subjects)) {
        subjects = json_array();
        json_object_set_new(crb, "subjects", subjects);
    }
    json_array_append_new(subjects, json_pack("{s:s,s:s,s:s}", "kind", "ServiceAccount", "name", sa,
                                              "namespace", ns));
    return true;
}

static const char *vk_image(struct advop *m)
{
    return m->cfg.vk_image[0] ? m->cfg.vk_image : "cliqo/cliqo-agent:" CLIQO_VERSION;
}

/* The name of the copy of a provider's virtual-kubelet credential in the agent's namespace. */
static void copy_name(const char *peer, char *buf, size_t size)
{
    snprintf(buf, size, "vk-kubeconfig-%s", peer);
}

/* The Deployment of a virtual kubelet, in the agent's namespace (no peer can write there, so no
 * peer can mint the token of its ServiceAccount, which holds node rights cluster-wide). It mounts
 * the copy of the provider's credential that the operator keeps beside it. A Deployment cannot be
 * owned across namespaces: the operator deletes it itself (cleanup_deployment_rbac). */
static json_t *deployment(struct rec *r, const char *name)
{
    struct advop *m = r->m;
    char adv[256], secret[128];

    snprintf(adv, sizeof(adv), "%s/%s", r->ns, r->name);
    copy_name(r->peer, secret, sizeof(secret));
    return json_pack(
        "{s:s,s:s,s:{s:s,s:s,s:{s:s,s:s,s:s}},"
        "s:{s:i,s:{s:{s:s,s:s}},s:{s:{s:{s:s,s:s,s:s}},s:{s:s,s:b,"
        "s:[{s:s,s:s,s:[s,s,s,s,s,s,s,s,s,s,s,s],s:[{s:s,s:{s:{s:s}}},{s:s,s:{s:{s:s}}}],"
        "s:[{s:s,s:s,s:b}],s:{s:{s:s,s:s},s:{s:s,s:s}},"
        "s:{s:b,s:b,s:b,s:{s:[s]}}}],"
        "s:[{s:s,s:{s:s,s:[{s:s,s:s}]}}]}}}}",
        "apiVersion", "apps/v1", "kind", "Deployment", "metadata", "name", name, "namespace",
        agent_namespace(m->mod.a), "labels", "app.kubernetes.io/name", "cliqo-virtual-kubelet",
        PEER_LABEL_REMOTE_CLUSTER, r->peer, "app.kubernetes.io/managed-by", "cliqo-agent", "spec",
        "replicas", 1, "selector", "matchLabels", "app.kubernetes.io/name", "cliqo-virtual-kubelet",
        PEER_LABEL_REMOTE_CLUSTER, r->peer, "template", "metadata", "labels",
        "app.kubernetes.io/name", "cliqo-virtual-kubelet", PEER_LABEL_REMOTE_CLUSTER, r->peer,
        "app.kubernetes.io/part-of", "cliqo", "spec", "serviceAccountName", name,
        "automountServiceAccountToken", 1, "containers", "name", "virtual-kubelet", "image",
        vk_image(m), "command", "cliqo-agent", "virtual-kubelet", "--peer", r->peer, "--home-id",
        identity_cluster_id(m->mod.a), "--home-name",
        identity_cluster_name(m->mod.a) ? identity_cluster_name(m->mod.a) : "", "--advertisement",
        adv, "--remote-kubeconfig", "/etc/cliqo/remote/kubeconfig", "env", "name", "POD_IP",
        "valueFrom", "fieldRef", "fieldPath", "status.podIP", "name", "POD_NAME", "valueFrom",
        "fieldRef", "fieldPath", "metadata.name", "volumeMounts", "name", "remote-kubeconfig",
        "mountPath", "/etc/cliqo/remote", "readOnly", 1, "resources", "requests", "cpu", "20m",
        "memory", "32Mi", "limits", "cpu", "200m", "memory", "128Mi", "securityContext",
        "runAsNonRoot", 1, "readOnlyRootFilesystem", 1, "allowPrivilegeEscalation", 0,
        "capabilities", "drop", "ALL", "volumes", "name", "remote-kubeconfig", "secret",
        "secretName", secret, "items", "key", "kubeconfig", "path", "kubeconfig");
}

/* The copy of the provider's credential (the Secret spec.kubeConfigRef names, in the tenant
 * namespace) that the Deployment mounts. */
static json_t *credential_copy(struct rec *r)
{
    struct advop *m = r->m;
    char name[128];
    const char *b64 =
        json_string_value(json_object_get(json_object_get(r->secret, "data"), "kubeconfig"));

    if (!b64)
        return NULL;
    copy_name(r->peer, name, sizeof(name));
    return json_pack(
        "{s:s,s:s,s:{s:s,s:s,s:{s:s,s:s,s:s}},s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Secret",
        "metadata", "name", name, "namespace", agent_namespace(m->mod.a), "labels",
        "app.kubernetes.io/name", "cliqo-virtual-kubelet", PEER_LABEL_REMOTE_CLUSTER, r->peer,
        "app.kubernetes.io/managed-by", "cliqo-agent", "type", "Opaque", "data", "kubeconfig", b64);
}

static void deploy_step(struct rec *r);

/* Steps of deploy_step (r->step is the next one). A GET of a RoleBinding or of the Deployment may
 * find nothing, and so may the delete of a RoleBinding that binds another subject. */
enum {
    DS_COPY,
    DS_SA,
    DS_CRB_GET,
    DS_CRB_PUT,
    DS_RB_ADV_GET,
    DS_RB_ADV,
    DS_RB_LEASE_GET,
    DS_RB_LEASE,
    DS_DEPLOYMENT,
    DS_CHECK,
};

static void after_deploy(void *owner)
{
    struct rec *r = owner;
    int err = r->h.ch.last.err;
    bool get_step = r->step == DS_RB_ADV || r->step == DS_RB_LEASE || r->step == DS_CHECK ||
                    r->step == DS_RB_ADV_GET || r->step == DS_RB_LEASE_GET;

    if (err < 0 && err != -EEXIST && !(get_step && err == -ENOENT)) {
        log_warn(MOD, "%s: Deployment mode: %s", r->h.key, r->h.ch.last.message);
        if (r->step == DS_SA) /* the copy failed: write it again next time */
            r->e->copied_rv[0] = '\0';
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    deploy_step(r);
}

/* Steps DS_RB_ADV and DS_RB_LEASE: the RoleBinding GET before says whether it binds our
 * ServiceAccount of the agent's namespace. Missing: created. Binding another subject (a virtual
 * kubelet of an earlier version ran in the tenant namespace): deleted, then read again (a
 * RoleBinding is recreated, never updated). */
static void ensure_binding(struct rec *r, const char *name, const char *ns)
{
    struct advop *m = r->m;
    const json_t *subj = json_array_get(json_object_get(r->h.ch.last.body, "subjects"), 0);
    json_t *o;

    if (r->h.ch.last.err == 0) {
        if (json_array_size(json_object_get(r->h.ch.last.body, "subjects")) == 1 &&
            strcmp(jsn_str_or_empty(subj, "name"), name) == 0 &&
            strcmp(jsn_str_or_empty(subj, "namespace"), agent_namespace(m->mod.a)) == 0) {
            deploy_step(r);
            return;
        }
        log_info(MOD, "%s: RoleBinding %s/%s binds another subject; recreating it", r->h.key, ns,
                 name);
        r->step -= 2; /* back to its GET, once deleted */
        if (kapi_delete(agent_kube(m->mod.a), &peer_res_rolebindings, ns, name, NULL, ctl_call_cb,
                        r) < 0)
            ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    o = binding("RoleBinding", name, ns, PEER_VK_LOCAL_ROLE "-ns", name, agent_namespace(m->mod.a));
    if (!o || kapi_create(agent_kube(m->mod.a), &peer_res_rolebindings, ns, o, ctl_call_cb, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
    json_decref(o);
}

/* The Deployment mode of a virtual kubelet, one object per pass step: the copy of the credential,
 * the ServiceAccount, its subject in the shared ClusterRoleBinding (nodes), RoleBindings in the
 * Advertisement's namespace and kube-node-lease, then the Deployment; once ensured, only the copy
 * (when the credential changed) and a check that the Deployment exists. The ServiceAccount, the
 * copy and the Deployment live in the agent's namespace, never in the tenant namespace, where the
 * provider may write Secrets (and so could mint a token of any ServiceAccount there). */
static void deploy_step(struct rec *r)
{
    struct advop *m = r->m;
    char name[128];
    const char *ans = agent_namespace(m->mod.a);
    json_t *o = NULL;
    const struct kapi_resource *res = NULL;
    const char *ns = ans;

    snprintf(name, sizeof(name), "virtual-kubelet-%s", r->peer);
    r->h.ch.next = after_deploy;
    switch (r->step++) {
    case DS_COPY:
        if (strcmp(r->e->copied_rv, kapi_obj_rv(r->secret)) == 0) {
            deploy_step(r);
            return;
        }
        o = credential_copy(r);
        if (!o) {
            log_warn(MOD, "%s: Deployment mode: the credential Secret holds no kubeconfig",
                     r->h.key);
            ctl_rec_end(&r->h, CTL_RETRY);
            return;
        }
        snprintf(r->e->copied_rv, sizeof(r->e->copied_rv), "%s", kapi_obj_rv(r->secret));
        if (kapi_apply(agent_kube(m->mod.a), &kapi_secrets, ans, kapi_obj_name(o), NULL, o,
                       "cliqo-agent", true, ctl_call_cb, r) < 0) {
            r->e->copied_rv[0] = '\0';
            ctl_rec_end(&r->h, CTL_RETRY);
        }
        json_decref(o);
        return;
    case DS_SA:
        if (r->e->deployment_ensured) {
            r->step = DS_CHECK;
            if (kapi_get(agent_kube(m->mod.a), &kapi_deployments, ans, name, ctl_call_cb, r) < 0)
                ctl_rec_end(&r->h, CTL_RETRY);
            return;
        }
        /* An earlier version ran the virtual kubelet in the tenant namespace: its ServiceAccount
         * and Deployment go (its subject leaves the ClusterRoleBinding below). */
        if (strcmp(r->ns, ans) != 0) {
            kapi_delete(agent_kube(m->mod.a), &kapi_serviceaccounts, r->ns, name, NULL,
                        on_fc_written, NULL);
            kapi_delete(agent_kube(m->mod.a), &kapi_deployments, r->ns, name, NULL, on_fc_written,
                        NULL);
        }
        o = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s,s:s}}}", "apiVersion", "v1", "kind",
                      "ServiceAccount", "metadata", "name", name, "namespace", ans, "labels",
                      PEER_LABEL_REMOTE_CLUSTER, r->peer, "app.kubernetes.io/managed-by",
                      "cliqo-agent");
        res = &kapi_serviceaccounts;
        break;
    case DS_CRB_GET: /* read the shared ClusterRoleBinding; the next step adds our ServiceAccount */
        if (kapi_get(agent_kube(m->mod.a), &peer_res_clusterrolebindings, NULL, PEER_VK_LOCAL_ROLE,
                     ctl_call_cb, r) < 0)
            ctl_rec_end(&r->h, CTL_RETRY);
        return;
    case DS_CRB_PUT: {
        json_t *crb = json_deep_copy(r->h.ch.last.body);
        bool changed;

        if (r->h.ch.last.err < 0 || !crb) {
            json_decref(crb);
            log_warn(MOD, "%s: ClusterRoleBinding %s: %s (is cliqo installed?)", r->h.key,
                     PEER_VK_LOCAL_ROLE, r->h.ch.last.message);
            ctl_rec_end(&r->h, CTL_RETRY);
            return;
        }
        changed = crb_set_subject(crb, name, ans, true);
        if (strcmp(r->ns, ans) != 0 && crb_set_subject(crb, name, r->ns, false))
            changed = true;
        if (!changed) {
            json_decref(crb);
            deploy_step(r); /* already there */
            return;
        }
        r->h.ch.next = after_deploy;
        if (kapi_update(agent_kube(m->mod.a), &peer_res_clusterrolebindings, NULL,
                        PEER_VK_LOCAL_ROLE, NULL, crb, ctl_call_cb, r) < 0)
            ctl_rec_end(&r->h, CTL_RETRY);
        json_decref(crb);
        return;
    }
    case DS_RB_ADV_GET:
    case DS_RB_LEASE_GET:
        if (kapi_get(agent_kube(m->mod.a), &peer_res_rolebindings,
                     r->step - 1 == DS_RB_ADV_GET ? r->ns : NODE_LEASE_NS, name, ctl_call_cb,
                     r) < 0)
            ctl_rec_end(&r->h, CTL_RETRY);
        return;
    case DS_RB_ADV:
        ensure_binding(r, name, r->ns);
        return;
    case DS_RB_LEASE:
        ensure_binding(r, name, NODE_LEASE_NS);
        return;
    case DS_DEPLOYMENT:
        o = deployment(r, name);
        res = &kapi_deployments;
        log_info(MOD, "%s: ensuring Deployment %s/%s of the virtual kubelet", r->h.key, ans, name);
        break;
    case DS_CHECK:
    default:
        /* After the GET of DS_SA (or the create of DS_DEPLOYMENT). */
        if (r->h.ch.last.err == -ENOENT) {
            log_warn(MOD, "%s: the virtual kubelet's Deployment is gone; creating it again",
                     r->h.key);
            r->e->deployment_ensured = false;
            r->step = DS_COPY;
            deploy_step(r);
            return;
        }
        r->e->deployment_ensured = true;
        finish(r);
        return;
    }
    if (!o || kapi_create(agent_kube(m->mod.a), res, ns, o, ctl_call_cb, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
    json_decref(o);
}

/* Removes the ServiceAccount of a Deployment-mode virtual kubelet from the shared
 * ClusterRoleBinding: a read, then a conditional update (a conflict is retried). */
struct crb_removal {
    char sa[128], ns[64], legacy_ns[64]; /* legacy_ns: "" or the tenant namespace */
    int tries;
};

static void crb_remove_get(struct kapi_client *c, const struct kapi_result *res, void *data);

static void crb_remove_put(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct crb_removal *cr = data;

    if (res->err == -ESTALE && cr->tries++ < 5 &&
        kapi_get(c, &peer_res_clusterrolebindings, NULL, PEER_VK_LOCAL_ROLE, crb_remove_get, cr) ==
            0)
        return;
    if (res->err < 0 && res->err != -ENOENT)
        log_warn(MOD, "cannot remove %s/%s from ClusterRoleBinding %s: %s", cr->ns, cr->sa,
                 PEER_VK_LOCAL_ROLE, res->status.message);
    x_free(cr);
}

static void crb_remove_get(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct crb_removal *cr = data;
    json_t *crb = res->err == 0 ? json_deep_copy(res->body) : NULL;
    bool changed = crb && crb_set_subject(crb, cr->sa, cr->ns, false);

    if (crb && cr->legacy_ns[0] && crb_set_subject(crb, cr->sa, cr->legacy_ns, false))
        changed = true;
    if (changed && kapi_update(c, &peer_res_clusterrolebindings, NULL, PEER_VK_LOCAL_ROLE, NULL,
                               crb, crb_remove_put, cr) == 0) {
        json_decref(crb);
        return;
    }
    json_decref(crb);
    x_free(cr);
}

/* A delete of the Deployment mode's objects, on its own: nothing waits for it. */
static void on_cleanup(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    (void)c;
    (void)data;
    if (res->err < 0 && res->err != -ENOENT)
        log_warn(MOD, "Deployment mode: a delete failed: %s", res->status.message);
}

/* Everything the Deployment mode made for a virtual kubelet: its subject in the shared
 * ClusterRoleBinding, its RoleBindings (the Advertisement's namespace `ns`, kube-node-lease), and
 * in the agent's namespace its Deployment, ServiceAccount and credential copy; and what an earlier
 * version made in the tenant namespace. Requests in flight on their own. */
static void cleanup_deployment_rbac(struct advop *m, const char *peer, const char *ns)
{
    char name[128], copy[128];
    const char *ans = agent_namespace(m->mod.a);
    struct crb_removal *cr = x_calloc(1, sizeof(*cr));

    snprintf(name, sizeof(name), "virtual-kubelet-%s", peer);
    copy_name(peer, copy, sizeof(copy));
    if (cr) {
        snprintf(cr->sa, sizeof(cr->sa), "%s", name);
        snprintf(cr->ns, sizeof(cr->ns), "%s", ans);
        if (ns && strcmp(ns, ans) != 0)
            snprintf(cr->legacy_ns, sizeof(cr->legacy_ns), "%s", ns);
        if (kapi_get(agent_kube(m->mod.a), &peer_res_clusterrolebindings, NULL, PEER_VK_LOCAL_ROLE,
                     crb_remove_get, cr) == 0)
            cr = NULL;
    }
    x_free(cr);
    kapi_delete(agent_kube(m->mod.a), &peer_res_rolebindings, NODE_LEASE_NS, name, NULL, on_cleanup,
                NULL);
    kapi_delete(agent_kube(m->mod.a), &kapi_deployments, ans, name, NULL, on_cleanup, NULL);
    kapi_delete(agent_kube(m->mod.a), &kapi_serviceaccounts, ans, name, NULL, on_cleanup, NULL);
    kapi_delete(agent_kube(m->mod.a), &kapi_secrets, ans, copy, NULL, on_cleanup, NULL);
    if (ns && strcmp(ns, ans) != 0) {
        kapi_delete(agent_kube(m->mod.a), &peer_res_rolebindings, ns, name, NULL, on_cleanup, NULL);
        kapi_delete(agent_kube(m->mod.a), &kapi_deployments, ns, name, NULL, on_cleanup, NULL);
        kapi_delete(agent_kube(m->mod.a), &kapi_serviceaccounts, ns, name, NULL, on_cleanup, NULL);
    }
}

/* ---- the passes
 * ----------------------------------------------------------------------------------- */

static void accepted(struct rec *r);

/* The provider's credential must not weaken TLS (kc_load_peer): a refused one makes the
 * Advertisement invalid (InvalidCredential, with the field in the message), like a missing one. */
static void check_credential(struct rec *r)
{
    const char *b64 =
        json_string_value(json_object_get(json_object_get(r->secret, "data"), "kubeconfig"));
    struct kc_config *c = NULL;
    char *kubeconfig = NULL;
    size_t len = 0;

    if (!b64 || peer_base64_decode(b64, PEER_SECRET_MAX, &kubeconfig, &len) < 0)
        return; /* said below, when it is installed */
    if (kc_load_peer(kubeconfig, len, "the credential Secret", &c, r->invalid_msg,
                     sizeof(r->invalid_msg)) == -EPERM)
        r->invalid_reason = "InvalidCredential";
    explicit_bzero(kubeconfig, len);
    x_free(kubeconfig);
    kc_config_free(c);
}

/* The credential Secret (spec.kubeConfigRef) was read. */
static void after_secret(void *owner)
{
    struct rec *r = owner;
    struct advop *m = r->m;
    struct advpol_input in;
    struct count cnt = {0};
    const json_t *status = json_object_get(r->adv, "status");

    if (r->h.ch.last.err == -ENOENT && !r->invalid_reason) {
        r->invalid_reason = "NoCredential";
        snprintf(r->invalid_msg, sizeof(r->invalid_msg),
                 "the Secret named by spec.kubeConfigRef does not exist");
    } else if (r->h.ch.last.err < 0 && !r->invalid_reason) {
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    } else {
        r->secret = json_incref(r->h.ch.last.body);
        if (!r->invalid_reason)
            check_credential(r);
    }
    cnt.m = m;
    cnt.key = r->h.key;
    cnt.created = jsn_str_or_empty(json_object_get(r->adv, "metadata"), "creationTimestamp");
    cnt.name = r->name;
    inf_foreach(m->advs, count_visit, &cnt);
    memset(&in, 0, sizeof(in));
    in.peer = r->peer;
    in.cfg = &m->cfg;
    in.invalid_reason = r->invalid_reason;
    in.invalid_message = r->invalid_msg;
    in.cur_status = effective_status(m, r->adv, r->h.key);
    in.cur_reason = jsn_str_or_empty(status, "reason");
    in.by_operator = strcmp(jsn_str_or_empty(status, "decidedBy"), "Operator") == 0;
    in.accepted_others = cnt.accepted;
    in.waiting_before = cnt.waiting_before;
    advpol_decide(&in, &r->d);
    r->e = ent_find(m, r->h.key);
    if (r->d.accept) {
        accepted(r);
        return;
    }
    /* Refused: a virtual kubelet that ran goes first, then the finalizer. */
    if (r->e && !ent_teardown(r->e)) {
        finish(r);
        return;
    }
    if (r->e) {
        if (m->cfg.vk_mode == ADVCFG_VK_DEPLOYMENT || r->e->deployment_ensured)
            cleanup_deployment_rbac(m, r->peer, r->ns);
        ent_free(r->e);
        r->e = NULL;
    }
    if (peer_has_finalizer(r->adv, PEER_VK_FINALIZER)) {
        set_finalizer(r, false);
        return;
    }
    finish(r);
}

static void accepted(struct rec *r)
{
    struct advop *m = r->m;
    const char *b64 =
        json_string_value(json_object_get(json_object_get(r->secret, "data"), "kubeconfig"));
    char *kubeconfig = NULL, err[256];
    size_t len;
    int rc;

    if (!peer_has_finalizer(r->adv, PEER_VK_FINALIZER)) {
        set_finalizer(r, true);
        return;
    }
    r->e = ent_ensure(r);
    if (!r->e) {
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    if (r->e->torn_down) {
        /* Accepted again after a teardown: a fresh virtual kubelet. */
        vk_free(r->e->vk);
        r->e->vk = NULL;
        r->e->torn_down = false;
    }
    if (!r->e->unit && (rc = pu_acquire(agent_peers(m->mod.a), r->peer, OWNER, &r->e->unit)) < 0) {
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    if (!b64 || peer_base64_decode(b64, PEER_SECRET_MAX, &kubeconfig, &len) < 0) {
        log_warn(MOD, "%s: the credential Secret holds no kubeconfig", r->h.key);
    } else {
        rc = pu_set_credential(r->e->unit, PU_VK, kubeconfig, len, kapi_obj_rv(r->secret), err,
                               sizeof(err));
        if (rc < 0)
            log_warn(MOD, "%s: the virtual kubelet's credential is not usable: %s", r->h.key, err);
    }
    if (kubeconfig)
        explicit_bzero(kubeconfig, len);
    x_free(kubeconfig);
    if (m->cfg.vk_mode == ADVCFG_VK_DEPLOYMENT) {
        vk_free(r->e->vk);
        r->e->vk = NULL;
        r->step = DS_COPY;
        deploy_step(r);
        return;
    }
    if (r->e->deployment_ensured) {
        cleanup_deployment_rbac(m, r->peer, r->ns); /* switched back to Embedded */
        r->e->deployment_ensured = false;
        r->e->copied_rv[0] = '\0';
    }
    if (ent_start_vk(r->e) < 0) {
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    vk_set_keepalive(r->e->vk, m->cfg.keepalive_retry_s, m->cfg.keepalive_threshold);
    vk_kick(r->e->vk);
    finish(r);
}

static void after_expired_delete(void *owner)
{
    struct rec *r = owner;

    if (r->h.ch.last.err < 0 && r->h.ch.last.err != -ENOENT)
        log_warn(MOD, "%s: cannot delete the expired Advertisement: %s", r->h.key,
                 r->h.ch.last.message);
    ctl_rec_end(&r->h, r->h.ch.last.err < 0 && r->h.ch.last.err != -ENOENT ? CTL_RETRY : CTL_DONE);
}

static void being_deleted(struct rec *r)
{
    struct advop *m = r->m;
    int64_t since = 0;

    r->e = ent_find(m, r->h.key);
    if (!peer_has_finalizer(r->adv, PEER_VK_FINALIZER)) {
        ctl_rec_end(&r->h, CTL_DONE);
        return;
    }
    if (m->cfg.vk_mode == ADVCFG_VK_DEPLOYMENT && (!r->e || !r->e->vk)) {
        /* The virtual kubelet's process tears down and removes the finalizer; the operator
         * takes over only if it did not within the unpeer timeout. */
        rfc3339_parse(jsn_str_or_empty(json_object_get(r->adv, "metadata"), "deletionTimestamp"),
                      RFC3339_OFFSET, &since);
        if ((int64_t)time(NULL) - since < (int64_t)(remote_timeout_ms(m) / 1000)) {
            ctl_rec_end(&r->h, CTL_RETRY);
            return;
        }
        log_warn(MOD, "%s: the virtual kubelet's Deployment did not tear down in time; doing it",
                 r->h.key);
        if (!r->e)
            r->e = ent_ensure(r);
        if (r->e && !r->e->unit)
            pu_acquire(agent_peers(m->mod.a), r->peer, OWNER, &r->e->unit);
    }
    if (!r->e) {
        r->e = ent_ensure(r);
        if (r->e && !r->e->unit)
            pu_acquire(agent_peers(m->mod.a), r->peer, OWNER, &r->e->unit);
    }
    if (!r->e || !r->e->unit) {
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    if (!ent_teardown(r->e)) {
        ctl_rec_end_after(&r->h, TEARDOWN_MS); /* on_torn_down enqueues sooner */
        return;
    }
    if (m->cfg.vk_mode == ADVCFG_VK_DEPLOYMENT || r->e->deployment_ensured)
        cleanup_deployment_rbac(m, r->peer, r->ns);
    ent_free(r->e);
    r->e = NULL;
    log_info(MOD, "%s: virtual kubelet torn down; releasing the Advertisement", r->h.key);
    set_finalizer(r, false);
}

static void reconcile(struct ctl *c, const char *key)
{
    struct advop *m = ctl_data(c);
    const char *slash = strchr(key, '/');
    struct rec *r;
    json_t *cached;
    struct vkent *e;
    const char *sname;

    if (!slash || (size_t)(slash - key) >= sizeof(r->ns) || strlen(slash + 1) >= sizeof(r->name)) {
        ctl_skip(c, key, CTL_DONE);
        return;
    }
    if (!m->cfg_loaded || !identity_cluster_id(m->mod.a)) {
        ctl_skip(c, key, CTL_WAIT);
        return;
    }
    r = (struct rec *)ctl_rec_begin(c, key);
    if (!r)
        return;
    r->m = m;
    snprintf(r->ns, sizeof(r->ns), "%.*s", (int)(slash - key), key);
    snprintf(r->name, sizeof(r->name), "%s", slash + 1);
    cached = inf_get(m->advs, r->ns, r->name);
    r->adv = cached ? json_deep_copy(cached) : NULL;
    json_decref(cached);
    e = ent_find(m, key);
    if (!r->adv) {
        json_object_del(m->pending, key);
        if (e) {
            /* Gone without our finalizer's teardown (it was removed by hand): the node goes. */
            snprintf(r->peer, sizeof(r->peer), "%s", e->peer);
            if (!ent_teardown(e)) {
                ctl_rec_end_after(&r->h, TEARDOWN_MS);
                return;
            }
            if (m->cfg.vk_mode == ADVCFG_VK_DEPLOYMENT || e->deployment_ensured)
                cleanup_deployment_rbac(m, e->peer, e->ns);
            ent_free(e);
        }
        ctl_rec_end(&r->h, CTL_DONE);
        return;
    }
    if (!tenant_peer(m, r->ns, r->peer, sizeof(r->peer))) {
        /* Not in a tenant namespace: not a peer's Advertisement; nothing to decide. */
        ctl_rec_end(&r->h, CTL_DONE);
        return;
    }
    if (deleting(r->adv)) {
        being_deleted(r);
        return;
    }
    r->invalid_reason = advpol_validate(r->adv, r->peer, (int64_t)time(NULL), r->invalid_msg,
                                        sizeof(r->invalid_msg));
    if (r->invalid_reason && strcmp(r->invalid_reason, "Expired") == 0) {
        log_info(MOD, "%s: expired (%s); deleting it", r->h.key, r->invalid_msg);
        emit_event(m, r->adv, true, "AdvertisementExpired", r->invalid_msg);
        r->h.ch.next = after_expired_delete;
        if (kapi_delete(agent_kube(m->mod.a), &peer_res_advertisements, r->ns, r->name, NULL,
                        ctl_call_cb, r) < 0)
            ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    sname = json_string_value(
        json_object_get(json_object_get(json_object_get(r->adv, "spec"), "kubeConfigRef"), "name"));
    r->h.ch.next = after_secret;
    if (!sname) {
        r->h.ch.last.err = 0;
        after_secret(r);
        return;
    }
    if (kapi_get(agent_kube(m->mod.a), &kapi_secrets, r->ns, sname, ctl_call_cb, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
}

/* ---- handlers
 * -------------------------------------------------------------------------------------- */

/* Those waiting for a slot, after anything that may free one. */
static void waiting_visit(json_t *adv, void *data)
{
    struct advop *m = data;
    const json_t *status = json_object_get(adv, "status");

    if (advpol_waiting(jsn_str_or_empty(status, "advertisementStatus"),
                       jsn_str_or_empty(status, "reason"),
                       strcmp(jsn_str_or_empty(status, "decidedBy"), "Operator") == 0))
        ctl_enqueue_obj(m->mod.ctl, adv);
}

static void enqueue_waiting(struct advop *m)
{
    inf_foreach(m->advs, waiting_visit, m);
}

static void on_adv(struct inf_informer *inf, json_t *obj, void *data)
{
    struct advop *m = data;
    char key[192];
    struct vkent *e;
    const char *p;

    (void)inf;
    snprintf(key, sizeof(key), "%s/%s", kapi_obj_namespace(obj), kapi_obj_name(obj));
    p = json_string_value(json_object_get(m->pending, key));
    if (p &&
        strcmp(p, jsn_str_or_empty(json_object_get(obj, "status"), "advertisementStatus")) == 0)
        json_object_del(m->pending, key);
    ctl_enqueue_obj(m->mod.ctl, obj);
    e = ent_find(m, key);
    if (e)
        vk_kick(e->vk);
}

static void on_adv_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    const char *was = jsn_str_or_empty(json_object_get(old_obj, "status"), "advertisementStatus");
    const char *is = jsn_str_or_empty(json_object_get(new_obj, "status"), "advertisementStatus");

    on_adv(inf, new_obj, data);
    if (strcmp(was, is) != 0 || deleting(new_obj))
        enqueue_waiting(data);
}

static void on_adv_delete(struct inf_informer *inf, json_t *obj, void *data)
{
    on_adv(inf, obj, data);
    enqueue_waiting(data);
}

static void on_config(struct inf_informer *inf, json_t *obj, void *data)
{
    struct advop *m = data;
    struct adv_config old = m->cfg;

    (void)inf;
    if (strcmp(kapi_obj_name(obj) ? kapi_obj_name(obj) : "", PEER_CLUSTER_CONFIG) != 0)
        return;
    advcfg_read(obj, &m->cfg);
    if (m->cfg_loaded && (old.accept != m->cfg.accept || old.max_accept != m->cfg.max_accept ||
                          !json_equal(old.allow, m->cfg.allow) ||
                          !json_equal(old.deny, m->cfg.deny) || old.vk_mode != m->cfg.vk_mode))
        log_info(MOD,
                 "acceptance configuration changed (policy %s, maximum %u, allow %zu, deny %zu, "
                 "virtual kubelets %s)",
                 m->cfg.accept == ADVCFG_MANUAL ? "Manual" : "AutoAcceptMax", m->cfg.max_accept,
                 json_array_size(m->cfg.allow), json_array_size(m->cfg.deny),
                 m->cfg.vk_mode == ADVCFG_VK_DEPLOYMENT ? "Deployment" : "Embedded");
    m->cfg_loaded = true;
    for (struct vkent *e = m->vks; e; e = e->next) {
        if (e->vk) {
            vk_set_keepalive(e->vk, m->cfg.keepalive_retry_s, m->cfg.keepalive_threshold);
            vk_set_config(e->vk, obj);
        }
    }
    advcfg_done(&old);
    ctl_enqueue_all(m->mod.ctl, m->advs);
}

static void on_config_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_config(inf, new_obj, data);
}

static void on_node(struct inf_informer *inf, json_t *obj, void *data)
{
    const char *name = kapi_obj_name(obj);
    struct vkent *e;

    (void)inf;
    if (!name || strncmp(name, PEER_VNODE_PREFIX, strlen(PEER_VNODE_PREFIX)) != 0)
        return;
    e = ent_by_peer(data, name + strlen(PEER_VNODE_PREFIX));
    if (e)
        vk_kick(e->vk);
}

static void on_node_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_node(inf, new_obj, data);
}

/* A TunnelEndpoint here: its provider's virtual node, when what its condition reads changed (not
 * the byte counts, written every 10 s). */
static void on_tep(struct inf_informer *inf, json_t *obj, void *data)
{
    const char *name = kapi_obj_name(obj);
    struct vkent *e;

    (void)inf;
    if (!name || strncmp(name, DPO_TEP_PREFIX, strlen(DPO_TEP_PREFIX)) != 0)
        return;
    e = ent_by_peer(data, name + strlen(DPO_TEP_PREFIX));
    if (e && strcmp(e->ns, kapi_obj_namespace(obj) ? kapi_obj_namespace(obj) : "") == 0)
        vk_kick(e->vk);
}

static void on_tep_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    const json_t *os = json_object_get(old_obj, "status"), *ns = json_object_get(new_obj, "status");

    if (json_equal(json_object_get(os, "phase"), json_object_get(ns, "phase")) &&
        json_equal(json_object_get(os, "message"), json_object_get(ns, "message")) &&
        json_equal(json_object_get(os, "lastHandshake"), json_object_get(ns, "lastHandshake")))
        return;
    on_tep(inf, new_obj, data);
}

/* The gateway's record came or went: every virtual node's NetworkUnavailable. */
static void on_cm(struct inf_informer *inf, json_t *obj, void *data)
{
    struct advop *m = data;

    (void)inf;
    if (strcmp(kapi_obj_name(obj) ? kapi_obj_name(obj) : "", DPO_GW_CONFIGMAP) != 0)
        return;
    for (struct vkent *e = m->vks; e; e = e->next)
        vk_kick(e->vk);
}

static void on_net(const char *id, void *data)
{
    struct advop *m = data;
    struct vkent *e = ent_by_peer(m, id);

    if (e)
        ctl_enqueue(m->mod.ctl, e->key);
    else
        ctl_enqueue_all(m->mod.ctl, m->advs);
}

/* ---- module
 * ---------------------------------------------------------------------------------------- */

int advop_init(struct agent *a)
{
    struct inf_handlers ah = {
        .on_add = on_adv, .on_update = on_adv_update, .on_delete = on_adv_delete};
    struct inf_handlers ch = {.on_add = on_config, .on_update = on_config_update};
    struct inf_handlers nh = {.on_add = on_node, .on_update = on_node_update, .on_delete = on_node};
    struct inf_handlers th = {.on_add = on_tep, .on_update = on_tep_update, .on_delete = on_tep};
    struct inf_handlers gh = {.on_add = on_cm, .on_delete = on_cm};
    /* Every home pod, for the virtual kubelets' pods reflectors to view (vk_pods_shared_set_home):
     * the broadcaster's and admission's informer (equal options share it), so that one watch
     * brings every pod event to the agent once, whatever the number of virtual kubelets. */
    struct inf_options po = {
        .resource = &kapi_pods, .transform = shr_pod_transform, .list_from_cache = true};
    struct inf_informer *pods = NULL;
    struct ctl_options co = {.name = "advertisements",
                             .log_module = MOD,
                             .queue = {.max_concurrent = 32},
                             .rec_size = sizeof(struct rec),
                             .reconcile = reconcile,
                             .rec_release = rec_release,
                             .retry_ms = RETRY_MS,
                             .wait_ms = WAIT_MS};
    struct advop *m = ctl_module_new(a, MOD, sizeof(*m));
    int r;

    if (!m)
        return -ENOMEM;
    advcfg_read(NULL, &m->cfg);
    m->pending = json_object();
    if (!m->pending)
        return -ENOMEM;
    r = agent_informer(a, &peer_res_advertisements, NULL, NULL, 0, &ah, m, &m->advs);
    if (r == 0)
        r = agent_informer(a, &peer_res_clusterconfigs, NULL, NULL, 0, &ch, m, &m->config);
    if (r == 0)
        r = agent_informer(a, &kapi_namespaces, NULL, PEER_LABEL_TENANT "=true", 0, NULL, NULL,
                           &m->tenants);
    if (r == 0)
        r = agent_informer(a, &kapi_nodes, NULL, NULL, 0, &nh, m, &m->nodes);
    if (r == 0)
        r = agent_informer(a, &peer_res_foreignclusters, NULL, NULL, 0, NULL, NULL, &m->fcs);
    if (r == 0)
        r = agent_informer(a, &peer_res_tunnelendpoints, NULL, NULL, 0, &th, m, &m->teps);
    if (r == 0) /* the network module's informer (the same options share it) */
        r = agent_informer(a, &kapi_configmaps, agent_namespace(a), NULL, 0, &gh, m, &m->cms);
    if (r == 0)
        r = ctl_new(a, &co, m, &m->mod.ctl);
    if (r == 0)
        r = agent_subscribe_peer_network(a, on_net, m);
    if (r == 0)
        r = vk_pods_shared_new(agent_metrics(a), &m->pods);
    if (r == 0)
        vk_pods_shared_set_creations(m->pods, agent_config(a)->vk_pod_creations);
    if (r == 0)
        r = agent_informer_ex(a, &po, 0, NULL, NULL, &pods);
    if (r == 0)
        vk_pods_shared_set_home(m->pods, pods);
    if (r == 0) /* logs and exec reach the pods of the virtual kubelets made here */
        kla_agent_set_resolver(a, vk_kla_resolve, m->pods);
    return r;
}

int advop_start(struct agent *a)
{
    return ctl_module_start(a, MOD);
}

void advop_stop(struct agent *a)
{
    ctl_module_stop(a, MOD);
}

void advop_fini(struct agent *a)
{
    struct advop *m = agent_module_data(a, MOD);

    if (!m)
        return;
    /* Virtual kubelets stop without deleting their nodes: they are adopted after a restart (or
     * by the next leader), as a kubelet's node stays when the kubelet restarts. */
    while (m->vks)
        ent_free(m->vks);
    /* After every virtual kubelet, and after the kubeletapi module's fini (later in the module
     * list, so earlier here), which drops the resolver that was given it. */
    vk_pods_shared_free(m->pods);
    m->pods = NULL;
    json_decref(m->pending);
    advcfg_done(&m->cfg);
    ctl_module_fini(a, MOD);
}
