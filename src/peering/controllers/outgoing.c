/* outgoing: the ForeignCluster controller of the home cluster (docs/peering.md, "The flow").
 *
 * Level-triggered: every reconcile of a ForeignCluster reads the cached objects, does the FIRST
 * thing that is missing, and requeues; so a restart at any point converges to the same objects
 * with no duplicates (every create tolerates AlreadyExists, every delete NotFound).
 *
 * Peering (outgoingPeeringEnabled "Yes", not being deleted):
 *   finalizer -> AuthenticationStatus (POST /identity to the peer, credential stored in Secret
 *   remote-identity-<id>) -> our credential for the peer (peer_issue_credential) -> on the peer,
 *   Secret pr-<our id> and PeeringRequest <our id> in our tenant namespace there -> the
 *   PeeringRequest's status.phase gives OutgoingPeering Pending / Established / Denied.
 * Unpeering (outgoing not "Yes", or the ForeignCluster is being deleted), once peered:
 *   OutgoingPeering Disconnecting -> delete the PeeringRequest and Secret on the peer, giving up
 *   after unpeer_timeout_ms (reason PeerUnreachable) -> delete the remote identity and, unless an
 *   incoming peering still uses it, the local tenant namespace -> conditions None -> finalizer off.
 */
#include "peering/controllers/controllers.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "agent/ctl.h"
#include "agent/identity.h"
#include "agent/peers.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "kube/kubeconfig.h"
#include "kube/names.h"
#include "peering/identity.h"
#include "peering/idkey.h"
#include "peering/resources.h"
#include "peering/wire.h"

#define MAX_PEERS       256
#define PENDING_RECHECK 250 /* ms between looks at a pending request on the peer */
#define ERROR_RETRY_MS  2000
#define REMOTE_TIMEOUT  10000
#define COND_AUTH       "AuthenticationStatus"
#define COND_OUT        "OutgoingPeering"
#define COND_IN         "IncomingPeering"

/* Per ForeignCluster: the peer's unit (agent/peers.h), which holds the client to the peer's
 * apiserver made from the remote identity (role PU_PEERING). */
struct peer {
    char fc[256];
    char id[64];
    char remote_ns[64];
    struct pu_unit *unit; /* acquired under "outgoing" while the remote identity is installed */
    bool used;
};

/* The module's state (agent_module_data "outgoing"). */
struct outgoing {
    struct ctl_module mod; /* first */
    struct inf_informer *fcs, *secrets, *config, *tenants;
    struct peer peers[MAX_PEERS];
    struct rec *authing; /* reconciles waiting for POST /identity on their own client */
};

/* One reconcile in flight (the queue never runs two for the same key). */
struct rec {
    struct ctl_rec h; /* first */
    struct outgoing *m;
    json_t *fc; /* our working copy (status changes are patched from it) */
    struct peer *p;
    char id[64], name[64], local_ns[64];
    char own_id[64], own_name[64];
    const char *why; /* for logs */
    char *auth_ca;   /* from remote-auth-<id> */
    char *auth_token;
    struct kapi_client *auth; /* client to the peer's auth endpoint, while POST /identity runs */
    struct kc_config *auth_cfg;
    struct rec *auth_next; /* outgoing.authing */
    char auth_url[1025];   /* ours, from ClusterConfig when no flag gives it */
};

/* POST /identity is over (or never started): its client goes (peer_outgoing_stop takes it out
 * before aborting it: the abort frees it). */
static void auth_client_done(struct rec *r)
{
    for (struct rec **pp = &r->m->authing; *pp; pp = &(*pp)->auth_next) {
        if (*pp == r) {
            *pp = r->auth_next;
            break;
        }
    }
    r->auth_next = NULL;
    if (r->auth)
        kapi_client_close(r->auth);
    r->auth = NULL;
}

/* ClusterConfig configuration's spec.peeringConfig (a new reference, or NULL): what the agent's
 * flags do not say comes from there. */
static json_t *peering_config(struct outgoing *m)
{
    json_t *cc = inf_get(m->config, NULL, PEER_CLUSTER_CONFIG);
    json_t *pc = json_incref(json_object_get(json_object_get(cc, "spec"), "peeringConfig"));

    json_decref(cc);
    return pc;
}

static const char *own_auth_url(struct rec *r)
{
    const struct peer_ctl_options o = peer_ctl_options(r->m->mod.a);
    json_t *pc;
    const char *u;

    if (o.auth_url)
        return o.auth_url;
    if (!r->auth_url[0]) {
        pc = peering_config(r->m);
        u = json_string_value(json_object_get(pc, "authUrl"));
        if (u && strncmp(u, "https://", 8) == 0)
            snprintf(r->auth_url, sizeof(r->auth_url), "%s", u);
        json_decref(pc);
    }
    return r->auth_url[0] ? r->auth_url : NULL;
}

static uint64_t unpeer_timeout_ms(struct outgoing *m)
{
    const struct peer_ctl_options o = peer_ctl_options(m->mod.a);
    json_t *pc;
    json_int_t secs;

    if (o.unpeer_timeout_set)
        return o.unpeer_timeout_ms;
    pc = peering_config(m);
    secs = json_integer_value(json_object_get(pc, "unpeerTimeoutSeconds"));
    json_decref(pc);
    return secs > 0 && secs <= 3600 ? (uint64_t)secs * 1000 : o.unpeer_timeout_ms;
}

/* ---- peers' clients -------------------------------------------------------------------------- */

static struct peer *peer_get(struct outgoing *m, const char *fc, const char *id)
{
    struct peer *free_slot = NULL;

