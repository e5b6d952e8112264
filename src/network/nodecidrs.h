/* ncidr: the pod CIDRs of this cluster's physical nodes, by node name, and the smallest CIDR
 * covering them (the cluster's own pod CIDR when liqonetConfig does not give it).
 *
 * Kept up to date from the node informer's events, so that the covering is computed from a few
 * bytes per node instead of decoding every cached Node: at 5,000 Nodes that walk took 18 ms of one
 * loop iteration, and it ran again after every node status change. The caller decides which nodes
 * count (physical, IPv4 spec.podCIDR) and passes their CIDR, or NULL to forget the node.
 *
 * Open addressing with linear probing and backward-shift deletion; names are copied (at most
 * NCIDR_NAME_MAX bytes: a DNS subdomain). Not thread-safe; the caller owns the table. */
#ifndef CLIQO_NETWORK_NODECIDRS_H
#define CLIQO_NETWORK_NODECIDRS_H

#include <stddef.h>

#include "network/ipam.h"

#define NCIDR_NAME_MAX 253

struct ncidr;

/* 0 or -ENOMEM. */
int ncidr_new(struct ncidr **ret);
/* NULL-safe. */
void ncidr_free(struct ncidr *t);
/* Records node name's CIDR (c NULL: the node no longer counts, or is gone). Returns 1 when the set
 * of CIDRs changed (a node added, removed or with another CIDR), 0 when not, -EINVAL (no name, or
 * one longer than NCIDR_NAME_MAX) or -ENOMEM. */
int ncidr_set(struct ncidr *t, const char *name, const struct cidr *c);
/* The nodes recorded. */
size_t ncidr_count(const struct ncidr *t);
/* The smallest CIDR covering every recorded one of family (4 or 6): 0, or -ENOENT (none). */
int ncidr_covering(const struct ncidr *t, unsigned family, struct cidr *ret);

#endif
