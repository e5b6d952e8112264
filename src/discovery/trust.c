/* Trust and join policy of discovery (see ctl.h and docs/discovery.md, "Trust").
 *
 * Discovery finds addresses; it never grants trust. The only trust anchor is what the operator
 * supplied in Secret remote-auth-<id> (cliqo namespace): the peer's token, and either the expected
 * CA hash (key ca-cert-hash, "sha256:<hex>") or the CA itself (key ca.crt, whose hash is then the
 * expected one). The hash a cluster announces (mDNS TXT or DNS TXT) is attacker-controlled: it is
 * only compared with the expected one, and a difference is a mismatch that blocks the join. The CA
 * fetched from the announced URL must also hash to the expected value before it is stored.
 *
 * Join (outgoingPeeringEnabled Auto -> Yes) happens only when:
 *   LAN: discoveryConfig.autojoin and the operator supplied token and expected hash, or
 *        discoveryConfig.autojoinUntrusted and a token only (trust on first use, loud warning);
 *   WAN: the SearchDomain's spec.autojoin, with the same two cases.
 * Anything else is shown in status.discovery (trust and message) and left to the operator:
 * `cliqoctl add <cluster> --token T --ca-cert-hash H`. */
#include "discovery/ctl.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/xalloc.h"
#include "kube/kubeconfig.h"
#include "peering/objects.h"
#include "peering/pki.h"
#include "peering/resources.h"

#define JOINS_MAX        16
#define FAILURES_MAX     64
#define FETCH_TIMEOUT_MS 5000
#define MISMATCH_HOLD_MS (5 * 60 * 1000) /* a CA that does not match: look again after this */
#define ERROR_HOLD_MS    (20 * 1000)     /* the endpoint did not answer */

struct join {
    struct disc *d; /* the module (the join's callbacks get the join) */
    bool used;
    char id[PEER_NAME_MAX + 1];
    char fc[256];
    char fc_uid[64];
    char url[DREC_URL_MAX + 1];
    char expected[PEER_CA_HASH_LEN + 1];
    char announced[PEER_CA_HASH_LEN + 1];
    bool tofu, need_ca;
    struct kc_config *cfg;
    struct kapi_client *c;
    disc_join_cb done;
    void *data;
};

struct failure {
    bool used;
    char id[PEER_NAME_MAX + 1];
    char url[DREC_URL_MAX + 1];
    char expected[PEER_CA_HASH_LEN + 1];
    char why[400];
    int64_t until;
};

/* trust.c's part of the module's state (struct disc, d->joins). */
struct disc_joins {
    struct join joins[JOINS_MAX];
    struct failure failures[FAILURES_MAX];
};

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *disc_trust_name(enum disc_trust t)
{
    switch (t) {
    case DISC_TRUST_NO_CREDENTIALS:
        return "NoCredentials";
    case DISC_TRUST_TRUSTED:
        return "Trusted";
    case DISC_TRUST_UNTRUSTED:
        return "Untrusted";
    case DISC_TRUST_MISMATCH:
        return "Mismatch";
    case DISC_TRUST_CONFLICT:
        return "Conflict";
    }
    return "Unknown";
}

/* ---- failures ----------------------------------------------------------------------------------
 */

static void remember(const struct join *j, const char *why, int64_t hold)
{
    struct failure *failures = j->d->joins->failures;
    struct failure *f = NULL, *oldest = &failures[0];

    for (int i = 0; i < FAILURES_MAX && !f; i++)
        if (failures[i].used && strcmp(failures[i].id, j->id) == 0)
            f = &failures[i];
    for (int i = 0; i < FAILURES_MAX && !f; i++) {
        if (!failures[i].used)
            f = &failures[i];
        else if (failures[i].until < oldest->until)
            oldest = &failures[i];
    }
    if (!f)
        f = oldest;
    memset(f, 0, sizeof(*f));
    f->used = true;
    snprintf(f->id, sizeof(f->id), "%s", j->id);
    snprintf(f->url, sizeof(f->url), "%s", j->url);
    snprintf(f->expected, sizeof(f->expected), "%s", j->expected);
    snprintf(f->why, sizeof(f->why), "%s", why);
    f->until = now_ms() + hold;
}

bool disc_trust_failed(struct disc *d, const char *id, const char *url, const char *expected,
                       char *why, size_t whylen)
{
    for (int i = 0; i < FAILURES_MAX; i++) {
        struct failure *f = &d->joins->failures[i];

        if (!f->used || strcmp(f->id, id) != 0)
            continue;
        if (strcmp(f->url, url) != 0 || strcmp(f->expected, expected) != 0 ||
            now_ms() >= f->until) {
            f->used = false; /* something changed, or it is time to look again */
            return false;
        }
        snprintf(why, whylen, "%s", f->why);
        return true;
    }
    return false;
}

