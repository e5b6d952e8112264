/* inf: an informer — a local, indexed, eventually consistent copy of one resource collection.
 *
 * It lists the collection in pages (limit/continue), then watches from the list's resourceVersion.
 * Each change updates the store, the indexes, and calls the handlers on the loop. When the watch
 * reports that its version is too old (410) it relists and reconciles the store against the new
 * list (adds, updates and deletes for what changed while it was away). metadata.managedFields is
 * dropped before caching. A failed list is retried with capped exponential backoff.
 *
 * The store maps "namespace/name" (or "name" for cluster-scoped kinds) to the object. Objects
 * handed to handlers and visitors are borrowed: valid only during the call (json_incref to keep
 * one). inf_get returns a new reference the caller must json_decref. Nobody may modify them. */
#ifndef CLIQO_KUBE_INFORMER_H
#define CLIQO_KUBE_INFORMER_H

#include "kube/api.h"
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

struct inf_options {
    const struct kapi_resource *resource;
    const char *namespace_; /* NULL: all namespaces */
    const char *label_selector;
    const char *field_selector;
    long page_size;     /* default 500 */
    uint64_t resync_ms; /* 0: no periodic resync (on_update(obj, obj) for every object) */
    size_t max_objects; /* bound on the collection; default 1,000,000 */
};

/* Index function: writes up to `max` borrowed strings (e.g. a label value taken from obj) to values
 * and returns how many, or a negative errno. */
typedef int (*inf_index_fn)(const json_t *obj, const char **values, size_t max);
typedef void (*inf_visit_fn)(json_t *obj, void *data);

int inf_new(struct kapi_client *c, const struct inf_options *o, const struct inf_handlers *h,
            void *data, struct inf_informer **ret);
/* Adds an index; only before inf_start. */
int inf_add_index(struct inf_informer *inf, const char *name, inf_index_fn fn);
int inf_start(struct inf_informer *inf);
/* Stops and frees. NULL-safe; not from inside the informer's own handlers. */
void inf_free(struct inf_informer *inf);

bool inf_synced(const struct inf_informer *inf);
size_t inf_count(const struct inf_informer *inf);
/* A new reference to the cached object, or NULL; json_decref it. */
json_t *inf_get(const struct inf_informer *inf, const char *ns, const char *name);
void inf_foreach(const struct inf_informer *inf, inf_visit_fn fn, void *data);
/* Visits the objects whose index `index` has value `value`; returns how many, or -ENOENT for an
 * unknown index. */
int inf_index_foreach(const struct inf_informer *inf, const char *index, const char *value,
                      inf_visit_fn fn, void *data);
/* Statistics: lists done (1 + relists), watch reconnects. */
unsigned inf_lists(const struct inf_informer *inf);
unsigned inf_watch_reconnects(const struct inf_informer *inf);

/* A ready index function: the value of label `key` — use inf_label_index("app") style wrappers, or
 * this generic one with the label key stored in a static. */
int inf_index_by_namespace(const json_t *obj, const char **values, size_t max);

#endif
