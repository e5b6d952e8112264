/* ipam: CIDRs and the pod-CIDR remapping of peers (see ipam.h for the contract).
 *
 * Addresses are handled as unsigned 128-bit integers (an IPv4 address in the low 32 bits), so that
 * a CIDR is the inclusive interval [first, last] of its addresses and every test on CIDRs is an
 * integer comparison. Inclusive bounds keep ::/0 representable (its size, 2^128, is not).
 *
 * The table is one array of taken ranges, reservations and peer mappings alike, kept sorted by
 * (family, first, last). Looking a peer up by ID is a linear scan: the array holds at most
 * IPAM_MAX_RANGES entries and every change already costs a memmove of that order.
 *
 * The free-block search (find_free) walks the sorted array once per pool entry: the candidate
 * starts at the pool's first block; a range that ends before the candidate is passed over; a range
 * that starts after the candidate ends proves it free (every later range starts later still); a
 * range that overlaps it moves the candidate to the first aligned block after that range. The
 * candidate only moves forward, so every range is looked at once per pool entry: the search costs
 * O(taken ranges x pool entries) whatever the pool's size (a /0 pool of /128 blocks included). */
#include "network/ipam.h"
#include "common/strutil.h"
#include "common/xalloc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

__extension__ typedef unsigned __int128 ipam_u128;

#define IPAM_INITIAL_CAP 16
#define IPAM_NPOS        ((size_t)-1)

enum ipam_kind {
    IPAM_RESERVED,
    IPAM_PEER,
};

struct ipam_range {
    ipam_u128 first; /* the taken block's first and last address */
    ipam_u128 last;
    struct cidr cidr;       /* the taken block: the reservation, or the peer's mapped CIDR */
    struct cidr remote;     /* peers: the pod CIDR the peer announced (equal to cidr if kept) */
    uint8_t kind;           /* enum ipam_kind */
    char name[IPAM_ID_MAX]; /* the peer's ID, or the reservation's `what` */
};

struct ipam {
    struct ipam_range *ranges; /* ranges[0..n), sorted by range_cmp */
    size_t n;
    size_t cap; /* at most IPAM_MAX_RANGES */
    size_t n_peers;
    struct cidr pools[IPAM_MAX_POOLS];
    size_t n_pools;
};

/* Addresses as integers. */

static unsigned family_bits(uint8_t family)
{
    return family == 4 ? 32 : 128;
}

static size_t family_bytes(uint8_t family)
{
    return family == 4 ? 4 : 16;
}

static int family_af(uint8_t family)
{
    return family == 4 ? AF_INET : AF_INET6;
}

/* The host part's mask of a prefix: the last address of a block minus its first. */
static ipam_u128 host_mask(unsigned bits, unsigned prefix)
{
    unsigned n = bits - prefix;

    return n >= 128 ? ~(ipam_u128)0 : ((ipam_u128)1 << n) - 1;
}

static ipam_u128 bytes_value(const uint8_t *addr, uint8_t family)
{
    ipam_u128 v = 0;

    for (size_t i = 0; i < family_bytes(family); i++)
        v = (v << 8) | addr[i];
    return v;
}

/* Writes v as a big-endian address of the family; bytes past the family's size are zeroed. */
static void value_bytes(ipam_u128 v, uint8_t family, uint8_t addr[16])
{
    size_t n = family_bytes(family);

    memset(addr, 0, 16);
    for (size_t i = n; i-- > 0;) {
        addr[i] = (uint8_t)(v & 0xff);
        v >>= 8;
    }
}

static struct cidr make_cidr(uint8_t family, uint8_t prefix, ipam_u128 first)
{
    struct cidr c = {.family = family, .prefix = prefix};

    value_bytes(first, family, c.addr);
    return c;
}

