/* Unit tests of the broadcaster's computation (src/offer/share.c): table-driven scenarios
 * of node and pod events with exact expected totals and offers, each cross-checked at its end
 * against fresh states fed the final objects (nodes first, then pods first); limits, fixed
 * amounts, label filtering, move detection, quantity text, and allocation failures.
 *
 * Objects are written in a small notation (see mk_node and mk_pod) so that the tables stay
 * readable; the builders turn them into the JSON the API server returns. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "offer/share.h"
#include "common/xalloc.h"
#include "kube/quantity.h"

/* What an origin record occupies: one mapped page (share.c, mem_map). */
#define ORIGIN_BYTES x_map_bytes(1200)
/* What an emptied state keeps besides its origins: the unscheduled pods' bucket's vectors. */
#define KEPT_BYTES 512

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define ABSENT        INT64_MIN /* expected: the resource is not listed */

#define GI (INT64_C(1) << 30)
#define MI (INT64_C(1) << 20)

/* ---- object builders ------------------------------------------------------------------------- */

/* A quantity value: "#5" is the JSON integer 5 (malformed for the API), anything else a string. */
static json_t *qty(const char *v)
{
    if (v[0] == '#')
        return json_integer(v[1] - '0');
    return json_string(v);
}

/* "cpu=1,memory=2Gi" into an object. */
static json_t *qty_map(const char *list)
{
    char buf[512], *p = buf, *tok;
    json_t *m = json_object();

    snprintf(buf, sizeof(buf), "%s", list);
    while ((tok = strsep(&p, ",")) != NULL) {
        char *eq = strchr(tok, '=');
        if (!eq)
            continue;
        *eq = '\0';
        json_object_set_new(m, tok, qty(eq + 1));
    }
    return m;
}

static json_t *obj_path(json_t *o, const char *key)
{
    json_t *c = json_object_get(o, key);

    if (!c) {
        c = json_object();
        json_object_set_new(o, key, c);
    }
    return c;
}

/* "NAME [notready] [nocond] [cordon] [label:K=V]... [RES=QTY]...": a Ready node with the given
 * allocatable; NAME "-" leaves the name out. */
static json_t *mk_node(const char *spec)
{
    char buf[4096], *p = buf, *tok;
    json_t *n = json_object(), *meta = obj_path(n, "metadata"), *st = obj_path(n, "status");
    json_t *alloc = obj_path(st, "allocatable");
    const char *ready = "True";
    bool cond = true, first = true;

    snprintf(buf, sizeof(buf), "%s", spec);
    json_object_set_new(n, "kind", json_string("Node"));
    json_object_set_new(meta, "uid", json_string("0d7a6c2e-1111-2222-3333-444455556666"));
    while ((tok = strsep(&p, " ")) != NULL) {
        if (first) {
            if (strcmp(tok, "-") != 0)
                json_object_set_new(meta, "name", json_string(tok));
            first = false;
        } else if (strcmp(tok, "notready") == 0) {
            ready = "False";
        } else if (strcmp(tok, "nocond") == 0) {
            cond = false;
        } else if (strcmp(tok, "cordon") == 0) {
            json_object_set_new(obj_path(n, "spec"), "unschedulable", json_true());
        } else if (strncmp(tok, "label:", 6) == 0) {
            char *eq = strchr(tok, '=');
            *eq = '\0';
            json_object_set_new(obj_path(meta, "labels"), tok + 6, json_string(eq + 1));
        } else if (strchr(tok, '=')) {
            json_t *m = qty_map(tok);

            json_object_update(alloc, m);
            json_decref(m);
        }
    }
    json_object_set_new(st, "capacity", json_deep_copy(alloc));
    if (cond)
        json_object_set_new(st, "conditions",
                            json_pack("[{s:s,s:s},{s:s,s:s}]", "type", "MemoryPressure", "status",
                                      "False", "type", "Ready", "status", ready));
    return n;
}

/* "NS/NAME [node=N] [phase=P] [origin=O] [deleting] [label:K=V] [spec:K=V] [c:REQS] [i:REQS]
 * [s:REQS] [o:REQS]": one container per c:, one init container per i:, one sidecar (an init
 * container with restartPolicy Always) per s:, in their order among the i:, overhead o:, spec:K=V
 * a member of spec that the computation does not read. NAME empty: no name. */
static json_t *mk_pod(const char *spec)
{
    char buf[4096], *p = buf, *tok;
    json_t *pod = json_object(), *meta = obj_path(pod, "metadata"), *sp = obj_path(pod, "spec");
    json_t *containers = json_array(), *inits = json_array();
    bool first = true;
    int nc = 0;

    snprintf(buf, sizeof(buf), "%s", spec);
    json_object_set_new(pod, "kind", json_string("Pod"));
    json_object_set_new(obj_path(pod, "status"), "phase", json_string("Running"));
    while ((tok = strsep(&p, " ")) != NULL) {
        if (first) {
            char *slash = strchr(tok, '/');
            *slash = '\0';
            json_object_set_new(meta, "namespace", json_string(tok));
            if (slash[1])
                json_object_set_new(meta, "name", json_string(slash + 1));
            first = false;
        } else if (strncmp(tok, "node=", 5) == 0) {
            json_object_set_new(sp, "nodeName", json_string(tok + 5));
        } else if (strncmp(tok, "phase=", 6) == 0) {
            json_object_set_new(obj_path(pod, "status"), "phase", json_string(tok + 6));
        } else if (strncmp(tok, "origin=", 7) == 0) {
            json_object_set_new(obj_path(meta, "labels"), SHR_LABEL_ORIGIN, json_string(tok + 7));
        } else if (strcmp(tok, "deleting") == 0) {
            json_object_set_new(meta, "deletionTimestamp", json_string("2024-01-01T00:00:00Z"));
        } else if (strncmp(tok, "label:", 6) == 0) {
            char *eq = strchr(tok, '=');
            *eq = '\0';
            json_object_set_new(obj_path(meta, "labels"), tok + 6, json_string(eq + 1));
        } else if (strncmp(tok, "spec:", 5) == 0) {
            char *eq = strchr(tok, '=');
            *eq = '\0';
            json_object_set_new(sp, tok + 5, json_string(eq + 1));
        } else if (tok[0] && tok[1] == ':') {
            json_t *c = json_pack("{s:s,s:s,s:{s:o,s:{s:s}}}", "name", "c", "image", "busybox",
                                  "resources", "requests", qty_map(tok + 2), "limits", "cpu", "64");
            char cname[16];

            snprintf(cname, sizeof(cname), "c%d", nc++);
            json_object_set_new(c, "name", json_string(cname));
            if (tok[0] == 'c') {
                json_array_append_new(containers, c);
            } else if (tok[0] == 'i' || tok[0] == 's') {
                if (tok[0] == 's')
                    json_object_set_new(c, "restartPolicy", json_string("Always"));
                json_array_append_new(inits, c);
            } else {
                json_object_set_new(sp, "overhead", qty_map(tok + 2));
                json_decref(c);
            }
        }
    }
    json_object_set_new(sp, "containers", containers);
    if (json_array_size(inits))
        json_object_set_new(sp, "initContainers", inits);
    else
        json_decref(inits);
    return pod;
}

/* ---- the world: the objects currently fed, for from-scratch cross-checks --------------------- */

struct world {
    json_t *nodes; /* name -> node */
    json_t *pods;  /* "ns/name" -> pod */
};

static void world_init(struct world *w)
{
    w->nodes = json_object();
    w->pods = json_object();
}

static void world_done(struct world *w)
{
    json_decref(w->nodes);
    json_decref(w->pods);
}

static const char *meta_str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(json_object_get(o, "metadata"), key));
}

static int feed_node(struct shr_state *s, struct world *w, json_t *n)
{
    int r = shr_node_upsert(s, n);

    if (r == 0 && w)
        json_object_set(w->nodes, meta_str(n, "name"), n);
    return r;
}

static int feed_pod(struct shr_state *s, struct world *w, json_t *p)
{
    int r = shr_pod_upsert(s, p);
    char key[600];

    if (r == 0 && w) {
        snprintf(key, sizeof(key), "%s/%s", meta_str(p, "namespace"), meta_str(p, "name"));
        json_object_set(w->pods, key, p);
    }
    return r;
}

static int del_pod(struct shr_state *s, struct world *w, const char *nsname)
{
    char buf[600], *slash;
    int r;

    snprintf(buf, sizeof(buf), "%s", nsname);
    slash = strchr(buf, '/');
    *slash = '\0';
    r = shr_pod_delete(s, buf, slash + 1);
    if (r == 0 && w)
        json_object_del(w->pods, nsname);
    return r;
}

static int del_node(struct shr_state *s, struct world *w, const char *name)
{
    int r = shr_node_delete(s, name);

    if (r == 0 && w)
        json_object_del(w->nodes, name);
    return r;
}

/* A fresh state fed the world's objects: pods before or after nodes, and (order 2) the pods as the
 * informer hands them over, trimmed by shr_pod_transform. */
static struct shr_state *fresh_state(const struct world *w, int order)
{
    struct shr_state *s;
    const char *k;
    json_t *v;

    assert_int_equal(shr_new(&s), 0);
    if (order == 1)
        json_object_foreach(w->pods, k, v) assert_int_equal(shr_pod_upsert(s, v), 0);
    json_object_foreach(w->nodes, k, v) assert_int_equal(shr_node_upsert(s, v), 0);
    if (order == 0)
        json_object_foreach(w->pods, k, v) assert_int_equal(shr_pod_upsert(s, v), 0);
    if (order == 2) {
        json_object_foreach(w->pods, k, v)
        {
            json_t *t = json_deep_copy(v);

            shr_pod_transform(t, NULL);
            assert_int_equal(shr_pod_upsert(s, t), 0);
            json_decref(t);
        }
    }
    return s;
}

