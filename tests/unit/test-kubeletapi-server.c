/* Unit tests of the kubelet API server (src/kubeletapi/server.c, conn.c, tls.c) and of the
 * SubjectAccessReview authoriser (sar.c), on a real libuv loop:
 *  - the server on 127.0.0.1 with a fake authoriser and a fake backend, and a TLS client of the
 *    test's own (kla_conn + the HTTP and SPDY codecs) on the same loop: authentication, the
 *    authoriser's answers (also asynchronous, and cancelled when the client leaves), keep-alive,
 *    streamed answers with backpressure and the hard limit, exec over SPDY with the remotecommand
 *    status, protocol negotiation, the stream-creation deadline, oversized heads, per-address
 *    connection limits;
 *  - the SAR authoriser against a fake API server (src/httpd, plain HTTP on loopback): decisions,
 *    cache hits, TTL expiry, LRU eviction, one review for concurrent identical questions, cancel.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/netaddr.h"
#include "common/strutil.h"
#include "httpd/httpd.h"
#include "kube/api.h"
#include "kubeletapi/conn.h"
#include "kubeletapi/http.h"
#include "kubeletapi/internal.h"
#include "kubeletapi/kubeletapi.h"
#include "kubeletapi/spdy.h"
#include "peering/pki.h"

/* ---- certificates -------------------------------------------------------------------------- */

static EVP_PKEY *new_key(void)
{
    return EVP_EC_gen("P-256");
}

static char *pem_cert(X509 *x)
{
    char *s = NULL;

    assert_int_equal(peer_pki_cert_pem(x, &s), 0);
    return s;
}

static char *pem_key(EVP_PKEY *k)
{
    char *s = NULL;

    assert_int_equal(peer_pki_key_pem(k, &s), 0);
    return s;
}

/* A certificate for `key` signed by ca/ca_key (self-signed when ca is NULL). */
static X509 *issue(EVP_PKEY *key, const char *cn, const char *o, X509 *ca, EVP_PKEY *ca_key,
                   const char *ext_usage, const char *san)
{
    X509 *x = X509_new();
    X509_NAME *n = X509_NAME_new();
    X509V3_CTX ctx;
    X509_EXTENSION *e;
    static long serial = 1;

    ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
    X509_set_version(x, 2);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    if (o)
        X509_NAME_add_entry_by_txt(n, "O", MBSTRING_UTF8, (const unsigned char *)o, -1, -1, 0);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0);
    X509_set_subject_name(x, n);
    X509_set_issuer_name(x, ca ? X509_get_subject_name(ca) : n);
    X509_set_pubkey(x, key);
    X509V3_set_ctx(&ctx, ca ? ca : x, x, NULL, NULL, 0);
    if (!ca) {
        e = X509V3_EXT_conf_nid(NULL, &ctx, NID_basic_constraints, "critical,CA:TRUE");
        X509_add_ext(x, e, -1);
        X509_EXTENSION_free(e);
        e = X509V3_EXT_conf_nid(NULL, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign");
        X509_add_ext(x, e, -1);
        X509_EXTENSION_free(e);
    } else {
        e = X509V3_EXT_conf_nid(NULL, &ctx, NID_ext_key_usage, ext_usage);
        X509_add_ext(x, e, -1);
        X509_EXTENSION_free(e);
        if (san) {
            e = X509V3_EXT_conf_nid(NULL, &ctx, NID_subject_alt_name, san);
            X509_add_ext(x, e, -1);
            X509_EXTENSION_free(e);
        }
    }
    X509_sign(x, ca_key ? ca_key : key, EVP_sha256());
    X509_NAME_free(n);
    return x;
}

struct ident {
    char *cert, *key;
};

static struct {
    char *ca, *other_ca;
    struct ident server, alice, bob, slow, mallory;
} pki;

static void make_ident(struct ident *id, const char *cn, const char *o, X509 *ca, EVP_PKEY *ca_key,
                       const char *usage, const char *san)
{
    EVP_PKEY *k = new_key();
    X509 *x = issue(k, cn, o, ca, ca_key, usage, san);

    id->cert = pem_cert(x);
    id->key = pem_key(k);
    X509_free(x);
    EVP_PKEY_free(k);
}

static int setup_pki(void **state)
{
    EVP_PKEY *ck = new_key(), *ok = new_key();
    X509 *ca = issue(ck, "test-ca", NULL, NULL, NULL, NULL, NULL);
    X509 *other = issue(ok, "other-ca", NULL, NULL, NULL, NULL, NULL);

    (void)state;
    signal(SIGPIPE, SIG_IGN);
    pki.ca = pem_cert(ca);
    pki.other_ca = pem_cert(other);
    make_ident(&pki.server, "system:node:test", "system:nodes", ca, ck, "serverAuth",
               "IP:127.0.0.1");
    make_ident(&pki.alice, "alice", "team-a", ca, ck, "clientAuth", NULL);
    make_ident(&pki.bob, "bob", NULL, ca, ck, "clientAuth", NULL);
    make_ident(&pki.slow, "slow", NULL, ca, ck, "clientAuth", NULL);
    make_ident(&pki.mallory, "alice", "team-a", other, ok, "clientAuth", NULL);
    X509_free(ca);
    X509_free(other);
    EVP_PKEY_free(ck);
    EVP_PKEY_free(ok);
    return 0;
}

static int teardown_pki(void **state)
{
    struct ident *ids[] = {&pki.server, &pki.alice, &pki.bob, &pki.slow, &pki.mallory};

    (void)state;
    free(pki.ca);
    free(pki.other_ca);
    for (size_t i = 0; i < 5; i++) {
        free(ids[i]->cert);
        free(ids[i]->key);
    }
    return 0;
}

/* ---- the fake authoriser and backend ------------------------------------------------------- */

struct pending_authz {
    kla_authz_cb cb;
    void *data;
    int decision;
    uv_timer_t timer;
    bool cancelled;
};

