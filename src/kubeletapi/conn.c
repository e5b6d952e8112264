/* kla_conn: see conn.h.
 *
 * Handles: the TCP handle and one timer (deadlines: TLS handshake, idle, lingering close) and a
 * second timer used as a "soon" callback (resuming a paused reader decrypts what is already
 * buffered from the loop, never from inside the caller). The connection is freed when both are
 * closed, right after the `closed` callback. */
#include "kubeletapi/conn.h"

#include "common/strutil.h"
#include "common/xalloc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>

#define READ_BUF       (16u * 1024 + 512)
#define LINGER_MS      5000
#define DEF_HIGH_WATER (256u << 10)
#define DEF_HARD_LIMIT (8u << 20)
#define DEF_HANDSHAKE  10000

struct wreq {
    uv_write_t req;
    struct kla_conn *c;
    size_t len;
    char data[];
};

struct kla_conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    uv_timer_t soon;
    uv_connect_t connect_req;
    uv_shutdown_t shutdown_req;
    SSL *ssl;
    BIO *rbio, *wbio;
    struct kla_conn_ops ops;
    void *data;
    struct kla_conn_limits lim;
    size_t queued;     /* ciphertext handed to uv_write and not yet written */
    struct sbuf early; /* client: plaintext written before the handshake finished */
    bool server;
    bool connected;   /* TCP is up (always for accepted connections) */
    bool established; /* TLS handshake done */
    bool paused, reading;
    bool sock_eof; /* the socket reported EOF */
    bool eof_delivered;
    bool want_drain;
    bool shutting_down, half_closed, lingering;
    bool closing;
    int close_err;
    int open_handles;
    uint64_t last_activity;
    uint64_t linger_deadline;
    char peer_ip[INET6_ADDRSTRLEN];
    char tls_err[160];
    char rdbuf[READ_BUF];
    char plain[READ_BUF];
};

static void process_input(struct kla_conn *c);
static void arm_timer(struct kla_conn *c);
static void start_reading(struct kla_conn *c);

/* Keeps OpenSSL's reason of a TLS failure for the owner's logs. */
static void tls_failed(struct kla_conn *c)
{
    unsigned long e = ERR_peek_last_error();

    if (e && !c->tls_err[0])
        ERR_error_string_n(e, c->tls_err, sizeof(c->tls_err));
    if (!c->tls_err[0] && SSL_get_verify_result(c->ssl) != X509_V_OK)
        snprintf(c->tls_err, sizeof(c->tls_err), "certificate verification failed: %s",
                 X509_verify_cert_error_string(SSL_get_verify_result(c->ssl)));
    ERR_clear_error();
}

/* ---- teardown ------------------------------------------------------------------------------ */

static void on_handle_closed(uv_handle_t *h)
{
    struct kla_conn *c = h->data;

    if (--c->open_handles > 0)
        return;
    if (c->ops.closed)
        c->ops.closed(c, c->close_err, c->data);
    SSL_free(c->ssl); /* frees both BIOs */
    sbuf_done(&c->early);
    x_free(c);
}

void kla_conn_close(struct kla_conn *c, int err)
{
    if (!c || c->closing)
        return;
    c->closing = true;
    c->close_err = err;
    uv_read_stop((uv_stream_t *)&c->tcp);
    uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
    uv_close((uv_handle_t *)&c->timer, on_handle_closed);
    uv_close((uv_handle_t *)&c->soon, on_handle_closed);
}

bool kla_conn_closing(const struct kla_conn *c)
{
    return c->closing;
}

/* ---- output -------------------------------------------------------------------------------- */

