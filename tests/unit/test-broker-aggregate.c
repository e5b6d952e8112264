#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "testjson.h"
#include "broker/aggregate.h"

/* NULL stays NULL (a provider that sent no resources). */
static json_t *parse_json(const char *s)
{
    return s ? test_js(s) : NULL;
}

static void test_sums(void **state)
{
    static const struct {
        const char *name;
        struct {
            const char *id;
            bool selected;
            const char *resources;
        } in[3];
        const char *consumer;
        const char *want;
        size_t providers, skipped;
    } cases[] = {
        {"two providers, exact sums in canonical form",
         {{"p1", true, "{\"cpu\": \"1500m\", \"memory\": \"1Gi\", \"pods\": \"110\"}"},
          {"p2", true, "{\"cpu\": \"2\", \"memory\": \"512Mi\", \"nvidia.com/gpu\": \"1\"}"}},
         "c",
         "{\"cpu\": \"3500m\", \"memory\": \"1536Mi\", \"pods\": \"110\", \"nvidia.com/gpu\": "
         "\"1\"}",
         2,
         0},
        {"the consumer's own offer is never counted",
         {{"p1", true, "{\"cpu\": \"1\"}"}, {"c", true, "{\"cpu\": \"64\"}"}},
         "c",
         "{\"cpu\": \"1\"}",
         1,
         0},
        {"unselected providers are not counted",
         {{"p1", false, "{\"cpu\": \"1\"}"}, {"p2", true, "{\"cpu\": \"2\"}"}},
         "c",
         "{\"cpu\": \"2\"}",
         1,
         0},
        {"nothing selected: an empty offer", {{"p1", false, "{\"cpu\": \"1\"}"}}, "c", "{}", 0, 0},
        {"hostile values are skipped, the rest summed",
         {{"p1", true,
           "{\"cpu\": \"\\\"4\\\"\", \"memory\": -1, \"pods\": \"-3\", \"Bad Name\": \"1\", "
           "\"ephemeral-storage\": \"1e3\"}"},
          {"p2", true, "{\"cpu\": \"250m\", \"pods\": null}"}},
         "c",
         "{\"cpu\": \"250m\", \"ephemeral-storage\": \"1e3\"}",
         2,
         5},
        {"a provider without resources",
         {{"p1", true, NULL}, {"p2", true, "{}"}},
         NULL,
         "{}",
         2,
         0},
        {"an overflowing sum keeps its last value",
         {{"p1", true, "{\"memory\": \"9223372036854775807\"}"},
          {"p2", true, "{\"memory\": \"9223372036854775807\"}"}},
         "c",
         "{\"memory\": \"9223372036854775807\"}",
         2,
         1},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct brk_offer_in in[3] = {{0}};
        json_t *res[3] = {NULL}, *want = parse_json(cases[i].want), *got;
        struct brk_agg_stats st;
        size_t n = 0;

        for (; n < 3 && cases[i].in[n].id; n++) {
            res[n] = parse_json(cases[i].in[n].resources);
            in[n] = (struct brk_offer_in){cases[i].in[n].id, cases[i].in[n].selected, res[n]};
        }
        got = brk_aggregate(in, n, cases[i].consumer, &st);
        assert_non_null(got);
        if (!json_equal(got, want)) {
            char *s = json_dumps(got, JSON_SORT_KEYS);

            fail_msg("%s: got %s", cases[i].name, s);
        }
        if (st.providers != cases[i].providers || st.skipped != cases[i].skipped)
            fail_msg("%s: providers %zu skipped %zu", cases[i].name, st.providers, st.skipped);
        json_decref(got);
        json_decref(want);
        for (size_t k = 0; k < n; k++)
            json_decref(res[k]);
    }
}

/* More distinct resource names than the sum holds: the first ones are kept, the rest counted. */
static void test_bounded(void **state)
{
    json_t *r = json_object(), *got;
    struct brk_offer_in in = {"p1", true, r};
    struct brk_agg_stats st;
    char name[32];

    (void)state;
    for (int i = 0; i < BRK_AGG_MAX_RESOURCES + 5; i++) {
        snprintf(name, sizeof(name), "example.com/r%03d", i);
        json_object_set_new(r, name, json_string("1"));
    }
    got = brk_aggregate(&in, 1, "c", &st);
    assert_int_equal(json_object_size(got), BRK_AGG_MAX_RESOURCES);
    assert_int_equal(st.skipped, 5);
    json_decref(got);
    json_decref(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sums),
        cmocka_unit_test(test_bounded),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
