#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "testjson.h"
#include "broker/select.h"

/* Every field, each way it can be wrong: the error names the field. */
static void test_policy_parse(void **state)
{
    static const struct {
        const char *json;
        const char *err; /* NULL: valid */
    } cases[] = {
        {"{}", NULL},
        {"{\"minUptimeSeconds\": 600, \"maxLatencyMs\": 50, \"hysteresisSeconds\": 0}", NULL},
        {"{\"minFree\": {\"cpu\": \"2\", \"memory\": \"4Gi\", \"nvidia.com/gpu\": \"1\"}}", NULL},
        {"{\"maxPrice\": \"0.05\", \"requiredLabels\": {\"region\": \"eu\", \"x.io/tier\": \"\"}}",
         NULL},
        {"[]", "policy: expected an object"},
        {"{\"minUptime\": 1}", "unknown field \"minUptime\""},
        {"{\"minUptimeSeconds\": \"600\"}", "minUptimeSeconds: expected an integer from 0 to"},
        {"{\"minUptimeSeconds\": -1}", "minUptimeSeconds: expected an integer"},
        {"{\"maxLatencyMs\": 600001}", "maxLatencyMs: expected an integer from 0 to 600000"},
        {"{\"maxLatencyMs\": 1.5}", "maxLatencyMs: expected an integer"},
        {"{\"hysteresisSeconds\": 86401}",
         "hysteresisSeconds: expected an integer from 0 to 86400"},
        {"{\"minFree\": []}", "minFree: expected an object"},
        {"{\"minFree\": {\"cpu\": 2}}", "minFree.cpu: expected a quantity of 0 or more"},
        {"{\"minFree\": {\"cpu\": \"-1\"}}", "minFree.cpu: expected a quantity of 0 or more"},
        {"{\"minFree\": {\"cpu\": \"lots\"}}", "minFree.cpu: expected a quantity"},
        {"{\"minFree\": {\"Bad Name\": \"1\"}}", "minFree: \"Bad Name\" is not a resource name"},
        {"{\"maxPrice\": 0.05}", "maxPrice: expected a quantity of 0 or more"},
        {"{\"maxPrice\": \"-0.01\"}", "maxPrice: expected a quantity of 0 or more"},
        {"{\"requiredLabels\": \"region=eu\"}", "requiredLabels: expected an object"},
        {"{\"requiredLabels\": {\"region\": 1}}", "requiredLabels.region: expected a label value"},
        {"{\"requiredLabels\": {\"region\": \"e u\"}}", "requiredLabels.region: expected a label"},
        {"{\"requiredLabels\": {\"-bad\": \"x\"}}", "requiredLabels: \"-bad\" is not a label key"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *j = test_js(cases[i].json);
        struct brk_policy p;
        char err[256] = "";
        int e;

        brk_policy_default(&p);
        p.min_uptime_s = 12345; /* untouched on failure */
        e = brk_policy_parse(j, &p, err, sizeof(err));
        if (!cases[i].err) {
            json_t *back, *again;
            struct brk_policy q;

            if (e != 0)
                fail_msg("%s: %s", cases[i].json, err);
            /* The API's form parses back to the same policy. */
            back = brk_policy_json(&p);
            assert_non_null(back);
            assert_int_equal(brk_policy_parse(back, &q, err, sizeof(err)), 0);
            again = brk_policy_json(&q);
            assert_true(json_equal(back, again));
            json_decref(back);
            json_decref(again);
        } else {
            assert_int_equal(e, -EINVAL);
            if (strncmp(err, cases[i].err, strlen(cases[i].err)) != 0)
                fail_msg("%s: \"%s\", want \"%s...\"", cases[i].json, err, cases[i].err);
            assert_int_equal(p.min_uptime_s, 12345);
        }
        json_decref(j);
    }
}

/* Bounds: more resources or labels than the policy holds is refused, not cut. */
static void test_policy_bounds(void **state)
{
    json_t *j = json_object(), *free = json_object();
    struct brk_policy p;
    char err[256], name[32];

    (void)state;
    for (int i = 0; i <= BRK_MAX_FREE; i++) {
        snprintf(name, sizeof(name), "example.com/r%d", i);
        json_object_set_new(free, name, json_string("1"));
    }
    json_object_set_new(j, "minFree", free);
    assert_int_equal(brk_policy_parse(j, &p, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "minFree: at most 16 resources");
    json_decref(j);
}

/* Each criterion met and failed, with what the reason says. */
static void test_meets(void **state)
{
    static const struct {
        const char *policy;
        int64_t up_since_ms, latency_ms;
        const char *offer, *labels, *price;
        const char *why; /* NULL: meets */
    } cases[] = {
        {"{}", -1, -1, NULL, NULL, NULL, NULL},
        {"{\"minUptimeSeconds\": 60}", 40000, 5, NULL, NULL, NULL, NULL},
        {"{\"minUptimeSeconds\": 60}", 41000, 5, NULL, NULL, NULL, "up for 59s, under the min"},
        {"{\"minUptimeSeconds\": 60}", -1, 5, NULL, NULL, NULL, "not reachable"},
        {"{\"maxLatencyMs\": 50}", 0, 50, NULL, NULL, NULL, NULL},
        {"{\"maxLatencyMs\": 50}", 0, 51, NULL, NULL, NULL, "latency 51ms, over the maximum"},
        {"{\"maxLatencyMs\": 50}", 0, -1, NULL, NULL, NULL, "latency unknown"},
        {"{\"minFree\": {\"cpu\": \"1500m\", \"memory\": \"1Gi\"}}", 0, 0,
         "{\"cpu\": \"2\", \"memory\": \"1024Mi\"}", NULL, NULL, NULL},
        {"{\"minFree\": {\"cpu\": \"1500m\"}}", 0, 0, "{\"cpu\": \"1\"}", NULL, NULL,
         "offers 1 of cpu, under the minimum"},
        {"{\"minFree\": {\"nvidia.com/gpu\": \"1\"}}", 0, 0, "{\"cpu\": \"8\"}", NULL, NULL,
         "offers none of nvidia.com/gpu"},
        {"{\"minFree\": {\"nvidia.com/gpu\": \"0\"}}", 0, 0, NULL, NULL, NULL, NULL},
        {"{\"minFree\": {\"cpu\": \"1\"}}", 0, 0, "{\"cpu\": \"x\"}", NULL, NULL,
         "its offer of cpu is not a quantity"},
        {"{\"maxPrice\": \"0.05\"}", 0, 0, NULL, NULL, "0.05", NULL},
        {"{\"maxPrice\": \"0.05\"}", 0, 0, NULL, NULL, "50m", NULL},
        {"{\"maxPrice\": \"0.05\"}", 0, 0, NULL, NULL, "0.051", "price 0.051 over the maximum"},
        {"{\"maxPrice\": \"0.05\"}", 0, 0, NULL, NULL, NULL, "no valid price"},
        {"{\"maxPrice\": \"0.05\"}", 0, 0, NULL, NULL, "cheap", "no valid price"},
        {"{\"maxPrice\": \"0.05\"}", 0, 0, NULL, NULL, "-1", "no valid price"},
        {"{\"requiredLabels\": {\"region\": \"eu\"}}", 0, 0, NULL, "{\"region\": \"eu\"}", NULL,
         NULL},
        {"{\"requiredLabels\": {\"region\": \"eu\"}}", 0, 0, NULL, "{\"region\": \"us\"}", NULL,
         "lacks label region=eu"},
        {"{\"requiredLabels\": {\"region\": \"eu\"}}", 0, 0, NULL, NULL, NULL,
         "lacks label region=eu"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *pj = test_js(cases[i].policy);
        json_t *offer = cases[i].offer ? test_js(cases[i].offer) : NULL;
        json_t *labels = cases[i].labels ? test_js(cases[i].labels) : NULL;
        struct brk_kpi k = {cases[i].up_since_ms, cases[i].latency_ms, offer, labels,
                            cases[i].price};
        struct brk_policy p;
        char err[256], why[160] = "x";
        bool ok;

        assert_int_equal(brk_policy_parse(pj, &p, err, sizeof(err)), 0);
        ok = brk_meets(&p, &k, 100000, why, sizeof(why));
        if (!cases[i].why) {
            if (!ok)
                fail_msg("case %zu: fails: %s", i, why);
            assert_string_equal(why, "");
        } else {
            assert_false(ok);
            if (strncmp(why, cases[i].why, strlen(cases[i].why)) != 0)
                fail_msg("case %zu: \"%s\", want \"%s...\"", i, why, cases[i].why);
        }
        json_decref(pj);
        json_decref(offer);
        json_decref(labels);
    }
}

/* Hysteresis and the toggle over time: a sequence of evaluations of one provider whose latency
 * changes, with a maximum of 50 ms and hysteresisSeconds 10. */
static void test_select_over_time(void **state)
{
    static const struct {
        int64_t now_s, latency_ms;
        bool enabled;
        bool want;
        int64_t recheck_s; /* 0: none pending */
        const char *why;
    } steps[] = {
        {0, 20, true, true, 0, ""},                      /* first evaluation: at once */
        {5, 80, true, true, 15, ""},                     /* out of bounds: still in */
        {9, 30, true, true, 0, ""},                      /* back inside: the flip is forgotten */
        {12, 80, true, true, 22, ""},                    /* out again: a new count from 12 s */
        {21, 90, true, true, 22, ""},                    /* 9 s out: not yet */
        {22, 90, true, false, 0, "latency 90ms, over"},  /* 10 s out: it leaves */
        {23, 10, true, false, 33, "meets the criteria"}, /* inside: not long enough */
        {30, 10, false, false, 33, "disabled"},          /* the toggle acts at once */
        {33, 10, false, false, 0, "disabled"},           /* criteria in, but still disabled */
        {34, 10, true, true, 0, ""},                     /* enabled: in at once */
        {35, 90, false, false, 45, "disabled"},          /* disabled: out whatever the KPI */
    };
    struct brk_policy p;
    struct brk_hyst h = {0};
    char err[128], why[160];
    json_t *pj = test_js("{\"maxLatencyMs\": 50, \"hysteresisSeconds\": 10}");

    (void)state;
    assert_int_equal(brk_policy_parse(pj, &p, err, sizeof(err)), 0);
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        struct brk_kpi k = {0, steps[i].latency_ms, NULL, NULL, NULL};
        int64_t recheck = -5;
        bool sel = brk_select(&p, steps[i].enabled, &k, &h, steps[i].now_s * 1000, &recheck, why,
                              sizeof(why));

        if (sel != steps[i].want || recheck != steps[i].recheck_s * 1000 ||
            strncmp(why, steps[i].why, strlen(steps[i].why)) != 0 || (!*steps[i].why && *why))
            fail_msg("step %zu (t=%llds): selected %d recheck %lld why \"%s\"", i,
                     (long long)steps[i].now_s, sel, (long long)recheck, why);
    }
    json_decref(pj);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policy_parse),
        cmocka_unit_test(test_policy_bounds),
        cmocka_unit_test(test_meets),
        cmocka_unit_test(test_select_over_time),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
