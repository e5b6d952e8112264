/* The discovery module: table of found clusters and the ForeignCluster reconcile (see ctl.h and
 * docs/discovery.md).
 *
 * Reconcile of cluster ID X (level-triggered: each pass does the first thing missing and ends; the
 * informer brings the result back and the next pass goes on):
 *   X announced (some source in the table):
 *     no ForeignCluster for X     -> create it (name X, labels cluster-id and discovery-type LAN or
 *                                    WAN, foreignAuthUrl, owner: the SearchDomain for WAN)
 *     discovered by us, not peered, URL or name changed, no conflicting announcements
 *                                 -> update spec
 *     status.discovery differs    -> write it (how found, URL, announced CA hash, trust, TTL)
 *     autojoin allowed (trust.c)  -> fetch and pin the CA, store it, outgoingPeeringEnabled Yes
 *   X not announced:
 *     we know it is gone (a LAN goodbye or TTL expiry seen here; a LAN browse older than the TTL
 *     that never saw it; a successful WAN refresh that did not list it)
 *        peered                   -> status.discovery.announced false (the peering's own health
 *                                    decides)
 *        else                     -> delete the ForeignCluster
 * ForeignClusters created by hand (Manual) or by an incoming peering are never changed or deleted;
 * only their status.discovery says that (and how) the cluster is also announced. */
#include "discovery/ctl.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "agent/identity.h"
#include "common/json.h"
#include "common/log.h"
#include "common/rfc3339.h"
#include "common/xalloc.h"
#include "kube/backoff.h"
#include "peering/objects.h"
#include "peering/resources.h"

#define RETRY_MS       2000  /* a request failed, or memory ran out (ctl_options.retry_ms) */
#define LOOK_AGAIN_MS  200   /* a newer object, or the informer is behind */
#define UNSYNCED_MS    500   /* the ForeignClusters are not cached yet */
#define TAKEN_MS       60000 /* ForeignCluster <ID> belongs to another cluster */
#define SWEEP_MS       1000
#define FC_API_VERSION "discovery.liqo.io/v1alpha1"

/* One pass of the reconcile of a cluster ID (the key). */
struct rec {
    struct ctl_rec h; /* first; h.key: the cluster ID */
    char fc_name[256];
    json_t *fc;
    const char *what; /* for logs */
};

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct agent *disc_agent(const struct disc *d)
{
    return d->mod.a;
}

bool disc_running(const struct disc *d)
{
    return d->mod.ctl && ctl_running(d->mod.ctl);
}

const struct disc_lan_config *disc_config(const struct disc *d)
{
    return &d->cfg;
}

json_t *disc_cluster_config(struct disc *d)
{
    return d->config ? inf_get(d->config, NULL, PEER_CLUSTER_CONFIG) : NULL;
}

json_t *disc_secret(struct disc *d, const char *name)
{
    return d->secrets ? inf_get(d->secrets, agent_namespace(d->mod.a), name) : NULL;
}

json_t *disc_search_domain(struct disc *d, const char *name)
{
    return d->sds ? inf_get(d->sds, NULL, name) : NULL;
}

char *disc_secret_field(const json_t *secret, const char *key, size_t max)
{
    const char *b64 = json_string_value(json_object_get(json_object_get(secret, "data"), key));
    char *out = NULL;
    size_t len;

    if (!b64 || peer_base64_decode(b64, max, &out, &len) < 0)
        return NULL;
    if (strlen(out) != len) { /* an embedded NUL: not text */
        x_free(out);
        return NULL;
    }
    return out;
}

/* ---- metrics -----------------------------------------------------------------------------------
 */

void disc_count_ignored(struct disc *d, enum disc_kind kind, const char *reason)
{
    metrics_inc(d->m_ignored, (const char *[]){kind == DISC_LAN ? "lan" : "wan", reason});
}

void disc_count_dropped(struct disc *d, const char *reason)
{
    metrics_inc(d->m_dropped, (const char *[]){reason});
}

void disc_count_event(struct disc *d, const char *event)
{
    metrics_inc(d->m_events, (const char *[]){event});
}