static void assert_list_equal(const struct shr_list *a, const struct shr_list *b)
{
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        assert_string_equal(a->items[i].name, b->items[i].name);
        if (a->items[i].value != b->items[i].value)
            print_error("%s: %lld != %lld\n", a->items[i].name, (long long)a->items[i].value,
                        (long long)b->items[i].value);
        assert_true(a->items[i].value == b->items[i].value);
    }
}

/* Everything observable except memory, interned-name counts and the event counters. */
struct snapshot {
    struct shr_list avail, used, offer[4][3];
    struct shr_stats st;
};

static const char *const snap_origins[4] = {NULL, "c1", "c2", "c3"};
static const unsigned snap_pct[3] = {100, 37, 0};

static void snap(struct shr_state *s, const char *const *origins, size_t norigins,
                 struct snapshot *ret)
{
    struct shr_policy pol = {0};

    memset(ret, 0, sizeof(*ret));
    shr_totals(s, &ret->avail, &ret->used);
    for (size_t o = 0; o < norigins && o < 4; o++) {
        for (size_t k = 0; k < 3; k++) {
            pol.percent = snap_pct[k];
            assert_int_equal(shr_offer(s, origins[o], &pol, &ret->offer[o][k]), 0);
        }
    }
    shr_get_stats(s, &ret->st);
}

static void assert_snap_equal(const struct snapshot *a, const struct snapshot *b)
{
    assert_list_equal(&a->avail, &b->avail);
    assert_list_equal(&a->used, &b->used);
    for (size_t o = 0; o < 4; o++)
        for (size_t k = 0; k < 3; k++)
            assert_list_equal(&a->offer[o][k], &b->offer[o][k]);
    assert_int_equal(a->st.nodes, b->st.nodes);
    assert_int_equal(a->st.counted_nodes, b->st.counted_nodes);
    assert_int_equal(a->st.pods, b->st.pods);
    assert_int_equal(a->st.counted_pods, b->st.counted_pods);
    assert_int_equal(a->st.origins, b->st.origins);
}

/* The incremental state s equals fresh states fed the world's objects, in both orders, for every
 * origin of the world's pods and no origin. */
static void assert_consistent(struct shr_state *s, const struct world *w)
{
    const char *origins[SHR_MAX_ORIGINS + 1];
    size_t n = 1;
    const char *k;
    json_t *v;

    origins[0] = NULL;
    json_object_foreach(w->pods, k, v)
    {
        const char *o = json_string_value(json_object_get(
            json_object_get(json_object_get(v, "metadata"), "labels"), SHR_LABEL_ORIGIN));
        if (o && n < ARRAY_SIZE(origins))
            origins[n++] = o;
    }
    for (int order = 0; order < 3; order++) {
        struct shr_state *f = fresh_state(w, order);
        struct shr_policy pol = {.percent = 37};
        struct shr_list a, b;
        struct shr_stats sa, sb;

        shr_totals(s, &a, NULL);
        shr_totals(f, &b, NULL);
        assert_list_equal(&a, &b);
        shr_totals(s, NULL, &a);
        shr_totals(f, NULL, &b);
        assert_list_equal(&a, &b);
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(shr_offer(s, origins[i], &pol, &a), 0);
            assert_int_equal(shr_offer(f, origins[i], &pol, &b), 0);
            assert_list_equal(&a, &b);
        }
        shr_get_stats(s, &sa);
        shr_get_stats(f, &sb);
        assert_int_equal(sa.nodes, sb.nodes);
        assert_int_equal(sa.counted_nodes, sb.counted_nodes);
        assert_int_equal(sa.pods, sb.pods);
        assert_int_equal(sa.counted_pods, sb.counted_pods);
        assert_int_equal(sa.origins, sb.origins);
        shr_free(f);
    }
}

/* ---- scenarios ------------------------------------------------------------------------------- */

struct step {
    char kind;       /* N P (upserts), n p (deletes), A U O S (checks) */
    const char *a;   /* object spec, name, resource or stats field */
    const char *org; /* O: the consumer (NULL: none) */
    unsigned pct;    /* O: the percentage */
    int64_t v;       /* upserts and deletes: the return; checks: the value or ABSENT */
};

#define N(x)                                                                                       \
    {                                                                                              \
        'N', x, NULL, 0, 0                                                                         \
    }
#define NE(x, e)                                                                                   \
    {                                                                                              \
        'N', x, NULL, 0, e                                                                         \
    }
#define P(x)                                                                                       \
    {                                                                                              \
        'P', x, NULL, 0, 0                                                                         \
    }
#define PE(x, e)                                                                                   \
    {                                                                                              \
        'P', x, NULL, 0, e                                                                         \
    }
#define DN(x)                                                                                      \
    {                                                                                              \
        'n', x, NULL, 0, 0                                                                         \
    }
#define DP(x)                                                                                      \
    {                                                                                              \
        'p', x, NULL, 0, 0                                                                         \
    }
#define A(r, v)                                                                                    \
    {                                                                                              \
        'A', r, NULL, 0, v                                                                         \
    }
#define U(r, v)                                                                                    \
    {                                                                                              \
        'U', r, NULL, 0, v                                                                         \
    }
#define O(org, pct, r, v)                                                                          \
    {                                                                                              \
        'O', r, org, pct, v                                                                        \
    }
#define S(f, v)                                                                                    \
    {                                                                                              \
        'S', f, NULL, 0, v                                                                         \
    }

struct scenario {
    const char *name;
    struct step steps[48];
};

