/* The agent modules of the advertisement protocol (docs/advertisement.md):
 *
 *   broadcaster  (provider) keeps an Advertisement of what this cluster shares on every consumer
 *                whose PeeringRequest it admitted, with the virtual kubelet's credential;
 *   advoperator  (consumer) accepts or refuses Advertisements by policy, runs their virtual
 *                kubelets, expires stale Advertisements, tears down in order on deletion. */
#ifndef CLIQO_ADVERTISEMENT_ADVERTISEMENT_H
#define CLIQO_ADVERTISEMENT_ADVERTISEMENT_H

#include "offer/share.h"
#include "agent/agent.h"

int bcast_init(struct agent *a);
int bcast_start(struct agent *a);
void bcast_stop(struct agent *a);
void bcast_fini(struct agent *a);
#define AGENT_MODULE_BROADCASTER                                                                   \
    {                                                                                              \
        "broadcaster", bcast_init, bcast_start, bcast_stop, bcast_fini, NULL                       \
    }

/* The broadcaster's computation state in agent a (for tests and benchmarks); NULL when the module
 * is not initialised. */
struct shr_state *bcast_state(struct agent *a);

int advop_init(struct agent *a);
int advop_start(struct agent *a);
void advop_stop(struct agent *a);
void advop_fini(struct agent *a);
#define AGENT_MODULE_ADVOPERATOR                                                                   \
    {                                                                                              \
        "advoperator", advop_init, advop_start, advop_stop, advop_fini, NULL                       \
    }

#endif
