#include "kube/api.h"
#include "kube/kpb.h"
#include "kube/liststream.h"
#include "common/json.h"
#include "common/jsonb.h"
#include "kube/backoff.h"
#include "kube/ratelimit.h"
#include "common/log.h"
#include "common/xalloc.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define DEFAULT_QPS        50.0
#define DEFAULT_BURST      100
#define DEFAULT_MAX_BODY   ((size_t)32 << 20)
#define DEFAULT_TIMEOUT_MS 30000L
#define MAX_PATH_LEN       8192
#define KAPI_MAX_STREAMS   250L /* streams per HTTP/2 connection: the API server's own limit */
/* A token file is re-read at most this often, and after any 401 (as client-go does), so that a
 * rotated service-account token is picked up without a restart. */
#define TOKEN_REREAD_MS 60000
/* 429 Too Many Requests (the API server's priority and fairness, or max-in-flight, turned the
 * request away before handling it): the request is sent again after the longer of Retry-After (at
 * most RETRY_AFTER_MAX_S) and RETRY_BASE_MS doubling with each attempt, plus up to half again at
 * random, at most RETRY_429_MAX times (as client-go does), and the client's rate is halved; it
 * grows back by a quarter each RATE_STEP_MS of answers without a 429, up to the configured qps.
 * Polite under contention, fast when idle. */
#define RETRY_429_MAX     10
#define RETRY_AFTER_MAX_S 60
#define RETRY_BASE_MS     100
#define RETRY_MAX_MS      10000
#define RATE_FLOOR_QPS    1.0
#define RATE_STEP_MS      250

enum call_state {
    CALL_WAITING, /* waiting for a rate-limiter token */
    CALL_DELAYED, /* turned away with 429: waiting to be sent again (the client's delayed list) */
    CALL_RUNNING, /* in the curl multi handle */
    CALL_DONE,    /* its callback is running or has run */
};

struct kapi_call {
    struct kapi_client *c;
    struct kapi_call *prev, *next;
    enum call_state state;
    bool cancelled; /* cancelled while waiting for a token: freed when the token arrives */
    bool paused;    /* its chunk callback paused the transfer (KAPI_CHUNK_PAUSE) */
    CURL *easy;
    struct curl_slist *headers;
    struct curl_slist *connect_to;
    char *url;
    char *method;
    char *body;
    size_t body_len;
    char *content_type;
    long timeout_ms;
    long low_speed_secs;
    kapi_cb cb;
    kapi_chunk_cb on_chunk;
    bool protobuf;      /* Accept: protobuf, then JSON */
    bool metadata_only; /* a 2xx body decoded down to its metadata */
    void *data;
    struct sbuf resp;
    size_t max_body;   /* the bound of resp */
    uint64_t start_ns; /* when the transfer started (uv_hrtime) */
    unsigned attempts; /* times it was turned away with 429 */
    uint64_t due_ms;   /* CALL_DELAYED: when to send it again (uv_now) */
    struct kapi_call *dnext;
    int abort_err;
    char errbuf[CURL_ERROR_SIZE];
};

struct sock_ctx {
    uv_poll_t poll;
    curl_socket_t fd;
    struct kapi_client *c;
};

struct kapi_client {
    uv_loop_t *loop;
    int ver_major, ver_minor; /* the server's, from GET /version (0: not known yet) */
    CURLM *multi;
    uv_timer_t timer;
    struct rl_limiter *rl;
    char *server;
    char *url_base;   /* server, or with the host replaced by tls-server-name (see connect_to) */
    char *connect_to; /* CURLOPT_CONNECT_TO entry "name:port:host:port" for tls-server-name */
    char *auth_header;
    char *tls_server_name;
    char *token_file; /* re-read now and then: rotated tokens */
    uint64_t token_read_ms;
    bool token_stale; /* a 401 was seen: re-read the token file before the next request */
    unsigned char *ca, *cert, *key;
    size_t ca_len, cert_len, key_len;
    bool insecure;
    char *user_agent;
    struct kapi_client_options o;
    struct kapi_call *calls;
    size_t ncalls;
    struct kapi_call *delayed; /* CALL_DELAYED calls, unordered (few: only 429s put them here) */
    uv_timer_t retry_timer;    /* armed for the earliest delayed call */
    double qps_now;            /* the rate in force: o.qps, lowered by 429s */
    uint64_t rate_changed_ms;
    uint64_t throttled; /* 429 answers seen */
    int open_handles;   /* libuv handles not yet closed */
    int in_dispatch;    /* inside curl_multi_socket_action: teardown must wait */
    bool closing;
    bool multi_gone;
};

/* ---------------------------------------------------------------------------------------------- */

int kapi_err_from_status(long http_status, const char *reason)
{
    if (http_status >= 200 && http_status < 300)
        return 0;
    switch (http_status) {
    case 400:
    case 422:
        return -EINVAL;
    case 401:
        return -EACCES;
    case 403:
        return -EPERM;
    case 404:
        return -ENOENT;
    case 409:
        return reason && strcmp(reason, "AlreadyExists") == 0 ? -EEXIST : -ESTALE;
    case 410:
        return -EIDRM;
    case 413:
        return -E2BIG;
    case 429:
        return -EAGAIN;
    default:
        return http_status >= 500 ? -EIO : -EPROTO;
    }
}

static int err_from_curl(CURLcode cc)
{
    switch (cc) {
    case CURLE_OPERATION_TIMEDOUT:
        return -ETIMEDOUT;
    case CURLE_COULDNT_CONNECT:
        return -ECONNREFUSED;
    case CURLE_COULDNT_RESOLVE_HOST:
        return -EHOSTUNREACH;
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_ISSUER_ERROR:
        return -EKEYREJECTED;
    case CURLE_GOT_NOTHING:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return -ECONNRESET;
    case CURLE_OUT_OF_MEMORY:
        return -ENOMEM;
    default:
        return -EIO;
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* libuv <-> curl multi glue */

static void check_multi_info(struct kapi_client *c);
static void maybe_finish_close(struct kapi_client *c);
static void rate_recover(struct kapi_client *c);
static void delayed_remove(struct kapi_call *call);

static void handle_closed(uv_handle_t *h)
{
    struct kapi_client *c;

    if (h->type == UV_POLL) {
        struct sock_ctx *sc = h->data;
        c = sc->c;
        x_free(sc);
    } else {
        c = h->data;
    }
    c->open_handles--;
    maybe_finish_close(c);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
    struct sock_ctx *sc = p->data;
    struct kapi_client *c = sc->c;
    int flags = 0;
    int running;

    if (status < 0)
        flags = CURL_CSELECT_ERR;
    if (events & UV_READABLE)
        flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE)
        flags |= CURL_CSELECT_OUT;
    c->in_dispatch++;
    curl_multi_socket_action(c->multi, sc->fd, flags, &running);
    check_multi_info(c);
    c->in_dispatch--;
    maybe_finish_close(c);
}

static void on_timer(uv_timer_t *t)
{
    struct kapi_client *c = t->data;
    int running;

    c->in_dispatch++;
    curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_multi_info(c);
    c->in_dispatch--;
    maybe_finish_close(c);
}

static int curl_timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
    struct kapi_client *c = userp;

    (void)multi;
    if (timeout_ms < 0)
        uv_timer_stop(&c->timer);
    else
        uv_timer_start(&c->timer, on_timer, (uint64_t)timeout_ms, 0);
    return 0;
}

