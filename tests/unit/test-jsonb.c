#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonb.h"

/* ---- the heap jansson really takes: live bytes through json_set_alloc_funcs ---- */

static size_t heap_live, heap_peak;

/* What glibc's malloc really uses for a block: its usable size and the chunk header. */
static void *count_malloc(size_t n)
{
    void *p = malloc(n);

    if (p) {
        heap_live += malloc_usable_size(p) + sizeof(size_t);
        if (heap_live > heap_peak)
            heap_peak = heap_live;
    }
    return p;
}

static void count_free(void *p)
{
    if (p) {
        heap_live -= malloc_usable_size(p) + sizeof(size_t);
        free(p);
    }
}

/* A document of n copies of `unit` in `open`...`close`, keyed ("k<i>":) when `keyed`. */
static char *repeat(const char *open, const char *unit, const char *close, size_t n, int keyed,
                    size_t *ret_len)
{
    size_t cap = strlen(open) + strlen(close) + n * (strlen(unit) + 16) + 1, len = 0;
    char *b = malloc(cap);

    assert_non_null(b);
    len += (size_t)snprintf(b + len, cap - len, "%s", open);
    for (size_t i = 0; i < n; i++) {
        if (i)
            b[len++] = ',';
        if (keyed)
            len += (size_t)snprintf(b + len, cap - len, "\"%zx\":", i);
        len += (size_t)snprintf(b + len, cap - len, "%s", unit);
    }
    len += (size_t)snprintf(b + len, cap - len, "%s", close);
    *ret_len = len;
    return b;
}

/* The cost model is never below the heap jansson really takes, for every shape of value, so a
 * budget of jsonb_budget(len, r) bounds the heap of an accepted message by r * len + 16 KiB. */
static void test_cost_model(void **state)
{
    static const struct {
        const char *open, *unit, *close;
        int keyed;
    } shapes[] = {
        {"[", "0", "]", 0},     {"[", "1.5", "]", 0},          {"[", "true", "]", 0},
        {"[", "\"\"", "]", 0},  {"[", "\"abcdefgh\"", "]", 0}, {"[", "[]", "]", 0},
        {"[", "{}", "]", 0},    {"[", "[0]", "]", 0},          {"[", "{\"a\":0}", "]", 0},
        {"{", "0", "}", 1},     {"{", "{}", "}", 1},           {"{", "[]", "}", 1},
        {"{", "\"v\"", "}", 1}, {"[", "[[[[0]]]]", "]", 0},
    };

    (void)state;
    json_set_alloc_funcs(count_malloc, count_free);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        size_t len;
        char *text =
            repeat(shapes[i].open, shapes[i].unit, shapes[i].close, 20000, shapes[i].keyed, &len);
        struct jsonb_count c;
        json_t *j = NULL;

        assert_int_equal(jsonb_scan(text, len, SIZE_MAX, 100, &c), 0);
        heap_live = heap_peak = 0;
        assert_int_equal(jsonb_load(text, len, SIZE_MAX, 100, 0, &j, NULL), 0);
        print_message("%-14s %8zu bytes %6zu values: heap %9zu (%4.1f/byte, %5.1f/value), "
                      "estimate %9zu\n",
                      shapes[i].unit, len, c.elements, heap_peak, (double)heap_peak / (double)len,
                      (double)heap_peak / (double)c.elements, c.cost);
        /* The text of strings is copied too: the model leaves it to the ratio. */
        assert_true(heap_peak <= c.cost + len);
        json_decref(j);
        free(text);
    }
    json_set_alloc_funcs(malloc, free);
}

/* The 3 MiB body of small elements of the issue is refused before jansson allocates anything;
 * accepted messages stay under ratio * len + base. */
static void test_budget(void **state)
{
    size_t len;
    char *text = repeat("[", "0", "]", (3u << 20) / 2, 0, &len);
    json_error_t err;
    json_t *j = NULL;

    (void)state;
    json_set_alloc_funcs(count_malloc, count_free);
    heap_live = heap_peak = 0;
    assert_int_equal(jsonb_load(text, len, 0, 0, 0, &j, &err), -E2BIG);
    assert_null(j);
    assert_int_equal(heap_peak, 0);
    assert_non_null(strstr(err.text, "would take more than"));
    free(text);

    /* Objects of a few fields, as Kubernetes sends them: accepted within 16x. */
    text = repeat("{\"items\":[", "{\"name\":\"pod-1234\",\"ready\":true,\"restarts\":0}", "]}",
                  20000, 0, &len);
    heap_live = heap_peak = 0;
    assert_int_equal(jsonb_load(text, len, 0, 0, 0, &j, &err), 0);
    assert_true(heap_peak <= jsonb_budget(len, 0));
    print_message("pod-like list: %zu bytes, heap %zu (%.1f/byte)\n", len, heap_peak,
                  (double)heap_peak / (double)len);
    json_decref(j);
    free(text);
    json_set_alloc_funcs(malloc, free);
}

/* A realistic pod (with managedFields, whose empty objects are the densest Kubernetes text) fits
 * the Kubernetes budget with room to spare, and so does a list of 500 of them. */