static bool cidr_valid(const struct cidr *c)
{
    if (!c || (c->family != 4 && c->family != 6) || c->prefix > family_bits(c->family))
        return false;
    return (bytes_value(c->addr, c->family) & host_mask(family_bits(c->family), c->prefix)) == 0;
}

/* The first and last address of a valid CIDR. */
static void cidr_bounds(const struct cidr *c, ipam_u128 *first, ipam_u128 *last)
{
    *first = bytes_value(c->addr, c->family);
    *last = *first | host_mask(family_bits(c->family), c->prefix);
}

/* A copy with the bytes an IPv4 CIDR does not use zeroed, so that copies compare byte-wise. */
static struct cidr cidr_normal(const struct cidr *c)
{
    return make_cidr(c->family, c->prefix, bytes_value(c->addr, c->family));
}

/* Text. */

/* inet_pton already refuses "010.0.0.1" with glibc; this makes the rule independent of the libc:
 * no decimal component of a dotted quad (IPv4, or the IPv4 tail of an IPv6 address) may have a
 * leading zero. */
static bool dotted_ok(const char *s)
{
    const char *tail = strrchr(s, ':');

    if (!strchr(tail ? tail : s, '.'))
        return true; /* no dotted quad: hexadecimal groups may have leading zeros */
    for (const char *q = tail ? tail + 1 : s; *q; q++) {
        bool starts = q == s || q[-1] == '.' || q[-1] == ':';
        if (starts && q[0] == '0' && q[1] >= '0' && q[1] <= '9')
            return false;
    }
    return true;
}

/* Parses one address of the family (text without a prefix) into addr. */
static int addr_parse(const char *s, size_t len, uint8_t family, uint8_t addr[16])
{
    char host[INET6_ADDRSTRLEN];
    uint8_t bytes[16] = {0};

    if (len == 0 || len >= sizeof(host))
        return -EINVAL;
    memcpy(host, s, len);
    host[len] = '\0';
    if (!dotted_ok(host) || inet_pton(family_af(family), host, bytes) != 1)
        return -EINVAL;
    memcpy(addr, bytes, 16);
    return 0;
}

int cidr_parse(const char *s, struct cidr *ret)
{
    const char *slash, *pfx;
    struct cidr c = {0};
    uint64_t prefix;
    size_t len;
    int r;

    if (!s || !ret)
        return -EINVAL;
    len = strnlen(s, CIDR_STR_MAX);
    if (len >= CIDR_STR_MAX)
        return -EINVAL;
    slash = memchr(s, '/', len);
    if (!slash)
        return -EINVAL;
    c.family = memchr(s, ':', (size_t)(slash - s)) ? 6 : 4;
    r = addr_parse(s, (size_t)(slash - s), c.family, c.addr);
    if (r < 0)
        return r;
    /* parse_u64 refuses an empty string, signs, spaces and trailing text (a second '/'); a
     * leading zero ("/08") is refused here. A prefix too large to be a number is -ERANGE too. */
    pfx = slash + 1;
    if (pfx[0] == '0' && pfx[1] != '\0')
        return -EINVAL;
    r = parse_u64(pfx, family_bits(c.family), &prefix);
    if (r < 0)
        return r;
    c.prefix = (uint8_t)prefix;
    if (!cidr_valid(&c))
        return -EINVAL; /* host bits set */
    *ret = c;
    return 0;
}

int cidr_format(const struct cidr *c, char *buf, size_t size)
{
    char addr[INET6_ADDRSTRLEN], out[CIDR_STR_MAX];
    struct cidr n;
    int len;

    if (!cidr_valid(c) || !buf)
        return -EINVAL;
    n = cidr_normal(c);
    if (!inet_ntop(family_af(n.family), n.addr, addr, sizeof(addr)))
        return -EINVAL;
    len = snprintf(out, sizeof(out), "%s/%u", addr, (unsigned)n.prefix);
    if (len < 0 || (size_t)len >= sizeof(out))
        return -EINVAL;
    if ((size_t)len >= size)
        return -ENOSPC;
    memcpy(buf, out, (size_t)len + 1);
    return len;
}

