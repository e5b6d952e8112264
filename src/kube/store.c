#include "kube/store.h"
#include "common/jsonfast.h"
#include "common/xalloc.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
/* The advanced dictionary calls (static workspaces, compression parameters): the shared library
 * exports them. */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#ifndef KSTORE_LEVEL
#define KSTORE_LEVEL 1 /* zstd level: see the measurements in bench/README.md */
#endif
#define SCRATCH_KEEP (256 * 1024) /* scratch buffers larger than this are freed after use */
/* A pool's first block is SLAB_FIRST bytes (it holds the largest class), each next twice as large
 * up to SLAB_BLOCK. */
#define SLAB_BLOCK   (64 * 1024)
#define SLAB_FIRST   (4 * 1024)
#define SLAB_GRAIN   16
#define SLAB_CLASSES 128 /* objects up to 2 KiB come from slabs, larger ones from x_malloc */
#define MAX_KEY      65535
#define MAX_RV       255

/* Value flags. */
enum {
    VAL_RAW = 1, /* serialised, waiting for the dictionary */
    VAL_ZDICT,   /* compressed (zstd) with the store's dictionary */
    VAL_TREE,    /* a json_t * (tree mode) */
};

/* A value: one allocation, replaced as a whole on every update. data holds the resourceVersion
 * and its NUL, then the stored bytes (or, in tree mode, the json_t pointer). */
struct kval {
    uint32_t raw_len; /* serialised length */
    uint32_t len;     /* stored bytes */
    uint8_t flags;
    uint8_t rv_len;
    char data[];
};

/* A record kept beside an entry: the owner's bytes, 8-byte aligned in the slabs. */
struct krec {
    uint64_t len;
    unsigned char data[];
};

/* Every element of a hash table (entry, index value) starts with its hash. */
struct kstore_entry {
    uint32_t hash;
    uint32_t gen;
    struct kval *val;
    struct kmem *mem; /* index sets the entry belongs to, NULL when none */
    struct krec *rec; /* the owner's record (kstore_set_record), NULL when none */
    uint16_t key_len;
    char key[];
};

/* Open addressing, linear probing, backward-shift deletion; slots hold element pointers. */
struct ptab {
    void **slots;
    uint32_t cap; /* 0 or a power of two */
    uint32_t n;
};

/* One value of one index: the set of entries whose index function returned it. */
struct ival {
    uint32_t hash;
    uint8_t index;
    struct ptab members; /* struct kstore_entry * */
    char value[];
};

struct kmem {
    uint16_t n;
    struct ival *v[];
};

struct kindex {
    char *name;
    kstore_index_fn fn;
    struct ptab values; /* struct ival * */
};

struct buf {
    unsigned char *p;
    size_t cap;
};

struct slab_block {
    struct slab_block *next;
    uint64_t pad; /* keeps the data 16-byte aligned */
    unsigned char data[];
};

struct slab {
    struct slab_block *blocks;
    unsigned char *cur;
    size_t left;
    size_t next_block; /* the size of the next block (0: SLAB_FIRST) */
    void *free[SLAB_CLASSES + 1];
    size_t block_bytes, used, big; /* big: chunk bytes of objects above the largest class */
};

/* The entries, in TABLE_SHARDS tables chosen by the top bits of their hash: a table doubles when
 * it is three quarters full, and moving a whole store's entries at once held the loop for
 * milliseconds at 100,000 objects (a cache miss each, and a new table of megabytes to fault in);
 * a shard moves a sixty-fourth of them. */
#define TABLE_SHARD_BITS 6
#define TABLE_SHARDS     (1u << TABLE_SHARD_BITS)
_Static_assert(sizeof(size_t) >= 8, "kstore_next's cursor holds a shard and a slot");

struct kstore {
    enum kstore_mode mode;
    uint64_t seed;
    struct ptab table[TABLE_SHARDS];
    size_t count; /* entries, over every shard */
    struct kindex idx[KSTORE_MAX_INDEXES];
    int nidx;
    uint32_t gen;
    uint32_t marked; /* entries marked with gen: the others are stale */
    /* compact mode */
    unsigned char *dict; /* samples, then the frozen dictionary */
    size_t dict_len;
    unsigned samples;
    bool frozen;
    bool ctx_user;               /* counted in the thread's shared contexts */
    const ZSTD_CDict *cdict;     /* the frozen dictionary, digested once for compression */
    const ZSTD_DDict *ddict;     /* and for decompression */
    void *cdict_mem, *ddict_mem; /* their buffers */
    struct buf ser, z, dec;
    /* Two pools: entries, keys, index memberships and records, whose addresses are stable; and the
     * values, which kstore_compact may move (only the entries point to them). */
    struct slab slab, vslab;
    unsigned compactions;
    size_t raw_json, compressed;
    size_t codec_bytes; /* the digested dictionaries' buffers (chunk sizes) */
};

/* The compression and decompression contexts are scratch state between calls: one pair per thread,
 * shared by its stores (a store is used by one thread, see store.h), made on first use and freed
 * with the last store that used them. */
static _Thread_local struct {
    ZSTD_CCtx *c;
    ZSTD_DCtx *d;
    unsigned users;
} tctx;

