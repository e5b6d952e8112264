/* nodesim pods: runs the pods bound to the simulated nodes. A pod informer (every namespace, bound
 * pods only) feeds a work queue keyed "namespace/name"; processing a key compares the status the
 * simulated kubelet wants with the cached one and writes the difference to the status subresource,
 * or finishes a deletion. At most cfg.concurrency keys are in flight; the client's token bucket
 * paces the requests. */
#include "nodesim/sim.h"

#include "common/json.h"
#include "common/log.h"
#include "common/xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MOD "nodesim"

static const char *node_name_of(const json_t *pod)
{
    return jsn_str_at(pod, "spec", "nodeName", NULL);
}

static int index_by_node(const json_t *obj, const char **values, size_t max)
{
    const char *n = node_name_of(obj);

    if (!n || !*n || max < 1)
        return 0;
    values[0] = n;
    return 1;
}

static int pod_key(const json_t *pod, char buf[WQ_MAX_KEY_LEN + 1])
{
    const char *ns = kapi_obj_namespace(pod), *name = kapi_obj_name(pod);
    int n;

    if (!ns || !name)
        return -EINVAL;
    n = snprintf(buf, WQ_MAX_KEY_LEN + 1, "%s/%s", ns, name);
    return n < 0 || n > WQ_MAX_KEY_LEN ? -ENAMETOOLONG : 0;
}

/* ---- addresses ------------------------------------------------------------------------------- */

/* Frees the address held by key, if its owner has this uid (NULL: any). */
static void release_ip(struct ns_sim *sim, const char *key, const char *uid)
{
    json_t *e = json_object_get(sim->ip_owner, key);
    const char *owner = jsn_str_at(e, "uid", NULL);
    json_int_t n = json_integer_value(json_object_get(e, "n"));

    if (!e || (uid && owner && strcmp(uid, owner) != 0))
        return;
    if (n >= 0 && (unsigned)n < sim->n_nodes)
        ns_ipam_release(&sim->nodes[n].ipam,
                        (uint32_t)json_integer_value(json_object_get(e, "ip")));
    json_object_del(sim->ip_owner, key);
}

/* The pod's address: the one it holds, else the one in its status if that is free (a restarted
 * simulator adopting its pods), else a new one. */
static int claim_ip(struct ns_sim *sim, const char *key, const json_t *pod, struct ns_node *node,
                    uint32_t *ret)
{
    json_t *e = json_object_get(sim->ip_owner, key);
    const char *uid = kapi_obj_uid(pod), *cur = jsn_str_at(pod, "status", "podIP", NULL);
    uint32_t ip;
    int r;

    if (!uid)
        uid = "";
    if (e) {
        const char *owner = jsn_str_at(e, "uid", NULL);
        if (owner && strcmp(owner, uid) == 0 &&
            json_integer_value(json_object_get(e, "n")) == (json_int_t)node->index) {
            *ret = (uint32_t)json_integer_value(json_object_get(e, "ip"));
            return 0;
        }
        release_ip(sim, key, NULL);
    }
    if (!cur || ns_parse_ipv4(cur, &ip) < 0 || ns_ipam_reserve(&node->ipam, ip) < 0) {
        r = ns_ipam_alloc(&node->ipam, &ip);
        if (r < 0)
            return r;
    }
    e = json_pack("{s:I,s:I,s:s}", "n", (json_int_t)node->index, "ip", (json_int_t)ip, "uid", uid);
    if (!e || json_object_set_new(sim->ip_owner, key, e) < 0) {
        ns_ipam_release(&node->ipam, ip);
        return -ENOMEM;
    }
    *ret = ip;
    return 0;
}

size_t ns_pods_managed(struct ns_sim *sim)
{
    return sim->ip_owner ? json_object_size(sim->ip_owner) : 0;
}

/* ---- processing ------------------------------------------------------------------------------ */

static struct ns_pod_op *op_get(struct ns_sim *sim, const char *key)
{
    for (unsigned i = 0; i < sim->cfg->concurrency; i++)
        if (!sim->ops[i].used) {
            struct ns_pod_op *op = &sim->ops[i];
            op->used = true;
            op->sim = sim;
            op->next_ms = 0;
            op->terminal = false;
            snprintf(op->key, sizeof(op->key), "%s", key);
            return op;
        }
    return NULL;
}

