/* Unit tests of the informer's store (src/kube/store.c): both layouts, dictionary learning, the
 * hash table under growth and deletion, indexes, relist marks, accounting and allocation
 * failures. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/xalloc.h"
#include "kube/store.h"

static json_t *pod(int i, const char *app, const char *rv)
{
    char name[64], ip[32];

    snprintf(name, sizeof(name), "web-%05d", i);
    snprintf(ip, sizeof(ip), "10.1.%d.%d", i / 256, i % 256);
    return json_pack("{s:s,s:s,s:{s:s,s:s,s:s,s:{s:s,s:s}},s:{s:[{s:s,s:s,s:{s:{s:s,s:s}}}]},"
                     "s:{s:s,s:s}}",
                     "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace", "ns",
                     "resourceVersion", rv, "labels", "app", app, "tier", "frontend", "spec",
                     "containers", "name", "web", "image", "nginx:1.25", "resources", "requests",
                     "cpu", "100m", "memory", "128Mi", "status", "phase", "Running", "podIP", ip);
}

static void key_of(int i, char *buf, size_t size)
{
    snprintf(buf, size, "ns/web-%05d", i);
}

static int app_index(const json_t *obj, const char **values, size_t max)
{
    const char *v = json_string_value(
        json_object_get(json_object_get(json_object_get(obj, "metadata"), "labels"), "app"));
    if (!v || max < 1)
        return 0;
    values[0] = v;
    return 1;
}

/* Returns every label value, the first one twice (the store must not add an entry twice). */
static int label_values(const json_t *obj, const char **values, size_t max)
{
    json_t *labels = json_object_get(json_object_get(obj, "metadata"), "labels");
    const char *k;
    json_t *v;
    size_t n = 0;

    json_object_foreach(labels, k, v)
    {
        if (n + 1 >= max)
            break;
        values[n++] = json_string_value(v);
        if (n == 1)
            values[n++] = json_string_value(v);
    }
    return (int)n;
}

static void count_visit(json_t *obj, void *data)
{
    assert_true(json_is_object(obj));
    (*(int *)data)++;
}

static void basic(enum kstore_mode mode)
{
    struct kstore *s;
    json_t *a = pod(1, "web", "10"), *b = pod(1, "web", "11"), *old, *got;
    struct kstore_entry *e;

    assert_int_equal(kstore_new(mode, &s), 0);
    assert_int_equal(kstore_mode(s), mode);
    assert_null(kstore_find(s, "ns/web-00001"));
    assert_int_equal(kstore_put(s, "ns/web-00001", a, "10", &old), 0);
    assert_null(old);
    assert_int_equal(kstore_count(s), 1);
    e = kstore_find(s, "ns/web-00001");
    assert_non_null(e);
    assert_string_equal(kstore_entry_key(e), "ns/web-00001");
    assert_string_equal(kstore_entry_rv(e), "10");
    assert_int_equal(kstore_decode(s, e, &got), 0);
    assert_true(json_equal(got, a));
    json_decref(got);

    /* Replace: the entry stays, the old object comes back. */
    assert_int_equal(kstore_put(s, "ns/web-00001", b, "11", &old), 1);
    assert_ptr_equal(kstore_find(s, "ns/web-00001"), e);
    assert_non_null(old);
    assert_true(json_equal(old, a));
    json_decref(old);
    assert_string_equal(kstore_entry_rv(e), "11");
    assert_int_equal(kstore_decode(s, e, &got), 0);
    assert_true(json_equal(got, b));
    json_decref(got);

    /* No rv is kept as "". */
    assert_int_equal(kstore_put(s, "ns/other", a, NULL, NULL), 0);
    assert_string_equal(kstore_entry_rv(kstore_find(s, "ns/other")), "");

    kstore_remove(s, e, &old);
    assert_true(json_equal(old, b));
    json_decref(old);
    assert_null(kstore_find(s, "ns/web-00001"));
    assert_int_equal(kstore_count(s), 1);
    old = json_string("x");
    assert_int_equal(kstore_put(s, "bad", old, NULL, NULL), -EINVAL);
    json_decref(old);
    json_decref(a);
    json_decref(b);
    kstore_free(s);
}

