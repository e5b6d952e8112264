/* vk: see vk.h and docs/advertisement.md.
 *
 * Three loop timers drive it: `tick` (a reconcile pass, armed by vk_kick and after each pass),
 * `lease` (Lease renewal) and `probe` (keepalive). Every request holds a reference on the vk, so
 * vk_free never leaves a callback with a dangling pointer: a freed vk only drops the references of
 * the requests that come back. */
#include "virtualkubelet/vk.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "offer/share.h"
#include "common/jsonb.h"
#include "common/liveref.h"
#include "common/log.h"
#include "common/rfc3339.h"
#include "common/xalloc.h"
#include "kube/backoff.h"
#include "kube/names.h"
#include "kube/quantity.h"
#include "network/ipam.h"
#include "peering/objects.h"
#include "peering/resources.h"
#include "virtualkubelet/nodecond.h"
#include "virtualkubelet/nsmapping.h"
#include "offloading/pods.h"
#include "virtualkubelet/reflect.h"

#define MOD                "virtual-kubelet"
#define DEFAULT_LEASE_MS   10000
#define LEASE_WAIT_NODE_MS 500 /* the first renewal, while the node is not known yet */
#define DEFAULT_STATUS_MS  60000
#define DEFAULT_REMOTE_MS  30000
#define LEASE_DURATION_S   40
#define RETRY_MS           1000
#define DRAIN_BATCH        500
#define DRAIN_WAIT_MS      500 /* pods held by finalizers: list again after this */
#define REMOTE_POLL_MS     200
#define NODE_LEASE_NS      "kube-node-lease"
#define MAX_NODE_LABELS    64

enum td_step {
    TD_CORDON,
    TD_DRAIN,
    TD_REMOTE_PODS, /* the pods reflector sees none of ours left on the provider */
    TD_REMOTE,
    TD_NSOF, /* this provider's conditions removed from the NamespaceOffloadings */
    TD_NODE,
    TD_DONE,
};

/* The reflectors every virtual kubelet runs (offloading/reflector.h), in this order; the pods
 * reflector is first (offloading/pods.h; vk.c also calls what only it has), then the object
 * reflectors (reflect.h, reflect_objects.c). */
static const struct vk_reflector_ops *const reflectors[] = {
    &vk_reflect_pods,       &vk_reflect_services, &vk_reflect_endpointslices,
    &vk_reflect_configmaps, &vk_reflect_secrets,
};
#define N_REFLECTORS (sizeof(reflectors) / sizeof(reflectors[0]))
#define PODS         0 /* index of the pods reflector */

/* An address translation of the peering: from -> to (same prefix length), when known. */
struct xlate {
    bool ok;
    struct cidr from, to;
};

struct vk {
    uv_loop_t *loop;
    struct kapi_client *local;
    struct pu_unit *unit;
    struct vk_pods_shared *pods; /* borrowed from the owner (vk_params) */
    char peer[64], home[64], home_name[64], node[80], address[64];
    unsigned kubelet_port;
    struct vk_source src;
    uint64_t lease_ms, status_ms, remote_timeout_ms;

    uv_timer_t *tick, *lease, *probe;
    struct liveref life; /* the owner's reference and one per request in flight */

    bool busy, dirty;   /* a reconcile pass in flight; kicked meanwhile */
    char *status_sig;   /* the last status written (without timestamps) */
    uint64_t status_at; /* when it was written */
    char node_uid[64];
    bool lease_busy;

    unsigned ka_retry_s, ka_threshold, ka_failures;
    bool ka_busy, ka_seen, map_ok;
    char ka_error[256];

    bool ready;
    const char *reason;
    uint64_t recheck_ms; /* the conditions change by time alone after this (0: never) */

    bool tearing;
    enum td_step td;
    uint64_t td_started;
    vk_done_cb done;
    void *done_data;
    json_t *drain; /* pods left to delete */
    size_t drain_i;
    bool td_remote_asked; /* the NamespaceMap's deletion was requested: wait for it to go */
    uint64_t td_step_started;
    bool td_nsof_asked, td_nsof_done;

    /* Reflection: the reflectors' environment and states, the namespace mapping. */
    struct vk_reflect_env env;
    struct vk_reflect_filter filters[_VK_REFLECT_KINDS];
    void *refl[N_REFLECTORS];
    struct vkns *nsmap;
    struct xlate to_home, to_remote; /* remote -> home, home -> remote addresses */
    char local_cidr[CIDR_STR_MAX];   /* this cluster's pod CIDR (ClusterConfig) */
    char net_sig[4 * CIDR_STR_MAX + 8];
};

/* ---- references ------------------------------------------------------------------------------ */

static void vk_destroy(void *data)
{
    struct vk *v = data;

    for (int k = 0; k < _VK_REFLECT_KINDS; k++)
        vk_reflect_filter_clear(&v->filters[k]);
    ktimer_free(v->tick);
    ktimer_free(v->lease);
    ktimer_free(v->probe);
    x_free(v->status_sig);
    json_decref(v->drain);
    x_free(v);
}

static uint64_t now_ms(struct vk *v)
{
    return uv_now(v->loop);
}

int vk_node_name_for(const char *peer_id, char *buf, size_t size)
{
    int n = snprintf(buf, size, PEER_VNODE_PREFIX "%s", peer_id ? peer_id : "");

    return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

const char *vk_node_name(const struct vk *v)
{
    return v->node;
}

bool vk_ready(const struct vk *v, const char **ret_reason)
{
    if (ret_reason)
        *ret_reason = v->reason ? v->reason : "Starting";
    return v->ready;
}

bool vk_tearing_down(const struct vk *v)
{
    return v->tearing;
}

static void schedule(struct vk *v, uint64_t ms);

void vk_kick(struct vk *v)
{
    if (!v || v->life.dead)
        return;
    vkns_kick(v->nsmap); /* the node's labels may have changed */
    if (v->busy) {
        v->dirty = true;
        return;
    }
    schedule(v, 0);
}

/* ---- the desired node --------------------------------------------------------------------------
 */

static json_t *node_labels(struct vk *v, const json_t *adv)
{
    json_t *l =
        json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", PEER_LABEL_TYPE_V01, PEER_VIRTUAL_NODE,
                  PEER_LABEL_TYPE, PEER_VIRTUAL_NODE, PEER_LABEL_REMOTE_CLUSTER, v->peer,
                  "kubernetes.io/hostname", v->node, "kubernetes.io/os", "linux",
                  "kubernetes.io/arch", "amd64", "kubernetes.io/role", "agent",
                  "node.kubernetes.io/exclude-from-external-load-balancers", "true");
    const char *k;
    json_t *val;
    size_t n = 0;

    if (!l)
        return NULL;
    json_object_foreach(json_object_get(json_object_get(adv, "spec"), "labels"), k, val)
    {
        const char *s = json_string_value(val);

        if (!s || !shr_label_shareable(k) || !kname_label_value(s, true) || json_object_get(l, k) ||
            ++n > MAX_NODE_LABELS)
            continue;
        json_object_set(l, k, val);
    }
    return l;
}

