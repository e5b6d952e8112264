/* admission: see admission.h. How the pieces fit:
 *
 *  - Serving (every replica): an informer on Secret cliqo-webhook-certs (handlers on every
 *    replica) loads tls.crt/tls.key; the first pair creates and starts the HTTPS server with the
 *    registered routes, later pairs replace the certificate in place (httpd_set_tls).
 *  - Keeping (the leader): one work-queue key, "sync", reconciled level-triggered with at most one
 *    write per pass: the certificates first (admin/certs.h plans the step), then the two webhook
 *    configurations (server-side apply, only when a field we set differs). Secret and
 *    configuration events requeue it; so does the time of the next planned step.
 *  - The offer enforcement (handler of /validate-pods): namespaces (index by origin label), pods
 *    (the broadcaster's trimmed informer, whose events keep running totals of the live pods'
 *    requests per namespace: a check sums the consumer's namespaces, whatever its number of pods),
 *    ForeignClusters (the offer as recorded when this replica is not the broadcaster), and a
 *    reservation ledger of pods admitted but not yet seen in the pod informer (admission/ledger.h),
 *    named ones and those created with generateName alike (a validating webhook sees the
 *    generated name and the UID), so that a burst of creations cannot overshoot the offer between
 *    admission and the watch event.
 *  - Who may call (docs/security.md, "The webhooks authenticate the API server"): with
 *    --webhook-client-ca the server requires the API server's client certificate in the TLS
 *    handshake (the file is re-read every CA_RELOAD_MS); without it anybody who reaches the port
 *    may send a review, and the offer enforcement assumes any review may be forged: reservations
 *    last ADM_LEDGER_CONFIRM_MS unless the informer shows their pod, refusals show no usage
 *    figures and do not name the expected identity. */
#include "admission/admission.h"
#include "admission/certs.h"
#include "admission/ledger.h"
#include "admission/mod_podsec.h"
#include "admission/objects.h"
#include "admission/offer.h"
#include "admission/placement.h"
#include "offer/share.h"
#include "agent/config.h"
#include "agent/ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/json.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/xalloc.h"
#include "kube/backoff.h"
#include "kube/names.h"
#include "peering/identity.h"
#include "peering/objects.h"
#include "peering/pki.h"
#include "peering/resources.h"

#define MOD                  "admission"
#define KEY                  "sync"
#define FIELD_MANAGER        "cliqo-agent-admission"
#define MAX_WEBHOOKS         4
#define ADM_CONNECTION_LIMIT 256
/* A new connection of the API server waits up to this long, accepted, while reviews are in
 * progress (httpd.h, handshake_hold_ms): the API server dials one per review that finds no idle
 * connection and drops the dial once a busy one frees up, so most of them never need a
 * handshake. Bursts of pod creations keep this loop busy for a few hundred ms: at 50 ms, 500 of
 * 1,000 reviews still came with a handshake, at 500 ms 300 (bench/offloading.sh, N = 1,000). A
 * review waits at most this much more, and only behind others. */
#define ADM_HANDSHAKE_HOLD_MS 500
#define CA_RELOAD_MS          60000
#define RETRY_MS              1000
#define MAX_REQUEUE_S         3600
#define IDX_ORIGIN            "origin"
#define IDX_NAMESPACE         "namespace"
#define SECRET_MAX            (PEER_PKI_PEM_MAX * (ADM_MAX_PREVIOUS + 1))

static const struct kapi_resource res_mutating = {"admissionregistration.k8s.io", "v1",
                                                  "mutatingwebhookconfigurations",
                                                  "MutatingWebhookConfiguration", false};
static const struct kapi_resource res_validating = {"admissionregistration.k8s.io", "v1",
                                                    "validatingwebhookconfigurations",
                                                    "ValidatingWebhookConfiguration", false};

struct adm;

struct webhook {
    char name[32];
    char path[64];
    adm_handler_fn fn;
    void *data;
    struct adm *ad; /* the module's state, once the server routes to it */
};

/* The certificate material of the Secret, decoded. */
struct material {
    char *ca, *ca_key, *next, *next_key, *previous, *tls, *tls_key;
    size_t ca_len, ca_key_len, next_len, next_key_len, previous_len, tls_len, tls_key_len;
    char rotate[16];
    const char *rv; /* borrowed from the Secret */
};

/* Creates admitted and not seen by the informer yet, so that a burst cannot overshoot the count
 * between admission and the watch event (as the offer's ledger). When the webhooks are not
 * authenticated, with the ledger's rules (admission/ledger.h): a create without the object's UID
 * holds nothing, a held one ends ADM_LEDGER_CONFIRM_MS after admission unless the informer shows
 * it, and a full table refuses nobody (forged reviews may have filled it), so that forged reviews
 * cannot keep a peer from creating its objects. */
#define TENANT_PENDING_MAX    256
#define TENANT_PENDING_TTL_MS 15000
struct tenant_pending {
    size_t kind;
    char ns[64], name[ADM_NAME_MAX + 1];
    uint64_t expires_ms;
};

/* The module's state (agent_module_data "admission"). */
struct adm {
    struct ctl_module mod;              /* first */
    struct webhook hooks[MAX_WEBHOOKS]; /* the registrations (adm_webhook_register), routed */
    size_t nhooks;
    bool sealed; /* a server exists: no more routes */
    struct httpd_server *srv;
    char *cert, *key; /* the pair the server uses */
    struct inf_informer *secret, *mcfg, *vcfg, *nss, *pods, *fcs, *config;
    struct inf_informer *tenant_objs[4]; /* tenant_kinds[i]: counted per tenant namespace */
    struct adm_usage *usage;             /* running totals of the pods' requests per namespace */
    struct adm_podsec podsec;
    const char *sans[ADM_MAX_SANS];
    char san_buf[ADM_MAX_SANS][256];
    size_t nsans;
    char next_hash[65]; /* of the next CA whose publication is timed */
    uint64_t published_since_ms;
    struct adm_ledger *ledger;
    struct tenant_pending tenant_pending[TENANT_PENDING_MAX];
    /* The API server's webhook client certificate: its CA bundle as last loaded from
     * --webhook-client-ca (NULL: the webhooks are not authenticated) and the names accepted. */
    char *client_ca;
    const char *client_cn[AGENT_MAX_WEBHOOK_CNS + 1];
    uv_timer_t *ca_timer;
    struct metrics_family *m_req, *m_dur, *m_conn;
};

/* One pass of the leader's sync. */
struct rec {
    struct ctl_rec h; /* first */
    struct adm *ad;
    const char *what; /* the object being written */
};

/* Whether the API server, and only it, can send reviews. */
static bool authenticated(const struct adm *ad)
{
    return ad->client_ca != NULL;
}

static uint64_t now_ms(struct adm *ad)
{
    return uv_now(agent_loop(ad->mod.a));
}

/* ---- registration and serving ----------------------------------------------------------------
 */

int adm_webhook_register(struct agent *a, const char *name, const char *path, adm_handler_fn fn,
                         void *data)
{
    struct adm *ad = a ? agent_module_data(a, MOD) : NULL;
    struct webhook *w;

    if (!name || !path || path[0] != '/' || !fn || strlen(name) >= sizeof(w->name) ||
        strlen(path) >= sizeof(w->path))
        return -EINVAL;
    if (!ad)
        return -ENOENT;
    for (size_t i = 0; i < ad->nhooks; i++)
        if (strcmp(ad->hooks[i].path, path) == 0)
            return -EEXIST;
    if (ad->nhooks >= MAX_WEBHOOKS || ad->sealed)
        return -ENOSPC;
    w = &ad->hooks[ad->nhooks++];
    snprintf(w->name, sizeof(w->name), "%s", name);
    snprintf(w->path, sizeof(w->path), "%s", path);
    w->fn = fn;
    w->data = data;
    w->ad = ad;
    return 0;
}

static void count(const struct webhook *w, const char *result, uint64_t t0)
{
    const char *l[3] = {w->name, result, NULL};
    const char *d[2] = {w->name, NULL};

    metrics_inc(w->ad->m_req, l);
    metrics_observe(w->ad->m_dur, d, (double)(uv_hrtime() - t0) / 1e9);
}

