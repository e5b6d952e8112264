/* bench-informer: the programs behind bench/informer-vs-kubectl.sh.
 *
 *   create  --kubeconfig K --pods N [--from I] [--namespaces 4] [--nodes M] [--inflight 64]
 *           [--no-status]
 *           creates N realistic pods (a Deployment-like template, two containers, requests and
 *           limits, env vars, a Running-like status) across a few namespaces, many requests in
 *           flight over one HTTP/2 connection. --nodes: first M Ready Nodes (as a kubelet
 *           registers one, without a kubelet behind it), and the pods bound to them round-robin.
 * --from: only the pods numbered I to N-1 (to grow a collection made before). sync    --kubeconfig
 * K [--store compact|tree] [--expect N] [--updates M] [--page-size P]
 *           [--list consistent|cache] [--wire protobuf|json]
 *           one informer on all pods: time from inf_start to on_synced (and from exec, when the
 *           runner puts its epoch milliseconds in $BENCH_T0_MS, as for bench/clientgo-informer),
 *           memory per cached pod (RSS and heap, before and after), the store's own accounting,
 *           the longest stall of the loop during the sync (a 1 ms timer's lateness), decode time
 *           per object, then optionally M label patches and the time until all M updates were
 *           seen. --list cache: lists from the API server's watch cache (list_from_cache).
 *           --wire json: lists in JSON even when the build can decode protobuf (json_only; the
 *           default is protobuf when the build has the schema, kube/kpb.h).
 *   codec   --kubeconfig K  per-object encode and decode times of both store layouts on the
 *           cluster's pods, and the sizes behind them.
 *
 * Every figure is printed as `key=value` on one line per phase for the script to collect. */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/strutil.h"
#include "common/xalloc.h"
#include "kube/api.h"
#include "kube/informer.h"
#include "kube/kpb.h"
#include "kube/store.h"

static uv_loop_t loop;
static struct kapi_client *cl;

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double epoch_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The loop's longest stall: a 1 ms repeating timer notes how late each of its runs is (on a loaded
 * machine that includes the time the process waited for a CPU), and a check handle the CPU time of
 * each loop iteration (the work done in one go, whatever the load). */
struct stall {
    uv_timer_t t;
    uv_check_t c;
    double last, max;
    double cpu_last, cpu_max;
    const uint64_t *adds;  /* the handler's count of objects added, */
    uint64_t cpu_max_adds; /* and what it was at the end of the busiest iteration */
};

static double thread_cpu_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void on_stall_check(uv_check_t *c)
{
    struct stall *st = c->data;
    double now = thread_cpu_ms();

    if (st->cpu_last > 0 && now - st->cpu_last > st->cpu_max) {
        st->cpu_max = now - st->cpu_last;
        st->cpu_max_adds = st->adds ? *st->adds : 0;
    }
    st->cpu_last = now;
}

static void on_stall_tick(uv_timer_t *t)
{
    struct stall *st = t->data;
    double now = now_ms();

    if (st->last > 0 && now - st->last - 1.0 > st->max)
        st->max = now - st->last - 1.0;
    st->last = now;
}

static long rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, rss = 0;

    if (!f)
        return -1;
    if (fscanf(f, "%lu %lu", &size, &rss) != 2)
        rss = 0;
    fclose(f);
    return (long)rss * sysconf(_SC_PAGESIZE);
}

static size_t heap_bytes(void)
{
    struct mallinfo2 mi = mallinfo2();

    return mi.uordblks + mi.hblkhd;
}

static int opt_u64(const char *name, const char *v, uint64_t max, uint64_t *ret)
{
    if (!v || parse_u64(v, max, ret) < 0) {
        fprintf(stderr, "bench-informer: %s needs a number up to %llu\n", name,
                (unsigned long long)max);
        return -EINVAL;
    }
    return 0;
}

/* ---- create ----------------------------------------------------------------------------------
 */

#define APPS 20 /* "Deployments" per namespace */

struct creator {
    uint64_t total, next, done, failed, inflight, max_inflight, namespaces;
    uint64_t nodes; /* --nodes: Nodes made first, the pods bound to them round-robin */
    bool status;
    char (*owner_uid)[APPS][40]; /* per namespace and app: uid of the owner object */
};

static void hex(char *buf, size_t n, uint64_t seed)
{
    static const char digits[] = "0123456789abcdef";

    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        buf[i] = digits[(seed >> 59) & 15];
    }
    buf[n] = '\0';
}

static void pod_name(uint64_t i, char *buf, size_t size)
{
    char suffix[6];

    hex(suffix, 5, i * 7919 + 3);
    snprintf(buf, size, "web-%llu-%05llu-%s", (unsigned long long)(i % APPS), (unsigned long long)i,
             suffix);
}

