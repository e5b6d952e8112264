/* kla_service: see service.h. */
#include "kubeletapi/service.h"
#include "kubeletapi/http.h"

#include "common/log.h"
#include "common/netaddr.h"
#include "common/rfc3339.h"
#include "common/strutil.h"
#include "common/xalloc.h"
#include "kube/api.h"
#include "kube/backoff.h"
#include "kube/informer.h"
#include "kube/names.h"
#include "peering/pki.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define MOD           "kubelet-api"
#define SIGNER        "kubernetes.io/kubelet-serving"
#define CA_CONFIGMAP  "extension-apiserver-authentication"
#define CA_KEY        "client-ca-file"
#define POLL_MS       1000
#define ISSUE_TIMEOUT (120 * 1000)
#define MIN_RENEW_MS  (60 * 1000)
#define MAX_PEM       (256u << 10)
#define MAX_RENEW_S   (INT64_C(400) * 86400) /* a timer longer than this is of no use */
#define MAX_NAME      63                     /* a DNS label */

struct kla_service {
    uv_loop_t *loop;
    struct kapi_client *c;
    char *addr, *node_address, *name;
    struct kla_server *srv;
    struct kla_relay *relay;
    struct kla_sar *sar;
    struct inf_informer *ca_inf;
    char *ca_pem;
    bool given_cert, listening, closing;
    /* certificate */
    EVP_PKEY *key;      /* the key of the request in progress */
    char *key_pem;      /* its PEM */
    char csr_name[254]; /* the request in progress */
    struct kapi_call *call;
    uint64_t issue_deadline;
    uv_timer_t *csr_timer, *listen_timer;
    struct backoff csr_bo, listen_bo;
    struct kla_service_stats st;
    void (*done)(void *data);
    void *done_data;
};

static void csr_start(uv_timer_t *t);
static void maybe_listen(struct kla_service *s);

void kla_service_label(const char *text, char *buf, size_t size)
{
    size_t n = 0, max = size - 1 < 63 ? size - 1 : 63;

    if (size == 0)
        return;
    for (const char *p = text; *p && n < max; p++) {
        char c = *p;

        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
            c = '-';
        if (c == '-' && (n == 0 || buf[n - 1] == '-'))
            continue; /* no leading or doubled '-' */
        buf[n++] = c;
    }
    while (n > 0 && buf[n - 1] == '-')
        n--;
    if (n == 0) {
        snprintf(buf, size, "cliqo");
        return;
    }
    buf[n] = '\0';
}

uint64_t kla_service_renew_ms(int64_t not_before, int64_t not_after, int64_t now)
{
    __int128 wait;

    if (not_after <= not_before || now >= not_after)
        return MIN_RENEW_MS;
    /* Two thirds of the life, in 128 bits: no overflow for any three 64-bit times. */
    wait = (__int128)not_before + ((__int128)not_after - not_before) * 2 / 3 - now;
    if (wait <= MIN_RENEW_MS / 1000)
        return MIN_RENEW_MS;
    if (wait > MAX_RENEW_S)
        return (uint64_t)MAX_RENEW_S * 1000;
    return (uint64_t)wait * 1000;
}

static bool valid_address(const char *a)
{
    unsigned char ip[16];
    const char *label = a;

    if (inet_pton(AF_INET, a, ip) == 1 || inet_pton(AF_INET6, a, ip) == 1)
        return true;
    /* A DNS name for the SAN: dot-separated RFC 1123 labels, at most 253 characters. */
    if (!*a || strlen(a) > 253)
        return false;
    for (const char *p = a;; p++) {
        if (*p == '.' || *p == '\0') {
            size_t n = (size_t)(p - label);

            if (n == 0 || n > 63 || label[0] == '-' || p[-1] == '-')
                return false;
            if (*p == '\0')
                return true;
            label = p + 1;
        } else if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9') || *p == '-')) {
            return false;
        }
    }
}

