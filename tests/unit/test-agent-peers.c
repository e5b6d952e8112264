/* Unit tests of src/agent/peers.c, the per-peer units: life cycle by owners (the reaper runs from
 * the loop; a release then an acquisition before it runs keeps the unit), credentials by version,
 * requests in flight completed as cancelled when a client is replaced or a unit is closed,
 * informers re-created on a new client and waiting without one, queues closed with the unit,
 * per-peer metrics removed with it, limits. The "peer" is 127.0.0.1 on a port nothing listens on:
 * every request fails fast, which is all these tests need. ASan checks that nothing leaks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kube/kubeconfig.h"
#include "metrics/metrics.h"
#include "agent/peers.h"
#include "common/strutil.h"

static char kubeconfig[2][512];

static void make_kubeconfigs(void)
{
    for (int i = 0; i < 2; i++)
        snprintf(
            kubeconfig[i], sizeof(kubeconfig[i]),
            "{\"apiVersion\":\"v1\",\"kind\":\"Config\",\"current-context\":\"c\","
            "\"clusters\":[{\"name\":\"x\",\"cluster\":{\"server\":\"http://127.0.0.1:1\""
            "}}],\"users\":[{\"name\":\"u\",\"user\":"
            "{\"token\":\"t%d\"}}],\"contexts\":[{\"name\":\"c\",\"context\":{\"cluster\":\"x\","
            "\"user\":\"u\",\"namespace\":\"tenant-%d\"}}]}",
            i, i);
}

static void run(uv_loop_t *loop)
{
    for (int i = 0; i < 50 && uv_run(loop, UV_RUN_NOWAIT); i++)
        uv_sleep(10);
}

struct result {
    int calls, err;
};

static void on_result(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct result *r = data;

    (void)c;
    r->calls++;
    r->err = res->err;
}

static int processed;

static void process(struct wq_queue *q, const char *key, void *data)
{
    (void)data;
    processed++;
    wq_done(q, key);
}

static void test_lifecycle(void **state)
{
    uv_loop_t loop;
    struct pu_registry *reg;
    struct pu_unit *u, *u2;

    (void)state;
    uv_loop_init(&loop);
    assert_int_equal(pu_registry_new(&loop, NULL, NULL, &reg), 0);
    assert_int_equal(pu_acquire(reg, "peer-a", "one", &u), 0);
    assert_int_equal(pu_acquire(reg, "peer-a", "two", &u2), 0);
    assert_ptr_equal(u, u2);
    assert_int_equal(pu_acquire(reg, "peer-a", "two", &u2), 0); /* same owner: one reference */
    assert_true(pu_holds(u, "one") && pu_holds(u, "two"));
    assert_string_equal(pu_id(u), "peer-a");
    assert_ptr_equal(pu_find(reg, "peer-a"), u);
    assert_int_equal(pu_registry_count(reg), 1);

    pu_release(u, "one");
    run(&loop);
    assert_ptr_equal(pu_find(reg, "peer-a"), u); /* "two" still holds it */
    pu_release(u, "two");
    pu_release(u, "two"); /* a no-op */
    /* Acquired again before the reaper ran: the same unit, kept. */
    assert_int_equal(pu_acquire(reg, "peer-a", "three", &u2), 0);
    assert_ptr_equal(u2, u);
    run(&loop);
    assert_ptr_equal(pu_find(reg, "peer-a"), u);
    pu_release(u, "three");
    run(&loop);
    assert_null(pu_find(reg, "peer-a"));
    assert_int_equal(pu_registry_count(reg), 0);

    /* Invalid IDs. */
    assert_int_equal(pu_acquire(reg, "", "x", &u), -EINVAL);
    assert_int_equal(pu_acquire(reg, "Upper", "x", &u), -EINVAL);
    assert_int_equal(pu_acquire(reg, "-dash", "x", &u), -EINVAL);
    assert_int_equal(pu_acquire(reg, "a/b", "x", &u), -EINVAL);
    assert_int_equal(pu_acquire(reg,
                                "a234567890123456789012345678901234567890123456789012345678901234",
                                "x", &u),
                     -EINVAL);
    assert_int_equal(pu_acquire(reg, "ok", NULL, &u), -EINVAL);

    /* Owners are bounded. */
    assert_int_equal(pu_acquire(reg, "many", "o0", &u), 0);
    {
        static const char *const owners[] = {"o1", "o2", "o3", "o4", "o5", "o6", "o7", "o8",
                                             "o9", "oa", "ob", "oc", "od", "oe", "of", "og"};

        for (size_t i = 0; i < PU_MAX_OWNERS - 1; i++)
            assert_int_equal(pu_acquire(reg, "many", owners[i], &u2), 0);
        assert_int_equal(pu_acquire(reg, "many", owners[PU_MAX_OWNERS - 1], &u2), -ENOSPC);
    }
    /* The registry closes what is left. */
    pu_registry_free(reg);
    run(&loop);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_credentials_and_abort(void **state)
{
    uv_loop_t loop;
    struct pu_registry *reg;
    struct pu_unit *u;
    struct result r1 = {0}, r2 = {0}, r3 = {0};
    char err[256];

    (void)state;
    uv_loop_init(&loop);
    assert_int_equal(pu_registry_new(&loop, NULL, NULL, &reg), 0);
    assert_int_equal(pu_acquire(reg, "peer-b", "test", &u), 0);
    assert_null(pu_client(u, PU_VK));
    assert_int_equal(pu_reachable(u, PU_VK, NULL, NULL), -ENOENT);

    assert_int_equal(
        pu_set_credential(u, PU_VK, kubeconfig[0], strlen(kubeconfig[0]), "v1", err, sizeof(err)),
        1);
    assert_non_null(pu_client(u, PU_VK));
    assert_string_equal(pu_namespace(u, PU_VK), "tenant-0");
    assert_string_equal(pu_credential_version(u, PU_VK), "v1");
    assert_null(pu_client(u, PU_PEERING));
    /* The same version: nothing happens. */
    assert_int_equal(
        pu_set_credential(u, PU_VK, kubeconfig[1], strlen(kubeconfig[1]), "v1", err, sizeof(err)),
        0);
    assert_string_equal(pu_namespace(u, PU_VK), "tenant-0");
    /* A bad kubeconfig: an error that says why, and the old client stays. */
    assert_true(pu_set_credential(u, PU_VK, "{not yaml: [", 12, "v2", err, sizeof(err)) < 0);
    assert_true(err[0] != '\0');
    assert_string_equal(pu_credential_version(u, PU_VK), "v1");
    assert_true(pu_set_credential(u, PU_VK, kubeconfig[0], PU_CONFIG_MAX + 1, "v3", err,
                                  sizeof(err)) == -E2BIG);
    /* A peer's kubeconfig that weakens TLS is refused for every role (kc_check_peer), with the
     * field in the error, and the old client stays. */
    {
        static const char insecure[] =
            "{\"apiVersion\":\"v1\",\"kind\":\"Config\",\"current-context\":\"c\","
            "\"clusters\":[{\"name\":\"x\",\"cluster\":{\"server\":\"https://127.0.0.1:1\","
            "\"insecure-skip-tls-verify\":true}}],\"users\":[{\"name\":\"u\",\"user\":"
            "{\"token\":\"t\"}}],\"contexts\":[{\"name\":\"c\",\"context\":{\"cluster\":"
            "\"x\",\"user\":\"u\",\"namespace\":\"t\"}}]}";

        for (int role = 0; role < PU_ROLE_MAX; role++) {
            assert_int_equal(pu_set_credential(u, (enum pu_role)role, insecure,
                                               sizeof(insecure) - 1, "v5", err, sizeof(err)),
                             -EPERM);
            assert_non_null(strstr(err, "insecure-skip-tls-verify"));
        }
        assert_string_equal(pu_credential_version(u, PU_VK), "v1");
    }

    /* A request in flight when the client is replaced completes as cancelled. */
    assert_int_equal(kapi_get(pu_client(u, PU_VK), &kapi_nodes, NULL, "n", on_result, &r1), 0);
    assert_int_equal(
        pu_set_credential(u, PU_VK, kubeconfig[1], strlen(kubeconfig[1]), "v4", err, sizeof(err)),
        1);
    assert_int_equal(r1.calls, 1);
    assert_int_equal(r1.err, -ECANCELED);
    assert_string_equal(pu_namespace(u, PU_VK), "tenant-1");

    /* One that reaches the (absent) server fails, and the unit learns the peer is unreachable. */
    assert_int_equal(kapi_get(pu_client(u, PU_VK), &kapi_nodes, NULL, "n", on_result, &r2), 0);
    for (int i = 0; i < 200 && r2.calls == 0; i++) {
        uv_run(&loop, UV_RUN_ONCE);
    }
    assert_int_equal(r2.calls, 1);
    assert_true(r2.err < 0 && r2.err != -ECANCELED);
    {
        bool ok = true;

        assert_int_equal(pu_reachable(u, PU_VK, &ok, NULL), 0);
        assert_false(ok);
    }

    /* Dropped: cancelled as well; and a unit closed with a request in flight cancels it too. */
    assert_int_equal(kapi_get(pu_client(u, PU_VK), &kapi_nodes, NULL, "n", on_result, &r3), 0);
    pu_drop_credential(u, PU_VK);
    assert_int_equal(r3.calls, 1);
    assert_int_equal(r3.err, -ECANCELED);
    assert_null(pu_client(u, PU_VK));
    memset(&r3, 0, sizeof(r3));
    assert_int_equal(pu_set_credential(u, PU_PEERING, kubeconfig[0], strlen(kubeconfig[0]), "p1",
                                       err, sizeof(err)),
                     1);
    assert_int_equal(kapi_get(pu_client(u, PU_PEERING), &kapi_nodes, NULL, "n", on_result, &r3), 0);
    pu_release(u, "test");
    run(&loop);
    assert_int_equal(r3.calls, 1);
    assert_int_equal(r3.err, -ECANCELED);
    assert_null(pu_find(reg, "peer-b"));

    pu_registry_free(reg);
    run(&loop);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_informers_and_queues(void **state)
{
    uv_loop_t loop;
    struct pu_registry *reg;
    struct pu_unit *u;
    struct pu_inf *pi, *pi2;
    struct inf_informer *first;
    struct inf_options o = {
        .resource = &kapi_configmaps, .namespace_ = "ns", .field_selector = "metadata.name=x"};
    struct inf_handlers h = {0};
    struct wq_queue *q;
    char err[256];

    (void)state;
    uv_loop_init(&loop);
    assert_int_equal(pu_registry_new(&loop, NULL, NULL, &reg), 0);
    assert_int_equal(pu_acquire(reg, "peer-c", "test", &u), 0);
    /* No client yet: the registration waits. */
    assert_int_equal(pu_informer(u, PU_REQUESTER, &o, &h, NULL, &pi), 0);
    assert_null(pu_inf_get(pi));
    assert_int_equal(pu_set_credential(u, PU_REQUESTER, kubeconfig[0], strlen(kubeconfig[0]), "a",
                                       err, sizeof(err)),
                     1);
    first = pu_inf_get(pi);
    assert_non_null(first);
    /* Another role's credential does not touch it. */
    assert_int_equal(pu_set_credential(u, PU_PEERING, kubeconfig[0], strlen(kubeconfig[0]), "b",
                                       err, sizeof(err)),
                     1);
    assert_ptr_equal(pu_inf_get(pi), first);
    /* A new credential of its role: a new informer on the new client. */
    assert_int_equal(pu_set_credential(u, PU_REQUESTER, kubeconfig[1], strlen(kubeconfig[1]), "c",
                                       err, sizeof(err)),
                     1);
    assert_non_null(pu_inf_get(pi));
    pu_drop_credential(u, PU_REQUESTER);
    assert_null(pu_inf_get(pi));
    assert_int_equal(pu_informer(u, PU_PEERING, &o, &h, NULL, &pi2), 0);
    assert_non_null(pu_inf_get(pi2));
    pu_informer_close(pi2);
    run(&loop);

    assert_int_equal(pu_queue(u, NULL, NULL, NULL, &q), -EINVAL);
    for (int i = 0; i < PU_MAX_QUEUES; i++) {
        struct wq_queue *qq;

        assert_int_equal(pu_queue(u, NULL, process, NULL, &qq), 0);
        assert_int_equal(wq_add(qq, "k"), 0);
    }
    assert_int_equal(pu_queue(u, NULL, process, NULL, &q), -ENOSPC);
    /* Released: informers freed, queues closed (their keys never processed), all from the loop. */
    pu_release(u, "test");
    run(&loop);
    assert_null(pu_find(reg, "peer-c"));
    pu_registry_free(reg);
    run(&loop);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_metrics(void **state)
{
    uv_loop_t loop;
    struct metrics_registry *m = metrics_registry_new();
    struct pu_registry *reg;
    struct pu_unit *u;
    struct result r = {0};
    struct sbuf out;
    char err[256];

    (void)state;
    uv_loop_init(&loop);
    assert_int_equal(pu_registry_new(&loop, m, NULL, &reg), 0);
    assert_int_equal(pu_acquire(reg, "peer-d", "test", &u), 0);
    assert_int_equal(
        pu_set_credential(u, PU_VK, kubeconfig[0], strlen(kubeconfig[0]), "v", err, sizeof(err)),
        1);
    assert_int_equal(kapi_get(pu_client(u, PU_VK), &kapi_nodes, NULL, "n", on_result, &r), 0);
    for (int i = 0; i < 200 && r.calls == 0; i++)
        uv_run(&loop, UV_RUN_ONCE);
    sbuf_init(&out, 1 << 20);
    assert_int_equal(metrics_render(m, &out), 0);
    assert_non_null(strstr(sbuf_str(&out), "cliqo_peer_requests_total{peer=\"peer-d\",role=\"vk\","
                                           "verb=\"GET\",code=\"error\"} 1"));
    assert_non_null(
        strstr(sbuf_str(&out), "cliqo_peer_request_duration_seconds_count{peer=\"peer-d\""));
    sbuf_done(&out);
    pu_release(u, "test");
    run(&loop);
    sbuf_init(&out, 1 << 20);
    assert_int_equal(metrics_render(m, &out), 0);
    assert_null(strstr(sbuf_str(&out), "peer-d")); /* the series went with the unit */
    sbuf_done(&out);
    pu_registry_free(reg);
    run(&loop);
    assert_int_equal(uv_loop_close(&loop), 0);
    metrics_registry_free(m);
}

/* Rates from the ClusterConfig: every peer's, one peer's own, applied to clients that exist and to
 * those made later; back to the options when cleared; bad input changes nothing. */
static void test_rates(void **state)
{
    uv_loop_t loop;
    struct pu_registry *reg;
    struct pu_unit *b, *c;
    struct pu_rate own = {.id = "peer-b", .qps = 5, .burst = 10}, bad = own;
    static struct pu_rate many[PU_MAX_RATES + 1];
    char err[256];
    double q;
    int burst;

    (void)state;
    uv_loop_init(&loop);
    assert_int_equal(pu_registry_new(&loop, NULL, NULL, &reg), 0);
    assert_int_equal(pu_acquire(reg, "peer-b", "test", &b), 0);
    assert_int_equal(
        pu_set_credential(b, PU_VK, kubeconfig[0], strlen(kubeconfig[0]), "v1", err, sizeof(err)),
        1);
    pu_rate_of(b, &q, &burst);
    assert_true(q == 200 && burst == 400);
    assert_true(kapi_client_qps(pu_client(b, PU_VK)) == 200);

    assert_int_equal(pu_set_rates(reg, 50, 100, &own, 1), 1);
    assert_int_equal(pu_set_rates(reg, 50, 100, &own, 1), 0); /* the same again */
    assert_true(kapi_client_qps(pu_client(b, PU_VK)) == 5);
    pu_rate_of(b, &q, &burst);
    assert_true(q == 5 && burst == 10);
    assert_int_equal(pu_acquire(reg, "peer-c", "test", &c), 0);
    assert_int_equal(
        pu_set_credential(c, PU_VK, kubeconfig[1], strlen(kubeconfig[1]), "v1", err, sizeof(err)),
        1);
    assert_true(kapi_client_qps(pu_client(c, PU_VK)) == 50);

    /* Bad input: refused, nothing changes. */
    bad.qps = 0;
    assert_int_equal(pu_set_rates(reg, 1, 1, &bad, 1), -EINVAL);
    bad = own;
    bad.id[0] = '\0';
    assert_int_equal(pu_set_rates(reg, 1, 1, &bad, 1), -EINVAL);
    assert_int_equal(pu_set_rates(reg, 1, 1, many, PU_MAX_RATES + 1), -E2BIG);
    assert_true(kapi_client_qps(pu_client(b, PU_VK)) == 5);
    assert_true(kapi_client_qps(pu_client(c, PU_VK)) == 50);

    /* Cleared: the registry's options again. */
    assert_int_equal(pu_set_rates(reg, 0, 0, NULL, 0), 1);
    assert_true(kapi_client_qps(pu_client(b, PU_VK)) == 200);
    assert_true(kapi_client_qps(pu_client(c, PU_VK)) == 200);

    pu_release(b, "test");
    pu_release(c, "test");
    run(&loop);
    pu_registry_free(reg);
    run(&loop);
    uv_loop_close(&loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lifecycle),
        cmocka_unit_test(test_credentials_and_abort),
        cmocka_unit_test(test_informers_and_queues),
        cmocka_unit_test(test_metrics),
        cmocka_unit_test(test_rates),
    };

    make_kubeconfigs();
    /* The kubeconfigs above use plain http to a loopback port that nothing serves. */
    kc_peer_allow_loopback_http(true);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
