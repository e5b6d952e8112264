/* nodesim nodes: registration (create, or adopt what a previous run left), status heartbeats,
 * Leases in kube-node-lease, and the NotReady injection through the node annotation. */
#include "nodesim/sim.h"

#include "common/json.h"
#include "common/log.h"
#include "common/rfc3339.h"
#include "common/xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MOD "nodesim"

static void on_lease(struct kapi_client *c, const struct kapi_result *res, void *data);

struct ns_node *ns_node_find(struct ns_sim *sim, const char *name)
{
    json_t *v = name ? json_object_get(sim->node_index, name) : NULL;

    return v ? &sim->nodes[json_integer_value(v)] : NULL;
}

static void now_str(char buf[NS_TIME_LEN], bool micro)
{
    rfc3339_format((int64_t)time(NULL), 0, micro ? 6 : 0, buf, NS_TIME_LEN);
}

static char *dump(json_t *obj)
{
    char *s = obj ? json_dumps(obj, JSON_COMPACT) : NULL;

    json_decref(obj);
    return s;
}

/* ---- leases ---------------------------------------------------------------------------------- */

static void renew_lease(struct ns_node *n)
{
    struct ns_sim *sim = n->sim;
    char now[NS_TIME_LEN];
    json_t *lease;
    char *patch;
    int r;

    if (n->lease_busy || sim->stopping || !n->registered || n->mode != NS_NODE_READY)
        return;
    now_str(now, true);
    if (n->lease_created) {
        patch = dump(json_pack("{s:{s:s,s:I,s:s}}", "spec", "holderIdentity", n->name,
                               "leaseDurationSeconds", (json_int_t)sim->cfg->lease_duration_s,
                               "renewTime", now));
        r = patch ? kapi_patch(sim->c, &kapi_leases, NS_LEASE_NS, n->name, NULL, KAPI_PATCH_MERGE,
                               patch, on_lease, n)
                  : -ENOMEM;
        free(patch); /* allocated by jansson */
    } else {
        lease = ns_build_lease(n->name, n->uid[0] ? n->uid : NULL, sim->cfg->lease_duration_s, now);
        r = lease ? kapi_create(sim->c, &kapi_leases, NS_LEASE_NS, lease, on_lease, n) : -ENOMEM;
        json_decref(lease);
    }
    if (r < 0)
        log_warn(MOD, "node %s: cannot send the lease renewal: %s", n->name, strerror(-r));
    else
        n->lease_busy = true;
}

static void on_lease_ns(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct ns_sim *sim = data;

    (void)c;
    sim->lease_ns_busy = false;
    if (res->err < 0 && res->err != -EEXIST)
        log_warn(MOD, "cannot create namespace " NS_LEASE_NS ": %s", res->status.message);
}

static void on_lease(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct ns_node *n = data;
    struct ns_sim *sim = n->sim;
    bool was_create = !n->lease_created;

    (void)c;
    n->lease_busy = false;
    if (res->err == 0) {
        n->lease_created = true;
        return;
    }
    if (was_create && res->err == -EEXIST) {
        n->lease_created = true;
        renew_lease(n);
        return;
    }
    if (!was_create && res->err == -ENOENT) {
        n->lease_created = false; /* deleted by someone: created again on the next beat */
        return;
    }
    if (was_create && res->err == -ENOENT && !sim->lease_ns_busy) {
        /* The apiserver creates kube-node-lease at start-up; someone deleted it. */
        json_t *ns = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                               "metadata", "name", NS_LEASE_NS);
        if (ns && kapi_create(sim->c, &kapi_namespaces, NULL, ns, on_lease_ns, sim) == 0)
            sim->lease_ns_busy = true;
        json_decref(ns);
        return;
    }
    log_warn(MOD, "node %s: lease renewal failed: %s", n->name, res->status.message);
}

static void on_lease_timer(uv_timer_t *t)
{
    struct ns_sim *sim = t->data;

    for (unsigned i = 0; i < sim->n_nodes; i++)
        renew_lease(&sim->nodes[i]);
}

/* ---- registration and status ----------------------------------------------------------------- */

static void node_view(struct ns_node *n, struct ns_node_view *v, char now[NS_TIME_LEN])
{
    now_str(now, false);
    *v = (struct ns_node_view){.name = n->name,
                               .internal_ip = n->ip,
                               .pod_cidr = n->pod_cidr,
                               .ready = n->mode == NS_NODE_READY,
                               .ready_since = n->ready_since,
                               .registered_at = n->registered_at,
                               .now = now};
}