static void on_review(struct httpd_request *req, void *data)
{
    struct webhook *w = data;
    uint64_t t0 = uv_hrtime();
    struct adm_request ar;
    struct adm_verdict v = {.allowed = true};
    size_t len;
    const char *body = httpd_req_body(req, &len);
    char err[256], *text;
    int rc;

    rc = adm_review_decode(body, len, &ar, err, sizeof(err));
    if (rc < 0) {
        log_warn(MOD, "%s: malformed AdmissionReview from %s: %s", w->name, httpd_req_peer_ip(req),
                 err);
        httpd_respond_error(req, 400, "BadRequest", err);
        count(w, "invalid", t0);
        return;
    }
    w->fn(&ar, &v, w->data);
    text = adm_review_response(ar.uid, v.allowed, v.code, v.message, v.patch);
    if (!text) {
        httpd_respond_error(req, 500, "InternalError", "cannot encode the answer");
        count(w, "error", t0);
    } else {
        httpd_respond(req, 200, "application/json", text, strlen(text));
        if (!v.allowed)
            log_info(MOD, "%s: refused %s %s/%s by %s: %s", w->name, ar.operation, ar.ns,
                     ar.name[0] ? ar.name : "(generated)", ar.username, v.message);
        count(w, !v.allowed ? "denied" : json_array_size(v.patch) ? "patched" : "allowed", t0);
    }
    x_free(text);
    json_decref(v.patch);
    adm_request_done(&ar);
}

static void on_response(const struct httpd_request *req, const char *route, unsigned status,
                        void *data)
{
    (void)req;
    (void)data;
    if (status >= 400 && status != 400)
        log_debug(MOD, "webhook server answered %u on %s", status, route ? route : "(unmatched)");
}

static void free_pair(struct adm *ad)
{
    if (ad->key)
        OPENSSL_cleanse(ad->key, strlen(ad->key));
    x_free(ad->key);
    x_free(ad->cert);
    ad->key = ad->cert = NULL;
}

static int start_server(struct adm *ad, const char *cert, const char *key)
{
    const struct agent_config *cfg = agent_config(ad->mod.a);
    struct httpd_options o = {
        .name = "webhook",
        .addr = cfg->webhook_addr,
        .tls_cert_pem = cert,
        .tls_key_pem = key,
        .handler_timeout_ms = 10000,
        .on_response = on_response,
        /* The API servers are the clients, from a few addresses, one connection per concurrent
         * review: the defaults (16 per address) would refuse a burst of pod creations, and with
         * failurePolicy Fail refuse the pods. Slow clients are cut by httpd's request deadline. */
        .connection_limit = ADM_CONNECTION_LIMIT,
        .per_ip_connection_limit = ADM_CONNECTION_LIMIT,
        .handshake_hold_ms = ADM_HANDSHAKE_HOLD_MS,
        .client_ca_pem = ad->client_ca,
        .client_cn = ad->client_ca && ad->client_cn[0] ? ad->client_cn : NULL,
    };
    char err[256];
    int r;

    r = httpd_new(agent_loop(ad->mod.a), &o, &ad->srv);
    if (r < 0)
        return log_errno(r, MOD, "cannot create the webhook server on %s", cfg->webhook_addr);
    ad->sealed = true;
    for (size_t i = 0; i < ad->nhooks; i++) {
        r = httpd_route(ad->srv, "POST", ad->hooks[i].path, ADM_REVIEW_MAX, on_review,
                        &ad->hooks[i]);
        if (r < 0)
            return log_errno(r, MOD, "cannot add route %s", ad->hooks[i].path);
    }
    r = httpd_start(ad->srv, err, sizeof(err));
    if (r < 0) {
        log_error(MOD, "cannot serve the admission webhooks: %s", err);
        return r;
    }
    log_info(MOD, "admission webhooks listening on port %u (%s)", (unsigned)httpd_port(ad->srv),
             authenticated(ad) ? "clients must present the API server's webhook client certificate"
                               : "UNAUTHENTICATED: any client");
    return 0;
}

/* ---- the API server's client certificate ------------------------------------------------------
 */

/* Loads --webhook-client-ca: 0 with the bundle in *ret (the number of certificates in
 * *ret_count), or a negative errno with the reason logged. */
static int load_client_ca(struct adm *ad, const char *path, char **ret, int *ret_count)
{
    char *pem = NULL;
    int r = file_read(path, HTTPD_CLIENT_CA_MAX, 0, &pem, NULL);

    if (r < 0)
        return log_errno(r, MOD, "cannot read --webhook-client-ca %s", path);
    r = httpd_client_ca_check(pem, ad->client_cn[0] ? ad->client_cn : NULL);
    if (r < 0) {
        x_free(pem);
        return log_errno(r, MOD, "--webhook-client-ca %s holds no CA certificate that loads", path);
    }
    *ret = pem;
    *ret_count = r;
    return 0;
}

/* The file may be a mounted ConfigMap or Secret, updated in place: a new bundle is used from the
 * next handshake; one that does not load is ignored with a warning (the current one stays). */
static void on_ca_timer(uv_timer_t *t)
{
    struct adm *ad = t->data;
    const char *path = agent_config(ad->mod.a)->webhook_client_ca;
    char *pem = NULL;
    int n, r;

    if (!path || load_client_ca(ad, path, &pem, &n) < 0)
        return;
    if (ad->client_ca && strcmp(pem, ad->client_ca) == 0) {
        x_free(pem);
        return;
    }
    if (ad->srv) {
        r = httpd_set_client_ca(ad->srv, pem, ad->client_cn[0] ? ad->client_cn : NULL);
        if (r < 0) {
            log_warn(MOD, "cannot use the new --webhook-client-ca %s (%s): keeping the current one",
                     path, strerror(-r));
            x_free(pem);
            return;
        }
    }
    log_info(MOD, "the webhooks' client CA changed in %s: %d certificates from now on", path, n);
    x_free(ad->client_ca);
    ad->client_ca = pem;
}

/* At init: the mode of the webhooks, said once and clearly. */
static int setup_client_auth(struct adm *ad, const struct agent_config *cfg)
{
    struct sbuf names;
    int n, r;

    for (size_t i = 0; i < cfg->nwebhook_client_cn; i++)
        ad->client_cn[i] = cfg->webhook_client_cn[i];
    ad->client_cn[cfg->nwebhook_client_cn] = NULL;
    if (!cfg->webhook_client_ca) {
        log_warn(
            MOD,
            "the admission webhooks are NOT authenticated (no --webhook-client-ca): anyone who "
            "reaches %s can send reviews. Fallback mode: reservations of the offer last %u ms "
            "unless the pod informer confirms their pod, and refusals show no usage figures. "
            "Configure the API server's webhook client certificate (docs/security.md)",
            cfg->webhook_addr, ADM_LEDGER_CONFIRM_MS);
        return 0;
    }
    r = load_client_ca(ad, cfg->webhook_client_ca, &ad->client_ca, &n);
    if (r < 0)
        return r;
    sbuf_init(&names, 2048);
    for (size_t i = 0; i < cfg->nwebhook_client_cn; i++)
        sbuf_printf(&names, "%s\"%s\"", i ? ", " : "", cfg->webhook_client_cn[i]);
    log_info(MOD,
             "the admission webhooks authenticate the API server: a client certificate of the %d "
             "CA certificate(s) in %s is required in the TLS handshake, with common name %s",
             n, cfg->webhook_client_ca, sbuf_len(&names) ? sbuf_str(&names) : "any");
    sbuf_done(&names);
    ad->ca_timer = ktimer_new(agent_loop(ad->mod.a), ad);
    if (!ad->ca_timer)
        return -ENOMEM;
    uv_timer_start(ad->ca_timer, on_ca_timer, CA_RELOAD_MS, CA_RELOAD_MS);
    uv_unref((uv_handle_t *)ad->ca_timer);
    return 0;
}

/* Decodes data[key] of a Secret. */
static int secret_value(const json_t *secret, const char *key, char **ret, size_t *ret_len)
{
    const char *v = json_string_value(json_object_get(json_object_get(secret, "data"), key));

    *ret = NULL;
    *ret_len = 0;
    if (!v || !*v)
        return 0;
    return peer_base64_decode(v, SECRET_MAX, ret, ret_len);
}

static void material_done(struct material *m)
{
    char **keys[] = {&m->ca_key, &m->next_key, &m->tls_key};

    for (size_t i = 0; i < 3; i++)
        if (*keys[i])
            OPENSSL_cleanse(*keys[i], strlen(*keys[i]));
    x_free(m->ca);
    x_free(m->ca_key);
    x_free(m->next);
    x_free(m->next_key);
    x_free(m->previous);
    x_free(m->tls);
    x_free(m->tls_key);
    memset(m, 0, sizeof(*m));
}

