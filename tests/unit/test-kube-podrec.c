/* Differential tests of the pod record (src/kube/podrec.c): for every pod shape the tests and the
 * benches use (the committed pod objects, the shapes bench-broadcaster generates, each also as the
 * broadcaster's transform trims it), edge cases (missing members, wrong types, huge quantities,
 * unicode escapes, NUL bytes) and a few thousand randomly typed pods, the record must say what
 * reading the jansson tree says. The reference reader below walks the tree by path, independently
 * of the extractor's code. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/podrec.h"
#include "offer/share.h"

static const struct kpod_options opts = {
    .parts = KPOD_LIMITS | KPOD_OWNER | KPOD_CTR_NAMES,
    .nlabels = 3,
    .labels = {SHR_LABEL_ORIGIN, "app", "absent.example.com/never"}};
/* The broadcaster's: none of the optional parts. */
static const struct kpod_options *const lean = &shr_pod_record_options;

/* ---- the reference: the tree read by path -----------------------------------------------------
 */

/* The value at a path of member names (NULL-terminated); NULL when a step is missing or not an
 * object. */
static const json_t *at(const json_t *v, ...)
{
    va_list ap;
    const char *k;

    va_start(ap, v);
    while (v && (k = va_arg(ap, const char *)))
        v = json_is_object(v) ? json_object_get(v, k) : NULL;
    va_end(ap);
    return v;
}

/* The record's string s equals the tree's value v read as a string (or both absent). */
static void same_str(const struct kpod *p, struct kpod_str s, const json_t *v)
{
    const char *t = kpod_text(p, s);

    if (!json_is_string(v)) {
        assert_null(t);
        assert_int_equal(s.len, 0);
        return;
    }
    assert_non_null(t);
    assert_int_equal(s.len, json_string_length(v));
    assert_memory_equal(t, json_string_value(v), s.len);
    assert_int_equal(t[s.len], '\0');
    /* inside the record */
    assert_true(s.off >= sizeof(struct kpod) && s.off + s.len < p->size);
}

/* The record's quantities [first, first + n) are the members of map, in order. */
static void same_map(const struct kpod *p, uint32_t first, uint32_t n, const json_t *map)
{
    const struct kpod_qty *q = kpod_qtys(p);
    const char *k;
    json_t *v;
    size_t klen;
    uint32_t i = 0;

    if (!json_is_object(map)) {
        assert_int_equal(n, 0);
        return;
    }
    assert_int_equal(n, json_object_size(map));
    json_object_keylen_foreach((json_t *)map, k, klen, v)
    {
        assert_int_equal(q[first + i].name.len, klen);
        assert_memory_equal(kpod_text(p, q[first + i].name), k, klen);
        same_str(p, q[first + i].value, v);
        i++;
    }
}

static void same_containers(const struct kpod *p, uint32_t from, uint32_t n, const json_t *list)
{
    const struct kpod_ctr *c = kpod_containers(p);

    assert_int_equal(n, json_is_array(list) ? json_array_size(list) : 0);
    for (uint32_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(list, i);

        same_str(p, c[from + i].name, at(e, "name", NULL));
        same_str(p, c[from + i].restart_policy, at(e, "restartPolicy", NULL));
        same_map(p, c[from + i].req, c[from + i].nreq, at(e, "resources", "requests", NULL));
        same_map(p, c[from + i].lim, c[from + i].nlim, at(e, "resources", "limits", NULL));
    }
}

