/* Unit tests of the node simulator's pure parts: flags, durations, addresses, the per-node pod IP
 * allocator, and the Node, Lease and pod status builders. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "nodesim/nodesim.h"
#include "common/json.h"

#define ARGC(v) ((int)(sizeof(v) / sizeof((v)[0])) - 1)

static int parse(int argc, char **argv, struct ns_config *cfg, char *err)
{
    return ns_config_parse(argc, argv, cfg, err, NS_ERR_LEN);
}

static void test_config_defaults(void **state)
{
    struct ns_config cfg;
    char err[NS_ERR_LEN], buf[KQ_STR_MAX];
    char *argv[] = {"cliqo-nodesim", NULL};

    (void)state;
    assert_int_equal(parse(1, argv, &cfg, err), 0);
    assert_int_equal(cfg.nodes, 1);
    assert_string_equal(cfg.node_prefix, "nodesim");
    kq_format(&cfg.memory, buf, sizeof(buf));
    assert_string_equal(buf, "32Gi");
    assert_int_equal(cfg.pod_cidr_prefix, 16);
    assert_int_equal(cfg.node_cidr_mask, 24);
    assert_int_equal(cfg.lease_ms, 10000);
    assert_int_equal(cfg.status_ms, 60000);
    assert_true(cfg.qps == 200.0);
    assert_int_equal(cfg.burst, 400);
    assert_null(cfg.kubeconfig);
    ns_config_done(&cfg);
}

static void test_config_flags(void **state)
{
    struct ns_config cfg;
    char err[NS_ERR_LEN], buf[KQ_STR_MAX];
    char *argv[] = {"cliqo-nodesim",
                    "--nodes",
                    "10",
                    "--node-prefix",
                    "sim",
                    "--cpu",
                    "1500m",
                    "--memory=4Gi",
                    "--pods",
                    "50",
                    "--extended-resource",
                    "nvidia.com/gpu=4",
                    "--extended-resource",
                    "example.com/fpga=1",
                    "--label",
                    "zone=a",
                    "--label",
                    "topology.kubernetes.io/region=eu",
                    "--pod-cidr-base",
                    "10.10.0.0/16",
                    "--heartbeat",
                    "500ms",
                    "--status-interval",
                    "2m",
                    "--qps",
                    "12.5",
                    "--burst",
                    "20",
                    "--concurrency",
                    "8",
                    "--log-level",
                    "debug",
                    "--kubeconfig",
                    "/k",
                    "--delete-nodes-on-exit",
                    "--healthz-port",
                    "9999",
                    NULL};
    uint32_t a;
    char ip[NS_IP_LEN];

    (void)state;
    assert_int_equal(parse(ARGC(argv), argv, &cfg, err), 0);
    assert_int_equal(cfg.nodes, 10);
    assert_string_equal(cfg.node_prefix, "sim");
    kq_format(&cfg.cpu, buf, sizeof(buf));
    assert_string_equal(buf, "1500m");
    assert_int_equal(cfg.n_ext, 2);
    assert_string_equal(cfg.ext[0].name, "nvidia.com/gpu");
    assert_int_equal(cfg.n_labels, 2);
    assert_string_equal(cfg.labels[1].key, "topology.kubernetes.io/region");
    assert_string_equal(cfg.labels[1].value, "eu");
    assert_int_equal(cfg.lease_ms, 500);
    assert_int_equal(cfg.status_ms, 120000);
    assert_true(cfg.qps == 12.5);
    assert_int_equal(cfg.burst, 20);
    assert_int_equal(cfg.concurrency, 8);
    assert_int_equal(cfg.log_level, LOG_LEVEL_DEBUG);
    assert_string_equal(cfg.kubeconfig, "/k");
    assert_true(cfg.delete_nodes_on_exit);
    assert_int_equal(cfg.healthz_port, 9999);
    assert_int_equal(ns_node_cidr(&cfg, 9, &a), 0);
    ns_format_ipv4(a, ip);
    assert_string_equal(ip, "10.10.9.0");
    ns_config_done(&cfg);
}

static void expect_error(char **argv, int argc, const char *needle)
{
    struct ns_config cfg;
    char err[NS_ERR_LEN];

    assert_int_equal(parse(argc, argv, &cfg, err), -EINVAL);
    if (!strstr(err, needle))
        fail_msg("error '%s' does not contain '%s'", err, needle);
    assert_null(strchr(err, '\n'));
    ns_config_done(&cfg);
}

#define EXPECT_ERROR(needle, ...)                                                                  \
    do {                                                                                           \
        char *v_[] = {"cliqo-nodesim", __VA_ARGS__, NULL};                                         \
        expect_error(v_, ARGC(v_), needle);                                                        \
    } while (0)

static void test_config_errors(void **state)
{
    struct ns_config cfg;
    char err[NS_ERR_LEN];
    char *help[] = {"cliqo-nodesim", "--help", NULL};

    (void)state;
    EXPECT_ERROR("--nodes must be an integer", "--nodes", "-1");
    EXPECT_ERROR("--nodes must be an integer", "--nodes", "99999");
    EXPECT_ERROR("not a Kubernetes quantity", "--cpu", "lots");
    EXPECT_ERROR("must not be negative", "--memory", "-1Gi");
    EXPECT_ERROR("not an extended resource name", "--extended-resource", "gpu=1");
    EXPECT_ERROR("not an extended resource name", "--extended-resource", "kubernetes.io/x=1");
    EXPECT_ERROR("is not NAME=QUANTITY", "--extended-resource", "nvidia.com/gpu");
    EXPECT_ERROR("not a Kubernetes quantity", "--extended-resource", "nvidia.com/gpu=x");
    EXPECT_ERROR("given twice", "--extended-resource", "a.io/b=1", "--extended-resource",
                 "a.io/b=2");
    EXPECT_ERROR("not a valid label key", "--label", "-bad=1");
    EXPECT_ERROR("not a valid label value", "--label", "ok=bad value");
    EXPECT_ERROR("is not KEY=VALUE", "--label", "novalue");
    EXPECT_ERROR("not an IPv4 network address", "--pod-cidr-base", "10.244.1.0/16");
    EXPECT_ERROR("not an IPv4 network address", "--pod-cidr-base", "10.244.0.0");
    EXPECT_ERROR("fewer than --nodes", "--pod-cidr-base", "10.0.0.0/22", "--nodes", "5");
    EXPECT_ERROR("--pods must be at most 253", "--pods", "254");
    EXPECT_ERROR("not a duration", "--heartbeat", "10x");
    EXPECT_ERROR("not a duration", "--heartbeat", "50ms");
    EXPECT_ERROR("--lease-duration must be longer", "--heartbeat", "1m");
    EXPECT_ERROR("does not make valid node names", "--node-prefix", "Bad_Prefix");
    EXPECT_ERROR("--log-level", "--log-level", "loud");
    EXPECT_ERROR("unknown option '--bogus'", "--bogus");
    EXPECT_ERROR("needs a value", "--nodes");
    EXPECT_ERROR("unexpected argument", "extra");
    EXPECT_ERROR("positive number", "--qps", "0");
    assert_int_equal(parse(2, help, &cfg, err), NS_CONFIG_HELP);
    ns_config_done(&cfg);
}

static void test_durations_and_addresses(void **state)
{
    uint64_t ms;
    uint32_t ip;
    unsigned prefix;
    char buf[NS_IP_LEN];

    (void)state;
    assert_int_equal(ns_parse_duration_ms("250ms", &ms), 0);
    assert_int_equal(ms, 250);
    assert_int_equal(ns_parse_duration_ms("10s", &ms), 0);
    assert_int_equal(ms, 10000);
    assert_int_equal(ns_parse_duration_ms("2m", &ms), 0);
    assert_int_equal(ms, 120000);
    assert_int_equal(ns_parse_duration_ms("1h", &ms), 0);
    assert_int_equal(ms, 3600000);
    assert_int_equal(ns_parse_duration_ms("7", &ms), 0);
    assert_int_equal(ms, 7000);
    assert_int_equal(ns_parse_duration_ms("", &ms), -EINVAL);
    assert_int_equal(ns_parse_duration_ms("s", &ms), -EINVAL);
    assert_int_equal(ns_parse_duration_ms("-1s", &ms), -EINVAL);
    assert_int_equal(ns_parse_duration_ms("25h", &ms), -EINVAL);
    assert_int_equal(ns_parse_ipv4("10.244.3.17", &ip), 0);
    ns_format_ipv4(ip, buf);
    assert_string_equal(buf, "10.244.3.17");
    assert_int_equal(ns_parse_ipv4("256.1.1.1", &ip), -EINVAL);
    assert_int_equal(ns_parse_ipv4("1.2.3", &ip), -EINVAL);
    assert_int_equal(ns_parse_ipv4("1.2.3.4.5", &ip), -EINVAL);
    assert_int_equal(ns_parse_ipv4("01.2.3.4", &ip), -EINVAL);
    assert_int_equal(ns_parse_cidr("10.0.0.0/8", &ip, &prefix), 0);
    assert_int_equal(prefix, 8);
    assert_int_equal(ns_parse_cidr("10.0.0.0/33", &ip, &prefix), -EINVAL);
    assert_true(ns_valid_dns_subdomain("cluster-1-node-0"));
    assert_false(ns_valid_dns_subdomain("Node"));
    assert_false(ns_valid_dns_subdomain("-a"));
}

static void test_ipam(void **state)
{
    struct ns_ipam a;
    uint32_t base, ip, first;
    char buf[NS_IP_LEN];

    (void)state;
    assert_int_equal(ns_parse_ipv4("10.244.7.0", &base), 0);
    assert_int_equal(ns_ipam_init(&a, base + 1, 24), -EINVAL);
    assert_int_equal(ns_ipam_init(&a, base, 24), 0);
    assert_int_equal(ns_ipam_capacity(&a), 253);
    assert_int_equal(ns_ipam_alloc(&a, &first), 0);
    ns_format_ipv4(first, buf);
    assert_string_equal(buf, "10.244.7.2"); /* .0 network, .1 the node's bridge */
    /* Reserving: outside the block, the bridge and the broadcast address are refused. */
    assert_int_equal(ns_ipam_reserve(&a, base + 1), -ERANGE);
    assert_int_equal(ns_ipam_reserve(&a, base + 255), -ERANGE);
    assert_int_equal(ns_ipam_reserve(&a, base + 256), -ERANGE);
    assert_int_equal(ns_ipam_reserve(&a, first), -EEXIST);
    assert_int_equal(ns_ipam_reserve(&a, base + 3), 0);
    /* The next allocation skips the reserved .3. */
    assert_int_equal(ns_ipam_alloc(&a, &ip), 0);
    assert_int_equal(ip, base + 4);
    /* Round-robin: a freed address is not handed out again at once. */
    assert_int_equal(ns_ipam_release(&a, first), 0);
    assert_int_equal(ns_ipam_release(&a, first), -ENOENT);
    assert_int_equal(ns_ipam_alloc(&a, &ip), 0);
    assert_int_equal(ip, base + 5);
    /* Exhaustion, then every address distinct and in range. */
    unsigned n = 3;
    while (ns_ipam_alloc(&a, &ip) == 0) {
        assert_true(ns_ipam_usable(&a, ip));
        n++;
    }
    assert_int_equal(n, 253);
    assert_int_equal(a.n_used, 253);
    assert_int_equal(ns_ipam_alloc(&a, &ip), -ENOSPC);
    assert_int_equal(ns_ipam_release(&a, base + 100), 0);
    assert_int_equal(ns_ipam_alloc(&a, &ip), 0);
    assert_int_equal(ip, base + 100);
    ns_ipam_done(&a);
    ns_ipam_done(&a); /* idempotent */
}

