/* Unit tests of src/agent/config.c: the command line of cliqo-agent. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/config.h"

static int parse(struct agent_config *cfg, char *err, size_t errlen, ...)
{
    char *argv[32];
    int argc = 0;
    va_list ap;

    argv[argc++] = "cliqo-agent";
    va_start(ap, errlen);
    for (char *a; (a = va_arg(ap, char *));)
        argv[argc++] = a;
    va_end(ap);
    argv[argc] = NULL;
    return agent_config_parse(argc, argv, cfg, err, errlen);
}

static void test_defaults(void **state)
{
    struct agent_config cfg;
    char err[256];

    (void)state;
    unsetenv("POD_NAME");
    unsetenv("POD_IP");
    assert_int_equal(parse(&cfg, err, sizeof(err), NULL), 0);
    assert_string_equal(cfg.node_address, "127.0.0.1");
    setenv("POD_IP", "10.1.2.3", 1);
    assert_int_equal(parse(&cfg, err, sizeof(err), NULL), 0);
    assert_string_equal(cfg.node_address, "10.1.2.3");
    setenv("POD_IP", "not-an-ip", 1);
    assert_int_equal(parse(&cfg, err, sizeof(err), NULL), 0);
    assert_string_equal(cfg.node_address, "127.0.0.1");
    unsetenv("POD_IP");
    assert_int_equal(parse(&cfg, err, sizeof(err), NULL), 0);
    assert_null(cfg.kubeconfig);
    assert_string_equal(cfg.namespace_, "cliqo");
    assert_string_equal(cfg.http_addr, ":8080");
    assert_null(cfg.metrics_addr); /* the agent picks loopback (AGENT_METRICS_ADDR) */
    assert_string_equal(cfg.auth_addr, ":8443");
    assert_true(cfg.leader_elect);
    assert_string_equal(cfg.lease_name, "cliqo-agent");
    assert_int_equal(cfg.lease_duration_ms, 15000);
    assert_int_equal(cfg.renew_deadline_ms, 10000);
    assert_int_equal(cfg.retry_period_ms, 2000);
    assert_int_equal(cfg.shutdown_timeout_ms, 10000);
    assert_int_equal(cfg.log_level, LOG_LEVEL_INFO);
    assert_string_equal(cfg.kubelet_addr, ":10250");
    assert_int_equal(cfg.kubelet_port, 10250);
    assert_string_equal(cfg.webhook_addr, ":9443");
    assert_null(cfg.webhook_url);
    assert_null(cfg.webhook_client_ca);
    assert_int_equal(cfg.nwebhook_client_cn, 0);
    assert_non_null(strchr(cfg.identity, '_'));
    setenv("POD_NAME", "cliqo-agent-7d9f", 1);
    assert_int_equal(parse(&cfg, err, sizeof(err), NULL), 0);
    assert_string_equal(cfg.identity, "cliqo-agent-7d9f");
    unsetenv("POD_NAME");
}

