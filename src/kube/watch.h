/* kw: a resumable watch on one resource collection.
 *
 * A watch streams `?watch=1&allowWatchBookmarks=true&resourceVersion=RV` and delivers each event on
 * the loop. It remembers the resourceVersion of the last event (bookmarks included) and, when the
 * stream ends (the server's timeout, an apiserver restart, a reset connection), reconnects from
 * there, so no event is lost or repeated. Reconnects back off exponentially (base 200 ms, cap 30 s)
 * with +-25% jitter; a successful event resets the backoff. When the server says the
 * resourceVersion is too old (HTTP 410 or an ERROR event with code 410), the watch stops and end_cb
 * receives -EIDRM: the owner must relist.
 *
 * Every line of the stream (every frame, in protobuf) is bounded (opts.max_line, default 3 MiB): a
 * longer one ends the watch with -E2BIG. Event objects are borrowed by the callback (json_incref to
 * keep). */
#ifndef CLIQO_KUBE_WATCH_H
#define CLIQO_KUBE_WATCH_H

#include "kube/api.h"

struct kw_watch;

enum kw_event_type {
    KW_ADDED,
    KW_MODIFIED,
    KW_DELETED,
    KW_BOOKMARK,
};

struct kw_options {
    const char *namespace_; /* NULL: all namespaces (for namespaced resources) */
    const char *label_selector;
    const char *field_selector;
    const char *resource_version; /* start after this version; NULL or "" = "now" (no replay) */
    size_t max_line;              /* default 3 MiB */
    long server_timeout_secs;     /* timeoutSeconds asked of the server; default 300..600 random */
    uint64_t backoff_base_ms;     /* default 200 */
    uint64_t backoff_max_ms;      /* default 30000 */
    /* The objects come without metadata.managedFields: cut from each event's text before it is
     * decoded (half of a pod's decoding), for owners that drop it anyway (the informers). */
    bool drop_managed_fields;
    /* Asks for Kubernetes' protobuf encoding (kube/kpb.h) and writes each event's object as the
     * JSON text the server would have sent, so that the server encodes each event once for every
     * client that watches in protobuf (its controllers do) instead of once more in JSON for this
     * one. pb_msg: the kind's message in kpb_schema (kpb_root). The server may still answer in
     * JSON (the first byte tells): then the stream is read as JSON. The objects are those of the
     * JSON stream, without metadata.managedFields. */
    bool protobuf;
    int pb_msg;
};

typedef void (*kw_event_cb)(struct kw_watch *w, enum kw_event_type type, json_t *obj, void *data);
/* The watch has stopped for good: err is -EIDRM (relist needed), -E2BIG, -EPERM/-EACCES (not
 * allowed: retrying will not help) or -ECANCELED (never: kw_stop does not call it). */
typedef void (*kw_end_cb)(struct kw_watch *w, int err, const char *message, void *data);

int kw_start(struct kapi_client *c, const struct kapi_resource *r, const struct kw_options *o,
             kw_event_cb on_event, kw_end_cb on_end, void *data, struct kw_watch **ret);
/* Stops the watch and frees it; no callback runs afterwards. NULL-safe. Safe from inside its
 * callbacks. */
void kw_stop(struct kw_watch *w);
/* The resourceVersion the watch would resume from. Borrowed. */
const char *kw_resource_version(const struct kw_watch *w);
/* Statistics for tests and metrics. */
unsigned kw_reconnects(const struct kw_watch *w);

#endif
