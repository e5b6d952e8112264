/* bench-broadcaster: the cost of the broadcaster's computation (src/offer/share.c) on a
 * large provider cluster.
 *
 *   bench-broadcaster [--nodes 5000] [--pods 150000] [--events 100000] [--rounds 5] [--seed 1]
 *                     [--informer-only]
 *
 * Synthesises realistic Node and Pod objects in memory first (see mk_node and mk_pod: labels,
 * annotations, conditions, allocatable with GPUs on some nodes; 1-3 containers with requests and
 * limits, init containers, overhead, pods of 3 consumers, unscheduled and terminal pods; the parts
 * no computation reads, such as env or volumes, are shared between objects to save memory), then:
 *   1. initial computation, as the agent makes it (the figure): the collections are listed in
 *      pages of 500 (JSON text decoded page by page), each object goes through what the
 *      informer does before calling its handler (managedFields dropped, the pods' transform
 *      shr_pod_transform, the object cached in a compact kstore, the pod's typed record extracted
 *      with kpod_extract for the handler), then to the handler's function
 *      (shr_node_upsert, and for pods shr_pod_upsert_record on the record, as the broadcaster's
 *      handler does), whose call alone is timed; nodes, then pods,
 *      then shr_flush (the broadcaster's call when its pod informer has synced: the staged pods
 *      applied, see share.h), then one shr_offer. The first feed of the process (nothing warmed
 *      up) is the figure, compared with the 100 ms target; `rounds` - 1 more feeds are the hot
 *      runs, alternately with the stage ended before the feed (every pod applied as it comes) and
 *      with it, compared (staged_vs_unstaged). The transform's and the extraction's times are
 *      reported apart (first_plus_extract_ms adds the extraction to the figure). This phase
 * runs in a child process forked before the world is built, so that its heap holds what the agent's
 * would. The state so fed is checked against one fed the full objects;
 *   2. for reference, the full objects fed straight from memory, as cold as 2.4 GB of jansson
 *      trees make them (not what the informer hands over), with the same JSON lookups alone
 *      (json_walk), `rounds` times;
 *   3. memory: the state's own accounting (shr_get_stats) and the RSS delta of the feed, per pod
 *      and per node;
 *   4. cost per event: `events` pod events (resource change, phase change, node move, delete and
 *      re-add), each timed alone: median, p90, p99 and max per kind and overall, with cold full
 *      objects (shr_pod_upsert, which extracts the record itself), with each full object walked
 *      first, and as the informer hands them over (a copy of the changed object through the
 *      informer's steps, the handler given the record); also node flips (cordon/uncordon)
 *      that move their pods' usage;
 *   5. consistency: the incremental state against a fresh state fed the final objects.
 * --informer-only stops after phase 1.
 * Figures only, no assertions (except that the calls succeed). Every line is `phase key=value...`;
 * times include the clock reads (timer_overhead_ns). */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "offer/share.h"
#include "common/strutil.h"
#include "kube/podrec.h"
#include "kube/store.h"

#define N_CONSUMERS 3

static const char *const consumers[N_CONSUMERS] = {
    "cluster-milan-7f3a2c",
    "cluster-turin-19bd44",
    "cluster-paris-c0ffee",
};

/* ---- helpers --------------------------------------------------------------------------------- */

static uint64_t rng_state = 1;

static uint64_t rnd(void)
{
    /* xorshift64*: deterministic for a given seed. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

static unsigned pick(unsigned n)
{
    return (unsigned)(rnd() % n);
}

static bool chance(unsigned per_mille)
{
    return pick(1000) < per_mille;
}

static double now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
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

/* The machine's load average (figures vary with it). */
static void print_load(const char *when)
{
    FILE *f = fopen("/proc/loadavg", "r");
    double l1 = 0, l5 = 0, l15 = 0;

    if (f && fscanf(f, "%lf %lf %lf", &l1, &l5, &l15) == 3)
        printf("load_average %s=%.2f,%.2f,%.2f\n", when, l1, l5, l15);
    if (f)
        fclose(f);
}

static void die(const char *what, int r)
{
    fprintf(stderr, "bench-broadcaster: %s failed: %s\n", what, strerror(-r));
    exit(1);
}

static void check(const char *what, int r)
{
    if (r < 0)
        die(what, r);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static void uid(char *buf, size_t size)
{
    snprintf(buf, size, "%08x-%04x-%04x-%04x-%012llx", (unsigned)rnd(), pick(65536), pick(65536),
             pick(65536), (unsigned long long)(rnd() & 0xffffffffffffULL));
}

/* ---- nodes ----------------------------------------------------------------------------------- */

struct node_info {
    bool gpu;
};

static json_t *node_images; /* shared by all nodes: not read by the computation */

static json_t *mk_conditions(bool ready)
{
    static const char *const types[] = {"NetworkUnavailable", "MemoryPressure", "DiskPressure",
                                        "PIDPressure", "Ready"};
    json_t *a = json_array();

    for (size_t i = 0; i < 5; i++) {
        bool is_ready = i == 4;
        json_array_append_new(
            a, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "type", types[i], "status",
                         is_ready ? (ready ? "True" : "False") : "False", "lastHeartbeatTime",
                         "2024-05-02T10:11:12Z", "lastTransitionTime", "2024-04-01T08:00:00Z",
                         "reason", is_ready ? "KubeletReady" : "KubeletHasSufficientMemory",
                         "message", is_ready ? "kubelet is posting ready status" : "ok"));
    }
    return a;
}

static json_t *mk_node(unsigned i, struct node_info *info)
{
    static const char *const types[] = {"m5.4xlarge", "m5.8xlarge", "c5.9xlarge", "r5.4xlarge",
                                        "p3.8xlarge"};
    static const char *const cpus[] = {"15890m", "31750m", "35600m", "15890m", "31750m"};
    static const char *const mems[] = {"63463140Ki", "128303928Ki", "71213828Ki", "129058272Ki",
                                       "250170072Ki"};
    char name[64], id[64], buf[64];
    unsigned t = pick(4);
    json_t *labels, *alloc, *spec, *n;
    bool gpu = chance(50), ready = !chance(10), cordon = chance(10), virt = i % 250 == 249;

    if (gpu)
        t = 4;
    info->gpu = gpu && !virt;
    snprintf(name, sizeof(name), "ip-10-%u-%u-%u.eu-west-1.compute.internal", i / 4096,
             (i / 16) % 256, i % 256);
    uid(id, sizeof(id));
    labels = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "kubernetes.io/hostname", name,
                       "kubernetes.io/os", "linux", "kubernetes.io/arch", "amd64",
                       "beta.kubernetes.io/os", "linux", "beta.kubernetes.io/arch", "amd64",
                       "node.kubernetes.io/instance-type", types[t],
                       "topology.kubernetes.io/region", "eu-west-1", "topology.kubernetes.io/zone",
                       i % 3 == 0 ? "eu-west-1a" : (i % 3 == 1 ? "eu-west-1b" : "eu-west-1c"),
                       "eks.amazonaws.com/nodegroup", gpu ? "gpu" : "general");
    if (gpu)
        json_object_set_new(labels, "nvidia.com/gpu.present", json_string("true"));
    if (virt) {
        json_object_set_new(labels, "liqo.io/type", json_string("virtual-node"));
        json_object_set_new(labels, "type", json_string("virtual-node"));
    }
    alloc = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "cpu", cpus[t], "memory", mems[t], "pods",
                      t == 4 ? "234" : "110", "ephemeral-storage", "95551679124", "hugepages-1Gi",
                      "0", "hugepages-2Mi", "0");
    if (gpu)
        json_object_set_new(alloc, "nvidia.com/gpu", json_string(i % 2 ? "8" : "4"));
    spec = json_pack("{s:s,s:[s],s:s}", "podCIDR", "10.244.0.0/24", "podCIDRs", "10.244.0.0/24",
                     "providerID", "aws:///eu-west-1a/i-0123456789abcdef0");
    if (cordon) {
        json_object_set_new(spec, "unschedulable", json_true());
        json_object_set_new(spec, "taints",
                            json_pack("[{s:s,s:s,s:s}]", "key", "node.kubernetes.io/unschedulable",
                                      "effect", "NoSchedule", "timeAdded", "2024-05-01T00:00:00Z"));
    }
    snprintf(buf, sizeof(buf), "%u", 1000000 + i);
    n = json_pack("{s:s,s:s,s:{s:s,s:s,s:s,s:s,s:o,s:{s:s,s:s,s:s}},s:o,s:{s:o,s:o,s:o,s:[{s:s,"
                  "s:s},{s:s,s:s}],s:{s:{s:i}},s:{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s},s:O}}",
                  "apiVersion", "v1", "kind", "Node", "metadata", "name", name, "uid", id,
                  "resourceVersion", buf, "creationTimestamp", "2024-04-01T08:00:00Z", "labels",
                  labels, "annotations", "node.alpha.kubernetes.io/ttl", "0",
                  "volumes.kubernetes.io/controller-managed-attach-detach", "true",
                  "alpha.kubernetes.io/provided-node-ip", "10.0.0.1", "spec", spec, "status",
                  "capacity", alloc, "allocatable", json_deep_copy(alloc), "conditions",
                  mk_conditions(ready), "addresses", "type", "InternalIP", "address", "10.0.0.1",
                  "type", "Hostname", "address", name, "daemonEndpoints", "kubeletEndpoint", "Port",
                  10250, "nodeInfo", "machineID", "ec2a8c1f", "systemUUID", "ec2a8c1f", "bootID",
                  "b6d0", "kernelVersion", "5.10.210-201.852.amzn2.x86_64", "osImage",
                  "Amazon Linux 2", "containerRuntimeVersion", "containerd://1.7.11",
                  "kubeletVersion", "v1.28.5-eks-5e0fdde", "architecture", "amd64", "images",
                  node_images);
    /* The capacity is alloc itself (json_pack took it), the allocatable a copy of it. */
    return n;
}

