/* share: the broadcaster's computation, kept incrementally (see share.h for the rules).
 *
 * Data structures.
 *   Resources  names are interned into a fixed table of SHR_MAX_RESOURCES slots inside the state
 *              (no allocation), found through a small open-addressing index. Index 0 is always
 *              "pods". Every stored amount (a pod's contribution entry, a node's allocatable entry)
 *              holds a reference on its slot; a slot without references is recycled when the table
 *              is full, so names seen once (a typo in a request, a long-gone device plugin) do not
 *              lock the table forever. Amounts of a slot without references are all zero, so the
 *              dense vectors indexed by slot never need to be cleared.
 *   Origins    consumers (label virtualkubelet.liqo.io/origin) are interned the same way, up to
 *              SHR_MAX_ORIGINS records, each with the usage of its counted pods; a record whose
 *              pods are all gone is recycled when the table is full.
 *   Nodes      a hash table of node records by name. A record holds the node's allocatable (sparse:
 *              slot and value), the summed usage of the pods bound to it (dense, by slot, grown on
 *              demand) and the same per origin (a short array of origins present on the node). A
 *              record also exists for a node that pods name but the state does not know (yet):
 *              it is not counted and disappears with its last pod. Unscheduled pods are bound to a
 *              permanent record inside the state that always counts.
 *   Pods       a hash table of pod records by namespace and name. A record is one allocation: the
 *              bound node, the origin, and the contribution as parallel arrays of values and slots
 *              (only non-zero amounts, "pods" included). A terminal pod has a record with no
 *              contribution and is bound to nothing.
 *   Totals     running sums over the counted objects: availability, usage, usage per origin, and
 *              per slot the number of counted nodes that list it (a resource is offered while that
 *              number is not zero).
 *
 * Arithmetic. A single amount (an allocatable, a pod's effective request) is an int64 in the
 * resource's smallest unit; a pod's effective request that exceeds INT64_MAX saturates there (it is
 * stored as saturated, so that removing it later is exact). Sums (per node, per origin, totals) are
 * 128-bit: they are exact and cannot overflow (fewer than 2^63 amounts of at most 2^63 each).
 * Results leaving the state (shr_totals, shr_offer) saturate at INT64_MAX. The percentage is
 * applied to the 128-bit difference, floored, negatives giving 0.
 *
 * Failure atomicity. Each update first computes the object's new contribution (on the stack), then
 * makes every allocation it may need (table growth, new records, vector growth: none of which is
 * visible), and only then commits, with no failure possible. On -ENOMEM the new allocations are
 * released and the visible state is unchanged; an interned name or origin may remain (without
 * references, invisible) and the statistics counters may have advanced.
 *
 * Speed. Quantities of the usual forms (digits with no suffix, "m", k M G T or Ki Mi Gi Ti) are
 * converted without kq_parse, with the same results (a differential unit test checks it); others go
 * through kq_parse. Resource names are found through a small cache by length and first and last
 * bytes before the hash index. Each event makes one pass over the object's few fields of interest
 * (jansson's hashed lookups: iterating the members was measured slower).
 *
 * Memory accounting: every allocation counts as the glibc chunk it occupies (request + 8-byte
 * header, rounded up to 16, at least 32), as in kube/store.c, plus the state structure itself. */
#include "advertisement/share.h"
#include "common/xalloc.h"
#include "kube/quantity.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

#define POD_SLOT        0          /* the slot of "pods", interned at creation */
#define RES_INDEX_SLOTS 128        /* resource name index: twice SHR_MAX_RESOURCES */
#define RES_CACHE_SLOTS 64         /* recently found names, by length and first and last bytes */
#define ORG_INDEX_SLOTS 2048       /* origin name index: twice SHR_MAX_ORIGINS */
#define OBJ_NAME_MAX    253        /* longest node, pod or namespace name accepted */
#define ORIGIN_MAX      63         /* longest origin label value (a Kubernetes label value) */
#define TAB_MAX_CAP     (1u << 30) /* largest hash table, in slots */
#define LABEL_TYPE_LIQO "liqo.io/type"
#define LABEL_TYPE      "type"
#define VIRTUAL_NODE    "virtual-node"
#define INT64_MAX_I128  ((i128)INT64_MAX)

/* Open addressing with linear probing and backward-shift deletion; slots hold record pointers and
 * every record starts with its 32-bit hash. */
struct tab {
    void **slots;
    uint32_t cap; /* 0 or a power of two */
    uint32_t n;
};

/* A node's usage by the pods of one origin. */
struct norg {
    uint16_t origin;
    uint8_t cap; /* slots of used */
    uint32_t npods;
    i128 *used;
};

enum {
    NODE_KNOWN = 1,   /* the node object was given (else only pods name it) */
    NODE_COUNTED = 2, /* known, Ready, schedulable, physical */
};

struct shr_node {
    uint32_t hash;
    uint16_t name_len;
    uint8_t flags;
    uint8_t nalloc; /* entries of alloc */
    uint8_t ucap;   /* slots of used */
    uint16_t norgs, corgs;
    uint32_t npods; /* pods bound (non-terminal) */
    int64_t *alloc; /* nalloc values, then nalloc slot bytes */
    i128 *used;     /* by slot */
    struct norg *orgs;
    char name[];
};

/* A pod record: header, then int64_t val[n], uint8_t slot[n], key[key_len + 1] (namespace, NUL,
 * name, NUL). */
struct shr_pod {
    uint32_t hash;
    uint16_t key_len;
    uint8_t n;
    uint8_t pad;
    uint16_t origin;       /* 0: none, else the origin's index + 1 */
    struct shr_node *node; /* NULL: terminal, contributes nothing */
    int64_t val[];
};

struct shr_origin {
    uint32_t hash;
    uint32_t refs;                /* pods bound with this origin */
    i128 used[SHR_MAX_RESOURCES]; /* usage of its counted pods */
    uint16_t len;
    char name[];
};

struct shr_state {
    uint64_t seed;
    size_t mem;
    /* resources */
    uint64_t res_live;
    uint8_t nres_sorted;
    uint8_t res_sorted[SHR_MAX_RESOURCES]; /* live slots by name */
    int8_t res_index[RES_INDEX_SLOTS];     /* -1 empty, else slot */
    int8_t res_cache[RES_CACHE_SLOTS];     /* -1, or a slot recently found (see res_intern) */
    uint32_t res_hash[SHR_MAX_RESOURCES];
    uint8_t res_len[SHR_MAX_RESOURCES];
    bool res_cpu[SHR_MAX_RESOURCES];
    uint32_t res_refs[SHR_MAX_RESOURCES];        /* stored amounts naming the slot */
    uint32_t res_avail_nodes[SHR_MAX_RESOURCES]; /* counted nodes listing it */
    char res_name[SHR_MAX_RESOURCES][SHR_NAME_MAX];
    i128 avail[SHR_MAX_RESOURCES];
    i128 used[SHR_MAX_RESOURCES];
    /* origins */
    struct shr_origin *orig[SHR_MAX_ORIGINS]; /* NULL: free */
    uint16_t org_index[ORG_INDEX_SLOTS];      /* 0 empty, else index + 1 */
    size_t norig, live_origins;
    /* objects */
    struct tab nodes, pods;
    size_t known_nodes, counted_nodes, counted_pods;
    size_t dropped_resources, dropped_origins, bad_quantities;
    /* The bucket of pods without nodeName: always counted. Last, because its name[] is a flexible
     * array member (clang refuses one anywhere else). */
    struct shr_node unsched;
};