static void test_basic_compact(void **state)
{
    (void)state;
    basic(KSTORE_COMPACT);
}

static void test_basic_tree(void **state)
{
    (void)state;
    basic(KSTORE_TREE);
}

/* Many objects: growth, dictionary learning and compression, deletions with backward shift. */
static void test_many(void **state)
{
    struct kstore *s;
    struct kstore_stats st;
    char key[64];
    int n = 0;

    (void)state;
    assert_int_equal(kstore_new(KSTORE_COMPACT, &s), 0);
    for (int i = 0; i < 3000; i++) {
        json_t *p = pod(i, i % 3 ? "web" : "api", "5");
        key_of(i, key, sizeof(key));
        assert_int_equal(kstore_put(s, key, p, "5", NULL), 0);
        json_decref(p);
        if (i == KSTORE_DICT_SAMPLES - 2) {
            kstore_get_stats(s, &st);
            assert_int_equal(st.dict_len, 0); /* still learning */
            assert_int_equal(st.compressed, 0);
        }
    }
    kstore_get_stats(s, &st);
    assert_int_equal(st.count, 3000);
    assert_true(st.dict_len > 0);
    assert_true(st.compressed * 4 < st.raw_json);
    assert_true(st.values < st.raw_json);
    assert_true(st.table >= 3000 * sizeof(void *));
    /* Remove every other one, then check each remaining key and decode. */
    for (int i = 0; i < 3000; i += 2) {
        key_of(i, key, sizeof(key));
        kstore_remove(s, kstore_find(s, key), NULL);
    }
    assert_int_equal(kstore_count(s), 1500);
    for (int i = 0; i < 3000; i++) {
        struct kstore_entry *e;
        json_t *got, *want;
        key_of(i, key, sizeof(key));
        e = kstore_find(s, key);
        if (i % 2 == 0) {
            assert_null(e);
            continue;
        }
        assert_non_null(e);
        assert_int_equal(kstore_decode(s, e, &got), 0);
        want = pod(i, i % 3 ? "web" : "api", "5");
        assert_true(json_equal(got, want));
        json_decref(got);
        json_decref(want);
    }
    assert_int_equal(kstore_foreach(s, count_visit, &n), 1500);
    assert_int_equal(n, 1500);
    /* kstore_next visits every entry once, across the shards of the table, then stays at the end.
     */
    {
        unsigned char seen[3000] = {0};
        size_t it = 0, visited = 0;
        struct kstore_entry *e;
        while ((e = kstore_next(s, &it))) {
            json_t *got;
            int idx;
            assert_int_equal(kstore_decode(s, e, &got), 0);
            assert_int_equal(
                sscanf(json_string_value(json_object_get(json_object_get(got, "metadata"), "name")),
                       "web-%d", &idx),
                1);
            json_decref(got);
            assert_true(idx >= 0 && idx < 3000 && idx % 2 == 1);
            assert_int_equal(seen[idx]++, 0);
            visited++;
        }
        assert_int_equal(visited, 1500);
        assert_null(kstore_next(s, &it));
    }
    kstore_free(s);
}

/* A small collection stays uncompressed (no dictionary to pay for) until its objects add up to
 * KSTORE_COMPRESS_MIN bytes; then every one is compressed, with a dictionary of the first ones. */
static void test_compress_min(void **state)
{
    struct kstore *s;
    struct kstore_stats st;
    char key[64];
    json_t *p, *got;
    int i;

    (void)state;
    assert_int_equal(kstore_new(KSTORE_COMPACT, &s), 0);
    for (i = 0; i < 20; i++) {
        p = pod(i, "web", "1");
        key_of(i, key, sizeof(key));
        assert_int_equal(kstore_put(s, key, p, "1", NULL), 0);
        json_decref(p);
    }
    kstore_get_stats(s, &st);
    assert_int_equal(st.dict_len, 0);
    assert_int_equal(st.compressed, 0);
    assert_true(st.fixed < 8 * 1024); /* no dictionary, no samples */
    assert_true(st.values + st.slack < 16 * 1024);
    do {
        p = pod(i, "web", "1");
        key_of(i++, key, sizeof(key));
        assert_int_equal(kstore_put(s, key, p, "1", NULL), 0);
        json_decref(p);
        kstore_get_stats(s, &st);
    } while (st.raw_json < KSTORE_COMPRESS_MIN);
    assert_true(st.dict_len > 0);
    assert_true(st.compressed * 4 < st.raw_json); /* all of them, the first 20 too */
    for (int j = 0; j < i; j++) {
        json_t *want = pod(j, "web", "1");
        key_of(j, key, sizeof(key));
        assert_int_equal(kstore_decode(s, kstore_find(s, key), &got), 0);
        assert_true(json_equal(got, want));
        json_decref(got);
        json_decref(want);
    }
    kstore_free(s);
}