int kla_service_check(const struct kla_service_options *o, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t sl;

    if (!o || !o->listen_addr || netaddr_parse(o->listen_addr, &ss, &sl) < 0) {
        snprintf(err, errlen, "listen address '%s': want HOST:PORT",
                 o && o->listen_addr ? o->listen_addr : "");
        return -EINVAL;
    }
    if (!o->node_address || !valid_address(o->node_address)) {
        snprintf(err, errlen, "node address '%s': want an IP address or a DNS name",
                 o->node_address ? o->node_address : "");
        return -EINVAL;
    }
    if (!o->name || !kname_dns_label(o->name) || strlen(o->name) > MAX_NAME) {
        snprintf(err, errlen, "name '%s': want a DNS label of at most %d characters",
                 o->name ? o->name : "", MAX_NAME);
        return -EINVAL;
    }
    if (!o->cert_pem != !o->key_pem) {
        snprintf(err, errlen, "a serving certificate needs its key (both or neither)");
        return -EINVAL;
    }
    if (o->cert_pem && (strlen(o->cert_pem) > MAX_PEM || strlen(o->key_pem) > MAX_PEM)) {
        snprintf(err, errlen, "the serving certificate or key is larger than %u bytes", MAX_PEM);
        return -EINVAL;
    }
    return 0;
}

/* ---- the certificate ----------------------------------------------------------------------- */

static void csr_clear(struct kla_service *s)
{
    EVP_PKEY_free(s->key);
    s->key = NULL;
    if (s->key_pem)
        OPENSSL_cleanse(s->key_pem, strlen(s->key_pem));
    x_free(s->key_pem);
    s->key_pem = NULL;
    s->csr_name[0] = '\0';
}

static void csr_retry(struct kla_service *s, const char *what, const char *detail)
{
    uint64_t ms = backoff_next(&s->csr_bo);

    log_warn(MOD, "serving certificate: %s%s%s; trying again in %llu ms", what,
             detail && *detail ? ": " : "", detail ? detail : "", (unsigned long long)ms);
    csr_clear(s);
    if (!s->closing)
        uv_timer_start(s->csr_timer, csr_start, ms, 0);
}

static char *pem_of_req(X509_REQ *req)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *p, *out = NULL;
    long n;

    if (b && PEM_write_bio_X509_REQ(b, req) == 1 && (n = BIO_get_mem_data(b, &p)) > 0)
        out = x_strndup(p, (size_t)n);
    BIO_free(b);
    return out;
}

static char *base64(const char *data, size_t len)
{
    size_t n = 4 * ((len + 2) / 3);
    char *out = x_malloc(n + 1);

    if (out &&
        EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)data, (int)len) != (int)n) {
        x_free(out);
        return NULL;
    }
    return out;
}

/* The request for our key: O=system:nodes, CN=system:node:<name>, the node address as SAN. */
static char *build_request(struct kla_service *s)
{
    X509_REQ *req = X509_REQ_new();
    X509_NAME *n = X509_NAME_new();
    STACK_OF(X509_EXTENSION) *exts = sk_X509_EXTENSION_new_null();
    X509_EXTENSION *san = NULL;
    char cn[300], sanv[300];
    unsigned char ip[16];
    char *pem = NULL;
    bool is_ip = inet_pton(AF_INET, s->node_address, ip) == 1 ||
                 inet_pton(AF_INET6, s->node_address, ip) == 1;

    snprintf(cn, sizeof(cn), "system:node:%s", s->name);
    snprintf(sanv, sizeof(sanv), "%s:%s", is_ip ? "IP" : "DNS", s->node_address);
    if (!req || !n || !exts ||
        X509_NAME_add_entry_by_txt(n, "O", MBSTRING_UTF8, (const unsigned char *)"system:nodes", -1,
                                   -1, 0) != 1 ||
        X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0) !=
            1 ||
        X509_REQ_set_subject_name(req, n) != 1 || X509_REQ_set_pubkey(req, s->key) != 1)
        goto out;
    /* The address was validated (IP, or a DNS name without ',' or ':'), so the configuration
     * string holds exactly one name. */
    san = X509V3_EXT_conf_nid(NULL, NULL, NID_subject_alt_name, sanv);
    if (!san || !sk_X509_EXTENSION_push(exts, san))
        goto out;
    san = NULL;
    if (X509_REQ_add_extensions(req, exts) != 1 || X509_REQ_sign(req, s->key, EVP_sha256()) <= 0)
        goto out;
    pem = pem_of_req(req);