static int curl_socket_cb(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
    struct kapi_client *c = userp;
    struct sock_ctx *sc = socketp;
    int events = 0;

    (void)easy;
    if (what == CURL_POLL_REMOVE) {
        if (sc) {
            uv_poll_stop(&sc->poll);
            curl_multi_assign(c->multi, fd, NULL);
            uv_close((uv_handle_t *)&sc->poll, handle_closed);
        }
        return 0;
    }
    if (!sc) {
        sc = x_calloc(1, sizeof(*sc));
        if (!sc)
            return -1;
        sc->fd = fd;
        sc->c = c;
        if (uv_poll_init_socket(c->loop, &sc->poll, fd) < 0) {
            x_free(sc);
            return -1;
        }
        sc->poll.data = sc;
        c->open_handles++;
        curl_multi_assign(c->multi, fd, sc);
    }
    if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
        events |= UV_READABLE;
    if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
        events |= UV_WRITABLE;
    uv_poll_start(&sc->poll, events, on_poll);
    return 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* calls */

static void call_unlink(struct kapi_call *call)
{
    struct kapi_client *c = call->c;

    if (call->prev)
        call->prev->next = call->next;
    else if (c->calls == call)
        c->calls = call->next;
    if (call->next)
        call->next->prev = call->prev;
    call->prev = call->next = NULL;
    c->ncalls--;
}

/* The transfer's own parts (the easy handle, its header lists); on_token makes them again. */
static void call_drop_transfer(struct kapi_call *call)
{
    if (call->easy)
        curl_easy_cleanup(call->easy);
    call->easy = NULL;
    curl_slist_free_all(call->headers);
    call->headers = NULL;
    curl_slist_free_all(call->connect_to);
    call->connect_to = NULL;
}

static void call_free(struct kapi_call *call)
{
    if (!call)
        return;
    if (call->easy && (call->state == CALL_RUNNING || call->state == CALL_DONE) &&
        !call->c->multi_gone)
        curl_multi_remove_handle(call->c->multi, call->easy);
    call_drop_transfer(call);
    sbuf_done(&call->resp);
    x_free(call->url);
    x_free(call->method);
    x_free(call->body);
    x_free(call->content_type);
    x_free(call);
}

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct kapi_call *call = userdata;
    size_t len = size * nmemb;
    long code = 0;
    int r;

    curl_easy_getinfo(call->easy, CURLINFO_RESPONSE_CODE, &code);
    if (call->on_chunk && code >= 200 && code < 300) {
        r = call->on_chunk(call->c, ptr, len, call->data);
        if (r < 0) {
            call->abort_err = r;
            return 0;
        }
        if (r == KAPI_CHUNK_PAUSE) {
            call->paused = true;
            return CURL_WRITEFUNC_PAUSE;
        }
        return len;
    }
    r = sbuf_add(&call->resp, ptr, len);
    if (r < 0) {
        call->abort_err = r;
        return 0;
    }
    return len;
}

/* An error's Status in protobuf (a request that accepted it), as the JSON tree it would have been;
 * NULL when it is not one. */
static json_t *status_from_protobuf(const char *raw, size_t len)
{
    const uint8_t *obj;
    size_t obj_len, cap = 0, tlen;
    char kind[16], *text = NULL;
    json_t *st = NULL;
    int msg = kpb_root(&kpb_schema, "meta.k8s.io", "v1", "Status");

    if (msg < 0 || len > KAPI_MAX_OBJECT_BODY ||
        kpb_unwrap((const uint8_t *)raw, len, &obj, &obj_len, kind, sizeof(kind)) < 0 ||
        strcmp(kind, "Status") != 0)
        return NULL;
    if (kpb_to_tree(&kpb_schema, msg, obj, obj_len, &text, &cap, &tlen, KAPI_MAX_OBJECT_BODY,
                    &st) == 0 &&
        json_object_set_new(st, "kind", json_string("Status")) < 0) {
        json_decref(st);
        st = NULL;
    }
    x_free(text);
    return st;
}

static void observe(struct kapi_call *call, const struct kapi_result *res)
{
    struct kapi_client *c = call->c;
    struct kapi_observation o;

    if (!c->o.observe)
        return;
    o.method = call->method ? call->method : "";
    o.streaming = call->on_chunk != NULL;
    o.http_status = res->http_status;
    o.err = res->err;
    o.seconds = call->start_ns ? (double)(uv_hrtime() - call->start_ns) / 1e9 : 0;
    c->o.observe(c, &o, c->o.observe_data);
}

/* {"metadata": <the object's metadata less managedFields>} from an object's text, or NULL when it
 * is not found that way (the caller then decodes the whole text). */
static json_t *metadata_of(const char *text, size_t len)
{
    static const char *const md[] = {"metadata"};
    static const char *const mf[] = {"metadata", "managedFields"};
    size_t from, to, n, cap = 0;
    char *wrapped = NULL, *buf = NULL;
    const char *cut;
    json_t *j = NULL;

    if (kls_find_member(text, len, md, 1, &from, &to) != 1)
        return NULL;
    /* The member with its name and the one comma kls_find_member takes with it, before or after:
     * without that comma, inside braces of its own (blanks around it are valid JSON there). */
    if (from < to && text[from] == ',')
        from++;
    else if (to > from && text[to - 1] == ',')
        to--;
    n = to - from;
    wrapped = x_malloc(n + 2);
    if (!wrapped)
        return NULL;
    wrapped[0] = '{';
    memcpy(wrapped + 1, text + from, n);
    wrapped[n + 1] = '}';
    n += 2;
    if (kls_cut_member(wrapped, n, mf, 2, &buf, &cap, &cut, &n) >= 0 &&
        jsonb_load(cut, n, jsonb_budget(n, JSONB_RATIO_KUBE), 0, 0, &j, NULL) == 0 &&
        !json_is_object(json_object_get(j, "metadata"))) {
        json_decref(j);
        j = NULL;
    }
    x_free(buf);
    x_free(wrapped);
    return j;
}

