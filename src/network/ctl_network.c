/* network: the NetworkConfig exchange and the pod-CIDR remapping; see network.h and
 * docs/advertisement.md. Keys of the work queue are peer cluster IDs. */
#include "network/network.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent/identity.h"
#include "agent/peers.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "kube/backoff.h"
#include "agent/ctl.h"
#include "peering/objects.h"
#include "peering/identity.h"
#include "peering/objects.h"
#include "peering/resources.h"

#define MOD            "network"
#define OWNER          "network"
#define RETRY_MS       1000
#define WAIT_MS        300
#define REPUBLISH_MS   600000
#define MAX_PEERS      1024
#define MAX_SUBSCRIBER 4
#define FIELD_MANAGER  "cliqo-network"
#define NODES_DELAY_MS 500

struct npeer {
    char id[64];
    struct pu_unit *unit;
    enum pu_role role;
    char remote_ns[64];
    struct pu_inf *watch;
    char published[CIDR_STR_MAX + 80]; /* "<cidr>@<namespace>" last applied on the peer */
    uint64_t published_ms;
    struct net_peer_state state;
    struct npeer *next;
};

static struct {
    struct agent *a;
    struct inf_informer *ncs, *fcs, *nodes, *config;
    struct wq_queue *q;
    struct ipam *ipam;
    bool restored, running, cfg_seen;
    char own_cidr[CIDR_STR_MAX];
    unsigned min_prefix4, min_prefix6; /* liqonetConfig.peerPodCIDRMinPrefix{V4,V6} */
    char cfg_sig[2048];
    struct npeer *peers;
    size_t npeers;
    struct {
        net_changed_fn fn;
        void *data;
    } subs[MAX_SUBSCRIBER];
    uv_timer_t *nodes_timer;
} st;

struct rec {
    struct ctl_call_chain ch; /* first */
    char key[64];
    struct npeer *p;
    json_t *fc;
};

/* ---- peers
 * --------------------------------------------------------------------------------------- */

static struct npeer *peer_find(const char *id)
{
    for (struct npeer *p = st.peers; p; p = p->next)
        if (strcmp(p->id, id) == 0)
            return p;
    return NULL;
}

static struct npeer *peer_ensure(const char *id)
{
    struct npeer *p = peer_find(id);

    if (p || st.npeers >= MAX_PEERS)
        return p;
    p = x_calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    snprintf(p->id, sizeof(p->id), "%s", id);
    p->next = st.peers;
    st.peers = p;
    st.npeers++;
    return p;
}

static void peer_detach(struct npeer *p)
{
    pu_informer_close(p->watch);
    p->watch = NULL;
    if (p->unit)
        pu_release(p->unit, OWNER);
    p->unit = NULL;
    p->remote_ns[0] = '\0';
    p->published[0] = '\0';
}

static void peer_free(struct npeer *p)
{
    for (struct npeer **pp = &st.peers; *pp; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            st.npeers--;
            break;
        }
    }
    peer_detach(p);
    x_free(p);
}

int net_peer_state(const char *id, struct net_peer_state *ret)
{
    struct npeer *p = id ? peer_find(id) : NULL;

    if (!p)
        return -ENOENT;
    *ret = p->state;
    return 0;
}

int net_subscribe(net_changed_fn fn, void *data)
{
    for (int i = 0; i < MAX_SUBSCRIBER; i++) {
        if (!st.subs[i].fn) {
            st.subs[i].fn = fn;
            st.subs[i].data = data;
            return 0;
        }
    }
    return -ENOSPC;
}

static void set_state(struct npeer *p, const struct net_peer_state *s)
{
    if (memcmp(&p->state, s, sizeof(*s)) == 0)
        return;
    if (s->settled && !p->state.settled)
        log_info(MOD,
                 "peer %s: remapping settled (its pods %s seen here as %s; ours seen there as %s)",
                 p->id, s->remote_cidr, s->remote_mapped, s->local_mapped);
    p->state = *s;
    for (int i = 0; i < MAX_SUBSCRIBER; i++)
        if (st.subs[i].fn)
            st.subs[i].fn(p->id, st.subs[i].data);
}

