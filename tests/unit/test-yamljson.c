/* Unit tests of the YAML-to-JSON reader: typing of scalars (YAML 1.2 core schema), documents,
 * anchors, and every refusal with its message. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "common/xalloc.h"
#include "kube/yamljson.h"

static char err[512];

static json_t *load(const char *yaml, int want)
{
    json_t *docs = NULL;
    int r = yj_load_all(yaml, strlen(yaml), "t.yaml", &docs, err, sizeof(err));

    if (r != want)
        fail_msg("yj_load_all(%s) = %d, want %d (%s)", yaml, r, want, err);
    if (r < 0) {
        assert_null(docs);
        assert_true(err[0] != '\0');
        return NULL;
    }
    return docs;
}

/* The JSON text of a one-document stream. */
static void expect_json(const char *yaml, const char *json)
{
    json_t *docs = load(yaml, 0);
    json_t *want = json_loads(json, JSON_DECODE_ANY, NULL);

    assert_non_null(want);
    assert_int_equal(json_array_size(docs), 1);
    if (!json_equal(json_array_get(docs, 0), want)) {
        char *got = json_dumps(json_array_get(docs, 0), JSON_COMPACT | JSON_ENCODE_ANY);
        fail_msg("%s gave %s, want %s", yaml, got, json);
    }
    json_decref(want);
    json_decref(docs);
}

static void expect_error(const char *yaml, int code, const char *msg)
{
    load(yaml, code);
    if (!strstr(err, msg))
        fail_msg("error \"%s\" does not say \"%s\"", err, msg);
}

static void test_scalars(void **state)
{
    (void)state;
    expect_json("a: 1\nb: -7\nc: 0x1F\nd: 0o17\ne: +3",
                "{\"a\":1,\"b\":-7,\"c\":31,\"d\":15,\"e\":3}");
    expect_json("a: 1.5\nb: -2e3\nc: .5\nd: 1.", "{\"a\":1.5,\"b\":-2000.0,\"c\":0.5,\"d\":1.0}");
    expect_json("a: true\nb: False\nc: TRUE", "{\"a\":true,\"b\":false,\"c\":true}");
    expect_json("a: null\nb: ~\nc:\nd: Null", "{\"a\":null,\"b\":null,\"c\":null,\"d\":null}");
    /* YAML 1.1 booleans and other look-alikes stay strings. */
    expect_json("a: yes\nb: off\nc: 1.2.3\nd: 0b101\ne: 12:30\nf: 0x",
                "{\"a\":\"yes\",\"b\":\"off\","
                "\"c\":\"1.2.3\",\"d\":\"0b101\",\"e\":\"12:30\",\"f\":\"0x\"}");
    /* Quoted scalars and blocks are strings. */
    expect_json("a: \"1\"\nb: 'true'\nc: \"\"\nd: |\n  x\n  y\ne: >\n  p\n  q\n",
                "{\"a\":\"1\",\"b\":\"true\",\"c\":\"\",\"d\":\"x\\ny\\n\",\"e\":\"p q\\n\"}");
    /* Tags. */
    expect_json("a: !!str 12\nb: !!int \"12\"\nc: !!float 1\nd: !!bool true\ne: !!null ''",
                "{\"a\":\"12\",\"b\":12,\"c\":1.0,\"d\":true,\"e\":null}");
    /* Keys are their text. */
    expect_json("1: a\ntrue: b\n.inf: c\nnull: d",
                "{\"1\":\"a\",\"true\":\"b\",\".inf\":\"c\",\"null\":\"d\"}");
    /* int64 limits. */
    expect_json("a: 9223372036854775807\nb: -9223372036854775808",
                "{\"a\":9223372036854775807,\"b\":-9223372036854775808}");
}