static void complete(struct kapi_call *call, CURLcode cc)
{
    struct kapi_client *c = call->c;
    struct kapi_result res = {0};
    json_t *body = NULL;
    json_error_t jerr;
    char msg[CURL_ERROR_SIZE + 64];
    bool pb_body = false;
    int jr = 0;

    curl_easy_getinfo(call->easy, CURLINFO_RESPONSE_CODE, &res.http_status);
    if (res.http_status == 401 && c->token_file)
        c->token_stale = true;
    if (cc == CURLE_OK && res.http_status > 0 && res.http_status != 429)
        rate_recover(c); /* the server answered: the rate may grow back */
    res.raw = sbuf_str(&call->resp);
    res.raw_len = sbuf_len(&call->resp);
    res.status.code = res.http_status;
    res.status.reason = "";
    res.status.message = "";

    if (res.raw_len > 0 && call->protobuf && (res.http_status < 200 || res.http_status >= 300))
        body = status_from_protobuf(res.raw, res.raw_len);
    if (res.raw_len >= KPB_MAGIC_LEN && call->protobuf &&
        memcmp(res.raw, KPB_MAGIC, KPB_MAGIC_LEN) == 0)
        pb_body = true; /* the caller decodes it (kube/kpb.h) */
    else if (res.raw_len > 0 && !body) {
        if (call->metadata_only && cc == CURLE_OK && !call->abort_err && res.http_status >= 200 &&
            res.http_status < 300)
            body = metadata_of(res.raw, res.raw_len);
        if (!body)
            jr = jsonb_load(res.raw, res.raw_len, jsonb_budget(res.raw_len, JSONB_RATIO_KUBE), 0, 0,
                            &body, &jerr);
    }
    res.body = body;

    if (call->abort_err) {
        res.err = call->abort_err;
        if (call->abort_err == -E2BIG)
            snprintf(msg, sizeof(msg), "response body larger than the limit of %zu bytes",
                     call->max_body);
        else
            snprintf(msg, sizeof(msg), "request aborted: %s", strerror(-call->abort_err));
        res.status.message = msg;
    } else if (cc != CURLE_OK) {
        res.err = err_from_curl(cc);
        snprintf(msg, sizeof(msg), "%s", call->errbuf[0] ? call->errbuf : curl_easy_strerror(cc));
        res.status.message = msg;
        res.http_status = 0;
        res.status.code = 0;
    } else if (res.http_status < 200 || res.http_status >= 300) {
        const char *kind = jsn_str(body, "kind");
        if (kind && strcmp(kind, "Status") == 0) {
            const char *reason = jsn_str(body, "reason");
            const char *m = jsn_str(body, "message");
            res.status.reason = reason ? reason : "";
            res.status.message = m ? m : "";
        } else {
            /* Not a Status object: show the start of whatever came back. */
            snprintf(msg, sizeof(msg), "HTTP %ld: %.200s", res.http_status, res.raw);
            res.status.message = msg;
        }
        res.err = kapi_err_from_status(res.http_status, res.status.reason);
    } else if (jr == -E2BIG && !call->on_chunk) {
        res.err = -E2BIG;
        snprintf(msg, sizeof(msg), "response body refused: %s", jerr.text);
        res.status.message = msg;
    } else if (res.raw_len > 0 && !body && !call->on_chunk && !pb_body) {
        res.err = -EBADMSG;
        res.status.message = "response body is not valid JSON";
    }

    call->state = CALL_DONE;
    observe(call, &res);
    if (call->cb)
        call->cb(c, &res, call->data);
    json_decref(body);
}

/* ---- 429: send again later, slow down -----------------------------------------------------------
 */

static void on_token(struct rl_limiter *l, int status, void *data);

static void rate_set(struct kapi_client *c, double qps)
{
    if (qps < RATE_FLOOR_QPS)
        qps = RATE_FLOOR_QPS;
    if (qps > c->o.qps)
        qps = c->o.qps;
    if (qps == c->qps_now || !c->rl)
        return;
    c->qps_now = qps;
    c->rate_changed_ms = uv_now(c->loop);
    rl_set_qps(c->rl, qps);
}

/* An answer that was not a 429: the rate grows back, one step per RATE_STEP_MS at most. */
static void rate_recover(struct kapi_client *c)
{
    if (c->qps_now < c->o.qps && uv_now(c->loop) - c->rate_changed_ms >= RATE_STEP_MS)
        rate_set(c, c->qps_now * 1.25 + 1.0);
}

static void delayed_remove(struct kapi_call *call)
{
    struct kapi_call **pp = &call->c->delayed;

    while (*pp && *pp != call)
        pp = &(*pp)->dnext;
    if (*pp)
        *pp = call->dnext;
    call->dnext = NULL;
}

static void on_retry_timer(uv_timer_t *t);

static void retry_arm(struct kapi_client *c)
{
    uint64_t now = uv_now(c->loop), first = UINT64_MAX;

    for (struct kapi_call *d = c->delayed; d; d = d->dnext)
        if (d->due_ms < first)
            first = d->due_ms;
    if (first == UINT64_MAX)
        uv_timer_stop(&c->retry_timer);
    else
        uv_timer_start(&c->retry_timer, on_retry_timer, first > now ? first - now : 0, 0);
}

/* Due calls queue for a token again, behind whatever waits at the lowered rate. */
static void on_retry_timer(uv_timer_t *t)
{
    struct kapi_client *c = t->data;
    uint64_t now = uv_now(c->loop);
    struct kapi_call **pp = &c->delayed;

    while (*pp && !c->closing) {
        struct kapi_call *call = *pp;
        if (call->due_ms > now) {
            pp = &call->dnext;
            continue;
        }
        *pp = call->dnext;
        call->dnext = NULL;
        call->state = CALL_WAITING;
        if (rl_acquire(c->rl, on_token, call) < 0) {
            struct kapi_result res = {.err = -ENOMEM, .raw = ""};
            res.status.reason = "";
            res.status.message = "cannot queue the request again after 429";
            call_unlink(call);
            call->state = CALL_DONE;
            observe(call, &res);
            if (call->cb)
                call->cb(c, &res, call->data);
            call_free(call);
        }
    }
    retry_arm(c);
}

/* A finished transfer turned away with 429: queued to be sent again (true), or its answer is final.
 */
static bool retry_later(struct kapi_call *call, CURLcode cc)
{
    struct kapi_client *c = call->c;
    struct kapi_result res = {.err = -EAGAIN, .http_status = 429, .raw = ""};
    curl_off_t after = -1;
    long status = 0;
    uint64_t delay;

    if (cc != CURLE_OK || call->abort_err || c->closing)
        return false;
    curl_easy_getinfo(call->easy, CURLINFO_RESPONSE_CODE, &status);
    if (status != 429)
        return false;
    c->throttled++;
    if (c->rate_changed_ms == 0 || uv_now(c->loop) - c->rate_changed_ms >= RATE_STEP_MS ||
        c->qps_now >= c->o.qps)
        rate_set(c, c->qps_now / 2);
    if (call->attempts >= RETRY_429_MAX)
        return false;
    if (curl_easy_getinfo(call->easy, CURLINFO_RETRY_AFTER, &after) != CURLE_OK)
        after = -1;
    delay = (uint64_t)c->o.retry_base_ms << call->attempts;
    if (delay > RETRY_MAX_MS)
        delay = RETRY_MAX_MS;
    if (after > RETRY_AFTER_MAX_S)
        after = RETRY_AFTER_MAX_S;
    if (after > 0 && (uint64_t)after * 1000 > delay)
        delay = (uint64_t)after * 1000;
    /* Up to half again at random: the requests one burst had turned away (the API server says
     * "Retry-After: 1" to all of them) do not all come back in the same millisecond, to be turned
     * away together again until their tries run out. */
    delay += backoff_jitter(delay / 2);
    call->attempts++;
    res.status.code = 429;
    res.status.reason = "TooManyRequests";
    res.status.message = "sent again later";
    observe(call, &res);
    log_debug("kapi", "%s %s: 429 (attempt %u), again in %llu ms at %.1f requests/s", call->method,
              call->url, call->attempts, (unsigned long long)delay, c->qps_now);

    /* A fresh transfer later. */
    call_drop_transfer(call);
    sbuf_done(&call->resp);
    sbuf_init(&call->resp, call->max_body);
    call->errbuf[0] = '\0';
    call->start_ns = 0;
    call->state = CALL_DELAYED;
    call->due_ms = uv_now(c->loop) + delay;
    call->dnext = c->delayed;
    c->delayed = call;
    retry_arm(c);
    return true;
}