static const struct scenario scenarios[] = {
    {"basic",
     {N("n1 cpu=4 memory=8Gi pods=110"), P("a/p1 node=n1 c:cpu=500m,memory=1Gi"), A("cpu", 4000),
      A("memory", 8 * GI), A("pods", 110), U("cpu", 500), U("memory", GI), U("pods", 1),
      O(NULL, 100, "cpu", 3500), O(NULL, 100, "memory", 7 * GI), O(NULL, 100, "pods", 109),
      S("nodes", 1), S("counted_nodes", 1), S("pods", 1), S("counted_pods", 1), S("origins", 0)}},
    {"init containers larger than containers",
     {N("n1 cpu=4 memory=8Gi pods=110"),
      P("a/p1 node=n1 c:cpu=100m,memory=100Mi c:cpu=200m i:cpu=1,memory=50Mi i:cpu=500m"),
      U("cpu", 1000), U("memory", 100 * MI),
      /* Containers larger than init containers. */
      P("a/p2 node=n1 c:cpu=2 i:cpu=1"), U("cpu", 3000),
      /* Only init containers. */
      P("a/p3 node=n1 i:memory=1Gi"), U("memory", 100 * MI + GI), U("pods", 3),
      /* A request of "pods" is ignored: a pod uses one. */
      P("a/p4 node=n1 c:pods=5"), U("pods", 4), O(NULL, 100, "cpu", 1000),
      O(NULL, 100, "pods", 106)}},
    {"sidecars run beside the containers and under later init containers",
     {N("n1 cpu=16 memory=8Gi pods=110"), P("a/p1 node=n1 s:cpu=500m c:cpu=1"), U("cpu", 1500),
      /* An init container after a sidecar needs its request on top of it: 2 + 0.5. */
      P("a/p2 node=n1 s:cpu=500m i:cpu=2 c:cpu=1"), U("cpu", 4000),
      /* ... not one before it: max(2, 1 + 0.5). */
      P("a/p3 node=n1 i:cpu=2 s:cpu=500m c:cpu=1"), U("cpu", 6000),
      /* Sidecars add up: 1Ki + 2Ki beside 1Ki, overhead on top. */
      P("a/p4 node=n1 s:memory=1Ki s:memory=2Ki c:memory=1Ki o:memory=1"), U("memory", 4097),
      U("pods", 4), O(NULL, 100, "cpu", 10000)}},
    {"pod overhead",
     {N("n1 cpu=4 memory=8Gi pods=110"), P("a/p1 node=n1 c:cpu=250m o:cpu=250m,memory=120Mi"),
      U("cpu", 500), U("memory", 120 * MI), P("a/p2 node=n1 c:cpu=100m i:cpu=1 o:cpu=100m"),
      U("cpu", 1600), O(NULL, 100, "cpu", 2400), O(NULL, 100, "memory", 8 * GI - 120 * MI)}},
    {"terminal pods",
     {N("n1 cpu=4 pods=110"), P("a/p1 node=n1 phase=Succeeded c:cpu=1"),
      P("a/p2 node=n1 phase=Failed c:cpu=1"), P("a/p3 node=n1 phase=Running c:cpu=1"),
      P("a/p4 node=n1 phase=Pending c:cpu=500m"), P("a/p5 node=n1 deleting c:cpu=250m"),
      U("cpu", 1750), U("pods", 3), S("pods", 5), S("counted_pods", 3),
      /* A pod turning Succeeded stops counting. */
      P("a/p3 node=n1 phase=Succeeded c:cpu=1"), U("cpu", 750), U("pods", 2), S("counted_pods", 2),
      O(NULL, 100, "cpu", 3250), DP("a/p3"), DP("a/p1"), S("pods", 3), U("cpu", 750),
      /* A terminal pod naming an unknown node creates nothing. */
      P("a/p6 node=gone phase=Failed c:cpu=1"), S("nodes", 1), S("counted_pods", 2)}},
    {"unscheduled pods",
     {P("a/p1 c:cpu=1"), U("cpu", 1000), U("pods", 1), A("cpu", ABSENT),
      O(NULL, 100, "cpu", ABSENT), S("counted_pods", 1), S("nodes", 0), N("n1 cpu=4"),
      O(NULL, 100, "cpu", 3000),
      /* Requested but never allocatable: not offered. */
      O(NULL, 100, "pods", ABSENT), A("pods", ABSENT), U("pods", 1), P("a/p1 node=n1 c:cpu=1"),
      U("cpu", 1000), N("n1 notready cpu=4"), U("cpu", ABSENT), A("cpu", ABSENT),
      S("counted_pods", 0), S("counted_nodes", 0)}},
    {"cordoned and NotReady nodes",
     {N("n1 cpu=4 pods=110"), N("n2 cordon cpu=8 pods=110"), N("n3 notready cpu=16 pods=110"),
      N("n4 nocond cpu=32 pods=110"), P("a/p1 node=n1 c:cpu=1"), P("a/p2 node=n2 c:cpu=2"),
      P("a/p3 node=n3 c:cpu=3"), A("cpu", 4000), U("cpu", 1000), S("nodes", 4),
      S("counted_nodes", 1), S("counted_pods", 1),
      /* Uncordoned, then Ready: their pods' usage returns. */
      N("n2 cpu=8 pods=110"), A("cpu", 12000), U("cpu", 3000), S("counted_pods", 2),
      N("n3 cpu=16 pods=110"), A("cpu", 28000), U("cpu", 6000), S("counted_pods", 3),
      N("n1 notready cpu=4 pods=110"), A("cpu", 24000), U("cpu", 5000), O(NULL, 100, "cpu", 19000),
      O(NULL, 100, "pods", 218), S("counted_nodes", 2),
      /* Cordoned again: its pod leaves. */
      N("n3 cordon cpu=16 pods=110"), A("cpu", 8000), U("cpu", 2000), S("counted_pods", 1)}},
    {"virtual nodes",
     {N("n1 cpu=4 pods=110"), N("v1 label:liqo.io/type=virtual-node cpu=100 pods=1000"),
      N("v2 label:type=virtual-node cpu=100"), N("n3 label:type=other cpu=2"),
      P("a/p1 node=n1 c:cpu=1"), P("a/p2 node=v1 c:cpu=10"), P("a/p3 node=v2 c:cpu=20"),
      A("cpu", 6000), A("pods", 110), U("cpu", 1000), O(NULL, 100, "cpu", 5000), S("nodes", 4),
      S("counted_nodes", 2), S("counted_pods", 1)}},
    {"pods bound to an unknown node",
     {P("a/p1 node=n9 c:cpu=1,memory=1Gi"),
      P("a/p2 node=n9 origin=c1 c:cpu=2"),
      U("cpu", ABSENT),
      S("nodes", 0),
      S("pods", 2),
      S("counted_pods", 0),
      N("n9 cpu=8 memory=8Gi pods=110"),
      U("cpu", 3000),
      U("memory", GI),
      O("c1", 100, "cpu", 7000),
      O(NULL, 100, "cpu", 5000),
      S("nodes", 1),
      S("counted_pods", 2),
      S("origins", 1),
      DN("n9"),
      U("cpu", ABSENT),
      A("cpu", ABSENT),
      S("nodes", 0),
      S("counted_pods", 0),
      S("pods", 2),
      DP("a/p1"),
      DP("a/p2"),
      S("pods", 0),
      S("origins", 0),
      N("n9 cpu=8"),
      U("cpu", ABSENT),
      A("cpu", 8000),
      S("nodes", 1)}},
    {"GPUs and ephemeral-storage",
     {N("n1 cpu=8 memory=32Gi pods=110 nvidia.com/gpu=4 ephemeral-storage=100Gi "
        "hugepages-2Mi=0"),
      N("n2 cpu=8 nvidia.com/gpu=2"),
      P("a/p1 node=n1 c:nvidia.com/gpu=1,ephemeral-storage=10Gi c:nvidia.com/gpu=2"),
      U("nvidia.com/gpu", 3), U("ephemeral-storage", 10 * GI), A("nvidia.com/gpu", 6),
      A("hugepages-2Mi", 0), O(NULL, 100, "nvidia.com/gpu", 3),
      O(NULL, 100, "ephemeral-storage", 90 * GI), O(NULL, 50, "nvidia.com/gpu", 1),
      O(NULL, 100, "hugepages-2Mi", 0), O(NULL, 100, "cpu", 16000)}},
    {"percentages 37, 0 and 100",
     {N("n1 cpu=4 memory=8Gi pods=110"), P("a/p1 c:cpu=500m,memory=1Gi"), O(NULL, 37, "cpu", 1295),
      O(NULL, 37, "memory", INT64_C(2780991324)), O(NULL, 37, "pods", 40), O(NULL, 0, "cpu", 0),
      O(NULL, 0, "memory", 0), O(NULL, 0, "pods", 0), O(NULL, 100, "cpu", 3500),
      O(NULL, 100, "memory", 7 * GI), O(NULL, 100, "pods", 109),
      O(NULL, 1, "memory", INT64_C(75161927))}},
    {"over-committed cluster",
     {N("n1 cpu=1 memory=1Gi pods=110"), P("a/p1 node=n1 c:cpu=2,memory=512Mi"),
      P("a/p2 c:cpu=500m"), O(NULL, 100, "cpu", 0), O(NULL, 37, "cpu", 0),
      O(NULL, 100, "memory", 512 * MI), O(NULL, 100, "pods", 108), U("cpu", 2500), A("cpu", 1000)}},
    {"per-consumer exclusion",
     {N("n1 cpu=10 pods=110"), P("a/p1 node=n1 origin=c1 c:cpu=2"),
      P("a/p2 node=n1 origin=c2 c:cpu=3"), P("a/p3 origin=c2 c:cpu=1"), P("a/p4 node=n1 c:cpu=1"),
      U("cpu", 7000), U("pods", 4), O(NULL, 100, "cpu", 3000), O(NULL, 100, "pods", 106),
      O("c1", 100, "cpu", 5000), O("c1", 100, "pods", 107), O("c2", 100, "cpu", 7000),
      O("c2", 100, "pods", 108), O("c3", 100, "cpu", 3000), O("c1", 50, "cpu", 2500),
      S("origins", 2),
      /* A consumer's pods on a cordoned node, then the node uncordoned and cordoned again. */
      N("n2 cordon cpu=10 pods=110"), P("a/p5 node=n2 origin=c1 c:cpu=4"),
      O("c1", 100, "cpu", 5000), U("cpu", 7000), N("n2 cpu=10 pods=110"), A("cpu", 20000),
      U("cpu", 11000), O("c1", 100, "cpu", 15000), O("c2", 100, "cpu", 13000),
      O(NULL, 100, "cpu", 9000), N("n2 cordon cpu=10 pods=110"), O("c1", 100, "cpu", 5000),
      /* A pod changing consumer, then one turning Failed. */
      P("a/p1 node=n1 origin=c2 c:cpu=2"), O("c1", 100, "cpu", 3000), O("c2", 100, "cpu", 9000),
      S("origins", 2), P("a/p2 node=n1 origin=c2 phase=Failed c:cpu=3"), U("cpu", 4000),
      O(NULL, 100, "cpu", 6000), O("c2", 100, "cpu", 9000), DP("a/p5"), S("origins", 1)}},
    {"rounding of fractional quantities",
     {N("n1 cpu=4 memory=8Gi nvidia.com/gpu=2 pods=110"),
      P("a/p1 node=n1 c:memory=100m,cpu=1.5,nvidia.com/gpu=0.5 c:memory=100m"), U("memory", 2),
      U("cpu", 1500), U("nvidia.com/gpu", 1), N("n2 cpu=0.5 memory=1.5Ki"), A("cpu", 4500),
      A("memory", 8 * GI + 1536), P("a/p2 node=n2 c:cpu=1n"), U("cpu", 1501),
      O(NULL, 100, "nvidia.com/gpu", 1), O(NULL, 100, "memory", 8 * GI + 1534)}},
    {"updates moving a pod between nodes",
     {N("n1 cpu=4 pods=110"),
      N("n2 cordon cpu=8 pods=110"),
      P("a/p1 node=n1 c:cpu=1"),
      U("cpu", 1000),
      P("a/p1 node=n2 c:cpu=1"),
      U("cpu", ABSENT),
      S("counted_pods", 0),
      S("pods", 1),
      N("n2 cpu=8 pods=110"),
      U("cpu", 1000),
      A("cpu", 12000),
      P("a/p1 node=n9 c:cpu=1"),
      U("cpu", ABSENT),
      S("nodes", 2),
      S("counted_pods", 0),
      P("a/p1 node=n1 c:cpu=2,memory=1Gi"),
      U("cpu", 2000),
      U("memory", GI),
      P("a/p1 c:cpu=1"),
      U("cpu", 1000),
      U("memory", ABSENT),
      P("a/p1 node=n2 origin=c1 c:cpu=3"),
      O("c1", 100, "cpu", 12000),
      O(NULL, 100, "cpu", 9000),
      DN("n2"),
      A("cpu", 4000),
      U("cpu", ABSENT),
      O("c1", 100, "cpu", 4000),
      S("nodes", 1)}},
    {"deletes of unknown objects",
     {DN("nope"), DP("x/y"), N("n1 cpu=1"), DP("a/p1"), P("a/p1 node=n1 c:cpu=1"), DP("a/p1"),
      DP("a/p1"), U("cpu", ABSENT), S("pods", 0), DN("n1"), DN("n1"), S("nodes", 0),
      A("cpu", ABSENT)}},
    {"malformed quantities ignored and counted",
     {N("n1 cpu=abc memory=8Gi pods=110"), A("cpu", ABSENT), A("memory", 8 * GI),
      S("bad_quantities", 1), P("a/p1 node=n1 c:cpu=1x,memory=1Gi c:memory=-1Gi,nvidia.com/gpu=#2"),
      U("memory", GI), U("cpu", ABSENT), U("nvidia.com/gpu", ABSENT), U("pods", 1),
      S("bad_quantities", 4), N("n2 memory=100E cpu=1"), S("bad_quantities", 5), A("cpu", 1000),
      A("memory", 8 * GI), NE("- cpu=1", -EINVAL), PE("a/ c:cpu=1", -EINVAL), S("nodes", 2),
      S("pods", 1)}},
    {"updates that change nothing the computation reads",
     {N("n1 cpu=4 pods=110"), P("a/p1 node=n1 origin=c1 c:cpu=1"),
      /* Labels, phase Pending, a zero request, an unread spec member: the same contribution. */
      P("a/p1 node=n1 origin=c1 label:x=y phase=Pending spec:restartPolicy=Never c:cpu=1 c:cpu=0"),
      U("cpu", 1000), U("pods", 1), S("pods", 1), S("counted_pods", 1), S("origins", 1),
      O("c1", 100, "cpu", 4000), O(NULL, 100, "cpu", 3000),
      /* Only the consumer changes. */
      P("a/p1 node=n1 origin=c2 c:cpu=1"), O("c1", 100, "cpu", 3000), O("c2", 100, "cpu", 4000),
      S("origins", 1),
      /* Terminal, then terminal with other requests: nothing counts either time. */
      P("a/p1 node=n1 phase=Failed c:cpu=1"), P("a/p1 node=n1 phase=Succeeded c:cpu=2"),
      U("cpu", ABSENT), S("pods", 1), S("counted_pods", 0), S("origins", 0),
      /* Unscheduled, with an unread spec member and overhead but no init containers. */
      P("a/p1 spec:restartPolicy=Always c:cpu=2 o:cpu=500m"), U("cpu", 2500),
      P("a/p1 spec:restartPolicy=Never c:cpu=2 o:cpu=500m"), U("cpu", 2500), U("pods", 1),
      S("counted_pods", 1), DP("a/p1"), S("pods", 0), U("pods", ABSENT)}},
    {"overflow saturates",
     {N("n1 memory=8E pods=110"), N("n2 memory=8E"), A("memory", INT64_MAX),
      P("a/p1 node=n1 c:memory=8E c:memory=8E"), P("a/p2 node=n1 c:memory=8E"),
      U("memory", INT64_MAX), O(NULL, 100, "memory", 0), DP("a/p1"), DP("a/p2"),
      O(NULL, 100, "memory", INT64_MAX), O(NULL, 50, "memory", INT64_C(8000000000000000000))}},
};

