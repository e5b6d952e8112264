/* The protobuf decoder (src/kube/kpb.h) against the JSON the same kube-apiserver sends: a
 * differential test on a real control plane of the local environment (the "single" one).
 *
 * It creates the objects of protobuf-objects.json (every kind the schema has, with the fields that
 * exercise each rule of the decoder: pointers to zero values, inline structs, IntOrString, Time and
 * MicroTime, Quantity, binary data, empty strings, maps) plus a Node and a Pod of the benchmarks'
 * templates, with the pods' status written as a kubelet would (the environment has no nodes; the
 * Deployment's pods stay pending), then lists every kind both ways and requires each object written
 * from protobuf to equal the server's JSON (without managedFields, which informers drop) at the
 * same resourceVersion. Then two informers, one reading protobuf and one JSON, must cache the same
 * objects, and a watch in protobuf must hand over the same events as one in JSON, object for
 * object, while the objects change; and an error answered in protobuf must still give its Status
 * reason and message. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/jsonb.h"
#include "common/xalloc.h"
#include "kube/api.h"
#include "kube/informer.h"
#include "kube/kpb.h"
#include "kube/watch.h"

#ifndef FIXTURES
#error "FIXTURES: the path of protobuf-objects.json"
#endif

static const struct kapi_resource res_endpoints = {"", "v1", "endpoints", "Endpoints", true};
static const struct kapi_resource res_slices = {"discovery.k8s.io", "v1beta1", "endpointslices",
                                                "EndpointSlice", true};

static const struct kapi_resource *const namespaced[] = {
    &kapi_pods,           &kapi_configmaps,  &kapi_secrets,
    &kapi_services,       &res_endpoints,    &res_slices,
    &kapi_leases,         &kapi_events,      &kapi_serviceaccounts,
    &kapi_resourcequotas, &kapi_limitranges, &kapi_deployments,
    &kapi_daemonsets,
};

static uv_loop_t loop;
static struct kc_config *cfg;
static struct kapi_client *cl;
static char ns[64];
static const char *node_name = "kpb-bench-node";

static int sync_call(int r, struct kapi_sync *s)
{
    if (r < 0)
        return r;
    return kapi_sync_wait(cl, s);
}

static const struct kapi_resource *resource_of(const char *kind)
{
    for (size_t i = 0; i < sizeof(namespaced) / sizeof(namespaced[0]); i++)
        if (strcmp(namespaced[i]->kind, kind) == 0)
            return namespaced[i];
    return NULL;
}

static bool not_yet(int e, const char *message)
{
    return (e == -EIO && strstr(message, "token")) ||
           (e == -EPERM && strstr(message, "serviceaccount") && strstr(message, "not found"));
}

/* Creates obj; returns the server's copy (json_decref). */
static json_t *create(const struct kapi_resource *r, const char *in_ns, json_t *obj)
{
    json_t *made;
    struct kapi_sync s = {0};
    int e = sync_call(kapi_create(cl, r, in_ns, obj, kapi_sync_cb, &s), &s);

    /* A new namespace's default service account, and then its token, come a moment later: the
     * server refuses a pod until then (403 "serviceaccount ... not found", then 500 "no API
     * token found"). */
    for (int t = 0; not_yet(e, s.message) && t < 100; t++) {
        kapi_sync_done(&s);
        memset(&s, 0, sizeof(s));
        usleep(100 * 1000);
        e = sync_call(kapi_create(cl, r, in_ns, obj, kapi_sync_cb, &s), &s);
    }
    if (e < 0)
        fail_msg("creating %s %s: %s (%s)", r->kind, kapi_obj_name(obj), strerror(-e), s.message);
    made = json_incref(s.body);
    kapi_sync_done(&s);
    return made;
}

