/* dnssd: unicast DNS-SD browse with c-ares on libuv (see dnssd.h). */
#include "discovery/dnssd.h"

#include <arpa/inet.h>
#include <ares.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>

#include "common/xalloc.h"

#define T_PTR_      12
#define T_SRV_      33
#define T_TXT_      16
#define C_IN_       1
#define TXT_BUF_MAX (DREC_TXT_TOTAL_MAX + DREC_TXT_ITEM_MAX + 1)

struct sock {
    uv_poll_t h;
    struct dnssd *d;
    ares_socket_t fd;
    struct sock *next;
};

struct dnssd {
    uv_loop_t *loop;
    ares_channel ch;
    bool ch_ready;
    uv_timer_t timer;
    struct sock *socks;
    unsigned handles; /* open uv handles (timer + sockets) */
    bool freeing;
    size_t max_instances;
};

/* An instance's TXT bytes live beside it. */
struct inst_store {
    struct dnssd_instance pub;
    unsigned char txtbuf[TXT_BUF_MAX];
};

struct dnssd_browse {
    struct dnssd *d;
    dnssd_cb cb;
    void *data;
    bool cancelled, ptr_done;
    unsigned pending;
    char service_domain[DREC_HOST_MAX + 2];
    struct dnssd_result res;
    struct inst_store *inst;
};

struct query {
    struct dnssd_browse *b;
    size_t idx;
    int type;
};

bool dnssd_server_valid(const char *s)
{
    char host[INET_ADDRSTRLEN + 1];
    struct in_addr a;
    const char *colon;
    size_t hl;

    if (!s || strnlen(s, DNSSD_SERVER_MAX + 1) > DNSSD_SERVER_MAX)
        return false;
    colon = strchr(s, ':');
    hl = colon ? (size_t)(colon - s) : strlen(s);
    if (hl == 0 || hl >= sizeof(host))
        return false;
    memcpy(host, s, hl);
    host[hl] = '\0';
    if (inet_pton(AF_INET, host, &a) != 1)
        return false;
    if (colon) {
        unsigned v = 0;
        size_t n = strlen(colon + 1);

        if (n == 0 || n > 5)
            return false;
        for (size_t i = 1; colon[i]; i++) {
            if (colon[i] < '0' || colon[i] > '9')
                return false;
            v = v * 10 + (unsigned)(colon[i] - '0');
        }
        if (v == 0 || v > 65535)
            return false;
    }
    return true;
}

/* ---- c-ares on the loop ----------------------------------------------------------------------
 */

static void handle_closed(struct dnssd *d)
{
    d->handles--;
    if (d->freeing && d->handles == 0)
        x_free(d);
}

static void sock_closed(uv_handle_t *h)
{
    struct sock *s = h->data;
    struct dnssd *d = s->d;

    x_free(s);
    handle_closed(d);
}

static void timer_closed(uv_handle_t *h)
{
    handle_closed(h->data);
}

static void reschedule(struct dnssd *d);

