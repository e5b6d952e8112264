/* network: the agent module that settles the pod-CIDR remapping with every peer, control plane only
 * (docs/advertisement.md, "Pod-CIDR remapping").
 *
 * For every peer it is peered with in either direction, the cluster publishes NetworkConfig
 * net-config-<self> (its pod CIDR) in its tenant namespace on the peer, through the peer's unit
 * (the peering identity, else the credential the peer handed over), and watches that object's
 * status to learn where the peer sees its pods. It receives the peer's NetworkConfig in the peer's
 * tenant namespace here, maps the peer's pod CIDR with the IPAM (ipam.h) and writes the mapping to
 * that object's status. Mappings are restored from those statuses after a restart before anything
 * new is mapped.
 *
 * The data plane (docs/dataplane.md): once settled, it also records on that status our own pod CIDR
 * and where the peer sees it (localPodCIDR, localPodCIDRNAT), so that the gateway reads both
 * directions from one object this cluster writes; and it publishes TunnelEndpoint tep-<self> on the
 * peer beside the NetworkConfig (the same unit and namespace) with what the gateway's record,
 * ConfigMap cliqo-gateway, says: public key, endpoint, MTU. Nothing while no gateway runs; deleted
 * there with the NetworkConfig when networking is disabled. */
#ifndef CLIQO_NETWORK_NETWORK_H
#define CLIQO_NETWORK_NETWORK_H

#include "agent/agent.h"
#include "network/ipam.h"

/* What it knows of a peer, and when that changes, reach the other modules through the agent
 * (agent_peer_network, agent_subscribe_peer_network in agent/agent.h); its state lives in the agent
 * (agent_module_data "network"). */
int net_init(struct agent *a);
void net_stop(struct agent *a);
void net_fini(struct agent *a);
/* start: the controller skeleton's (agent_module.ctl) */
#define AGENT_MODULE_NETWORK                                                                       \
    {                                                                                              \
        .name = "network", .init = net_init, .stop = net_stop, .fini = net_fini, .ctl = true       \
    }

#endif