static struct ns_config *small_config(struct ns_config *cfg)
{
    char err[NS_ERR_LEN];
    char *argv[] = {
        "cliqo-nodesim", "--extended-resource", "nvidia.com/gpu=4", "--label", "zone=a", NULL};

    assert_int_equal(parse(5, argv, cfg, err), 0);
    return cfg;
}

static void test_node_objects(void **state)
{
    struct ns_config cfg;
    struct ns_node_view v = {.name = "sim-0",
                             .internal_ip = "127.0.1.1",
                             .pod_cidr = "10.244.0.0/24",
                             .ready = true,
                             .ready_since = "2024-01-01T00:00:00Z",
                             .registered_at = "2024-01-01T00:00:00Z",
                             .now = "2024-01-01T00:01:00Z"};
    json_t *node, *old, *st, *lease;

    (void)state;
    small_config(&cfg);
    node = ns_build_node(&cfg, &v);
    assert_non_null(node);
    assert_string_equal(jsn_str_at(node, "metadata", "labels", "zone", NULL), "a");
    assert_string_equal(jsn_str_at(node, "metadata", "labels", NS_LABEL_MANAGED, NULL), "true");
    assert_string_equal(jsn_str_at(node, "spec", "podCIDR", NULL), "10.244.0.0/24");
    assert_string_equal(jsn_str_at(node, "status", "capacity", "nvidia.com/gpu", NULL), "4");
    assert_string_equal(jsn_str_at(node, "status", "allocatable", "pods", NULL), "110");
    assert_string_equal(jsn_str_at(node, "status", "nodeInfo", "kubeletVersion", NULL),
                        NS_KUBELET_VER);
    json_t *conds = json_object_get(json_object_get(node, "status"), "conditions");
    assert_int_equal(json_array_size(conds), 5);
    assert_string_equal(jsn_str_at(json_array_get(conds, 4), "type", NULL), "Ready");
    assert_string_equal(jsn_str_at(json_array_get(conds, 4), "status", NULL), "True");
    json_decref(node);

    /* A resource that is no longer configured is removed by the merge patch (null). */
    old = json_pack("{s:{s:s,s:s}}", "capacity", "cpu", "2", "example.com/old", "1");
    v.ready = false;
    st = ns_build_node_status(&cfg, &v, old);
    assert_true(json_is_null(json_object_get(json_object_get(st, "capacity"), "example.com/old")));
    assert_string_equal(jsn_str_at(st, "capacity", "cpu", NULL), "8");
    conds = json_object_get(st, "conditions");
    assert_string_equal(jsn_str_at(json_array_get(conds, 4), "status", NULL), "False");
    assert_string_equal(jsn_str_at(json_array_get(conds, 4), "reason", NULL), "KubeletNotReady");
    json_decref(st);
    json_decref(old);

    lease = ns_build_lease("sim-0", "u-1", 40, "2024-01-01T00:01:00.000000Z");
    assert_string_equal(jsn_str_at(lease, "metadata", "namespace", NULL), NS_LEASE_NS);
    assert_string_equal(jsn_str_at(lease, "spec", "holderIdentity", NULL), "sim-0");
    json_t *owner =
        json_array_get(json_object_get(json_object_get(lease, "metadata"), "ownerReferences"), 0);
    assert_string_equal(jsn_str_at(owner, "kind", NULL), "Node");
    assert_string_equal(jsn_str_at(owner, "uid", NULL), "u-1");
    json_decref(lease);
    ns_config_done(&cfg);
}