static void collect(struct metrics_registry *r, void *data)
{
    size_t lan = 0, wan = 0;
    static const char *const states[] = {"none",   "probing",  "established", "renamed",
                                         "failed", "disabled", "no-auth-url"};
    struct disc *d = data;
    const char *cur = disc_lan_state(d);

    (void)r;
    for (size_t i = 0; i < d->ncands; i++) {
        bool l = false, w = false;

        for (size_t k = 0; k < d->cands[i]->nsrc; k++)
            if (d->cands[i]->src[k].kind == DISC_LAN)
                l = true;
            else
                w = true;
        lan += l;
        wan += w;
    }
    metrics_set(d->m_clusters, (const char *[]){"lan"}, (double)lan);
    metrics_set(d->m_clusters, (const char *[]){"wan"}, (double)wan);
    metrics_set(d->m_rejected, NULL, (double)disc_lan_rejected_packets(d));
    for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++)
        metrics_set(d->m_announce, (const char *[]){states[i]}, strcmp(states[i], cur) == 0);
}

static int metrics_init(struct disc *d)
{
    struct metrics_registry *r = agent_metrics(d->mod.a);
    int e;

    e = metrics_family_new(r, METRICS_GAUGE, "cliqo_discovery_clusters",
                           "Clusters announced now, by how they are found.",
                           (const char *[]){"source", NULL}, NULL, 0, &d->m_clusters);
    if (!e)
        e = metrics_family_new(
            r, METRICS_COUNTER, "cliqo_discovery_records_ignored_total",
            "Announcements ignored because a field is missing or malformed, by source and reason.",
            (const char *[]){"source", "reason", NULL}, NULL, 0, &d->m_ignored);
    if (!e)
        e = metrics_family_new(r, METRICS_COUNTER, "cliqo_discovery_dropped_total",
                               "Announcements dropped because a limit was reached, by limit.",
                               (const char *[]){"reason", NULL}, NULL, 0, &d->m_dropped);
    if (!e)
        e = metrics_family_new(r, METRICS_COUNTER, "cliqo_discovery_mdns_packets_rejected_total",
                               "mDNS packets the responder rejected as malformed or out of place.",
                               NULL, NULL, 0, &d->m_rejected);
    if (!e)
        e = metrics_family_new(r, METRICS_GAUGE, "cliqo_discovery_announcement",
                               "State of this cluster's LAN announcement (1 for the current one).",
                               (const char *[]){"state", NULL}, NULL, 0, &d->m_announce);
    if (!e)
        e = metrics_family_new(r, METRICS_COUNTER, "cliqo_discovery_events_total",
                               "Discovery events: LAN found and removed, WAN refreshes, "
                               "ForeignClusters created and deleted, joins, CA hash mismatches.",
                               (const char *[]){"event", NULL}, NULL, 0, &d->m_events);
    if (!e)
        e = metrics_add_collector(r, collect, d);
    return e;
}

/* ---- the table ---------------------------------------------------------------------------------
 */

struct disc_cand *disc_cand_get(struct disc *d, const char *id)
{
    for (size_t i = 0; i < d->ncands; i++)
        if (strcmp(d->cands[i]->id, id) == 0)
            return d->cands[i];
    return NULL;
}

static void cand_free(struct disc *d, struct disc_cand *c)
{
    for (size_t i = 0; i < d->ncands; i++)
        if (d->cands[i] == c) {
            d->cands[i] = d->cands[--d->ncands];
            break;
        }
    x_free(c);
}

void disc_enqueue(struct disc *d, const char *id)
{
    if (disc_running(d) && id && *id)
        ctl_enqueue(d->mod.ctl, id);
}

static bool same_announce(const struct disc_source *a, const struct disc_source *b)
{
    return memcmp(&a->a, &b->a, sizeof(a->a)) == 0 && strcmp(a->instance, b->instance) == 0;
}

int disc_source_put(struct disc *d, const char *id, const struct disc_source *s)
{
    struct disc_cand *c = disc_cand_get(d, id);
    int64_t now = now_ms();
    size_t max = d->cfg.max_clusters ? d->cfg.max_clusters : DISC_DEFAULT_MAX;

    if (!c) {
        if (d->ncands >= max)
            return -ENOSPC;
        c = x_calloc(1, sizeof(*c));
        if (!c)
            return -ENOMEM;
        snprintf(c->id, sizeof(c->id), "%s", id);
        d->cands[d->ncands++] = c;
    }
    for (size_t i = 0; i < c->nsrc; i++) {
        struct disc_source *o = &c->src[i];

        if (o->kind != s->kind || strcmp(o->sd, s->sd) != 0 || strcmp(o->key, s->key) != 0)
            continue;
        if (same_announce(o, s))
            return 0;
        {
            int64_t first = o->first_seen;

            *o = *s;
            o->first_seen = first;
            o->last_seen = now;
        }
        c->last_seen = now;
        disc_enqueue(d, id);
        return 0;
    }
    if (c->nsrc >= DISC_SOURCES_MAX)
        return -ENOSPC;
    c->src[c->nsrc] = *s;
    c->src[c->nsrc].first_seen = c->src[c->nsrc].last_seen = now;
    c->nsrc++;
    c->last_seen = now;
    disc_enqueue(d, id);
    return 0;
}