static void check_multi_info(struct kapi_client *c)
{
    CURLMsg *m;
    int pending;

    while (!c->multi_gone && (m = curl_multi_info_read(c->multi, &pending))) {
        struct kapi_call *call = NULL;
        if (m->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&call);
        CURLcode cc = m->data.result;
        curl_multi_remove_handle(c->multi, call->easy);
        if (retry_later(call, cc))
            continue;
        call_unlink(call);
        complete(call, cc);
        curl_easy_cleanup(call->easy);
        call->easy = NULL;
        call_free(call);
    }
}

static int make_auth_header(const char *token, char **ret)
{
    struct sbuf b;

    sbuf_init(&b, 16384);
    if (sbuf_printf(&b, "Authorization: Bearer %s", token) < 0) {
        sbuf_done(&b);
        return -EINVAL;
    }
    *ret = sbuf_steal(&b);
    return *ret ? 0 : -ENOMEM;
}

static void free_secret_str(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        x_free(s);
    }
}

/* Re-reads the token file when it is due (or after a 401). A file that cannot be read keeps the
 * token we have: the next 401 says so to the caller, and we try again later. */
static void refresh_token(struct kapi_client *c)
{
    char err[256], *tok = NULL, *hdr = NULL;
    uint64_t now;

    if (!c->token_file)
        return;
    now = uv_now(c->loop);
    if (!c->token_stale && now - c->token_read_ms < TOKEN_REREAD_MS)
        return;
    c->token_read_ms = now;
    c->token_stale = false;
    if (kc_read_token(c->token_file, &tok, err, sizeof(err)) < 0) {
        log_warn("kapi", "cannot re-read the token file, keeping the current token: %s", err);
        return;
    }
    if (make_auth_header(tok, &hdr) == 0 && (!c->auth_header || strcmp(hdr, c->auth_header) != 0)) {
        if (c->auth_header)
            log_info("kapi", "bearer token changed in %s: using the new one", c->token_file);
        free_secret_str(c->auth_header);
        c->auth_header = hdr;
        hdr = NULL;
    }
    free_secret_str(hdr);
    free_secret_str(tok);
}

/* tls-server-name: the URL names the host the certificate is checked against (and sent as SNI),
 * and CURLOPT_CONNECT_TO sends the connection to the real server. */
static int setup_server_name(struct kapi_client *c, const char *name)
{
    const char *p = c->server, *host, *host_end, *port = NULL, *rest;
    struct sbuf u, ct;
    int r = -ENOMEM;

    if (strncmp(p, "https://", 8) != 0)
        return -EINVAL;
    host = p + 8;
    if (*host == '[') {
        host_end = strchr(host, ']');
        if (!host_end)
            return -EINVAL;
        host_end++;
    } else {
        host_end = host + strcspn(host, ":/");
    }
    rest = host_end;
    if (*rest == ':') {
        port = rest + 1;
        rest = port + strcspn(port, "/");
    }
    sbuf_init(&u, 4096);
    sbuf_init(&ct, 4096);
    if (sbuf_printf(&u, "https://%s:%.*s%s", name, port ? (int)(rest - port) : 3,
                    port ? port : "443", rest) < 0 ||
        sbuf_printf(&ct, "%s:%.*s:%.*s:%.*s", name, port ? (int)(rest - port) : 3,
                    port ? port : "443", (int)(host_end - host), host,
                    port ? (int)(rest - port) : 3, port ? port : "443") < 0)
        goto out;
    c->url_base = sbuf_steal(&u);
    c->connect_to = sbuf_steal(&ct);
    if (c->url_base && c->connect_to)
        r = 0;
out:
    sbuf_done(&u);
    sbuf_done(&ct);
    return r;
}

static int call_setup_easy(struct kapi_call *call)
{
    struct kapi_client *c = call->c;
    CURL *e = curl_easy_init();
    struct curl_slist *h = NULL, *t;

    if (!e)
        return -ENOMEM;
    call->easy = e;
    curl_easy_setopt(e, CURLOPT_URL, call->url);
    curl_easy_setopt(e, CURLOPT_PRIVATE, call);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, call->errbuf);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, call);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https,http");
    curl_easy_setopt(e, CURLOPT_USERAGENT, c->user_agent);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, call->method);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    if (c->connect_to) {
        call->connect_to = curl_slist_append(NULL, c->connect_to);
        if (!call->connect_to)
            return -ENOMEM;
        curl_easy_setopt(e, CURLOPT_CONNECT_TO, call->connect_to);
    }
    if (call->timeout_ms > 0)
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, call->timeout_ms);
    if (call->low_speed_secs > 0) {
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, call->low_speed_secs);
    }
    if (c->insecure) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    } else {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
        if (c->ca) {
            struct curl_blob b = {.data = c->ca, .len = c->ca_len, .flags = CURL_BLOB_NOCOPY};
            curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &b);
        }
    }
    if (c->cert && c->key) {
        struct curl_blob cb = {.data = c->cert, .len = c->cert_len, .flags = CURL_BLOB_NOCOPY};
        struct curl_blob kb = {.data = c->key, .len = c->key_len, .flags = CURL_BLOB_NOCOPY};
        curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cb);
        curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &kb);
        curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (call->body) {
        /* libcurl sends a body through an upload buffer of 64 KiB by default, held while the
         * request is in flight; its minimum, 16 KiB, is an HTTP/2 DATA frame's default size and
         * holds a typical object whole (docs/offloading.md, "Memory"). */
        curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, 16384L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, call->body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)call->body_len);
    } else if (strcmp(call->method, "GET") != 0 && strcmp(call->method, "DELETE") != 0) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
    }

    t = curl_slist_append(h, call->protobuf
                                 ? "Accept: application/vnd.kubernetes.protobuf, application/json"
                                 : "Accept: application/json");
    if (!t)
        goto oom;
    h = t;
    if (call->body) {
        char ct[160];
        snprintf(ct, sizeof(ct), "Content-Type: %s",
                 call->content_type ? call->content_type : "application/json");
        t = curl_slist_append(h, ct);
        if (!t)
            goto oom;
        h = t;
    }
    refresh_token(c);
    if (c->auth_header) {
        t = curl_slist_append(h, c->auth_header);
        if (!t)
            goto oom;
        h = t;
    }
    /* No "Expect: 100-continue" round trip for bodies. */
    t = curl_slist_append(h, "Expect:");
    if (!t)
        goto oom;
    h = t;
    call->headers = h;
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    return 0;
oom:
    curl_slist_free_all(h);
    return -ENOMEM;
}