static int material_read(const json_t *secret, struct material *m)
{
    const char *rot = jsn_annotation(secret, ADM_ROTATE_ANNOTATION);
    int r;

    memset(m, 0, sizeof(*m));
    if ((r = secret_value(secret, "ca.crt", &m->ca, &m->ca_len)) < 0 ||
        (r = secret_value(secret, "ca.key", &m->ca_key, &m->ca_key_len)) < 0 ||
        (r = secret_value(secret, "ca-next.crt", &m->next, &m->next_len)) < 0 ||
        (r = secret_value(secret, "ca-next.key", &m->next_key, &m->next_key_len)) < 0 ||
        (r = secret_value(secret, "ca-previous.crt", &m->previous, &m->previous_len)) < 0 ||
        (r = secret_value(secret, "tls.crt", &m->tls, &m->tls_len)) < 0 ||
        (r = secret_value(secret, "tls.key", &m->tls_key, &m->tls_key_len)) < 0) {
        material_done(m);
        return r;
    }
    snprintf(m->rotate, sizeof(m->rotate), "%s", rot ? rot : "");
    m->rv = kapi_obj_rv(secret);
    return 0;
}

/* Every replica: serve the Secret's pair. */
static void load_serving(struct adm *ad, json_t *secret)
{
    char *cert = NULL, *key = NULL;
    size_t clen, klen;
    int r;

    if (secret_value(secret, "tls.crt", &cert, &clen) < 0 ||
        secret_value(secret, "tls.key", &key, &klen) < 0 || !cert || !key)
        goto out;
    if (ad->cert && ad->key && strcmp(cert, ad->cert) == 0 && strcmp(key, ad->key) == 0)
        goto out;
    if (!ad->srv) {
        r = start_server(ad, cert, key);
        if (r < 0) {
            agent_shutdown(ad->mod.a, 1);
            goto out;
        }
    } else {
        r = httpd_set_tls(ad->srv, cert, key);
        if (r < 0) {
            log_warn(MOD,
                     "the serving certificate of Secret %s does not load (%s): keeping the "
                     "current one",
                     ADM_CERTS_SECRET, strerror(-r));
            goto out;
        }
        log_info(MOD, "serving certificate reloaded from Secret %s", ADM_CERTS_SECRET);
    }
    free_pair(ad);
    ad->cert = cert;
    ad->key = key;
    cert = key = NULL;
out:
    if (key)
        OPENSSL_cleanse(key, strlen(key));
    x_free(key);
    x_free(cert);
}

/* ---- the leader: certificates and configurations ---------------------------------------------
 */

static void kick(struct adm *ad)
{
    if (ad->mod.ctl && ctl_running(ad->mod.ctl))
        ctl_enqueue(ad->mod.ctl, KEY);
}

/* Not ctl_after_write: a missing object (a create into a namespace that is gone) is a failure
 * here, and a cancelled write is not logged. */
static void after_write(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct rec *r = data;

    (void)c;
    if (res->err < 0) {
        if (res->err != -ECANCELED && ctl_queue(r->h.ctl))
            log_warn(MOD, "cannot write %s: %s", r->what, res->status.message);
        ctl_rec_end(&r->h, res->err == -ESTALE ? CTL_STALE : CTL_BACKOFF);
        return;
    }
    ctl_forget(r->h.ctl, KEY);
    ctl_rec_end(&r->h, CTL_NOW);
}

static char *b64(const char *s, size_t len)
{
    char *out = x_malloc(4 * ((len + 2) / 3) + 1);

    if (out)
        EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)len);
    return out;
}

static int data_set(json_t *data, const char *key, const char *value)
{
    char *enc;
    int r;

    if (!value || !*value)
        return 0;
    enc = b64(value, strlen(value));
    if (!enc)
        return -ENOMEM;
    r = json_object_set_new(data, key, json_string(enc)) == 0 ? 0 : -ENOMEM;
    OPENSSL_cleanse(enc, strlen(enc));
    x_free(enc);
    return r;
}

/* A string joined of several PEM texts (NULLs skipped). */
static char *join(const char *const *parts, size_t n)
{
    size_t len = 1, at = 0;
    char *out;

    for (size_t i = 0; i < n; i++)
        len += parts[i] ? strlen(parts[i]) : 0;
    out = x_malloc(len);
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        size_t k = parts[i] ? strlen(parts[i]) : 0;

        memcpy(out + at, parts[i] ? parts[i] : "", k);
        at += k;
    }
    out[at] = '\0';
    return out;
}

/* Applies the plan's steps to m (in memory) and writes the Secret. */
static void write_certs(struct rec *rec, const json_t *secret, struct material *m, unsigned acts,
                        int64_t now)
{
    struct adm *ad = rec->ad;
    const char *ns = agent_namespace(ad->mod.a);
    char *prev[ADM_MAX_PREVIOUS + 1] = {0}, *cert = NULL, *key = NULL, *joined = NULL;
    int64_t prev_na[ADM_MAX_PREVIOUS + 1];
    int nprev = 0;
    char err[256];
    json_t *obj = NULL, *data;
    int r = -ENOMEM;

    rec->what = "Secret " ADM_CERTS_SECRET;

    if (m->previous_len) {
        nprev = adm_cert_list(m->previous, m->previous_len, prev_na, prev, ADM_MAX_PREVIOUS);
        if (nprev < 0)
            nprev = 0; /* unreadable: dropped */
    }
    if (acts & ADM_CERT_NEW_CA) {
        log_info(MOD, "creating the webhooks' CA");
        for (int i = 0; i < nprev; i++)
            x_free(prev[i]);
        nprev = 0;
        x_free(m->next);
        x_free(m->next_key);
        m->next = m->next_key = NULL;
        x_free(m->ca);
        x_free(m->ca_key);
        m->ca = m->ca_key = NULL;
        if (peer_pki_ca_create("cliqo-webhook-ca", ADM_CA_YEARS, &m->ca, &m->ca_key, err,
                               sizeof(err)) < 0) {
            log_warn(MOD, "cannot create the CA: %s", err);
            goto fail;
        }
    }
    if (acts & ADM_CERT_START_ROTATION) {
        log_info(MOD, "rotating the webhooks' CA: the next CA is added to the trust bundle first");
        if (peer_pki_ca_create("cliqo-webhook-ca", ADM_CA_YEARS, &m->next, &m->next_key, err,
                               sizeof(err)) < 0) {
            log_warn(MOD, "cannot create the next CA: %s", err);
            goto fail;
        }
    }
    if (acts & ADM_CERT_PROMOTE) {
        log_info(MOD, "every webhook configuration trusts the next CA: it signs from now on, the "
                      "old CA stays trusted until it expires");
        if (nprev == ADM_MAX_PREVIOUS) { /* the oldest goes */
            x_free(prev[0]);
            memmove(prev, prev + 1, sizeof(prev[0]) * (ADM_MAX_PREVIOUS - 1));
            memmove(prev_na, prev_na + 1, sizeof(prev_na[0]) * (ADM_MAX_PREVIOUS - 1));
            nprev--;
        }
        prev[nprev] = m->ca;
        prev_na[nprev++] = INT64_MAX; /* valid: it signed until now */
        OPENSSL_cleanse(m->ca_key, strlen(m->ca_key));
        x_free(m->ca_key);
        m->ca = m->next;
        m->ca_key = m->next_key;
        m->next = m->next_key = NULL;
    }
    if (acts & ADM_CERT_PRUNE) {
        int k = 0;

        for (int i = 0; i < nprev; i++) {
            if (prev_na[i] <= now) {
                x_free(prev[i]);
                continue;
            }
            prev[k] = prev[i];
            prev_na[k++] = prev_na[i];
        }
        nprev = k;
    }
    if (acts & ADM_CERT_NEW_SERVING) {
        if (peer_pki_server_issue(m->ca, strlen(m->ca), m->ca_key, strlen(m->ca_key), ADM_SERVICE,
                                  ad->sans, ad->nsans, ADM_SERVING_DAYS, &cert, &key, err,
                                  sizeof(err)) < 0) {
            log_warn(MOD, "cannot issue the serving certificate: %s", err);
            goto fail;
        }
        log_info(MOD, "issued a serving certificate for the webhooks (%zu names)", ad->nsans);
    }
    joined = join((const char *const *)prev, (size_t)nprev);
    obj = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s,s:s}},s:s,s:{}}", "apiVersion", "v1", "kind",
                    "Secret", "metadata", "name", ADM_CERTS_SECRET, "namespace", ns, "labels",
                    "app.kubernetes.io/part-of", "cliqo", "app.kubernetes.io/managed-by",
                    "cliqo-agent", "type", "Opaque", "data");
    if (!obj || !joined)
        goto fail;
    data = json_object_get(obj, "data");
    if (data_set(data, "ca.crt", m->ca) < 0 || data_set(data, "ca.key", m->ca_key) < 0 ||
        data_set(data, "ca-next.crt", m->next) < 0 ||
        data_set(data, "ca-next.key", m->next_key) < 0 ||
        data_set(data, "ca-previous.crt", joined) < 0 ||
        data_set(data, "tls.crt", cert ? cert : m->tls) < 0 ||
        data_set(data, "tls.key", key ? key : m->tls_key) < 0)
        goto fail;
    if (secret) {
        /* Keep what others put on it (annotations but ours, labels) and update conditionally. */
        const json_t *meta = json_object_get(secret, "metadata");
        json_t *ann = json_deep_copy(json_object_get(meta, "annotations"));

        json_object_set_new(json_object_get(obj, "metadata"), "resourceVersion",
                            json_string(m->rv ? m->rv : ""));
        if (ann) {
            json_object_del(ann, ADM_ROTATE_ANNOTATION);
            json_object_set_new(json_object_get(obj, "metadata"), "annotations", ann);
        }
        r = kapi_update(agent_kube(ad->mod.a), &kapi_secrets, ns, ADM_CERTS_SECRET, NULL, obj,
                        after_write, rec);
    } else {
        r = kapi_create(agent_kube(ad->mod.a), &kapi_secrets, ns, obj, after_write, rec);
    }
    if (r == 0)
        goto out;
