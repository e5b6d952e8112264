/* Unit tests of src/httpd: a real server on 127.0.0.1 (port 0), driven by the test's libuv loop on
 * the main thread; the client (libcurl easy, or a raw socket) runs in a second thread and wakes the
 * loop with a uv_async when it is done. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/netaddr.h"
#include "common/strutil.h"
#include "httpd/httpd.h"

struct job {
    /* in */
    const char *method;
    const char *path;
    const char *body;
    size_t body_len;
    bool chunked;       /* send the body with a read callback, no Content-Length */
    size_t chunk_total; /* chunked: how many bytes to offer */
    const char *cafile; /* https with this CA */
    const char *client_cert, *client_key; /* PEM: a client certificate for the handshake */
    long tls_version;                     /* CURL_SSLVERSION_TLSv1_2 or _3 (the only one allowed) */
    bool raw_idle;  /* raw socket: send a partial request and wait for the server to close */
    bool raw_slow;  /* raw socket: send a request head a byte at a time (see raw_slow) */
    bool no_wake;   /* do not wake the loop when done (a request inside another client) */
    long timeout_s; /* default 20 */
    /* out */
    CURLcode cc;
    long status;
    char resp[8192];
    size_t resp_len;
    char allow[128];
    int tls_negotiated; /* TLS1_2_VERSION, TLS1_3_VERSION, 0 (no TLS session) */
    CURL *curl;         /* while it runs */
    curl_off_t uploaded;
    double idle_closed_after; /* raw_idle: seconds until EOF, < 0 if none */
    size_t offered;
};

static uv_loop_t loop;
static uv_async_t async;
static struct httpd_server *srv;
static unsigned responses, last_status, aborts;
static char last_route[64];
static char tmpdir[64];

static void on_async(uv_async_t *h)
{
    (void)h;
    uv_stop(&loop);
}

static size_t on_write(char *p, size_t size, size_t n, void *data)
{
    struct job *j = data;
    size_t len = size * n, room = sizeof(j->resp) - 1 - j->resp_len;

    if (len > room)
        len = room;
    memcpy(j->resp + j->resp_len, p, len);
    j->resp_len += len;
    j->resp[j->resp_len] = '\0';
    return size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *data)
{
    struct job *j = data;
    size_t len = size * n;
    struct curl_tlssessioninfo *ti = NULL;

    /* The TLS session is known while the transfer runs (not after). */
    if (!j->tls_negotiated && curl_easy_getinfo(j->curl, CURLINFO_TLS_SSL_PTR, &ti) == CURLE_OK &&
        ti && ti->backend == CURLSSLBACKEND_OPENSSL && ti->internals)
        j->tls_negotiated = SSL_version(ti->internals);

    if (len > 7 && strncasecmp(p, "Allow: ", 7) == 0) {
        size_t v = len - 7;
        while (v && (p[7 + v - 1] == '\r' || p[7 + v - 1] == '\n'))
            v--;
        if (v >= sizeof(j->allow))
            v = sizeof(j->allow) - 1;
        memcpy(j->allow, p + 7, v);
        j->allow[v] = '\0';
    }
    return len;
}

static size_t on_read(char *p, size_t size, size_t n, void *data)
{
    struct job *j = data;
    size_t len = size * n;

    if (j->offered >= j->chunk_total)
        return 0;
    if (len > j->chunk_total - j->offered)
        len = j->chunk_total - j->offered;
    memset(p, 'x', len);
    j->offered += len;
    return len;
}

/* A TCP connection to 127.0.0.1:port: its descriptor, or -1. */
static int tcp_local(uint16_t port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static void raw_idle(struct job *j)
{
    struct timeval tv = {.tv_sec = 15};
    struct timespec t0, t1;
    char buf[256];
    int fd = tcp_local(httpd_port(srv));
    ssize_t n;

    j->idle_closed_after = -1;
    if (fd < 0)
        goto out;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (write(fd, "GET /hello HTTP/1.1\r\nHost: x\r\n", 30) != 30)
        goto out;
    do {
        n = read(fd, buf, sizeof(buf));
    } while (n > 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (n == 0)
        j->idle_closed_after =
            (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
out:
    if (fd >= 0)
        close(fd);
}

static void *client(void *data);

/* A slowloris: the head of a request, one byte every 100 ms (never finished), while a second
 * connection asks GET /hello; until the server closes the slow one (idle_closed_after). */
static void raw_slow(struct job *j)
{
    static const char head[] = "GET /hello HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaa";
    struct timespec t0, t1, pause = {.tv_nsec = 100 * 1000 * 1000};
    int fd = tcp_local(httpd_port(srv));
    char buf[64];

    j->idle_closed_after = -1;
    if (fd < 0)
        goto out;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (size_t i = 0; i < sizeof(head) - 1; i++) {
        if (send(fd, head + i, 1, MSG_NOSIGNAL) != 1 ||
            recv(fd, buf, sizeof(buf), MSG_DONTWAIT) == 0)
            break;
        if (i == 2) {
            /* Meanwhile, another client is served. */
            struct job other = {.path = "/hello", .no_wake = true};

            client(&other);
            j->status = other.status;
        }
        nanosleep(&pause, NULL);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) == 0 || errno == ECONNRESET || errno == EPIPE)
        j->idle_closed_after =
            (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
out:
    if (fd >= 0)
        close(fd);
}

static void *client(void *data)
{
    struct job *j = data;
    struct curl_slist *hdrs = NULL;
    char url[256];
    CURL *c;

    if (j->raw_idle || j->raw_slow) {
        if (j->raw_idle)
            raw_idle(j);
        else
            raw_slow(j);
        uv_async_send(&async);
        return NULL;
    }
    c = curl_easy_init();
    j->curl = c;
    snprintf(url, sizeof(url), "%s://127.0.0.1:%u%s", j->cafile ? "https" : "http",
             (unsigned)httpd_port(srv), j->path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, j->timeout_s ? j->timeout_s : 20L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, j);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, j);
    if (j->cafile) {
        curl_easy_setopt(c, CURLOPT_CAINFO, j->cafile);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    }
    if (j->client_cert) {
        struct curl_blob cert = {(void *)j->client_cert, strlen(j->client_cert), CURL_BLOB_COPY};
        struct curl_blob key = {(void *)j->client_key, strlen(j->client_key), CURL_BLOB_COPY};

        curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &cert);
        curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &key);
        curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (j->tls_version == CURL_SSLVERSION_TLSv1_2)
        curl_easy_setopt(c, CURLOPT_SSLVERSION,
                         (long)(CURL_SSLVERSION_TLSv1_2 | CURL_SSLVERSION_MAX_TLSv1_2));
    else if (j->tls_version == CURL_SSLVERSION_TLSv1_3)
        curl_easy_setopt(c, CURLOPT_SSLVERSION,
                         (long)(CURL_SSLVERSION_TLSv1_3 | CURL_SSLVERSION_MAX_TLSv1_3));
    if (j->method && strcmp(j->method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    else if (j->method)
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, j->method);
    if (j->body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, j->body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)j->body_len);
    } else if (j->chunked) {
        hdrs = curl_slist_append(hdrs, "Transfer-Encoding: chunked");
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(c, CURLOPT_READDATA, j);
    }
    hdrs = curl_slist_append(hdrs, "X-Test: yes");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    j->cc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &j->status);
    curl_easy_getinfo(c, CURLINFO_SIZE_UPLOAD_T, &j->uploaded);
    curl_easy_cleanup(c);
    curl_slist_free_all(hdrs);
    if (!j->no_wake)
        uv_async_send(&async);
    return NULL;
}