static void check_step(struct shr_state *s, const struct step *st, const char *scn, size_t i)
{
    struct shr_list l;
    struct shr_stats stats;
    bool found;
    int64_t got;

    switch (st->kind) {
    case 'A':
    case 'U':
        shr_totals(s, st->kind == 'A' ? &l : NULL, st->kind == 'U' ? &l : NULL);
        got = shr_list_get(&l, st->a, &found);
        break;
    case 'O': {
        struct shr_policy pol = {.percent = st->pct};
        assert_int_equal(shr_offer(s, st->org, &pol, &l), 0);
        got = shr_list_get(&l, st->a, &found);
        break;
    }
    default:
        shr_get_stats(s, &stats);
        found = true;
        if (strcmp(st->a, "nodes") == 0)
            got = (int64_t)stats.nodes;
        else if (strcmp(st->a, "counted_nodes") == 0)
            got = (int64_t)stats.counted_nodes;
        else if (strcmp(st->a, "pods") == 0)
            got = (int64_t)stats.pods;
        else if (strcmp(st->a, "counted_pods") == 0)
            got = (int64_t)stats.counted_pods;
        else if (strcmp(st->a, "origins") == 0)
            got = (int64_t)stats.origins;
        else if (strcmp(st->a, "bad_quantities") == 0)
            got = (int64_t)stats.bad_quantities;
        else
            fail_msg("unknown stat %s", st->a);
        break;
    }
    if (!found)
        got = ABSENT;
    if (got != st->v)
        fail_msg("%s, step %zu (%c %s %s %u%%): got %lld, expected %lld", scn, i, st->kind, st->a,
                 st->org ? st->org : "-", st->pct, (long long)got, (long long)st->v);
}

static void test_scenarios(void **state)
{
    (void)state;
    for (size_t k = 0; k < ARRAY_SIZE(scenarios); k++) {
        const struct scenario *sc = &scenarios[k];
        struct shr_state *s;
        struct world w;

        world_init(&w);
        assert_int_equal(shr_new(&s), 0);
        for (size_t i = 0; i < ARRAY_SIZE(sc->steps) && sc->steps[i].kind; i++) {
            const struct step *st = &sc->steps[i];
            json_t *o = NULL;
            int r;

            switch (st->kind) {
            case 'N':
                o = mk_node(st->a);
                r = feed_node(s, &w, o);
                break;
            case 'P':
                o = mk_pod(st->a);
                r = feed_pod(s, &w, o);
                break;
            case 'n':
                r = del_node(s, &w, st->a);
                break;
            case 'p':
                r = del_pod(s, &w, st->a);
                break;
            default:
                check_step(s, st, sc->name, i);
                continue;
            }
            json_decref(o);
            if (r != st->v)
                fail_msg("%s, step %zu (%c %s): returned %d", sc->name, i, st->kind, st->a, r);
        }
        assert_consistent(s, &w);
        shr_free(s);
        world_done(&w);
    }
}

/* ---- single features ------------------------------------------------------------------------- */

static void test_fixed_policy(void **state)
{
    struct shr_list fixed = {0}, got;
    struct shr_policy pol = {.percent = 100, .fixed = &fixed};
    struct shr_state *s;
    json_t *n = mk_node("n1 cpu=4 memory=8Gi");

    (void)state;
    assert_int_equal(shr_new(&s), 0);
    assert_int_equal(shr_node_upsert(s, n), 0);
    snprintf(fixed.items[0].name, SHR_NAME_MAX, "memory");
    fixed.items[0].value = 5 * GI;
    snprintf(fixed.items[1].name, SHR_NAME_MAX, "cpu");
    fixed.items[1].value = 7000;
    snprintf(fixed.items[2].name, SHR_NAME_MAX, "example.com/fpga");
    fixed.items[2].value = 2;
    fixed.n = 3;
    /* Independent of free capacity (more than allocatable), sorted, nothing else. */
    assert_int_equal(shr_offer(s, "c1", &pol, &got), 0);
    assert_int_equal(got.n, 3);
    assert_string_equal(got.items[0].name, "cpu");
    assert_int_equal(got.items[0].value, 7000);
    assert_string_equal(got.items[1].name, "example.com/fpga");
    assert_int_equal(got.items[1].value, 2);
    assert_string_equal(got.items[2].name, "memory");
    assert_int_equal(got.items[2].value, 5 * GI);
    fixed.n = 0;
    assert_int_equal(shr_offer(s, NULL, &pol, &got), 0);
    assert_int_equal(got.n, 0);
    /* Invalid arguments. */
    pol.fixed = NULL;
    pol.percent = 101;
    assert_int_equal(shr_offer(s, NULL, &pol, &got), -EINVAL);
    assert_int_equal(shr_offer(s, NULL, NULL, &got), -EINVAL);
    fixed.n = SHR_MAX_RESOURCES + 1;
    pol.fixed = &fixed;
    assert_int_equal(shr_offer(s, NULL, &pol, &got), -EINVAL);
    json_decref(n);
    shr_free(s);
}