static json_t *pod(const char *policy, const char *fail, const char *step)
{
    json_t *p =
        json_pack("{s:{s:s,s:s,s:s,s:{}},s:{s:s,s:s,s:[{s:s,s:s}],s:[{s:s,s:s},{s:s,s:"
                  "s}]},s:{s:s,s:[{s:s,s:s,s:s}]}}",
                  "metadata", "name", "p", "namespace", "ns", "uid", "uid-1", "annotations", "spec",
                  "nodeName", "sim-0", "restartPolicy", policy, "initContainers", "name", "init",
                  "image", "busybox", "containers", "name", "a", "image", "nginx", "name", "b",
                  "image", "redis", "status", "phase", "Pending", "conditions", "type",
                  "PodScheduled", "status", "True", "lastTransitionTime", "2024-01-01T00:00:00Z");
    json_t *ann = json_object_get(json_object_get(p, "metadata"), "annotations");

    if (fail)
        json_object_set_new(ann, NS_ANN_FAIL, json_string(fail));
    if (step)
        json_object_set_new(ann, NS_ANN_STEP, json_string(step));
    return p;
}

/* Replaces the pod's status with st (stolen), as the API server would after the write. */
static void apply(json_t *p, json_t *st)
{
    json_object_set_new(p, "status", st);
}