static json_t *pod_template(const struct creator *k, uint64_t i)
{
    char name[64], ns[32], app[32], rs[64], hash[11], uid[40];

    pod_name(i, name, sizeof(name));
    snprintf(ns, sizeof(ns), "bench-%llu", (unsigned long long)(i % k->namespaces));
    snprintf(app, sizeof(app), "web-%llu", (unsigned long long)(i % APPS));
    hex(hash, 10, i % APPS);
    snprintf(rs, sizeof(rs), "%s-%s", app, hash);
    snprintf(uid, sizeof(uid), "%s", k->owner_uid[i % k->namespaces][i % APPS]);
    return json_pack(
        "{s:s,s:s,"
        "s:{s:s,s:s,s:{s:s,s:s,s:s,s:s,s:s},s:{s:s,s:s,s:s},"
        "s:[{s:s,s:s,s:s,s:s,s:b,s:b}]},"
        "s:{s:s,s:i,s:s,"
        "s:[{s:s,s:s,s:[{s:s,s:i,s:s}],"
        "s:[{s:s,s:s},{s:s,s:{s:{s:s}}},{s:s,s:{s:{s:s}}},{s:s,s:s},{s:s,s:s}],"
        "s:{s:{s:s,s:s},s:{s:s,s:s}},"
        "s:{s:{s:s,s:i},s:i,s:i}},"
        "{s:s,s:s,s:[s,s],s:{s:{s:s,s:s},s:{s:s,s:s}}}],"
        "s:[{s:s,s:s,s:s,s:i}]}}",
        "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace", ns, "labels",
        "app", app, "pod-template-hash", hash, "tier", "frontend", "release", "stable", "bench",
        "informer", "annotations", "prometheus.io/scrape", "true", "prometheus.io/port", "9102",
        "kubectl.kubernetes.io/restartedAt", "2024-05-02T10:11:12Z", "ownerReferences",
        "apiVersion", "v1", "kind", "ConfigMap", "name", rs, "uid", uid, "controller", 1,
        "blockOwnerDeletion", 1, "spec", "schedulerName", "cliqo-bench-unscheduled",
        "terminationGracePeriodSeconds", 30, "priorityClassName", "", "containers", "name", "web",
        "image", "registry.example.com/shop/web:1.24.3", "ports", "name", "http", "containerPort",
        8080, "protocol", "TCP", "env", "name", "LOG_LEVEL", "value", "info", "name", "POD_NAME",
        "valueFrom", "fieldRef", "fieldPath", "metadata.name", "name", "POD_IP", "valueFrom",
        "fieldRef", "fieldPath", "status.podIP", "name", "DB_HOST", "value",
        "db.shop.svc.cluster.local", "name", "CACHE_TTL_SECONDS", "value", "300", "resources",
        "requests", "cpu", "100m", "memory", "128Mi", "limits", "cpu", "500m", "memory", "256Mi",
        "readinessProbe", "httpGet", "path", "/healthz", "port", 8080, "periodSeconds", 10,
        "timeoutSeconds", 2, "name", "log-shipper", "image",
        "registry.example.com/infra/log-shipper:2.1.0", "args", "--output=stdout", "--format=json",
        "resources", "requests", "cpu", "20m", "memory", "32Mi", "limits", "cpu", "100m", "memory",
        "64Mi", "tolerations", "key", "node.kubernetes.io/not-ready", "operator", "Exists",
        "effect", "NoExecute", "tolerationSeconds", 300);
}

static void node_name(uint64_t i, char *buf, size_t size)
{
    snprintf(buf, size, "bench-node-%05llu", (unsigned long long)i);
}

/* A pod of the template bound to its node (--nodes): spec.nodeName set at creation, as a scheduler
 * would have set it, so that the pods count on their nodes (the broadcaster's computation). */
static json_t *pod_object(const struct creator *k, uint64_t i)
{
    json_t *pod = pod_template(k, i);
    char node[32];

    if (pod && k->nodes) {
        node_name(i % k->nodes, node, sizeof(node));
        json_object_set_new(json_object_get(pod, "spec"), "nodeName", json_string(node));
    }
    return pod;
}