static void test_flags(void **state)
{
    struct agent_config cfg;
    char err[256];

    (void)state;
    assert_int_equal(parse(&cfg, err, sizeof(err), "--kubeconfig", "/k", "--namespace=ns-1",
                           "--http-addr", "127.0.0.1:1", "--auth-addr=[::1]:2", "--identity", "me",
                           "--metrics-addr", ":9090", "--leader-elect=false", "--lease-name",
                           "a.b-c", "--lease-duration", "1m", "--renew-deadline", "30s",
                           "--retry-period=500ms", "--shutdown-timeout", "3s", "--log-level",
                           "debug", NULL),
                     0);
    assert_string_equal(cfg.kubeconfig, "/k");
    assert_string_equal(cfg.namespace_, "ns-1");
    assert_string_equal(cfg.http_addr, "127.0.0.1:1");
    assert_string_equal(cfg.metrics_addr, ":9090");
    assert_string_equal(cfg.auth_addr, "[::1]:2");
    assert_string_equal(cfg.identity, "me");
    assert_false(cfg.leader_elect);
    assert_string_equal(cfg.lease_name, "a.b-c");
    assert_int_equal(cfg.lease_duration_ms, 60000);
    assert_int_equal(cfg.renew_deadline_ms, 30000);
    assert_int_equal(cfg.retry_period_ms, 500);
    assert_int_equal(cfg.shutdown_timeout_ms, 3000);
    assert_int_equal(cfg.log_level, LOG_LEVEL_DEBUG);
    assert_int_equal(parse(&cfg, err, sizeof(err), "--leader-elect", "--help", "--version", NULL),
                     0);
    assert_true(cfg.leader_elect);
    assert_true(cfg.help);
    assert_true(cfg.version);
    assert_int_equal(parse(&cfg, err, sizeof(err), "--kubelet-addr", "127.0.0.1:16408",
                           "--node-address", "fd00::1", "--webhook-addr=127.0.0.1:16409",
                           "--webhook-url", "https://127.0.0.1:16409", NULL),
                     0);
    assert_string_equal(cfg.kubelet_addr, "127.0.0.1:16408");
    assert_int_equal(cfg.kubelet_port, 16408);
    assert_string_equal(cfg.node_address, "fd00::1");
    assert_string_equal(cfg.webhook_addr, "127.0.0.1:16409");
    assert_string_equal(cfg.webhook_url, "https://127.0.0.1:16409");
    /* The API server's webhook client certificate: its CA, and names repeated or in lists. */
    assert_int_equal(parse(&cfg, err, sizeof(err), "--webhook-client-ca", "/etc/ca.crt",
                           "--webhook-client-cn", "kube-apiserver-webhook-client",
                           "--webhook-client-cn=a,b c", NULL),
                     0);
    assert_string_equal(cfg.webhook_client_ca, "/etc/ca.crt");
    assert_int_equal(cfg.nwebhook_client_cn, 3);
    assert_string_equal(cfg.webhook_client_cn[0], "kube-apiserver-webhook-client");
    assert_string_equal(cfg.webhook_client_cn[1], "a");
    assert_string_equal(cfg.webhook_client_cn[2], "b c");
    assert_int_equal(parse(&cfg, err, sizeof(err), "--webhook-client-ca=/ca", NULL), 0);
    assert_int_equal(cfg.nwebhook_client_cn, 0);
}