static void enqueue_all(void)
{
    for (struct npeer *p = st.peers; p; p = p->next)
        if (st.q)
            wq_add(st.q, p->id);
}

/* ---- this cluster's CIDRs and the IPAM's configuration ----------------------------------------
 */

struct covering {
    struct cidr list[256];
    size_t n;
    bool overflow;
};

static void node_cidr_visit(json_t *node, void *data)
{
    struct covering *cv = data;
    const json_t *labels = json_object_get(json_object_get(node, "metadata"), "labels");
    const char *t1 = json_string_value(json_object_get(labels, PEER_LABEL_TYPE));
    const char *pc = json_string_value(json_object_get(json_object_get(node, "spec"), "podCIDR"));
    struct cidr c;

    if ((t1 && strcmp(t1, PEER_VIRTUAL_NODE) == 0) || !pc || cidr_parse(pc, &c) < 0 ||
        c.family != 4)
        return;
    if (cv->n >= sizeof(cv->list) / sizeof(cv->list[0])) {
        /* Enough to cover: fold what we have into one and go on. */
        struct cidr cov;

        if (cidr_covering(cv->list, cv->n, &cov) == 0) {
            cv->list[0] = cov;
            cv->n = 1;
        } else {
            cv->overflow = true;
            return;
        }
    }
    cv->list[cv->n++] = c;
}

/* This cluster's pod CIDR: liqonetConfig.podCIDR, else the smallest CIDR covering the physical
 * nodes' spec.podCIDR. Returns 0 (ret filled) or -ENOENT. */
static int own_pod_cidr(const json_t *ln, struct cidr *ret)
{
    const char *pc = json_string_value(json_object_get(ln, "podCIDR"));
    struct covering cv;

    if (pc && cidr_parse(pc, ret) == 0)
        return 0;
    memset(&cv, 0, sizeof(cv));
    inf_foreach(st.nodes, node_cidr_visit, &cv);
    if (cv.n == 0 || cv.overflow)
        return -ENOENT;
    return cidr_covering(cv.list, cv.n, ret);
}

static void reserve_one(const char *text, const char *what)
{
    struct cidr c;
    int r;

    if (!text)
        return;
    if (cidr_parse(text, &c) < 0) {
        log_warn(MOD, "ClusterConfig: %s '%s' is not a valid CIDR, ignoring", what, text);
        return;
    }
    r = ipam_reserve(st.ipam, &c, what);
    if (r < 0)
        log_warn(MOD, "cannot reserve %s %s: %s", what, text, strerror(-r));
}

/* An integer of liqonetConfig between 0 and max, else the default. */
static unsigned config_prefix(const json_t *ln, const char *key, unsigned def, unsigned max)
{
    const json_t *v = json_object_get(ln, key);

    if (!json_is_integer(v))
        return def;
    if (json_integer_value(v) < 0 || json_integer_value(v) > (json_int_t)max) {
        log_warn(MOD, "ClusterConfig: liqonetConfig.%s out of range; using %u", key, def);
        return def;
    }
    return (unsigned)json_integer_value(v);
}