/* Runs the client in a thread while the loop serves. */
static void perform(struct job *j)
{
    pthread_t t;

    assert_int_equal(pthread_create(&t, NULL, client, j), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    pthread_join(t, NULL);
}

/* ---- handlers ---------------------------------------------------------------------------------
 */

static void h_hello(struct httpd_request *req, void *data)
{
    (void)data;
    httpd_respond_text(req, 200, "hello\n");
}

static void h_echo(struct httpd_request *req, void *data)
{
    struct sbuf b;
    size_t len;
    const char *body = httpd_req_body(req, &len);

    (void)data;
    sbuf_init(&b, 1 << 20);
    sbuf_printf(&b, "peer=%s q=%s h=%s len=%zu body=", httpd_req_peer_ip(req),
                httpd_req_query(req, "q") ? httpd_req_query(req, "q") : "-",
                httpd_req_header(req, "x-test") ? httpd_req_header(req, "x-test") : "-", len);
    sbuf_add(&b, body, len);
    httpd_add_header(req, "X-Echo", "1");
    httpd_respond(req, 201, "text/plain", sbuf_str(&b), sbuf_len(&b));
    sbuf_done(&b);
}

static unsigned big_handler_calls;
static void h_big(struct httpd_request *req, void *data)
{
    (void)data;
    big_handler_calls++;
    httpd_respond_text(req, 200, "accepted");
}

struct later {
    uv_timer_t t;
    struct httpd_request *req;
    bool close_server;
};
static struct later later;

static void later_close_cb(uv_handle_t *h)
{
    (void)h;
}

static void on_later(uv_timer_t *t)
{
    struct later *l = t->data;

    if (l->close_server) {
        httpd_close(srv, NULL, NULL);
        srv = NULL;
    } else if (l->req) {
        httpd_respond_error(l->req, 202, "Later", "answered from a timer");
        l->req = NULL;
    }
    uv_close((uv_handle_t *)&l->t, later_close_cb);
}

static void on_abort(struct httpd_request *req, void *data)
{
    struct later *l = data;

    (void)req;
    aborts++;
    l->req = NULL;
}

static void h_async(struct httpd_request *req, void *data)
{
    (void)data;
    later.req = req;
    httpd_req_on_abort(req, on_abort, &later);
    uv_timer_init(&loop, &later.t);
    later.t.data = &later;
    uv_timer_start(&later.t, on_later, 100, 0);
}

static void h_never(struct httpd_request *req, void *data)
{
    (void)data;
    httpd_req_on_abort(req, on_abort, &later);
}

static void on_response(const struct httpd_request *req, const char *route, unsigned status,
                        void *data)
{
    (void)req;
    (void)data;
    responses++;
    last_status = status;
    snprintf(last_route, sizeof(last_route), "%s", route ? route : "(none)");
}

static uint64_t request_timeout_ms; /* 0: the default */
static uint64_t handshake_hold_ms;  /* 0: off */
static unsigned connection_limit;   /* 0: the default */

static void start_server(const char *cert, const char *key, unsigned timeout_s,
                         uint64_t handler_timeout_ms)
{
    struct httpd_options o = {
        .name = "test",
        .addr = "127.0.0.1:0",
        .tls_cert_pem = cert,
        .tls_key_pem = key,
        .connection_timeout_s = timeout_s,
        .handler_timeout_ms = handler_timeout_ms,
        .request_timeout_ms = request_timeout_ms,
        .handshake_hold_ms = handshake_hold_ms,
        .connection_limit = connection_limit,
        .per_ip_connection_limit = connection_limit,
        .on_response = on_response,
    };
    char err[256];

    assert_int_equal(httpd_new(&loop, &o, &srv), 0);
    assert_int_equal(httpd_route(srv, "GET", "/hello", 0, h_hello, NULL), 0);
    assert_int_equal(httpd_route(srv, "DELETE", "/hello", 0, h_hello, NULL), 0);
    assert_int_equal(httpd_route(srv, "GET", "/hello", 0, h_hello, NULL), -EEXIST);
    assert_int_equal(httpd_route(srv, "POST", "/echo", 1024, h_echo, NULL), 0);
    assert_int_equal(httpd_route(srv, "POST", "/big", 1024, h_big, NULL), 0);
    assert_int_equal(httpd_route(srv, "GET", "/async", 0, h_async, NULL), 0);
    assert_int_equal(httpd_route(srv, "GET", "/never", 0, h_never, NULL), 0);
    assert_int_equal(httpd_route(srv, "GET", "relative", 0, h_hello, NULL), -EINVAL);
    if (httpd_start(srv, err, sizeof(err)) < 0)
        fail_msg("httpd_start: %s", err);
    assert_true(httpd_port(srv) > 0);
}

static int setup(void **state)
{
    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(uv_async_init(&loop, &async, on_async), 0);
    responses = last_status = aborts = big_handler_calls = 0;
    request_timeout_ms = 0;
    handshake_hold_ms = 0;
    connection_limit = 0;
    memset(&later, 0, sizeof(later));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    httpd_close(srv, NULL, NULL);
    srv = NULL;
    uv_close((uv_handle_t *)&async, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    return 0;
}

/* ---- tests ------------------------------------------------------------------------------------
 */

/* netaddr_parse (tests/unit/test-netaddr.c) and back. */
static void test_format_addr(void **state)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {":8080", "0.0.0.0:8080"},          {"127.0.0.1:80", "127.0.0.1:80"},
        {"localhost:1", "127.0.0.1:1"},     {"0.0.0.0:0", "0.0.0.0:0"},
        {"[::1]:8443", "[::1]:8443"},       {"[::]:65535", "[::]:65535"},
        {"[fe80::1:2]:9", "[fe80::1:2]:9"}, {"10.1.2.3:65535", "10.1.2.3:65535"},
    };
    struct sockaddr_storage ss;
    socklen_t len;
    char buf[HTTPD_ADDR_STRLEN];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(netaddr_parse(cases[i].in, &ss, &len), 0);
        httpd_format_addr((struct sockaddr *)&ss, buf, sizeof(buf));
        assert_string_equal(buf, cases[i].out);
    }
    memset(&ss, 0, sizeof(ss));
    httpd_format_addr((struct sockaddr *)&ss, buf, sizeof(buf));
    assert_string_equal(buf, "?");
}