static json_t *bench_node(void)
{
    const char *t = "2024-05-02T10:11:12Z";

    return json_pack(
        "{s:s,s:s,s:{s:s,s:{s:s,s:s}},s:{s:b,s:[{s:s,s:s,s:s}]},"
        "s:{s:{s:s,s:s,s:s},s:{s:s,s:s,s:s},"
        "s:[{s:s,s:s,s:s,s:s,s:s,s:s}],s:{s:s,s:s,s:s},"
        "s:[{s:[s,s],s:i}],s:[{s:s,s:s}]}}",
        "apiVersion", "v1", "kind", "Node", "metadata", "name", node_name, "labels",
        "kubernetes.io/hostname", node_name, "bench", "informer", "spec", "unschedulable", 1,
        "taints", "key", "kpb", "value", "x", "effect", "NoSchedule", "status", "capacity", "cpu",
        "32", "memory", "128Gi", "pods", "110", "allocatable", "cpu", "31500m", "memory", "125Gi",
        "pods", "110", "conditions", "type", "Ready", "status", "True", "reason", "KubeletReady",
        "message", "kubelet is posting ready status", "lastHeartbeatTime", t, "lastTransitionTime",
        t, "nodeInfo", "kubeletVersion", "v1.20.2", "operatingSystem", "linux", "architecture",
        "amd64", "images", "names", "registry.example.com/shop/web:1.24.3",
        "registry.example.com/shop/web@x", "sizeBytes", 123456789, "addresses", "type",
        "InternalIP", "address", "10.0.0.1");
}

/* Pods in ns now. */
static size_t pods_now(void)
{
    struct kapi_sync s = {0};
    size_t n = 0;

    if (sync_call(kapi_list(cl, &kapi_pods, ns, NULL, kapi_sync_cb, &s), &s) == 0)
        n = json_array_size(json_object_get(s.body, "items"));
    kapi_sync_done(&s);
    return n;
}

static int setup(void **state)
{
    char err[512], path[1024];
    const char *st = getenv("E2E_STATE");
    struct kapi_sync s = {0};
    json_error_t jerr;
    json_t *objs, *obj, *node;
    size_t i;

    (void)state;
    assert_non_null(st);
    snprintf(path, sizeof(path), "%s/cluster-1/kubeconfig", st);
    assert_int_equal(uv_loop_init(&loop), 0);
    if (kc_load_file(path, NULL, &cfg, err, sizeof(err)) < 0)
        fail_msg("kubeconfig: %s", err);
    struct kapi_client_options co = {.max_body = (size_t)256 << 20};
    assert_int_equal(kapi_client_new(&loop, cfg, &co, &cl), 0);
    if (kpb_schema.nroots == 0)
        fail_msg("this build has no protobuf schema (configure with CLIQO_KPBGEN)");

    snprintf(ns, sizeof(ns), "e2e-kpb-%ld", (long)getpid());
    obj = json_pack("{s:s,s:s,s:{s:s,s:{s:s}}}", "apiVersion", "v1", "kind", "Namespace",
                    "metadata", "name", ns, "labels", "e2e", "kpb");
    json_decref(create(&kapi_namespaces, NULL, obj));
    json_decref(obj);
    obj = bench_node();
    (void)sync_call(kapi_delete(cl, &kapi_nodes, NULL, node_name, NULL, kapi_sync_cb, &s), &s);
    kapi_sync_done(&s);
    node = create(&kapi_nodes, NULL, obj);
    json_decref(obj);

    objs = json_load_file(FIXTURES, 0, &jerr);
    if (!objs)
        fail_msg("%s:%d: %s", FIXTURES, jerr.line, jerr.text);
    json_array_foreach(objs, i, obj)
    {
        const char *kind = json_string_value(json_object_get(obj, "kind"));
        const struct kapi_resource *r = resource_of(kind ? kind : "");
        if (!r)
            fail_msg("fixture %zu: no resource for kind %s", i, kind ? kind : "(none)");
        if (strcmp(kind, "Event") == 0) /* the server wants the event's own namespace there */
            json_object_set_new(json_object_get(obj, "involvedObject"), "namespace",
                                json_string(ns));
        /* Owners: the bench node, which exists (the garbage collector deletes what a missing
         * owner owns) */
        size_t j;
        json_t *ref;
        json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "ownerReferences"), j,
                           ref)
        {
            json_object_set_new(ref, "apiVersion", json_string("v1"));
            json_object_set_new(ref, "kind", json_string("Node"));
            json_object_set_new(ref, "name", json_string(node_name));
            json_object_set(ref, "uid", json_object_get(json_object_get(node, "metadata"), "uid"));
        }
        json_decref(create(r, ns, obj));
        if (strcmp(kind, "Pod") == 0 && json_object_get(obj, "status")) {
            /* no kubelet here: the status a kubelet would write, through the subresource */
            json_t *patch = json_pack("{s:O}", "status", json_object_get(obj, "status"));
            char *body = json_dumps(patch, JSON_COMPACT);
            memset(&s, 0, sizeof(s));
            int e = sync_call(kapi_patch(cl, &kapi_pods, ns, kapi_obj_name(obj), "status",
                                         KAPI_PATCH_MERGE, body, kapi_sync_cb, &s),
                              &s);
            if (e < 0)
                fail_msg("status of pod %s: %s (%s)", kapi_obj_name(obj), strerror(-e), s.message);
            kapi_sync_done(&s);
            memset(&s, 0, sizeof(s));
            free(body);
            json_decref(patch);
        }
    }
    json_decref(node);
    /* the Deployment's two pods (pending: no nodes) */
    for (int t = 0; t < 300 && pods_now() < 4; t++)
        usleep(100 * 1000);
    assert_true(pods_now() >= 4);
    json_decref(objs);
    return 0;
}

