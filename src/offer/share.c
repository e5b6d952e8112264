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
 *   Nodes      a hash table of node records by name (carved from the same mapped blocks as pod
 *              records, see node_new). A record holds the node's allocatable (sparse:
 *              slot and value), the summed usage of the pods bound to it (dense, by slot, grown on
 *              demand) and the same per origin (a short array of origins present on the node). A
 *              record also exists for a node that pods name but the state does not know (yet):
 *              it is not counted and disappears with its last pod. Unscheduled pods are bound to a
 *              permanent record inside the state that always counts.
 *   Pods       a hash table of pod records by namespace and name. A record is one piece of memory
 *              (carved from the state's mapped blocks, see rec_alloc): the bound node, the origin,
 *              and the contribution as parallel arrays of values and slots (only non-zero amounts,
 *              "pods" included). A terminal pod has a record with no contribution and is bound to
 *              nothing.
 *   Stage      while the state is fresh, pod upserts are read and logged, not applied: the log
 *              (mapped chunks) is applied in one pass by shr_flush (see share.h, "Staging"),
 *              with cursors running ahead to prefetch what each entry will touch.
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
 * Speed (bench/bench-broadcaster.c, bench/README.md). Quantities of the usual forms (digits with no
 * suffix, "m", k M G T or Ki Mi Gi Ti) are converted without kq_parse, with the same results (a
 * differential unit test checks it); others go through kq_parse. Resource names are found through a
 * small cache by length and first and last bytes before the hash index. A pod is read from its
 * typed record (kube/podrec.h: one small block holding its strings and quantities, extracted by
 * the informer while the object was hot, or by shr_pod_upsert from the tree), not from the tree:
 * reading the tree took about 13 jansson lookups per trimmed pod and its quantities' texts lay in
 * separate allocations. A node is read from its tree by jansson's hashed lookups. The tables'
 * slots and the node record are prefetched as soon as their addresses are known. The hash tables
 * keep the hashes beside the slots, so a probe reads one dense array. A pod update that changes
 * nothing the computation keeps (most: status changes) returns early. A pod's record comes from a
 * mapped block, so a pod event makes no glibc allocation but when it brings a new node name, origin
 * or resource slot, and none of 1 KiB or more (see mem_map) but a new origin's record.
 *
 * Memory accounting: every allocation counts as the glibc chunk it occupies (request + 8-byte
 * header, rounded up to 16, at least 32), as in kube/store.c, and mapped memory as whole pages,
 * plus the state structure itself. */
#include "offer/share.h"
#include "common/xalloc.h"
#include "kube/names.h"
#include "kube/podrec.h"
#include "kube/quantity.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define SHR_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SHR_ASAN 1
#endif
#endif
#ifdef SHR_ASAN
#include <sanitizer/asan_interface.h>
#endif

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
 * every record starts with its 32-bit hash. The hashes are also kept beside the slots (0 marks an
 * empty slot: hash_bytes never returns 0), so that a probe reads one dense array and dereferences
 * a record only when its hash matches: with 150,000 pods the records are scattered over megabytes,
 * and each dereference of a colliding one was a cache miss. Both arrays are one allocation. */
struct tab {
    void **slots;
    uint32_t *hashes;
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

/* A pod record: a 16-byte header, then int64_t val[n], uint8_t slot[n], key[key_len + 1]
 * (namespace, NUL, name, NUL). The key's length (at most 507) and n (at most 64) share 16 bits. */
struct shr_pod {
    uint32_t hash;
    uint16_t key_len : 9;
    uint16_t n : 7;
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

/* Pod records of up to REC_CLASSES words come from an arena of blocks mapped from the kernel, with
 * one free list per size in words (see rec_alloc). */
#define REC_CLASSES   32
#define REC_BLOCK_MIN (16 * 1024)
#define REC_BLOCK_MAX (1024 * 1024)
#define MAP_MIN       (64 * 1024)        /* tables at least this large are mapped (see mem_map) */
#define STG_CHUNK_MIN (64 * 1024)        /* the stage's mapped chunks: the first this large, */
#define STG_CHUNK_MAX (1024 * 1024)      /* then doubling up to this */
#define STG_MAX_BYTES (64 * 1024 * 1024) /* a stage this large is flushed (see shr_flush) */
#define STG_FAR       16                 /* entries the flush prefetches ahead (see shr_flush) */
#define STG_STREAM    1024               /* bytes of the stage prefetched ahead of those */

/* A chunk of the stage (see shr_flush). */
struct stg_chunk {
    struct stg_chunk *next;
    size_t size;       /* mapped, this header included */
    size_t used, done; /* bytes of entries after the header; of them, bytes already committed */
};

struct rec_block {
    struct rec_block *next;
    char *mem; /* mapped */
    size_t size;
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
    /* pod records, see rec_alloc */
    void *rec_free[REC_CLASSES];
    char *rec_bump, *rec_end; /* the newest block's part not carved yet */
    size_t rec_next_size;     /* of the next block: doubles from REC_BLOCK_MIN */
    struct rec_block *rec_blocks;
    struct stg_chunk *rec_spare; /* applied stage chunks, for the next blocks (see shr_flush) */
    size_t rec_live;
    /* the stage of pod upserts while the state is fresh (see shr_flush) */
    bool staging;
    struct stg_chunk *stg_head, *stg_tail;
    size_t stg_bytes, stg_n; /* bytes staged; entries not applied yet */
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

/* Memory mapped from the kernel (x_map: prefaulted, zeroed), for the large and the many: the hash
 * tables from MAP_MIN bytes, the blocks of pod and node records, the stage's chunks and the origin
 * records. glibc's malloc, asked for a block of 1 KiB or more, first merges every small chunk freed
 * since it last did (malloc_consolidate): the informer frees hundreds per pod (the parts its
 * transform drops, each page's trees), so an allocation of a table, a block or an origin record in
 * a handler paid for all of them, milliseconds at a time (an origin record allocated in the first
 * flush merged every chunk freed during the whole first list). Mapped memory counts in
 * memory_bytes as whole pages. */
static void *mem_map(struct shr_state *s, size_t n)
{
    void *p = x_map(n);

    if (p)
        s->mem += x_map_bytes(n);
    return p;
}

static void mem_unmap(struct shr_state *s, void *p, size_t n)
{
    if (!p)
        return;
    s->mem -= x_map_bytes(n);
    x_unmap(p, n);
}

/* Pod records: there is one per pod, and each is small (≈70 bytes), so they are carved out of
 * mapped blocks instead of each being a malloc chunk: no malloc call per pod (whose cost depends
 * on what else the heap holds: the informer's garbage), no per-chunk header and rounding
 * (≈16 bytes per record), and records of pods fed in a row lie side by side. A record of n words
 * (n <= REC_CLASSES) comes from the free list of its size, else from the newest block, else from a
 * new block: a stage chunk the flush has applied (see shr_flush), or else a mapped one (16 KiB,
 * doubling up to 1 MiB); larger records (many resources, long names) are malloc
 * chunks. A freed record goes on its size's free list; the blocks are unmapped when the last record
 * is freed (they are otherwise kept for reuse, and count in memory_bytes). */
/* Under AddressSanitizer the blocks are poisoned but for the records handed out (and the link
 * word of the free ones), and each record is followed by a poisoned red zone, so that a record
 * overrun or a use after free is reported as for malloc chunks. */
#ifdef SHR_ASAN
#define REC_POISON(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define REC_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#define REC_REDZONE        16
#else
#define REC_REDZONE        0
#define REC_POISON(p, n)   ((void)(p), (void)(n))
#define REC_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

static size_t rec_words(size_t n)
{
    return (n + sizeof(uint64_t) - 1) / sizeof(uint64_t);
}

static void *rec_alloc(struct shr_state *s, size_t n)
{
    size_t words = rec_words(n), bytes = words * sizeof(uint64_t);
    void *p;

    if (words > REC_CLASSES)
        return mem_alloc(s, n);
    if (s->rec_free[words - 1]) {
        p = s->rec_free[words - 1];
        memcpy(&s->rec_free[words - 1], p, sizeof(void *));
    } else {
        if ((size_t)(s->rec_end - s->rec_bump) < bytes + REC_REDZONE) {
            size_t size = s->rec_next_size ? s->rec_next_size : REC_BLOCK_MIN;
            struct rec_block *b = mem_alloc(s, sizeof(*b));

            if (!b)
                return NULL;
            if (s->rec_spare) {
                struct stg_chunk *k = s->rec_spare;

                s->rec_spare = k->next;
                size = k->size;
                b->mem = (char *)k;
            } else {
                b->mem = mem_map(s, size);
                if (!b->mem) {
                    mem_free(s, b, sizeof(*b));
                    return NULL;
                }
                s->rec_next_size = size < REC_BLOCK_MAX ? size * 2 : size;
            }
            b->size = size;
            b->next = s->rec_blocks;
            s->rec_blocks = b;
            s->rec_bump = b->mem;
            s->rec_end = b->mem + size;
            REC_POISON(b->mem, size);
        }
        p = s->rec_bump;
        s->rec_bump += bytes + REC_REDZONE;
    }
    REC_UNPOISON(p, n);
    s->rec_live++;
    return p;
}

static void rec_release(struct shr_state *s)
{
    while (s->rec_blocks) {
        struct rec_block *b = s->rec_blocks;

        s->rec_blocks = b->next;
        REC_UNPOISON(b->mem, b->size);
        mem_unmap(s, b->mem, b->size);
        mem_free(s, b, sizeof(*b));
    }
    memset(s->rec_free, 0, sizeof(s->rec_free));
    s->rec_bump = s->rec_end = NULL;
    s->rec_next_size = 0;
    s->rec_live = 0;
}

/* Frees record p of n bytes (NULL-safe). */
static void rec_free(struct shr_state *s, void *p, size_t n)
{
    size_t words = rec_words(n);

    if (!p)
        return;
    if (words > REC_CLASSES) {
        mem_free(s, p, n);
        return;
    }
    REC_POISON((char *)p + sizeof(void *), words * sizeof(uint64_t) - sizeof(void *));
    memcpy(p, &s->rec_free[words - 1], sizeof(void *));
    s->rec_free[words - 1] = p;
    if (--s->rec_live == 0)
        rec_release(s);
}

/* ---- hashing and tables ---------------------------------------------------------------------- */

/* Unaligned loads of 8, 4 and 2 bytes. */
static uint64_t load64(const char *p)
{
    uint64_t v;

    memcpy(&v, p, sizeof(v));
    return v;
}

static uint32_t load32(const char *p)
{
    uint32_t v;

    memcpy(&v, p, sizeof(v));
    return v;
}

static uint16_t load16(const char *p)
{
    uint16_t v;

    memcpy(&v, p, sizeof(v));
    return v;
}

/* Whether the n bytes at a and b are equal: an inline comparison for the short keys and names
 * compared here (a call to memcmp costs more than the comparison itself). Words are compared, the
 * last one overlapping the previous ones, so nothing is read outside the n bytes. Inlined where n
 * is a constant, it folds to a few loads. */
__attribute__((always_inline)) static inline bool bytes_eq(const char *a, const char *b, size_t n)
{
    if (n >= 8) {
        for (; n > 8; a += 8, b += 8, n -= 8)
            if (load64(a) != load64(b))
                return false;
        return load64(a + n - 8) == load64(b + n - 8);
    }
    if (n >= 4)
        return load32(a) == load32(b) && load32(a + n - 4) == load32(b + n - 4);
    if (n >= 2)
        return load16(a) == load16(b) && load16(a + n - 2) == load16(b + n - 2);
    return n == 0 || *a == *b;
}

/* A seeded hash of n bytes, eight at a time (names and keys are short: this is most of the cost
 * of a lookup). Each word is mixed by a multiplication and a shift, and the result by the murmur3
 * finaliser. Not a cryptographic hash: the seed, drawn at random per state, makes colliding names
 * hard to choose from outside. Never 0, which marks an empty slot of a table. */
static uint32_t hash_bytes(uint64_t seed, const char *p, size_t n)
{
    const uint64_t k = 0x9fb21c651e98df25ULL;
    uint64_t h = seed ^ ((uint64_t)n * 0x9e3779b97f4a7c15ULL), w;

    if (n >= 8) {
        /* Whole words, then the last eight bytes (overlapping the words before: the length is in
         * the seed). */
        for (; n > 8; p += 8, n -= 8) {
            h = (h ^ load64(p)) * k;
            h ^= h >> 29;
        }
        w = load64(p + n - 8);
    } else if (n >= 4) {
        w = load32(p) | (uint64_t)load32(p + n - 4) << 32;
    } else if (n >= 2) {
        w = load16(p) | (uint64_t)load16(p + n - 2) << 16;
    } else {
        w = n ? (unsigned char)p[0] : 0;
    }
    h = (h ^ w) * k;
    h ^= h >> 29;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return (uint32_t)h ? (uint32_t)h : 1;
}

static uint32_t rec_hash(const void *e)
{
    uint32_t h;

    memcpy(&h, e, sizeof(h));
    return h;
}

/* The bytes of a table of cap slots, and what they count for. */
static size_t tab_size(uint32_t cap)
{
    return (size_t)cap * (sizeof(void *) + sizeof(uint32_t));
}

static size_t tab_bytes(const struct tab *t)
{
    size_t n = tab_size(t->cap);

    if (!t->cap)
        return 0;
    return n >= MAP_MIN ? x_map_bytes(n) : chunk(n);
}

/* Zeroed slots for a table of cap slots: mapped from MAP_MIN bytes (see mem_map). */
static void **tab_alloc(uint32_t cap)
{
    size_t n = tab_size(cap);

    return n >= MAP_MIN ? x_map(n) : x_calloc(1, n);
}

static void tab_free(struct tab *t)
{
    size_t n = tab_size(t->cap);

    if (n >= MAP_MIN)
        x_unmap(t->slots, n);
    else
        x_free(t->slots);
}

/* Makes room for `more` insertions without growth (load factor at most 3/4). */
static int tab_reserve(struct shr_state *s, struct tab *t, uint32_t more)
{
    uint64_t need = (uint64_t)t->n + more;
    uint32_t ncap = t->cap ? t->cap : 16;
    uint32_t *nh;
    void **ns;

    if (need * 4 <= (uint64_t)t->cap * 3)
        return 0;
    while (need * 4 > (uint64_t)ncap * 3) {
        if (ncap >= TAB_MAX_CAP)
            return -ENOMEM;
        ncap *= 2;
    }
    ns = tab_alloc(ncap);
    if (!ns)
        return -ENOMEM;
    nh = (uint32_t *)(ns + ncap);
    for (uint32_t i = 0; i < t->cap; i++) {
        uint32_t h = t->hashes[i], j;

        if (!h)
            continue;
        for (j = h & (ncap - 1); nh[j]; j = (j + 1) & (ncap - 1))
            ;
        ns[j] = t->slots[i];
        nh[j] = h;
    }
    s->mem -= tab_bytes(t);
    tab_free(t);
    t->slots = ns;
    t->hashes = nh;
    t->cap = ncap;
    s->mem += tab_bytes(t);
    return 0;
}

/* Inserts a record known to be absent, after tab_reserve. */
static void tab_insert(struct tab *t, void *e)
{
    uint32_t h = rec_hash(e), i = h & (t->cap - 1);

    while (t->hashes[i])
        i = (i + 1) & (t->cap - 1);
    t->slots[i] = e;
    t->hashes[i] = h;
    t->n++;
}

/* The slot of record e, or -1. */
static int64_t tab_slot(const struct tab *t, const void *e)
{
    uint32_t h = rec_hash(e);

    if (!t->cap)
        return -1;
    for (uint32_t i = h & (t->cap - 1); t->hashes[i]; i = (i + 1) & (t->cap - 1))
        if (t->slots[i] == e)
            return i;
    return -1;
}

/* Replaces record `old` by `now` (same hash and key). */
static void tab_replace(struct tab *t, const void *old, void *now)
{
    int64_t i = tab_slot(t, old);

    if (i >= 0)
        t->slots[i] = now;
}

/* Removes record e. A table left empty is freed (the next insertion makes a new one), so that
 * a state whose objects are all gone holds little more than the state itself. */
static void tab_remove(struct shr_state *s, struct tab *t, const void *e)
{
    int64_t at = tab_slot(t, e);
    uint32_t mask = t->cap - 1, i, j;

    if (at < 0)
        return;
    if (--t->n == 0) {
        s->mem -= tab_bytes(t);
        tab_free(t);
        t->slots = NULL;
        t->hashes = NULL;
        t->cap = 0;
        return;
    }
    i = (uint32_t)at;
    t->slots[i] = NULL;
    t->hashes[i] = 0;
    /* Backward shift: move later records of the cluster into the hole when their home slot does
     * not lie cyclically in (hole, j]. */
    for (j = i;;) {
        j = (j + 1) & mask;
        if (!t->hashes[j])
            break;
        uint32_t home = t->hashes[j] & mask;
        if (((j - home) & mask) >= ((j - i) & mask)) {
            t->slots[i] = t->slots[j];
            t->hashes[i] = t->hashes[j];
            t->slots[j] = NULL;
            t->hashes[j] = 0;
            i = j;
        }
    }
}

/* Prefetches the lines where a record of hash `hash` is looked up first. */
static void tab_prefetch(const struct tab *t, uint32_t hash)
{
    if (t->cap) {
        __builtin_prefetch(&t->hashes[hash & (t->cap - 1)]);
        __builtin_prefetch(&t->slots[hash & (t->cap - 1)]);
    }
}

/* Prefetches the first two lines of the first record of hash `hash`, which a lookup will compare
 * (after tab_prefetch: this reads the table). */
static void tab_prefetch_rec(const struct tab *t, uint32_t hash)
{
    if (!t->cap)
        return;
    for (uint32_t i = hash & (t->cap - 1), h; (h = t->hashes[i]) != 0; i = (i + 1) & (t->cap - 1))
        if (h == hash) {
            __builtin_prefetch(t->slots[i]);
            __builtin_prefetch((const char *)t->slots[i] + 64);
            return;
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
    return n->alloc ? (uint8_t *)(n->alloc + n->nalloc) : NULL; /* no arithmetic on NULL */
}

static struct shr_pod *pod_find(const struct shr_state *s, uint32_t hash, const char *key,
                                size_t key_len)
{
    const struct tab *t = &s->pods;

    if (!t->cap)
        return NULL;
    for (uint32_t i = hash & (t->cap - 1), h; (h = t->hashes[i]) != 0; i = (i + 1) & (t->cap - 1)) {
        struct shr_pod *p = t->slots[i];

        if (h == hash && p->key_len == key_len && bytes_eq(pod_key(p), key, key_len))
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
    for (uint32_t i = hash & (t->cap - 1), h; (h = t->hashes[i]) != 0; i = (i + 1) & (t->cap - 1)) {
        struct shr_node *n = t->slots[i];

        if (h == hash && n->name_len == len && bytes_eq(n->name, name, len))
            return n;
    }
    return NULL;
}

/* A fresh, unknown, uncounted node record (not in the table). Carved from the records' mapped
 * blocks, as pod records are (see rec_alloc): the records of thousands of nodes, each read for
 * every pod bound to it, lie side by side instead of each in its own heap chunk among the
 * informer's garbage (a cache and TLB miss per access once the heap has grown). */
static struct shr_node *node_new(struct shr_state *s, uint32_t hash, const char *name, size_t len)
{
    struct shr_node *n = rec_alloc(s, node_size(len));

    if (!n)
        return NULL;
    memset(n, 0, sizeof(*n));
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
        rec_free(s, n, node_size(n->name_len));
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
            bytes_eq(s->res_name[slot], name, len))
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

/* res_intern, past its cache (c: the name's cache entry). */
static int res_intern_slow(struct shr_state *s, const char *name, size_t len, unsigned c,
                           uint64_t protect)
{
    uint32_t hash;
    int slot;

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

/* The slot of resource `name` (len bytes, not necessarily NUL-terminated), interned if new.
 * Slots in `protect` are being used by the caller and are not recycled even without references.
 * Returns the slot, or -1 when the name is invalid or the table is full (counted as dropped).
 * First the last slot seen for this length and these first and last bytes, if it is the name: the
 * same few names come again and again. */
static inline int res_intern(struct shr_state *s, const char *name, size_t len, uint64_t protect)
{
    unsigned c = 0;

    if (len) {
        int slot;

        c = ((unsigned)len * 31u + (unsigned char)name[0] * 7u + (unsigned char)name[len - 1]) &
            (RES_CACHE_SLOTS - 1);
        slot = s->res_cache[c];
        if (slot >= 0 && s->res_len[slot] == len && bytes_eq(s->res_name[slot], name, len))
            return slot;
    }
    return res_intern_slow(s, name, len, c, protect);
}

/* ---- origins --------------------------------------------------------------------------------- */

static size_t origin_size(size_t len)
{
    return sizeof(struct shr_origin) + len + 1;
}

/* Origin records (over 1 KiB each) are mapped, not malloc'd: see mem_map. A few per provider. */
static void origin_free(struct shr_state *s, struct shr_origin *o)
{
    mem_unmap(s, o, origin_size(o->len));
}

static int origin_lookup(const struct shr_state *s, const char *name, size_t len, uint32_t hash)
{
    for (uint32_t i = hash & (ORG_INDEX_SLOTS - 1); s->org_index[i];
         i = (i + 1) & (ORG_INDEX_SLOTS - 1)) {
        const struct shr_origin *o = s->orig[s->org_index[i] - 1];
        if (o->hash == hash && o->len == len && bytes_eq(o->name, name, len))
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
                origin_free(s, s->orig[i]);
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
    o = mem_map(s, origin_size(len)); /* zero-filled */
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

/* The multiplier of a decimal suffix (k M G T) or, when `binary`, of a binary one (Ki Mi Gi Ti:
 * c is the letter before the i), in units; 0 for any other. "m" is handled apart; anything else
 * goes to kq_parse. */
static uint64_t suffix_mult(char c, bool binary)
{
    switch (c) {
    case 'k':
        return binary ? 0 : UINT64_C(1000);
    case 'K':
        return binary ? UINT64_C(1) << 10 : 0;
    case 'M':
        return binary ? UINT64_C(1) << 20 : UINT64_C(1000000);
    case 'G':
        return binary ? UINT64_C(1) << 30 : UINT64_C(1000000000);
    case 'T':
        return binary ? UINT64_C(1) << 40 : UINT64_C(1000000000000);
    default:
        return 0;
    }
}

/* The fast path of quantity_value for the forms objects nearly always use: up to 18 digits (so no
 * overflow) and no suffix, "m", or one of the suffixes of suffix_mult. Exactly what kq_parse
 * followed by kq_value or kq_milli_value gives: these quantities are integers times an integer
 * factor, or thousandths ("m", rounded up to units). Returns 1 with *ret set, or 0 when the text
 * is not of this form or the result would not fit (the caller then takes the general path, which
 * also applies upstream's cap of binary quantities). */
__attribute__((always_inline)) static inline int quantity_fast(const char *t, size_t len,
                                                               bool milli, int64_t *ret)
{
    size_t i = 0, digits = len < 18 ? len : 18;
    uint64_t d = 0, mult;
    unsigned c;
    int64_t v;

    while (i < digits && (c = (unsigned char)t[i] - '0') <= 9) {
        d = d * 10 + c;
        i++;
    }
    if (i == 0)
        return 0;
    switch (len - i) {
    case 0:
        mult = 1;
        break;
    case 1:
        if (t[i] == 'm') {
            *ret = milli ? (int64_t)d : (int64_t)(d / 1000 + (d % 1000 != 0));
            return 1;
        }
        mult = suffix_mult(t[i], false);
        break;
    case 2:
        mult = t[i + 1] == 'i' ? suffix_mult(t[i], true) : 0;
        break;
    default:
        return 0;
    }
    if (mult == 0)
        return 0;
    if (milli)
        mult *= 1000; /* at most 2^40 * 1000: no overflow */
    if (__builtin_mul_overflow(d, mult, &v))
        return 0;
    *ret = v;
    return 1;
}

/* quantity_value past its fast path: kq_parse. */
static int quantity_slow(const char *t, size_t len, bool milli, int64_t *ret)
{
    struct kq q;
    int64_t v;
    int r;

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

/* The value of quantity text t (len bytes) in the smallest unit of a resource (thousandths when
 * `milli`, for cpu), rounded up as kq_value/kq_milli_value do. Returns 0, -EINVAL or -ERANGE
 * (a negative value is -ERANGE: no request or allocatable is negative). */
__attribute__((always_inline)) static inline int quantity_value(const char *t, size_t len,
                                                                bool milli, int64_t *ret)
{
    if (quantity_fast(t, len, milli, ret))
        return 0;
    return quantity_slow(t, len, milli, ret);
}

/* The amount of quantity text t (len bytes; NULL when the JSON value is not a string) for slot
 * `slot`, or -1 (counted) when it is not a valid non-negative quantity that fits an int64. */
static int64_t amount_of(struct shr_state *s, int slot, const char *t, size_t len)
{
    int64_t a;

    if (!t || quantity_value(t, len, s->res_cpu[slot], &a) < 0) {
        s->bad_quantities++;
        return -1;
    }
    return a;
}

/* ---- object fields --------------------------------------------------------------------------- */

/* The member `lit` (a string literal) of obj, or NULL (also when obj is not an object). The
 * length is known, so jansson does not measure the key. Looked up rather than found by iterating
 * the members: a scan of even a small object reads its ordered member list, which lies in another
 * cache line than the hash table the lookups use, and the members not wanted; where the lookups'
 * path is in cache (the informer's handlers get objects just decoded or read), the scan missed
 * more than the lookups' extra instructions cost. */
#define GET(obj, lit) json_object_getn((obj), (lit), sizeof(lit) - 1)

/* The text and length of a JSON string, or NULL when v is not a string. */
static const char *str_of(const json_t *v, size_t *ret_len)
{
    *ret_len = 0;
    if (!json_is_string(v))
        return NULL;
    *ret_len = json_string_length(v);
    return json_string_value(v);
}

static bool str_is(const json_t *v, const char *text, size_t len)
{
    size_t vlen;
    const char *p = str_of(v, &vlen);

    return p && vlen == len && memcmp(p, text, len) == 0;
}

#define STR_IS(v, lit) str_is((v), (lit), sizeof(lit) - 1)

/* Whether v is a string whose C string (up to its first NUL) is `text`, as strcmp sees it: the
 * comparison includes text's terminating NUL, which lies within v's bytes when v is at least as
 * long as text. */
__attribute__((always_inline)) static inline bool cstr_eq(const char *p, size_t plen,
                                                          const char *text, size_t len)
{
    return p && plen >= len && bytes_eq(p, text, len + 1);
}

static bool cstr_is(const json_t *v, const char *text, size_t len)
{
    size_t vlen;
    const char *p = str_of(v, &vlen);

    return cstr_eq(p, vlen, text, len);
}

#define CSTR_EQ(p, plen, lit) cstr_eq((p), (plen), (lit), sizeof(lit) - 1)
#define CSTR_IS(v, lit)       cstr_is((v), (lit), sizeof(lit) - 1)

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

/* Adds (or takes the maximum with) the amount of resource `name` (len bytes), quantity text t
 * (tlen bytes, or NULL when not a string), into a. `protect` holds the slots the caller is already
 * using. */
__attribute__((always_inline)) static inline void acc_add(struct shr_state *s, struct acc *a,
                                                          enum acc_op op, uint64_t protect,
                                                          const char *name, size_t len,
                                                          const char *t, size_t tlen)
{
    int slot = res_intern(s, name, len, protect | a->mask);
    uint64_t bit;
    int64_t x;

    if (slot < 0)
        return;
    x = amount_of(s, slot, t, tlen);
    if (x < 0)
        return;
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

/* Adds (or takes the maximum with) the amounts of the quantity map `map` into a. */
static void acc_map(struct shr_state *s, const json_t *map, struct acc *a, enum acc_op op,
                    uint64_t protect)
{
    json_t *m = (json_t *)map;

    if (!json_is_object(map))
        return;
    for (void *it = json_object_iter(m); it; it = json_object_iter_next(m, it)) {
        const char *t = NULL;
        size_t tlen = 0;

        t = str_of(json_object_iter_value(it), &tlen);
        acc_add(s, a, op, protect, json_object_iter_key(it), json_object_iter_key_len(it), t, tlen);
    }
}

/* Adds (or takes the maximum with) the amounts of the record's quantities [first, first + n). */
static void acc_qtys(struct shr_state *s, const struct kpod *p, uint32_t first, uint32_t n,
                     struct acc *a, enum acc_op op, uint64_t protect)
{
    const struct kpod_qty *q = kpod_qtys(p);

    for (uint32_t i = first; i < first + n; i++)
        acc_add(s, a, op, protect, kpod_text(p, q[i].name), q[i].name.len, kpod_text(p, q[i].value),
                q[i].value.len);
}

/* A sidecar: an init container with restartPolicy Always, running for the pod's whole life. The
 * policy is compared as a C string, as it always was (json_string_value and strcmp). */
static bool is_sidecar(const struct kpod *p, const struct kpod_ctr *c)
{
    const char *policy = kpod_text(p, c->restart_policy);

    return policy && strcmp(policy, "Always") == 0;
}

/* The init containers in their order, as the scheduler counts them (admission/offer.h says the
 * same): a regular one needs its request on top of the sidecars started before it, a sidecar adds
 * its request to theirs. *init gets the largest need, *side the sidecars' sum. */
static void acc_init(struct shr_state *s, const struct kpod *p, struct acc *init, struct acc *side,
                     uint64_t protect)
{
    const struct kpod_ctr *ctr = kpod_containers(p);

    for (uint32_t i = p->ncontainers; i < p->ncontainers + p->ninit; i++) {
        const struct kpod_ctr *c = &ctr[i];
        bool sidecar = is_sidecar(p, c);
        struct acc one;
        uint64_t m;

        one.mask = 0;
        acc_qtys(s, p, c->req, c->nreq, &one, ACC_SUM, protect | init->mask | side->mask);
        for (m = one.mask; m; m &= m - 1) {
            int slot = __builtin_ctzll(m);
            uint64_t bit = UINT64_C(1) << slot;
            i128 v = one.v[slot];

            if (side->mask & bit)
                v += side->v[slot];
            if (sidecar) {
                side->mask |= bit;
                side->v[slot] = v;
            }
            if (!(init->mask & bit) || v > init->v[slot]) {
                init->mask |= bit;
                init->v[slot] = v;
            }
        }
    }
}

/* A pod's new contribution: slots and values of its non-zero amounts, "pods" included. */
struct contrib {
    unsigned n;
    int max_slot;
    uint8_t slot[SHR_MAX_RESOURCES];
    int64_t val[SHR_MAX_RESOURCES];
};

/* The effective requests of pod record p: max(sum of containers + sum of sidecars, largest need
 * of an init container) + overhead (acc_init), each saturated at INT64_MAX; "pods" is 1 whatever
 * the object says. The record's quantities are in one block (kube/podrec.h), read in order. */
static void pod_contrib(struct shr_state *s, const struct kpod *p, struct contrib *ret)
{
    const struct kpod_ctr *ctr = kpod_containers(p);
    struct acc sum, init, side, ov;
    uint64_t all;

    sum.mask = init.mask = side.mask = ov.mask = 0;
    for (uint32_t i = 0; i < p->ncontainers; i++)
        acc_qtys(s, p, ctr[i].req, ctr[i].nreq, &sum, ACC_SUM, 0);
    acc_init(s, p, &init, &side, sum.mask);
    acc_qtys(s, p, p->overhead, p->noverhead, &ov, ACC_SUM, sum.mask | init.mask | side.mask);
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
        if (side.mask & bit)
            e += side.v[slot];
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
        tab_remove(s, &s->nodes, n);
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

static void stg_release(struct shr_state *s);

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
    s->staging = true;
    *ret = s;
    return 0;
}

struct shr_state *shr_free(struct shr_state *s)
{
    if (!s)
        return NULL;
    for (uint32_t i = 0; i < s->pods.cap; i++) {
        struct shr_pod *p = s->pods.slots[i];
        if (p && rec_words(pod_size(p->n, p->key_len)) > REC_CLASSES)
            x_free(p);
    }
    tab_free(&s->pods);
    stg_release(s);
    for (uint32_t i = 0; i < s->nodes.cap; i++) {
        struct shr_node *n = s->nodes.slots[i];
        if (n)
            node_destroy(s, n);
    }
    tab_free(&s->nodes);
    rec_release(s); /* the pods' and the nodes' records */
    node_destroy(s, &s->unsched);
    for (int i = 0; i < SHR_MAX_ORIGINS; i++)
        if (s->orig[i])
            origin_free(s, s->orig[i]);
    x_free(s);
    return NULL;
}

/* ---- nodes ----------------------------------------------------------------------------------- */

/* Whether a node's conditions say it is Ready (the first condition of type Ready decides). */
static bool node_ready(const json_t *conds)
{
    size_t n = json_array_size(conds);

    for (size_t i = 0; i < n; i++)
        __builtin_prefetch(json_array_get(conds, i));
    for (size_t i = 0; i < n; i++) {
        const json_t *c = json_array_get(conds, i);

        if (CSTR_IS(GET(c, "type"), "Ready"))
            return CSTR_IS(GET(c, "status"), "True");
    }
    return false;
}

int shr_node_upsert(struct shr_state *s, const json_t *node)
{
    const json_t *meta, *spec, *status, *labels, *conds, *allocatable;
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
    /* The members are looked up level by level, each level's objects prefetched: a node object
     * is seldom in cache (nodes change rarely), and this overlaps the misses of the different
     * branches instead of taking them one after the other. */
    meta = GET(node, "metadata");
    spec = GET(node, "spec");
    status = GET(node, "status");
    __builtin_prefetch(meta);
    __builtin_prefetch(spec);
    __builtin_prefetch(status);
    name = str_of(GET(meta, "name"), &len);
    if (!name || len == 0 || len > OBJ_NAME_MAX || memchr(name, '\0', len))
        return -EINVAL;
    labels = GET(meta, "labels");
    conds = GET(status, "conditions");
    allocatable = GET(status, "allocatable");
    __builtin_prefetch(labels);
    __builtin_prefetch(conds);
    __builtin_prefetch(allocatable);
    counted = !json_is_true(GET(spec, "unschedulable")) &&
              !STR_IS(GET(labels, LABEL_TYPE_LIQO), VIRTUAL_NODE) &&
              !STR_IS(GET(labels, LABEL_TYPE), VIRTUAL_NODE) && node_ready(conds);

    /* The allocatable, as a sparse vector (a node lists each name once). */
    al.mask = 0;
    acc_map(s, allocatable, &al, ACC_SUM, 0);
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

_Static_assert(KEY_MAX - 1 < 512 && SHR_MAX_RESOURCES < 128, "struct shr_pod's bit fields");

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

/* Whether a pod's phase (status.phase: its text, or NULL when not a string) says it has
 * terminated. */
static bool pod_terminal(const char *phase, size_t len)
{
    return CSTR_EQ(phase, len, "Succeeded") || CSTR_EQ(phase, len, "Failed");
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

/* A pod upsert as read from its object: what pod_commit applies. */
struct pod_in {
    const char *node_name, *oname; /* borrowed (from the object, or from the stage) */
    size_t node_len, olen;
    uint32_t hash, node_hash;
    int key_len;
    bool active; /* not terminal: it contributes */
    struct contrib c;
    char key[KEY_MAX];
};

/* Reads a pod's record: its key, whether it is active, its node, its origin and its contribution
 * (which interns the resource names it requests). With `prefetch`, the lines of the tables that
 * pod_commit will read are prefetched as soon as their addresses are known. The containers of a
 * terminal pod are not read: it contributes nothing. */
static int pod_read(struct shr_state *s, const struct kpod *p, bool prefetch, struct pod_in *in)
{
    in->active = !pod_terminal(kpod_text(p, p->phase), p->phase.len);
    in->node_name = in->oname = NULL;
    in->node_len = in->olen = 0;
    in->node_hash = 0;
    if (in->active) {
        struct kpod_str origin = kpod_label(p, SHR_LABEL_ORIGIN);

        in->node_name = kpod_text(p, p->node);
        in->node_len = p->node.len;
        in->oname = kpod_text(p, origin);
        in->olen = origin.len;
        if (in->node_name && in->node_len > 0 && in->node_len <= OBJ_NAME_MAX) {
            in->node_hash = hash_bytes(s->seed, in->node_name, in->node_len);
            if (prefetch)
                tab_prefetch(&s->nodes, in->node_hash);
        }
    }
    in->key_len =
        pod_key_make(kpod_text(p, p->ns), p->ns.len, kpod_text(p, p->name), p->name.len, in->key);
    if (in->key_len < 0)
        return in->key_len;
    in->hash = hash_bytes(s->seed, in->key, (size_t)in->key_len);
    if (prefetch)
        tab_prefetch(&s->pods, in->hash);
    in->c.n = 0;
    in->c.max_slot = 0;
    if (in->active) {
        if (in->node_name &&
            (in->node_len > OBJ_NAME_MAX || memchr(in->node_name, '\0', in->node_len)))
            return -EINVAL;
        if (prefetch && in->node_name && in->node_len > 0)
            tab_prefetch_rec(&s->nodes, in->node_hash);
        pod_contrib(s, p, &in->c);
    }
    return 0;
}

/* Applies a pod read by pod_read: its record added or replaced, its contribution moved. Either
 * the whole change or, on -ENOMEM, none of it (see "Failure atomicity"). */
static int pod_commit(struct shr_state *s, const struct pod_in *in)
{
    const struct contrib *c = &in->c;
    struct shr_pod *old, *rec = NULL;
    struct shr_node *target = NULL, *fresh = NULL, *old_node;
    i128 *org_vec = NULL;
    uint8_t org_cap = 0;
    int origin = -1, r = -ENOMEM;

    if (in->active) {
        if (in->node_name && in->node_len > 0) {
            /* Found now, and the line its pods' usage will be added to prefetched. */
            target = node_find(s, in->node_hash, in->node_name, in->node_len);
            if (target && target->used)
                __builtin_prefetch(target->used, 1);
        } else {
            target = &s->unsched;
        }
        if (in->oname && in->olen > 0) {
            r = origin_intern(s, in->oname, in->olen, &origin);
            if (r < 0)
                return r;
            r = -ENOMEM;
        }
    }
    old = pod_find(s, in->hash, in->key, (size_t)in->key_len);
    /* An update that changes nothing the computation keeps (as most pod updates: status changes)
     * leaves the state as it is: removing and adding the same contribution would do the same. */
    if (old && old->node == target && old->origin == (uint16_t)(origin + 1) && old->n == c->n &&
        memcmp(old->val, c->val, c->n * sizeof(int64_t)) == 0 &&
        memcmp(pod_slots(old), c->slot, c->n) == 0)
        return 0;

    /* Prepare: every allocation, none visible. */
    if (in->active) {
        if (!target) {
            fresh = target = node_new(s, in->node_hash, in->node_name, in->node_len);
            if (!fresh || tab_reserve(s, &s->nodes, 1) < 0)
                goto out;
        }
        if (ensure_cap(s, &target->used, &target->ucap, vec_cap(c->max_slot)) < 0)
            goto out;
        if (origin >= 0) {
            struct norg *no = node_org(target, (uint16_t)origin);

            if (no) {
                if (ensure_cap(s, &no->used, &no->cap, vec_cap(c->max_slot)) < 0)
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
                if (ensure_cap(s, &org_vec, &org_cap, vec_cap(c->max_slot)) < 0)
                    goto out;
            }
        }
    }
    if (!old || old->n != c->n) {
        rec = rec_alloc(s, pod_size(c->n, (size_t)in->key_len));
        if (!rec)
            goto out;
        if (!old && tab_reserve(s, &s->pods, 1) < 0)
            goto out;
        rec->hash = in->hash;
        rec->key_len = (uint16_t)in->key_len;
        rec->n = (uint8_t)c->n;
        memcpy(pod_key(rec), in->key, (size_t)in->key_len);
        pod_key(rec)[in->key_len] = '\0';
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
            rec_free(s, old, pod_size(old->n, old->key_len));
        } else {
            tab_insert(&s->pods, rec);
        }
        old = rec;
        rec = NULL;
    }
    old->node = target;
    old->origin = (uint16_t)(origin + 1);
    memcpy(old->val, c->val, c->n * sizeof(int64_t));
    memcpy(pod_slots(old), c->slot, c->n);
    if (target)
        pod_apply(s, old, 1);
    if (old_node)
        node_tidy(s, old_node);
    r = 0;
out:
    rec_free(s, rec, pod_size(c->n, (size_t)in->key_len));
    if (org_vec)
        mem_free(s, org_vec, org_cap * sizeof(i128));
    if (fresh)
        node_destroy(s, fresh);
    return r;
}

/* ---- the stage ------------------------------------------------------------------------------- */

/* A staged pod upsert: this header, then int64_t val[n], uint8_t slot[n], the key, the node name
 * and the origin (their lengths here), padded to 8 bytes. Its resource slots are referenced
 * (res_refs) while it is staged, so that they are not recycled under it; its origin is kept as
 * text and interned at the flush (an interned origin without pods may be recycled). */
struct stg_ent {
    uint32_t hash, node_hash;
    uint16_t key_len;
    uint8_t node_len, olen, n, active, max_slot, pad;
};

_Static_assert(OBJ_NAME_MAX <= UINT8_MAX && ORIGIN_MAX < UINT8_MAX && SHR_MAX_RESOURCES <= 255,
               "struct stg_ent's fields");

static size_t stg_ent_size(unsigned n, size_t key_len, size_t node_len, size_t olen)
{
    return (sizeof(struct stg_ent) + n * (sizeof(int64_t) + 1) + key_len + node_len + olen + 7) &
           ~(size_t)7;
}

static char *stg_data(struct stg_chunk *k)
{
    return (char *)k + sizeof(*k);
}

/* Unmaps a list of chunks and empties it. */
static void stg_unmap_all(struct shr_state *s, struct stg_chunk **list)
{
    while (*list) {
        struct stg_chunk *k = *list;

        *list = k->next;
        mem_unmap(s, k, k->size);
    }
}

static void stg_release(struct shr_state *s)
{
    stg_unmap_all(s, &s->stg_head);
    stg_unmap_all(s, &s->rec_spare);
    s->stg_tail = NULL;
    s->stg_bytes = 0;
    s->stg_n = 0;
}

/* Appends a pod read by pod_read to the stage. 0 or -ENOMEM (nothing staged). */
static int stg_add(struct shr_state *s, const struct pod_in *in)
{
    /* An origin longer than a label value is not interned (origin_intern): its first
     * ORIGIN_MAX + 1 bytes say so as well as the whole. */
    size_t olen = in->olen > ORIGIN_MAX ? ORIGIN_MAX + 1 : in->olen;
    size_t node_len = in->node_name ? in->node_len : 0;
    size_t size = stg_ent_size(in->c.n, (size_t)in->key_len, node_len, olen);
    struct stg_chunk *k = s->stg_tail;
    struct stg_ent *e;
    char *p;

    if (!k || k->size - sizeof(*k) - k->used < size) {
        size_t csize = k ? (k->size < STG_CHUNK_MAX ? k->size * 2 : k->size) : STG_CHUNK_MIN;

        k = mem_map(s, csize);
        if (!k)
            return -ENOMEM;
        k->size = csize;
        k->next = NULL;
        k->used = k->done = 0;
        if (s->stg_tail)
            s->stg_tail->next = k;
        else
            s->stg_head = k;
        s->stg_tail = k;
    }
    e = (struct stg_ent *)(stg_data(k) + k->used);
    e->hash = in->hash;
    e->node_hash = in->node_hash;
    e->key_len = (uint16_t)in->key_len;
    e->node_len = (uint8_t)node_len;
    e->olen = (uint8_t)olen;
    e->n = (uint8_t)in->c.n;
    e->active = in->active;
    e->max_slot = (uint8_t)in->c.max_slot;
    e->pad = 0;
    p = (char *)(e + 1);
    memcpy(p, in->c.val, in->c.n * sizeof(int64_t));
    p += in->c.n * sizeof(int64_t);
    memcpy(p, in->c.slot, in->c.n);
    p += in->c.n;
    memcpy(p, in->key, (size_t)in->key_len);
    p += in->key_len;
    if (node_len)
        memcpy(p, in->node_name, node_len);
    p += node_len;
    if (olen)
        memcpy(p, in->oname, olen);
    for (unsigned i = 0; i < in->c.n; i++)
        s->res_refs[in->c.slot[i]]++;
    k->used += size;
    s->stg_bytes += size;
    s->stg_n++;
    return 0;
}

/* The entry at a position of the stage, or NULL past its end (moving to the next chunk). */
static const struct stg_ent *stg_at(struct stg_chunk **k, size_t *off)
{
    while (*k && *off >= (*k)->used) {
        *k = (*k)->next;
        *off = *k ? (*k)->done : 0;
    }
    return *k ? (const struct stg_ent *)(stg_data(*k) + *off) : NULL;
}

static size_t stg_size_of(const struct stg_ent *e)
{
    return stg_ent_size(e->n, e->key_len, e->node_len, e->olen);
}

/* A cursor over the stage: the entry under it, then moved past it (NULL at the end). */
struct stg_cur {
    struct stg_chunk *k;
    size_t off;
};

static const struct stg_ent *stg_next(struct stg_cur *c)
{
    const struct stg_ent *e = stg_at(&c->k, &c->off);

    if (e)
        c->off += stg_size_of(e);
    return e;
}

static uint64_t mono_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

#define FLUSH_CLOCK_EVERY 256 /* entries applied between two readings of the clock */

/* Applies the stage until budget_ns has passed (UINT64_MAX: all of it): 1 when it is all applied
 * (staging ended), 0 when some is left, or a negative errno. */
static int flush(struct shr_state *s, uint64_t budget_ns)
{
    /* A second cursor runs STG_FAR entries in front of the one applying entries, prefetching the
     * stage itself and the table lines (pods, nodes) its entry will read, so that the misses of
     * several entries overlap instead of following each other. (Two more cursors, prefetching
     * the node record and then its usage vector, made no measurable difference.) Each chunk
     * applied becomes the memory of the next pod record block: on this machine, a page mapped
     * costs ≈1.5 µs (zeroed, prefaulted), and the records of 150,000 pods take ≈15 MB of them,
     * which the stage's applied chunks already hold (a record is not larger than its entry). */
    struct stg_cur cur, far;
    const struct stg_ent *e, *a;
    struct pod_in in;
    uint64_t t0 = budget_ns == UINT64_MAX ? 0 : mono_ns();
    unsigned since_clock = 0;
    int i;

    if (!s)
        return -EINVAL;
    if (!s->staging)
        return 1;
    /* The pod table sized for every staged pod at once (no growth in between, so the lines
     * prefetched stay the ones read); on failure it grows as needed. */
    if (s->stg_n)
        (void)tab_reserve(s, &s->pods, (uint32_t)(s->stg_n < UINT32_MAX ? s->stg_n : UINT32_MAX));
    cur.k = s->stg_head;
    cur.off = cur.k ? cur.k->done : 0;
    far = cur;
    for (i = 0; i < STG_FAR; i++)
        (void)stg_next(&far);
    while ((e = stg_at(&cur.k, &cur.off)) != NULL) {
        const char *p = (const char *)(e + 1);
        int r;

        if ((a = stg_next(&far)) != NULL) {
            __builtin_prefetch((const char *)a + STG_STREAM);
            __builtin_prefetch((const char *)a + STG_STREAM + 64);
            tab_prefetch(&s->pods, a->hash);
            if (a->node_len)
                tab_prefetch(&s->nodes, a->node_hash);
        }
        in.hash = e->hash;
        in.node_hash = e->node_hash;
        in.key_len = e->key_len;
        in.active = e->active;
        in.c.n = e->n;
        in.c.max_slot = e->max_slot;
        memcpy(in.c.val, p, e->n * sizeof(int64_t));
        p += e->n * sizeof(int64_t);
        memcpy(in.c.slot, p, e->n);
        p += e->n;
        memcpy(in.key, p, e->key_len);
        p += e->key_len;
        in.node_name = e->node_len ? p : NULL;
        in.node_len = e->node_len;
        p += e->node_len;
        in.oname = e->olen ? p : NULL;
        in.olen = e->olen;
        /* The stage's references go; pod_commit takes the record's. */
        for (unsigned j = 0; j < in.c.n; j++)
            s->res_refs[in.c.slot[j]]--;
        r = pod_commit(s, &in);
        if (r < 0) {
            for (unsigned j = 0; j < in.c.n; j++)
                s->res_refs[in.c.slot[j]]++;
            return r; /* what is left stays staged for the next flush */
        }
        cur.off += stg_size_of(e);
        cur.k->done = cur.off;
        s->stg_n--;
        if (cur.off >= cur.k->used) {
            /* An applied chunk: the memory of the next record block. */
            struct stg_chunk *k = cur.k;

            s->stg_head = k->next;
            if (s->stg_tail == k)
                s->stg_tail = NULL;
            s->stg_bytes -= k->used;
            k->next = s->rec_spare;
            s->rec_spare = k;
            cur.k = s->stg_head;
            cur.off = cur.k ? cur.k->done : 0;
        }
        if (t0 && ++since_clock >= FLUSH_CLOCK_EVERY) {
            since_clock = 0;
            if (mono_ns() - t0 >= budget_ns && stg_at(&cur.k, &cur.off))
                return 0; /* the rest at the next call, from the chunks' done offsets */
        }
    }
    stg_release(s);
    s->staging = false;
    return 1;
}

int shr_flush(struct shr_state *s)
{
    int r = flush(s, UINT64_MAX);

    return r < 0 ? r : 0;
}

int shr_flush_some(struct shr_state *s, uint64_t budget_ns)
{
    return flush(s, budget_ns ? budget_ns : 1);
}

bool shr_staging(const struct shr_state *s)
{
    return s && s->staging;
}

/* ---- pod events ------------------------------------------------------------------------------ */

const struct kpod_options shr_pod_record_options = {.nlabels = 1, .labels = {SHR_LABEL_ORIGIN}};

/* Whether the record's options asked for the origin label (else the pod would pass for one of no
 * consumer). */
static bool has_origin(const struct kpod *p)
{
    for (size_t i = 0; i < p->opts->nlabels; i++)
        if (strcmp(p->opts->labels[i], SHR_LABEL_ORIGIN) == 0)
            return true;
    return false;
}

int shr_pod_upsert(struct shr_state *s, const json_t *pod)
{
    struct kpod *p;
    int r;

    if (!s || !pod)
        return -EINVAL;
    r = kpod_from_json(pod, &shr_pod_record_options, &p);
    if (r < 0)
        return r;
    r = shr_pod_upsert_record(s, p);
    x_free(p);
    return r;
}

int shr_pod_upsert_record(struct shr_state *s, const struct kpod *pod)
{
    struct pod_in in;
    int r;

    if (!s || !pod || !has_origin(pod))
        return -EINVAL;
    if (s->staging && s->stg_bytes >= STG_MAX_BYTES) {
        r = shr_flush(s);
        if (r < 0)
            return r;
    }
    r = pod_read(s, pod, !s->staging, &in);
    if (r < 0)
        return r;
    return s->staging ? stg_add(s, &in) : pod_commit(s, &in);
}

int shr_pod_delete(struct shr_state *s, const char *ns, const char *name)
{
    char key[KEY_MAX];
    struct shr_pod *p;
    struct shr_node *n;
    int key_len, r;

    if (!s || !ns || !name)
        return -EINVAL;
    key_len =
        pod_key_make(ns, strnlen(ns, OBJ_NAME_MAX + 1), name, strnlen(name, OBJ_NAME_MAX + 1), key);
    if (key_len < 0)
        return key_len;
    if (s->staging && (r = shr_flush(s)) < 0)
        return r;
    p = pod_find(s, hash_bytes(s->seed, key, (size_t)key_len), key, (size_t)key_len);
    if (!p)
        return 0;
    n = p->node;
    if (n)
        pod_apply(s, p, -1);
    tab_remove(s, &s->pods, p);
    rec_free(s, p, pod_size(p->n, p->key_len));
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

void shr_totals(struct shr_state *s, struct shr_list *ret_avail, struct shr_list *ret_used)
{
    if (ret_avail)
        ret_avail->n = 0;
    if (ret_used)
        ret_used->n = 0;
    if (!s)
        return;
    (void)shr_flush(s); /* on failure, the totals of what is applied */
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

int shr_offer(struct shr_state *s, const char *origin, const struct shr_policy *p,
              struct shr_list *ret)
{
    const struct shr_origin *o = NULL;
    int r;

    if (!s || !p || !ret)
        return -EINVAL;
    r = shr_flush(s);
    if (r < 0)
        return r;
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

void shr_get_stats(struct shr_state *s, struct shr_stats *ret)
{
    if (!ret)
        return;
    memset(ret, 0, sizeof(*ret));
    if (!s)
        return;
    (void)shr_flush(s); /* on failure, the figures of what is applied */
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
    if (!kname_dns_subdomain_n(key, (size_t)(slash - key)) ||
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
        json_t *policy = json_object_get(c, "restartPolicy");

        if (slim && json_is_string(policy)) /* an init container's: a sidecar's is Always */
            json_object_set(slim, "restartPolicy", policy);
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
    keep(st, status, "podIPs"); /* the objects webhook: a consumer's pod IPs (admission) */
    json_object_clear(pod);
    json_object_set_new(pod, "metadata", m);
    json_object_set_new(pod, "spec", sp);
    json_object_set_new(pod, "status", st);
}