static struct {
    uv_loop_t loop;
    struct kla_server *srv;
    int checks, cancels;
    char last_verb[16], last_node[64];
    bool last_node_null;
    struct pending_authz *pending;
    /* backend */
    size_t big_total, big_sent, big_max_queued;
    struct kla_request *big_r, *hang_r;
    bool big_waiting; /* the big backend waits for a drain */
    bool hang_closed, flood_failed;
    bool authz_manual; /* a slow decision comes when the test calls authz_later, not after 300 ms */
    int exec_closed;
} t;

static void authz_timer_closed(uv_handle_t *h)
{
    free(h->data);
}

static void authz_later(uv_timer_t *tm)
{
    struct pending_authz *p = tm->data;

    t.pending = NULL;
    if (!p->cancelled)
        p->cb(p->decision, "later", p->data);
    uv_close((uv_handle_t *)&p->timer, authz_timer_closed);
}

static int fake_check(void *impl, const struct kla_authz_attrs *a, kla_authz_cb cb, void *cb_data,
                      void **ret_handle)
{
    (void)impl;
    t.checks++;
    snprintf(t.last_verb, sizeof(t.last_verb), "%s", a->verb);
    t.last_node_null = !a->node;
    snprintf(t.last_node, sizeof(t.last_node), "%s", a->node ? a->node : "");
    if (strcmp(a->user->name, "slow") == 0) {
        struct pending_authz *p = calloc(1, sizeof(*p));

        p->cb = cb;
        p->data = cb_data;
        p->decision = 0;
        uv_timer_init(&t.loop, &p->timer);
        p->timer.data = p;
        if (!t.authz_manual)
            uv_timer_start(&p->timer, authz_later, 300, 0);
        t.pending = p;
        *ret_handle = p;
        return 0;
    }
    *ret_handle = NULL;
    /* alice (group team-a) may do anything; bob nothing. */
    if (a->user->ngroups == 1 && strcmp(a->user->groups[0], "team-a") == 0)
        cb(0, "", cb_data);
    else
        cb(-EPERM, "no", cb_data);
    return 0;
}

static void fake_cancel(void *impl, void *handle)
{
    struct pending_authz *p = handle;

    (void)impl;
    t.cancels++;
    if (p)
        p->cancelled = true;
}

static int fake_node_of(void *data, const char *ns, const char *pod, char *ret_node)
{
    (void)data;
    if (strcmp(ns, "ns") == 0 && strcmp(pod, "web") == 0) {
        snprintf(ret_node, KLA_MAX_NODE + 1, "node-1");
        return 0;
    }
    return -ENOENT;
}

static void big_pump(struct kla_request *r, void *data);

static void big_pump(struct kla_request *r, void *data)
{
    static char chunk[16384];

    (void)data;
    t.big_waiting = false;
    while (t.big_sent < t.big_total) {
        size_t n =
            t.big_total - t.big_sent < sizeof(chunk) ? t.big_total - t.big_sent : sizeof(chunk);

        if (!kla_resp_writable(r)) {
            kla_resp_on_drain(r, big_pump, NULL);
            t.big_waiting = true;
            return;
        }
        for (size_t i = 0; i < n; i++)
            chunk[i] = (char)('a' + (t.big_sent + i) % 26);
        assert_int_equal(kla_resp_write(r, chunk, n), 0);
        t.big_sent += n;
    }
    t.big_r = NULL;
    kla_resp_end(r);
}

static void hang_closed(struct kla_request *r, void *data)
{
    (void)r;
    (void)data;
    t.hang_closed = true;
    t.hang_r = NULL;
}

static int fake_logs(void *data, struct kla_request *r, const struct kla_pod_ref *ref,
                     const struct kla_logs_opts *o)
{
    (void)data;
    if (strcmp(ref->container, "small") == 0) {
        kla_resp_begin(r, 200, "text/plain");
        kla_resp_write(r, "hello\n", 6);
        if (o->tail_lines == 2)
            kla_resp_write(r, "tail2\n", 6);
        kla_resp_end(r);
        return 0;
    }
    if (strcmp(ref->container, "big") == 0) {
        t.big_sent = 0;
        t.big_r = r;
        kla_resp_begin(r, 200, "text/plain");
        big_pump(r, NULL);
        return 0;
    }
    if (strcmp(ref->container, "flood") == 0) {
        static char chunk[65536];

        kla_resp_begin(r, 200, "text/plain");
        for (int i = 0; i < 1000; i++)
            if (kla_resp_write(r, chunk, sizeof(chunk)) < 0) {
                t.flood_failed = true;
                break;
            }
        return 0; /* the connection is closed: nothing else to do */
    }
    if (strcmp(ref->container, "hang") == 0) {
        t.hang_r = r;
        kla_req_on_closed(r, hang_closed, NULL);
        return 0;
    }
    if (strcmp(ref->container, "nocred") == 0)
        return -EAGAIN; /* the provider's credential is missing */
    return -ENOENT;
}

static void x_stdin(struct kla_exec *x, const char *buf, size_t len, void *data)
{
    (void)data;
    if (len == 0) {
        kla_exec_finish(x, 3, NULL);
        return;
    }
    kla_exec_write(x, KLA_STREAM_STDOUT, buf, len);
    kla_exec_write(x, KLA_STREAM_STDERR, "e", 1);
}

static void x_closed(struct kla_exec *x, void *data)
{
    (void)x;
    (void)data;
    t.exec_closed++;
}

static const struct kla_exec_handlers echo_handlers = {.stdin_data = x_stdin, .closed = x_closed};

static int fake_exec(void *data, struct kla_request *r, const struct kla_pod_ref *ref,
                     const struct kla_exec_opts *o)
{
    (void)data;
    (void)o;
    if (strcmp(ref->container, "echo") != 0)
        return -ENOENT;
    return kla_exec_accept(r, &echo_handlers, NULL) < 0 ? 0 : 0;
}

