/* kla_relay: the virtual kubelet's backend (kubeletapi.h).
 *
 * Each request becomes a job with a connection of its own to the provider's API server (TLS with
 * the target's credential, HTTP/1.1 only): libcurl, which the rest of the agent uses, cannot hand
 * over an upgraded connection, and a connection of our own lets a slow reader on one side pause
 * the other side (the upstream is not read while the client's buffer is full, and the other way
 * round), which libcurl's write callback cannot do without pausing a whole HTTP/2 connection.
 *
 *   logs: GET .../pods/{pod}/log?container&follow&... -> 200: the body (chunked, sized or until
 *         close) is re-chunked to the client as it arrives; other statuses pass back with their
 *         body (at most 64 KiB).
 *   exec: POST .../pods/{pod}/exec?command..&container&stdin&stdout&stderr&tty with Connection:
 *         Upgrade, Upgrade: SPDY/3.1 and the client's X-Stream-Protocol-Version values -> 101: the
 *         client gets 101 with the provider's choice and the two connections are joined; errors
 *         pass back with their status.
 *
 * A job ends when both its sides are closed. Nothing from the provider is interpreted beyond the
 * HTTP response head and the chunked framing, both parsed with bounds (http.c). */
#include "kubeletapi/conn.h"
#include "kubeletapi/http.h"
#include "kubeletapi/internal.h"

#include "common/jsonb.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/xalloc.h"
#include "kube/api.h"
#include "kube/backoff.h"
#include "kube/kubeconfig.h"
#include "kube/names.h"

#include <errno.h>
#include <jansson.h>
#include <netdb.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <string.h>

#define MOD            "kubelet-relay"
#define MAX_ERROR_BODY (64u << 10)
#define MAX_REQUEST    (KLA_HTTP_MAX_TARGET + 8192)
/* Client TLS contexts kept for reuse: one per provider credential in use (see ctx_get). */
#define MAX_TLS_CTX 32

enum job_state { J_RESOLVING, J_CONNECTING, J_HEAD, J_BODY, J_RAW };
enum body_mode { B_LENGTH, B_CHUNKED, B_CLOSE };

struct job {
    struct kla_relay *rl;
    struct job *prev, *next;
    bool exec;
    enum job_state state;
    struct kla_request *r; /* until answered or upgraded */
    struct kla__raw *raw;  /* exec, after the upgrade */
    struct kla_conn *up;   /* the provider */
    uv_getaddrinfo_t gai;
    bool gai_active;
    uv_timer_t *timer;
    SSL_CTX *ctx;
    char host[256], port[8], *sni, *verify;
    struct sbuf req;  /* the request to send */
    struct sbuf head; /* the response head as it arrives (rh points into it) */
    struct sbuf body; /* an error answer's body */
    struct kla_http_head rh;
    enum body_mode mode;
    uint64_t left;
    struct kla_chunked ch;
    bool ok;       /* 2xx: streaming to the client */
    bool finished; /* the answer to the client is complete */
    bool up_eof, client_eof;
    char desc[KLA_MAX_NS + KLA_MAX_POD + 2];
};

/* A client TLS context of one provider credential (CA, certificate, key), by their digest. */
struct tls_entry {
    unsigned char key[32];
    SSL_CTX *ctx; /* one reference is the cache's; each job using it holds one more */
    uint64_t used;
};

struct kla_relay {
    uv_loop_t *loop;
    struct kla_relay_options o;
    char *ua;
    kla_resolve_fn resolve;
    void *rdata;
    struct job *jobs;
    size_t njobs;
    bool closing; /* freed when the last job goes */
    uint64_t nlogs, nexecs, nerrors;
    struct tls_entry tls[MAX_TLS_CTX];
    size_t ntls;
    uint64_t tls_tick, tls_made, tls_reused;
};

static void job_maybe_free(struct job *j);
static void up_data(struct kla_conn *c, const char *buf, size_t len, void *data);
static void up_drain(struct kla_conn *c, void *data);
static void up_closed(struct kla_conn *c, int err, void *data);

static const struct kla_conn_ops up_ops = {.data = up_data, .drain = up_drain, .closed = up_closed};

/* ---- the client's side ---------------------------------------------------------------------- */

static void fail_client(struct job *j, unsigned status, const char *fmt, const char *detail)
{
    j->rl->nerrors++;
    if (!j->r)
        return;
    log_debug(MOD, "%s: %u: %s%s", j->desc, status, fmt, detail ? detail : "");
    kla_resp_error(j->r, status, "%s%s", fmt, detail ? detail : "");
    j->r = NULL;
    j->finished = true;
}