static void same_record(const struct kpod *p, const json_t *pod)
{
    const json_t *refs = at(pod, "metadata", "ownerReferences", NULL), *owner = NULL;
    size_t nq = 0;

    assert_ptr_equal(p->opts, &opts);
    same_str(p, p->ns, at(pod, "metadata", "namespace", NULL));
    same_str(p, p->name, at(pod, "metadata", "name", NULL));
    same_str(p, p->node, at(pod, "spec", "nodeName", NULL));
    same_str(p, p->phase, at(pod, "status", "phase", NULL));
    for (size_t i = 0; json_is_array(refs) && i < json_array_size(refs) && !owner; i++)
        if (at(json_array_get(refs, i), "controller", NULL) == json_true())
            owner = json_array_get(refs, i);
    same_str(p, p->owner_kind, at(owner, "kind", NULL));
    same_str(p, p->owner_name, at(owner, "name", NULL));
    for (size_t i = 0; i < opts.nlabels; i++)
        same_str(p, kpod_label(p, opts.labels[i]),
                 at(pod, "metadata", "labels", opts.labels[i], NULL));
    assert_null(kpod_text(p, kpod_label(p, "not-asked")));
    same_containers(p, 0, p->ncontainers, at(pod, "spec", "containers", NULL));
    same_containers(p, p->ncontainers, p->ninit, at(pod, "spec", "initContainers", NULL));
    same_map(p, p->overhead, p->noverhead, at(pod, "spec", "overhead", NULL));
    for (uint32_t i = 0; i < p->ncontainers + p->ninit; i++)
        nq += kpod_containers(p)[i].nreq + kpod_containers(p)[i].nlim;
    assert_int_equal(p->nqty, nq + p->noverhead);
}

/* Extracts pod's record three ways (the allocating call, the buffer call after a size probe, and
 * a copy of it elsewhere: records are moved into the store) and checks each against the tree;
 * then the same for the broadcaster's trimmed copy of pod. */
static void check_pod(const json_t *pod)
{
    struct kpod *p = NULL;
    long n;
    char *buf, *copy;
    json_t *trimmed;

    assert_int_equal(kpod_from_json(pod, &opts, &p), 0);
    same_record(p, pod);
    n = kpod_build(pod, &opts, NULL, 0);
    assert_int_equal(n, p->size);
    buf = malloc((size_t)n + 8);
    copy = malloc((size_t)n + 8);
    assert_non_null(buf);
    assert_non_null(copy);
    assert_int_equal(kpod_build(pod, &opts, buf, (size_t)n - 1), n); /* too small: untouched */
    assert_int_equal(kpod_build(pod, &opts, buf, (size_t)n), n);
    assert_memory_equal(buf, p, (size_t)n);
    memcpy(copy + 8, buf, (size_t)n);
    memset(buf, 0xa5, (size_t)n);
    same_record((struct kpod *)(copy + 8), pod);
    free(buf);
    free(copy);
    /* Without the optional parts: the same record less limits, owner and container names. */
    {
        struct kpod *l = NULL;

        assert_int_equal(lean->parts, 0);
        assert_int_equal(kpod_from_json(pod, lean, &l), 0);
        assert_true(l->size <= p->size);
        assert_null(kpod_text(l, l->owner_kind));
        assert_null(kpod_text(l, l->owner_name));
        assert_int_equal(l->ncontainers, p->ncontainers);
        assert_int_equal(l->ninit, p->ninit);
        assert_int_equal(l->noverhead, p->noverhead);
        same_str(l, kpod_label(l, SHR_LABEL_ORIGIN),
                 at(pod, "metadata", "labels", SHR_LABEL_ORIGIN, NULL));
        same_str(l, l->node, at(pod, "spec", "nodeName", NULL));
        for (uint32_t i = 0; i < l->ncontainers + l->ninit; i++) {
            const struct kpod_ctr *lc = &kpod_containers(l)[i], *pc = &kpod_containers(p)[i];

            assert_null(kpod_text(l, lc->name));
            assert_int_equal(lc->nlim, 0);
            assert_int_equal(lc->nreq, pc->nreq);
            for (uint32_t j = 0; j < lc->nreq; j++) {
                const struct kpod_qty *a = &kpod_qtys(l)[lc->req + j];
                const struct kpod_qty *b = &kpod_qtys(p)[pc->req + j];

                assert_int_equal(a->name.len, b->name.len);
                assert_memory_equal(kpod_text(l, a->name), kpod_text(p, b->name), a->name.len);
                assert_int_equal(a->value.len, b->value.len);
                assert_true(!kpod_text(l, a->value) == !kpod_text(p, b->value));
                if (kpod_text(l, a->value))
                    assert_memory_equal(kpod_text(l, a->value), kpod_text(p, b->value),
                                        a->value.len);
            }
        }
        free(l);
    }
    free(p);
    if (json_is_object(pod)) {
        trimmed = json_deep_copy(pod);
        assert_non_null(trimmed);
        shr_pod_transform(trimmed, NULL);
        assert_int_equal(kpod_from_json(trimmed, &opts, &p), 0);
        same_record(p, trimmed);
        free(p);
        json_decref(trimmed);
    }
}