/* ---- memory ---------------------------------------------------------------------------------- */

static size_t chunk(size_t n)
{
    size_t c = (n + 8 + 15) & ~(size_t)15;
    return c < 32 ? 32 : c;
}

static void *mem_alloc(struct shr_state *s, size_t n)
{
    void *p = x_malloc(n);

    if (p)
        s->mem += chunk(n);
    return p;
}

static void *mem_calloc(struct shr_state *s, size_t n)
{
    void *p = x_calloc(1, n);

    if (p)
        s->mem += chunk(n);
    return p;
}

/* Grows a zero-filled vector of i128 from `old` to `now` slots; the new slots are zero. */
static int mem_grow_i128(struct shr_state *s, i128 **v, size_t old, size_t now)
{
    i128 *p = x_reallocarray(*v, now, sizeof(i128));

    if (!p)
        return -ENOMEM;
    memset(p + old, 0, (now - old) * sizeof(i128));
    if (*v)
        s->mem -= chunk(old * sizeof(i128));
    s->mem += chunk(now * sizeof(i128));
    *v = p;
    return 0;
}

static void mem_free(struct shr_state *s, void *p, size_t n)
{
    if (!p)
        return;
    s->mem -= chunk(n);
    x_free(p);
}

/* ---- hashing and tables ---------------------------------------------------------------------- */

/* A seeded hash of n bytes, eight at a time (names and keys are short: this is most of the cost
 * of a lookup). Each word is mixed by a multiplication and a shift, and the result by the murmur3
 * finaliser. Not a cryptographic hash: the seed, drawn at random per state, makes colliding names
 * hard to choose from outside. */