out:
    X509_EXTENSION_free(san);
    sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
    X509_NAME_free(n);
    X509_REQ_free(req);
    ERR_clear_error();
    return pem;
}

static void install(struct kla_service *s, const char *cert_pem)
{
    BIO *b = BIO_new_mem_buf(cert_pem, -1);
    X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    char err[256];
    int64_t nb = 0, na = 0, now = (int64_t)time(NULL);
    int days, secs;

    if (!x || X509_check_private_key(x, s->key) != 1) {
        X509_free(x);
        BIO_free(b);
        ERR_clear_error();
        csr_retry(s, "the issued certificate does not carry our key", s->csr_name);
        return;
    }
    if (ASN1_TIME_diff(&days, &secs, NULL, X509_get0_notAfter(x)) == 1)
        na = now + (int64_t)days * 86400 + secs;
    if (ASN1_TIME_diff(&days, &secs, NULL, X509_get0_notBefore(x)) == 1)
        nb = now + (int64_t)days * 86400 + secs;
    X509_free(x);
    BIO_free(b);
    if (kla_server_set_tls(s->srv, cert_pem, s->key_pem, NULL, err, sizeof(err)) < 0) {
        csr_retry(s, "the issued certificate is not usable", err);
        return;
    }
    {
        char until[RFC3339_MAX];

        rfc3339_format(na, 0, 0, until, sizeof(until));
        log_info(MOD,
                 "serving certificate from CertificateSigningRequest %s (CN system:node:%s, SAN"
                 " %s), valid until %s; renewal in %llu s",
                 s->csr_name, s->name, s->node_address, until,
                 (unsigned long long)(kla_service_renew_ms(nb, na, now) / 1000));
    }
    s->st.have_cert = true;
    s->st.cert_expires = na;
    backoff_reset(&s->csr_bo);
    csr_clear(s);
    uv_timer_start(s->csr_timer, csr_start, kla_service_renew_ms(nb, na, now), 0);
    maybe_listen(s);
}

/* Sends obj (borrowed) as method to the object path of a request (name NULL: the collection),
 * keeping the call's handle so that closing the service cancels it. */
static int send_csr(struct kla_service *s, const char *method, const char *name, const char *sub,
                    json_t *obj, kapi_cb cb)
{
    struct kapi_request req = {.method = method};
    struct sbuf p;
    char *body = NULL;
    int r;

    sbuf_init(&p, 1024);
    r = kapi_path(&p, &kapi_csrs, NULL, name, sub);
    if (r < 0)
        goto out;
    if (obj) {
        body = json_dumps(obj, JSON_COMPACT);
        if (!body) {
            r = -ENOMEM;
            goto out;
        }
        req.body = body;
        req.body_len = strlen(body);
    }
    req.path = sbuf_str(&p);
    r = kapi_send(s->c, &req, cb, s, &s->call);
out:
    free(body); /* jansson's allocator */
    sbuf_done(&p);
    return r;
}

static void csr_poll(uv_timer_t *t);