/* ---- the test client ----------------------------------------------------------------------- */

struct client {
    struct kla_conn *c;
    SSL_CTX *ctx;
    struct sbuf in;
    bool closed;
    int close_err;
    struct kla_spdy_session *sp;
    bool upgraded;
    struct sbuf stdout_, stderr_, error_;
    bool error_fin, goaway;
    uint32_t sid[KLA_STREAM_MAX];
    int replies;
};

static void cl_data(struct kla_conn *c, const char *buf, size_t len, void *data)
{
    struct client *cl = data;

    (void)c;
    if (len == 0) { /* the server's end: close, as an HTTP client does */
        kla_conn_close(cl->c, 0);
        return;
    }
    if (cl->upgraded && cl->sp) {
        kla_spdy_feed(cl->sp, (const uint8_t *)buf, len);
        return;
    }
    sbuf_add(&cl->in, buf, len);
}

static void cl_closed(struct kla_conn *c, int err, void *data)
{
    struct client *cl = data;

    (void)c;
    cl->closed = true;
    cl->close_err = err;
    cl->c = NULL;
}

static const struct kla_conn_ops cl_ops = {.data = cl_data, .closed = cl_closed};

static void on_deadline(uv_timer_t *tm)
{
    *(bool *)tm->data = true;
}

/* Runs the loop until *flag is true or ms have passed (a timer of its own bounds each wait). */
static void run_until(bool *flag, int ms)
{
    uv_timer_t tm;
    bool expired = false;

    uv_timer_init(&t.loop, &tm);
    tm.data = &expired;
    uv_timer_start(&tm, on_deadline, (uint64_t)ms, 0);
    while (!*flag && !expired)
        uv_run(&t.loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&tm, NULL);
    uv_run(&t.loop, UV_RUN_NOWAIT); /* the close callback */
}

static void run_for(int ms)
{
    bool never = false;

    run_until(&never, ms);
}

/* Runs the loop until cond holds or ms have passed. The bound only stops a test that would hang:
 * on a starved machine an event may take seconds, so waits are for the event, never for a time. */
#define RUN_UNTIL(cond, ms)                                                                        \
    do {                                                                                           \
        uint64_t end_ = uv_now(&t.loop) + (ms);                                                    \
        while (!(cond) && uv_now(&t.loop) < end_)                                                  \
            run_for(10);                                                                           \
    } while (0)
#define WAIT_MS 30000

static void client_open(struct client *cl, const struct ident *id, const char *ca)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    char addr[64], err[256];

    memset(cl, 0, sizeof(*cl));
    sbuf_init(&cl->in, 64u << 20);
    sbuf_init(&cl->stdout_, 1 << 20);
    sbuf_init(&cl->stderr_, 1 << 20);
    sbuf_init(&cl->error_, 1 << 20);
    assert_int_equal(kla__tls_client_ctx((const unsigned char *)ca, strlen(ca),
                                         id ? (const unsigned char *)id->cert : NULL,
                                         id ? strlen(id->cert) : 0,
                                         id ? (const unsigned char *)id->key : NULL,
                                         id ? strlen(id->key) : 0, &cl->ctx, err, sizeof(err)),
                     0);
    snprintf(addr, sizeof(addr), "127.0.0.1:%u", kla_server_port(t.srv));
    assert_int_equal(netaddr_parse(addr, &ss, &sl), 0);
    assert_int_equal(kla_conn_connect(&t.loop, (struct sockaddr *)&ss, cl->ctx, "127.0.0.1",
                                      "127.0.0.1", NULL, &cl_ops, cl, &cl->c),
                     0);
}

static void client_close(struct client *cl)
{
    if (cl->c) {
        kla_conn_close(cl->c, 0);
        run_until(&cl->closed, 2000);
    }
    kla_spdy_session_free(cl->sp);
    SSL_CTX_free(cl->ctx);
    sbuf_done(&cl->in);
    sbuf_done(&cl->stdout_);
    sbuf_done(&cl->stderr_);
    sbuf_done(&cl->error_);
}

static int collect_into(void *data, const char *p, size_t n)
{
    return sbuf_add(data, p, n);
}

/* Sends a request and waits for the whole answer (or the close). Returns the status; the body
 * (de-chunked) in *body. */
static unsigned request(struct client *cl, const char *method, const char *target,
                        const char *extra, struct sbuf *body)
{
    char req[32768];
    struct kla_http_head h;
    uint64_t end = uv_now(&t.loop) + 5000;

    snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: x\r\n%s\r\n", method, target,
             extra ? extra : "");
    sbuf_done(&cl->in);
    sbuf_init(&cl->in, 64u << 20);
    assert_int_equal(kla_conn_write(cl->c, req, strlen(req)), 0);
    for (;;) {
        int r = kla_http_parse_response(sbuf_str(&cl->in), sbuf_len(&cl->in), &h);

        if (r == 0) {
            char te[32];
            const char *b = sbuf_str(&cl->in) + h.head_len;
            size_t blen = sbuf_len(&cl->in) - h.head_len;
            uint64_t cl_len = 0;

            if (h.status == 101)
                return 101;
            if (kla_http_header(&h, "Transfer-Encoding", te, sizeof(te)) > 0) {
                struct kla_chunked ch = {0};

                sbuf_done(body);
                sbuf_init(body, 64u << 20);
                if (kla_chunked_feed(&ch, b, blen, collect_into, body) >= 0 && ch.done)
                    return h.status;
            } else if (kla_http_content_length(&h, &cl_len) == 0 && blen >= cl_len) {
                sbuf_done(body);
                sbuf_init(body, 64u << 20);
                sbuf_add(body, b, (size_t)cl_len);
                return h.status;
            }
        }
        if (cl->closed || uv_now(&t.loop) > end)
            return 0;
        uv_run(&t.loop, UV_RUN_ONCE);
    }
}