/* Ends the processing of op's key: forget its failures on success, retry later on failure. */
static void op_done(struct ns_pod_op *op, int err)
{
    struct ns_sim *sim = op->sim;

    if (err == 0) {
        wq_forget(sim->pq, op->key);
        if (op->next_ms > 0)
            wq_add_after(sim->pq, op->key, op->next_ms);
    } else {
        sim->pod_failures++;
        wq_add_rate_limited(sim->pq, op->key);
    }
    wq_done(sim->pq, op->key);
    op->used = false;
}

/* The informer's pod of a key "namespace/name" (a new reference), or NULL. */
static json_t *pod_of_key(struct ns_sim *sim, const char *key)
{
    const char *slash = strchr(key, '/');
    char ns[WQ_MAX_KEY_LEN + 1];

    if (!slash || (size_t)(slash - key) >= sizeof(ns))
        return NULL;
    memcpy(ns, key, (size_t)(slash - key));
    ns[slash - key] = '\0';
    return inf_get(sim->pod_inf, ns, slash + 1);
}

/* Until its DELETED event, the informer still has a pod we deleted: an event that came meanwhile
 * (the grace period set to 0 is one) must not delete it again (a 404 each). Kept only while the
 * informer has that pod, so that the map holds no more than the pods being deleted. */
static void remember_deleted(struct ns_pod_op *op)
{
    json_t *pod;

    if (!op->uid[0])
        return;
    pod = pod_of_key(op->sim, op->key);
    if (pod && kapi_obj_uid(pod) && strcmp(kapi_obj_uid(pod), op->uid) == 0)
        json_object_set_new(op->sim->deleted, op->key, json_string(op->uid));
    json_decref(pod);
}

static void on_pod_deleted(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct ns_pod_op *op = data;

    (void)c;
    if (res->err == 0 || res->err == -ENOENT) {
        if (res->err == 0) {
            op->sim->pod_deletes++;
        } else {
            op->sim->pod_deletes_gone++;
            log_info(MOD, "pod %s: already gone when deleted (a DELETE that found no pod)",
                     op->key);
        }
        release_ip(op->sim, op->key, NULL);
        remember_deleted(op);
        op_done(op, 0);
        return;
    }
    if (res->err == -ESTALE) { /* another pod of that name: look again */
        wq_add(op->sim->pq, op->key);
        op_done(op, 0);
        return;
    }
    log_warn(MOD, "pod %s: delete failed (retrying): %s", op->key, res->status.message);
    op_done(op, res->err);
}

static void on_pod_status(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct ns_pod_op *op = data;

    (void)c;
    if (res->err == 0) {
        op->sim->pod_writes++;
        if (op->terminal)
            release_ip(op->sim, op->key, kapi_obj_uid(res->body));
        op_done(op, 0);
        return;
    }
    if (res->err == -ENOENT) { /* gone: the delete event frees its address */
        op->next_ms = 0;
        op_done(op, 0);
        return;
    }
    log_debug(MOD, "pod %s: status update failed (retrying): %s", op->key, res->status.message);
    op_done(op, res->err);
}

static int delete_pod(struct ns_pod_op *op, const json_t *pod)
{
    struct kapi_delete_opts o = {.grace_period_seconds = 0, .precondition_uid = kapi_obj_uid(pod)};

    snprintf(op->uid, sizeof(op->uid), "%s", o.precondition_uid ? o.precondition_uid : "");
    return kapi_delete(op->sim->c, &kapi_pods, kapi_obj_namespace(pod), kapi_obj_name(pod), &o,
                       on_pod_deleted, op);
}

/* Writes the pod's status if it differs from the cached one. Returns 1 when a request was sent,
 * 0 when there is nothing to write, or a negative errno. */