/* Reads the configuration into the IPAM; enqueues every peer when something changed. */
static void apply_config(void)
{
    json_t *cc = inf_get(st.config, NULL, PEER_CLUSTER_CONFIG);
    const json_t *ln = json_object_get(json_object_get(cc, "spec"), "liqonetConfig");
    struct cidr own, pools[IPAM_MAX_POOLS];
    size_t npools = 0, i;
    json_t *v;
    char sig[sizeof(st.cfg_sig)], ownbuf[CIDR_STR_MAX] = "";
    char *dump = ln ? json_dumps(ln, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    const char *ids[64];
    size_t nconf;

    if (own_pod_cidr(ln, &own) == 0)
        cidr_format(&own, ownbuf, sizeof(ownbuf));
    snprintf(sig, sizeof(sig), "%s|%s", ownbuf, dump ? dump : "");
    x_free(dump);
    if (st.cfg_seen && strcmp(sig, st.cfg_sig) == 0) {
        json_decref(cc);
        return;
    }
    st.cfg_seen = true;
    snprintf(st.cfg_sig, sizeof(st.cfg_sig), "%s", sig);
    if (strcmp(ownbuf, st.own_cidr) != 0)
        log_info(MOD, "this cluster's pod CIDR: %s", *ownbuf ? ownbuf : "unknown");
    snprintf(st.own_cidr, sizeof(st.own_cidr), "%s", ownbuf);
    st.min_prefix4 = config_prefix(ln, "peerPodCIDRMinPrefixV4", IPAM_DEFAULT_MIN_PREFIX4, 32);
    st.min_prefix6 = config_prefix(ln, "peerPodCIDRMinPrefixV6", IPAM_DEFAULT_MIN_PREFIX6, 128);
    ipam_clear_reserved(st.ipam);
    if (*ownbuf)
        ipam_reserve(st.ipam, &own, "the pod CIDR");
    reserve_one(json_string_value(json_object_get(ln, "serviceCIDR")), "the service CIDR");
    json_array_foreach(json_object_get(ln, "reservedSubnets"), i, v)
        reserve_one(json_string_value(v), "a reserved subnet");
    json_array_foreach(json_object_get(ln, "remappingPool"), i, v)
    {
        const char *t = json_string_value(v);

        if (npools < IPAM_MAX_POOLS && t && cidr_parse(t, &pools[npools]) == 0)
            npools++;
        else
            log_warn(MOD, "ClusterConfig: remapping pool entry '%s' ignored", t ? t : "?");
    }
    if (npools == 0)
        cidr_parse("10.0.0.0/8", &pools[npools++]);
    ipam_set_pool(st.ipam, pools, npools);
    nconf = ipam_conflicts(st.ipam, ids, sizeof(ids) / sizeof(ids[0]));
    for (i = 0; i < nconf && i < sizeof(ids) / sizeof(ids[0]); i++) {
        log_warn(MOD, "peer %s: its mapping now overlaps a reserved range; remapping it", ids[i]);
        ipam_release_peer(st.ipam, ids[i]);
    }
    json_decref(cc);
    enqueue_all();
}

/* After a restart: every mapping recorded in a NetworkConfig status, before any new one. */
static void restore_visit(json_t *nc, void *data)
{
    const char *name = kapi_obj_name(nc);
    const char *pc = json_string_value(json_object_get(json_object_get(nc, "spec"), "podCIDR"));
    const char *nat =
        json_string_value(json_object_get(json_object_get(nc, "status"), "podCIDRNAT"));
    struct cidr remote, mapped;
    const char *id;
    int r;

    (void)data;
    if (!name || strncmp(name, PEER_NETCFG_PREFIX, strlen(PEER_NETCFG_PREFIX)) != 0 || !pc ||
        !nat || !*nat)
        return;
    id = name + strlen(PEER_NETCFG_PREFIX);
    if (!peer_cluster_id_valid(id) || cidr_parse(pc, &remote) < 0)
        return;
    if (strcmp(nat, "None") == 0)
        mapped = remote;
    else if (cidr_parse(nat, &mapped) < 0)
        return;
    r = ipam_restore(st.ipam, id, &remote, &mapped);
    if (r < 0)
        log_warn(MOD, "peer %s: cannot restore its mapping %s (%s); it will be mapped again", id,
                 nat, strerror(-r));
    if (peer_ensure(id) && st.q)
        wq_add(st.q, id);
}

static bool try_restore(void)
{
    if (st.restored)
        return true;
    if (!inf_synced(st.ncs) || !inf_synced(st.nodes) || !inf_synced(st.config) ||
        !inf_synced(st.fcs))
        return false;
    apply_config();
    inf_foreach(st.ncs, restore_visit, NULL);
    st.restored = true;
    log_info(MOD, "restored %zu pod-CIDR mappings from NetworkConfig statuses",
             ipam_peer_count(st.ipam));
    return true;
}

/* ---- reconcile
 * ----------------------------------------------------------------------------------- */

static void rec_end(struct rec *r, int requeue_ms)
{
    if (st.q) {
        if (requeue_ms >= 0)
            wq_add_after(st.q, r->key, (uint64_t)requeue_ms);
        wq_done(st.q, r->key);
    }
    json_decref(r->fc);
    ctl_call_reset(&r->ch.last);
    x_free(r);
}

static const char *tenant_local(const json_t *fc)
{
    return json_string_value(json_object_get(
        json_object_get(json_object_get(fc, "status"), "tenantNamespace"), "local"));
}

static bool fc_peered(const json_t *fc)
{
    return fc && (strcmp(peer_fc_condition(fc, "OutgoingPeering"), "Established") == 0 ||
                  strcmp(peer_fc_condition(fc, "IncomingPeering"), "Established") == 0);
}

static void sender(struct rec *r, struct net_peer_state *s);

static void after_status(void *owner)
{
    struct rec *r = owner;
    struct net_peer_state s = r->p->state;

    if (r->ch.last.err < 0 && r->ch.last.err != -ENOENT)
        log_warn(MOD, "peer %s: cannot write its NetworkConfig's status: %s", r->key,
                 r->ch.last.message);
    sender(r, &s);
}

static void on_watch(struct inf_informer *inf, json_t *obj, void *data);

static void after_publish(void *owner)
{
    struct rec *r = owner;

    if (r->ch.last.err < 0) {
        log_warn(MOD, "peer %s: cannot publish our NetworkConfig: %s", r->key, r->ch.last.message);
        r->p->published[0] = '\0';
        rec_end(r, RETRY_MS);
        return;
    }
    log_info(MOD, "peer %s: published our pod CIDR %s (namespace %s)", r->key, st.own_cidr,
             r->p->remote_ns);
    rec_end(r, 0);
}

/* Ours, on the peer: publish it when needed, then read how the peer mapped us. */
static void sender(struct rec *r, struct net_peer_state *s)
{
    struct npeer *p = r->p;
    enum pu_role role;
    struct kapi_client *c = NULL;
    const char *cred_ns = NULL;
    char ns[sizeof(p->remote_ns)], name[128], pub[sizeof(p->published)];
    json_t *nc, *mine;
    int rc;

    if (!fc_peered(r->fc)) {
        peer_detach(p);
        s->local_mapped[0] = '\0';
        snprintf(s->message, sizeof(s->message), "not peered");
        s->settled = false;
        set_state(p, s);
        rec_end(r, -1);
        return;
    }
    if (!p->unit && (rc = pu_acquire(agent_peers(st.a), p->id, OWNER, &p->unit)) < 0) {
        rec_end(r, RETRY_MS);
        return;
    }
    for (role = PU_PEERING; role <= PU_REQUESTER; role++) {
        c = pu_client(p->unit, role);
        cred_ns = pu_namespace(p->unit, role);
        if (c && cred_ns)
            break;
    }
    if (!c || !cred_ns || !st.own_cidr[0]) {
        snprintf(s->message, sizeof(s->message), "%s",
                 !st.own_cidr[0] ? "this cluster's pod CIDR is unknown (liqonetConfig.podCIDR, "
                                   "or nodes' spec.podCIDR)"
                                 : "no credential for the peer yet");
        s->settled = false;
        set_state(p, s);
        rec_end(r, WAIT_MS * 3);
        return;
    }
    /* Our own copy (a namespace name fits): cred_ns lives in the credential, which a call that
     * runs callbacks (closing an informer, starting one, sending a request) may replace. */
    snprintf(ns, sizeof(ns), "%s", cred_ns);
    snprintf(name, sizeof(name), PEER_NETCFG_PREFIX "%s", identity_cluster_id(st.a));
    if (!p->watch || p->role != role || strcmp(p->remote_ns, ns) != 0) {
        struct inf_options o = {.resource = &peer_res_networkconfigs, .namespace_ = ns};
        struct inf_handlers h = {.on_add = on_watch, .on_delete = on_watch};
        char fs[192];

        pu_informer_close(p->watch);
        p->watch = NULL;
        snprintf(fs, sizeof(fs), "metadata.name=%s", name);
        o.field_selector = fs;
        p->role = role;
        snprintf(p->remote_ns, sizeof(p->remote_ns), "%s", ns);
        if (pu_informer(p->unit, role, &o, &h, p, &p->watch) < 0) {
            rec_end(r, RETRY_MS);
            return;
        }
    }
    if (!inf_synced(pu_inf_get(p->watch))) {
        rec_end(r, WAIT_MS);
        return;
    }
    mine = inf_get(pu_inf_get(p->watch), ns, name);
    snprintf(pub, sizeof(pub), "%s@%s", st.own_cidr, ns);
    if (!mine || strcmp(pub, p->published) != 0 ||
        uv_now(agent_loop(st.a)) - p->published_ms > REPUBLISH_MS) {
        json_decref(mine);
        nc = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s,s:s}}", "apiVersion",
                       "net.liqo.io/v1alpha1", "kind", "NetworkConfig", "metadata", "name", name,
                       "namespace", ns, "labels", PEER_LABEL_CLUSTER_ID, identity_cluster_id(st.a),
                       "spec", "clusterID", p->id, "podCIDR", st.own_cidr);
        snprintf(p->published, sizeof(p->published), "%s", pub);
        p->published_ms = uv_now(agent_loop(st.a));
        r->ch.next = after_publish;
        if (!nc || kapi_apply(c, &peer_res_networkconfigs, ns, name, NULL, nc, FIELD_MANAGER, true,
                              ctl_call_cb, r) < 0) {
            p->published[0] = '\0';
            rec_end(r, RETRY_MS);
        }
        json_decref(nc);
        return;
    }
    {
        const char *nat =
            json_string_value(json_object_get(json_object_get(mine, "status"), "podCIDRNAT"));
        struct cidr mc;

        s->local_mapped[0] = '\0';
        if (nat && strcmp(nat, "None") == 0)
            snprintf(s->local_mapped, sizeof(s->local_mapped), "%s", st.own_cidr);
        else if (nat && cidr_parse(nat, &mc) == 0)
            cidr_format(&mc, s->local_mapped, sizeof(s->local_mapped));
    }
    json_decref(mine);
    s->settled = s->remote_mapped[0] && s->local_mapped[0];
    if (!s->settled)
        snprintf(s->message, sizeof(s->message), "%s",
                 !s->remote_mapped[0] ? "waiting for the peer's NetworkConfig"
                                      : "waiting for the peer to map our pod CIDR");
    else
        s->message[0] = '\0';
    set_state(p, s);
    rec_end(r, s->settled ? (int)REPUBLISH_MS : WAIT_MS * 3);
}