/* capacity = allocatable = the advertised amounts, each re-checked (a valid, non-negative
 * quantity, at most SHR_MAX_RESOURCES names). */
static json_t *node_capacity(const json_t *adv, bool *ret_has_resources)
{
    json_t *hard =
        json_object_get(json_object_get(json_object_get(adv, "spec"), "resourceQuota"), "hard");
    json_t *cap = json_object();
    const char *k;
    json_t *val;
    size_t n = 0;
    bool cpu = false, mem = false, pods = false;

    json_object_foreach(hard, k, val)
    {
        char buf[64];
        const char *text = json_string_value(val);
        struct kq q;

        if (json_is_integer(val)) {
            snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(val));
            text = buf;
        }
        if (!cap || !text || strlen(k) >= SHR_NAME_MAX || ++n > SHR_MAX_RESOURCES ||
            kq_parse(text, &q) < 0 || kq_sign(&q) < 0)
            continue;
        if (kq_format(&q, buf, sizeof(buf)) < 0)
            continue;
        json_object_set_new(cap, k, json_string(buf));
        if (kq_sign(&q) > 0) {
            cpu |= strcmp(k, "cpu") == 0;
            mem |= strcmp(k, "memory") == 0;
            pods |= strcmp(k, "pods") == 0;
        }
    }
    *ret_has_resources = cpu && mem && pods;
    return cap;
}

static json_t *condition(const char *type, bool status, const char *reason, const char *message)
{
    return json_pack("{s:s,s:s,s:s,s:s}", "type", type, "status", status ? "True" : "False",
                     "reason", reason, "message", message);
}

/* The status we want, without timestamps (they are added when writing). */
static json_t *desired_status(struct vk *v, const json_t *adv)
{
    struct vkc_input in = {.peer = v->peer,
                           .reachable = v->ka_failures < v->ka_threshold,
                           .threshold = v->ka_threshold,
                           .unreachable = v->ka_error};
    struct vkc_conditions c;
    struct vkc_tunnel tun;
    json_t *cap = node_capacity(adv, &in.has_resources), *conds, *st;

    vkc_network_read(adv, &in.net);
    if (v->src.tunnel) {
        bool dataplane = false;
        json_t *tep = v->src.tunnel(v->src.data, &dataplane);

        vkc_tunnel_read(tep, dataplane, &tun);
        json_decref(tep);
        in.tunnel = &tun;
        in.now = (int64_t)time(NULL);
    }
    vkc_conditions(&in, &c);
    v->ready = c.ready;
    v->reason = c.ready_reason;
    v->recheck_ms = c.recheck_s ? (uint64_t)c.recheck_s * 1000 : 0;
    conds = json_array();
    if (conds) {
        json_array_append_new(conds, condition("Ready", c.ready, c.ready_reason, c.ready_message));
        json_array_append_new(conds, condition("NetworkUnavailable", c.network_unavailable,
                                               c.network_reason, c.network_message));
        json_array_append_new(conds, condition("MemoryPressure", false, "ProviderReady",
                                               "the provider manages its own memory pressure"));
        json_array_append_new(conds, condition("DiskPressure", false, "ProviderReady",
                                               "the provider manages its own disk pressure"));
        json_array_append_new(conds, condition("PIDPressure", false, "ProviderReady",
                                               "the provider manages its own PID pressure"));
    }
    st = json_pack("{s:O,s:O,s:o,s:[{s:s,s:s},{s:s,s:s}],s:{s:{s:i}},s:{s:s,s:s,s:s,s:s,s:s}}",
                   "capacity", cap, "allocatable", cap, "conditions", conds, "addresses", "type",
                   "InternalIP", "address", v->address, "type", "Hostname", "address", v->node,
                   "daemonEndpoints", "kubeletEndpoint", "Port", (int)v->kubelet_port, "nodeInfo",
                   "architecture", "amd64", "operatingSystem", "linux", "kubeletVersion",
                   "v1.20.2-cliqo-" CLIQO_VERSION, "osImage", "cliqo virtual node",
                   "containerRuntimeVersion", "cliqo://" CLIQO_VERSION);
    json_decref(cap);
    return st;
}

/* Timestamps on the conditions: heartbeat now; transition kept while the status is unchanged. */
static void stamp(json_t *status, const json_t *node)
{
    json_t *old = json_object_get(json_object_get(node, "status"), "conditions");
    char now[32];
    size_t i, j;
    json_t *c, *o;

    rfc3339_now(0, now, sizeof(now));
    json_array_foreach(json_object_get(status, "conditions"), i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        const char *since = now;

        json_array_foreach(old, j, o)
        {
            const char *ot = json_string_value(json_object_get(o, "type"));
            const char *os = json_string_value(json_object_get(o, "status"));
            const char *ol = json_string_value(json_object_get(o, "lastTransitionTime"));

            if (ot && os && ol && strcmp(ot, type) == 0 &&
                strcmp(os, json_string_value(json_object_get(c, "status"))) == 0)
                since = ol;
        }
        json_object_set_new(c, "lastHeartbeatTime", json_string(now));
        json_object_set_new(c, "lastTransitionTime", json_string(since));
    }
}

/* ---- reflection: address translations, reflectors, namespace mapping ------------------------- */

static int translate(const struct xlate *x, const char *ip, char *out, size_t size)
{
    int n;

    if (!x->ok)
        return -ENOENT;
    n = cidr_translate(ip, &x->from, &x->to, out, size);
    return n < 0 ? n : 0;
}

static int remote_to_home(void *data, const char *ip, char *out, size_t size)
{
    struct vk *v = data;

    return translate(&v->to_home, ip, out, size);
}

static int home_to_remote(void *data, const char *ip, char *out, size_t size)
{
    struct vk *v = data;

    return translate(&v->to_remote, ip, out, size);
}