static int teardown(void **state)
{
    struct kapi_sync s = {0};

    (void)state;
    sync_call(kapi_delete(cl, &kapi_namespaces, NULL, ns, NULL, kapi_sync_cb, &s), &s);
    kapi_sync_done(&s);
    memset(&s, 0, sizeof(s));
    sync_call(kapi_delete(cl, &kapi_nodes, NULL, node_name, NULL, kapi_sync_cb, &s), &s);
    kapi_sync_done(&s);
    kapi_client_close(cl);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    kc_config_free(cfg);
    return 0;
}

/* ---- lists both ways ------------------------------------------------------------------------ */

struct pb_items {
    int msg;
    json_t *by_key; /* key -> object */
    char *text;
    size_t cap;
    int err;
};

static void key_of(const json_t *obj, char *buf, size_t size)
{
    const char *n = kapi_obj_namespace(obj);
    snprintf(buf, size, "%s/%s", n ? n : "", kapi_obj_name(obj) ? kapi_obj_name(obj) : "?");
}

static int on_item(const uint8_t *item, size_t len, void *data)
{
    struct pb_items *p = data;
    size_t tl;
    json_t *obj;
    char key[512];
    int r = kpb_to_json(&kpb_schema, p->msg, item, len, &p->text, &p->cap, &tl, 64u << 20);

    if (r < 0)
        return r;
    r = jsonb_load(p->text, tl, jsonb_budget(tl, JSONB_RATIO_KUBE), 0, 0, &obj, NULL);
    if (r < 0) {
        print_message("not JSON: %.*s\n", (int)(tl < 2000 ? tl : 2000), p->text);
        return r;
    }
    key_of(obj, key, sizeof(key));
    json_object_set_new(p->by_key, key, obj);
    return 0;
}

static json_t *get_list(const struct kapi_resource *r, const char *in_ns, bool pb, int msg)
{
    struct kapi_sync s = {0};
    struct sbuf path;
    struct kapi_request req = {.method = "GET", .protobuf = pb};
    json_t *out = json_object();
    int e;

    sbuf_init(&path, 4096);
    assert_true(kapi_list_path(&path, r, in_ns, NULL) >= 0);
    req.path = sbuf_str(&path);
    struct pb_items p = {.msg = msg, .by_key = out};
    struct kpb_list l;
    kpb_list_init(&l, (size_t)3 << 20, (size_t)64 << 10, on_item, &p);
    s.keep_raw = pb;
    e = sync_call(kapi_send(cl, &req, kapi_sync_cb, &s, NULL), &s);
    if (e < 0)
        fail_msg("listing %s (%s): %s %s", r->resource, pb ? "protobuf" : "JSON", strerror(-e),
                 s.message);
    if (pb) {
        json_t *env = NULL;
        assert_true(s.raw_len > KPB_MAGIC_LEN);
        assert_memory_equal(s.raw, KPB_MAGIC, KPB_MAGIC_LEN);
        e = kpb_list_feed(&l, (const uint8_t *)s.raw, s.raw_len);
        if (e == 0)
            e = kpb_list_finish(&l, &env);
        if (e < 0)
            fail_msg("decoding %s from protobuf: %s", r->resource, strerror(-e));
        assert_non_null(json_string_value(
            json_object_get(json_object_get(env, "metadata"), "resourceVersion")));
        json_decref(env);
    } else {
        size_t i;
        json_t *item;
        char key[512];
        json_array_foreach(json_object_get(s.body, "items"), i, item)
        {
            json_object_del(json_object_get(item, "metadata"), "managedFields");
            key_of(item, key, sizeof(key));
            json_object_set(out, key, item);
        }
    }
    kpb_list_done(&l);
    x_free(p.text);
    sbuf_done(&path);
    kapi_sync_done(&s);
    return out;
}