static uint32_t hash_bytes(uint64_t seed, const char *p, size_t n)
{
    const uint64_t k = 0x9fb21c651e98df25ULL;
    uint64_t h = seed ^ ((uint64_t)n * 0x9e3779b97f4a7c15ULL), w;

    for (; n >= 8; p += 8, n -= 8) {
        memcpy(&w, p, 8);
        h = (h ^ w) * k;
        h ^= h >> 29;
    }
    if (n) {
        w = 0;
        for (size_t i = 0; i < n; i++)
            w |= (uint64_t)(unsigned char)p[i] << (8 * i);
        h = (h ^ w) * k;
        h ^= h >> 29;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return (uint32_t)h;
}

static uint32_t rec_hash(const void *e)
{
    uint32_t h;

    memcpy(&h, e, sizeof(h));
    return h;
}

static size_t tab_bytes(const struct tab *t)
{
    return t->cap ? chunk((size_t)t->cap * sizeof(void *)) : 0;
}

/* Makes room for `more` insertions without growth (load factor at most 3/4). */
static int tab_reserve(struct shr_state *s, struct tab *t, uint32_t more)
{
    uint64_t need = (uint64_t)t->n + more;
    uint32_t ncap = t->cap ? t->cap : 16;
    void **ns;

    if (need * 4 <= (uint64_t)t->cap * 3)
        return 0;
    while (need * 4 > (uint64_t)ncap * 3) {
        if (ncap >= TAB_MAX_CAP)
            return -ENOMEM;
        ncap *= 2;
    }
    ns = x_calloc(ncap, sizeof(*ns));
    if (!ns)
        return -ENOMEM;
    for (uint32_t i = 0; i < t->cap; i++) {
        if (!t->slots[i])
            continue;
        uint32_t j = rec_hash(t->slots[i]) & (ncap - 1);
        while (ns[j])
            j = (j + 1) & (ncap - 1);
        ns[j] = t->slots[i];
    }
    s->mem -= tab_bytes(t);
    x_free(t->slots);
    t->slots = ns;
    t->cap = ncap;
    s->mem += tab_bytes(t);
    return 0;
}

/* Inserts a record known to be absent, after tab_reserve. */
static void tab_insert(struct tab *t, void *e)
{
    uint32_t i = rec_hash(e) & (t->cap - 1);

    while (t->slots[i])
        i = (i + 1) & (t->cap - 1);
    t->slots[i] = e;
    t->n++;
}

/* Replaces record `old` by `now` (same hash and key). */
static void tab_replace(struct tab *t, const void *old, void *now)
{
    for (uint32_t i = rec_hash(old) & (t->cap - 1); t->slots[i]; i = (i + 1) & (t->cap - 1))
        if (t->slots[i] == old) {
            t->slots[i] = now;
            return;
        }
}

static void tab_remove(struct tab *t, const void *e)
{
    uint32_t mask = t->cap - 1, i, j;

    if (!t->cap)
        return;
    for (i = rec_hash(e) & mask; t->slots[i] != e; i = (i + 1) & mask)
        if (!t->slots[i])
            return;
    t->slots[i] = NULL;
    t->n--;
    /* Backward shift: move later records of the cluster into the hole when their home slot does
     * not lie cyclically in (hole, j]. */
    for (j = i;;) {
        j = (j + 1) & mask;
        if (!t->slots[j])
            break;
        uint32_t home = rec_hash(t->slots[j]) & mask;
        if (((j - home) & mask) >= ((j - i) & mask)) {
            t->slots[i] = t->slots[j];
            t->slots[j] = NULL;
            i = j;
        }
    }
}

/* ---- records --------------------------------------------------------------------------------- */

static size_t pod_size(unsigned n, size_t key_len)
{
    return sizeof(struct shr_pod) + (size_t)n * (sizeof(int64_t) + 1) + key_len + 1;
}

static uint8_t *pod_slots(struct shr_pod *p)
{
    return (uint8_t *)(p->val + p->n);
}

static char *pod_key(struct shr_pod *p)
{
    return (char *)pod_slots(p) + p->n;
}

static size_t node_size(size_t name_len)
{
    return sizeof(struct shr_node) + name_len + 1;
}

static size_t alloc_size(unsigned n)
{
    return (size_t)n * (sizeof(int64_t) + 1);
}

static uint8_t *alloc_slots(const struct shr_node *n)
{
    return (uint8_t *)(n->alloc + n->nalloc);
}

static struct shr_pod *pod_find(const struct shr_state *s, uint32_t hash, const char *key,
                                size_t key_len)
{
    const struct tab *t = &s->pods;

    if (!t->cap)
        return NULL;
    for (uint32_t i = hash & (t->cap - 1); t->slots[i]; i = (i + 1) & (t->cap - 1)) {
        struct shr_pod *p = t->slots[i];
        if (p->hash == hash && p->key_len == key_len && memcmp(pod_key(p), key, key_len) == 0)
            return p;
    }
    return NULL;
}

static struct shr_node *node_find(const struct shr_state *s, uint32_t hash, const char *name,
                                  size_t len)
{
    const struct tab *t = &s->nodes;

    if (!t->cap)
        return NULL;
    for (uint32_t i = hash & (t->cap - 1); t->slots[i]; i = (i + 1) & (t->cap - 1)) {
        struct shr_node *n = t->slots[i];
        if (n->hash == hash && n->name_len == len && memcmp(n->name, name, len) == 0)
            return n;
    }
    return NULL;
}

/* A fresh, unknown, uncounted node record (not in the table). */
static struct shr_node *node_new(struct shr_state *s, uint32_t hash, const char *name, size_t len)
{
    struct shr_node *n = mem_calloc(s, node_size(len));

    if (!n)
        return NULL;
    n->hash = hash;
    n->name_len = (uint16_t)len;
    memcpy(n->name, name, len);
    n->name[len] = '\0';
    return n;
}

static void node_destroy(struct shr_state *s, struct shr_node *n)
{
    for (uint16_t i = 0; i < n->norgs; i++)
        mem_free(s, n->orgs[i].used, n->orgs[i].cap * sizeof(i128));
    mem_free(s, n->orgs, n->corgs * sizeof(struct norg));
    mem_free(s, n->used, n->ucap * sizeof(i128));
    mem_free(s, n->alloc, alloc_size(n->nalloc));
    if (n != &s->unsched)
        mem_free(s, n, node_size(n->name_len));
}

static struct norg *node_org(struct shr_node *n, uint16_t origin)
{
    for (uint16_t i = 0; i < n->norgs; i++)
        if (n->orgs[i].origin == origin)
            return &n->orgs[i];
    return NULL;
}

/* ---- resource names -------------------------------------------------------------------------- */

static bool name_ok(const char *name, size_t len)
{
    return len > 0 && len < SHR_NAME_MAX && memchr(name, '\0', len) == NULL;
}

static int res_lookup(const struct shr_state *s, const char *name, size_t len, uint32_t hash)
{
    for (uint32_t i = hash & (RES_INDEX_SLOTS - 1); s->res_index[i] >= 0;
         i = (i + 1) & (RES_INDEX_SLOTS - 1)) {
        int slot = s->res_index[i];
        if (s->res_hash[slot] == hash && s->res_len[slot] == len &&
            memcmp(s->res_name[slot], name, len) == 0)
            return slot;
    }
    return -1;
}

/* Rebuilds the name index and the sorted order from the live slots. */
static void res_reindex(struct shr_state *s)
{
    memset(s->res_index, -1, sizeof(s->res_index));
    memset(s->res_cache, -1, sizeof(s->res_cache));
    s->nres_sorted = 0;
    for (int slot = 0; slot < SHR_MAX_RESOURCES; slot++) {
        if (!(s->res_live & (UINT64_C(1) << slot)))
            continue;
        uint32_t i = s->res_hash[slot] & (RES_INDEX_SLOTS - 1);
        while (s->res_index[i] >= 0)
            i = (i + 1) & (RES_INDEX_SLOTS - 1);
        s->res_index[i] = (int8_t)slot;
        /* Insertion into the sorted order. */
        uint8_t k = s->nres_sorted++;
        while (k > 0 && strcmp(s->res_name[s->res_sorted[k - 1]], s->res_name[slot]) > 0) {
            s->res_sorted[k] = s->res_sorted[k - 1];
            k--;
        }
        s->res_sorted[k] = (uint8_t)slot;
    }
}

/* The slot of resource `name` (len bytes, not necessarily NUL-terminated), interned if new.
 * Slots in `protect` are being used by the caller and are not recycled even without references.
 * Returns the slot, or -1 when the name is invalid or the table is full (counted as dropped). */
static int res_intern(struct shr_state *s, const char *name, size_t len, uint64_t protect)
{
    uint32_t hash;
    unsigned c = 0;
    int slot;

    /* The last slot seen for this length and these first and last bytes, if it is the name: the
     * same few names come again and again. */
    if (len) {
        c = ((unsigned)len * 31u + (unsigned char)name[0] * 7u + (unsigned char)name[len - 1]) &
            (RES_CACHE_SLOTS - 1);
        slot = s->res_cache[c];
        if (slot >= 0 && s->res_len[slot] == len && memcmp(s->res_name[slot], name, len) == 0)
            return slot;
    }
    /* Looked up before validation: a stored name is valid, so an invalid one never matches. */
    hash = hash_bytes(s->seed, name, len);
    slot = res_lookup(s, name, len, hash);
    if (slot >= 0) {
        s->res_cache[c] = (int8_t)slot;
        return slot;
    }
    if (!name_ok(name, len)) {
        s->dropped_resources++;
        return -1;
    }
    if (s->res_live == UINT64_MAX) {
        /* Full: recycle the slots nothing refers to. */
        for (int i = 0; i < SHR_MAX_RESOURCES; i++)
            if (s->res_refs[i] == 0 && i != POD_SLOT && !(protect & (UINT64_C(1) << i)))
                s->res_live &= ~(UINT64_C(1) << i);
        if (s->res_live == UINT64_MAX) {
            s->dropped_resources++;
            return -1;
        }
        res_reindex(s);
    }
    slot = __builtin_ctzll(~s->res_live);
    memcpy(s->res_name[slot], name, len);
    s->res_name[slot][len] = '\0';
    s->res_hash[slot] = hash;
    s->res_len[slot] = (uint8_t)len;
    s->res_cpu[slot] = len == 3 && memcmp(name, "cpu", 3) == 0;
    s->res_live |= UINT64_C(1) << slot;
    /* Insert into the index and the sorted order. */
    {
        uint32_t i = hash & (RES_INDEX_SLOTS - 1);
        uint8_t k;

        while (s->res_index[i] >= 0)
            i = (i + 1) & (RES_INDEX_SLOTS - 1);
        s->res_index[i] = (int8_t)slot;
        k = s->nres_sorted++;
        while (k > 0 && strcmp(s->res_name[s->res_sorted[k - 1]], s->res_name[slot]) > 0) {
            s->res_sorted[k] = s->res_sorted[k - 1];
            k--;
        }
        s->res_sorted[k] = (uint8_t)slot;
    }
    return slot;
}

/* ---- origins --------------------------------------------------------------------------------- */

static size_t origin_size(size_t len)
{
    return sizeof(struct shr_origin) + len + 1;
}

static int origin_lookup(const struct shr_state *s, const char *name, size_t len, uint32_t hash)
{
    for (uint32_t i = hash & (ORG_INDEX_SLOTS - 1); s->org_index[i];
         i = (i + 1) & (ORG_INDEX_SLOTS - 1)) {
        const struct shr_origin *o = s->orig[s->org_index[i] - 1];
        if (o->hash == hash && o->len == len && memcmp(o->name, name, len) == 0)
            return s->org_index[i] - 1;
    }
    return -1;
}

static void origin_index_add(struct shr_state *s, int idx)
{
    uint32_t i = s->orig[idx]->hash & (ORG_INDEX_SLOTS - 1);

    while (s->org_index[i])
        i = (i + 1) & (ORG_INDEX_SLOTS - 1);
    s->org_index[i] = (uint16_t)(idx + 1);
}

/* The index of origin `name` (interned if new) in *ret: -1 when the value is not usable or the
 * table is full of origins in use (counted as dropped: the pod counts as an ordinary pod). Returns
 * 0 or -ENOMEM. */
static int origin_intern(struct shr_state *s, const char *name, size_t len, int *ret)
{
    struct shr_origin *o;
    uint32_t hash;
    int idx;

    if (len > ORIGIN_MAX || memchr(name, '\0', len)) {
        s->dropped_origins++;
        *ret = -1;
        return 0;
    }
    hash = hash_bytes(s->seed, name, len);
    idx = origin_lookup(s, name, len, hash);
    if (idx >= 0) {
        *ret = idx;
        return 0;
    }
    if (s->norig == SHR_MAX_ORIGINS) {
        /* Full: recycle the origins without pods (their usage is zero). */
        for (int i = 0; i < SHR_MAX_ORIGINS; i++) {
            if (s->orig[i] && s->orig[i]->refs == 0) {
                mem_free(s, s->orig[i], origin_size(s->orig[i]->len));
                s->orig[i] = NULL;
                s->norig--;
            }
        }
        if (s->norig == SHR_MAX_ORIGINS) {
            s->dropped_origins++;
            *ret = -1;
            return 0;
        }
        memset(s->org_index, 0, sizeof(s->org_index));
        for (int i = 0; i < SHR_MAX_ORIGINS; i++)
            if (s->orig[i])
                origin_index_add(s, i);
    }
    o = mem_calloc(s, origin_size(len));
    if (!o)
        return -ENOMEM;
    o->hash = hash;
    o->len = (uint16_t)len;
    memcpy(o->name, name, len);
    o->name[len] = '\0';
    for (idx = 0; s->orig[idx]; idx++)
        ;
    s->orig[idx] = o;
    s->norig++;
    origin_index_add(s, idx);
    *ret = idx;
    return 0;
}

/* ---- quantities ------------------------------------------------------------------------------ */

/* Multipliers of the suffixes the fast path takes, in units and in thousandths of a unit: the
 * decimal ones (k M G T) and the binary ones (Ki Mi Gi Ti). "m" is handled apart; anything else
 * goes to kq_parse. */
static const struct {
    char c;
    bool binary;
    uint64_t unit, milli;
} fast_suffixes[] = {
    {'k', false, UINT64_C(1000), UINT64_C(1000000)},
    {'M', false, UINT64_C(1000000), UINT64_C(1000000000)},
    {'G', false, UINT64_C(1000000000), UINT64_C(1000000000000)},
    {'T', false, UINT64_C(1000000000000), UINT64_C(1000000000000000)},
    {'K', true, UINT64_C(1) << 10, (UINT64_C(1) << 10) * 1000},
    {'M', true, UINT64_C(1) << 20, (UINT64_C(1) << 20) * 1000},
    {'G', true, UINT64_C(1) << 30, (UINT64_C(1) << 30) * 1000},
    {'T', true, UINT64_C(1) << 40, (UINT64_C(1) << 40) * 1000},
};

/* The fast path of quantity_value for the forms objects nearly always use: up to 18 digits (so no
 * overflow) and no suffix, "m", or one of fast_suffixes. Exactly what kq_parse followed by
 * kq_value or kq_milli_value gives: these quantities are integers times an integer factor, or
 * thousandths ("m", rounded up to units). Returns 1 with *ret set, or 0 when the text is not of
 * this form or the result would not fit (the caller then takes the general path, which also
 * applies upstream's cap of binary quantities). */
static int quantity_fast(const char *t, size_t len, bool milli, int64_t *ret)
{
    uint64_t d = 0, mult;
    size_t i = 0;
    int64_t v;

    while (i < len && i < 18 && t[i] >= '0' && t[i] <= '9')
        d = d * 10 + (uint64_t)(t[i++] - '0');
    if (i == 0)
        return 0;
    if (i == len) {
        mult = milli ? 1000 : 1;
    } else if (i + 1 == len && t[i] == 'm') {
        if (milli) {
            *ret = (int64_t)d;
        } else {
            *ret = (int64_t)(d / 1000 + (d % 1000 != 0));
        }
        return 1;
    } else {
        bool binary = i + 2 == len && t[i + 1] == 'i';
        size_t k;

        if (i + 1 != len && !binary)
            return 0;
        for (k = 0; k < sizeof(fast_suffixes) / sizeof(fast_suffixes[0]); k++)
            if (fast_suffixes[k].c == t[i] && fast_suffixes[k].binary == binary)
                break;
        if (k == sizeof(fast_suffixes) / sizeof(fast_suffixes[0]))
            return 0;
        mult = milli ? fast_suffixes[k].milli : fast_suffixes[k].unit;
    }
    if (__builtin_mul_overflow(d, mult, &v))
        return 0;
    *ret = v;
    return 1;
}

/* The value of quantity text t (len bytes) in the smallest unit of a resource (thousandths when
 * `milli`, for cpu), rounded up as kq_value/kq_milli_value do. Returns 0, -EINVAL or -ERANGE
 * (a negative value is -ERANGE: no request or allocatable is negative). */
static int quantity_value(const char *t, size_t len, bool milli, int64_t *ret)
{
    struct kq q;
    int64_t v;
    int r;

    if (quantity_fast(t, len, milli, ret))
        return 0;
    if (len == 0 || memchr(t, '\0', len))
        return -EINVAL;
    r = kq_parse(t, &q);
    if (r < 0)
        return r;
    r = milli ? kq_milli_value(&q, &v) : kq_value(&q, &v);
    if (r < 0)
        return r;
    if (v < 0)
        return -ERANGE;
    *ret = v;
    return 0;
}

/* The amount of a JSON quantity for slot `slot`, or -1 (counted) when it is not a valid
 * non-negative quantity that fits an int64. */
static int64_t amount_of(struct shr_state *s, int slot, const json_t *v)
{
    int64_t a;

    if (!json_is_string(v) ||
        quantity_value(json_string_value(v), json_string_length(v), s->res_cpu[slot], &a) < 0) {
        s->bad_quantities++;
        return -1;
    }
    return a;
}

/* ---- object fields --------------------------------------------------------------------------- */

static const char *str_field(const json_t *obj, const char *key, size_t *ret_len)
{
    const json_t *v = json_object_get(obj, key);

    if (!json_is_string(v))
        return NULL;
    *ret_len = json_string_length(v);
    return json_string_value(v);
}

static const char *label(const json_t *meta, const char *key, size_t *ret_len)
{
    return str_field(json_object_get(meta, "labels"), key, ret_len);
}

static bool label_is(const json_t *labels, const char *key, const char *value)
{
    size_t len;
    const char *v = str_field(labels, key, &len);

    return v && len == strlen(value) && memcmp(v, value, len) == 0;
}

/* ---- contributions --------------------------------------------------------------------------- */

/* A sparse vector being built: values of the slots in mask. */
struct acc {
    uint64_t mask;
    i128 v[SHR_MAX_RESOURCES];
};

enum acc_op {
    ACC_SUM,
    ACC_MAX,
};

/* Adds (or takes the maximum with) the amounts of the quantity map `map` into a. `protect` holds
 * the slots the caller is already using. */
static void acc_map(struct shr_state *s, const json_t *map, struct acc *a, enum acc_op op,
                    uint64_t protect)
{
    const char *key;
    json_t *v;

    if (!json_is_object(map))
        return;
    json_object_foreach((json_t *)map, key, v)
    {
        int slot = res_intern(s, key, json_object_iter_key_len(json_object_key_to_iter(key)),
                              protect | a->mask);
        uint64_t bit;
        int64_t x;

        if (slot < 0)
            continue;
        x = amount_of(s, slot, v);
        if (x < 0)
            continue;
        bit = UINT64_C(1) << slot;
        if (!(a->mask & bit)) {
            a->mask |= bit;
            a->v[slot] = x;
        } else if (op == ACC_SUM) {
            a->v[slot] += x;
        } else if (x > a->v[slot]) {
            a->v[slot] = x;
        }
    }
}

static void acc_containers(struct shr_state *s, const json_t *list, struct acc *a, enum acc_op op,
                           uint64_t protect)
{
    size_t i;
    json_t *c;

    if (!json_is_array(list))
        return;
    json_array_foreach(list, i, c)
    {
        acc_map(s, json_object_get(json_object_get(c, "resources"), "requests"), a, op, protect);
    }
}

/* A pod's new contribution: slots and values of its non-zero amounts, "pods" included. */
struct contrib {
    unsigned n;
    int max_slot;
    uint8_t slot[SHR_MAX_RESOURCES];
    int64_t val[SHR_MAX_RESOURCES];
};

/* The effective requests of a pod: max(sum of containers, max of init containers) + overhead,
 * each saturated at INT64_MAX; "pods" is 1 whatever the object says. */
static void pod_contrib(struct shr_state *s, const json_t *spec, struct contrib *ret)
{
    struct acc sum, init, ov;
    uint64_t all;

    sum.mask = init.mask = ov.mask = 0;
    acc_containers(s, json_object_get(spec, "containers"), &sum, ACC_SUM, 0);
    acc_containers(s, json_object_get(spec, "initContainers"), &init, ACC_MAX, sum.mask);
    acc_map(s, json_object_get(spec, "overhead"), &ov, ACC_SUM, sum.mask | init.mask);
    all = sum.mask | init.mask | ov.mask;
    ret->n = 1;
    ret->slot[0] = POD_SLOT;
    ret->val[0] = 1;
    ret->max_slot = POD_SLOT;
    all &= ~(UINT64_C(1) << POD_SLOT);
    while (all) {
        int slot = __builtin_ctzll(all);
        uint64_t bit = UINT64_C(1) << slot;
        i128 e = 0;

        all &= all - 1;
        if (sum.mask & bit)
            e = sum.v[slot];
        if ((init.mask & bit) && init.v[slot] > e)
            e = init.v[slot];
        if (ov.mask & bit)
            e += ov.v[slot];
        if (e == 0)
            continue;
        ret->slot[ret->n] = (uint8_t)slot;
        ret->val[ret->n] = e > INT64_MAX_I128 ? INT64_MAX : (int64_t)e;
        ret->n++;
        if (slot > ret->max_slot)
            ret->max_slot = slot;
    }
}

/* ---- applying contributions ------------------------------------------------------------------ */

static bool node_counted(const struct shr_node *n)
{
    return n->flags & NODE_COUNTED;
}

/* Adds (sign 1) or removes (sign -1) pod p's contribution to its node, its origin and, when the
 * node counts, to the totals. Capacities were ensured beforehand. */
static void pod_apply(struct shr_state *s, struct shr_pod *p, int sign)
{
    struct shr_node *n = p->node;
    struct norg *no = NULL;
    struct shr_origin *o = NULL;
    const uint8_t *slots = pod_slots(p);
    bool counted = node_counted(n);

    if (p->origin) {
        no = node_org(n, p->origin - 1);
        o = s->orig[p->origin - 1];
    }
    for (unsigned i = 0; i < p->n; i++) {
        uint8_t slot = slots[i];
        i128 v = sign > 0 ? (i128)p->val[i] : -(i128)p->val[i];

        n->used[slot] += v;
        if (no)
            no->used[slot] += v;
        if (counted) {
            s->used[slot] += v;
            if (o)
                o->used[slot] += v;
        }
        s->res_refs[slot] += (uint32_t)sign;
    }
    n->npods += (uint32_t)sign;
    if (no)
        no->npods += (uint32_t)sign;
    if (o) {
        if (sign > 0 && o->refs++ == 0)
            s->live_origins++;
        else if (sign < 0 && --o->refs == 0)
            s->live_origins--;
    }
    if (counted) {
        if (sign > 0)
            s->counted_pods++;
        else
            s->counted_pods--;
    }
}

/* Drops what an emptied node record no longer needs: its origin entries without pods, and the
 * record itself when the node is unknown and has no pods. */
static void node_tidy(struct shr_state *s, struct shr_node *n)
{
    for (uint16_t i = 0; i < n->norgs;) {
        if (n->orgs[i].npods) {
            i++;
            continue;
        }
        mem_free(s, n->orgs[i].used, n->orgs[i].cap * sizeof(i128));
        n->orgs[i] = n->orgs[--n->norgs];
    }
    if (n != &s->unsched && !(n->flags & NODE_KNOWN) && n->npods == 0) {
        tab_remove(&s->nodes, n);
        node_destroy(s, n);
    }
}

/* Moves a node's allocatable and its pods' usage into (sign 1) or out of (sign -1) the totals:
 * O(resources x origins on the node). */
static void node_count(struct shr_state *s, struct shr_node *n, int sign)
{
    const uint8_t *slots = alloc_slots(n);

    for (unsigned i = 0; i < n->nalloc; i++) {
        s->avail[slots[i]] += sign > 0 ? (i128)n->alloc[i] : -(i128)n->alloc[i];
        s->res_avail_nodes[slots[i]] += (uint32_t)sign;
    }
    for (unsigned r = 0; r < n->ucap; r++)
        s->used[r] += sign > 0 ? n->used[r] : -n->used[r];
    for (uint16_t k = 0; k < n->norgs; k++) {
        struct shr_origin *o = s->orig[n->orgs[k].origin];
        for (unsigned r = 0; r < n->orgs[k].cap; r++)
            o->used[r] += sign > 0 ? n->orgs[k].used[r] : -n->orgs[k].used[r];
    }
    if (sign > 0) {
        s->counted_pods += n->npods;
        s->counted_nodes++;
    } else {
        s->counted_pods -= n->npods;
        s->counted_nodes--;
    }
}

static uint8_t vec_cap(int max_slot)
{
    return (uint8_t)(((unsigned)max_slot + 8) & ~7u);
}

/* ---- lifecycle ------------------------------------------------------------------------------- */

int shr_new(struct shr_state **ret)
{
    struct shr_state *s;

    if (!ret)
        return -EINVAL;
    s = x_calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->mem = chunk(sizeof(*s));
    if (getrandom(&s->seed, sizeof(s->seed), GRND_NONBLOCK) != (ssize_t)sizeof(s->seed)) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        s->seed = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(uintptr_t)s;
    }
    memset(s->res_index, -1, sizeof(s->res_index));
    memset(s->res_cache, -1, sizeof(s->res_cache));
    (void)res_intern(s, "pods", 4, 0);
    s->res_refs[POD_SLOT] = 1; /* permanent */
    s->unsched.flags = NODE_KNOWN | NODE_COUNTED;
    *ret = s;
    return 0;
}

