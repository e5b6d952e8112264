/* peernet: the pure part of the network module's decisions about one peer (docs/advertisement.md,
 * "Pod-CIDR remapping" and "Networking disabled"): whether this cluster's network is to be
 * connected with the peer's at all, as the peer's ForeignCluster says (spec.networkingEnabled). The
 * agent module (ctl_network.c) acts on it: no NetworkConfig exchange and no remapping when it is
 * off. No I/O, no logging.
 *
 * Ownership: inputs are borrowed; nothing is kept. */
#ifndef CLIQO_NETWORK_PEERNET_H
#define CLIQO_NETWORK_PEERNET_H

#include <jansson.h>
#include <stdbool.h>

/* The peer state's message (struct agent_peer_network, agent/agent.h) while networking is off. */
#define PNET_DISABLED_MESSAGE                                                                      \
    "networking is disabled for this peer (ForeignCluster spec.networkingEnabled: No)"

/* Whether networking with the peer of ForeignCluster fc is enabled. False only when its
 * spec.networkingEnabled is "No", or the boolean false that YAML 1.1 makes of an unquoted No (the
 * CRD's enum refuses it; it reaches the agent only with validation off). True for "Yes", for a
 * missing field (the CRD's default), for any other value, and with no ForeignCluster (fc NULL):
 * the default is to connect. */
bool pnet_enabled(const json_t *fc);

#endif
