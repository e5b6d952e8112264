/* gateway: the data plane's gateway, the one module of `cliqo-agent gateway` (docs/dataplane.md,
 * sections 2 to 4).
 *
 * On the gateway node, with host networking: it keeps the cluster's WireGuard private key (Secret
 * cliqo-wg-key in namespace cliqo-gateway, made when missing) and its record (ConfigMap
 * cliqo-gateway: public key, endpoint, MTU, which the agent's network module publishes to every
 * peer as a TunnelEndpoint); it runs `wireguard-go -f <interface>` as a child it supervises (or
 * adopts the one a killed predecessor left running) and configures it over its userspace API socket
 * (wguapi.c); it installs, for every peer whose ForeignCluster is peered with networking enabled,
 * whose NetworkConfig here says where each side sees the other (dpobj.c) and whose TunnelEndpoint
 * is valid: one WireGuard peer (allowed IPs = the peer's pods as seen here), one route of protocol
 * 146 through the interface (routes.c) and its part of the nftables table `cliqo` (natrules.c,
 * through libnftables). One pass reconciles all of it: it reads back the device (get=1), the routes
 * (a dump) and the table, and changes only what differs, so a restart leaves no duplicate and a
 * peering that ends leaves nothing. It writes each TunnelEndpoint's status (phase, last handshake,
 * bytes, message).
 *
 * Stopping (SIGTERM, lost leadership) takes the tunnel down: its routes, its table, its
 * wireguard-go. A SIGKILL leaves the tunnel running; the next gateway adopts it. */
#ifndef CLIQO_NETWORK_GATEWAY_H
#define CLIQO_NETWORK_GATEWAY_H

#include "agent/agent.h"

int gw_init(struct agent *a);
int gw_start(struct agent *a);
void gw_stop(struct agent *a);
void gw_fini(struct agent *a);
#define AGENT_MODULE_GATEWAY                                                                       \
    {                                                                                              \
        .name = "gateway", .init = gw_init, .start = gw_start, .stop = gw_stop, .fini = gw_fini,   \
        .ctl = true                                                                                \
    }

#endif