struct shr_state *shr_free(struct shr_state *s)
{
    if (!s)
        return NULL;
    for (uint32_t i = 0; i < s->pods.cap; i++) {
        struct shr_pod *p = s->pods.slots[i];
        if (p)
            x_free(p);
    }
    x_free(s->pods.slots);
    for (uint32_t i = 0; i < s->nodes.cap; i++) {
        struct shr_node *n = s->nodes.slots[i];
        if (n)
            node_destroy(s, n);
    }
    x_free(s->nodes.slots);
    node_destroy(s, &s->unsched);
    for (int i = 0; i < SHR_MAX_ORIGINS; i++)
        x_free(s->orig[i]);
    x_free(s);
    return NULL;
}

/* ---- nodes ----------------------------------------------------------------------------------- */

static bool node_ready(const json_t *status)
{
    const json_t *conds = json_object_get(status, "conditions"), *c;
    size_t i;

    json_array_foreach(conds, i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        if (type && strcmp(type, "Ready") == 0) {
            const char *st = json_string_value(json_object_get(c, "status"));
            return st && strcmp(st, "True") == 0;
        }
    }
    return false;
}

int shr_node_upsert(struct shr_state *s, const json_t *node)
{
    const json_t *meta, *spec, *status, *labels;
    struct shr_node *n, *fresh = NULL;
    struct acc al;
    int64_t *alloc = NULL;
    const char *name;
    size_t len;
    unsigned cnt;
    bool counted;
    uint32_t hash;
    int r = -ENOMEM;

    if (!s || !node)
        return -EINVAL;
    meta = json_object_get(node, "metadata");
    name = str_field(meta, "name", &len);
    if (!name || len == 0 || len > OBJ_NAME_MAX || memchr(name, '\0', len))
        return -EINVAL;
    spec = json_object_get(node, "spec");
    status = json_object_get(node, "status");
    labels = json_object_get(meta, "labels");
    counted = node_ready(status) && !json_is_true(json_object_get(spec, "unschedulable")) &&
              !label_is(labels, LABEL_TYPE_LIQO, VIRTUAL_NODE) &&
              !label_is(labels, LABEL_TYPE, VIRTUAL_NODE);

    /* The allocatable, as a sparse vector (a node lists each name once). */
    al.mask = 0;
    acc_map(s, json_object_get(status, "allocatable"), &al, ACC_SUM, 0);
    cnt = (unsigned)__builtin_popcountll(al.mask);

    hash = hash_bytes(s->seed, name, len);
    n = node_find(s, hash, name, len);
    if (!n) {
        fresh = node_new(s, hash, name, len);
        if (!fresh || tab_reserve(s, &s->nodes, 1) < 0)
            goto out;
        n = fresh;
    }
    if (cnt) {
        alloc = mem_alloc(s, alloc_size(cnt));
        if (!alloc)
            goto out;
        uint8_t *slots = (uint8_t *)(alloc + cnt);
        unsigned k = 0;
        for (uint64_t m = al.mask; m; m &= m - 1, k++) {
            int slot = __builtin_ctzll(m);
            slots[k] = (uint8_t)slot;
            alloc[k] = (int64_t)al.v[slot]; /* one entry per name: no sum happened */
        }
    }

    /* Commit: nothing fails from here on. */
    if (fresh) {
        tab_insert(&s->nodes, fresh);
        fresh = NULL;
    }
    if (node_counted(n))
        node_count(s, n, -1);
    for (unsigned i = 0; i < n->nalloc; i++)
        s->res_refs[alloc_slots(n)[i]]--;
    mem_free(s, n->alloc, alloc_size(n->nalloc));
    n->alloc = alloc;
    n->nalloc = (uint8_t)cnt;
    alloc = NULL;
    for (unsigned i = 0; i < n->nalloc; i++)
        s->res_refs[alloc_slots(n)[i]]++;
    if (!(n->flags & NODE_KNOWN))
        s->known_nodes++;
    n->flags = NODE_KNOWN | (counted ? NODE_COUNTED : 0);
    if (counted)
        node_count(s, n, 1);
    r = 0;
out:
    mem_free(s, alloc, alloc_size(cnt));
    if (fresh)
        node_destroy(s, fresh);
    return r;
}