/* ---- server setup -------------------------------------------------------------------------- */

static uint64_t handshake_ms; /* 0: the default */

static int setup_server(void **state)
{
    struct kla_server_options o = {
        .handshake_ms = handshake_ms,
        .addr = "127.0.0.1:0",
        .backend = {.node_of = fake_node_of, .logs = fake_logs, .exec = fake_exec},
        .authz = {.check = fake_check, .cancel = fake_cancel},
        .max_per_ip = 6,
        .high_water = 64 * 1024,
        .hard_limit = 1024 * 1024,
        .stream_create_ms = 200,
    };
    char err[256];

    (void)state;
    memset(&t.checks, 0, sizeof(t) - offsetof(__typeof__(t), checks));
    uv_loop_init(&t.loop);
    assert_int_equal(kla_server_new(&t.loop, &o, &t.srv), 0);
    assert_int_equal(kla_server_start(t.srv, err, sizeof(err)), -EINVAL); /* no TLS yet */
    assert_int_equal(
        kla_server_set_tls(t.srv, pki.server.cert, pki.alice.key, pki.ca, err, sizeof(err)),
        -EINVAL); /* a key that does not match */
    assert_int_equal(
        kla_server_set_tls(t.srv, pki.server.cert, pki.server.key, pki.ca, err, sizeof(err)), 0);
    assert_int_equal(kla_server_start(t.srv, err, sizeof(err)), 0);
    assert_true(kla_server_port(t.srv) > 0);
    return 0;
}

static bool server_gone;

static void on_server_closed(void *data)
{
    (void)data;
    server_gone = true;
}

static int teardown_server(void **state)
{
    (void)state;
    server_gone = false;
    kla_server_close(t.srv, on_server_closed, NULL);
    run_until(&server_gone, 3000);
    assert_true(server_gone);
    while (uv_run(&t.loop, UV_RUN_NOWAIT))
        ;
    assert_int_equal(uv_loop_close(&t.loop), 0);
    return 0;
}

/* ---- tests --------------------------------------------------------------------------------- */

static void test_authentication(void **state)
{
    struct client cl;
    struct sbuf body;

    (void)state;
    sbuf_init(&body, 1 << 20);
    client_open(&cl, NULL, pki.ca);
    assert_int_equal(request(&cl, "GET", "/healthz", NULL, &body), 200);
    assert_string_equal(sbuf_str(&body), "ok");
    assert_int_equal(request(&cl, "GET", "/containerLogs/ns/web/small", NULL, &body), 401);
    assert_string_equal(sbuf_str(&body), "Unauthorized\n");
    client_close(&cl);
    /* the right names, the wrong CA: the handshake fails, no request is read */
    client_open(&cl, &pki.mallory, pki.ca);
    assert_int_equal(request(&cl, "GET", "/containerLogs/ns/web/small", NULL, &body), 0);
    assert_true(cl.closed);
    client_close(&cl);
    assert_int_equal(t.checks, 0); /* never asked the authoriser */
    client_open(&cl, &pki.bob, pki.ca);
    assert_int_equal(request(&cl, "GET", "/containerLogs/ns/web/small", NULL, &body), 403);
    assert_string_equal(sbuf_str(&body),
                        "Forbidden (user=bob, verb=get, resource=nodes, subresource=proxy)\n");
    assert_string_equal(t.last_node, "node-1");
    assert_int_equal(request(&cl, "POST", "/exec/ns/web/echo?command=x&output=1", NULL, &body),
                     403);
    assert_string_equal(t.last_verb, "create");
    /* an unknown pod is asked for every node, and stays 403 */
    assert_int_equal(request(&cl, "GET", "/containerLogs/ns/ghost/small", NULL, &body), 403);
    assert_true(t.last_node_null);
    client_close(&cl);
    sbuf_done(&body);
}

static void test_requests(void **state)
{
    struct client cl;
    struct sbuf body;
    char big[20000];

    (void)state;
    sbuf_init(&body, 1 << 20);
    client_open(&cl, &pki.alice, pki.ca);
    /* keep-alive: several answers on one connection */
    assert_int_equal(request(&cl, "GET", "/containerLogs/ns/web/small", NULL, &body), 200);
    assert_string_equal(sbuf_str(&body), "hello\n");
    assert_int_equal(request(&cl, "GET", "/containerLogs/ns/web/small?tailLines=2", NULL, &body),
                     200);
    assert_string_equal(sbuf_str(&body), "hello\ntail2\n");
    assert_int_equal(request(&cl, "GET", "/containerLogs/ns/ghost/small", NULL, &body), 404);
    assert_int_equal(request(&cl, "GET", "/containerLogs/ns/web/nope", NULL, &body), 404);
    assert_null(strstr(sbuf_str(&cl.in), "Retry-After"));
    /* The pod is the node's but its provider cannot be reached now: 503, retry later. */
    assert_int_equal(request(&cl, "GET", "/containerLogs/ns/web/nocred", NULL, &body), 503);
    assert_non_null(strstr(sbuf_str(&cl.in), "\r\nRetry-After: 5\r\n"));
    assert_non_null(strstr(sbuf_str(&body), "not available yet"));
    assert_int_equal(request(&cl, "GET", "/containerLogs/ns/web/small?tailLines=x", NULL, &body),
                     400);
    assert_int_equal(request(&cl, "PUT", "/containerLogs/ns/web/small", NULL, &body), 405);
    assert_int_equal(request(&cl, "GET", "/metrics", NULL, &body), 404);
    assert_int_equal(request(&cl, "GET", "/exec/ns/web/echo?command=x&output=1", NULL, &body),
                     400); /* no upgrade headers */
    assert_string_equal(sbuf_str(&body), "unable to upgrade: missing upgrade headers in request\n");
    assert_int_equal(request(&cl, "GET", "/exec/ns/web/echo?command=x&output=1",
                             "Connection: Upgrade\r\nUpgrade: websocket\r\n", &body),
                     400);
    assert_false(cl.closed);
    /* a head over 16 KiB: 431, then the connection is closed */
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    {
        char hdr[sizeof(big) + 16];

        snprintf(hdr, sizeof(hdr), "X-Big: %s\r\n", big);
        assert_int_equal(request(&cl, "GET", "/healthz", hdr, &body), 431);
    }
    run_until(&cl.closed, WAIT_MS);
    assert_true(cl.closed);
    client_close(&cl);
    sbuf_done(&body);
}