/* A store that never reaches KSTORE_COMPRESS_MIN is compressed by kstore_freeze. */
static void test_freeze(void **state)
{
    struct kstore *s;
    struct kstore_stats st;
    json_t *p = pod(7, "web", "1"), *got;

    (void)state;
    assert_int_equal(kstore_new(KSTORE_COMPACT, &s), 0);
    assert_int_equal(kstore_put(s, "ns/web-00007", p, "1", NULL), 0);
    kstore_get_stats(s, &st);
    assert_int_equal(st.compressed, 0);
    assert_int_equal(kstore_freeze(s), 0);
    assert_int_equal(kstore_freeze(s), 0);
    kstore_get_stats(s, &st);
    assert_true(st.compressed > 0 && st.compressed < st.raw_json / 4);
    assert_int_equal(kstore_decode(s, kstore_find(s, "ns/web-00007"), &got), 0);
    assert_true(json_equal(got, p));
    json_decref(got);
    json_decref(p);
    kstore_free(s);
}

static void indexes(enum kstore_mode mode)
{
    struct kstore *s;
    char key[64];
    int n;

    assert_int_equal(kstore_new(mode, &s), 0);
    assert_int_equal(kstore_add_index(s, "app", app_index), 0);
    assert_int_equal(kstore_add_index(s, "app", app_index), -EEXIST);
    assert_int_equal(kstore_add_index(s, "labels", label_values), 0);
    for (int i = 2; i < KSTORE_MAX_INDEXES; i++) {
        char name[16];
        snprintf(name, sizeof(name), "i%d", i);
        assert_int_equal(kstore_add_index(s, name, app_index), 0);
    }
    assert_int_equal(kstore_add_index(s, "one-too-many", app_index), -ENOSPC);
    for (int i = 0; i < 100; i++) {
        json_t *p = pod(i, i < 30 ? "api" : "web", "1");
        key_of(i, key, sizeof(key));
        assert_int_equal(kstore_put(s, key, p, "1", NULL), 0);
        json_decref(p);
    }
    assert_int_equal(kstore_add_index(s, "late", app_index), -EINVAL);
    n = 0;
    assert_int_equal(kstore_index_foreach(s, "app", "api", count_visit, &n), 30);
    assert_int_equal(n, 30);
    assert_int_equal(kstore_index_foreach(s, "app", "web", count_visit, &n), 70);
    assert_int_equal(kstore_index_foreach(s, "app", "none", count_visit, &n), 0);
    assert_int_equal(kstore_index_foreach(s, "nope", "web", count_visit, &n), -ENOENT);
    assert_int_equal(kstore_index_foreach(s, "labels", "frontend", count_visit, &n), 100);
    assert_int_equal(kstore_index_foreach(s, "labels", "api", count_visit, &n), 30);

    /* An update moves the entry between sets; a removal takes it out. */
    json_t *p = pod(0, "web", "2");
    assert_int_equal(kstore_put(s, "ns/web-00000", p, "2", NULL), 1);
    json_decref(p);
    assert_int_equal(kstore_index_foreach(s, "app", "api", count_visit, &n), 29);
    assert_int_equal(kstore_index_foreach(s, "app", "web", count_visit, &n), 71);
    for (int i = 1; i < 30; i++) {
        key_of(i, key, sizeof(key));
        kstore_remove(s, kstore_find(s, key), NULL);
    }
    assert_int_equal(kstore_index_foreach(s, "app", "api", count_visit, &n), 0);
    assert_int_equal(kstore_index_foreach(s, "labels", "frontend", count_visit, &n), 71);
    kstore_free(s);
}