static void on_written(uv_write_t *req, int status)
{
    struct wreq *w = (struct wreq *)req;
    struct kla_conn *c = w->c;

    c->queued -= w->len;
    x_free(w);
    if (c->closing)
        return;
    if (status < 0) {
        kla_conn_close(c, -ECONNRESET);
        return;
    }
    c->last_activity = uv_now(c->tcp.loop);
    if (c->shutting_down && !c->half_closed && c->queued == 0) {
        /* Everything (close_notify included) is out: half-close, then linger. */
        c->half_closed = true;
        uv_shutdown(&c->shutdown_req, (uv_stream_t *)&c->tcp, NULL);
        c->lingering = true;
        c->linger_deadline = uv_now(c->tcp.loop) + LINGER_MS;
        arm_timer(c);
        return;
    }
    if (c->want_drain && c->queued <= c->lim.high_water / 2) {
        c->want_drain = false;
        if (c->ops.drain && !c->shutting_down)
            c->ops.drain(c, c->data);
    }
}

/* Moves the ciphertext OpenSSL produced to the socket. */
static int flush(struct kla_conn *c)
{
    size_t pending;

    while (!c->closing && c->connected && (pending = BIO_ctrl_pending(c->wbio)) > 0) {
        struct wreq *w = x_malloc(sizeof(*w) + pending);
        uv_buf_t b;
        int n;

        if (!w) {
            kla_conn_close(c, -ENOMEM);
            return -ENOMEM;
        }
        n = BIO_read(c->wbio, w->data, (int)pending);
        if (n <= 0) {
            x_free(w);
            break;
        }
        w->c = c;
        w->len = (size_t)n;
        b = uv_buf_init(w->data, (unsigned)n);
        c->queued += (size_t)n;
        if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_written) < 0) {
            c->queued -= (size_t)n;
            x_free(w);
            kla_conn_close(c, -ECONNRESET);
            return -ECONNRESET;
        }
    }
    return 0;
}

static int write_plain(struct kla_conn *c, const void *buf, size_t len)
{
    const char *p = buf;

    while (len > 0) {
        int chunk = len > (1u << 30) ? 1 << 30 : (int)len;
        int n = SSL_write(c->ssl, p, chunk);

        if (n <= 0) {
            kla_conn_close(c, -EPROTO);
            return -EPIPE;
        }
        p += n;
        len -= (size_t)n;
    }
    return flush(c);
}

int kla_conn_write(struct kla_conn *c, const void *buf, size_t len)
{
    if (c->closing || c->shutting_down)
        return -EPIPE;
    if (c->queued + len + sbuf_len(&c->early) > c->lim.hard_limit) {
        kla_conn_close(c, -ENOBUFS);
        return -ENOBUFS;
    }
    if (len == 0)
        return 0;
    c->last_activity = uv_now(c->tcp.loop);
    if (!c->established) {
        if (sbuf_add(&c->early, buf, len) < 0) {
            kla_conn_close(c, -ENOBUFS);
            return -ENOBUFS;
        }
        return 0;
    }
    if (write_plain(c, buf, len) < 0)
        return -EPIPE;
    if (c->queued > c->lim.high_water)
        c->want_drain = true;
    return 0;
}

bool kla_conn_writable(const struct kla_conn *c)
{
    return !c->closing && !c->shutting_down && c->queued + sbuf_len(&c->early) <= c->lim.high_water;
}

size_t kla_conn_queued(const struct kla_conn *c)
{
    return c->queued + sbuf_len(&c->early);
}

void kla_conn_shutdown(struct kla_conn *c)
{
    if (c->closing || c->shutting_down)
        return;
    c->shutting_down = true;
    if (!c->established) {
        kla_conn_close(c, 0);
        return;
    }
    (void)SSL_shutdown(c->ssl); /* queues close_notify */
    if (flush(c) < 0)
        return;
    /* Keep reading (and dropping) while the last bytes go out. */
    if (c->paused) {
        c->paused = false;
        if (!c->sock_eof)
            start_reading(c);
    }
    if (c->queued == 0 && !c->half_closed) {
        c->half_closed = true;
        uv_shutdown(&c->shutdown_req, (uv_stream_t *)&c->tcp, NULL);
        c->lingering = true;
        c->linger_deadline = uv_now(c->tcp.loop) + LINGER_MS;
    }
    arm_timer(c);
}

