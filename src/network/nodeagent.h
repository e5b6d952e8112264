/* nodeagent: the one module of `cliqo-agent node`, the data plane's per-node mode
 * (docs/dataplane.md, section 5).
 *
 * On every node but the gateway's, with host networking: one route per remote pod block, `R_P via
 * <the gateway node's InternalIP> proto 146`, so that the node's pods reach the peers' pods through
 * the gateway. R_P is the block the gateway takes for the peer (dppeers.c: the same peers, the same
 * NetworkConfig status, the same conflict rule); the gateway node is the Node labelled
 * net.liqo.io/gateway=true (noderoutes.c). It reads ForeignClusters, NetworkConfigs and Nodes
 * through informers and writes nothing to the API. A pass (on every event and every 10 s) dumps the
 * routes of protocol 146, compares them with what is wanted (routes.c's rt_plan) and applies only
 * the difference: a restart adds no duplicate, a route of an ended peering goes, routes of other
 * software are never looked at, nor the gateway's own routes of protocol 146 (through its tunnel's
 * interface, where the node mode's go via an address: noderoutes.h, nrt_owned).
 *
 * Which peers get a route: every peer with a settled remapping (its NetworkConfig status says where
 * each side sees the other), whether or not its tunnel is up: the route only leads to the gateway,
 * which drops what it cannot send (no route of its own for a peer it did not install), and a
 * tunnel that comes up later then needs nothing from the nodes.
 *
 * Stopping (SIGTERM) leaves the routes in place: a DaemonSet's rolling update would otherwise cut
 * the node's traffic until the new pod's first pass; the next start reconciles them. On the
 * gateway node it installs nothing (and removes its own routes, should the node become the
 * gateway). `ip route flush proto 146` removes them by hand after an uninstall. */
#ifndef CLIQO_NETWORK_NODEAGENT_H
#define CLIQO_NETWORK_NODEAGENT_H

#include "agent/agent.h"

int nd_init(struct agent *a);
int nd_start(struct agent *a);
void nd_stop(struct agent *a);
void nd_fini(struct agent *a);
#define AGENT_MODULE_NODE                                                                          \
    {                                                                                              \
        .name = "node", .init = nd_init, .start = nd_start, .stop = nd_stop, .fini = nd_fini,      \
        .ctl = true                                                                                \
    }

#endif