static bool xlate_set(struct xlate *x, const char *from, const char *to)
{
    struct cidr f, t;

    x->ok = from && to && cidr_parse(from, &f) == 0 && cidr_parse(to, &t) == 0 &&
            f.family == t.family && f.prefix == t.prefix;
    if (x->ok) {
        x->from = f;
        x->to = t;
    }
    return x->ok;
}

static void kick_reflectors(struct vk *v)
{
    for (size_t i = 0; i < N_REFLECTORS; i++)
        if (v->refl[i])
            reflectors[i]->kick(v->refl[i]);
}

/* The translations from the Advertisement's status.network (the provider's pod CIDR and where
 * this cluster sees it; where the provider sees this cluster's pods) and this cluster's pod CIDR;
 * the reflectors look again when they change. */
static void update_network(struct vk *v, const json_t *adv)
{
    const json_t *n = json_object_get(json_object_get(adv, "status"), "network");
    const char *rc = json_string_value(json_object_get(n, "remotePodCIDR"));
    const char *rm = json_string_value(json_object_get(n, "remoteRemappedPodCIDR"));
    const char *lm = json_string_value(json_object_get(n, "localRemappedPodCIDR"));
    char sig[sizeof(v->net_sig)];

    snprintf(sig, sizeof(sig), "%.49s %.49s %.49s %.49s", rc ? rc : "-", rm ? rm : "-",
             v->local_cidr[0] ? v->local_cidr : "-", lm ? lm : "-");
    if (strcmp(sig, v->net_sig) == 0)
        return;
    snprintf(v->net_sig, sizeof(v->net_sig), "%s", sig);
    xlate_set(&v->to_home, rc, rm);
    xlate_set(&v->to_remote, v->local_cidr[0] ? v->local_cidr : NULL, lm);
    log_info(MOD, "virtual node %s: addresses of the provider's pods %s -> %s, of ours %s -> %s",
             v->node, rc ? rc : "?", rm ? rm : "?", v->local_cidr[0] ? v->local_cidr : "?",
             lm ? lm : "?");
    kick_reflectors(v);
}

/* The pods reflector holds new pods while the remapping is pending (status.network: enabled and
 * not settled); told on every pass, it acts on the first call and on changes only. */
static void network_pending(struct vk *v, const json_t *adv)
{
    struct vkc_network n;

    vkc_network_read(adv, &n);
    vk_pods_set_network_pending(v->refl[PODS], vkc_network_pending(&n));
}

void vk_set_config(struct vk *v, const json_t *cc)
{
    const json_t *spec = json_object_get(cc, "spec");
    const char *pc =
        json_string_value(json_object_get(json_object_get(spec, "liqonetConfig"), "podCIDR"));
    struct cidr c;
    bool changed = false;

    if (!v || v->life.dead)
        return;
    if (!pc || cidr_parse(pc, &c) < 0)
        pc = "";
    if (strcmp(pc, v->local_cidr) != 0) {
        snprintf(v->local_cidr, sizeof(v->local_cidr), "%s", pc);
        v->net_sig[0] = '\0'; /* recomputed on the next pass */
        changed = true;
    }
    {
        static const char *const kinds[_VK_REFLECT_KINDS] = {"services", "endpointslices",
                                                             "configmaps", "secrets"};
        const json_t *refl =
            json_object_get(json_object_get(spec, "offloadingConfig"), "reflection");

        for (int k = 0; k < _VK_REFLECT_KINDS; k++) {
            char err[256];

            if (vk_reflect_filter_parse(json_object_get(refl, kinds[k]), k, &v->filters[k], err,
                                        sizeof(err)) < 0)
                log_warn(MOD, "ClusterConfig offloadingConfig.reflection.%s ignored: %s", kinds[k],
                         err);
        }
        changed = true;
    }
    if (changed) {
        kick_reflectors(v);
        vk_kick(v);
    }
}

/* The namespace mapping's callbacks. */
static json_t *ns_node(void *data)
{
    struct vk *v = data;
    bool known;

    return v->src.node(v->src.data, &known);
}

static void ns_add(void *data, const char *local, const char *remote)
{
    struct vk *v = data;

    for (size_t i = 0; i < N_REFLECTORS; i++)
        if (v->refl[i])
            reflectors[i]->ns_add(v->refl[i], local, remote);
}

static void ns_remove(void *data, const char *local)
{
    struct vk *v = data;

    for (size_t i = 0; i < N_REFLECTORS; i++)
        if (v->refl[i])
            reflectors[i]->ns_remove(v->refl[i], local);
}

static size_t ns_pods_left(void *data, const char *local)
{
    struct vk *v = data;

    return vk_pods_in_namespace(v->refl[PODS], local);
}

static void ns_evict(void *data, const char *local)
{
    struct vk *v = data;

    vk_pods_evict_namespace(v->refl[PODS], local);
}

static void ns_synced(void *data)
{
    struct vk *v = data;

    vk_pods_set_mapping_synced(v->refl[PODS], true);
}

static int start_reflection(struct vk *v)
{
    struct vkns_params np = {
        .loop = v->loop,
        .local = v->local,
        .unit = v->unit,
        .home_id = v->home,
        .home_name = v->home_name,
        .peer_id = v->peer,
        .node_name = v->node,
        .node = ns_node,
        .ns_add = ns_add,
        .ns_remove = ns_remove,
        .pods_left = ns_pods_left,
        .evict = ns_evict,
        .synced = ns_synced,
        .data = v,
    };
    int r;

    v->env = (struct vk_reflect_env){
        .loop = v->loop,
        .local = v->local,
        .unit = v->unit,
        .home_id = v->home,
        .peer_id = v->peer,
        .node_name = v->node,
        .node_address = v->address,
        .filters = v->filters,
        .remote_to_home_ip = remote_to_home,
        .home_to_remote_ip = home_to_remote,
        .ip_data = v,
        .pods = v->pods,
    };
    for (size_t i = 0; i < N_REFLECTORS; i++) {
        r = reflectors[i]->create(&v->env, &v->refl[i]);
        if (r < 0) {
            log_error(MOD, "cannot start the %s reflector of %s: %s", reflectors[i]->kind, v->node,
                      strerror(-r));
            return r;
        }
    }
    return vkns_new(&np, &v->nsmap);
}