static void test_invalid(void **state)
{
    struct shr_state *s;
    json_t *o;
    char long_name[300];

    (void)state;
    assert_int_equal(shr_new(NULL), -EINVAL);
    assert_null(shr_free(NULL));
    assert_int_equal(shr_new(&s), 0);
    assert_int_equal(shr_node_upsert(s, NULL), -EINVAL);
    assert_int_equal(shr_pod_upsert(s, NULL), -EINVAL);
    assert_int_equal(shr_node_delete(s, NULL), -EINVAL);
    assert_int_equal(shr_pod_delete(s, "a", NULL), -EINVAL);
    assert_int_equal(shr_pod_delete(s, NULL, "a"), -EINVAL);
    o = json_string("x");
    assert_int_equal(shr_node_upsert(s, o), -EINVAL);
    assert_int_equal(shr_pod_upsert(s, o), -EINVAL);
    json_decref(o);
    /* A pod without namespace. */
    o = json_pack("{s:{s:s}}", "metadata", "name", "p");
    assert_int_equal(shr_pod_upsert(s, o), -EINVAL);
    json_decref(o);
    /* Names longer than Kubernetes allows. */
    memset(long_name, 'a', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    o = json_pack("{s:{s:s}}", "metadata", "name", long_name);
    assert_int_equal(shr_node_upsert(s, o), -EINVAL);
    json_decref(o);
    assert_int_equal(shr_node_delete(s, long_name), -EINVAL);
    assert_int_equal(shr_pod_delete(s, "a", long_name), -EINVAL);
    shr_free(s);
}

/* Resource names: 63 names beyond "pods" fit; further ones are dropped; names no longer used are
 * recycled; an overlong name is dropped. */
static void test_resource_limit(void **state)
{
    struct shr_state *s;
    struct shr_stats st;
    struct shr_list avail;
    json_t *n = mk_node("n1 cpu=1"), *alloc;
    char name[SHR_NAME_MAX + 8];
    bool found;

    (void)state;
    assert_int_equal(shr_new(&s), 0);
    alloc = json_object_get(json_object_get(n, "status"), "allocatable");
    for (int i = 0; i < 70; i++) {
        snprintf(name, sizeof(name), "example.com/r%02d", i);
        json_object_set_new(alloc, name, json_string("1"));
    }
    assert_int_equal(shr_node_upsert(s, n), 0);
    shr_get_stats(s, &st);
    assert_int_equal(st.resources, SHR_MAX_RESOURCES);
    assert_int_equal(st.dropped_resources, 71 - 63); /* 71 names for 63 free slots */
    shr_totals(s, &avail, NULL);
    assert_int_equal(avail.n, 63);
    /* Sorted by name. */
    for (size_t i = 1; i < avail.n; i++)
        assert_true(strcmp(avail.items[i - 1].name, avail.items[i].name) < 0);
    json_decref(n);

    /* A pod requesting a new name while the table is full of used names: dropped. */
    n = mk_pod("a/p1 c:example.com/new=1");
    assert_int_equal(shr_pod_upsert(s, n), 0);
    shr_get_stats(s, &st);
    assert_int_equal(st.dropped_resources, 71 - 63 + 1);
    json_decref(n);

    /* Once the node is gone, its names are recycled for new ones. */
    assert_int_equal(shr_node_delete(s, "n1"), 0);
    n = mk_node("n2 example.com/z0=3");
    assert_int_equal(shr_node_upsert(s, n), 0);
    json_decref(n);
    shr_totals(s, &avail, NULL);
    assert_int_equal(avail.n, 1);
    assert_int_equal(shr_list_get(&avail, "example.com/z0", &found), 3);
    assert_true(found);
    shr_get_stats(s, &st);
    assert_int_equal(st.resources, 2); /* pods and example.com/z0 */

    /* An overlong name. */
    memset(name, 'x', SHR_NAME_MAX);
    name[SHR_NAME_MAX] = '\0';
    n = mk_node("n3 cpu=1");
    json_object_set_new(json_object_get(json_object_get(n, "status"), "allocatable"), name,
                        json_string("1"));
    assert_int_equal(shr_node_upsert(s, n), 0);
    json_decref(n);
    shr_get_stats(s, &st);
    assert_int_equal(st.dropped_resources, 71 - 63 + 2);
    shr_totals(s, &avail, NULL);
    assert_int_equal(shr_list_get(&avail, "cpu", NULL), 1000);
    shr_free(s);
}

static int64_t offer_of(struct shr_state *s, const char *origin, const char *res)
{
    struct shr_policy pol = {.percent = 100};
    struct shr_list l;

    assert_int_equal(shr_offer(s, origin, &pol, &l), 0);
    return shr_list_get(&l, res, NULL);
}

/* Origins: SHR_MAX_ORIGINS fit, a further one counts as an ordinary pod; origins without pods are
 * recycled; an overlong origin counts as an ordinary pod. */
static void test_origin_limit(void **state)
{
    struct shr_state *s;
    struct shr_stats st;
    struct world w;
    char spec[128];
    json_t *o;

    (void)state;
    world_init(&w);
    assert_int_equal(shr_new(&s), 0);
    o = mk_node("n1 cpu=2000 pods=2000");
    assert_int_equal(feed_node(s, &w, o), 0);
    json_decref(o);
    for (int i = 0; i <= SHR_MAX_ORIGINS; i++) {
        snprintf(spec, sizeof(spec), "a/p%04d origin=o%04d c:cpu=1", i, i);
        o = mk_pod(spec);
        assert_int_equal(feed_pod(s, &w, o), 0);
        json_decref(o);
    }
    shr_get_stats(s, &st);
    assert_int_equal(st.origins, SHR_MAX_ORIGINS);
    assert_int_equal(st.dropped_origins, 1);
    assert_int_equal(offer_of(s, "o0000", "cpu"), 2000000 - (1025000 - 1000));
    assert_int_equal(offer_of(s, "o1024", "cpu"), 2000000 - 1025000);
    assert_int_equal(offer_of(s, NULL, "cpu"), 2000000 - 1025000);

    /* o0000 loses its pod; a new origin takes its place. */
    assert_int_equal(del_pod(s, &w, "a/p0000"), 0);
    o = mk_pod("a/q origin=fresh c:cpu=1");
    assert_int_equal(feed_pod(s, &w, o), 0);
    json_decref(o);
    shr_get_stats(s, &st);
    assert_int_equal(st.origins, SHR_MAX_ORIGINS);
    assert_int_equal(st.dropped_origins, 1);
    assert_int_equal(offer_of(s, "fresh", "cpu"), 2000000 - (1025000 - 1000));
    assert_int_equal(offer_of(s, "o0000", "cpu"), 2000000 - 1025000);

    /* An origin longer than a label value. */
    o = mk_pod("a/r origin=x123456789x123456789x123456789x123456789x123456789x1234567890123 "
               "c:cpu=1");
    assert_int_equal(feed_pod(s, &w, o), 0);
    json_decref(o);
    shr_get_stats(s, &st);
    assert_int_equal(st.dropped_origins, 2);
    assert_int_equal(offer_of(s, NULL, "cpu"), 2000000 - 1026000);
    shr_free(s);
    world_done(&w);
}

static void test_label_shareable(void **state)
{
    static const struct {
        const char *key;
        bool ok;
    } cases[] = {
        {"kubernetes.io/hostname", false},
        {"node.kubernetes.io/x", false},
        {"node.kubernetes.io/instance-type", false},
        {"topology.kubernetes.io/zone", false},
        {"k8s.io/x", false},
        {"x.k8s.io/y", false},
        {"liqo.io/type", false},
        {"storage.liqo.io/x", false},
        {"cliqo.io/x", false},
        {"a.cliqo.io/x", false},
        {"example.com/gpu", true},
        {"gpu", true},
        {"team", true},
        {"my-kubernetes.io/x", true}, /* not a subdomain of kubernetes.io */
        {"k8s.io.example.com/x", true},
        {"Team_A.b-c", true},
        {"", false},
        {"/x", false},
        {"example.com/", false},
        {"Example.com/x", false},
        {"-a", false},
        {"a-", false},
        {"a b", false},
        {"a/b/c", false},
        {"example..com/x", false},
        {"x123456789x123456789x123456789x123456789x123456789x123456789x12", true}, /* 63 */
        {"x123456789x123456789x123456789x123456789x123456789x123456789x123", false},
        {"example.com/x123456789x123456789x123456789x123456789x123456789x123456789x12", true},
        {NULL, false},
    };

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        if (shr_label_shareable(cases[i].key) != cases[i].ok)
            fail_msg("shr_label_shareable(\"%s\") != %d", cases[i].key ? cases[i].key : "(null)",
                     cases[i].ok);
    }
}

static void mk_list(struct shr_list *l, const char *spec)
{
    char buf[256], *p = buf, *tok;

    memset(l, 0, sizeof(*l));
    snprintf(buf, sizeof(buf), "%s", spec);
    while ((tok = strsep(&p, " ")) != NULL) {
        char *eq = strchr(tok, '=');
        if (!eq)
            continue;
        *eq = '\0';
        snprintf(l->items[l->n].name, SHR_NAME_MAX, "%s", tok);
        l->items[l->n].value = (int64_t)strtoll(eq + 1, NULL, 10);
        l->n++;
    }
}

static void test_list_moved(void **state)
{
    static const struct {
        const char *before, *now;
        unsigned threshold;
        bool moved;
    } cases[] = {
        {"cpu=1000 memory=100", "cpu=1000 memory=100", 0, false},
        {"cpu=1000 memory=100", "memory=100 cpu=1000", 0, false}, /* order does not matter */
        {"cpu=1000", "cpu=1001", 0, true},
        {"cpu=1000", "cpu=1100", 10, false}, /* exactly 10%: not more than */
        {"cpu=1000", "cpu=1101", 10, true},
        {"cpu=1000", "cpu=900", 10, false},
        {"cpu=1000", "cpu=899", 10, true},
        {"cpu=0", "cpu=0", 10, false},
        {"cpu=0", "cpu=1", 50, true},             /* from 0 */
        {"cpu=1", "cpu=0", 200, true},            /* to 0 */
        {"cpu=1000", "cpu=1000 gpu=0", 50, true}, /* appears */
        {"cpu=1000 gpu=1", "cpu=1000", 50, true}, /* disappears */
        {"", "", 0, false},
        {"pods=110", "pods=111", 1, false},
        {"pods=100", "pods=102", 1, true},
        {"memory=9223372036854775807", "memory=1", 99, true},
        {"memory=9223372036854775807", "memory=9223372036854775806", 0, true},
        {"memory=9223372036854775807", "memory=9223372036854775806", 1, false},
    };
    struct shr_list a, b;

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        mk_list(&a, cases[i].before);
        mk_list(&b, cases[i].now);
        if (shr_list_moved(&a, &b, cases[i].threshold) != cases[i].moved)
            fail_msg("case %zu: \"%s\" -> \"%s\" at %u%%", i, cases[i].before, cases[i].now,
                     cases[i].threshold);
    }
    mk_list(&a, "cpu=1");
    assert_true(shr_list_moved(NULL, &a, 0));
    assert_false(shr_list_moved(NULL, NULL, 0));
}