static void drop_at(struct disc *d, struct disc_cand *c, size_t i, bool gone)
{
    if (c->src[i].kind == DISC_LAN && gone)
        c->lan_removed = true;
    c->src[i] = c->src[--c->nsrc];
    disc_enqueue(d, c->id);
}

void disc_source_drop(struct disc *d, enum disc_kind kind, const char *sd, const char *key)
{
    for (size_t k = 0; k < d->ncands; k++) {
        struct disc_cand *c = d->cands[k];

        for (size_t i = 0; i < c->nsrc; i++)
            if (c->src[i].kind == kind && strcmp(c->src[i].sd, sd ? sd : "") == 0 &&
                strcmp(c->src[i].key, key) == 0) {
                drop_at(d, c, i, true);
                break;
            }
    }
}

const char *disc_source_id(struct disc *d, enum disc_kind kind, const char *sd, const char *key)
{
    for (size_t k = 0; k < d->ncands; k++)
        for (size_t i = 0; i < d->cands[k]->nsrc; i++)
            if (d->cands[k]->src[i].kind == kind && strcmp(d->cands[k]->src[i].sd, sd) == 0 &&
                strcmp(d->cands[k]->src[i].key, key) == 0)
                return d->cands[k]->id;
    return NULL;
}

void disc_sources_retain(struct disc *d, const char *sd, char (*keep)[DISC_KEY_MAX], size_t n)
{
    for (size_t k = 0; k < d->ncands; k++) {
        struct disc_cand *c = d->cands[k];

        for (size_t i = 0; i < c->nsrc;) {
            bool kept = c->src[i].kind != DISC_WAN || strcmp(c->src[i].sd, sd) != 0;

            for (size_t j = 0; !kept && j < n; j++)
                kept = strcmp(keep[j], c->src[i].key) == 0;
            if (kept)
                i++;
            else
                drop_at(d, c, i, true);
        }
    }
}

void disc_sources_drop_all(struct disc *d, enum disc_kind kind, const char *sd, bool gone)
{
    for (size_t k = 0; k < d->ncands; k++) {
        struct disc_cand *c = d->cands[k];

        for (size_t i = 0; i < c->nsrc;)
            if (c->src[i].kind == kind && (!sd || strcmp(c->src[i].sd, sd) == 0))
                drop_at(d, c, i, gone);
            else
                i++;
    }
}

/* ---- ForeignCluster helpers --------------------------------------------------------------------
 */

static const char *fc_id(const json_t *fc)
{
    const char *id = jsn_label(fc, PEER_LABEL_CLUSTER_ID);

    if (!id)
        id = json_string_value(json_object_get(
            json_object_get(json_object_get(fc, "spec"), "clusterIdentity"), "clusterID"));
    return id;
}

static bool fc_managed(const json_t *fc)
{
    const char *t = jsn_label(fc, PEER_LABEL_DISC_TYPE);

    return t && (strcmp(t, DISC_LABEL_TYPE_LAN) == 0 || strcmp(t, DISC_LABEL_TYPE_WAN) == 0);
}

/* Peered, or on its way in or out: the peering decides about such a ForeignCluster. */
static bool fc_peered(const json_t *fc)
{
    const char *out =
        json_string_value(json_object_get(json_object_get(fc, "spec"), "outgoingPeeringEnabled"));

    return peer_has_finalizer(fc, PEER_FINALIZER) || (out && strcmp(out, "Yes") == 0) ||
           strcmp(peer_fc_condition(fc, "OutgoingPeering"), "None") != 0 ||
           strcmp(peer_fc_condition(fc, "IncomingPeering"), "None") != 0 ||
           strcmp(peer_fc_condition(fc, "AuthenticationStatus"), "None") != 0;
}

/* The SearchDomain that owns a WAN ForeignCluster (borrowed), or NULL. */
static const char *fc_search_domain(const json_t *fc)
{
    const json_t *refs = json_object_get(json_object_get(fc, "metadata"), "ownerReferences");
    const json_t *ref;
    size_t i;

    json_array_foreach(refs, i, ref)
    {
        const char *kind = json_string_value(json_object_get(ref, "kind"));

        if (kind && strcmp(kind, "SearchDomain") == 0)
            return json_string_value(json_object_get(ref, "name"));
    }
    return NULL;
}

