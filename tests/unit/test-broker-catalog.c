#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "testjson.h"
#include "broker/catalog.h"

static const unsigned char key[BRK_TOKEN_KEY_LEN] = "0123456789abcdef0123456789abcdef";

/* Five ForeignClusters, sorted by name. */
static const char *const fc_json[] = {
    "{'metadata': {'name': 'alpha', 'labels': {'region': 'eu', 'tier': 'gold'}}}",
    "{'metadata': {'name': 'bravo', 'labels': {'region': 'us'}}}",
    "{'metadata': {'name': 'charlie', 'labels': {'region': 'eu'}}}",
    "{'metadata': {'name': 'delta'}}",
    "{'metadata': {'name': 'echo', 'labels': {'region': 'eu', 'tier': 'silver'}}}",
};

static json_t *extra(const json_t *fc, void *data)
{
    (*(int *)data)++;
    return json_pack("{s:s}", "id",
                     json_string_value(json_object_get(json_object_get(fc, "metadata"), "name")));
}

/* The names of a page, comma-separated. */
static void names(const json_t *page, char *buf, size_t size)
{
    const json_t *it;
    size_t i;

    buf[0] = '\0';
    json_array_foreach(page, i, it)
    {
        snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", i ? "," : "",
                 json_string_value(json_object_get(json_object_get(it, "metadata"), "name")));
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(it, "broker"), "id")),
            json_string_value(json_object_get(json_object_get(it, "metadata"), "name")));
    }
}

static void test_filters(void **state)
{
    static const struct {
        const char *labels, *fields, *limit;
        const char *want;      /* the names of the first page; NULL: a parse error */
        const char *err;       /* its start */
        const char *next_from; /* the page after, followed with the token */
    } cases[] = {
        {NULL, NULL, NULL, "alpha,bravo,charlie,delta,echo", NULL, NULL},
        {"region=eu", NULL, NULL, "alpha,charlie,echo", NULL, NULL},
        {"region in (eu,us),tier", NULL, NULL, "alpha,echo", NULL, NULL},
        {"!region", NULL, NULL, "delta", NULL, NULL},
        {"region!=eu", NULL, NULL, "bravo,delta", NULL, NULL},
        {"", "metadata.name=bravo", NULL, "bravo", NULL, NULL},
        {NULL, "metadata.name==bravo", NULL, "bravo", NULL, NULL},
        {"region=eu", "metadata.name!=charlie", NULL, "alpha,echo", NULL, NULL},
        {NULL, NULL, "2", "alpha,bravo", NULL, "charlie,delta"},
        {"region=eu", NULL, "1", "alpha", NULL, "charlie"},
        {NULL, NULL, "5", "alpha,bravo,charlie,delta,echo", NULL, NULL},
        {"region in (eu", NULL, NULL, NULL, "labelSelector: ", NULL},
        {NULL, "spec.clusterID=x", NULL, NULL, "fieldSelector: only metadata.name", NULL},
        {NULL, "metadata.name=Bad_Name", NULL, NULL, "fieldSelector: \"Bad_Name\" is not", NULL},
        {NULL, NULL, "0", NULL, "limit: expected an integer from 1 to 1000", NULL},
        {NULL, NULL, "1001", NULL, "limit: expected", NULL},
        {NULL, NULL, "2x", NULL, "limit: expected", NULL},
        {NULL, NULL, "", NULL, "limit: expected", NULL},
    };
    json_t *objs[5];
    const json_t *fcs[5];

    (void)state;
    for (size_t i = 0; i < 5; i++)
        fcs[i] = objs[i] = test_js(fc_json[i]);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct brk_catalog_query q;
        char err[256] = "", next[BRK_TOKEN_MAX], got[256];
        int calls = 0, e = brk_catalog_query_parse(&q, cases[i].labels, cases[i].fields,
                                                   cases[i].limit, NULL, key, err, sizeof(err));
        json_t *page;

        if (!cases[i].want) {
            assert_int_equal(e, -EINVAL);
            if (strncmp(err, cases[i].err, strlen(cases[i].err)) != 0)
                fail_msg("case %zu: \"%s\", want \"%s...\"", i, err, cases[i].err);
            brk_catalog_query_free(&q);
            continue;
        }
        if (e != 0)
            fail_msg("case %zu: %s", i, err);
        page = brk_catalog_page(fcs, 5, &q, extra, &calls, key, next);
        names(page, got, sizeof(got));
        if (strcmp(got, cases[i].want) != 0)
            fail_msg("case %zu: got %s want %s", i, got, cases[i].want);
        assert_int_equal(calls, (int)json_array_size(page));
        json_decref(page);
        brk_catalog_query_free(&q);
        if (!cases[i].next_from) {
            assert_string_equal(next, "");
            continue;
        }
        /* The next page, with the same filters and the token. */
        assert_int_equal(brk_catalog_query_parse(&q, cases[i].labels, cases[i].fields,
                                                 cases[i].limit, next, key, err, sizeof(err)),
                         0);
        page = brk_catalog_page(fcs, 5, &q, extra, &calls, key, next);
        names(page, got, sizeof(got));
        if (strcmp(got, cases[i].next_from) != 0)
            fail_msg("case %zu, page 2: got %s want %s", i, got, cases[i].next_from);
        json_decref(page);
        brk_catalog_query_free(&q);
    }
    for (size_t i = 0; i < 5; i++)
        json_decref(objs[i]);
}

/* Tokens: made by this key only; an altered one or one of another key is stale (410), a
 * malformed one a 400. */
static void test_tokens(void **state)
{
    static const unsigned char other[BRK_TOKEN_KEY_LEN] = "another key, another broker run!";
    char tok[BRK_TOKEN_MAX], bad[BRK_TOKEN_MAX + 8], err[256];
    struct brk_catalog_query q;

    (void)state;
    assert_int_equal(brk_token_make(key, "bravo", tok), 0);
    assert_int_equal(brk_catalog_query_parse(&q, NULL, NULL, NULL, tok, key, err, sizeof(err)), 0);
    assert_string_equal(q.after, "bravo");
    brk_catalog_query_free(&q);
    /* another process's key */
    assert_int_equal(brk_catalog_query_parse(&q, NULL, NULL, NULL, tok, other, err, sizeof(err)),
                     -ESTALE);
    /* the name changed, the MAC kept */
    snprintf(bad, sizeof(bad), "%.33sbravp", tok);
    assert_int_equal(brk_catalog_query_parse(&q, NULL, NULL, NULL, bad, key, err, sizeof(err)),
                     -ESTALE);
    /* malformed */
    static const char *const malformed[] = {"bravo",
                                            "_bravo",
                                            "0123_bravo",
                                            "0123456789abcdef0123456789abcdef_",
                                            "0123456789abcdef0123456789abcdeX_bravo",
                                            "0123456789abcdef0123456789abcdef_Bravo"};
    for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++)
        assert_int_equal(
            brk_catalog_query_parse(&q, NULL, NULL, NULL, malformed[i], key, err, sizeof(err)),
            -EINVAL);
    assert_int_equal(brk_token_make(key, "Not A Name", tok), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_filters),
        cmocka_unit_test(test_tokens),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
