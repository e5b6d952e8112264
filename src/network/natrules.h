/* natrules: the nftables text of the data plane's stateless prefix NAT (docs/dataplane.md, "Routes
 * and NAT"). Pure: it writes text that the gateway hands to libnftables in one transaction.
 *
 * For a peering of this cluster H with P: `real` is P's own pod CIDR (C_P), `seen_here` the block
 * where H sees P's pods (R_P, the route through the tunnel; equal to C_P when not remapped),
 * `us_there` the block where P sees H's pods (R_H). A packet leaving through the tunnel interface
 * for R_P is rewritten into P's view after routing (postrouting): destination R_P -> C_P and, when
 * it comes from H's pods (`local`), source C_H -> R_H, host bits kept. P's gateway does the same
 * for its packets, so a packet arriving through the tunnel is already in H's view. No conntrack
 * state, any prefix length (both blocks of a pair have the same length: the IPAM guarantees it).
 *
 * Table `cliqo` of the family holds: an interval map `to_peer` (R_P -> jump to the peer's chain),
 * one chain per peer (named after R_P: to_10_70_0_0_16) with the two rewrites, and the base chain
 * `egress` (postrouting) that clamps the MSS of SYNs to the route's MTU and looks the destination
 * up in the map: one lookup per packet, whatever the number of peers. Nothing outside the table is
 * touched.
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
    struct cidr real;      /* C_P */
    struct cidr seen_here; /* R_P */
    struct cidr us_there;  /* R_H */
};

/* family 4 or 6; ifname the tunnel interface (1 to 15 of [A-Za-z0-9_.-]); local this cluster's pod
 * CIDR (C_H). Every CIDR of the family; real and seen_here of one length, us_there and local of
 * one length; no two seen_here blocks overlap. Returns 0, -EINVAL (naming what in err, which may
 * be NULL), -E2BIG (more than NATR_MAX_PEERS) or sbuf's error. */
int natr_ruleset(int family, const char *ifname, const struct cidr *local,
                 const struct natr_peer *peers, size_t n, struct sbuf *out, char *err,
                 size_t errlen);
/* Returns 0, -EINVAL (family) or sbuf's error. */
int natr_remove(int family, struct sbuf *out);

#endif