/* ---- pods ------------------------------------------------------------------------------------ */

/* Requests per container: a cluster about half requested on cpu, a third on memory. */
static const char *const cpu_req[] = {"10m",  "50m",  "100m", "100m", "200m",
                                      "250m", "250m", "500m", "1"};
static const char *const mem_req[] = {"32Mi",  "64Mi",  "128Mi", "128Mi", "256Mi",
                                      "512Mi", "512Mi", "1Gi",   "2Gi"};

/* Parts no computation reads, shared among pods (as in a real store, they are big). */
static json_t *shared_env, *shared_mounts, *shared_tolerations, *shared_volumes, *shared_conds;

static json_t *mk_requests(bool gpu, bool eph)
{
    json_t *r = json_pack("{s:s,s:s}", "cpu", cpu_req[pick(9)], "memory", mem_req[pick(9)]);

    if (eph)
        json_object_set_new(r, "ephemeral-storage", json_string(chance(500) ? "1Gi" : "512Mi"));
    if (gpu)
        json_object_set_new(r, "nvidia.com/gpu", json_string("1"));
    return r;
}

static json_t *mk_container(const char *name, json_t *requests)
{
    json_t *limits =
        json_pack("{s:s,s:O}", "cpu", "4", "memory", json_object_get(requests, "memory"));

    return json_pack("{s:s,s:s,s:s,s:[{s:i,s:s}],s:O,s:O,s:{s:o,s:o},s:s,s:s}", "name", name,
                     "image", "registry.example.com/team/app:v1.42.7", "imagePullPolicy",
                     "IfNotPresent", "ports", "containerPort", 8080, "protocol", "TCP", "env",
                     shared_env, "volumeMounts", shared_mounts, "resources", "requests", requests,
                     "limits", limits, "terminationMessagePath", "/dev/termination-log",
                     "terminationMessagePolicy", "File");
}

struct pod_info {
    unsigned node; /* UINT32_MAX: unscheduled */
    bool gpu;
};

static json_t *mk_pod(unsigned i, unsigned nnodes, json_t **node_names,
                      const struct node_info *ninfo, const unsigned *gpu_nodes, unsigned ngpu,
                      struct pod_info *info)
{
    char name[96], ns[48], id[64], rv[24], hash[16], ip[24];
    unsigned app = i / 25, nc = 1 + (chance(700) ? 0 : (chance(600) ? 1 : 2));
    int consumer = chance(100) ? (int)pick(N_CONSUMERS) : -1;
    bool gpu = ngpu && chance(8), unsched = chance(20), terminal = !unsched && chance(20);
    json_t *containers = json_array(), *labels, *spec, *status, *pod;
    const char *phase = "Running";