static void test_routes(void **state)
{
    struct job j = {.path = "/hello"};

    (void)state;
    start_server(NULL, NULL, 0, 0);
    perform(&j);
    assert_int_equal(j.cc, CURLE_OK);
    assert_int_equal(j.status, 200);
    assert_string_equal(j.resp, "hello\n");
    assert_string_equal(last_route, "/hello");

    memset(&j, 0, sizeof(j));
    j.path = "/nope?x=1";
    perform(&j);
    assert_int_equal(j.status, 404);
    assert_string_equal(j.resp, "{\"error\":\"not-found\",\"message\":\"no such path\"}\n");
    assert_string_equal(last_route, "(none)");

    memset(&j, 0, sizeof(j));
    j.path = "/hello";
    j.method = "PUT";
    perform(&j);
    assert_int_equal(j.status, 405);
    assert_string_equal(j.allow, "GET, DELETE");
    assert_non_null(strstr(j.resp, "\"error\":\"method-not-allowed\""));

    memset(&j, 0, sizeof(j));
    j.path = "/hello";
    j.method = "HEAD";
    perform(&j);
    assert_int_equal(j.status, 200);
    assert_int_equal(j.resp_len, 0);
    assert_int_equal(responses, 4);
}

static void test_body(void **state)
{
    struct job j = {.path = "/echo?q=a%20b", .method = "POST", .body = "abc\0def", .body_len = 7};

    (void)state;
    start_server(NULL, NULL, 0, 0);
    perform(&j);
    assert_int_equal(j.cc, CURLE_OK);
    assert_int_equal(j.status, 201);
    assert_int_equal(j.resp_len, strlen("peer=127.0.0.1 q=a b h=yes len=7 body=") + 7);
    assert_memory_equal(j.resp, "peer=127.0.0.1 q=a b h=yes len=7 body=abc\0def", j.resp_len);

    /* Exactly at the limit is fine, chunked too. */
    memset(&j, 0, sizeof(j));
    j.path = "/big";
    j.method = "POST";
    j.chunked = true;
    j.chunk_total = 1024;
    perform(&j);
    assert_int_equal(j.status, 200);
    assert_int_equal(big_handler_calls, 1);
}

static void test_body_limit(void **state)
{
    size_t big = 8u << 20;
    char *body = malloc(big);
    struct job j = {.path = "/big", .method = "POST", .body = body, .body_len = big};

    (void)state;
    assert_non_null(body);
    memset(body, 'y', big);
    start_server(NULL, NULL, 0, 0);
    /* Declared length over the limit: refused from the headers, the body is never read. */
    perform(&j);
    assert_int_equal(j.status, 413);
    assert_non_null(strstr(j.resp, "\"error\":\"body-too-large\""));
    assert_true(j.uploaded < (curl_off_t)(big / 2));
    assert_int_equal(big_handler_calls, 0);
    assert_int_equal(last_status, 413);
    assert_string_equal(last_route, "/big");

    /* Chunked (no length): the connection is closed as soon as the count passes the limit. */
    memset(&j, 0, sizeof(j));
    j.path = "/big";
    j.method = "POST";
    j.chunked = true;
    j.chunk_total = big;
    perform(&j);
    assert_int_equal(big_handler_calls, 0);
    assert_int_equal(last_status, 413);
    assert_int_not_equal(j.cc, CURLE_OPERATION_TIMEDOUT);
    assert_int_not_equal(j.status, 200);
    assert_true(j.offered < big / 2);
    free(body);
}