/* Theirs, here: map their pod CIDR and record the mapping in the object's status. */
static void receiver(struct rec *r)
{
    struct npeer *p = r->p;
    struct net_peer_state s = p->state;
    const char *tns = tenant_local(r->fc);
    char name[128], want_nat[CIDR_STR_MAX], *body = NULL;
    json_t *nc = NULL, *patch;
    const char *pc, *to, *nat, *natenabled;
    struct cidr remote, mapped;
    bool remapped;
    int rc;

    snprintf(name, sizeof(name), PEER_NETCFG_PREFIX "%s", p->id);
    if (tns)
        nc = inf_get(st.ncs, tns, name);
    if (!nc || json_object_get(json_object_get(nc, "metadata"), "deletionTimestamp")) {
        if (ipam_lookup(st.ipam, p->id, NULL, NULL) == 0) {
            log_info(MOD, "peer %s: its NetworkConfig is gone; forgetting its mapping", p->id);
            ipam_release_peer(st.ipam, p->id);
        }
        s.remote_cidr[0] = s.remote_mapped[0] = '\0';
        json_decref(nc);
        sender(r, &s);
        return;
    }
    pc = json_string_value(json_object_get(json_object_get(nc, "spec"), "podCIDR"));
    to = json_string_value(json_object_get(json_object_get(nc, "spec"), "clusterID"));
    if (!to || strcmp(to, identity_cluster_id(st.a)) != 0 || !pc || cidr_parse(pc, &remote) < 0) {
        snprintf(s.message, sizeof(s.message),
                 "the peer's NetworkConfig is invalid (clusterID must be ours, podCIDR a CIDR)");
        log_warn(MOD, "peer %s: %s", p->id, s.message);
        s.remote_cidr[0] = s.remote_mapped[0] = '\0';
        json_decref(nc);
        sender(r, &s);
        return;
    }
    cidr_format(&remote, s.remote_cidr, sizeof(s.remote_cidr));
    if (!cidr_size_allowed(&remote, st.min_prefix4, st.min_prefix6)) {
        snprintf(s.message, sizeof(s.message),
                 "the peer's pod CIDR %s is larger than this cluster accepts (prefix at least /%u: "
                 "liqonetConfig.peerPodCIDRMinPrefixV%c)",
                 s.remote_cidr, remote.family == 4 ? st.min_prefix4 : st.min_prefix6,
                 remote.family == 4 ? '4' : '6');
        log_warn(MOD, "peer %s: %s", p->id, s.message);
        if (ipam_lookup(st.ipam, p->id, NULL, NULL) == 0)
            ipam_release_peer(st.ipam, p->id);
        s.remote_mapped[0] = '\0';
        json_decref(nc);
        sender(r, &s);
        return;
    }
    rc = ipam_map_peer(st.ipam, p->id, &remote, &mapped, &remapped);
    if (rc < 0) {
        snprintf(s.message, sizeof(s.message),
                 "no free block of the size of %s in the remapping pool (%s)", s.remote_cidr,
                 strerror(-rc));
        log_error(MOD, "peer %s: %s", p->id, s.message);
        s.remote_mapped[0] = '\0';
        json_decref(nc);
        sender(r, &s);
        return;
    }
    cidr_format(&mapped, s.remote_mapped, sizeof(s.remote_mapped));
    snprintf(want_nat, sizeof(want_nat), "%s", remapped ? s.remote_mapped : "None");
    nat = json_string_value(json_object_get(json_object_get(nc, "status"), "podCIDRNAT"));
    natenabled = json_string_value(json_object_get(json_object_get(nc, "status"), "natEnabled"));
    if (nat && strcmp(nat, want_nat) == 0 && natenabled &&
        strcmp(natenabled, remapped ? "true" : "false") == 0) {
        json_decref(nc);
        sender(r, &s);
        return;
    }
    if (remapped)
        log_info(MOD, "peer %s: its pod CIDR %s overlaps ours; remapped to %s", p->id,
                 s.remote_cidr, s.remote_mapped);
    else
        log_info(MOD, "peer %s: its pod CIDR %s is free here; no remapping", p->id, s.remote_cidr);
    patch = json_pack("{s:{s:s},s:{s:s,s:s}}", "metadata", "resourceVersion", kapi_obj_rv(nc),
                      "status", "podCIDRNAT", want_nat, "natEnabled", remapped ? "true" : "false");
    body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    p->state = s; /* sender() continues from here after the write */
    r->ch.next = after_status;
    if (!body || kapi_patch(agent_kube(st.a), &peer_res_networkconfigs, tns, name, "status",
                            KAPI_PATCH_MERGE, body, ctl_call_cb, r) < 0)
        rec_end(r, RETRY_MS);
    x_free(body);
    json_decref(nc);
}