static void test_quantity_text(void **state)
{
    static const struct {
        const char *name;
        int64_t value;
        const char *text;
    } fmt[] = {
        {"cpu", 1500, "1500m"},
        {"cpu", 2000, "2"},
        {"cpu", 0, "0"},
        {"cpu", 1, "1m"},
        {"cpu", 64000000, "64k"},
        {"memory", 1536 * MI, "1536Mi"},
        {"memory", 8 * GI, "8Gi"},
        {"memory", 1000, "1k"}, /* below 1024: decimal, as upstream */
        {"memory", 1025, "1025"},
        {"memory", INT64_MAX, "9223372036854775807"},
        {"ephemeral-storage", 100 * GI, "100Gi"},
        {"hugepages-2Mi", 4 * MI, "4Mi"},
        {"pods", 110, "110"},
        {"pods", 1000, "1000"},
        {"nvidia.com/gpu", 3, "3"},
    };
    static const struct {
        const char *name, *text;
        int r;
        int64_t value;
    } parse[] = {
        {"cpu", "1.5", 0, 1500},
        {"cpu", "100m", 0, 100},
        {"cpu", "1n", 0, 1},
        {"cpu", "2", 0, 2000},
        {"memory", "100m", 0, 1},
        {"memory", "1.5Gi", 0, 1536 * MI},
        {"memory", "1e3", 0, 1000},
        {"nvidia.com/gpu", "0.5", 0, 1},
        {"pods", "110", 0, 110},
        {"memory", "abc", -EINVAL, 0},
        {"memory", "", -EINVAL, 0},
        {"memory", "-1", -ERANGE, 0},
        {"memory", "100E", -ERANGE, 0},
        {"cpu", "9223372036854775807", -ERANGE, 0},
    };
    char buf[64];
    int64_t v;

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(fmt); i++) {
        int n = shr_format_quantity(fmt[i].name, fmt[i].value, buf, sizeof(buf));

        if (n < 0 || strcmp(buf, fmt[i].text) != 0)
            fail_msg("format %s %lld: %d \"%s\"", fmt[i].name, (long long)fmt[i].value, n, buf);
        assert_int_equal(n, strlen(fmt[i].text));
        /* Round trip. */
        assert_int_equal(shr_parse_quantity(fmt[i].name, buf, &v), 0);
        assert_true(v == fmt[i].value);
    }
    for (size_t i = 0; i < ARRAY_SIZE(parse); i++) {
        int64_t got = -7;
        int r = shr_parse_quantity(parse[i].name, parse[i].text, &got);

        if (r != parse[i].r || (r == 0 && got != parse[i].value) || (r != 0 && got != -7))
            fail_msg("parse %s \"%s\": %d %lld", parse[i].name, parse[i].text, r, (long long)got);
    }
    assert_int_equal(shr_format_quantity("cpu", 1500, buf, 5), -ENOSPC);
    assert_int_equal(shr_format_quantity("pods", 110, buf, 3), -ENOSPC);
    assert_int_equal(shr_format_quantity("pods", 110, buf, 4), 3);
    assert_int_equal(shr_format_quantity(NULL, 1, buf, sizeof(buf)), -EINVAL);
    assert_int_equal(shr_parse_quantity("cpu", NULL, &v), -EINVAL);
}

/* The quantity fast path (plain digits with a common suffix) against the general path: for
 * generated texts of every shape, shr_parse_quantity agrees with kq_parse followed by kq_value or
 * kq_milli_value (a negative value being -ERANGE). */
static void test_quantity_fast_path(void **state)
{
    static const char *const suffixes[] = {"",   "m",  "k",  "M",  "G",  "T",  "P",  "E",
                                           "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "e3", "n",
                                           "u",  "i",  "Kb", "x",  "mi", "E2", "."};
    uint64_t rng = 12345;
    char text[64];

    (void)state;
    for (int iter = 0; iter < 200000; iter++) {
        size_t len = 0;
        unsigned ndig, nfrac;

        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
        ndig = (unsigned)(rng >> 59) % 22;
        nfrac = (rng >> 40) % 5 == 0 ? (unsigned)(rng >> 20) % 4 : 0;
        if ((rng >> 30) % 50 == 0)
            text[len++] = (rng >> 31) % 2 ? '-' : '+';
        for (unsigned i = 0; i < ndig; i++) {
            rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
            /* Mostly small numbers, sometimes long ones near the int64 limits. */
            text[len++] =
                (char)('0' + (i == 0 && ndig > 1 && (rng >> 60) % 2 ? 0 : (rng >> 33) % 10));
        }
        if (nfrac) {
            text[len++] = '.';
            for (unsigned i = 0; i < nfrac - 1; i++)
                text[len++] = (char)('0' + (rng >> (7 + i)) % 10);
        }
        snprintf(text + len, sizeof(text) - len, "%s",
                 suffixes[(rng >> 13) % (sizeof(suffixes) / sizeof(suffixes[0]))]);
        for (int cpu = 0; cpu < 2; cpu++) {
            struct kq q;
            int64_t want = 0, got = -7;
            int wr = kq_parse(text, &q), gr;

            if (wr == 0)
                wr = cpu ? kq_milli_value(&q, &want) : kq_value(&q, &want);
            if (wr == 0 && want < 0)
                wr = -ERANGE;
            gr = shr_parse_quantity(cpu ? "cpu" : "memory", text, &got);
            if (gr != wr || (gr == 0 && got != want))
                fail_msg("\"%s\" (%s): %d %lld, expected %d %lld", text, cpu ? "cpu" : "memory", gr,
                         (long long)got, wr, (long long)want);
        }
    }
}

/* ---- many objects ---------------------------------------------------------------------------- */

static uint64_t bulk_rng = 42;

static unsigned bulk_pick(unsigned n)
{
    bulk_rng ^= bulk_rng >> 12;
    bulk_rng ^= bulk_rng << 25;
    bulk_rng ^= bulk_rng >> 27;
    return (unsigned)((bulk_rng * 0x2545F4914F6CDD1DULL) >> 33) % n;
}

/* The key of pod number i: names of many lengths, some 200 bytes long. */
static void bulk_key(unsigned i, char *buf, size_t size)
{
    if (i % 97 == 0)
        snprintf(buf, size, "ns-%u/%0200u", i % 7, i);
    else
        snprintf(buf, size, "ns-%u/p%0*u", i % 7, (int)(i % 31), i);
}

/* The spec of pod number i, with random placement, requests, extended resources and phase (so
 * records of many sizes). Some pods have long names and a dozen resources (records too large for
 * the state's record blocks). */
static void bulk_pod(unsigned i, char *buf, size_t size)
{
    static const char *const phases[] = {"Running", "Running",   "Running",
                                         "Pending", "Succeeded", "Failed"};
    char key[256], node[32] = "", origin[32] = "", extra[256] = "";
    unsigned n = 0;

    bulk_key(i, key, sizeof(key));
    if (bulk_pick(10) != 0)
        snprintf(node, sizeof(node), "node=n%u", bulk_pick(24)); /* n20..n23: unknown */
    if (bulk_pick(5) == 0)
        snprintf(origin, sizeof(origin), "origin=c%u", 1 + bulk_pick(3));
    for (unsigned k = 0, m = i % 13 == 0 ? 10 : bulk_pick(4); k < m; k++)
        n += (unsigned)snprintf(extra + n, sizeof(extra) - n, ",example.com/r%u=%u", k, k + 1);
    snprintf(buf, size, "%s %s %s phase=%s c:cpu=%um,memory=%uMi%s", key, node, origin,
             phases[bulk_pick(6)], 10 * (1 + bulk_pick(100)), 1 + bulk_pick(512), extra);
}

static void bulk_round(struct shr_state *s, struct world *w, unsigned npods, unsigned steps)
{
    char spec[1024];

    for (unsigned k = 0; k < steps; k++) {
        unsigned i = bulk_pick(npods);

        if (bulk_pick(10) < 2) {
            bulk_key(i, spec, sizeof(spec));
            assert_int_equal(del_pod(s, w, spec), 0);
        } else {
            json_t *o;

            bulk_pod(i, spec, sizeof(spec));
            o = mk_pod(spec);
            assert_int_equal(feed_pod(s, w, o), 0);
            json_decref(o);
        }
    }
}

/* Thousands of pods: past the sizes from which the hash tables and the pod records' blocks are
 * mapped rather than allocated, with records of many sizes created, replaced and freed. The state
 * equals fresh ones; emptied, it holds what an empty state holds plus its origins; fed again, it
 * equals fresh ones again. */
static void test_bulk(void **state)
{
    struct shr_state *s, *e;
    struct shr_stats st, st0;
    struct world w;
    char spec[128];
    const char *k;
    json_t *v;
    void *tmp;

    (void)state;
    world_init(&w);
    assert_int_equal(shr_new(&s), 0);
    for (int i = 0; i < 20; i++) {
        json_t *o;

        snprintf(spec, sizeof(spec), "n%d %scpu=16 memory=64Gi pods=500%s", i,
                 i % 5 == 4 ? "cordon " : "", i % 3 == 0 ? " nvidia.com/gpu=4" : "");
        o = mk_node(spec);
        assert_int_equal(feed_node(s, &w, o), 0);
        json_decref(o);
    }
    bulk_round(s, &w, 9000, 16000);
    shr_get_stats(s, &st);
    assert_true(st.pods > 5000);
    assert_consistent(s, &w);

    json_object_foreach_safe(w.pods, tmp, k, v)
    {
        assert_int_equal(del_pod(s, &w, k), 0);
    }
    json_object_foreach_safe(w.nodes, tmp, k, v)
    {
        assert_int_equal(del_node(s, &w, k), 0);
    }
    shr_get_stats(s, &st);
    assert_int_equal(shr_new(&e), 0);
    shr_get_stats(e, &st0);
    shr_free(e);
    assert_int_equal(st.pods, 0);
    assert_int_equal(st.nodes, 0);
    assert_true(st.memory_bytes <= st0.memory_bytes + 3 * ORIGIN_BYTES + KEPT_BYTES);

    bulk_round(s, &w, 300, 600);
    assert_consistent(s, &w);
    shr_free(s);
    world_done(&w);
}

/* ---- allocation failures --------------------------------------------------------------------- */

static const char *const fail_base[] = {
    "N n1 cpu=8 memory=16Gi pods=110", "N n2 cpu=8 memory=16Gi pods=110 nvidia.com/gpu=2",
    "P a/b0 node=n1 c:cpu=100m",       "P a/b1 node=n1 origin=c1 c:cpu=100m",
    "P a/b2 node=n2 c:cpu=100m",       "P a/b3 c:cpu=100m",
    "P a/b4 node=n1 c:cpu=100m",       "P a/b5 node=n1 c:cpu=100m",
    "P a/b6 node=n1 c:cpu=100m",       "P a/b7 node=n1 c:cpu=100m",
    "P a/b8 node=n1 c:cpu=100m",       "P a/b9 node=n1 c:cpu=100m",
};

/* Every kind of change: new objects, new origins on new and known nodes, unknown nodes, vector
 * growth, record resizing, table growth, flips and deletes. */