struct find {
    const char *id;
    json_t *found;
};

static void find_visit(json_t *obj, void *data)
{
    struct find *f = data;
    const char *id = fc_id(obj);

    if (!f->found && id && strcmp(id, f->id) == 0)
        f->found = json_deep_copy(obj);
}

static json_t *find_fc(struct disc *d, const char *id)
{
    struct find f = {id, NULL};

    inf_foreach(d->fcs, find_visit, &f);
    return f.found;
}

static void enqueue_managed(json_t *obj, void *data)
{
    struct disc *d = data;
    const char *id = fc_id(obj);

    if (fc_managed(obj) || disc_cand_get(d, id ? id : ""))
        disc_enqueue(d, id);
}

void disc_enqueue_all(struct disc *d)
{
    if (d->fcs)
        inf_foreach(d->fcs, enqueue_managed, d);
    for (size_t i = 0; i < d->ncands; i++)
        disc_enqueue(d, d->cands[i]->id);
}

/* ---- reconcile ---------------------------------------------------------------------------------
 */

static void rec_release(struct ctl_rec *h)
{
    struct rec *r = (struct rec *)h;

    json_decref(r->fc);
}

/* The next step after a write of the ForeignCluster (ctl_call_chain.next): the informer brings
 * the result back, so a success ends the pass. */