/* A Node as a kubelet registers it (status included in the creation): 32 CPUs, 128 GiB, Ready. */
static json_t *node_object(uint64_t i)
{
    const char *t = "2024-05-02T10:11:12Z";
    char name[32];

    node_name(i, name, sizeof(name));
    return json_pack("{s:s,s:s,s:{s:s,s:{s:s,s:s,s:s}},s:{},"
                     "s:{s:{s:s,s:s,s:s,s:s},s:{s:s,s:s,s:s,s:s},"
                     "s:[{s:s,s:s,s:s,s:s,s:s,s:s}],s:{s:s,s:s,s:s}}}",
                     "apiVersion", "v1", "kind", "Node", "metadata", "name", name, "labels",
                     "kubernetes.io/hostname", name, "kubernetes.io/os", "linux", "bench",
                     "informer", "spec", "status", "capacity", "cpu", "32", "memory", "128Gi",
                     "pods", "110", "ephemeral-storage", "500Gi", "allocatable", "cpu", "31500m",
                     "memory", "125Gi", "pods", "110", "ephemeral-storage", "450Gi", "conditions",
                     "type", "Ready", "status", "True", "reason", "KubeletReady", "message",
                     "kubelet is posting ready status", "lastHeartbeatTime", t,
                     "lastTransitionTime", t, "nodeInfo", "kubeletVersion", "v1.20.2",
                     "operatingSystem", "linux", "architecture", "amd64");
}

struct node_maker {
    uint64_t total, next, done, failed, inflight, max_inflight;
};

static void node_next(struct node_maker *m);

static void on_node_created(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct node_maker *m = data;

    (void)c;
    if (res->err < 0 && res->err != -EEXIST && ++m->failed <= 5)
        fprintf(stderr, "bench-informer: node: %s\n", strerror(-res->err));
    m->done++;
    m->inflight--;
    node_next(m);
}

static void node_next(struct node_maker *m)
{
    while (m->inflight < m->max_inflight && m->next < m->total) {
        json_t *node = node_object(m->next++);
        int r;

        m->inflight++;
        r = node ? kapi_create(cl, &kapi_nodes, NULL, node, on_node_created, m) : -ENOMEM;
        json_decref(node);
        if (r < 0) {
            m->inflight--;
            m->done++;
            m->failed++;
        }
    }
}

static int make_nodes(uint64_t n, uint64_t inflight)
{
    struct node_maker m = {.total = n, .max_inflight = inflight ? inflight : 1};

    node_next(&m);
    while (m.done < m.total)
        uv_run(&loop, UV_RUN_ONCE);
    return m.failed ? -EIO : 0;
}

/* A status as a kubelet would write it for a running pod. */
static char *status_patch(uint64_t i)
{
    char cid1[65], cid2[65], img1[65], img2[65];
    const char *t = "2024-05-02T10:11:12Z";

    hex(cid1, 64, i * 2 + 17);
    hex(cid2, 64, i * 2 + 18);
    hex(img1, 64, 1);
    hex(img2, 64, 2);
    json_t *p = json_pack(
        "{s:{s:s,s:s,s:s,s:[{s:s}],s:s,s:s,"
        "s:[{s:s,s:s,s:n,s:s},{s:s,s:s,s:n,s:s},{s:s,s:s,s:n,s:s},{s:s,s:s,s:n,s:s}],"
        "s:[{s:s,s:{s:{s:s}},s:{},s:b,s:i,s:s,s:s,s:s,s:b},"
        "{s:s,s:{s:{s:s}},s:{},s:b,s:i,s:s,s:s,s:s,s:b}]}}",
        "status", "phase", "Running", "hostIP", "10.0.0.7", "podIP", "", "podIPs", "ip", "",
        "startTime", t, "qosClass", "Burstable", "conditions", "type", "Initialized", "status",
        "True", "lastProbeTime", "lastTransitionTime", t, "type", "Ready", "status", "True",
        "lastProbeTime", "lastTransitionTime", t, "type", "ContainersReady", "status", "True",
        "lastProbeTime", "lastTransitionTime", t, "type", "PodScheduled", "status", "True",
        "lastProbeTime", "lastTransitionTime", t, "containerStatuses", "name", "web", "state",
        "running", "startedAt", t, "lastState", "ready", 1, "restartCount", 0, "image",
        "registry.example.com/shop/web:1.24.3", "imageID", img1, "containerID", cid1, "started", 1,
        "name", "log-shipper", "state", "running", "startedAt", t, "lastState", "ready", 1,
        "restartCount", 0, "image", "registry.example.com/infra/log-shipper:2.1.0", "imageID", img2,
        "containerID", cid2, "started", 1);
    char ip[32], buf[160];
    json_t *st = json_object_get(p, "status"), *cs = json_object_get(st, "containerStatuses");
    char *out;

    snprintf(ip, sizeof(ip), "10.244.%llu.%llu", (unsigned long long)(i / 250 % 250),
             (unsigned long long)(i % 250 + 2));
    json_object_set_new(st, "podIP", json_string(ip));
    json_object_set_new(json_array_get(json_object_get(st, "podIPs"), 0), "ip", json_string(ip));
    snprintf(buf, sizeof(buf), "registry.example.com/shop/web@sha256:%s", img1);
    json_object_set_new(json_array_get(cs, 0), "imageID", json_string(buf));
    snprintf(buf, sizeof(buf), "registry.example.com/infra/log-shipper@sha256:%s", img2);
    json_object_set_new(json_array_get(cs, 1), "imageID", json_string(buf));
    snprintf(buf, sizeof(buf), "containerd://%s", cid1);
    json_object_set_new(json_array_get(cs, 0), "containerID", json_string(buf));
    snprintf(buf, sizeof(buf), "containerd://%s", cid2);
    json_object_set_new(json_array_get(cs, 1), "containerID", json_string(buf));
    out = json_dumps(p, JSON_COMPACT);
    json_decref(p);
    return out;
}