static void test_async(void **state)
{
    struct job j = {.path = "/async"};

    (void)state;
    start_server(NULL, NULL, 0, 0);
    perform(&j);
    assert_int_equal(j.status, 202);
    assert_string_equal(j.resp, "{\"error\":\"Later\",\"message\":\"answered from a timer\"}\n");
    assert_int_equal(httpd_pending(srv), 0);
    assert_int_equal(aborts, 0);
}

static void test_handler_timeout(void **state)
{
    struct job j = {.path = "/never"};

    (void)state;
    start_server(NULL, NULL, 0, 300);
    perform(&j);
    assert_int_equal(j.status, 504);
    assert_int_equal(aborts, 1);
    assert_int_equal(httpd_pending(srv), 0);
}

static void test_close_with_pending(void **state)
{
    struct job j = {.path = "/never"};

    (void)state;
    start_server(NULL, NULL, 0, 0);
    later.close_server = true;
    uv_timer_init(&loop, &later.t);
    later.t.data = &later;
    uv_timer_start(&later.t, on_later, 200, 0);
    perform(&j);
    /* The server went away under the request: the handler was told. */
    assert_int_equal(aborts, 1);
    assert_null(srv);
}

static void test_idle_timeout(void **state)
{
    struct job j = {.raw_idle = true};

    (void)state;
    start_server(NULL, NULL, 1, 0);
    perform(&j);
    assert_true(j.idle_closed_after >= 0.5);
    assert_true(j.idle_closed_after < 10);
}

/* With the server full (connection_limit silent connections), a new client waits in the listen
 * backlog until the request deadline closes the silent ones, and is then served: not refused. */
static void *full_client(void *data)
{
    struct job *j = data;
    int silent[2] = {tcp_local(httpd_port(srv)), tcp_local(httpd_port(srv))};

    j->no_wake = true;
    if (silent[0] >= 0 && silent[1] >= 0) {
        usleep(100 * 1000); /* both accepted */
        client(j);
    }
    /* Both silent ones are closed by the server at their own deadline: wait for that (EOF), as the
     * second may have been accepted later than the first on a busy machine, and closing it here
     * first would be a disconnect, not a timeout. */
    for (int i = 0; i < 2; i++) {
        struct pollfd p = {.fd = silent[i], .events = POLLIN};
        char b;

        if (silent[i] < 0)
            continue;
        if (poll(&p, 1, 10000) == 1 && read(silent[i], &b, 1) < 0)
            fprintf(stderr, "reading the silent connection: %s\n", strerror(errno));
        close(silent[i]);
    }
    uv_async_send(&async);
    return NULL;
}