/* ---- the decision ------------------------------------------------------------------------------
 */

static bool search_domain_autojoin(struct disc *d, const char *sd)
{
    json_t *o = disc_search_domain(d, sd);
    bool v = json_is_true(json_object_get(json_object_get(o, "spec"), "autojoin"));

    json_decref(o);
    return v;
}

/* True when the Secret is owned by a ForeignCluster other than fc (same name, older uid). */
static bool owned_by_other(const json_t *sec, const json_t *fc)
{
    const json_t *refs = json_object_get(json_object_get(sec, "metadata"), "ownerReferences");
    const char *uid = kapi_obj_uid(fc);
    const json_t *ref;
    size_t i;

    json_array_foreach(refs, i, ref)
    {
        const char *kind = json_string_value(json_object_get(ref, "kind"));
        const char *ruid = json_string_value(json_object_get(ref, "uid"));

        if (kind && strcmp(kind, "ForeignCluster") == 0 && ruid && uid && strcmp(ruid, uid) != 0)
            return true;
    }
    return false;
}

void disc_trust_decide(struct disc *d, const struct disc_cand *c, const struct disc_source *p,
                       const json_t *fc, struct disc_verdict *v)
{
    const struct disc_lan_config *cfg = disc_config(d);
    char name[PEER_NAME_MAX + 32], err[256], why[400];
    char *token = NULL, *ca = NULL, *hash = NULL, ca_hash[PEER_CA_HASH_LEN + 1] = "";
    const char *out =
        json_string_value(json_object_get(json_object_get(fc, "spec"), "outgoingPeeringEnabled"));
    const char *fcname = kapi_obj_name(fc);
    bool policy, automatic = !out || strcmp(out, "Auto") == 0;
    json_t *sec;

    memset(v, 0, sizeof(*v));
    snprintf(name, sizeof(name), "remote-auth-%s", c->id);
    sec = disc_secret(d, name);
    if (sec && owned_by_other(sec, fc)) {
        /* The credentials of a ForeignCluster that was deleted (an unpeer): they are being
         * garbage-collected and must not join the rediscovered cluster again. */
        json_decref(sec);
        sec = NULL;
    }
    token = disc_secret_field(sec, "token", 1024);
    ca = disc_secret_field(sec, "ca.crt", PEER_PKI_PEM_MAX);
    hash = disc_secret_field(sec, "ca-cert-hash", 256);
    json_decref(sec);
    if (ca && peer_pki_ca_hash(ca, strlen(ca), ca_hash, err, sizeof(err)) < 0)
        ca_hash[0] = '\0';
    if ((!hash || drec_hash_normalize(hash, strlen(hash), v->expected) < 0) && ca_hash[0])
        snprintf(v->expected, sizeof(v->expected), "%s", ca_hash);
    policy = p->kind == DISC_LAN ? cfg->autojoin : search_domain_autojoin(d, p->sd);
    if (!token || !*token) {
        v->trust = DISC_TRUST_NO_CREDENTIALS;
        snprintf(v->message, sizeof(v->message),
                 "not trusted: no credentials for this cluster; to peer, run 'cliqoctl add %s "
                 "--token TOKEN --ca-cert-hash HASH' with the values its 'cliqoctl "
                 "generate-add-command' prints",
                 fcname ? fcname : c->id);
    } else if (v->expected[0]) {
        if (p->a.ca_hash[0] && strcmp(p->a.ca_hash, v->expected) != 0) {
            v->trust = DISC_TRUST_MISMATCH;
            snprintf(v->message, sizeof(v->message),
                     "CA hash mismatch: the cluster announces %s but the expected hash (Secret "
                     "remote-auth-%s) is %s; possible spoofing: not joining",
                     p->a.ca_hash, c->id, v->expected);
        } else if (disc_trust_failed(d, c->id, p->a.url, v->expected, why, sizeof(why))) {
            v->trust = DISC_TRUST_MISMATCH;
            snprintf(v->message, sizeof(v->message), "%s", why);
        } else {
            v->trust = DISC_TRUST_TRUSTED;
            snprintf(v->message, sizeof(v->message),
                     "trusted: the operator supplied the token and the expected CA hash");
            v->join = automatic && policy;
            v->need_ca = !ca_hash[0] || strcmp(ca_hash, v->expected) != 0;
        }
    } else {
        v->trust = DISC_TRUST_UNTRUSTED;
        if (cfg->autojoin_untrusted && automatic && (p->kind == DISC_LAN || policy)) {
            if (disc_trust_failed(d, c->id, p->a.url, "", why, sizeof(why))) {
                v->trust = DISC_TRUST_MISMATCH;
                snprintf(v->message, sizeof(v->message), "%s", why);
            } else {
                snprintf(v->message, sizeof(v->message),
                         "WARNING: untrusted: no expected CA hash; autojoinUntrusted joins it "
                         "trusting the announced CA on first use");
                v->join = true;
                v->tofu = true;
                v->need_ca = true;
            }
        } else {
            snprintf(v->message, sizeof(v->message),
                     "untrusted: a token but no expected CA hash (set ca-cert-hash in Secret "
                     "remote-auth-%s, or run 'cliqoctl add %s --token TOKEN --ca-cert-hash HASH')",
                     c->id, fcname ? fcname : c->id);
        }
    }
    if (token)
        OPENSSL_cleanse(token, strlen(token));
    x_free(token);
    x_free(ca);
    x_free(hash);
}