/* A rate-limiter token arrived: start the transfer. */
static void on_token(struct rl_limiter *l, int status, void *data)
{
    struct kapi_call *call = data;
    struct kapi_client *c = call->c;
    struct kapi_result res = {0};
    char msg[128];
    int r;

    (void)l;
    if (call->cancelled || status < 0 || c->closing) {
        /* Cancelled calls were unlinked already; the client's own close frees the rest. */
        if (call->cancelled || status < 0)
            call_free(call);
        return;
    }
    r = call_setup_easy(call);
    if (r >= 0 && curl_multi_add_handle(c->multi, call->easy) != CURLM_OK)
        r = -ENOMEM;
    if (r < 0) {
        call_unlink(call);
        snprintf(msg, sizeof(msg), "cannot start request: %s", strerror(-r));
        res.err = r;
        res.raw = "";
        res.status.reason = "";
        res.status.message = msg;
        call->state = CALL_DONE;
        observe(call, &res);
        if (call->cb)
            call->cb(c, &res, call->data);
        call_free(call);
        return;
    }
    call->start_ns = uv_hrtime();
    call->state = CALL_RUNNING;
}

int kapi_send(struct kapi_client *c, const struct kapi_request *req, kapi_cb cb, void *data,
              struct kapi_call **ret_call)
{
    struct kapi_call *call;
    struct sbuf url;
    int r = -ENOMEM;

    if (!c || !req || !req->method || !req->path || req->path[0] != '/')
        return -EINVAL;
    if (c->closing)
        return -ECANCELED;
    if (strlen(req->path) > MAX_PATH_LEN)
        return -ENAMETOOLONG;
    call = x_calloc(1, sizeof(*call));
    if (!call)
        return -ENOMEM;
    call->c = c;
    call->cb = cb;
    call->on_chunk = req->on_chunk;
    call->protobuf = req->protobuf;
    call->metadata_only = req->metadata_only;
    call->data = data;
    call->timeout_ms = req->timeout_ms == 0 ? c->o.timeout_ms : req->timeout_ms;
    call->low_speed_secs = req->low_speed_secs;
    call->max_body = req->max_body && req->max_body < c->o.max_body ? req->max_body : c->o.max_body;
    sbuf_init(&call->resp, call->max_body);
    sbuf_init(&url, MAX_PATH_LEN + 1024);
    if (sbuf_adds(&url, c->url_base ? c->url_base : c->server) < 0 ||
        sbuf_adds(&url, req->path) < 0)
        goto out;
    call->url = sbuf_steal(&url);
    call->method = x_strdup(req->method);
    if (!call->url || !call->method)
        goto out;
    if (req->body) {
        call->body = x_malloc(req->body_len + 1);
        if (!call->body)
            goto out;
        memcpy(call->body, req->body, req->body_len);
        call->body[req->body_len] = '\0';
        call->body_len = req->body_len;
    }
    if (req->content_type && !(call->content_type = x_strdup(req->content_type)))
        goto out;

    call->state = CALL_WAITING;
    call->next = c->calls;
    if (c->calls)
        c->calls->prev = call;
    c->calls = call;
    c->ncalls++;
    r = rl_acquire(c->rl, on_token, call);
    if (r < 0) {
        call_unlink(call);
        goto out;
    }
    if (ret_call)
        *ret_call = call;
    return 0;
out:
    sbuf_done(&url);
    call_free(call);
    return r;
}

void kapi_call_resume(struct kapi_call *call)
{
    if (!call || !call->paused || call->state != CALL_RUNNING)
        return;
    call->paused = false;
    curl_easy_pause(call->easy, CURLPAUSE_CONT);
}

void kapi_call_cancel(struct kapi_call *call)
{
    if (!call || call->state == CALL_DONE || call->cancelled)
        return;
    call_unlink(call);
    if (call->state == CALL_WAITING) {
        /* The limiter still holds it: freed when its token (or cancellation) arrives. */
        call->cancelled = true;
        return;
    }
    if (call->state == CALL_DELAYED)
        delayed_remove(call);
    call_free(call);
}

/* ---------------------------------------------------------------------------------------------- */
/* client */

static unsigned char *dup_blob(const unsigned char *p, size_t len)
{
    unsigned char *d;

    if (!p || !len)
        return NULL;
    d = x_malloc(len);
    if (d)
        memcpy(d, p, len);
    return d;
}

static int curl_global(void)
{
    static bool done;

    if (!done) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
            return -EIO;
        done = true;
    }
    return 0;
}

int kapi_client_new(uv_loop_t *loop, const struct kc_config *cfg,
                    const struct kapi_client_options *opts, struct kapi_client **ret)
{
    struct kapi_client *c;
    size_t n;
    int r = -ENOMEM;

    if (!loop || !cfg || !cfg->server || !ret)
        return -EINVAL;
    r = curl_global();
    if (r < 0)
        return r;
    c = x_calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    r = -ENOMEM;
    c->loop = loop;
    c->o.qps = opts && opts->qps > 0 ? opts->qps : DEFAULT_QPS;
    c->o.burst = opts && opts->burst > 0 ? opts->burst : DEFAULT_BURST;
    c->o.max_body = opts && opts->max_body ? opts->max_body : DEFAULT_MAX_BODY;
    c->o.timeout_ms = opts && opts->timeout_ms ? opts->timeout_ms : DEFAULT_TIMEOUT_MS;
    c->o.retry_base_ms = opts && opts->retry_base_ms > 0 ? opts->retry_base_ms : RETRY_BASE_MS;
    c->o.observe = opts ? opts->observe : NULL;
    c->o.observe_data = opts ? opts->observe_data : NULL;
    c->user_agent = x_strdup(opts && opts->user_agent ? opts->user_agent : "cliqo/" CLIQO_VERSION);
    c->server = x_strdup(cfg->server);
    if (!c->user_agent || !c->server)
        goto fail;
    n = strlen(c->server);
    while (n > 0 && c->server[n - 1] == '/')
        c->server[--n] = '\0';
    c->insecure = cfg->insecure_skip_tls_verify;
    if (cfg->ca_pem_len && !(c->ca = dup_blob(cfg->ca_pem, cfg->ca_pem_len)))
        goto fail;
    c->ca_len = cfg->ca_pem_len;
    if (cfg->cert_pem_len && !(c->cert = dup_blob(cfg->cert_pem, cfg->cert_pem_len)))
        goto fail;
    c->cert_len = cfg->cert_pem_len;
    if (cfg->key_pem_len && !(c->key = dup_blob(cfg->key_pem, cfg->key_pem_len)))
        goto fail;
    c->key_len = cfg->key_pem_len;
    if (cfg->token && cfg->token[0]) {
        r = make_auth_header(cfg->token, &c->auth_header);
        if (r < 0)
            goto fail;
        r = -ENOMEM;
    }
    if (cfg->token_file) {
        c->token_file = x_strdup(cfg->token_file);
        if (!c->token_file)
            goto fail;
        c->token_read_ms = uv_now(loop);
    }
    if (cfg->tls_server_name && cfg->tls_server_name[0]) {
        r = setup_server_name(c, cfg->tls_server_name);
        if (r < 0)
            goto fail;
        r = -ENOMEM;
        c->tls_server_name = x_strdup(cfg->tls_server_name);
        if (!c->tls_server_name)
            goto fail;
    }
    c->rl = rl_new(loop, c->o.qps, c->o.burst);
    if (!c->rl)
        goto fail;
    c->multi = curl_multi_init();
    if (!c->multi)
        goto fail;
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, curl_socket_cb);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, curl_timer_cb);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    /* libcurl opens another connection past 100 streams on one (its default); the API server
     * allows 250, and its SETTINGS frame lowers this if it allows fewer. A connection is a TLS
     * handshake and some 80 KB of buffers, kept idle for two minutes after a burst. */
    curl_multi_setopt(c->multi, CURLMOPT_MAX_CONCURRENT_STREAMS, (long)KAPI_MAX_STREAMS);
    uv_timer_init(loop, &c->timer);
    c->timer.data = c;
    c->open_handles++;
    uv_timer_init(loop, &c->retry_timer);
    c->retry_timer.data = c;
    c->open_handles++;
    c->qps_now = c->o.qps;
    *ret = c;
    return 0;