static void stop_reflection(struct vk *v)
{
    vkns_free(v->nsmap);
    v->nsmap = NULL;
    for (size_t i = 0; i < N_REFLECTORS; i++) {
        if (v->refl[i])
            reflectors[i]->destroy(v->refl[i]);
        v->refl[i] = NULL;
    }
}

/* ---- reconcile passes
 * ---------------------------------------------------------------------------- */

static void pass(uv_timer_t *t);
static void teardown_step(struct vk *v);

static void schedule(struct vk *v, uint64_t ms)
{
    if (!v->life.dead && v->tick)
        uv_timer_start(v->tick, pass, ms, 0);
}

static void pass_end(struct vk *v, uint64_t next_ms)
{
    v->busy = false;
    if (v->dirty) {
        v->dirty = false;
        next_ms = 0;
    }
    if (v->recheck_ms && next_ms > v->recheck_ms)
        next_ms = v->recheck_ms; /* a handshake about to grow too old: look again then */
    schedule(v, next_ms);
}

static void after_status(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct vk *v = data;

    (void)c;
    if (liveref_put(&v->life))
        return;
    if (res->err == -ENOENT) {
        /* Deleted under us: registered again on the next pass. */
        log_warn(MOD, "virtual node %s disappeared; registering it again", v->node);
        v->node_uid[0] = '\0';
        x_free(v->status_sig);
        v->status_sig = NULL;
        pass_end(v, 0);
        return;
    }
    if (res->err < 0) {
        log_warn(MOD, "cannot update the status of %s: %s", v->node, res->status.message);
        x_free(v->status_sig);
        v->status_sig = NULL;
        pass_end(v, RETRY_MS);
        return;
    }
    v->status_at = now_ms(v);
    pass_end(v, v->status_ms);
}

/* Whether the node as cached already shows the status we want (conditions' status and reason,
 * capacity): someone else (the node-lifecycle controller marking it Unknown, an operator) may have
 * changed it since we wrote it. */
static bool node_shows(const json_t *node, const json_t *status)
{
    const json_t *ns = json_object_get(node, "status");
    size_t i, j;
    json_t *c, *o;

    if (!json_equal(json_object_get(ns, "capacity"), json_object_get(status, "capacity")) ||
        !json_equal(json_object_get(ns, "allocatable"), json_object_get(status, "allocatable")))
        return false;
    json_array_foreach(json_object_get(status, "conditions"), i, c)
    {
        bool found = false;

        json_array_foreach(json_object_get(ns, "conditions"), j, o)
        {
            if (json_equal(json_object_get(o, "type"), json_object_get(c, "type"))) {
                found = json_equal(json_object_get(o, "status"), json_object_get(c, "status")) &&
                        json_equal(json_object_get(o, "reason"), json_object_get(c, "reason"));
                break;
            }
        }
        if (!found)
            return false;
    }
    return true;
}

/* Writes the status when it changed or is due; capacity names no longer advertised are removed. */
static void write_status(struct vk *v, const json_t *node, json_t *status)
{
    char *sig = json_dumps(status, JSON_COMPACT | JSON_SORT_KEYS), *body = NULL;
    json_t *patch, *cap = json_object_get(status, "capacity");
    const char *k;
    json_t *val;
    bool changed =
        !v->status_sig || !sig || strcmp(sig, v->status_sig) != 0 || !node_shows(node, status);

    if (!changed && now_ms(v) - v->status_at < v->status_ms) {
        x_free(sig);
        pass_end(v, v->status_ms - (now_ms(v) - v->status_at));
        return;
    }
    if (changed)
        log_info(MOD, "virtual node %s: Ready=%s (%s)", v->node, v->ready ? "True" : "False",
                 v->reason);
    x_free(v->status_sig);
    v->status_sig = sig;
    stamp(status, node);
    for (const char *const *which = (const char *const[]){"capacity", "allocatable", NULL}; *which;
         which++) {
        json_object_foreach(json_object_get(json_object_get(node, "status"), *which), k, val)
        {
            if (!json_object_get(cap, k))
                json_object_set_new(json_object_get(status, *which), k, json_null());
        }
    }
    patch = json_pack("{s:O}", "status", status);
    body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    if (!body || liveref_sent(&v->life, kapi_patch(v->local, &kapi_nodes, NULL, v->node, "status",
                                                   KAPI_PATCH_STRATEGIC, body, after_status,
                                                   liveref_hold(&v->life))) < 0) {
        pass_end(v, RETRY_MS);
    }
    x_free(body);
}

static void after_node_write(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct vk *v = data;

    (void)c;
    if (liveref_put(&v->life))
        return;
    if (res->err < 0 && res->err != -EEXIST) {
        log_warn(MOD, "cannot register virtual node %s: %s", v->node, res->status.message);
        pass_end(v, RETRY_MS);
        return;
    }
    if (res->err == 0 && kapi_obj_uid(res->body)) {
        if (!v->node_uid[0])
            log_info(MOD, "virtual node %s registered for provider %s", v->node, v->peer);
        snprintf(v->node_uid, sizeof(v->node_uid), "%s", kapi_obj_uid(res->body));
    }
    x_free(v->status_sig); /* a fresh node needs its status */
    v->status_sig = NULL;
    pass_end(v, 0);
}

static json_t *taints(void)
{
    return json_pack("[{s:s,s:s,s:s}]", "key", PEER_VNODE_TAINT_KEY, "value", "true", "effect",
                     "NoExecute");
}

static bool has_taint(const json_t *node)
{
    size_t i;
    json_t *t;

    json_array_foreach(json_object_get(json_object_get(node, "spec"), "taints"), i, t)
    {
        const char *k = json_string_value(json_object_get(t, "key"));
        const char *e = json_string_value(json_object_get(t, "effect"));

        if (k && e && strcmp(k, PEER_VNODE_TAINT_KEY) == 0 && strcmp(e, "NoExecute") == 0)
            return true;
    }
    return false;
}

static void create_node(struct vk *v, const json_t *adv)
{
    json_t *node =
        json_pack("{s:s,s:s,s:{s:s,s:o,s:{s:s}},s:{s:o}}", "apiVersion", "v1", "kind", "Node",
                  "metadata", "name", v->node, "labels", node_labels(v, adv), "annotations",
                  "cliqo.io/provider-cluster-id", v->peer, "spec", "taints", taints());

    if (!node ||
        liveref_sent(&v->life, kapi_create(v->local, &kapi_nodes, NULL, node, after_node_write,
                                           liveref_hold(&v->life))) < 0) {
        pass_end(v, RETRY_MS);
    }
    json_decref(node);
}