    snprintf(hash, sizeof(hash), "%08x", (unsigned)(app * 2654435761u));
    snprintf(name, sizeof(name), "app-%05u-%s-%05x", app, hash, i & 0xfffff);
    if (consumer >= 0)
        snprintf(ns, sizeof(ns), "liqo-tenant-%s", consumers[consumer]);
    else
        snprintf(ns, sizeof(ns), "team-%03u", app % 300);
    uid(id, sizeof(id));
    snprintf(rv, sizeof(rv), "%u", 2000000 + i);
    labels = json_pack("{s:s,s:s,s:s}", "app.kubernetes.io/name", name + 4, "app", name,
                       "pod-template-hash", hash);
    if (consumer >= 0)
        json_object_set_new(labels, SHR_LABEL_ORIGIN, json_string(consumers[consumer]));
    for (unsigned c = 0; c < nc; c++) {
        char cname[16];

        snprintf(cname, sizeof(cname), c == 0 ? "app" : "sidecar-%u", c);
        json_array_append_new(containers,
                              mk_container(cname, mk_requests(gpu && c == 0, chance(200))));
    }
    spec = json_pack("{s:o,s:s,s:s,s:s,s:s,s:i,s:O,s:O,s:{},s:b,s:s,s:i}", "containers", containers,
                     "restartPolicy", "Always", "dnsPolicy", "ClusterFirst", "serviceAccountName",
                     "default", "schedulerName", "default-scheduler",
                     "terminationGracePeriodSeconds", 30, "tolerations", shared_tolerations,
                     "volumes", shared_volumes, "securityContext", "enableServiceLinks", 1,
                     "preemptionPolicy", "PreemptLowerPriority", "priority", 0);
    if (chance(200)) {
        json_t *inits = json_array();
        unsigned ni = 1 + pick(2);

        for (unsigned c = 0; c < ni; c++) {
            char cname[16];

            snprintf(cname, sizeof(cname), "init-%u", c);
            json_array_append_new(inits, mk_container(cname, mk_requests(false, false)));
        }
        json_object_set_new(spec, "initContainers", inits);
    }
    if (chance(50)) {
        json_object_set_new(spec, "runtimeClassName", json_string("kata"));
        json_object_set_new(spec, "overhead",
                            json_pack("{s:s,s:s}", "cpu", "250m", "memory", "120Mi"));
    }
    info->gpu = gpu;
    info->node = UINT32_MAX;
    if (!unsched) {
        unsigned n;

        do {
            n = gpu ? gpu_nodes[pick(ngpu)] : pick(nnodes);
        } while (!gpu && ninfo[n].gpu && chance(800));
        info->node = n;
        json_object_set_new(spec, "nodeName", json_string(json_string_value(node_names[n])));
    }
    if (unsched)
        phase = "Pending";
    else if (terminal)
        phase = chance(500) ? "Succeeded" : "Failed";
    snprintf(ip, sizeof(ip), "10.244.%u.%u", (i / 256) % 256, i % 256);
    status = json_pack("{s:s,s:O,s:s,s:s,s:[{s:s}],s:s,s:s}", "phase", phase, "conditions",
                       shared_conds, "hostIP", "10.0.0.1", "podIP", ip, "podIPs", "ip", ip,
                       "startTime", "2024-05-02T10:11:12Z", "qosClass", "Burstable");
    pod = json_pack("{s:s,s:s,s:{s:s,s:s,s:s,s:s,s:s,s:s,s:o,s:{s:s,s:s},s:[{s:s,s:s,s:s,s:s,"
                    "s:b,s:b}]},s:o,s:o}",
                    "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "generateName",
                    "app-", "namespace", ns, "uid", id, "resourceVersion", rv, "creationTimestamp",
                    "2024-05-02T10:11:00Z", "labels", labels, "annotations",
                    "kubectl.kubernetes.io/restartedAt", "2024-05-02T10:00:00Z",
                    "prometheus.io/scrape", "true", "ownerReferences", "apiVersion", "apps/v1",
                    "kind", "ReplicaSet", "name", name, "uid", id, "controller", 1,
                    "blockOwnerDeletion", 1, "spec", spec, "status", status);
    return pod;
}

static void mk_shared(void)
{
    shared_env =
        json_pack("[{s:s,s:s},{s:s,s:s},{s:s,s:{s:{s:s,s:s}}}]", "name", "LOG_LEVEL", "value",
                  "info", "name", "JAVA_OPTS", "value", "-Xmx512m", "name", "POD_NAME", "valueFrom",
                  "fieldRef", "apiVersion", "v1", "fieldPath", "metadata.name");
    shared_mounts = json_pack("[{s:s,s:s,s:b}]", "name", "kube-api-access", "mountPath",
                              "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly", 1);
    shared_tolerations =
        json_pack("[{s:s,s:s,s:s,s:i},{s:s,s:s,s:s,s:i}]", "key", "node.kubernetes.io/not-ready",
                  "operator", "Exists", "effect", "NoExecute", "tolerationSeconds", 300, "key",
                  "node.kubernetes.io/unreachable", "operator", "Exists", "effect", "NoExecute",
                  "tolerationSeconds", 300);
    shared_volumes =
        json_pack("[{s:s,s:{s:[{s:{s:i,s:s}}]}}]", "name", "kube-api-access", "projected",
                  "sources", "serviceAccountToken", "expirationSeconds", 3607, "path", "token");
    shared_conds =
        json_pack("[{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s}]", "type", "Initialized", "status",
                  "True", "type", "Ready", "status", "True", "type", "ContainersReady", "status",
                  "True", "type", "PodScheduled", "status", "True");
    node_images = json_array();
    for (int i = 0; i < 30; i++) {
        char img[96];

        snprintf(img, sizeof(img), "registry.example.com/team/image-%02d@sha256:%016llx", i,
                 (unsigned long long)rnd());
        json_array_append_new(node_images,
                              json_pack("{s:[s],s:i}", "names", img, "sizeBytes", 100000000 + i));
    }
}

/* ---- comparisons ----------------------------------------------------------------------------- */

static bool lists_equal(const struct shr_list *a, const struct shr_list *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->items[i].name, b->items[i].name) != 0 ||
            a->items[i].value != b->items[i].value)
            return false;
    return true;
}

static bool states_equal(struct shr_state *a, struct shr_state *b)
{
    struct shr_list la, lb, ua, ub;
    struct shr_stats sa, sb;
    bool ok = true;

    shr_totals(a, &la, &ua);
    shr_totals(b, &lb, &ub);
    ok = ok && lists_equal(&la, &lb) && lists_equal(&ua, &ub);
    for (int c = -1; c < N_CONSUMERS; c++) {
        for (unsigned pct = 0; pct <= 100; pct += 37) {
            struct shr_policy pol = {.percent = pct};

            check("shr_offer", shr_offer(a, c < 0 ? NULL : consumers[c], &pol, &la));
            check("shr_offer", shr_offer(b, c < 0 ? NULL : consumers[c], &pol, &lb));
            ok = ok && lists_equal(&la, &lb);
        }
    }
    shr_get_stats(a, &sa);
    shr_get_stats(b, &sb);
    return ok && sa.nodes == sb.nodes && sa.counted_nodes == sb.counted_nodes &&
           sa.pods == sb.pods && sa.counted_pods == sb.counted_pods && sa.origins == sb.origins;
}

/* ---- phases ---------------------------------------------------------------------------------- */

struct world {
    unsigned nnodes, npods;
    json_t **nodes, **pods;
    struct node_info *ninfo;
    struct pod_info *pinfo;
    json_t **node_names;
    unsigned *gpu_nodes, ngpu;
};

static struct shr_state *feed_all(const struct world *w, double *ret_nodes_ns, double *ret_pods_ns)
{
    struct shr_state *s;
    double t0, t1, t2;

    check("shr_new", shr_new(&s));
    t0 = now_ns();
    for (unsigned i = 0; i < w->nnodes; i++)
        check("shr_node_upsert", shr_node_upsert(s, w->nodes[i]));
    t1 = now_ns();
    for (unsigned i = 0; i < w->npods; i++)
        check("shr_pod_upsert", shr_pod_upsert(s, w->pods[i]));
    check("shr_flush", shr_flush(s)); /* the staged pods applied (share.h, "Staging") */
    t2 = now_ns();
    if (ret_nodes_ns)
        *ret_nodes_ns = t1 - t0;
    if (ret_pods_ns)
        *ret_pods_ns = t2 - t1;
    return s;
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return n ? v[n / 2] : 0;
}