static void after_write(void *owner)
{
    struct rec *r = owner;
    int e = r->h.ch.last.err;

    if (e == -ESTALE || e == -EEXIST || e == -ENOENT) {
        ctl_rec_end_after(&r->h, LOOK_AGAIN_MS); /* a newer object, or the informer is behind */
        return;
    }
    if (e < 0) {
        log_warn(DISC_MOD, "cannot %s ForeignCluster %s: %s", r->what, r->fc_name,
                 r->h.ch.last.message);
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    ctl_rec_end(&r->h, CTL_DONE);
}

static void send_patch(struct rec *r, const char *sub, json_t *patch, const char *what)
{
    r->what = what;
    ctl_merge_patch_then(&r->h, &peer_res_foreignclusters, NULL, r->fc_name, sub, patch,
                         after_write);
}

static const struct disc_source *primary(const struct disc_cand *c, bool *ret_conflict)
{
    const struct disc_source *p = NULL;

    for (size_t i = 0; i < c->nsrc; i++)
        if (!p || c->src[i].first_seen < p->first_seen ||
            (c->src[i].first_seen == p->first_seen && c->src[i].kind < p->kind))
            p = &c->src[i];
    /* Announcements of one ID conflict when their CA hashes differ, or when two of the same kind
     * give different URLs (a cluster may well announce a LAN address on the LAN and a public one
     * in DNS). */
    *ret_conflict = false;
    for (size_t i = 0; p && i < c->nsrc; i++)
        for (size_t k = i + 1; k < c->nsrc; k++) {
            const struct disc_source *x = &c->src[i], *y = &c->src[k];

            if ((x->a.ca_hash[0] && y->a.ca_hash[0] && strcmp(x->a.ca_hash, y->a.ca_hash) != 0) ||
                (x->kind == y->kind && strcmp(x->a.url, y->a.url) != 0))
                *ret_conflict = true;
        }
    return p;
}

static void create_fc(struct disc *d, struct rec *r, const struct disc_source *p)
{
    const char *id = r->h.key;
    json_t *fc, *sd = NULL;
    const char *type = p->kind == DISC_LAN ? DISC_LABEL_TYPE_LAN : DISC_LABEL_TYPE_WAN;

    if (p->kind == DISC_WAN) {
        sd = disc_search_domain(d, p->sd);
        if (!sd || !kapi_obj_uid(sd)) {
            json_decref(sd);
            ctl_rec_end(&r->h, CTL_RETRY); /* the SearchDomain is not cached yet, or is going */
            return;
        }
    }
    fc = json_pack("{s:s,s:s,s:{s:s,s:{s:s,s:s}},s:{s:{s:s},s:s,s:s,s:s}}", "apiVersion",
                   FC_API_VERSION, "kind", "ForeignCluster", "metadata", "name", id, "labels",
                   PEER_LABEL_CLUSTER_ID, id, PEER_LABEL_DISC_TYPE, type, "spec", "clusterIdentity",
                   "clusterID", id, "foreignAuthUrl", p->a.url, "outgoingPeeringEnabled", "Auto",
                   "incomingPeeringEnabled", "Auto");
    if (fc && p->a.name[0])
        json_object_set_new(json_object_get(json_object_get(fc, "spec"), "clusterIdentity"),
                            "clusterName", json_string(p->a.name));
    if (fc && sd)
        json_object_set_new(json_object_get(fc, "metadata"), "ownerReferences",
                            json_pack("[{s:s,s:s,s:s,s:s}]", "apiVersion", FC_API_VERSION, "kind",
                                      "SearchDomain", "name", kapi_obj_name(sd), "uid",
                                      kapi_obj_uid(sd)));
    json_decref(sd);
    snprintf(r->fc_name, sizeof(r->fc_name), "%s", id);
    log_info(DISC_MOD,
             "found cluster %s (%s) on the %s at %s (instance '%s'%s%s): creating its "
             "ForeignCluster",
             id, p->a.name[0] ? p->a.name : "no name", type, p->a.url, p->instance,
             p->kind == DISC_WAN ? ", SearchDomain " : "", p->kind == DISC_WAN ? p->sd : "");
    disc_count_event(d, "fc-created");
    r->what = "create";
    r->h.ch.next = after_write;
    if (!fc || kapi_create(agent_kube(disc_agent(d)), &peer_res_foreignclusters, NULL, fc,
                           ctl_call_cb, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
    json_decref(fc);
}

/* status.discovery as it should be for announced cluster c. */
static json_t *desired_status(const struct disc *d, const struct disc_cand *c,
                              const struct disc_source *p, const struct disc_verdict *v,
                              bool conflict)
{
    char first[32], last[32];
    json_t *ds;

    rfc3339_format(p->first_seen / 1000, 0, 0, first, sizeof(first));
    rfc3339_format(c->last_seen / 1000, 0, 0, last, sizeof(last));
    ds = json_pack("{s:s,s:s,s:s,s:b,s:s,s:s,s:s}", "type",
                   p->kind == DISC_LAN ? DISC_LABEL_TYPE_LAN : DISC_LABEL_TYPE_WAN, "instance",
                   p->instance, "authUrl", p->a.url, "announced", 1, "trust",
                   disc_trust_name(v->trust), "firstSeen", first, "lastSeen", last);
    if (!ds)
        return NULL;
    if (p->a.ca_hash[0])
        json_object_set_new(ds, "caCertHash", json_string(p->a.ca_hash));
    if (p->kind == DISC_WAN)
        json_object_set_new(ds, "searchDomain", json_string(p->sd));
    else
        json_object_set_new(ds, "ttlSeconds", json_integer(d->cfg.ttl));
    if (v->message[0])
        json_object_set_new(ds, "message", json_string(v->message));
    else if (conflict)
        json_object_set_new(ds, "message", json_string("conflicting announcements"));
    return ds;
}

/* Equal, ignoring the times (they change only with the rest, or once per process). */
static bool status_same(const json_t *have, const json_t *want)
{
    const char *k;
    json_t *v;

    if (!json_is_object(have))
        return false;
    json_object_foreach((json_t *)want, k, v)
    {
        if (strcmp(k, "lastSeen") == 0 || strcmp(k, "firstSeen") == 0)
            continue;
        if (!json_equal(json_object_get(have, k), v))
            return false;
    }
    json_object_foreach((json_t *)have, k, v)
    {
        if (!json_object_get(want, k))
            return false;
    }
    return true;
}

/* A merge patch of status.discovery that also deletes keys `want` no longer has. */
static json_t *status_patch(const json_t *fc, json_t *want)
{
    const json_t *have = json_object_get(json_object_get((json_t *)fc, "status"), "discovery");

    if (jsn_merge_patch_removals(want, have) < 0) {
        json_decref(want);
        return NULL;
    }
    return json_pack("{s:{s:O},s:{s:o}}", "metadata", "resourceVersion",
                     json_object_get(json_object_get((json_t *)fc, "metadata"), "resourceVersion"),
                     "status", "discovery", want);
}

static void after_join(const char *id, int err, const char *message, void *data)
{
    struct disc *d = data;

    if (err < 0)
        log_warn(DISC_MOD, "cluster %s: not joined: %s", id, message);
    disc_enqueue(d, id);
}

static void present(struct disc *d, struct rec *r, struct disc_cand *c)
{
    const char *id = r->h.key;
    bool conflict, managed, peered;
    const struct disc_source *p = primary(c, &conflict);
    const json_t *spec, *have;
    const char *url, *cname;
    struct disc_verdict v;
    json_t *want;

    if (!r->fc) {
        json_t *taken = inf_get(d->fcs, NULL, id);

        if (taken) {
            log_warn(DISC_MOD,
                     "cluster %s is announced, but ForeignCluster %s belongs to cluster %s: "
                     "not creating one, ignoring",
                     id, id, fc_id(taken) ? fc_id(taken) : "(none)");
            json_decref(taken);
            ctl_rec_end_after(&r->h, TAKEN_MS);
            return;
        }
        create_fc(d, r, p);
        return;
    }
    snprintf(r->fc_name, sizeof(r->fc_name), "%s", kapi_obj_name(r->fc));
    managed = fc_managed(r->fc);
    peered = fc_peered(r->fc);
    spec = json_object_get(r->fc, "spec");
    url = json_string_value(json_object_get(spec, "foreignAuthUrl"));
    cname =
        json_string_value(json_object_get(json_object_get(spec, "clusterIdentity"), "clusterName"));
    if (managed && !peered && !conflict &&
        ((!url || strcmp(url, p->a.url) != 0) ||
         (p->a.name[0] && (!cname || strcmp(cname, p->a.name) != 0)))) {
        json_t *patch =
            json_pack("{s:{s:O},s:{s:s}}", "metadata", "resourceVersion",
                      json_object_get(json_object_get(r->fc, "metadata"), "resourceVersion"),
                      "spec", "foreignAuthUrl", p->a.url);

        if (patch && p->a.name[0])
            json_object_set_new(json_object_get(patch, "spec"), "clusterIdentity",
                                json_pack("{s:s}", "clusterName", p->a.name));
        log_info(DISC_MOD, "cluster %s now announces %s%s%s: updating ForeignCluster %s", id,
                 p->a.url, p->a.name[0] ? " as " : "", p->a.name, r->fc_name);
        send_patch(r, NULL, patch, "update");
        return;
    }
    disc_trust_decide(d, c, p, r->fc, &v);
    if (conflict) {
        v.trust = DISC_TRUST_CONFLICT;
        v.join = false;
        snprintf(v.message, sizeof(v.message),
                 "several announcements claim cluster ID %s with different URLs or CA hashes; "
                 "not joining until they agree",
                 id);
    }
    want = desired_status(d, c, p, &v, conflict);
    have = json_object_get(json_object_get(r->fc, "status"), "discovery");
    if (want && (!status_same(have, want) || !json_object_get(have, "lastSeen"))) {
        if (v.trust == DISC_TRUST_MISMATCH || v.trust == DISC_TRUST_CONFLICT) {
            log_warn(DISC_MOD, "cluster %s (ForeignCluster %s): %s", id, r->fc_name, v.message);
            if (v.trust == DISC_TRUST_MISMATCH)
                disc_count_event(d, "ca-hash-mismatch");
        }
        send_patch(r, "status", status_patch(r->fc, want), "update the status of");
        return;
    }
    json_decref(want);
    if (v.join && managed && !peered &&
        disc_trust_join(d, id, r->fc_name, kapi_obj_uid(r->fc), p->a.url, &v, p->a.ca_hash,
                        after_join, d) == 0) {
        if (v.tofu)
            log_warn(DISC_MOD,
                     "WARNING: joining cluster %s at %s WITHOUT an operator-supplied CA hash "
                     "(autojoinUntrusted): its CA is trusted on first use; anyone on the network "
                     "path could have announced it",
                     id, p->a.url);
        else
            log_info(DISC_MOD,
                     "joining cluster %s at %s: autojoin, credentials and CA hash supplied by the "
                     "operator",
                     id, p->a.url);
        disc_count_event(d, "autojoin");
    }
    ctl_rec_end(&r->h, CTL_DONE);
}

static void absent(struct disc *d, struct rec *r, struct disc_cand *c)
{
    const char *id = r->h.key;
    const char *type, *sd;
    json_t *have;
    bool deletable = false;
    int64_t after;

    if (!r->fc) {
        if (c)
            cand_free(d, c);
        ctl_rec_end(&r->h, CTL_DONE);
        return;
    }
    snprintf(r->fc_name, sizeof(r->fc_name), "%s", kapi_obj_name(r->fc));
    type = jsn_label(r->fc, PEER_LABEL_DISC_TYPE);
    have = json_object_get(json_object_get(r->fc, "status"), "discovery");
    if (!fc_managed(r->fc)) {
        /* Manual or IncomingPeering: never ours to delete; the status says it is not announced. */
        if (c)
            cand_free(d, c);
        if (json_is_object(have) && json_is_true(json_object_get(have, "announced"))) {
            json_t *want = json_deep_copy(have);

            json_object_set_new(want, "announced", json_false());
            json_object_set_new(want, "message", json_string("no longer announced"));
            send_patch(r, "status", status_patch(r->fc, want), "update the status of");
            return;
        }
        ctl_rec_end(&r->h, CTL_DONE);
        return;
    }
    if (type && strcmp(type, DISC_LABEL_TYPE_LAN) == 0) {
        after = disc_lan_sweep_after(d);
        deletable = (c && c->lan_removed) || (after > 0 && now_ms() >= after);
        if (!deletable && after > 0) {
            ctl_rec_end_after(&r->h, (uint32_t)(after - now_ms() + 100));
            return;
        }
    } else if (type && strcmp(type, DISC_LABEL_TYPE_WAN) == 0) {
        sd = fc_search_domain(r->fc);
        deletable = sd && disc_wan_known_absent(d, sd, id);
    }
    if (!deletable) {
        ctl_rec_end(&r->h, CTL_DONE);
        return;
    }
    if (c)
        cand_free(d, c);
    if (fc_peered(r->fc)) {
        if (json_is_object(have) && json_is_true(json_object_get(have, "announced"))) {
            json_t *want = json_deep_copy(have);

            json_object_set_new(want, "announced", json_false());
            json_object_set_new(want, "message",
                                json_string("no longer announced; kept because it is peered (the "
                                            "peering's own health decides)"));
            log_info(DISC_MOD, "cluster %s is no longer announced; ForeignCluster %s kept (peered)",
                     id, r->fc_name);
            send_patch(r, "status", status_patch(r->fc, want), "update the status of");
            return;
        }
        ctl_rec_end(&r->h, CTL_DONE);
        return;
    }
    log_info(DISC_MOD, "cluster %s is no longer announced (%s): deleting ForeignCluster %s", id,
             type, r->fc_name);
    disc_count_event(d, "fc-deleted");
    r->what = "delete";
    r->h.ch.next = after_write;
    {
        struct kapi_delete_opts o = {.precondition_uid = kapi_obj_uid(r->fc),
                                     .grace_period_seconds = -1};

        if (kapi_delete(agent_kube(disc_agent(d)), &peer_res_foreignclusters, NULL, r->fc_name, &o,
                        ctl_call_cb, r) < 0)
            ctl_rec_end(&r->h, CTL_RETRY);
    }
}

static void reconcile(struct ctl *ctl, const char *key)
{
    struct disc *d = ctl_data(ctl);
    const char *own = identity_cluster_id(disc_agent(d));
    struct disc_cand *c;
    struct rec *r;

    r = (struct rec *)ctl_rec_begin(ctl, key);
    if (!r)
        return;
    if (!inf_synced(d->fcs)) {
        ctl_rec_end_after(&r->h, UNSYNCED_MS);
        return;
    }
    c = disc_cand_get(d, key);
    if (own && strcmp(own, key) == 0) {
        if (c)
            cand_free(d, c);
        ctl_rec_end(&r->h, CTL_DONE);
        return;
    }
    r->fc = find_fc(d, key);
    if (r->fc && json_object_get(json_object_get(r->fc, "metadata"), "deletionTimestamp")) {
        ctl_rec_end(&r->h, CTL_DONE); /* going: the informer tells us when it is gone */
        return;
    }
    if (c && c->nsrc > 0)
        present(d, r, c);
    else
        absent(d, r, c);
}

/* ---- informer handlers -------------------------------------------------------------------------
 */

static void on_fc(struct inf_informer *inf, json_t *obj, void *data)
{
    struct disc *d = data;
    const char *id = fc_id(obj);

    (void)inf;
    if (id && (fc_managed(obj) || disc_cand_get(d, id) ||
               json_object_get(json_object_get(obj, "status"), "discovery")))
        disc_enqueue(d, id);
}

static void on_fc_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_fc(inf, new_obj, data);
}

static void on_secret(struct inf_informer *inf, json_t *obj, void *data)
{
    struct disc *d = data;
    const char *name = kapi_obj_name(obj);

    (void)inf;
    if (name && strncmp(name, "remote-auth-", 12) == 0 && disc_cand_get(d, name + 12))
        disc_enqueue(d, name + 12);
    if (name && strcmp(name, PEER_AUTH_TLS_SECRET) == 0)
        disc_lan_reconfigure(d); /* the CA hash we announce */
}

static void on_secret_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_secret(inf, new_obj, data);
}

static void on_config(struct inf_informer *inf, json_t *obj, void *data)
{
    struct disc *d = data;

    (void)inf;
    if (kapi_obj_name(obj) && strcmp(kapi_obj_name(obj), PEER_CLUSTER_CONFIG) == 0) {
        disc_lan_reconfigure(d);
        disc_enqueue_all(d); /* the join policy may have changed */
    }
}

static void on_config_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_config(inf, new_obj, data);
}

