#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "testjson.h"
#include "broker/state.h"

/* The ConfigMap's data as an operator (or an attacker with write access) may leave it. */
static void test_read(void **state)
{
    static const struct {
        const char *data; /* NULL: no data at all */
        const char *err;  /* NULL: valid */
    } cases[] = {
        {NULL, NULL},
        {"{}", NULL},
        {"{'toggles': '{\\'p1\\': true, \\'p2\\': false}'}", NULL},
        {"{'policy': '{\\'minUptimeSeconds\\': 60}'}", NULL},
        {"[]", "data: expected an object"},
        {"{'toggles': {'p1': true}}", "toggles and policy must be strings"},
        {"{'toggles': 'p1=true'}", "toggles: expected a JSON object"},
        {"{'toggles': '[]'}", "toggles: expected a JSON object"},
        {"{'toggles': '{\\'p1\\': \\'yes\\'}'}", "toggles: \"p1\" is not a cluster ID"},
        {"{'toggles': '{\\'Bad ID\\': true}'}", "toggles: \"Bad ID\" is not a cluster ID"},
        {"{'toggles': '{\\'p1\\': true, \\'p1\\': false}'}", "toggles: expected a JSON object"},
        {"{'policy': '{\\'maxLatencyMs\\': -1}'}", "policy: maxLatencyMs: expected an integer"},
        {"{'policy': 'fast'}", "policy: not JSON"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *data = cases[i].data ? test_js(cases[i].data) : NULL;
        struct brk_state s = {0};
        char err[256] = "";
        int e = brk_state_read(data, &s, err, sizeof(err));

        if (!cases[i].err) {
            if (e != 0)
                fail_msg("case %zu: %s", i, err);
        } else {
            assert_int_equal(e, -EINVAL);
            assert_null(s.toggles); /* untouched */
            if (strncmp(err, cases[i].err, strlen(cases[i].err)) != 0)
                fail_msg("case %zu: \"%s\", want \"%s...\"", i, err, cases[i].err);
        }
        brk_state_free(&s);
        json_decref(data);
    }
}

/* Toggles set and read back through the ConfigMap's data; the default applies without one. */
static void test_round_trip(void **state)
{
    json_t *data = test_js("{'toggles': '{\\'p1\\': true}', 'policy': '{\\'maxLatencyMs\\': 50}'}");
    struct brk_state s = {0}, back = {0};
    char err[256];
    json_t *out;

    (void)state;
    assert_int_equal(brk_state_read(data, &s, err, sizeof(err)), 0);
    assert_true(brk_state_enabled(&s, "p1", false));
    assert_false(brk_state_enabled(&s, "p2", false));
    assert_true(brk_state_enabled(&s, "p2", true));
    out = brk_state_data(&s, "p2", false, err, sizeof(err));
    assert_non_null(out);
    assert_int_equal(brk_state_read(out, &back, err, sizeof(err)), 0);
    assert_true(brk_state_enabled(&back, "p1", false));
    assert_false(brk_state_enabled(&back, "p2", true)); /* disabled by hand beats the default */
    assert_int_equal(back.policy.max_latency_ms, 50);
    assert_false(brk_state_enabled(&s, "p2", false)); /* s itself unchanged */
    assert_null(json_object_get(s.toggles, "p2"));
    json_decref(out);
    assert_null(brk_state_data(&s, "Not An ID", true, err, sizeof(err)));
    assert_string_equal(err, "\"Not An ID\" is not a cluster ID");
    brk_state_free(&back);
    brk_state_free(&s);
    json_decref(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read),
        cmocka_unit_test(test_round_trip),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