static void reconcile(struct wq_queue *q, const char *key, void *data)
{
    struct rec *r;
    json_t *fc;

    (void)data;
    if (!st.running || !identity_cluster_id(st.a)) {
        if (st.running)
            wq_add_after(q, key, WAIT_MS);
        wq_done(q, key);
        return;
    }
    if (!try_restore()) {
        wq_add_after(q, key, WAIT_MS);
        wq_done(q, key);
        return;
    }
    fc = peer_fc_find(st.fcs, key);
    r = x_calloc(1, sizeof(*r));
    if (!r) {
        json_decref(fc);
        wq_add_after(q, key, RETRY_MS);
        wq_done(q, key);
        return;
    }
    snprintf(r->key, sizeof(r->key), "%s", key);
    r->fc = fc;
    r->p = peer_ensure(key);
    if (!r->p) {
        rec_end(r, RETRY_MS);
        return;
    }
    if (!r->fc && ipam_lookup(st.ipam, key, NULL, NULL) < 0) {
        /* Forgotten on both sides: nothing left to keep. */
        struct net_peer_state s;

        memset(&s, 0, sizeof(s));
        set_state(r->p, &s);
        peer_free(r->p);
        r->p = NULL;
        rec_end(r, -1);
        return;
    }
    receiver(r);
}

