/* Unit tests of the streaming list splitter (src/kube/liststream.c): the items and the envelope
 * it gives equal what jansson decodes from the whole body, whatever the chunking; the malformed
 * and oversized bodies it refuses. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "kube/liststream.h"
#include "kube/store.h"

struct got {
    json_t *items; /* decoded elements, in order */
    int fail_at;   /* return -EIO for this element (1-based); 0: never */
};

static int collect(const char *item, size_t len, void *data)
{
    struct got *g = data;
    json_t *j = json_loadb(item, len, 0, NULL);

    assert_non_null(j);
    json_array_append_new(g->items, j);
    if (g->fail_at && (int)json_array_size(g->items) == g->fail_at)
        return -EIO;
    return 0;
}

/* Feeds text in chunks of `step` bytes (0: whole); returns kls_finish's result. */
static int split(const char *text, size_t step, size_t max_item, size_t max_rest, struct got *g,
                 json_t **env)
{
    struct kls s;
    size_t len = strlen(text);
    int r = 0;

    g->items = json_array();
    kls_init(&s, max_item, max_rest, collect, g);
    for (size_t off = 0; off < len && r == 0; off += step ? step : len) {
        size_t n = step && len - off > step ? step : len - off;
        r = kls_feed(&s, text + off, n);
    }
    if (r == 0)
        r = kls_finish(&s, env);
    else
        assert_int_equal(kls_finish(&s, env), r); /* errors stick */
    kls_done(&s);
    return r;
}

/* The body splits into exactly the items and envelope jansson sees, for every chunk size. */
static void check_same(const char *text)
{
    json_t *whole = json_loads(text, 0, NULL), *items, *want_env;

    assert_non_null(whole);
    items = json_object_get(whole, "items");
    want_env = json_deep_copy(whole);
    if (json_is_array(items))
        json_object_set_new(want_env, "items", json_array()); /* only an array is split */
    items = json_is_array(items) ? json_incref(items) : json_array();
    for (size_t step = 0; step <= strlen(text); step = step < 8 ? step + 1 : step * 3) {
        struct got g = {0};
        json_t *env = NULL;
        assert_int_equal(split(text, step, 1 << 20, 1 << 16, &g, &env), 0);
        assert_true(json_equal(g.items, items));
        assert_true(json_equal(env, want_env));
        json_decref(env);
        json_decref(g.items);
    }
    json_decref(items);
    json_decref(want_env);
    json_decref(whole);
}

static void test_lists(void **state)
{
    (void)state;
    check_same(
        "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"42\","
        "\"continue\":\"abc\"},\"items\":[{\"metadata\":{\"name\":\"a\"}},"
        "{\"metadata\":{\"name\":\"b\",\"labels\":{\"items\":\"[{]}\"}},\"x\":[1,[2],{}]}]}");
    /* Items first, metadata after; whitespace everywhere. */
    check_same(" {\n \"items\" : [ { \"a\" : \"}\\\"]\" } , {\"b\":[]}\n] ,\n"
               " \"metadata\" : { \"resourceVersion\" : \"7\" } }\n");
    check_same("{\"kind\":\"List\",\"items\":[]}");
    check_same("{\"kind\":\"List\",\"items\":null,\"metadata\":{}}");
    check_same("{\"kind\":\"List\"}");
    /* A member named like items but escaped, or "items" deeper: not the list's items. */
    check_same(
        "{\"it\\u0065ms\":[1,2],\"metadata\":{\"items\":[3]},\"items\":[{\"k\":\"items\"}]}");
    /* Strings with every escape the splitter must step over. */
    check_same("{\"items\":[{\"s\":\"\\\\\",\"t\":\"\\\\\\\"{[\",\"u\":\"\\u007b\"}]}");
}

