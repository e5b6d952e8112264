/* auth: the HTTPS auth endpoint of docs/peering.md, served on --auth-addr.
 *
 *   GET  /ca        the auth CA (PEM), which clients pin with --ca-cert-hash
 *   GET  /ids       {"clusterId","clusterName"}
 *   POST /identity  {"clusterID","clusterName","token","publicKey","timestamp","signature"}
 *                   -> 201 {"namespace","kubeconfig","keyId"}
 *
 * The certificate, the CA and the token come from the Secrets auth-tls and auth-token of the
 * agent's namespace, followed by an informer on every replica (a rotated token is used at once).
 * Every replica serves /ca and /ids; /identity writes to the cluster, so a standby answers it 503
 * (the client retries) and only the leader issues credentials.
 *
 * An identity belongs to the peer that first obtained it (docs/peering.md, "Identity keys"): a
 * request proves possession of the caller's identity key (peering/idkey.h), and the key ID is
 * bound to X's tenant namespace (annotation cliqo.io/identity-key-id) when it is made. Later
 * requests for X must prove the same key; they need no token. A tenant namespace of X without a
 * key ID is bound by the first request whose key matches the one this cluster learned from X
 * itself (the keyId of X's answer to our own POST /identity, kept in remote-identity-<X>), or,
 * when nothing was learned (made before identity keys), by the first proven request with a valid
 * token. A token is the shared one (Secret auth-token) or a single-use one (a Secret per token,
 * holding its SHA-256 and expiry, see docs/peering.md "Tokens"): used once, it is bound to the
 * caller's cluster ID and key by a resourceVersion-conditional update before anything is made, so
 * two requests cannot both use it; expired ones are refused and deleted.
 *
 * Issuing a credential for peer X (idempotent: a second request returns the same credential; the
 * outgoing controller uses the same steps, through peer_issue_credential, for the credential it
 * hands back to a provider):
 *   1. the tenant namespace of X: looked up by its cluster-id label (whatever its name), the
 *      oldest one if several; made only when there is none, then looked up again, and a younger
 *      duplicate made by a concurrent request is deleted, so X never keeps two;
 *   2. in it, RoleBinding cliqo-agent (the agent's own rights there, ClusterRole
 *      cliqo-agent-tenant), ServiceAccount remote-<X>, RoleBinding cliqo-remote-peering (X's
 *      rights), and the token Secret remote-<X>-token of that ServiceAccount;
 *   3. once the token controller has filled the Secret, a kubeconfig with this cluster's API URL,
 *      its CA and the token, limited to the tenant namespace by RBAC.
 * Failures are counted per client address: after 5 in a minute its requests without a right token
 * get 429; a right token is never refused by that count (handle_identity says which is which).
 *
 * An issuance waits on requests and, for the token, on a timer. The agent finishes its modules
 * only after every request in flight completed (as cancelled), and its callers (the outgoing
 * controller, the broadcaster) free what the callback uses in their fini, which runs before this
 * module's: so every issuance ends, its caller told, no later than the agent's abort of its
 * requests. When the module stops (shutdown, lost leadership), one waiting on its timer ends at
 * once (-ECANCELED to a caller, 503 to an HTTP client), one with a request in flight when that
 * request completes, and no new one starts. */
#include "peering/controllers/controllers.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "agent/identity.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "kube/backoff.h"
#include "kube/names.h"
#include "peering/identity.h"
#include "peering/idkey.h"
#include "peering/kubeconfig_out.h"
#include "peering/resources.h"
#include "peering/token.h"
#include "peering/wire.h"

#define TOKEN_WAIT_MS   15000
#define TOKEN_POLL_MS   250
#define TOKEN_GC_MS     60000 /* sweep of expired single-use tokens */
#define AGENT_SA        "cliqo-agent"
#define AGENT_TENANT_CR "cliqo-agent-tenant"
#define MOD             "auth"

/* The module's state (agent_module_data "auth"); it has no controller (mod.ctl stays NULL). */
struct auth {
    struct ctl_module mod; /* first */
    struct inf_informer *secrets;
    struct httpd_server *srv;
    struct peer_limiter *lim;
    char token[PEER_TOKEN_LEN + 1];
    char *ca_pem;
    bool listening;
    struct metrics_family *requests;
    struct issue *issues; /* credentials being issued (a timer or a request pending) */
    uv_timer_t *gc;       /* sweeps expired single-use tokens (leader) */
    bool stopped;         /* issuances end (cancelled) instead of going on; none starts */
};

/* ---- the Secrets ---------------------------------------------------------------------------- */

static const char *secret_value(const json_t *obj, const char *key, char **owned)
{
    const char *b64 = json_string_value(json_object_get(json_object_get(obj, "data"), key));
    size_t len;

    *owned = NULL;
    if (!b64 || peer_base64_decode(b64, PEER_SECRET_MAX, owned, &len) < 0)
        return NULL;
    return *owned;
}

static void handle_identity(struct httpd_request *req, void *data);
static void token_gc(struct auth *m, const json_t *obj);
static void handle_ids(struct httpd_request *req, void *data);
static void handle_ca(struct httpd_request *req, void *data);

static void start_server(struct auth *m, const json_t *tls)
{
    char *cert = NULL, *key = NULL, *ca = NULL, err[256];
    int r;

    if (m->listening)
        return;
    if (!secret_value(tls, "tls.crt", &cert) || !secret_value(tls, "tls.key", &key) ||
        !secret_value(tls, "ca.crt", &ca)) {
        log_error("auth",
                  "Secret %s/%s lacks tls.crt, tls.key or ca.crt: auth endpoint not started",
                  agent_namespace(m->mod.a), PEER_AUTH_TLS_SECRET);
        goto out;
    }
    r = agent_auth_server(m->mod.a, cert, key, &m->srv);
    if (r < 0) {
        log_error("auth", "cannot create the auth server: %s", strerror(-r));
        goto out;
    }
    if ((r = httpd_route(m->srv, "GET", "/ca", 0, handle_ca, m)) < 0 ||
        (r = httpd_route(m->srv, "GET", "/ids", 0, handle_ids, m)) < 0 ||
        (r = httpd_route(m->srv, "POST", "/identity", PEER_WIRE_REQUEST_MAX, handle_identity, m)) <
            0) {
        log_error("auth", "cannot add the auth routes: %s", strerror(-r));
        goto out;
    }
    r = httpd_start(m->srv, err, sizeof(err));
    if (r < 0) {
        log_error("auth", "cannot listen: %s", err);
        goto out;
    }
    x_free(m->ca_pem);
    m->ca_pem = ca;
    ca = NULL;
    m->listening = true;
    log_info("auth", "auth endpoint listening on port %u", (unsigned)httpd_port(m->srv));
out:
    if (key)
        OPENSSL_cleanse(key, strlen(key));
    x_free(cert);
    x_free(key);
    x_free(ca);
}