static void on_timer(uv_timer_t *h)
{
    struct dnssd *d = h->data;

    ares_process_fd(d->ch, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
    reschedule(d);
}

static void reschedule(struct dnssd *d)
{
    struct timeval tv, *t;

    if (!d->ch_ready || uv_is_closing((uv_handle_t *)&d->timer))
        return;
    t = ares_timeout(d->ch, NULL, &tv);
    if (!t) {
        uv_timer_stop(&d->timer);
        return;
    }
    uv_timer_start(&d->timer, on_timer,
                   (uint64_t)t->tv_sec * 1000 + (uint64_t)(t->tv_usec + 999) / 1000, 0);
}

static void on_sock(uv_poll_t *h, int status, int events)
{
    struct sock *s = h->data;
    struct dnssd *d = s->d;
    ares_socket_t fd = s->fd;

    if (status < 0)
        events = UV_READABLE | UV_WRITABLE; /* let c-ares find the error */
    ares_process_fd(d->ch, (events & UV_READABLE) ? fd : ARES_SOCKET_BAD,
                    (events & UV_WRITABLE) ? fd : ARES_SOCKET_BAD);
    reschedule(d);
}

static void sock_state(void *data, ares_socket_t fd, int readable, int writable)
{
    struct dnssd *d = data;
    struct sock *s, **pp;

    for (pp = &d->socks; (s = *pp); pp = &s->next)
        if (s->fd == fd)
            break;
    if (!readable && !writable) {
        if (s) {
            *pp = s->next;
            uv_close((uv_handle_t *)&s->h, sock_closed);
        }
        return;
    }
    if (!s) {
        s = x_calloc(1, sizeof(*s));
        if (!s)
            return; /* the query times out */
        if (uv_poll_init_socket(d->loop, &s->h, fd) < 0) {
            x_free(s);
            return;
        }
        s->h.data = s;
        s->d = d;
        s->fd = fd;
        s->next = d->socks;
        d->socks = s;
        d->handles++;
    }
    uv_poll_start(&s->h, (readable ? UV_READABLE : 0) | (writable ? UV_WRITABLE : 0), on_sock);
}

int dnssd_new(uv_loop_t *loop, const struct dnssd_options *o, struct dnssd **ret, char *err,
              size_t errlen)
{
    struct ares_options opts;
    struct dnssd *d;
    int e, mask;

    if (err && errlen)
        err[0] = '\0';
    if (!loop || !ret || (o && o->server && !dnssd_server_valid(o->server)))
        return -EINVAL;
    d = x_calloc(1, sizeof(*d));
    if (!d)
        return -ENOMEM;
    d->loop = loop;
    d->max_instances = o && o->max_instances ? o->max_instances : DNSSD_DEFAULT_MAX_INSTANCES;
    memset(&opts, 0, sizeof(opts));
    opts.sock_state_cb = sock_state;
    opts.sock_state_cb_data = d;
    opts.timeout = (int)(o && o->timeout_ms ? o->timeout_ms : 2000);
    opts.tries = (int)(o && o->tries ? o->tries : 2);
    opts.flags = ARES_FLAG_NOSEARCH | ARES_FLAG_NOALIASES;
    mask = ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_FLAGS;
    e = ares_init_options(&d->ch, &opts, mask);
    if (e != ARES_SUCCESS) {
        if (err && errlen)
            snprintf(err, errlen, "c-ares: %s", ares_strerror(e));
        x_free(d);
        return e == ARES_ENOMEM ? -ENOMEM : -EIO;
    }
    d->ch_ready = true;
    if (o && o->server) {
        e = ares_set_servers_ports_csv(d->ch, o->server);
        if (e != ARES_SUCCESS) {
            if (err && errlen)
                snprintf(err, errlen, "c-ares: server '%s': %s", o->server, ares_strerror(e));
            ares_destroy(d->ch);
            x_free(d);
            return -EINVAL;
        }
    }
    uv_timer_init(loop, &d->timer);
    d->timer.data = d;
    d->handles = 1;
    *ret = d;
    return 0;
}

struct dnssd *dnssd_free(struct dnssd *d)
{
    if (!d)
        return NULL;
    d->freeing = true;
    /* Every pending query's callback runs now with ARES_EDESTRUCTION (browses are freed there,
     * without calling their owner), and c-ares reports each socket closed. */
    ares_destroy(d->ch);
    d->ch_ready = false;
    while (d->socks) {
        struct sock *s = d->socks;

        d->socks = s->next;
        uv_close((uv_handle_t *)&s->h, sock_closed);
    }
    uv_close((uv_handle_t *)&d->timer, timer_closed);
    return NULL;
}

/* ---- browse ----------------------------------------------------------------------------------
 */

static int err_of(int status)
{
    switch (status) {
    case ARES_ENOTFOUND:
    case ARES_ENODATA:
        return -ENOENT;
    case ARES_ETIMEOUT:
        return -ETIMEDOUT;
    case ARES_ENOMEM:
        return -ENOMEM;
    case ARES_ECANCELLED:
    case ARES_EDESTRUCTION:
        return -ECANCELED;
    default:
        return -EIO;
    }
}

static void browse_free(struct dnssd_browse *b)
{
    x_free(b->inst);
    x_free(b->res.inst);
    x_free(b);
}

static void maybe_finish(struct dnssd_browse *b)
{
    if (b->pending > 0 || !b->ptr_done)
        return;
    if (!b->cancelled && b->cb) {
        for (size_t i = 0; i < b->res.n; i++)
            b->res.inst[i] = b->inst[i].pub;
        b->cb(b->d, &b->res, b->data);
    }
    browse_free(b);
}

static void inst_fail(struct dnssd_instance *in, int status, const char *what)
{
    int e = err_of(status);
    enum dnssd_state st = e == -ENOENT ? DNSSD_ABSENT : DNSSD_FAILED;

    /* A failure wins over an absence: we do not know. */
    if (in->state == DNSSD_FAILED)
        return;
    in->state = st;
    snprintf(in->message, sizeof(in->message), "%s: %s", what, ares_strerror(status));
}

static void on_srv(struct inst_store *is, int status, const unsigned char *abuf, int alen)
{
    struct dnssd_instance *in = &is->pub;
    struct ares_srv_reply *srv = NULL, *best = NULL;
    int e = status;

    if (e == ARES_SUCCESS)
        e = ares_parse_srv_reply(abuf, alen, &srv);
    if (e != ARES_SUCCESS) {
        inst_fail(in, e, "SRV");
        return;
    }
    /* The lowest priority, then the highest weight, then the first: one auth endpoint. */
    for (struct ares_srv_reply *s = srv; s; s = s->next)
        if (!best || s->priority < best->priority ||
            (s->priority == best->priority && s->weight > best->weight))
            best = s;
    if (best && best->host && strlen(best->host) < sizeof(in->target)) {
        snprintf(in->target, sizeof(in->target), "%s", best->host);
        in->port = best->port;
    } else if (in->state == DNSSD_OK) {
        in->state = DNSSD_ABSENT;
        snprintf(in->message, sizeof(in->message), "SRV: no usable record");
    }
    ares_free_data(srv);
}

static void on_txt(struct inst_store *is, int status, const unsigned char *abuf, int alen)
{
    struct dnssd_instance *in = &is->pub;
    struct ares_txt_ext *txt = NULL;
    size_t used = 0, records = 0;
    int e = status;

    if (e == ARES_SUCCESS)
        e = ares_parse_txt_reply_ext(abuf, alen, &txt);
    if (e != ARES_SUCCESS) {
        inst_fail(in, e, "TXT");
        return;
    }
    for (struct ares_txt_ext *t = txt; t; t = t->next) {
        if (t->record_start)
            records++;
        if (records > 1) {
            in->multiple_txt = true;
            break;
        }
        /* Beyond what the parser accepts, hand over one string too many (it rejects the record
         * as too large) rather than grow the buffer. */
        if (in->ntxt > DREC_TXT_ITEMS_MAX || used + t->length > sizeof(is->txtbuf)) {
            in->ntxt = DREC_TXT_ITEMS_MAX + 1;
            break;
        }
        memcpy(is->txtbuf + used, t->txt, t->length);
        in->txt[in->ntxt].data = is->txtbuf + used;
        in->txt[in->ntxt].len = t->length;
        in->ntxt++;
        used += t->length;
    }
    ares_free_data(txt);
}

static void on_query(void *arg, int status, int timeouts, unsigned char *abuf, int alen)
{
    struct query *q = arg;
    struct dnssd_browse *b = q->b;

    (void)timeouts;
    if (status == ARES_ECANCELLED || status == ARES_EDESTRUCTION)
        b->cancelled = true;
    if (!b->cancelled) {
        if (q->type == T_SRV_)
            on_srv(&b->inst[q->idx], status, abuf, alen);
        else
            on_txt(&b->inst[q->idx], status, abuf, alen);
    }
    x_free(q);
    b->pending--;
    maybe_finish(b);
}

static void start_query(struct dnssd_browse *b, size_t idx, int type)
{
    struct query *q = x_calloc(1, sizeof(*q));

    if (!q) {
        inst_fail(&b->inst[idx].pub, ARES_ENOMEM, type == T_SRV_ ? "SRV" : "TXT");
        return;
    }
    q->b = b;
    q->idx = idx;
    q->type = type;
    b->pending++;
    ares_query(b->d->ch, b->inst[idx].pub.fullname, C_IN_, type, on_query, q);
}

static void on_ptr(void *arg, int status, int timeouts, unsigned char *abuf, int alen)
{
    struct dnssd_browse *b = arg;
    struct hostent *h = NULL;
    size_t n = 0;
    int e = status;

    (void)timeouts;
    b->pending--;
    if (status == ARES_ECANCELLED || status == ARES_EDESTRUCTION)
        b->cancelled = true;
    if (b->cancelled)
        goto done;
    if (e == ARES_SUCCESS)
        e = ares_parse_ptr_reply(abuf, alen, NULL, 0, AF_INET, &h);
    if (e != ARES_SUCCESS) {
        b->res.err = err_of(e);
        snprintf(b->res.message, sizeof(b->res.message), "PTR %.120s: %s", b->service_domain,
                 ares_strerror(e));
        goto done;
    }
    for (char **a = h->h_aliases; a && *a; a++)
        n++;
    if (n > b->d->max_instances) {
        b->res.truncated = n - b->d->max_instances;
        n = b->d->max_instances;
    }
    b->inst = n ? x_calloc(n, sizeof(*b->inst)) : NULL;
    b->res.inst = n ? x_calloc(n, sizeof(*b->res.inst)) : NULL;
    if (n && (!b->inst || !b->res.inst)) {
        b->res.err = -ENOMEM;
        snprintf(b->res.message, sizeof(b->res.message), "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        struct dnssd_instance *in = &b->inst[i].pub;

        if (strlen(h->h_aliases[i]) >= sizeof(in->fullname)) {
            in->state = DNSSD_ABSENT;
            snprintf(in->message, sizeof(in->message), "PTR target too long");
            continue;
        }
        snprintf(in->fullname, sizeof(in->fullname), "%s", h->h_aliases[i]);
    }
    b->res.n = n;
    for (size_t i = 0; i < n; i++) {
        if (b->inst[i].pub.state != DNSSD_OK)
            continue;
        start_query(b, i, T_SRV_);
        start_query(b, i, T_TXT_);
    }
done:
    if (h)
        ares_free_hostent(h);
    b->ptr_done = true;
    maybe_finish(b);
}

int dnssd_browse(struct dnssd *d, const char *service, const char *domain, dnssd_cb cb, void *data,
                 struct dnssd_browse **ret)
{
    struct dnssd_browse *b;
    size_t dl;

    if (!d || d->freeing || !service || !domain || !cb)
        return -EINVAL;
    dl = strlen(domain);
    if (dl > 0 && domain[dl - 1] == '.')
        dl--;
    if (dl == 0 || strlen(service) + 1 + dl > DREC_HOST_MAX)
        return -EINVAL;
    b = x_calloc(1, sizeof(*b));
    if (!b)
        return -ENOMEM;
    b->d = d;
    b->cb = cb;
    b->data = data;
    snprintf(b->service_domain, sizeof(b->service_domain), "%s.%.*s", service, (int)dl, domain);
    b->pending = 1;
    if (ret)
        *ret = b;
    ares_query(d->ch, b->service_domain, C_IN_, T_PTR_, on_ptr, b);
    reschedule(d);
    return 0;
}

void dnssd_browse_cancel(struct dnssd_browse *b)
{
    if (b)
        b->cancelled = true;
}