/* Comparisons. */

bool cidr_equal(const struct cidr *a, const struct cidr *b)
{
    if (!a || !b || a->family != b->family || a->prefix != b->prefix)
        return false;
    return memcmp(a->addr, b->addr, family_bytes(a->family)) == 0;
}

bool cidr_overlaps(const struct cidr *a, const struct cidr *b)
{
    ipam_u128 af, al, bf, bl;

    if (!cidr_valid(a) || !cidr_valid(b) || a->family != b->family)
        return false;
    cidr_bounds(a, &af, &al);
    cidr_bounds(b, &bf, &bl);
    return af <= bl && bf <= al;
}

bool cidr_contains(const struct cidr *outer, const struct cidr *inner)
{
    ipam_u128 of, ol, inf, inl;

    if (!cidr_valid(outer) || !cidr_valid(inner) || outer->family != inner->family)
        return false;
    cidr_bounds(outer, &of, &ol);
    cidr_bounds(inner, &inf, &inl);
    return of <= inf && inl <= ol;
}

bool cidr_size_allowed(const struct cidr *c, unsigned min_prefix4, unsigned min_prefix6)
{
    if (!cidr_valid(c))
        return false;
    return c->prefix >= (c->family == 4 ? min_prefix4 : min_prefix6);
}

static unsigned clz128(ipam_u128 v)
{
    uint64_t hi = (uint64_t)(v >> 64), lo = (uint64_t)v;

    if (hi)
        return (unsigned)__builtin_clzll(hi);
    if (lo)
        return 64 + (unsigned)__builtin_clzll(lo);
    return 128;
}

int cidr_covering(const struct cidr *list, size_t n, struct cidr *ret)
{
    ipam_u128 lo = 0, hi = 0, first, last;
    unsigned bits, common;

    if (!list || n == 0 || !ret)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (!cidr_valid(&list[i]) || list[i].family != list[0].family)
            return -EINVAL;
        cidr_bounds(&list[i], &first, &last);
        if (i == 0 || first < lo)
            lo = first;
        if (i == 0 || last > hi)
            hi = last;
    }
    /* The smallest block holding both lo and hi holds everything between: its prefix is the
     * number of leading bits they share (all of them when lo == hi, a single address). */
    bits = family_bits(list[0].family);
    common = clz128(lo ^ hi) - (128 - bits);
    *ret = make_cidr(list[0].family, (uint8_t)common, lo & ~host_mask(bits, common));
    return 0;
}

int cidr_translate(const char *ip, const struct cidr *from, const struct cidr *to, char *buf,
                   size_t size)
{
    char out[INET6_ADDRSTRLEN];
    uint8_t addr[16];
    ipam_u128 v, mask;
    size_t len;

    if (!ip || !buf || !cidr_valid(from) || !cidr_valid(to) || from->family != to->family ||
        from->prefix != to->prefix)
        return -EINVAL;
    if (addr_parse(ip, strnlen(ip, INET6_ADDRSTRLEN), from->family, addr) < 0)
        return -EINVAL;
    v = bytes_value(addr, from->family);
    mask = host_mask(family_bits(from->family), from->prefix);
    if ((v & ~mask) != bytes_value(from->addr, from->family))
        return -EINVAL;
    value_bytes(bytes_value(to->addr, to->family) | (v & mask), to->family, addr);
    if (!inet_ntop(family_af(to->family), addr, out, sizeof(out)))
        return -EINVAL;
    len = strlen(out);
    if (len >= size)
        return -ENOSPC;
    memcpy(buf, out, len + 1);
    return (int)len;
}

/* The table. */