/* ---- accounting ----------------------------------------------------------------------------- */

static size_t chunk(size_t n)
{
    size_t c = (n + 8 + 15) & ~(size_t)15;
    return c < 32 ? 32 : c;
}

/* ---- slabs --------------------------------------------------------------------------------- */

static size_t slab_class(size_t n)
{
    size_t c = (n + SLAB_GRAIN - 1) / SLAB_GRAIN;
    return c ? c : 1;
}

static void *slab_alloc(struct slab *sl, size_t n)
{
    size_t c = slab_class(n), size = c * SLAB_GRAIN;
    void *p;

    if (c > SLAB_CLASSES) {
        p = x_malloc(n);
        if (p)
            sl->big += chunk(n);
        return p;
    }
    if (sl->free[c]) {
        p = sl->free[c];
        memcpy(&sl->free[c], p, sizeof(void *));
        sl->used += size;
        return p;
    }
    if (sl->left < size) {
        size_t bs = sl->next_block ? sl->next_block : SLAB_FIRST;
        struct slab_block *b = x_malloc(bs);
        if (!b)
            return NULL;
        /* Small collections (most of an agent's) stay in a few KiB; large ones grow by 64 KiB. */
        sl->next_block = bs < SLAB_BLOCK ? 2 * bs : SLAB_BLOCK;
        /* The tail of the previous block goes to the free list of its size. */
        if (sl->left >= SLAB_GRAIN) {
            size_t tc = sl->left / SLAB_GRAIN;
            memcpy(sl->cur, &sl->free[tc], sizeof(void *));
            sl->free[tc] = sl->cur;
        }
        b->next = sl->blocks;
        sl->blocks = b;
        sl->cur = b->data;
        sl->left = bs - offsetof(struct slab_block, data);
        sl->block_bytes += chunk(bs);
    }
    p = sl->cur;
    sl->cur += size;
    sl->left -= size;
    sl->used += size;
    return p;
}

static void slab_free(struct slab *sl, void *p, size_t n)
{
    size_t c = slab_class(n);

    if (!p)
        return;
    if (c > SLAB_CLASSES) {
        sl->big -= chunk(n);
        x_free(p);
        return;
    }
    memcpy(p, &sl->free[c], sizeof(void *));
    sl->free[c] = p;
    sl->used -= c * SLAB_GRAIN;
}

static void slab_blocks_free(struct slab *sl)
{
    while (sl->blocks) {
        struct slab_block *b = sl->blocks;
        sl->blocks = b->next;
        x_free(b);
    }
}

/* Block bytes not in use: free lists and the current block's tail. */
static size_t slab_slack(const struct slab *sl)
{
    return sl->block_bytes - (sl->used <= sl->block_bytes ? sl->used : 0);
}

/* ---- hashing -------------------------------------------------------------------------------- */

static uint32_t hash_str(const struct kstore *s, const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL ^ s->seed;

    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 0x100000001b3ULL;
    }
    /* murmur3 finaliser: FNV's low bits are weak */
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return (uint32_t)h;
}

static uint32_t elem_hash(const void *e)
{
    uint32_t h;

    memcpy(&h, e, sizeof(h));
    return h;
}

/* ---- pointer tables ------------------------------------------------------------------------- */

static int ptab_grow(struct ptab *t)
{
    uint32_t ncap = t->cap ? t->cap * 2 : 8;
    void **ns;

    if (ncap < t->cap)
        return -ENOMEM;
    ns = x_calloc(ncap, sizeof(*ns));
    if (!ns)
        return -ENOMEM;
    for (uint32_t i = 0; i < t->cap; i++) {
        if (!t->slots[i])
            continue;
        uint32_t j = elem_hash(t->slots[i]) & (ncap - 1);
        while (ns[j])
            j = (j + 1) & (ncap - 1);
        ns[j] = t->slots[i];
    }
    x_free(t->slots);
    t->slots = ns;
    t->cap = ncap;
    return 0;
}

/* Inserts an element known not to be present. */
static int ptab_insert(struct ptab *t, void *e)
{
    uint32_t i;

    if ((uint64_t)(t->n + 1) * 4 > (uint64_t)t->cap * 3) {
        int r = ptab_grow(t);
        if (r < 0)
            return r;
    }
    i = elem_hash(e) & (t->cap - 1);
    while (t->slots[i])
        i = (i + 1) & (t->cap - 1);
    t->slots[i] = e;
    t->n++;
    return 0;
}

static void ptab_remove_at(struct ptab *t, uint32_t i)
{
    uint32_t mask = t->cap - 1, j = i;

    t->slots[i] = NULL;
    t->n--;
    /* Backward shift: move later elements of the cluster into the hole when their home slot does
     * not lie cyclically in (hole, j]. */
    for (;;) {
        j = (j + 1) & mask;
        if (!t->slots[j])
            break;
        uint32_t home = elem_hash(t->slots[j]) & mask;
        if (((j - home) & mask) >= ((j - i) & mask)) {
            t->slots[i] = t->slots[j];
            t->slots[j] = NULL;
            i = j;
        }
    }
    if (t->n == 0) {
        x_free(t->slots);
        t->slots = NULL;
        t->cap = 0;
    }
}