/* ---- the join ----------------------------------------------------------------------------------
 */

static void join_end(struct join *j, int err, const char *msg)
{
    disc_join_cb done = j->done;
    void *data = j->data;
    char id[PEER_NAME_MAX + 1];

    snprintf(id, sizeof(id), "%s", j->id);
    if (j->c)
        kapi_client_close(j->c);
    kc_config_free(j->cfg);
    memset(j, 0, sizeof(*j));
    if (done)
        done(id, err, msg ? msg : "", data);
}

static void after_fc(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct join *j = data;
    char msg[1024];

    (void)c;
    if (res->err == -EINVAL) {
        /* The test failed: outgoingPeeringEnabled is no longer Auto (the operator, or an
         * earlier pass, decided): nothing to do. */
        join_end(j, 0, NULL);
        return;
    }
    if (res->err < 0) {
        snprintf(msg, sizeof(msg), "enabling the outgoing peering of ForeignCluster %s: %s", j->fc,
                 res->status.message);
        join_end(j, res->err, msg);
        return;
    }
    log_info(DISC_MOD, "cluster %s: outgoing peering enabled on ForeignCluster %s (autojoin)",
             j->id, j->fc);
    join_end(j, 0, NULL);
}

static void enable_outgoing(struct join *j)
{
    /* Only if it is still Auto: an operator's Yes or No wins. */
    static const char patch[] =
        "[{\"op\":\"test\",\"path\":\"/spec/outgoingPeeringEnabled\",\"value\":\"Auto\"},"
        "{\"op\":\"replace\",\"path\":\"/spec/outgoingPeeringEnabled\",\"value\":\"Yes\"}]";

    if (kapi_patch(agent_kube(disc_agent(j->d)), &peer_res_foreignclusters, NULL, j->fc, NULL,
                   KAPI_PATCH_JSON, patch, after_fc, j) < 0)
        join_end(j, -ENOMEM, "cannot send the ForeignCluster patch");
}

static void after_secret(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct join *j = data;
    char msg[1024];

    (void)c;
    if (res->err < 0) {
        snprintf(msg, sizeof(msg), "storing the CA in Secret remote-auth-%s: %s", j->id,
                 res->status.message);
        join_end(j, res->err, msg);
        return;
    }
    enable_outgoing(j);
}

static void store_ca(struct join *j, const char *pem, const char *hash)
{
    char name[PEER_NAME_MAX + 32], *body;
    json_t *patch;
    int e = -ENOMEM;

    snprintf(name, sizeof(name), "remote-auth-%s", j->id);
    patch = json_pack("{s:{s:s,s:s},s:{s:[{s:s,s:s,s:s,s:s}]}}", "stringData", "ca.crt", pem,
                      "ca-cert-hash", hash, "metadata", "ownerReferences", "apiVersion",
                      "discovery.liqo.io/v1alpha1", "kind", "ForeignCluster", "name", j->fc, "uid",
                      j->fc_uid);
    body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    if (body)
        e = kapi_patch(agent_kube(disc_agent(j->d)), &kapi_secrets,
                       agent_namespace(disc_agent(j->d)), name, NULL, KAPI_PATCH_MERGE, body,
                       after_secret, j);
    x_free(body);
    if (e < 0)
        join_end(j, e, "cannot send the Secret patch");
}