static void create_next(struct creator *k);

struct pod_req {
    struct creator *k;
    uint64_t i;
    int tries;
};

static void pod_done(struct pod_req *pr, int err)
{
    struct creator *k = pr->k;

    if (err < 0) {
        k->failed++;
        if (k->failed <= 5)
            fprintf(stderr, "bench-informer: pod %llu: %s\n", (unsigned long long)pr->i,
                    strerror(-err));
    }
    k->done++;
    k->inflight--;
    x_free(pr);
    create_next(k);
}

static void on_status(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    (void)c;
    pod_done(data, res->err);
}

static void on_created(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct pod_req *pr = data;
    char name[64], ns[32], *patch;
    int r;

    (void)c;
    if (res->err < 0 && res->err != -EEXIST) {
        pod_done(pr, res->err);
        return;
    }
    if (!pr->k->status) {
        pod_done(pr, 0);
        return;
    }
    pod_name(pr->i, name, sizeof(name));
    snprintf(ns, sizeof(ns), "bench-%llu", (unsigned long long)(pr->i % pr->k->namespaces));
    patch = status_patch(pr->i);
    r = patch
            ? kapi_patch(cl, &kapi_pods, ns, name, "status", KAPI_PATCH_MERGE, patch, on_status, pr)
            : -ENOMEM;
    free(patch); /* from json_dumps */
    if (r < 0)
        pod_done(pr, r);
}

static void create_next(struct creator *k)
{
    while (k->inflight < k->max_inflight && k->next < k->total) {
        struct pod_req *pr = x_calloc(1, sizeof(*pr));
        json_t *pod;
        char ns[32];
        int r;

        if (!pr) {
            k->failed++;
            k->next++;
            k->done++;
            continue;
        }
        pr->k = k;
        pr->i = k->next++;
        pod = pod_object(k, pr->i);
        snprintf(ns, sizeof(ns), "bench-%llu", (unsigned long long)(pr->i % k->namespaces));
        k->inflight++;
        r = pod ? kapi_create(cl, &kapi_pods, ns, pod, on_created, pr) : -ENOMEM;
        json_decref(pod);
        if (r < 0)
            pod_done(pr, r);
    }
}

/* The owner of each app's pods. A ReplicaSet would be the real one, but an owner that does not
 * exist gets the pods garbage-collected, and a real ReplicaSet would adopt, release or replace
 * them; a ConfigMap of the same name exists and is left alone by every controller. */
static int make_owners(struct creator *k, const char *ns, uint64_t nsi)
{
    for (int a = 0; a < APPS; a++) {
        char name[64], hash[11];
        struct kapi_sync s = {0};
        json_t *obj;
        int r;

        hex(hash, 10, (uint64_t)a);
        snprintf(name, sizeof(name), "web-%d-%s", a, hash);
        obj = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata",
                        "name", name);
        r = kapi_create(cl, &kapi_configmaps, ns, obj, kapi_sync_cb, &s);
        json_decref(obj);
        r = r < 0 ? r : kapi_sync_wait(cl, &s);
        if (r == -EEXIST) {
            kapi_sync_done(&s);
            memset(&s, 0, sizeof(s));
            r = kapi_get(cl, &kapi_configmaps, ns, name, kapi_sync_cb, &s);
            r = r < 0 ? r : kapi_sync_wait(cl, &s);
        }
        if (r == 0)
            snprintf(k->owner_uid[nsi][a], sizeof(k->owner_uid[nsi][a]), "%s",
                     kapi_obj_uid(s.body) ? kapi_obj_uid(s.body) : "");
        kapi_sync_done(&s);
        if (r < 0)
            return r;
    }
    return 0;
}

/* Creates the namespaces, waits for their default service account (pods need it), and creates
 * the pods' owners. */