/* Objects at the same resourceVersion in both lists must be equal; returns how many were compared.
 */
static size_t compare(const struct kapi_resource *r, const char *in_ns)
{
    int msg = kpb_root(&kpb_schema, r->group, r->version, r->kind);
    size_t same = 0;

    if (msg < 0)
        fail_msg("no schema for %s", r->kind);
    for (int attempt = 0; attempt < 5; attempt++) {
        json_t *js = get_list(r, in_ns, false, msg), *pb = get_list(r, in_ns, true, msg);
        const char *key;
        json_t *a;
        size_t skipped = 0;

        same = 0;
        json_object_foreach(js, key, a)
        {
            json_t *b = json_object_get(pb, key);
            const char *ra = kapi_obj_rv(a), *rb = b ? kapi_obj_rv(b) : NULL;
            if (!b || !ra || !rb || strcmp(ra, rb) != 0) {
                skipped++; /* changed between the two lists */
                print_message("%s %s: %s in JSON, %s in protobuf\n", r->kind, key, ra ? ra : "-",
                              rb ? rb : "-");
                continue;
            }
            if (!json_equal(a, b)) {
                char *ta = json_dumps(a, JSON_SORT_KEYS | JSON_INDENT(1));
                char *tb = json_dumps(b, JSON_SORT_KEYS | JSON_INDENT(1));
                print_message("JSON:\n%s\nfrom protobuf:\n%s\n", ta, tb);
                free(ta);
                free(tb);
                fail_msg("%s %s: the object written from protobuf differs from the JSON", r->kind,
                         key);
            }
            same++;
        }
        json_decref(js);
        json_decref(pb);
        if (!skipped)
            break;
    }
    print_message("%-16s %zu objects equal\n", r->resource, same);
    return same;
}

static void test_lists_equal(void **state)
{
    (void)state;
    /* every fixture, and the Deployment's pods */
    assert_true(compare(&kapi_pods, ns) >= 4);
    assert_true(compare(&kapi_configmaps, ns) >= 2);
    assert_true(compare(&kapi_secrets, ns) >= 3); /* and the service account's token */
    assert_true(compare(&kapi_services, ns) >= 4);
    assert_true(compare(&res_endpoints, ns) >= 1);
    assert_true(compare(&res_slices, ns) >= 1);
    assert_true(compare(&kapi_leases, ns) >= 2);
    assert_true(compare(&kapi_events, ns) >= 2);
    assert_true(compare(&kapi_serviceaccounts, ns) >= 2);
    assert_true(compare(&kapi_resourcequotas, ns) >= 1);
    assert_true(compare(&kapi_limitranges, ns) >= 1);
    assert_true(compare(&kapi_deployments, ns) >= 1);
    assert_true(compare(&kapi_daemonsets, ns) >= 1);
    /* the whole cluster: the simulated nodes, the bench node, every namespace and pod */
    assert_true(compare(&kapi_nodes, NULL) >= 1);
    assert_true(compare(&kapi_namespaces, NULL) >= 4);
    assert_true(compare(&kapi_pods, NULL) >= 4);
    assert_true(compare(&kapi_events, NULL) >= 2);
}

/* ---- two informers ---------------------------------------------------------------------------
 */

static void on_synced(struct inf_informer *inf, void *data)
{
    (void)inf;
    *(bool *)data = true;
}

static void collect(json_t *obj, void *data)
{
    char key[512];

    key_of(obj, key, sizeof(key));
    json_object_set(data, key, obj);
}