fail:
    ctl_rec_end(&rec->h, CTL_RETRY);
out:
    for (int i = 0; i < nprev; i++)
        x_free(prev[i]);
    if (key)
        OPENSSL_cleanse(key, strlen(key));
    x_free(key);
    x_free(cert);
    x_free(joined);
    json_decref(obj);
}

static json_t *client_config(struct adm *ad, const char *path, const char *bundle)
{
    const struct agent_config *cfg = agent_config(ad->mod.a);
    char *enc = b64(bundle, strlen(bundle)), url[2048];
    json_t *cc = NULL;

    if (!enc)
        return NULL;
    if (cfg->webhook_url) {
        size_t n = strlen(cfg->webhook_url);

        while (n > 0 && cfg->webhook_url[n - 1] == '/')
            n--;
        snprintf(url, sizeof(url), "%.*s%s", (int)n, cfg->webhook_url, path);
        cc = json_pack("{s:s,s:s}", "url", url, "caBundle", enc);
    } else {
        cc = json_pack("{s:{s:s,s:s,s:s,s:i},s:s}", "service", "namespace",
                       agent_namespace(ad->mod.a), "name", ADM_SERVICE, "path", path, "port", 443,
                       "caBundle", enc);
    }
    x_free(enc);
    return cc;
}

/* One webhook of a configuration: name, path, rules (taken) and namespaceSelector (taken). */
static json_t *webhook(struct adm *ad, const char *name, const char *path, const char *bundle,
                       json_t *rules, json_t *selector)
{
    json_t *cc = client_config(ad, path, bundle), *hook = NULL;

    if (cc && rules && selector)
        hook = json_pack("{s:s,s:[s],s:s,s:s,s:i,s:s,s:o,s:o,s:o}", "name", name,
                         "admissionReviewVersions", "v1", "sideEffects", "None", "failurePolicy",
                         "Fail", "timeoutSeconds", 5, "matchPolicy", "Equivalent", "clientConfig",
                         cc, "rules", rules, "namespaceSelector", selector);
    else {
        json_decref(cc);
        json_decref(rules);
        json_decref(selector);
    }
    return hook;
}

static json_t *desired_config(struct adm *ad, bool mutating, const char *bundle)
{
    json_t *hooks = json_array(), *obj;
    json_t *origin_sel = json_pack("{s:[{s:s,s:s}]}", "matchExpressions", "key", PEER_LABEL_ORIGIN,
                                   "operator", "Exists");
    const char *pod_rule = "[{s:[s],s:[s],s:[s],s:[s],s:s}]";

    if (!hooks || !origin_sel) {
        json_decref(hooks);
        json_decref(origin_sel);
        return NULL;
    }
    if (mutating) {
        json_t *h =
            webhook(ad, "pods.offloading.cliqo.io", ADM_PATH_MUTATE, bundle,
                    json_pack(pod_rule, "operations", "CREATE", "apiGroups", "", "apiVersions",
                              "v1", "resources", "pods", "scope", "Namespaced"),
                    json_pack("{s:{s:s}}", "matchLabels", "liqo.io/scheduling-enabled", "true"));

        if (h)
            json_object_set_new(h, "reinvocationPolicy", json_string("Never"));
        json_array_append_new(hooks, h);
    } else {
        json_array_append_new(
            hooks,
            webhook(ad, "offer.admission.cliqo.io", ADM_PATH_VALIDATE, bundle,
                    json_pack(pod_rule, "operations", "CREATE", "apiGroups", "", "apiVersions",
                              "v1", "resources", "pods", "scope", "Namespaced"),
                    json_incref(origin_sel)));
        /* What a peer's credentials write in its namespaces, and Secrets in tenant namespaces. */
        json_array_append_new(
            hooks,
            webhook(
                ad, "objects.admission.cliqo.io", ADM_PATH_OBJECTS, bundle,
                /* discovery.k8s.io v1 is served from 1.21; 1.20 has v1beta1 only. */
                json_pack("[{s:[s,s],s:[s],s:[s],s:[s,s],s:s},{s:[s,s],s:[s],s:[s,s],s:[s],s:s}]",
                          "operations", "CREATE", "UPDATE", "apiGroups", "", "apiVersions", "v1",
                          "resources", "services", "secrets", "scope", "Namespaced", "operations",
                          "CREATE", "UPDATE", "apiGroups", "discovery.k8s.io", "apiVersions", "v1",
                          "v1beta1", "resources", "endpointslices", "scope", "Namespaced"),
                json_incref(origin_sel)));
        /* cliqo's kinds a peer creates in its tenant namespace: counted. */
        json_array_append_new(
            hooks,
            webhook(ad, "tenant-objects.admission.cliqo.io", ADM_PATH_OBJECTS, bundle,
                    json_pack("[{s:[s],s:[s,s,s,s],s:[s],s:[s,s,s,s,s],s:s}]", "operations",
                              "CREATE", "apiGroups", "discovery.liqo.io", "sharing.liqo.io",
                              "net.liqo.io", "virtualkubelet.liqo.io", "apiVersions", "*",
                              "resources", "peeringrequests", "advertisements", "networkconfigs",
                              "tunnelendpoints", "namespacemaps", "scope", "Namespaced"),
                    json_pack("{s:{s:s}}", "matchLabels", PEER_LABEL_TENANT, "true")));
        json_array_append_new(
            hooks, webhook(ad, "tenant-secrets.admission.cliqo.io", ADM_PATH_OBJECTS, bundle,
                           json_pack("[{s:[s,s],s:[s],s:[s],s:[s],s:s}]", "operations", "CREATE",
                                     "UPDATE", "apiGroups", "", "apiVersions", "v1", "resources",
                                     "secrets", "scope", "Namespaced"),
                           json_pack("{s:{s:s}}", "matchLabels", PEER_LABEL_TENANT, "true")));
    }
    json_decref(origin_sel);
    for (size_t i = 0; i < json_array_size(hooks); i++)
        if (!json_is_object(json_array_get(hooks, i))) {
            json_decref(hooks);
            return NULL;
        }
    obj = json_pack("{s:s,s:s,s:{s:s,s:{s:s,s:s}},s:o}", "apiVersion",
                    "admissionregistration.k8s.io/v1", "kind",
                    mutating ? "MutatingWebhookConfiguration" : "ValidatingWebhookConfiguration",
                    "metadata", "name", mutating ? ADM_MUTATING_CONFIG : ADM_VALIDATING_CONFIG,
                    "labels", "app.kubernetes.io/part-of", "cliqo", "app.kubernetes.io/managed-by",
                    "cliqo-agent", "webhooks", hooks);
    return obj;
}

/* Does the observed configuration have our webhooks, in order, each with every field we set with
 * our value? */