int shr_node_delete(struct shr_state *s, const char *name)
{
    struct shr_node *n;
    size_t len;

    if (!s || !name)
        return -EINVAL;
    len = strnlen(name, OBJ_NAME_MAX + 1);
    if (len == 0 || len > OBJ_NAME_MAX)
        return -EINVAL;
    n = node_find(s, hash_bytes(s->seed, name, len), name, len);
    if (!n || !(n->flags & NODE_KNOWN))
        return 0;
    if (node_counted(n))
        node_count(s, n, -1);
    for (unsigned i = 0; i < n->nalloc; i++)
        s->res_refs[alloc_slots(n)[i]]--;
    mem_free(s, n->alloc, alloc_size(n->nalloc));
    n->alloc = NULL;
    n->nalloc = 0;
    n->flags = 0;
    s->known_nodes--;
    node_tidy(s, n); /* frees it unless pods are still bound to it */
    return 0;
}

/* ---- pods ------------------------------------------------------------------------------------ */

#define KEY_MAX (2 * OBJ_NAME_MAX + 2)

/* The key "namespace\0name" of a pod into buf (KEY_MAX bytes). Returns its length or -EINVAL. */
static int pod_key_make(const char *ns, size_t ns_len, const char *name, size_t name_len, char *buf)
{
    if (!ns || !name || ns_len == 0 || name_len == 0 || ns_len > OBJ_NAME_MAX ||
        name_len > OBJ_NAME_MAX || memchr(ns, '\0', ns_len) || memchr(name, '\0', name_len))
        return -EINVAL;
    memcpy(buf, ns, ns_len);
    buf[ns_len] = '\0';
    memcpy(buf + ns_len + 1, name, name_len);
    return (int)(ns_len + 1 + name_len);
}

