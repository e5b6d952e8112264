/* natrules: the nftables text of the data plane's stateless prefix NAT (docs/dataplane.md, "Routes
 * and NAT"). Pure: it writes text that the gateway hands to libnftables in one transaction.
 *
 * For a peering of this cluster H with P: `seen_here` is the block where H sees P's pods (R_P: the
 * route through the tunnel and WireGuard's allowed IPs of P; P's own pod CIDR when not remapped),
 * `us_there` the block where P sees H's pods (R_H), `local` H's own pod CIDR (C_H). Each side
 * translates only its own pods' addresses, so a packet in the tunnel carries the sender's view of
 * the receiver (destination in R_P, which selects P's WireGuard peer on the way out) and the
 * receiver's view of the sender (source in R_H, which P's WireGuard accepts from H):
 * - egress (postrouting, out through the tunnel interface, destination in R_P): source C_H -> R_H;
 * - ingress (prerouting at raw priority, in through the tunnel interface, source in R_P):
 *   destination R_H -> C_H, before routing and conntrack see it.
 * Host bits are kept, there is no conntrack state, and any prefix length works (C_H and R_H have
 * the same length: the peer's IPAM guarantees it). H never needs P's real pod CIDR.
 *
 * Table `cliqo` of the family holds two interval maps keyed by R_P, `to_peer` and `from_peer`
 * (R_P -> jump to the peer's chain), two chains per peer (named after R_P: to_10_70_0_0_16,
 * from_10_70_0_0_16) with one rewrite each, and the base chains `egress` (which also clamps the
 * MSS of SYNs to the route's MTU) and `ingress`: one lookup per packet, whatever the number of
 * peers. Nothing outside the table is touched.
 *
 * natr_ruleset writes a transaction that makes the table exactly this (created if missing, then
 * deleted and defined again in the same transaction: applying it twice leaves one copy);
 * natr_remove one that removes the table (a no-op when it is absent). */
#ifndef CLIQO_NETWORK_NATRULES_H
#define CLIQO_NETWORK_NATRULES_H

#include <stddef.h>

#include "common/strutil.h"
#include "network/ipam.h"

#define NATR_MAX_PEERS  4096
#define NATR_IFNAME_MAX 16 /* IFNAMSIZ, with the NUL */

struct natr_peer {
    struct cidr seen_here; /* R_P */
    struct cidr us_there;  /* R_H */
};

/* family 4 or 6; ifname the tunnel interface (1 to 15 of [A-Za-z0-9_.-]); local this cluster's pod
 * CIDR (C_H). Every CIDR of the family; us_there and local of one length; no two seen_here blocks
 * overlap. Returns 0, -EINVAL (naming what in err, which may
 * be NULL), -E2BIG (more than NATR_MAX_PEERS) or sbuf's error. */
int natr_ruleset(int family, const char *ifname, const struct cidr *local,
                 const struct natr_peer *peers, size_t n, struct sbuf *out, char *err,
                 size_t errlen);
/* Returns 0, -EINVAL (family) or sbuf's error. */
int natr_remove(int family, struct sbuf *out);

#endif