static bool config_matches(const json_t *desired, const json_t *observed)
{
    const json_t *dws = json_object_get(desired, "webhooks");
    const json_t *ows = json_object_get(observed, "webhooks");
    const char *k;
    json_t *v;

    if (!observed || json_array_size(ows) != json_array_size(dws))
        return false;
    for (size_t i = 0; i < json_array_size(dws); i++) {
        const json_t *ow = json_array_get(ows, i);

        json_object_foreach((json_t *)json_array_get(dws, i), k, v)
        {
            if (!json_equal(v, json_object_get(ow, k)))
                return false;
        }
    }
    return true;
}

static bool bundle_has(const json_t *cfg, const char *pem)
{
    const char *enc = json_string_value(json_object_get(
        json_object_get(json_array_get(json_object_get(cfg, "webhooks"), 0), "clientConfig"),
        "caBundle"));
    char *dec = NULL;
    size_t len;
    bool has;

    if (!enc || peer_base64_decode(enc, SECRET_MAX, &dec, &len) < 0)
        return false;
    has = strstr(dec, pem) != NULL;
    x_free(dec);
    return has;
}

static void hash_of(const char *s, char out[65])
{
    unsigned char md[32];
    unsigned int n = 0;

    out[0] = '\0';
    if (!s || EVP_Digest(s, strlen(s), md, &n, EVP_sha256(), NULL) != 1 || n != 32)
        return;
    str_hex(md, 32, out);
}

static void sync_pass(struct ctl *c, const char *key)
{
    struct adm *ad = ctl_data(c);
    struct rec *r;
    json_t *secret = NULL, *mcfg = NULL, *vcfg = NULL, *want = NULL;
    struct material m = {0};
    struct adm_cert_facts f = {0};
    int64_t next = INT64_MAX, prev_na[ADM_MAX_PREVIOUS];
    unsigned acts;
    char *bundle = NULL;
    int n;

    if (!inf_synced(ad->secret) || !inf_synced(ad->mcfg) || !inf_synced(ad->vcfg)) {
        ctl_skip(c, key, CTL_WAIT);
        return;
    }
    r = (struct rec *)ctl_rec_begin(c, key);
    if (!r)
        return;
    r->ad = ad;
    secret = inf_get(ad->secret, agent_namespace(ad->mod.a), ADM_CERTS_SECRET);
    if (secret && material_read(secret, &m) < 0) {
        log_warn(MOD, "Secret %s does not decode: starting afresh", ADM_CERTS_SECRET);
        material_done(&m);
        m.rv = kapi_obj_rv(secret);
    }
    mcfg = inf_get(ad->mcfg, NULL, ADM_MUTATING_CONFIG);
    vcfg = inf_get(ad->vcfg, NULL, ADM_VALIDATING_CONFIG);
    f.now = (int64_t)time(NULL);
    f.ca_ok = adm_cert_ca_ok(m.ca, m.ca_len, m.ca_key, m.ca_key_len, f.now, &f.ca) == 0;
    f.next_ok = m.next &&
                adm_cert_ca_ok(m.next, m.next_len, m.next_key, m.next_key_len, f.now, &f.next) == 0;
    f.next_published_s = -1;
    if (f.next_ok) {
        char h[65];

        hash_of(m.next, h);
        if (mcfg && vcfg && bundle_has(mcfg, m.next) && bundle_has(vcfg, m.next)) {
            if (strcmp(h, ad->next_hash) != 0 || !ad->published_since_ms) {
                snprintf(ad->next_hash, sizeof(ad->next_hash), "%s", h);
                ad->published_since_ms = now_ms(ad);
            }
            f.next_published_s = (int64_t)((now_ms(ad) - ad->published_since_ms) / 1000);
        } else {
            ad->published_since_ms = 0;
        }
    }
    if (f.ca_ok) {
        char err[160];

        f.serving_ok =
            adm_cert_serving_ok(m.tls, m.tls_len, m.tls_key, m.tls_key_len, m.ca, m.ca_len,
                                ad->sans, ad->nsans, f.now, &f.serving, err, sizeof(err)) == 0;
        if (!f.serving_ok && m.tls)
            log_info(MOD, "serving certificate to be issued again: %s", err);
    }
    n = m.previous_len ? adm_cert_list(m.previous, m.previous_len, prev_na, NULL, ADM_MAX_PREVIOUS)
                       : 0;
    if (n > 0) {
        f.nprevious = (size_t)n;
        memcpy(f.previous_not_after, prev_na, sizeof(prev_na[0]) * (size_t)n);
    }
    f.force_ca = strcmp(m.rotate, "ca") == 0;
    f.force_serving = strcmp(m.rotate, "serving") == 0;
    acts = adm_cert_plan(&f, &next);
    if (acts) {
        write_certs(r, secret, &m, acts, f.now);
        goto out;
    }
    if (m.rotate[0] && (f.force_ca || f.force_serving)) {
        /* force_ca during a rotation already under way: nothing to do but drop the request */
        write_certs(r, secret, &m, 0, f.now);
        goto out;
    }
    {
        const char *parts[] = {m.previous, m.ca, m.next};

        bundle = join(parts, 3);
    }
    if (!bundle) {
        ctl_rec_end(&r->h, CTL_RETRY);
        goto out;
    }
    for (int i = 0; i < 2; i++) {
        const json_t *observed = i == 0 ? mcfg : vcfg;
        const struct kapi_resource *res = i == 0 ? &res_mutating : &res_validating;
        const char *name = i == 0 ? ADM_MUTATING_CONFIG : ADM_VALIDATING_CONFIG;

        want = desired_config(ad, i == 0, bundle);
        if (!want) {
            ctl_rec_end(&r->h, CTL_RETRY);
            goto out;
        }
        if (!config_matches(want, observed)) {
            log_info(MOD, "%s %s %s", observed ? "updating" : "creating", res->kind, name);
            r->what = res->kind;
            if (kapi_apply(agent_kube(ad->mod.a), res, NULL, name, NULL, want, FIELD_MANAGER, true,
                           after_write, r) < 0)
                ctl_rec_end(&r->h, CTL_RETRY);
            goto out;
        }
        json_decref(want);
        want = NULL;
    }
    /* Nothing to write: come back when the next step is due. */
    if (f.next_ok && f.next_published_s < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
    else if (next == INT64_MAX || next - f.now > MAX_REQUEUE_S)
        ctl_rec_end_after(&r->h, MAX_REQUEUE_S * 1000);
    else
        ctl_rec_end_after(&r->h, (uint32_t)((next > f.now ? next - f.now : 0) * 1000 + 100));
out:
    json_decref(want);
    x_free(bundle);
    material_done(&m);
    json_decref(secret);
    json_decref(mcfg);
    json_decref(vcfg);
}

/* ---- the offer enforcement -------------------------------------------------------------------
 */

static int idx_origin(const json_t *obj, const char **values, size_t max)
{
    const char *o = jsn_label(obj, PEER_LABEL_ORIGIN);

    if (!o || max < 1)
        return 0;
    values[0] = o;
    return 1;
}

/* Pod events keep the running totals (admission/offer.h) and end the reservations of the pods
 * they show. A count that fails (a quantity beyond int64, too many names) is logged: the pod was
 * validated by the API server, so this does not happen in practice. */
static void count_pod(struct adm *ad, const json_t *pod, int sign)
{
    int rc = ad->usage ? adm_usage_pod(ad->usage, pod, sign) : 0;

    if (rc < 0)
        log_warn(MOD, "cannot count pod %s/%s in the offer's running totals: %s",
                 kapi_obj_namespace(pod) ? kapi_obj_namespace(pod) : "?",
                 kapi_obj_name(pod) ? kapi_obj_name(pod) : "?", strerror(-rc));
}

static void on_pod(struct inf_informer *inf, json_t *obj, void *data)
{
    struct adm *ad = data;

    (void)inf;
    count_pod(ad, obj, 1);
    /* Counted from now on, or the name is someone else's: either way its reservation ends. */
    adm_ledger_seen(ad->ledger, kapi_obj_namespace(obj), kapi_obj_name(obj));
}

static void on_pod_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    count_pod(data, old_obj, -1);
    on_pod(inf, new_obj, data);
}

static void on_pod_delete(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    count_pod(data, obj, -1);
}

struct usage {
    struct adm *ad;
    struct shr_list used;
    int err;
};

static void sum_namespace(json_t *ns, void *data)
{
    struct usage *u = data;

    if (!u->err && u->ad->usage && adm_usage_add_ns(u->ad->usage, kapi_obj_name(ns), &u->used) < 0)
        u->err = -ENOSPC;
}