/* Removes the element e (by identity); no-op when absent. */
static void ptab_remove(struct ptab *t, const void *e)
{
    if (!t->cap)
        return;
    for (uint32_t i = elem_hash(e) & (t->cap - 1); t->slots[i]; i = (i + 1) & (t->cap - 1))
        if (t->slots[i] == e) {
            ptab_remove_at(t, i);
            return;
        }
}

static size_t ptab_bytes(const struct ptab *t)
{
    return t->cap ? chunk((size_t)t->cap * sizeof(void *)) : 0;
}

static struct ptab *shard_of(const struct kstore *s, uint32_t h)
{
    return (struct ptab *)&s->table[h >> (32 - TABLE_SHARD_BITS)];
}

/* ---- scratch buffers ------------------------------------------------------------------------ */

static int buf_reserve(struct buf *b, size_t n)
{
    unsigned char *p;
    size_t cap = b->cap ? b->cap : 4096;

    if (n <= b->cap)
        return 0;
    while (cap < n)
        cap *= 2;
    p = x_malloc(cap);
    if (!p)
        return -ENOMEM;
    x_free(b->p);
    b->p = p;
    b->cap = cap;
    return 0;
}

static void buf_trim(struct buf *b)
{
    if (b->cap > SCRATCH_KEEP) {
        x_free(b->p);
        b->p = NULL;
        b->cap = 0;
    }
}

/* Makes the thread's contexts if needed and counts s among their users. */
static int ctx_use(struct kstore *s)
{
    if (s->ctx_user)
        return 0;
    if (!tctx.c) {
        /* Sticky parameters: kept by every compression; the level is superseded by a CDict's. */
        if (!(tctx.c = ZSTD_createCCtx()) ||
            ZSTD_isError(ZSTD_CCtx_setParameter(tctx.c, ZSTD_c_compressionLevel, KSTORE_LEVEL)) ||
            ZSTD_isError(ZSTD_CCtx_setParameter(tctx.c, ZSTD_c_contentSizeFlag, 0)) ||
            ZSTD_isError(ZSTD_CCtx_setParameter(tctx.c, ZSTD_c_checksumFlag, 0)) ||
            ZSTD_isError(ZSTD_CCtx_setParameter(tctx.c, ZSTD_c_dictIDFlag, 0))) {
            ZSTD_freeCCtx(tctx.c);
            tctx.c = NULL;
            return -ENOMEM;
        }
    }
    if (!tctx.d && !(tctx.d = ZSTD_createDCtx()))
        return -ENOMEM;
    tctx.users++;
    s->ctx_user = true;
    return 0;
}

static void ctx_release(struct kstore *s)
{
    if (!s->ctx_user)
        return;
    s->ctx_user = false;
    if (--tctx.users)
        return;
    ZSTD_freeCCtx(tctx.c);
    ZSTD_freeDCtx(tctx.d);
    tctx.c = NULL;
    tctx.d = NULL;
}

/* Digests the frozen dictionary (s->dict, kept by the store: referenced, not copied) into
 * dictionaries laid out in buffers of the store's own (zstd's static-workspace calls: nothing
 * allocated inside zstd, and the bytes are known). The parameters are those of the level for
 * objects of the samples' mean size, which keeps the tables small. */
static int dict_digest(struct kstore *s)
{
    ZSTD_compressionParameters cp;
    size_t mean, n;

    if ((s->cdict && s->ddict) || !s->dict_len)
        return ctx_use(s);
    mean = s->samples ? s->dict_len / s->samples : s->dict_len;
    cp = ZSTD_getCParams(KSTORE_LEVEL, mean, s->dict_len);
    if (!s->cdict) {
        n = ZSTD_estimateCDictSize_advanced(s->dict_len, cp, ZSTD_dlm_byRef);
        if (!(s->cdict_mem = x_malloc(n)))
            return -ENOMEM;
        s->cdict = ZSTD_initStaticCDict(s->cdict_mem, n, s->dict, s->dict_len, ZSTD_dlm_byRef,
                                        ZSTD_dct_rawContent, cp);
        if (!s->cdict) {
            x_free(s->cdict_mem);
            s->cdict_mem = NULL;
            return -EIO;
        }
        s->codec_bytes += chunk(n);
    }
    if (!s->ddict) {
        n = ZSTD_estimateDDictSize(s->dict_len, ZSTD_dlm_byRef);
        if (!(s->ddict_mem = x_malloc(n)))
            return -ENOMEM;
        s->ddict = ZSTD_initStaticDDict(s->ddict_mem, n, s->dict, s->dict_len, ZSTD_dlm_byRef,
                                        ZSTD_dct_rawContent);
        if (!s->ddict) {
            x_free(s->ddict_mem);
            s->ddict_mem = NULL;
            return -EIO;
        }
        s->codec_bytes += chunk(n);
    }
    return ctx_use(s);
}

/* ---- values --------------------------------------------------------------------------------- */

static const char *val_rv(const struct kval *v)
{
    return v->data;
}

static unsigned char *val_bytes(struct kval *v)
{
    return (unsigned char *)v->data + v->rv_len + 1;
}