/* The keys of the provider's labels last put on the node, kept in an annotation so that a label
 * the provider stops advertising is removed, also after a restart. */
#define ANNOT_ADV_LABELS "cliqo.io/advertised-labels"

static char *advertised_keys(const json_t *labels)
{
    json_t *keys = json_array();
    const char *k;
    json_t *v;
    char *out;

    json_object_foreach((json_t *)labels, k, v)
    {
        (void)v;
        json_array_append_new(keys, json_string(k));
    }
    out = keys ? json_dumps(keys, JSON_COMPACT) : NULL;
    json_decref(keys);
    return out;
}

/* Labels, the advertised-label annotation and the taint put back when they drifted (someone
 * edited the node, or the provider's labels changed). Returns true when a write was started. */
static bool fix_node(struct vk *v, const json_t *node, const json_t *adv)
{
    const json_t *meta = json_object_get(node, "metadata");
    const json_t *have = json_object_get(meta, "labels");
    const char *old_keys_s =
        json_string_value(json_object_get(json_object_get(meta, "annotations"), ANNOT_ADV_LABELS));
    json_t *want = node_labels(v, adv), *lp = json_object(), *patch = NULL, *old_keys = NULL;
    json_t *advl = json_object_get(json_object_get(adv, "spec"), "labels");
    const char *k;
    json_t *val;
    size_t i;
    char *keys = NULL, *body = NULL;
    bool drift = false, written = false;

    if (!want || !lp)
        goto out;
    json_object_foreach(want, k, val)
    {
        if (!json_equal(json_object_get(have, k), val)) {
            json_object_set(lp, k, val);
            drift = true;
        }
    }
    if (old_keys_s && jsonb_load(old_keys_s, strlen(old_keys_s), 0, 0, 0, &old_keys, NULL) < 0)
        old_keys = NULL;
    json_array_foreach(old_keys, i, val)
    {
        const char *ok = json_string_value(val);

        if (ok && !json_object_get(want, ok) && json_object_get(have, ok)) {
            json_object_set_new(lp, ok, json_null());
            drift = true;
        }
    }
    {
        json_t *cur = json_object();

        json_object_foreach(want, k, val)
        {
            if (json_object_get(advl, k))
                json_object_set(cur, k, val);
        }
        keys = advertised_keys(cur);
        json_decref(cur);
    }
    if (!keys)
        goto out;
    if (!old_keys_s || strcmp(old_keys_s, keys) != 0)
        drift = true;
    if (!has_taint(node))
        drift = true;
    if (!drift)
        goto out;
    patch = json_pack("{s:{s:O,s:{s:s}}}", "metadata", "labels", lp, "annotations",
                      ANNOT_ADV_LABELS, keys);
    if (patch && !has_taint(node)) {
        /* A merge patch replaces the list: keep the taints others put there (not-ready...). */
        json_t *tl = json_deep_copy(json_object_get(json_object_get(node, "spec"), "taints"));
        json_t *ours;

        if (!json_is_array(tl)) {
            json_decref(tl);
            tl = json_array();
        }
        ours = taints();
        json_array_extend(tl, ours);
        json_decref(ours);
        json_object_set_new(patch, "spec", json_pack("{s:o}", "taints", tl));
    }
    body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    if (!body)
        goto out;
    log_info(MOD, "virtual node %s: updating its labels and taint", v->node);
    if (liveref_sent(&v->life,
                     kapi_patch(v->local, &kapi_nodes, NULL, v->node, NULL, KAPI_PATCH_MERGE, body,
                                after_node_write, liveref_hold(&v->life))) == 0)
        written = true;
out:
    x_free(body);
    x_free(keys);
    json_decref(patch);
    json_decref(old_keys);
    json_decref(want);
    json_decref(lp);
    return written;
}

static void pass(uv_timer_t *t)
{
    struct vk *v = t->data;
    json_t *adv, *node, *status;
    bool known = false;

    if (v->life.dead || v->busy)
        return;
    if (v->tearing) {
        teardown_step(v);
        return;
    }
    v->busy = true;
    adv = v->src.advertisement(v->src.data);
    if (!adv) {
        pass_end(v, RETRY_MS);
        return;
    }
    update_network(v, adv);
    network_pending(v, adv);
    node = v->src.node(v->src.data, &known);
    if (!node) {
        if (known || !v->node_uid[0]) {
            if (v->node_uid[0])
                log_warn(MOD, "virtual node %s was deleted; registering it again", v->node);
            v->node_uid[0] = '\0';
            create_node(v, adv);
        } else {
            pass_end(v, RETRY_MS);
        }
        json_decref(adv);
        return;
    }
    if (kapi_obj_uid(node))
        snprintf(v->node_uid, sizeof(v->node_uid), "%s", kapi_obj_uid(node));
    if (fix_node(v, node, adv)) {
        json_decref(adv);
        json_decref(node);
        return;
    }
    status = desired_status(v, adv);
    if (status)
        write_status(v, node, status);
    else
        pass_end(v, RETRY_MS);
    json_decref(status);
    json_decref(adv);
    json_decref(node);
}

/* ---- Lease --------------------------------------------------------------------------------------
 */

static void renew(uv_timer_t *t);

static void lease_rearm(struct vk *v)
{
    if (!v->life.dead && !v->tearing)
        uv_timer_start(v->lease, renew, v->lease_ms, 0);
}

static void after_lease_create(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct vk *v = data;

    (void)c;
    if (liveref_put(&v->life))
        return;
    v->lease_busy = false;
    if (res->err < 0 && res->err != -EEXIST)
        log_warn(MOD, "cannot create the Lease of %s: %s", v->node, res->status.message);
    lease_rearm(v);
}

static json_t *lease_spec(struct vk *v)
{
    char buf[RFC3339_MAX];

    rfc3339_now(6, buf, sizeof(buf));
    return json_pack("{s:s,s:i,s:s}", "holderIdentity", v->node, "leaseDurationSeconds",
                     LEASE_DURATION_S, "renewTime", buf);
}