/* The offer last sent consumer id: the broadcaster's own record when this replica runs it, else
 * the copy the broadcaster keeps in the ForeignCluster's status. */
static int offer_of(struct adm *ad, const char *id, struct shr_list *ret, char *name,
                    size_t namelen)
{
    json_t *fc;
    const json_t *sent;
    const char *status, *cname;
    int r = -ENOENT;

    if (agent_last_offer(ad->mod.a, id, ret, name, namelen) == 0)
        return 0;
    fc = peer_fc_find(ad->fcs, id);
    if (!fc)
        return -ENOENT;
    sent = json_object_get(json_object_get(json_object_get(fc, "status"), "advertisement"), "sent");
    status = json_string_value(json_object_get(sent, "status"));
    cname = json_string_value(json_object_get(
        json_object_get(json_object_get(fc, "spec"), "clusterIdentity"), "clusterName"));
    if (json_is_object(json_object_get(sent, "resources")) &&
        !(status && strcmp(status, "Withdrawn") == 0) &&
        adm_offer_from_quantities(json_object_get(sent, "resources"), ret, NULL) == 0) {
        snprintf(name, namelen, "%s", cname && kname_dns_label(cname) ? cname : id);
        r = 0;
    }
    json_decref(fc);
    return r;
}

__attribute__((format(printf, 3, 4))) static void deny(struct adm_verdict *v, int code,
                                                       const char *fmt, ...)
{
    va_list ap;

    v->allowed = false;
    v->code = code;
    va_start(ap, fmt);
    vsnprintf(v->message, sizeof(v->message), fmt, ap);
    va_end(ap);
}

/* The placement of a consumer's pod (admission/placement.h) against the ClusterConfig's
 * spec.offloadingConfig.placement. */
static bool placement_ok(struct adm *ad, const struct adm_request *req, struct adm_verdict *v)
{
    json_t *cc = inf_get(ad->config, NULL, PEER_CLUSTER_CONFIG);
    const json_t *pl = json_object_get(
        json_object_get(json_object_get(cc, "spec"), "offloadingConfig"), "placement");
    char msg[ADM_MESSAGE_MAX + 1];
    bool ok = adm_placement_check(req->object, pl, msg, sizeof(msg)) == 0;

    if (!ok)
        deny(v, 403, "%s", msg);
    json_decref(cc);
    return ok;
}

/* The informer has pod ns/name: a reservation of that name is counted already, or will never
 * be a pod (the name is taken). */
static bool pod_known(const char *ns, const char *name, void *data)
{
    struct adm *ad = data;
    json_t *pod = inf_get(ad->pods, ns, name);
    bool known = pod != NULL;

    json_decref(pod);
    return known;
}

static void offer_check(const struct adm_request *req, struct adm_verdict *v, void *data)
{
    struct adm *ad = data;
    json_t *ns = NULL, *tenant = NULL;
    const char *origin, *map, *slash;
    char tns[64], expected[256], cname[64], shown[64], err[200];
    struct shr_list pod, offer, counted;
    struct usage u = {.ad = ad};
    json_t *same;
    const char *name, *uid;
    bool has_offer, authed = authenticated(ad);
    int r;

    if (strcmp(req->operation, "CREATE") != 0 || strcmp(req->kind, "Pod") != 0 || req->group[0])
        return;
    /* A pod created with generateName has its name by the time validating webhooks see it (the
     * request's name is still empty): it is reserved like any other. */
    name = req->name[0] ? req->name : kapi_obj_name(req->object);
    if (!name || strlen(name) > ADM_NAME_MAX)
        name = "";
    ns = inf_get(ad->nss, NULL, req->ns);
    if (!ns) {
        deny(v, 403, "namespace %s is not known to the provider's agent yet: try again",
             adm_printable(req->ns, shown, sizeof(shown)));
        goto out;
    }
    origin = jsn_label(ns, PEER_LABEL_ORIGIN);
    if (!origin)
        goto out; /* not a consumer's namespace (the selector said otherwise a moment ago) */
    map = jsn_annotation(ns, PEER_ANNOT_NSMAP);
    slash = map ? strchr(map, '/') : NULL;
    if (!peer_cluster_id_valid(origin) || !slash || (size_t)(slash - map) >= sizeof(tns) ||
        strcmp(slash + 1, origin) != 0) {
        deny(v, 403, "namespace %s was not made for a consumer by this cluster: no pods here",
             adm_printable(req->ns, shown, sizeof(shown)));
        goto out;
    }
    snprintf(tns, sizeof(tns), "%.*s", (int)(slash - map), map);
    tenant = inf_get(ad->nss, NULL, tns);
    if (!tenant || !jsn_label(tenant, PEER_LABEL_CLUSTER_ID) ||
        strcmp(jsn_label(tenant, PEER_LABEL_CLUSTER_ID), origin) != 0 ||
        !jsn_label(tenant, PEER_LABEL_TENANT) ||
        strcmp(jsn_label(tenant, PEER_LABEL_TENANT), "true") != 0) {
        deny(v, 403, "namespace %s names no tenant namespace of consumer %s: no pods here",
             adm_printable(req->ns, shown, sizeof(shown)), origin);
        goto out;
    }
    has_offer = offer_of(ad, origin, &offer, cname, sizeof(cname)) == 0;
    if (!has_offer)
        snprintf(cname, sizeof(cname), "%s", origin);
    snprintf(expected, sizeof(expected), "system:serviceaccount:%s:" PEER_VK_SA_PREFIX "%s", tns,
             origin);
    if (strcmp(req->username, expected) != 0) {
        char who[ADM_USER_MAX + 1];

        /* Unauthenticated, the refusal must not tell a forger which identity to claim. */
        if (authed)
            deny(v, 403, "only the virtual kubelet of %s (%s) may create pods in %s, not %s", cname,
                 expected, req->ns, adm_printable(req->username, who, sizeof(who)));
        else
            deny(v, 403, "only the virtual kubelet of %s may create pods in %s, not %s", cname,
                 req->ns, adm_printable(req->username, who, sizeof(who)));
        goto out;
    }
    if (adm_podsec_enforce(&ad->podsec, req, origin, v) < 0 || !placement_ok(ad, req, v))
        goto out;
    if (adm_offer_pod_requests(req->object, &pod, err, sizeof(err)) < 0) {
        deny(v, 400, "cannot count the pod's requests: %s", err);
        goto out;
    }
    if (!has_offer) {
        deny(v, 403, "offer exceeded: nothing has been offered to %s yet", cname);
        goto out;
    }
    inf_index_foreach(ad->nss, IDX_ORIGIN, origin, sum_namespace, &u);
    /* A pod of the same name is counted, but this create will be refused as AlreadyExists. */
    same = name[0] ? inf_get(ad->pods, req->ns, name) : NULL;
    if (same && adm_offer_pod_live(same) && adm_offer_pod_requests(same, &counted, NULL, 0) == 0)
        adm_offer_sub(&u.used, &counted);
    json_decref(same);
    adm_ledger_purge(ad->ledger, now_ms(ad));
    if (!u.err && adm_ledger_sum(ad->ledger, origin, req->ns, name[0] ? name : NULL, now_ms(ad),
                                 pod_known, ad, &u.used) < 0)
        u.err = -ENOSPC;
    if (u.err) {
        deny(v, 403, "offer exceeded: too many resource names to count for %s", cname);
        goto out;
    }
    if (adm_offer_check(&u.used, &pod, &offer, cname, authed, v->message, sizeof(v->message)) < 0) {
        v->allowed = false;
        v->code = 403;
        goto out;
    }
    /* Admitted: reserve until the pod informer has it. Nothing for a dry run, nor for a review
     * without the pod's name or UID (the API server gives both before validating webhooks: what
     * lacks them never becomes a pod). */
    uid = kapi_obj_uid(req->object);
    if (req->dry_run || !name[0] || !uid || !*uid)
        goto out;
    r = adm_ledger_reserve(ad->ledger, origin, req->ns, name, uid, &pod, authed, now_ms(ad),
                           now_ms(ad) + (authed ? ADM_LEDGER_TTL_MS : ADM_LEDGER_CONFIRM_MS));
    if (r == -EDQUOT || r == -ENOSPC)
        deny(v, 429, "too many pod creations of %s in flight on this provider: try again", cname);
    else if (r == -ENOMEM)
        deny(v, 500, "out of memory");
    /* -EINVAL: a UID or name we cannot hold, which the API server never sends: no reservation. */
out:
    json_decref(ns);
    json_decref(tenant);
}

