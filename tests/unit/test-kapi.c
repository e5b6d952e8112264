/* The Kubernetes client's answer to 429 Too Many Requests (the API server's priority and fairness
 * turning a request away): the request is sent again after Retry-After, at most 10 times, and the
 * client's rate is halved, then grows back. A small HTTP server in this process plays the API
 * server: it answers 429 to the first requests it is told to, then 200. */
#include <stdarg.h>
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

#define REQ_MAX 8192

struct server {
    uv_tcp_t tcp;
    int port;
    int answer_429;          /* answer 429 to this many requests first */
    const char *retry_after; /* its Retry-After header's value, or NULL */
    int requests;            /* requests seen */
    char last_method[16];
    char last_body[256];
    uint64_t at_ms[32]; /* when each request arrived (uv_now) */
};

struct conn {
    uv_tcp_t tcp;
    struct server *srv;
    char buf[REQ_MAX];
    size_t len;
    uv_write_t w;
    char out[512];
};

static uv_loop_t loop;
static struct server srv;

static void conn_closed(uv_handle_t *h)
{
    free(h->data);
}

static void written(uv_write_t *w, int status)
{
    struct conn *c = w->data;

    (void)status;
    uv_close((uv_handle_t *)&c->tcp, conn_closed);
}

/* A whole request (headers, and the body Content-Length announces): 1; more to read: 0. */
static int request_done(struct conn *c)
{
    char *end, *cl;
    size_t head, body = 0;

    c->buf[c->len] = '\0';
    end = strstr(c->buf, "\r\n\r\n");
    if (!end)
        return 0;
    head = (size_t)(end - c->buf) + 4;
    cl = strstr(c->buf, "Content-Length: ");
    if (cl && cl < end)
        body = strtoul(cl + 16, NULL, 10);
    return c->len >= head + body;
}

static void answer(struct conn *c)
{
    struct server *s = c->srv;
    const char *ok = "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"x\"}}";
    const char *tmr = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                      "\"reason\":\"TooManyRequests\",\"code\":429}";
    char *body = strstr(c->buf, "\r\n\r\n") + 4;
    uv_buf_t b;
    int n;

    if (s->requests < (int)(sizeof(s->at_ms) / sizeof(s->at_ms[0])))
        s->at_ms[s->requests] = uv_now(&loop);
    s->requests++;
    sscanf(c->buf, "%15s", s->last_method);
    snprintf(s->last_body, sizeof(s->last_body), "%s", body);
    if (s->requests <= s->answer_429)
        n = snprintf(c->out, sizeof(c->out),
                     "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\n"
                     "%s%s%sContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
                     s->retry_after ? "Retry-After: " : "", s->retry_after ? s->retry_after : "",
                     s->retry_after ? "\r\n" : "", strlen(tmr), tmr);
    else
        n = snprintf(c->out, sizeof(c->out),
                     "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                     "%zu\r\nConnection: close\r\n\r\n%s",
                     strlen(ok), ok);
    b = uv_buf_init(c->out, (unsigned)n);
    c->w.data = c;
    uv_write(&c->w, (uv_stream_t *)&c->tcp, &b, 1, written);
}

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    struct conn *c = h->data;

    (void)hint;
    *b = uv_buf_init(c->buf + c->len, (unsigned)(REQ_MAX - 1 - c->len));
}

static void read_cb(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
    struct conn *c = st->data;

    (void)b;
    if (n < 0 || c->len + (size_t)n >= REQ_MAX - 1) {
        uv_close((uv_handle_t *)&c->tcp, conn_closed);
        return;
    }
    c->len += (size_t)n;
    if (request_done(c)) {
        uv_read_stop(st);
        answer(c);
    }
}

static void on_conn(uv_stream_t *l, int status)
{
    struct conn *c;

    assert_int_equal(status, 0);
    c = calloc(1, sizeof(*c));
    assert_non_null(c);
    c->srv = l->data;
    uv_tcp_init(&loop, &c->tcp);
    c->tcp.data = c;
    assert_int_equal(uv_accept(l, (uv_stream_t *)&c->tcp), 0);
    uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb);
}

static void server_start(struct server *s, int answer_429, const char *retry_after)
{
    struct sockaddr_in a;
    struct sockaddr_storage got;
    int len = sizeof(got);

    memset(s, 0, sizeof(*s));
    s->answer_429 = answer_429;
    s->retry_after = retry_after;
    uv_tcp_init(&loop, &s->tcp);
    s->tcp.data = s;
    uv_ip4_addr("127.0.0.1", 0, &a);
    assert_int_equal(uv_tcp_bind(&s->tcp, (const struct sockaddr *)&a, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t *)&s->tcp, 64, on_conn), 0);
    uv_tcp_getsockname(&s->tcp, (struct sockaddr *)&got, &len);
    s->port = ntohs(((struct sockaddr_in *)&got)->sin_port);
}

static void server_stop(struct server *s)
{
    uv_close((uv_handle_t *)&s->tcp, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
}

static struct kapi_client *client_new(struct server *s, double qps, long retry_base_ms)
{
    char url[64];
    struct kc_config cfg = {0};
    struct kapi_client_options o = {.qps = qps, .burst = 10, .retry_base_ms = retry_base_ms};
    struct kapi_client *c = NULL;

    snprintf(url, sizeof(url), "http://127.0.0.1:%d", s->port);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retry_after),   cmocka_unit_test(test_backoff_and_body),
        cmocka_unit_test(test_gives_up),      cmocka_unit_test(test_cancel_and_close_while_delayed),
        cmocka_unit_test(test_rate_recovers),
    };
    int r;

    uv_loop_init(&loop);
    r = cmocka_run_group_tests(tests, NULL, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return r;
}