static size_t val_size(const struct kval *v)
{
    return sizeof(*v) + v->rv_len + 1 + v->len;
}

static struct kval *val_new(struct kstore *s, uint8_t flags, const char *rv, uint32_t raw_len,
                            const void *bytes, uint32_t len)
{
    size_t rv_len = rv ? strlen(rv) : 0;
    struct kval *v;

    if (rv_len > MAX_RV)
        rv_len = 0; /* not a version this store can compare: every put is a change */
    v = slab_alloc(&s->vslab, sizeof(*v) + rv_len + 1 + len);
    if (!v)
        return NULL;
    v->raw_len = raw_len;
    v->len = len;
    v->flags = flags;
    v->rv_len = (uint8_t)rv_len;
    if (rv_len)
        memcpy(v->data, rv, rv_len);
    v->data[rv_len] = '\0';
    memcpy(val_bytes(v), bytes, len);
    return v;
}

static size_t accounted(size_t n)
{
    size_t c = slab_class(n);
    return c > SLAB_CLASSES ? chunk(n) : c * SLAB_GRAIN;
}

static json_t *val_tree(const struct kval *v)
{
    json_t *obj;

    memcpy(&obj, v->data + v->rv_len + 1, sizeof(obj));
    return obj;
}

static void val_free(struct kstore *s, struct kval *v)
{
    if (!v)
        return;
    if (v->flags == VAL_TREE)
        json_decref(val_tree(v));
    slab_free(&s->vslab, v, val_size(v));
}

static size_t entry_size(const struct kstore_entry *e)
{
    return sizeof(*e) + e->key_len + 1;
}

static size_t mem_size(uint16_t n)
{
    return sizeof(struct kmem) + n * sizeof(struct ival *);
}

/* Serialises obj into s->ser; returns its length or a negative errno. */
static long serialise(struct kstore *s, const json_t *obj)
{
    size_t n = json_dumpb(obj, (char *)s->ser.p, s->ser.cap, JSON_COMPACT);

    if (n == 0)
        return -EINVAL;
    if (n > KSTORE_MAX_OBJECT)
        return -E2BIG;
    if (n > s->ser.cap) {
        if (buf_reserve(&s->ser, n) < 0)
            return -ENOMEM;
        n = json_dumpb(obj, (char *)s->ser.p, s->ser.cap, JSON_COMPACT);
        if (n == 0 || n > s->ser.cap)
            return -EINVAL;
    }
    return (long)n;
}

/* Compresses n bytes with the dictionary into a new value. The frame carries neither the content
 * size (the value has it) nor a checksum nor the dictionary's ID: the store made the frame and
 * keeps the dictionary. */
static int compress_val(struct kstore *s, const char *rv, const unsigned char *in, size_t n,
                        struct kval **ret)
{
    size_t bound = ZSTD_compressBound(n), out;
    struct kval *v;
    int r;

    if ((r = dict_digest(s)) < 0)
        return r;
    if (buf_reserve(&s->z, bound) < 0)
        return -ENOMEM;
    out = ZSTD_CCtx_refCDict(tctx.c, s->cdict); /* NULL (no dictionary) unsets another store's */
    if (!ZSTD_isError(out))
        out = ZSTD_compress2(tctx.c, s->z.p, s->z.cap, in, n);
    if (ZSTD_isError(out))
        return -EIO;
    v = val_new(s, VAL_ZDICT, rv, (uint32_t)n, s->z.p, (uint32_t)out);
    buf_trim(&s->z);
    if (!v)
        return -ENOMEM;
    *ret = v;
    return 0;
}

/* text (may be NULL): obj's serialised form, kept instead of serialising obj again. */
static int encode(struct kstore *s, json_t *obj, const char *text, size_t text_len, const char *rv,
                  struct kval **ret)
{
    const unsigned char *bytes;
    struct kval *v;
    long n;
    int r = 0;

    if (s->mode == KSTORE_TREE) {
        v = val_new(s, VAL_TREE, rv, 0, &obj, sizeof(obj));
        if (!v)
            return -ENOMEM;
        json_incref(obj);
        *ret = v;
        return 0;
    }
    if (text) {
        if (text_len > KSTORE_MAX_OBJECT)
            return -E2BIG;
        if (text_len == 0)
            return -EINVAL;
        bytes = (const unsigned char *)text;
        n = (long)text_len;
    } else {
        n = serialise(s, obj);
        bytes = s->ser.p;
    }
    if (n < 0)
        return (int)n;
    if (s->frozen) {
        r = compress_val(s, rv, bytes, (size_t)n, &v);
    } else {
        /* Not worth a dictionary yet: kept as it is (the first ones are its samples later). */
        v = val_new(s, VAL_RAW, rv, (uint32_t)n, bytes, (uint32_t)n);
        if (!v)
            r = -ENOMEM;
    }
    buf_trim(&s->ser);
    if (r < 0)
        return r;
    *ret = v;
    return 0;
}