static void print_dist(const char *mode, const char *kind, double *v, size_t n)
{
    if (n == 0)
        return;
    qsort(v, n, sizeof(*v), cmp_double);
    printf("events_%s kind=%s n=%zu median_ns=%.0f p90_ns=%.0f p99_ns=%.0f max_ns=%.0f\n", mode,
           kind, n, v[n / 2], v[n * 9 / 10], v[n * 99 / 100], v[n - 1]);
}

/* The JSON lookups the computation makes, without the computation: the floor set by jansson. */
static size_t walk_map(const json_t *m)
{
    const char *k;
    json_t *v;
    size_t sum = 0;

    json_object_foreach((json_t *)m, k, v) sum += strlen(k) + json_string_length(v);
    return sum;
}

static size_t walk_containers(const json_t *list)
{
    size_t i, sum = 0;
    json_t *c;

    json_array_foreach(list, i, c)
    {
        sum += walk_map(json_object_get(json_object_get(c, "resources"), "requests"));
    }
    return sum;
}

static size_t walk_pod(const json_t *p)
{
    const json_t *meta = json_object_get(p, "metadata"), *spec = json_object_get(p, "spec");
    size_t sum = 0;

    sum += json_string_length(json_object_get(meta, "name"));
    sum += json_string_length(json_object_get(meta, "namespace"));
    sum += json_string_length(json_object_get(json_object_get(meta, "labels"), SHR_LABEL_ORIGIN));
    sum += json_string_length(json_object_get(spec, "nodeName"));
    sum += walk_containers(json_object_get(spec, "containers"));
    sum += walk_containers(json_object_get(spec, "initContainers"));
    sum += walk_map(json_object_get(spec, "overhead"));
    sum += json_string_length(json_object_get(json_object_get(p, "status"), "phase"));
    return sum;
}

static size_t walk_sink;

static double walk_pods(const struct world *w)
{
    double t0 = now_ns();

    for (unsigned i = 0; i < w->npods; i++)
        walk_sink += walk_pod(w->pods[i]);
    return now_ns() - t0;
}

/* For reference, not what the agent does: the full objects (not trimmed) fed straight from the
 * world, as cold as 2.4 GB of jansson trees make them, with the same lookups alone (json_walk). */
static void cold_objects(const struct world *w, unsigned rounds)
{
    double *total = calloc(rounds, sizeof(double)), *feed = calloc(rounds, sizeof(double));
    double *offer = calloc(rounds, sizeof(double)), *fn = calloc(rounds, sizeof(double));
    double *offer_warm = calloc(rounds, sizeof(double)), offers[1000];
    double mn_total = 1e300;

    if (!total || !feed || !offer || !fn || !offer_warm)
        die("calloc", -ENOMEM);
    for (unsigned r = 0; r < rounds; r++) {
        struct shr_policy pol = {.percent = 50};
        struct shr_list l;
        struct shr_state *s;
        double tn, tp, t0;

        s = feed_all(w, &tn, &tp);
        t0 = now_ns();
        check("shr_offer", shr_offer(s, consumers[0], &pol, &l));
        offer[r] = now_ns() - t0;
        feed[r] = tn + tp;
        fn[r] = tn;
        total[r] = feed[r] + offer[r];
        /* The offer alone, warm: the median of many calls. */
        for (int i = 0; i < 1000; i++) {
            t0 = now_ns();
            check("shr_offer", shr_offer(s, consumers[i % N_CONSUMERS], &pol, &l));
            offers[i] = now_ns() - t0;
        }
        offer_warm[r] = median(offers, 1000);
        if (total[r] < mn_total)
            mn_total = total[r];
        shr_free(s);
        malloc_trim(0);
    }
    {
        double walk[5];

        for (int i = 0; i < 5; i++)
            walk[i] = walk_pods(w);
        printf("cold_objects json_walk_median_ms=%.2f json_walk_per_pod_ns=%.0f (the lookups "
               "alone)\n",
               median(walk, 5) / 1e6, median(walk, 5) / w->npods);
    }
    printf("cold_objects rounds=%u total_min_ms=%.2f total_median_ms=%.2f\n", rounds,
           mn_total / 1e6, median(total, rounds) / 1e6);
    printf("cold_objects feed_median_ms=%.2f nodes_median_ms=%.3f offer_median_us=%.2f "
           "per_pod_ns=%.0f per_node_ns=%.0f\n",
           median(feed, rounds) / 1e6, median(fn, rounds) / 1e6, median(offer, rounds) / 1e3,
           (median(feed, rounds) - median(fn, rounds)) / w->npods, median(fn, rounds) / w->nnodes);
    printf("cold_objects offer_warm_median_ns=%.0f (1000 calls after each feed)\n",
           median(offer_warm, rounds));
    free(total);
    free(feed);
    free(offer);
    free(offer_warm);
    free(fn);
}

static const char *meta_str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(json_object_get(o, "metadata"), key));
}

/* ---- the informer's feed (the figure) -------------------------------------------------------- */

/* A collection as the API server lists it: pages of PAGE_ITEMS objects (the informer's default
 * page size), as JSON text. */
#define PAGE_ITEMS 500

struct pages {
    size_t n;
    char **text;
    size_t *len;
};

/* Appends the n objects of batch (released) as one list page to p. */
static void add_page(struct pages *p, json_t **batch, size_t n, const char *kind)
{
    json_t *items = json_array(), *list;
    char **text = realloc(p->text, (p->n + 1) * sizeof(*text));
    size_t *len = realloc(p->len, (p->n + 1) * sizeof(*len));

    if (!items || !text || !len)
        die("realloc", -ENOMEM);
    p->text = text;
    p->len = len;
    for (size_t i = 0; i < n; i++)
        json_array_append_new(items, batch[i]);
    list = json_pack("{s:s,s:s,s:{s:s},s:o}", "apiVersion", "v1", "kind", kind, "metadata",
                     "resourceVersion", "3000000", "items", items);
    p->text[p->n] = list ? json_dumps(list, JSON_COMPACT) : NULL;
    if (!p->text[p->n])
        die("json_dumps", -ENOMEM);
    p->len[p->n] = strlen(p->text[p->n]);
    p->n++;
    json_decref(list);
}

/* The world's objects (the same as the world built from the same seed), as list pages; the
 * objects are generated and released a page at a time, so that only the texts stay. */