static void client_closed(struct kla_request *r, void *data)
{
    struct job *j = data;

    (void)r;
    j->r = NULL;
    j->finished = true;
    if (j->up)
        kla_conn_close(j->up, 0);
    job_maybe_free(j);
}

static void client_drain(struct kla_request *r, void *data)
{
    struct job *j = data;

    (void)r;
    if (j->up)
        kla_conn_pause(j->up, false);
}

/* raw pipe (exec after the upgrade) */
static void raw_data(void *d, const char *buf, size_t len)
{
    struct job *j = d;

    if (!j->up)
        return;
    if (len == 0) {
        j->client_eof = true;
        kla_conn_shutdown(j->up);
        return;
    }
    if (kla_conn_write(j->up, buf, len) < 0)
        return;
    if (!kla_conn_writable(j->up))
        kla__raw_pause(j->raw, true);
}

static void raw_drain(void *d)
{
    struct job *j = d;

    if (j->up)
        kla_conn_pause(j->up, false);
}

static void raw_closed(void *d, int err)
{
    struct job *j = d;

    (void)err;
    j->raw = NULL;
    if (j->up) {
        if (j->client_eof)
            kla_conn_shutdown(j->up);
        else
            kla_conn_close(j->up, 0);
    }
    job_maybe_free(j);
}

static const struct kla__raw_ops raw_ops = {
    .data = raw_data, .drain = raw_drain, .closed = raw_closed};

/* ---- the provider's side -------------------------------------------------------------------- */

static int to_client(void *data, const char *p, size_t n)
{
    struct job *j = data;
    int e;

    if (!j->r)
        return -EPIPE;
    e = kla_resp_write(j->r, p, n);
    if (e < 0)
        return e;
    if (!kla_resp_writable(j->r))
        kla_conn_pause(j->up, true);
    return 0;
}

static void finish_ok(struct job *j)
{
    if (j->r && !j->finished) {
        kla_resp_end(j->r);
        j->r = NULL;
    }
    j->finished = true;
    if (j->up)
        kla_conn_close(j->up, 0);
}

static int to_sbuf(void *data, const char *p, size_t n)
{
    struct sbuf *b = data;

    if (sbuf_len(b) + n > MAX_ERROR_BODY)
        return -E2BIG;
    return sbuf_add(b, p, n);
}

/* The provider's error answer is complete: pass it on with its status. The provider's API
 * server wraps its kubelet's text in a metav1.Status; the message is what a kubelet would have
 * answered, so that is what goes back (the home API server wraps it again). */
static void error_done(struct job *j)
{
    if (j->r) {
        char ct[128];
        const char *type = kla_http_header(&j->rh, "Content-Type", ct, sizeof(ct)) > 0
                               ? ct
                               : "text/plain; charset=utf-8";
        json_t *st = NULL;

        if (strncmp(type, "application/json", 16) == 0 &&
            jsonb_load(sbuf_str(&j->body), sbuf_len(&j->body), 0, 0, 0, &st, NULL) < 0)
            st = NULL;
        const char *kind = json_string_value(json_object_get(st, "kind"));
        const char *msg = json_string_value(json_object_get(st, "message"));

        if (kind && msg && strcmp(kind, "Status") == 0)
            kla_resp_send(j->r, j->rh.status, "text/plain; charset=utf-8", msg, strlen(msg));
        else
            kla_resp_send(j->r, j->rh.status, type, sbuf_str(&j->body), sbuf_len(&j->body));
        json_decref(st);
        j->r = NULL;
    }
    j->finished = true;
    if (j->up)
        kla_conn_close(j->up, 0);
}