static void check_text(const char *text)
{
    json_error_t err;
    json_t *pod = json_loads(text, JSON_ALLOW_NUL | JSON_DECODE_ANY, &err);

    if (!pod)
        fail_msg("test pod does not parse: %s (%s)", err.text, text);
    check_pod(pod);
    json_decref(pod);
}

/* ---- the pods the tests and benches use ---------------------------------------------------- */

static void test_committed_pods(void **state)
{
    static const char *const files[] = {
        CLIQO_TEST_DATA "/jsonb/pod-managed-fields.json",
        CLIQO_TEST_DATA "/../../fuzz/corpus/jsonb/pod.json",
        CLIQO_TEST_DATA "/../../fuzz/corpus/jsonfast/pod",
        CLIQO_TEST_DATA "/../../fuzz/corpus/admission-objects/pod.json",
        CLIQO_TEST_DATA "/../../fuzz/corpus/admission-review/pod-create.json",
        CLIQO_TEST_DATA "/../../fuzz/corpus/admission-review/daemonset-pod.json",
    };

    (void)state;
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        json_error_t err;
        json_t *doc = json_load_file(files[i], JSON_ALLOW_NUL, &err), *obj;

        if (!doc)
            fail_msg("%s: %s", files[i], err.text);
        obj = json_object_get(json_object_get(doc, "request"), "object"); /* AdmissionReview */
        check_pod(obj ? obj : doc);
        json_decref(doc);
    }
}

static json_t *requests(unsigned i)
{
    static const char *const cpu[] = {"10m", "100m", "1", "1500m", "2"};
    static const char *const mem[] = {"32Mi", "128Mi", "1Gi", "1.5Gi", "100M"};
    json_t *r = json_pack("{s:s,s:s}", "cpu", cpu[i % 5], "memory", mem[(i / 5) % 5]);

    if (i % 7 == 0)
        json_object_set_new(r, "nvidia.com/gpu", json_string("1"));
    if (i % 11 == 0)
        json_object_set_new(r, "ephemeral-storage", json_string("1Gi"));
    return r;
}

/* The shapes bench-broadcaster generates: 1-3 containers with requests (and limits), 20% with
 * init containers (sidecars among them), 5% with overhead, some of a consumer (origin label), some
 * unscheduled, some terminal, owned by a ReplicaSet. */
static void test_bench_shapes(void **state)
{
    (void)state;
    for (unsigned i = 0; i < 200; i++) {
        json_t *ctrs = json_array(), *pod;
        char name[32];

        for (unsigned c = 0; c < 1 + i % 3; c++)
            json_array_append_new(ctrs, json_pack("{s:s,s:s,s:{s:o,s:o}}", "name", "c", "image",
                                                  "busybox", "resources", "requests",
                                                  requests(i + c), "limits", requests(i + c + 1)));
        snprintf(name, sizeof(name), "pod-%u", i);
        pod = json_pack("{s:s,s:s,s:{s:s,s:s,s:s,s:{s:s},s:[{s:s,s:s,s:b}]},s:{s:o},s:{s:s}}",
                        "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace",
                        "default", "uid", "0f0e0d0c-0b0a-0908-0706-050403020100", "labels", "app",
                        "web", "ownerReferences", "kind", "ReplicaSet", "name", "web-5d4f",
                        "controller", 1, "spec", "containers", ctrs, "status", "phase",
                        i % 50 == 0 ? "Succeeded" : (i % 50 == 1 ? "Failed" : "Running"));
        assert_non_null(pod);
        if (i % 50 != 2)
            json_object_set_new(json_object_get(pod, "spec"), "nodeName",
                                json_string(i % 2 ? "node-00001" : "node-04999"));
        if (i % 10 == 0)
            json_object_set_new(json_object_get(json_object_get(pod, "metadata"), "labels"),
                                SHR_LABEL_ORIGIN, json_string("consumer-a"));
        if (i % 5 == 0) {
            json_t *init =
                json_pack("[{s:s,s:{s:o}},{s:s,s:s,s:{s:o}}]", "name", "setup", "resources",
                          "requests", requests(i + 3), "name", "proxy", "restartPolicy", "Always",
                          "resources", "requests", requests(i + 4));
            json_object_set_new(json_object_get(pod, "spec"), "initContainers", init);
        }
        if (i % 20 == 0)
            json_object_set_new(json_object_get(pod, "spec"), "overhead",
                                json_pack("{s:s,s:s}", "cpu", "250m", "memory", "120Mi"));
        check_pod(pod);
        json_decref(pod);
    }
}

