/* The discovery module of cliqo-agent (docs/discovery.md): one agent module, in four files that
 * share the state declared here (internal to src/discovery/, not a public interface).
 *
 *   ctl.c      the module: informers, the table of found clusters, the ForeignCluster reconcile
 *              (create, update, status.discovery, removal), the sweep timer, metrics.
 *   ctl_lan.c  the LAN: configuration from ClusterConfig discoveryConfig, the mDNS responder
 *              (interfaces, announcement, browse) and what it reports into the table.
 *   ctl_wan.c  the WAN: SearchDomains, periodic DNS-SD browses (c-ares) into the table, their
 *              status.
 *   trust.c    trust and join policy: the expected CA hash from the operator's Secret
 *              remote-auth-<id>, mismatch detection, autojoin (fetch the CA from the announced URL,
 *              pin it to the expected hash, store it, enable the outgoing peering).
 *
 * The table is the module's memory of what the network says now: per cluster ID, the sources
 * (one per mDNS instance, one per SearchDomain instance) that announce it. It is bounded
 * (disc_max_clusters, sources per cluster) and every refusal is counted. ForeignClusters are the
 * durable result: the reconcile (key: cluster ID) makes them agree with the table, level-triggered
 * and idempotent, so a restart converges to the same objects. Everything runs on the agent's loop,
 * only while this replica leads (start/stop). The state of all four files is struct disc (below),
 * kept by the agent for one generation (disc_init to disc_fini); the reconcile is a controller on
 * the skeleton of agent/ctl.h, and every callback reaches the state through its argument. */
#ifndef CLIQO_DISCOVERY_CTL_H
#define CLIQO_DISCOVERY_CTL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/agent.h"
#include "agent/ctl.h"
#include "discovery/module.h"
#include "discovery/record.h"

#define DISC_MOD                 "discovery"
#define DISC_LABEL_TYPE_LAN      "LAN"
#define DISC_LABEL_TYPE_WAN      "WAN"
#define DISC_DEFAULT_MAX         256 /* clusters in the table (discoveryConfig.maxClusters) */
#define DISC_MAX_LIMIT           4096
#define DISC_SOURCES_MAX         4  /* announcements kept per cluster ID */
#define DISC_SD_MAX              64 /* SearchDomains followed */
#define DISC_KEY_MAX             (DREC_HOST_MAX + 2)
#define DISC_DEFAULT_TTL         90 /* seconds, discoveryConfig.ttl */
#define DISC_DEFAULT_WAN_REFRESH 30 /* seconds, SearchDomain spec.refreshSeconds */

enum disc_kind { DISC_LAN, DISC_WAN };

/* One announcement of a cluster. */
struct disc_source {
    enum disc_kind kind;
    char key[DISC_KEY_MAX];     /* LAN: instance name; WAN: the instance's full name */
    char sd[DREC_HOST_MAX + 1]; /* WAN: the SearchDomain's name */
    char instance[DREC_LABEL_MAX + 1];
    struct drec_announce a;        /* url always set */
    int64_t first_seen, last_seen; /* Unix ms */
};

struct disc_cand {
    char id[PEER_NAME_MAX + 1];
    struct disc_source src[DISC_SOURCES_MAX];
    size_t nsrc;
    bool lan_removed;  /* a LAN announcement of this ID went away while we watched */
    int64_t last_seen; /* Unix ms */
};

/* ClusterConfig spec.discoveryConfig, with defaults applied. */
struct disc_lan_config {
    bool enable_discovery, enable_advertisement, autojoin, autojoin_untrusted;
    char cluster_name[PEER_NAME_MAX + 1];
    char name[DREC_LABEL_MAX + 1];
    char service[DREC_LABEL_MAX * 2 + 2]; /* authService */
    char domain[DREC_HOST_MAX + 1];
    unsigned port; /* 0: the auth URL's */
    unsigned ttl;  /* seconds */
    unsigned max_clusters;
    char interfaces[16][16]; /* explicit allow-list; empty: automatic */
    size_t ninterfaces;
};