/* ---- input --------------------------------------------------------------------------------- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct kla_conn *c = h->data;

    (void)suggested;
    *buf = uv_buf_init(c->rdbuf, sizeof(c->rdbuf));
}

static void deliver_eof(struct kla_conn *c)
{
    if (c->eof_delivered || c->closing)
        return;
    c->eof_delivered = true;
    if (c->shutting_down) {
        kla_conn_close(c, 0);
        return;
    }
    if (c->ops.data)
        c->ops.data(c, "", 0, c->data);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct kla_conn *c = s->data;

    (void)buf;
    if (c->closing)
        return;
    if (n == 0)
        return;
    if (n < 0) {
        uv_read_stop(s);
        c->reading = false;
        c->sock_eof = true;
        if (c->lingering || c->shutting_down) {
            kla_conn_close(c, 0);
            return;
        }
        if (n == UV_EOF) {
            /* Decrypt what is still buffered first, then report the end. */
            process_input(c);
            if (!c->closing && !c->paused)
                deliver_eof(c);
            if (!c->closing && !c->established)
                kla_conn_close(c, -ECONNRESET);
            return;
        }
        kla_conn_close(c, -ECONNRESET);
        return;
    }
    c->last_activity = uv_now(c->tcp.loop);
    if (c->lingering)
        return; /* dropped */
    if (BIO_write(c->rbio, c->rdbuf, (int)n) != (int)n) {
        kla_conn_close(c, -ENOMEM);
        return;
    }
    process_input(c);
}

static void start_reading(struct kla_conn *c)
{
    if (!c->reading && !c->closing && !c->sock_eof &&
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0)
        c->reading = true;
}

static void process_input(struct kla_conn *c)
{
    if (c->closing)
        return;
    if (!c->established) {
        int r = SSL_do_handshake(c->ssl);

        if (r != 1) {
            int e = SSL_get_error(c->ssl, r);

            flush(c);
            if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
                tls_failed(c);
                kla_conn_close(c, -EPROTO);
            }
            return;
        }
        c->established = true;
        arm_timer(c);
        if (flush(c) < 0)
            return;
        if (c->ops.ready)
            c->ops.ready(c, c->data);
        if (c->closing)
            return;
        if (sbuf_len(&c->early) > 0) {
            struct sbuf e = c->early;

            sbuf_init(&c->early, c->lim.hard_limit);
            if (write_plain(c, e.buf, e.len) < 0) {
                sbuf_done(&e);
                return;
            }
            sbuf_done(&e);
            if (c->queued > c->lim.high_water)
                c->want_drain = true;
        }
    }
    while (!c->paused && !c->closing) {
        int n = SSL_read(c->ssl, c->plain, sizeof(c->plain));

        if (n > 0) {
            if (c->shutting_down)
                continue; /* dropped: we are closing */
            if (c->ops.data)
                c->ops.data(c, c->plain, (size_t)n, c->data);
            continue;
        }
        switch (SSL_get_error(c->ssl, n)) {
        case SSL_ERROR_WANT_READ:
        case SSL_ERROR_WANT_WRITE:
            flush(c);
            return;
        case SSL_ERROR_ZERO_RETURN: /* close_notify */
            flush(c);
            deliver_eof(c);
            return;
        default:
            tls_failed(c);
            kla_conn_close(c, -EPROTO);
            return;
        }
    }
    if (!c->closing)
        flush(c);
}

static void on_soon(uv_timer_t *t)
{
    struct kla_conn *c = t->data;

    if (c->closing || c->paused)
        return;
    process_input(c);
    if (c->closing || c->paused)
        return;
    if (c->sock_eof)
        deliver_eof(c);
    else
        start_reading(c);
}

void kla_conn_pause(struct kla_conn *c, bool pause)
{
    if (c->closing || c->paused == pause)
        return;
    c->paused = pause;
    if (pause) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
        return;
    }
    /* Resume from the loop: what is already buffered is decrypted first. */
    uv_timer_start(&c->soon, on_soon, 0, 0);
}

