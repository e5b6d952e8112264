/* Unit tests of src/agent/metrics.c: exact exposition text, escaping, ordering, limits, and the
 * output checked by `promtool check metrics` (when PROMTOOL names it). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metrics/metrics.h"

static const char *const no_labels[] = {NULL};

static char *render(struct metrics_registry *r)
{
    struct sbuf b;

    sbuf_init(&b, 1 << 20);
    assert_int_equal(metrics_render(r, &b), 0);
    return sbuf_steal(&b);
}

static unsigned collected;
static void collector(struct metrics_registry *r, void *data)
{
    (void)r;
    collected++;
    metrics_set(data, NULL, 42);
}

static struct metrics_registry *sample_registry(void)
{
    static const char *const req_labels[] = {"path", "code", NULL};
    static const char *const hl[] = {"op", NULL};
    static const double buckets[] = {0.005, 0.1, 1, 2.5};
    struct metrics_registry *r = metrics_registry_new();
    struct metrics_family *req, *up, *lat, *temp;
    struct metrics_series *s;
    const char *v1[] = {"/b", "200", NULL}, *v2[] = {"/a", "404", NULL},
               *v3[] = {"/a", "200", NULL}, *esc[] = {"q\"uo\\te\nnl", "500", NULL};
    const char *op[] = {"get", NULL};

    assert_non_null(r);
    assert_int_equal(metrics_family_new(r, METRICS_COUNTER, "test_requests_total",
                                        "Requests.\nSecond line with \\ backslash.", req_labels,
                                        NULL, 0, &req),
                     0);
    assert_int_equal(metrics_family_new(r, METRICS_GAUGE, "test_up", "Up.", NULL, NULL, 0, &up), 0);
    assert_int_equal(metrics_family_new(r, METRICS_HISTOGRAM, "test_latency_seconds", "Latency.",
                                        hl, buckets, 4, &lat),
                     0);
    assert_int_equal(metrics_family_new(r, METRICS_GAUGE, "test_collected", "From a collector.",
                                        NULL, NULL, 0, &temp),
                     0);
    assert_int_equal(metrics_add_collector(r, collector, temp), 0);
    metrics_inc(req, v1);
    metrics_inc(req, v2);
    metrics_inc(req, v3);
    metrics_inc(req, v3);
    metrics_inc(req, esc);
    assert_int_equal(metrics_series_get(req, v3, &s), 0);
    metrics_counter_add(s, 0.5);
    metrics_counter_add(s, -7); /* ignored */
    metrics_set(up, NULL, 1);
    metrics_observe(lat, op, 0.001);
    metrics_observe(lat, op, 0.05);
    metrics_observe(lat, op, 0.05);
    metrics_observe(lat, op, 3);
    return r;
}

static void test_exact_text(void **state)
{
    struct metrics_registry *r = sample_registry();
    char *out;

    (void)state;
    out = render(r);
    assert_string_equal(out, "# HELP test_collected From a collector.\n"
                             "# TYPE test_collected gauge\n"
                             "test_collected 42\n"
                             "# HELP test_latency_seconds Latency.\n"
                             "# TYPE test_latency_seconds histogram\n"
                             "test_latency_seconds_bucket{op=\"get\",le=\"0.005\"} 1\n"
                             "test_latency_seconds_bucket{op=\"get\",le=\"0.1\"} 3\n"
                             "test_latency_seconds_bucket{op=\"get\",le=\"1\"} 3\n"
                             "test_latency_seconds_bucket{op=\"get\",le=\"2.5\"} 3\n"
                             "test_latency_seconds_bucket{op=\"get\",le=\"+Inf\"} 4\n"
                             "test_latency_seconds_sum{op=\"get\"} 3.101\n"
                             "test_latency_seconds_count{op=\"get\"} 4\n"
                             "# HELP test_requests_total Requests.\\nSecond line with \\\\ "
                             "backslash.\n"
                             "# TYPE test_requests_total counter\n"
                             "test_requests_total{path=\"/a\",code=\"200\"} 2.5\n"
                             "test_requests_total{path=\"/a\",code=\"404\"} 1\n"
                             "test_requests_total{path=\"/b\",code=\"200\"} 1\n"
                             "test_requests_total{path=\"q\\\"uo\\\\te\\nnl\",code=\"500\"} 1\n"
                             "# HELP test_up Up.\n"
                             "# TYPE test_up gauge\n"
                             "test_up 1\n");
    assert_int_equal(collected, 1);
    free(out);
    metrics_registry_free(r);
}