/* Body bytes of the provider's answer (len 0: the provider closed the connection). */
static void body_data(struct job *j, const char *buf, size_t len)
{
    bool eof = len == 0;
    ssize_t used;

    if (j->mode == B_LENGTH && len > j->left)
        len = (size_t)j->left;
    if (!j->ok) {
        /* An error answer: kept (bounded) and sent when complete. */
        if (j->mode == B_CHUNKED) {
            used = len ? kla_chunked_feed(&j->ch, buf, len, to_sbuf, &j->body) : 0;
            if (used < 0 || (eof && !j->ch.done)) {
                fail_client(j, 502, "the provider's error answer is malformed or too large", NULL);
                if (j->up)
                    kla_conn_close(j->up, -EPROTO);
                return;
            }
            if (j->ch.done)
                error_done(j);
            return;
        }
        if (len && to_sbuf(&j->body, buf, len) < 0) {
            fail_client(j, 502, "the provider's error answer is too large", NULL);
            kla_conn_close(j->up, -E2BIG);
            return;
        }
        if (j->mode == B_LENGTH) {
            j->left -= len;
            if (j->left == 0)
                error_done(j);
            else if (eof)
                fail_client(j, 502, "the provider closed the connection early", NULL);
        } else if (eof) {
            error_done(j);
        }
        return;
    }
    if (eof) {
        finish_ok(j); /* a stream the provider ended (a follow, a body sent until close) */
        return;
    }
    if (j->mode == B_CHUNKED) {
        used = kla_chunked_feed(&j->ch, buf, len, to_client, j);
        if (used < 0) {
            /* Malformed framing, or the client went away: stop here. */
            if (j->up)
                kla_conn_close(j->up, -EPROTO);
            return;
        }
        if (j->ch.done)
            finish_ok(j);
        return;
    }
    if (to_client(j, buf, len) < 0)
        return;
    if (j->mode == B_LENGTH) {
        j->left -= len;
        if (j->left == 0)
            finish_ok(j);
    }
}

static void got_head(struct job *j, const char *rest, size_t rest_len)
{
    char buf[64], proto[128];
    uint64_t cl = 0;
    int e;

    ktimer_free(j->timer); /* the answer came: no more deadline */
    j->timer = NULL;
    if (j->exec && j->rh.status == 101) {
        if (!kla_http_has_token(&j->rh, "Upgrade", "SPDY/3.1")) {
            fail_client(j, 502, "the provider upgraded to another protocol", NULL);
            kla_conn_close(j->up, -EPROTO);
            return;
        }
        if (kla_http_header(&j->rh, "X-Stream-Protocol-Version", proto, sizeof(proto)) < 0)
            proto[0] = '\0';
        e = kla__upgrade_raw(j->r, proto, &raw_ops, j, &j->raw);
        j->r = NULL;
        if (e < 0) {
            kla_conn_close(j->up, e);
            return;
        }
        j->state = J_RAW;
        j->finished = true;
        kla_conn_set_idle(j->up, 0);
        if (rest_len && kla__raw_write(j->raw, rest, rest_len) < 0)
            return;
        return;
    }
    if (j->rh.status < 200 || j->rh.status == 204 || j->rh.status == 304 ||
        (j->exec && j->rh.status < 400)) {
        fail_client(j, 502, "unexpected answer from the provider", NULL);
        kla_conn_close(j->up, -EPROTO);
        return;
    }
    j->ok = j->rh.status >= 200 && j->rh.status < 300;
    e = kla_http_header(&j->rh, "Transfer-Encoding", buf, sizeof(buf));
    if (e >= 0) {
        if (!kla_http_has_token(&j->rh, "Transfer-Encoding", "chunked")) {
            fail_client(j, 502, "unsupported transfer encoding from the provider", NULL);
            kla_conn_close(j->up, -EPROTO);
            return;
        }
        j->mode = B_CHUNKED;
    } else if ((e = kla_http_content_length(&j->rh, &cl)) == 0) {
        j->mode = B_LENGTH;
        j->left = cl;
    } else if (e == -ENOENT) {
        j->mode = B_CLOSE;
    } else {
        fail_client(j, 502, "bad Content-Length from the provider", NULL);
        kla_conn_close(j->up, -EPROTO);
        return;
    }
    j->state = J_BODY;
    if (j->ok) {
        char ct[128];
        const char *type =
            kla_http_header(&j->rh, "Content-Type", ct, sizeof(ct)) > 0 ? ct : "text/plain";

        e = kla_resp_begin(j->r, j->rh.status, type);
        if (e < 0) {
            kla_conn_close(j->up, e);
            return;
        }
        kla_resp_on_drain(j->r, client_drain, j);
    }
    if (j->mode == B_LENGTH && j->left == 0) {
        if (j->ok)
            finish_ok(j);
        else
            error_done(j);
        return;
    }
    if (rest_len)
        body_data(j, rest, rest_len);
}