static int range_cmp(const struct ipam_range *a, const struct ipam_range *b)
{
    if (a->cidr.family != b->cidr.family)
        return a->cidr.family < b->cidr.family ? -1 : 1;
    if (a->first != b->first)
        return a->first < b->first ? -1 : 1;
    if (a->last != b->last)
        return a->last < b->last ? -1 : 1;
    return 0;
}

/* [*ret_lo, *ret_hi): the entries of one family. */
static void family_span(const struct ipam *p, uint8_t family, size_t *ret_lo, size_t *ret_hi)
{
    size_t lo = 0, hi;

    while (lo < p->n && p->ranges[lo].cidr.family < family)
        lo++;
    hi = lo;
    while (hi < p->n && p->ranges[hi].cidr.family == family)
        hi++;
    *ret_lo = lo;
    *ret_hi = hi;
}

static bool id_valid(const char *id)
{
    size_t len = id ? strnlen(id, IPAM_ID_MAX) : 0;

    return len > 0 && len < IPAM_ID_MAX;
}

static size_t find_peer(const struct ipam *p, const char *id)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->ranges[i].kind == IPAM_PEER && strcmp(p->ranges[i].name, id) == 0)
            return i;
    return IPAM_NPOS;
}

/* Whether c overlaps a taken range other than ranges[skip] (reservations only if
 * reserved_only). */
static bool overlaps_taken(const struct ipam *p, const struct cidr *c, size_t skip,
                           bool reserved_only)
{
    ipam_u128 first, last;
    size_t lo, hi;

    cidr_bounds(c, &first, &last);
    family_span(p, c->family, &lo, &hi);
    for (size_t i = lo; i < hi && p->ranges[i].first <= last; i++) {
        const struct ipam_range *e = &p->ranges[i];
        if (i != skip && e->last >= first && (!reserved_only || e->kind == IPAM_RESERVED))
            return true;
    }
    return false;
}

/* The first aligned block of the given size, in pool order then address order, that overlaps no
 * taken range except ranges[skip] (the peer's current mapping, released if the call succeeds). See
 * the file's comment for the walk. */
static bool find_free(const struct ipam *p, uint8_t family, uint8_t prefix, size_t skip,
                      struct cidr *ret)
{
    ipam_u128 mask = host_mask(family_bits(family), prefix);
    size_t lo, hi;

    family_span(p, family, &lo, &hi);
    for (size_t k = 0; k < p->n_pools; k++) {
        const struct cidr *pool = &p->pools[k];
        ipam_u128 pool_first, pool_last, cand;
        bool full = false;

        if (pool->family != family || pool->prefix > prefix)
            continue; /* another family, or smaller than one block */
        cidr_bounds(pool, &pool_first, &pool_last);
        cand = pool_first;
        for (size_t i = lo; i < hi; i++) {
            const struct ipam_range *e = &p->ranges[i];
            if (i == skip || e->last < cand)
                continue;
            if (e->first > cand + mask)
                break; /* free: every later range starts later still */
            /* e overlaps the candidate; e->last | mask is the last address of the block holding
             * e->last, and the next block is the first candidate after e. The pool's last address
             * also ends a block (the pool is aligned and not smaller than a block), so the next
             * block fits when that one ends before the pool does. */
            if ((e->last | mask) >= pool_last) {
                full = true;
                break;
            }
            cand = (e->last | mask) + 1;
        }
        if (!full) {
            *ret = make_cidr(family, prefix, cand);
            return true;
        }
    }
    return false;
}

/* Makes room for one more entry: -ENOSPC at IPAM_MAX_RANGES, -ENOMEM. Changes no entry. */
static int reserve_slot(struct ipam *p)
{
    struct ipam_range *r;
    size_t cap;

    if (p->n >= IPAM_MAX_RANGES)
        return -ENOSPC;
    if (p->n < p->cap)
        return 0;
    cap = p->cap ? p->cap * 2 : IPAM_INITIAL_CAP;
    if (cap > IPAM_MAX_RANGES)
        cap = IPAM_MAX_RANGES;
    r = x_reallocarray(p->ranges, cap, sizeof(*r));
    if (!r)
        return -ENOMEM;
    p->ranges = r;
    p->cap = cap;
    return 0;
}

