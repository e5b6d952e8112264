/* kstore: the informer's object store — a hash table of "namespace/name" keys to cached objects,
 * with user indexes, kept small enough to cache tens of thousands of objects per informer.
 *
 * Two layouts (enum kstore_mode):
 *   KSTORE_COMPACT  each object is kept serialised (JSON_COMPACT) and compressed (zstd) with
 *                   a preset dictionary that the store learns from the first objects it is given,
 *                   so field names and values repeated across a collection cost a few bits. Objects
 *                   are decoded on demand (kstore_decode) into a fresh jansson tree.
 *   KSTORE_TREE     each object is kept as its jansson tree (a reference is held): no decoding
 *                   cost, an order of magnitude more memory.
 * In both layouts the key and the object's metadata.resourceVersion live outside the object, so a
 * relist can compare versions without decoding anything.
 *
 * Dictionary learning: a collection is compressed once its serialised objects add up to
 * KSTORE_COMPRESS_MIN bytes: below that, the dictionary's tables (about 100 KB) would cost more
 * than they save, and objects stay serialised, uncompressed (decoded without a decompression).
 * At that point the dictionary is frozen from the first KSTORE_DICT_SAMPLES objects cached (at most
 * KSTORE_DICT_MAX bytes of them) and every object is compressed with it. kstore_freeze() freezes
 * it whatever the size (measurements, tests).
 * The frozen dictionary is digested once per store for compression and for decompression (zstd
 * dictionaries, about 90 KB with the level's parameters for objects of the samples' mean size);
 * the compression and decompression contexts are one pair per thread, shared by its stores.
 *
 * Memory: entries, values and membership lists are cut from slabs with per-size free lists, in
 * two pools (the values; the rest), each's first slab 4 KiB and each next twice as large up to
 * 64 KiB, so that the many small collections of a process cost a few KiB each. Slabs are returned
 * by kstore_free, and the values' by kstore_compact, which packs them again once the chunks freed
 * by updates pile up (a collection that shrinks otherwise keeps its slabs for reuse).
 *
 * Entries: struct kstore_entry pointers are stable while the entry is in the store (an update
 * keeps the entry and replaces its value); kstore_put and kstore_remove are the only calls that
 * change the store. Keys and resourceVersions returned are borrowed, valid while the entry is.
 *
 * Indexes: an index function maps an object to up to KSTORE_MAX_INDEX_VALUES strings; the store
 * keeps, per index, value -> set of entries, and per entry the sets it belongs to (so an update or
 * a removal never needs the old object). Single-threaded: all calls from the owner's loop. */
#ifndef CLIQO_KUBE_STORE_H
#define CLIQO_KUBE_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KSTORE_MAX_INDEXES      8
#define KSTORE_MAX_INDEX_VALUES 16
#ifndef KSTORE_DICT_SAMPLES /* overridable for measurements (bench/README.md) */
#define KSTORE_DICT_SAMPLES 4
#endif
#ifndef KSTORE_DICT_MAX
#define KSTORE_DICT_MAX (16 * 1024)
#endif
#define KSTORE_MAX_OBJECT (64 * 1024 * 1024) /* largest serialised object accepted */
#ifndef KSTORE_COMPRESS_MIN
#define KSTORE_COMPRESS_MIN                                                                        \
    (128 * 1024) /* serialised bytes from which a collection is compressed */
#endif
#ifndef KSTORE_COMPACT_MIN
#define KSTORE_COMPACT_MIN (128 * 1024) /* slack of the values below which kstore_compact waits */
#endif

enum kstore_mode {
    KSTORE_COMPACT,
    KSTORE_TREE,
};

struct kstore;
struct kstore_entry;

/* Writes up to `max` borrowed strings taken from obj (e.g. a label value) to values and returns
 * how many, or a negative errno (the object is then not indexed under that index). */
typedef int (*kstore_index_fn)(const json_t *obj, const char **values, size_t max);
/* obj is borrowed: valid during the call only. */
typedef void (*kstore_visit_fn)(json_t *obj, void *data);

/* Memory the store accounts for, in bytes. Entries, values and membership lists live in the
 * store's own slabs (64 KiB blocks cut in 16-byte size classes, so that they do not end up
 * scattered over pages of freed list trees): they count as their size class. Other allocations
 * count as the glibc chunk they occupy (request + 8-byte header, rounded up to 16, at least 32). */
struct kstore_stats {
    size_t count;
    size_t entries;    /* entry headers and keys */
    size_t values;     /* compressed objects (in tree mode only the pointer: jansson's memory is
                          not seen by the store) */
    size_t slack;      /* slab bytes not in use (free lists, block tails) */
    size_t table;      /* the key hash table */
    size_t indexes;    /* index maps, value sets and per-entry membership lists */
    size_t records;    /* typed records kept beside the objects (kstore_set_record) */
    size_t fixed;      /* dictionary and its digests, scratch buffers: independent of count */
    size_t raw_json;   /* sum of the serialised sizes of the objects (compact mode) */
    size_t compressed; /* sum of the compressed sizes (compact mode) */
    size_t dict_len;   /* bytes of preset dictionary (0: not frozen yet) */
};