static void gen_pages(unsigned nnodes, unsigned npods, struct pages *np, struct pages *pp)
{
    struct node_info *ninfo = calloc(nnodes, sizeof(*ninfo));
    json_t **node_names = calloc(nnodes, sizeof(*node_names)), *batch[PAGE_ITEMS];
    unsigned *gpu_nodes = calloc(nnodes, sizeof(*gpu_nodes)), ngpu = 0;
    size_t nb = 0;

    if (!ninfo || !node_names || !gpu_nodes)
        die("calloc", -ENOMEM);
    memset(np, 0, sizeof(*np));
    memset(pp, 0, sizeof(*pp));
    for (unsigned i = 0; i < nnodes; i++) {
        batch[nb] = mk_node(i, &ninfo[i]);
        node_names[i] = json_string(meta_str(batch[nb], "name"));
        if (ninfo[i].gpu)
            gpu_nodes[ngpu++] = i;
        if (++nb == PAGE_ITEMS || i + 1 == nnodes) {
            add_page(np, batch, nb, "NodeList");
            nb = 0;
        }
    }
    for (unsigned i = 0; i < npods; i++) {
        struct pod_info info;

        batch[nb] = mk_pod(i, nnodes, node_names, ninfo, gpu_nodes, ngpu, &info);
        if (++nb == PAGE_ITEMS || i + 1 == npods) {
            add_page(pp, batch, nb, "PodList");
            nb = 0;
        }
    }
    for (unsigned i = 0; i < nnodes; i++)
        json_decref(node_names[i]);
    free(node_names);
    free(ninfo);
    free(gpu_nodes);
}

static void free_pages(struct pages *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->text[i]);
    free(p->text);
    free(p->len);
}

/* What the informer does with a listed or watched object before it calls its handler
 * (kube/informer.c, upsert): its key, a lookup in the store, managedFields dropped, the transform
 * (pods: shr_pod_transform, as the broadcaster's pod informer has it), the object cached in a
 * compact store (serialised and compressed: every byte of the trimmed object is read just before
 * the handler gets it), then the pod's typed record extracted (kpod_extract with the broadcaster's
 * options; for the handlers only, as the broadcaster asks: not kept in the store). Returns the
 * pod's record (valid until the next call), NULL for a node. */
static const struct kpod *inf_prepare(struct kstore *store, bool pod, json_t *obj,
                                      double *transform_ns, double *extract_ns)
{
    static _Alignas(8) char rec[1 << 16];
    long n;
    json_t *meta = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *rv;
    char key[600];

    if (!name)
        die("informer key", -EINVAL);
    if (ns && *ns)
        snprintf(key, sizeof(key), "%s/%s", ns, name);
    else
        snprintf(key, sizeof(key), "%s", name);
    (void)kstore_find(store, key);
    json_object_del(meta, "managedFields");
    if (pod) {
        double a = now_ns();

        shr_pod_transform(obj, NULL);
        if (transform_ns)
            *transform_ns += now_ns() - a;
    }
    rv = json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    check("kstore_put", kstore_put(store, key, obj, rv, NULL));
    if (pod) {
        double a = now_ns();

        n = kpod_extract(obj, &shr_pod_record_options, rec, sizeof(rec));
        if (n < 0 || (size_t)n > sizeof(rec))
            die("kpod_extract", n < 0 ? (int)n : -E2BIG);
        if (extract_ns)
            *extract_ns += now_ns() - a;
        return (const struct kpod *)rec;
    }
    return NULL;
}

struct feed_times {
    double nodes, pods, offer; /* sums of the handler calls' times */
    double flush;              /* shr_flush, called when the pod informer has synced */
    double transform;          /* sum of the transform's calls' times (shr_pod_transform) */
    double extract;            /* sum of the record extraction's times (kpod_extract) */
    double wall;               /* the whole pipeline: decoding, informer, handlers */
    size_t store_bytes;        /* the pod store's accounting after the feed (kstore_stats) */
    size_t record_bytes;       /* of which the records */
};

/* A fresh state fed as the broadcaster's informers feed it at start-up: each page decoded, each
 * object prepared as the informer does (inf_prepare), then handed to the handler's function, whose
 * call alone is timed; nodes first, then pods, then the flush the broadcaster makes when its pod
 * informer has synced, then one offer. `stage` false: the state's stage is ended before the feed
 * (shr_flush on the empty state), so that every pod is applied as it comes (the comparison). */
static struct shr_state *feed_informer(const struct pages *np, const struct pages *pp, bool stage,
                                       struct feed_times *t, double *calls, size_t *ncalls)
{
    struct shr_policy pol = {.percent = 50};
    struct kstore *nstore, *pstore;
    struct shr_state *s;
    struct shr_list l;
    double w0 = now_ns(), a;

    memset(t, 0, sizeof(*t));
    check("kstore_new", kstore_new(KSTORE_COMPACT, &nstore));
    check("kstore_new", kstore_new(KSTORE_COMPACT, &pstore));
    check("shr_new", shr_new(&s));
    if (!stage)
        check("shr_flush", shr_flush(s));
    for (int kind = 0; kind < 2; kind++) {
        const struct pages *pg = kind == 0 ? np : pp;

        for (size_t p = 0; p < pg->n; p++) {
            json_t *body = json_loadb(pg->text[p], pg->len[p], 0, NULL), *item;
            size_t i;

            if (!body)
                die("json_loadb", -EINVAL);
            json_array_foreach(json_object_get(body, "items"), i, item)
            {
                const struct kpod *rec;
                int r;

                rec = inf_prepare(kind == 0 ? nstore : pstore, kind == 1, item, &t->transform,
                                  &t->extract);
                a = now_ns();
                r = kind == 0 ? shr_node_upsert(s, item) : shr_pod_upsert_record(s, rec);
                a = now_ns() - a;
                if (kind == 0) {
                    t->nodes += a;
                } else {
                    t->pods += a;
                    calls[(*ncalls)++] = a;
                }
                check("upsert", r);
            }
            json_decref(body);
        }
    }
    a = now_ns();
    check("shr_flush", shr_flush(s));
    t->flush = now_ns() - a;
    a = now_ns();
    check("shr_offer", shr_offer(s, consumers[0], &pol, &l));
    t->offer = now_ns() - a;
    t->wall = now_ns() - w0;
    {
        struct kstore_stats st;

        kstore_get_stats(pstore, &st);
        t->record_bytes = st.records;
        t->store_bytes =
            st.entries + st.values + st.records + st.slack + st.table + st.indexes + st.fixed;
    }
    kstore_free(nstore);
    kstore_free(pstore);
    return s;
}

static double timer_overhead_ns(void)
{
    double overhead[1000];

    for (int i = 0; i < 1000; i++) {
        double a = now_ns();
        overhead[i] = now_ns() - a;
    }
    return median(overhead, 1000);
}

/* A state fed the listed objects as they are, without the informer's steps (for the check). */
static struct shr_state *feed_pages_full(const struct pages *np, const struct pages *pp)
{
    struct shr_state *s;

    check("shr_new", shr_new(&s));
    for (int kind = 0; kind < 2; kind++) {
        const struct pages *pg = kind == 0 ? np : pp;

        for (size_t p = 0; p < pg->n; p++) {
            json_t *body = json_loadb(pg->text[p], pg->len[p], 0, NULL), *item;
            size_t i;

            if (!body)
                die("json_loadb", -EINVAL);
            json_array_foreach(json_object_get(body, "items"), i, item)
            {
                check("upsert", kind == 0 ? shr_node_upsert(s, item) : shr_pod_upsert(s, item));
            }
            json_decref(body);
        }
    }
    return s;
}

/* The distribution of a feed's pod handler calls: the sum is the figure; calls of more than
 * 20 µs are nearly all the process being interrupted or preempted (2 cores shared with others). */
