/* Unit tests of the pure parts of cliqo-broker's daemon (src/broker/): the command line
 * (config.c), the API's token bucket (api.c), the orchestrator's NamespaceOffloading spec
 * (orchestrator.c) and the aggregator's test for a consumer (aggregator.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testjson.h"
#include "broker/aggregator.h"
#include "broker/api.h"
#include "broker/config.h"
#include "broker/orchestrator.h"
#include "common/log.h"
#include "offloading/nsof.h"

#define N(a)     (sizeof(a) / sizeof((a)[0]))
#define MAX_ARGS 12

/* The command line args (NULL-terminated, at most MAX_ARGS) after the program's name. cfg is
 * static: struct brk_config holds the forwarded flags' buffers, and the agent's settings point
 * into them. */
static struct brk_config cfg;

static int parse(const char *const *args, char *err, size_t errlen)
{
    char *argv[MAX_ARGS + 2];
    int argc = 0;

    argv[argc++] = "cliqo-broker";
    for (size_t i = 0; i < MAX_ARGS && args[i]; i++)
        argv[argc++] = (char *)args[i];
    argv[argc] = NULL;
    return brk_config_parse(argc, argv, &cfg, err, errlen);
}

/* ---- brk_config_parse ---------------------------------------------------------------------- */

/* The defaults, and the API's address deciding whether the token is required. */
static void test_config_defaults(void **state)
{
    static const char *const args[] = {"--with-catalog", NULL};
    char err[256] = "";

    (void)state;
    unsetenv("POD_NAME");
    if (parse(args, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    assert_true(cfg.catalog);
    assert_false(cfg.orchestrator);
    assert_false(cfg.aggregator);
    assert_string_equal(cfg.api_addr, "127.0.0.1:8000");
    assert_true(cfg.api_loopback);
    assert_false(cfg.require_token);
    assert_false(cfg.public_catalog);
    assert_false(cfg.default_enabled);
    assert_string_equal(cfg.token_secret, "cliqo-broker-token");
    assert_int_equal(cfg.probe_interval_ms, 10000);
    assert_int_equal(cfg.probe_timeout_ms, 5000);
    assert_int_equal(cfg.rate, 20);
    assert_int_equal(cfg.global_rate, 2000);
    /* The skeleton's settings: the broker's Lease, its HTTP server is the API's. */
    assert_ptr_equal(cfg.agent.app, &cfg);
    assert_string_equal(cfg.agent.namespace_, "cliqo");
    assert_string_equal(cfg.agent.lease_name, "cliqo-broker");
    assert_true(cfg.agent.leader_elect);
    assert_string_equal(cfg.agent.http_addr, "127.0.0.1:8000");
    assert_non_null(cfg.agent.metrics_addr);
    assert_string_equal(cfg.agent.metrics_addr, "127.0.0.1:8000");
    assert_int_equal(cfg.agent.log_level, LOG_LEVEL_INFO);
}

/* Command lines that parse, and what they set. */
static void test_config_valid(void **state)
{
    static const struct {
        const char *args[MAX_ARGS + 1];
        const char *api;        /* cfg.api_addr, and the skeleton's http and metrics addresses */
        bool loopback, require; /* cfg.api_loopback, cfg.require_token */
        uint64_t interval, timeout; /* probe settings in ms */
    } cases[] = {
        {{"--with-catalog", NULL}, "127.0.0.1:8000", true, false, 10000, 5000},
        {{"--with-orchestrator", "--api-addr", ":8000", NULL}, ":8000", false, true, 10000, 5000},
        {{"--with-aggregator", "--api-addr=0.0.0.0:9000", NULL},
         "0.0.0.0:9000",
         false,
         true,
         10000,
         5000},
        {{"--with-catalog", "--api-addr", ":8000", "--require-token=true", NULL},
         ":8000",
         false,
         true,
         10000,
         5000},
        {{"--with-catalog", "--api-addr", ":8000", "--require-token", NULL},
         ":8000",
         false,
         true,
         10000,
         5000},
        /* On loopback the token may be asked for, or not. */
        {{"--with-catalog", "--require-token", NULL}, "127.0.0.1:8000", true, true, 10000, 5000},
        {{"--with-catalog", "--require-token=false", NULL},
         "127.0.0.1:8000",
         true,
         false,
         10000,
         5000},
        {{"--with-catalog", "--api-addr", "[::1]:8000", NULL},
         "[::1]:8000",
         true,
         false,
         10000,
         5000},
        {{"--with-catalog", "--api-addr", "127.0.0.2:8000", NULL},
         "127.0.0.2:8000",
         true,
         false,
         10000,
         5000},
        {{"--with-catalog", "--api-addr", "[::]:8000", NULL},
         "[::]:8000",
         false,
         true,
         10000,
         5000},
        /* The last value wins. */
        {{"--with-catalog", "--api-addr", ":8000", "--require-token=false", "--require-token=true",
          NULL},
         ":8000",
         false,
         true,
         10000,
         5000},
        /* Durations; a timeout longer than the interval is cut to the interval. */
        {{"--with-catalog", "--probe-interval=1s", "--probe-timeout", "500ms", NULL},
         "127.0.0.1:8000",
         true,
         false,
         1000,
         500},
        {{"--with-catalog", "--probe-interval=1s", "--probe-timeout=5s", NULL},
         "127.0.0.1:8000",
         true,
         false,
         1000,
         1000},
        {{"--with-catalog", "--probe-interval=100ms", "--probe-timeout=60s", NULL},
         "127.0.0.1:8000",
         true,
         false,
         100,
         100},
        {{"--with-catalog", "--probe-interval=1h", "--probe-timeout=1m", NULL},
         "127.0.0.1:8000",
         true,
         false,
         3600000,
         60000},
        {{"--with-catalog", "--with-orchestrator", "--with-aggregator", NULL},
         "127.0.0.1:8000",
         true,
         false,
         10000,
         5000},
    };

    (void)state;
    for (size_t i = 0; i < N(cases); i++) {
        char err[256] = "";

        if (parse(cases[i].args, err, sizeof(err)) != 0)
            fail_msg("case %zu: %s", i, err);
        if (strcmp(cfg.api_addr, cases[i].api) != 0 || cfg.api_loopback != cases[i].loopback ||
            cfg.require_token != cases[i].require || cfg.probe_interval_ms != cases[i].interval ||
            cfg.probe_timeout_ms != cases[i].timeout)
            fail_msg("case %zu: api %s loopback %d require %d interval %llu timeout %llu", i,
                     cfg.api_addr, cfg.api_loopback, cfg.require_token,
                     (unsigned long long)cfg.probe_interval_ms,
                     (unsigned long long)cfg.probe_timeout_ms);
        assert_ptr_equal(cfg.agent.app, &cfg);
        assert_string_equal(cfg.agent.http_addr, cases[i].api);
        assert_non_null(cfg.agent.metrics_addr);
        assert_string_equal(cfg.agent.metrics_addr, cases[i].api);
    }
}

/* Command lines refused, each with a message that names what is wrong. */
static void test_config_refused(void **state)
{
    static const struct {
        const char *args[MAX_ARGS + 1];
        const char *err; /* the message starts with this */
    } cases[] = {
        {{NULL}, "nothing to run: give at least one of --with-catalog"},
        {{"--api-addr", ":8000", NULL}, "nothing to run"},
        {{"--with-catalog", "--api-addr", ":8000", "--require-token=false", NULL},
         "--require-token=false: the API listens beyond loopback (:8000)"},
        {{"--with-catalog", "--api-addr=0.0.0.0:8000", "--require-token=false", NULL},
         "--require-token=false: the API listens beyond loopback"},
        {{"--with-catalog", "--require-token=maybe", NULL},
         "--require-token: expected true or false, not 'maybe'"},
        {{"--with-catalog", "--api-addr", "nowhere", NULL},
         "--api-addr: invalid address 'nowhere'"},
        {{"--with-catalog", "--api-addr", "1.2.3.4:99999", NULL}, "--api-addr: invalid address"},
        {{"--with-catalog", "--api-addr", "", NULL}, "--api-addr: invalid address"},
        {{"--with-catalog", "--api-addr", NULL}, "--api-addr: missing value"},
        {{"--with-catalog", "--token-secret", "Not_A_Name", NULL},
         "--token-secret: 'Not_A_Name' is not a valid Secret name"},
        {{"--with-catalog", "--token-secret=", NULL}, "--token-secret: '' is not a valid Secret"},
        {{"--with-catalog", "--probe-interval", "10", NULL}, "--probe-interval: "},
        {{"--with-catalog", "--probe-interval", "soon", NULL}, "--probe-interval: "},
        {{"--with-catalog", "--probe-interval", "50ms", NULL}, "--probe-interval: "},
        {{"--with-catalog", "--probe-interval", "2h", NULL}, "--probe-interval: "},
        {{"--with-catalog", "--probe-timeout", "2m", NULL}, "--probe-timeout: "},
        {{"--with-catalog", "--probe-timeout", "-1s", NULL}, "--probe-timeout: "},
        {{"--with-catalog", "--rate-limit", "lots", NULL}, "--rate-limit: "},
        {{"--with-catalog", "--rate-limit", "1000001", NULL}, "--rate-limit: "},
        {{"--with-catalog", "--http-addr", ":8080", NULL}, "unknown flag '--http-addr'"},
        {{"--with-catalog", "extra", NULL}, "unexpected argument 'extra'"},
        /* Flags forwarded to the skeleton are checked there, and named. */
        {{"--with-catalog", "--namespace", "Not A Namespace", NULL}, "--namespace: "},
        {{"--with-catalog", "--lease-name=Bad_Lease", NULL}, "--lease-name: "},
        {{"--with-catalog", "--leader-elect=maybe", NULL}, "--leader-elect: "},
        {{"--with-catalog", "--log-level", "loud", NULL}, "--log-level: "},
        {{"--with-catalog", "--lease-duration", "forever", NULL}, "--lease-duration: "},
        {{"--with-catalog", "--kubeconfig=", NULL}, "--kubeconfig=: empty value"},
    };

    (void)state;
    for (size_t i = 0; i < N(cases); i++) {
        char err[256] = "";
        int r = parse(cases[i].args, err, sizeof(err));

        if (r != -EINVAL)
            fail_msg("case %zu: returned %d, want -EINVAL (\"%s\")", i, r, cases[i].err);
        if (strncmp(err, cases[i].err, strlen(cases[i].err)) != 0)
            fail_msg("case %zu: \"%s\", want \"%s...\"", i, err, cases[i].err);
    }
}

/* The flags the broker shares with cliqo-agent reach the skeleton's settings. */
static void test_config_forwarded(void **state)
{
    static const char *const args[] = {"--with-aggregator",
                                       "--namespace",
                                       "brokers",
                                       "--lease-name=my-broker",
                                       "--leader-elect=false",
                                       "--log-level",
                                       "debug",
                                       "--lease-duration=30s",
                                       "--renew-deadline",
                                       "20s",
                                       "--kubeconfig=/etc/kube/config",
                                       NULL};
    static const char *const bare_bool[] = {"--with-catalog", "--leader-elect", "--namespace",
                                            "ns1", NULL};
    static const char *const twice[] = {"--with-catalog",      "--log-level=warn",
                                        "--log-level=error",   "--leader-elect=false",
                                        "--leader-elect=true", NULL};
    static const char *const identity[] = {"--with-catalog", "--identity", "replica-1", NULL};
    char err[256] = "";

    (void)state;
    if (parse(args, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    assert_true(cfg.aggregator);
    assert_string_equal(cfg.agent.namespace_, "brokers");
    assert_string_equal(cfg.agent.lease_name, "my-broker");
    assert_false(cfg.agent.leader_elect);
    assert_int_equal(cfg.agent.log_level, LOG_LEVEL_DEBUG);
    assert_int_equal(cfg.agent.lease_duration_ms, 30000);
    assert_int_equal(cfg.agent.renew_deadline_ms, 20000);
    assert_string_equal(cfg.agent.kubeconfig, "/etc/kube/config");
    assert_ptr_equal(cfg.agent.app, &cfg);

    /* A boolean given bare means true, as cliqo-agent reads it: the next word stays a flag. */
    if (parse(bare_bool, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    assert_true(cfg.agent.leader_elect);
    assert_string_equal(cfg.agent.namespace_, "ns1");

    if (parse(twice, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    assert_int_equal(cfg.agent.log_level, LOG_LEVEL_ERROR);
    assert_true(cfg.agent.leader_elect);

    if (parse(identity, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    assert_string_equal(cfg.agent.identity, "replica-1");
}

/* --help and --version stop the parse, with or without a module. */
static void test_config_help(void **state)
{
    static const char *const help[] = {"--help", NULL};
    static const char *const version[] = {"--version", NULL};
    char err[256] = "";

    (void)state;
    assert_int_equal(parse(help, err, sizeof(err)), 0);
    assert_true(cfg.help);
    assert_int_equal(parse(version, err, sizeof(err)), 0);
    assert_true(cfg.version);
}

/* ---- brk_bucket_take ----------------------------------------------------------------------- */

static void test_bucket(void **state)
{
    static const struct {
        uint32_t rate, burst;
        struct {
            uint64_t at_ms;
            bool ok;
            unsigned retry; /* when refused: Retry-After in seconds */
        } steps[12];
        size_t n;
    } cases[] = {
        /* A burst of 4, then refusals until tokens come back at 2 per second. */
        {2,
         4,
         {{1000, true},
          {1000, true},
          {1000, true},
          {1000, true},
          {1000, false, 1},
          {1100, false, 1},
          {1500, true},
          {1500, false, 1},
          {2000, true},
          {2000, false, 1},
          {5000, true}},
         11},
        /* A long pause refills to the burst, no further. */
        {1,
         2,
         {{0, true}, {0, true}, {0, false, 1}, {100000, true}, {100000, true}, {100000, false, 1}},
         6},
        /* No burst given: one at a time. */
        {10, 0, {{0, true}, {0, false, 1}, {99, false, 1}, {100, true}, {100, false, 1}}, 5},
        /* Rate 0: no limit at all. */
        {0, 0, {{0, true}, {0, true}, {0, true}, {0, true}, {0, true}}, 5},
        /* A fast rate still says at least one second. */
        {1000, 1, {{0, true}, {0, false, 1}, {1, true}}, 3},
        /* The first request is at any time, not only from zero. */
        {1, 1, {{123456789, true}, {123456789, false, 1}, {123457789, true}}, 3},
    };

    (void)state;
    for (size_t i = 0; i < N(cases); i++) {
        struct brk_bucket b = {0};

        for (size_t j = 0; j < cases[i].n; j++) {
            unsigned retry = 0;
            bool ok =
                brk_bucket_take(&b, cases[i].rate, cases[i].burst, cases[i].steps[j].at_ms, &retry);

            if (ok != cases[i].steps[j].ok)
                fail_msg("case %zu step %zu: %s, want %s", i, j, ok ? "taken" : "refused",
                         cases[i].steps[j].ok ? "taken" : "refused");
            if (!ok && (retry < 1 || retry != cases[i].steps[j].retry))
                fail_msg("case %zu step %zu: Retry-After %u, want %u", i, j, retry,
                         cases[i].steps[j].retry);
        }
    }
}

/* Retry-After is the whole seconds until the next token (at least 1), and retry_s may be NULL. */
static void test_bucket_retry(void **state)
{
    struct brk_bucket b = {0};
    unsigned retry = 0;

    (void)state;
    /* The rate is an integer per second: a token is never more than a second away. */
    for (uint32_t rate = 1; rate <= 1000; rate *= 10) {
        b = (struct brk_bucket){0};
        assert_true(brk_bucket_take(&b, rate, 1, 0, &retry));
        assert_false(brk_bucket_take(&b, rate, 1, 0, &retry));
        assert_int_equal(retry, 1);
    }
    b = (struct brk_bucket){0};
    assert_true(brk_bucket_take(&b, 1, 1, 0, NULL));
    assert_false(brk_bucket_take(&b, 1, 1, 0, NULL));
    /* 2,000 requests in a second at 1,000/s with a burst of 2,000: all go, the next waits. */
    b = (struct brk_bucket){0};
    for (int k = 0; k < 2000; k++)
        assert_true(brk_bucket_take(&b, 1000, 2000, 0, &retry));
    assert_false(brk_bucket_take(&b, 1000, 2000, 0, &retry));
    assert_true(retry >= 1);
    assert_true(brk_bucket_take(&b, 1000, 2000, 1, &retry));
}

/* ---- brk_orch_spec ------------------------------------------------------------------------- */

#define SPEC_HEAD                                                                                  \
    "{'namespaceMappingStrategy': 'EnforceSameName', 'podOffloadingStrategy': 'Remote',"           \
    " 'clusterSelector': {'nodeSelectorTerms': [{'matchExpressions': ["                            \
    "{'key': 'liqo.io/type', 'operator': 'In', 'values': ['virtual-node']},"                       \
    " {'key': 'liqo.io/remote-cluster-id', 'operator': 'NotIn', 'values': ['%s']},"                \
    " {'key': 'liqo.io/remote-cluster-id', 'operator': 'In', 'values': [%s]}]}]}}"

static json_t *want_spec(const char *origin, const char *values)
{
    char text[8192];

    snprintf(text, sizeof(text), SPEC_HEAD, origin, values);
    return test_js(text);
}

static void test_orch_spec(void **state)
{
    static const char *const one[] = {"provider-a"};
    static const char *const three[] = {"provider-a", "provider-b", "provider-c"};
    static const struct {
        const char *origin;
        const char *const *selected;
        size_t n;
        const char *values;
    } cases[] = {
        /* Nobody selected: a requirement that is valid and selects nothing (quirk 4: not In []). */
        {"consumer", NULL, 0, "'none.invalid'"},
        {"consumer", one, 1, "'provider-a'"},
        {"consumer", three, 3, "'provider-a', 'provider-b', 'provider-c'"},
        {"c2", three, 2, "'provider-a', 'provider-b'"},
    };

    (void)state;
    for (size_t i = 0; i < N(cases); i++) {
        json_t *got = brk_orch_spec(cases[i].origin, cases[i].selected, cases[i].n);
        json_t *want = want_spec(cases[i].origin, cases[i].values);

        assert_non_null(got);
        if (!json_equal(got, want)) {
            char *g = json_dumps(got, JSON_SORT_KEYS), *w = json_dumps(want, JSON_SORT_KEYS);

            fail_msg("case %zu:\n got %s\nwant %s", i, g, w);
        }
        json_decref(got);
        json_decref(want);
    }
}

/* More providers than a selector may list: the first NSOF_MAX_VALUES (64), in the order given. */
static void test_orch_spec_bounded(void **state)
{
    char names[100][16];
    const char *ids[100];
    json_t *spec, *values;

    (void)state;
    assert_int_equal(NSOF_MAX_VALUES, 64);
    for (size_t i = 0; i < 100; i++) {
        snprintf(names[i], sizeof(names[i]), "p%03zu", i);
        ids[i] = names[i];
    }
    for (size_t n = 63; n <= 100; n++) {
        spec = brk_orch_spec("consumer", ids, n);
        assert_non_null(spec);
        values = json_object_get(
            json_array_get(
                json_object_get(
                    json_array_get(json_object_get(json_object_get(spec, "clusterSelector"),
                                                   "nodeSelectorTerms"),
                                   0),
                    "matchExpressions"),
                2),
            "values");
        assert_int_equal(json_array_size(values), n < 64 ? n : 64);
        assert_string_equal(json_string_value(json_array_get(values, 0)), "p000");
        assert_string_equal(json_string_value(json_array_get(values, json_array_size(values) - 1)),
                            names[(n < 64 ? n : 64) - 1]);
        json_decref(spec);
    }
}

/* ---- brk_is_consumer ----------------------------------------------------------------------- */

static void test_is_consumer(void **state)
{
    static const struct {
        const char *fc;
        bool consumer;
    } cases[] = {
        {"{'status': {'peeringConditions': [{'type': 'IncomingPeering', 'status': "
         "'Established'}]}}",
         true},
        {"{'status': {'peeringConditions': [{'type': 'OutgoingPeering', 'status': 'Established'},"
         " {'type': 'IncomingPeering', 'status': 'Established', 'reason': 'x'}]}}",
         true},
        {"{'status': {'peeringConditions': [{'type': 'IncomingPeering', 'status': 'Pending'}]}}",
         false},
        {"{'status': {'peeringConditions': [{'type': 'IncomingPeering', 'status': 'None'}]}}",
         false},
        {"{'status': {'peeringConditions': [{'type': 'IncomingPeering', 'status': "
         "'Disconnecting'}]}}",
         false},
        /* Only the incoming direction makes a consumer. */
        {"{'status': {'peeringConditions': [{'type': 'OutgoingPeering', 'status': "
         "'Established'}]}}",
         false},
        /* Missing. */
        {"{}", false},
        {"{'status': {}}", false},
        {"{'status': {'peeringConditions': []}}", false},
        {"{'status': {'peeringConditions': [{'type': 'IncomingPeering'}]}}", false},
        {"{'status': {'peeringConditions': [{'status': 'Established'}]}}", false},
        /* Wrong types and spellings. */
        {"[]", false},
        {"{'status': []}", false},
        {"{'status': 'Established'}", false},
        {"{'status': {'peeringConditions': {'type': 'IncomingPeering', 'status': "
         "'Established'}}}",
         false},
        {"{'status': {'peeringConditions': ['IncomingPeering', 'Established']}}", false},
        {"{'status': {'peeringConditions': [null, 7, {'type': 'IncomingPeering', 'status': "
         "true}]}}",
         false},
        {"{'status': {'peeringConditions': [{'type': ['IncomingPeering'], 'status': "
         "'Established'}]}}",
         false},
        {"{'status': {'peeringConditions': [{'type': 'IncomingPeering', 'status': "
         "'established'}]}}",
         false},
        {"{'status': {'peeringConditions': [{'type': 'incomingpeering', 'status': "
         "'Established'}]}}",
         false},
        {"{'status': {'peeringConditions': [{'type': 'IncomingPeering', 'status': "
         "'Established '}]}}",
         false},
        /* Wrong entries before the right one do not hide it. */
        {"{'status': {'peeringConditions': [7, {'type': 1}, {'type': 'IncomingPeering', "
         "'status': 'Established'}]}}",
         true},
        {"{'spec': {'peeringConditions': [{'type': 'IncomingPeering', 'status': "
         "'Established'}]}}",
         false},
    };

    (void)state;
    assert_false(brk_is_consumer(NULL));
    for (size_t i = 0; i < N(cases); i++) {
        json_t *fc = test_js(cases[i].fc);

        if (brk_is_consumer(fc) != cases[i].consumer)
            fail_msg("case %zu: %s, want %s", i, cases[i].consumer ? "no" : "yes",
                     cases[i].consumer ? "yes" : "no");
        json_decref(fc);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_defaults),   cmocka_unit_test(test_config_valid),
        cmocka_unit_test(test_config_refused),    cmocka_unit_test(test_config_forwarded),
        cmocka_unit_test(test_config_help),       cmocka_unit_test(test_bucket),
        cmocka_unit_test(test_bucket_retry),      cmocka_unit_test(test_orch_spec),
        cmocka_unit_test(test_orch_spec_bounded), cmocka_unit_test(test_is_consumer),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