    for (int i = 0; i < MAX_PEERS; i++) {
        if (m->peers[i].used && strcmp(m->peers[i].fc, fc) == 0)
            return &m->peers[i];
        if (!m->peers[i].used && !free_slot)
            free_slot = &m->peers[i];
    }
    if (!free_slot)
        return NULL;
    memset(free_slot, 0, sizeof(*free_slot));
    free_slot->used = true;
    snprintf(free_slot->fc, sizeof(free_slot->fc), "%s", fc);
    snprintf(free_slot->id, sizeof(free_slot->id), "%s", id);
    return free_slot;
}

#define OWNER "outgoing"

static struct kapi_client *peer_remote(const struct peer *p)
{
    return pu_client(p->unit, PU_PEERING);
}

static void peer_drop_client(struct peer *p)
{
    if (p->unit) {
        pu_drop_credential(p->unit, PU_PEERING);
        pu_release(p->unit, OWNER);
    }
    p->unit = NULL;
}

static void peer_forget(struct peer *p)
{
    peer_drop_client(p);
    memset(p, 0, sizeof(*p));
}

static json_t *secret_get(struct outgoing *m, const char *name)
{
    return inf_get(m->secrets, agent_namespace(m->mod.a), name);
}

static char *secret_field(const json_t *secret, const char *key)
{
    const char *b64 = json_string_value(json_object_get(json_object_get(secret, "data"), key));
    char *out = NULL;
    size_t len;

    if (!b64 || peer_base64_decode(b64, PEER_SECRET_MAX, &out, &len) < 0)
        return NULL;
    return out;
}

/* The client to the peer's apiserver, installed in the peer's unit from Secret
 * remote-identity-<id> (a changed Secret replaces it). When there is none, `why` (may be NULL) says
 * why, for the ForeignCluster's condition. */
static struct kapi_client *peer_client(struct rec *r, char *why, size_t whylen)
{
    struct outgoing *m = r->m;
    char name[128], err[KC_ERR_LEN];
    json_t *sec;
    char *kubeconfig = NULL, *ns = NULL;
    const char *rv;
    int rc;

    snprintf(name, sizeof(name), "remote-identity-%s", r->id);
    sec = secret_get(m, name);
    if (!sec) {
        peer_drop_client(r->p);
        return NULL;
    }
    rv = kapi_obj_rv(sec);
    if (r->p->unit && rv && peer_remote(r->p) &&
        strcmp(rv, pu_credential_version(r->p->unit, PU_PEERING)) == 0)
        goto out;
    kubeconfig = secret_field(sec, "kubeconfig");
    ns = secret_field(sec, "namespace");
    if (!kubeconfig || !ns || !kname_dns_label(ns)) {
        log_error("outgoing", "Secret %s has no usable kubeconfig/namespace", name);
        goto out;
    }
    if (!r->p->unit && (rc = pu_acquire(agent_peers(m->mod.a), r->id, OWNER, &r->p->unit)) < 0) {
        log_error("outgoing", "cannot open the unit of peer %s: %s", r->id, strerror(-rc));
        goto out;
    }
    rc = pu_set_credential(r->p->unit, PU_PEERING, kubeconfig, strlen(kubeconfig), rv ? rv : "",
                           err, sizeof(err));
    if (rc < 0) {
        log_error("outgoing", "remote identity for %s: %s", r->id, err);
        if (why)
            snprintf(why, whylen, "the remote identity is not usable: %s", err);
        goto out;
    }
    snprintf(r->p->remote_ns, sizeof(r->p->remote_ns), "%s", ns);
out:
    if (kubeconfig)
        OPENSSL_cleanse(kubeconfig, strlen(kubeconfig));
    x_free(kubeconfig);
    x_free(ns);
    json_decref(sec);
    return peer_remote(r->p);
}

/* ---- status -----------------------------------------------------------------------------------
 */

static void after_status(void *owner)
{
    struct rec *r = owner;

    if (r->h.ch.last.err == -ESTALE || r->h.ch.last.err == -ENOENT) {
        ctl_rec_end(&r->h, CTL_STALE); /* a newer object: look again */
        return;
    }
    if (r->h.ch.last.err < 0)
        log_warn("outgoing", "cannot update the status of ForeignCluster %s: %s", r->h.key,
                 r->h.ch.last.message);
    ctl_rec_end(&r->h, r->h.ch.last.err < 0 ? CTL_RETRY : CTL_DONE);
}

/* Writes the working copy's status (conditions, tenant namespaces) and ends the reconcile. The
 * resourceVersion makes it conditional: a conflict just means "look again". */
static void write_status(struct rec *r)
{
    struct outgoing *m = r->m;
    json_t *patch =
        json_pack("{s:{s:O},s:O}", "metadata", "resourceVersion",
                  json_object_get(json_object_get(r->fc, "metadata"), "resourceVersion"), "status",
                  json_object_get(r->fc, "status"));
    char *body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;

    json_decref(patch);
    r->h.ch.next = after_status;
    if (!body || kapi_patch(agent_kube(m->mod.a), &peer_res_foreignclusters, NULL, r->h.key,
                            "status", KAPI_PATCH_MERGE, body, ctl_call_cb, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
    x_free(body);
}

/* Sets a condition; if it changed, writes the status (and the reconcile ends there: the update
 * comes back through the informer and reconciles again). Returns true when a write was started. */
static bool condition(struct rec *r, const char *type, const char *status, const char *reason,
                      const char *msg)
{
    if (!peer_fc_set_condition(r->fc, type, status, reason, msg))
        return false;
    log_info("outgoing", "ForeignCluster %s: %s=%s (%s) %s", r->h.key, type, status, reason, msg);
    write_status(r);
    return true;
}

static void set_tenant(struct rec *r, const char *which, const char *ns)
{
    json_t *s = json_object_get(r->fc, "status"), *t;

    if (!json_is_object(s)) {
        s = json_object();
        json_object_set_new(r->fc, "status", s);
    }
    t = json_object_get(s, "tenantNamespace");
    if (!json_is_object(t)) {
        t = json_object();
        json_object_set_new(s, "tenantNamespace", t);
    }
    if (ns && *ns)
        json_object_set_new(t, which, json_string(ns));
    else
        json_object_del(t, which);
}

static const char *tenant(const json_t *fc, const char *which)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(fc, "status"), "tenantNamespace"), which));
}