static void test_connection_limit(void **state)
{
    struct job j = {.path = "/hello", .timeout_s = 10};
    pthread_t t;

    (void)state;
    request_timeout_ms = 1000;
    connection_limit = 2;
    start_server(NULL, NULL, 30, 0);
    assert_int_equal(pthread_create(&t, NULL, full_client, &j), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    pthread_join(t, NULL);
    assert_int_equal(j.cc, CURLE_OK);
    assert_int_equal(j.status, 200);
    assert_int_equal(httpd_request_timeouts(srv), 2);
}

/* A client that sends its request head one byte every 100 ms is cut off at the request deadline
 * (not at the idle timeout, which it never triggers), while another client is served. */
static void test_request_deadline(void **state)
{
    struct job j = {.raw_slow = true};

    (void)state;
    request_timeout_ms = 1000;
    start_server(NULL, NULL, 30, 0);
    perform(&j);
    assert_int_equal(j.status, 200);
    if (j.idle_closed_after < 0.9 || j.idle_closed_after > 3)
        fail_msg("the slow client was closed after %.2f s (deadline 1 s)", j.idle_closed_after);
    assert_int_equal(httpd_request_timeouts(srv), 1);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = calloc(1, 16384);
    size_t n;

    assert_non_null(f);
    assert_non_null(buf);
    n = fread(buf, 1, 16383, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* A TLS client that holds its last handshake flight back (an API server on a busy core): the
 * handshake runs through memory BIOs, so the test decides when bytes reach the socket. Once the
 * server's flight is in and the client's Finished is ready, it sleeps sleep_ms, then sends it with
 * a GET /hello. status: 200 if the answer came. */
struct stall_job {
    uint16_t port;
    unsigned sleep_ms;
    int status;
};

/* Sends what the client's TLS wrote. */
static bool bio_flush(BIO *w, int fd)
{
    char buf[4096];
    int n;

    while ((n = BIO_read(w, buf, sizeof(buf))) > 0)
        if (send(fd, buf, (size_t)n, MSG_NOSIGNAL) != n)
            return false;
    return true;
}

/* Receives once from the socket into the client's TLS (up to 5 s). */
static bool bio_fill(BIO *r, int fd)
{
    char buf[4096];
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    ssize_t n;

    if (poll(&pfd, 1, 5000) != 1 || (n = recv(fd, buf, sizeof(buf), 0)) <= 0)
        return false;
    return BIO_write(r, buf, (int)n) == (int)n;
}

static void *stall_client(void *arg)
{
    struct stall_job *j = arg;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL *ssl = ctx ? SSL_new(ctx) : NULL;
    BIO *r = BIO_new(BIO_s_mem()), *w = BIO_new(BIO_s_mem());
    static const char get[] = "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    char buf[512];
    int fd = tcp_local(j->port), n;

    if (!ssl || !r || !w || fd < 0)
        goto out;
    SSL_set_verify(ssl, SSL_VERIFY_NONE, NULL);
    SSL_set_bio(ssl, r, w); /* the SSL owns them now */
    while ((n = SSL_connect(ssl)) != 1) {
        if (SSL_get_error(ssl, n) != SSL_ERROR_WANT_READ || !bio_flush(w, fd) || !bio_fill(r, fd))
            goto out;
    }
    usleep(j->sleep_ms * 1000); /* the server waits for the client's Finished, in w */
    if (SSL_write(ssl, get, (int)strlen(get)) <= 0 || !bio_flush(w, fd))
        goto out;
    while ((n = SSL_read(ssl, buf, sizeof(buf) - 1)) <= 0)
        if (SSL_get_error(ssl, n) != SSL_ERROR_WANT_READ || !bio_fill(r, fd))
            goto out;
    buf[n] = '\0';
    if (strncmp(buf, "HTTP/1.1 200", 12) == 0)
        j->status = 200;
out:
    if (ssl)
        SSL_free(ssl);
    else {
        BIO_free(r);
        BIO_free(w);
    }
    SSL_CTX_free(ctx);
    if (fd >= 0)
        close(fd);
    uv_async_send(&async);
    return NULL;
}

/* A blocking TLS connection (no verification) to 127.0.0.1:port; NULL on failure. */
static SSL *tls_open(SSL_CTX *ctx, uint16_t port)
{
    int fd = tcp_local(port);
    SSL *ssl;

    if (fd < 0 || !(ssl = SSL_new(ctx))) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) != 1) {
        SSL_free(ssl);
        close(fd);
        return NULL;
    }
    return ssl;
}

static void tls_close(SSL *ssl)
{
    if (ssl) {
        int fd = SSL_get_fd(ssl);

        SSL_free(ssl);
        close(fd);
    }
}

/* The status of the answer read on ssl (0 if none). */
static int tls_status(SSL *ssl)
{
    char buf[256];
    int n = ssl ? SSL_read(ssl, buf, sizeof(buf) - 1) : 0;

    if (n < 13 || strncmp(buf, "HTTP/1.1 ", 9) != 0)
        return 0;
    buf[n] = '\0';
    return atoi(buf + 9);
}

/* While /never is in progress: a connection whose client gives up before it is handed over, then
 * a TLS client that asks for /hello. */
struct hold_job {
    uint16_t port;
    int never_status, hello_status;
};

static void *hold_client(void *arg)
{
    static const char never[] = "GET /never HTTP/1.1\r\nHost: x\r\n\r\n";
    static const char hello[] = "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n";
    struct hold_job *j = arg;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL *busy = ctx ? tls_open(ctx, j->port) : NULL, *late = NULL;
    int fd;

    if (!busy || SSL_write(busy, never, (int)strlen(never)) <= 0)
        goto out;
    usleep(50 * 1000); /* the server has the request */
    fd = tcp_local(j->port);
    if (fd >= 0) {
        usleep(100 * 1000); /* accepted meanwhile, and held */
        close(fd);          /* gave up: it never needs a handshake */
    }
    late = tls_open(ctx, j->port); /* held, then handed over: served all the same */
    if (late && SSL_write(late, hello, (int)strlen(hello)) > 0)
        j->hello_status = tls_status(late);
    j->never_status = tls_status(busy);
out:
    tls_close(late);
    tls_close(busy);
    SSL_CTX_free(ctx);
    uv_async_send(&async);
    return NULL;
}

static void test_tls(void **state)
{
    char cmd[1024], cert_path[128], key_path[128];
    char *cert, *key;
    struct job j = {.path = "/hello"};
    struct httpd_options o = {.addr = "127.0.0.1:0", .tls_cert_pem = "x", .tls_key_pem = "y"};
    struct httpd_server *bad;
    char err[256];

    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/test-httpd-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    snprintf(cert_path, sizeof(cert_path), "%s/tls.crt", tmpdir);
    snprintf(key_path, sizeof(key_path), "%s/tls.key", tmpdir);
    snprintf(cmd, sizeof(cmd),
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 "
             "-subj /CN=localhost -addext subjectAltName=IP:127.0.0.1,DNS:localhost "
             "-keyout %s -out %s >/dev/null 2>&1",
             key_path, cert_path);
    assert_int_equal(system(cmd), 0);
    cert = slurp(cert_path);
    key = slurp(key_path);

    start_server(cert, key, 0, 0);
    j.cafile = cert_path;
    perform(&j);
    assert_int_equal(j.cc, CURLE_OK);
    assert_int_equal(j.status, 200);
    assert_string_equal(j.resp, "hello\n");

    /* A handshake that waits for its client does not make the server loop: libmicrohttpd alone
     * would run a pass after another until the client answered (tens of thousands a second, see
     * httpd.c, "TLS transport"). Here: a few passes while waiting, with backoff, and the handshake
     * still completes as soon as the client goes on. */
    {
        struct stall_job sj = {.port = httpd_port(srv), .sleep_ms = 400};
        uint64_t before = httpd_passes(srv);
        pthread_t t;

        assert_int_equal(pthread_create(&t, NULL, stall_client, &sj), 0);
        uv_run(&loop, UV_RUN_DEFAULT);
        pthread_join(t, NULL);
        assert_int_equal(sj.status, 200);
        if (httpd_passes(srv) - before > 200)
            fail_msg("%llu passes while a handshake waited 400 ms for its client",
                     (unsigned long long)(httpd_passes(srv) - before));
    }

    /* Plain HTTP to the TLS port gets no answer. */
    memset(&j, 0, sizeof(j));
    j.path = "/hello";
    j.timeout_s = 2;
    perform(&j);
    assert_int_not_equal(j.status, 200);

    /* The certificate replaced while serving: new handshakes get the new one at once, so a
     * client that trusts only the old one now fails and one that trusts the new one succeeds. A
     * pair that does not load is refused and the current one stays. */
    {
        char cert2_path[160], key2_path[160];
        char *cert2, *key2;

        snprintf(cert2_path, sizeof(cert2_path), "%s/tls2.crt", tmpdir);
        snprintf(key2_path, sizeof(key2_path), "%s/tls2.key", tmpdir);
        snprintf(cmd, sizeof(cmd),
                 "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 "
                 "-subj /CN=second -addext subjectAltName=IP:127.0.0.1 "
                 "-keyout %s -out %s >/dev/null 2>&1",
                 key2_path, cert2_path);
        assert_int_equal(system(cmd), 0);
        cert2 = slurp(cert2_path);
        key2 = slurp(key2_path);
        assert_int_equal(httpd_set_tls(srv, cert2, key2), 0);
        memset(&j, 0, sizeof(j));
        j.path = "/hello";
        j.cafile = cert2_path;
        perform(&j);
        assert_int_equal(j.cc, CURLE_OK);
        assert_int_equal(j.status, 200);
        memset(&j, 0, sizeof(j));
        j.path = "/hello";
        j.cafile = cert_path;
        perform(&j);
        assert_int_not_equal(j.cc, CURLE_OK);
        assert_int_equal(httpd_set_tls(srv, "not a certificate", key2), -EPROTO);
        assert_int_equal(httpd_set_tls(srv, cert2, NULL), -EINVAL);
        memset(&j, 0, sizeof(j));
        j.path = "/hello";
        j.cafile = cert2_path;
        perform(&j);
        assert_int_equal(j.cc, CURLE_OK);
        assert_int_equal(j.status, 200);
        free(cert2);
        free(key2);
        unlink(cert2_path);
        unlink(key2_path);
    }

    /* A certificate that is not PEM: start fails with a reason. */
    assert_int_equal(httpd_new(&loop, &o, &bad), 0);
    assert_int_equal(httpd_start(bad, err, sizeof(err)), -EPROTO);
    assert_non_null(strstr(err, "TLS"));
    httpd_close(bad, NULL, NULL);
    /* Cert without key: refused at once. */
    o.tls_key_pem = NULL;
    assert_int_equal(httpd_new(&loop, &o, &bad), -EINVAL);

    /* handshake_hold_ms: while /never is in progress, a connection whose client gave up before it
     * was handed over is closed without a handshake, and one that waits is served after the hold
     * (the request in progress ends only at the handler timeout, 1.5 s). Off, the first would be
     * handed over at once and never counted. */
    {
        struct hold_job hj;
        pthread_t t;

        httpd_close(srv, NULL, NULL);
        handshake_hold_ms = 300;
        start_server(cert, key, 0, 1500);
        hj = (struct hold_job){.port = httpd_port(srv)};
        assert_int_equal(pthread_create(&t, NULL, hold_client, &hj), 0);
        uv_run(&loop, UV_RUN_DEFAULT);
        pthread_join(t, NULL);
        assert_int_equal(hj.hello_status, 200);
        assert_int_equal(hj.never_status, 504);
        assert_int_equal(httpd_held_dropped(srv), 1);
    }

    free(cert);
    free(key);
    unlink(cert_path);
    unlink(key_path);
    rmdir(tmpdir);
}

/* ---- client certificates -------------------------------------------------------------------- */

/* A certificate for key, signed by ca/ca_key (self-signed CA when ca is NULL), valid from
 * now + from_s to now + to_s; eku NULL: none. */
static X509 *make_cert(EVP_PKEY *key, const char *cn, X509 *ca, EVP_PKEY *ca_key, long from_s,
                       long to_s, const char *eku, const char *san)
{
    X509 *x = X509_new();
    X509_NAME *n = X509_NAME_new();
    X509V3_CTX ctx;
    static long serial = 100;
    struct {
        int nid;
        const char *value;
    } ext[3] = {{0, NULL}, {0, NULL}, {0, NULL}};

    assert_non_null(x);
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
    X509_set_version(x, 2);
    X509_gmtime_adj(X509_getm_notBefore(x), from_s);
    X509_gmtime_adj(X509_getm_notAfter(x), to_s);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0);
    X509_set_subject_name(x, n);
    X509_set_issuer_name(x, ca ? X509_get_subject_name(ca) : n);
    X509_set_pubkey(x, key);
    X509V3_set_ctx(&ctx, ca ? ca : x, x, NULL, NULL, 0);
    if (!ca) {
        ext[0].nid = NID_basic_constraints;
        ext[0].value = "critical,CA:TRUE";
        ext[1].nid = NID_key_usage;
        ext[1].value = "critical,keyCertSign,cRLSign";
    } else {
        ext[0].nid = eku ? NID_ext_key_usage : 0;
        ext[0].value = eku;
        ext[1].nid = san ? NID_subject_alt_name : 0;
        ext[1].value = san;
    }
    for (int i = 0; i < 3; i++) {
        X509_EXTENSION *e;

        if (!ext[i].nid)
            continue;
        e = X509V3_EXT_conf_nid(NULL, &ctx, ext[i].nid, ext[i].value);
        assert_non_null(e);
        X509_add_ext(x, e, -1);
        X509_EXTENSION_free(e);
    }
    assert_true(X509_sign(x, ca_key ? ca_key : key, EVP_sha256()) > 0);
    X509_NAME_free(n);
    return x;
}