static void test_async_authz_cancel(void **state)
{
    struct client cl;
    struct sbuf body;

    (void)state;
    sbuf_init(&body, 1 << 20);
    client_open(&cl, &pki.slow, pki.ca);
    assert_int_equal(request(&cl, "GET", "/containerLogs/ns/web/small", NULL, &body), 200);
    assert_string_equal(sbuf_str(&body), "hello\n");
    /* leave while the decision is pending: the server cancels it; the decision, when it comes
     * afterwards, is not delivered (the test releases it, so no timer can beat the close) */
    t.authz_manual = true;
    assert_int_equal(kla_conn_write(cl.c, "GET /containerLogs/ns/web/small HTTP/1.1\r\n\r\n", 44),
                     0);
    RUN_UNTIL(t.pending, WAIT_MS);
    assert_non_null(t.pending);
    kla_conn_close(cl.c, 0);
    RUN_UNTIL(t.cancels == 1, WAIT_MS);
    assert_int_equal(t.cancels, 1);
    authz_later(&t.pending->timer);
    run_for(50); /* the timer's close callback */
    t.authz_manual = false;
    assert_null(t.pending);
    client_close(&cl);
    sbuf_done(&body);
}

/* Whether a chunked response in b has ended (its last chunk and the empty trailer). */
static bool chunked_ended(const struct sbuf *b)
{
    return sbuf_len(b) >= 5 && memcmp(sbuf_str(b) + sbuf_len(b) - 5, "0\r\n\r\n", 5) == 0;
}

static void test_streaming_backpressure(void **state)
{
    struct client cl;
    struct sbuf body;

    (void)state;
    sbuf_init(&body, 1 << 20);
    client_open(&cl, &pki.alice, pki.ca);
    assert_int_equal(request(&cl, "GET", "/healthz", NULL, &body), 200);
    /* The client stops reading: the backend is told to wait near the high-water mark. */
    t.big_total = 32u << 20;
    kla_conn_pause(cl.c, true);
    assert_int_equal(kla_conn_write(cl.c, "GET /containerLogs/ns/web/big HTTP/1.1\r\n\r\n", 42), 0);
    RUN_UNTIL(t.big_waiting, WAIT_MS);
    assert_true(t.big_waiting);
    assert_non_null(t.big_r);
    /* It had to wait (the kernel's socket buffers took what they could), and the server never
     * buffered more than the high-water mark, one chunk and its framing and TLS overhead. */
    assert_true(t.big_sent < t.big_total);
    {
        struct kla_server_stats st;

        kla_server_stats(t.srv, &st);
        assert_true(st.peak_queued > 0);
        assert_true(st.peak_queued <= 64 * 1024 + 16384 + 1024);
    }
    /* reading again: everything arrives, in order */
    kla_conn_pause(cl.c, false);
    sbuf_done(&cl.in);
    sbuf_init(&cl.in, 64u << 20);
    {
        uint64_t end = uv_now(&t.loop) + WAIT_MS;

        while (t.big_r && uv_now(&t.loop) < end)
            uv_run(&t.loop, UV_RUN_ONCE);
        RUN_UNTIL(chunked_ended(&cl.in), WAIT_MS); /* the client has read the last chunk */
    }
    assert_null(t.big_r);
    assert_int_equal(t.big_sent, t.big_total);
    {
        struct kla_http_head h;
        struct kla_chunked ch = {0};

        assert_int_equal(kla_http_parse_response(sbuf_str(&cl.in), sbuf_len(&cl.in), &h), 0);
        sbuf_done(&body);
        sbuf_init(&body, 64u << 20);
        assert_true(kla_chunked_feed(&ch, sbuf_str(&cl.in) + h.head_len,
                                     sbuf_len(&cl.in) - h.head_len, collect_into, &body) > 0);
        assert_true(ch.done);
        assert_int_equal(sbuf_len(&body), t.big_total);
        for (size_t i = 0; i < sbuf_len(&body); i += 4099)
            assert_int_equal(sbuf_str(&body)[i], 'a' + (char)(i % 26));
    }
    client_close(&cl);
    /* A backend that ignores the mark hits the hard limit: the connection is closed. */
    client_open(&cl, &pki.alice, pki.ca);
    kla_conn_pause(cl.c, true);
    run_for(300);
    assert_int_equal(kla_conn_write(cl.c, "GET /containerLogs/ns/web/flood HTTP/1.1\r\n\r\n", 44),
                     0);
    kla_conn_pause(cl.c, false);
    run_until(&cl.closed, WAIT_MS);
    assert_true(t.flood_failed);
    assert_true(cl.closed);
    client_close(&cl);
    /* A client that leaves during a pending answer: the backend is told. */
    client_open(&cl, &pki.alice, pki.ca);
    assert_int_equal(kla_conn_write(cl.c, "GET /containerLogs/ns/web/hang HTTP/1.1\r\n\r\n", 43),
                     0);
    RUN_UNTIL(t.hang_r, WAIT_MS);
    assert_non_null(t.hang_r);
    kla_conn_close(cl.c, 0);
    run_until(&t.hang_closed, WAIT_MS);
    assert_true(t.hang_closed);
    client_close(&cl);
    sbuf_done(&body);
}