static const json_t *cstatus(const json_t *st, const char *list, size_t i)
{
    return json_array_get(json_object_get(st, list), i);
}

static const char *cond_status(const json_t *st, const char *type)
{
    size_t i;
    json_t *c;

    json_array_foreach(json_object_get(st, "conditions"), i, c)
    {
        if (strcmp(jsn_str_at(c, "type", NULL), type) == 0)
            return jsn_str_at(c, "status", NULL);
    }
    return NULL;
}

static void test_pod_running(void **state)
{
    json_t *p = pod("Always", NULL, NULL), *st = NULL, *again = NULL;
    struct ns_pod_view v = {.host_ip = "127.0.1.1", .pod_ip = "10.244.0.2", .now = 1700000000};
    uint64_t next;

    (void)state;
    assert_int_equal(ns_build_pod_status(p, &v, &st, &next), 0);
    assert_int_equal(next, 0);
    assert_string_equal(jsn_str_at(st, "phase", NULL), "Running");
    assert_string_equal(jsn_str_at(st, "podIP", NULL), "10.244.0.2");
    assert_string_equal(jsn_str_at(st, "hostIP", NULL), "127.0.1.1");
    assert_string_equal(jsn_str_at(st, "startTime", NULL), "2023-11-14T22:13:20Z");
    assert_string_equal(
        jsn_str_at(cstatus(st, "initContainerStatuses", 0), "state", "terminated", "reason", NULL),
        "Completed");
    assert_string_equal(
        jsn_str_at(cstatus(st, "containerStatuses", 1), "state", "running", "startedAt", NULL),
        "2023-11-14T22:13:20Z");
    assert_true(json_is_true(json_object_get(cstatus(st, "containerStatuses", 0), "ready")));
    assert_true(strncmp(jsn_str_at(cstatus(st, "containerStatuses", 0), "containerID", NULL),
                        "containerd://", 13) == 0);
    assert_int_equal(strlen(jsn_str_at(cstatus(st, "containerStatuses", 0), "containerID", NULL)),
                     13 + 64);
    assert_string_equal(cond_status(st, "Initialized"), "True");
    assert_string_equal(cond_status(st, "Ready"), "True");
    assert_string_equal(cond_status(st, "ContainersReady"), "True");
    assert_string_equal(cond_status(st, "PodScheduled"), "True");
    assert_true(ns_status_differs(st, json_object_get(p, "status")));
    /* Deterministic: later, from its own result, nothing changes. */
    apply(p, st);
    v.now += 100;
    assert_int_equal(ns_build_pod_status(p, &v, &again, &next), 0);
    assert_false(ns_status_differs(again, json_object_get(p, "status")));
    json_decref(again);
    json_decref(p);
}