static int make_namespaces(struct creator *k, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        char ns[32];
        struct kapi_sync s = {0};
        json_t *obj;
        int r;

        snprintf(ns, sizeof(ns), "bench-%llu", (unsigned long long)i);
        obj = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata",
                        "name", ns);
        r = kapi_create(cl, &kapi_namespaces, NULL, obj, kapi_sync_cb, &s);
        json_decref(obj);
        r = r < 0 ? r : kapi_sync_wait(cl, &s);
        kapi_sync_done(&s);
        if (r < 0 && r != -EEXIST)
            return r;
        for (int t = 0; t < 600; t++) {
            struct kapi_sync g = {0};
            bool ready;
            r = kapi_get(cl, &kapi_serviceaccounts, ns, "default", kapi_sync_cb, &g);
            r = r < 0 ? r : kapi_sync_wait(cl, &g);
            ready = r == 0 && json_array_size(json_object_get(g.body, "secrets")) > 0;
            kapi_sync_done(&g);
            if (ready)
                break;
            usleep(100 * 1000);
        }
        r = make_owners(k, ns, i);
        if (r < 0)
            return r;
    }
    return 0;
}

static int cmd_create(uint64_t pods, uint64_t from, uint64_t namespaces, uint64_t nodes,
                      uint64_t inflight, bool status)
{
    struct creator k = {.total = pods,
                        .next = from < pods ? from : pods,
                        .done = from < pods ? from : pods,
                        .nodes = nodes,
                        .namespaces = namespaces ? namespaces : 1,
                        .max_inflight = inflight ? inflight : 1,
                        .status = status};
    double t0 = now_ms();
    int r;

    k.owner_uid = x_calloc(k.namespaces, sizeof(*k.owner_uid));
    r = k.owner_uid ? make_namespaces(&k, k.namespaces) : -ENOMEM;
    if (r < 0) {
        x_free(k.owner_uid);
        fprintf(stderr, "bench-informer: namespaces: %s\n", strerror(-r));
        return r;
    }
    if (nodes && (r = make_nodes(nodes, inflight)) < 0) {
        x_free(k.owner_uid);
        fprintf(stderr, "bench-informer: nodes: %s\n", strerror(-r));
        return r;
    }
    create_next(&k);
    while (k.done < k.total)
        uv_run(&loop, UV_RUN_ONCE);
    x_free(k.owner_uid);
    printf("phase=create pods=%llu failed=%llu namespaces=%llu nodes=%llu status=%d ms=%.0f\n",
           (unsigned long long)k.total, (unsigned long long)k.failed,
           (unsigned long long)k.namespaces, (unsigned long long)nodes, status, now_ms() - t0);
    return k.failed ? -EIO : 0;
}

/* ---- sync ------------------------------------------------------------------------------------
 */

struct syncer {
    bool synced;
    double t_synced;
    uint64_t adds, updates, deletes;
    const char *nonce;
    uint64_t seen;   /* updates carrying the nonce */
    double t_last;   /* when the last of them arrived */
    uint64_t target; /* how many to wait for */
    char (*names)[96];
    uint64_t nnames, maxnames;
    uint64_t patched, patch_failed;
    double decode_sink;
};

static void s_add(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    (void)obj;
    ((struct syncer *)data)->adds++;
}

static void s_update(struct inf_informer *inf, json_t *o, json_t *n, void *data)
{
    struct syncer *s = data;
    const char *v = json_string_value(
        json_object_get(json_object_get(json_object_get(n, "metadata"), "labels"), "bench-round"));

    (void)inf;
    (void)o;
    s->updates++;
    if (s->nonce && v && strcmp(v, s->nonce) == 0) {
        s->seen++;
        s->t_last = now_ms();
    }
}

static void s_delete(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    (void)obj;
    ((struct syncer *)data)->deletes++;
}

static void s_synced(struct inf_informer *inf, void *data)
{
    struct syncer *s = data;

    (void)inf;
    s->synced = true;
    s->t_synced = now_ms();
}

static void s_error(struct inf_informer *inf, int err, const char *message, void *data)
{
    (void)inf;
    (void)data;
    fprintf(stderr, "bench-informer: informer error: %s: %s\n", strerror(-err), message);
}

static void collect_names(json_t *obj, void *data)
{
    struct syncer *s = data;

    s->decode_sink += (double)json_object_size(obj);
    if (s->nnames < s->maxnames)
        snprintf(s->names[s->nnames++], sizeof(s->names[0]), "%s/%s", kapi_obj_namespace(obj),
                 kapi_obj_name(obj));
}

static void on_patched(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct syncer *s = data;

    (void)c;
    s->patched++;
    if (res->err < 0)
        s->patch_failed++;
}

static int label_app(const json_t *obj, const char **values, size_t max)
{
    const char *v = json_string_value(
        json_object_get(json_object_get(json_object_get(obj, "metadata"), "labels"), "app"));
    if (!v || max < 1)
        return 0;
    values[0] = v;
    return 1;
}

static bool wire_json; /* --wire json */