static bool pod_terminal(const json_t *pod)
{
    const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));

    return phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
}

/* Ensures v (cap slots) has at least `need` slots. */
static int ensure_cap(struct shr_state *s, i128 **v, uint8_t *cap, uint8_t need)
{
    int r;

    if (*cap >= need)
        return 0;
    r = mem_grow_i128(s, v, *cap, need);
    if (r < 0)
        return r;
    *cap = need;
    return 0;
}

int shr_pod_upsert(struct shr_state *s, const json_t *pod)
{
    const json_t *meta, *spec;
    const char *ns, *name, *node_name = NULL, *oname;
    size_t ns_len = 0, name_len = 0, node_len = 0, olen = 0;
    char key[KEY_MAX];
    struct contrib c;
    struct shr_pod *old, *rec = NULL;
    struct shr_node *target = NULL, *fresh = NULL, *old_node;
    i128 *org_vec = NULL;
    uint8_t org_cap = 0;
    int key_len, origin = -1, r = -ENOMEM;
    uint32_t hash;
    bool active;

    if (!s || !pod)
        return -EINVAL;
    meta = json_object_get(pod, "metadata");
    ns = str_field(meta, "namespace", &ns_len);
    name = str_field(meta, "name", &name_len);
    key_len = pod_key_make(ns, ns_len, name, name_len, key);
    if (key_len < 0)
        return key_len;
    spec = json_object_get(pod, "spec");
    active = !pod_terminal(pod);
    c.n = 0;
    c.max_slot = 0;
    if (active) {
        node_name = str_field(spec, "nodeName", &node_len);
        if (node_name && (node_len > OBJ_NAME_MAX || memchr(node_name, '\0', node_len)))
            return -EINVAL;
        pod_contrib(s, spec, &c);
        oname = label(meta, SHR_LABEL_ORIGIN, &olen);
        if (oname && olen > 0) {
            r = origin_intern(s, oname, olen, &origin);
            if (r < 0)
                return r;
            r = -ENOMEM;
        }
    }
    hash = hash_bytes(s->seed, key, (size_t)key_len);
    old = pod_find(s, hash, key, (size_t)key_len);

    /* Prepare: every allocation, none visible. */
    if (active) {
        if (node_name && node_len > 0) {
            uint32_t nh = hash_bytes(s->seed, node_name, node_len);

            target = node_find(s, nh, node_name, node_len);
            if (!target) {
                fresh = target = node_new(s, nh, node_name, node_len);
                if (!fresh || tab_reserve(s, &s->nodes, 1) < 0)
                    goto out;
            }
        } else {
            target = &s->unsched;
        }
        if (ensure_cap(s, &target->used, &target->ucap, vec_cap(c.max_slot)) < 0)
            goto out;
        if (origin >= 0) {
            struct norg *no = node_org(target, (uint16_t)origin);

            if (no) {
                if (ensure_cap(s, &no->used, &no->cap, vec_cap(c.max_slot)) < 0)
                    goto out;
            } else {
                if (target->norgs == target->corgs) {
                    uint16_t ncap = target->corgs ? target->corgs * 2 : 2;
                    struct norg *a = x_reallocarray(target->orgs, ncap, sizeof(*a));

                    if (!a)
                        goto out;
                    s->mem -= target->corgs ? chunk(target->corgs * sizeof(*a)) : 0;
                    s->mem += chunk(ncap * sizeof(*a));
                    target->orgs = a;
                    target->corgs = ncap;
                }
                if (ensure_cap(s, &org_vec, &org_cap, vec_cap(c.max_slot)) < 0)
                    goto out;
            }
        }
    }
    if (!old || old->n != c.n) {
        rec = mem_alloc(s, pod_size(c.n, (size_t)key_len));
        if (!rec)
            goto out;
        if (!old && tab_reserve(s, &s->pods, 1) < 0)
            goto out;
        rec->hash = hash;
        rec->key_len = (uint16_t)key_len;
        rec->n = (uint8_t)c.n;
        rec->pad = 0;
        memcpy(pod_key(rec), key, (size_t)key_len);
        pod_key(rec)[key_len] = '\0';
    }

    /* Commit: nothing fails from here on. */
    if (fresh) {
        tab_insert(&s->nodes, fresh);
        fresh = NULL;
    }
    if (org_vec) {
        struct norg *no = &target->orgs[target->norgs++];

        no->origin = (uint16_t)origin;
        no->cap = org_cap;
        no->npods = 0;
        no->used = org_vec;
        org_vec = NULL;
    }
    old_node = old ? old->node : NULL;
    if (old_node)
        pod_apply(s, old, -1);
    if (rec) {
        if (old) {
            tab_replace(&s->pods, old, rec);
            mem_free(s, old, pod_size(old->n, old->key_len));
        } else {
            tab_insert(&s->pods, rec);
        }
        old = rec;
        rec = NULL;
    }
    old->node = target;
    old->origin = (uint16_t)(origin + 1);
    memcpy(old->val, c.val, c.n * sizeof(int64_t));
    memcpy(pod_slots(old), c.slot, c.n);
    if (target)
        pod_apply(s, old, 1);
    if (old_node)
        node_tidy(s, old_node);
    r = 0;
out:
    mem_free(s, rec, pod_size(c.n, (size_t)key_len));
    if (org_vec)
        mem_free(s, org_vec, org_cap * sizeof(i128));
    if (fresh)
        node_destroy(s, fresh);
    return r;
}

