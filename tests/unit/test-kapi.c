/* The Kubernetes client's answer to 429 Too Many Requests (the API server's priority and fairness
 * turning a request away): the request is sent again after Retry-After, at most 10 times, and the
 * client's rate is halved, then grows back. A small HTTP server in this process (fakeapi.h) plays
 * the API server: it answers 429 to the first requests it is told to, then 200. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "common/xalloc.h"
#include "kube/api.h"
#include "kube/kubeconfig.h"

#include "fakeapi.h"

struct server {
    struct fakeapi http;
    int answer_429;          /* answer 429 to this many requests first */
    const char *retry_after; /* its Retry-After header's value, or NULL */
    int requests;            /* requests seen */
    char last_method[16];
    char last_body[256];
    uint64_t at_ms[32];    /* when each request arrived (uv_now) */
    const char *ok_body;   /* the answer after the 429s, or NULL: a small ConfigMap */
    const char *ok_status; /* its status line's code and reason, or NULL: "200 OK" */
};

static uv_loop_t loop;
static struct server srv;

static void answer(struct fakeapi_conn *c, const char *request, void *data)
{
    struct server *s = data;
    const char *ok = "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"x\"}}";
    const char *tmr = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                      "\"reason\":\"TooManyRequests\",\"code\":429}";
    const char *body = strstr(request, "\r\n\r\n") + 4;
    char out[4096];

    if (s->requests < (int)(sizeof(s->at_ms) / sizeof(s->at_ms[0])))
        s->at_ms[s->requests] = uv_now(&loop);
    s->requests++;
    sscanf(request, "%15s", s->last_method);
    snprintf(s->last_body, sizeof(s->last_body), "%s", body);
    if (s->requests <= s->answer_429)
        snprintf(out, sizeof(out),
                 "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\n"
                 "%s%s%sContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
                 s->retry_after ? "Retry-After: " : "", s->retry_after ? s->retry_after : "",
                 s->retry_after ? "\r\n" : "", strlen(tmr), tmr);
    else
        snprintf(out, sizeof(out),
                 "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: "
                 "%zu\r\nConnection: close\r\n\r\n%s",
                 s->ok_status ? s->ok_status : "200 OK", strlen(s->ok_body ? s->ok_body : ok),
                 s->ok_body ? s->ok_body : ok);
    fakeapi_reply(c, out);
}

static void server_start(struct server *s, int answer_429, const char *retry_after)
{
    memset(s, 0, sizeof(*s));
    s->answer_429 = answer_429;
    s->retry_after = retry_after;
    assert_int_equal(fakeapi_start(&s->http, &loop, answer, s), 0);
}

static void server_stop(struct server *s)
{
    fakeapi_stop(&s->http);
}

static struct kapi_client *client_new(struct server *s, double qps, long retry_base_ms)
{
    char url[64];
    struct kc_config cfg = {0};
    struct kapi_client_options o = {.qps = qps, .burst = 10, .retry_base_ms = retry_base_ms};
    struct kapi_client *c = NULL;

    snprintf(url, sizeof(url), "http://127.0.0.1:%d", s->http.port);
    cfg.server = url;
    assert_int_equal(kapi_client_new(&loop, &cfg, &o, &c), 0);
    return c;
}

static void client_close(struct kapi_client *c)
{
    kapi_client_close(c);
    for (int i = 0; i < 20; i++)
        uv_run(&loop, UV_RUN_NOWAIT);
}

static int get_sync(struct kapi_client *c, struct kapi_sync *s)
{
    memset(s, 0, sizeof(*s));
    assert_int_equal(kapi_get(c, &kapi_configmaps, "default", "x", kapi_sync_cb, s), 0);
    return kapi_sync_wait(c, s);
}

/* Two 429s with Retry-After: 1, then 200: one answer, the 200, after at least two seconds. */
static void test_retry_after(void **state)
{
    struct kapi_client *c;
    struct kapi_sync s;
    uint64_t t0;

    (void)state;
    server_start(&srv, 2, "1");
    c = client_new(&srv, 100, 0);
    t0 = uv_now(&loop);
    assert_int_equal(get_sync(c, &s), 0);
    assert_int_equal(s.http_status, 200);
    assert_int_equal(srv.requests, 3);
    assert_true(srv.at_ms[1] - srv.at_ms[0] >= 990);
    assert_true(srv.at_ms[2] - srv.at_ms[1] >= 990);
    assert_true(uv_now(&loop) - t0 >= 1990);
    assert_int_equal(kapi_client_throttled(c), 2);
    /* The rate went down on the 429s. */
    assert_true(kapi_client_qps(c) < 100);
    kapi_sync_done(&s);
    client_close(c);
    server_stop(&srv);
}