static void test_pod_init_steps(void **state)
{
    json_t *p = pod("Always", NULL, "2s"), *st = NULL;
    struct ns_pod_view v = {.host_ip = "127.0.1.1", .pod_ip = "10.244.0.2", .now = 1700000000};
    uint64_t next;

    (void)state;
    assert_int_equal(ns_build_pod_status(p, &v, &st, &next), 0);
    assert_int_equal(next, 2000);
    assert_string_equal(jsn_str_at(st, "phase", NULL), "Pending");
    assert_non_null(
        jsn_str_at(cstatus(st, "initContainerStatuses", 0), "state", "running", "startedAt", NULL));
    assert_string_equal(
        jsn_str_at(cstatus(st, "containerStatuses", 0), "state", "waiting", "reason", NULL),
        "PodInitializing");
    assert_string_equal(cond_status(st, "Initialized"), "False");
    assert_string_equal(cond_status(st, "Ready"), "False");
    apply(p, st);
    st = NULL;
    v.now += 2;
    assert_int_equal(ns_build_pod_status(p, &v, &st, &next), 0);
    assert_int_equal(next, 0);
    assert_string_equal(jsn_str_at(st, "phase", NULL), "Running");
    const json_t *ic = cstatus(st, "initContainerStatuses", 0);
    assert_string_equal(jsn_str_at(ic, "state", "terminated", "finishedAt", NULL),
                        "2023-11-14T22:13:22Z");
    assert_string_equal(
        jsn_str_at(cstatus(st, "containerStatuses", 0), "state", "running", "startedAt", NULL),
        "2023-11-14T22:13:22Z");
    json_decref(st);
    json_decref(p);
}