fail:
    if (c->rl)
        rl_close(c->rl, NULL, NULL);
    if (c->multi)
        curl_multi_cleanup(c->multi);
    x_free(c->user_agent);
    x_free(c->server);
    x_free(c->url_base);
    x_free(c->connect_to);
    x_free(c->tls_server_name);
    x_free(c->token_file);
    free_secret_str(c->auth_header);
    x_free(c->ca);
    x_free(c->cert);
    x_free(c->key);
    x_free(c);
    return r;
}

static void wipe_free(unsigned char *p, size_t len)
{
    if (p) {
        explicit_bzero(p, len);
        x_free(p);
    }
}

static void maybe_finish_close(struct kapi_client *c)
{
    if (!c->closing || c->in_dispatch > 0)
        return;
    if (!c->multi_gone) {
        /* Runs the socket callback for every remaining connection, which closes its poll handle. */
        c->multi_gone = true;
        curl_multi_cleanup(c->multi);
        c->multi = NULL;
        uv_close((uv_handle_t *)&c->timer, handle_closed);
        uv_close((uv_handle_t *)&c->retry_timer, handle_closed);
        return; /* handle_closed calls back here */
    }
    if (c->open_handles > 0)
        return;
    x_free(c->user_agent);
    x_free(c->server);
    x_free(c->url_base);
    x_free(c->connect_to);
    x_free(c->tls_server_name);
    x_free(c->token_file);
    free_secret_str(c->auth_header);
    x_free(c->ca);
    wipe_free(c->cert, c->cert_len);
    wipe_free(c->key, c->key_len);
    x_free(c);
}

void kapi_client_close(struct kapi_client *c)
{
    if (!c || c->closing)
        return;
    c->closing = true;
    while (c->calls) {
        struct kapi_call *call = c->calls;
        if (call->state == CALL_WAITING) {
            /* rl_close below cancels it and its token callback frees it. */
            call_unlink(call);
            call->cancelled = true;
            continue;
        }
        call_unlink(call);
        if (call->state == CALL_DONE)
            continue; /* its completion is running; check_multi_info frees it */
        if (call->state == CALL_DELAYED)
            delayed_remove(call);
        call_free(call);
    }
    uv_timer_stop(&c->retry_timer);
    rl_close(c->rl, NULL, NULL);
    c->rl = NULL;
    maybe_finish_close(c);
}

void kapi_client_abort(struct kapi_client *c)
{
    struct kapi_result res = {0};

    if (!c || c->closing)
        return;
    c->closing = true; /* kapi_send now fails with -ECANCELED */
    res.err = -ECANCELED;
    res.raw = "";
    res.status.reason = "Cancelled";
    res.status.message = "request cancelled: its client was closed";
    while (c->calls) {
        struct kapi_call *call = c->calls;
        kapi_cb cb = call->cb;
        void *data = call->data;

        call_unlink(call);
        if (call->state == CALL_DONE)
            continue; /* its completion is running; check_multi_info frees it */
        observe(call, &res);
        call->cb = NULL;
        if (call->state == CALL_WAITING) {
            call->cancelled = true; /* rl_close below makes its token callback free it */
        } else {
            if (call->state == CALL_DELAYED)
                delayed_remove(call);
            call_free(call);
        }
        if (cb)
            cb(c, &res, data);
    }
    uv_timer_stop(&c->retry_timer);
    rl_close(c->rl, NULL, NULL);
    c->rl = NULL;
    maybe_finish_close(c);
}

uv_loop_t *kapi_client_loop(struct kapi_client *c)
{
    return c->loop;
}

const char *kapi_client_server(struct kapi_client *c)
{
    return c->server;
}

size_t kapi_client_pending(struct kapi_client *c)
{
    return c->ncalls;
}

int kapi_client_set_rate(struct kapi_client *c, double qps, int burst)
{
    if (!c || !(qps > 0.0) || qps > 1e9 || burst < 1)
        return -EINVAL;
    if (c->closing || !c->rl)
        return 0;
    c->o.qps = qps;
    c->o.burst = burst;
    rl_set_burst(c->rl, burst);
    c->qps_now = qps;
    c->rate_changed_ms = uv_now(c->loop);
    rl_set_qps(c->rl, qps);
    return 0;
}

double kapi_client_qps(const struct kapi_client *c)
{
    return c->qps_now;
}

uint64_t kapi_client_throttled(const struct kapi_client *c)
{
    return c->throttled;
}

int kapi_client_version(const struct kapi_client *c, int *major, int *minor)
{
    if (!c || c->ver_major <= 0)
        return -EAGAIN;
    *major = c->ver_major;
    *minor = c->ver_minor;
    return 0;
}

/* "20", or "20+" as some distributions write it: the leading digits. */
static int version_part(const json_t *v)
{
    const char *s = json_string_value(v);
    long n = 0;

    if (!s || *s < '0' || *s > '9')
        return -1;
    for (; *s >= '0' && *s <= '9'; s++) {
        n = n * 10 + (*s - '0');
        if (n > 100000)
            return -1;
    }
    return (int)n;
}

int kapi_client_note_version(struct kapi_client *c, const json_t *version)
{
    int major = version_part(json_object_get(version, "major"));
    int minor = version_part(json_object_get(version, "minor"));

    if (!c || major <= 0 || minor < 0)
        return -EBADMSG;
    c->ver_major = major;
    c->ver_minor = minor;
    return 0;
}

void kapi_client_conn_info(struct kapi_client *c, struct kapi_conn_info *ret)
{
    static const char prefix[] = "Authorization: Bearer ";

    refresh_token(c);
    *ret = (struct kapi_conn_info){
        .server = c->server,
        .tls_server_name = c->tls_server_name,
        .ca = c->ca,
        .ca_len = c->ca_len,
        .cert = c->cert,
        .cert_len = c->cert_len,
        .key = c->key,
        .key_len = c->key_len,
        .token = c->auth_header && strncmp(c->auth_header, prefix, sizeof(prefix) - 1) == 0
                     ? c->auth_header + sizeof(prefix) - 1
                     : NULL,
        .insecure = c->insecure,
    };
}

/* ---------------------------------------------------------------------------------------------- */
/* paths */