static void on_secret(struct inf_informer *inf, json_t *obj, void *data)
{
    struct auth *m = data;
    const char *name = kapi_obj_name(obj);
    char *tok = NULL;

    (void)inf;
    if (!name)
        return;
    if (strcmp(name, PEER_AUTH_TOKEN_SECRET) == 0) {
        if (secret_value(obj, "token", &tok) && peer_token_valid(tok)) {
            if (m->token[0] && strcmp(m->token, tok) != 0)
                log_info("auth", "peering token rotated (Secret %s/%s)", agent_namespace(m->mod.a),
                         PEER_AUTH_TOKEN_SECRET);
            snprintf(m->token, sizeof(m->token), "%s", tok);
        } else {
            log_warn("auth", "Secret %s/%s has no valid token (64 lowercase hex digits)",
                     agent_namespace(m->mod.a), PEER_AUTH_TOKEN_SECRET);
            OPENSSL_cleanse(m->token, sizeof(m->token));
        }
        if (tok)
            OPENSSL_cleanse(tok, strlen(tok));
        x_free(tok);
    } else if (strcmp(name, PEER_AUTH_TLS_SECRET) == 0) {
        start_server(m, obj);
    } else if (strncmp(name, PEER_TOKEN_SECRET_PREFIX, strlen(PEER_TOKEN_SECRET_PREFIX)) == 0) {
        token_gc(m, obj);
    }
}

static void on_secret_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_secret(inf, new_obj, data);
}

static void on_secret_delete(struct inf_informer *inf, json_t *obj, void *data)
{
    struct auth *m = data;

    (void)inf;
    if (kapi_obj_name(obj) && strcmp(kapi_obj_name(obj), PEER_AUTH_TOKEN_SECRET) == 0) {
        log_warn("auth", "Secret %s/%s deleted: every peering request is refused until it is back",
                 agent_namespace(m->mod.a), PEER_AUTH_TOKEN_SECRET);
        OPENSSL_cleanse(m->token, sizeof(m->token));
    }
}

/* ---- simple routes -------------------------------------------------------------------------- */

static void handle_ca(struct httpd_request *req, void *data)
{
    struct auth *m = data;

    httpd_respond(req, 200, "application/x-pem-file", m->ca_pem, strlen(m->ca_pem));
}

static void handle_ids(struct httpd_request *req, void *data)
{
    struct auth *m = data;
    struct peer_ids ids;
    char *json = NULL;

    if (!identity_cluster_id(m->mod.a)) {
        httpd_respond_error(req, 503, PEER_WIRE_E_UNAVAILABLE, "the cluster has no identity yet");
        return;
    }
    memset(&ids, 0, sizeof(ids));
    snprintf(ids.cluster_id, sizeof(ids.cluster_id), "%s", identity_cluster_id(m->mod.a));
    snprintf(ids.cluster_name, sizeof(ids.cluster_name), "%s",
             identity_cluster_name(m->mod.a) ? identity_cluster_name(m->mod.a) : "");
    snprintf(ids.key_id, sizeof(ids.key_id), "%s",
             identity_key_id(m->mod.a) ? identity_key_id(m->mod.a) : "");
    if (peer_wire_ids_encode(&ids, &json) < 0) {
        httpd_respond_error(req, 500, PEER_WIRE_E_INTERNAL, "cannot encode the identity");
        return;
    }
    httpd_respond(req, 200, "application/json", json, strlen(json));
    x_free(json);
}

/* ---- POST /identity -------------------------------------------------------------------------- */

struct issue {
    struct ctl_call_chain ch; /* first */
    struct auth *m;
    struct httpd_request *req; /* NULL once aborted (HTTP requests only) */
    bool http;                 /* answering an HTTP request (else calling done) */
    peer_issue_cb done;
    void *done_data;
    struct peer_identity_request in;
    enum peer_cred_kind kind;
    const char *role, *binding; /* the ClusterRole the identity gets in the tenant namespace */
    char ns[64], sa[80], secret[96];
    bool lookup;  /* the tenant namespace is found by its cluster-id label (not given) */
    bool created; /* this issuance made the tenant namespace */
    bool rechecked;
    char key_id[PEER_KEY_ID_LEN + 1]; /* HTTP: the caller's proven key */
    enum { TOK_NONE, TOK_SHARED, TOK_SINGLE, TOK_SINGLE_FRESH } tok;
    const char *tok_why; /* TOK_NONE: why the token is refused */
    json_t *tok_secret;  /* TOK_SINGLE_FRESH: our copy of its Secret, to consume */
    void (*after_consume)(struct issue *is);
    char found_rv[32]; /* the unbound tenant namespace found, to bind */
    uv_timer_t *timer;
    uint64_t deadline;
    bool made; /* this issuance created the ServiceAccount or its token Secret */
    /* ensure_object: what to create when the GET finds nothing, and the step after either */
    const struct kapi_resource *ens_res;
    json_t *ens_obj;
    void (*ens_next)(void *owner);
    struct issue *next, **pprev; /* auth.issues */
};

static struct issue *issue_new(struct auth *m)
{
    struct issue *is = x_calloc(1, sizeof(*is));

    if (!is)
        return NULL;
    is->m = m;
    is->next = m->issues;
    if (m->issues)
        m->issues->pprev = &is->next;
    is->pprev = &m->issues;
    m->issues = is;
    return is;
}

static void issue_free(struct issue *is)
{
    if (is->next)
        is->next->pprev = is->pprev;
    *is->pprev = is->next;
    ktimer_free(is->timer);
    ctl_call_reset(&is->ch.last);
    peer_identity_request_clear(&is->in);
    json_decref(is->tok_secret);
    json_decref(is->ens_obj);
    x_free(is);
}

static void on_abort(struct httpd_request *req, void *data)
{
    struct issue *is = data;

    (void)req;
    log_warn("auth", "request of cluster %s abandoned (timeout or shutdown)", is->in.cluster_id);
    is->req = NULL;
}

/* Answers (if the client is still there) or reports err to the caller, and frees. */
static void end(struct issue *is, int err, unsigned status, const char *reason, const char *msg)
{
    if (is->req)
        httpd_respond_error(is->req, status, reason, msg);
    else if (!is->http && is->done)
        is->done(err, msg, NULL, NULL, is->done_data);
    issue_free(is);
}

static void finish(struct issue *is, unsigned status, const char *reason, const char *msg)
{
    if (status >= 500)
        log_error("auth", "credential for cluster %s failed: %s", is->in.cluster_id, msg);
    end(is, status == 503 ? -EAGAIN : -EIO, status, reason, msg);
}

/* Gives up on an issuance that must not go on (the module stopped, or its request was cancelled
 * because the agent closes its client): its caller gets -ECANCELED, an HTTP client 503 (it
 * retries, with the leader). */