static char *pem_of(X509 *x, EVP_PKEY *k)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *data, *out;
    long n;

    assert_non_null(b);
    if (x)
        assert_int_equal(PEM_write_bio_X509(b, x), 1);
    else
        assert_int_equal(PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL), 1);
    n = BIO_get_mem_data(b, &data);
    out = calloc(1, (size_t)n + 1);
    assert_non_null(out);
    memcpy(out, data, (size_t)n);
    BIO_free(b);
    return out;
}

struct ident {
    char *cert, *key;
};

static void ident_make(struct ident *id, const char *cn, X509 *ca, EVP_PKEY *ca_key, long from_s,
                       long to_s, const char *eku, const char *san)
{
    EVP_PKEY *k = EVP_EC_gen("P-256");
    X509 *x;

    assert_non_null(k);
    x = make_cert(k, cn, ca, ca_key, from_s, to_s, eku, san);
    id->cert = pem_of(x, NULL);
    id->key = pem_of(NULL, k);
    X509_free(x);
    EVP_PKEY_free(k);
}

static void ident_done(struct ident *id)
{
    free(id->cert);
    free(id->key);
}

/* Runs one client of the table below and checks what came back. */
static void expect_client(const char *what, long version, const char *cafile,
                          const struct ident *id, bool ok)
{
    struct job j = {.path = "/hello", .cafile = cafile, .tls_version = version, .timeout_s = 5};
    unsigned before = responses;

    if (id) {
        j.client_cert = id->cert;
        j.client_key = id->key;
    }
    perform(&j);
    if (ok) {
        if (j.cc != CURLE_OK || j.status != 200)
            fail_msg("%s over TLS 1.%d: curl %d, HTTP %ld, want 200", what,
                     version == CURL_SSLVERSION_TLSv1_2 ? 2 : 3, (int)j.cc, j.status);
        assert_int_equal(j.tls_negotiated,
                         version == CURL_SSLVERSION_TLSv1_2 ? TLS1_2_VERSION : TLS1_3_VERSION);
        assert_int_equal(responses, before + 1);
        return;
    }
    /* Refused in the handshake: no HTTP status, and the server saw no request at all. */
    if (j.cc == CURLE_OK || j.status != 0 || responses != before)
        fail_msg("%s over TLS 1.%d was not refused in the handshake: curl %d, HTTP %ld", what,
                 version == CURL_SSLVERSION_TLSv1_2 ? 2 : 3, (int)j.cc, j.status);
}