static int decode(struct kstore *s, struct kval *v, json_t **ret)
{
    json_error_t err;
    const char *json;
    json_t *obj;

    switch (v->flags) {
    case VAL_TREE:
        *ret = json_incref(val_tree(v));
        return 0;
    case VAL_RAW:
        json = (const char *)val_bytes(v);
        break;
    case VAL_ZDICT: {
        size_t out;
        int r;

        if ((r = dict_digest(s)) < 0)
            return r;
        if (buf_reserve(&s->dec, v->raw_len ? v->raw_len : 1) < 0)
            return -ENOMEM;
        if (s->ddict)
            out = ZSTD_decompress_usingDDict(tctx.d, s->dec.p, v->raw_len, val_bytes(v), v->len,
                                             s->ddict);
        else
            out = ZSTD_decompressDCtx(tctx.d, s->dec.p, v->raw_len, val_bytes(v), v->len);
        if (ZSTD_isError(out) || out != v->raw_len)
            return -EBADMSG;
    }
        json = (const char *)s->dec.p;
        break;
    default:
        return -EBADMSG;
    }
    /* The same tree as json_loadb, about five times faster on objects (common/jsonfast.h). */
    obj = jsf_load(json, v->raw_len, 0);
    if (!obj)
        obj = json_loadb(json, v->raw_len, 0, &err);
    buf_trim(&s->dec);
    if (!obj)
        return -EBADMSG;
    *ret = obj;
    return 0;
}

/* ---- indexes -------------------------------------------------------------------------------- */

static struct ival *ival_find(const struct kstore *s, const struct kindex *ix, const char *value,
                              uint32_t h)
{
    const struct ptab *t = &ix->values;

    if (!t->cap)
        return NULL;
    for (uint32_t i = h & (t->cap - 1); t->slots[i]; i = (i + 1) & (t->cap - 1)) {
        struct ival *v = t->slots[i];
        if (v->hash == h && strcmp(v->value, value) == 0)
            return v;
    }
    (void)s;
    return NULL;
}

static void mem_drop(struct kstore *s, struct kstore_entry *e)
{
    struct kmem *m = e->mem;

    if (!m)
        return;
    for (uint16_t i = 0; i < m->n; i++) {
        struct ival *v = m->v[i];
        ptab_remove(&v->members, e);
        if (v->members.n == 0) {
            ptab_remove(&s->idx[v->index].values, v);
            x_free(v);
        }
    }
    slab_free(&s->slab, m, mem_size(m->n));
    e->mem = NULL;
}

/* Computes the index values of obj and adds e to their sets. Best effort under memory pressure:
 * a membership that cannot be recorded is skipped. */
static void mem_add(struct kstore *s, struct kstore_entry *e, const json_t *obj)
{
    struct ival *got[KSTORE_MAX_INDEXES * KSTORE_MAX_INDEX_VALUES];
    const char *vals[KSTORE_MAX_INDEX_VALUES];
    uint16_t n = 0;

    for (int i = 0; i < s->nidx; i++) {
        struct kindex *ix = &s->idx[i];
        int k = ix->fn(obj, vals, KSTORE_MAX_INDEX_VALUES);
        if (k > KSTORE_MAX_INDEX_VALUES)
            k = KSTORE_MAX_INDEX_VALUES;
        for (int j = 0; j < k; j++) {
            size_t len;
            uint32_t h;
            struct ival *v;
            bool dup = false;

            if (!vals[j])
                continue;
            len = strlen(vals[j]);
            h = hash_str(s, vals[j], len);
            v = ival_find(s, ix, vals[j], h);
            for (uint16_t d = 0; v && d < n; d++)
                dup = dup || got[d] == v;
            if (dup)
                continue; /* the function returned the same value twice */
            if (!v) {
                v = x_calloc(1, sizeof(*v) + len + 1);
                if (!v)
                    continue;
                v->hash = h;
                v->index = (uint8_t)i;
                memcpy(v->value, vals[j], len + 1);
                if (ptab_insert(&ix->values, v) < 0) {
                    x_free(v);
                    continue;
                }
            }
            if (ptab_insert(&v->members, e) < 0) {
                if (v->members.n == 0) {
                    ptab_remove(&ix->values, v);
                    x_free(v);
                }
                continue;
            }
            got[n++] = v;
        }
    }
    if (!n)
        return;
    e->mem = slab_alloc(&s->slab, mem_size(n));
    if (!e->mem) {
        /* Cannot remember the sets: take the entry out of them again. */
        for (uint16_t i = 0; i < n; i++) {
            ptab_remove(&got[i]->members, e);
            if (got[i]->members.n == 0) {
                ptab_remove(&s->idx[got[i]->index].values, got[i]);
                x_free(got[i]);
            }
        }
        return;
    }
    e->mem->n = n;
    memcpy(e->mem->v, got, n * sizeof(got[0]));
}

/* ---- public --------------------------------------------------------------------------------- */

int kstore_new(enum kstore_mode mode, struct kstore **ret)
{
    struct kstore *s;

    if (!ret || (mode != KSTORE_COMPACT && mode != KSTORE_TREE))
        return -EINVAL;
    s = x_calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->mode = mode;
    s->gen = 1;
    if (getrandom(&s->seed, sizeof(s->seed), GRND_NONBLOCK) != (ssize_t)sizeof(s->seed)) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        s->seed = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(uintptr_t)s;
    }
    *ret = s;
    return 0;
}