static void test_documents(void **state)
{
    json_t *docs;

    (void)state;
    docs = load("---\n# only a comment\n---\na: 1\n---\n---\nnull\n---\n- x\n...\n", 0);
    assert_int_equal(json_array_size(docs), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(docs, 0), "a")), 1);
    assert_string_equal(json_string_value(json_array_get(json_array_get(docs, 1), 0)), "x");
    json_decref(docs);
    docs = load("", 0);
    assert_int_equal(json_array_size(docs), 0);
    json_decref(docs);
    /* A real manifest. */
    expect_json("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\n  labels: {app: x}\n"
                "spec:\n  replicas: 2\n  template:\n    spec:\n      containers:\n      - name: c\n"
                "        args: [\"--a=1\", --b]\n        ports:\n        - containerPort: 8080\n",
                "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"x\","
                "\"labels\":{\"app\":\"x\"}},\"spec\":{\"replicas\":2,\"template\":{\"spec\":{"
                "\"containers\":[{\"name\":\"c\",\"args\":[\"--a=1\",\"--b\"],\"ports\":[{"
                "\"containerPort\":8080}]}]}}}}");
}

static void test_anchors(void **state)
{
    (void)state;
    expect_json("base: &b {x: 1, y: [a, b]}\ncopy: *b\ns: &s str\nt: *s",
                "{\"base\":{\"x\":1,\"y\":[\"a\",\"b\"]},\"copy\":{\"x\":1,\"y\":[\"a\",\"b\"]},"
                "\"s\":\"str\",\"t\":\"str\"}");
    /* Anchors belong to their document. */
    expect_error("a: &x 1\n---\nb: *x\n", -EINVAL, "unknown anchor \"x\"");
}

static void test_refusals(void **state)
{
    (void)state;
    expect_error("a: 1\na: 2\n", -EINVAL, "line 2, column 1: duplicate mapping key \"a\"");
    expect_error("[a, b]: 1\n", -EINVAL, "mapping keys must be scalars");
    expect_error("a: .inf\n", -ERANGE, ".inf has no JSON representation");
    expect_error("a: 9223372036854775808\n", -ERANGE, "out of range");
    expect_error("a: 1e999\n", -ERANGE, "out of range");
    expect_error("a: !!int x\n", -EINVAL, "is not a valid !!int");
    expect_error("a: !custom x\n", -EINVAL, "unsupported tag");
    expect_error("a: !!set {x}\n", -EINVAL, "unsupported tag");
    expect_error("a: [1, 2\n", -EINVAL, "t.yaml: line");
    expect_error("a: \xff\n", -EINVAL, "invalid YAML");
    expect_error("a: \"x\\0y\"\n", -EINVAL, "NUL character in a scalar");
    expect_error("? |-\n  k\n: v\nk: w\n", -EINVAL, "duplicate mapping key");
}

/* Billion laughs: each level doubles; the budget stops it long before memory does. */
static void test_alias_bomb(void **state)
{
    char doc[4096];
    size_t n = 0;

    (void)state;
    n += (size_t)snprintf(doc + n, sizeof(doc) - n, "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for (int i = 1; i < 12; i++)
        n += (size_t)snprintf(doc + n, sizeof(doc) - n,
                              "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i,
                              i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
    expect_error(doc, -E2BIG, "more than 1000000 values");
}

static void test_depth(void **state)
{
    char doc[400];

    (void)state;
    memset(doc, '[', 100);
    doc[100] = '\0';
    expect_error(doc, -E2BIG, "nested deeper than 64 levels");
    /* 64 levels are fine. */
    memset(doc, '[', 64);
    memset(doc + 64, ']', 64);
    doc[128] = '\0';
    json_decref(load(doc, 0));
}

/* Out of memory at every allocation: always a clean error, never a leak (ASan checks). */
static void test_allocation_failures(void **state)
{
    const char *yaml = "a: &x {b: [1, 2, \"s\"]}\nc: *x\n---\n- d\n";
    int failures = 0;

    (void)state;
    for (int n = 0; n < 400; n++) {
        json_t *docs = NULL;
        int r;

        xalloc_fail_after(n);
        r = yj_load_all(yaml, strlen(yaml), "t", &docs, err, sizeof(err));
        xalloc_fail_after(-1);
        if (r == 0) {
            json_decref(docs);
            break;
        }
        assert_int_equal(r, -ENOMEM);
        assert_null(docs);
        failures++;
    }
    assert_true(failures > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalars),
        cmocka_unit_test(test_documents),
        cmocka_unit_test(test_anchors),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_alias_bomb),
        cmocka_unit_test(test_depth),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