static void after_ca(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct join *j = data;
    char got[PEER_CA_HASH_LEN + 1], err[256], msg[1400];
    const char *want = j->tofu ? j->announced : j->expected;

    (void)c;
    /* The answer is PEM, not JSON: a 200 whose body the client could not parse as JSON
     * (-EBADMSG) is what we expect. */
    if ((res->err < 0 && !(res->err == -EBADMSG && res->http_status == 200)) ||
        res->http_status != 200) {
        snprintf(msg, sizeof(msg), "GET %s/ca: %s", j->url, res->status.message);
        remember(j, msg, ERROR_HOLD_MS);
        join_end(j, -EIO, msg);
        return;
    }
    if (peer_pki_ca_hash(res->raw, res->raw_len, got, err, sizeof(err)) < 0) {
        snprintf(msg, sizeof(msg), "%s/ca is not a single CA certificate: %s", j->url, err);
        remember(j, msg, MISMATCH_HOLD_MS);
        disc_count_event(j->d, "ca-hash-mismatch");
        join_end(j, -EACCES, msg);
        return;
    }
    if (want[0] && strcmp(got, want) != 0) {
        snprintf(msg, sizeof(msg),
                 "CA hash mismatch: the CA served at %s has hash %s, not the %s %s; possible "
                 "spoofing: not joining",
                 j->url, got, j->tofu ? "announced" : "expected", want);
        remember(j, msg, MISMATCH_HOLD_MS);
        disc_count_event(j->d, "ca-hash-mismatch");
        log_warn(DISC_MOD, "cluster %s: %s", j->id, msg);
        join_end(j, -EACCES, msg);
        return;
    }
    /* Pinned: the stored CA is now the only trust anchor the peering uses. */
    {
        char *pem = x_strndup(res->raw, res->raw_len);

        if (!pem) {
            join_end(j, -ENOMEM, "out of memory");
            return;
        }
        if (j->c) {
            kapi_client_close(j->c);
            j->c = NULL;
        }
        store_ca(j, pem, got);
        x_free(pem);
    }
}

int disc_trust_join(struct disc *d, const char *id, const char *fc_name, const char *fc_uid,
                    const char *url, const struct disc_verdict *v, const char *announced_hash,
                    disc_join_cb done, void *data)
{
    struct kapi_client_options o = {.timeout_ms = FETCH_TIMEOUT_MS, .max_body = PEER_PKI_PEM_MAX};
    struct kapi_request req = {.method = "GET", .path = "/ca"};
    struct join *joins = d->joins->joins, *j = NULL;

    for (int i = 0; i < JOINS_MAX; i++) {
        if (joins[i].used && strcmp(joins[i].id, id) == 0)
            return -EBUSY;
        if (!joins[i].used && !j)
            j = &joins[i];
    }
    if (!j)
        return -EBUSY;
    memset(j, 0, sizeof(*j));
    j->d = d;
    j->used = true;
    snprintf(j->id, sizeof(j->id), "%s", id);
    snprintf(j->fc, sizeof(j->fc), "%s", fc_name);
    snprintf(j->fc_uid, sizeof(j->fc_uid), "%s", fc_uid ? fc_uid : "");
    snprintf(j->url, sizeof(j->url), "%s", url);
    snprintf(j->expected, sizeof(j->expected), "%s", v->expected);
    snprintf(j->announced, sizeof(j->announced), "%s", announced_hash ? announced_hash : "");
    j->tofu = v->tofu;
    j->need_ca = v->need_ca;
    j->done = done;
    j->data = data;
    if (!j->need_ca) {
        enable_outgoing(j);
        return 0;
    }
    /* No TLS check on this one request: its answer is checked against the pin instead (as
     * kubeadm join does with cluster-info). */
    j->cfg = x_calloc(1, sizeof(*j->cfg));
    if (!j->cfg)
        goto nomem;
    j->cfg->server = x_strdup(url);
    j->cfg->namespace = x_strdup("default");
    j->cfg->insecure_skip_tls_verify = true;
    if (!j->cfg->server || !j->cfg->namespace ||
        kapi_client_new(agent_loop(disc_agent(d)), j->cfg, &o, &j->c) < 0 ||
        kapi_send(j->c, &req, after_ca, j, NULL) < 0)
        goto nomem;
    return 0;
nomem:
    if (j->c)
        kapi_client_close(j->c);
    kc_config_free(j->cfg);
    memset(j, 0, sizeof(*j));
    return -ENOMEM;
}

int disc_trust_init(struct disc *d)
{
    d->joins = x_calloc(1, sizeof(*d->joins));
    return d->joins ? 0 : -ENOMEM;
}

void disc_trust_fini(struct disc *d)
{
    struct disc_joins *t = d->joins;

    if (!t)
        return;
    for (int i = 0; i < JOINS_MAX; i++)
        if (t->joins[i].used) {
            t->joins[i].done = NULL;
            join_end(&t->joins[i], -ECANCELED, NULL);
        }
    x_free(t);
    d->joins = NULL;
}