/* The module's state (agent_module_data "discovery"), made in disc_init and freed in disc_fini,
 * every generation. Each file keeps its own part behind its own pointer (made by its init, freed
 * by its fini); callbacks reach it through their data. */
struct disc_lan;   /* ctl_lan.c */
struct disc_wan;   /* ctl_wan.c */
struct disc_joins; /* trust.c: the joins in flight and the failures remembered */
struct metrics_family;
struct inf_informer;
struct disc {
    struct ctl_module mod; /* first: the agent and the controller (agent/ctl.h) */
    struct inf_informer *fcs, *secrets, *config, *sds;
    struct disc_cand **cands;
    size_t ncands;
    struct disc_lan_config cfg;
    uv_timer_t *sweep;
    int64_t last_sweep_enqueue;
    struct metrics_family *m_clusters, *m_ignored, *m_dropped, *m_rejected, *m_announce, *m_events;
    struct disc_lan *lan;
    struct disc_wan *wan;
    struct disc_joins *joins;
};

/* ---- ctl.c ------------------------------------------------------------------------------------
 */

struct agent *disc_agent(const struct disc *d);
bool disc_running(const struct disc *d);
const struct disc_lan_config *disc_config(const struct disc *d);
/* The cached ClusterConfig (new reference or NULL). */
json_t *disc_cluster_config(struct disc *d);
/* A cached Secret of the agent's namespace (new reference or NULL). */
json_t *disc_secret(struct disc *d, const char *name);
/* A Secret value (base64-decoded, x_malloc'd) or NULL. */
char *disc_secret_field(const json_t *secret, const char *key, size_t max);
/* The cached SearchDomain (new reference or NULL). */
json_t *disc_search_domain(struct disc *d, const char *name);

/* The table. */
struct disc_cand *disc_cand_get(struct disc *d, const char *id);
/* Adds or replaces the source with this key for cluster `id`. Returns 0, or -ENOSPC when the
 * table (or the cluster's sources) is full: the caller counts it. Enqueues the cluster when
 * anything changed. */
int disc_source_put(struct disc *d, const char *id, const struct disc_source *s);
/* Removes the source with this key (LAN: the instance; WAN: SearchDomain + key). Enqueues. */
void disc_source_drop(struct disc *d, enum disc_kind kind, const char *sd, const char *key);
/* The cluster ID of the source with this key, or NULL (borrowed). */
const char *disc_source_id(struct disc *d, enum disc_kind kind, const char *sd, const char *key);
/* Removes every WAN source of SearchDomain sd whose key is not in keep[0..n). */
void disc_sources_retain(struct disc *d, const char *sd, char (*keep)[DISC_KEY_MAX], size_t n);
/* Drops every source of a kind (sd NULL: of every SearchDomain). gone: the announcements are
 * known to have stopped (else they are only unknown now: a new responder, a deleted
 * SearchDomain). */
void disc_sources_drop_all(struct disc *d, enum disc_kind kind, const char *sd, bool gone);
void disc_enqueue(struct disc *d, const char *id);
/* Enqueues every ForeignCluster discovery created (type label LAN or WAN). */
void disc_enqueue_all(struct disc *d);

/* Metrics. */
void disc_count_ignored(struct disc *d, enum disc_kind kind, const char *reason);
void disc_count_dropped(struct disc *d, const char *reason);
void disc_count_event(struct disc *d, const char *event);

/* ---- ctl_lan.c --------------------------------------------------------------------------------
 */