static void up_data(struct kla_conn *c, const char *buf, size_t len, void *data)
{
    struct job *j = data;
    int e;

    (void)c;
    if (j->state == J_RAW) {
        if (!j->raw)
            return;
        if (len == 0) {
            j->up_eof = true;
            kla__raw_shutdown(j->raw);
            kla_conn_shutdown(j->up);
            return;
        }
        if (kla__raw_write(j->raw, buf, len) == 0 && !kla__raw_writable(j->raw))
            kla_conn_pause(j->up, true);
        return;
    }
    if (j->state == J_BODY) {
        if (len == 0)
            j->up_eof = true;
        body_data(j, buf, len);
        if (len == 0 && j->up)
            kla_conn_close(j->up, 0);
        return;
    }
    /* J_HEAD */
    if (len == 0) {
        fail_client(j, 502, "the provider closed the connection without an answer", NULL);
        kla_conn_close(j->up, 0);
        return;
    }
    if (sbuf_add(&j->head, buf, len) < 0) {
        fail_client(j, 502, "the provider's answer head is too large", NULL);
        kla_conn_close(j->up, -E2BIG);
        return;
    }
    e = kla_http_parse_response(sbuf_str(&j->head), sbuf_len(&j->head), &j->rh);
    if (e == -EAGAIN)
        return;
    if (e < 0) {
        fail_client(j, 502, "the provider's answer is not HTTP/1.1", NULL);
        kla_conn_close(j->up, -EPROTO);
        return;
    }
    /* j->head is not written again: rh keeps pointing into it for the job's life. */
    got_head(j, sbuf_str(&j->head) + j->rh.head_len, sbuf_len(&j->head) - j->rh.head_len);
}

static void up_drain(struct kla_conn *c, void *data)
{
    struct job *j = data;

    (void)c;
    if (j->state == J_RAW && j->raw)
        kla__raw_pause(j->raw, false);
}

static void up_closed(struct kla_conn *c, int err, void *data)
{
    struct job *j = data;

    (void)c;
    j->up = NULL;
    if (j->state == J_RAW) {
        if (j->raw && !j->up_eof)
            kla__raw_shutdown(j->raw);
    } else if (!j->finished) {
        if (j->state == J_BODY && j->ok)
            finish_ok(j); /* a follow stream the provider ended */
        else if (err == -ETIMEDOUT)
            fail_client(j, 504, "the provider did not answer in time", NULL);
        else if (err == -EPROTO)
            fail_client(j, 502, "TLS with the provider failed: ", kla_conn_tls_error(c));
        else
            fail_client(j, 502, "cannot reach the provider: ", strerror(err < 0 ? -err : EIO));
    }
    job_maybe_free(j);
}

/* ---- jobs ----------------------------------------------------------------------------------- */

static void relay_destroy(struct kla_relay *rl)
{
    for (size_t i = 0; i < rl->ntls; i++)
        SSL_CTX_free(rl->tls[i].ctx);
    x_free(rl->ua);
    x_free(rl);
}

static void job_maybe_free(struct job *j)
{
    struct kla_relay *rl = j->rl;

    if (j->up || j->r || j->raw || j->gai_active)
        return;
    ktimer_free(j->timer);
    SSL_CTX_free(j->ctx);
    sbuf_done(&j->req);
    sbuf_done(&j->head);
    sbuf_done(&j->body);
    x_free(j->sni);
    x_free(j->verify);
    if (j->prev)
        j->prev->next = j->next;
    else
        rl->jobs = j->next;
    if (j->next)
        j->next->prev = j->prev;
    rl->njobs--;
    x_free(j);
    if (rl->closing && rl->njobs == 0)
        relay_destroy(rl);
}

static void on_deadline(uv_timer_t *t)
{
    struct job *j = t->data;

    if (j->up)
        kla_conn_close(j->up, -ETIMEDOUT);
    else if (!j->finished)
        fail_client(j, 504, "the provider did not answer in time", NULL);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *ai)
{
    struct job *j = req->data;
    struct kla_conn_limits lim = {0};
    int e;

    j->gai_active = false;
    if (!j->r) { /* the client left meanwhile */
        uv_freeaddrinfo(ai);
        job_maybe_free(j);
        return;
    }
    if (status < 0 || !ai) {
        fail_client(j, 502, "cannot resolve the provider's API server: ", uv_strerror(status));
        uv_freeaddrinfo(ai);
        job_maybe_free(j);
        return;
    }
    j->state = J_CONNECTING;
    e = kla_conn_connect(j->rl->loop, ai->ai_addr, j->ctx, j->sni, j->verify, &lim, &up_ops, j,
                         &j->up);
    uv_freeaddrinfo(ai);
    if (e < 0) {
        j->up = NULL;
        fail_client(j, 502, "cannot connect to the provider: ", strerror(-e));
        job_maybe_free(j);
        return;
    }
    j->state = J_HEAD;
    if (kla_conn_write(j->up, sbuf_str(&j->req), sbuf_len(&j->req)) < 0)
        return; /* closing: up_closed answers */
}