/* ---- sweep -------------------------------------------------------------------------------------
 */

static void on_sweep(uv_timer_t *t)
{
    struct disc *d = t->data;
    int64_t after, now = now_ms();

    if (!disc_running(d))
        return;
    disc_lan_tick(d);
    /* Once the LAN has been watched for a whole TTL, discovered ForeignClusters that were never
     * seen since are looked at (a restart while a cluster vanished). Again every TTL. */
    after = disc_lan_sweep_after(d);
    if (after > 0 && now >= after &&
        now - d->last_sweep_enqueue >= (int64_t)(d->cfg.ttl ? d->cfg.ttl : 1) * 1000) {
        d->last_sweep_enqueue = now;
        disc_enqueue_all(d);
    }
}

/* ---- the module --------------------------------------------------------------------------------
 */

int disc_init(struct agent *a)
{
    struct inf_handlers fh = {.on_add = on_fc, .on_update = on_fc_update, .on_delete = on_fc};
    struct inf_handlers sh = {
        .on_add = on_secret, .on_update = on_secret_update, .on_delete = on_secret};
    struct inf_handlers ch = {.on_add = on_config, .on_update = on_config_update};
    struct ctl_options co = {
        .name = DISC_MOD,
        .queue = {.max_concurrent = 4, .max_delay_ms = 30000, .max_keys = DISC_MAX_LIMIT * 2},
        .rec_size = sizeof(struct rec),
        .reconcile = reconcile,
        .rec_release = rec_release,
        .retry_ms = RETRY_MS};
    struct disc *d = ctl_module_new(a, DISC_MOD, sizeof(*d));
    int r;

    if (!d)
        return -ENOMEM;
    d->cfg.ttl = DISC_DEFAULT_TTL;
    d->cfg.max_clusters = DISC_DEFAULT_MAX;
    d->cands = x_calloc(DISC_MAX_LIMIT, sizeof(*d->cands));
    if (!d->cands)
        return -ENOMEM;
    r = agent_informer(a, &peer_res_foreignclusters, NULL, NULL, 0, &fh, d, &d->fcs);
    if (r == 0)
        r = agent_informer(a, &kapi_secrets, agent_namespace(a), NULL, 0, &sh, d, &d->secrets);
    if (r == 0)
        r = agent_informer(a, &peer_res_clusterconfigs, NULL, NULL, 0, &ch, d, &d->config);
    if (r == 0)
        r = agent_informer(a, &peer_res_searchdomains, NULL, NULL, 0, NULL, NULL, &d->sds);
    if (r == 0)
        r = ctl_new(a, &co, d, &d->mod.ctl);
    if (r == 0)
        r = metrics_init(d);
    if (r == 0)
        r = disc_lan_init(d);
    if (r == 0)
        r = disc_wan_init(d);
    if (r == 0)
        r = disc_trust_init(d);
    return r;
}