static void calls_summary(const char *what, double *v, size_t n)
{
    double over = 0;
    size_t nover = 0;

    if (n == 0)
        return;
    qsort(v, n, sizeof(*v), cmp_double);
    for (size_t i = 0; i < n; i++)
        if (v[i] > 20000) {
            over += v[i];
            nover++;
        }
    printf("%s median_ns=%.0f p90_ns=%.0f p99_ns=%.0f max_ns=%.0f over_20us=%zu "
           "over_20us_ms=%.2f\n",
           what, v[n / 2], v[n * 9 / 10], v[n * 99 / 100], v[n - 1], nover, over / 1e6);
}

/* The figure: the first feed of the process (nothing of the computation warmed up: code, state,
 * allocator), then `rounds` - 1 more (hot runs), alternately without and with the stage (the first
 * hot run without it), so that the two compare in one run. Runs in a child process started before
 * the world is built, so that the heap holds what the agent's would (list pages, their trees, the
 * stores and the state) and not 2.4 GB of trees: glibc's malloc costs depend on what else the
 * heap holds. */
static double feed_total(const struct feed_times *t)
{
    return t->nodes + t->pods + t->flush + t->offer;
}

static void informer(unsigned nnodes, unsigned npods, unsigned rounds)
{
    struct pages np, pp;
    struct feed_times first = {0}, t;
    double *hot[2], *hot_pods[2], mn[2] = {1e300, 1e300}, *hot_tr = calloc(rounds, sizeof(double));
    double wall = 0, tmr = timer_overhead_ns(), t0 = now_ns(), *calls = calloc(npods + 1, 8);
    struct shr_state *s = NULL, *ref;
    size_t nhot[2] = {0, 0}, ntr = 0, bytes = 0, ncalls;

    for (int k = 0; k < 2; k++) {
        hot[k] = calloc(rounds, sizeof(double));
        hot_pods[k] = calloc(rounds, sizeof(double));
        if (!hot[k] || !hot_pods[k])
            die("calloc", -ENOMEM);
    }
    if (!hot_tr || !calls)
        die("calloc", -ENOMEM);
    mk_shared();
    gen_pages(nnodes, npods, &np, &pp);
    for (size_t i = 0; i < pp.n; i++)
        bytes += pp.len[i];
    printf("informer pages=%zu+%zu pod_pages_mb=%.0f build_s=%.2f\n", np.n, pp.n, bytes / 1e6,
           (now_ns() - t0) / 1e9);
    malloc_trim(0);
    for (unsigned r = 0; r < rounds; r++) {
        int staged = r == 0 || r % 2 == 0; /* index of hot[]: 1 staged, 0 not */
        double total;

        if (s) {
            shr_free(s);
            malloc_trim(0); /* as the informer does after a list */
        }
        ncalls = 0;
        s = feed_informer(&np, &pp, staged, &t, calls, &ncalls);
        total = feed_total(&t);
        wall += t.wall;
        if (r == 0) {
            first = t;
            calls_summary("informer first_calls", calls, ncalls);
            continue;
        }
        hot_tr[ntr++] = t.transform;
        hot[staged][nhot[staged]] = total;
        hot_pods[staged][nhot[staged]++] = t.pods + t.flush;
        if (total < mn[staged])
            mn[staged] = total;
    }
    {
        double ftotal = feed_total(&first);

        printf("informer first_ms=%.2f nodes_ms=%.2f pods_ms=%.2f flush_ms=%.2f offer_us=%.2f "
               "per_pod_ns=%.0f per_node_ns=%.0f target_ms=100 ratio=%.2f\n",
               ftotal / 1e6, first.nodes / 1e6, first.pods / 1e6, first.flush / 1e6,
               first.offer / 1e3, npods ? (first.pods + first.flush) / npods : 0,
               first.nodes / nnodes, ftotal / 1e8);
    }
    for (int k = 1; k >= 0; k--) {
        if (!nhot[k])
            continue;
        double hmed = median(hot[k], nhot[k]), pmed = median(hot_pods[k], nhot[k]);

        printf("informer hot_%s runs=%zu median_ms=%.2f min_ms=%.2f pods_median_ms=%.2f "
               "per_pod_ns=%.0f ratio=%.2f\n",
               k ? "staged" : "unstaged", nhot[k], hmed / 1e6, mn[k] / 1e6, pmed / 1e6,
               npods ? pmed / npods : 0, hmed / 1e8);
    }
    if (nhot[0] && nhot[1])
        printf("informer staged_vs_unstaged hot_median_ratio=%.2f\n",
               median(hot[1], nhot[1]) / median(hot[0], nhot[0]));
    printf("informer transform first_ms=%.2f hot_median_ms=%.2f per_pod_ns=%.0f "
           "(shr_pod_transform, called by the informer before the handler: not in the figure)\n",
           first.transform / 1e6, ntr ? median(hot_tr, ntr) / 1e6 : 0,
           npods ? first.transform / npods : 0);
    printf("informer extract first_ms=%.2f per_pod_ns=%.0f (kpod_extract, called by the informer "
           "before the handler: not in the figure; first_plus_extract_ms=%.2f)\n",
           first.extract / 1e6, npods ? first.extract / npods : 0,
           (feed_total(&first) + first.extract) / 1e6);
    printf("informer pod_store per_pod_bytes=%.1f records_per_pod_bytes=%.1f\n",
           npods ? (double)first.store_bytes / npods : 0,
           npods ? (double)first.record_bytes / npods : 0);
    printf("informer timer_overhead_ns=%.0f per call (%.2f ms of each feed's figure) "
           "pipeline_mean_s=%.2f (decoding, informer and handlers, per feed)\n",
           tmr, tmr * (nnodes + npods + 1) / 1e6, wall / rounds / 1e9);
    /* The trimmed objects give what the full ones give. */
    ref = feed_pages_full(&np, &pp);
    printf("informer consistent_with_full_objects: %s\n", states_equal(s, ref) ? "yes" : "no");
    shr_free(ref);
    shr_free(s);
    free_pages(&np);
    free_pages(&pp);
    for (int k = 0; k < 2; k++) {
        free(hot[k]);
        free(hot_pods[k]);
    }
    free(hot_tr);
    free(calls);
}

static void informer_phase(unsigned nnodes, unsigned npods, unsigned rounds)
{
    int status;
    pid_t pid;

    fflush(stdout);
    pid = fork();
    if (pid < 0)
        die("fork", -errno);
    if (pid == 0) {
        informer(nnodes, npods, rounds);
        fflush(stdout);
        _exit(0);
    }
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        die("the informer phase", -ECHILD);
}

