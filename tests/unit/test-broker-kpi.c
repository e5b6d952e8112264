#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "testjson.h"
#include "broker/kpi.h"

/* Sequences of probes (time in seconds, latency in ms, -1 a failure) and what they leave. */
static void test_sequences(void **state)
{
    static const struct {
        const char *name;
        int64_t probes[8][2];
        size_t n;
        int64_t now_s;
        const char *want; /* brk_kpi_json */
    } cases[] = {
        {"no probe yet",
         {{0}},
         0,
         10,
         "{'uptimeSeconds': null, 'latencyMs': null, 'availabilityPercent': null, 'probes': 0, "
         "'failures': 0}"},
        {"answered since the first",
         {{0, 10}, {1, 12}, {2, 11}},
         3,
         30,
         "{'uptimeSeconds': 30, 'latencyMs': 11, 'availabilityPercent': 100, 'probes': 3, "
         "'failures': 0}"},
        {"a failure resets the uptime",
         {{0, 10}, {5, -1}, {6, 20}, {7, 30}},
         4,
         10,
         "{'uptimeSeconds': 4, 'latencyMs': 20, 'availabilityPercent': 75, 'probes': 4, "
         "'failures': 1}"},
        {"down now",
         {{0, 10}, {5, -1}},
         2,
         10,
         "{'uptimeSeconds': null, 'latencyMs': 10, 'availabilityPercent': 50, 'probes': 2, "
         "'failures': 1}"},
        {"one slow answer does not move the median",
         {{0, 10}, {1, 11}, {2, 9000}, {3, 12}, {4, 10}},
         5,
         4,
         "{'uptimeSeconds': 4, 'latencyMs': 11, 'availabilityPercent': 100, 'probes': 5, "
         "'failures': 0}"},
        {"the median of the last five only",
         {{0, 1000}, {1, 1000}, {2, 1000}, {3, 5}, {4, 6}, {5, 7}, {6, 8}, {7, 9}},
         8,
         7,
         "{'uptimeSeconds': 7, 'latencyMs': 7, 'availabilityPercent': 100, 'probes': 8, "
         "'failures': 0}"},
        {"an even count: the mean of the middle two",
         {{0, 10}, {1, 20}},
         2,
         1,
         "{'uptimeSeconds': 1, 'latencyMs': 15, 'availabilityPercent': 100, 'probes': 2, "
         "'failures': 0}"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct brk_kpi_hist h;
        json_t *got, *want = test_js(cases[i].want);

        brk_kpi_init(&h);
        for (size_t p = 0; p < cases[i].n; p++)
            brk_kpi_record(&h, cases[i].probes[p][0] * 1000, cases[i].probes[p][1] >= 0,
                           cases[i].probes[p][1]);
        got = brk_kpi_json(&h, cases[i].now_s * 1000);
        if (!json_equal(got, want))
            fail_msg("%s: got %s", cases[i].name, json_dumps(got, JSON_SORT_KEYS));
        json_decref(got);
        json_decref(want);
    }
}

/* The history is bounded: after many probes it keeps the last BRK_KPI_SAMPLES. */
static void test_bounded(void **state)
{
    struct brk_kpi_hist h;
    struct brk_kpi k = {0};
    json_t *j;

    (void)state;
    brk_kpi_init(&h);
    for (int i = 0; i < 1000; i++) /* the first 744 fail, the last 256 answer in 3 ms */
        brk_kpi_record(&h, i * 1000, i >= 744, 3);
    j = brk_kpi_json(&h, 1000 * 1000);
    assert_int_equal(json_integer_value(json_object_get(j, "availabilityPercent")), 100);
    assert_int_equal(json_integer_value(json_object_get(j, "probes")), 1000);
    assert_int_equal(json_integer_value(json_object_get(j, "failures")), 744);
    json_decref(j);
    brk_kpi_view(&h, &k);
    assert_int_equal(k.up_since_ms, 744 * 1000);
    assert_int_equal(k.latency_ms, 3);
    assert_int_equal(h.n, BRK_KPI_SAMPLES);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sequences),
        cmocka_unit_test(test_bounded),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