static void on_got(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct kla_service *s = data;
    json_t *st = json_object_get(res->body, "status"), *conds = json_object_get(st, "conditions"),
           *cond;
    const char *b64 = json_string_value(json_object_get(st, "certificate"));
    size_t i;

    (void)c;
    s->call = NULL;
    if (s->closing)
        return;
    if (res->err < 0) {
        csr_retry(s, "cannot read the CertificateSigningRequest", res->status.message);
        return;
    }
    json_array_foreach(conds, i, cond)
    {
        const char *type = json_string_value(json_object_get(cond, "type"));
        const char *msg = json_string_value(json_object_get(cond, "message"));

        if (type && (strcmp(type, "Denied") == 0 || strcmp(type, "Failed") == 0)) {
            csr_retry(s,
                      strcmp(type, "Denied") == 0 ? "the request was denied"
                                                  : "the signer failed the request",
                      msg);
            return;
        }
    }
    if (b64 && *b64) {
        unsigned char *pem = x_malloc(strlen(b64) + 1);
        int n = pem ? EVP_DecodeBlock(pem, (const unsigned char *)b64, (int)strlen(b64)) : -1;

        if (n <= 0 || (size_t)n > MAX_PEM) {
            x_free(pem);
            csr_retry(s, "status.certificate is not base64", s->csr_name);
            return;
        }
        pem[n] = '\0'; /* EVP_DecodeBlock pads with NULs: the PEM ends before them */
        install(s, (const char *)pem);
        x_free(pem);
        return;
    }
    if (uv_now(s->loop) > s->issue_deadline) {
        csr_retry(s, "no certificate was issued in time (is the kubelet-serving signer running?)",
                  s->csr_name);
        return;
    }
    uv_timer_start(s->csr_timer, csr_poll, POLL_MS, 0);
}

static void csr_poll(uv_timer_t *t)
{
    struct kla_service *s = t->data;
    int r = send_csr(s, "GET", s->csr_name, NULL, NULL, on_got);

    if (r < 0)
        csr_retry(s, "cannot read the CertificateSigningRequest", strerror(-r));
}

static void on_approved(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct kla_service *s = data;

    (void)c;
    s->call = NULL;
    if (s->closing)
        return;
    if (res->err < 0) {
        csr_retry(s, "cannot approve the CertificateSigningRequest", res->status.message);
        return;
    }
    s->issue_deadline = uv_now(s->loop) + ISSUE_TIMEOUT;
    uv_timer_start(s->csr_timer, csr_poll, 200, 0);
}

static void on_created(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct kla_service *s = data;
    const char *name = kapi_obj_name(res->body);
    json_t *obj, *cond;
    int r;

    (void)c;
    s->call = NULL;
    if (s->closing)
        return;
    if (res->err < 0 || !name || strlen(name) >= sizeof(s->csr_name)) {
        csr_retry(s, "cannot create a CertificateSigningRequest", res->status.message);
        return;
    }
    snprintf(s->csr_name, sizeof(s->csr_name), "%s", name);
    s->st.csrs++;
    /* Approve the request just created (only this one: the object the API answered with). */
    obj = json_deep_copy(res->body);
    cond = json_pack("{s:[{s:s,s:s,s:s,s:s}]}", "conditions", "type", "Approved", "status", "True",
                     "reason", "CliqoKubeletServing", "message",
                     "approved by cliqo for the kubelet API of its virtual nodes");
    if (!obj || !cond || json_object_set_new(obj, "status", cond) < 0) {
        json_decref(obj);
        csr_retry(s, "out of memory", NULL);
        return;
    }
    r = send_csr(s, "PUT", s->csr_name, "approval", obj, on_approved);
    json_decref(obj);
    if (r < 0)
        csr_retry(s, "cannot approve the CertificateSigningRequest", strerror(-r));
}