/* SPDY client callbacks */
static int cs_output(void *d, const uint8_t *buf, size_t len)
{
    struct client *cl = d;

    return kla_conn_write(cl->c, buf, len);
}

static int cs_reply(void *d, uint32_t id, const struct kla_spdy_headers *h, bool fin)
{
    struct client *cl = d;

    (void)id;
    (void)h;
    (void)fin;
    cl->replies++;
    return 0;
}

static int cs_data(void *d, uint32_t id, const uint8_t *buf, size_t len, bool fin)
{
    struct client *cl = d;

    if (id == cl->sid[KLA_STREAM_STDOUT])
        sbuf_add(&cl->stdout_, buf, len);
    else if (id == cl->sid[KLA_STREAM_STDERR])
        sbuf_add(&cl->stderr_, buf, len);
    else if (id == cl->sid[KLA_STREAM_ERROR]) {
        sbuf_add(&cl->error_, buf, len);
        if (fin)
            cl->error_fin = true;
    }
    kla_spdy_consumed(cl->sp, id, len);
    return 0;
}

static void cs_goaway(void *d, uint32_t last, uint32_t status)
{
    struct client *cl = d;

    (void)last;
    (void)status;
    cl->goaway = true;
}

static const struct kla_spdy_callbacks cs_cb = {
    .output = cs_output, .syn_reply = cs_reply, .data = cs_data, .goaway = cs_goaway};

static void open_stream(struct client *cl, enum kla_stream s)
{
    struct kla_spdy_headers h = {.n = 0};

    kla_spdy_header_add(&h, "streamtype", kla_rc_stream_name(s));
    assert_int_equal(kla_spdy_syn_stream(cl->sp, &h, false, &cl->sid[s]), 0);
}

static const char upgrade[] = "Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
                              "X-Stream-Protocol-Version: v4.channel.k8s.io\r\n"
                              "X-Stream-Protocol-Version: v3.channel.k8s.io\r\n";

static void test_exec(void **state)
{
    struct client cl;
    struct sbuf body;
    int code = -1;
    char msg[256];

    (void)state;
    sbuf_init(&body, 1 << 20);
    client_open(&cl, &pki.alice, pki.ca);
    assert_int_equal(request(&cl, "POST", "/exec/ns/web/echo?command=cat&input=1&output=1&error=1",
                             upgrade, &body),
                     101);
    {
        struct kla_http_head h;
        char v[64];

        assert_int_equal(kla_http_parse_response(sbuf_str(&cl.in), sbuf_len(&cl.in), &h), 0);
        assert_int_equal(kla_http_header(&h, "X-Stream-Protocol-Version", v, sizeof(v)), 17);
        assert_string_equal(v, "v4.channel.k8s.io");
        assert_true(kla_http_has_token(&h, "Upgrade", "SPDY/3.1"));
        /* the server's session starts at once: SETTINGS (20 bytes) and WINDOW_UPDATE (16) */
        assert_int_equal(sbuf_len(&cl.in) - h.head_len, 36);
        cl.upgraded = true;
        assert_int_equal(kla_spdy_session_new(false, NULL, &cs_cb, &cl, &cl.sp), 0);
        assert_int_equal(kla_spdy_feed(cl.sp, (const uint8_t *)sbuf_str(&cl.in) + h.head_len, 36),
                         0);
        assert_true(kla_spdy_flow_enforced(cl.sp));
    }
    open_stream(&cl, KLA_STREAM_ERROR);
    open_stream(&cl, KLA_STREAM_STDIN);
    open_stream(&cl, KLA_STREAM_STDOUT);
    open_stream(&cl, KLA_STREAM_STDERR);
    RUN_UNTIL(cl.replies >= 4, WAIT_MS);
    assert_int_equal(cl.replies, 4);
    assert_int_equal(kla_spdy_data(cl.sp, cl.sid[KLA_STREAM_STDIN], "abc", 3, false), 3);
    run_for(100);
    assert_int_equal(kla_spdy_data(cl.sp, cl.sid[KLA_STREAM_STDIN], "def", 3, true), 3);
    run_until(&cl.closed, WAIT_MS);
    assert_true(cl.closed);
    assert_true(cl.goaway);
    assert_true(cl.error_fin);
    assert_int_equal(sbuf_len(&cl.stdout_), 6);
    assert_memory_equal(sbuf_str(&cl.stdout_), "abcdef", 6);
    assert_string_equal(sbuf_str(&cl.stderr_), "ee");
    assert_int_equal(
        kla_rc_status_decode(sbuf_str(&cl.error_), sbuf_len(&cl.error_), &code, msg, sizeof(msg)),
        0);
    assert_int_equal(code, 3);
    assert_int_equal(t.exec_closed, 1);
    client_close(&cl);

    /* No common protocol version: 403 with the versions we accept. */
    client_open(&cl, &pki.alice, pki.ca);
    assert_int_equal(request(&cl, "POST", "/exec/ns/web/echo?command=cat&output=1",
                             "Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
                             "X-Stream-Protocol-Version: channel.k8s.io\r\n",
                             &body),
                     403);
    assert_non_null(
        strstr(sbuf_str(&cl.in), "X-Accepted-Stream-Protocol-Versions: v4.channel.k8s.io"));
    client_close(&cl);

    /* Upgraded, but the streams never come: closed after the creation deadline. */
    client_open(&cl, &pki.alice, pki.ca);
    assert_int_equal(request(&cl, "POST", "/exec/ns/web/echo?command=cat&output=1", upgrade, &body),
                     101);
    run_until(&cl.closed, WAIT_MS);
    assert_true(cl.closed);
    assert_int_equal(t.exec_closed, 2);
    client_close(&cl);
    sbuf_done(&body);
}

/* A request head sent a byte every 400 ms (never idle for the idle timeout) is cut off when the
 * request deadline passes, while another client is served. */