static void test_indexes_compact(void **state)
{
    (void)state;
    indexes(KSTORE_COMPACT);
}

static void test_indexes_tree(void **state)
{
    (void)state;
    indexes(KSTORE_TREE);
}

static void test_generations(void **state)
{
    struct kstore *s;
    json_t *p = pod(1, "web", "1");
    struct kstore_entry *a, *b;

    (void)state;
    assert_int_equal(kstore_new(KSTORE_COMPACT, &s), 0);
    assert_int_equal(kstore_put(s, "a", p, "1", NULL), 0);
    assert_int_equal(kstore_put(s, "b", p, "1", NULL), 0);
    a = kstore_find(s, "a");
    b = kstore_find(s, "b");
    assert_false(kstore_stale(s, a));
    assert_int_equal(kstore_stale_count(s), 0);
    kstore_new_generation(s);
    assert_true(kstore_stale(s, a));
    assert_true(kstore_stale(s, b));
    assert_int_equal(kstore_stale_count(s), 2);
    kstore_touch(s, a);
    kstore_touch(s, a); /* twice: counted once */
    assert_false(kstore_stale(s, a));
    assert_int_equal(kstore_stale_count(s), 1);
    assert_int_equal(kstore_put(s, "b", p, "2", NULL), 1);
    assert_false(kstore_stale(s, b));
    assert_int_equal(kstore_stale_count(s), 0);
    assert_int_equal(kstore_put(s, "b", p, "3", NULL), 1); /* marked already */
    assert_int_equal(kstore_stale_count(s), 0);
    /* A new entry is marked; removing a marked or a stale one keeps the count. */
    kstore_new_generation(s);
    assert_int_equal(kstore_put(s, "c", p, "1", NULL), 0);
    assert_int_equal(kstore_stale_count(s), 2);
    kstore_remove(s, kstore_find(s, "a"), NULL); /* stale */
    assert_int_equal(kstore_stale_count(s), 1);
    kstore_remove(s, kstore_find(s, "c"), NULL); /* marked */
    assert_int_equal(kstore_stale_count(s), 1);
    kstore_touch(s, kstore_find(s, "b"));
    assert_int_equal(kstore_stale_count(s), 0);
    json_decref(p);
    kstore_free(s);
}

/* Every allocation of a put, a replacement and a freeze fails in turn: the call fails cleanly or
 * succeeds, the store stays consistent, nothing leaks (ASan/LSan). */
/* Records kept beside entries (the informer's typed records): copied, kept across updates, the
 * old one valid until freed, freed with the entry or the store, counted; a failed copy leaves
 * the entry's record as it was. */
static void test_records(void **state)
{
    struct kstore *s;
    struct kstore_entry *e;
    struct kstore_stats st;
    const void *old = NULL;
    json_t *p = pod(1, "web", "1"), *q = pod(1, "web", "2");
    char a[40] = "record one", b[3000] = "record two", key[64];

    (void)state;
    assert_int_equal(kstore_new(KSTORE_COMPACT, &s), 0);
    key_of(1, key, sizeof(key));
    assert_int_equal(kstore_put(s, key, p, "1", NULL), 0);
    e = kstore_find(s, key);
    assert_null(kstore_entry_record(e));
    assert_int_equal(kstore_set_record(s, e, a, sizeof(a), &old), 0);
    assert_null(old);
    a[0] = 'X'; /* the store has its own copy */
    assert_string_equal(kstore_entry_record(e), "record one");
    assert_int_equal((uintptr_t)kstore_entry_record(e) % 8, 0);
    kstore_get_stats(s, &st);
    assert_true(st.records >= sizeof(a));
    /* an update keeps it */
    assert_int_equal(kstore_put(s, key, q, "2", NULL), 1);
    assert_string_equal(kstore_entry_record(e), "record one");
    /* a larger one (beyond the slab classes) replaces it; the old one stays readable */
    assert_int_equal(kstore_set_record(s, e, b, sizeof(b), &old), 0);
    assert_string_equal(old, "record one");
    assert_string_equal(kstore_entry_record(e), "record two");
    kstore_record_free(s, old);
    kstore_record_free(s, NULL);
    /* out of memory: unchanged */
    xalloc_fail_after(0);
    assert_int_equal(kstore_set_record(s, e, a, 5000, &old), -ENOMEM);
    xalloc_fail_after(-1);
    assert_string_equal(kstore_entry_record(e), "record two");
    assert_int_equal(kstore_set_record(s, e, NULL, 0, NULL), -EINVAL);
    /* detached, then attached again and left for kstore_remove / kstore_free (ASan: no leak) */
    assert_int_equal(kstore_set_record(s, e, NULL, 0, &old), 0);
    assert_null(kstore_entry_record(e));
    kstore_record_free(s, old);
    kstore_get_stats(s, &st);
    assert_int_equal(st.records, 0);
    assert_int_equal(kstore_set_record(s, e, b, sizeof(b), &old), 0);
    kstore_remove(s, e, NULL);
    key_of(2, key, sizeof(key));
    assert_int_equal(kstore_put(s, key, p, "1", NULL), 0);
    assert_int_equal(kstore_set_record(s, kstore_find(s, key), b, sizeof(b), &old), 0);
    kstore_free(s);
    json_decref(p);
    json_decref(q);
}