/* ---- timers -------------------------------------------------------------------------------- */

static void on_timer(uv_timer_t *t)
{
    struct kla_conn *c = t->data;
    uint64_t now = uv_now(t->loop);

    if (c->closing)
        return;
    if (c->lingering) {
        if (now >= c->linger_deadline) {
            kla_conn_close(c, 0);
            return;
        }
    } else if (!c->established) {
        kla_conn_close(c, -ETIMEDOUT);
        return;
    } else if (c->lim.idle_ms && now - c->last_activity >= c->lim.idle_ms) {
        kla_conn_close(c, -ETIMEDOUT);
        return;
    }
    arm_timer(c);
}

static void arm_timer(struct kla_conn *c)
{
    uint64_t now = uv_now(c->tcp.loop), due;

    if (c->closing)
        return;
    if (c->lingering)
        due = c->linger_deadline > now ? c->linger_deadline - now : 0;
    else if (!c->established)
        due = c->lim.handshake_ms;
    else if (c->lim.idle_ms)
        due = c->last_activity + c->lim.idle_ms > now ? c->last_activity + c->lim.idle_ms - now : 0;
    else {
        uv_timer_stop(&c->timer);
        return;
    }
    /* The handshake deadline is set once; re-arming it would extend it. */
    if (!c->established && !c->lingering && uv_is_active((uv_handle_t *)&c->timer))
        return;
    uv_timer_start(&c->timer, on_timer, due, 0);
}

void kla_conn_set_idle(struct kla_conn *c, uint64_t ms)
{
    c->lim.idle_ms = ms;
    c->last_activity = uv_now(c->tcp.loop);
    if (c->established)
        arm_timer(c);
}

void kla_conn_set_ops(struct kla_conn *c, const struct kla_conn_ops *ops, void *data)
{
    c->ops = *ops;
    c->data = data;
}

/* ---- creation ------------------------------------------------------------------------------ */

static struct kla_conn *conn_alloc(uv_loop_t *loop, SSL_CTX *ctx, const struct kla_conn_limits *lim,
                                   const struct kla_conn_ops *ops, void *data)
{
    struct kla_conn *c = x_calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    c->lim = lim ? *lim : (struct kla_conn_limits){0};
    if (!c->lim.high_water)
        c->lim.high_water = DEF_HIGH_WATER;
    if (!c->lim.hard_limit)
        c->lim.hard_limit = DEF_HARD_LIMIT;
    if (!c->lim.handshake_ms)
        c->lim.handshake_ms = DEF_HANDSHAKE;
    sbuf_init(&c->early, c->lim.hard_limit);
    c->ops = *ops;
    c->data = data;
    c->ssl = SSL_new(ctx);
    c->rbio = BIO_new(BIO_s_mem());
    c->wbio = BIO_new(BIO_s_mem());
    if (!c->ssl || !c->rbio || !c->wbio) {
        SSL_free(c->ssl);
        BIO_free(c->rbio);
        BIO_free(c->wbio);
        x_free(c);
        return NULL;
    }
    BIO_set_mem_eof_return(c->rbio, -1);
    SSL_set_bio(c->ssl, c->rbio, c->wbio);
    SSL_set_mode(c->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    uv_tcp_init(loop, &c->tcp);
    uv_timer_init(loop, &c->timer);
    uv_timer_init(loop, &c->soon);
    c->tcp.data = c->timer.data = c->soon.data = c;
    c->open_handles = 3;
    c->last_activity = uv_now(loop);
    return c;
}

static void record_peer(struct kla_conn *c)
{
    struct sockaddr_storage ss;
    int len = sizeof(ss);

    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) != 0)
        return;
    if (ss.ss_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, c->peer_ip, sizeof(c->peer_ip));
    else if (ss.ss_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, c->peer_ip,
                  sizeof(c->peer_ip));
}

static void free_handle(uv_handle_t *h)
{
    x_free(h);
}