/* ---- handlers
 * ------------------------------------------------------------------------------------ */

static void enqueue(const char *id)
{
    if (st.q && id && peer_cluster_id_valid(id) && peer_ensure(id))
        wq_add(st.q, id);
}

static void on_nc(struct inf_informer *inf, json_t *obj, void *data)
{
    const char *name = kapi_obj_name(obj);

    (void)inf;
    (void)data;
    if (name && strncmp(name, PEER_NETCFG_PREFIX, strlen(PEER_NETCFG_PREFIX)) == 0)
        enqueue(name + strlen(PEER_NETCFG_PREFIX));
}

static void on_nc_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_nc(inf, new_obj, data);
}

static void on_fc(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    (void)data;
    enqueue(json_string_value(json_object_get(
        json_object_get(json_object_get(obj, "spec"), "clusterIdentity"), "clusterID")));
}

static void on_fc_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_fc(inf, new_obj, data);
}

static void on_watch(struct inf_informer *inf, json_t *obj, void *data)
{
    struct npeer *p = data;

    (void)inf;
    (void)obj;
    if (st.q)
        wq_add(st.q, p->id);
}

static void config_changed(uv_timer_t *t)
{
    (void)t;
    if (st.restored)
        apply_config();
}

static void on_config_or_node(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    (void)obj;
    (void)data;
    if (st.nodes_timer && !uv_is_active((uv_handle_t *)st.nodes_timer))
        uv_timer_start(st.nodes_timer, config_changed, NODES_DELAY_MS, 0);
}

