/* Unit tests of the fast JSON decoder (src/common/jsonfast.c): on the texts it takes, the same
 * tree as json_loadb(); on those it leaves to jansson (reals, long integers, malformed text),
 * NULL; and jsonb_load() gives jansson's result either way. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonb.h"
#include "common/jsonfast.h"
#include "common/xalloc.h"

/* jsf_load takes the text and decodes it as jansson does. */
static void same(const char *text)
{
    json_t *fast = jsf_load(text, strlen(text), 0), *ref = json_loads(text, 0, NULL), *viab = NULL;

    if (!fast || !ref || !json_equal(fast, ref))
        fail_msg("not decoded as jansson does: %s", text);
    assert_int_equal(jsonb_load(text, strlen(text), SIZE_MAX, 0, 0, &viab, NULL), 0);
    assert_true(json_equal(viab, ref));
    json_decref(viab);
    json_decref(fast);
    json_decref(ref);
}

/* jsf_load leaves the text to jansson; jsonb_load still gives jansson's result. */
static void left(const char *text, size_t len)
{
    json_t *ref = json_loadb(text, len, 0, NULL), *viab = NULL;
    int r;

    if (jsf_load(text, len, 0))
        fail_msg("decoded, should be left to jansson: %.*s", (int)len, text);
    r = jsonb_load(text, len, SIZE_MAX, 0, 0, &viab, NULL);
    assert_int_equal(r == 0, ref != NULL);
    assert_true(!ref || json_equal(viab, ref));
    json_decref(viab);
    json_decref(ref);
}

static void test_taken(void **state)
{
    (void)state;
    same("{}");
    same("[]");
    same(" \t\r\n{ \"a\" : [ 1 , -2 , 0 , -0 , 123456789012345678 , -123456789012345678 ] } \n");
    same("{\"t\":true,\"f\":false,\"n\":null,\"o\":{\"p\":{}},\"a\":[[],[{}]]}");
    same("{\"k\":1,\"k\":2,\"j\":3}"); /* a repeated key: the last value, in the first's place */
    same("{\"e\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\",\"u\":\"\\u00e9\\u20AC\\ud83d\\ude00\"}");
    same("{\"\\u006b\\u0065y\":\"escaped key\",\"x\":\"\\u0041\"}");
    same("{\"utf8\":\"\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf \x7f\"}");
    same("[\"a\",\"\",\"\\u0001\"]");
}

static void test_left(void **state)
{
    static const char *texts[] = {
        "1", /* not an object or array at the top */
        "\"s\"",
        "{\"r\":1.5}",
        "{\"r\":1e3}",
        "{\"r\":-0.0}",
        "{\"big\":1234567890123456789}",  /* 19 digits: jansson's strtoll decides */
        "{\"big\":99999999999999999999}", /* too big for jansson too */
        "{\"z\":\"\\u0000\"}",            /* NUL needs JSON_ALLOW_NUL */
        "{\"lone\":\"\\ud800\"}",
        "{\"lone\":\"\\udc00\"}",
        "{\"pair\":\"\\ud800\\u0041\"}",
        "{\"bad\":\"\\x\"}",
        "{\"ctl\":\"a\tb\"}",
        "{\"overlong\":\"\xc0\xaf\"}",
        "{\"surrogate\":\"\xed\xa0\x80\"}",
        "{\"above\":\"\xf4\x90\x80\x80\"}",
        "{\"cut\":\"\xe2\x82\"}",
        "{\"lead\":\"\x80\"}",
        "{\"a\":01}",
        "{\"a\":-}",
        "{\"a\":tru}",
        "{\"a\":truex}",
        "{\"a\":1,}",
        "[1,]",
        "{\"a\" 1}",
        "{a:1}",
        "{\"a\":1}x",
        "{\"a\":1}{}",
        "{\"a\":\"unterminated}",
        "[",
        "",
        "   ",
    };

    (void)state;
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
        left(texts[i], strlen(texts[i]));
    left("{\"nul\":\"a\0b\"}", 12);
    left("{\"a\":1}\0", 8);
}

static void test_depth(void **state)
{
    size_t n = 2 * (JSF_MAX_DEPTH + 1);
    char *deep = malloc(n + 1), *ok = malloc(n);

    (void)state;
    memset(deep, '[', JSF_MAX_DEPTH + 1);
    memset(deep + JSF_MAX_DEPTH + 1, ']', JSF_MAX_DEPTH + 1);
    assert_null(jsf_load(deep, n, 0));
    memset(ok, '[', JSF_MAX_DEPTH);
    memset(ok + JSF_MAX_DEPTH, ']', JSF_MAX_DEPTH);
    json_t *j = jsf_load(ok, 2 * JSF_MAX_DEPTH, 0);
    assert_non_null(j);
    json_decref(j);
    free(deep);
    free(ok);
}

