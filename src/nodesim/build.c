/* nodesim builders: Node, Lease and pod status objects, as a kubelet writes them. */
#include "nodesim/nodesim.h"

#include "common/json.h"
#include "common/rfc3339.h"
#include "common/strutil.h"

#include <errno.h>
#include <string.h>

#define HEX_ID_LEN 64

/* A stable, well-formed 64-hex-digit id (container ids, image digests, machine ids) derived from
 * the given strings: FNV-1a, four differently seeded rounds. */
static void hex_id(char out[HEX_ID_LEN + 1], const char *a, const char *b, long n)
{
    char num[24];

    snprintf(num, sizeof(num), "%ld", n);
    for (int round = 0; round < 4; round++) {
        uint64_t h = 1469598103934665603ULL ^ (uint64_t)(round + 1) * 0x9e3779b97f4a7c15ULL;
        const char *parts[3] = {a ? a : "", b ? b : "", num};
        for (int p = 0; p < 3; p++) {
            for (const char *c = parts[p]; *c; c++) {
                h ^= (unsigned char)*c;
                h *= 1099511628211ULL;
            }
            h ^= 0xff;
            h *= 1099511628211ULL;
        }
        snprintf(out + round * 16, 17, "%016llx", (unsigned long long)h);
    }
}

/* ---- nodes ----------------------------------------------------------------------------------- */

static int set_qty(json_t *obj, const char *name, const struct kq *q)
{
    char buf[KQ_STR_MAX];

    if (kq_format(q, buf, sizeof(buf)) < 0)
        return -EINVAL;
    return json_object_set_new(obj, name, json_string(buf)) < 0 ? -ENOMEM : 0;
}

static json_t *resources(const struct ns_config *cfg, const json_t *old)
{
    json_t *r = json_object();
    const char *key;
    json_t *v;
    struct kq zero = {0};

    if (!r)
        return NULL;
    /* Stale keys first: ours overwrite them below. */
    json_object_foreach((json_t *)old, key, v)
    {
        if (json_object_set_new(r, key, json_null()) < 0)
            goto fail;
    }
    if (set_qty(r, "cpu", &cfg->cpu) < 0 || set_qty(r, "memory", &cfg->memory) < 0 ||
        set_qty(r, "pods", &cfg->pods) < 0 || set_qty(r, "ephemeral-storage", &cfg->storage) < 0 ||
        set_qty(r, "hugepages-1Gi", &zero) < 0 || set_qty(r, "hugepages-2Mi", &zero) < 0)
        goto fail;
    for (size_t i = 0; i < cfg->n_ext; i++)
        if (set_qty(r, cfg->ext[i].name, &cfg->ext[i].qty) < 0)
            goto fail;
    return r;
fail:
    json_decref(r);
    return NULL;
}

static json_t *node_condition(const char *type, bool status, const char *reason, const char *msg,
                              const char *heartbeat, const char *transition)
{
    return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "type", type, "status", status ? "True" : "False",
                     "reason", reason, "message", msg, "lastHeartbeatTime", heartbeat,
                     "lastTransitionTime", transition);
}

