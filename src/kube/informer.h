/* inf: an informer — a local, indexed, eventually consistent copy of one resource collection.
 *
 * It lists the collection in pages (limit/continue), then watches from the list's resourceVersion.
 * Each page is split into its objects while it arrives (kube/liststream.h) and each object is
 * decoded and applied on its own, so a list costs one object's tree at a time, not a page's; the
 * text received is only buffered from curl's I/O callback and decoded from an idle callback in the
 * loop iteration's budget of time, shared with every other sliced job of the thread
 * (common/slice.h: 3 ms, whatever the number of informers listing at once; the transfer pauses
 * when 1 MiB waits), so that decoding long lists does not hold the loop. With list_from_cache the
 * lists are served by the API server's watch cache instead of etcd (one response whatever page_size
 * says, cheaper for the server; what client-go's reflector does). Each change updates the store,
 * the indexes, and calls the handlers on the loop. When the watch reports that its version is too
 * old (410) it relists and reconciles the store against the new list (adds, updates and deletes for
 * what changed while it was away). metadata.managedFields is dropped before caching. A failed list
 * is retried with capped exponential backoff.
 *
 * The store (kube/store.h) maps "namespace/name" (or "name" for cluster-scoped kinds) to the
 * object. By default it keeps each object serialised and compressed with a dictionary learned from
 * the collection (about 10-20x smaller than a jansson tree) and decodes it on demand: inf_get,
 * inf_foreach, inf_index_foreach and the old object of on_update/on_delete cost one decode each.
 * INF_STORE_TREE keeps jansson trees instead (no decoding, much more memory).
 *
 * Objects handed to handlers and visitors are borrowed: valid only during the call (json_incref
 * to keep one). inf_get returns a new reference the caller must json_decref. Nobody may modify
 * them (in compact mode a change would be lost, in tree mode it would corrupt the cache).
 *
 * Typed records. An informer can be given an extractor for its kind (inf_options.extractor, or
 * inf_set_extractor before inf_start; for pods kube/podrec.h's kpod_extract). It runs once per
 * listed or watched object, on the object as cached (managedFields dropped, transformed), right
 * after the store has taken it, while the tree is hot. A handler reads the record of the object it
 * was given with inf_record, without walking JSON; handlers that need the whole object still get
 * it as before. By default the record is kept beside the cached object, copied into the store's
 * slabs (kstore_set_record; inf_store_stats counts them as `records`): on_update then has the old
 * object's record too, and listers read records with inf_get_record and inf_foreach_record without
 * decoding anything. An extractor for the handlers only (handlers_only) keeps nothing: only the
 * object being added or updated has a record, and no memory is spent per object. A record is NULL
 * when the informer has no extractor, or the extraction failed for that object (out of memory, too
 * large): a reader then falls back to the tree. Records are borrowed like objects: valid during
 * the call, or for inf_get_record until control returns to the loop (the next change may replace
 * them).
 *
 * A relist applies each page as it arrives (so only one page of trees is ever held) and, once the
 * list is complete, deletes what the list no longer contains. After each complete list the
 * informer calls malloc_trim(0) (glibc) so that the freed pages of the list's trees go back to
 * the system.
 *
 * Views. A view (inf_view_new) is an informer without a list or a watch of its own: its store is
 * fed by another informer's (its source's), one watch for several caches. Each object the source
 * lists or watches goes first to its views, each with its own keep, transform, max_objects,
 * indexes, extractor and handlers, then to the source, whose transform may then change it. A view
 * caches and hands over its own copy of what it keeps (a deep copy per kept change: cheap when a
 * view keeps few of the source's objects, e.g. the pods of one node among every pod). A view
 * joins at the start of one of the source's lists: inf_start of a view makes a source that
 * watches list again (from the watch cache if the source lists from it), one that is listing or
 * held list again when done; the view is synced (on_synced) when that list is complete. From then
 * on it gets what the source gets: changes, relists (with deletes for what they no longer
 * contain), and the source's failures (on_error for a list or a watch). A view cannot be held. A
 * view freed leaves its source; a source freed leaves its views unfed and not synced. */
#ifndef CLIQO_KUBE_INFORMER_H
#define CLIQO_KUBE_INFORMER_H

#include "kube/api.h"
#include "kube/store.h"
#include "kube/watch.h"

struct inf_informer;