/* Splits "https://host[:port][/path]"; the path prefix goes to ret_prefix. */
static int parse_server(const char *url, char *host, size_t hsize, char *port, size_t psize,
                        const char **ret_prefix)
{
    const char *h, *he, *p = NULL, *rest;

    if (strncmp(url, "https://", 8) != 0)
        return -EPROTONOSUPPORT;
    h = url + 8;
    if (*h == '[') {
        he = strchr(h, ']');
        if (!he)
            return -EINVAL;
        rest = he + 1;
        h++;
    } else {
        he = h + strcspn(h, ":/");
        rest = he;
    }
    if (*rest == ':') {
        p = rest + 1;
        rest = p + strcspn(p, "/");
    }
    if (he == h || (size_t)(he - h) >= hsize || (p && ((size_t)(rest - p) >= psize || rest == p)))
        return -EINVAL;
    memcpy(host, h, (size_t)(he - h));
    host[he - h] = '\0';
    if (p) {
        memcpy(port, p, (size_t)(rest - p));
        port[rest - p] = '\0';
    } else {
        snprintf(port, psize, "443");
    }
    *ret_prefix = rest;
    return 0;
}

/* The digest of a credential's TLS material: each part with its length, so that no two different
 * credentials share a key. */
static int tls_key(const struct kapi_conn_info *ci, unsigned char key[32])
{
    const unsigned char *part[3] = {ci->ca, ci->cert, ci->key};
    size_t len[3] = {ci->ca ? ci->ca_len : 0, ci->cert ? ci->cert_len : 0,
                     ci->key ? ci->key_len : 0};
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned int n = 0;
    int r = -ENOMEM;

    if (!md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1)
        goto out;
    for (int i = 0; i < 3; i++) {
        uint64_t l = len[i];

        if (EVP_DigestUpdate(md, &l, sizeof(l)) != 1 ||
            (l && EVP_DigestUpdate(md, part[i], len[i]) != 1))
            goto out;
    }
    if (EVP_DigestFinal_ex(md, key, &n) == 1 && n == 32)
        r = 0;
out:
    EVP_MD_CTX_free(md);
    return r;
}

/* The client TLS context of a credential, with a reference for the caller. One context per
 * credential, shared by every log and exec stream that uses it: a context holds the parsed CA
 * store, certificate and key (about 170 KiB), a stream then adds only its connection. At most
 * MAX_TLS_CTX are kept, the least recently used goes first (its streams keep their references);
 * a rotated credential is a new key, so its streams never use the old context. */
static int ctx_get(struct kla_relay *rl, const struct kapi_conn_info *ci, SSL_CTX **ret, char *err,
                   size_t errlen)
{
    unsigned char key[32];
    struct tls_entry *e = NULL;
    SSL_CTX *ctx = NULL;
    int r = tls_key(ci, key);

    if (r < 0)
        return r;
    for (size_t i = 0; i < rl->ntls; i++) {
        if (memcmp(rl->tls[i].key, key, sizeof(key)) == 0) {
            e = &rl->tls[i];
            break;
        }
    }
    if (!e) {
        r = kla__tls_client_ctx(ci->ca, ci->ca_len, ci->cert, ci->cert_len, ci->key, ci->key_len,
                                &ctx, err, errlen);
        if (r < 0)
            return r;
        if (rl->ntls < MAX_TLS_CTX) {
            e = &rl->tls[rl->ntls++];
        } else {
            e = &rl->tls[0];
            for (size_t i = 1; i < rl->ntls; i++)
                if (rl->tls[i].used < e->used)
                    e = &rl->tls[i];
            SSL_CTX_free(e->ctx);
        }
        memcpy(e->key, key, sizeof(key));
        e->ctx = ctx;
        rl->tls_made++;
    } else {
        rl->tls_reused++;
    }
    e->used = ++rl->tls_tick;
    if (SSL_CTX_up_ref(e->ctx) != 1)
        return -ENOMEM;
    *ret = e->ctx;
    return 0;
}