static int sync_status(struct ns_pod_op *op, const json_t *pod, struct ns_node *node)
{
    struct ns_sim *sim = op->sim;
    char ipbuf[NS_IP_LEN];
    struct ns_pod_view v = {.host_ip = node->ip, .now = time(NULL)};
    json_t *st = NULL, *patch;
    uint32_t ip;
    char *body = NULL;
    int r;

    r = claim_ip(sim, op->key, pod, node, &ip);
    if (r == -ENOSPC) {
        log_warn(MOD, "pod %s: node %s has no pod address left", op->key, node->name);
        return r;
    }
    if (r < 0)
        return r;
    ns_format_ipv4(ip, ipbuf);
    v.pod_ip = ipbuf;
    r = ns_build_pod_status(pod, &v, &st, &op->next_ms);
    if (r < 0) {
        log_warn(MOD, "pod %s: cannot build its status: %s", op->key, strerror(-r));
        return 0; /* a malformed pod: nothing to retry */
    }
    if (!ns_status_differs(st, json_object_get(pod, "status"))) {
        json_decref(st);
        return 0;
    }
    /* The uid makes the write fail rather than land on another pod of the same name. */
    patch = json_pack("{s:{s:s?},s:o}", "metadata", "uid", kapi_obj_uid(pod), "status", st);
    op->terminal = patch && ns_pod_terminal(patch);
    body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    /* The answer is read for its metadata only (the pod's uid): what was written is known. */
    r = body ? kapi_patch_meta(sim->c, &kapi_pods, kapi_obj_namespace(pod), kapi_obj_name(pod),
                               "status", KAPI_PATCH_MERGE, body, on_pod_status, op)
             : -ENOMEM;
    free(body); /* allocated by jansson */
    return r < 0 ? r : 1;
}

static void process_pod(struct wq_queue *q, const char *key, void *data)
{
    struct ns_sim *sim = data;
    struct ns_pod_op *op;
    struct ns_node *node;
    json_t *pod = NULL;
    int r = 0;

    if (sim->stopping || !strchr(key, '/') || !(op = op_get(sim, key))) {
        wq_done(q, key);
        return;
    }
    pod = pod_of_key(sim, key);
    node = pod ? ns_node_find(sim, node_name_of(pod)) : NULL;
    if (!pod)
        json_object_del(sim->deleted, key);
    if (!node || node->mode == NS_NODE_DEAD) {
        /* gone, not ours, or its kubelet is "stopped" (requeued when it comes back) */
    } else if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp")) {
        const char *done = json_string_value(json_object_get(sim->deleted, key));

        if (!done || !kapi_obj_uid(pod) || strcmp(done, kapi_obj_uid(pod)) != 0) {
            r = delete_pod(op, pod);
            r = r < 0 ? r : 1;
        }
    } else if (ns_pod_terminal(pod)) {
        release_ip(sim, op->key, kapi_obj_uid(pod));
    } else {
        r = sync_status(op, pod, node);
    }
    json_decref(pod);
    if (r <= 0)
        op_done(op, r);
}

/* ---- informer -------------------------------------------------------------------------------- */

static void enqueue(struct ns_sim *sim, const json_t *pod)
{
    char key[WQ_MAX_KEY_LEN + 1];
    int r;

    if (!ns_node_find(sim, node_name_of(pod)) || pod_key(pod, key) < 0)
        return;
    r = wq_add(sim->pq, key);
    if (r < 0 && r != -ESHUTDOWN)
        log_warn(MOD, "pod %s: cannot queue: %s", key, strerror(-r));
}

static void on_pod_add(struct inf_informer *inf, json_t *obj, void *data)
{
    struct ns_sim *sim = data;
    struct ns_node *node = ns_node_find(sim, node_name_of(obj));
    char key[WQ_MAX_KEY_LEN + 1];
    uint32_t ip;

    (void)inf;
    if (!node)
        return;
    if (sim->pods_synced) {
        enqueue(sim, obj);
        return;
    }
    /* Initial list: take back the addresses our running pods already have before any pod is
     * processed, so that a new pod can never be given one of them. */
    if (!ns_pod_terminal(obj) && jsn_str_at(obj, "status", "podIP", NULL) &&
        pod_key(obj, key) == 0 && claim_ip(sim, key, obj, node, &ip) < 0)
        log_warn(MOD, "pod %s: cannot keep its address", key);
}

static void on_pod_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    struct ns_sim *sim = data;

    (void)inf;
    (void)old_obj;
    if (sim->pods_synced)
        enqueue(sim, new_obj);
}