static void test_promtool(void **state)
{
    const char *promtool = getenv("PROMTOOL");
    struct metrics_registry *r = sample_registry();
    char path[] = "/tmp/test-metrics-XXXXXX", cmd[512];
    char *out = render(r);
    int fd;
    FILE *f;

    (void)state;
    if (!promtool || !*promtool) {
        free(out);
        metrics_registry_free(r);
        skip();
    }
    fd = mkstemp(path);
    assert_true(fd >= 0);
    f = fdopen(fd, "w");
    fputs(out, f);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "%s check metrics < %s", promtool, path);
    assert_int_equal(system(cmd), 0);
    unlink(path);
    free(out);
    metrics_registry_free(r);
}

static void test_values(void **state)
{
    static const struct {
        double v;
        const char *s;
    } cases[] = {
        {0, "0"},
        {-0.0, "0"},
        {1, "1"},
        {-3, "-3"},
        {0.1, "0.1"},
        {1e-9, "1e-09"},
        {123456789012, "123456789012"},
        {1.5e300, "1.5e+300"},
        {0.30000000000000004, "0.30000000000000004"},
        {INFINITY, "+Inf"},
        {-INFINITY, "-Inf"},
        {NAN, "NaN"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sbuf b;

        sbuf_init(&b, 64);
        assert_int_equal(metrics_format_value(&b, cases[i].v), 0);
        assert_string_equal(sbuf_str(&b), cases[i].s);
        sbuf_done(&b);
    }
}

static void test_invalid(void **state)
{
    static const char *const bad_label[] = {"__x", NULL};
    static const char *const colon_label[] = {"a:b", NULL};
    static const char *const dup[] = {"a", "a", NULL};
    static const char *const le[] = {"le", NULL};
    static const char *const one[] = {"a", NULL};
    static const double down[] = {1, 0.5}, inf[] = {1, INFINITY};
    struct metrics_registry *r = metrics_registry_new();
    struct metrics_family *f;
    struct metrics_series *s;
    const char *two[] = {"x", "y", NULL}, *v[] = {"v", NULL}, *w[] = {"w", NULL};

    (void)state;
    assert_int_equal(metrics_family_new(r, METRICS_GAUGE, "1x", "h", NULL, NULL, 0, &f), -EINVAL);
    assert_int_equal(metrics_family_new(r, METRICS_GAUGE, "a-b", "h", NULL, NULL, 0, &f), -EINVAL);
    assert_int_equal(metrics_family_new(r, METRICS_GAUGE, "", "h", NULL, NULL, 0, &f), -EINVAL);
    assert_int_equal(metrics_family_new(r, METRICS_GAUGE, "a", "h", bad_label, NULL, 0, &f),
                     -EINVAL);
    assert_int_equal(metrics_family_new(r, METRICS_GAUGE, "a", "h", colon_label, NULL, 0, &f),
                     -EINVAL);
    assert_int_equal(metrics_family_new(r, METRICS_GAUGE, "a", "h", dup, NULL, 0, &f), -EINVAL);
    assert_int_equal(metrics_family_new(r, METRICS_HISTOGRAM, "a", "h", le, down, 1, &f), -EINVAL);
    assert_int_equal(metrics_family_new(r, METRICS_HISTOGRAM, "a", "h", NULL, down, 2, &f),
                     -EINVAL);
    assert_int_equal(metrics_family_new(r, METRICS_HISTOGRAM, "a", "h", NULL, inf, 2, &f), -EINVAL);
    assert_int_equal(metrics_family_new(r, METRICS_GAUGE, "a", "h", NULL, down, 1, &f), -EINVAL);
    assert_int_equal(metrics_family_new(r, METRICS_GAUGE, "ns:a", "h", one, NULL, 0, &f), 0);
    assert_int_equal(metrics_family_new(r, METRICS_COUNTER, "ns:a", "h", NULL, NULL, 0, &f),
                     -EEXIST);
    assert_int_equal(metrics_series_get(f, NULL, &s), -EINVAL);
    assert_int_equal(metrics_series_get(f, no_labels, &s), -EINVAL);
    metrics_family_set_max_series(f, 1);
    assert_int_equal(metrics_series_get(f, v, &s), 0);
    assert_int_equal(metrics_series_get(f, v, &s), 0);
    assert_int_equal(metrics_series_get(f, w, &s), -ENOSPC);
    (void)two;
    metrics_family_reset(f);
    assert_int_equal(metrics_series_get(f, w, &s), 0);
    metrics_registry_free(r);
}

static void test_output_limit(void **state)
{
    struct metrics_registry *r = sample_registry();
    struct sbuf b;

    (void)state;
    sbuf_init(&b, 100);
    assert_int_equal(metrics_render(r, &b), -E2BIG);
    sbuf_done(&b);
    metrics_registry_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_text),   cmocka_unit_test(test_promtool),
        cmocka_unit_test(test_values),       cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_output_limit),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