static void csr_start(uv_timer_t *t)
{
    struct kla_service *s = t->data;
    char *req_pem = NULL, *req64 = NULL, gen[80];
    json_t *obj = NULL;
    int r;

    if (s->closing)
        return;
    csr_clear(s);
    s->key = EVP_EC_gen("P-256");
    if (!s->key || peer_pki_key_pem(s->key, &s->key_pem) < 0 || !(req_pem = build_request(s)) ||
        !(req64 = base64(req_pem, strlen(req_pem)))) {
        ERR_clear_error();
        x_free(req_pem);
        x_free(req64);
        csr_retry(s, "cannot build a key and request", NULL);
        return;
    }
    snprintf(gen, sizeof(gen), "cliqo-kubelet-%s-", s->name);
    obj = json_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:{s:s,s:s,s:[s,s,s]}}", "apiVersion",
                    "certificates.k8s.io/v1", "kind", "CertificateSigningRequest", "metadata",
                    "generateName", gen, "labels", "app.kubernetes.io/part-of", "cliqo", "spec",
                    "request", req64, "signerName", SIGNER, "usages", "digital signature",
                    "key encipherment", "server auth");
    x_free(req_pem);
    x_free(req64);
    if (!obj) {
        csr_retry(s, "out of memory", NULL);
        return;
    }
    r = send_csr(s, "POST", NULL, NULL, obj, on_created);
    json_decref(obj);
    if (r < 0)
        csr_retry(s, "cannot create a CertificateSigningRequest", strerror(-r));
}

/* ---- the client CA ------------------------------------------------------------------------- */

static void ca_seen(struct inf_informer *inf, json_t *obj, void *data)
{
    struct kla_service *s = data;
    const char *ca = json_string_value(json_object_get(json_object_get(obj, "data"), CA_KEY));
    char err[256];

    (void)inf;
    if (s->closing || !ca || !*ca || (s->ca_pem && strcmp(s->ca_pem, ca) == 0))
        return;
    if (strlen(ca) > MAX_PEM || kla_server_set_tls(s->srv, NULL, NULL, ca, err, sizeof(err)) < 0) {
        log_warn(MOD, "ConfigMap kube-system/%s: %s is not usable (%s), keeping the current one",
                 CA_CONFIGMAP, CA_KEY, strlen(ca) > MAX_PEM ? "too large" : err);
        return;
    }
    x_free(s->ca_pem);
    s->ca_pem = x_strdup(ca);
    log_info(MOD, "client CA from ConfigMap kube-system/%s %s", CA_CONFIGMAP,
             s->st.have_ca ? "changed" : "loaded");
    s->st.have_ca = true;
    maybe_listen(s);
}

static void ca_updated(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    ca_seen(inf, new_obj, data);
}

static void ca_error(struct inf_informer *inf, int err, const char *message, void *data)
{
    (void)inf;
    (void)data;
    log_warn(MOD, "cannot follow ConfigMap kube-system/%s: %s (%s)", CA_CONFIGMAP, message,
             strerror(-err));
}

static const struct inf_handlers ca_handlers = {
    .on_add = ca_seen, .on_update = ca_updated, .on_error = ca_error};

/* ---- the listener -------------------------------------------------------------------------- */

static void listen_retry(uv_timer_t *t)
{
    maybe_listen(t->data);
}

static void maybe_listen(struct kla_service *s)
{
    char err[256];
    int r;

    if (s->closing || s->listening || !s->st.have_cert || !s->st.have_ca)
        return;
    r = kla_server_start(s->srv, err, sizeof(err));
    if (r < 0) {
        uint64_t ms = backoff_next(&s->listen_bo);

        log_warn(MOD, "kubelet API: %s; trying again in %llu ms", err, (unsigned long long)ms);
        uv_timer_start(s->listen_timer, listen_retry, ms, 0);
        return;
    }
    s->listening = true;
    s->st.listening = true;
    s->st.port = kla_server_port(s->srv);
    log_info(MOD, "kubelet API listening on %s (nodes publish %s:%u)", s->addr, s->node_address,
             kla_server_port(s->srv));
}

/* ---- life cycle ---------------------------------------------------------------------------- */

static void service_free(struct kla_service *s)
{
    void (*done)(void *) = s->done;
    void *dd = s->done_data;

    kla_relay_free(s->relay);
    kla_sar_free(s->sar);
    csr_clear(s);
    x_free(s->ca_pem);
    x_free(s->addr);
    x_free(s->node_address);
    x_free(s->name);
    x_free(s);
    if (done)
        done(dd);
}