struct kstore *kstore_free(struct kstore *s)
{
    struct kstore_entry *e;
    size_t it = 0;

    if (!s)
        return NULL;
    /* kstore_next reads the slots, not the entries: each can be freed once returned. */
    while ((e = kstore_next(s, &it))) {
        if (e->mem)
            slab_free(&s->slab, e->mem, mem_size(e->mem->n));
        if (e->rec)
            kstore_record_free(s, e->rec->data);
        val_free(s, e->val);
        slab_free(&s->slab, e, entry_size(e));
    }
    for (unsigned k = 0; k < TABLE_SHARDS; k++)
        x_free(s->table[k].slots);
    slab_blocks_free(&s->slab);
    slab_blocks_free(&s->vslab);
    for (int i = 0; i < s->nidx; i++) {
        struct ptab *t = &s->idx[i].values;
        for (uint32_t j = 0; j < t->cap; j++) {
            struct ival *v = t->slots[j];
            if (v) {
                x_free(v->members.slots);
                x_free(v);
            }
        }
        x_free(t->slots);
        x_free(s->idx[i].name);
    }
    x_free(s->cdict_mem); /* static dictionaries: their buffers are all there is to free */
    x_free(s->ddict_mem);
    ctx_release(s);
    x_free(s->dict);
    x_free(s->ser.p);
    x_free(s->z.p);
    x_free(s->dec.p);
    x_free(s);
    return NULL;
}

enum kstore_mode kstore_mode(const struct kstore *s)
{
    return s->mode;
}

int kstore_add_index(struct kstore *s, const char *name, kstore_index_fn fn)
{
    struct kindex *ix;

    if (!s || !name || !fn || s->count)
        return -EINVAL;
    for (int i = 0; i < s->nidx; i++)
        if (strcmp(s->idx[i].name, name) == 0)
            return -EEXIST;
    if (s->nidx >= KSTORE_MAX_INDEXES)
        return -ENOSPC;
    ix = &s->idx[s->nidx];
    ix->name = x_strdup(name);
    if (!ix->name)
        return -ENOMEM;
    ix->fn = fn;
    s->nidx++;
    return 0;
}

size_t kstore_count(const struct kstore *s)
{
    return s->count;
}

static struct kstore_entry *find(const struct kstore *s, const char *key, size_t len, uint32_t h)
{
    const struct ptab *t = shard_of(s, h);

    if (!t->cap)
        return NULL;
    for (uint32_t i = h & (t->cap - 1); t->slots[i]; i = (i + 1) & (t->cap - 1)) {
        struct kstore_entry *e = t->slots[i];
        if (e->hash == h && e->key_len == len && memcmp(e->key, key, len) == 0)
            return e;
    }
    return NULL;
}

struct kstore_entry *kstore_find(const struct kstore *s, const char *key)
{
    size_t len;

    if (!s || !key)
        return NULL;
    len = strlen(key);
    return len > MAX_KEY ? NULL : find(s, key, len, hash_str(s, key, len));
}

const char *kstore_entry_key(const struct kstore_entry *e)
{
    return e->key;
}

const void *kstore_entry_record(const struct kstore_entry *e)
{
    return e->rec ? e->rec->data : NULL;
}

int kstore_set_record(struct kstore *s, struct kstore_entry *e, const void *rec, size_t len,
                      const void **ret_old)
{
    struct krec *k = NULL;

    if (!s || !e || !ret_old || (rec && len > KSTORE_MAX_OBJECT))
        return -EINVAL;
    if (rec) {
        k = slab_alloc(&s->slab, sizeof(*k) + len);
        if (!k)
            return -ENOMEM;
        k->len = len;
        memcpy(k->data, rec, len);
    }
    *ret_old = e->rec ? e->rec->data : NULL;
    e->rec = k;
    return 0;
}

void kstore_record_free(struct kstore *s, const void *rec)
{
    struct krec *k;

    if (!s || !rec)
        return;
    k = (struct krec *)((const unsigned char *)rec - offsetof(struct krec, data));
    slab_free(&s->slab, k, sizeof(*k) + k->len);
}

const char *kstore_entry_rv(const struct kstore_entry *e)
{
    return val_rv(e->val);
}

int kstore_put(struct kstore *s, const char *key, json_t *obj, const char *rv, json_t **ret_old)
{
    return kstore_put_text(s, key, obj, NULL, 0, rv, ret_old);
}