int disc_start(struct agent *a)
{
    struct disc *d = agent_module_data(a, DISC_MOD);
    int r = ctl_module_start(a, DISC_MOD);

    if (r < 0)
        return r;
    d->sweep = ktimer_new(agent_loop(a), d);
    if (!d->sweep)
        return -ENOMEM;
    uv_timer_start(d->sweep, on_sweep, SWEEP_MS, SWEEP_MS);
    disc_lan_start(d);
    disc_wan_start(d);
    return 0;
}

void disc_stop(struct agent *a)
{
    struct disc *d = agent_module_data(a, DISC_MOD);

    if (!d || !disc_running(d))
        return;
    ctl_module_stop(a, DISC_MOD);
    ktimer_free(d->sweep);
    d->sweep = NULL;
    disc_wan_stop(d);
    disc_lan_stop(d); /* goodbye packets */
}

void disc_fini(struct agent *a)
{
    struct disc *d = agent_module_data(a, DISC_MOD);

    if (!d)
        return;
    disc_stop(a);
    disc_wan_fini(d);
    disc_lan_fini(d);
    disc_trust_fini(d);
    while (d->ncands > 0)
        cand_free(d, d->cands[d->ncands - 1]);
    x_free(d->cands);
    ctl_module_fini(a, DISC_MOD); /* the controller, and d */
}