/* ---- finalizer ------------------------------------------------------------------------------- */

static void after_patch(void *owner)
{
    struct rec *r = owner;

    if (r->h.ch.last.err < 0 && r->h.ch.last.err != -ENOENT) {
        log_warn("outgoing", "ForeignCluster %s: %s", r->h.key, r->h.ch.last.message);
        ctl_rec_end(&r->h, r->h.ch.last.err == -ESTALE ? CTL_STALE : CTL_RETRY);
        return;
    }
    ctl_rec_end(&r->h, CTL_DONE);
}

static void set_finalizer(struct rec *r, bool on)
{
    ctl_set_finalizer_then(&r->h, &peer_res_foreignclusters, r->fc, PEER_FINALIZER, on,
                           after_patch);
}

/* ---- authentication ---------------------------------------------------------------------------
 */

static void after_identity_secret(void *owner)
{
    struct rec *r = owner;

    if (r->h.ch.last.err < 0 && r->h.ch.last.err != -EEXIST) {
        if (!condition(r, COND_AUTH, "Error", "StoreFailed", r->h.ch.last.message))
            ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    if (!condition(r, COND_AUTH, "Established", "IdentityAccepted", "the peer issued a credential"))
        ctl_rec_end_after(&r->h, 10);
}

static void after_identity(void *owner)
{
    struct rec *r = owner;
    struct outgoing *m = r->m;
    struct peer_identity_response resp;
    struct peer_wire_error werr;
    char *raw_copy = NULL, name[128];
    json_t *sec;
    int rc;

    memset(&resp, 0, sizeof(resp));
    auth_client_done(r);
    if (r->h.ch.last.err == -ECANCELED) { /* the module stops (peer_outgoing_stop) */
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    if (r->h.ch.last.http == 201 && r->h.ch.last.body) {
        raw_copy = json_dumps(r->h.ch.last.body, JSON_COMPACT);
        rc = raw_copy ? peer_wire_identity_response_decode(raw_copy, strlen(raw_copy), &resp, &werr)
                      : -ENOMEM;
        if (raw_copy)
            OPENSSL_cleanse(raw_copy, strlen(raw_copy));
        x_free(raw_copy);
        if (rc < 0) {
            if (!condition(r, COND_AUTH, "Error", "BadAnswer", werr.message))
                ctl_rec_end(&r->h, CTL_RETRY);
            return;
        }
        snprintf(name, sizeof(name), "remote-identity-%s", r->id);
        sec = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s,s:s}},s:{s:s,s:s}}", "apiVersion", "v1", "kind",
                        "Secret", "metadata", "name", name, "namespace", agent_namespace(m->mod.a),
                        "labels", PEER_LABEL_CLUSTER_ID, r->id, PEER_LABEL_REMOTE_ID, "true",
                        "stringData", "kubeconfig", resp.kubeconfig, "namespace", resp.namespace);
        /* The peer's key ID, as it told us over the pinned connection: the auth endpoint binds
         * the peer's tenant namespace here to it (docs/peering.md, "Identity keys"). */
        if (sec && resp.key_id[0])
            json_object_set_new(json_object_get(sec, "stringData"), "key-id",
                                json_string(resp.key_id));
        peer_identity_response_done(&resp);
        r->h.ch.next = after_identity_secret;
        if (!sec || kapi_create(agent_kube(m->mod.a), &kapi_secrets, agent_namespace(m->mod.a), sec,
                                ctl_call_cb, r) < 0)
            ctl_rec_end(&r->h, CTL_RETRY);
        json_decref(sec);
        return;
    }
    /* Refused or failed: the peer's JSON error says why. */
    {
        struct peer_wire_error perr;
        char *txt = r->h.ch.last.body ? json_dumps(r->h.ch.last.body, JSON_COMPACT) : NULL;
        const char *msg = r->h.ch.last.message;

        memset(&perr, 0, sizeof(perr));
        if (txt && peer_wire_error_decode(txt, strlen(txt), &perr, &werr) == 0)
            msg = perr.message;
        if (r->h.ch.last.http == 403) {
            const char *why = strcmp(perr.reason, PEER_WIRE_E_MISMATCH) == 0    ? "IdentityMismatch"
                              : strcmp(perr.reason, PEER_WIRE_E_SIGNATURE) == 0 ? "SignatureRefused"
                              : strcmp(perr.reason, PEER_WIRE_E_STALE) == 0     ? "ClockSkew"
                                                                                : "TokenRefused";

            if (!condition(r, COND_AUTH, "Denied", why, msg))
                ctl_rec_end_after(&r->h, 30000);
        } else if (!condition(r, COND_AUTH, "Error",
                              r->h.ch.last.http ? "AuthEndpointError" : "AuthEndpointUnreachable",
                              msg)) {
            ctl_rec_end_after(&r->h, 2 * ERROR_RETRY_MS);
        }
        x_free(txt);
    }
}