int shr_pod_delete(struct shr_state *s, const char *ns, const char *name)
{
    char key[KEY_MAX];
    struct shr_pod *p;
    struct shr_node *n;
    int key_len;

    if (!s || !ns || !name)
        return -EINVAL;
    key_len =
        pod_key_make(ns, strnlen(ns, OBJ_NAME_MAX + 1), name, strnlen(name, OBJ_NAME_MAX + 1), key);
    if (key_len < 0)
        return key_len;
    p = pod_find(s, hash_bytes(s->seed, key, (size_t)key_len), key, (size_t)key_len);
    if (!p)
        return 0;
    n = p->node;
    if (n)
        pod_apply(s, p, -1);
    tab_remove(&s->pods, p);
    mem_free(s, p, pod_size(p->n, p->key_len));
    if (n)
        node_tidy(s, n);
    return 0;
}

/* ---- results --------------------------------------------------------------------------------- */

static int64_t clamp_out(i128 v)
{
    if (v <= 0)
        return 0;
    return v > INT64_MAX_I128 ? INT64_MAX : (int64_t)v;
}

static void list_put(struct shr_list *l, const char *name, int64_t v)
{
    struct shr_amount *a = &l->items[l->n++];
    size_t len = strlen(name);

    memcpy(a->name, name, len + 1);
    a->value = v;
}

void shr_totals(const struct shr_state *s, struct shr_list *ret_avail, struct shr_list *ret_used)
{
    if (ret_avail)
        ret_avail->n = 0;
    if (ret_used)
        ret_used->n = 0;
    if (!s)
        return;
    for (unsigned k = 0; k < s->nres_sorted; k++) {
        uint8_t slot = s->res_sorted[k];

        if (ret_avail && s->res_avail_nodes[slot])
            list_put(ret_avail, s->res_name[slot], clamp_out(s->avail[slot]));
        if (ret_used && s->used[slot] != 0)
            list_put(ret_used, s->res_name[slot], clamp_out(s->used[slot]));
    }
}

static int amount_cmp(const void *a, const void *b)
{
    return strcmp(((const struct shr_amount *)a)->name, ((const struct shr_amount *)b)->name);
}

int shr_offer(const struct shr_state *s, const char *origin, const struct shr_policy *p,
              struct shr_list *ret)
{
    const struct shr_origin *o = NULL;

    if (!s || !p || !ret)
        return -EINVAL;
    if (p->fixed) {
        if (p->fixed->n > SHR_MAX_RESOURCES)
            return -EINVAL;
        ret->n = p->fixed->n;
        memcpy(ret->items, p->fixed->items, p->fixed->n * sizeof(ret->items[0]));
        for (size_t i = 0; i < ret->n; i++)
            ret->items[i].name[SHR_NAME_MAX - 1] = '\0';
        qsort(ret->items, ret->n, sizeof(ret->items[0]), amount_cmp);
        return 0;
    }
    if (p->percent > 100)
        return -EINVAL;
    if (origin) {
        size_t len = strnlen(origin, ORIGIN_MAX + 1);

        if (len > 0 && len <= ORIGIN_MAX) {
            int idx = origin_lookup(s, origin, len, hash_bytes(s->seed, origin, len));
            if (idx >= 0)
                o = s->orig[idx];
        }
    }
    ret->n = 0;
    for (unsigned k = 0; k < s->nres_sorted; k++) {
        uint8_t slot = s->res_sorted[k];
        i128 free_;

        if (!s->res_avail_nodes[slot])
            continue;
        /* avail - (used - used by the consumer's own pods). */
        free_ = s->avail[slot] - s->used[slot] + (o ? o->used[slot] : 0);
        if (free_ <= 0)
            free_ = 0;
        list_put(ret, s->res_name[slot], clamp_out(free_ * (i128)p->percent / 100));
    }
    return 0;
}

int64_t shr_list_get(const struct shr_list *l, const char *name, bool *ret_found)
{
    if (l && name) {
        for (size_t i = 0; i < l->n && i < SHR_MAX_RESOURCES; i++) {
            if (strcmp(l->items[i].name, name) == 0) {
                if (ret_found)
                    *ret_found = true;
                return l->items[i].value;
            }
        }
    }
    if (ret_found)
        *ret_found = false;
    return 0;
}

void shr_get_stats(const struct shr_state *s, struct shr_stats *ret)
{
    if (!ret)
        return;
    memset(ret, 0, sizeof(*ret));
    if (!s)
        return;
    ret->nodes = s->known_nodes;
    ret->counted_nodes = s->counted_nodes;
    ret->pods = s->pods.n;
    ret->counted_pods = s->counted_pods;
    ret->origins = s->live_origins;
    ret->resources = (size_t)__builtin_popcountll(s->res_live);
    ret->dropped_resources = s->dropped_resources;
    ret->dropped_origins = s->dropped_origins;
    ret->bad_quantities = s->bad_quantities;
    ret->memory_bytes = s->mem;
}