static void memory(const struct world *w)
{
    struct shr_state *s;
    struct shr_stats st;
    size_t base, after_nodes;
    long rss0, rss_nodes, rss_staged, rss1;

    malloc_trim(0);
    rss0 = rss_bytes();
    check("shr_new", shr_new(&s));
    shr_get_stats(s, &st);
    base = st.memory_bytes;
    for (unsigned i = 0; i < w->nnodes; i++)
        check("shr_node_upsert", shr_node_upsert(s, w->nodes[i]));
    shr_get_stats(s, &st);
    after_nodes = st.memory_bytes;
    rss_nodes = rss_bytes();
    /* (The stats above ended the state's stage: these pods are applied as they come.) */
    for (unsigned i = 0; i < w->npods; i++)
        check("shr_pod_upsert", shr_pod_upsert(s, w->pods[i]));
    rss1 = rss_bytes();
    shr_get_stats(s, &st);
    printf("memory state_bytes=%zu state_per_pod=%.1f rss_delta=%ld rss_per_pod=%.1f\n",
           st.memory_bytes, (double)st.memory_bytes / w->npods, rss1 - rss0,
           (double)(rss1 - rss0) / w->npods);
    /* Nodes alone (before any pod), then what the pods added (their records, the pod table, and
     * the nodes' usage vectors and per-origin entries they make grow). */
    printf("memory empty_state_bytes=%zu nodes_state_bytes=%zu per_node=%.1f nodes_rss_delta=%ld "
           "rss_per_node=%.1f pods_state_bytes=%zu per_pod=%.1f\n",
           base, after_nodes - base, (double)(after_nodes - base) / w->nnodes, rss_nodes - rss0,
           (double)(rss_nodes - rss0) / w->nnodes, st.memory_bytes - after_nodes,
           (double)(st.memory_bytes - after_nodes) / w->npods);
    printf("stats nodes=%zu counted_nodes=%zu pods=%zu counted_pods=%zu origins=%zu "
           "resources=%zu dropped_resources=%zu dropped_origins=%zu bad_quantities=%zu\n",
           st.nodes, st.counted_nodes, st.pods, st.counted_pods, st.origins, st.resources,
           st.dropped_resources, st.dropped_origins, st.bad_quantities);
    shr_free(s);
    malloc_trim(0);
    /* The stage's cost at start-up: nodes and pods fed with no query in between (as the agent
     * does until its informers synced), RSS before and after the flush. */
    rss0 = rss_bytes();
    check("shr_new", shr_new(&s));
    for (unsigned i = 0; i < w->nnodes; i++)
        check("shr_node_upsert", shr_node_upsert(s, w->nodes[i]));
    for (unsigned i = 0; i < w->npods; i++)
        check("shr_pod_upsert", shr_pod_upsert(s, w->pods[i]));
    rss_staged = rss_bytes();
    check("shr_flush", shr_flush(s));
    rss1 = rss_bytes();
    printf("memory staged rss_delta_before_flush=%ld per_pod=%.1f (nodes + the stage) "
           "rss_delta_after_flush=%ld per_pod=%.1f\n",
           rss_staged - rss0, (double)(rss_staged - rss0) / w->npods, rss1 - rss0,
           (double)(rss1 - rss0) / w->npods);
    shr_free(s);
    malloc_trim(0);
}

/* How an event's object reaches the timed call: as cold as a random object among all of them
 * (full object), walked just before the call (full object), or as the informer hands it over
 * (a copy, standing for the object decoded from the watch event, prepared by inf_prepare). */
enum ev_mode {
    EV_COLD,
    EV_HOT,
    EV_INFORMER,
};

/* One round of pod events on the live objects (the objects are changed in place, so that the final
 * objects are what the state was last told), each timed alone. */
static void event_round(struct world *w, struct shr_state *s, unsigned nevents, enum ev_mode m,
                        struct kstore *store)
{
    enum { EV_RES, EV_PHASE, EV_MOVE, EV_DEL, EV_ADD, EV_KINDS };
    static const char *const names[EV_KINDS] = {"resources", "phase", "move", "delete", "readd"};
    const char *mode = m == EV_COLD ? "cold" : (m == EV_HOT ? "hot" : "informer");
    bool hot = m == EV_HOT;
    double *t[EV_KINDS], *all;
    size_t n[EV_KINDS] = {0}, nall = 0;

    for (int k = 0; k < EV_KINDS; k++) {
        t[k] = calloc(nevents ? nevents : 1, sizeof(double));
        if (!t[k])
            die("calloc", -ENOMEM);
    }
    all = calloc(2 * (size_t)nevents + 1, sizeof(double));
    if (!all)
        die("calloc", -ENOMEM);
    for (unsigned e = 0; e < nevents; e++) {
        unsigned p = pick(w->npods), kind = pick(100), ev;
        json_t *pod = w->pods[p], *spec = json_object_get(pod, "spec");
        double a, b;
        int r;

        if (kind < 40) {
            /* Resource change: the first container's cpu and memory requests (an in-place
             * resize). */
            json_t *reqs = json_object_get(
                json_object_get(json_array_get(json_object_get(spec, "containers"), 0),
                                "resources"),
                "requests");
            json_object_set_new(reqs, "cpu", json_string(cpu_req[pick(9)]));
            json_object_set_new(reqs, "memory", json_string(mem_req[pick(9)]));
            ev = EV_RES;
        } else if (kind < 60) {
            /* Phase change: Running <-> Succeeded/Failed (the reverse is not a real transition,
             * but costs the same as a new pod on the node). */
            json_t *status = json_object_get(pod, "status");
            const char *ph = json_string_value(json_object_get(status, "phase"));
            const char *next = "Running";

            if (ph && strcmp(ph, "Running") == 0)
                next = chance(500) ? "Succeeded" : "Failed";
            json_object_set_new(status, "phase", json_string(next));
            ev = EV_PHASE;
        } else if (kind < 80) {
            /* Node move (a pod recreated elsewhere under the same name, as a StatefulSet does). */
            unsigned node = w->pinfo[p].gpu ? w->gpu_nodes[pick(w->ngpu)] : pick(w->nnodes);

            json_object_set_new(spec, "nodeName",
                                json_string(json_string_value(w->node_names[node])));
            w->pinfo[p].node = node;
            ev = EV_MOVE;
        } else {
            const char *ns = meta_str(pod, "namespace"), *name = meta_str(pod, "name");

            if (hot)
                walk_sink += walk_pod(pod);
            a = now_ns();
            r = shr_pod_delete(s, ns, name);
            b = now_ns();
            check("shr_pod_delete", r);
            t[EV_DEL][n[EV_DEL]++] = b - a;
            all[nall++] = b - a;
            ev = EV_ADD;
        }
        if (hot)
            walk_sink += walk_pod(pod);
        if (m == EV_INFORMER) {
            json_t *copy = json_deep_copy(pod);

            if (!copy)
                die("json_deep_copy", -ENOMEM);
            const struct kpod *rec = inf_prepare(store, true, copy, NULL, NULL);

            a = now_ns();
            r = shr_pod_upsert_record(s, rec);
            b = now_ns();
            json_decref(copy);
        } else {
            a = now_ns();
            r = shr_pod_upsert(s, pod);
            b = now_ns();
        }
        check("shr_pod_upsert", r);
        t[ev][n[ev]++] = b - a;
        all[nall++] = b - a;
    }
    for (int k = 0; k < EV_KINDS; k++)
        print_dist(mode, names[k], t[k], n[k]);
    print_dist(mode, "all", all, nall);
    if (nall)
        printf("events_%s median_us=%.3f p99_us=%.3f target_us=10\n", mode, all[nall / 2] / 1e3,
               all[nall * 99 / 100] / 1e3);
    for (int k = 0; k < EV_KINDS; k++)
        free(t[k]);
    free(all);
}