static int cmd_sync(const char *store, uint64_t expect, uint64_t updates, uint64_t page_size,
                    bool from_cache)
{
    struct syncer s = {0};
    struct inf_handlers h = {s_add, s_update, s_delete, s_synced, s_error};
    struct inf_options o = {.resource = &kapi_pods,
                            .page_size = (long)page_size,
                            .list_from_cache = from_cache,
                            .json_only = wire_json};
    struct inf_informer *inf = NULL;
    struct kapi_sync g = {0};
    struct kstore_stats st;
    static struct stall stall; /* its handle closes after this function returns */
    const char *t0_env = getenv("BENCH_T0_MS");
    double since_exec = -1;
    long rss0, rss1, rss2;
    size_t heap0, heap1;
    double t0, t1, t2;
    char nonce[32];
    int r;

    if (strcmp(store, "tree") == 0)
        o.store = INF_STORE_TREE;
    else if (strcmp(store, "compact") != 0)
        return -EINVAL;
    /* Client set-up includes the connection: one request before the baseline. */
    r = kapi_get(cl, &kapi_namespaces, NULL, "default", kapi_sync_cb, &g);
    r = r < 0 ? r : kapi_sync_wait(cl, &g);
    kapi_sync_done(&g);
    if (r < 0)
        return r;
    malloc_trim(0);
    rss0 = rss_bytes();
    heap0 = heap_bytes();
    r = inf_new(cl, &o, &h, &s, &inf);
    if (r < 0 || (r = inf_add_index(inf, "app", label_app)) < 0)
        goto out;
    uv_timer_init(&loop, &stall.t);
    stall.t.data = &stall;
    uv_timer_start(&stall.t, on_stall_tick, 1, 1);
    uv_check_init(&loop, &stall.c);
    stall.c.data = &stall;
    stall.adds = &s.adds;
    uv_check_start(&stall.c, on_stall_check);
    t0 = now_ms();
    r = inf_start(inf);
    if (r < 0)
        goto out;
    while (!s.synced)
        uv_run(&loop, UV_RUN_ONCE);
    double t_sync_end = now_ms();
    if (t0_env && *t0_env)
        since_exec = epoch_ms() - strtod(t0_env, NULL);
    uv_timer_stop(&stall.t);
    uv_close((uv_handle_t *)&stall.t, NULL);
    uv_close((uv_handle_t *)&stall.c, NULL);
    /* Let the loop finish what follows the sync (the informer's post-list trim) for 100 ms. */
    while (now_ms() < t_sync_end + 100)
        uv_run(&loop, UV_RUN_NOWAIT);
    rss1 = rss_bytes();
    heap1 = heap_bytes();
    malloc_trim(0);
    rss2 = rss_bytes();
    inf_store_stats(inf, &st);
    size_t n = inf_count(inf);
    if (expect && n < expect)
        fprintf(stderr, "bench-informer: only %zu of %llu pods cached\n", n,
                (unsigned long long)expect);
    double nn = n ? (double)n : 1;
    size_t per_entry = st.entries + st.values + st.table + st.indexes + st.slack;
    printf("phase=sync store=%s list=%s wire=%s pods=%zu sync_ms=%.1f since_exec_ms=%.0f "
           "max_stall_ms=%.1f "
           "max_iter_cpu_ms=%.1f max_iter_at_adds=%llu "
           "rss0=%ld rss_synced=%ld rss_delta=%ld rss_per_pod=%.0f "
           "rss_trim_per_pod=%.0f heap_per_pod=%.0f store_per_pod=%.0f store_fixed=%zu "
           "entries=%zu values=%zu table=%zu indexes=%zu slack=%zu raw_json_per_pod=%.0f "
           "compressed_per_pod=%.0f dict=%zu lists=%u\n",
           store, from_cache ? "cache" : "consistent",
           wire_json || !kpb_schema.nroots ? "json" : "protobuf", n, s.t_synced - t0, since_exec,
           stall.max, stall.cpu_max, (unsigned long long)stall.cpu_max_adds, rss0, rss1,
           rss1 - rss0, (double)(rss1 - rss0) / nn, (double)(rss2 - rss0) / nn,
           (double)(heap1 - heap0) / nn, (double)per_entry / nn, st.fixed, st.entries, st.values,
           st.table, st.indexes, st.slack, (double)st.raw_json / nn, (double)st.compressed / nn,
           st.dict_len, inf_lists(inf));

    /* Decode every object once (what a full inf_foreach costs), keeping names to patch. */
    s.maxnames = updates;
    s.names = updates ? x_calloc(updates, sizeof(s.names[0])) : NULL;
    if (updates && !s.names) {
        r = -ENOMEM;
        goto out;
    }
    t1 = now_ms();
    inf_foreach(inf, collect_names, &s);
    t2 = now_ms();
    int in_app = inf_index_foreach(inf, "app", "web-3", collect_names, &s);
    printf("phase=foreach store=%s pods=%zu ms=%.1f us_per_obj=%.2f index_web3=%d\n", store, n,
           t2 - t1, (t2 - t1) * 1e3 / nn, in_app);

    if (updates) {
        uint64_t sent = 0;
        snprintf(nonce, sizeof(nonce), "r%ld-%d", (long)time(NULL), (int)getpid());
        s.nonce = nonce;
        s.target = s.nnames;
        char patch[128];
        snprintf(patch, sizeof(patch), "{\"metadata\":{\"labels\":{\"bench-round\":\"%s\"}}}",
                 nonce);
        t1 = now_ms();
        for (uint64_t i = 0; i < s.nnames; i++) {
            char *slash = strchr(s.names[i], '/');
            if (!slash)
                continue;
            *slash = '\0';
            if (kapi_patch(cl, &kapi_pods, s.names[i], slash + 1, NULL, KAPI_PATCH_MERGE, patch,
                           on_patched, &s) == 0)
                sent++;
        }
        double deadline = now_ms() + 300e3;
        while ((s.seen < sent || s.patched < sent) && now_ms() < deadline)
            uv_run(&loop, UV_RUN_ONCE);
        printf("phase=updates store=%s sent=%llu failed=%llu seen=%llu all_seen_ms=%.1f "
               "patches_done_ms=%.1f\n",
               store, (unsigned long long)sent, (unsigned long long)s.patch_failed,
               (unsigned long long)s.seen, s.t_last - t1, now_ms() - t1);
    }
    r = 0;
out:
    if (stall.t.data && !uv_is_closing((uv_handle_t *)&stall.t))
        uv_close((uv_handle_t *)&stall.t, NULL);
    if (stall.c.data && !uv_is_closing((uv_handle_t *)&stall.c))
        uv_close((uv_handle_t *)&stall.c, NULL);
    inf_free(inf);
    x_free(s.names);
    return r;
}