static void server_closed(void *data)
{
    service_free(data);
}

int kla_service_new(uv_loop_t *loop, struct kapi_client *local, const struct kla_service_options *o,
                    struct kla_service **ret)
{
    struct kla_service *s;
    struct kla_server_options so = {0};
    struct inf_options io = {.resource = &kapi_configmaps,
                             .namespace_ = "kube-system",
                             .field_selector = "metadata.name=" CA_CONFIGMAP,
                             .store = INF_STORE_TREE,
                             .max_objects = 4};
    char err[256];
    int r = -ENOMEM;

    if (!loop || !local || !ret)
        return -EINVAL;
    r = kla_service_check(o, err, sizeof(err));
    if (r < 0) {
        log_warn(MOD, "kubelet API: %s", err);
        return r;
    }
    r = -ENOMEM;
    s = x_calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->loop = loop;
    s->c = local;
    backoff_init(&s->csr_bo, 1000, 300000);
    backoff_init(&s->listen_bo, 1000, 300000);
    s->addr = x_strdup(o->listen_addr);
    s->node_address = x_strdup(o->node_address);
    s->name = x_strdup(o->name);
    s->csr_timer = ktimer_new(loop, s);
    s->listen_timer = ktimer_new(loop, s);
    if (!s->addr || !s->node_address || !s->name || !s->csr_timer || !s->listen_timer)
        goto fail;
    r = kla_relay_new(loop, NULL, &s->relay);
    if (r == 0)
        r = kla_sar_new(local, NULL, &s->sar);
    if (r < 0)
        goto fail;
    so.addr = s->addr;
    so.backend = kla_relay_backend(s->relay);
    so.authz = kla_sar_authorizer(s->sar);
    r = kla_server_new(loop, &so, &s->srv);
    if (r < 0)
        goto fail;
    if (o->cert_pem) {
        r = kla_server_set_tls(s->srv, o->cert_pem, o->key_pem, NULL, err, sizeof(err));
        if (r < 0) {
            log_warn(MOD, "the given serving certificate: %s", err);
            goto fail;
        }
        s->given_cert = true;
        s->st.have_cert = true;
    } else {
        uv_timer_start(s->csr_timer, csr_start, 0, 0);
    }
    r = inf_new(local, &io, &ca_handlers, s, &s->ca_inf);
    if (r == 0)
        r = inf_start(s->ca_inf);
    if (r < 0)
        goto fail;
    *ret = s;
    return 0;
fail:
    kla_service_close(s, NULL, NULL);
    return r < 0 ? r : -ENOMEM;
}

void kla_service_set_resolver(struct kla_service *s, kla_resolve_fn fn, void *data)
{
    if (s && s->relay)
        kla_relay_set_resolver(s->relay, fn, data);
}

void kla_service_stats(const struct kla_service *s, struct kla_service_stats *ret)
{
    *ret = s->st;
    if (s->srv)
        kla_server_stats(s->srv, &ret->server);
    if (s->relay)
        kla_relay_stats(s->relay, &ret->relay_logs, &ret->relay_execs, &ret->relay_upstream_errors,
                        &ret->relay_open);
}

void kla_service_close(struct kla_service *s, void (*done)(void *data), void *data)
{
    if (!s || s->closing)
        return;
    s->closing = true;
    s->done = done;
    s->done_data = data;
    kapi_call_cancel(s->call);
    s->call = NULL;
    inf_free(s->ca_inf);
    s->ca_inf = NULL;
    ktimer_free(s->csr_timer);
    ktimer_free(s->listen_timer);
    s->csr_timer = s->listen_timer = NULL;
    if (s->srv) {
        kla_server_close(s->srv, server_closed, s);
        return;
    }
    service_free(s);
}