/* Inserts e at its sorted place (after equal entries). The caller made room. */
static void insert_range(struct ipam *p, const struct ipam_range *e)
{
    size_t lo = 0, hi = p->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (range_cmp(&p->ranges[mid], e) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    memmove(&p->ranges[lo + 1], &p->ranges[lo], (p->n - lo) * sizeof(*e));
    p->ranges[lo] = *e;
    p->n++;
    if (e->kind == IPAM_PEER)
        p->n_peers++;
}

static void remove_range(struct ipam *p, size_t i)
{
    if (p->ranges[i].kind == IPAM_PEER)
        p->n_peers--;
    memmove(&p->ranges[i], &p->ranges[i + 1], (p->n - i - 1) * sizeof(p->ranges[0]));
    p->n--;
}

static struct ipam_range make_range(enum ipam_kind kind, const char *name, const struct cidr *taken,
                                    const struct cidr *remote)
{
    struct ipam_range e;

    memset(&e, 0, sizeof(e));
    e.kind = (uint8_t)kind;
    e.cidr = cidr_normal(taken);
    e.remote = cidr_normal(remote);
    cidr_bounds(&e.cidr, &e.first, &e.last);
    /* The callers checked the length. */
    memcpy(e.name, name, strnlen(name, IPAM_ID_MAX - 1));
    return e;
}

/* Replaces ranges[old] (IPAM_NPOS: none) by a new peer entry. The caller made room when old is
 * IPAM_NPOS. */
static void put_peer(struct ipam *p, size_t old, const char *id, const struct cidr *remote,
                     const struct cidr *mapped)
{
    struct ipam_range e = make_range(IPAM_PEER, id, mapped, remote);

    if (old != IPAM_NPOS)
        remove_range(p, old);
    insert_range(p, &e);
}

int ipam_new(struct ipam **ret)
{
    struct ipam *p;

    if (!ret)
        return -EINVAL;
    p = x_calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->pools[0] = make_cidr(4, 8, (ipam_u128)10 << 24);
    p->n_pools = 1;
    *ret = p;
    return 0;
}

struct ipam *ipam_free(struct ipam *p)
{
    if (!p)
        return NULL;
    x_free(p->ranges);
    x_free(p);
    return NULL;
}

int ipam_reserve(struct ipam *p, const struct cidr *c, const char *what)
{
    struct ipam_range e;
    size_t lo, hi;
    int r;

    if (!what)
        what = "";
    if (!p || !cidr_valid(c) || strnlen(what, IPAM_ID_MAX) >= IPAM_ID_MAX)
        return -EINVAL;
    family_span(p, c->family, &lo, &hi);
    for (size_t i = lo; i < hi; i++)
        if (p->ranges[i].kind == IPAM_RESERVED && cidr_equal(&p->ranges[i].cidr, c))
            return 0;
    r = reserve_slot(p);
    if (r < 0)
        return r;
    e = make_range(IPAM_RESERVED, what, c, c);
    insert_range(p, &e);
    return 0;
}

void ipam_clear_reserved(struct ipam *p)
{
    size_t kept = 0;

    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        if (p->ranges[i].kind != IPAM_RESERVED)
            p->ranges[kept++] = p->ranges[i];
    p->n = kept;
}

int ipam_set_pool(struct ipam *p, const struct cidr *pools, size_t n)
{
    if (!p || !pools || n == 0)
        return -EINVAL;
    if (n > IPAM_MAX_POOLS)
        return -ENOSPC;
    for (size_t i = 0; i < n; i++)
        if (!cidr_valid(&pools[i]))
            return -EINVAL;
    for (size_t i = 0; i < n; i++)
        p->pools[i] = cidr_normal(&pools[i]);
    p->n_pools = n;
    return 0;
}

int ipam_map_peer(struct ipam *p, const char *id, const struct cidr *remote,
                  struct cidr *ret_mapped, bool *ret_remapped)
{
    struct cidr mapped;
    size_t old;
    int r;

    if (!p || !id_valid(id) || !cidr_valid(remote))
        return -EINVAL;
    old = find_peer(p, id);
    if (old != IPAM_NPOS && cidr_equal(&p->ranges[old].remote, remote) &&
        !overlaps_taken(p, &p->ranges[old].cidr, old, true)) {
        mapped = p->ranges[old].cidr;
    } else {
        if (old == IPAM_NPOS) {
            r = reserve_slot(p);
            if (r < 0)
                return r;
        }
        /* The peer's current mapping (if any) does not count: it is released on success. */
        if (!overlaps_taken(p, remote, old, false))
            mapped = cidr_normal(remote);
        else if (!find_free(p, remote->family, remote->prefix, old, &mapped))
            return -ENOSPC;
        put_peer(p, old, id, remote, &mapped);
    }
    if (ret_mapped)
        *ret_mapped = mapped;
    if (ret_remapped)
        *ret_remapped = !cidr_equal(&mapped, remote);
    return 0;
}

int ipam_restore(struct ipam *p, const char *id, const struct cidr *remote,
                 const struct cidr *mapped)
{
    size_t old;
    int r;

    if (!p || !id_valid(id) || !cidr_valid(remote) || !cidr_valid(mapped) ||
        remote->family != mapped->family || remote->prefix != mapped->prefix)
        return -EINVAL;
    /* A peer already known is replaced: its current mapping does not count as an obstacle. */
    old = find_peer(p, id);
    if (overlaps_taken(p, mapped, old, false))
        return -EEXIST;
    if (old == IPAM_NPOS) {
        r = reserve_slot(p);
        if (r < 0)
            return r;
    }
    put_peer(p, old, id, remote, mapped);
    return 0;
}

void ipam_release_peer(struct ipam *p, const char *id)
{
    size_t i;

    if (!p || !id_valid(id))
        return;
    i = find_peer(p, id);
    if (i != IPAM_NPOS)
        remove_range(p, i);
}

int ipam_lookup(const struct ipam *p, const char *id, struct cidr *ret_remote,
                struct cidr *ret_mapped)
{
    size_t i;

    if (!p || !id_valid(id))
        return -ENOENT;
    i = find_peer(p, id);
    if (i == IPAM_NPOS)
        return -ENOENT;
    if (ret_remote)
        *ret_remote = p->ranges[i].remote;
    if (ret_mapped)
        *ret_mapped = p->ranges[i].cidr;
    return 0;
}

const char *ipam_reserved_name(const struct ipam *p, const struct cidr *c)
{
    ipam_u128 first, last;
    size_t lo, hi;

    if (!p || !cidr_valid(c))
        return NULL;
    cidr_bounds(c, &first, &last);
    family_span(p, c->family, &lo, &hi);
    for (size_t i = lo; i < hi && p->ranges[i].first <= last; i++)
        if (p->ranges[i].kind == IPAM_RESERVED && p->ranges[i].last >= first)
            return p->ranges[i].name;
    return NULL;
}

size_t ipam_conflicts(const struct ipam *p, const char **ids, size_t max)
{
    size_t count = 0;

    if (!p)
        return 0;
    for (size_t i = 0; i < p->n; i++) {
        const struct ipam_range *e = &p->ranges[i];
        if (e->kind != IPAM_PEER || !overlaps_taken(p, &e->cidr, i, true))
            continue;
        if (ids && count < max)
            ids[count] = e->name;
        count++;
    }
    return count;
}

size_t ipam_peer_count(const struct ipam *p)
{
    return p ? p->n_peers : 0;
}