static void test_kubernetes_objects(void **state)
{
    FILE *f = fopen(CLIQO_TEST_DATA "/jsonb/pod-managed-fields.json", "rb");
    char *pod, *list;
    size_t len, llen = 0;
    struct jsonb_count c;
    json_t *j = NULL;

    (void)state;
    assert_non_null(f);
    pod = malloc(1 << 16);
    assert_non_null(pod);
    len = fread(pod, 1, (1 << 16) - 1, f);
    fclose(f);
    while (len > 0 && (pod[len - 1] == '\n' || pod[len - 1] == ' '))
        len--;
    assert_int_equal(jsonb_scan(pod, len, SIZE_MAX, 100, &c), 0);
    print_message("pod: %zu bytes, estimate %zu (%.1fx)\n", len, c.cost,
                  (double)c.cost / (double)len);
    assert_true(c.cost <= jsonb_budget(len, JSONB_RATIO_KUBE) - JSONB_BASE_COST);
    list = malloc(500 * (len + 1) + 64);
    assert_non_null(list);
    llen += (size_t)sprintf(list, "{\"items\":[");
    for (int i = 0; i < 500; i++) {
        memcpy(list + llen, pod, len);
        llen += len;
        list[llen++] = i < 499 ? ',' : ']';
    }
    list[llen++] = '}';
    assert_int_equal(jsonb_load(list, llen, jsonb_budget(llen, JSONB_RATIO_KUBE), 0, 0, &j, NULL),
                     0);
    json_decref(j);
    free(list);
    free(pod);
}

/* Exact counts of the scan: a table of texts. */
static void test_scan(void **state)
{
    static const struct {
        const char *text;
        size_t elements;
        unsigned depth;
    } cases[] = {
        {"", 0, 0},
        {"0", 1, 0},
        {"  -12.5e3 ", 1, 0},
        {"[]", 1, 1},
        {"[0,1,2]", 4, 1},
        {"[ 0 , 1 ]", 3, 1},
        {"{\"a\":1,\"b\":[true,null]}", 7, 2},
        {"\"a,b:[{\\\"}]\"", 1, 0}, /* structure inside a string does not count */
        {"[\"\\\\\",\"x\"]", 3, 1}, /* an escaped backslash ends before the quote */
        {"[[[[]]]]", 4, 4},
        {"]]]][", 1, 1},       /* garbage does not underflow */
        {"[truefalse]", 2, 1}, /* one scalar token: jansson refuses it */
    };

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct jsonb_count c;

        assert_int_equal(jsonb_scan(cases[i].text, strlen(cases[i].text), SIZE_MAX, 100, &c), 0);
        if (c.elements != cases[i].elements || c.depth != cases[i].depth)
            fail_msg("case %zu (%s): %zu values depth %u, expected %zu depth %u", i, cases[i].text,
                     c.elements, c.depth, cases[i].elements, cases[i].depth);
    }
}

static void test_limits_and_errors(void **state)
{
    char deep[200];
    json_error_t err;
    json_t *j = NULL;

    (void)state;
    memset(deep, '[', 100);
    memset(deep + 100, ']', 100);
    assert_int_equal(jsonb_load(deep, sizeof deep, 0, 0, 0, &j, &err), -E2BIG);
    assert_non_null(strstr(err.text, "nested deeper than 64"));
    assert_int_equal(jsonb_load(deep + 36, 128, 0, 0, 0, &j, &err), 0); /* depth 64 */
    json_decref(j);
    assert_int_equal(
        jsonb_load("[0,0]", 5, JSONB_COST_ARRAY + 2 * JSONB_COST_SCALAR, 1, 0, &j, NULL), 0);
    json_decref(j);
    assert_int_equal(
        jsonb_load("[0,0]", 5, JSONB_COST_ARRAY + 2 * JSONB_COST_SCALAR - 1, 1, 0, &j, NULL),
        -E2BIG);
    assert_int_equal(jsonb_load("[0,", 3, 0, 0, 0, &j, &err), -EINVAL);
    assert_true(err.text[0] != '\0');
    assert_int_equal(jsonb_load("{\"a\":1,\"a\":2}", 13, 0, 0, JSON_REJECT_DUPLICATES, &j, &err),
                     -EINVAL);
    assert_int_equal(jsonb_load("\"s\"", 3, 0, 0, 0, &j, NULL), -EINVAL); /* not DECODE_ANY */
    assert_int_equal(jsonb_load("\"s\"", 3, 0, 0, JSON_DECODE_ANY, &j, NULL), 0);
    json_decref(j);
    assert_int_equal(jsonb_load(NULL, 1, 0, 0, 0, &j, NULL), -EINVAL);
    assert_int_equal(jsonb_budget(10, 0), 10 * JSONB_RATIO + JSONB_BASE_COST);
    assert_int_equal(jsonb_budget(SIZE_MAX / 2, 4), SIZE_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cost_model),         cmocka_unit_test(test_budget),
        cmocka_unit_test(test_kubernetes_objects), cmocka_unit_test(test_scan),
        cmocka_unit_test(test_limits_and_errors),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