static void cancel(struct issue *is)
{
    log_debug("auth", "credential for cluster %s: cancelled (the agent stops issuing)",
              is->in.cluster_id);
    end(is, -ECANCELED, 503, PEER_WIRE_E_UNAVAILABLE,
        "this replica stopped issuing credentials (shutting down or no longer the leader)");
}

/* Common check after a create: success or AlreadyExists go on, anything else fails. */
static bool created_or_exists(struct issue *is, const char *what)
{
    char msg[384];

    if (is->ch.last.err == 0 || is->ch.last.err == -EEXIST)
        return true;
    snprintf(msg, sizeof(msg), "cannot create %s: %s", what, is->ch.last.message);
    finish(is, 500, PEER_WIRE_E_INTERNAL, msg);
    return false;
}

/* At each step: true when the issuance ended here, because its HTTP client went away, or it is
 * cancelled (see cancel). */
static bool gone(struct issue *is)
{
    struct auth *m = is->m;

    if (m->stopped || is->ch.last.err == -ECANCELED) {
        cancel(is);
        return true;
    }
    if (is->req || !is->http)
        return false;
    issue_free(is);
    return true;
}

/* Creates o (stolen) in the tenant namespace unless its name is already there, then goes on with
 * next, which reads ch.last as after a create (0 with the object, or the create's error). Never a
 * blind create: the ResourceQuota admission charges a create to cliqo-tenant-objects before
 * storage refuses it as AlreadyExists, and kube-controller-manager takes the charge back only at
 * its next full resync (minutes), so re-issuing a credential by creating again would exhaust the
 * quota within a few refreshes and lock the peer out of its own identity. */
static void step_ensure_got(void *owner)
{
    struct issue *is = owner;
    struct auth *m = is->m;

    if (gone(is))
        return;
    if (is->ch.last.err != -ENOENT) {
        json_decref(is->ens_obj);
        is->ens_obj = NULL;
        is->ens_next(is);
        return;
    }
    is->made = true;
    is->ch.next = is->ens_next;
    if (kapi_create(agent_kube(m->mod.a), is->ens_res, is->ns, is->ens_obj, ctl_call_cb, is) < 0)
        finish(is, 500, PEER_WIRE_E_INTERNAL, "cannot reach the API server");
    json_decref(is->ens_obj);
    is->ens_obj = NULL;
}

static void ensure_object(struct issue *is, const struct kapi_resource *res, const char *name,
                          json_t *o, void (*next)(void *))
{
    struct auth *m = is->m;

    if (!o) {
        finish(is, 500, PEER_WIRE_E_INTERNAL, "out of memory");
        return;
    }
    json_decref(is->ens_obj);
    is->ens_res = res;
    is->ens_obj = o;
    is->ens_next = next;
    is->ch.next = step_ensure_got;
    if (kapi_get(agent_kube(m->mod.a), res, is->ns, name, ctl_call_cb, is) < 0)
        finish(is, 500, PEER_WIRE_E_INTERNAL, "cannot reach the API server");
}

static void step_reply(struct issue *is);
static void step_poll_token(void *owner);
static void create_namespace(struct issue *is, const char *key_id, void (*next)(void *));

static void on_poll_timer(uv_timer_t *t)
{
    struct issue *is = t->data;
    struct auth *m = is->m;

    if (gone(is))
        return;
    is->ch.next = step_poll_token;
    if (kapi_get(agent_kube(m->mod.a), &kapi_secrets, is->ns, is->secret, ctl_call_cb, is) < 0)
        finish(is, 500, PEER_WIRE_E_INTERNAL, "cannot read the token Secret");
}

static void step_poll_token(void *owner)
{
    struct issue *is = owner;
    struct auth *m = is->m;
    const char *tok;

    if (gone(is))
        return;
    tok = json_string_value(json_object_get(json_object_get(is->ch.last.body, "data"), "token"));
    if (is->ch.last.err == 0 && tok && *tok) {
        step_reply(is);
        return;
    }
    if (is->ch.last.err < 0 && is->ch.last.err != -ENOENT && is->ch.last.err != -EEXIST) {
        char msg[384];

        snprintf(msg, sizeof(msg), "cannot create or read the token Secret: %s",
                 is->ch.last.message);
        finish(is, 500, PEER_WIRE_E_INTERNAL, msg);
        return;
    }
    if (uv_now(agent_loop(m->mod.a)) >= is->deadline) {
        finish(is, 503, PEER_WIRE_E_UNAVAILABLE,
               "the service-account token was not issued in time (is the token controller of "
               "kube-controller-manager running, and can the API server reach this agent's "
               "webhooks, which check Secrets in tenant namespaces?)");
        return;
    }
    if (!is->timer && !(is->timer = ktimer_new(agent_loop(m->mod.a), is))) {
        finish(is, 500, PEER_WIRE_E_INTERNAL, "out of memory");
        return;
    }
    uv_timer_start(is->timer, on_poll_timer, TOKEN_POLL_MS, 0);
}

static void step_token_secret(void *owner)
{
    struct issue *is = owner;
    struct auth *m = is->m;
    json_t *o;

    if (gone(is) || !created_or_exists(is, "the identity's RoleBinding"))
        return;
    o = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s},s:{s:s}},s:s}", "apiVersion", "v1", "kind", "Secret",
                  "metadata", "name", is->secret, "namespace", is->ns, "labels",
                  PEER_LABEL_CLUSTER_ID, is->in.cluster_id, "annotations",
                  "kubernetes.io/service-account.name", is->sa, "type",
                  "kubernetes.io/service-account-token");
    is->deadline = uv_now(agent_loop(m->mod.a)) + TOKEN_WAIT_MS;
    /* Found or created: step_poll_token reads ch.last, and again until the token is in it. */
    ensure_object(is, &kapi_secrets, is->secret, o, step_poll_token);
}

static json_t *rolebinding(const char *ns, const char *name, const char *role, const char *sa_ns,
                           const char *sa)
{
    return json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s,s:s,s:s},s:[{s:s,s:s,s:s}]}",
                     "apiVersion", "rbac.authorization.k8s.io/v1", "kind", "RoleBinding",
                     "metadata", "name", name, "namespace", ns, "labels",
                     "app.kubernetes.io/managed-by", "cliqo-agent", "roleRef", "apiGroup",
                     "rbac.authorization.k8s.io", "kind", "ClusterRole", "name", role, "subjects",
                     "kind", "ServiceAccount", "name", sa, "namespace", sa_ns);
}

static void step_peer_binding(void *owner)
{
    struct issue *is = owner;
    struct auth *m = is->m;
    json_t *o;

    if (gone(is) || !created_or_exists(is, "the ServiceAccount"))
        return;
    o = rolebinding(is->ns, is->binding, is->role, is->ns, is->sa);
    is->ch.next = step_token_secret;
    if (!o ||
        kapi_create(agent_kube(m->mod.a), &peer_res_rolebindings, is->ns, o, ctl_call_cb, is) < 0)
        finish(is, 500, PEER_WIRE_E_INTERNAL, "cannot create the RoleBinding");
    json_decref(o);
}