static const char *const fail_ops[] = {
    "N n3 cpu=4 memory=8Gi pods=110",
    "P a/p1 node=n3 origin=c1 c:cpu=1,memory=1Gi",
    "P a/p2 node=n9 origin=c2 c:cpu=2 i:example.com/x=1",
    "P a/p3 origin=c3 c:nvidia.com/gpu=1",
    "P a/p1 node=n1 origin=c2 c:cpu=1,memory=1Gi,nvidia.com/gpu=1,ephemeral-storage=1Gi",
    "P a/p1 node=n2 origin=c2 c:cpu=1",
    "N n9 cpu=2 example.com/x=4",
    "N n2 cordon cpu=8 memory=16Gi pods=110 nvidia.com/gpu=2",
    "P a/p4 node=n2 origin=c3 c:cpu=1 o:memory=10Mi",
    "P a/p5 node=n4 c:cpu=1",
    "P a/p6 node=n4 c:cpu=1",
    "P a/p7 node=n4 c:cpu=1",
    "P a/p8 node=n5 origin=c1 c:cpu=1",
    "P a/p2 node=n9 origin=c2 phase=Succeeded c:cpu=2",
    "N n4 cpu=4 example.com/y=1",
    "p a/b1",
    "n n1",
    "N n2 cpu=8 memory=16Gi pods=110 nvidia.com/gpu=2",
    "P a/b3 node=n3 origin=c1 c:cpu=1 c:memory=1 c:example.com/x=1",
};

static int run_op(struct shr_state *s, struct world *w, const char *op)
{
    json_t *o;
    int r;

    switch (op[0]) {
    case 'N':
        o = mk_node(op + 2);
        r = feed_node(s, w, o);
        json_decref(o);
        return r;
    case 'P':
        o = mk_pod(op + 2);
        r = feed_pod(s, w, o);
        json_decref(o);
        return r;
    case 'n':
        return del_node(s, w, op + 2);
    default:
        return del_pod(s, w, op + 2);
    }
}

/* The n-th allocation fails, for every n until none does: each call fails with -ENOMEM leaving
 * every observable unchanged, or succeeds; the final state equals a fresh one fed what succeeded;
 * nothing leaks (ASan/LSan). */
static void test_alloc_failures(void **state)
{
    bool any_failed = true;

    (void)state;
    for (long fail = 0; any_failed; fail++) {
        struct shr_state *s;
        struct world w;
        struct snapshot before, after;

        assert_true(fail < 10000);
        any_failed = false;
        world_init(&w);
        assert_int_equal(shr_new(&s), 0);
        for (size_t i = 0; i < ARRAY_SIZE(fail_base); i++)
            assert_int_equal(run_op(s, &w, fail_base[i]), 0);
        assert_int_equal(shr_flush(s), 0); /* the stage's failures: test_stage_alloc_failures */
        xalloc_fail_after(fail);
        for (size_t i = 0; i < ARRAY_SIZE(fail_ops); i++) {
            int r;

            snap(s, snap_origins, 4, &before);
            r = run_op(s, &w, fail_ops[i]);
            if (r == -ENOMEM) {
                any_failed = true;
                snap(s, snap_origins, 4, &after);
                assert_snap_equal(&before, &after);
            } else {
                assert_int_equal(r, 0);
            }
        }
        xalloc_fail_after(-1);
        assert_consistent(s, &w);
        /* Emptied, the state accounts for its tables and origin records only (a failed call that
         * freed something it had not accounted, or the reverse, would show here). */
        {
            struct shr_state *e;
            struct shr_stats st, st0;
            const char *k;
            json_t *v;
            void *tmp;

            json_object_foreach_safe(w.pods, tmp, k, v)
            {
                assert_int_equal(del_pod(s, &w, k), 0);
            }
            json_object_foreach_safe(w.nodes, tmp, k, v)
            {
                assert_int_equal(del_node(s, &w, k), 0);
            }
            shr_get_stats(s, &st);
            assert_int_equal(shr_new(&e), 0);
            shr_get_stats(e, &st0);
            shr_free(e);
            assert_int_equal(st.pods, 0);
            assert_int_equal(st.nodes, 0);
            assert_true(st.memory_bytes >= st0.memory_bytes);
            assert_true(st.memory_bytes <= st0.memory_bytes + 4096 + 3 * ORIGIN_BYTES);
        }
        shr_free(s);
        world_done(&w);
    }
    /* shr_new itself. */
    {
        struct shr_state *s = (struct shr_state *)&any_failed;

        xalloc_fail_after(0);
        assert_int_equal(shr_new(&s), -ENOMEM);
        xalloc_fail_after(-1);
        assert_ptr_equal(s, (struct shr_state *)&any_failed);
    }
}

/* ---- the stage (shr_flush) --------------------------------------------------------------------
 */

/* One upsert or node delete ("N spec", "P spec", "n name") on s; pod deletes are left out (a pod
 * delete flushes). Returns what the call returned. */
static int stage_op(struct shr_state *s, char kind, const char *a)
{
    char op[512];

    snprintf(op, sizeof(op), "%c %s", kind, a);
    return run_op(s, NULL, op);
}

static void stage_compare(struct shr_state *staged, struct shr_state *direct)
{
    struct snapshot a, b;

    snap(staged, snap_origins, 4, &a);
    snap(direct, snap_origins, 4, &b);
    assert_snap_equal(&a, &b);
}

/* The allocation failures' base and operations, pod deletes left out, on both states. */
static void fail_ops_both(struct shr_state *staged, struct shr_state *direct)
{
    for (size_t i = 0; i < ARRAY_SIZE(fail_base) + ARRAY_SIZE(fail_ops); i++) {
        const char *op =
            i < ARRAY_SIZE(fail_base) ? fail_base[i] : fail_ops[i - ARRAY_SIZE(fail_base)];

        if (op[0] == 'p')
            continue;
        assert_int_equal(run_op(staged, NULL, op), 0);
        assert_int_equal(run_op(direct, NULL, op), 0);
    }
}

/* The same upserts and node deletes, staged then flushed, leave what they leave applied one by
 * one (a state flushed at once never stages): for every scenario's steps and for the operations of
 * the allocation failures, with their returns. */
static void test_stage_equivalence(void **state)
{
    (void)state;
    for (size_t k = 0; k <= ARRAY_SIZE(scenarios); k++) {
        struct shr_state *staged, *direct;

        assert_int_equal(shr_new(&staged), 0);
        assert_int_equal(shr_new(&direct), 0);
        assert_int_equal(shr_flush(direct), 0);
        if (k < ARRAY_SIZE(scenarios)) {
            const struct scenario *sc = &scenarios[k];

            for (size_t i = 0; i < ARRAY_SIZE(sc->steps) && sc->steps[i].kind; i++) {
                const struct step *st = &sc->steps[i];

                if (st->kind != 'N' && st->kind != 'P' && st->kind != 'n')
                    continue;
                assert_int_equal(stage_op(staged, st->kind, st->a),
                                 stage_op(direct, st->kind, st->a));
            }
        } else {
            fail_ops_both(staged, direct);
        }
        stage_compare(staged, direct);
        shr_free(staged);
        shr_free(direct);
    }
}

/* shr_flush_some: the stage applied in slices (a budget of 1 ns stops after every 256 pods) leaves
 * what one shr_flush leaves, pods staged between two slices included (after those staged before
 * them); staging ends with the last slice, and a state that does not stage answers 1 at once. */
static void test_stage_in_slices(void **state)
{
    struct shr_state *sliced, *whole;
    char op[128];
    int r, calls = 0;

    (void)state;
    assert_int_equal(shr_new(&sliced), 0);
    assert_int_equal(shr_new(&whole), 0);
    for (int n = 0; n < 3; n++) {
        snprintf(op, sizeof(op), "N n%d cpu=64 memory=256Gi pods=1000", n);
        assert_int_equal(run_op(sliced, NULL, op), 0);
        assert_int_equal(run_op(whole, NULL, op), 0);
    }
    for (int i = 0; i < 2000; i++) {
        snprintf(op, sizeof(op), "P ns/p%d node=n%d%s c:cpu=%dm c:memory=%dMi", i, i % 3,
                 i % 5 ? "" : " origin=c1", 10 + i % 7, 32 + i % 11);
        assert_int_equal(run_op(sliced, NULL, op), 0);
        assert_int_equal(run_op(whole, NULL, op), 0);
    }
    assert_true(shr_staging(sliced));
    while ((r = shr_flush_some(sliced, 1)) == 0) {
        calls++;
        assert_true(shr_staging(sliced));
        if (calls == 2) { /* staged between slices: applied after the earlier ones */
            assert_int_equal(run_op(sliced, NULL, "P ns/p7 node=n2 c:cpu=900m"), 0);
            assert_int_equal(run_op(whole, NULL, "P ns/p7 node=n2 c:cpu=900m"), 0);
        }
    }
    assert_int_equal(r, 1);
    assert_true(calls >= 7); /* 2,001 pods, 256 a slice */
    assert_false(shr_staging(sliced));
    assert_int_equal(shr_flush_some(sliced, 1), 1); /* nothing staged any more */
    assert_int_equal(shr_flush(whole), 0);
    stage_compare(sliced, whole);
    assert_int_equal(shr_flush_some(NULL, 1), -EINVAL);
    assert_false(shr_staging(NULL));
    shr_free(sliced);
    shr_free(whole);
}

/* A staged pod keeps its resource slots: the table filled by nodes whose names are then unused
 * (so that a new name recycles every slot nothing refers to) does not take the slot of a name only
 * a staged pod requests (example.com/only); a pod delete flushes first; after the flush, upserts
 * apply at once. */