json_t *ns_build_node_status(const struct ns_config *cfg, const struct ns_node_view *v,
                             const json_t *old_status)
{
    char machine[HEX_ID_LEN + 1], boot[HEX_ID_LEN + 1], uuid[40];
    json_t *st, *conds;

    hex_id(machine, "machine", v->name, 0);
    hex_id(boot, "boot", v->name, 0);
    snprintf(uuid, sizeof(uuid), "%.8s-%.4s-%.4s-%.4s-%.12s", machine, machine + 8, machine + 12,
             machine + 16, machine + 20);
    machine[32] = '\0';
    conds = json_pack(
        "[o,o,o,o,o]",
        node_condition("NetworkUnavailable", false, "RouteCreated",
                       "RouteController created a route", v->now, v->registered_at),
        node_condition("MemoryPressure", false, "KubeletHasSufficientMemory",
                       "kubelet has sufficient memory available", v->now, v->registered_at),
        node_condition("DiskPressure", false, "KubeletHasNoDiskPressure",
                       "kubelet has no disk pressure", v->now, v->registered_at),
        node_condition("PIDPressure", false, "KubeletHasSufficientPID",
                       "kubelet has sufficient PID available", v->now, v->registered_at),
        node_condition("Ready", v->ready, v->ready ? "KubeletReady" : "KubeletNotReady",
                       v->ready ? "kubelet is posting ready status"
                                : "simulated NotReady (annotation " NS_ANN_READY "=false)",
                       v->now, v->ready_since));
    if (!conds)
        return NULL;
    st = json_pack(
        "{s:o*,s:o*,s:o,s:[{s:s,s:s},{s:s,s:s}],s:{s:{s:i}},s:{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:"
        "s,s:s}}",
        "capacity", resources(cfg, json_object_get(old_status, "capacity")), "allocatable",
        resources(cfg, json_object_get(old_status, "allocatable")), "conditions", conds,
        "addresses", "type", "InternalIP", "address", v->internal_ip, "type", "Hostname", "address",
        v->name, "daemonEndpoints", "kubeletEndpoint", "Port",
        cfg->kubelet_port ? (int)cfg->kubelet_port : 10250, "nodeInfo", "machineID", machine,
        "systemUUID", uuid, "bootID", boot + 32, "kernelVersion", "5.10.0-cliqo-nodesim", "osImage",
        "cliqo simulated node", "containerRuntimeVersion", "containerd://1.4.13", "kubeletVersion",
        NS_KUBELET_VER, "kubeProxyVersion", NS_KUBELET_VER, "operatingSystem", "linux",
        "architecture", "amd64");
    if (st && (!json_object_get(st, "capacity") || !json_object_get(st, "allocatable"))) {
        json_decref(st);
        return NULL;
    }
    return st;
}

json_t *ns_build_node_labels(const struct ns_config *cfg, const char *name)
{
    json_t *l =
        json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "kubernetes.io/hostname", name, "kubernetes.io/os",
                  "linux", "kubernetes.io/arch", "amd64", "beta.kubernetes.io/os", "linux",
                  "beta.kubernetes.io/arch", "amd64", NS_LABEL_MANAGED, "true");

    for (size_t i = 0; l && i < cfg->n_labels; i++)
        if (json_object_set_new(l, cfg->labels[i].key, json_string(cfg->labels[i].value)) < 0) {
            json_decref(l);
            return NULL;
        }
    return l;
}

json_t *ns_build_node(const struct ns_config *cfg, const struct ns_node_view *v)
{
    return json_pack("{s:s,s:s,s:{s:s,s:o*,s:{s:s}},s:{s:s,s:[s]},s:o*}", "apiVersion", "v1",
                     "kind", "Node", "metadata", "name", v->name, "labels",
                     ns_build_node_labels(cfg, v->name), "annotations",
                     "node.alpha.kubernetes.io/ttl", "0", "spec", "podCIDR", v->pod_cidr,
                     "podCIDRs", v->pod_cidr, "status", ns_build_node_status(cfg, v, NULL));
}

json_t *ns_build_lease(const char *node, const char *node_uid, uint64_t duration_s,
                       const char *renew_time)
{
    json_t *l = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:I,s:s}}", "apiVersion",
                          "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name", node,
                          "namespace", NS_LEASE_NS, "spec", "holderIdentity", node,
                          "leaseDurationSeconds", (json_int_t)duration_s, "renewTime", renew_time);

    if (l && node_uid &&
        json_object_set_new(json_object_get(l, "metadata"), "ownerReferences",
                            json_pack("[{s:s,s:s,s:s,s:s}]", "apiVersion", "v1", "kind", "Node",
                                      "name", node, "uid", node_uid)) < 0) {
        json_decref(l);
        return NULL;
    }
    return l;
}

/* ---- pods ------------------------------------------------------------------------------------ */

int ns_pod_fail_code(const json_t *pod, int *ret_code)
{
    const char *s = jsn_str_at(pod, "metadata", "annotations", NS_ANN_FAIL, NULL);
    uint64_t v;

    if (!s)
        return -ENOENT;
    if (parse_u64(s, 255, &v) < 0)
        return -EINVAL;
    *ret_code = (int)v;
    return 0;
}

bool ns_pod_terminal(const json_t *pod)
{
    const char *phase = jsn_str_at(pod, "status", "phase", NULL);

    return phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
}

static const json_t *find_by(const json_t *arr, const char *key, const char *value)
{
    size_t i;
    json_t *v;

    json_array_foreach(arr, i, v)
    {
        const char *s = json_string_value(json_object_get(v, key));
        if (s && strcmp(s, value) == 0)
            return v;
    }
    return NULL;
}

struct pod_ctx {
    const json_t *pod, *cur; /* the pod and its current status */
    const char *uid;
    char now[NS_TIME_LEN];
};