static void step_sa(void *owner)
{
    struct issue *is = owner;
    json_t *o;

    if (gone(is) || !created_or_exists(is, "the tenant namespace's ResourceQuota"))
        return;
    o = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}}}", "apiVersion", "v1", "kind", "ServiceAccount",
                  "metadata", "name", is->sa, "namespace", is->ns, "labels", PEER_LABEL_CLUSTER_ID,
                  is->in.cluster_id);
    ensure_object(is, &kapi_serviceaccounts, is->sa, o, step_peer_binding);
}

/* The object-count quota of the tenant namespace, before any credential for it exists: created,
 * then read until kube-controller-manager has counted every name of it (until then the API server
 * refuses every create it covers, the agent's own Secrets included). */
static void step_quota_counted(void *owner);

static void on_quota_timer(uv_timer_t *t)
{
    struct issue *is = t->data;
    struct auth *m = is->m;

    if (gone(is))
        return;
    is->ch.next = step_quota_counted;
    if (kapi_get(agent_kube(m->mod.a), &kapi_resourcequotas, is->ns, PEER_TENANT_QUOTA, ctl_call_cb,
                 is) < 0)
        finish(is, 500, PEER_WIRE_E_INTERNAL, "cannot read the tenant namespace's ResourceQuota");
}

static void step_quota_counted(void *owner)
{
    struct issue *is = owner;
    struct auth *m = is->m;
    const json_t *hard, *used;
    const char *k;
    json_t *v;
    bool counted;

    if (gone(is))
        return;
    if (is->ch.last.err < 0 && is->ch.last.err != -EEXIST && is->ch.last.err != -ENOENT) {
        created_or_exists(is, "the tenant namespace's ResourceQuota");
        return;
    }
    hard = json_object_get(json_object_get(is->ch.last.body, "spec"), "hard");
    used = json_object_get(json_object_get(is->ch.last.body, "status"), "used");
    counted = is->ch.last.err == 0 && json_is_object(hard);
    json_object_foreach((json_t *)hard, k, v)
    {
        if (!json_object_get(used, k))
            counted = false;
    }
    if (counted) {
        is->ch.last.err = 0;
        step_sa(is);
        return;
    }
    if (uv_now(agent_loop(m->mod.a)) >= is->deadline) {
        finish(is, 503, PEER_WIRE_E_UNAVAILABLE,
               "the tenant namespace's ResourceQuota " PEER_TENANT_QUOTA
               " was not counted in time (is the resourcequota controller of "
               "kube-controller-manager running?)");
        return;
    }
    if (!is->timer && !(is->timer = ktimer_new(agent_loop(m->mod.a), is))) {
        finish(is, 500, PEER_WIRE_E_INTERNAL, "out of memory");
        return;
    }
    uv_timer_start(is->timer, on_quota_timer, TOKEN_POLL_MS, 0);
}

static void step_quota(void *owner)
{
    struct issue *is = owner;
    struct auth *m = is->m;
    json_t *o;

    if (gone(is) || !created_or_exists(is, "the agent's RoleBinding"))
        return;
    o = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s,s:s}},s:{s:o}}", "apiVersion", "v1", "kind",
                  "ResourceQuota", "metadata", "name", PEER_TENANT_QUOTA, "namespace", is->ns,
                  "labels", "app.kubernetes.io/managed-by", "cliqo-agent",
                  "app.kubernetes.io/part-of", "cliqo", "spec", "hard", peer_tenant_quota_hard());
    is->ch.next = step_quota_counted;
    is->deadline = uv_now(agent_loop(m->mod.a)) + TOKEN_WAIT_MS;
    /* Created (its status is not counted yet: read it again) or already there (read it). */
    if (!o ||
        kapi_create(agent_kube(m->mod.a), &kapi_resourcequotas, is->ns, o, ctl_call_cb, is) < 0)
        finish(is, 500, PEER_WIRE_E_INTERNAL, "cannot create the ResourceQuota");
    json_decref(o);
}

static void step_agent_binding(void *owner)
{
    struct issue *is = owner;
    struct auth *m = is->m;
    json_t *o;

    if (gone(is) || !created_or_exists(is, "the tenant namespace"))
        return;
    o = rolebinding(is->ns, AGENT_SA, AGENT_TENANT_CR, agent_namespace(m->mod.a), AGENT_SA);
    is->ch.next = step_quota;
    if (!o ||
        kapi_create(agent_kube(m->mod.a), &peer_res_rolebindings, is->ns, o, ctl_call_cb, is) < 0)
        finish(is, 500, PEER_WIRE_E_INTERNAL, "cannot create the RoleBinding");
    json_decref(o);
}

static void step_namespace(void *owner)
{
    struct issue *is = owner;

    if (gone(is))
        return;
    if (is->ch.last.err == 0) {
        /* It exists: it must be this peer's. */
        const char *id = json_string_value(json_object_get(
            json_object_get(json_object_get(is->ch.last.body, "metadata"), "labels"),
            PEER_LABEL_CLUSTER_ID));

        if (!id || strcmp(id, is->in.cluster_id) != 0) {
            finish(is, 500, PEER_WIRE_E_INTERNAL,
                   "the tenant namespace exists and does not belong to this cluster");
            return;
        }
        is->ch.last.err = -EEXIST;
        step_agent_binding(is);
        return;
    }
    if (is->ch.last.err != -ENOENT) {
        finish(is, 500, PEER_WIRE_E_INTERNAL, is->ch.last.message);
        return;
    }
    create_namespace(is, NULL, step_agent_binding);
}

/* ---- the tenant namespace of X, found by its label and bound to X's key ------------------- */

/* The key ID this cluster learned from X itself (the keyId of X's answer to our POST /identity,
 * kept in our Secret remote-identity-<X>), into ret; "" when none. */
static void learned_key_id(struct auth *m, const char *cluster_id, char ret[PEER_KEY_ID_LEN + 1])
{
    char name[128], *v = NULL;
    json_t *sec;

    ret[0] = '\0';
    snprintf(name, sizeof(name), "remote-identity-%s", cluster_id);
    sec = inf_get(m->secrets, agent_namespace(m->mod.a), name);
    if (sec && secret_value(sec, "key-id", &v) && peer_idkey_id_valid(v))
        snprintf(ret, PEER_KEY_ID_LEN + 1, "%s", v);
    x_free(v);
    json_decref(sec);
}

static void refuse(struct issue *is, const char *reason, const char *msg)
{
    struct auth *m = is->m;

    if (strcmp(reason, PEER_WIRE_E_FORBIDDEN) == 0)
        log_warn("auth", "wrong peering token from %s (cluster %s): %s",
                 is->req ? httpd_req_peer_ip(is->req) : "?", is->in.cluster_id, msg);
    else
        log_warn("auth", "refused the request of cluster %s from %s: %s", is->in.cluster_id,
                 is->req ? httpd_req_peer_ip(is->req) : "?", msg);
    if (is->req)
        peer_limiter_fail(m->lim, httpd_req_peer_ip(is->req), uv_now(agent_loop(m->mod.a)));
    end(is, -EACCES, 403, reason, msg);
}

