/* ipam: CIDRs and the pod-CIDR remapping of peers (docs/network.md, control plane only).
 *
 * Each cluster receives the pod CIDR of every peer (NetworkConfig). If that CIDR overlaps anything
 * this cluster already uses (its own pod CIDR, its service CIDR, reservedSubnets, or the CIDR by
 * which another peer is already known here), the peer is remapped: it is given a free block of the
 * SAME prefix length taken from the remapping pool, and this cluster will see the peer's pods in
 * that block. Otherwise the peer keeps its own CIDR, which is then taken (a later peer overlapping
 * it is remapped). Any prefix length works (not only /16) and the pool is a list of CIDRs, so the
 * number of peers is bounded by the pool's size, not by a constant.
 *
 * Allocation is deterministic: the first aligned block of the pool, in pool order, then address
 * order, that overlaps nothing taken. A peer keeps its mapping while its CIDR does not change
 * (ipam_map_peer is idempotent), and a restart rebuilds the same table from the mappings recorded
 * in NetworkConfig statuses (ipam_restore) before any new peer is mapped.
 *
 * IPv4 and IPv6 are both supported; a CIDR is only ever compared with CIDRs of its family.
 *
 * Limits: at most IPAM_MAX_RANGES taken ranges (reserved + peers) and IPAM_MAX_POOLS pool entries;
 * non-empty peer IDs of at most IPAM_ID_MAX - 1 bytes. The search for a free block is bounded by
 * the number of taken ranges (it jumps over each obstacle), never by the pool's size.
 *
 * Ownership: strings are copied; no function keeps a pointer to its arguments. Output parameters
 * are written only on success. Single-threaded. */
#ifndef CLIQO_NETWORK_IPAM_H
#define CLIQO_NETWORK_IPAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CIDR_STR_MAX    50 /* "ffff:...:ffff/128" and its NUL */
#define IPAM_MAX_RANGES 4096
#define IPAM_MAX_POOLS  64
#define IPAM_ID_MAX     64

struct cidr {
    uint8_t family;   /* 4 or 6 */
    uint8_t prefix;   /* 0..32 or 0..128 */
    uint8_t addr[16]; /* network address, big-endian; IPv4 uses the first 4 bytes; host bits 0 */
};

/* Parses "a.b.c.d/n" or an IPv6 "x:y::z/n" (inet_pton forms, no zone, prefix without leading
 * zeros or sign). Host bits must be zero ("10.0.0.1/8" is -EINVAL: an operator typo, not a
 * network). At most CIDR_STR_MAX - 1 bytes. Returns 0, -EINVAL or -ERANGE (prefix too long). */
int cidr_parse(const char *s, struct cidr *ret);
/* Canonical text ("10.0.0.0/8", IPv6 in RFC 5952 form, as inet_ntop writes it: an IPv4-mapped
 * address keeps its dotted tail, "::ffff:10.0.0.0/104"). Returns the length, -ENOSPC (buf is left
 * untouched) or -EINVAL (c is not a valid CIDR: family, prefix range or host bits). */
int cidr_format(const struct cidr *c, char *buf, size_t size);
bool cidr_equal(const struct cidr *a, const struct cidr *b);
/* Same family and at least one address in common. False for an invalid CIDR. */
bool cidr_overlaps(const struct cidr *a, const struct cidr *b);
/* outer contains every address of inner (same family). False for an invalid CIDR. */
bool cidr_contains(const struct cidr *outer, const struct cidr *inner);
/* A peer's pod CIDR is accepted for remapping only when it is no larger than the operator allows:
 * its prefix at least min_prefix4 (IPv4) or min_prefix6 (IPv6), so that one peer cannot take the
 * remapping pool with a /1. False for an invalid CIDR. */
#define IPAM_DEFAULT_MIN_PREFIX4 16
#define IPAM_DEFAULT_MIN_PREFIX6 64
bool cidr_size_allowed(const struct cidr *c, unsigned min_prefix4, unsigned min_prefix6);
/* The smallest CIDR containing all of list[0..n) (n >= 1, one family). Returns 0 or -EINVAL. */
int cidr_covering(const struct cidr *list, size_t n, struct cidr *ret);
/* Rewrites the network part of address `ip` (text, same family as `from`) from `from` into `to`
 * (same prefix length), keeping the host part: 10.1.2.3 in 10.1.0.0/16 -> 10.9.2.3 with
 * to=10.9.0.0/16. Returns the length written to buf, -EINVAL (not in `from`, families or prefixes
 * differ, not an address) or -ENOSPC. For the pod IPs a consumer shows (next issue). */