/* The objects the tests and benchmarks use: decoded as jansson does, never left to it. */
static void test_data_objects(void **state)
{
    char path[1024];
    json_t *obj;
    char *text;

    (void)state;
    snprintf(path, sizeof(path), "%s/jsonb/pod-managed-fields.json", CLIQO_TEST_DATA);
    obj = json_load_file(path, 0, NULL);
    assert_non_null(obj);
    text = json_dumps(obj, 0);
    same(text);
    free(text);
    text = json_dumps(obj, JSON_COMPACT);
    same(text);
    free(text);
    json_decref(obj);

    /* Lists as the API server wrote them (tests/data/informer: Go's encoder, its escapes). */
    static const char *lists[] = {"pods", "namespaces", "configmaps", "services",
                                  "serviceaccounts"};
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        char buf[65536];
        FILE *f;
        size_t n;
        snprintf(path, sizeof(path), "%s/informer/%s.json", CLIQO_TEST_DATA, lists[i]);
        f = fopen(path, "r");
        assert_non_null(f);
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        assert_true(n > 0 && n < sizeof(buf) - 1);
        buf[n] = '\0';
        same(buf);
    }
}

static void test_alloc_failures(void **state)
{
    const char *text = "{\"a\":[1,{\"b\":\"\\u00e9\"}],\"\\u0063\":\"x\",\"d\":{}}";
    json_t *ref = json_loads(text, 0, NULL);

    (void)state;
    /* Only the escape buffer goes through x_*: a failure there gives up, never a wrong tree. */
    for (long n = 0; n < 4; n++) {
        json_t *j;
        xalloc_fail_after(n);
        j = jsf_load(text, strlen(text), 0);
        xalloc_fail_after(-1);
        assert_true(!j || json_equal(j, ref));
        json_decref(j);
    }
    json_decref(ref);
}

/* With JSON_REJECT_DUPLICATES: a text without a repeated key is taken as jansson takes it with the
 * flag; one with a repeated key at any depth (escaped spellings included) is left to jansson,
 * which refuses it; jsonb_load() gives jansson's result either way. Other flags are left. */
static void test_reject_duplicates(void **state)
{
    static const struct {
        const char *text;
        bool repeated;
    } cases[] = {
        {"{}", false},
        {"{\"a\":1,\"b\":{\"a\":2},\"c\":[{\"a\":3},{\"a\":4}]}", false},
        {"{\"a\":1,\"a\":1}", true},
        {"{\"a\":1,\"b\":2,\"a\":3}", true},
        {"{\"o\":{\"k\":1,\"k\":{}}}", true},
        {"[{\"k\":1},{\"x\":1,\"k\":2,\"k\":3}]", true},
        {"{\"k\":1,\"\\u006b\":2}", true}, /* "\u006b" is "k" */
        {"{\"k\":1,\"K\":2,\"k \":3}", false},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *t = cases[i].text;
        json_t *fast = jsf_load(t, strlen(t), JSON_REJECT_DUPLICATES);
        json_t *ref = json_loads(t, JSON_REJECT_DUPLICATES, NULL), *viab = NULL;
        int r = jsonb_load(t, strlen(t), SIZE_MAX, 0, JSON_REJECT_DUPLICATES, &viab, NULL);

        if (cases[i].repeated) {
            if (fast || ref)
                fail_msg("case %zu taken: %s", i, t);
            assert_int_equal(r, -EINVAL);
        } else {
            if (!fast || !ref || !json_equal(fast, ref))
                fail_msg("case %zu not decoded as jansson does: %s", i, t);
            assert_int_equal(r, 0);
            assert_true(json_equal(viab, ref));
        }
        json_decref(viab);
        json_decref(fast);
        json_decref(ref);
    }
    /* Any other flag: left to jansson. */
    assert_null(jsf_load("{}", 2, JSON_DECODE_ANY));
    assert_null(jsf_load("{}", 2, JSON_REJECT_DUPLICATES | JSON_DISABLE_EOF_CHECK));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_taken),          cmocka_unit_test(test_left),
        cmocka_unit_test(test_depth),          cmocka_unit_test(test_data_objects),
        cmocka_unit_test(test_alloc_failures), cmocka_unit_test(test_reject_duplicates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