static void informers_equal(const struct kapi_resource *r, const char *in_ns, size_t at_least)
{
    struct inf_handlers h = {.on_synced = on_synced};
    /* a: protobuf, consistent lists of 2 objects a page (continue tokens from the ListMeta);
     * b: JSON from the watch cache */
    struct inf_options a = {.resource = r, .namespace_ = in_ns, .page_size = 2};
    struct inf_options b = {.resource = r, .namespace_ = in_ns, .list_from_cache = true};
    struct inf_informer *ia, *ib;
    bool sa = false, sb = false;
    json_t *ca = json_object(), *cb = json_object();

    b.json_only = true;
    assert_int_equal(inf_new(cl, &a, &h, &sa, &ia), 0);
    assert_int_equal(inf_new(cl, &b, &h, &sb, &ib), 0);
    assert_int_equal(inf_start(ia), 0);
    assert_int_equal(inf_start(ib), 0);
    for (int t = 0; t < 3000 && !(sa && sb); t++) {
        uv_run(&loop, UV_RUN_NOWAIT);
        usleep(1000);
    }
    assert_true(sa && sb);
    assert_string_equal(inf_list_encoding(ia), "protobuf");
    assert_string_equal(inf_list_encoding(ib), "json");
    /* both caches hold the same keys with the same objects */
    inf_foreach(ia, collect, ca);
    inf_foreach(ib, collect, cb);
    if (!json_equal(ca, cb)) {
        const char *key;
        json_t *v;
        json_object_foreach(ca, key, v)
        {
            if (!json_equal(v, json_object_get(cb, key)))
                fail_msg("informers differ on %s %s", r->kind, key);
        }
        fail_msg("informers differ on %s: %zu and %zu objects", r->kind, json_object_size(ca),
                 json_object_size(cb));
    }
    assert_true(json_object_size(ca) >= at_least);
    print_message("informer %-10s %zu objects equal\n", r->resource, json_object_size(ca));
    json_decref(ca);
    json_decref(cb);
    inf_free(ia);
    inf_free(ib);
}

static void test_informers_equal(void **state)
{
    (void)state;
    informers_equal(&kapi_configmaps, ns, 2);
    informers_equal(&kapi_secrets, ns, 3);
    informers_equal(&kapi_nodes, NULL, 1);
    informers_equal(&kapi_pods, ns, 4);
}

/* ---- two watches ----------------------------------------------------------------------------
 */

struct events {
    json_t *list;     /* [{"type":..., "object":...}] */
    const char *last; /* the name whose DELETED event ends the comparison */
    bool done;
    int ended;
};