static void refuse_token(struct issue *is)
{
    char msg[256];

    snprintf(msg, sizeof(msg), "the peering token is not valid%s%s", is->tok_why ? ": " : "",
             is->tok_why ? is->tok_why : "");
    refuse(is, PEER_WIRE_E_FORBIDDEN, msg);
}

static void refuse_mismatch(struct issue *is)
{
    char msg[384];

    snprintf(msg, sizeof(msg),
             "the identity of cluster %s on this cluster is bound to another key than %s (only "
             "the cluster that first obtained it may ask for it)",
             is->in.cluster_id, is->key_id);
    refuse(is, PEER_WIRE_E_MISMATCH, msg);
}

static void create_namespace(struct issue *is, const char *key_id, void (*next)(void *))
{
    struct auth *m = is->m;
    json_t *o;

    o = json_pack("{s:s,s:s,s:{s:s,s:{s:s,s:s}}}", "apiVersion", "v1", "kind", "Namespace",
                  "metadata", "name", is->ns, "labels", PEER_LABEL_CLUSTER_ID, is->in.cluster_id,
                  PEER_LABEL_TENANT, "true");
    if (o && key_id && *key_id &&
        json_object_set_new(json_object_get(o, "metadata"), "annotations",
                            json_pack("{s:s}", PEER_ANN_KEY_ID, key_id)) < 0) {
        json_decref(o);
        o = NULL;
    }
    is->ch.next = next;
    if (!o || kapi_create(agent_kube(m->mod.a), &kapi_namespaces, NULL, o, ctl_call_cb, is) < 0)
        finish(is, 500, PEER_WIRE_E_INTERNAL, "cannot create the tenant namespace");
    json_decref(o);
}

static void step_lookup(void *owner);

/* Made (or AlreadyExists): look again, so that a namespace made by a concurrent request for the
 * same cluster (under another name) is seen. */
static void step_ns_created(void *owner)
{
    struct issue *is = owner;
    struct auth *m = is->m;
    char sel[160];
    struct kapi_list_opts lo = {.label_selector = sel};

    if (gone(is))
        return;
    if (is->ch.last.err < 0 && is->ch.last.err != -EEXIST) {
        char msg[384];

        snprintf(msg, sizeof(msg), "cannot create the tenant namespace: %s", is->ch.last.message);
        finish(is, 500, PEER_WIRE_E_INTERNAL, msg);
        return;
    }
    is->created = is->ch.last.err == 0;
    is->rechecked = true;
    snprintf(sel, sizeof(sel), "%s=%s", PEER_LABEL_CLUSTER_ID, is->in.cluster_id);
    is->ch.next = step_lookup;
    if (kapi_list(agent_kube(m->mod.a), &kapi_namespaces, NULL, &lo, ctl_call_cb, is) < 0)
        finish(is, 500, PEER_WIRE_E_INTERNAL, "cannot list the tenant namespaces");
}

static void create_for_request(struct issue *is)
{
    create_namespace(is, is->key_id, step_ns_created);
}

static void step_bound(void *owner)
{
    struct issue *is = owner;

    if (gone(is))
        return;
    if (is->ch.last.err < 0) {
        finish(is, 503, PEER_WIRE_E_UNAVAILABLE,
               "the tenant namespace changed while its identity was being bound; retry");
        return;
    }
    log_info("auth", "bound the identity of cluster %s (namespace %s) to key %s", is->in.cluster_id,
             is->ns, is->key_id);
    is->ch.last.err = -EEXIST;
    step_agent_binding(is);
}

/* Binds the tenant namespace found (unbound) to the caller's key; conditional on its
 * resourceVersion, so that two requests cannot both bind it. */
static void bind_namespace(struct issue *is)
{
    struct auth *m = is->m;
    char patch[512];

    snprintf(patch, sizeof(patch),
             "{\"metadata\":{\"resourceVersion\":\"%s\",\"annotations\":{\"%s\":\"%s\"}}}",
             is->found_rv, PEER_ANN_KEY_ID, is->key_id);
    is->ch.next = step_bound;
    if (kapi_patch(agent_kube(m->mod.a), &kapi_namespaces, NULL, is->ns, NULL, KAPI_PATCH_MERGE,
                   patch, ctl_call_cb, is) < 0)
        finish(is, 500, PEER_WIRE_E_INTERNAL, "cannot bind the tenant namespace");
}

static void step_consumed(void *owner)
{
    struct issue *is = owner;

    if (gone(is))
        return;
    if (is->ch.last.err == -ESTALE || is->ch.last.err == -ENOENT) {
        is->tok_why = "it was used meanwhile by another request";
        refuse_token(is);
        return;
    }
    if (is->ch.last.err < 0) {
        finish(is, 500, PEER_WIRE_E_INTERNAL, is->ch.last.message);
        return;
    }
    log_info("auth", "single-use token %s used by cluster %s (key %s)",
             kapi_obj_name(is->tok_secret), is->in.cluster_id, is->key_id);
    is->tok = TOK_SINGLE;
    is->after_consume(is);
}

/* Uses the single-use token: binds its Secret to the caller's cluster ID and key by an update
 * conditional on the resourceVersion read, then goes on with next. */
static void consume_token(struct issue *is, void (*next)(struct issue *))
{
    struct auth *m = is->m;
    json_t *meta = json_object_get(is->tok_secret, "metadata"), *ann;

    if (is->tok != TOK_SINGLE_FRESH) {
        next(is);
        return;
    }
    ann = json_object_get(meta, "annotations");
    if (!json_is_object(ann)) {
        ann = json_object();
        if (ann && json_object_set_new(meta, "annotations", ann) < 0)
            ann = NULL;
    }
    if (!ann || json_object_set_new(ann, PEER_ANN_TOKEN_CLUSTER, json_string(is->in.cluster_id)) ||
        json_object_set_new(ann, PEER_ANN_TOKEN_KEY, json_string(is->key_id))) {
        finish(is, 500, PEER_WIRE_E_INTERNAL, "out of memory");
        return;
    }
    is->after_consume = next;
    is->ch.next = step_consumed;
    if (kapi_update(agent_kube(m->mod.a), &kapi_secrets, agent_namespace(m->mod.a),
                    kapi_obj_name(is->tok_secret), NULL, is->tok_secret, ctl_call_cb, is) < 0)
        finish(is, 500, PEER_WIRE_E_INTERNAL, "cannot use the token");
}