static void mark_registered(struct ns_node *n)
{
    struct ns_sim *sim = n->sim;

    if (n->registered)
        return;
    n->registered = true;
    sim->n_registered++;
    renew_lease(n);
    if (sim->n_registered == sim->n_nodes)
        ns_sim_nodes_registered(sim);
}

static void finish(struct ns_node *n, int err, const char *what, const char *message)
{
    struct ns_sim *sim = n->sim;

    if (err == 0) {
        wq_forget(sim->nq, n->name);
    } else {
        log_warn(MOD, "node %s: %s failed (retrying): %s", n->name, what, message);
        wq_add_rate_limited(sim->nq, n->name);
    }
    wq_done(sim->nq, n->name);
}

static void on_status(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct ns_node *n = data;

    (void)c;
    if (res->err == -ENOENT) {
        /* Deleted under us: the informer's delete event registers it again. */
        wq_done(n->sim->nq, n->name);
        return;
    }
    finish(n, res->err, "status update", res->status.message);
}

static void on_create(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct ns_node *n = data;
    const char *uid = res->err == 0 ? kapi_obj_uid(res->body) : NULL;

    (void)c;
    if (res->err == -EEXIST) { /* created meanwhile: adopt it */
        wq_add(n->sim->nq, n->name);
        wq_done(n->sim->nq, n->name);
        return;
    }
    if (res->err == 0) {
        snprintf(n->uid, sizeof(n->uid), "%s", uid ? uid : "");
        log_info(MOD, "node %s registered (podCIDR %s, InternalIP %s)", n->name, n->pod_cidr,
                 n->ip);
        mark_registered(n);
    }
    finish(n, res->err, "registration", res->status.message);
}

static void on_adopt(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct ns_node *n = data;

    (void)c;
    if (res->err == 0) {
        log_info(MOD, "node %s adopted (podCIDR %s)", n->name, n->pod_cidr);
        mark_registered(n);
        wq_add(n->sim->nq, n->name); /* then post its status */
    }
    finish(n, res->err, "adoption", res->status.message);
}

/* An existing node: keep its podCIDR (immutable once set), refresh labels and spec. */
static int adopt(struct ns_node *n, const json_t *existing)
{
    struct ns_sim *sim = n->sim;
    const char *cidr = jsn_str_at(existing, "spec", "podCIDR", NULL);
    const char *uid = kapi_obj_uid(existing);
    json_t *patch;
    char *body;
    int r;

    snprintf(n->uid, sizeof(n->uid), "%s", uid ? uid : "");
    if (cidr && strcmp(cidr, n->pod_cidr) != 0 && !sim->pods_started) {
        uint32_t addr;
        unsigned prefix;
        struct ns_ipam a;
        if (ns_parse_cidr(cidr, &addr, &prefix) == 0 && ns_ipam_init(&a, addr, prefix) == 0) {
            log_warn(MOD, "node %s exists with podCIDR %s (not %s): keeping it", n->name, cidr,
                     n->pod_cidr);
            ns_ipam_done(&n->ipam);
            n->ipam = a;
            snprintf(n->pod_cidr, sizeof(n->pod_cidr), "%s", cidr);
        } else {
            log_warn(MOD, "node %s has a podCIDR '%s' the simulator cannot use", n->name, cidr);
        }
    }
    patch = json_pack("{s:{s:o*},s:{s:s,s:[s]}}", "metadata", "labels",
                      ns_build_node_labels(sim->cfg, n->name), "spec", "podCIDR", n->pod_cidr,
                      "podCIDRs", n->pod_cidr);
    body = dump(patch);
    r = body ? kapi_patch(sim->c, &kapi_nodes, NULL, n->name, NULL, KAPI_PATCH_MERGE, body,
                          on_adopt, n)
             : -ENOMEM;
    free(body); /* allocated by jansson */
    return r;
}

static void on_get(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct ns_node *n = data;
    struct ns_node_view v;
    char now[NS_TIME_LEN];
    json_t *obj;
    int r;

    (void)c;
    if (res->err == 0) {
        r = adopt(n, res->body);
    } else if (res->err == -ENOENT) {
        node_view(n, &v, now);
        obj = ns_build_node(n->sim->cfg, &v);
        r = obj ? kapi_create(n->sim->c, &kapi_nodes, NULL, obj, on_create, n) : -ENOMEM;
        json_decref(obj);
    } else {
        finish(n, res->err, "lookup", res->status.message);
        return;
    }
    if (r < 0)
        finish(n, r, "registration", strerror(-r));
}