static void test_envelope_values(void **state)
{
    struct got g = {0};
    json_t *env = NULL;

    (void)state;
    assert_int_equal(split("{\"metadata\":{\"resourceVersion\":\"9\",\"continue\":\"c1\"},"
                           "\"items\":[{\"a\":1},{\"a\":2},{\"a\":3}]}",
                           5, 1024, 1024, &g, &env),
                     0);
    assert_int_equal(json_array_size(g.items), 3);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(env, "metadata"), "continue")), "c1");
    assert_int_equal(json_array_size(json_object_get(env, "items")), 0);
    json_decref(env);
    json_decref(g.items);
}

static void refused(const char *text, size_t max_item, size_t max_rest, int want)
{
    for (size_t step = 0; step <= 3; step++) {
        struct got g = {0};
        json_t *env = NULL;
        assert_int_equal(split(text, step, max_item, max_rest, &g, &env), want);
        assert_null(env);
        json_decref(g.items);
    }
}

static void test_refused(void **state)
{
    (void)state;
    refused("", 1024, 1024, -EBADMSG);
    refused("[]", 1024, 1024, -EBADMSG);
    refused("\"x\"", 1024, 1024, -EBADMSG);
    refused("{\"items\":[1]}", 1024, 1024, -EBADMSG);
    refused("{\"items\":[[]]}", 1024, 1024, -EBADMSG);
    refused("{\"items\":[{}{}]}", 1024, 1024, -EBADMSG);
    refused("{\"items\":[,{}]}", 1024, 1024, -EBADMSG);
    refused("{\"items\":[{}}", 1024, 1024, -EBADMSG);
    refused("{\"items\":[{}]}x", 1024, 1024, -EBADMSG);
    refused("{\"items\":[{}]}{}", 1024, 1024, -EBADMSG);
    refused("{\"items\":[{}]", 1024, 1024, -EBADMSG);
    refused("{\"items\":[{\"a\":\"}", 1024, 1024, -EBADMSG);
    refused("{\"a\":]}", 1024, 1024, -EBADMSG);
    /* Sizes: an element over max_item, an envelope over max_rest. */
    refused("{\"items\":[{\"a\":\"0123456789\"}]}", 10, 1024, -E2BIG);
    refused("{\"metadata\":{\"a\":\"0123456789012345678901234567890123456789\"},\"items\":[]}",
            1024, 16, -E2BIG);
}

static void test_depth(void **state)
{
    char text[512];
    size_t n = 0;

    (void)state;
    n += (size_t)snprintf(text + n, sizeof(text) - n, "{\"items\":[");
    for (int i = 0; i < KLS_MAX_DEPTH; i++)
        text[n++] = '{', text[n++] = '"', text[n++] = 'a', text[n++] = '"', text[n++] = ':';
    text[n++] = '1';
    for (int i = 0; i < KLS_MAX_DEPTH; i++)
        text[n++] = '}';
    snprintf(text + n, sizeof(text) - n, "]}");
    refused(text, 1 << 16, 1024, -EBADMSG);
}

static void test_callback_error(void **state)
{
    struct got g = {.fail_at = 2};
    json_t *env = NULL;

    (void)state;
    assert_int_equal(split("{\"items\":[{\"a\":1},{\"a\":2},{\"a\":3}]}", 4, 1024, 1024, &g, &env),
                     -EIO);
    assert_int_equal(json_array_size(g.items), 2);
    json_decref(g.items);
}

/* Realistic objects: the API server's objects the tests keep (tests/data), as a list. */
static void test_data_objects(void **state)
{
    static const char *files[] = {"jsonb/pod-managed-fields.json"};
    char path[1024];

    (void)state;
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        json_t *obj, *list;
        char *text;
        snprintf(path, sizeof(path), "%s/%s", CLIQO_TEST_DATA, files[i]);
        obj = json_load_file(path, 0, NULL);
        assert_non_null(obj);
        list = json_pack("{s:s,s:s,s:{s:s},s:[O,O,O]}", "kind", "PodList", "apiVersion", "v1",
                         "metadata", "resourceVersion", "12345", "items", obj, obj, obj);
        text = json_dumps(list, 0);
        check_same(text);
        free(text);
        text = json_dumps(list, JSON_COMPACT);
        check_same(text);
        free(text);
        json_decref(list);
        json_decref(obj);
    }
}

