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
#include "discovery/mdns.h"
#include "kube/backoff.h"
#include "agent/ctl.h"
#include "peering/objects.h"
#include "peering/resources.h"

#define RETRY_MS       2000
#define SWEEP_MS       1000
#define FC_API_VERSION "discovery.liqo.io/v1alpha1"

static struct {
    struct agent *a;
    struct inf_informer *fcs, *secrets, *config, *sds;
    struct wq_queue *q;
    struct disc_cand **cands;
    size_t ncands;
    struct disc_lan_config cfg;
    bool running;
    uv_timer_t *sweep;
    int64_t last_sweep_enqueue;
    struct metrics_family *m_clusters, *m_ignored, *m_dropped, *m_rejected, *m_announce, *m_events;
} st;

struct rec {
    struct ctl_call_chain ch; /* first */
    char id[PEER_NAME_MAX + 1];
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

struct agent *disc_agent(void)
{
    return st.a;
}

bool disc_running(void)
{
    return st.running;
}

const struct disc_lan_config *disc_config(void)
{
    return &st.cfg;
}

json_t *disc_cluster_config(void)
{
    return st.config ? inf_get(st.config, NULL, PEER_CLUSTER_CONFIG) : NULL;
}

json_t *disc_secret(const char *name)
{
    return st.secrets ? inf_get(st.secrets, agent_namespace(st.a), name) : NULL;
}

json_t *disc_search_domain(const char *name)
{
    return st.sds ? inf_get(st.sds, NULL, name) : NULL;
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

void disc_count_ignored(enum disc_kind kind, const char *reason)
{
    metrics_inc(st.m_ignored, (const char *[]){kind == DISC_LAN ? "lan" : "wan", reason});
}

void disc_count_dropped(const char *reason)
{
    metrics_inc(st.m_dropped, (const char *[]){reason});
}

void disc_count_event(const char *event)
{
    metrics_inc(st.m_events, (const char *[]){event});
}

static void collect(struct metrics_registry *r, void *data)
{
    size_t lan = 0, wan = 0;
    static const char *const states[] = {"none",   "probing",  "established", "renamed",
                                         "failed", "disabled", "no-auth-url"};
    const char *cur = disc_lan_state();

    (void)r, (void)data;
    for (size_t i = 0; i < st.ncands; i++) {
        bool l = false, w = false;

        for (size_t k = 0; k < st.cands[i]->nsrc; k++)
            if (st.cands[i]->src[k].kind == DISC_LAN)
                l = true;
            else
                w = true;
        lan += l;
        wan += w;
    }
    metrics_set(st.m_clusters, (const char *[]){"lan"}, (double)lan);
    metrics_set(st.m_clusters, (const char *[]){"wan"}, (double)wan);
    metrics_set(st.m_rejected, NULL, (double)mdns_rejected_packets());
    for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++)
        metrics_set(st.m_announce, (const char *[]){states[i]}, strcmp(states[i], cur) == 0);
}

static int metrics_init(struct agent *a)
{
    struct metrics_registry *r = agent_metrics(a);
    int e;

    e = metrics_family_new(r, METRICS_GAUGE, "cliqo_discovery_clusters",
                           "Clusters announced now, by how they are found.",
                           (const char *[]){"source", NULL}, NULL, 0, &st.m_clusters);
    if (!e)
        e = metrics_family_new(
            r, METRICS_COUNTER, "cliqo_discovery_records_ignored_total",
            "Announcements ignored because a field is missing or malformed, by source and reason.",
            (const char *[]){"source", "reason", NULL}, NULL, 0, &st.m_ignored);
    if (!e)
        e = metrics_family_new(r, METRICS_COUNTER, "cliqo_discovery_dropped_total",
                               "Announcements dropped because a limit was reached, by limit.",
                               (const char *[]){"reason", NULL}, NULL, 0, &st.m_dropped);
    if (!e)
        e = metrics_family_new(r, METRICS_COUNTER, "cliqo_discovery_mdns_packets_rejected_total",
                               "mDNS packets the responder rejected as malformed or out of place.",
                               NULL, NULL, 0, &st.m_rejected);
    if (!e)
        e = metrics_family_new(r, METRICS_GAUGE, "cliqo_discovery_announcement",
                               "State of this cluster's LAN announcement (1 for the current one).",
                               (const char *[]){"state", NULL}, NULL, 0, &st.m_announce);
    if (!e)
        e = metrics_family_new(r, METRICS_COUNTER, "cliqo_discovery_events_total",
                               "Discovery events: LAN found and removed, WAN refreshes, "
                               "ForeignClusters created and deleted, joins, CA hash mismatches.",
                               (const char *[]){"event", NULL}, NULL, 0, &st.m_events);
    if (!e)
        e = metrics_add_collector(r, collect, NULL);
    return e;
}

/* ---- the table ---------------------------------------------------------------------------------
 */

struct disc_cand *disc_cand_get(const char *id)
{
    for (size_t i = 0; i < st.ncands; i++)
        if (strcmp(st.cands[i]->id, id) == 0)
            return st.cands[i];
    return NULL;
}

static void cand_free(struct disc_cand *c)
{
    for (size_t i = 0; i < st.ncands; i++)
        if (st.cands[i] == c) {
            st.cands[i] = st.cands[--st.ncands];
            break;
        }
    x_free(c);
}

void disc_enqueue(const char *id)
{
    if (st.q && st.running && id && *id)
        (void)wq_add(st.q, id);
}

static bool same_announce(const struct disc_source *a, const struct disc_source *b)
{
    return memcmp(&a->a, &b->a, sizeof(a->a)) == 0 && strcmp(a->instance, b->instance) == 0;
}

int disc_source_put(const char *id, const struct disc_source *s)
{
    struct disc_cand *c = disc_cand_get(id);
    int64_t now = now_ms();
    size_t max = st.cfg.max_clusters ? st.cfg.max_clusters : DISC_DEFAULT_MAX;

    if (!c) {
        if (st.ncands >= max)
            return -ENOSPC;
        c = x_calloc(1, sizeof(*c));
        if (!c)
            return -ENOMEM;
        snprintf(c->id, sizeof(c->id), "%s", id);
        st.cands[st.ncands++] = c;
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
        disc_enqueue(id);
        return 0;
    }
    if (c->nsrc >= DISC_SOURCES_MAX)
        return -ENOSPC;
    c->src[c->nsrc] = *s;
    c->src[c->nsrc].first_seen = c->src[c->nsrc].last_seen = now;
    c->nsrc++;
    c->last_seen = now;
    disc_enqueue(id);
    return 0;
}

static void drop_at(struct disc_cand *c, size_t i, bool gone)
{
    if (c->src[i].kind == DISC_LAN && gone)
        c->lan_removed = true;
    c->src[i] = c->src[--c->nsrc];
    disc_enqueue(c->id);
}

void disc_source_drop(enum disc_kind kind, const char *sd, const char *key)
{
    for (size_t k = 0; k < st.ncands; k++) {
        struct disc_cand *c = st.cands[k];

        for (size_t i = 0; i < c->nsrc; i++)
            if (c->src[i].kind == kind && strcmp(c->src[i].sd, sd ? sd : "") == 0 &&
                strcmp(c->src[i].key, key) == 0) {
                drop_at(c, i, true);
                break;
            }
    }
}

const char *disc_source_id(enum disc_kind kind, const char *sd, const char *key)
{
    for (size_t k = 0; k < st.ncands; k++)
        for (size_t i = 0; i < st.cands[k]->nsrc; i++)
            if (st.cands[k]->src[i].kind == kind && strcmp(st.cands[k]->src[i].sd, sd) == 0 &&
                strcmp(st.cands[k]->src[i].key, key) == 0)
                return st.cands[k]->id;
    return NULL;
}

void disc_sources_retain(const char *sd, char (*keep)[DISC_KEY_MAX], size_t n)
{
    for (size_t k = 0; k < st.ncands; k++) {
        struct disc_cand *c = st.cands[k];

        for (size_t i = 0; i < c->nsrc;) {
            bool kept = c->src[i].kind != DISC_WAN || strcmp(c->src[i].sd, sd) != 0;

            for (size_t j = 0; !kept && j < n; j++)
                kept = strcmp(keep[j], c->src[i].key) == 0;
            if (kept)
                i++;
            else
                drop_at(c, i, true);
        }
    }
}

void disc_sources_drop_all(enum disc_kind kind, const char *sd, bool gone)
{
    for (size_t k = 0; k < st.ncands; k++) {
        struct disc_cand *c = st.cands[k];

        for (size_t i = 0; i < c->nsrc;)
            if (c->src[i].kind == kind && (!sd || strcmp(c->src[i].sd, sd) == 0))
                drop_at(c, i, gone);
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

static json_t *find_fc(const char *id)
{
    struct find f = {id, NULL};

    inf_foreach(st.fcs, find_visit, &f);
    return f.found;
}

static void enqueue_managed(json_t *obj, void *data)
{
    const char *id = fc_id(obj);

    (void)data;
    if (fc_managed(obj) || disc_cand_get(id ? id : ""))
        disc_enqueue(id);
}

void disc_enqueue_all(void)
{
    if (st.fcs)
        inf_foreach(st.fcs, enqueue_managed, NULL);
    for (size_t i = 0; i < st.ncands; i++)
        disc_enqueue(st.cands[i]->id);
}

/* ---- reconcile ---------------------------------------------------------------------------------
 */

static void rec_end(struct rec *r, int requeue_ms)
{
    if (st.q) {
        if (requeue_ms >= 0)
            wq_add_after(st.q, r->id, (uint64_t)requeue_ms);
        wq_done(st.q, r->id);
    }
    json_decref(r->fc);
    ctl_call_reset(&r->ch.last);
    x_free(r);
}

static void after_write(void *owner)
{
    struct rec *r = owner;
    int e = r->ch.last.err;

    if (e == -ESTALE || e == -EEXIST || e == -ENOENT) {
        rec_end(r, 200); /* a newer object, or the informer is behind: look again */
        return;
    }
    if (e < 0) {
        log_warn(DISC_MOD, "cannot %s ForeignCluster %s: %s", r->what, r->fc_name,
                 r->ch.last.message);
        rec_end(r, RETRY_MS);
        return;
    }
    rec_end(r, -1);
}

static void send_patch(struct rec *r, const char *sub, json_t *patch, const char *what)
{
    char *body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;

    json_decref(patch);
    r->what = what;
    r->ch.next = after_write;
    if (!body || kapi_patch(agent_kube(st.a), &peer_res_foreignclusters, NULL, r->fc_name, sub,
                            KAPI_PATCH_MERGE, body, ctl_call_cb, r) < 0)
        rec_end(r, RETRY_MS);
    x_free(body);
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

static void create_fc(struct rec *r, const struct disc_source *p)
{
    json_t *fc, *sd = NULL;
    const char *type = p->kind == DISC_LAN ? DISC_LABEL_TYPE_LAN : DISC_LABEL_TYPE_WAN;

    if (p->kind == DISC_WAN) {
        sd = disc_search_domain(p->sd);
        if (!sd || !kapi_obj_uid(sd)) {
            json_decref(sd);
            rec_end(r, RETRY_MS); /* the SearchDomain is not cached yet, or is going */
            return;
        }
    }
    fc = json_pack("{s:s,s:s,s:{s:s,s:{s:s,s:s}},s:{s:{s:s},s:s,s:s,s:s}}", "apiVersion",
                   FC_API_VERSION, "kind", "ForeignCluster", "metadata", "name", r->id, "labels",
                   PEER_LABEL_CLUSTER_ID, r->id, PEER_LABEL_DISC_TYPE, type, "spec",
                   "clusterIdentity", "clusterID", r->id, "foreignAuthUrl", p->a.url,
                   "outgoingPeeringEnabled", "Auto", "incomingPeeringEnabled", "Auto");
    if (fc && p->a.name[0])
        json_object_set_new(json_object_get(json_object_get(fc, "spec"), "clusterIdentity"),
                            "clusterName", json_string(p->a.name));
    if (fc && sd)
        json_object_set_new(json_object_get(fc, "metadata"), "ownerReferences",
                            json_pack("[{s:s,s:s,s:s,s:s}]", "apiVersion", FC_API_VERSION, "kind",
                                      "SearchDomain", "name", kapi_obj_name(sd), "uid",
                                      kapi_obj_uid(sd)));
    json_decref(sd);
    snprintf(r->fc_name, sizeof(r->fc_name), "%s", r->id);
    log_info(DISC_MOD,
             "found cluster %s (%s) on the %s at %s (instance '%s'%s%s): creating its "
             "ForeignCluster",
             r->id, p->a.name[0] ? p->a.name : "no name", type, p->a.url, p->instance,
             p->kind == DISC_WAN ? ", SearchDomain " : "", p->kind == DISC_WAN ? p->sd : "");
    disc_count_event("fc-created");
    r->what = "create";
    r->ch.next = after_write;
    if (!fc ||
        kapi_create(agent_kube(st.a), &peer_res_foreignclusters, NULL, fc, ctl_call_cb, r) < 0)
        rec_end(r, RETRY_MS);
    json_decref(fc);
}

/* status.discovery as it should be for announced cluster c. */
static json_t *desired_status(const struct disc_cand *c, const struct disc_source *p,
                              const struct disc_verdict *v, bool conflict)
{
    char first[32], last[32];
    json_t *d;

    rfc3339_format(p->first_seen / 1000, 0, 0, first, sizeof(first));
    rfc3339_format(c->last_seen / 1000, 0, 0, last, sizeof(last));
    d = json_pack("{s:s,s:s,s:s,s:b,s:s,s:s,s:s}", "type",
                  p->kind == DISC_LAN ? DISC_LABEL_TYPE_LAN : DISC_LABEL_TYPE_WAN, "instance",
                  p->instance, "authUrl", p->a.url, "announced", 1, "trust",
                  disc_trust_name(v->trust), "firstSeen", first, "lastSeen", last);
    if (!d)
        return NULL;
    if (p->a.ca_hash[0])
        json_object_set_new(d, "caCertHash", json_string(p->a.ca_hash));
    if (p->kind == DISC_WAN)
        json_object_set_new(d, "searchDomain", json_string(p->sd));
    else
        json_object_set_new(d, "ttlSeconds", json_integer(st.cfg.ttl));
    if (v->message[0])
        json_object_set_new(d, "message", json_string(v->message));
    else if (conflict)
        json_object_set_new(d, "message", json_string("conflicting announcements"));
    return d;
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
    const char *k;
    json_t *v;

    json_object_foreach((json_t *)have, k, v)
    {
        if (!json_object_get(want, k))
            json_object_set_new(want, k, json_null());
    }
    return json_pack("{s:{s:O},s:{s:o}}", "metadata", "resourceVersion",
                     json_object_get(json_object_get((json_t *)fc, "metadata"), "resourceVersion"),
                     "status", "discovery", want);
}

static void after_join(const char *id, int err, const char *message, void *data)
{
    (void)data;
    if (err < 0)
        log_warn(DISC_MOD, "cluster %s: not joined: %s", id, message);
    disc_enqueue(id);
}

static void present(struct rec *r, struct disc_cand *c)
{
    bool conflict, managed, peered;
    const struct disc_source *p = primary(c, &conflict);
    const json_t *spec, *have;
    const char *url, *cname;
    struct disc_verdict v;
    json_t *want;

    if (!r->fc) {
        json_t *taken = inf_get(st.fcs, NULL, r->id);

        if (taken) {
            log_warn(DISC_MOD,
                     "cluster %s is announced, but ForeignCluster %s belongs to cluster %s: "
                     "not creating one, ignoring",
                     r->id, r->id, fc_id(taken) ? fc_id(taken) : "(none)");
            json_decref(taken);
            rec_end(r, 60000);
            return;
        }
        create_fc(r, p);
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
        log_info(DISC_MOD, "cluster %s now announces %s%s%s: updating ForeignCluster %s", r->id,
                 p->a.url, p->a.name[0] ? " as " : "", p->a.name, r->fc_name);
        send_patch(r, NULL, patch, "update");
        return;
    }
    disc_trust_decide(c, p, r->fc, &v);
    if (conflict) {
        v.trust = DISC_TRUST_CONFLICT;
        v.join = false;
        snprintf(v.message, sizeof(v.message),
                 "several announcements claim cluster ID %s with different URLs or CA hashes; "
                 "not joining until they agree",
                 r->id);
    }
    want = desired_status(c, p, &v, conflict);
    have = json_object_get(json_object_get(r->fc, "status"), "discovery");
    if (want && (!status_same(have, want) || !json_object_get(have, "lastSeen"))) {
        if (v.trust == DISC_TRUST_MISMATCH || v.trust == DISC_TRUST_CONFLICT) {
            log_warn(DISC_MOD, "cluster %s (ForeignCluster %s): %s", r->id, r->fc_name, v.message);
            if (v.trust == DISC_TRUST_MISMATCH)
                disc_count_event("ca-hash-mismatch");
        }
        send_patch(r, "status", status_patch(r->fc, want), "update the status of");
        return;
    }
    json_decref(want);
    if (v.join && managed && !peered &&
        disc_trust_join(r->id, r->fc_name, kapi_obj_uid(r->fc), p->a.url, &v, p->a.ca_hash,
                        after_join, NULL) == 0) {
        if (v.tofu)
            log_warn(DISC_MOD,
                     "WARNING: joining cluster %s at %s WITHOUT an operator-supplied CA hash "
                     "(autojoinUntrusted): its CA is trusted on first use; anyone on the network "
                     "path could have announced it",
                     r->id, p->a.url);
        else
            log_info(DISC_MOD,
                     "joining cluster %s at %s: autojoin, credentials and CA hash supplied by the "
                     "operator",
                     r->id, p->a.url);
        disc_count_event("autojoin");
    }
    rec_end(r, -1);
}

static void absent(struct rec *r, struct disc_cand *c)
{
    const char *type, *sd;
    json_t *have;
    bool deletable = false;
    int64_t after;

    if (!r->fc) {
        if (c)
            cand_free(c);
        rec_end(r, -1);
        return;
    }
    snprintf(r->fc_name, sizeof(r->fc_name), "%s", kapi_obj_name(r->fc));
    type = jsn_label(r->fc, PEER_LABEL_DISC_TYPE);
    have = json_object_get(json_object_get(r->fc, "status"), "discovery");
    if (!fc_managed(r->fc)) {
        /* Manual or IncomingPeering: never ours to delete; the status says it is not announced. */
        if (c)
            cand_free(c);
        if (json_is_object(have) && json_is_true(json_object_get(have, "announced"))) {
            json_t *want = json_deep_copy(have);

            json_object_set_new(want, "announced", json_false());
            json_object_set_new(want, "message", json_string("no longer announced"));
            send_patch(r, "status", status_patch(r->fc, want), "update the status of");
            return;
        }
        rec_end(r, -1);
        return;
    }
    if (type && strcmp(type, DISC_LABEL_TYPE_LAN) == 0) {
        after = disc_lan_sweep_after();
        deletable = (c && c->lan_removed) || (after > 0 && now_ms() >= after);
        if (!deletable && after > 0) {
            rec_end(r, (int)(after - now_ms() + 100));
            return;
        }
    } else if (type && strcmp(type, DISC_LABEL_TYPE_WAN) == 0) {
        sd = fc_search_domain(r->fc);
        deletable = sd && disc_wan_known_absent(sd, r->id);
    }
    if (!deletable) {
        rec_end(r, -1);
        return;
    }
    if (c)
        cand_free(c);
    if (fc_peered(r->fc)) {
        if (json_is_object(have) && json_is_true(json_object_get(have, "announced"))) {
            json_t *want = json_deep_copy(have);

            json_object_set_new(want, "announced", json_false());
            json_object_set_new(want, "message",
                                json_string("no longer announced; kept because it is peered (the "
                                            "peering's own health decides)"));
            log_info(DISC_MOD, "cluster %s is no longer announced; ForeignCluster %s kept (peered)",
                     r->id, r->fc_name);
            send_patch(r, "status", status_patch(r->fc, want), "update the status of");
            return;
        }
        rec_end(r, -1);
        return;
    }
    log_info(DISC_MOD, "cluster %s is no longer announced (%s): deleting ForeignCluster %s", r->id,
             type, r->fc_name);
    disc_count_event("fc-deleted");
    r->what = "delete";
    r->ch.next = after_write;
    {
        struct kapi_delete_opts o = {.precondition_uid = kapi_obj_uid(r->fc),
                                     .grace_period_seconds = -1};

        if (kapi_delete(agent_kube(st.a), &peer_res_foreignclusters, NULL, r->fc_name, &o,
                        ctl_call_cb, r) < 0)
            rec_end(r, RETRY_MS);
    }
}

static void reconcile(struct wq_queue *q, const char *key, void *data)
{
    struct disc_cand *c;
    struct rec *r;
    const char *own = identity_cluster_id(st.a);

    (void)data;
    if (!st.running || !inf_synced(st.fcs)) {
        if (st.running)
            wq_add_after(q, key, 500);
        wq_done(q, key);
        return;
    }
    c = disc_cand_get(key);
    if (own && strcmp(own, key) == 0) {
        if (c)
            cand_free(c);
        wq_done(q, key);
        return;
    }
    r = x_calloc(1, sizeof(*r));
    if (!r) {
        wq_add_after(q, key, RETRY_MS);
        wq_done(q, key);
        return;
    }
    snprintf(r->id, sizeof(r->id), "%s", key);
    r->fc = find_fc(key);
    if (r->fc && json_object_get(json_object_get(r->fc, "metadata"), "deletionTimestamp")) {
        rec_end(r, -1); /* going: the informer tells us when it is gone */
        return;
    }
    if (c && c->nsrc > 0)
        present(r, c);
    else
        absent(r, c);
}

/* ---- informer handlers -------------------------------------------------------------------------
 */

static void on_fc(struct inf_informer *inf, json_t *obj, void *data)
{
    const char *id = fc_id(obj);

    (void)inf, (void)data;
    if (id && (fc_managed(obj) || disc_cand_get(id) ||
               json_object_get(json_object_get(obj, "status"), "discovery")))
        disc_enqueue(id);
}

static void on_fc_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_fc(inf, new_obj, data);
}

static void on_secret(struct inf_informer *inf, json_t *obj, void *data)
{
    const char *name = kapi_obj_name(obj);

    (void)inf, (void)data;
    if (name && strncmp(name, "remote-auth-", 12) == 0 && disc_cand_get(name + 12))
        disc_enqueue(name + 12);
    if (name && strcmp(name, PEER_AUTH_TLS_SECRET) == 0)
        disc_lan_reconfigure(); /* the CA hash we announce */
}

static void on_secret_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_secret(inf, new_obj, data);
}

static void on_config(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf, (void)data;
    if (kapi_obj_name(obj) && strcmp(kapi_obj_name(obj), PEER_CLUSTER_CONFIG) == 0) {
        disc_lan_reconfigure();
        disc_enqueue_all(); /* the join policy may have changed */
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
    int64_t after, now = now_ms();

    (void)t;
    if (!st.running)
        return;
    disc_lan_tick();
    /* Once the LAN has been watched for a whole TTL, discovered ForeignClusters that were never
     * seen since are looked at (a restart while a cluster vanished). Again every TTL. */
    after = disc_lan_sweep_after();
    if (after > 0 && now >= after &&
        now - st.last_sweep_enqueue >= (int64_t)(st.cfg.ttl ? st.cfg.ttl : 1) * 1000) {
        st.last_sweep_enqueue = now;
        disc_enqueue_all();
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
    struct wq_options qo = {.max_concurrent = 4,
                            .base_delay_ms = 200,
                            .max_delay_ms = 30000,
                            .max_keys = DISC_MAX_LIMIT * 2};
    int r;

    memset(&st, 0, sizeof(st));
    st.a = a;
    st.cfg.ttl = DISC_DEFAULT_TTL;
    st.cfg.max_clusters = DISC_DEFAULT_MAX;
    st.cands = x_calloc(DISC_MAX_LIMIT, sizeof(*st.cands));
    if (!st.cands)
        return -ENOMEM;
    r = agent_informer(a, &peer_res_foreignclusters, NULL, NULL, 0, &fh, NULL, &st.fcs);
    if (r == 0)
        r = agent_informer(a, &kapi_secrets, agent_namespace(a), NULL, 0, &sh, NULL, &st.secrets);
    if (r == 0)
        r = agent_informer(a, &peer_res_clusterconfigs, NULL, NULL, 0, &ch, NULL, &st.config);
    if (r == 0)
        r = agent_informer(a, &peer_res_searchdomains, NULL, NULL, 0, NULL, NULL, &st.sds);
    if (r == 0)
        r = agent_queue(a, "discovery", &qo, reconcile, NULL, &st.q);
    if (r == 0)
        r = metrics_init(a);
    if (r == 0)
        r = disc_lan_init(a);
    if (r == 0)
        r = disc_wan_init(a);
    return r;
}

int disc_start(struct agent *a)
{
    st.running = true;
    st.sweep = ktimer_new(agent_loop(a), NULL);
    if (!st.sweep)
        return -ENOMEM;
    uv_timer_start(st.sweep, on_sweep, SWEEP_MS, SWEEP_MS);
    disc_lan_start();
    disc_wan_start();
    return 0;
}

void disc_stop(struct agent *a)
{
    (void)a;
    if (!st.running)
        return;
    st.running = false;
    ktimer_free(st.sweep);
    st.sweep = NULL;
    disc_wan_stop();
    disc_lan_stop(); /* goodbye packets */
}

void disc_fini(struct agent *a)
{
    disc_stop(a);
    disc_wan_fini();
    disc_trust_fini();
    while (st.ncands > 0)
        cand_free(st.cands[st.ncands - 1]);
    x_free(st.cands);
    st.cands = NULL;
    st.q = NULL;
}

struct disc_lan_config *disc__config_mut(void)
{
    return &st.cfg;
}