/* No Retry-After: 100 ms, then 200 ms; a POST is sent again with its body. */
static void test_backoff_and_body(void **state)
{
    struct kapi_client *c;
    struct kapi_sync s = {0};
    json_t *o = json_pack("{s:s,s:s,s:{s:s},s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                          "metadata", "name", "x", "data", "k", "again");

    (void)state;
    server_start(&srv, 2, NULL);
    c = client_new(&srv, 100, 0);
    assert_int_equal(kapi_create(c, &kapi_configmaps, "default", o, kapi_sync_cb, &s), 0);
    assert_int_equal(kapi_sync_wait(c, &s), 0);
    assert_int_equal(srv.requests, 3);
    assert_string_equal(srv.last_method, "POST");
    assert_non_null(strstr(srv.last_body, "\"again\""));
    assert_true(srv.at_ms[1] - srv.at_ms[0] >= 95);
    assert_true(srv.at_ms[2] - srv.at_ms[1] >= 195);
    kapi_sync_done(&s);
    json_decref(o);
    client_close(c);
    server_stop(&srv);
}

/* Always 429: the caller gets -EAGAIN after the first attempt and 10 more. */
static void test_gives_up(void **state)
{
    struct kapi_client *c;
    struct kapi_sync s;

    (void)state;
    server_start(&srv, 1000, "0");
    /* Retry-After: 0 asks for no wait: the doubling backoff applies, from 1 ms here. */
    c = client_new(&srv, 100, 1);
    assert_int_equal(get_sync(c, &s), -EAGAIN);
    assert_int_equal(srv.requests, 11);
    assert_int_equal(kapi_client_throttled(c), 11);
    assert_true(kapi_client_qps(c) >= 1.0);
    kapi_sync_done(&s);
    client_close(c);
    server_stop(&srv);
}

/* A request waiting to be sent again can be cancelled (no callback, nothing leaks), and a client
 * closed with one waiting frees it. */
static void on_never(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    (void)c;
    (void)res;
    (*(int *)data)++;
}

static void test_cancel_and_close_while_delayed(void **state)
{
    struct kapi_client *c;
    struct kapi_request req = {.method = "GET", .path = "/api/v1/namespaces/default/configmaps/x"};
    struct kapi_call *call = NULL;
    int called = 0;

    (void)state;
    server_start(&srv, 1000, "30");
    c = client_new(&srv, 100, 0);
    assert_int_equal(kapi_send(c, &req, on_never, &called, &call), 0);
    while (srv.requests < 1)
        uv_run(&loop, UV_RUN_ONCE);
    for (int i = 0; i < 20; i++)
        uv_run(&loop, UV_RUN_NOWAIT);
    assert_int_equal(kapi_client_pending(c), 1);
    kapi_call_cancel(call);
    assert_int_equal(kapi_client_pending(c), 0);
    assert_int_equal(kapi_send(c, &req, on_never, &called, NULL), 0);
    while (srv.requests < 2)
        uv_run(&loop, UV_RUN_ONCE);
    for (int i = 0; i < 20; i++)
        uv_run(&loop, UV_RUN_NOWAIT);
    assert_int_equal(kapi_client_pending(c), 1);
    client_close(c);
    assert_int_equal(called, 0);
    server_stop(&srv);
}

/* The rate halves on 429s and grows back to the configured one as answers come. */
static void test_rate_recovers(void **state)
{
    struct kapi_client *c;
    struct kapi_sync s;
    double low;

    (void)state;
    server_start(&srv, 3, "0");
    c = client_new(&srv, 400, 1);
    assert_int_equal(get_sync(c, &s), 0);
    kapi_sync_done(&s);
    low = kapi_client_qps(c);
    assert_true(low < 400);
    for (int i = 0; i < 200 && kapi_client_qps(c) < 400; i++) {
        uv_sleep(30);
        assert_int_equal(get_sync(c, &s), 0);
        kapi_sync_done(&s);
    }
    assert_true(kapi_client_qps(c) >= 400);
    client_close(c);
    server_stop(&srv);
}

/* The labels metrics count an observation under, and our own aborts left out. */
static void test_observation_labels(void **state)
{
    static const struct {
        struct kapi_observation o;
        bool counted;
        const char *verb, *code;
    } cases[] = {
        {{"POST", false, 201, 0, 0.1}, true, "POST", "201"},
        {{"GET", false, 429, -EBUSY, 0.1}, true, "GET", "429"},
        {{"GET", true, 200, 0, 30}, true, "WATCH", "200"},
        {{"PATCH", false, 0, -ECONNREFUSED, 0}, true, "PATCH", "error"},
        {{"DELETE", false, 0, -ECANCELED, 0}, false, NULL, NULL},
        {{"DELETE", false, 503, -ECANCELED, 0}, true, "DELETE", "503"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *verb = NULL;
        char code[24] = "";

        assert_int_equal(kapi_observation_labels(&cases[i].o, &verb, code, sizeof(code)),
                         cases[i].counted);
        if (!cases[i].counted)
            continue;
        assert_string_equal(verb, cases[i].verb);
        assert_string_equal(code, cases[i].code);
    }
}

/* kapi_create_meta and kapi_patch_meta: a 2xx answer is decoded down to its metadata, without
 * managedFields, wherever metadata lies in the text; an answer whose metadata is not an object, and
 * an error, are decoded whole; the raw text is the whole answer either way. */
static void test_metadata_only(void **state)
{
    static const struct {
        const char *status, *body;
        bool whole; /* res.body is the whole answer */
    } cases[] = {
        {"201 Created",
         "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p\",\"uid\":\"u-1\","
         "\"resourceVersion\":\"42\",\"labels\":{\"a\":\"b\"},\"managedFields\":[{\"manager\":"
         "\"m\",\"fieldsV1\":{\"f:spec\":{}}}]},\"spec\":{\"nodeName\":\"n\"},"
         "\"status\":{\"phase\":\"Pending\"}}",
         false},
        {"200 OK", /* metadata last, after a comma, with blanks */
         "{ \"spec\" : {\"x\":\"metadata\"} ,\n \"metadata\" : {\"name\":\"p\",\"uid\":\"u-1\","
         "\"resourceVersion\":\"42\",\"labels\":{\"a\":\"b\"}} }",
         false},
        {"200 OK", "{\"metadata\":5,\"spec\":{}}", true},
        {"200 OK", "{\"spec\":{}}", true},
        {"409 Conflict",
         "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
         "\"reason\":\"AlreadyExists\",\"code\":409}",
         true},
    };
    json_t *o =
        json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Pod", "metadata", "name", "p");

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        for (int patch = 0; patch < 2; patch++) {
            struct kapi_client *c;
            struct kapi_sync s = {.keep_raw = true};
            json_t *whole = json_loads(cases[i].body, 0, NULL);
            const json_t *md;

            server_start(&srv, 0, NULL);
            srv.ok_status = cases[i].status;
            srv.ok_body = cases[i].body;
            c = client_new(&srv, 100, 0);
            if (patch)
                assert_int_equal(kapi_patch_meta(c, &kapi_pods, "default", "p", "status",
                                                 KAPI_PATCH_MERGE, "{}", kapi_sync_cb, &s),
                                 0);
            else
                assert_int_equal(kapi_create_meta(c, &kapi_pods, "default", o, kapi_sync_cb, &s),
                                 0);
            kapi_sync_wait(c, &s);
            assert_non_null(whole);
            assert_int_equal(s.raw_len, strlen(cases[i].body));
            if (cases[i].whole) {
                if (!json_equal(s.body, whole))
                    fail_msg("case %zu: not decoded whole", i);
            } else {
                md = json_object_get(s.body, "metadata");
                assert_int_equal(json_object_size(s.body), 1);
                assert_string_equal(kapi_obj_rv(s.body), "42");
                assert_string_equal(json_string_value(json_object_get(md, "uid")), "u-1");
                assert_null(json_object_get(md, "managedFields"));
                assert_true(
                    json_equal(json_object_get(md, "labels"),
                               json_object_get(json_object_get(whole, "metadata"), "labels")));
            }
            if (strncmp(cases[i].status, "409", 3) == 0) {
                assert_int_equal(s.err, -EEXIST);
                assert_string_equal(s.reason, "AlreadyExists");
            } else {
                assert_int_equal(s.err, 0);
            }
            json_decref(whole);
            kapi_sync_done(&s);
            client_close(c);
            server_stop(&srv);
        }
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retry_after),   cmocka_unit_test(test_backoff_and_body),
        cmocka_unit_test(test_gives_up),      cmocka_unit_test(test_cancel_and_close_while_delayed),
        cmocka_unit_test(test_rate_recovers), cmocka_unit_test(test_observation_labels),
        cmocka_unit_test(test_metadata_only),
    };
    int r;

    uv_loop_init(&loop);
    r = cmocka_run_group_tests(tests, NULL, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return r;
}