/* ---- the objects webhook: what a peer's credentials write (admission/objects.h) ----------------
 */

struct pod_ips {
    json_t *set; /* ip -> true */
    struct adm *ad;
};

static void ip_visit_pod(json_t *pod, void *data)
{
    struct pod_ips *p = data;
    const json_t *ips = json_object_get(json_object_get(pod, "status"), "podIPs");

    for (size_t i = 0; i < json_array_size(ips) && i < 8; i++) {
        const char *ip = json_string_value(json_object_get(json_array_get(ips, i), "ip"));

        if (ip && strlen(ip) < 64)
            json_object_set_new(p->set, ip, json_true());
    }
}

static void ip_visit_ns(json_t *ns, void *data)
{
    struct pod_ips *p = data;

    inf_index_foreach(p->ad->pods, IDX_NAMESPACE, kapi_obj_name(ns), ip_visit_pod, data);
}

static bool is_pod_ip(const char *ip, void *data)
{
    struct pod_ips *p = data;

    return json_object_get(p->set, ip) != NULL;
}

/* The consumer a ServiceAccount namespace belongs to: its tenant namespace (cluster-id label) or a
 * namespace made for it (origin label); NULL when the namespace is neither (not a peer). */
static const char *peer_of(const json_t *ns)
{
    const char *t = jsn_label(ns, PEER_LABEL_TENANT);

    if (t && strcmp(t, "true") == 0)
        return jsn_label(ns, PEER_LABEL_CLUSTER_ID) ? jsn_label(ns, PEER_LABEL_CLUSTER_ID) : "";
    return jsn_label(ns, PEER_LABEL_ORIGIN);
}

static void slice_check(struct adm *ad, const struct adm_request *req, const char *origin,
                        struct adm_verdict *v)
{
    struct agent_peer_network ps;
    struct pod_ips ips = {json_object(), ad};
    struct cidr c;
    size_t n = 0;

    if (!ips.set) {
        deny(v, 500, "out of memory");
        return;
    }
    if (agent_peer_network(ad->mod.a, origin, &ps) == 0 && ps.remote_mapped[0] &&
        cidr_parse(ps.remote_mapped, &c) == 0)
        n = 1;
    inf_index_foreach(ad->nss, IDX_ORIGIN, origin, ip_visit_ns, &ips);
    if (adm_objects_slice_check(req->object, req->ns, &c, n, is_pod_ip, &ips, v->message,
                                sizeof(v->message)) < 0) {
        v->allowed = false;
        v->code = 403;
    }
    json_decref(ips.set);
}

/* cliqo's kinds a peer creates in its tenant namespace, counted there (admission/objects.h). */
static const struct kapi_resource *const tenant_kinds[] = {
    &peer_res_peeringrequests, &peer_res_advertisements, &peer_res_networkconfigs,
    &peer_res_namespacemaps};

static void count_visit(json_t *obj, void *data)
{
    (void)obj;
    (*(size_t *)data)++;
}

/* A create of one of tenant_kinds: refused when the namespace has its limit already (the
 * creates in flight are in ad->tenant_pending). */
static void tenant_count_check(struct adm *ad, const struct adm_request *req, struct adm_verdict *v)
{
    const char *name = req->name[0] ? req->name : kapi_obj_name(req->object);
    const char *uid = kapi_obj_uid(req->object);
    bool authed = authenticated(ad);
    struct tenant_pending *slot = NULL;
    uint64_t now = now_ms(ad);
    size_t i, n = 0;

    for (i = 0; i < sizeof(tenant_kinds) / sizeof(tenant_kinds[0]); i++)
        if (strcmp(req->group, tenant_kinds[i]->group) == 0 &&
            strcmp(req->resource, tenant_kinds[i]->resource) == 0)
            break;
    if (i == sizeof(tenant_kinds) / sizeof(tenant_kinds[0]))
        return;
    if (!ad->tenant_objs[i] || !inf_synced(ad->tenant_objs[i])) {
        deny(v, 503, "the provider's agent has not read its %s yet: try again",
             tenant_kinds[i]->resource);
        return;
    }
    inf_index_foreach(ad->tenant_objs[i], IDX_NAMESPACE, req->ns, count_visit, &n);
    for (struct tenant_pending *p = ad->tenant_pending; p < ad->tenant_pending + TENANT_PENDING_MAX;
         p++) {
        json_t *seen;

        if (p->expires_ms <= now) {
            slot = slot ? slot : p;
            continue;
        }
        if (p->kind != i || strcmp(p->ns, req->ns) != 0)
            continue;
        seen = inf_get(ad->tenant_objs[i], p->ns, p->name);
        if (seen)
            p->expires_ms = 0; /* counted by the informer now */
        else
            n++;
        json_decref(seen);
    }
    if (adm_objects_tenant_check(req->group, req->resource, n, v->message, sizeof(v->message)) <
        0) {
        v->allowed = false;
        v->code = 403;
        return;
    }
    if (req->dry_run || !name || !*name || strlen(name) > ADM_NAME_MAX)
        return;
    if (!authed && (!uid || !*uid))
        return;
    if (!slot) {
        if (authed)
            deny(v, 429, "too many creations in flight in tenant namespaces: try again");
        return;
    }
    slot->kind = i;
    snprintf(slot->ns, sizeof(slot->ns), "%s", req->ns);
    snprintf(slot->name, sizeof(slot->name), "%s", name);
    slot->expires_ms = now + (authed ? TENANT_PENDING_TTL_MS : ADM_LEDGER_CONFIRM_MS);
}

/* Only requests of a peer's credentials are checked: a ServiceAccount of a tenant namespace or of
 * a namespace made for a consumer. The provider's own controllers (the endpointslice controller
 * writes the slices of Services with a selector) are not ServiceAccounts of those namespaces, and
 * labels or owner references on the object prove nothing: the writer sets them. */
static void objects_check(const struct adm_request *req, struct adm_verdict *v, void *data)
{
    struct adm *ad = data;
    json_t *sa_ns = NULL, *ns = NULL;
    const char *peer, *origin;
    char nsname[64], shown[64];

    if ((strcmp(req->operation, "CREATE") != 0 && strcmp(req->operation, "UPDATE") != 0) ||
        adm_objects_sa_namespace(req->username, nsname, sizeof(nsname)) < 0)
        return;
    sa_ns = inf_get(ad->nss, NULL, nsname);
    peer = sa_ns ? peer_of(sa_ns) : NULL;
    if (!peer)
        goto out;
    if (strcmp(req->operation, "CREATE") == 0 &&
        adm_objects_tenant_limit(req->group, req->resource) >= 0) {
        tenant_count_check(ad, req, v);
        goto out;
    }
    if (!req->group[0] && strcmp(req->kind, "Secret") == 0) {
        if (adm_objects_secret_check(req->object, v->message, sizeof(v->message)) < 0) {
            v->allowed = false;
            v->code = 403;
        }
        goto out;
    }
    ns = inf_get(ad->nss, NULL, req->ns);
    origin = jsn_label(ns, PEER_LABEL_ORIGIN);
    if (!origin || strcmp(origin, peer) != 0) {
        deny(v, 403, "namespace %s was not made for the consumer whose credential this is",
             adm_printable(req->ns, shown, sizeof(shown)));
        goto out;
    }
    if (!req->group[0] && strcmp(req->kind, "Service") == 0) {
        if (adm_objects_service_check(req->object, v->message, sizeof(v->message)) < 0) {
            v->allowed = false;
            v->code = 403;
        }
    } else if (strcmp(req->group, "discovery.k8s.io") == 0 &&
               strcmp(req->kind, "EndpointSlice") == 0) {
        slice_check(ad, req, origin, v);
    }
out:
    json_decref(sa_ns);
    json_decref(ns);
}

/* ---- module ----------------------------------------------------------------------------------
 */

static void on_secret(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    load_serving(data, obj);
    kick(data);
}

static void on_secret_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_secret(inf, new_obj, data);
}

static void on_secret_delete(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    (void)obj;
    kick(data);
}

static void on_config(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    (void)obj;
    kick(data);
}

static void on_config_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_config(inf, new_obj, data);
}

