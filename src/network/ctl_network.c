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
#include "network/dpobj.h"
#include "network/nodecidrs.h"
#include "network/peernet.h"
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
#define FIELD_MANAGER  "cliqo-network"
#define NODES_DELAY_MS 500

struct net;

struct npeer {
    struct net *n; /* the module's state, for the peer's own informer */
    char id[64];
    struct pu_unit *unit;
    enum pu_role role;
    char remote_ns[64];
    struct pu_inf *watch;
    char published[CIDR_STR_MAX + 80]; /* "<cidr>@<namespace>" last applied on the peer */
    uint64_t published_ms;
    /* Our TunnelEndpoint there: "<key> <endpoint> <mtu>@<namespace>" last applied; tep_removed once
     * it was deleted there (networking disabled). */
    char tep_published[WG_KEY_B64_LEN + WG_ENDPOINT_MAX + 96];
    uint64_t tep_ms;
    bool tep_removed;
    struct agent_peer_network state;
    struct npeer *next;
};

_Static_assert(AGENT_CIDR_STR_MAX == CIDR_STR_MAX, "agent.h's CIDR size is the IPAM's");

/* The module's state (agent_module_data "network"). */
struct net {
    struct ctl_module mod; /* first */
    struct inf_informer *ncs, *fcs, *nodes, *config;
    struct inf_informer *gwcm;   /* ConfigMaps of the agent's namespace: the gateway's record */
    char gw_bad[DPO_REASON_MAX]; /* the last reason the record was refused, said once */
    struct ipam *ipam;
    struct ncidr *node_cidrs; /* the physical nodes' pod CIDRs (own_pod_cidr) */
    bool restored, cfg_seen;
    char own_cidr[CIDR_STR_MAX];
    unsigned min_prefix4, min_prefix6; /* liqonetConfig.peerPodCIDRMinPrefix{V4,V6} */
    char cfg_sig[2048];
    struct npeer *peers;
    size_t npeers;
    uv_timer_t *nodes_timer;
};

struct rec {
    struct ctl_rec h; /* first */
    struct net *n;
    struct npeer *p;
    json_t *fc;
};

/* ---- peers
 * --------------------------------------------------------------------------------------- */

static struct npeer *peer_find(struct net *n, const char *id)
{
    for (struct npeer *p = n->peers; p; p = p->next)
        if (strcmp(p->id, id) == 0)
            return p;
    return NULL;
}

static struct npeer *peer_ensure(struct net *n, const char *id)
{
    struct npeer *p = peer_find(n, id);

    if (p || n->npeers >= MAX_PEERS)
        return p;
    p = x_calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->n = n;
    snprintf(p->id, sizeof(p->id), "%s", id);
    p->next = n->peers;
    n->peers = p;
    n->npeers++;
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
    p->tep_published[0] = '\0';
    p->tep_removed = false;
}

static void peer_free(struct npeer *p)
{
    for (struct npeer **pp = &p->n->peers; *pp; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            p->n->npeers--;
            break;
        }
    }
    peer_detach(p);
    x_free(p);
}

/* The agent's service agent_peer_network (agent.h). */
static int peer_network(struct agent *a, const char *id, struct agent_peer_network *ret)
{
    struct net *n = agent_module_data(a, MOD);
    struct npeer *p = n && id ? peer_find(n, id) : NULL;

    if (!p)
        return -ENOENT;
    *ret = p->state;
    return 0;
}

static void set_state(struct npeer *p, const struct agent_peer_network *s)
{
    if (memcmp(&p->state, s, sizeof(*s)) == 0)
        return;
    if (s->settled && !p->state.settled)
        log_info(MOD,
                 "peer %s: remapping settled (its pods %s seen here as %s; ours seen there as %s)",
                 p->id, s->remote_cidr, s->remote_mapped, s->local_mapped);
    p->state = *s;
    agent_peer_network_changed(p->n->mod.a, p->id);
}

static void enqueue_all(struct net *n)
{
    for (struct npeer *p = n->peers; p; p = p->next)
        ctl_enqueue(n->mod.ctl, p->id);
}

/* ---- this cluster's CIDRs and the IPAM's configuration ----------------------------------------
 */

/* The CIDR a node counts with in this cluster's own pod CIDR: a physical node's IPv4
 * spec.podCIDR. 0 (ret filled) or -ENOENT (a virtual node, none, IPv6, or invalid). */