const struct kapi_resource kapi_pods = {"", "v1", "pods", "Pod", true};
const struct kapi_resource kapi_nodes = {"", "v1", "nodes", "Node", false};
const struct kapi_resource kapi_namespaces = {"", "v1", "namespaces", "Namespace", false};
const struct kapi_resource kapi_configmaps = {"", "v1", "configmaps", "ConfigMap", true};
const struct kapi_resource kapi_secrets = {"", "v1", "secrets", "Secret", true};
const struct kapi_resource kapi_services = {"", "v1", "services", "Service", true};
const struct kapi_resource kapi_events = {"", "v1", "events", "Event", true};
const struct kapi_resource kapi_serviceaccounts = {"", "v1", "serviceaccounts", "ServiceAccount",
                                                   true};
const struct kapi_resource kapi_leases = {"coordination.k8s.io", "v1", "leases", "Lease", true};
const struct kapi_resource kapi_deployments = {"apps", "v1", "deployments", "Deployment", true};
const struct kapi_resource kapi_daemonsets = {"apps", "v1", "daemonsets", "DaemonSet", true};
const struct kapi_resource kapi_resourcequotas = {"", "v1", "resourcequotas", "ResourceQuota",
                                                  true};
const struct kapi_resource kapi_limitranges = {"", "v1", "limitranges", "LimitRange", true};
const struct kapi_resource kapi_crds = {"apiextensions.k8s.io", "v1", "customresourcedefinitions",
                                        "CustomResourceDefinition", false};
const struct kapi_resource kapi_csrs = {"certificates.k8s.io", "v1", "certificatesigningrequests",
                                        "CertificateSigningRequest", false};