int kstore_new(enum kstore_mode mode, struct kstore **ret);
/* Frees the store, its entries and their objects. NULL-safe; returns NULL. */
struct kstore *kstore_free(struct kstore *s);
enum kstore_mode kstore_mode(const struct kstore *s);

/* Adds an index; only while the store is empty. -EEXIST for a duplicate name, -ENOSPC beyond
 * KSTORE_MAX_INDEXES. The name is copied. */
int kstore_add_index(struct kstore *s, const char *name, kstore_index_fn fn);

size_t kstore_count(const struct kstore *s);
struct kstore_entry *kstore_find(const struct kstore *s, const char *key);
const char *kstore_entry_key(const struct kstore_entry *e);
/* Records: bytes the owner keeps beside an entry (the informer's typed records, informer.h),
 * copied into the store's slabs, 8-byte aligned, counted in kstore_stats.records. An entry has
 * none when created; kstore_put keeps it. kstore_set_record copies len bytes of rec (NULL: none)
 * and attaches them to e, and *ret_old receives the record it had (or NULL), which stays valid
 * until the caller gives it to kstore_record_free (so that a handler can read the old record of
 * an update). kstore_remove and kstore_free free the record still attached. 0, -EINVAL, -ENOMEM
 * (e keeps its record). */
const void *kstore_entry_record(const struct kstore_entry *e);
int kstore_set_record(struct kstore *s, struct kstore_entry *e, const void *rec, size_t len,
                      const void **ret_old);
void kstore_record_free(struct kstore *s, const void *rec); /* NULL-safe */
/* The resourceVersion given to kstore_put ("" when it had none). */
const char *kstore_entry_rv(const struct kstore_entry *e);

/* Inserts or replaces the object under key (obj borrowed: the store keeps its own encoding, or a
 * reference in tree mode; rv may be NULL). If ret_old is non-NULL and the key existed, *ret_old
 * receives a new reference to the previous object (decoded), else NULL. The entry's mark is set
 * to the current generation. Returns 0 for an insert, 1 for a replacement, or a negative errno
 * (the store is unchanged). */
int kstore_put(struct kstore *s, const char *key, json_t *obj, const char *rv, json_t **ret_old);
/* The same, with obj's JSON text at hand (e.g. as it came from the server): in compact mode the
 * store keeps that text instead of serialising obj again. The caller guarantees that the text
 * decodes to obj (json_equal); obj is still what the indexes read. */
int kstore_put_text(struct kstore *s, const char *key, json_t *obj, const char *text,
                    size_t text_len, const char *rv, json_t **ret_old);
/* Removes the entry (from kstore_find or kstore_next). If ret_old is non-NULL it receives a new
 * reference to its object (NULL if it could not be decoded). */
void kstore_remove(struct kstore *s, struct kstore_entry *e, json_t **ret_old);

/* A new reference to the entry's object: decoded in compact mode, shared in tree mode. 0 or a
 * negative errno (-ENOMEM, -EBADMSG for a corrupt value). */
int kstore_decode(struct kstore *s, const struct kstore_entry *e, json_t **ret);

/* Iteration: start with *iter = 0; returns NULL at the end. The store must not change during an
 * iteration. */
struct kstore_entry *kstore_next(const struct kstore *s, size_t *iter);
/* Calls fn for every object (decoded one at a time) and returns how many were visited. */
size_t kstore_foreach(struct kstore *s, kstore_visit_fn fn, void *data);
/* Visits the objects whose index `index` has value `value`; returns how many, or -ENOENT for an
 * unknown index. */
int kstore_index_foreach(struct kstore *s, const char *index, const char *value, kstore_visit_fn fn,
                         void *data);

/* Mark and sweep for relists: kstore_new_generation starts a generation; kstore_put and
 * kstore_touch mark entries with it; kstore_stale tells whether an entry was not marked since.
 * kstore_stale_count says how many are not (kept as entries are marked and removed), so that a
 * relist that saw every entry skips the sweep over the whole store. */
void kstore_new_generation(struct kstore *s);
void kstore_touch(struct kstore *s, struct kstore_entry *e);
bool kstore_stale(const struct kstore *s, const struct kstore_entry *e);
size_t kstore_stale_count(const struct kstore *s);

/* Freezes the dictionary from the objects cached now (the first KSTORE_DICT_SAMPLES of them) and
 * compresses every object, whatever the collection's size (a put does it at KSTORE_COMPRESS_MIN).
 * No-op once frozen. 0 or -ENOMEM (the entries then stay uncompressed, still valid). */
int kstore_freeze(struct kstore *s);
/* Moves the values into one block of their size when the slack of theirs is at least
 * KSTORE_COMPACT_MIN bytes and a quarter of their blocks (freed chunks of sizes no new value takes:
 * objects that grew). Entries, keys and records stay where they are; a resourceVersion returned by
 * kstore_entry_rv before is no longer valid (as after a put). Returns 1 when it compacted, 0 when
 * there was not enough to gain, -ENOMEM (nothing changed), -EINVAL. */
int kstore_compact(struct kstore *s);
/* Compactions made so far. */
unsigned kstore_compactions(const struct kstore *s);
void kstore_get_stats(const struct kstore *s, struct kstore_stats *ret);

#endif