static void after_lease_patch(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct vk *v = data;
    json_t *lease;

    (void)c;
    if (liveref_put(&v->life))
        return;
    if (res->err == -ENOENT && v->node_uid[0] && !v->tearing) {
        lease = json_pack("{s:s,s:s,s:{s:s,s:s,s:[{s:s,s:s,s:s,s:s}]},s:o}", "apiVersion",
                          "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name", v->node,
                          "namespace", NODE_LEASE_NS, "ownerReferences", "apiVersion", "v1", "kind",
                          "Node", "name", v->node, "uid", v->node_uid, "spec", lease_spec(v));
        if (lease &&
            liveref_sent(&v->life, kapi_create(v->local, &kapi_leases, NODE_LEASE_NS, lease,
                                               after_lease_create, liveref_hold(&v->life))) == 0) {
            json_decref(lease);
            return;
        }
        json_decref(lease);
    } else if (res->err < 0 && res->err != -ENOENT) {
        log_warn(MOD, "cannot renew the Lease of %s: %s", v->node, res->status.message);
    }
    v->lease_busy = false;
    lease_rearm(v);
}

static void renew(uv_timer_t *t)
{
    struct vk *v = t->data;
    json_t *patch;
    char *body;

    if (v->life.dead || v->tearing || v->lease_busy)
        return;
    if (!v->node_uid[0]) {
        /* The node is not known yet (a fresh start): look again soon, so that the first heartbeat
         * follows the node by a moment rather than by a whole period, as a kubelet's does. */
        if (!v->life.dead && !v->tearing)
            uv_timer_start(v->lease, renew, LEASE_WAIT_NODE_MS, 0);
        return;
    }
    patch = json_pack("{s:o}", "spec", lease_spec(v));
    body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    v->lease_busy = true;
    if (!body || liveref_sent(&v->life, kapi_patch(v->local, &kapi_leases, NODE_LEASE_NS, v->node,
                                                   NULL, KAPI_PATCH_MERGE, body, after_lease_patch,
                                                   liveref_hold(&v->life))) < 0) {
        v->lease_busy = false;
        lease_rearm(v);
    }
    x_free(body);
}

/* ---- keepalive
 * ----------------------------------------------------------------------------------- */

#define PROBE_MIN_TIMEOUT_MS 2000L

static void probe(uv_timer_t *t);

static void probe_rearm(struct vk *v)
{
    if (!v->life.dead && !v->tearing)
        uv_timer_start(v->probe, probe, (uint64_t)v->ka_retry_s * 1000, 0);
}

static void probe_result(struct vk *v, bool ok, const char *why)
{
    bool was = v->ka_failures < v->ka_threshold;

    if (ok) {
        if (!was)
            log_info(MOD, "provider %s answers again", v->peer);
        v->ka_failures = 0;
        v->ka_error[0] = '\0';
    } else {
        if (v->ka_failures < 1000000)
            v->ka_failures++;
        snprintf(v->ka_error, sizeof(v->ka_error), "%s", why);
        if (v->ka_failures == v->ka_threshold)
            log_warn(MOD, "provider %s did not answer %u probes in a row (%s): node %s NotReady",
                     v->peer, v->ka_failures, why, v->node);
        else
            log_debug(MOD, "probe of provider %s failed (%u): %s", v->peer, v->ka_failures, why);
    }
    if (was != (v->ka_failures < v->ka_threshold) || !v->ka_seen) {
        vk_pods_set_reachable(v->refl[PODS], v->ka_failures < v->ka_threshold, v->ka_error);
        vk_kick(v);
    }
    v->ka_seen = true;
}

static void after_map_create(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct vk *v = data;

    (void)c;
    if (liveref_put(&v->life))
        return;
    v->ka_busy = false;
    if (res->err == 0 || res->err == -EEXIST) {
        v->map_ok = true;
        log_info(MOD, "NamespaceMap %s created on provider %s", v->home, v->peer);
    }
    probe_result(v, res->http_status > 0 && res->err != -EACCES && res->err != -EPERM,
                 res->status.message);
    probe_rearm(v);
}

static void after_probe(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct vk *v = data;
    json_t *map;
    const char *ns;

    (void)c;
    if (liveref_put(&v->life))
        return;
    /* Only now: a freed vk's unit is its owner's no longer. Borrowed from the credential, used
     * before anything here can replace it. */
    ns = pu_namespace(v->unit, PU_VK);
    if (res->err == -ENOENT && ns && !v->tearing) {
        map = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:{}}}", "apiVersion",
                        "virtualkubelet.liqo.io/v1alpha1", "kind", "NamespaceMap", "metadata",
                        "name", v->home, "namespace", ns, "spec", "desiredMapping");
        if (map &&
            liveref_sent(&v->life, kapi_create(c, &peer_res_namespacemaps, ns, map,
                                               after_map_create, liveref_hold(&v->life))) == 0) {
            json_decref(map);
            return;
        }
        json_decref(map);
    }
    v->ka_busy = false;
    if (res->err == 0)
        v->map_ok = true;
    /* Any answer of its apiserver but a refused credential means the provider is there. */
    probe_result(v,
                 (res->err == 0 || res->err == -ENOENT) ||
                     (res->http_status > 0 && res->err != -EACCES && res->err != -EPERM &&
                      res->http_status < 500),
                 res->err == -EACCES || res->err == -EPERM ? "the credential is refused"
                                                           : res->status.message);
    probe_rearm(v);
}

static void probe(uv_timer_t *t)
{
    struct vk *v = t->data;
    struct kapi_client *c = pu_client(v->unit, PU_VK);
    const char *ns = pu_namespace(v->unit, PU_VK);
    struct kapi_request req = {.method = "GET"};
    struct sbuf path;

    if (v->life.dead || v->tearing || v->ka_busy)
        return;
    if (!c || !ns) {
        probe_result(v, false, "no credential for the provider");
        probe_rearm(v);
        return;
    }
    /* A provider that stops answering (a partition, a frozen API server) must count as a failed
     * probe within the keepalive's period, not after the client's 30 s default: the probe waits at
     * most keepaliveRetryTime, and never less than PROBE_MIN_TIMEOUT_MS (a busy server is slow,
     * not gone). */
    sbuf_init(&path, 512);
    if (kapi_path(&path, &peer_res_namespacemaps, ns, v->home, NULL) < 0) {
        probe_result(v, false, "no valid path to the NamespaceMap");
        probe_rearm(v);
        goto out;
    }
    req.path = path.buf;
    req.timeout_ms = (long)v->ka_retry_s * 1000 > PROBE_MIN_TIMEOUT_MS ? (long)v->ka_retry_s * 1000
                                                                       : PROBE_MIN_TIMEOUT_MS;
    v->ka_busy = true;
    if (liveref_sent(&v->life, kapi_send(c, &req, after_probe, liveref_hold(&v->life), NULL)) < 0) {
        v->ka_busy = false;
        probe_result(v, false, "cannot send a request");
        probe_rearm(v);
    }
out:
    sbuf_done(&path);
}