static void test_pod_fail_never(void **state)
{
    json_t *p = pod("Never", "3", NULL), *st = NULL;
    struct ns_pod_view v = {.host_ip = "127.0.1.1", .pod_ip = "10.244.0.2", .now = 1700000000};
    uint64_t next;
    int code;

    (void)state;
    assert_int_equal(ns_pod_fail_code(p, &code), 0);
    assert_int_equal(code, 3);
    assert_int_equal(ns_build_pod_status(p, &v, &st, &next), 0);
    assert_string_equal(jsn_str_at(st, "phase", NULL), "Failed");
    const json_t *c = cstatus(st, "containerStatuses", 0);
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_object_get(c, "state"), "terminated"), "exitCode")),
                     3);
    assert_string_equal(jsn_str_at(c, "state", "terminated", "reason", NULL), "Error");
    assert_string_equal(cond_status(st, "Ready"), "False");
    apply(p, st);
    assert_true(ns_pod_terminal(p));
    json_decref(p);

    /* exit code 0 with OnFailure: Succeeded. */
    p = pod("OnFailure", "0", NULL);
    assert_int_equal(ns_build_pod_status(p, &v, &st, &next), 0);
    assert_string_equal(jsn_str_at(st, "phase", NULL), "Succeeded");
    json_decref(st);
    json_decref(p);

    p = pod("Never", "300", NULL);
    assert_int_equal(ns_pod_fail_code(p, &code), -EINVAL);
    json_decref(p);
}

static void test_pod_fail_always(void **state)
{
    json_t *p = pod("Always", NULL, NULL), *st = NULL;
    struct ns_pod_view v = {.host_ip = "127.0.1.1", .pod_ip = "10.244.0.2", .now = 1700000000};
    json_t *ann;
    uint64_t next;

    (void)state;
    assert_int_equal(ns_build_pod_status(p, &v, &st, &next), 0);
    apply(p, st);
    ann = json_object_get(json_object_get(p, "metadata"), "annotations");
    json_object_set_new(ann, NS_ANN_FAIL, json_string("137"));
    v.now += 10;
    assert_int_equal(ns_build_pod_status(p, &v, &st, &next), 0);
    assert_string_equal(jsn_str_at(st, "phase", NULL), "Running");
    const json_t *c = cstatus(st, "containerStatuses", 0);
    assert_string_equal(jsn_str_at(c, "state", "waiting", "reason", NULL), "CrashLoopBackOff");
    assert_int_equal(json_integer_value(json_object_get(c, "restartCount")), 1);
    assert_int_equal(
        json_integer_value(json_object_get(
            json_object_get(json_object_get(c, "lastState"), "terminated"), "exitCode")),
        137);
    assert_string_equal(cond_status(st, "Ready"), "False");
    apply(p, st);
    /* Stable while the annotation stays: the restart count does not climb. */
    v.now += 10;
    assert_int_equal(ns_build_pod_status(p, &v, &st, &next), 0);
    assert_false(ns_status_differs(st, json_object_get(p, "status")));
    json_decref(st);
    /* Without the annotation the container runs again, restart count kept. */
    json_object_del(ann, NS_ANN_FAIL);
    v.now += 10;
    assert_int_equal(ns_build_pod_status(p, &v, &st, &next), 0);
    c = cstatus(st, "containerStatuses", 0);
    assert_non_null(jsn_str_at(c, "state", "running", "startedAt", NULL));
    assert_int_equal(json_integer_value(json_object_get(c, "restartCount")), 1);
    assert_string_equal(cond_status(st, "Ready"), "True");
    json_decref(st);
    json_decref(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_defaults),
        cmocka_unit_test(test_config_flags),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_durations_and_addresses),
        cmocka_unit_test(test_ipam),
        cmocka_unit_test(test_node_objects),
        cmocka_unit_test(test_pod_running),
        cmocka_unit_test(test_pod_init_steps),
        cmocka_unit_test(test_pod_fail_never),
        cmocka_unit_test(test_pod_fail_always),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