static void authenticate(struct rec *r, const json_t *spec)
{
    struct outgoing *m = r->m;
    const char *url = json_string_value(json_object_get(spec, "foreignAuthUrl"));
    bool insecure = json_is_true(json_object_get(spec, "insecureSkipTLSVerify"));
    struct kapi_client_options o = {.timeout_ms = REMOTE_TIMEOUT};
    struct peer_identity_request in;
    struct kapi_request req;
    char name[128], *body = NULL;
    json_t *sec;

    snprintf(name, sizeof(name), "remote-auth-%s", r->id);
    sec = secret_get(m, name);
    if (!url || !sec) {
        json_decref(sec);
        if (!condition(r, COND_AUTH, "Pending", "NoCredentials",
                       !url ? "spec.foreignAuthUrl is not set"
                            : "no Secret remote-auth-<id> with the peer's token (cliqoctl add)"))
            ctl_rec_end_after(&r->h, 5000);
        return;
    }
    r->auth_token = secret_field(sec, "token");
    r->auth_ca = secret_field(sec, "ca.crt");
    json_decref(sec);
    if (!r->auth_token || (!r->auth_ca && !insecure)) {
        if (!condition(r, COND_AUTH, "Error", "NoCredentials",
                       "Secret remote-auth-<id> lacks token or ca.crt"))
            ctl_rec_end_after(&r->h, 5000);
        return;
    }
    r->auth_cfg = x_calloc(1, sizeof(*r->auth_cfg));
    if (!r->auth_cfg) {
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    r->auth_cfg->server = x_strdup(url);
    r->auth_cfg->namespace = x_strdup("default");
    if (insecure) {
        log_warn("outgoing",
                 "ForeignCluster %s: insecureSkipTLSVerify is set, the auth endpoint "
                 "%s is not verified",
                 r->h.key, url);
        r->auth_cfg->insecure_skip_tls_verify = true;
    } else {
        r->auth_cfg->ca_pem = (unsigned char *)x_strdup(r->auth_ca);
        r->auth_cfg->ca_pem_len = strlen(r->auth_ca);
    }
    if (!r->auth_cfg->server || !r->auth_cfg->namespace ||
        kapi_client_new(agent_loop(m->mod.a), r->auth_cfg, &o, &r->auth) < 0) {
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    /* The agent aborts only its own clients before the modules' fini: this one is ours to abort
     * when the module stops, so that its callback never runs after our fini. */
    r->auth_next = m->authing;
    m->authing = r;
    memset(&in, 0, sizeof(in));
    snprintf(in.cluster_id, sizeof(in.cluster_id), "%s", r->own_id);
    snprintf(in.cluster_name, sizeof(in.cluster_name), "%s", r->own_name);
    snprintf(in.token, sizeof(in.token), "%s", r->auth_token);
    /* The proof of our identity key, for this provider only (peering/idkey.h). */
    if (!identity_key(m->mod.a)) {
        peer_identity_request_clear(&in);
        if (!condition(r, COND_AUTH, "Pending", "NoIdentityKey",
                       "this cluster has no identity key yet (Secret identity-key)"))
            ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    if (peer_idkey_sign_request(identity_key(m->mod.a), r->id, (int64_t)time(NULL), &in) < 0 ||
        peer_wire_identity_request_encode(&in, &body) < 0) {
        peer_identity_request_clear(&in);
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    peer_identity_request_clear(&in);
    memset(&req, 0, sizeof(req));
    req.method = "POST";
    req.path = "/identity";
    req.body = body;
    req.body_len = strlen(body);
    req.content_type = "application/json";
    r->h.ch.next = after_identity;
    if (kapi_send(r->auth, &req, ctl_call_cb, r, NULL) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
    OPENSSL_cleanse(body, strlen(body));
    x_free(body);
}

/* ---- the request on the peer ------------------------------------------------------------------
 */

static void after_pr_get(void *owner);

static void after_pr_create(void *owner)
{
    struct rec *r = owner;

    if (r->h.ch.last.err < 0 && r->h.ch.last.err != -EEXIST) {
        if (!condition(r, COND_OUT, "Error", "RequestFailed", r->h.ch.last.message))
            ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    r->h.ch.next = after_pr_get;
    if (kapi_get(peer_remote(r->p), &peer_res_peeringrequests, r->p->remote_ns, r->own_id,
                 ctl_call_cb, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
}

static void start_request(struct rec *r);

static void after_pr_get(void *owner)
{
    struct rec *r = owner;
    const json_t *status = json_object_get(r->h.ch.last.body, "status");
    const char *phase = json_string_value(json_object_get(status, "phase"));
    const char *msg = json_string_value(json_object_get(status, "message"));

    if (r->h.ch.last.err == -ENOENT) {
        /* Not there (yet, or any more: a peer that lost it gets it back). */
        if (strcmp(peer_fc_condition(r->fc, COND_OUT), "Established") == 0 &&
            condition(r, COND_OUT, "Pending", "RequestLost",
                      "the PeeringRequest disappeared from the peer; creating it again"))
            return;
        start_request(r);
        return;
    }
    if (r->h.ch.last.err < 0) {
        if (!condition(r, COND_OUT, "Error", "PeerUnreachable", r->h.ch.last.message))
            ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    if (phase && strcmp(phase, "Accepted") == 0) {
        if (!condition(r, COND_OUT, "Established", "Accepted", "the peer accepted the request"))
            ctl_rec_end_after(&r->h, (uint32_t)peer_ctl_options(r->m->mod.a).resync_ms);
    } else if (phase && strcmp(phase, "Denied") == 0) {
        if (!condition(r, COND_OUT, "Denied", "RequestDenied", msg ? msg : "denied by the peer"))
            ctl_rec_end_after(&r->h, 30000);
    } else if (!condition(r, COND_OUT, "Pending", "WaitingForPeer",
                          "the PeeringRequest awaits the peer's decision")) {
        ctl_rec_end_after(&r->h, PENDING_RECHECK);
    }
}

/* The Secret is on the peer: create the PeeringRequest that names it. */
static void create_request(struct rec *r)
{
    char secret[80];
    json_t *pr;

    snprintf(secret, sizeof(secret), "pr-%s", r->own_id);
    pr = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:{s:s,s:s},s:s,s:{s:s,s:s},s:s?}}",
                   "apiVersion", "discovery.liqo.io/v1alpha1", "kind", "PeeringRequest", "metadata",
                   "name", r->own_id, "namespace", r->p->remote_ns, "labels", PEER_LABEL_CLUSTER_ID,
                   r->own_id, "spec", "clusterIdentity", "clusterID", r->own_id, "clusterName",
                   r->own_name, "namespace", r->local_ns, "kubeConfigRef", "name", secret,
                   "namespace", r->p->remote_ns, "authUrl", own_auth_url(r));
    r->h.ch.next = after_pr_create;
    if (!pr || kapi_create(peer_remote(r->p), &peer_res_peeringrequests, r->p->remote_ns, pr,
                           ctl_call_cb, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
    json_decref(pr);
}

static void after_pr_secret(void *owner)
{
    struct rec *r = owner;

    if (r->h.ch.last.err < 0 && r->h.ch.last.err != -EEXIST) {
        if (!condition(r, COND_OUT, "Error", "PeerUnreachable", r->h.ch.last.message))
            ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    create_request(r);
}

/* Our credential for the peer is ready: hand it over in Secret pr-<our id> on the peer. Applied
 * (server-side apply), so a re-issued credential replaces an old one. */
static void on_credential(int err, const char *message, const char *ns, const char *kubeconfig,
                          void *data)
{
    struct rec *r = data;
    char name[96];
    json_t *sec;

    if (err == -ECANCELED) { /* the agent stops: not an error of the peering */
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    if (err < 0) {
        if (!condition(r, COND_OUT, "Error", "CredentialFailed", message))
            ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    snprintf(r->local_ns, sizeof(r->local_ns), "%s", ns);
    snprintf(name, sizeof(name), "pr-%s", r->own_id);
    sec = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s}}", "apiVersion", "v1", "kind", "Secret",
                    "metadata", "name", name, "namespace", r->p->remote_ns, "labels",
                    PEER_LABEL_CLUSTER_ID, r->own_id, "stringData", "kubeconfig", kubeconfig);
    r->h.ch.next = after_pr_secret;
    if (!sec || kapi_apply(peer_remote(r->p), &kapi_secrets, r->p->remote_ns, name, NULL, sec,
                           "cliqo-agent", true, ctl_call_cb, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
    json_decref(sec);
}

static void peer_outgoing(struct rec *r)
{
    const char *local = tenant(r->fc, "local"), *remote;
    char why[KC_ERR_LEN + 64];

    if (!local || strcmp(local, r->local_ns) != 0) {
        set_tenant(r, "local", r->local_ns);
        write_status(r);
        return;
    }
    why[0] = '\0';
    if (!peer_client(r, why, sizeof(why))) {
        if (!condition(r, COND_OUT, "Error", "NoIdentity",
                       why[0] ? why : "the remote identity is not usable"))
            ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    remote = tenant(r->fc, "remote");
    if (!remote || strcmp(remote, r->p->remote_ns) != 0) {
        set_tenant(r, "remote", r->p->remote_ns);
        write_status(r);
        return;
    }
    if (!own_auth_url(r)) {
        if (!condition(r, COND_OUT, "Error", "NoAuthUrl",
                       "this cluster's auth URL is unknown (--auth-url or ClusterConfig "
                       "spec.peeringConfig.authUrl)"))
            ctl_rec_end_after(&r->h, 10000);
        return;
    }
    if (strcmp(peer_fc_condition(r->fc, COND_OUT), "None") == 0 &&
        condition(r, COND_OUT, "Pending", "Requesting", "creating the PeeringRequest on the peer"))
        return;
    /* Where is the request? (after_pr_get creates it when missing.) */
    r->h.ch.next = after_pr_get;
    if (kapi_get(peer_remote(r->p), &peer_res_peeringrequests, r->p->remote_ns, r->own_id,
                 ctl_call_cb, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
}

/* The request is missing on the peer: our credential for it (issued or found again), handed
 * over in Secret pr-<our id>, then the PeeringRequest itself. */
static void start_request(struct rec *r)
{
    if (peer_issue_credential(r->m->mod.a, r->id, r->name, on_credential, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
}

/* ---- unpeering ---------------------------------------------------------------------------------
 */

static void unpeer_local(struct rec *r, const char *reason);

static void after_local_ns_delete(void *owner)
{
    struct rec *r = owner;

    if (r->h.ch.last.err < 0 && r->h.ch.last.err != -ENOENT) {
        log_warn("outgoing", "ForeignCluster %s: cannot delete namespace %s: %s", r->h.key,
                 r->local_ns, r->h.ch.last.message);
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    set_tenant(r, "local", NULL);
    set_tenant(r, "remote", NULL);
    peer_fc_set_condition(r->fc, COND_AUTH, "None", "Unpeered", "");
    if (!condition(r, COND_OUT, "None", r->why, "unpeered"))
        set_finalizer(r, false);
}

static void after_identity_delete(void *owner)
{
    struct rec *r = owner;
    struct outgoing *m = r->m;
    bool incoming = strcmp(peer_fc_condition(r->fc, COND_IN), "None") != 0;

    if (r->h.ch.last.err < 0 && r->h.ch.last.err != -ENOENT) {
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    peer_drop_client(r->p);
    if (incoming || !r->local_ns[0]) {
        r->h.ch.last.err = 0;
        after_local_ns_delete(r);
        return;
    }
    r->h.ch.next = after_local_ns_delete;
    if (kapi_delete(agent_kube(m->mod.a), &kapi_namespaces, NULL, r->local_ns, NULL, ctl_call_cb,
                    r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
}

static void unpeer_local(struct rec *r, const char *reason)
{
    struct outgoing *m = r->m;
    char name[128];

    r->why = reason;
    snprintf(name, sizeof(name), "remote-identity-%s", r->id);
    r->h.ch.next = after_identity_delete;
    if (kapi_delete(agent_kube(m->mod.a), &kapi_secrets, agent_namespace(m->mod.a), name, NULL,
                    ctl_call_cb, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
}

static bool timed_out(struct rec *r)
{
    int64_t since = peer_fc_condition_since(r->fc, COND_OUT);

    return since && (int64_t)time(NULL) - since >= (int64_t)(unpeer_timeout_ms(r->m) / 1000);
}

static void remote_failed(struct rec *r, const char *what)
{
    if (timed_out(r)) {
        log_warn("outgoing",
                 "ForeignCluster %s: the peer did not answer within the unpeer timeout; could not "
                 "delete %s there (%s); finishing locally",
                 r->h.key, what, r->h.ch.last.message);
        unpeer_local(r, "PeerUnreachable");
        return;
    }
    ctl_rec_end_after(&r->h, 1000);
}

static void after_remote_secret_delete(void *owner)
{
    struct rec *r = owner;

    if (r->h.ch.last.err < 0 && r->h.ch.last.err != -ENOENT) {
        remote_failed(r, "the credential Secret");
        return;
    }
    unpeer_local(r, "Unpeered");
}

static void after_remote_pr_delete(void *owner)
{
    struct rec *r = owner;
    char name[96];

    if (r->h.ch.last.err < 0 && r->h.ch.last.err != -ENOENT) {
        remote_failed(r, "the PeeringRequest");
        return;
    }
    snprintf(name, sizeof(name), "pr-%s", r->own_id);
    r->h.ch.next = after_remote_secret_delete;
    if (kapi_delete(peer_remote(r->p), &kapi_secrets, r->p->remote_ns, name, NULL, ctl_call_cb, r) <
        0)
        ctl_rec_end(&r->h, CTL_RETRY);
}

static void unpeer(struct rec *r)
{
    const char *local = tenant(r->fc, "local");

    snprintf(r->local_ns, sizeof(r->local_ns), "%s", local ? local : "");
    if (strcmp(peer_fc_condition(r->fc, COND_OUT), "Disconnecting") != 0) {
        if (condition(r, COND_OUT, "Disconnecting", "Unpeering",
                      "removing the request on the peer"))
            return;
    }
    if (!peer_client(r, NULL, 0)) {
        unpeer_local(r, "NoIdentity");
        return;
    }
    r->h.ch.next = after_remote_pr_delete;
    if (kapi_delete(peer_remote(r->p), &peer_res_peeringrequests, r->p->remote_ns, r->own_id, NULL,
                    ctl_call_cb, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
}

/* ---- reconcile ---------------------------------------------------------------------------------
 */

static void rec_release(struct ctl_rec *h)
{
    struct rec *r = (struct rec *)h;

    auth_client_done(r);
    kc_config_free(r->auth_cfg);
    if (r->auth_token)
        OPENSSL_cleanse(r->auth_token, strlen(r->auth_token));
    x_free(r->auth_token);
    x_free(r->auth_ca);
    json_decref(r->fc);
}

struct tenant_find {
    const char *id;
    char name[64];
    char created[32];
};

static void tenant_visit(json_t *obj, void *data)
{
    struct tenant_find *f = data;
    const json_t *meta = json_object_get(obj, "metadata");
    const char *id =
        json_string_value(json_object_get(json_object_get(meta, "labels"), PEER_LABEL_CLUSTER_ID));
    const char *ts = json_string_value(json_object_get(meta, "creationTimestamp"));
    const char *name = kapi_obj_name(obj);
    int c;

    if (!id || !name || strcmp(id, f->id) != 0 || strlen(name) >= sizeof(f->name))
        return;
    c = f->name[0] ? strcmp(ts ? ts : "", f->created) : -1;
    if (c < 0 || (c == 0 && strcmp(name, f->name) < 0)) {
        snprintf(f->name, sizeof(f->name), "%s", name);
        snprintf(f->created, sizeof(f->created), "%s", ts ? ts : "");
    }
}

/* The peer's tenant namespace is the oldest one labelled with its ID, if any (the auth endpoint
 * chooses the same one), else the name derived from its ID and name. */
static void find_tenant(struct rec *r)
{
    struct tenant_find f = {.id = r->id};

    inf_foreach(r->m->tenants, tenant_visit, &f);
    if (f.name[0])
        snprintf(r->local_ns, sizeof(r->local_ns), "%s", f.name);
}

static void reconcile(struct ctl *c, const char *key)
{
    struct outgoing *m = ctl_data(c);
    struct rec *r;
    json_t *spec, *cached;
    const char *id, *name, *out;
    bool deleting, want, peered;

    cached = inf_get(m->fcs, NULL, key);
    if (!cached) {
        for (int i = 0; i < MAX_PEERS; i++)
            if (m->peers[i].used && strcmp(m->peers[i].fc, key) == 0)
                peer_forget(&m->peers[i]);
        ctl_forget(c, key);
        ctl_skip(c, key, CTL_DONE);
        return;
    }
    r = (struct rec *)ctl_rec_begin(c, key);
    if (!r) {
        json_decref(cached);
        return;
    }
    r->m = m;
    r->fc = json_deep_copy(cached);
    json_decref(cached);
    if (!r->fc) {
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    spec = json_object_get(r->fc, "spec");
    id = json_string_value(json_object_get(json_object_get(spec, "clusterIdentity"), "clusterID"));
    name =
        json_string_value(json_object_get(json_object_get(spec, "clusterIdentity"), "clusterName"));
    out = json_string_value(json_object_get(spec, "outgoingPeeringEnabled"));
    deleting = json_object_get(json_object_get(r->fc, "metadata"), "deletionTimestamp") != NULL;
    if (!id || !peer_cluster_id_valid(id)) {
        log_warn("outgoing", "ForeignCluster %s has no valid spec.clusterIdentity.clusterID", key);
        ctl_rec_end(&r->h, CTL_DONE);
        return;
    }
    if (!identity_cluster_id(m->mod.a)) {
        ctl_rec_end(&r->h, CTL_WAIT); /* no identity of our own yet */
        return;
    }
    snprintf(r->id, sizeof(r->id), "%s", id);
    snprintf(r->name, sizeof(r->name), "%s", name && *name ? name : id);
    snprintf(r->own_id, sizeof(r->own_id), "%s", identity_cluster_id(m->mod.a));
    snprintf(r->own_name, sizeof(r->own_name), "%s",
             identity_cluster_name(m->mod.a) && *identity_cluster_name(m->mod.a)
                 ? identity_cluster_name(m->mod.a)
                 : identity_cluster_id(m->mod.a));
    if (strcmp(r->id, r->own_id) == 0) {
        if (!condition(r, COND_OUT, "Error", "OwnCluster",
                       "this ForeignCluster names this cluster"))
            ctl_rec_end(&r->h, CTL_DONE);
        return;
    }
    r->p = peer_get(m, key, id);
    if (!r->p) {
        log_error("outgoing", "too many peers (more than %d)", MAX_PEERS);
        ctl_rec_end_after(&r->h, 60000);
        return;
    }
    if (peer_tenant_namespace(r->id, r->name, r->local_ns) < 0) {
        ctl_rec_end(&r->h, CTL_DONE);
        return;
    }
    find_tenant(r); /* one tenant namespace per peer: an existing one wins over the derived name */
    want = out && strcmp(out, "Yes") == 0 && !deleting;
    peered = peer_has_finalizer(r->fc, PEER_FINALIZER) ||
             strcmp(peer_fc_condition(r->fc, COND_OUT), "None") != 0;

    if (!want) {
        if (peered && (strcmp(peer_fc_condition(r->fc, COND_OUT), "None") != 0 ||
                       strcmp(peer_fc_condition(r->fc, COND_AUTH), "None") != 0)) {
            unpeer(r);
            return;
        }
        if (peer_has_finalizer(r->fc, PEER_FINALIZER)) {
            set_finalizer(r, false);
            return;
        }
        ctl_rec_end(&r->h, CTL_DONE);
        return;
    }
    if (!peer_has_finalizer(r->fc, PEER_FINALIZER)) {
        set_finalizer(r, true);
        return;
    }
    {
        char sname[128];
        json_t *idsec;

        snprintf(sname, sizeof(sname), "remote-identity-%s", r->id);
        idsec = secret_get(m, sname);
        if (!idsec) {
            authenticate(r, spec);
            return;
        }
        json_decref(idsec);
    }
    if (strcmp(peer_fc_condition(r->fc, COND_AUTH), "Established") != 0) {
        if (!condition(r, COND_AUTH, "Established", "IdentityAccepted",
                       "the peer issued a credential"))
            ctl_rec_end_after(&r->h, 10);
        return;
    }
    peer_outgoing(r);
}

/* ---- module ------------------------------------------------------------------------------------
 */

static void enqueue(struct outgoing *m, json_t *obj)
{
    const char *name = kapi_obj_name(obj);

    if (name)
        ctl_enqueue(m->mod.ctl, name);
}

static void on_fc_add(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    enqueue(data, obj);
}

static void on_fc_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)inf;
    (void)old_obj;
    enqueue(data, new_obj);
}

/* A change of a remote-auth or remote-identity Secret reconciles its ForeignClusters. */
static void enqueue_by_id(struct outgoing *m, const char *id)
{
    for (int i = 0; i < MAX_PEERS; i++)
        if (m->peers[i].used && strcmp(m->peers[i].id, id) == 0)
            ctl_enqueue(m->mod.ctl, m->peers[i].fc);
}

/* ClusterConfig spec.peeringConfig.peerClient: the request rates of the clients to peers, every
 * peer's and some peers' own (the CRD bounds them; read again here as any input). burst defaults to
 * twice qps. Applied to the clients that exist at once. */
static double rate_field(json_t *o, const char *key, double dflt)
{
    json_t *v = json_object_get(o, key);

    return json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) <= 100000
               ? (double)json_integer_value(v)
               : dflt;
}

static void apply_peer_client(struct outgoing *m, json_t *cc)
{
    json_t *pcl = json_object_get(json_object_get(json_object_get(cc, "spec"), "peeringConfig"),
                                  "peerClient");
    json_t *per = json_object_get(pcl, "perCluster"), *it;
    size_t n = json_array_size(per), i, k = 0;
    struct pu_rate *rates = NULL;
    double qps = rate_field(pcl, "qps", 0);
    int burst = (int)rate_field(pcl, "burst", 2 * qps), r;

    if (n > PU_MAX_RATES) {
        log_warn(OWNER, "ClusterConfig peerClient.perCluster: %zu entries, at most %d read", n,
                 PU_MAX_RATES);
        n = PU_MAX_RATES;
    }
    if (n && !(rates = x_calloc(n, sizeof(*rates))))
        return;
    json_array_foreach(per, i, it)
    {
        const char *id = json_string_value(json_object_get(it, "clusterID"));
        double q = rate_field(it, "qps", 0);

        if (i >= n)
            break;
        if (!id || !id[0] || strlen(id) >= PU_ID_MAX || q <= 0) {
            log_warn(OWNER,
                     "ClusterConfig peerClient.perCluster[%zu]: needs a clusterID and a qps "
                     "above 0; ignored",
                     i);
            continue;
        }
        snprintf(rates[k].id, sizeof(rates[k].id), "%s", id);
        rates[k].qps = q;
        rates[k].burst = (int)rate_field(it, "burst", 2 * q);
        k++;
    }
    r = pu_set_rates(agent_peers(m->mod.a), qps, burst, rates, k);
    if (r < 0)
        log_warn(OWNER, "ClusterConfig peerClient not applied: %s", strerror(-r));
    else if (r > 0 && qps > 0)
        log_info(OWNER, "clients to peers: %.0f requests/s (burst %d); %zu peers with their own",
                 qps, burst, k);
    else if (r > 0)
        log_info(OWNER, "clients to peers: the default rate; %zu peers with their own", k);
    x_free(rates);
}

static bool is_cluster_config(const json_t *obj)
{
    const char *name = kapi_obj_name(obj);

    return name && strcmp(name, PEER_CLUSTER_CONFIG) == 0;
}

static void on_config(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    if (is_cluster_config(obj))
        apply_peer_client(data, obj);
}

static void on_config_update(struct inf_informer *inf, json_t *old, json_t *obj, void *data)
{
    (void)old;
    on_config(inf, obj, data);
}

static void on_config_delete(struct inf_informer *inf, json_t *obj, void *data)
{
    struct outgoing *m = data;

    (void)inf;
    if (is_cluster_config(obj))
        pu_set_rates(agent_peers(m->mod.a), 0, 0, NULL, 0);
}

static void on_secret(struct inf_informer *inf, json_t *obj, void *data)
{
    const char *id = json_string_value(json_object_get(
        json_object_get(json_object_get(obj, "metadata"), "labels"), PEER_LABEL_CLUSTER_ID));

    (void)inf;
    if (id)
        enqueue_by_id(data, id);
}

static void on_secret_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_secret(inf, new_obj, data);
}

int peer_outgoing_init(struct agent *a)
{
    struct inf_handlers fh = {
        .on_add = on_fc_add, .on_update = on_fc_update, .on_delete = on_fc_add};
    struct inf_handlers sh = {
        .on_add = on_secret, .on_update = on_secret_update, .on_delete = on_secret};
    struct inf_handlers ch = {
        .on_add = on_config, .on_update = on_config_update, .on_delete = on_config_delete};
    struct ctl_options co = {.name = "foreignclusters",
                             .log_module = OWNER,
                             .queue = {.max_concurrent = 64},
                             .rec_size = sizeof(struct rec),
                             .reconcile = reconcile,
                             .rec_release = rec_release,
                             .retry_ms = ERROR_RETRY_MS};
    struct outgoing *m = ctl_module_new(a, OWNER, sizeof(*m));
    int r;

    if (!m)
        return -ENOMEM;
    r = agent_informer(a, &peer_res_foreignclusters, NULL, NULL, 0, &fh, m, &m->fcs);
    if (r == 0)
        r = agent_informer(a, &kapi_secrets, agent_namespace(a), NULL, 0, &sh, m, &m->secrets);
    if (r == 0)
        r = agent_informer(a, &peer_res_clusterconfigs, NULL, NULL, 0, &ch, m, &m->config);
    if (r == 0)
        r = agent_informer(a, &kapi_namespaces, NULL, PEER_LABEL_TENANT "=true", 0, NULL, NULL,
                           &m->tenants);
    if (r == 0)
        r = ctl_new(a, &co, m, &m->mod.ctl);
    return r;
}

int peer_outgoing_start(struct agent *a)
{
    return ctl_module_start(a, OWNER);
}

void peer_outgoing_stop(struct agent *a)
{
    struct outgoing *m = agent_module_data(a, OWNER);

    ctl_module_stop(a, OWNER);
    if (!m)
        return;
    /* POST /identity in flight completes now, as cancelled (after_identity ends its reconcile). */
    while (m->authing) {
        struct rec *r = m->authing;
        struct kapi_client *c = r->auth;

        m->authing = r->auth_next;
        r->auth_next = NULL;
        r->auth = NULL;
        kapi_client_abort(c);
    }
}

void peer_outgoing_fini(struct agent *a)
{
    struct outgoing *m = agent_module_data(a, OWNER);

    if (!m)
        return;
    for (int i = 0; i < MAX_PEERS; i++)
        if (m->peers[i].used)
            peer_forget(&m->peers[i]);
    ctl_module_fini(a, OWNER);
}