static bool segment_ok(const char *s)
{
    if (!s || !*s || strlen(s) > 253)
        return false;
    if (strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
        return false;
    for (const char *p = s; *p; p++)
        if (*p == '/' || *p == '%' || *p == '?' || *p == '#' || (unsigned char)*p <= 0x20 ||
            (unsigned char)*p >= 0x7f)
            return false;
    return true;
}

int kapi_path(struct sbuf *b, const struct kapi_resource *r, const char *ns, const char *name,
              const char *sub)
{
    int e;

    if (!r || !segment_ok(r->version) || !segment_ok(r->resource))
        return -EINVAL;
    if (r->group && r->group[0]) {
        if (!segment_ok(r->group))
            return -EINVAL;
        e = sbuf_printf(b, "/apis/%s/%s", r->group, r->version);
    } else {
        e = sbuf_printf(b, "/api/%s", r->version);
    }
    if (e < 0)
        return e;
    if (r->namespaced && ns) {
        if (!segment_ok(ns))
            return -EINVAL;
        if ((e = sbuf_printf(b, "/namespaces/%s", ns)) < 0)
            return e;
    }
    if ((e = sbuf_printf(b, "/%s", r->resource)) < 0)
        return e;
    if (name) {
        if (!segment_ok(name))
            return -EINVAL;
        if ((e = sbuf_printf(b, "/%s", name)) < 0)
            return e;
    }
    if (sub) {
        if (!name || !segment_ok(sub))
            return -EINVAL;
        if ((e = sbuf_printf(b, "/%s", sub)) < 0)
            return e;
    }
    return 0;
}

int kapi_query_add(struct sbuf *b, const char *key, const char *value)
{
    static const char hex[] = "0123456789ABCDEF";
    int e;

    e = sbuf_adds(b, strchr(sbuf_str(b), '?') ? "&" : "?");
    if (e >= 0)
        e = sbuf_adds(b, key);
    if (e >= 0)
        e = sbuf_adds(b, "=");
    for (const unsigned char *p = (const unsigned char *)value; e >= 0 && *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '_' || *p == '.' || *p == '~') {
            e = sbuf_add(b, p, 1);
        } else {
            char enc[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            e = sbuf_add(b, enc, 3);
        }
    }
    return e;
}

/* ---------------------------------------------------------------------------------------------- */
/* typed operations */

static int send_json_ex(struct kapi_client *c, const char *method, struct sbuf *path, json_t *obj,
                        const char *content_type, bool metadata_only, kapi_cb cb, void *data)
{
    struct kapi_request req = {.method = method,
                               .path = sbuf_str(path),
                               .content_type = content_type,
                               .max_body = KAPI_MAX_OBJECT_BODY,
                               .metadata_only = metadata_only};
    char *body = NULL;
    int r;

    if (obj) {
        body = json_dumps(obj, JSON_COMPACT);
        if (!body)
            return -ENOMEM;
        req.body = body;
        req.body_len = strlen(body);
    }
    r = kapi_send(c, &req, cb, data, NULL);
    free(body); /* allocated by jansson */
    return r;
}

static int send_json(struct kapi_client *c, const char *method, struct sbuf *path, json_t *obj,
                     const char *content_type, kapi_cb cb, void *data)
{
    return send_json_ex(c, method, path, obj, content_type, false, cb, data);
}

int kapi_get(struct kapi_client *c, const struct kapi_resource *r, const char *ns, const char *name,
             kapi_cb cb, void *data)
{
    struct sbuf p;
    int e;

    sbuf_init(&p, MAX_PATH_LEN);
    e = kapi_path(&p, r, ns, name, NULL);
    if (e >= 0)
        e = send_json(c, "GET", &p, NULL, NULL, cb, data);
    sbuf_done(&p);
    return e;
}

int kapi_list_path(struct sbuf *b, const struct kapi_resource *r, const char *ns,
                   const struct kapi_list_opts *o)
{
    char num[32];
    int e;

    e = kapi_path(b, r, ns, NULL, NULL);
    if (e >= 0 && o && o->label_selector)
        e = kapi_query_add(b, "labelSelector", o->label_selector);
    if (e >= 0 && o && o->field_selector)
        e = kapi_query_add(b, "fieldSelector", o->field_selector);
    if (e >= 0 && o && o->limit > 0) {
        snprintf(num, sizeof(num), "%ld", o->limit);
        e = kapi_query_add(b, "limit", num);
    }
    if (e >= 0 && o && o->continue_token)
        e = kapi_query_add(b, "continue", o->continue_token);
    if (e >= 0 && o && o->resource_version)
        e = kapi_query_add(b, "resourceVersion", o->resource_version);
    return e;
}

int kapi_list(struct kapi_client *c, const struct kapi_resource *r, const char *ns,
              const struct kapi_list_opts *o, kapi_cb cb, void *data)
{
    struct sbuf p;
    int e;

    sbuf_init(&p, MAX_PATH_LEN);
    e = kapi_list_path(&p, r, ns, o);
    if (e >= 0) {
        struct kapi_request req = {.method = "GET", .path = sbuf_str(&p)}; /* max_body: a list */

        e = kapi_send(c, &req, cb, data, NULL);
    }
    sbuf_done(&p);
    return e;
}

static int create(struct kapi_client *c, const struct kapi_resource *r, const char *ns, json_t *obj,
                  bool metadata_only, kapi_cb cb, void *data)
{
    struct sbuf p;
    int e;

    if (!obj)
        return -EINVAL;
    sbuf_init(&p, MAX_PATH_LEN);
    e = kapi_path(&p, r, ns, NULL, NULL);
    if (e >= 0)
        e = send_json_ex(c, "POST", &p, obj, NULL, metadata_only, cb, data);
    sbuf_done(&p);
    return e;
}

int kapi_create(struct kapi_client *c, const struct kapi_resource *r, const char *ns, json_t *obj,
                kapi_cb cb, void *data)
{
    return create(c, r, ns, obj, false, cb, data);
}

int kapi_create_meta(struct kapi_client *c, const struct kapi_resource *r, const char *ns,
                     json_t *obj, kapi_cb cb, void *data)
{
    return create(c, r, ns, obj, true, cb, data);
}

int kapi_update(struct kapi_client *c, const struct kapi_resource *r, const char *ns,
                const char *name, const char *sub, json_t *obj, kapi_cb cb, void *data)
{
    struct sbuf p;
    int e;

    if (!obj)
        return -EINVAL;
    sbuf_init(&p, MAX_PATH_LEN);
    e = kapi_path(&p, r, ns, name, sub);
    if (e >= 0)
        e = send_json(c, "PUT", &p, obj, NULL, cb, data);
    sbuf_done(&p);
    return e;
}

static int patch_call(struct kapi_client *c, const struct kapi_resource *r, const char *ns,
                      const char *name, const char *sub, enum kapi_patch_type type,
                      const char *patch, bool metadata_only, kapi_cb cb, void *data)
{
    static const char *const types[] = {
        [KAPI_PATCH_MERGE] = "application/merge-patch+json",
        [KAPI_PATCH_JSON] = "application/json-patch+json",
        [KAPI_PATCH_STRATEGIC] = "application/strategic-merge-patch+json",
    };
    struct kapi_request req = {.method = "PATCH", .metadata_only = metadata_only};
    struct sbuf p;
    int e;

    if (!patch || (unsigned)type > KAPI_PATCH_STRATEGIC)
        return -EINVAL;
    sbuf_init(&p, MAX_PATH_LEN);
    e = kapi_path(&p, r, ns, name, sub);
    if (e >= 0) {
        req.path = sbuf_str(&p);
        req.body = patch;
        req.body_len = strlen(patch);
        req.content_type = types[type];
        e = kapi_send(c, &req, cb, data, NULL);
    }
    sbuf_done(&p);
    return e;
}

int kapi_patch(struct kapi_client *c, const struct kapi_resource *r, const char *ns,
               const char *name, const char *sub, enum kapi_patch_type type, const char *patch,
               kapi_cb cb, void *data)
{
    return patch_call(c, r, ns, name, sub, type, patch, false, cb, data);
}

int kapi_patch_meta(struct kapi_client *c, const struct kapi_resource *r, const char *ns,
                    const char *name, const char *sub, enum kapi_patch_type type, const char *patch,
                    kapi_cb cb, void *data)
{
    return patch_call(c, r, ns, name, sub, type, patch, true, cb, data);
}

int kapi_apply(struct kapi_client *c, const struct kapi_resource *r, const char *ns,
               const char *name, const char *sub, json_t *obj, const char *field_manager,
               bool force, kapi_cb cb, void *data)
{
    struct sbuf p;
    int e;

    if (!obj || !field_manager || !*field_manager)
        return -EINVAL;
    sbuf_init(&p, MAX_PATH_LEN);
    e = kapi_path(&p, r, ns, name, sub);
    if (e >= 0)
        e = kapi_query_add(&p, "fieldManager", field_manager);
    if (e >= 0 && force)
        e = kapi_query_add(&p, "force", "true");
    if (e >= 0)
        e = send_json(c, "PATCH", &p, obj, "application/apply-patch+yaml", cb, data);
    sbuf_done(&p);
    return e;
}

int kapi_delete(struct kapi_client *c, const struct kapi_resource *r, const char *ns,
                const char *name, const struct kapi_delete_opts *o, kapi_cb cb, void *data)
{
    struct sbuf p;
    json_t *body = NULL, *pre = NULL;
    int e;

    sbuf_init(&p, MAX_PATH_LEN);
    e = kapi_path(&p, r, ns, name, NULL);
    if (e < 0)
        goto out;
    if (o) {
        e = -ENOMEM;
        body = json_pack("{s:s,s:s}", "kind", "DeleteOptions", "apiVersion", "v1");
        if (!body)
            goto out;
        if (o->propagation &&
            json_object_set_new(body, "propagationPolicy", json_string(o->propagation)) < 0)
            goto out;
        if (o->grace_period_seconds >= 0 &&
            json_object_set_new(body, "gracePeriodSeconds", json_integer(o->grace_period_seconds)) <
                0)
            goto out;
        if (o->precondition_uid || o->precondition_resource_version) {
            pre = json_object();
            if (!pre)
                goto out;
            if (o->precondition_uid &&
                json_object_set_new(pre, "uid", json_string(o->precondition_uid)) < 0)
                goto out;
            if (o->precondition_resource_version &&
                json_object_set_new(pre, "resourceVersion",
                                    json_string(o->precondition_resource_version)) < 0)
                goto out;
            if (json_object_set_new(body, "preconditions", pre) < 0) {
                pre = NULL;
                goto out;
            }
            pre = NULL;
        }
    }
    e = send_json(c, "DELETE", &p, body, NULL, cb, data);
out:
    json_decref(pre);
    json_decref(body);
    sbuf_done(&p);
    return e;
}

/* ---------------------------------------------------------------------------------------------- */
/* sync helpers and JSON accessors */

void kapi_sync_cb(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct kapi_sync *s = data;

    (void)c;
    s->done = true;
    s->err = res->err;
    s->http_status = res->http_status;
    s->body = res->body ? json_incref(res->body) : NULL;
    snprintf(s->reason, sizeof(s->reason), "%s", res->status.reason ? res->status.reason : "");
    snprintf(s->message, sizeof(s->message), "%s", res->status.message ? res->status.message : "");
    if (s->keep_raw && res->raw && (s->raw = x_malloc(res->raw_len + 1))) {
        memcpy(s->raw, res->raw, res->raw_len);
        s->raw[res->raw_len] = '\0';
        s->raw_len = res->raw_len;
    }
}

int kapi_sync_wait(struct kapi_client *c, struct kapi_sync *s)
{
    while (!s->done)
        if (uv_run(c->loop, UV_RUN_ONCE) == 0 && !s->done)
            return -EDEADLK; /* nothing left that could complete it */
    return s->err;
}

void kapi_sync_done(struct kapi_sync *s)
{
    json_decref(s->body);
    s->body = NULL;
    x_free(s->raw);
    s->raw = NULL;
    s->raw_len = 0;
}

const char *kapi_obj_name(const json_t *obj)
{
    return jsn_str_at(obj, "metadata", "name", NULL);
}

const char *kapi_obj_namespace(const json_t *obj)
{
    return jsn_str_at(obj, "metadata", "namespace", NULL);
}

const char *kapi_obj_rv(const json_t *obj)
{
    return jsn_str_at(obj, "metadata", "resourceVersion", NULL);
}

const char *kapi_obj_uid(const json_t *obj)
{
    return jsn_str_at(obj, "metadata", "uid", NULL);
}

bool kapi_observation_labels(const struct kapi_observation *o, const char **ret_verb, char *code,
                             size_t codelen)
{
    if (o->err == -ECANCELED && o->http_status == 0)
        return false;
    *ret_verb = o->streaming ? "WATCH" : o->method;
    if (o->http_status > 0)
        snprintf(code, codelen, "%ld", o->http_status);
    else
        snprintf(code, codelen, "error");
    return true;
}