/* ---- edge cases ----------------------------------------------------------------------------- */

static void test_missing_and_wrong_types(void **state)
{
    static const char *const pods[] = {
        "{}",
        "[]",
        "\"pod\"",
        "null",
        "{\"metadata\":null,\"spec\":[],\"status\":\"Running\"}",
        "{\"metadata\":{\"name\":5,\"namespace\":true,\"labels\":[\"app\"]}}",
        "{\"metadata\":{\"labels\":{\"app\":1,\"virtualkubelet.liqo.io/origin\":null}}}",
        "{\"spec\":{\"nodeName\":17,\"containers\":{\"resources\":{}}}}",
        "{\"spec\":{\"containers\":[\"c\",1,null,[],{}]}}",
        "{\"spec\":{\"containers\":[{\"resources\":[]},{\"resources\":{\"requests\":[1]}}]}}",
        "{\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"cpu\":1,\"memory\":null,"
        "\"x\":{},\"y\":[],\"z\":true,\"w\":1.5}}}]}}",
        "{\"spec\":{\"initContainers\":[{\"restartPolicy\":true},{\"restartPolicy\":\"always\"},"
        "{\"restartPolicy\":\"Always\",\"resources\":{\"limits\":{\"cpu\":\"1\"}}}]}}",
        "{\"spec\":{\"overhead\":[]},\"status\":{\"phase\":[\"Running\"]}}",
        "{\"spec\":{\"overhead\":{}},\"status\":{}}",
        "{\"metadata\":{\"ownerReferences\":{\"kind\":\"ReplicaSet\"}}}",
        "{\"metadata\":{\"ownerReferences\":[{\"kind\":\"A\",\"name\":\"a\",\"controller\":"
        "\"true\"},"
        "{\"kind\":\"B\",\"name\":\"b\"},5,{\"kind\":\"C\",\"name\":\"c\",\"controller\":true},"
        "{\"kind\":\"D\",\"name\":\"d\",\"controller\":true}]}}",
        "{\"metadata\":{\"ownerReferences\":[{\"kind\":1,\"controller\":true}]}}",
    };

    (void)state;
    for (size_t i = 0; i < sizeof(pods) / sizeof(pods[0]); i++)
        check_text(pods[i]);
}

static void test_huge_and_unicode(void **state)
{
    static const char *const pods[] = {
        "{\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"cpu\":"
        "\"99999999999999999999999999999999999Ei\",\"memory\":\"-1\",\"pods\":\"1e400\","
        "\"hugepages-2Mi\":\"9223372036854775807\"}}}]}}",
        "{\"metadata\":{\"name\":\"caf\\u00e9\",\"namespace\":\"\\ud83d\\ude00\","
        "\"labels\":{\"app\":\"\\u65e5\\u672c\"}},\"spec\":{\"nodeName\":\"n\\u0000x\","
        "\"containers\":[{\"name\":\"\\u0041\\/\\\"\",\"resources\":{\"requests\":"
        "{\"cpu\":\"1\\u0000m\",\"\\u00e9\":\"1\"}}}]},\"status\":{\"phase\":"
        "\"Succeeded\\u0000x\"}}",
        "{\"spec\":{\"initContainers\":[{\"restartPolicy\":\"Always\\u0000no\"}]}}",
        "{\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"\":\"\"}}}]},"
        "\"metadata\":{\"name\":\"\",\"namespace\":\"\"}}",
    };
    json_t *big;
    char *s;

    (void)state;
    for (size_t i = 0; i < sizeof(pods) / sizeof(pods[0]); i++)
        check_text(pods[i]);
    /* A quantity and a name of 100,000 bytes. */
    s = malloc(100001);
    assert_non_null(s);
    memset(s, '9', 100000);
    s[100000] = '\0';
    big = json_pack("{s:{s:s},s:{s:[{s:{s:{s:s}}}]}}", "metadata", "name", s, "spec", "containers",
                    "resources", "requests", "cpu", s);
    assert_non_null(big);
    check_pod(big);
    json_decref(big);
    free(s);
}