static void test_head_deadline(void **state)
{
    static const char head[] = "GET /containerLogs/ns/web/small HTTP/1.1\r\nHost: x\r\nX-Slow: yes";
    struct kla_server_stats st;
    struct client slow, other;
    struct sbuf body;
    uint64_t t0;
    size_t i;

    (void)state;
    sbuf_init(&body, 1 << 20);
    client_open(&slow, &pki.alice, pki.ca);
    client_open(&other, &pki.alice, pki.ca);
    t0 = uv_now(&t.loop);
    for (i = 0; i < sizeof(head) - 1 && !slow.closed; i++) {
        assert_int_equal(kla_conn_write(slow.c, head + i, 1), 0);
        if (i == 1)
            assert_int_equal(request(&other, "GET", "/containerLogs/ns/web/small", NULL, &body),
                             200);
        run_for(400);
    }
    /* Closed by the deadline: not before it, and while bytes were still coming (the head, never
     * complete, lasts 25 s at this pace). No upper bound in time: a busy machine delays ticks. */
    assert_true(slow.closed);
    if (uv_now(&t.loop) - t0 < 1500)
        fail_msg("closed after %llu ms, before the deadline of 1.5 s",
                 (unsigned long long)(uv_now(&t.loop) - t0));
    if (i >= sizeof(head) - 1)
        fail_msg("closed only after the whole head was sent (%llu ms)",
                 (unsigned long long)(uv_now(&t.loop) - t0));
    kla_server_stats(t.srv, &st);
    assert_int_equal(st.head_timeouts, 1);
    client_close(&slow);
    client_close(&other);
    sbuf_done(&body);
    handshake_ms = 0;
}

static int setup_short_deadline(void **state)
{
    handshake_ms = 1500;
    return setup_server(state);
}

static int closed_count(const struct client *cl, int n)
{
    int closed = 0;

    for (int i = 0; i < n; i++)
        closed += cl[i].closed;
    return closed;
}

static void test_connection_limit(void **state)
{
    struct client cl[8];
    struct sbuf body;
    int closed = 0;

    (void)state;
    sbuf_init(&body, 1 << 20);
    for (int i = 0; i < 8; i++)
        client_open(&cl[i], &pki.alice, pki.ca);
    RUN_UNTIL(closed_count(cl, 8) >= 2, WAIT_MS);
    run_for(200); /* and no third one */
    closed = closed_count(cl, 8);
    assert_int_equal(closed, 2); /* max_per_ip 6 */
    for (int i = 0; i < 8; i++)
        client_close(&cl[i]);
    sbuf_done(&body);
}

/* ---- the SAR authoriser against a fake API server ------------------------------------------ */

static struct {
    int reviews;
    struct httpd_request *held[4];
    int nheld;
    bool hold;
} api;

static void answer_review(struct httpd_request *req)
{
    size_t len;
    const char *body = httpd_req_body(req, &len);
    json_t *o = json_loadb(body, len, 0, NULL), *spec = json_object_get(o, "spec");
    const char *user = json_string_value(json_object_get(spec, "user"));
    json_t *ra = json_object_get(spec, "resourceAttributes");
    bool allowed = user && strncmp(user, "ok-", 3) == 0 &&
                   strcmp(json_string_value(json_object_get(ra, "resource")), "nodes") == 0 &&
                   strcmp(json_string_value(json_object_get(ra, "subresource")), "proxy") == 0;
    char out[256];

    snprintf(out, sizeof(out),
             "{\"kind\":\"SubjectAccessReview\",\"status\":{\"allowed\":%s,\"reason\":\"%s\"}}",
             allowed ? "true" : "false", allowed ? "rbac" : "no rule");
    httpd_respond(req, 201, "application/json", out, strlen(out));
    json_decref(o);
}

static void on_review(struct httpd_request *req, void *data)
{
    (void)data;
    api.reviews++;
    if (api.hold && api.nheld < 4) {
        api.held[api.nheld++] = req;
        return;
    }
    answer_review(req);
}

struct decision {
    int n, last;
    char reason[64];
};

static void on_decision(int decision, const char *reason, void *data)
{
    struct decision *d = data;

    d->n++;
    d->last = decision;
    snprintf(d->reason, sizeof(d->reason), "%s", reason ? reason : "");
}