/* ---- codec -----------------------------------------------------------------------------------
 */

static void sink_visit(json_t *obj, void *data)
{
    *(size_t *)data += json_object_size(obj);
}

static int cmd_codec(uint64_t max)
{
    json_t *all = json_array();
    char *cont = NULL;
    int r = 0;

    /* List the pods as an informer would see them. */
    do {
        struct kapi_list_opts lo = {.limit = 500, .continue_token = cont};
        struct kapi_sync s = {0};
        const char *c;
        r = kapi_list(cl, &kapi_pods, NULL, &lo, kapi_sync_cb, &s);
        r = r < 0 ? r : kapi_sync_wait(cl, &s);
        x_free(cont);
        cont = NULL;
        if (r == 0) {
            size_t i;
            json_t *it;
            json_array_foreach(json_object_get(s.body, "items"), i, it)
            {
                json_object_del(json_object_get(it, "metadata"), "managedFields");
                if (json_array_size(all) < max)
                    json_array_append(all, it);
            }
            c = json_string_value(json_object_get(json_object_get(s.body, "metadata"), "continue"));
            if (c && *c && json_array_size(all) < max)
                cont = x_strdup(c);
        }
        kapi_sync_done(&s);
    } while (r == 0 && cont);
    size_t n = json_array_size(all);
    if (r < 0 || n == 0) {
        json_decref(all);
        return r < 0 ? r : -ENOENT;
    }

    /* Serialisation and parsing alone, for reference. */
    double t0 = now_ms();
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        char *txt = json_dumps(json_array_get(all, i), JSON_COMPACT);
        bytes += txt ? strlen(txt) : 0;
        free(txt); /* from json_dumps */
    }
    double t_dump = now_ms() - t0;
    char *one = json_dumps(json_array_get(all, n / 2), JSON_COMPACT);
    t0 = now_ms();
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_loads(one, 0, NULL);
        json_decref(o);
    }
    double t_load = now_ms() - t0;
    free(one); /* from json_dumps */
    printf("phase=codec-json pods=%zu json_bytes_per_pod=%.0f dump_us=%.2f parse_us=%.2f\n", n,
           (double)bytes / (double)n, t_dump * 1e3 / (double)n, t_load * 1e3 / (double)n);

    for (int mode = 0; mode < 2; mode++) {
        struct kstore *st;
        struct kstore_stats ss;
        size_t sink = 0;
        char key[600];

        if (kstore_new(mode ? KSTORE_TREE : KSTORE_COMPACT, &st) < 0)
            break;
        t0 = now_ms();
        for (size_t i = 0; i < n; i++) {
            json_t *o = json_array_get(all, i);
            snprintf(key, sizeof(key), "%s/%s", kapi_obj_namespace(o), kapi_obj_name(o));
            kstore_put(st, key, o, kapi_obj_rv(o), NULL);
        }
        kstore_freeze(st);
        double t_put = now_ms() - t0;
        t0 = now_ms();
        kstore_foreach(st, sink_visit, &sink);
        double t_get = now_ms() - t0;
        kstore_get_stats(st, &ss);
        printf("phase=codec store=%s pods=%zu put_us=%.2f decode_us=%.2f raw_json_per_pod=%.0f "
               "compressed_per_pod=%.0f ratio=%.2f dict=%zu store_fixed=%zu\n",
               mode ? "tree" : "compact", n, t_put * 1e3 / (double)n, t_get * 1e3 / (double)n,
               (double)ss.raw_json / (double)n, (double)ss.compressed / (double)n,
               ss.compressed ? (double)ss.raw_json / (double)ss.compressed : 0.0, ss.dict_len,
               ss.fixed);
        kstore_free(st);
    }
    json_decref(all);
    return 0;
}