/* ---- teardown
 * ------------------------------------------------------------------------------------ */

static void td_next(struct vk *v, enum td_step next)
{
    v->td = next;
    v->td_step_started = now_ms(v);
    v->busy = false;
    schedule(v, 0);
}

static void nsof_released(void *data)
{
    struct vk *v = data;

    v->td_nsof_done = true;
    if (v->td == TD_NSOF && !v->busy)
        schedule(v, 0);
}

static void td_retry(struct vk *v)
{
    v->busy = false;
    schedule(v, RETRY_MS);
}

static void after_cordon(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct vk *v = data;

    (void)c;
    if (liveref_put(&v->life))
        return;
    if (res->err < 0 && res->err != -ENOENT) {
        log_warn(MOD, "cannot cordon %s: %s", v->node, res->status.message);
        td_retry(v);
        return;
    }
    log_info(MOD, "teardown of %s: node cordoned", v->node);
    td_next(v, TD_DRAIN);
}

static void after_pod_delete(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct vk *v = data;

    (void)c;
    if (liveref_put(&v->life))
        return;
    if (res->err < 0 && res->err != -ENOENT)
        log_warn(MOD, "teardown of %s: cannot delete a pod: %s", v->node, res->status.message);
    v->drain_i++;
    v->busy = false;
    schedule(v, 0);
}

static void after_pod_list(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct vk *v = data;
    json_t *items;

    (void)c;
    if (liveref_put(&v->life))
        return;
    if (res->err < 0) {
        log_warn(MOD, "teardown of %s: cannot list its pods: %s", v->node, res->status.message);
        td_retry(v);
        return;
    }
    items = json_object_get(res->body, "items");
    if (json_array_size(items) == 0) {
        log_info(MOD, "teardown of %s: node drained", v->node);
        td_next(v, TD_REMOTE_PODS);
        return;
    }
    json_decref(v->drain);
    v->drain = json_incref(items);
    v->drain_i = 0;
    v->busy = false;
    /* Pods held by a finalizer after their deletion are not asked again: wait for them (a grace
     * period in progress is cut short by the next delete, grace 0). */
    for (size_t i = 0; i < json_array_size(items); i++) {
        json_t *md = json_object_get(json_array_get(items, i), "metadata");

        if (!json_object_get(md, "deletionTimestamp") ||
            json_array_size(json_object_get(md, "finalizers")) == 0) {
            schedule(v, 0);
            return;
        }
    }
    json_decref(v->drain);
    v->drain = NULL;
    schedule(v, DRAIN_WAIT_MS);
}

static void drain_step(struct vk *v)
{
    char fs[128];
    struct kapi_list_opts lo = {.field_selector = fs, .limit = DRAIN_BATCH};
    struct kapi_delete_opts dopt = {.grace_period_seconds = 0};
    json_t *pod;

    if (v->drain && v->drain_i < json_array_size(v->drain)) {
        pod = json_array_get(v->drain, v->drain_i);
        dopt.precondition_uid = kapi_obj_uid(pod);
        if (liveref_sent(&v->life, kapi_delete(v->local, &kapi_pods, kapi_obj_namespace(pod),
                                               kapi_obj_name(pod), &dopt, after_pod_delete,
                                               liveref_hold(&v->life))) < 0) {
            v->drain_i++;
            td_retry(v);
        }
        return;
    }
    json_decref(v->drain);
    v->drain = NULL;
    snprintf(fs, sizeof(fs), "spec.nodeName=%s", v->node);
    if (liveref_sent(&v->life, kapi_list(v->local, &kapi_pods, NULL, &lo, after_pod_list,
                                         liveref_hold(&v->life))) < 0) {
        td_retry(v);
    }
}

static void after_remote(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct vk *v = data;

    (void)c;
    if (liveref_put(&v->life))
        return;
    if (res->err == -ENOENT) {
        log_info(MOD, "teardown of %s: NamespaceMap removed from provider %s", v->node, v->peer);
        td_next(v, TD_NSOF);
        return;
    }
    if (res->err == 0) {
        /* Deleted, or being deleted: the provider removes the namespaces it made for us first
         * (its finalizer). Look again until it is gone. */
        v->td_remote_asked = true;
        v->busy = false;
        schedule(v, REMOTE_POLL_MS);
        return;
    }
    if (res->err == -EACCES || res->err == -EPERM) {
        log_warn(MOD,
                 "teardown of %s: provider %s refuses our credential (it revoked it); leaving its "
                 "side to it",
                 v->node, v->peer);
        td_next(v, TD_NSOF);
        return;
    }
    if (now_ms(v) - v->td_started >= v->remote_timeout_ms) {
        log_warn(MOD,
                 "teardown of %s: provider %s did not answer within %llu ms (%s); giving up on "
                 "its side",
                 v->node, v->peer, (unsigned long long)v->remote_timeout_ms, res->status.message);
        td_next(v, TD_NSOF);
        return;
    }
    td_retry(v);
}

static void after_node_delete(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct vk *v = data;
    vk_done_cb done;

    (void)c;
    if (liveref_put(&v->life))
        return;
    if (res->err < 0 && res->err != -ENOENT) {
        log_warn(MOD, "teardown of %s: cannot delete the node: %s", v->node, res->status.message);
        td_retry(v);
        return;
    }
    log_info(MOD, "teardown of %s: node deleted; virtual kubelet stopped", v->node);
    v->td = TD_DONE;
    v->busy = false;
    done = v->done;
    v->done = NULL;
    if (done)
        done(v, 0, v->done_data);
}