static void test_client_auth(void **state)
{
    EVP_PKEY *sk = EVP_EC_gen("P-256"), *ck = EVP_EC_gen("P-256"), *ok = EVP_EC_gen("P-256");
    X509 *srv_ca, *ca, *other;
    struct ident server, good, foreign, expired, future, wrong_cn, server_only, no_eku;
    char cafile[128], *ca_pem, *other_pem;
    static const char *const cns[] = {"webhook-client", "second-name", NULL};
    static const char *const only_second[] = {"second-name", NULL};
    static const char *const bad_cns[] = {"", NULL};
    static const long versions[] = {CURL_SSLVERSION_TLSv1_2, CURL_SSLVERSION_TLSv1_3};
    struct httpd_options o = {.addr = "127.0.0.1:0"};
    struct httpd_server *bad;
    uint64_t failures;
    FILE *f;

    (void)state;
    assert_non_null(sk);
    assert_non_null(ck);
    assert_non_null(ok);
    srv_ca = make_cert(sk, "server-ca", NULL, NULL, -60, 3600, NULL, NULL);
    ca = make_cert(ck, "client-ca", NULL, NULL, -60, 3600, NULL, NULL);
    other = make_cert(ok, "other-ca", NULL, NULL, -60, 3600, NULL, NULL);
    ca_pem = pem_of(ca, NULL);
    other_pem = pem_of(other, NULL);
    ident_make(&server, "localhost", srv_ca, sk, -60, 3600, "serverAuth", "IP:127.0.0.1");
    ident_make(&good, "webhook-client", ca, ck, -60, 3600, "clientAuth", NULL);
    ident_make(&foreign, "webhook-client", other, ok, -60, 3600, "clientAuth", NULL);
    ident_make(&expired, "webhook-client", ca, ck, -7200, -3600, "clientAuth", NULL);
    ident_make(&future, "webhook-client", ca, ck, 3600, 7200, "clientAuth", NULL);
    ident_make(&wrong_cn, "intruder", ca, ck, -60, 3600, "clientAuth", NULL);
    ident_make(&server_only, "webhook-client", ca, ck, -60, 3600, "serverAuth", NULL);
    ident_make(&no_eku, "second-name", ca, ck, -60, 3600, NULL, NULL);

    snprintf(tmpdir, sizeof(tmpdir), "/tmp/test-httpd-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    snprintf(cafile, sizeof(cafile), "%s/server-ca.crt", tmpdir);
    f = fopen(cafile, "w");
    assert_non_null(f);
    {
        char *pem = pem_of(srv_ca, NULL);

        fputs(pem, f);
        free(pem);
    }
    fclose(f);

    /* Options: a client CA needs TLS, names need a CA, the bundle must hold a certificate, names
     * must be sensible. */
    o.client_ca_pem = ca_pem;
    assert_int_equal(httpd_new(&loop, &o, &bad), -EINVAL);
    o.tls_cert_pem = server.cert;
    o.tls_key_pem = server.key;
    o.client_ca_pem = NULL;
    o.client_cn = cns;
    assert_int_equal(httpd_new(&loop, &o, &bad), -EINVAL);
    o.client_ca_pem = "-----BEGIN CERTIFICATE-----\nnonsense\n-----END CERTIFICATE-----\n";
    assert_int_equal(httpd_new(&loop, &o, &bad), -EPROTO);
    o.client_ca_pem = ca_pem;
    o.client_cn = bad_cns;
    assert_int_equal(httpd_new(&loop, &o, &bad), -EINVAL);
    /* The same checks without a server; a bundle counts its certificates. */
    assert_int_equal(httpd_client_ca_check(ca_pem, cns), 1);
    assert_int_equal(httpd_client_ca_check(ca_pem, bad_cns), -EINVAL);
    assert_int_equal(httpd_client_ca_check("no PEM here", NULL), -EPROTO);
    assert_int_equal(httpd_client_ca_check(NULL, NULL), -EINVAL);
    {
        char both[8192];

        snprintf(both, sizeof(both), "%s%s", ca_pem, other_pem);
        assert_int_equal(httpd_client_ca_check(both, NULL), 2);
    }

    /* The server with client authentication: the CA and two accepted names. */
    {
        char err[256];

        o.name = "test";
        o.client_cn = cns;
        o.on_response = on_response;
        assert_int_equal(httpd_new(&loop, &o, &srv), 0);
        assert_int_equal(httpd_route(srv, "GET", "/hello", 0, h_hello, NULL), 0);
        if (httpd_start(srv, err, sizeof(err)) < 0)
            fail_msg("httpd_start: %s", err);
        assert_true(httpd_client_auth(srv));
    }
    for (size_t v = 0; v < 2; v++) {
        long ver = versions[v];

        failures = httpd_client_auth_failures(srv);
        expect_client("no client certificate", ver, cafile, NULL, false);
        expect_client("a certificate of another CA", ver, cafile, &foreign, false);
        expect_client("an expired certificate", ver, cafile, &expired, false);
        expect_client("a certificate not valid yet", ver, cafile, &future, false);
        expect_client("a common name not accepted", ver, cafile, &wrong_cn, false);
        expect_client("a server-only certificate", ver, cafile, &server_only, false);
        /* Every one but the first reached the verify function. */
        assert_int_equal(httpd_client_auth_failures(srv), failures + 5);
        expect_client("the API server's certificate", ver, cafile, &good, true);
        expect_client("a certificate without extendedKeyUsage", ver, cafile, &no_eku, true);
    }

    /* Rotation: another CA and one name; the old CA's certificates are refused from then on. */
    assert_int_equal(httpd_set_client_ca(srv, "not a bundle", NULL), -EPROTO);
    assert_int_equal(httpd_set_client_ca(srv, NULL, NULL), -EINVAL);
    assert_int_equal(httpd_set_client_ca(srv, other_pem, bad_cns), -EINVAL);
    expect_client("the API server's certificate (a refused rotation)", CURL_SSLVERSION_TLSv1_3,
                  cafile, &good, true);
    assert_int_equal(httpd_set_client_ca(srv, other_pem, NULL), 0);
    for (size_t v = 0; v < 2; v++) {
        expect_client("the old CA's certificate", versions[v], cafile, &good, false);
        expect_client("the new CA's certificate", versions[v], cafile, &foreign, true);
    }
    assert_int_equal(httpd_set_client_ca(srv, ca_pem, only_second), 0);
    expect_client("a name no longer accepted", CURL_SSLVERSION_TLSv1_3, cafile, &good, false);
    expect_client("the name still accepted", CURL_SSLVERSION_TLSv1_2, cafile, &no_eku, true);
    httpd_close(srv, NULL, NULL);
    srv = NULL;

    /* A TLS server started without client authentication asks for no certificate, and turns it
     * on later. */
    o.client_ca_pem = NULL;
    o.client_cn = NULL;
    {
        char err[256];

        assert_int_equal(httpd_new(&loop, &o, &srv), 0);
        assert_int_equal(httpd_route(srv, "GET", "/hello", 0, h_hello, NULL), 0);
        if (httpd_start(srv, err, sizeof(err)) < 0)
            fail_msg("httpd_start: %s", err);
    }
    assert_false(httpd_client_auth(srv));
    expect_client("no client certificate (none asked for)", CURL_SSLVERSION_TLSv1_3, cafile, NULL,
                  true);
    assert_int_equal(httpd_set_client_ca(srv, ca_pem, NULL), 0);
    assert_true(httpd_client_auth(srv));
    expect_client("no client certificate (now required)", CURL_SSLVERSION_TLSv1_3, cafile, NULL,
                  false);
    expect_client("the API server's certificate (now required)", CURL_SSLVERSION_TLSv1_2, cafile,
                  &good, true);

    {
        struct ident *all[] = {&server, &good,     &foreign,     &expired,
                               &future, &wrong_cn, &server_only, &no_eku};

        for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
            ident_done(all[i]);
    }
    free(ca_pem);
    free(other_pem);
    X509_free(srv_ca);
    X509_free(ca);
    X509_free(other);
    EVP_PKEY_free(sk);
    EVP_PKEY_free(ck);
    EVP_PKEY_free(ok);
    unlink(cafile);
    rmdir(tmpdir);
}

static void test_bind_error(void **state)
{
    struct httpd_options o = {.addr = "127.0.0.1:0"};
    struct httpd_server *other;
    char addr[64], err[256];

    (void)state;
    start_server(NULL, NULL, 0, 0);
    snprintf(addr, sizeof(addr), "127.0.0.1:%u", (unsigned)httpd_port(srv));
    o.addr = addr;
    assert_int_equal(httpd_new(&loop, &o, &other), 0);
    assert_int_equal(httpd_start(other, err, sizeof(err)), -EADDRINUSE);
    assert_non_null(strstr(err, addr));
    httpd_close(other, NULL, NULL);
    o.addr = "nonsense";
    assert_int_equal(httpd_new(&loop, &o, &other), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_addr),
        cmocka_unit_test_setup_teardown(test_routes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_body, setup, teardown),
        cmocka_unit_test_setup_teardown(test_body_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_async, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handler_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_with_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_request_deadline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connection_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_auth, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bind_error, setup, teardown),
    };
    int r;

    curl_global_init(CURL_GLOBAL_DEFAULT);
    r = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return r;
}
