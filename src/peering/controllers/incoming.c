/* incoming: the PeeringRequest controller of the provider (docs/peering.md).
 *
 * A PeeringRequest lives in the tenant namespace of its requester, where only the requester's
 * credential can write. It is admitted when its namespace's cluster-id label and its name both
 * equal spec.clusterIdentity.clusterID, its kubeconfig Secret exists there, and policy allows
 * (ClusterConfig spec.peeringConfig.incomingPeeringEnabled and the ForeignCluster's
 * incomingPeeringEnabled are not "No"); the decision goes to status.phase/reason/message. The
 * requester's ForeignCluster is created if needed (discovery-type IncomingPeering, outgoing "No")
 * and gets IncomingPeering=Established. When the PeeringRequest disappears (the requester
 * unpeered), IncomingPeering goes back to None, an IncomingPeering-only ForeignCluster is deleted,
 * and the tenant namespace (with the requester's ServiceAccount and RoleBindings) is deleted
 * unless our own outgoing peering to that cluster still uses it. Level-triggered like outgoing. */
#include "peering/controllers/controllers.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>

#include "agent/peers.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "kube/kubeconfig.h"
#include "kube/names.h"
#include "peering/identity.h"
#include "peering/resources.h"

#define RETRY_MS 2000

/* The module's state (agent_module_data "incoming"). */
struct incoming {
    struct ctl_module mod; /* first */
    struct inf_informer *prs, *fcs, *tenants;
};

struct rec {
    struct ctl_rec h; /* first */
    struct incoming *m;
    char ns[64], name[128];
    json_t *pr; /* NULL when the request is gone */
    json_t *fc; /* the requester's ForeignCluster (working copy) or NULL */
    char id[64], cname[64];
    int requeue_ms; /* after a successful write: -1 none */
    json_t *secret; /* the requester's kubeconfig Secret, once read */
};

#define OWNER "incoming"

static void rec_release(struct ctl_rec *h)
{
    struct rec *r = (struct rec *)h;

    json_decref(r->pr);
    json_decref(r->fc);
    json_decref(r->secret);
}

/* Ends r with its key requeued after ms, or not at all when ms < 0. */
static void rec_end(struct rec *r, int ms)
{
    if (ms < 0)
        ctl_rec_end(&r->h, CTL_DONE);
    else
        ctl_rec_end_after(&r->h, (uint32_t)ms);
}

static void after_write(void *owner)
{
    struct rec *r = owner;

    if (r->h.ch.last.err < 0 && r->h.ch.last.err != -ENOENT && r->h.ch.last.err != -EEXIST) {
        log_warn(OWNER, "%s: %s", r->h.key, r->h.ch.last.message);
        ctl_rec_end(&r->h, r->h.ch.last.err == -ESTALE ? CTL_STALE : CTL_RETRY);
        return;
    }
    rec_end(r, r->requeue_ms);
}

/* The requester's ForeignCluster, found by its cluster-id label (a new reference). */
struct find {
    const char *id;
    json_t *found;
};

static void find_visit(json_t *obj, void *data)
{
    struct find *f = data;
    const char *id = json_string_value(json_object_get(
        json_object_get(json_object_get(obj, "metadata"), "labels"), PEER_LABEL_CLUSTER_ID));
    const char *sid = json_string_value(json_object_get(
        json_object_get(json_object_get(obj, "spec"), "clusterIdentity"), "clusterID"));

    if (!f->found && ((id && strcmp(id, f->id) == 0) || (sid && strcmp(sid, f->id) == 0)))
        f->found = json_deep_copy(obj);
}

static json_t *find_fc(struct incoming *m, const char *id)
{
    struct find f = {id, NULL};

    inf_foreach(m->fcs, find_visit, &f);
    return f.found;
}