/* The oldest of the namespaces listed (creationTimestamp, then name), or NULL. */
static json_t *oldest_namespace(const json_t *items)
{
    json_t *best = NULL, *it;
    size_t i;

    json_array_foreach(items, i, it)
    {
        const char *ts = json_string_value(
            json_object_get(json_object_get(it, "metadata"), "creationTimestamp"));
        const char *bts = best ? json_string_value(json_object_get(
                                     json_object_get(best, "metadata"), "creationTimestamp"))
                               : NULL;
        int c;

        if (!kapi_obj_name(it))
            continue;
        if (!best) {
            best = it;
            continue;
        }
        c = strcmp(ts ? ts : "", bts ? bts : "");
        if (c < 0 || (c == 0 && strcmp(kapi_obj_name(it), kapi_obj_name(best)) < 0))
            best = it;
    }
    return best;
}

static void on_duplicate_deleted(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    (void)c;
    (void)data;
    if (res->err < 0 && res->err != -ENOENT && res->err != -ECANCELED)
        log_error("auth", "cannot delete a duplicate tenant namespace: %s", res->status.message);
}

/* The tenant namespaces of X (by label): decides which one serves, and whether the caller may
 * have it (see the top of this file). */
static void step_lookup(void *owner)
{
    struct issue *is = owner;
    struct auth *m = is->m;
    json_t *found;
    const char *bound;
    char learned[PEER_KEY_ID_LEN + 1];

    if (gone(is))
        return;
    if (is->ch.last.err < 0) {
        finish(is, 500, PEER_WIRE_E_INTERNAL, is->ch.last.message);
        return;
    }
    found = oldest_namespace(json_object_get(is->ch.last.body, "items"));
    if (found && is->created && strcmp(kapi_obj_name(found), is->ns) != 0) {
        /* A concurrent request made another one first: ours goes. */
        log_warn("auth", "cluster %s: deleting the duplicate tenant namespace %s (%s is older)",
                 is->in.cluster_id, is->ns, kapi_obj_name(found));
        if (kapi_delete(agent_kube(m->mod.a), &kapi_namespaces, NULL, is->ns, NULL,
                        on_duplicate_deleted, NULL) < 0)
            log_error("auth", "cannot delete the duplicate tenant namespace %s", is->ns);
        is->created = false;
    }
    if (!found) {
        if (is->rechecked) {
            char msg[256];

            snprintf(msg, sizeof(msg),
                     "namespace %s exists and does not belong to cluster %s (no cluster-id label)",
                     is->ns, is->in.cluster_id);
            finish(is, 500, PEER_WIRE_E_INTERNAL, msg);
        } else if (!is->http) {
            learned_key_id(m, is->in.cluster_id, learned);
            create_namespace(is, learned, step_ns_created);
        } else if (is->tok == TOK_NONE) {
            refuse_token(is);
        } else {
            consume_token(is, create_for_request);
        }
        return;
    }
    snprintf(is->ns, sizeof(is->ns), "%s", kapi_obj_name(found));
    if (!is->http) {
        is->ch.last.err = -EEXIST;
        step_agent_binding(is);
        return;
    }
    bound = json_string_value(json_object_get(
        json_object_get(json_object_get(found, "metadata"), "annotations"), PEER_ANN_KEY_ID));
    if (bound) {
        if (strcmp(bound, is->key_id) != 0) {
            refuse_mismatch(is);
            return;
        }
        is->ch.last.err = -EEXIST;
        step_agent_binding(is);
        return;
    }
    /* Unbound: made by our outgoing controller towards X, or before identity keys. */
    snprintf(is->found_rv, sizeof(is->found_rv), "%s",
             kapi_obj_rv(found) ? kapi_obj_rv(found) : "");
    learned_key_id(m, is->in.cluster_id, learned);
    if (learned[0]) {
        if (strcmp(learned, is->key_id) != 0)
            refuse_mismatch(is);
        else
            bind_namespace(is);
        return;
    }
    if (is->tok == TOK_NONE) {
        refuse_token(is);
        return;
    }
    log_warn("auth",
             "cluster %s: tenant namespace %s has no identity key and none was learned from the "
             "cluster: binding it to the key of this request (%s), which holds a valid token",
             is->in.cluster_id, is->ns, is->key_id);
    consume_token(is, bind_namespace);
}

static void step_reply(struct issue *is)
{
    struct auth *m = is->m;
    const struct peer_ctl_options opts = peer_ctl_options(m->mod.a), *o = &opts;
    const struct kc_config *kc = agent_kubeconfig(m->mod.a);
    const char *b64 =
        json_string_value(json_object_get(json_object_get(is->ch.last.body, "data"), "token"));
    struct peer_kubeconfig_params p;
    char *token = NULL, *kubeconfig = NULL, *json = NULL, err[256];
    size_t len;

    if (peer_base64_decode(b64, PEER_SECRET_MAX, &token, &len) < 0) {
        finish(is, 500, PEER_WIRE_E_INTERNAL, "the token Secret holds no valid token");
        return;
    }
    memset(&p, 0, sizeof(p));
    p.server = o->api_server_url ? o->api_server_url : kc->server;
    p.ca_pem = (const char *)kc->ca_pem;
    p.ca_pem_len = kc->ca_pem_len;
    p.token = token;
    p.namespace = is->ns;
    p.cluster_name = identity_cluster_name(m->mod.a) && *identity_cluster_name(m->mod.a)
                         ? identity_cluster_name(m->mod.a)
                         : identity_cluster_id(m->mod.a);
    if (peer_kubeconfig_build(&p, &kubeconfig, err, sizeof(err)) < 0 ||
        peer_wire_identity_response_encode(is->ns, kubeconfig, identity_key_id(m->mod.a), &json) <
            0) {
        finish(is, 500, PEER_WIRE_E_INTERNAL, "cannot build the credential");
    } else {
        /* A virtual kubelet's credential is re-issued at every refresh: at info only when made. */
        if (is->made || is->kind != PEER_CRED_VK)
            log_info("auth", "issued a %s credential to cluster %s (%s) in namespace %s",
                     is->kind == PEER_CRED_VK ? "virtual-kubelet" : "peering", is->in.cluster_id,
                     is->in.cluster_name, is->ns);
        else
            log_debug("auth", "re-issued the virtual-kubelet credential of cluster %s (%s)",
                      is->in.cluster_id, is->ns);
        if (is->req) {
            httpd_respond(is->req, 201, "application/json", json, strlen(json));
        } else if (!is->http && is->done)
            is->done(0, "", is->ns, kubeconfig, is->done_data);
        issue_free(is);
    }
    OPENSSL_cleanse(token, len);
    x_free(token);
    if (kubeconfig)
        OPENSSL_cleanse(kubeconfig, strlen(kubeconfig));
    x_free(kubeconfig);
    if (json)
        OPENSSL_cleanse(json, strlen(json));
    x_free(json);
}