static void on_watch_event(struct kw_watch *w, enum kw_event_type type, json_t *obj, void *data)
{
    static const char *const names[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK"};
    struct events *e = data;

    (void)w;
    if (type == KW_BOOKMARK || e->done) /* a bookmark comes when the server wants */
        return;
    json_array_append_new(e->list, json_pack("{s:s,s:O}", "type", names[type], "object", obj));
    if (type == KW_DELETED && strcmp(kapi_obj_name(obj), e->last) == 0)
        e->done = true;
}

static void on_watch_end(struct kw_watch *w, int err, const char *message, void *data)
{
    struct events *e = data;

    (void)w;
    print_message("watch ended: %s (%s)\n", strerror(-err), message);
    e->ended++;
}

static void change(const struct kapi_resource *r, const char *name, const char *sub,
                   const char *patch)
{
    struct kapi_sync s = {0};
    int e =
        sync_call(kapi_patch(cl, r, ns, name, sub, KAPI_PATCH_MERGE, patch, kapi_sync_cb, &s), &s);

    if (e < 0)
        fail_msg("patching %s %s: %s (%s)", r->kind, name, strerror(-e), s.message);
    kapi_sync_done(&s);
}

static void remove_now(const struct kapi_resource *r, const char *name)
{
    struct kapi_sync s = {0};
    struct kapi_delete_opts o = {.grace_period_seconds = 0};

    if (sync_call(kapi_delete(cl, r, ns, name, &o, kapi_sync_cb, &s), &s) < 0)
        fail_msg("deleting %s %s: %s", r->kind, name, s.message);
    kapi_sync_done(&s);
}

/* A watch in protobuf and one in JSON, from the same version, must hand over the same events with
 * the same objects (the JSON one without managedFields, which both drop): every fixture of the kind
 * changed (a label), then an object made from the first fixture, its status written (pods), and
 * deleted. */
static void watches_equal(const struct kapi_resource *r, const char *status_patch)
{
    struct kapi_sync s = {0};
    struct events a = {.list = json_array(), .last = "kpb-watch"};
    struct events b = {.list = json_array(), .last = "kpb-watch"};
    struct kw_options oa = {.namespace_ = ns, .drop_managed_fields = true, .protobuf = true};
    struct kw_options ob = {.namespace_ = ns, .drop_managed_fields = true};
    struct kw_watch *wa, *wb;
    json_t *items, *item, *copy;
    char rv[64];
    size_t i, changed = 0;

    oa.pb_msg = kpb_root(&kpb_schema, r->group, r->version, r->kind);
    assert_true(oa.pb_msg >= 0);
    assert_int_equal(sync_call(kapi_list(cl, r, ns, NULL, kapi_sync_cb, &s), &s), 0);
    snprintf(
        rv, sizeof(rv), "%s",
        json_string_value(json_object_get(json_object_get(s.body, "metadata"), "resourceVersion")));
    items = json_incref(json_object_get(s.body, "items"));
    kapi_sync_done(&s);
    oa.resource_version = ob.resource_version = rv;
    assert_int_equal(kw_start(cl, r, &oa, on_watch_event, on_watch_end, &a, &wa), 0);
    assert_int_equal(kw_start(cl, r, &ob, on_watch_event, on_watch_end, &b, &wb), 0);

    json_array_foreach(items, i, item)
    {
        change(r, kapi_obj_name(item), NULL, "{\"metadata\":{\"labels\":{\"kpb-watch\":\"1\"}}}");
        changed++;
    }
    assert_true(changed >= 1);
    /* the first that is not a service account's token (which needs its account's annotations) */
    copy = NULL;
    json_array_foreach(items, i, item)
    {
        const char *type = json_string_value(json_object_get(item, "type"));
        if (!type || strcmp(type, "kubernetes.io/service-account-token") != 0) {
            copy = json_deep_copy(item);
            break;
        }
    }
    assert_non_null(copy);
    json_object_set_new(copy, "metadata",
                        json_pack("{s:s,s:{s:s}}", "name", "kpb-watch", "labels", "kpb", "copy"));
    json_object_set_new(copy, "apiVersion", json_string(r->group[0] ? "apps/v1" : "v1"));
    json_object_set_new(copy, "kind", json_string(r->kind));
    json_decref(create(r, ns, copy));
    json_decref(copy);
    if (status_patch)
        change(r, "kpb-watch", "status", status_patch);
    remove_now(r, "kpb-watch");

    for (int t = 0; t < 20000 && !(a.done && b.done) && !a.ended && !b.ended; t++) {
        uv_run(&loop, UV_RUN_NOWAIT);
        usleep(1000);
    }
    assert_int_equal(a.ended + b.ended, 0);
    assert_true(a.done && b.done);
    assert_true(json_array_size(a.list) >= changed + (status_patch ? 3 : 2));
    assert_int_equal(json_array_size(a.list), json_array_size(b.list));
    json_array_foreach(a.list, i, item)
    {
        json_t *other = json_array_get(b.list, i);
        if (!json_equal(item, other)) {
            char *ta = json_dumps(item, JSON_SORT_KEYS | JSON_INDENT(1));
            char *tb = json_dumps(other, JSON_SORT_KEYS | JSON_INDENT(1));
            print_message("protobuf:\n%s\nJSON:\n%s\n", ta, tb);
            free(ta);
            free(tb);
            fail_msg("%s watch: event %zu differs between protobuf and JSON", r->kind, i);
        }
    }
    print_message("watch %-10s %zu events equal\n", r->resource, json_array_size(a.list));
    kw_stop(wa);
    kw_stop(wb);
    json_decref(items);
    json_decref(a.list);
    json_decref(b.list);
}

static void test_watches_equal(void **state)
{
    (void)state;
    watches_equal(&kapi_pods,
                  "{\"status\":{\"phase\":\"Running\",\"podIP\":\"10.1.2.3\",\"startTime\":"
                  "\"2024-05-02T10:11:12Z\",\"conditions\":[{\"type\":\"Ready\",\"status\":"
                  "\"True\",\"lastTransitionTime\":\"2024-05-02T10:11:13Z\"}]}}");
    watches_equal(&kapi_configmaps, NULL);
    watches_equal(&kapi_secrets, NULL);
}

/* ---- an error in protobuf --------------------------------------------------------------------
 */

static void test_status_error(void **state)
{
    struct kapi_sync s = {0};
    char path[256];
    struct kapi_request req = {.method = "GET", .path = path, .protobuf = true};

    (void)state;
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/no-such-pod", ns);
    assert_int_equal(sync_call(kapi_send(cl, &req, kapi_sync_cb, &s, NULL), &s), -ENOENT);
    assert_string_equal(s.reason, "NotFound");
    assert_non_null(strstr(s.message, "no-such-pod"));
    kapi_sync_done(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lists_equal),
        cmocka_unit_test(test_informers_equal),
        cmocka_unit_test(test_watches_equal),
        cmocka_unit_test(test_status_error),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