static void patch_status(struct rec *r, const struct kapi_resource *res, const char *ns,
                         const char *name, json_t *obj)
{
    json_t *patch = json_pack("{s:{s:O},s:O}", "metadata", "resourceVersion",
                              json_object_get(json_object_get(obj, "metadata"), "resourceVersion"),
                              "status", json_object_get(obj, "status"));
    char *body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;

    json_decref(patch);
    r->h.ch.next = after_write;
    if (!body || kapi_patch(agent_kube(r->m->mod.a), res, ns, name, "status", KAPI_PATCH_MERGE,
                            body, ctl_call_cb, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
    x_free(body);
}

/* ---- the request is gone: clean up -----------------------------------------------------------
 *
 * Driven by the requester's ForeignCluster, so that a restart anywhere in between resumes: first
 * IncomingPeering goes to None (reason RequestWithdrawn), then the tenant namespace is deleted
 * (unless our outgoing peering uses it), then an IncomingPeering-only ForeignCluster. Without a
 * ForeignCluster nothing is touched: a tenant namespace may be waiting for its first request (the
 * auth endpoint issues the credential before the requester creates the PeeringRequest). */

static bool outgoing_uses(const json_t *fc)
{
    const char *out =
        json_string_value(json_object_get(json_object_get(fc, "spec"), "outgoingPeeringEnabled"));

    return (out && strcmp(out, "Yes") == 0) ||
           strcmp(peer_fc_condition(fc, "OutgoingPeering"), "None") != 0;
}

static void withdrawn(struct rec *r)
{
    json_t *ns, *cond_reason = NULL;
    const char *type, *reason = NULL;
    size_t i;
    json_t *c;

    if (!peer_cluster_id_valid(r->name)) {
        ctl_rec_end(&r->h, CTL_DONE);
        return;
    }
    snprintf(r->id, sizeof(r->id), "%.63s", r->name);
    {
        struct pu_unit *u = pu_find(agent_peers(r->m->mod.a), r->id);

        if (pu_holds(u, OWNER)) {
            pu_drop_credential(u, PU_REQUESTER);
            pu_release(u, OWNER);
        }
    }
    r->fc = find_fc(r->m, r->id);
    if (!r->fc) {
        ctl_rec_end(&r->h, CTL_DONE);
        return;
    }
    if (strcmp(peer_fc_condition(r->fc, "IncomingPeering"), "None") != 0) {
        peer_fc_set_condition(r->fc, "IncomingPeering", "None", "RequestWithdrawn",
                              "the peer withdrew its PeeringRequest");
        log_info("incoming", "ForeignCluster %s: IncomingPeering=None (request withdrawn)",
                 kapi_obj_name(r->fc));
        r->requeue_ms = 200; /* then delete what is left */
        patch_status(r, &peer_res_foreignclusters, NULL, kapi_obj_name(r->fc), r->fc);
        return;
    }
    json_array_foreach(json_object_get(json_object_get(r->fc, "status"), "peeringConditions"), i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));

        if (t && strcmp(t, "IncomingPeering") == 0)
            cond_reason = json_object_get(c, "reason");
    }
    reason = json_string_value(cond_reason);
    if (!reason || strcmp(reason, "RequestWithdrawn") != 0 || outgoing_uses(r->fc)) {
        ctl_rec_end(&r->h,
                    CTL_DONE); /* never peered in, or our own peering still needs the namespace */
        return;
    }
    ns = inf_get(r->m->tenants, NULL, r->ns);
    if (ns && json_object_get(json_object_get(ns, "metadata"), "deletionTimestamp")) {
        json_decref(ns);
        rec_end(r, 1000); /* the namespace controller is emptying it */
        return;
    }
    if (ns) {
        json_decref(ns);
        log_info("incoming", "peering request %s withdrawn: deleting tenant namespace %s", r->h.key,
                 r->ns);
        r->requeue_ms = 200;
        r->h.ch.next = after_write;
        if (kapi_delete(agent_kube(r->m->mod.a), &kapi_namespaces, NULL, r->ns, NULL, ctl_call_cb,
                        r) < 0)
            ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    type = json_string_value(json_object_get(
        json_object_get(json_object_get(r->fc, "metadata"), "labels"), PEER_LABEL_DISC_TYPE));
    if (type && strcmp(type, "IncomingPeering") == 0 &&
        !json_object_get(json_object_get(r->fc, "metadata"), "deletionTimestamp")) {
        log_info("incoming", "deleting ForeignCluster %s: no peering left in either direction",
                 kapi_obj_name(r->fc));
        r->h.ch.next = after_write;
        if (kapi_delete(agent_kube(r->m->mod.a), &peer_res_foreignclusters, NULL,
                        kapi_obj_name(r->fc), NULL, ctl_call_cb, r) < 0)
            ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    ctl_rec_end(&r->h, CTL_DONE);
}

/* ---- admission ---------------------------------------------------------------------------- */

/* ---- is the requester still there? -------------------------------------------------------------
 *
 * An admitted request is re-checked every resync period with the credential the requester handed
 * over: if its apiserver says 401, the requester revoked it (it unpeered while we could not be
 * reached, or was reinstalled), so we withdraw the request ourselves and the cleanup above runs. A
 * requester that cannot be reached is left alone: an outage is not an unpeering. */

static void after_request_delete(void *owner)
{
    struct rec *r = owner;

    r->requeue_ms = 200;
    r->h.ch.next = NULL;
    if (r->h.ch.last.err < 0 && r->h.ch.last.err != -ENOENT)
        log_warn("incoming", "cannot withdraw %s: %s", r->h.key, r->h.ch.last.message);
    rec_end(r, r->h.ch.last.err < 0 && r->h.ch.last.err != -ENOENT ? RETRY_MS : 200);
}

static void after_verify(void *owner)
{
    struct rec *r = owner;

    if (r->h.ch.last.err == -EACCES) {
        log_warn("incoming",
                 "cluster %s no longer accepts the credential it gave us (401): it unpeered while "
                 "we were away; withdrawing its PeeringRequest %s",
                 r->id, r->h.key);
        r->h.ch.next = after_request_delete;
        if (kapi_delete(agent_kube(r->m->mod.a), &peer_res_peeringrequests, r->ns, r->name, NULL,
                        ctl_call_cb, r) < 0)
            ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    if (r->h.ch.last.err < 0)
        log_debug("incoming",
                  "cluster %s not reachable with its credential (%s); keeping the peering", r->id,
                  r->h.ch.last.message);
    rec_end(r, (int)peer_ctl_options(r->m->mod.a).resync_ms);
}

/* The requester's credential (the admitted request's kubeconfig Secret) in its unit, role
 * PU_REQUESTER: the broadcaster and the liveness check below use it. Returns the client or NULL. */
static struct kapi_client *install_requester(struct rec *r)
{
    const char *b64 =
        json_string_value(json_object_get(json_object_get(r->secret, "data"), "kubeconfig"));
    const char *rv = kapi_obj_rv(r->secret);
    struct pu_unit *u = NULL;
    char *kubeconfig = NULL, err[256];
    size_t len;
    int rc;

    if (!b64 || !rv)
        return NULL;
    rc = pu_acquire(agent_peers(r->m->mod.a), r->id, OWNER, &u);
    if (rc < 0) {
        log_warn("incoming", "cannot open the unit of peer %s: %s", r->id, strerror(-rc));
        return NULL;
    }
    if (pu_client(u, PU_REQUESTER) && strcmp(pu_credential_version(u, PU_REQUESTER), rv) == 0)
        return pu_client(u, PU_REQUESTER);
    if (peer_base64_decode(b64, PEER_SECRET_MAX, &kubeconfig, &len) < 0) {
        log_warn("incoming", "PeeringRequest %s: the kubeconfig Secret is not valid base64",
                 r->h.key);
        return NULL;
    }
    rc = pu_set_credential(u, PU_REQUESTER, kubeconfig, len, rv, err, sizeof(err));
    OPENSSL_cleanse(kubeconfig, len);
    x_free(kubeconfig);
    if (rc < 0)
        log_warn("incoming", "PeeringRequest %s: the requester's credential is not usable: %s",
                 r->h.key, err);
    return pu_client(u, PU_REQUESTER);
}

static void verify_requester(struct rec *r)
{
    const char *ns =
        json_string_value(json_object_get(json_object_get(r->pr, "spec"), "namespace"));
    struct kapi_list_opts lo = {.limit = 1};
    struct kapi_client *c = install_requester(r);

    if (!c || !ns) {
        rec_end(r, (int)peer_ctl_options(r->m->mod.a).resync_ms);
        return;
    }
    r->h.ch.next = after_verify;
    if (kapi_list(c, &kapi_secrets, ns, &lo, ctl_call_cb, r) < 0)
        rec_end(r, (int)peer_ctl_options(r->m->mod.a).resync_ms);
}

static void decide(struct rec *r, const char *phase, const char *reason, const char *msg)
{
    json_t *status = json_object_get(r->pr, "status");
    const char *old = json_string_value(json_object_get(status, "phase"));
    const char *old_reason = json_string_value(json_object_get(status, "reason"));
    const char *old_msg = json_string_value(json_object_get(status, "message"));

    if (old && strcmp(old, phase) == 0 && old_reason && strcmp(old_reason, reason) == 0 &&
        old_msg && strcmp(old_msg, msg) == 0) {
        if (strcmp(phase, "Accepted") == 0 && r->secret)
            verify_requester(r);
        else
            rec_end(r, r->requeue_ms);
        return;
    }
    log_info("incoming", "PeeringRequest %s from cluster %s: %s (%s) %s", r->h.key, r->id, phase,
             reason, msg);
    json_object_set_new(
        r->pr, "status",
        json_pack("{s:s,s:s,s:s}", "phase", phase, "reason", reason, "message", msg));
    patch_status(r, &peer_res_peeringrequests, r->ns, r->name, r->pr);
}

static void after_fc_create(void *owner)
{
    struct rec *r = owner;

    if (r->h.ch.last.err < 0 && r->h.ch.last.err != -EEXIST) {
        log_warn("incoming", "cannot create the ForeignCluster of %s: %s", r->id,
                 r->h.ch.last.message);
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    rec_end(r, 200); /* the informer brings it: go on from there */
}

static void create_fc(struct rec *r)
{
    const char *url = json_string_value(json_object_get(json_object_get(r->pr, "spec"), "authUrl"));
    json_t *existing = inf_get(r->m->fcs, NULL, r->cname), *fc;
    const char *name = existing || !kname_dns_label(r->cname) ? r->id : r->cname;

    json_decref(existing);
    fc = json_pack("{s:s,s:s,s:{s:s,s:{s:s,s:s}},s:{s:{s:s,s:s},s:s,s:s}}", "apiVersion",
                   "discovery.liqo.io/v1alpha1", "kind", "ForeignCluster", "metadata", "name", name,
                   "labels", PEER_LABEL_CLUSTER_ID, r->id, PEER_LABEL_DISC_TYPE, "IncomingPeering",
                   "spec", "clusterIdentity", "clusterID", r->id, "clusterName", r->cname,
                   "outgoingPeeringEnabled", "No", "incomingPeeringEnabled", "Auto");
    if (fc && url && strncmp(url, "https://", 8) == 0)
        json_object_set_new(json_object_get(fc, "spec"), "foreignAuthUrl", json_string(url));
    log_info("incoming", "creating ForeignCluster %s for incoming peering of %s", name, r->id);
    r->h.ch.next = after_fc_create;
    if (!fc || kapi_create(agent_kube(r->m->mod.a), &peer_res_foreignclusters, NULL, fc,
                           ctl_call_cb, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
    json_decref(fc);
}

/* Whether the requester's kubeconfig (r->secret) is one we refuse to use: it must load and
 * verify its server against a pinned CA (kc_load_peer). A refusal is logged once per message and
 * written to `msg` for the PeeringRequest's status, where the requester's operator looks. */
static bool requester_refused(struct rec *r, char *msg, size_t size)
{
    const char *b64 =
        json_string_value(json_object_get(json_object_get(r->secret, "data"), "kubeconfig"));
    const char *old =
        json_string_value(json_object_get(json_object_get(r->pr, "status"), "message"));
    struct kc_config *c = NULL;
    char *kubeconfig = NULL, origin[160];
    size_t len = 0;
    int rc;

    snprintf(origin, sizeof(origin), "Secret %s/%s key kubeconfig", r->ns,
             kapi_obj_name(r->secret) ? kapi_obj_name(r->secret) : "?");
    if (!b64 || peer_base64_decode(b64, PEER_SECRET_MAX, &kubeconfig, &len) < 0) {
        snprintf(msg, size, "%s: missing or not valid base64", origin);
        rc = -EINVAL;
    } else {
        rc = kc_load_peer(kubeconfig, len, origin, &c, msg, size);
    }
    if (kubeconfig)
        OPENSSL_cleanse(kubeconfig, len);
    x_free(kubeconfig);
    kc_config_free(c);
    if (rc == -ENOMEM) {
        snprintf(msg, size, "%s: out of memory", origin);
        return false; /* not the requester's fault: install_requester() tries again */
    }
    if (rc < 0 && (!old || strcmp(old, msg) != 0))
        log_warn("incoming", "PeeringRequest %s: refusing the requester's credential: %s", r->h.key,
                 msg);
    return rc < 0;
}

static void after_cc(void *owner);
static void after_secret(void *owner)
{
    struct rec *r = owner;
    char msg[KC_ERR_LEN];

    if (r->h.ch.last.err == -ENOENT) {
        decide(r, "Pending", "NoKubeconfig",
               "the kubeconfig Secret named by spec.kubeConfigRef does not exist yet");
        return;
    }
    if (r->h.ch.last.err < 0) {
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    r->secret = json_incref(r->h.ch.last.body);
    if (requester_refused(r, msg, sizeof(msg))) {
        /* Checked again every resync period: a rewritten Secret fires no PeeringRequest event. */
        r->requeue_ms = (int)peer_ctl_options(r->m->mod.a).resync_ms;
        decide(r, "Pending", "InvalidKubeconfig", msg);
        return;
    }
    r->h.ch.next = after_cc;
    if (kapi_get(agent_kube(r->m->mod.a), &peer_res_clusterconfigs, NULL, PEER_CLUSTER_CONFIG,
                 ctl_call_cb, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
}

static void after_cc(void *owner)
{
    struct rec *r = owner;
    const char *policy = json_string_value(json_object_get(
        json_object_get(json_object_get(r->h.ch.last.body, "spec"), "peeringConfig"),
        "incomingPeeringEnabled"));
    const char *fc_policy;

    if (r->h.ch.last.err < 0 && r->h.ch.last.err != -ENOENT) {
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    if (policy && strcmp(policy, "No") == 0) {
        decide(r, "Denied", "PolicyDenied",
               "this cluster does not accept incoming peerings (ClusterConfig)");
        return;
    }
    r->fc = find_fc(r->m, r->id);
    fc_policy = json_string_value(
        json_object_get(json_object_get(r->fc, "spec"), "incomingPeeringEnabled"));
    if (fc_policy && strcmp(fc_policy, "No") == 0) {
        decide(r, "Denied", "PolicyDenied",
               "this cluster does not accept incoming peering from this cluster (ForeignCluster)");
        return;
    }
    if (!r->fc) {
        create_fc(r);
        return;
    }
    {
        const char *local = json_string_value(json_object_get(
            json_object_get(json_object_get(r->fc, "status"), "tenantNamespace"), "local"));
        bool changed = peer_fc_set_condition(r->fc, "IncomingPeering", "Established", "Accepted",
                                             "the peer's PeeringRequest was admitted");

        if (!local || strcmp(local, r->ns) != 0) {
            json_t *s = json_object_get(r->fc, "status"),
                   *t = json_object_get(s, "tenantNamespace");

            if (!json_is_object(t)) {
                t = json_object();
                json_object_set_new(s, "tenantNamespace", t);
            }
            json_object_set_new(t, "local", json_string(r->ns));
            changed = true;
        }
        if (changed) {
            log_info("incoming", "ForeignCluster %s: IncomingPeering=Established",
                     kapi_obj_name(r->fc));
            /* The PeeringRequest is answered on the next pass, after this write. */
            patch_status(r, &peer_res_foreignclusters, NULL, kapi_obj_name(r->fc), r->fc);
            r->requeue_ms = 100;
            return;
        }
    }
    decide(r, "Accepted", "Admitted", "the peering request was admitted");
}

static void admit(struct rec *r)
{
    json_t *spec = json_object_get(r->pr, "spec"), *ns;
    const char *id =
        json_string_value(json_object_get(json_object_get(spec, "clusterIdentity"), "clusterID"));
    const char *cname =
        json_string_value(json_object_get(json_object_get(spec, "clusterIdentity"), "clusterName"));
    const char *secret =
        json_string_value(json_object_get(json_object_get(spec, "kubeConfigRef"), "name"));
    const char *ns_id;

    snprintf(r->id, sizeof(r->id), "%s", id ? id : "");
    snprintf(r->cname, sizeof(r->cname), "%s", cname && *cname ? cname : (id ? id : ""));
    ns = inf_get(r->m->tenants, NULL, r->ns);
    ns_id = json_string_value(json_object_get(
        json_object_get(json_object_get(ns, "metadata"), "labels"), PEER_LABEL_CLUSTER_ID));
    if (!ns || !ns_id || !id || strcmp(ns_id, id) != 0 || strcmp(r->name, id) != 0) {
        json_decref(ns);
        decide(r, "Denied", "IdentityMismatch",
               "a PeeringRequest must be named after its requester's cluster ID and live in "
               "that cluster's tenant namespace");
        return;
    }
    json_decref(ns);
    if (!secret) {
        decide(r, "Denied", "NoKubeconfig", "spec.kubeConfigRef.name is not set");
        return;
    }
    r->h.ch.next = after_secret;
    if (kapi_get(agent_kube(r->m->mod.a), &kapi_secrets, r->ns, secret, ctl_call_cb, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
}

static void reconcile(struct ctl *c, const char *key)
{
    struct rec *r;
    const char *slash = strchr(key, '/');

    if (!slash || (size_t)(slash - key) >= sizeof(r->ns)) {
        wq_done(ctl_queue(c), key);
        return;
    }
    r = (struct rec *)ctl_rec_begin(c, key);
    if (!r)
        return;
    r->m = ctl_data(c);
    snprintf(r->ns, sizeof(r->ns), "%.*s", (int)(slash - key), key);
    snprintf(r->name, sizeof(r->name), "%s", slash + 1);
    r->requeue_ms = -1;
    {
        json_t *cached = inf_get(r->m->prs, r->ns, r->name);

        r->pr = cached ? json_deep_copy(cached) : NULL;
        json_decref(cached);
    }
    if (!r->pr || json_object_get(json_object_get(r->pr, "metadata"), "deletionTimestamp"))
        withdrawn(r);
    else
        admit(r);
}

/* ---- module ------------------------------------------------------------------------------------
 */

/* A ForeignCluster with an incoming side reconciles its request's key (tenant namespace/ID); so
 * does one whose IncomingPeering is None after a withdrawal (the cleanup may still be pending). */
static void on_fc(struct inf_informer *inf, json_t *obj, void *data)
{
    struct incoming *m = data;
    const char *ns = json_string_value(json_object_get(
        json_object_get(json_object_get(obj, "status"), "tenantNamespace"), "local"));
    const char *id = json_string_value(json_object_get(
        json_object_get(json_object_get(obj, "spec"), "clusterIdentity"), "clusterID"));

    (void)inf;
    ctl_enqueue_ns_name(m->mod.ctl, ns, id);
}

static void on_fc_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_fc(inf, new_obj, data);
}

int peer_incoming_init(struct agent *a)
{
    struct inf_handlers fh = {.on_add = on_fc, .on_update = on_fc_update};
    struct ctl_options co = {.name = "peeringrequests",
                             .log_module = OWNER,
                             .queue = {.max_concurrent = 64},
                             .rec_size = sizeof(struct rec),
                             .reconcile = reconcile,
                             .rec_release = rec_release,
                             .retry_ms = 2000};
    struct incoming *m = ctl_module_new(a, OWNER, sizeof(*m));
    int r;

    if (!m)
        return -ENOMEM;
    r = agent_informer(a, &peer_res_peeringrequests, NULL, NULL, 0, &ctl_module_obj_handlers, m,
                       &m->prs);
    if (r == 0)
        r = agent_informer(a, &peer_res_foreignclusters, NULL, NULL, 0, &fh, m, &m->fcs);
    if (r == 0)
        r = agent_informer(a, &kapi_namespaces, NULL, PEER_LABEL_TENANT "=true", 0, NULL, NULL,
                           &m->tenants);
    if (r == 0)
        r = ctl_new(a, &co, m, &m->mod.ctl);
    return r;
}