static void test_errors(void **state)
{
    static const struct {
        const char *args[4];
        const char *msg;
    } cases[] = {
        {{"--bogus"}, "unknown flag '--bogus'"},
        {{"-x"}, "unknown flag '-x'"},
        {{"extra"}, "unexpected argument 'extra'"},
        {{"--namespace"}, "--namespace: missing value"},
        {{"--namespace", "Bad_NS"}, "--namespace: 'Bad_NS' is not a valid namespace name"},
        {{"--http-addr", "8080"}, "--http-addr: invalid address '8080'"},
        {{"--metrics-addr", "9090"}, "--metrics-addr: invalid address '9090'"},
        {{"--auth-addr", "host:1"}, "--auth-addr: invalid address 'host:1'"},
        {{"--identity="}, "--identity: must be 1 to 128 characters"},
        {{"--leader-elect=yes"}, "--leader-elect: expected true or false, not 'yes'"},
        {{"--lease-name", "-x"}, "--lease-name: '-x' is not a valid object name"},
        {{"--lease-duration", "15"}, "--lease-duration: invalid duration '15'"},
        {{"--retry-period", "0s"}, "--retry-period: invalid duration '0s'"},
        {{"--renew-deadline", "20s"}, "--renew-deadline must be shorter than --lease-duration"},
        {{"--retry-period", "10s"}, "--retry-period must be shorter than --renew-deadline"},
        {{"--log-level", "loud"}, "--log-level: expected debug, info, warn or error, not 'loud'"},
        {{"--kubeconfig="}, "--kubeconfig=: empty value"},
        {{"--kubelet-addr", ":0"}, "--kubelet-addr: the port must be given"},
        {{"--kubelet-addr", "x"}, "--kubelet-addr: invalid address 'x'"},
        {{"--webhook-addr", "1.2.3"}, "--webhook-addr: invalid address '1.2.3'"},
        {{"--node-address", "host"}, "--node-address: 'host' is not an IP address"},
        {{"--webhook-url", "http://x"}, "--webhook-url: expected an https:// URL"},
        {{"--webhook-client-ca="}, "--webhook-client-ca=: empty value"},
        {{"--webhook-client-cn", "x"}, "--webhook-client-cn needs --webhook-client-ca"},
        {{"--webhook-client-cn", "a,,b"}, "--webhook-client-cn: 'a,,b' is not a list"},
        {{"--webhook-client-cn", ""}, "--webhook-client-cn: '' is not a list"},
        {{"--webhook-client-cn", "a\tb"}, "--webhook-client-cn: 'a\tb' is not a list"},
        {{"--webhook-client-cn",
          "x1234567890123456789012345678901234567890123456789012345678901234"},
         "--webhook-client-cn: 'x12345"},
        {{"--webhook-client-cn", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"},
         "--webhook-client-cn: more than 16 names"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct agent_config cfg;
        char err[256];
        int r = parse(&cfg, err, sizeof(err), cases[i].args[0], cases[i].args[1], NULL);

        if (r != -EINVAL)
            fail_msg("case %zu: accepted", i);
        if (strncmp(err, cases[i].msg, strlen(cases[i].msg)) != 0)
            fail_msg("case %zu: got '%s', want '%s...'", i, err, cases[i].msg);
        assert_null(strchr(err, '\n'));
    }
}

static void test_duration(void **state)
{
    uint64_t ms;

    (void)state;
    assert_int_equal(agent_parse_duration("0ms", &ms), 0);
    assert_int_equal(ms, 0);
    assert_int_equal(agent_parse_duration("2h", &ms), 0);
    assert_int_equal(ms, 7200000);
    assert_int_equal(agent_parse_duration("", &ms), -EINVAL);
    assert_int_equal(agent_parse_duration("s", &ms), -EINVAL);
    assert_int_equal(agent_parse_duration("1.5s", &ms), -EINVAL);
    assert_int_equal(agent_parse_duration("-1s", &ms), -EINVAL);
    assert_int_equal(agent_parse_duration("1 s", &ms), -EINVAL);
    assert_int_equal(agent_parse_duration("1sec", &ms), -EINVAL);
    assert_int_equal(agent_parse_duration("99999999999999999999h", &ms), -ERANGE);
    assert_int_equal(agent_parse_duration("18446744073709552h", &ms), -ERANGE);
}

/* `cliqo-agent node`: its node's name from --node-name or $NODE_NAME (required, a valid name), no
 * leader election unless asked for. */
static void test_node_mode(void **state)
{
    struct agent_config cfg;
    char err[256];

    (void)state;
    unsetenv("NODE_NAME");
    assert_int_equal(parse(&cfg, err, sizeof(err), "node", NULL), -EINVAL);
    assert_non_null(strstr(err, "--node-name"));
    assert_int_equal(parse(&cfg, err, sizeof(err), "node", "--node-name", "n-2", NULL), 0);
    assert_true(cfg.node);
    assert_false(cfg.gateway);
    assert_string_equal(cfg.node_name, "n-2");
    assert_false(cfg.leader_elect);
    assert_string_equal(cfg.lease_name, "cliqo-node");
    assert_int_equal(parse(&cfg, err, sizeof(err), "node", "--node-name", "Bad_Name", NULL),
                     -EINVAL);
    setenv("NODE_NAME", "cluster-1-real-2", 1);
    assert_int_equal(parse(&cfg, err, sizeof(err), "node", NULL), 0);
    assert_string_equal(cfg.node_name, "cluster-1-real-2");
    assert_int_equal(parse(&cfg, err, sizeof(err), "node", "--leader-elect", NULL), 0);
    assert_true(cfg.leader_elect);
    setenv("NODE_NAME", "Not A Name", 1);
    assert_int_equal(parse(&cfg, err, sizeof(err), "node", NULL), -EINVAL);
    assert_int_equal(parse(&cfg, err, sizeof(err), "node", "--help", NULL), 0);
    unsetenv("NODE_NAME");
    /* the agent itself and the gateway: no node name needed, leader election on */
    assert_int_equal(parse(&cfg, err, sizeof(err), NULL), 0);
    assert_false(cfg.node);
    assert_true(cfg.leader_elect);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),  cmocka_unit_test(test_flags),
        cmocka_unit_test(test_errors),    cmocka_unit_test(test_duration),
        cmocka_unit_test(test_node_mode),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