static void test_stage_keeps_slots(void **state)
{
    struct shr_state *s;
    struct shr_list avail, used;
    char spec[4096];
    bool found;
    size_t n;
    json_t *o;

    (void)state;
    assert_int_equal(shr_new(&s), 0);
    /* Staged twice: the later one wins. */
    assert_int_equal(stage_op(s, 'P', "a/p1 node=n1 c:example.com/only=2,cpu=1"), 0);
    assert_int_equal(stage_op(s, 'P', "a/p1 node=n1 c:example.com/only=3,cpu=1"), 0);
    assert_int_equal(stage_op(s, 'N', "n1 cpu=4 pods=110 example.com/r0=5"), 0);
    for (int round = 0; round < 2; round++) {
        n = (size_t)snprintf(spec, sizeof(spec), "big%d", round);
        for (int i = 0; i < SHR_MAX_RESOURCES; i++)
            n += (size_t)snprintf(spec + n, sizeof(spec) - n, " example.com/%c%d=1",
                                  round ? 'b' : 'a', i);
        o = mk_node(spec);
        assert_int_equal(shr_node_upsert(s, o), 0);
        json_decref(o);
        snprintf(spec, sizeof(spec), "big%d", round);
        assert_int_equal(shr_node_delete(s, spec), 0);
    }
    assert_int_equal(stage_op(s, 'P', "a/p2 node=n1 c:cpu=1"), 0);
    assert_int_equal(shr_pod_delete(s, "a", "p2"), 0); /* flushes, then deletes */
    shr_totals(s, &avail, &used);
    assert_int_equal(shr_list_get(&used, "example.com/only", NULL), 3);
    assert_int_equal(shr_list_get(&used, "cpu", NULL), 1000);
    assert_int_equal(shr_list_get(&used, "pods", NULL), 1);
    assert_int_equal(shr_list_get(&avail, "example.com/r0", NULL), 5);
    assert_int_equal(shr_list_get(&avail, "example.com/only", &found), 0);
    assert_false(found);
    assert_int_equal(stage_op(s, 'P', "a/p3 c:cpu=1"), 0);
    shr_totals(s, &avail, &used);
    assert_int_equal(shr_list_get(&used, "cpu", NULL), 2000);
    assert_int_equal(shr_flush(s), 0);
    assert_int_equal(shr_flush(NULL), -EINVAL);
    shr_free(s);
}

/* Flushes `staged` with its fail-th allocation failing (-ENOMEM; then the next flush finishes it),
 * and compares it with `direct`. Returns the first flush's result. */
static int flush_failing(struct shr_state *staged, struct shr_state *direct, long fail)
{
    int r;

    xalloc_fail_after(fail);
    r = shr_flush(staged);
    xalloc_fail_after(-1);
    if (r < 0) {
        assert_int_equal(r, -ENOMEM);
        assert_int_equal(shr_flush(staged), 0);
    }
    stage_compare(staged, direct);
    return r;
}

/* The n-th allocation of a flush fails, for every n until none does: the flush returns -ENOMEM,
 * the next one finishes, and the result equals the same operations applied one by one; nothing
 * leaks (ASan/LSan). A staged state freed without a flush leaks nothing either. */
static void test_stage_alloc_failures(void **state)
{
    (void)state;
    for (long fail = 0;; fail++) {
        struct shr_state *staged, *direct;
        int r;

        assert_true(fail < 10000);
        assert_int_equal(shr_new(&staged), 0);
        assert_int_equal(shr_new(&direct), 0);
        assert_int_equal(shr_flush(direct), 0);
        fail_ops_both(staged, direct);
        r = flush_failing(staged, direct, fail);
        shr_free(staged);
        shr_free(direct);
        if (r == 0)
            break;
    }
    {
        struct shr_state *s;

        assert_int_equal(shr_new(&s), 0);
        assert_int_equal(stage_op(s, 'P', "a/p1 node=n1 origin=c1 c:cpu=1"), 0);
        shr_free(s);
    }
}

/* A stage of several chunks (1,500 pods of long names: 64 and 128 KiB), whose applied chunks
 * become pod record blocks (see shr_flush): with the n-th allocation of the flush failing, for
 * every n until none does, the next flush finishes, and the result equals the same pods applied one
 * by one. Deleting every pod and node then brings the memory back to a fresh state's (origin
 * records aside): the record blocks, stage chunks among them, are unmapped once (ASan/LSan). */
#define RECYCLED_PODS  1500
#define RECYCLED_NODES 4
#define RECYCLED_NAME  "a-pod-with-a-rather-long-name-%d" /* in namespace a */

static void recycled_fill(struct shr_state *s)
{
    char op[192];

    for (int i = 0; i < RECYCLED_NODES; i++) {
        snprintf(op, sizeof(op), "n%d cpu=64 memory=256Gi pods=200", i);
        assert_int_equal(stage_op(s, 'N', op), 0);
    }
    for (int i = 0; i < RECYCLED_PODS; i++) {
        snprintf(op, sizeof(op), "a/" RECYCLED_NAME " node=n%d origin=c%d c:cpu=100m,memory=1Gi", i,
                 i % RECYCLED_NODES, i % 3);
        assert_int_equal(stage_op(s, 'P', op), 0);
    }
}

static void test_stage_chunks_recycled(void **state)
{
    struct shr_state *fresh, *direct;
    struct shr_stats st0, st;
    char op[192];

    (void)state;
    assert_int_equal(shr_new(&fresh), 0);
    shr_get_stats(fresh, &st0);
    shr_free(fresh);
    assert_int_equal(shr_new(&direct), 0);
    assert_int_equal(shr_flush(direct), 0);
    recycled_fill(direct);
    for (long fail = 0;; fail++) {
        struct shr_state *staged;
        int r;

        assert_true(fail < 10000);
        assert_int_equal(shr_new(&staged), 0);
        recycled_fill(staged);
        r = flush_failing(staged, direct, fail);
        for (int i = 0; i < RECYCLED_PODS; i++) {
            snprintf(op, sizeof(op), RECYCLED_NAME, i);
            assert_int_equal(shr_pod_delete(staged, "a", op), 0);
        }
        for (int i = 0; i < RECYCLED_NODES; i++) {
            snprintf(op, sizeof(op), "n%d", i);
            assert_int_equal(shr_node_delete(staged, op), 0);
        }
        shr_get_stats(staged, &st);
        assert_int_equal(st.pods, 0);
        assert_int_equal(st.nodes, 0);
        assert_true(st.memory_bytes <= st0.memory_bytes + 3 * ORIGIN_BYTES);
        shr_free(staged);
        if (r == 0) {
            printf("recycled: %ld allocations failed in turn\n", fail);
            break;
        }
    }
    shr_free(direct);
}

/* Memory accounting follows the records: it grows with objects and returns to its start when they
 * are all deleted (tables aside). */
static void test_memory(void **state)
{
    struct shr_state *s;
    struct shr_stats st0, st1, st2;
    char spec[128];

    (void)state;
    assert_int_equal(shr_new(&s), 0);
    shr_get_stats(s, &st0);
    assert_true(st0.memory_bytes >= sizeof(struct shr_stats));
    for (int i = 0; i < 100; i++) {
        json_t *o;

        snprintf(spec, sizeof(spec), "n%d cpu=4 memory=8Gi pods=110", i);
        o = mk_node(spec);
        assert_int_equal(shr_node_upsert(s, o), 0);
        json_decref(o);
        snprintf(spec, sizeof(spec), "a/p%d node=n%d origin=c%d c:cpu=1,memory=1Gi", i, i, i % 3);
        o = mk_pod(spec);
        assert_int_equal(shr_pod_upsert(s, o), 0);
        json_decref(o);
    }
    shr_get_stats(s, &st1);
    assert_true(st1.memory_bytes > st0.memory_bytes + 100 * 200);
    for (int i = 0; i < 100; i++) {
        snprintf(spec, sizeof(spec), "p%d", i);
        assert_int_equal(shr_pod_delete(s, "a", spec), 0);
        snprintf(spec, sizeof(spec), "n%d", i);
        assert_int_equal(shr_node_delete(s, spec), 0);
    }
    shr_get_stats(s, &st2);
    assert_int_equal(st2.nodes, 0);
    assert_int_equal(st2.pods, 0);

    /* Unscheduled pods moved to unknown nodes and back: the placeholder records and their
     * per-origin entries go with the last pod. */
    for (int round = 0; round < 2; round++) {
        for (int pass = round == 0 ? 1 : 0; pass < 2; pass++) {
            for (int i = 0; i < 50; i++) {
                json_t *o;

                snprintf(spec, sizeof(spec), "a/p%d %s%d origin=c%d c:cpu=1,memory=1Gi", i,
                         pass == 0 ? "node=gone" : "label:x=", i, i % 3);
                o = mk_pod(spec);
                assert_int_equal(shr_pod_upsert(s, o), 0);
                json_decref(o);
            }
        }
        shr_get_stats(s, round == 0 ? &st1 : &st2);
    }
    assert_int_equal(st1.memory_bytes, st2.memory_bytes);
    assert_int_equal(st2.nodes, 0);
    for (int i = 0; i < 50; i++) {
        snprintf(spec, sizeof(spec), "p%d", i);
        assert_int_equal(shr_pod_delete(s, "a", spec), 0);
    }
    shr_get_stats(s, &st2);
    /* What remains: the three origin records (emptied tables and record blocks are freed). */
    assert_true(st2.memory_bytes <= st0.memory_bytes + 4096 + 3 * ORIGIN_BYTES);
    shr_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scenarios),
        cmocka_unit_test(test_fixed_policy),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_resource_limit),
        cmocka_unit_test(test_origin_limit),
        cmocka_unit_test(test_label_shareable),
        cmocka_unit_test(test_list_moved),
        cmocka_unit_test(test_quantity_text),
        cmocka_unit_test(test_quantity_fast_path),
        cmocka_unit_test(test_bulk),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_stage_equivalence),
        cmocka_unit_test(test_stage_in_slices),
        cmocka_unit_test(test_stage_keeps_slots),
        cmocka_unit_test(test_stage_alloc_failures),
        cmocka_unit_test(test_stage_chunks_recycled),
        cmocka_unit_test(test_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