static json_t *ids(json_t *cs, const struct pod_ctx *p, const char *name, const char *image,
                   long restarts, bool with_container)
{
    char id[HEX_ID_LEN + 1], ref[HEX_ID_LEN + 600];

    hex_id(id, "image", image, 0);
    snprintf(ref, sizeof(ref), "docker.io/%s@sha256:%s", image, id);
    if (json_object_set_new(cs, "imageID", json_string(ref)) < 0)
        goto fail;
    if (with_container) {
        hex_id(id, p->uid, name, restarts);
        snprintf(ref, sizeof(ref), "containerd://%s", id);
        if (json_object_set_new(cs, "containerID", json_string(ref)) < 0)
            goto fail;
    }
    return cs;
fail:
    json_decref(cs);
    return NULL;
}

static json_t *cond(const struct pod_ctx *p, const char *type, bool status, const char *reason,
                    const char *message)
{
    const json_t *c = find_by(json_object_get(p->cur, "conditions"), "type", type);
    const char *st = status ? "True" : "False", *old = jsn_str_at(c, "status", NULL);
    const char *trans =
        old && strcmp(old, st) == 0 ? jsn_str_at(c, "lastTransitionTime", NULL) : NULL;
    json_t *o = json_pack("{s:s,s:s,s:n,s:s}", "type", type, "status", st, "lastProbeTime",
                          "lastTransitionTime", trans ? trans : p->now);

    if (o && reason &&
        (json_object_set_new(o, "reason", json_string(reason)) < 0 ||
         (message && json_object_set_new(o, "message", json_string(message)) < 0))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Appends " name" to a "[a b]" style list in b. */
static void list_add(struct sbuf *b, const char *name)
{
    if (sbuf_len(b) > 0)
        sbuf_adds(b, " ");
    sbuf_adds(b, name);
}

int ns_build_pod_status(const json_t *pod, const struct ns_pod_view *v, json_t **ret_status,
                        uint64_t *ret_next_ms)
{
    const json_t *spec = json_object_get(pod, "spec");
    const json_t *inits = json_object_get(spec, "initContainers");
    const json_t *ctrs = json_object_get(spec, "containers");
    const char *policy = jsn_str_at(spec, "restartPolicy", NULL);
    const char *step_s = jsn_str_at(pod, "metadata", "annotations", NS_ANN_STEP, NULL);
    struct pod_ctx p = {.pod = pod, .cur = json_object_get(pod, "status")};
    size_t k = json_array_size(inits), n = json_array_size(ctrs), stage;
    json_t *st = NULL, *ics = NULL, *cs = NULL, *conds = NULL, *c;
    struct sbuf not_ready, not_init;
    uint64_t step_ms = 0, elapsed_ms, next_ms = 0;
    int64_t start;
    char buf[NS_TIME_LEN], cstart[NS_TIME_LEN];
    int code = 0, r = -ENOMEM;
    bool fail, terminal = false, all_ready = true;

    if (n == 0)
        return -EINVAL;
    sbuf_init(&not_ready, 4096);
    sbuf_init(&not_init, 4096);
    p.uid = jsn_str_at(pod, "metadata", "uid", NULL);
    if (!p.uid)
        p.uid = "";
    if (!policy)
        policy = "Always";
    rfc3339_format(v->now, 0, 0, p.now, sizeof(p.now));
    if (rfc3339_parse(jsn_str_at(p.cur, "startTime", NULL), 0, &start) < 0)
        start = v->now;
    if (step_s && ns_parse_duration_ms(step_s, &step_ms) < 0)
        step_ms = 0;
    fail = ns_pod_fail_code(pod, &code) == 0;
    elapsed_ms = v->now > start ? (uint64_t)(v->now - start) * 1000 : 0;
    stage = k;
    if (step_ms > 0 && !fail && elapsed_ms / step_ms < k) {
        stage = (size_t)(elapsed_ms / step_ms);
        next_ms = (stage + 1) * step_ms - elapsed_ms;
    }
    rfc3339_format(start + (time_t)(k * step_ms / 1000), 0, 0, cstart, NS_TIME_LEN);

    ics = json_array();
    cs = json_array();
    if (!ics || !cs)
        goto out;
    for (size_t i = 0; i < k; i++) {
        const json_t *ic = json_array_get(inits, i);
        const char *name = jsn_str_at(ic, "name", NULL), *image = jsn_str_at(ic, "image", NULL);
        char t0[NS_TIME_LEN], t1[NS_TIME_LEN];
        if (!name || !image) {
            r = -EINVAL;
            goto out;
        }
        rfc3339_format(start + (time_t)(i * step_ms / 1000), 0, 0, t0, NS_TIME_LEN);
        rfc3339_format(start + (time_t)((i + 1) * step_ms / 1000), 0, 0, t1, NS_TIME_LEN);
        if (i < stage) {
            char cid[HEX_ID_LEN + 20], id[HEX_ID_LEN + 1];
            hex_id(id, p.uid, name, 0);
            snprintf(cid, sizeof(cid), "containerd://%s", id);
            c = json_pack("{s:s,s:s,s:b,s:i,s:{s:{s:i,s:s,s:s,s:s,s:s}},s:{}}", "name", name,
                          "image", image, "ready", 1, "restartCount", 0, "state", "terminated",
                          "exitCode", 0, "reason", "Completed", "startedAt", t0, "finishedAt", t1,
                          "containerID", cid, "lastState");
        } else if (i == stage) {
            c = json_pack("{s:s,s:s,s:b,s:i,s:{s:{s:s}},s:{}}", "name", name, "image", image,
                          "ready", 0, "restartCount", 0, "state", "running", "startedAt", t0,
                          "lastState");
            list_add(&not_init, name);
        } else {
            c = json_pack("{s:s,s:s,s:b,s:i,s:{s:{s:s}},s:{}}", "name", name, "image", image,
                          "ready", 0, "restartCount", 0, "state", "waiting", "reason",
                          "PodInitializing", "lastState");
            list_add(&not_init, name);
        }
        if (!c || !(c = ids(c, &p, name, image, 0, i <= stage)) ||
            json_array_append_new(ics, c) < 0)
            goto out;
    }

    for (size_t i = 0; i < n; i++) {
        const json_t *ct = json_array_get(ctrs, i);
        const char *name = jsn_str_at(ct, "name", NULL), *image = jsn_str_at(ct, "image", NULL);
        const json_t *old = find_by(json_object_get(p.cur, "containerStatuses"), "name", name);
        const json_t *old_state = json_object_get(old, "state");
        const json_t *old_last = json_object_get(old, "lastState");
        const char *old_wait = jsn_str_at(old_state, "waiting", "reason", NULL);
        bool crashing = old_wait && strcmp(old_wait, "CrashLoopBackOff") == 0;
        json_int_t restarts = json_integer_value(json_object_get(old, "restartCount"));
        bool with_id = true, ready = false;
        if (!name || !image) {
            r = -EINVAL;
            goto out;
        }
        c = NULL;
        if (stage < k) {
            c = json_pack("{s:s,s:s,s:b,s:b,s:I,s:{s:{s:s}},s:{}}", "name", name, "image", image,
                          "ready", 0, "started", 0, "restartCount", restarts, "state", "waiting",
                          "reason", "PodInitializing", "lastState");
            with_id = false;
            all_ready = false;
        } else if (fail) {
            bool ends =
                strcmp(policy, "Never") == 0 || (strcmp(policy, "OnFailure") == 0 && code == 0);
            const json_t *old_term = json_object_get(old_state, "terminated");
            const char *started = jsn_str_at(old_state, "running", "startedAt", NULL);
            const char *finished = jsn_str_at(old_term, "finishedAt", NULL);
            json_t *term;
            if (!started)
                started = jsn_str_at(old_term, "startedAt", NULL);
            if (crashing && !started)
                started = jsn_str_at(old_last, "terminated", "startedAt", NULL);
            if (crashing && !finished)
                finished = jsn_str_at(old_last, "terminated", "finishedAt", NULL);
            if (!ends && !crashing)
                restarts++;
            term = json_pack("{s:i,s:s,s:s,s:s}", "exitCode", code, "reason",
                             code ? "Error" : "Completed", "startedAt", started ? started : cstart,
                             "finishedAt", finished ? finished : p.now);
            if (term) {
                char cid[HEX_ID_LEN + 20], id[HEX_ID_LEN + 1];
                hex_id(id, p.uid, name, ends ? (long)restarts : (long)restarts - 1);
                snprintf(cid, sizeof(cid), "containerd://%s", id);
                if (json_object_set_new(term, "containerID", json_string(cid)) < 0) {
                    json_decref(term);
                    term = NULL;
                }
            }
            if (!term)
                goto out;
            if (ends) {
                c = json_pack("{s:s,s:s,s:b,s:b,s:I,s:{s:o},s:{}}", "name", name, "image", image,
                              "ready", 0, "started", 0, "restartCount", restarts, "state",
                              "terminated", term, "lastState");
                terminal = true;
            } else {
                char msg[600];
                snprintf(msg, sizeof(msg), "back-off 10s restarting failed container=%s pod=%s",
                         name, jsn_str_at(pod, "metadata", "name", NULL));
                c = json_pack("{s:s,s:s,s:b,s:b,s:I,s:{s:{s:s,s:s}},s:{s:o}}", "name", name,
                              "image", image, "ready", 0, "started", 0, "restartCount", restarts,
                              "state", "waiting", "reason", "CrashLoopBackOff", "message", msg,
                              "lastState", "terminated", term);
                restarts--; /* the container id is the one of the run that ended */
            }
            all_ready = false;
        } else {
            const char *started = jsn_str_at(old_state, "running", "startedAt", NULL);
            json_t *last = restarts > 0 && old_last ? json_deep_copy(old_last) : json_object();
            if (!started)
                started = restarts == 0 ? cstart : p.now;
            c = json_pack("{s:s,s:s,s:b,s:b,s:I,s:{s:{s:s}},s:o*}", "name", name, "image", image,
                          "ready", 1, "started", 1, "restartCount", restarts, "state", "running",
                          "startedAt", started, "lastState", last);
            if (c && !json_object_get(c, "lastState")) {
                json_decref(c);
                c = NULL;
            }
            ready = true;
        }
        if (!ready)
            list_add(&not_ready, name);
        if (!c || !(c = ids(c, &p, name, image, (long)restarts, with_id)) ||
            json_array_append_new(cs, c) < 0)
            goto out;
    }

    /* Ready follows the containers; a terminal pod's reason is PodCompleted, without message. */
    {
        char msg_ready[4200], msg_init[4200];
        const char *phase = stage < k ? "Pending" : "Running";
        const char *ready_reason = terminal ? "PodCompleted" : "ContainersNotReady";
        const json_t *sched = find_by(json_object_get(p.cur, "conditions"), "type", "PodScheduled");
        snprintf(msg_ready, sizeof(msg_ready), "containers with unready status: [%s]",
                 sbuf_str(&not_ready));
        snprintf(msg_init, sizeof(msg_init), "containers with incomplete status: [%s]",
                 sbuf_str(&not_init));
        if (terminal)
            phase = code == 0 ? "Succeeded" : "Failed";
        conds = json_pack(
            "[o,o,o,o]",
            cond(&p, "Initialized", stage >= k,
                 stage >= k ? (terminal ? "PodCompleted" : NULL) : "ContainersNotInitialized",
                 stage >= k ? NULL : msg_init),
            cond(&p, "Ready", all_ready, all_ready ? NULL : ready_reason,
                 terminal ? NULL : msg_ready),
            cond(&p, "ContainersReady", all_ready, all_ready ? NULL : ready_reason,
                 terminal ? NULL : msg_ready),
            sched ? json_deep_copy(sched) : cond(&p, "PodScheduled", true, NULL, NULL));
        if (!conds)
            goto out;
        rfc3339_format(start, 0, 0, buf, NS_TIME_LEN);
        st = json_pack("{s:s,s:o,s:s,s:s}", "phase", phase, "conditions", conds, "hostIP",
                       v->host_ip, "startTime", buf);
        conds = NULL;
        if (!st)
            goto out;
        if (v->pod_ip &&
            (json_object_set_new(st, "podIP", json_string(v->pod_ip)) < 0 ||
             json_object_set_new(st, "podIPs", json_pack("[{s:s}]", "ip", v->pod_ip)) < 0))
            goto out;
        if (k > 0 && json_object_set(st, "initContainerStatuses", ics) < 0)
            goto out;
        if (json_object_set(st, "containerStatuses", cs) < 0)
            goto out;
    }
    *ret_status = st;
    st = NULL;
    *ret_next_ms = next_ms;
    r = 0;
out:
    json_decref(st);
    json_decref(conds);
    json_decref(ics);
    json_decref(cs);
    sbuf_done(&not_ready);
    sbuf_done(&not_init);
    return r;
}

bool ns_status_differs(const json_t *status, const json_t *current)
{
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)status, key, v)
    {
        if (!json_equal(v, json_object_get(current, key)))
            return true;
    }
    return false;
}
