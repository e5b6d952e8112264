/* dpobj: the data plane's Kubernetes objects as data (docs/dataplane.md, "Objects and who owns
 * them"). Pure: no I/O, no logging; the network module and the gateway (gateway.c) act on what
 * these functions decide.
 *
 * - The gateway's record, ConfigMap `cliqo-gateway` in the agent's namespace, written by the
 *   gateway: data.publicKey (base64), data.endpoint (numeric host:port peers reach), data.mtu (the
 *   tunnel's). The agent cannot read the private key; it publishes what this record says.
 * - TunnelEndpoint `tep-<publisher>` in the publisher's tenant namespace on the receiver:
 *   spec.clusterID (the receiver), spec.publicKey, spec.endpoint, spec.mtu. Everything in it comes
 *   from another cluster and is checked here (dpo_tep_parse): a strict key, a numeric endpoint of
 *   a unicast address (no name is ever resolved), an MTU in range. It gives no address range: what
 *   the peer may send (WireGuard's allowed IPs) is this cluster's own decision (the NetworkConfig).
 *   A key equal to this cluster's or to one another peer claimed first is refused
 * (dpo_tep_resolve).
 * - The peer's NetworkConfig here: spec.podCIDR (the peer's, C_P) and the status this cluster's
 *   agent writes: podCIDRNAT (where it sees the peer, R_P, or None), localPodCIDR (C_H, as it
 *   published it to the peer) and localPodCIDRNAT (where the peer sees this cluster, R_H, or None).
 *   dpo_nc_parse reads the four into what the gateway installs for the peer.
 *
 * Ownership: inputs are borrowed; returned JSON is new. */
#ifndef CLIQO_NETWORK_DPOBJ_H
#define CLIQO_NETWORK_DPOBJ_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "network/ipam.h"
#include "network/natrules.h"
#include "network/wguapi.h"

#define DPO_TEP_PREFIX   "tep-"
#define DPO_GW_CONFIGMAP "cliqo-gateway"
#define DPO_KEY_SECRET   "cliqo-wg-key"
/* The key's namespace: the gateway's own, where no other identity of cliqo has a right
 * (deploy/rbac.yaml), not the agent's, whose Role reads every Secret there (docs/dataplane.md,
 * section 2). */
#define DPO_KEY_NAMESPACE "cliqo-gateway"
#define DPO_KEY_FIELD     "privateKey"
#define DPO_MTU_MIN       1280 /* IPv6's minimum link MTU */
#define DPO_MTU_MAX       9000
#define DPO_OVERHEAD      80 /* WireGuard over IPv6: 40 + 8 + 32 */
#define DPO_REASON_MAX    200
#define DPO_FIELD_MANAGER "cliqo-network"
#define DPO_PHASE_PENDING "Pending"
#define DPO_PHASE_UP      "Up"
#define DPO_PHASE_ERROR   "Error"

/* What a gateway publishes (its record) and what a peer's TunnelEndpoint says. */
struct dpo_tunnel {
    struct wg_key pub;
    struct sockaddr_storage endpoint;
    uint32_t mtu;
};

/* A unicast endpoint: not the unspecified address, not multicast or broadcast, not port 0 (which
 * wg_endpoint_parse refuses already). */
bool dpo_endpoint_usable(const struct sockaddr_storage *ss);

/* The gateway's record (ConfigMap data). Returns 0 or -EINVAL with the reason. */
int dpo_gateway_parse(const json_t *cm, struct dpo_tunnel *ret, char *reason, size_t len);
/* The ConfigMap for t, named DPO_GW_CONFIGMAP in ns. NULL when out of memory or t is invalid. */
json_t *dpo_gateway_build(const char *ns, const struct dpo_tunnel *t);

/* A peer's TunnelEndpoint, addressed to cluster `self` (its spec.clusterID). Returns 0 or -EINVAL
 * with the reason, which is what its status says. */
int dpo_tep_parse(const json_t *tep, const char *self, struct dpo_tunnel *ret, char *reason,
                  size_t len);
/* Ours for peer `peer`: tep-<self> in namespace ns (on the peer), labelled with self. */
json_t *dpo_tep_build(const char *self, const char *peer, const char *ns,
                      const struct dpo_tunnel *t);

/* The TunnelEndpoints of all peers, each valid by itself: claim i is refused when its key equals
 * `ours` (NULL: not known) or the key of a claim that came first (older creationTimestamp, RFC
 * 3339 text, then the smaller peer ID). refused[i] and reasons[i] are written for every i. */
struct dpo_claim {
    const char *peer;
    const char *created; /* metadata.creationTimestamp; NULL sorts last */
    struct wg_key key;
};
void dpo_tep_resolve(const struct dpo_claim *claims, size_t n, const struct wg_key *ours,
                     bool *refused, char (*reasons)[DPO_REASON_MAX]);

/* What the gateway installs for one peer, read from the peer's NetworkConfig here (see above):
 * nat.seen_here = R_P (WireGuard's allowed IPs, the route and the NAT's key), nat.us_there = R_H,
 * local = C_H; real = C_P, checked only (R_P has its length). Returns 0, -EAGAIN (the status does
 * not say everything yet: the remapping is not settled) or -EINVAL (a malformed value) with the
 * reason. */
struct dpo_peer_net {
    struct natr_peer nat;
    struct cidr local, real;
};
int dpo_nc_parse(const json_t *nc, struct dpo_peer_net *ret, char *reason, size_t len);

#endif