/* Pods whose every member of interest is drawn at random from the JSON types (strings, numbers,
 * arrays, objects, null, booleans), nested as the extractor descends. */
static unsigned rnd_state = 12345;

static unsigned rnd(unsigned n)
{
    rnd_state = rnd_state * 1103515245u + 12345u;
    return (rnd_state >> 16) % n;
}

static json_t *rnd_scalar(void)
{
    static const char *const strs[] = {"", "100m", "Always", "Running", "x\xc3\xa9", "Succeeded"};

    switch (rnd(6)) {
    case 0:
        return json_null();
    case 1:
        return json_boolean(rnd(2));
    case 2:
        return json_integer((json_int_t)rnd(1000));
    case 3:
        return json_array();
    default:
        return json_string(strs[rnd(6)]);
    }
}

static json_t *rnd_map(void)
{
    static const char *const keys[] = {"cpu", "memory", "pods", "nvidia.com/gpu", "e"};
    json_t *m;

    if (rnd(5) == 0)
        return rnd_scalar();
    m = json_object();
    for (unsigned i = rnd(5); i > 0; i--)
        json_object_set_new(m, keys[rnd(5)], rnd_scalar());
    return m;
}

static json_t *rnd_ctrs(void)
{
    json_t *l;

    if (rnd(6) == 0)
        return rnd_scalar();
    l = json_array();
    for (unsigned i = rnd(4); i > 0; i--) {
        json_t *c = rnd(8) ? json_object() : rnd_scalar();
        if (json_is_object(c)) {
            json_object_set_new(c, "name", rnd_scalar());
            json_object_set_new(c, "restartPolicy", rnd_scalar());
            json_object_set_new(
                c, "resources",
                rnd(6) ? json_pack("{s:o,s:o}", "requests", rnd_map(), "limits", rnd_map())
                       : rnd_scalar());
        }
        json_array_append_new(l, c);
    }
    return l;
}

static void test_random_pods(void **state)
{
    (void)state;
    for (unsigned i = 0; i < 3000; i++) {
        json_t *pod = json_pack(
            "{s:{s:o,s:o,s:{s:o,s:o}},s:{s:o,s:o,s:o,s:o},s:{s:o}}", "metadata", "name",
            rnd_scalar(), "namespace", rnd_scalar(), "labels", SHR_LABEL_ORIGIN, rnd_scalar(),
            "app", rnd_scalar(), "spec", "nodeName", rnd_scalar(), "containers", rnd_ctrs(),
            "initContainers", rnd_ctrs(), "overhead", rnd_map(), "status", "phase", rnd_scalar());
        assert_non_null(pod);
        if (rnd(4) == 0)
            json_object_del(pod, rnd(2) ? "spec" : "metadata");
        check_pod(pod);
        json_decref(pod);
    }
}

static void test_arguments(void **state)
{
    struct kpod_options many = {.nlabels = KPOD_MAX_LABELS + 1};
    struct kpod_options null_label = {.nlabels = 1};
    json_t *pod = json_object();
    struct kpod *p;

    (void)state;
    assert_int_equal(kpod_build(NULL, &opts, NULL, 0), -EINVAL);
    assert_int_equal(kpod_build(pod, NULL, NULL, 0), -EINVAL);
    assert_int_equal(kpod_build(pod, &many, NULL, 0), -EINVAL);
    assert_int_equal(kpod_build(pod, &null_label, NULL, 0), -EINVAL);
    assert_int_equal(kpod_from_json(pod, &opts, NULL), -EINVAL);
    assert_int_equal(kpod_from_json(pod, &opts, &p), 0);
    assert_int_equal(p->ncontainers + p->ninit + p->nqty, 0);
    assert_null(kpod_text(p, p->ns));
    free(p);
    json_decref(pod);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_committed_pods),
        cmocka_unit_test(test_bench_shapes),
        cmocka_unit_test(test_missing_and_wrong_types),
        cmocka_unit_test(test_huge_and_unicode),
        cmocka_unit_test(test_random_pods),
        cmocka_unit_test(test_arguments),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