static void on_config_or_node_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj,
                                     void *data)
{
    (void)old_obj;
    on_config_or_node(inf, new_obj, data);
}

/* ---- module
 * -------------------------------------------------------------------------------------- */

int net_init(struct agent *a)
{
    struct inf_handlers nh = {.on_add = on_nc, .on_update = on_nc_update, .on_delete = on_nc};
    struct inf_handlers fh = {.on_add = on_fc, .on_update = on_fc_update, .on_delete = on_fc};
    struct inf_handlers ch = {.on_add = on_config_or_node,
                              .on_update = on_config_or_node_update,
                              .on_delete = on_config_or_node};
    struct wq_options qo = {.max_concurrent = 32, .base_delay_ms = 500, .max_delay_ms = 60000};
    int r;

    memset(&st, 0, sizeof(st));
    st.a = a;
    st.min_prefix4 = IPAM_DEFAULT_MIN_PREFIX4;
    st.min_prefix6 = IPAM_DEFAULT_MIN_PREFIX6;
    r = ipam_new(&st.ipam);
    if (r == 0)
        r = agent_informer(a, &peer_res_networkconfigs, NULL, NULL, 0, &nh, NULL, &st.ncs);
    if (r == 0)
        r = agent_informer(a, &peer_res_foreignclusters, NULL, NULL, 0, &fh, NULL, &st.fcs);
    if (r == 0)
        r = agent_informer(a, &kapi_nodes, NULL, NULL, 0, &ch, NULL, &st.nodes);
    if (r == 0)
        r = agent_informer(a, &peer_res_clusterconfigs, NULL, NULL, 0, &ch, NULL, &st.config);
    if (r == 0)
        r = agent_queue(a, "network", &qo, reconcile, NULL, &st.q);
    if (r == 0 && !(st.nodes_timer = ktimer_new(agent_loop(a), NULL)))
        r = -ENOMEM;
    return r;
}

int net_start(struct agent *a)
{
    (void)a;
    st.running = true;
    return 0;
}

void net_stop(struct agent *a)
{
    (void)a;
    st.running = false;
    if (st.nodes_timer)
        uv_timer_stop(st.nodes_timer);
}

void net_fini(struct agent *a)
{
    (void)a;
    while (st.peers)
        peer_free(st.peers);
    ktimer_free(st.nodes_timer);
    st.nodes_timer = NULL;
    st.ipam = ipam_free(st.ipam);
    st.q = NULL;
}

bool net_ready(struct agent *a)
{
    (void)a;
    return true;
}