static int node_cidr(const json_t *node, struct cidr *ret)
{
    const json_t *labels = json_object_get(json_object_get(node, "metadata"), "labels");
    const char *t1 = json_string_value(json_object_get(labels, PEER_LABEL_TYPE));
    const char *pc = json_string_value(json_object_get(json_object_get(node, "spec"), "podCIDR"));

    if ((t1 && strcmp(t1, PEER_VIRTUAL_NODE) == 0) || !pc || cidr_parse(pc, ret) < 0 ||
        ret->family != 4)
        return -ENOENT;
    return 0;
}

/* This cluster's pod CIDR: liqonetConfig.podCIDR, else the smallest CIDR covering the physical
 * nodes' spec.podCIDR (from the index the node events keep: nodecidrs.h). Returns 0 (ret filled)
 * or -ENOENT. */
static int own_pod_cidr(struct net *n, const json_t *ln, struct cidr *ret)
{
    const char *pc = json_string_value(json_object_get(ln, "podCIDR"));

    if (pc && cidr_parse(pc, ret) == 0)
        return 0;
    return ncidr_covering(n->node_cidrs, 4, ret);
}

static void reserve_one(struct net *n, const char *text, const char *what)
{
    struct cidr c;
    int r;

    if (!text)
        return;
    if (cidr_parse(text, &c) < 0) {
        log_warn(MOD, "ClusterConfig: %s '%s' is not a valid CIDR, ignoring", what, text);
        return;
    }
    r = ipam_reserve(n->ipam, &c, what);
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
static void apply_config(struct net *n)
{
    json_t *cc = inf_get(n->config, NULL, PEER_CLUSTER_CONFIG);
    const json_t *ln = json_object_get(json_object_get(cc, "spec"), "liqonetConfig");
    struct cidr own, pools[IPAM_MAX_POOLS];
    size_t npools = 0, i;
    json_t *v;
    char sig[sizeof(n->cfg_sig)], ownbuf[CIDR_STR_MAX] = "";
    char *dump = ln ? json_dumps(ln, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    const char *ids[64];
    size_t nconf;

    if (own_pod_cidr(n, ln, &own) == 0)
        cidr_format(&own, ownbuf, sizeof(ownbuf));
    snprintf(sig, sizeof(sig), "%s|%s", ownbuf, dump ? dump : "");
    x_free(dump);
    if (n->cfg_seen && strcmp(sig, n->cfg_sig) == 0) {
        json_decref(cc);
        return;
    }
    n->cfg_seen = true;
    snprintf(n->cfg_sig, sizeof(n->cfg_sig), "%s", sig);
    if (strcmp(ownbuf, n->own_cidr) != 0)
        log_info(MOD, "this cluster's pod CIDR: %s", *ownbuf ? ownbuf : "unknown");
    snprintf(n->own_cidr, sizeof(n->own_cidr), "%s", ownbuf);
    n->min_prefix4 = config_prefix(ln, "peerPodCIDRMinPrefixV4", IPAM_DEFAULT_MIN_PREFIX4, 32);
    n->min_prefix6 = config_prefix(ln, "peerPodCIDRMinPrefixV6", IPAM_DEFAULT_MIN_PREFIX6, 128);
    ipam_clear_reserved(n->ipam);
    if (*ownbuf)
        ipam_reserve(n->ipam, &own, "the pod CIDR");
    reserve_one(n, json_string_value(json_object_get(ln, "serviceCIDR")), "the service CIDR");
    json_array_foreach(json_object_get(ln, "reservedSubnets"), i, v)
        reserve_one(n, json_string_value(v), "a reserved subnet");
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
    ipam_set_pool(n->ipam, pools, npools);
    nconf = ipam_conflicts(n->ipam, ids, sizeof(ids) / sizeof(ids[0]));
    for (i = 0; i < nconf && i < sizeof(ids) / sizeof(ids[0]); i++) {
        log_warn(MOD, "peer %s: its mapping now overlaps a reserved range; remapping it", ids[i]);
        ipam_release_peer(n->ipam, ids[i]);
    }
    json_decref(cc);
    enqueue_all(n);
}

/* After a restart: every mapping recorded in a NetworkConfig status, before any new one. */
static void restore_visit(json_t *nc, void *data)
{
    const char *name = kapi_obj_name(nc);
    const char *pc = json_string_value(json_object_get(json_object_get(nc, "spec"), "podCIDR"));
    const char *nat =
        json_string_value(json_object_get(json_object_get(nc, "status"), "podCIDRNAT"));
    struct cidr remote, mapped;
    struct net *n = data;
    const char *id;
    int r;

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
    r = ipam_restore(n->ipam, id, &remote, &mapped);
    if (r < 0)
        log_warn(MOD, "peer %s: cannot restore its mapping %s (%s); it will be mapped again", id,
                 nat, strerror(-r));
    if (peer_ensure(n, id))
        ctl_enqueue(n->mod.ctl, id);
}

static bool try_restore(struct net *n)
{
    if (n->restored)
        return true;
    if (!inf_synced(n->ncs) || !inf_synced(n->nodes) || !inf_synced(n->config) ||
        !inf_synced(n->fcs))
        return false;
    apply_config(n);
    inf_foreach(n->ncs, restore_visit, n);
    n->restored = true;
    log_info(MOD, "restored %zu pod-CIDR mappings from NetworkConfig statuses",
             ipam_peer_count(n->ipam));
    return true;
}

/* ---- reconcile
 * ----------------------------------------------------------------------------------- */

static void rec_release(struct ctl_rec *h)
{
    json_decref(((struct rec *)h)->fc);
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

static void sender(struct rec *r, struct agent_peer_network *s);

static void after_status(void *owner)
{
    struct rec *r = owner;
    struct agent_peer_network s = r->p->state;

    if (r->h.ch.last.err < 0 && r->h.ch.last.err != -ENOENT)
        log_warn(MOD, "peer %s: cannot write its NetworkConfig's status: %s", r->h.key,
                 r->h.ch.last.message);
    sender(r, &s);
}

static void on_watch(struct inf_informer *inf, json_t *obj, void *data);
static void write_nc_status(struct rec *r, const char *tns, const char *name, const json_t *nc,
                            json_t *status, void (*next)(void *owner));

static void after_publish(void *owner)
{
    struct rec *r = owner;
    struct net *n = r->n;

    if (r->h.ch.last.err < 0) {
        log_warn(MOD, "peer %s: cannot publish our NetworkConfig: %s", r->h.key,
                 r->h.ch.last.message);
        r->p->published[0] = '\0';
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    log_info(MOD, "peer %s: published our pod CIDR %s (namespace %s)", r->h.key, n->own_cidr,
             r->p->remote_ns);
    ctl_rec_end(&r->h, CTL_NOW);
}

static void after_unpublish(void *owner)
{
    struct rec *r = owner;

    if (r->h.ch.last.err < 0 && r->h.ch.last.err != -ENOENT) {
        log_warn(MOD, "peer %s: cannot delete our NetworkConfig there: %s", r->h.key,
                 r->h.ch.last.message);
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    if (r->h.ch.last.err == 0)
        log_info(MOD,
                 "peer %s: deleted our NetworkConfig there (namespace %s): networking is "
                 "disabled",
                 r->h.key, r->p->remote_ns);
    /* Looked at again once the watch has seen it go (a second delete would only find it gone). */
    ctl_rec_end(&r->h, CTL_WAIT);
}

static void after_tep_unpublish(void *owner)
{
    struct rec *r = owner;

    if (r->h.ch.last.err < 0 && r->h.ch.last.err != -ENOENT) {
        log_warn(MOD, "peer %s: cannot delete our TunnelEndpoint there: %s", r->h.key,
                 r->h.ch.last.message);
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    if (r->h.ch.last.err == 0)
        log_info(MOD, "peer %s: deleted our TunnelEndpoint there: networking is disabled",
                 r->h.key);
    r->p->tep_removed = true;
    ctl_rec_end(&r->h, CTL_NOW);
}

static void after_tep(void *owner)
{
    struct rec *r = owner;

    if (r->h.ch.last.err < 0) {
        log_warn(MOD, "peer %s: cannot publish our TunnelEndpoint: %s", r->h.key,
                 r->h.ch.last.message);
        r->p->tep_published[0] = '\0';
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    log_info(MOD, "peer %s: published our TunnelEndpoint (namespace %s)", r->h.key,
             r->p->remote_ns);
    ctl_rec_end(&r->h, CTL_NOW);
}

static void after_local(void *owner)
{
    struct rec *r = owner;

    if (r->h.ch.last.err < 0) {
        if (r->h.ch.last.err != -ESTALE)
            log_warn(MOD, "peer %s: cannot record where it sees our pods: %s", r->h.key,
                     r->h.ch.last.message);
        ctl_rec_end(&r->h, r->h.ch.last.err == -ESTALE ? CTL_STALE : CTL_RETRY);
        return;
    }
    log_info(MOD, "peer %s: recorded for the gateway: our pods %s seen there as %s", r->h.key,
             r->n->own_cidr, r->p->state.local_mapped);
    ctl_rec_end(&r->h, CTL_NOW);
}

/* Settled: the gateway reads both directions from the peer's NetworkConfig here, so our side (our
 * pod CIDR and where the peer sees it, which only the peer's answer there says) is written to its
 * status too. Returns true when a write is in flight (it ends the record). */
static bool record_local(struct rec *r, const struct agent_peer_network *s)
{
    const char *tns = tenant_local(r->fc);
    char name[128];
    json_t *nc;
    const json_t *st;
    const char *lc, *lm;

    snprintf(name, sizeof(name), PEER_NETCFG_PREFIX "%s", r->p->id);
    nc = tns ? inf_get(r->n->ncs, tns, name) : NULL;
    if (!nc)
        return false;
    st = json_object_get(nc, "status");
    lc = json_string_value(json_object_get(st, "localPodCIDR"));
    lm = json_string_value(json_object_get(st, "localPodCIDRNAT"));
    if (lc && lm && strcmp(lc, r->n->own_cidr) == 0 && strcmp(lm, s->local_mapped) == 0) {
        json_decref(nc);
        return false;
    }
    write_nc_status(
        r, tns, name, nc,
        json_pack("{s:s,s:s}", "localPodCIDR", r->n->own_cidr, "localPodCIDRNAT", s->local_mapped),
        after_local);
    json_decref(nc);
    return true;
}

/* Our TunnelEndpoint on the peer (namespace ns, client c), from the gateway's record: published
 * when it changed or every REPUBLISH_MS. Nothing while no gateway runs (no record). Returns true
 * when a write is in flight. */
static bool publish_tep(struct rec *r, struct kapi_client *c, const char *ns)
{
    struct net *n = r->n;
    struct npeer *p = r->p;
    json_t *cm = inf_get(n->gwcm, agent_namespace(n->mod.a), DPO_GW_CONFIGMAP);
    char reason[DPO_REASON_MAX], key[WG_KEY_B64_LEN + 1], ep[WG_ENDPOINT_MAX];
    char sig[sizeof(p->tep_published)];
    struct dpo_tunnel t;
    json_t *tep;
    int rc;

    rc = cm ? dpo_gateway_parse(cm, &t, reason, sizeof(reason)) : -ENOENT;
    json_decref(cm);
    if (rc == -EINVAL && strcmp(reason, n->gw_bad) != 0) {
        log_warn(MOD, "the gateway's record is refused: %s", reason);
        snprintf(n->gw_bad, sizeof(n->gw_bad), "%s", reason);
    }
    if (rc < 0)
        return false;
    n->gw_bad[0] = '\0';
    wg_key_format(&t.pub, key);
    wg_endpoint_format(&t.endpoint, ep, sizeof(ep));
    snprintf(sig, sizeof(sig), "%s %s %u@%s", key, ep, t.mtu, ns);
    if (strcmp(sig, p->tep_published) == 0 &&
        uv_now(agent_loop(n->mod.a)) - p->tep_ms < REPUBLISH_MS)
        return false;
    tep = dpo_tep_build(identity_cluster_id(n->mod.a), p->id, ns, &t);
    if (!tep)
        return false;
    snprintf(p->tep_published, sizeof(p->tep_published), "%s", sig);
    p->tep_ms = uv_now(agent_loop(n->mod.a));
    p->tep_removed = false;
    r->h.ch.next = after_tep;
    if (kapi_apply(c, &peer_res_tunnelendpoints, ns, kapi_obj_name(tep), NULL, tep, FIELD_MANAGER,
                   true, ctl_call_cb, r) < 0) {
        p->tep_published[0] = '\0';
        ctl_rec_end(&r->h, CTL_RETRY);
    }
    json_decref(tep);
    return true;
}

/* Networking disabled: ours is taken off the peer (mine, consumed: what the watch shows of it),
 * where an earlier pass may have published it. Nothing else is written there. */
static void unpublish(struct rec *r, struct kapi_client *c, const char *ns, const char *name,
                      json_t *mine)
{
    bool gone = !mine || json_object_get(json_object_get(mine, "metadata"), "deletionTimestamp");

    json_decref(mine);
    r->p->published[0] = '\0'; /* published again at once when enabled again */
    if (!r->p->tep_removed) {
        char tep[96];

        /* our TunnelEndpoint there first (not watched: deleted once, a missing one is fine) */
        snprintf(tep, sizeof(tep), DPO_TEP_PREFIX "%s", identity_cluster_id(r->n->mod.a));
        r->p->tep_published[0] = '\0';
        r->h.ch.next = after_tep_unpublish;
        if (kapi_delete(c, &peer_res_tunnelendpoints, ns, tep, NULL, ctl_call_cb, r) < 0)
            ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    if (gone) {
        ctl_rec_end(&r->h, CTL_DONE); /* the peer's ForeignCluster or the watch brings it back */
        return;
    }
    r->h.ch.next = after_unpublish;
    if (kapi_delete(c, &peer_res_networkconfigs, ns, name, NULL, ctl_call_cb, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
}

/* Ours, on the peer: publish it when needed, then read how the peer mapped us; with networking
 * disabled (s->disabled), take it off the peer instead. */
static void sender(struct rec *r, struct agent_peer_network *s)
{
    struct net *n = r->n;
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
        if (!s->disabled)
            snprintf(s->message, sizeof(s->message), "not peered");
        s->settled = false;
        set_state(p, s);
        ctl_rec_end(&r->h, CTL_DONE);
        return;
    }
    if (!p->unit && (rc = pu_acquire(agent_peers(n->mod.a), p->id, OWNER, &p->unit)) < 0) {
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    for (role = PU_PEERING; role <= PU_REQUESTER; role++) {
        c = pu_client(p->unit, role);
        cred_ns = pu_namespace(p->unit, role);
        if (c && cred_ns)
            break;
    }
    if (!c || !cred_ns || (!n->own_cidr[0] && !s->disabled)) {
        if (!s->disabled)
            snprintf(s->message, sizeof(s->message), "%s",
                     !n->own_cidr[0] ? "this cluster's pod CIDR is unknown (liqonetConfig.podCIDR, "
                                       "or nodes' spec.podCIDR)"
                                     : "no credential for the peer yet");
        s->settled = false;
        set_state(p, s);
        ctl_rec_end_after(&r->h, WAIT_MS * 3);
        return;
    }
    /* Our own copy (a namespace name fits): cred_ns lives in the credential, which a call that
     * runs callbacks (closing an informer, starting one, sending a request) may replace. */
    snprintf(ns, sizeof(ns), "%s", cred_ns);
    snprintf(name, sizeof(name), PEER_NETCFG_PREFIX "%s", identity_cluster_id(n->mod.a));
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
            ctl_rec_end(&r->h, CTL_RETRY);
            return;
        }
    }
    if (!inf_synced(pu_inf_get(p->watch))) {
        ctl_rec_end(&r->h, CTL_WAIT);
        return;
    }
    mine = inf_get(pu_inf_get(p->watch), ns, name);
    if (s->disabled) {
        set_state(p, s);
        unpublish(r, c, ns, name, mine);
        return;
    }
    snprintf(pub, sizeof(pub), "%s@%s", n->own_cidr, ns);
    if (!mine || strcmp(pub, p->published) != 0 ||
        uv_now(agent_loop(n->mod.a)) - p->published_ms > REPUBLISH_MS) {
        json_decref(mine);
        nc = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s,s:s}}", "apiVersion",
                       "net.liqo.io/v1alpha1", "kind", "NetworkConfig", "metadata", "name", name,
                       "namespace", ns, "labels", PEER_LABEL_CLUSTER_ID,
                       identity_cluster_id(n->mod.a), "spec", "clusterID", p->id, "podCIDR",
                       n->own_cidr);
        snprintf(p->published, sizeof(p->published), "%s", pub);
        p->published_ms = uv_now(agent_loop(n->mod.a));
        r->h.ch.next = after_publish;
        if (!nc || kapi_apply(c, &peer_res_networkconfigs, ns, name, NULL, nc, FIELD_MANAGER, true,
                              ctl_call_cb, r) < 0) {
            p->published[0] = '\0';
            ctl_rec_end(&r->h, CTL_RETRY);
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
            snprintf(s->local_mapped, sizeof(s->local_mapped), "%s", n->own_cidr);
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
    if (s->settled && record_local(r, s))
        return;
    if (publish_tep(r, c, ns))
        return;
    ctl_rec_end_after(&r->h, s->settled ? REPUBLISH_MS : WAIT_MS * 3);
}

/* Merge-patches the status of the peer's NetworkConfig here (tns/name, read as nc: the patch is
 * guarded by its resourceVersion) with status (consumed); next goes on (after_status: from
 * p->state). */
static void write_nc_status(struct rec *r, const char *tns, const char *name, const json_t *nc,
                            json_t *status, void (*next)(void *owner))
{
    json_t *patch = status ? json_pack("{s:{s:s},s:o}", "metadata", "resourceVersion",
                                       kapi_obj_rv(nc), "status", status)
                           : NULL;
    char *body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;

    json_decref(patch);
    r->h.ch.next = next;
    if (!body || kapi_patch(agent_kube(r->n->mod.a), &peer_res_networkconfigs, tns, name, "status",
                            KAPI_PATCH_MERGE, body, ctl_call_cb, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
    x_free(body);
}

/* Networking disabled (the peer's ForeignCluster says spec.networkingEnabled: No): the peer's
 * NetworkConfig here (tns/name) is not mapped, the IPAM forgets the peer, and the mapping an
 * earlier pass recorded in that object's status is withdrawn, so that neither a restart restores it
 * nor the peer believes it; then sender() takes ours off the peer. */
static void receiver_disabled(struct rec *r, const char *tns, const char *name)
{
    struct net *n = r->n;
    struct npeer *p = r->p;
    struct agent_peer_network s;
    const json_t *st;
    json_t *nc = NULL;

    if (!p->state.disabled)
        log_info(MOD,
                 "peer %s: networking disabled (ForeignCluster spec.networkingEnabled: No): no "
                 "NetworkConfig exchange, no pod-CIDR remapping",
                 p->id);
    if (ipam_lookup(n->ipam, p->id, NULL, NULL) == 0) {
        log_info(MOD, "peer %s: forgetting its pod-CIDR mapping: networking is disabled", p->id);
        ipam_release_peer(n->ipam, p->id);
    }
    memset(&s, 0, sizeof(s));
    s.disabled = true;
    snprintf(s.message, sizeof(s.message), "%s", PNET_DISABLED_MESSAGE);
    set_state(p, &s);
    if (tns)
        nc = inf_get(n->ncs, tns, name);
    st = json_object_get(nc, "status");
    if (!nc || json_object_get(json_object_get(nc, "metadata"), "deletionTimestamp") ||
        (!json_object_get(st, "podCIDRNAT") && !json_object_get(st, "natEnabled") &&
         !json_object_get(st, "localPodCIDR") && !json_object_get(st, "localPodCIDRNAT"))) {
        json_decref(nc);
        sender(r, &s);
        return;
    }
    log_info(MOD, "peer %s: withdrawing the mapping recorded in its NetworkConfig %s/%s", p->id,
             tns, name);
    /* sender() goes on from p->state after the write */
    write_nc_status(r, tns, name, nc,
                    json_pack("{s:n,s:n,s:n,s:n}", "podCIDRNAT", "natEnabled", "localPodCIDR",
                              "localPodCIDRNAT"),
                    after_status);
    json_decref(nc);
}

/* Theirs, here: map their pod CIDR and record the mapping in the object's status. */
static void receiver(struct rec *r)
{
    struct net *n = r->n;
    struct npeer *p = r->p;
    struct agent_peer_network s = p->state;
    const char *tns = tenant_local(r->fc);
    char name[128], want_nat[CIDR_STR_MAX];
    json_t *nc = NULL;
    const char *pc, *to, *nat, *natenabled;
    struct cidr remote, mapped;
    bool remapped;
    int rc;

    snprintf(name, sizeof(name), PEER_NETCFG_PREFIX "%s", p->id);
    if (!pnet_enabled(r->fc)) {
        receiver_disabled(r, tns, name);
        return;
    }
    if (s.disabled) {
        log_info(MOD,
                 "peer %s: networking enabled again (ForeignCluster spec.networkingEnabled: Yes): "
                 "exchanging NetworkConfigs",
                 p->id);
        memset(&s, 0, sizeof(s));
        snprintf(s.message, sizeof(s.message), "waiting for the NetworkConfig exchange");
        set_state(p, &s); /* said once */
    }
    if (tns)
        nc = inf_get(n->ncs, tns, name);
    if (!nc || json_object_get(json_object_get(nc, "metadata"), "deletionTimestamp")) {
        if (ipam_lookup(n->ipam, p->id, NULL, NULL) == 0) {
            log_info(MOD, "peer %s: its NetworkConfig is gone; forgetting its mapping", p->id);
            ipam_release_peer(n->ipam, p->id);
        }
        s.remote_cidr[0] = s.remote_mapped[0] = '\0';
        json_decref(nc);
        sender(r, &s);
        return;
    }
    pc = json_string_value(json_object_get(json_object_get(nc, "spec"), "podCIDR"));
    to = json_string_value(json_object_get(json_object_get(nc, "spec"), "clusterID"));
    if (!to || strcmp(to, identity_cluster_id(n->mod.a)) != 0 || !pc ||
        cidr_parse(pc, &remote) < 0) {
        snprintf(s.message, sizeof(s.message),
                 "the peer's NetworkConfig is invalid (clusterID must be ours, podCIDR a CIDR)");
        log_warn(MOD, "peer %s: %s", p->id, s.message);
        s.remote_cidr[0] = s.remote_mapped[0] = '\0';
        json_decref(nc);
        sender(r, &s);
        return;
    }
    cidr_format(&remote, s.remote_cidr, sizeof(s.remote_cidr));
    if (!cidr_size_allowed(&remote, n->min_prefix4, n->min_prefix6)) {
        snprintf(s.message, sizeof(s.message),
                 "the peer's pod CIDR %s is larger than this cluster accepts (prefix at least /%u: "
                 "liqonetConfig.peerPodCIDRMinPrefixV%c)",
                 s.remote_cidr, remote.family == 4 ? n->min_prefix4 : n->min_prefix6,
                 remote.family == 4 ? '4' : '6');
        log_warn(MOD, "peer %s: %s", p->id, s.message);
        if (ipam_lookup(n->ipam, p->id, NULL, NULL) == 0)
            ipam_release_peer(n->ipam, p->id);
        s.remote_mapped[0] = '\0';
        json_decref(nc);
        sender(r, &s);
        return;
    }
    rc = ipam_map_peer(n->ipam, p->id, &remote, &mapped, &remapped);
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
    p->state = s; /* sender() continues from here after the write */
    write_nc_status(
        r, tns, name, nc,
        json_pack("{s:s,s:s}", "podCIDRNAT", want_nat, "natEnabled", remapped ? "true" : "false"),
        after_status);
    json_decref(nc);
}

static void reconcile(struct ctl *c, const char *key)
{
    struct net *n = ctl_data(c);
    struct rec *r;

    if (!identity_cluster_id(n->mod.a) || !try_restore(n)) {
        ctl_skip(c, key, CTL_WAIT);
        return;
    }
    r = (struct rec *)ctl_rec_begin(c, key);
    if (!r)
        return;
    r->n = n;
    r->fc = peer_fc_find(n->fcs, key);
    r->p = peer_ensure(n, key);
    if (!r->p) {
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    if (!r->fc && ipam_lookup(n->ipam, key, NULL, NULL) < 0) {
        /* Forgotten on both sides: nothing left to keep. */
        struct agent_peer_network s;

        memset(&s, 0, sizeof(s));
        set_state(r->p, &s);
        peer_free(r->p);
        r->p = NULL;
        ctl_rec_end(&r->h, CTL_DONE);
        return;
    }
    receiver(r);
}

/* ---- handlers
 * ------------------------------------------------------------------------------------ */

static void enqueue(struct net *n, const char *id)
{
    if (n->mod.ctl && id && peer_cluster_id_valid(id) && peer_ensure(n, id))
        ctl_enqueue(n->mod.ctl, id);
}

static void on_nc(struct inf_informer *inf, json_t *obj, void *data)
{
    const char *name = kapi_obj_name(obj);

    (void)inf;
    if (name && strncmp(name, PEER_NETCFG_PREFIX, strlen(PEER_NETCFG_PREFIX)) == 0)
        enqueue(data, name + strlen(PEER_NETCFG_PREFIX));
}

static void on_nc_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_nc(inf, new_obj, data);
}

static void on_fc(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    enqueue(data,
            json_string_value(json_object_get(
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
    ctl_enqueue(p->n->mod.ctl, p->id);
}

/* The gateway's record: every peer publishes it again. */
static void on_gateway(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    if (strcmp(kapi_obj_name(obj) ? kapi_obj_name(obj) : "", DPO_GW_CONFIGMAP) == 0)
        enqueue_all(data);
}

static void on_gateway_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj,
                              void *data)
{
    (void)old_obj;
    on_gateway(inf, new_obj, data);
}

static void config_changed(uv_timer_t *t)
{
    struct net *n = t->data;

    if (n->restored)
        apply_config(n);
}

static void config_soon(struct net *n)
{
    if (n->nodes_timer && !uv_is_active((uv_handle_t *)n->nodes_timer))
        uv_timer_start(n->nodes_timer, config_changed, NODES_DELAY_MS, 0);
}

static void on_config(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    (void)obj;
    config_soon(data);
}

static void on_config_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_config(inf, new_obj, data);
}

/* A node's CIDR into the index (c NULL: out of it); the configuration is applied again only when
 * the set of CIDRs changed, not at every status update of a node. */
static void node_index(struct net *n, const json_t *node, const struct cidr *c)
{
    const char *name = kapi_obj_name(node);
    int r = name ? ncidr_set(n->node_cidrs, name, c) : -EINVAL;

    if (r > 0)
        config_soon(n);
    else if (r < 0 && r != -EINVAL)
        log_warn(MOD, "node %s: its pod CIDR is not indexed: %s", name, strerror(-r));
}

static void on_node(struct inf_informer *inf, json_t *obj, void *data)
{
    struct cidr c;

    (void)inf;
    node_index(data, obj, node_cidr(obj, &c) == 0 ? &c : NULL);
}

static void on_node_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_node(inf, new_obj, data);
}

static void on_node_delete(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    node_index(data, obj, NULL);
}

/* ---- module
 * -------------------------------------------------------------------------------------- */

int net_init(struct agent *a)
{
    struct inf_handlers nh = {.on_add = on_nc, .on_update = on_nc_update, .on_delete = on_nc};
    struct inf_handlers fh = {.on_add = on_fc, .on_update = on_fc_update, .on_delete = on_fc};
    struct inf_handlers ch = {
        .on_add = on_config, .on_update = on_config_update, .on_delete = on_config};
    struct inf_handlers nodeh = {
        .on_add = on_node, .on_update = on_node_update, .on_delete = on_node_delete};
    struct inf_handlers gh = {
        .on_add = on_gateway, .on_update = on_gateway_update, .on_delete = on_gateway};
    struct ctl_options co = {.name = "network",
                             .log_module = MOD,
                             .queue = {.max_concurrent = 32, .base_delay_ms = 500},
                             .rec_size = sizeof(struct rec),
                             .reconcile = reconcile,
                             .rec_release = rec_release,
                             .retry_ms = RETRY_MS,
                             .wait_ms = WAIT_MS};
    struct net *n = ctl_module_new(a, MOD, sizeof(*n));
    int r;

    if (!n)
        return -ENOMEM;
    n->min_prefix4 = IPAM_DEFAULT_MIN_PREFIX4;
    n->min_prefix6 = IPAM_DEFAULT_MIN_PREFIX6;
    r = ipam_new(&n->ipam);
    if (r == 0)
        r = ncidr_new(&n->node_cidrs);
    if (r == 0)
        r = agent_informer(a, &peer_res_networkconfigs, NULL, NULL, 0, &nh, n, &n->ncs);
    if (r == 0)
        r = agent_informer(a, &peer_res_foreignclusters, NULL, NULL, 0, &fh, n, &n->fcs);
    if (r == 0)
        r = agent_informer(a, &kapi_nodes, NULL, NULL, 0, &nodeh, n, &n->nodes);
    if (r == 0)
        r = agent_informer(a, &peer_res_clusterconfigs, NULL, NULL, 0, &ch, n, &n->config);
    if (r == 0)
        r = agent_informer(a, &kapi_configmaps, agent_namespace(a), NULL, 0, &gh, n, &n->gwcm);
    if (r == 0)
        r = ctl_new(a, &co, n, &n->mod.ctl);
    if (r == 0 && !(n->nodes_timer = ktimer_new(agent_loop(a), n)))
        r = -ENOMEM;
    if (r == 0) /* for the advertisement operator's status and the admission's slice check */
        agent_set_peer_network(a, peer_network);
    return r;
}

void net_stop(struct agent *a)
{
    struct net *n = agent_module_data(a, MOD);

    ctl_module_stop(a, MOD);
    if (n && n->nodes_timer)
        uv_timer_stop(n->nodes_timer);
}

void net_fini(struct agent *a)
{
    struct net *n = agent_module_data(a, MOD);

    if (!n)
        return;
    while (n->peers)
        peer_free(n->peers);
    ktimer_free(n->nodes_timer);
    ncidr_free(n->node_cidrs);
    ipam_free(n->ipam);
    ctl_module_fini(a, MOD);
}