/* ---- quantities as text ---------------------------------------------------------------------- */

static bool binary_resource(const char *name)
{
    return strcmp(name, "memory") == 0 || strcmp(name, "ephemeral-storage") == 0 ||
           strncmp(name, "hugepages-", 10) == 0;
}

int shr_format_quantity(const char *name, int64_t value, char *buf, size_t size)
{
    struct kq q;
    int n;

    if (!name || !buf)
        return -EINVAL;
    if (strcmp(name, "cpu") == 0) {
        kq_from_milli(value, KQ_DECIMAL_SI, &q);
        return kq_format(&q, buf, size);
    }
    if (binary_resource(name)) {
        kq_from_int64(value, KQ_BINARY_SI, &q);
        return kq_format(&q, buf, size);
    }
    {
        char tmp[24];

        n = snprintf(tmp, sizeof(tmp), "%" PRId64, value);
        if ((size_t)n >= size)
            return -ENOSPC;
        memcpy(buf, tmp, (size_t)n + 1);
    }
    return n;
}

int shr_parse_quantity(const char *name, const char *text, int64_t *ret)
{
    size_t len;

    if (!name || !text || !ret)
        return -EINVAL;
    len = strnlen(text, KQ_PARSE_MAX + 1);
    if (len > KQ_PARSE_MAX)
        return -ERANGE;
    return quantity_value(text, len, strcmp(name, "cpu") == 0, ret);
}

/* ---- comparisons and labels ------------------------------------------------------------------ */

static u128 abs128(i128 v)
{
    return v < 0 ? (u128)(-v) : (u128)v;
}

bool shr_list_moved(const struct shr_list *before, const struct shr_list *now,
                    unsigned threshold_percent)
{
    size_t nb = before ? before->n : 0, nn = now ? now->n : 0;

    if (nb > SHR_MAX_RESOURCES)
        nb = SHR_MAX_RESOURCES;
    if (nn > SHR_MAX_RESOURCES)
        nn = SHR_MAX_RESOURCES;
    for (size_t i = 0; i < nn; i++) {
        bool found;
        int64_t b = shr_list_get(before, now->items[i].name, &found), a = now->items[i].value;

        if (!found)
            return true;
        if (a == b)
            continue;
        if (a == 0 || b == 0)
            return true;
        /* |a - b| * 100 > threshold * |b|, exactly. */
        if (abs128((i128)a - b) * 100 > abs128(b) * threshold_percent)
            return true;
    }
    for (size_t i = 0; i < nb; i++) {
        bool found;

        (void)shr_list_get(now, before->items[i].name, &found);
        if (!found)
            return true;
    }
    return false;
}

static bool alnum_lower(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool alnum(char c)
{
    return alnum_lower(c) || (c >= 'A' && c <= 'Z');
}

/* A DNS-1123 subdomain: at most 253 bytes of dot-separated labels of [a-z0-9-], each starting and
 * ending with [a-z0-9] and at most 63 bytes. */
static bool dns_subdomain(const char *p, size_t len)
{
    size_t start = 0;

    if (len == 0 || len > 253)
        return false;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || p[i] == '.') {
            size_t l = i - start;
            if (l == 0 || l > 63 || !alnum_lower(p[start]) || !alnum_lower(p[i - 1]))
                return false;
            start = i + 1;
        } else if (!alnum_lower(p[i]) && p[i] != '-') {
            return false;
        }
    }
    return true;
}

/* A label name: at most 63 bytes of [A-Za-z0-9._-], starting and ending with [A-Za-z0-9]. */
static bool label_name(const char *p, size_t len)
{
    if (len == 0 || len > 63 || !alnum(p[0]) || !alnum(p[len - 1]))
        return false;
    for (size_t i = 0; i < len; i++)
        if (!alnum(p[i]) && p[i] != '-' && p[i] != '_' && p[i] != '.')
            return false;
    return true;
}

/* Whether domain d (len bytes) is `zone` or a subdomain of it. */
static bool in_zone(const char *d, size_t len, const char *zone)
{
    size_t zl = strlen(zone);

    if (len == zl)
        return memcmp(d, zone, zl) == 0;
    return len > zl && d[len - zl - 1] == '.' && memcmp(d + len - zl, zone, zl) == 0;
}

bool shr_label_shareable(const char *key)
{
    static const char *const reserved[] = {"kubernetes.io", "k8s.io", "liqo.io", "cliqo.io"};
    const char *slash;
    size_t len;

    if (!key)
        return false;
    len = strnlen(key, 253 + 1 + 63 + 1);
    if (len > 253 + 1 + 63)
        return false;
    slash = memchr(key, '/', len);
    if (!slash)
        return label_name(key, len);
    if (!dns_subdomain(key, (size_t)(slash - key)) ||
        !label_name(slash + 1, len - (size_t)(slash - key) - 1))
        return false;
    for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
        if (in_zone(key, (size_t)(slash - key), reserved[i]))
            return false;
    return true;
}

/* shr_pod_transform: see share.h. The trimmed object is rebuilt from the fields kept, so whatever
 * else a pod carries (env, volumes, probes, annotations, managed fields, statuses) costs nothing.
 */
static void keep(json_t *dst, const json_t *src, const char *key)
{
    json_t *v = json_object_get(src, key);

    if (v)
        json_object_set(dst, key, v);
}

static json_t *slim_containers(const json_t *list)
{
    json_t *out = json_array(), *c;
    size_t i;

    json_array_foreach(list, i, c)
    {
        json_t *req = json_object_get(json_object_get(c, "resources"), "requests");
        json_t *slim = req ? json_pack("{s:{s:O}}", "resources", "requests", req) : json_object();

        if (slim)
            json_array_append_new(out, slim);
    }
    return out;
}

void shr_pod_transform(json_t *pod, void *data)
{
    json_t *meta = json_object_get(pod, "metadata"), *spec = json_object_get(pod, "spec");
    json_t *status = json_object_get(pod, "status");
    json_t *m = json_object(), *sp = json_object(), *st = json_object(), *origin;

    (void)data;
    if (!m || !sp || !st || !json_is_object(pod)) {
        json_decref(m);
        json_decref(sp);
        json_decref(st);
        return;
    }
    keep(m, meta, "name");
    keep(m, meta, "namespace");
    keep(m, meta, "uid");
    keep(m, meta, "resourceVersion");
    keep(m, meta, "deletionTimestamp");
    origin = json_object_get(json_object_get(meta, "labels"), SHR_LABEL_ORIGIN);
    if (origin)
        json_object_set_new(m, "labels", json_pack("{s:O}", SHR_LABEL_ORIGIN, origin));
    keep(sp, spec, "nodeName");
    keep(sp, spec, "overhead");
    if (json_object_get(spec, "containers"))
        json_object_set_new(sp, "containers", slim_containers(json_object_get(spec, "containers")));
    if (json_object_get(spec, "initContainers"))
        json_object_set_new(sp, "initContainers",
                            slim_containers(json_object_get(spec, "initContainers")));
    keep(st, status, "phase");
    json_object_clear(pod);
    json_object_set_new(pod, "metadata", m);
    json_object_set_new(pod, "spec", sp);
    json_object_set_new(pod, "status", st);
}