/* Builds the upstream request from the target's credential and starts resolving. */
static int job_start(struct job *j, const struct kla_target *t, const char *path_query,
                     const char *extra_headers)
{
    struct kapi_conn_info ci;
    const char *prefix = "";
    char err[256];
    int e;

    if (t->client) {
        kapi_client_conn_info(t->client, &ci);
    } else if (t->config) {
        ci = (struct kapi_conn_info){.server = t->config->server,
                                     .tls_server_name = t->config->tls_server_name,
                                     .ca = t->config->ca_pem,
                                     .ca_len = t->config->ca_pem_len,
                                     .cert = t->config->cert_pem,
                                     .cert_len = t->config->cert_pem_len,
                                     .key = t->config->key_pem,
                                     .key_len = t->config->key_pem_len,
                                     .token = t->config->token,
                                     .insecure = t->config->insecure_skip_tls_verify};
    } else {
        return -EINVAL;
    }
    /* The provider's credential came from a peer: it must not weaken TLS (https://, a pinned
     * CA, verification on), whatever client it was loaded into. */
    e = kc_check_peer_conn("provider credential", ci.server, ci.ca ? ci.ca_len : 0, ci.insecure,
                           err, sizeof(err));
    if (e < 0) {
        log_warn(MOD, "%s: %s", j->desc, err);
        return e;
    }
    e = parse_server(ci.server, j->host, sizeof(j->host), j->port, sizeof(j->port), &prefix);
    if (e < 0)
        return e;
    e = ctx_get(j->rl, &ci, &j->ctx, err, sizeof(err));
    if (e < 0) {
        log_debug(MOD, "%s: provider credential unusable: %s", j->desc, err);
        return e;
    }
    j->sni = x_strdup(ci.tls_server_name ? ci.tls_server_name : j->host);
    j->verify = ci.insecure ? NULL : x_strdup(ci.tls_server_name ? ci.tls_server_name : j->host);
    if (!j->sni || (!ci.insecure && !j->verify))
        return -ENOMEM;
    e = sbuf_printf(&j->req,
                    "%s %s%s HTTP/1.1\r\nHost: %s%s%s:%s\r\nUser-Agent: %s\r\nAccept: */*\r\n%s%s%s"
                    "%s\r\n",
                    j->exec ? "POST" : "GET", prefix, path_query, strchr(j->host, ':') ? "[" : "",
                    j->host, strchr(j->host, ':') ? "]" : "", j->port, j->rl->ua,
                    ci.token ? "Authorization: Bearer " : "", ci.token ? ci.token : "",
                    ci.token ? "\r\n" : "", extra_headers);
    if (e < 0)
        return -E2BIG;
    j->gai.data = j;
    e = uv_getaddrinfo(j->rl->loop, &j->gai, on_resolved, j->host, j->port,
                       &(struct addrinfo){.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM});
    if (e < 0)
        return -EHOSTUNREACH;
    j->gai_active = true;
    j->timer = ktimer_new(j->rl->loop, j);
    if (j->timer)
        uv_timer_start(j->timer, on_deadline, j->rl->o.connect_timeout_ms, 0);
    return 0;
}

static struct job *job_new(struct kla_relay *rl, struct kla_request *r, bool exec,
                           const struct kla_pod_ref *ref)
{
    struct job *j = x_calloc(1, sizeof(*j));

    if (!j)
        return NULL;
    j->rl = rl;
    j->r = r;
    j->exec = exec;
    sbuf_init(&j->req, MAX_REQUEST);
    sbuf_init(&j->head, KLA_HTTP_MAX_HEAD);
    sbuf_init(&j->body, MAX_ERROR_BODY + 1);
    snprintf(j->desc, sizeof(j->desc), "%s/%s", ref->ns, ref->pod);
    j->next = rl->jobs;
    if (rl->jobs)
        rl->jobs->prev = j;
    rl->jobs = j;
    rl->njobs++;
    return j;
}

/* Appends "key=value" to the query in q (a KLA_HTTP_MAX_TARGET buffer). */
static int qadd(char *q, size_t *len, const char *k, const char *v)
{
    int n = kla_query_append(q, KLA_HTTP_MAX_TARGET, *len, k, v);

    if (n < 0)
        return n;
    *len = (size_t)n;
    return 0;
}

