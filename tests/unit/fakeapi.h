/* fakeapi: a small HTTP/1.1 server on a test's libuv loop, for unit tests that play the API server
 * (test-kapi.c, test-informer.c). It listens on 127.0.0.1 (a port of the system's choosing), reads
 * one request per connection (the headers and the body Content-Length announces, at most
 * FAKEAPI_REQ_MAX bytes) and hands it to the test's answer function, which either replies with
 * fakeapi_reply (the connection closes once the reply is written) or does not (the connection
 * stays open, e.g. a watch that never sends anything, until fakeapi_stop). Header-only: each test
 * is one executable. */
#ifndef CLIQO_TESTS_FAKEAPI_H
#define CLIQO_TESTS_FAKEAPI_H

#include <stdlib.h>
#include <string.h>
#include <uv.h>

#define FAKEAPI_REQ_MAX 8192

struct fakeapi;

struct fakeapi_conn {
    uv_tcp_t tcp;
    struct fakeapi *srv;
    char buf[FAKEAPI_REQ_MAX];
    size_t len;
    uv_write_t w;
    char *out;
    struct fakeapi_conn *next;
};

/* request: the whole request, NUL-terminated, valid during the call. */
typedef void (*fakeapi_answer_fn)(struct fakeapi_conn *c, const char *request, void *data);

struct fakeapi {
    uv_loop_t *loop;
    uv_tcp_t tcp;
    int port;
    fakeapi_answer_fn answer;
    void *data;
    struct fakeapi_conn *conns; /* open connections */
};

static inline void fakeapi__closed(uv_handle_t *h)
{
    struct fakeapi_conn *c = h->data;

    free(c->out);
    free(c);
}

static inline void fakeapi__close(struct fakeapi_conn *c)
{
    for (struct fakeapi_conn **pp = &c->srv->conns; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    uv_close((uv_handle_t *)&c->tcp, fakeapi__closed);
}

static inline void fakeapi__written(uv_write_t *w, int status)
{
    (void)status;
    fakeapi__close(w->data);
}

/* Sends text (copied) as the whole reply, then closes the connection. */
static inline void fakeapi_reply(struct fakeapi_conn *c, const char *text)
{
    uv_buf_t b;

    c->out = strdup(text);
    if (!c->out) {
        fakeapi__close(c);
        return;
    }
    b = uv_buf_init(c->out, (unsigned)strlen(c->out));
    c->w.data = c;
    uv_write(&c->w, (uv_stream_t *)&c->tcp, &b, 1, fakeapi__written);
}

/* Sends len bytes (copied; binary, NULs included) as the whole reply, then closes the connection.
 */
static inline void fakeapi_reply_n(struct fakeapi_conn *c, const void *data, size_t len)
{
    uv_buf_t b;

    c->out = malloc(len ? len : 1);
    if (!c->out) {
        fakeapi__close(c);
        return;
    }
    memcpy(c->out, data, len);
    b = uv_buf_init(c->out, (unsigned)len);
    c->w.data = c;
    uv_write(&c->w, (uv_stream_t *)&c->tcp, &b, 1, fakeapi__written);
}

/* A whole request (headers, and the body Content-Length announces): 1; more to read: 0. */
static inline int fakeapi__complete(struct fakeapi_conn *c)
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

static inline void fakeapi__alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    struct fakeapi_conn *c = h->data;

    (void)hint;
    *b = uv_buf_init(c->buf + c->len, (unsigned)(FAKEAPI_REQ_MAX - 1 - c->len));
}

static inline void fakeapi__read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
    struct fakeapi_conn *c = st->data;

    (void)b;
    if (n < 0 || c->len + (size_t)n >= FAKEAPI_REQ_MAX - 1) {
        fakeapi__close(c);
        return;
    }
    c->len += (size_t)n;
    if (fakeapi__complete(c)) {
        uv_read_stop(st);
        c->srv->answer(c, c->buf, c->srv->data);
    }
}

static inline void fakeapi__accept(uv_stream_t *l, int status)
{
    struct fakeapi *s = l->data;
    struct fakeapi_conn *c = status == 0 ? calloc(1, sizeof(*c)) : NULL;

    if (!c)
        return;
    c->srv = s;
    uv_tcp_init(s->loop, &c->tcp);
    c->tcp.data = c;
    c->next = s->conns;
    s->conns = c;
    if (uv_accept(l, (uv_stream_t *)&c->tcp) < 0) {
        fakeapi__close(c);
        return;
    }
    uv_read_start((uv_stream_t *)&c->tcp, fakeapi__alloc, fakeapi__read);
}

/* 0, or a libuv error. */
static inline int fakeapi_start(struct fakeapi *s, uv_loop_t *loop, fakeapi_answer_fn answer,
                                void *data)
{
    struct sockaddr_in a;
    struct sockaddr_storage got;
    int len = sizeof(got), r;

    memset(s, 0, sizeof(*s));
    s->loop = loop;
    s->answer = answer;
    s->data = data;
    uv_tcp_init(loop, &s->tcp);
    s->tcp.data = s;
    uv_ip4_addr("127.0.0.1", 0, &a);
    r = uv_tcp_bind(&s->tcp, (const struct sockaddr *)&a, 0);
    if (r == 0)
        r = uv_listen((uv_stream_t *)&s->tcp, 64, fakeapi__accept);
    if (r == 0)
        r = uv_tcp_getsockname(&s->tcp, (struct sockaddr *)&got, &len);
    if (r == 0)
        s->port = ntohs(((struct sockaddr_in *)&got)->sin_port);
    return r;
}

/* Closes the open connections and the listener. */
static inline void fakeapi_stop(struct fakeapi *s)
{
    while (s->conns)
        fakeapi__close(s->conns);
    uv_close((uv_handle_t *)&s->tcp, NULL);
    uv_run(s->loop, UV_RUN_NOWAIT);
}

#endif