static void issue_start(struct issue *is)
{
    struct auth *m = is->m;
    const char *prefix = is->kind == PEER_CRED_VK ? PEER_VK_SA_PREFIX : "remote-";

    is->role = is->kind == PEER_CRED_VK ? PEER_VK_TENANT_ROLE : PEER_REMOTE_ROLE;
    is->binding = is->role;
    snprintf(is->sa, sizeof(is->sa), "%s%s", prefix, is->in.cluster_id);
    snprintf(is->secret, sizeof(is->secret), "%s%s-token", prefix, is->in.cluster_id);
    if (is->lookup) {
        char sel[160];
        struct kapi_list_opts lo = {.label_selector = sel};

        snprintf(sel, sizeof(sel), "%s=%s", PEER_LABEL_CLUSTER_ID, is->in.cluster_id);
        is->ch.next = step_lookup;
        if (kapi_list(agent_kube(m->mod.a), &kapi_namespaces, NULL, &lo, ctl_call_cb, is) < 0)
            finish(is, 500, PEER_WIRE_E_INTERNAL, "cannot reach the API server");
        return;
    }
    is->ch.next = step_namespace;
    if (kapi_get(agent_kube(m->mod.a), &kapi_namespaces, NULL, is->ns, ctl_call_cb, is) < 0)
        finish(is, 500, PEER_WIRE_E_INTERNAL, "cannot reach the API server");
}

/* ---- tokens --------------------------------------------------------------------------------- */

static void on_token_deleted(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    (void)c;
    (void)data;
    if (res->err < 0 && res->err != -ENOENT && res->err != -ECANCELED)
        log_warn("auth", "cannot delete an expired peering token: %s", res->status.message);
}

/* Deletes an expired single-use token Secret (leader only; conditional on its UID). */
static void token_gc(struct auth *m, const json_t *obj)
{
    struct kapi_delete_opts o = {.precondition_uid = kapi_obj_uid(obj), .grace_period_seconds = -1};

    if (!agent_is_leader(m->mod.a) || m->stopped ||
        peer_token_secret_check(obj, NULL, (int64_t)time(NULL), NULL) != -EKEYEXPIRED)
        return;
    log_info("auth", "deleting expired peering token Secret %s/%s", agent_namespace(m->mod.a),
             kapi_obj_name(obj));
    if (kapi_delete(agent_kube(m->mod.a), &kapi_secrets, agent_namespace(m->mod.a),
                    kapi_obj_name(obj), &o, on_token_deleted, NULL) < 0)
        log_warn("auth", "cannot delete expired peering token Secret %s", kapi_obj_name(obj));
}

/* Which token the request holds: the shared one, a single-use one (fresh, or already used by this
 * very cluster and key: a retry), or none that is valid (is->tok_why says why). */
static void token_classify(struct issue *is)
{
    struct auth *m = is->m;
    char digest[PEER_TOKEN_DIGEST_LEN + 1], name[96];
    const char *ucid, *ukey;
    json_t *sec = NULL, *ann;
    int r;

    is->tok = TOK_NONE;
    is->tok_why = NULL;
    if (m->token[0] && peer_token_equal(is->in.token, m->token)) {
        is->tok = TOK_SHARED;
        return;
    }
    if (peer_token_digest(is->in.token, digest) < 0)
        return;
    snprintf(name, sizeof(name), "%s%.*s", PEER_TOKEN_SECRET_PREFIX, PEER_TOKEN_NAME_HEX, digest);
    sec = inf_get(m->secrets, agent_namespace(m->mod.a), name);
    r = sec ? peer_token_secret_check(sec, digest, (int64_t)time(NULL), NULL) : -ENOENT;
    if (r == -EKEYEXPIRED) {
        is->tok_why = "it expired";
        token_gc(m, sec);
    }
    if (r < 0)
        goto out;
    ann = json_object_get(json_object_get(sec, "metadata"), "annotations");
    ucid = json_string_value(json_object_get(ann, PEER_ANN_TOKEN_CLUSTER));
    ukey = json_string_value(json_object_get(ann, PEER_ANN_TOKEN_KEY));
    if (ucid || ukey) {
        if (ucid && ukey && strcmp(ucid, is->in.cluster_id) == 0 && strcmp(ukey, is->key_id) == 0)
            is->tok = TOK_SINGLE;
        else
            is->tok_why = "it was already used";
        goto out;
    }
    is->tok_secret = json_deep_copy(sec);
    if (is->tok_secret)
        is->tok = TOK_SINGLE_FRESH;
out:
    json_decref(sec);
}

/* 429 for a request from an address over the limit of failures (not counted again). */
static void refuse_limited(struct httpd_request *req, const char *ip, uint64_t retry_ms)
{
    char retry[32];

    snprintf(retry, sizeof(retry), "%llu", (unsigned long long)(retry_ms + 999) / 1000);
    httpd_add_header(req, "Retry-After", retry);
    log_warn("auth", "refused a peering request from %s: too many failed attempts", ip);
    httpd_respond_error(req, 429, PEER_WIRE_E_RATE_LIMITED,
                        "too many failed attempts from this address; retry later");
}

/* The failure limiter (peering/token.h) and this endpoint: a request with a right token (the
 * shared one, or a single-use one that is fresh or already this caller's) is never refused by it,
 * whatever its address's count, since that address may be shared (a NodePort, a NAT). Everything
 * else that fails (a wrong or malformed token, a signature that does not verify, an identity bound
 * to another key) is counted; once an address is over the limit, its requests without a right
 * token get 429 before any further work. A success does not reset the count, so a guesser behind
 * the same address gets no fresh budget. Malformed bodies other than the token get their 400
 * uncounted. */