static void post_status(struct ns_node *n)
{
    struct ns_sim *sim = n->sim;
    json_t *cached = sim->node_inf ? inf_get(sim->node_inf, NULL, n->name) : NULL;
    struct ns_node_view v;
    char now[NS_TIME_LEN];
    json_t *st;
    char *body;
    int r;

    node_view(n, &v, now);
    st = ns_build_node_status(sim->cfg, &v, json_object_get(cached, "status"));
    json_decref(cached);
    body = st ? dump(json_pack("{s:o}", "status", st)) : NULL;
    r = body ? kapi_patch(sim->c, &kapi_nodes, NULL, n->name, "status", KAPI_PATCH_MERGE, body,
                          on_status, n)
             : -ENOMEM;
    free(body); /* allocated by jansson */
    if (r < 0)
        finish(n, r, "status update", strerror(-r));
}

static void process_node(struct wq_queue *q, const char *key, void *data)
{
    struct ns_sim *sim = data;
    struct ns_node *n = ns_node_find(sim, key);
    int r;

    if (!n || sim->stopping || n->deleting) {
        wq_done(q, key);
        return;
    }
    if (!n->registered) {
        r = kapi_get(sim->c, &kapi_nodes, NULL, n->name, on_get, n);
        if (r < 0)
            finish(n, r, "lookup", strerror(-r));
        return;
    }
    if (n->mode == NS_NODE_DEAD) {
        wq_done(q, key);
        return;
    }
    post_status(n);
}

static void on_status_timer(uv_timer_t *t)
{
    struct ns_sim *sim = t->data;

    for (unsigned i = 0; i < sim->n_nodes; i++)
        if (sim->nodes[i].registered && sim->nodes[i].mode != NS_NODE_DEAD)
            wq_add(sim->nq, sim->nodes[i].name);
    log_info(MOD,
             "heartbeat: nodes=%u registered=%u pods=%zu pod_writes=%llu pod_deletes=%llu "
             "pod_deletes_gone=%llu pod_failures=%llu",
             sim->n_nodes, sim->n_registered, ns_pods_managed(sim),
             (unsigned long long)sim->pod_writes, (unsigned long long)sim->pod_deletes,
             (unsigned long long)sim->pod_deletes_gone, (unsigned long long)sim->pod_failures);
}

/* ---- the NotReady injection ------------------------------------------------------------------ */

static const char *mode_name(enum ns_node_mode m)
{
    return m == NS_NODE_READY ? "Ready" : m == NS_NODE_NOT_READY ? "NotReady" : "unresponsive";
}

static void set_mode(struct ns_node *n, enum ns_node_mode m)
{
    struct ns_sim *sim = n->sim;
    enum ns_node_mode old = n->mode;

    if (m == old)
        return;
    n->mode = m;
    log_info(MOD, "node %s: %s -> %s (annotation " NS_ANN_READY ")", n->name, mode_name(old),
             mode_name(m));
    if (m == NS_NODE_DEAD)
        return;
    if ((m == NS_NODE_READY) != (old == NS_NODE_READY))
        now_str(n->ready_since, false);
    wq_add(sim->nq, n->name);
    renew_lease(n);
    if (old == NS_NODE_DEAD)
        ns_pods_requeue_node(sim, n->name);
}

static enum ns_node_mode mode_of(const json_t *obj)
{
    const char *a = jsn_str_at(obj, "metadata", "annotations", NS_ANN_READY, NULL);

    if (a && strcmp(a, "false") == 0)
        return NS_NODE_NOT_READY;
    if (a && strcmp(a, "unknown") == 0)
        return NS_NODE_DEAD;
    return NS_NODE_READY;
}

static void on_node_add(struct inf_informer *inf, json_t *obj, void *data)
{
    struct ns_node *n = ns_node_find(data, kapi_obj_name(obj));

    (void)inf;
    if (n)
        set_mode(n, mode_of(obj));
}

static void on_node_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    struct ns_node *n = ns_node_find(data, kapi_obj_name(new_obj));
    const char *uid = kapi_obj_uid(new_obj);

    (void)inf;
    (void)old_obj;
    if (!n)
        return;
    if (n->registered && uid && strcmp(uid, n->uid) != 0) {
        snprintf(n->uid, sizeof(n->uid), "%s", uid);
        n->lease_created = false;
    }
    set_mode(n, mode_of(new_obj));
}

static void on_node_delete(struct inf_informer *inf, json_t *obj, void *data)
{
    struct ns_sim *sim = data;
    struct ns_node *n = ns_node_find(sim, kapi_obj_name(obj));

    (void)inf;
    if (!n || sim->stopping || n->deleting || !n->registered)
        return;
    log_warn(MOD, "node %s was deleted; registering it again", n->name);
    n->registered = false;
    n->lease_created = false;
    n->uid[0] = '\0';
    sim->n_registered--;
    wq_add(sim->nq, n->name);
}