/* A pod as it grows (a node, then a status with conditions), as an informer of pods sees it. */
static json_t *grown(int i, int stage, char *rv, size_t rvlen)
{
    json_t *p = pod(i, "web", "1");

    snprintf(rv, rvlen, "%d", 10 * i + stage);
    json_object_set_new(json_object_get(p, "metadata"), "resourceVersion", json_string(rv));
    if (stage >= 1)
        json_object_set_new(json_object_get(p, "spec"), "nodeName", json_string("node-7"));
    for (int c = 0; c < stage; c++) {
        char why[64];
        snprintf(why, sizeof(why), "condition-%d-of-pod-%d-reached", c, i);
        json_object_set_new(json_object_get(p, "status"), why, json_string("2026-12-01T10:00:00Z"));
    }
    return p;
}

/* Values that grow leave chunks no new value takes; kstore_compact packs the values again (and
 * only when there is enough to gain), every object decodes as it was, and small collections start
 * with a small slab. */
static void test_compact(void **state)
{
    enum { N = 3000 };
    struct kstore_stats before, after;
    struct kstore *s;
    char key[64], rv[32];
    json_t *p, *got;

    (void)state;
    assert_int_equal(kstore_new(KSTORE_COMPACT, &s), 0);
    p = pod(1, "web", "1");
    assert_int_equal(kstore_put(s, "ns/web-00001", p, "1", NULL), 0);
    json_decref(p);
    kstore_get_stats(s, &before);
    assert_true(before.slack < 8 * 1024); /* one object: a few KiB, not 64 */
    assert_int_equal(kstore_compact(s), 0);
    kstore_remove(s, kstore_find(s, "ns/web-00001"), NULL);
    for (int stage = 0; stage < 4; stage++)
        for (int i = 0; i < N; i++) {
            p = grown(i, stage, rv, sizeof(rv));
            key_of(i, key, sizeof(key));
            assert_int_equal(kstore_put(s, key, p, rv, NULL), stage ? 1 : 0);
            json_decref(p);
        }
    kstore_get_stats(s, &before);
    assert_true(before.slack >= KSTORE_COMPACT_MIN);
    assert_true(before.slack * 4 >= before.values); /* what the condition below compacts on */
    xalloc_fail_after(0);
    assert_int_equal(kstore_compact(s), -ENOMEM); /* nothing changed: checked below */
    xalloc_fail_after(-1);
    assert_int_equal(kstore_compact(s), 1);
    assert_int_equal(kstore_compactions(s), 1);
    kstore_get_stats(s, &after);
    assert_int_equal(after.count, N);
    assert_int_equal(after.values, before.values);
    assert_true(after.slack < before.slack / 4);
    assert_int_equal(kstore_compact(s), 0); /* nothing left to gain */
    for (int i = 0; i < N; i++) {
        struct kstore_entry *e;
        p = grown(i, 3, rv, sizeof(rv));
        key_of(i, key, sizeof(key));
        e = kstore_find(s, key);
        assert_non_null(e);
        assert_string_equal(kstore_entry_rv(e), rv);
        assert_int_equal(kstore_decode(s, e, &got), 0);
        assert_true(json_equal(got, p));
        json_decref(got);
        json_decref(p);
    }
    /* The store goes on as before: updates, removals, a second compaction. */
    for (int i = 0; i < N; i += 2) {
        key_of(i, key, sizeof(key));
        kstore_remove(s, kstore_find(s, key), NULL);
    }
    assert_int_equal(kstore_compact(s), 1);
    p = grown(1, 0, rv, sizeof(rv));
    assert_int_equal(kstore_put(s, "ns/web-00001", p, "99", NULL), 1);
    assert_int_equal(kstore_decode(s, kstore_find(s, "ns/web-00001"), &got), 0);
    assert_true(json_equal(got, p));
    json_decref(got);
    json_decref(p);
    assert_int_equal(kstore_count(s), N / 2);
    kstore_free(s);
    /* In tree mode the values hold references: moved, they still do. */
    assert_int_equal(kstore_new(KSTORE_TREE, &s), 0);
    for (int stage = 0; stage < 2; stage++)
        for (int i = 0; i < N * 4; i++) {
            p = grown(i, stage, rv, sizeof(rv));
            key_of(i, key, sizeof(key));
            assert_int_equal(kstore_put(s, key, p, stage ? NULL : rv, NULL), stage ? 1 : 0);
            json_decref(p);
        }
    for (int i = 0; i < N * 4; i += 3) {
        key_of(i, key, sizeof(key));
        kstore_remove(s, kstore_find(s, key), NULL);
    }
    (void)kstore_compact(s);
    p = grown(7, 1, rv, sizeof(rv));
    assert_int_equal(kstore_decode(s, kstore_find(s, "ns/web-00007"), &got), 0);
    assert_true(json_equal(got, p));
    json_decref(got);
    json_decref(p);
    kstore_free(s);
}

