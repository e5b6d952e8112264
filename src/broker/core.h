/* brk core: the state every part of cliqo-broker reads (docs/broker.md), kept by the module
 * "broker", which runs on every replica (its informers and probes are not leader-only, so that a
 * standby answers the API as well as the leader):
 *
 *   informers  ForeignClusters, Advertisements (every namespace), the state ConfigMap
 *              cliqo-broker-state and the token Secret in the broker's namespace
 *   providers  the clusters that advertise to this one: an Advertisement advertisement-<X> whose
 *              namespace is the tenant namespace of ForeignCluster X (as the advertisement
 *              operator checks). Each is probed every --probe-interval (GET /ids on its
 *              ForeignCluster's auth URL, the only address of it the broker holds without a
 *              credential; TLS not verified, no credential sent, the answer's status and time
 *              only) and kept with its KPI history and hysteresis state (bounded:
 * BRK_MAX_PROVIDERS) selection  recomputed from policy, toggles and KPIs on every probe, state
 * change and Advertisement change (brk_select); a change is announced to the subscribers
 *              (orchestrator, aggregator), which queue their keys
 * Data flows one way: informer events queue the key "providers" on the core's own queue, whose
 * pass rebuilds the table from the stores. */
#ifndef CLIQO_BROKER_CORE_H
#define CLIQO_BROKER_CORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/agent.h"
#include "broker/config.h"
#include "broker/kpi.h"
#include "broker/select.h"
#include "broker/state.h"

#define BRK_MODULE        "broker"
#define BRK_MAX_PROVIDERS 4096
#define BRK_ID_MAX        64 /* a cluster ID and its NUL */
#define BRK_PRICE_ANN     "broker.cliqo.io/price"

struct brk_core;

/* The core of the agent a (the module "broker"'s data), NULL before its init. */
struct brk_core *brk_core_of(struct agent *a);
const struct brk_config *brk_core_config(const struct brk_core *c);

/* What changed, for the subscribers. */
#define BRK_CHANGED_SELECTION 0x1u /* the set of selected providers */
#define BRK_CHANGED_OFFERS    0x2u /* a provider's offer (or the set of providers) */
#define BRK_CHANGED_CLUSTERS  0x4u /* ForeignClusters (consumers come and go) */
typedef void (*brk_changed_fn)(unsigned what, void *data);
/* At most 4 subscribers; from a module's init. Returns 0 or -ENOSPC. */
int brk_core_subscribe(struct brk_core *c, brk_changed_fn fn, void *data);

/* One provider as the aggregator and the API see it (borrowed until the loop runs again). */
struct brk_provider_view {
    const char *id;
    bool selected, enabled;
    const json_t *offer; /* resource -> quantity string; NULL: none */
    const char *why;     /* why it is out, "" when selected */
};
typedef void (*brk_provider_fn)(const struct brk_provider_view *p, void *data);
void brk_core_foreach_provider(struct brk_core *c, brk_provider_fn fn, void *data);
/* The selected providers' IDs (at most max, sorted); returns how many there are. */
size_t brk_core_selected(struct brk_core *c, const char **ids, size_t max);

/* The informers (store access). */
struct inf_informer *brk_core_fcs(struct brk_core *c);
/* The state (toggles and policy) as last read; valid until the loop runs again. */
const struct brk_state *brk_core_state(const struct brk_core *c);
/* The catalog's "broker" member for ForeignCluster fc (a new object), NULL when out of memory:
 * {"provider", "enabled", "selected", "why", "offer", "kpi", "price"}, every member present (offer,
 * kpi and price null when unknown); docs/broker-openapi.yaml, schema Cluster. */
json_t *brk_core_cluster_extra(struct brk_core *c, const json_t *fc);
/* A number that changes whenever anything the catalog shows changes (the ETag's). */
uint64_t brk_core_generation(const struct brk_core *c);
/* Whether the informers have synced and the state is known. */
bool brk_core_ready(const struct brk_core *c);
/* The bearer token ("" when the Secret is missing or has none). */
const char *brk_core_token(const struct brk_core *c);
/* The key that signs the catalog's continue tokens (random per process). */
const unsigned char *brk_core_token_key(const struct brk_core *c);

/* Applies a state just written (so that a read right after the write sees it before the
 * informer's event). data is the ConfigMap's data, as written. */
void brk_core_state_written(struct brk_core *c, const json_t *data);

/* The module table entry. */
int brk_core_init(struct agent *a);
void brk_core_fini(struct agent *a);
bool brk_core_module_ready(struct agent *a);
#define BRK_MODULE_CORE                                                                            \
    {                                                                                              \
        BRK_MODULE, brk_core_init, NULL, NULL, brk_core_fini, brk_core_module_ready, false         \
    }

#endif