/* The host of an https:// URL ("[::1]" without brackets). */
static int url_host(const char *url, char *buf, size_t size)
{
    const char *h = url + strlen("https://"), *end;

    if (strncmp(url, "https://", 8) != 0)
        return -EINVAL;
    if (*h == '[') {
        end = strchr(h, ']');
        if (!end)
            return -EINVAL;
        h++;
    } else {
        end = h + strcspn(h, ":/?#");
    }
    if (end == h || (size_t)(end - h) >= size)
        return -EINVAL;
    snprintf(buf, size, "%.*s", (int)(end - h), h);
    return 0;
}

static void add_san(struct adm *ad, const char *s)
{
    for (size_t i = 0; i < ad->nsans; i++)
        if (strcmp(ad->sans[i], s) == 0)
            return;
    if (ad->nsans >= ADM_MAX_SANS)
        return;
    snprintf(ad->san_buf[ad->nsans], sizeof(ad->san_buf[0]), "%s", s);
    ad->sans[ad->nsans] = ad->san_buf[ad->nsans];
    ad->nsans++;
}

/* cliqo_webhook_connections_total from the server's own counts. */
static void collect_connections(struct metrics_registry *r, void *data)
{
    struct adm *ad = data;
    static const char *const handshake[] = {"handshake"}, *const abandoned[] = {"abandoned"};

    (void)r;
    if (!ad->srv)
        return;
    metrics_set(ad->m_conn, handshake, (double)httpd_handed_over(ad->srv));
    metrics_set(ad->m_conn, abandoned, (double)httpd_held_dropped(ad->srv));
}

int adm_init(struct agent *a)
{
    static const char *const req_labels[] = {"webhook", "result", NULL};
    static const char *const dur_labels[] = {"webhook", NULL};
    static const char *const conn_labels[] = {"outcome", NULL};
    static const double buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5};
    const struct agent_config *cfg = agent_config(a);
    const char *ns = agent_namespace(a);
    struct inf_handlers sh = {
        .on_add = on_secret, .on_update = on_secret_update, .on_delete = on_secret_delete};
    struct inf_handlers ch = {
        .on_add = on_config, .on_update = on_config_update, .on_delete = on_config};
    struct inf_handlers ph = {
        .on_add = on_pod, .on_update = on_pod_update, .on_delete = on_pod_delete};
    struct inf_options so = {.resource = &kapi_secrets,
                             .namespace_ = ns,
                             .field_selector = "metadata.name=" ADM_CERTS_SECRET,
                             .store = INF_STORE_TREE};
    struct inf_options mo = {.resource = &res_mutating,
                             .field_selector = "metadata.name=" ADM_MUTATING_CONFIG,
                             .store = INF_STORE_TREE};
    struct inf_options vo = {.resource = &res_validating,
                             .field_selector = "metadata.name=" ADM_VALIDATING_CONFIG,
                             .store = INF_STORE_TREE};
    /* The broadcaster's informer (same transform), first list from the watch cache: see there. The
     * offer's running totals are then as current as the cache, and the watch brings the rest; a
     * pod admitted meanwhile is held by the reservation ledger until the informer shows it. */
    struct inf_options po = {
        .resource = &kapi_pods, .transform = shr_pod_transform, .list_from_cache = true};
    struct ctl_options co = {.name = "admission",
                             .log_module = MOD,
                             .queue = {.base_delay_ms = 500},
                             .rec_size = sizeof(struct rec),
                             .reconcile = sync_pass,
                             .retry_ms = RETRY_MS,
                             .wait_ms = 500};
    struct adm *ad = ctl_module_new(a, MOD, sizeof(*ad));
    char host[256], name[256];
    int r;

    if (!ad)
        return -ENOMEM;
    snprintf(name, sizeof(name), "%s", ADM_SERVICE);
    add_san(ad, name);
    snprintf(name, sizeof(name), "%s.%s", ADM_SERVICE, ns);
    add_san(ad, name);
    snprintf(name, sizeof(name), "%s.%s.svc", ADM_SERVICE, ns);
    add_san(ad, name);
    snprintf(name, sizeof(name), "%s.%s.svc.cluster.local", ADM_SERVICE, ns);
    add_san(ad, name);
    if (cfg->webhook_url) {
        if (url_host(cfg->webhook_url, host, sizeof(host)) < 0) {
            log_error(MOD, "--webhook-url %s has no usable host", cfg->webhook_url);
            return -EINVAL;
        }
        add_san(ad, host);
    }
    r = setup_client_auth(ad, cfg);
    if (r == 0)
        r = adm_ledger_new(0, 0, &ad->ledger);
    if (r == 0)
        r = adm_webhook_register(a, "offer-enforcement", ADM_PATH_VALIDATE, offer_check, ad);
    if (r == 0)
        r = adm_usage_new(&ad->usage);
    if (r == 0)
        r = adm_webhook_register(a, "objects", ADM_PATH_OBJECTS, objects_check, ad);
    if (r == 0)
        r = agent_informer(a, &peer_res_clusterconfigs, NULL, NULL, 0, NULL, NULL, &ad->config);
    if (r == 0)
        r = agent_informer_ex(a, &so, AGENT_INF_ALWAYS, &sh, ad, &ad->secret);
    if (r == 0)
        r = agent_informer_ex(a, &mo, 0, &ch, ad, &ad->mcfg);
    if (r == 0)
        r = agent_informer_ex(a, &vo, 0, &ch, ad, &ad->vcfg);
    if (r == 0)
        r = agent_informer(a, &kapi_namespaces, NULL, NULL, 0, NULL, NULL, &ad->nss);
    if (r == 0)
        r = agent_informer_ex(a, &po, AGENT_INF_ALWAYS, &ph, ad, &ad->pods);
    if (r == 0)
        r = agent_informer(a, &peer_res_foreignclusters, NULL, NULL, 0, NULL, NULL, &ad->fcs);
    for (size_t i = 0; r == 0 && i < sizeof(tenant_kinds) / sizeof(tenant_kinds[0]); i++) {
        r = agent_informer(a, tenant_kinds[i], NULL, NULL, 0, NULL, NULL, &ad->tenant_objs[i]);
        if (r == 0 && (r = inf_add_index(ad->tenant_objs[i], IDX_NAMESPACE,
                                         inf_index_by_namespace)) == -EEXIST)
            r = 0;
    }
    if (r == 0)
        r = adm_podsec_init(a, &ad->podsec);
    if (r == 0 && (r = inf_add_index(ad->nss, IDX_ORIGIN, idx_origin)) == -EEXIST)
        r = 0;
    if (r == 0 && (r = inf_add_index(ad->pods, IDX_NAMESPACE, inf_index_by_namespace)) == -EEXIST)
        r = 0;
    if (r == 0)
        r = ctl_new(a, &co, ad, &ad->mod.ctl);
    if (r == 0)
        r = metrics_family_new(agent_metrics(a), METRICS_COUNTER, "cliqo_admission_requests_total",
                               "Admission reviews answered, by webhook and result (allowed, "
                               "patched, denied, invalid, error).",
                               req_labels, NULL, 0, &ad->m_req);
    if (r == 0)
        r = metrics_family_new(agent_metrics(a), METRICS_HISTOGRAM,
                               "cliqo_admission_request_duration_seconds",
                               "Time to decide on an admission review, by webhook.", dur_labels,
                               buckets, sizeof(buckets) / sizeof(buckets[0]), &ad->m_dur);
    if (r == 0)
        r = metrics_family_new(agent_metrics(a), METRICS_COUNTER, "cliqo_webhook_connections_total",
                               "Connections to the webhook server, by outcome: handshake (handed "
                               "to TLS), abandoned (its client hung up while it was held, "
                               "ADM_HANDSHAKE_HOLD_MS: a handshake saved).",
                               conn_labels, NULL, 0, &ad->m_conn);
    if (r == 0)
        r = metrics_add_collector(agent_metrics(a), collect_connections, ad);
    return r;
}

int adm_start(struct agent *a)
{
    int r = ctl_module_start(a, MOD);

    if (r == 0)
        kick(agent_module_data(a, MOD));
    return r;
}

void adm_fini(struct agent *a)
{
    struct adm *ad = agent_module_data(a, MOD);

    if (!ad)
        return;
    httpd_close(ad->srv, NULL, NULL);
    free_pair(ad);
    adm_ledger_free(ad->ledger);
    ktimer_free(ad->ca_timer);
    x_free(ad->client_ca);
    adm_usage_free(ad->usage);
    ctl_module_fini(a, MOD);
}

bool adm_ready(struct agent *a)
{
    struct adm *ad = agent_module_data(a, MOD);

    return ad && ad->srv && httpd_started(ad->srv);
}