static int pod_path(char *buf, size_t size, const struct kla_target *t, const char *sub)
{
    int n;

    if (!kname_dns_label(t->ns) || !kname_dns_subdomain(t->pod))
        return -EINVAL;
    n = snprintf(buf, size, "/api/v1/namespaces/%s/pods/%s/%s?", t->ns, t->pod, sub);
    return n > 0 && (size_t)n < size ? n : -E2BIG;
}

static int relay_node_of(void *data, const char *ns, const char *pod, char *ret_node)
{
    struct kla_relay *rl = data;
    struct kla_target t;
    int e;

    if (!rl->resolve)
        return -ENOENT;
    memset(&t, 0, sizeof(t));
    e = rl->resolve(rl->rdata, ns, pod, &t);
    /* -EAGAIN names the node too: the request is authorised against it, then answered 503. */
    if ((e < 0 && e != -EAGAIN) || !t.node[0])
        return -ENOENT;
    snprintf(ret_node, KLA_MAX_NODE + 1, "%s", t.node);
    return 0;
}

static int relay_start(struct kla_relay *rl, struct kla_request *r, const struct kla_pod_ref *ref,
                       bool exec, const char *query, size_t qlen, const char *extra)
{
    struct kla_target t;
    struct job *j;
    char *path;
    int n, e;

    memset(&t, 0, sizeof(t));
    if (!rl->resolve)
        return -ENOENT;
    e = rl->resolve(rl->rdata, ref->ns, ref->pod, &t);
    if (e < 0)
        return e == -EAGAIN ? -EAGAIN : -ENOENT;
    path = x_malloc(KLA_HTTP_MAX_TARGET + 512);
    if (!path)
        return -ENOMEM;
    n = pod_path(path, KLA_HTTP_MAX_TARGET + 512, &t, exec ? "exec" : "log");
    if (n < 0 || (size_t)n + qlen >= KLA_HTTP_MAX_TARGET + 512) {
        x_free(path);
        return -EINVAL;
    }
    memcpy(path + n, query, qlen);
    path[n + (int)qlen] = '\0';
    j = job_new(rl, r, exec, ref);
    if (!j) {
        x_free(path);
        return -ENOMEM;
    }
    kla_req_on_closed(r, client_closed, j);
    e = job_start(j, &t, path, extra);
    x_free(path);
    if (e < 0) {
        fail_client(j, 502,
                    e == -EPROTONOSUPPORT ? "the provider's API server is not HTTPS"
                    : e == -EPERM
                        ? "the provider's credential does not verify its server (see the agent log)"
                        : "cannot open a connection to the provider: ",
                    e == -EPROTONOSUPPORT || e == -EPERM ? NULL : strerror(-e));
        job_maybe_free(j);
        return 0;
    }
    if (exec)
        rl->nexecs++;
    else
        rl->nlogs++;
    return 0;
}

static int relay_logs(void *data, struct kla_request *r, const struct kla_pod_ref *ref,
                      const struct kla_logs_opts *o)
{
    char q[KLA_HTTP_MAX_TARGET], num[24];
    size_t len = 0;
    int e;

    q[0] = '\0';
    e = qadd(q, &len, "container", ref->container);
    if (!e && o->follow)
        e = qadd(q, &len, "follow", "true");
    if (!e && o->previous)
        e = qadd(q, &len, "previous", "true");
    if (!e && o->timestamps)
        e = qadd(q, &len, "timestamps", "true");
    if (!e && o->tail_lines >= 0) {
        snprintf(num, sizeof(num), "%lld", (long long)o->tail_lines);
        e = qadd(q, &len, "tailLines", num);
    }
    if (!e && o->since_seconds >= 0) {
        snprintf(num, sizeof(num), "%lld", (long long)o->since_seconds);
        e = qadd(q, &len, "sinceSeconds", num);
    }
    if (!e && o->since_time >= 0)
        e = qadd(q, &len, "sinceTime", o->since_time_str);
    if (!e && o->limit_bytes >= 0) {
        snprintf(num, sizeof(num), "%lld", (long long)o->limit_bytes);
        e = qadd(q, &len, "limitBytes", num);
    }
    if (e < 0)
        return -EINVAL;
    return relay_start(data, r, ref, false, q, len, "");
}

