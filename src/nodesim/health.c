/* nodesim health endpoint: a minimal HTTP/1.x responder on the loop for the local environment's
 * supervision (`cliqoctl dev status`). GET /healthz answers 200 "ok" once every node is registered
 * and the pod informer has synced, 503 before. Requests are bounded (MAX_REQ bytes, MAX_CONNS
 * connections at once); one request per connection. */
#include "nodesim/sim.h"

#include "common/log.h"
#include "common/xalloc.h"

#include <errno.h>
#include <string.h>

#define MOD       "nodesim"
#define MAX_REQ   2048
#define MAX_CONNS 32

struct conn {
    uv_tcp_t tcp;
    uv_write_t wr;
    struct ns_health *h;
    struct conn *prev, *next;
    size_t len;
    bool answered;
    char buf[MAX_REQ];
    char resp[160];
};

struct ns_health {
    struct ns_sim *sim;
    uv_tcp_t server;
    struct conn *conns;
    unsigned n_conns;
    bool closing, server_closed;
};

static void maybe_free(struct ns_health *h)
{
    if (h->closing && h->server_closed && h->n_conns == 0)
        x_free(h);
}

static void on_conn_closed(uv_handle_t *handle)
{
    struct conn *c = handle->data;
    struct ns_health *h = c->h;

    if (c->prev)
        c->prev->next = c->next;
    else
        h->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    h->n_conns--;
    x_free(c);
    maybe_free(h);
}

static void conn_close(struct conn *c)
{
    if (!uv_is_closing((uv_handle_t *)&c->tcp))
        uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

static void on_written(uv_write_t *req, int status)
{
    (void)status;
    conn_close(req->data);
}

static void answer(struct conn *c)
{
    const char *status = "404 Not Found", *body = "not found\n";
    uv_buf_t b;
    int n;

    c->answered = true;
    uv_read_stop((uv_stream_t *)&c->tcp);
    if (strncmp(c->buf, "GET /healthz ", 13) == 0 || strncmp(c->buf, "GET /healthz?", 13) == 0) {
        bool ok = ns_sim_ready(c->h->sim);
        status = ok ? "200 OK" : "503 Service Unavailable";
        body = ok ? "ok" : "starting";
    }
    n = snprintf(c->resp, sizeof(c->resp),
                 "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                 "Connection: close\r\n\r\n%s",
                 status, strlen(body), body);
    b = uv_buf_init(c->resp, (unsigned)n);
    c->wr.data = c;
    if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, &b, 1, on_written) < 0)
        conn_close(c);
}

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
    struct conn *c = handle->data;

    (void)suggested;
    *buf = uv_buf_init(c->buf + c->len, (unsigned)(sizeof(c->buf) - 1 - c->len));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct conn *c = s->data;

    (void)buf;
    if (c->answered)
        return;
    if (n < 0) {
        conn_close(c);
        return;
    }
    c->len += (size_t)n;
    c->buf[c->len] = '\0';
    if (strstr(c->buf, "\r\n\r\n") || strstr(c->buf, "\n\n") || c->len >= sizeof(c->buf) - 1)
        answer(c);
}

static void on_connection(uv_stream_t *server, int status)
{
    struct ns_health *h = server->data;
    struct conn *c;

    if (status < 0 || h->closing)
        return;
    c = x_calloc(1, sizeof(*c));
    if (!c)
        return;
    c->h = h;
    uv_tcp_init(server->loop, &c->tcp);
    c->tcp.data = c;
    c->next = h->conns;
    if (h->conns)
        h->conns->prev = c;
    h->conns = c;
    h->n_conns++;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0 || h->n_conns > MAX_CONNS ||
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0)
        conn_close(c);
}

static void on_server_closed(uv_handle_t *handle)
{
    struct ns_health *h = handle->data;

    h->server_closed = true;
    maybe_free(h);
}

int ns_health_start(struct ns_sim *sim, unsigned port, struct ns_health **ret)
{
    struct ns_health *h = x_calloc(1, sizeof(*h));
    struct sockaddr_in addr;
    int r;

    if (!h)
        return -ENOMEM;
    h->sim = sim;
    uv_tcp_init(sim->loop, &h->server);
    h->server.data = h;
    uv_ip4_addr("127.0.0.1", (int)port, &addr);
    r = uv_tcp_bind(&h->server, (const struct sockaddr *)&addr, 0);
    if (r == 0)
        r = uv_listen((uv_stream_t *)&h->server, 64, on_connection);
    if (r < 0) {
        h->closing = true;
        uv_close((uv_handle_t *)&h->server, on_server_closed);
        return r;
    }
    *ret = h;
    return 0;
}

void ns_health_close(struct ns_health *h)
{
    if (!h || h->closing)
        return;
    h->closing = true;
    for (struct conn *c = h->conns; c; c = c->next)
        conn_close(c);
    uv_close((uv_handle_t *)&h->server, on_server_closed);
}