/* ---- main ------------------------------------------------------------------------------------
 */

static void usage(void)
{
    fprintf(stderr,
            "usage: bench-informer create|sync|codec --kubeconfig FILE [--pods N] "
            "[--from I] [--namespaces N] [--nodes N] [--inflight N] [--no-status] [--store "
            "compact|tree] [--expect N] "
            "[--updates N] [--page-size N] [--list consistent|cache] [--wire protobuf|json] "
            "[--max N]\n");
}

int main(int argc, char **argv)
{
    const char *cmd, *kubeconfig = NULL, *store = "compact", *list = "consistent";
    uint64_t pods = 10000, from = 0, namespaces = 4, nodes = 0, inflight = 64, expect = 0,
             updates = 0, page = 500, max = 5000;
    bool status = true;
    struct kapi_client_options co = {.qps = 1e6, .burst = 1000000, .timeout_ms = 120000};
    struct kc_config *cfg = NULL;
    char err[512];
    int r;

    if (argc < 2) {
        usage();
        return 2;
    }
    cmd = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        r = 0;
        if (strcmp(a, "--no-status") == 0) {
            status = false;
            continue;
        }
        if (!v) {
            usage();
            return 2;
        }
        i++;
        if (strcmp(a, "--kubeconfig") == 0)
            kubeconfig = v;
        else if (strcmp(a, "--store") == 0)
            store = v;
        else if (strcmp(a, "--list") == 0)
            list = v;
        else if (strcmp(a, "--wire") == 0 && v &&
                 (strcmp(v, "json") == 0 || strcmp(v, "protobuf") == 0))
            wire_json = strcmp(v, "json") == 0;
        else if (strcmp(a, "--pods") == 0)
            r = opt_u64(a, v, 10000000, &pods);
        else if (strcmp(a, "--namespaces") == 0)
            r = opt_u64(a, v, 1000, &namespaces);
        else if (strcmp(a, "--from") == 0)
            r = opt_u64(a, v, 10000000, &from);
        else if (strcmp(a, "--nodes") == 0)
            r = opt_u64(a, v, 100000, &nodes);
        else if (strcmp(a, "--inflight") == 0)
            r = opt_u64(a, v, 1000, &inflight);
        else if (strcmp(a, "--expect") == 0)
            r = opt_u64(a, v, 10000000, &expect);
        else if (strcmp(a, "--updates") == 0)
            r = opt_u64(a, v, 1000000, &updates);
        else if (strcmp(a, "--page-size") == 0)
            r = opt_u64(a, v, 100000, &page);
        else if (strcmp(a, "--max") == 0)
            r = opt_u64(a, v, 10000000, &max);
        else {
            usage();
            return 2;
        }
        if (r < 0)
            return 2;
    }
    if (!kubeconfig) {
        usage();
        return 2;
    }
    if (uv_loop_init(&loop) < 0)
        return 1;
    if (kc_load_file(kubeconfig, NULL, &cfg, err, sizeof(err)) < 0) {
        fprintf(stderr, "bench-informer: %s\n", err);
        return 1;
    }
    r = kapi_client_new(&loop, cfg, &co, &cl);
    if (r < 0) {
        fprintf(stderr, "bench-informer: client: %s\n", strerror(-r));
        kc_config_free(cfg);
        return 1;
    }
    if (strcmp(cmd, "create") == 0)
        r = cmd_create(pods, from, namespaces, nodes, inflight, status);
    else if (strcmp(cmd, "sync") == 0)
        r = strcmp(list, "cache") == 0 || strcmp(list, "consistent") == 0
                ? cmd_sync(store, expect, updates, page, strcmp(list, "cache") == 0)
                : -EINVAL;
    else if (strcmp(cmd, "codec") == 0)
        r = cmd_codec(max);
    else {
        usage();
        r = -EINVAL;
    }
    if (r < 0)
        fprintf(stderr, "bench-informer: %s: %s\n", cmd, strerror(-r));
    kapi_client_close(cl);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    kc_config_free(cfg);
    return r < 0 ? 1 : 0;
}