int kla_conn_accept(uv_stream_t *server, SSL_CTX *ctx, const struct kla_conn_limits *lim,
                    const struct kla_conn_ops *ops, void *data, struct kla_conn **ret)
{
    struct kla_conn *c = conn_alloc(server->loop, ctx, lim, ops, data);

    if (!c) {
        /* Take the connection off the backlog and drop it. */
        uv_tcp_t *t = x_malloc(sizeof(*t));

        if (t) {
            uv_tcp_init(server->loop, t);
            (void)uv_accept(server, (uv_stream_t *)t);
            uv_close((uv_handle_t *)t, free_handle);
        }
        return -ENOMEM;
    }
    c->server = true;
    c->connected = true;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0) {
        c->ops = (struct kla_conn_ops){0}; /* an error return: no callback */
        kla_conn_close(c, -ECONNABORTED);
        return -ECONNABORTED;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    record_peer(c);
    SSL_set_accept_state(c->ssl);
    start_reading(c);
    arm_timer(c);
    *ret = c;
    return 0;
}

static void on_connect(uv_connect_t *req, int status)
{
    struct kla_conn *c = req->data;

    if (c->closing)
        return;
    if (status < 0) {
        kla_conn_close(c, status == UV_ETIMEDOUT ? -ETIMEDOUT : -ECONNREFUSED);
        return;
    }
    c->connected = true;
    uv_tcp_nodelay(&c->tcp, 1);
    record_peer(c);
    start_reading(c);
    process_input(c); /* sends the ClientHello */
}

int kla_conn_connect(uv_loop_t *loop, const struct sockaddr *addr, SSL_CTX *ctx,
                     const char *server_name, const char *verify_name,
                     const struct kla_conn_limits *lim, const struct kla_conn_ops *ops, void *data,
                     struct kla_conn **ret)
{
    struct kla_conn *c = conn_alloc(loop, ctx, lim, ops, data);
    unsigned char addrbuf[16];
    bool is_ip;
    int r;

    if (!c)
        return -ENOMEM;
    SSL_set_connect_state(c->ssl);
    is_ip = server_name && (inet_pton(AF_INET, server_name, addrbuf) == 1 ||
                            inet_pton(AF_INET6, server_name, addrbuf) == 1);
    if (server_name && !is_ip && SSL_set_tlsext_host_name(c->ssl, server_name) != 1)
        goto fail;
    if (verify_name) {
        X509_VERIFY_PARAM *vp = SSL_get0_param(c->ssl);

        if (inet_pton(AF_INET, verify_name, addrbuf) == 1 ||
            inet_pton(AF_INET6, verify_name, addrbuf) == 1) {
            if (X509_VERIFY_PARAM_set1_ip_asc(vp, verify_name) != 1)
                goto fail;
        } else if (X509_VERIFY_PARAM_set1_host(vp, verify_name, 0) != 1) {
            goto fail;
        }
        SSL_set_verify(c->ssl, SSL_VERIFY_PEER, NULL);
    } else {
        SSL_set_verify(c->ssl, SSL_VERIFY_NONE, NULL);
    }
    c->connect_req.data = c;
    r = uv_tcp_connect(&c->connect_req, &c->tcp, addr, on_connect);
    if (r < 0) {
        c->ops = (struct kla_conn_ops){0}; /* an error return: no callback */
        kla_conn_close(c, r);
        return r;
    }
    arm_timer(c);
    *ret = c;
    return 0;
fail:
    c->ops = (struct kla_conn_ops){0};
    kla_conn_close(c, -EINVAL);
    return -EINVAL;
}

X509 *kla_conn_peer_cert(const struct kla_conn *c)
{
    return SSL_get0_peer_certificate(c->ssl);
}

STACK_OF(X509) * kla_conn_peer_chain(const struct kla_conn *c)
{
    return SSL_get_peer_cert_chain(c->ssl);
}

const char *kla_conn_peer_ip(const struct kla_conn *c)
{
    return c->peer_ip;
}

const char *kla_conn_tls_error(const struct kla_conn *c)
{
    return c->tls_err;
}