/* Makes d->lan and reads the configuration into d->cfg. */
int disc_lan_init(struct disc *d);
void disc_lan_start(struct disc *d);
void disc_lan_stop(struct disc *d);
/* Frees d->lan (after disc_lan_stop). NULL-safe. */
void disc_lan_fini(struct disc *d);
/* ClusterConfig or identity changed: re-read the configuration, re-announce, re-browse. */
void disc_lan_reconfigure(struct disc *d);
/* Periodic: interface changes. */
void disc_lan_tick(struct disc *d);
/* When a LAN-only ForeignCluster that was never seen in this process may be removed (Unix ms; 0:
 * not browsing). */
int64_t disc_lan_sweep_after(const struct disc *d);
const char *disc_lan_state(const struct disc *d); /* announcement state, for metrics and logs */
/* mDNS packets the responders of this generation rejected (mdns_rejected_packets, summed over
 * every responder made since disc_lan_init). */
unsigned long disc_lan_rejected_packets(const struct disc *d);

/* ---- ctl_wan.c --------------------------------------------------------------------------------
 */

/* Makes d->wan. */
int disc_wan_init(struct disc *d);
void disc_wan_start(struct disc *d);
void disc_wan_stop(struct disc *d);
/* Forgets every SearchDomain and frees d->wan. NULL-safe. */
void disc_wan_fini(struct disc *d);
/* True when SearchDomain sd's last browse succeeded and did not list cluster id (nor failed on
 * an instance that might be it): its ForeignCluster may go. */
bool disc_wan_known_absent(const struct disc *d, const char *sd, const char *id);

/* ---- trust.c ----------------------------------------------------------------------------------
 */

/* Trust of a found cluster, for status.discovery.trust. */
enum disc_trust {
    DISC_TRUST_NO_CREDENTIALS,
    DISC_TRUST_TRUSTED, /* the operator supplied the expected CA hash, and nothing contradicts it */
    DISC_TRUST_UNTRUSTED, /* a token but no expected CA hash */
    DISC_TRUST_MISMATCH,  /* the announced (or fetched) CA hash differs from the expected one */
    DISC_TRUST_CONFLICT,  /* several announcements of this ID disagree */
};
const char *disc_trust_name(enum disc_trust t);

struct disc_verdict {
    enum disc_trust trust;
    char message[512];
    bool join;    /* autojoin now: outgoingPeeringEnabled Yes */
    bool need_ca; /* fetch the CA from the announced URL first */
    bool tofu;    /* autojoinUntrusted: no expected hash (loud warning) */
    char expected[PEER_CA_HASH_LEN + 1];
};

/* Decides for cluster c and its ForeignCluster fc (kind: how it was found). */
void disc_trust_decide(struct disc *d, const struct disc_cand *c, const struct disc_source *primary,
                       const json_t *fc, struct disc_verdict *ret);
/* Fetches the CA of `url` (no TLS check: the answer is pinned), checks it against v->expected (or,
 * with v->tofu, against the announced hash), stores it in Secret remote-auth-<id>, then sets the
 * ForeignCluster's outgoingPeeringEnabled to Yes. done(err, message) runs on the loop. At most one
 * fetch per ID at a time (-EBUSY). The Secret is then owned by the ForeignCluster (fc_uid), so that
 * an unpeer (which deletes the ForeignCluster) also forgets the credentials: a cluster that was
 * unpeered is not joined again by itself when it is rediscovered. */
typedef void (*disc_join_cb)(const char *id, int err, const char *message, void *data);
int disc_trust_join(struct disc *d, const char *id, const char *fc_name, const char *fc_uid,
                    const char *url, const struct disc_verdict *v, const char *announced_hash,
                    disc_join_cb done, void *data);
/* A mismatch found by a fetch is remembered (per ID, until the announcement or the expected hash
 * changes) so that the join is not retried in a loop. */
bool disc_trust_failed(struct disc *d, const char *id, const char *url, const char *expected,
                       char *why, size_t whylen);
/* Makes d->joins. */
int disc_trust_init(struct disc *d);
/* Ends every join in flight (no callback) and frees d->joins. NULL-safe. */
void disc_trust_fini(struct disc *d);

#endif