static void test_alloc_failures(void **state)
{
    (void)state;
    for (long fail = 0; fail < 80; fail++) {
        struct kstore *s = NULL;
        json_t *p = pod(1, "web", "1"), *q = pod(1, "api", "2"), *old = NULL, *got;
        char key[64];
        int r, n = 0;

        assert_int_equal(kstore_new(KSTORE_COMPACT, &s), 0);
        assert_int_equal(kstore_add_index(s, "app", app_index), 0);
        for (int i = 2; i < 5; i++) {
            key_of(i, key, sizeof(key));
            assert_int_equal(kstore_put(s, key, p, "1", NULL), 0);
        }
        xalloc_fail_after(fail);
        r = kstore_put(s, "ns/web-00001", p, "1", NULL);
        if (r == 0)
            r = kstore_put(s, "ns/web-00001", q, "2", &old);
        if (r >= 0)
            (void)kstore_freeze(s);
        xalloc_fail_after(-1);
        json_decref(old);
        for (int i = 2; i < 5; i++) {
            key_of(i, key, sizeof(key));
            assert_int_equal(kstore_decode(s, kstore_find(s, key), &got), 0);
            assert_true(json_equal(got, p));
            json_decref(got);
        }
        if (kstore_find(s, "ns/web-00001")) {
            assert_int_equal(kstore_decode(s, kstore_find(s, "ns/web-00001"), &got), 0);
            assert_true(json_equal(got, r == 1 ? q : p));
            json_decref(got);
        }
        assert_true(kstore_index_foreach(s, "app", "web", count_visit, &n) >= 3);
        kstore_free(s);
        json_decref(p);
        json_decref(q);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic_compact),
        cmocka_unit_test(test_basic_tree),
        cmocka_unit_test(test_many),
        cmocka_unit_test(test_freeze),
        cmocka_unit_test(test_indexes_compact),
        cmocka_unit_test(test_indexes_tree),
        cmocka_unit_test(test_generations),
        cmocka_unit_test(test_records),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_compact),
        cmocka_unit_test(test_compress_min),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