static void on_pod_delete(struct inf_informer *inf, json_t *obj, void *data)
{
    char key[WQ_MAX_KEY_LEN + 1];

    (void)inf;
    if (pod_key(obj, key) == 0) {
        release_ip(data, key, kapi_obj_uid(obj));
        json_object_del(((struct ns_sim *)data)->deleted, key);
    }
}

static void visit_enqueue(json_t *obj, void *data)
{
    enqueue(data, obj);
}

static void on_pods_synced(struct inf_informer *inf, void *data)
{
    struct ns_sim *sim = data;

    sim->pods_synced = true;
    log_info(MOD, "pod informer synced: %zu bound pods, %zu on simulated nodes", inf_count(inf),
             ns_pods_managed(sim));
    inf_foreach(inf, visit_enqueue, sim);
}

static void on_pods_error(struct inf_informer *inf, int err, const char *message, void *data)
{
    (void)inf;
    (void)data;
    log_warn(MOD, "pod informer: %s (%s); retrying", message, strerror(-err));
}

void ns_pods_requeue_node(struct ns_sim *sim, const char *node)
{
    if (sim->pod_inf && sim->pods_synced)
        inf_index_foreach(sim->pod_inf, "node", node, visit_enqueue, sim);
}

/* A pod bound to a node this simulator does not run (a real node's, a virtual node's) is cached
 * as a stub: its name, namespace, uid, version and node. A kubelet would not even be sent it; the
 * watch of every bound pod is the simulator's shortcut (one watch for all its nodes), and the stub
 * keeps that shortcut from costing it the encoding and the memory of pods it never runs. The
 * nodes are known before the informer starts (ns_nodes_init) and a pod's node never changes. */
static void pod_transform(json_t *obj, void *data)
{
    struct ns_sim *sim = data;
    json_t *meta = json_object_get(obj, "metadata"), *m, *spec;
    static const char *const keep[] = {"name", "namespace", "uid", "resourceVersion"};

    if (ns_node_find(sim, node_name_of(obj)) || !json_is_object(meta))
        return;
    m = json_object();
    spec =
        json_pack("{s:O?}", "nodeName", json_object_get(json_object_get(obj, "spec"), "nodeName"));
    for (size_t i = 0; m && i < sizeof(keep) / sizeof(keep[0]); i++)
        if (json_object_get(meta, keep[i]))
            json_object_set(m, keep[i], json_object_get(meta, keep[i]));
    if (!m || !spec) {
        json_decref(m);
        json_decref(spec);
        return; /* cached whole: as before */
    }
    json_object_clear(obj);
    json_object_set_new(obj, "metadata", m);
    json_object_set_new(obj, "spec", spec);
}

int ns_pods_start(struct ns_sim *sim)
{
    struct wq_options qo = {
        .max_concurrent = sim->cfg->concurrency, .base_delay_ms = 50, .max_delay_ms = 30000};
    /* Only bound pods: the simulator has nothing to do with pending ones. Updates are handled
     * from the new object alone (on_pod_update): the old one is not decoded. */
    struct inf_options io = {.resource = &kapi_pods,
                             .field_selector = "spec.nodeName!=",
                             .transform = pod_transform,
                             .update_without_old = true};
    struct inf_handlers h = {.on_add = on_pod_add,
                             .on_update = on_pod_update,
                             .on_delete = on_pod_delete,
                             .on_synced = on_pods_synced,
                             .on_error = on_pods_error};
    int r;

    sim->ip_owner = json_object();
    sim->deleted = json_object();
    sim->ops = x_calloc(sim->cfg->concurrency, sizeof(*sim->ops));
    sim->pq = wq_new(sim->loop, &qo, process_pod, sim);
    if (!sim->ip_owner || !sim->deleted || !sim->ops || !sim->pq)
        return -ENOMEM;
    r = inf_new(sim->c, &io, &h, sim, &sim->pod_inf);
    if (r < 0)
        return r;
    r = inf_add_index(sim->pod_inf, "node", index_by_node);
    if (r < 0)
        return r;
    return inf_start(sim->pod_inf);
}

void ns_pods_done(struct ns_sim *sim)
{
    x_free(sim->ops);
    sim->ops = NULL;
    json_decref(sim->ip_owner);
    sim->ip_owner = NULL;
    json_decref(sim->deleted);
    sim->deleted = NULL;
}