int kstore_put_text(struct kstore *s, const char *key, json_t *obj, const char *text,
                    size_t text_len, const char *rv, json_t **ret_old)
{
    struct kstore_entry *e, *fresh = NULL;
    struct kval *v = NULL;
    json_t *old = NULL;
    size_t len;
    uint32_t h;
    int r;

    if (!s || !key || !json_is_object(obj))
        return -EINVAL;
    len = strlen(key);
    if (len > MAX_KEY)
        return -ENAMETOOLONG;
    h = hash_str(s, key, len);
    e = find(s, key, len, h);
    r = encode(s, obj, text, text_len, rv, &v);
    if (r < 0)
        goto out;
    if (e && ret_old) {
        r = decode(s, e->val, &old);
        if (r < 0)
            goto out;
    }
    if (!e) {
        fresh = slab_alloc(&s->slab, sizeof(*fresh) + len + 1);
        if (!fresh) {
            r = -ENOMEM;
            goto out;
        }
        memset(fresh, 0, sizeof(*fresh));
        fresh->hash = h;
        fresh->key_len = (uint16_t)len;
        memcpy(fresh->key, key, len + 1);
        r = ptab_insert(shard_of(s, h), fresh);
        if (r < 0)
            goto out;
        s->count++;
        e = fresh;
        fresh = NULL;
        r = 0;
    } else {
        mem_drop(s, e);
        if (e->val->flags != VAL_TREE) {
            s->raw_json -= e->val->raw_len;
            s->compressed -= e->val->flags == VAL_ZDICT ? e->val->len : 0;
        }
        val_free(s, e->val);
        r = 1;
    }
    e->val = v;
    v = NULL;
    if (r == 0 || e->gen != s->gen)
        s->marked++;
    e->gen = s->gen;
    if (e->val->flags != VAL_TREE) {
        s->raw_json += e->val->raw_len;
        s->compressed += e->val->flags == VAL_ZDICT ? e->val->len : 0;
    }
    mem_add(s, e, obj);
    if (ret_old) {
        *ret_old = old;
        old = NULL;
    }
    if (!s->frozen && s->raw_json >= KSTORE_COMPRESS_MIN)
        (void)kstore_freeze(s); /* on failure the entries stay uncompressed: still valid */
out:
    json_decref(old);
    val_free(s, v);
    if (fresh)
        slab_free(&s->slab, fresh, entry_size(fresh));
    return r;
}

void kstore_remove(struct kstore *s, struct kstore_entry *e, json_t **ret_old)
{
    json_t *old = NULL;

    if (!s || !e)
        return;
    if (ret_old && decode(s, e->val, &old) < 0)
        old = NULL;
    mem_drop(s, e);
    if (e->rec)
        kstore_record_free(s, e->rec->data);
    if (e->gen == s->gen)
        s->marked--;
    ptab_remove(shard_of(s, e->hash), e);
    s->count--;
    if (e->val->flags != VAL_TREE) {
        s->raw_json -= e->val->raw_len;
        s->compressed -= e->val->flags == VAL_ZDICT ? e->val->len : 0;
    }
    val_free(s, e->val);
    slab_free(&s->slab, e, entry_size(e));
    if (ret_old)
        *ret_old = old;
}

int kstore_decode(struct kstore *s, const struct kstore_entry *e, json_t **ret)
{
    json_t *obj;
    int r;

    if (!s || !e || !ret)
        return -EINVAL;
    r = decode(s, e->val, &obj);
    if (r < 0)
        return r;
    *ret = obj;
    return 0;
}

struct kstore_entry *kstore_next(const struct kstore *s, size_t *iter)
{
    /* The cursor is the shard in the bits above 32 and the slot below. */
    for (size_t k = *iter >> 32; k < TABLE_SHARDS; k++) {
        const struct ptab *t = &s->table[k];
        for (size_t i = k == *iter >> 32 ? *iter & 0xffffffffu : 0; i < t->cap; i++)
            if (t->slots[i]) {
                *iter = k << 32 | (i + 1);
                return t->slots[i];
            }
    }
    *iter = (size_t)TABLE_SHARDS << 32;
    return NULL;
}

size_t kstore_foreach(struct kstore *s, kstore_visit_fn fn, void *data)
{
    struct kstore_entry *e;
    size_t it = 0, n = 0;

    while ((e = kstore_next(s, &it))) {
        json_t *obj;
        if (decode(s, e->val, &obj) < 0)
            continue;
        fn(obj, data);
        json_decref(obj);
        n++;
    }
    return n;
}

int kstore_index_foreach(struct kstore *s, const char *index, const char *value, kstore_visit_fn fn,
                         void *data)
{
    int n = 0;

    if (!s || !index || !value || !fn)
        return -EINVAL;
    for (int i = 0; i < s->nidx; i++) {
        struct ival *v;
        if (strcmp(s->idx[i].name, index) != 0)
            continue;
        v = ival_find(s, &s->idx[i], value, hash_str(s, value, strlen(value)));
        for (uint32_t j = 0; v && j < v->members.cap; j++) {
            struct kstore_entry *e = v->members.slots[j];
            json_t *obj;
            if (!e || decode(s, e->val, &obj) < 0)
                continue;
            fn(obj, data);
            json_decref(obj);
            n++;
        }
        return n;
    }
    return -ENOENT;
}

void kstore_new_generation(struct kstore *s)
{
    s->gen++;
    s->marked = 0;
}

void kstore_touch(struct kstore *s, struct kstore_entry *e)
{
    if (e->gen != s->gen)
        s->marked++;
    e->gen = s->gen;
}

size_t kstore_stale_count(const struct kstore *s)
{
    return s->count - s->marked;
}

bool kstore_stale(const struct kstore *s, const struct kstore_entry *e)
{
    return e->gen != s->gen;
}