static int relay_exec(void *data, struct kla_request *r, const struct kla_pod_ref *ref,
                      const struct kla_exec_opts *o)
{
    char *q = x_malloc(KLA_HTTP_MAX_TARGET);
    struct sbuf hdr;
    const char *protos = kla_req_stream_protocols(r), *p;
    size_t len = 0;
    int e = 0;

    if (!q)
        return -ENOMEM;
    q[0] = '\0';
    for (size_t i = 0; i < o->ncommand && !e; i++)
        e = qadd(q, &len, "command", o->command[i]);
    if (!e)
        e = qadd(q, &len, "container", ref->container);
    if (!e && o->in)
        e = qadd(q, &len, "stdin", "true");
    if (!e && o->out)
        e = qadd(q, &len, "stdout", "true");
    if (!e && o->err)
        e = qadd(q, &len, "stderr", "true");
    if (!e && o->tty)
        e = qadd(q, &len, "tty", "true");
    if (e < 0) {
        x_free(q);
        return -EINVAL;
    }
    /* The client's protocol versions, one header each, as kubectl sends them. */
    sbuf_init(&hdr, 2048);
    e = sbuf_adds(&hdr, "Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\nContent-Length: 0\r\n");
    for (p = protos; !e && *p;) {
        size_t n = strcspn(p, ",");
        const char *v = p, *ve = p + n;

        while (v < ve && *v == ' ')
            v++;
        while (ve > v && ve[-1] == ' ')
            ve--;
        if (ve > v)
            e = sbuf_printf(&hdr, "X-Stream-Protocol-Version: %.*s\r\n", (int)(ve - v), v);
        p += n;
        if (*p == ',')
            p++;
    }
    if (e == 0)
        e = relay_start(data, r, ref, true, q, len, sbuf_str(&hdr));
    else
        e = -EINVAL;
    sbuf_done(&hdr);
    x_free(q);
    return e;
}

/* ---- the relay ------------------------------------------------------------------------------ */

int kla_relay_new(uv_loop_t *loop, const struct kla_relay_options *o, struct kla_relay **ret)
{
    struct kla_relay *rl;

    if (!loop || !ret)
        return -EINVAL;
    rl = x_calloc(1, sizeof(*rl));
    if (!rl)
        return -ENOMEM;
    rl->loop = loop;
    rl->o = o ? *o : (struct kla_relay_options){0};
    if (!rl->o.connect_timeout_ms)
        rl->o.connect_timeout_ms = 15000;
    rl->ua = x_strdup(rl->o.user_agent ? rl->o.user_agent : "cliqo-kubelet-relay/" CLIQO_VERSION);
    if (!rl->ua) {
        x_free(rl);
        return -ENOMEM;
    }
    rl->o.user_agent = rl->ua;
    *ret = rl;
    return 0;
}

void kla_relay_set_resolver(struct kla_relay *rl, kla_resolve_fn fn, void *data)
{
    rl->resolve = fn;
    rl->rdata = data;
}

struct kla_backend kla_relay_backend(struct kla_relay *rl)
{
    return (struct kla_backend){
        .node_of = relay_node_of, .logs = relay_logs, .exec = relay_exec, .data = rl};
}

void kla_relay_free(struct kla_relay *rl)
{
    if (!rl)
        return;
    /* The server is closed, so every client side is gone; jobs still closing their provider
     * side free themselves from its callback, and the last one frees the relay. */
    rl->closing = true;
    rl->resolve = NULL;
    for (struct job *j = rl->jobs; j; j = j->next) {
        if (j->up)
            kla_conn_close(j->up, -ESHUTDOWN);
        if (j->gai_active)
            uv_cancel((uv_req_t *)&j->gai);
    }
    if (rl->njobs == 0)
        relay_destroy(rl);
}

void kla_relay_tls_stats(const struct kla_relay *rl, uint64_t *ret_made, uint64_t *ret_reused,
                         size_t *ret_kept)
{
    if (ret_made)
        *ret_made = rl->tls_made;
    if (ret_reused)
        *ret_reused = rl->tls_reused;
    if (ret_kept)
        *ret_kept = rl->ntls;
}

void kla_relay_stats(const struct kla_relay *rl, uint64_t *ret_logs, uint64_t *ret_execs,
                     uint64_t *ret_upstream_errors, size_t *ret_open)
{
    if (ret_logs)
        *ret_logs = rl->nlogs;
    if (ret_execs)
        *ret_execs = rl->nexecs;
    if (ret_upstream_errors)
        *ret_upstream_errors = rl->nerrors;
    if (ret_open)
        *ret_open = rl->njobs;
}