struct inf_handlers {
    void (*on_add)(struct inf_informer *inf, json_t *obj, void *data);
    void (*on_update)(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data);
    void (*on_delete)(struct inf_informer *inf, json_t *obj, void *data);
    /* The first full list is in the store. */
    void (*on_synced)(struct inf_informer *inf, void *data);
    /* A failure the informer cannot fix by retrying soon (forbidden, too many objects); it keeps
     * retrying with backoff. */
    void (*on_error)(struct inf_informer *inf, int err, const char *message, void *data);
};

/* Writes the record of obj (borrowed: the object as cached) into buf (cap bytes, 8-byte aligned)
 * and returns its size; over cap, nothing is written and it is called again with a buffer that
 * large. A negative errno: the object is cached without a record. The record must be position
 * independent (the store keeps a copy). data: the extractor's. */
struct inf_extractor {
    long (*extract)(const json_t *obj, const void *data, void *buf, size_t cap);
    const void *data;
    /* The records are for the handlers only: not kept in the store (no memory per object; listers
     * and the old object of on_update or on_delete then have none). */
    bool handlers_only;
};

enum inf_store {
    INF_STORE_COMPACT, /* default: serialised + compressed with a learned dictionary */
    INF_STORE_TREE,    /* jansson trees */
};

struct inf_options {
    const struct kapi_resource *resource;
    const char *namespace_; /* NULL: all namespaces */
    const char *label_selector;
    const char *field_selector;
    long page_size;     /* default 500 */
    uint64_t resync_ms; /* 0: no periodic resync (on_update(obj, obj) for every object) */
    size_t max_objects; /* bound on the collection; default 1,000,000 */
    enum inf_store store;
    /* Called on every listed or watched object (after managedFields is dropped) before it is
     * cached and handed to the handlers; it may change obj in place (drop fields the owner never
     * reads, as client-go's SetTransform). It must leave metadata.name and metadata.namespace.
     * data is the informer's data. NULL: objects are cached whole. */
    void (*transform)(json_t *obj, void *data);
    /* Called on every listed or watched object before transform: false and the object is not the
     * informer's (a field selector the server cannot narrow enough): it is not cached, no handler
     * sees it, and if it was cached (an update moved it out) it is removed as if deleted. data is
     * the informer's data. NULL: every object is kept. Why a caller would filter here rather than
     * in the field selector: an exact spec.nodeName selector puts the watch in the API server's
     * per-node index, whose watchers have a buffer of 10 events; a virtual node's pods come faster
     * than a kubelet's, and a watcher that falls behind is closed by the server (see
     * docs/offloading.md, "Requests"). */
    bool (*keep)(const json_t *obj, void *data);
    /* Lists from the API server's watch cache (resourceVersion=0 for the first, the last version
     * seen for a relist) instead of a consistent read from etcd: faster and cheaper for the
     * server, but the first list may be older than a write this process made just before (the
     * watch then brings it). A version the cache cannot serve falls back to a consistent read. */
    bool list_from_cache;
    /* Typed records (see the header comment); NULL: none. Copied. */
    const struct inf_extractor *extractor;
    /* on_update is called with old_obj NULL: the old object is not decoded from the store (one
     * decompression and one tree per update saved), for handlers that read only the new one. */
    bool update_without_old;
    /* Lists and watches in JSON even when the build can decode the kind's protobuf encoding
     * (kube/kpb.h). By default a built-in kind the schema knows is listed and watched in
     * protobuf, which costs the API server a fraction of JSON's (and a watch event's encoding is
     * shared with the controllers' watches). For measurements and as a way out. */
    bool json_only;
};

/* Index function: writes up to `max` borrowed strings (e.g. a label value taken from obj) to values
 * and returns how many, or a negative errno. */
typedef int (*inf_index_fn)(const json_t *obj, const char **values, size_t max);
typedef void (*inf_visit_fn)(json_t *obj, void *data);
/* rec: borrowed, valid during the call. */
typedef void (*inf_record_fn)(const void *rec, void *data);

/* The encoding of the last page listed: "protobuf", "json", or "" before the first. */
const char *inf_list_encoding(const struct inf_informer *inf);

/* Process-wide: every informer made after the call lists and watches in JSON (as
 * inf_options.json_only), or not (the default). For an operator's way out (cliqo-agent
 * --list-encoding json). */
void inf_set_json_only(bool json_only);

int inf_new(struct kapi_client *c, const struct inf_options *o, const struct inf_handlers *h,
            void *data, struct inf_informer **ret);
/* A view of src (see "Views" above; src, of the same thread, must not be a view itself). o as for
 * inf_new, of src's resource, without namespace, selectors or list_from_cache (those are src's);
 * page_size and json_only are ignored. Start it with inf_start, free it with inf_free, before or
 * after its source. Returns 0 or -EINVAL, -ENOMEM; inf_start of a view whose source is gone
 * returns -ENODEV. */