/* ---- life cycle ------------------------------------------------------------------------------ */

int ns_nodes_init(struct ns_sim *sim)
{
    const struct ns_config *cfg = sim->cfg;
    char now[NS_TIME_LEN];

    now_str(now, false);
    sim->n_nodes = cfg->nodes;
    sim->node_index = json_object();
    sim->nodes = cfg->nodes ? x_calloc(cfg->nodes, sizeof(*sim->nodes)) : NULL;
    if (!sim->node_index || (cfg->nodes && !sim->nodes))
        return -ENOMEM;
    for (unsigned i = 0; i < cfg->nodes; i++) {
        struct ns_node *n = &sim->nodes[i];
        char ip[NS_IP_LEN];
        uint32_t cidr;
        int r;
        n->sim = sim;
        n->index = i;
        n->mode = NS_NODE_READY;
        snprintf(n->name, sizeof(n->name), "%s-%u", cfg->node_prefix, i);
        /* With the kubelet API, every node publishes its one listener. */
        ns_format_ipv4(cfg->kubelet_addr ? cfg->kubelet_ip : cfg->node_ip_base + i, n->ip);
        r = ns_node_cidr(cfg, i, &cidr);
        if (r < 0)
            return r;
        ns_format_ipv4(cidr, ip);
        snprintf(n->pod_cidr, sizeof(n->pod_cidr), "%s/%u", ip, cfg->node_cidr_mask);
        r = ns_ipam_init(&n->ipam, cidr, cfg->node_cidr_mask);
        if (r < 0)
            return r;
        memcpy(n->registered_at, now, sizeof(now));
        memcpy(n->ready_since, now, sizeof(now));
        if (json_object_set_new(sim->node_index, n->name, json_integer(i)) < 0)
            return -ENOMEM;
    }
    return 0;
}

int ns_nodes_start(struct ns_sim *sim)
{
    struct wq_options qo = {.max_concurrent = 32, .base_delay_ms = 500, .max_delay_ms = 30000};
    struct inf_options io = {.resource = &kapi_nodes, .label_selector = NS_LABEL_MANAGED "=true"};
    struct inf_handlers h = {
        .on_add = on_node_add, .on_update = on_node_update, .on_delete = on_node_delete};
    int r;

    sim->nq = wq_new(sim->loop, &qo, process_node, sim);
    if (!sim->nq)
        return -ENOMEM;
    r = inf_new(sim->c, &io, &h, sim, &sim->node_inf);
    if (r < 0)
        return r;
    r = inf_start(sim->node_inf);
    if (r < 0)
        return r;
    uv_timer_start(&sim->lease_timer, on_lease_timer, sim->cfg->lease_ms, sim->cfg->lease_ms);
    uv_timer_start(&sim->status_timer, on_status_timer, sim->cfg->status_ms, sim->cfg->status_ms);
    for (unsigned i = 0; i < sim->n_nodes; i++) {
        r = wq_add(sim->nq, sim->nodes[i].name);
        if (r < 0)
            return r;
    }
    if (sim->n_nodes == 0)
        ns_sim_nodes_registered(sim);
    return 0;
}

static void on_deleted(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct ns_node *n = data;
    struct ns_sim *sim = n->sim;

    (void)c;
    if (res->err == 0 || res->err == -ENOENT)
        log_info(MOD, "node %s deleted", n->name);
    else
        log_warn(MOD, "node %s: delete failed: %s", n->name, res->status.message);
    if (--sim->deletes_pending == 0 && sim->deleted_all)
        sim->deleted_all(sim);
}

void ns_nodes_delete_all(struct ns_sim *sim, void (*done)(struct ns_sim *sim))
{
    struct kapi_delete_opts o = {.grace_period_seconds = -1};

    sim->deleted_all = done;
    for (unsigned i = 0; i < sim->n_nodes; i++) {
        struct ns_node *n = &sim->nodes[i];
        n->deleting = true;
        if (kapi_delete(sim->c, &kapi_nodes, NULL, n->name, &o, on_deleted, n) == 0)
            sim->deletes_pending++;
    }
    if (sim->deletes_pending == 0)
        done(sim);
}

void ns_nodes_done(struct ns_sim *sim)
{
    for (unsigned i = 0; i < sim->n_nodes; i++)
        ns_ipam_done(&sim->nodes[i].ipam);
    x_free(sim->nodes);
    sim->nodes = NULL;
    json_decref(sim->node_index);
    sim->node_index = NULL;
}