static void handle_identity(struct httpd_request *req, void *data)
{
    struct auth *m = data;
    const char *ip = httpd_req_peer_ip(req), *ct = httpd_req_header(req, "Content-Type");
    uint64_t now = uv_now(agent_loop(m->mod.a)), retry_ms = 0;
    struct peer_wire_error werr;
    struct issue *is;
    size_t len;
    const char *body = httpd_req_body(req, &len);
    char msg[PEER_WIRE_MESSAGE_MAX + 1];
    bool limited;
    int r;

    if (ct && strncmp(ct, "application/json", 16) != 0) {
        httpd_respond_error(req, 415, PEER_WIRE_E_MEDIA_TYPE, "the body must be application/json");
        return;
    }
    is = issue_new(m);
    if (!is) {
        httpd_respond_error(req, 500, PEER_WIRE_E_INTERNAL, "out of memory");
        return;
    }
    limited = peer_limiter_check(m->lim, ip, now, &retry_ms);
    r = peer_wire_identity_request_decode(body, len, &is->in, &werr);
    if (r < 0) {
        if (strcmp(werr.reason, PEER_WIRE_E_TOKEN) == 0) { /* a malformed token is a wrong one */
            if (limited) {
                refuse_limited(req, ip, retry_ms);
                issue_free(is);
                return;
            }
            peer_limiter_fail(m->lim, ip, now);
        }
        log_warn("auth", "malformed peering request from %s: %s", ip, werr.message);
        httpd_respond_error(req, (unsigned)peer_wire_http_status(werr.reason), werr.reason,
                            werr.message);
        issue_free(is);
        return;
    }
    if (!identity_cluster_id(m->mod.a)) {
        httpd_respond_error(req, 503, PEER_WIRE_E_UNAVAILABLE, "the cluster has no identity yet");
        issue_free(is);
        return;
    }
    if (strcmp(is->in.cluster_id, identity_cluster_id(m->mod.a)) == 0) {
        httpd_respond_error(req, 400, PEER_WIRE_E_OWN_ID, "a cluster cannot peer with itself");
        issue_free(is);
        return;
    }
    if (!agent_is_leader(m->mod.a)) {
        httpd_add_header(req, "Retry-After", "2");
        httpd_respond_error(req, 503, PEER_WIRE_E_UNAVAILABLE,
                            "this replica is a standby; retry (the leader issues credentials)");
        issue_free(is);
        return;
    }
    if (peer_tenant_namespace(is->in.cluster_id, is->in.cluster_name, is->ns) < 0) {
        httpd_respond_error(req, 400, PEER_WIRE_E_CLUSTER_ID, "cannot derive a tenant namespace");
        issue_free(is);
        return;
    }
    r = peer_idkey_verify_request(&is->in, identity_cluster_id(m->mod.a), (int64_t)time(NULL),
                                  PEER_IDKEY_WINDOW, is->key_id, msg, sizeof(msg));
    if (r < 0) {
        const char *reason = r == -ETIME ? PEER_WIRE_E_STALE : PEER_WIRE_E_SIGNATURE;

        if (r == -ENOMEM || r == -EIO) {
            httpd_respond_error(req, 500, PEER_WIRE_E_INTERNAL, "cannot verify the signature");
        } else if (limited) {
            refuse_limited(req, ip, retry_ms);
        } else {
            peer_limiter_fail(m->lim, ip, now);
            log_warn("auth", "refused a peering request from %s (cluster %s): %s", ip,
                     is->in.cluster_id, msg);
            httpd_respond_error(req, 403, reason, msg);
        }
        issue_free(is);
        return;
    }
    token_classify(is);
    if (limited && is->tok == TOK_NONE) {
        refuse_limited(req, ip, retry_ms);
        issue_free(is);
        return;
    }
    is->lookup = true;
    is->req = req;
    is->http = true;
    httpd_req_on_abort(req, on_abort, is);
    log_info("auth", "peering request from %s: cluster %s (%s), key %s, %s token", ip,
             is->in.cluster_id, is->in.cluster_name, is->key_id,
             is->tok == TOK_SHARED ? "the shared"
             : is->tok == TOK_NONE ? "no valid"
                                   : "a single-use");
    issue_start(is);
}

int peer_issue_credential_kind(struct agent *a, enum peer_cred_kind kind, const char *cluster_id,
                               const char *cluster_name, const char *ns, peer_issue_cb done,
                               void *data)
{
    struct auth *m = agent_module_data(a, MOD);
    struct issue *is;

    if (!cluster_id || !cluster_name || (kind != PEER_CRED_PEERING && kind != PEER_CRED_VK))
        return -EINVAL;
    if (!m || m->stopped)
        return -ESHUTDOWN;
    is = issue_new(m);
    if (!is)
        return -ENOMEM;
    is->kind = kind;
    snprintf(is->in.cluster_id, sizeof(is->in.cluster_id), "%s", cluster_id);
    snprintf(is->in.cluster_name, sizeof(is->in.cluster_name), "%s", cluster_name);
    if (ns) {
        if (!kname_dns_label(ns)) {
            issue_free(is);
            return -EINVAL;
        }
        snprintf(is->ns, sizeof(is->ns), "%s", ns);
    } else if (peer_tenant_namespace(cluster_id, cluster_name, is->ns) < 0) {
        issue_free(is);
        return -EINVAL;
    } else {
        is->lookup = true;
    }
    is->done = done;
    is->done_data = data;
    issue_start(is);
    return 0;
}

int peer_issue_credential(struct agent *a, const char *cluster_id, const char *cluster_name,
                          peer_issue_cb done, void *data)
{
    return peer_issue_credential_kind(a, PEER_CRED_PEERING, cluster_id, cluster_name, NULL, done,
                                      data);
}

/* ---- module -----------------------------------------------------------------------------------
 */

int peer_auth_init(struct agent *a)
{
    struct inf_handlers h = {
        .on_add = on_secret, .on_update = on_secret_update, .on_delete = on_secret_delete};
    struct auth *m = ctl_module_new(a, MOD, sizeof(*m));
    int r;

    if (!m)
        return -ENOMEM;
    r = peer_limiter_new(0, 0, 0, &m->lim);
    if (r < 0)
        return r;
    return agent_informer(a, &kapi_secrets, agent_namespace(a), NULL, AGENT_INF_ALWAYS, &h, m,
                          &m->secrets);
}

static void gc_visit(json_t *obj, void *data)
{
    token_gc(data, obj);
}

static void on_gc_timer(uv_timer_t *t)
{
    struct auth *m = t->data;

    inf_foreach(m->secrets, gc_visit, m);
}

int peer_auth_start(struct agent *a)
{
    struct auth *m = agent_module_data(a, MOD);

    if (!m)
        return -EINVAL;
    m->stopped = false;
    if (!m->gc && !(m->gc = ktimer_new(agent_loop(a), m)))
        return -ENOMEM;
    uv_timer_start(m->gc, on_gc_timer, TOKEN_GC_MS, TOKEN_GC_MS);
    return 0;
}

/* Issuances end while their callers still exist (see the top of this file): those waiting on
 * their timer now, those with a request in flight when it completes. Idempotent. */
void peer_auth_stop(struct agent *a)
{
    struct auth *m = agent_module_data(a, MOD);
    struct issue *is;

    if (!m)
        return;
    m->stopped = true;
    if (m->gc)
        uv_timer_stop(m->gc);
    for (;;) {
        /* A callback may change the list: look again from its head after each. */
        for (is = m->issues; is; is = is->next)
            if (is->timer && uv_is_active((uv_handle_t *)is->timer))
                break;
        if (!is)
            break;
        cancel(is);
    }
}

void peer_auth_fini(struct agent *a)
{
    struct auth *m = agent_module_data(a, MOD);

    if (!m)
        return;
    /* Nothing is left (peer_auth_stop, then the agent's abort of its requests, ended every
     * issuance); were something left, its caller may be finished already: free it silently
     * rather than call back into freed state. */
    while (m->issues)
        issue_free(m->issues);
    m->lim = peer_limiter_free(m->lim);
    ktimer_free(m->gc);
    x_free(m->ca_pem);
    OPENSSL_cleanse(m->token, sizeof(m->token));
    ctl_module_fini(a, MOD);
}

bool peer_auth_ready(struct agent *a)
{
    struct auth *m = agent_module_data(a, MOD);

    return m && m->secrets && inf_synced(m->secrets);
}
