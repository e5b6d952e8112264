/* network: the agent module that settles the pod-CIDR remapping with every peer, control plane only
 * (docs/advertisement.md, "Pod-CIDR remapping").
 *
 * For every peer it is peered with in either direction, the cluster publishes NetworkConfig
 * net-config-<self> (its pod CIDR) in its tenant namespace on the peer, through the peer's unit
 * (the peering identity, else the credential the peer handed over), and watches that object's
 * status to learn where the peer sees its pods. It receives the peer's NetworkConfig in the peer's
 * tenant namespace here, maps the peer's pod CIDR with the IPAM (ipam.h) and writes the mapping to
 * that object's status. Mappings are restored from those statuses after a restart before anything
 * new is mapped. */
#ifndef CLIQO_NETWORK_NETWORK_H
#define CLIQO_NETWORK_NETWORK_H

#include <stdbool.h>

#include "agent/agent.h"
#include "network/ipam.h"

/* What is known about peer `id` (strings empty when unknown). */
struct net_peer_state {
    char remote_cidr[CIDR_STR_MAX];   /* the peer's pod CIDR, as it announced it */
    char remote_mapped[CIDR_STR_MAX]; /* where this cluster sees the peer's pods */
    char local_mapped[CIDR_STR_MAX];  /* where the peer sees this cluster's pods */
    bool settled;                     /* both directions known */
    char message[256];                /* why not settled, or a refusal */
};

/* Returns 0 and the state, or -ENOENT for a peer the module does not know. */
int net_peer_state(const char *id, struct net_peer_state *ret);

/* Called (on the loop) whenever the state of a peer changes. One subscriber per module; returns 0
 * or -ENOSPC. */
typedef void (*net_changed_fn)(const char *id, void *data);
int net_subscribe(net_changed_fn fn, void *data);

int net_init(struct agent *a);
int net_start(struct agent *a);
void net_stop(struct agent *a);
void net_fini(struct agent *a);
bool net_ready(struct agent *a);
#define AGENT_MODULE_NETWORK                                                                       \
    {                                                                                              \
        "network", net_init, net_start, net_stop, net_fini, net_ready                              \
    }

#endif