int kstore_freeze(struct kstore *s)
{
    struct kstore_entry *e;
    size_t it = 0;
    int r = 0;

    if (!s || s->mode != KSTORE_COMPACT || s->frozen)
        return 0;
    /* The dictionary: the first KSTORE_DICT_SAMPLES objects (KSTORE_DICT_MAX bytes at most), all
     * still serialised as they came. Without memory for it, or objects, compress without one. */
    if (!s->dict && (s->dict = x_malloc(KSTORE_DICT_MAX))) {
        while (s->samples < KSTORE_DICT_SAMPLES && s->dict_len < KSTORE_DICT_MAX &&
               (e = kstore_next(s, &it))) {
            size_t n = e->val->len, left = KSTORE_DICT_MAX - s->dict_len;

            if (e->val->flags != VAL_RAW)
                continue;
            memcpy(s->dict + s->dict_len, val_bytes(e->val), n < left ? n : left);
            s->dict_len += n < left ? n : left;
            s->samples++;
        }
        it = 0;
        if (s->dict_len < KSTORE_DICT_MAX) { /* keep what it holds only */
            unsigned char *d = x_reallocarray(s->dict, s->dict_len ? s->dict_len : 1, 1);
            if (d)
                s->dict = d;
        }
    }
    s->frozen = true;
    while ((e = kstore_next(s, &it))) {
        struct kval *v;
        if (e->val->flags != VAL_RAW)
            continue;
        r = compress_val(s, val_rv(e->val), val_bytes(e->val), e->val->len, &v);
        if (r < 0)
            break;
        s->compressed += v->len;
        val_free(s, e->val);
        e->val = v;
    }
    return r;
}

/* A value's chunk is reused only by a value of its size class, and a collection's values grow as
 * its objects do (a pod gains its node, then its status): the smaller chunks their updates freed
 * stay in the free lists, a third of the pods' slabs at 1,000 offloaded pods. Past
 * KSTORE_COMPACT_MIN bytes of slack that are also a quarter of the pool, the values are copied
 * into one new block of exactly their size and the old blocks freed. Each byte copied was paid for
 * by a quarter byte freed before, so over time a put costs a constant more. */
int kstore_compact(struct kstore *s)
{
    struct slab *sl;
    struct slab_block *b;
    struct kstore_entry *e;
    size_t it = 0, slack, size;

    if (!s)
        return -EINVAL;
    sl = &s->vslab;
    slack = slab_slack(sl);
    if (slack < KSTORE_COMPACT_MIN || slack < sl->block_bytes / 4)
        return 0;
    /* used: the class sizes of the values in blocks, all of them (the large ones are outside). */
    size = offsetof(struct slab_block, data) + sl->used;
    b = x_malloc(size);
    if (!b)
        return -ENOMEM;
    b->next = NULL;
    {
        unsigned char *cur = b->data;

        while ((e = kstore_next(s, &it))) {
            size_t n = val_size(e->val), c = slab_class(n);

            if (c > SLAB_CLASSES)
                continue; /* a large value is an allocation of its own */
            memcpy(cur, e->val, n);
            e->val = (struct kval *)cur;
            cur += c * SLAB_GRAIN;
        }
    }
    slab_blocks_free(sl);
    memset(sl->free, 0, sizeof(sl->free));
    sl->blocks = b;
    sl->cur = NULL;
    sl->left = 0;
    sl->block_bytes = chunk(size);
    /* sl->used and sl->big are unchanged; the next block is a large one again */
    sl->next_block = SLAB_BLOCK;
    s->compactions++;
    return 1;
}

unsigned kstore_compactions(const struct kstore *s)
{
    return s ? s->compactions : 0;
}

void kstore_get_stats(const struct kstore *s, struct kstore_stats *ret)
{
    struct kstore_stats st = {0};
    size_t it = 0;
    struct kstore_entry *e;

    st.count = s->count;
    for (unsigned k = 0; k < TABLE_SHARDS; k++)
        st.table += ptab_bytes(&s->table[k]);
    while ((e = kstore_next(s, &it))) {
        st.entries += accounted(entry_size(e));
        st.values += accounted(val_size(e->val));
        if (e->rec)
            st.records += accounted(sizeof(*e->rec) + e->rec->len);
        if (e->mem)
            st.indexes += accounted(mem_size(e->mem->n));
    }
    for (int i = 0; i < s->nidx; i++) {
        const struct ptab *t = &s->idx[i].values;
        st.indexes += ptab_bytes(t);
        for (uint32_t j = 0; j < t->cap; j++) {
            const struct ival *v = t->slots[j];
            if (v)
                st.indexes += chunk(sizeof(*v) + strlen(v->value) + 1) + ptab_bytes(&v->members);
        }
    }
    st.fixed = chunk(sizeof(*s)) + (s->dict ? chunk(s->dict_len ? s->dict_len : 1) : 0) +
               (s->ser.cap ? chunk(s->ser.cap) : 0) + (s->z.cap ? chunk(s->z.cap) : 0) +
               (s->dec.cap ? chunk(s->dec.cap) : 0);
    st.fixed += s->codec_bytes;
    st.slack = slab_slack(&s->slab) + slab_slack(&s->vslab);
    st.raw_json = s->raw_json;
    st.compressed = s->compressed;
    st.dict_len = s->frozen ? s->dict_len : 0;
    *ret = st;
}