int cidr_translate(const char *ip, const struct cidr *from, const struct cidr *to, char *buf,
                   size_t size);

struct ipam;

int ipam_new(struct ipam **ret);
/* NULL-safe; returns NULL. */
struct ipam *ipam_free(struct ipam *p);

/* Ranges this cluster uses itself (pod CIDR, service CIDR, reservedSubnets): never given to a
 * peer. `what` (copied, NULL for none, at most IPAM_ID_MAX - 1 bytes) names it in messages (see
 * ipam_reserved_name). Re-reserving an equal CIDR is a no-op (the first name stays). A reserved
 * range that overlaps a peer's existing mapping is recorded anyway (the caller re-maps that peer:
 * see ipam_conflicts). Returns 0, -EINVAL, -ENOSPC (IPAM_MAX_RANGES) or -ENOMEM. */
int ipam_reserve(struct ipam *p, const struct cidr *c, const char *what);
/* Removes every reservation (the caller re-reserves from a changed configuration). */
void ipam_clear_reserved(struct ipam *p);
/* The remapping pool, replacing the previous one (default: 10.0.0.0/8). Entries are searched in
 * order; they may be of both families (a peer is only given a block of its own family) and may
 * overlap. Existing mappings are kept, even outside the new pool. Returns 0, -EINVAL (n == 0 or an
 * invalid CIDR; the pool is unchanged) or -ENOSPC (n > IPAM_MAX_POOLS). */
int ipam_set_pool(struct ipam *p, const struct cidr *pools, size_t n);

/* The mapping of peer `id` whose pod CIDR is `remote`: the existing one when the peer was mapped
 * before with the same `remote` (and it still overlaps nothing reserved), else a new one (an
 * existing mapping with another `remote` is released first). *ret_mapped is `remote` itself or
 * the remapped block; *ret_remapped tells which (either may be NULL). Only pool entries of the
 * family of `remote` are searched: the default pool is IPv4, so remapping an IPv6 peer needs an
 * IPv6 pool. Returns 0, -EINVAL, -ENOSPC (no free block of that size in the pool, or
 * IPAM_MAX_RANGES reached by a new peer; nothing changed) or -ENOMEM (nothing changed). */
int ipam_map_peer(struct ipam *p, const char *id, const struct cidr *remote,
                  struct cidr *ret_mapped, bool *ret_remapped);
/* Records a mapping read back after a restart (`mapped` equal to `remote` when not remapped).
 * Fails with -EEXIST (nothing recorded) when `mapped` overlaps a reserved range or another peer's
 * mapping: the caller then maps the peer again with ipam_map_peer. A peer already known is
 * replaced (by an identical record: no change). `mapped` need not lie in the pool.
 * Returns 0, -EEXIST, -EINVAL (families or prefix lengths differ), -ENOSPC (IPAM_MAX_RANGES) or
 * -ENOMEM. */
int ipam_restore(struct ipam *p, const char *id, const struct cidr *remote,
                 const struct cidr *mapped);
/* Forgets peer `id` (its block becomes free). No-op for an unknown peer. */
void ipam_release_peer(struct ipam *p, const char *id);
/* The current mapping of peer `id` (either output may be NULL): 0, or -ENOENT. */
int ipam_lookup(const struct ipam *p, const char *id, struct cidr *ret_remote,
                struct cidr *ret_mapped);
/* Writes up to `max` IDs (borrowed, valid until the next change) of peers whose mapping overlaps a
 * reserved range (after the configuration changed) and returns how many there are. IDs come in the
 * address order of the mappings; `ids` may be NULL when max is 0. */
size_t ipam_conflicts(const struct ipam *p, const char **ids, size_t max);
/* The `what` of a reserved range that overlaps c (the lowest one), or NULL: for the message that
 * explains a conflict. Borrowed, valid until the next change. */
const char *ipam_reserved_name(const struct ipam *p, const struct cidr *c);
size_t ipam_peer_count(const struct ipam *p);

#endif