static void teardown_step(struct vk *v)
{
    struct kapi_client *c = pu_client(v->unit, PU_VK);
    const char *ns = pu_namespace(v->unit, PU_VK);

    v->busy = true;
    switch (v->td) {
    case TD_CORDON:
        if (liveref_sent(&v->life,
                         kapi_patch(v->local, &kapi_nodes, NULL, v->node, NULL, KAPI_PATCH_MERGE,
                                    "{\"spec\":{\"unschedulable\":true}}", after_cordon,
                                    liveref_hold(&v->life))) < 0) {
            td_retry(v);
        }
        return;
    case TD_DRAIN:
        drain_step(v);
        return;
    case TD_REMOTE_PODS:
        /* The drained pods' remote pods go first (the pods reflector deletes them), then the
         * namespaces with the NamespaceMap. */
        if (vk_pods_remote_count(v->refl[PODS]) == 0) {
            log_info(MOD, "teardown of %s: no pod of ours left on provider %s", v->node, v->peer);
            td_next(v, TD_REMOTE);
        } else if (now_ms(v) - v->td_step_started >= v->remote_timeout_ms) {
            log_warn(MOD,
                     "teardown of %s: %zu remote pods still on provider %s after %llu ms; its "
                     "namespaces' deletion removes them",
                     v->node, vk_pods_remote_count(v->refl[PODS]), v->peer,
                     (unsigned long long)v->remote_timeout_ms);
            td_next(v, TD_REMOTE);
        } else {
            v->busy = false;
            schedule(v, REMOTE_POLL_MS);
        }
        return;
    case TD_NSOF:
        v->busy = false;
        if (v->td_nsof_done || !v->nsmap) {
            td_next(v, TD_NODE);
        } else if (!v->td_nsof_asked) {
            v->td_nsof_asked = true;
            vkns_release(v->nsmap, v->remote_timeout_ms, nsof_released, v);
        }
        return;
    case TD_REMOTE:
        if (!c || !ns) {
            log_warn(MOD, "teardown of %s: no credential for provider %s; leaving its side to it",
                     v->node, v->peer);
            td_next(v, TD_NSOF);
            return;
        }
        if ((v->td_remote_asked
                 ? liveref_sent(&v->life, kapi_get(c, &peer_res_namespacemaps, ns, v->home,
                                                   after_remote, liveref_hold(&v->life)))
                 : liveref_sent(&v->life, kapi_delete(c, &peer_res_namespacemaps, ns, v->home, NULL,
                                                      after_remote, liveref_hold(&v->life)))) < 0) {
            td_retry(v);
        }
        return;
    case TD_NODE:
        if (liveref_sent(&v->life, kapi_delete(v->local, &kapi_nodes, NULL, v->node, NULL,
                                               after_node_delete, liveref_hold(&v->life))) < 0) {
            td_retry(v);
        }
        return;
    case TD_DONE:
    default:
        v->busy = false;
        return;
    }
}

void vk_teardown(struct vk *v, vk_done_cb done, void *data)
{
    if (!v || v->life.dead)
        return;
    v->done = done;
    v->done_data = data;
    if (v->tearing) {
        if (v->td == TD_DONE && done) {
            v->done = NULL;
            done(v, 0, data);
        }
        return;
    }
    log_info(MOD, "tearing down virtual node %s: cordon, drain, clean the provider, delete",
             v->node);
    v->tearing = true;
    v->td = TD_CORDON;
    v->td_started = now_ms(v);
    v->td_step_started = v->td_started;
    uv_timer_stop(v->lease);
    uv_timer_stop(v->probe);
    if (!v->busy)
        schedule(v, 0);
    else
        v->dirty = true;
}

/* ---- life cycle
 * ---------------------------------------------------------------------------------- */

void vk_set_keepalive(struct vk *v, unsigned retry_s, unsigned threshold)
{
    if (!v || v->life.dead)
        return;
    retry_s = retry_s ? retry_s : 20;
    threshold = threshold ? threshold : 3;
    if (retry_s != v->ka_retry_s && !v->tearing) {
        v->ka_retry_s = retry_s;
        if (!v->ka_busy)
            uv_timer_start(v->probe, probe, 0, 0);
    }
    if (threshold != v->ka_threshold) {
        v->ka_threshold = threshold;
        vk_kick(v);
    }
}

void vk_set_remote_timeout(struct vk *v, uint64_t ms)
{
    if (v)
        v->remote_timeout_ms = ms ? ms : DEFAULT_REMOTE_MS;
}

int vk_new(const struct vk_params *p, struct vk **ret)
{
    struct vk *v;
    int r;

    if (!p || !p->loop || !p->local || !p->unit || !p->peer_id || !p->home_id ||
        !p->src.advertisement || !p->src.node || !ret)
        return -EINVAL;
    v = x_calloc(1, sizeof(*v));
    if (!v)
        return -ENOMEM;
    v->loop = p->loop;
    v->local = p->local;
    v->unit = p->unit;
    v->pods = p->pods;
    v->src = p->src;
    snprintf(v->peer, sizeof(v->peer), "%s", p->peer_id);
    snprintf(v->home, sizeof(v->home), "%s", p->home_id);
    snprintf(v->home_name, sizeof(v->home_name), "%s", p->home_name ? p->home_name : "");
    snprintf(v->address, sizeof(v->address), "%s",
             p->node_address && *p->node_address ? p->node_address : "127.0.0.1");
    v->kubelet_port = p->kubelet_port ? p->kubelet_port : 10250;
    v->lease_ms = p->lease_ms ? p->lease_ms : DEFAULT_LEASE_MS;
    v->status_ms = p->status_ms ? p->status_ms : DEFAULT_STATUS_MS;
    v->remote_timeout_ms = p->remote_timeout_ms ? p->remote_timeout_ms : DEFAULT_REMOTE_MS;
    v->ka_retry_s = 20;
    v->ka_threshold = 3;
    liveref_init(&v->life, vk_destroy, v);
    if (vk_node_name_for(p->peer_id, v->node, sizeof(v->node)) < 0 ||
        !(v->tick = ktimer_new(p->loop, v)) || !(v->lease = ktimer_new(p->loop, v)) ||
        !(v->probe = ktimer_new(p->loop, v))) {
        vk_destroy(v);
        return -ENOMEM;
    }
    if ((r = start_reflection(v)) < 0) {
        stop_reflection(v);
        vk_destroy(v);
        return r;
    }
    log_info(MOD, "starting the virtual kubelet of provider %s (node %s)", v->peer, v->node);
    uv_timer_start(v->probe, probe, 0, 0);
    uv_timer_start(v->lease, renew, 0, 0);
    schedule(v, 0);
    *ret = v;
    return 0;
}

void vk_free(struct vk *v)
{
    if (!v)
        return;
    liveref_kill(&v->life);
    uv_timer_stop(v->tick);
    uv_timer_stop(v->lease);
    uv_timer_stop(v->probe);
    v->done = NULL;
    stop_reflection(v);
    (void)liveref_put(&v->life);
}