static void test_sar(void **state)
{
    struct httpd_server *h;
    struct httpd_options ho = {.addr = "127.0.0.1:0"};
    struct kc_config kc = {0};
    struct kapi_client *c;
    struct kla_sar *sar;
    struct kla_sar_options so = {.deny_ttl_ms = 150, .max_entries = 2};
    struct kla_authorizer az;
    struct kla_user u1 = {.name = "ok-1", .ngroups = 0}, bad = {.name = "bad"},
                    u2 = {.name = "ok-2"}, u3 = {.name = "ok-3"};
    struct kla_authz_attrs a = {.user = &u1, .verb = "get", .node = "n1", .subresource = "proxy"};
    struct decision d1 = {0}, d2 = {0}, d3 = {0};
    void *handle;
    char server[64], err[128];
    uint64_t reviews, hits;
    size_t entries;

    (void)state;
    memset(&api, 0, sizeof(api));
    uv_loop_init(&t.loop);
    assert_int_equal(httpd_new(&t.loop, &ho, &h), 0);
    assert_int_equal(httpd_route(h, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                                 65536, on_review, NULL),
                     0);
    assert_int_equal(httpd_start(h, err, sizeof(err)), 0);
    snprintf(server, sizeof(server), "http://127.0.0.1:%u", httpd_port(h));
    kc.server = server;
    kc.namespace = "default";
    assert_int_equal(kapi_client_new(&t.loop, &kc, NULL, &c), 0);
    assert_int_equal(kla_sar_new(c, &so, &sar), 0);
    az = kla_sar_authorizer(sar);

    /* allowed, then from the cache */
    assert_int_equal(az.check(az.impl, &a, on_decision, &d1, &handle), 0);
    while (d1.n == 0)
        uv_run(&t.loop, UV_RUN_ONCE);
    assert_int_equal(d1.last, 0);
    assert_int_equal(api.reviews, 1);
    assert_int_equal(az.check(az.impl, &a, on_decision, &d1, &handle), 0);
    assert_int_equal(d1.n, 2); /* answered at once */
    assert_null(handle);
    assert_int_equal(api.reviews, 1);
    /* another node is another question */
    a.node = "n2";
    assert_int_equal(az.check(az.impl, &a, on_decision, &d1, &handle), 0);
    while (d1.n == 2)
        uv_run(&t.loop, UV_RUN_ONCE);
    assert_int_equal(api.reviews, 2);
    /* denied, cached for deny_ttl only */
    a.user = &bad;
    assert_int_equal(az.check(az.impl, &a, on_decision, &d2, &handle), 0);
    while (d2.n == 0)
        uv_run(&t.loop, UV_RUN_ONCE);
    assert_int_equal(d2.last, -EPERM);
    assert_string_equal(d2.reason, "no rule");
    assert_int_equal(az.check(az.impl, &a, on_decision, &d2, &handle), 0);
    assert_int_equal(d2.n, 2);
    assert_int_equal(api.reviews, 3);
    run_for(200);
    assert_int_equal(az.check(az.impl, &a, on_decision, &d2, &handle), 0);
    while (d2.n == 2)
        uv_run(&t.loop, UV_RUN_ONCE);
    assert_int_equal(api.reviews, 4);
    kla_sar_stats(sar, &reviews, &hits, &entries);
    assert_int_equal(reviews, 4);
    assert_int_equal(hits, 2);
    assert_int_equal(entries, 2); /* max_entries: the least recently used went */
    /* one review for concurrent identical questions; a cancelled waiter is not called */
    api.hold = true;
    a.user = &u2;
    memset(&d1, 0, sizeof(d1));
    memset(&d2, 0, sizeof(d2));
    memset(&d3, 0, sizeof(d3));
    assert_int_equal(az.check(az.impl, &a, on_decision, &d1, &handle), 0);
    assert_int_equal(az.check(az.impl, &a, on_decision, &d2, &handle), 0);
    az.cancel(az.impl, handle);
    a.user = &u3;
    assert_int_equal(az.check(az.impl, &a, on_decision, &d3, &handle), 0);
    while (api.nheld < 2)
        uv_run(&t.loop, UV_RUN_ONCE);
    assert_int_equal(api.reviews, 6); /* u2 once, u3 once */
    for (int i = 0; i < api.nheld; i++)
        answer_review(api.held[i]);
    while (d1.n == 0 || d3.n == 0)
        uv_run(&t.loop, UV_RUN_ONCE);
    assert_int_equal(d1.n, 1);
    assert_int_equal(d2.n, 0);
    assert_int_equal(d1.last, 0);
    /* the cache holds 2: u1/n1 (used longest ago) was evicted */
    api.hold = false;
    a.user = &u1;
    a.node = "n1";
    memset(&d1, 0, sizeof(d1));
    assert_int_equal(az.check(az.impl, &a, on_decision, &d1, &handle), 0);
    while (d1.n == 0)
        uv_run(&t.loop, UV_RUN_ONCE);
    assert_int_equal(api.reviews, 7);
    /* a pending review when the authoriser goes: no callback */
    a.user = &u2;
    a.node = "n9";
    memset(&d1, 0, sizeof(d1));
    assert_int_equal(az.check(az.impl, &a, on_decision, &d1, &handle), 0);
    kla_sar_free(sar);
    run_for(200);
    assert_int_equal(d1.n, 0);
    kapi_client_close(c);
    httpd_close(h, NULL, NULL);
    while (uv_run(&t.loop, UV_RUN_NOWAIT))
        ;
    run_for(100);
    assert_int_equal(uv_loop_close(&t.loop), 0);
}

static void test_sar_key(void **state)
{
    struct kla_user a = {.name = "x\ny", .ngroups = 1}, b = {.name = "x", .ngroups = 2};
    struct kla_authz_attrs qa = {.user = &a, .verb = "get", .node = NULL, .subresource = "proxy"};
    struct kla_authz_attrs qb = {.user = &b, .verb = "get", .node = NULL, .subresource = "proxy"};
    char ka[512], kb[512];

    (void)state;
    snprintf(a.groups[0], sizeof(a.groups[0]), "g");
    snprintf(b.groups[0], sizeof(b.groups[0]), "y");
    snprintf(b.groups[1], sizeof(b.groups[1]), "g");
    /* "x\ny" with group g must not read as user x with groups y, g */
    assert_true(kla_sar_key(&qa, ka, sizeof(ka)) > 0);
    assert_true(kla_sar_key(&qb, kb, sizeof(kb)) > 0);
    assert_string_not_equal(ka, kb);
    assert_string_equal(ka, "x\\ny\nget\ng\nproxy\n*");
    assert_int_equal(kla_sar_key(&qa, ka, 5), -ENAMETOOLONG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_authentication, setup_server, teardown_server),
        cmocka_unit_test_setup_teardown(test_requests, setup_server, teardown_server),
        cmocka_unit_test_setup_teardown(test_async_authz_cancel, setup_server, teardown_server),
        cmocka_unit_test_setup_teardown(test_streaming_backpressure, setup_server, teardown_server),
        cmocka_unit_test_setup_teardown(test_exec, setup_server, teardown_server),
        cmocka_unit_test_setup_teardown(test_connection_limit, setup_server, teardown_server),
        cmocka_unit_test_setup_teardown(test_head_deadline, setup_short_deadline, teardown_server),
        cmocka_unit_test(test_sar),
        cmocka_unit_test(test_sar_key),
    };

    return cmocka_run_group_tests(tests, setup_pki, teardown_pki);
}