/* Node flips: cordon then uncordon, moving the node's pods' usage out and back. */
static void node_flips(struct world *w, struct shr_state *s)
{
    unsigned flips = w->nnodes < 1000 ? w->nnodes : 1000;
    double *ft = calloc(2 * (size_t)flips, sizeof(double));
    size_t nf = 0;

    if (!ft)
        die("calloc", -ENOMEM);
    for (unsigned i = 0; i < flips; i++) {
        json_t *node = w->nodes[pick(w->nnodes)], *spec = json_object_get(node, "spec");
        bool was = json_is_true(json_object_get(spec, "unschedulable"));

        for (int k = 0; k < 2; k++) {
            double a, b;

            if (was)
                json_object_del(spec, "unschedulable");
            else
                json_object_set_new(spec, "unschedulable", json_true());
            was = !was;
            a = now_ns();
            check("shr_node_upsert", shr_node_upsert(s, node));
            b = now_ns();
            ft[nf++] = b - a;
        }
    }
    print_dist("cold", "node-flip", ft, nf);
    free(ft);
}

static struct shr_state *events(struct world *w, unsigned nevents)
{
    struct shr_state *s = feed_all(w, NULL, NULL);
    struct kstore *store;

    check("kstore_new", kstore_new(KSTORE_COMPACT, &store));
    printf("events timer_overhead_ns=%.0f (included in the figures below)\n", timer_overhead_ns());
    event_round(w, s, nevents, EV_COLD, NULL);
    event_round(w, s, nevents, EV_HOT, NULL);
    event_round(w, s, nevents, EV_INFORMER, store);
    node_flips(w, s);
    kstore_free(store);
    return s;
}

static void usage(void)
{
    fprintf(stderr, "usage: bench-broadcaster [--nodes N] [--pods N] [--events N] [--rounds N] "
                    "[--seed N] [--informer-only]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    uint64_t nnodes = 5000, npods = 150000, nevents = 100000, rounds = 5, seed = 1;
    struct world w = {0};
    struct shr_state *s, *fresh;
    bool informer_only = false;
    double t0;
    long rss0;

    for (int i = 1; i < argc; i++) {
        uint64_t *dst = NULL, max = 10000000;

        if (strcmp(argv[i], "--informer-only") == 0) {
            informer_only = true;
            continue;
        }
        if (strcmp(argv[i], "--nodes") == 0)
            dst = &nnodes;
        else if (strcmp(argv[i], "--pods") == 0)
            dst = &npods;
        else if (strcmp(argv[i], "--events") == 0)
            dst = &nevents;
        else if (strcmp(argv[i], "--rounds") == 0)
            dst = &rounds, max = 1000;
        else if (strcmp(argv[i], "--seed") == 0)
            dst = &seed, max = UINT64_MAX;
        if (!dst || i + 1 >= argc || parse_u64(argv[++i], max, dst) < 0)
            usage();
    }
    if (nnodes == 0 || rounds == 0)
        usage();
    rng_state = seed ? seed : 1;
    w.nnodes = (unsigned)nnodes;
    w.npods = (unsigned)npods;

    print_load("start");
    /* The figure first, in a process of its own (see informer). */
    informer_phase(w.nnodes, w.npods, (unsigned)rounds);
    if (informer_only) {
        print_load("end");
        return 0;
    }
    rng_state = seed ? seed : 1;

    /* Objects, before any timing. */
    rss0 = rss_bytes();
    t0 = now_ns();
    mk_shared();
    w.nodes = calloc(w.nnodes, sizeof(*w.nodes));
    w.ninfo = calloc(w.nnodes, sizeof(*w.ninfo));
    w.node_names = calloc(w.nnodes, sizeof(*w.node_names));
    w.gpu_nodes = calloc(w.nnodes, sizeof(*w.gpu_nodes));
    w.pods = calloc(w.npods ? w.npods : 1, sizeof(*w.pods));
    w.pinfo = calloc(w.npods ? w.npods : 1, sizeof(*w.pinfo));
    if (!w.nodes || !w.ninfo || !w.node_names || !w.gpu_nodes || !w.pods || !w.pinfo)
        die("calloc", -ENOMEM);
    for (unsigned i = 0; i < w.nnodes; i++) {
        w.nodes[i] = mk_node(i, &w.ninfo[i]);
        w.node_names[i] = json_string(meta_str(w.nodes[i], "name"));
        if (w.ninfo[i].gpu)
            w.gpu_nodes[w.ngpu++] = i;
    }
    for (unsigned i = 0; i < w.npods; i++)
        w.pods[i] = mk_pod(i, w.nnodes, w.node_names, w.ninfo, w.gpu_nodes, w.ngpu, &w.pinfo[i]);
    {
        char *sample = json_dumps(w.pods[0], JSON_COMPACT);
        char *nsample = json_dumps(w.nodes[0], JSON_COMPACT);

        printf("setup nodes=%u gpu_nodes=%u pods=%u build_s=%.2f objects_rss_mb=%.0f "
               "pod_json_bytes=%zu node_json_bytes=%zu\n",
               w.nnodes, w.ngpu, w.npods, (now_ns() - t0) / 1e9, (double)(rss_bytes() - rss0) / 1e6,
               sample ? strlen(sample) : 0, nsample ? strlen(nsample) : 0);
        free(sample);
        free(nsample);
    }

    cold_objects(&w, (unsigned)rounds);
    memory(&w);
    s = events(&w, (unsigned)nevents);

    /* Consistency: the state after all the events against a fresh one fed the final objects. */
    fresh = feed_all(&w, NULL, NULL);
    {
        struct shr_policy pol = {.percent = 100};
        struct shr_list l;
        bool found;

        check("shr_offer", shr_offer(s, NULL, &pol, &l));
        printf("offer cpu_m=%lld memory=%lld pods=%lld gpu=%lld\n",
               (long long)shr_list_get(&l, "cpu", NULL),
               (long long)shr_list_get(&l, "memory", NULL),
               (long long)shr_list_get(&l, "pods", NULL),
               (long long)shr_list_get(&l, "nvidia.com/gpu", &found));
    }
    printf("consistent: %s\n", states_equal(s, fresh) ? "yes" : "no");
    print_load("end");
    shr_free(fresh);
    shr_free(s);
    for (unsigned i = 0; i < w.nnodes; i++) {
        json_decref(w.nodes[i]);
        json_decref(w.node_names[i]);
    }
    for (unsigned i = 0; i < w.npods; i++)
        json_decref(w.pods[i]);
    json_decref(shared_env);
    json_decref(shared_mounts);
    json_decref(shared_tolerations);
    json_decref(shared_volumes);
    json_decref(shared_conds);
    json_decref(node_images);
    free(w.nodes);
    free(w.ninfo);
    free(w.node_names);
    free(w.gpu_nodes);
    free(w.pods);
    free(w.pinfo);
    return 0;
}