/* The text without metadata.managedFields, or NULL when kls_find_managed_fields finds none. */
static char *cut_mf(const char *text)
{
    size_t from, to, len = strlen(text);
    char *out;

    if (kls_find_managed_fields(text, len, &from, &to) != 1)
        return NULL;
    assert_true(from <= to && to <= len);
    out = malloc(len - (to - from) + 1);
    memcpy(out, text, from);
    memcpy(out + from, text + to, len - to);
    out[len - (to - from)] = '\0';
    return out;
}

static void check_cut(const char *text, const char *want)
{
    char *got = cut_mf(text);

    if (!want) {
        assert_null(got);
        return;
    }
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void test_managed_fields(void **state)
{
    (void)state;
    check_cut("{\"metadata\":{\"name\":\"a\",\"managedFields\":[{\"f\":{\"x\":1}}],\"uid\":\"u\"}}",
              "{\"metadata\":{\"name\":\"a\",\"uid\":\"u\"}}");
    check_cut("{\"metadata\":{\"managedFields\":[],\"name\":\"a\"},\"spec\":{}}",
              "{\"metadata\":{\"name\":\"a\"},\"spec\":{}}");
    check_cut("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\",\"managedFields\":null}}",
              "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\"}}");
    check_cut("{\"metadata\":{\"managedFields\":[{\"s\":\"]},\\\"\"}]}}", "{\"metadata\":{}}");
    check_cut("{ \"metadata\" : { \"a\" : 1 , \"managedFields\" : [ ] } }",
              "{ \"metadata\" : { \"a\" : 1 } }");
    /* Not metadata's own member: left alone. */
    check_cut("{\"spec\":{\"managedFields\":[]},\"metadata\":{\"name\":\"a\"}}", NULL);
    check_cut("{\"metadata\":{\"labels\":{\"managedFields\":\"x\"}}}", NULL);
    check_cut("{\"metadata\":{\"managedField\\u0073\":[]}}", NULL);
    check_cut("{\"x\":\"\\\"metadata\\\":{\\\"managedFields\\\":1}\"}", NULL);
    check_cut("[{\"metadata\":{\"managedFields\":[]}}]", NULL);
    check_cut("", NULL);

    /* A real pod: the cut text decodes to the pod without managedFields. */
    char path[1024];
    snprintf(path, sizeof(path), "%s/jsonb/pod-managed-fields.json", CLIQO_TEST_DATA);
    json_t *pod = json_load_file(path, 0, NULL);
    assert_non_null(pod);
    for (int compact = 0; compact < 2; compact++) {
        char *text = json_dumps(pod, compact ? JSON_COMPACT : JSON_INDENT(2)), *cut = cut_mf(text);
        json_t *got, *want = json_deep_copy(pod);
        assert_non_null(cut);
        got = json_loads(cut, 0, NULL);
        assert_int_equal(json_object_del(json_object_get(want, "metadata"), "managedFields"), 0);
        assert_true(json_equal(got, want));
        json_decref(got);
        json_decref(want);
        free(cut);
        free(text);
    }
    json_decref(pod);
}

/* kls_find_member on a watch event's path: {"object", "metadata", "managedFields"}. */
static void check_event_cut(const char *text, const char *want)
{
    static const char *const path[] = {"object", "metadata", "managedFields"};
    size_t from, to, len = strlen(text);
    char *got;

    if (!want) {
        assert_int_equal(kls_find_member(text, len, path, 3, &from, &to), 0);
        return;
    }
    assert_int_equal(kls_find_member(text, len, path, 3, &from, &to), 1);
    assert_true(from <= to && to <= len);
    got = calloc(1, len + 1);
    assert_non_null(got);
    memcpy(got, text, from);
    memcpy(got + from, text + to, len - to);
    assert_string_equal(got, want);
    free(got);
}

static void test_event_member(void **state)
{
    static const char *const none[] = {"x"};
    size_t from = 0, to = 0;

    (void)state;
    check_event_cut(
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"managedFields\":"
        "[{\"f\":{}}]},\"spec\":{}}}",
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"},\"spec\":{}}}");
    check_event_cut(
        "{\"object\":{\"kind\":\"Pod\",\"metadata\":{\"managedFields\":[],\"uid\":\"u\"}},"
        "\"type\":\"MODIFIED\"}",
        "{\"object\":{\"kind\":\"Pod\",\"metadata\":{\"uid\":\"u\"}},\"type\":\"MODIFIED\"}");
    /* Members of the same name elsewhere are left alone: at the top, in another object, in an
     * array, in a string, or when "object" is not an object. */
    check_event_cut("{\"metadata\":{\"managedFields\":[]},\"object\":{\"metadata\":{}}}", NULL);
    check_event_cut("{\"type\":\"ADDED\",\"other\":{\"metadata\":{\"managedFields\":[]}},"
                    "\"object\":{\"metadata\":{\"name\":\"a\"}}}",
                    NULL);
    check_event_cut("{\"object\":[{\"metadata\":{\"managedFields\":[]}}]}", NULL);
    check_event_cut("{\"object\":\"{\\\"metadata\\\":{\\\"managedFields\\\":[]}}\"}", NULL);
    check_event_cut("{\"object\":{\"spec\":{\"metadata\":{\"managedFields\":[]}}}}", NULL);
    /* The first "object" only, as the list's finder follows the first "metadata". */
    check_event_cut(
        "{\"object\":{\"metadata\":{}},\"object\":{\"metadata\":{\"managedFields\":1}}}", NULL);
    check_event_cut("{\"object\":{\"metadata\":{\"managedFields\":1", NULL); /* truncated */
    /* A one-name path is a top-level member; no path finds nothing. */
    assert_int_equal(kls_find_member("{\"a\":1,\"x\":2}", 13, none, 1, &from, &to), 1);
    assert_int_equal(from, 6);
    assert_int_equal(to, 12);
    assert_int_equal(kls_find_member("{\"x\":2}", 7, none, 0, &from, &to), 0);
}

/* ---- differential: the informer's new path against main's, on API server lists ----------------
 */

/* main's path: the whole body decoded by jansson, managedFields deleted from each tree, the tree
 * serialised by the store. The new path: the body split while it arrives (in chunks of `step`),
 * each object decoded by kls_decode_object (managedFields cut from the text, jsonb_load's fast
 * path), its text kept by the store. Both stores must hold the same objects, equal to jansson's
 * decoding of the body without managedFields. */
struct newpath {
    struct kstore *st;
    char *buf;
    size_t cap;
    int fast; /* objects that came through */
};

static void key_of_obj(const json_t *obj, char *key, size_t size)
{
    const json_t *md = json_object_get(obj, "metadata");
    const char *ns = json_string_value(json_object_get(md, "namespace"));

    snprintf(key, size, "%s/%s", ns ? ns : "", json_string_value(json_object_get(md, "name")));
}

static int put_new(const char *item, size_t len, void *data)
{
    struct newpath *np = data;
    const char *text;
    size_t text_len;
    json_t *obj;
    char key[600];

    assert_int_equal(kls_decode_object(item, len, &np->buf, &np->cap, &obj, &text, &text_len), 0);
    /* What the informer's upsert does: a managedFields still in the tree (a duplicate member) is
     * deleted, and then the text no longer matches the tree. */
    if (json_object_del(json_object_get(obj, "metadata"), "managedFields") == 0)
        text = NULL;
    key_of_obj(obj, key, sizeof(key));
    assert_true(kstore_put_text(np->st, key, obj, text, text ? text_len : 0,
                                json_string_value(json_object_get(json_object_get(obj, "metadata"),
                                                                  "resourceVersion")),
                                NULL) >= 0);
    np->fast++;
    json_decref(obj);
    return 0;
}

static void differential(const char *file)
{
    char path[1024], key[600];
    json_t *body, *item, *env = NULL;
    struct kstore *old_st, *new_st;
    char *text;
    size_t i;

    snprintf(path, sizeof(path), "%s/%s", CLIQO_TEST_DATA, file);
    body = json_load_file(path, 0, NULL);
    assert_non_null(body);
    text = json_dumps(body, JSON_COMPACT);
    assert_int_equal(kstore_new(KSTORE_COMPACT, &old_st), 0);
    json_array_foreach(json_object_get(body, "items"), i, item)
    {
        json_t *copy = json_deep_copy(item);
        json_object_del(json_object_get(copy, "metadata"), "managedFields");
        key_of_obj(copy, key, sizeof(key));
        assert_true(kstore_put(old_st, key, copy, NULL, NULL) >= 0);
        json_decref(copy);
    }
    for (size_t step = 1; step <= strlen(text); step = step * 7 + 3) {
        struct newpath np = {0};
        struct kls s;
        assert_int_equal(kstore_new(KSTORE_COMPACT, &new_st), 0);
        np.st = new_st;
        kls_init(&s, 1 << 20, 1 << 16, put_new, &np);
        for (size_t off = 0; off < strlen(text); off += step)
            assert_int_equal(
                kls_feed(&s, text + off, strlen(text) - off > step ? step : strlen(text) - off), 0);
        assert_int_equal(kls_finish(&s, &env), 0);
        kls_done(&s);
        json_decref(env);
        assert_int_equal(kstore_count(new_st), kstore_count(old_st));
        assert_int_equal((size_t)np.fast, json_array_size(json_object_get(body, "items")));
        json_array_foreach(json_object_get(body, "items"), i, item)
        {
            json_t *want = json_deep_copy(item), *a = NULL, *b = NULL;
            json_object_del(json_object_get(want, "metadata"), "managedFields");
            key_of_obj(want, key, sizeof(key));
            assert_int_equal(kstore_decode(old_st, kstore_find(old_st, key), &a), 0);
            assert_int_equal(kstore_decode(new_st, kstore_find(new_st, key), &b), 0);
            assert_true(json_equal(a, want));
            assert_true(json_equal(b, want));
            json_decref(a);
            json_decref(b);
            json_decref(want);
        }
        kstore_free(new_st);
        x_free(np.buf);
    }
    kstore_free(old_st);
    free(text);
    json_decref(body);
}

static void test_differential(void **state)
{
    static const char *files[] = {"informer/pods.json", "informer/namespaces.json",
                                  "informer/configmaps.json", "informer/services.json",
                                  "informer/serviceaccounts.json"};

    (void)state;
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        differential(files[i]);
}

/* A pod whose metadata has managedFields twice: the first is cut from the text, the second is
 * deleted from the tree, and the store serialises the tree instead of keeping the text. */
static void test_differential_duplicate(void **state)
{
    const char *text = "{\"items\":[{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\","
                       "\"managedFields\":[1],\"uid\":\"u\",\"managedFields\":[2]},\"spec\":{}}]}";
    struct newpath np = {0};
    json_t *env = NULL, *got = NULL;
    struct kls s;

    (void)state;
    assert_int_equal(kstore_new(KSTORE_COMPACT, &np.st), 0);
    kls_init(&s, 1 << 20, 1 << 16, put_new, &np);
    assert_int_equal(kls_feed(&s, text, strlen(text)), 0);
    assert_int_equal(kls_finish(&s, &env), 0);
    kls_done(&s);
    assert_int_equal(kstore_decode(np.st, kstore_find(np.st, "n/p"), &got), 0);
    json_t *want = json_loads("{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"u\"},"
                              "\"spec\":{}}",
                              0, NULL);
    assert_true(json_equal(got, want));
    json_decref(want);
    json_decref(got);
    json_decref(env);
    kstore_free(np.st);
    x_free(np.buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lists),          cmocka_unit_test(test_envelope_values),
        cmocka_unit_test(test_refused),        cmocka_unit_test(test_depth),
        cmocka_unit_test(test_callback_error), cmocka_unit_test(test_data_objects),
        cmocka_unit_test(test_managed_fields), cmocka_unit_test(test_event_member),
        cmocka_unit_test(test_differential),   cmocka_unit_test(test_differential_duplicate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