int inf_view_new(struct inf_informer *src, const struct inf_options *o,
                 const struct inf_handlers *h, void *data, struct inf_informer **ret);
/* Adds an index; only before inf_start. */
int inf_add_index(struct inf_informer *inf, const char *name, inf_index_fn fn);
/* Sets the extractor (copied); only before inf_start (-EBUSY after). Setting the one already set
 * (same function, data and handlers_only) is a no-op; another one gives -EEXIST (an informer shared
 * by modules keeps the first: the others read the trees). */
int inf_set_extractor(struct inf_informer *inf, const struct inf_extractor *x);
int inf_start(struct inf_informer *inf);
/* Stops and frees. NULL-safe; not from inside the informer's own handlers. */
void inf_free(struct inf_informer *inf);

/* Holding still, to visit a large store in slices (the agent's replay of cached objects to handlers
 * that start late): inf_hold stops the watch and remembers where it was, so the store does not
 * change until inf_release, which watches again from there (the events of the meanwhile come then,
 * in order; a version the server no longer has makes the informer relist, as after any watch
 * gap). While held, inf_synced is false (nobody takes a partly visited store for a complete one),
 * inf_listed stays true, no resync runs and no handler is called. inf_hold returns 0, -EINVAL (not
 * synced yet, or already held) or -EBUSY (a list in progress: the store is changing). */
int inf_hold(struct inf_informer *inf);
void inf_release(struct inf_informer *inf);
bool inf_held(const struct inf_informer *inf);
/* Visits the store's objects from *cursor (0 to begin) until budget_ns has passed (at least one
 * object per call): 0 when there are more (call again with the same cursor), 1 when the last was
 * visited, -EINVAL. The store must not change between calls (inf_hold), or objects may be missed
 * or visited twice; an update of an object already cached keeps every object in its place, only
 * additions and deletions move them (so a caller that starts again after those may let updates
 * through). Objects and records as for inf_foreach. */
int inf_foreach_slice(const struct inf_informer *inf, size_t *cursor, uint64_t budget_ns,
                      inf_visit_fn fn, void *data);

/* The read functions below accept NULL (a registration whose informer does not run, e.g. a peer's
 * unit without a client for the role): not synced, empty. */
bool inf_synced(const struct inf_informer *inf);
/* The first full list is in (inf_synced, also while held). */
bool inf_listed(const struct inf_informer *inf);
size_t inf_count(const struct inf_informer *inf);
/* A new reference to the cached object, or NULL; json_decref it. */
json_t *inf_get(const struct inf_informer *inf, const char *ns, const char *name);
void inf_foreach(const struct inf_informer *inf, inf_visit_fn fn, void *data);
/* Visits the objects whose index `index` has value `value`; returns how many, or -ENOENT for an
 * unknown index. */
int inf_index_foreach(const struct inf_informer *inf, const char *index, const char *value,
                      inf_visit_fn fn, void *data);
/* The record of obj, an object the informer is handing to a handler or a visitor of inf_foreach
 * right now (for on_update both the old and the new object), or NULL (none, or another object). */
const void *inf_record(const struct inf_informer *inf, const json_t *obj);
/* The record cached for ns/name (borrowed, see the header comment), or NULL. */
const void *inf_get_record(const struct inf_informer *inf, const char *ns, const char *name);
/* Calls fn for every object's record (objects without one are skipped); returns how many were
 * visited. Nothing is decoded. */
size_t inf_foreach_record(const struct inf_informer *inf, inf_record_fn fn, void *data);
/* Statistics: lists done (1 + relists; for a view, its source's lists it had), watch reconnects
 * (a view's: its source's). */
unsigned inf_lists(const struct inf_informer *inf);
/* Memory the store accounts for (see struct kstore_stats). */
void inf_store_stats(const struct inf_informer *inf, struct kstore_stats *ret);
unsigned inf_watch_reconnects(const struct inf_informer *inf);
/* Visits every informer of the calling thread (made and not yet freed), e.g. to account for the
 * memory of all the caches of a process; fn must not make or free informers. */
void inf_foreach_informer(void (*fn)(const struct inf_informer *inf, void *data), void *data);
/* The informer's resource, e.g. "pods". */
const char *inf_resource(const struct inf_informer *inf);

/* A ready index function: the value of label `key` — use inf_label_index("app") style wrappers, or
 * this generic one with the label key stored in a static. */
int inf_index_by_namespace(const json_t *obj, const char **values, size_t max);

#endif
