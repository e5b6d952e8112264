#include "kube/informer.h"
#include "kube/kpb.h"
#include "kube/backoff.h"
#include "kube/liststream.h"
#include "common/log.h"
#include "common/slice.h"
#include "common/xalloc.h"

#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_PAGE_SIZE 500
#define DEFAULT_MAX_OBJS  1000000
#define MAX_KEY           600
#define MAX_LIST_ITEM     ((size_t)3 << 20)  /* one object (etcd: <= 1.5 MiB) */
#define MAX_LIST_REST     ((size_t)64 << 10) /* a list without its items: kind, metadata */
#define MAX_RV_LEN        64
#define SLICE_PIECE       ((size_t)16 << 10) /* received text decoded between two clock reads */
/* The same for protobuf, denser (a pod is about half its JSON text): about one object per piece,
 * so that a slow object (the heap growing) does not take a dozen others past the budget with it. */
#define SLICE_PIECE_PB ((size_t)4 << 10)
#define MAX_PENDING    ((size_t)1 << 20) /* received, not yet decoded: then the transfer waits */

struct inf_informer {
    struct kapi_client *c;
    const struct kapi_resource *res;
    char *ns, *label_selector, *field_selector;
    long page_size;
    uint64_t resync_ms;
    size_t max_objects;
    bool overflow;           /* an object was refused for max_objects since the last list began */
    bool from_cache;         /* lists may be served by the API server's watch cache */
    bool consistent;         /* the next list is a consistent read (a cached one was refused) */
    char rv[MAX_RV_LEN + 1]; /* the last version seen: a relist from the cache is not older */
    struct kls split;        /* the page being received, in JSON */
    struct kpb_list pbsplit; /* or in protobuf */
    int pb_msg;              /* the kind's message in the protobuf schema; -1: JSON only */
    bool pb_checked, pb_on;  /* the server's version was compared with the schema's: is equal */
    enum { WIRE_UNKNOWN, WIRE_JSON, WIRE_PB } wire; /* of the page: from its first byte */
    int last_wire;                                  /* of the last page that ended well */
    char *jtext;                                    /* an object's text written from protobuf */
    size_t jtext_cap;
    char *cut; /* an object's text without its managedFields */
    size_t cut_cap;
    uv_idle_t *drain; /* decodes the pending text in the next loop iterations */
    char *pend;       /* received and not yet decoded: pend[pend_off..pend_len) */
    size_t pend_off, pend_len, pend_cap;
    bool paused;       /* the transfer waits for the pending text to be decoded */
    bool done_pending; /* the list's response ended; finish once the text is decoded */
    void (*transform)(json_t *obj, void *data);
    bool (*keep)(const json_t *obj, void *data);
    bool without_old;       /* on_update gets no old object (inf_options.update_without_old) */
    struct inf_extractor x; /* x.extract NULL: no records */
    void *rbuf;             /* where records are extracted, before the store copies them */
    size_t rbuf_cap;
    /* The objects being handed to a handler or visitor now, and their records (inf_record). */
    const json_t *cur_obj, *cur_old;
    const void *cur_rec, *cur_old_rec;
    struct inf_handlers h;
    void *data;
    struct kstore *store;
    char *cont; /* continue token of the list in progress */
    struct kw_watch *watch;
    struct kapi_call *list_call;
    uv_timer_t *retry_timer, *resync_timer, *trim_timer;
    struct backoff backoff;
    unsigned lists;
    unsigned reconnects_before; /* of watches already stopped */
    bool started, synced;
    bool held;                                 /* inf_hold: no watch, the store unchanged */
    char held_rv[MAX_RV_LEN + 1];              /* where the watch resumes */
    struct inf_informer **all_prev, *all_next; /* in this thread's list (inf_foreach_informer) */
    /* Views (inf_view_new). A view has src, its source (NULL once the source is freed), and no
     * list or watch of its own; a source has the list of its views. */
    struct inf_informer *src, *views, **view_prev, *view_next;
    bool is_view;
    bool joined;        /* a view: fed by its source since the start of a list */
    bool relist_wanted; /* a source: a view waits to join; list again rather than watch */
};

/* Every informer of this thread (one loop per thread), for process-wide accounts of memory. */
static _Thread_local struct inf_informer *all_infs;

static void start_list(struct inf_informer *inf);

static bool json_only_all; /* inf_set_json_only */

void inf_set_json_only(bool json_only)
{
    json_only_all = json_only;
}

const char *inf_list_encoding(const struct inf_informer *inf)
{
    if (inf->src)
        inf = inf->src;
    return inf->last_wire == WIRE_PB ? "protobuf" : inf->last_wire == WIRE_JSON ? "json" : "";
}

static void note_rv(struct inf_informer *inf, const char *rv)
{
    if (rv && *rv && strlen(rv) <= MAX_RV_LEN)
        memcpy(inf->rv, rv, strlen(rv) + 1);
}

static int key_of(const char *ns, const char *name, char *buf, size_t size)
{
    int n;

    if (!name)
        return -EINVAL;
    n = ns && *ns ? snprintf(buf, size, "%s/%s", ns, name) : snprintf(buf, size, "%s", name);
    return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int obj_key(const json_t *obj, char *buf, size_t size)
{
    return key_of(kapi_obj_namespace(obj), kapi_obj_name(obj), buf, size);
}

/* Extracts the record of obj (as cached) into inf->rbuf: its size, or a negative errno. */
static long extract(struct inf_informer *inf, const json_t *obj)
{
    long n = inf->x.extract(obj, inf->x.data, inf->rbuf, inf->rbuf_cap);

    if (n > 0 && (size_t)n > inf->rbuf_cap) {
        if ((size_t)n > KSTORE_MAX_OBJECT)
            return -E2BIG;
        void *b = x_reallocarray(inf->rbuf, (size_t)n, 1);
        if (!b)
            return -ENOMEM;
        inf->rbuf = b;
        inf->rbuf_cap = (size_t)n;
        n = inf->x.extract(obj, inf->x.data, inf->rbuf, inf->rbuf_cap);
        if (n > 0 && (size_t)n > inf->rbuf_cap)
            return -EPROTO; /* the extractor changed its mind */
    }
    return n;
}

/* Attaches the record of obj (just cached under e) to e and returns it (NULL: no extractor, or
 * the extraction failed, and the readers use the tree); *ret_old gets the record e had, for
 * kstore_record_free once the handlers are done with it. */
static const void *attach(struct inf_informer *inf, struct kstore_entry *e, const json_t *obj,
                          const void **ret_old)
{
    long n;
    int r;

    *ret_old = NULL;
    if (!inf->x.extract)
        return NULL;
    n = extract(inf, obj);
    if (n >= 0 && inf->x.handlers_only)
        return inf->rbuf; /* valid until the next extraction, i.e. during the handlers' calls */
    r = n < 0 ? (int)n : kstore_set_record(inf->store, e, inf->rbuf, (size_t)n, ret_old);
    if (r < 0) {
        log_debug("informer", "%s: no record for an object: %s", inf->res->resource, strerror(-r));
        if (kstore_set_record(inf->store, e, NULL, 0, ret_old) < 0)
            *ret_old = NULL; /* not reached: detaching allocates nothing */
        return NULL;
    }
    return kstore_entry_record(e);
}

/* Marks what handlers are being given now (see inf_record); returns what was marked before, for
 * set_current(inf, &saved) after the call (a handler may call inf_foreach). */
struct current {
    const json_t *obj, *old;
    const void *rec, *old_rec;
};

static struct current set_current(struct inf_informer *inf, const struct current *c)
{
    struct current was = {inf->cur_obj, inf->cur_old, inf->cur_rec, inf->cur_old_rec};

    inf->cur_obj = c->obj;
    inf->cur_old = c->old;
    inf->cur_rec = c->rec;
    inf->cur_old_rec = c->old_rec;
    return was;
}

/* Drops managedFields; true when obj had it. */
static bool strip(json_t *obj)
{
    return json_object_del(json_object_get(obj, "metadata"), "managedFields") == 0;
}

/* After a change, when the values' slabs hold more freed room than the store will reuse
 * (kstore_compact): pack them, and hand the freed slabs back to the system. O(1) otherwise. */
static void trim_soon(struct inf_informer *inf);
static void compact(struct inf_informer *inf)
{
    int r = kstore_compact(inf->store);

    if (r == 1)
        trim_soon(inf);
    else if (r < 0)
        log_debug("informer", "%s: cannot compact the cache: %s", inf->res->resource, strerror(-r));
}

static void remove_entry(struct inf_informer *inf, struct kstore_entry *e);

/* Caches obj (borrowed; the store keeps its own copy or reference) and calls the handler. text
 * (may be NULL): obj's JSON text, which the store may keep as is when obj is cached untouched.
 * shared: obj is also its source's (inf is a view): what is cached and handed over is a copy, so
 * that neither this view's transform nor a handler keeping a reference sees the source's changes
 * (nor the source this view's). */
static void upsert_text(struct inf_informer *inf, json_t *obj, const char *text, size_t text_len,
                        bool shared)
{
    char key[MAX_KEY];
    struct kstore_entry *e;
    const char *rv = kapi_obj_rv(obj);
    json_t *old = NULL, *own = NULL;
    const void *rec, *old_rec;
    struct current cur, was;
    int r;

    if (obj_key(obj, key, sizeof(key)) < 0)
        return;
    e = kstore_find(inf->store, key);
    if (inf->keep && !inf->keep(obj, inf->data)) {
        if (e)
            remove_entry(inf, e); /* it was ours and no longer is */
        return;
    }
    if (e) {
        if (rv && *rv && strcmp(kstore_entry_rv(e), rv) == 0) {
            kstore_touch(inf->store, e);
            return; /* nothing changed (relist of an unchanged object) */
        }
    } else if (kstore_count(inf->store) >= inf->max_objects) {
        if (!inf->overflow && inf->h.on_error)
            inf->h.on_error(inf, -E2BIG, "too many objects in the collection", inf->data);
        inf->overflow = true;
        return;
    }
    if (shared) {
        obj = own = json_deep_copy(obj);
        if (!own) {
            if (inf->h.on_error)
                inf->h.on_error(inf, -ENOMEM, "cannot cache an object", inf->data);
            return;
        }
    }
    if (strip(obj))
        text = NULL; /* the text still has it */
    if (inf->transform) {
        inf->transform(obj, inf->data);
        rv = kapi_obj_rv(obj);
        text = NULL;
    }
    r = kstore_put_text(inf->store, key, obj, text, text ? text_len : 0, rv,
                        e && inf->h.on_update && !inf->without_old ? &old : NULL);
    if (r < 0) {
        log_debug("informer", "%s %s not cached: %s", inf->res->resource, key, strerror(-r));
        if (inf->h.on_error)
            inf->h.on_error(inf, r, "cannot cache an object", inf->data);
        json_decref(own);
        return;
    }
    if (!e)
        e = kstore_find(inf->store, key);
    rec = e ? attach(inf, e, obj, &old_rec) : NULL; /* the object as cached, while it is hot */
    if (!e)
        old_rec = NULL;
    cur = (struct current){obj, old, rec, old_rec};
    was = set_current(inf, &cur);
    if (r == 1) {
        if (inf->h.on_update && (old || inf->without_old))
            inf->h.on_update(inf, old, obj, inf->data);
    } else if (inf->h.on_add) {
        inf->h.on_add(inf, obj, inf->data);
    }
    set_current(inf, &was);
    json_decref(old);
    json_decref(own);
    kstore_record_free(inf->store, old_rec);
    compact(inf);
}

/* A listed or watched object: to the views that joined (each takes its own copy of what it keeps),
 * then to the source itself, whose transform may change obj in place. */
static void apply(struct inf_informer *inf, json_t *obj, const char *text, size_t text_len)
{
    for (struct inf_informer *v = inf->views; v; v = v->view_next)
        if (v->joined)
            upsert_text(v, obj, text, text_len, true);
    upsert_text(inf, obj, text, text_len, false);
}

/* The object of key is gone: from the source and its views. */
static void apply_delete(struct inf_informer *inf, const char *key)
{
    struct kstore_entry *e;

    for (struct inf_informer *v = inf->views; v; v = v->view_next)
        if (v->joined && (e = kstore_find(v->store, key)))
            remove_entry(v, e);
    if ((e = kstore_find(inf->store, key)))
        remove_entry(inf, e);
}

/* A failure of the list or the watch: to the source's handler and its views'. */
static void report(struct inf_informer *inf, int err, const char *message)
{
    if (inf->h.on_error)
        inf->h.on_error(inf, err, message, inf->data);
    for (struct inf_informer *v = inf->views; v; v = v->view_next)
        if (v->h.on_error)
            v->h.on_error(v, err, message, v->data);
}

static void remove_entry(struct inf_informer *inf, struct kstore_entry *e)
{
    json_t *old = NULL;
    const void *rec = NULL;
    struct current cur, was;

    (void)kstore_set_record(inf->store, e, NULL, 0, &rec); /* detaching cannot fail */
    kstore_remove(inf->store, e, inf->h.on_delete ? &old : NULL);
    cur = (struct current){old, NULL, rec, NULL};
    was = set_current(inf, &cur);
    if (inf->h.on_delete && old)
        inf->h.on_delete(inf, old, inf->data);
    set_current(inf, &was);
    json_decref(old);
    kstore_record_free(inf->store, rec);
    compact(inf);
}

/* ---- watch ---------------------------------------------------------------------------------- */

static void on_watch_event(struct kw_watch *w, enum kw_event_type type, json_t *obj, void *data)
{
    struct inf_informer *inf = data;
    char key[MAX_KEY];

    (void)w;
    note_rv(inf, kapi_obj_rv(obj));
    switch (type) {
    case KW_ADDED:
    case KW_MODIFIED:
        apply(inf, obj, NULL, 0);
        break;
    case KW_DELETED:
        if (obj_key(obj, key, sizeof(key)) == 0)
            apply_delete(inf, key);
        break;
    case KW_BOOKMARK:
        break;
    }
}

static void drop_watch(struct inf_informer *inf)
{
    if (inf->watch) {
        inf->reconnects_before += kw_reconnects(inf->watch);
        kw_stop(inf->watch);
        inf->watch = NULL;
    }
}

static void on_watch_end(struct kw_watch *w, int err, const char *message, void *data)
{
    struct inf_informer *inf = data;

    (void)w;
    log_debug("informer", "%s watch ended (%s): relisting", inf->res->resource, message);
    drop_watch(inf);
    if (err != -EIDRM)
        report(inf, err, message);
    start_list(inf);
}

static void start_watch(struct inf_informer *inf, const char *rv)
{
    struct kw_options o = {.namespace_ = inf->ns,
                           .label_selector = inf->label_selector,
                           .field_selector = inf->field_selector,
                           .resource_version = rv,
                           .drop_managed_fields = true, /* strip() would drop it */
                           /* as the list: the server then encodes each event once for all the
                            * clients that watch in protobuf (its controllers) */
                           .protobuf = inf->pb_msg >= 0 && inf->pb_on,
                           .pb_msg = inf->pb_msg};
    int r = kw_start(inf->c, inf->res, &o, on_watch_event, on_watch_end, inf, &inf->watch);

    if (r < 0) {
        inf->watch = NULL;
        report(inf, r, "cannot start watch");
    }
}

/* ---- list ----------------------------------------------------------------------------------- */

static void on_retry(uv_timer_t *t)
{
    start_list(t->data);
}

static void retry_later(struct inf_informer *inf)
{
    if (!inf->retry_timer && !(inf->retry_timer = ktimer_new(kapi_client_loop(inf->c), inf)))
        return;
    uv_timer_start(inf->retry_timer, on_retry, backoff_next(&inf->backoff), 0);
}

static void on_trim(uv_timer_t *t)
{
    (void)t;
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

/* A list leaves pages of freed response trees behind (tens of MiB for a large collection) that
 * glibc keeps resident unless they are at the top of the heap; the cache itself lives in the
 * store's slabs. Hand the free pages back once per list, from the loop once the last page's
 * response (still alive during its callback) is gone. */
static void trim_soon(struct inf_informer *inf)
{
    if (!inf->trim_timer && !(inf->trim_timer = ktimer_new(kapi_client_loop(inf->c), inf)))
        return;
    uv_timer_start(inf->trim_timer, on_trim, 0, 0);
}

/* The list of inf (or of its source, inf being a view) is complete: delete what it no longer
 * contains. */
static void sweep(struct inf_informer *inf)
{
    struct kstore_entry *e, **gone = NULL;
    size_t it = 0, n = 0, stale = kstore_stale_count(inf->store);

    /* Walking the store costs a cache miss an entry (tens of milliseconds at 150,000 objects, in
     * one iteration): only when the list left some unmarked, and only until they are all found.
     * Without memory for the list of them, they go at the next relist. */
    if (stale > 0)
        gone = x_reallocarray(NULL, stale, sizeof(*gone));
    while (gone && n < stale && (e = kstore_next(inf->store, &it)))
        if (kstore_stale(inf->store, e))
            gone[n++] = e;
    for (size_t i = 0; i < n; i++)
        remove_entry(inf, gone[i]);
    x_free(gone);
    inf->lists++;
    if (!inf->synced) {
        inf->synced = true;
        /* A small collection stays uncompressed (store.h, "Dictionary learning"). */
        if (inf->h.on_synced)
            inf->h.on_synced(inf, inf->data);
    }
}

/* The list is complete: sweep the source and the views that had all of it, then watch from its
 * version, or list again when a view waits to join (inf_start of a view during a list). */
static void finish_list(struct inf_informer *inf, const char *rv)
{
    backoff_reset(&inf->backoff);
    if (!inf->relist_wanted)
        start_watch(inf, rv); /* first: a handler below may hold the informer */
    for (struct inf_informer *v = inf->views; v; v = v->view_next)
        if (v->joined)
            sweep(v);
    sweep(inf);
    trim_soon(inf); /* malloc_trim is the process's: once for the list, whatever the views */
    if (inf->relist_wanted && !inf->held) {
        inf->relist_wanted = false;
        start_list(inf);
    }
}

static void list_page(struct inf_informer *inf);

/* One element of the page being received: decoded and applied at once, so that only one object's
 * tree is ever held, however long the list. managedFields, which the informer drops, is cut from
 * the text before decoding (it is about half of a pod's decoding time), and the text is handed to
 * the store, which keeps it instead of serialising the tree again. */
static int on_list_item(const char *item, size_t len, void *data)
{
    struct inf_informer *inf = data;
    const char *text;
    size_t text_len;
    json_t *obj;
    int r = kls_decode_object(item, len, &inf->cut, &inf->cut_cap, &obj, &text, &text_len);

    if (r < 0)
        return r;
    if (json_is_object(obj))
        apply(inf, obj, text, text_len);
    json_decref(obj);
    return 0;
}

/* One element of a page in protobuf: written as the JSON text the server would have sent
 * (kube/kpb.h, managedFields left out), then decoded and applied as on_list_item does. The text
 * has the JSON path's cap for one object (MAX_LIST_ITEM): a few bytes of absent fields expand into
 * their defaults, so a small object can ask for much more text than it has bytes. */
static int on_pb_item(const uint8_t *item, size_t len, void *data)
{
    struct inf_informer *inf = data;
    size_t text_len;
    json_t *obj;
    int r = kpb_to_tree(&kpb_schema, inf->pb_msg, item, len, &inf->jtext, &inf->jtext_cap,
                        &text_len, MAX_LIST_ITEM, &obj);

    if (r < 0)
        return r;
    if (json_is_object(obj))
        apply(inf, obj, inf->jtext, text_len);
    json_decref(obj);
    return 0;
}

/* Feeds n bytes of the page to the splitter of its encoding, told by the first byte: protobuf's
 * envelope starts with "k8s\0", JSON with '{' or white space. */
static int split_feed(struct inf_informer *inf, const char *p, size_t n)
{
    if (inf->wire == WIRE_UNKNOWN && n)
        inf->wire = inf->pb_msg >= 0 && inf->pb_on && p[0] == KPB_MAGIC[0] ? WIRE_PB : WIRE_JSON;
    if (inf->wire == WIRE_PB)
        return kpb_list_feed(&inf->pbsplit, (const uint8_t *)p, n);
    return kls_feed(&inf->split, p, n);
}

static void list_done(struct inf_informer *inf, int err, long http_status, const char *message);

static void pend_clear(struct inf_informer *inf)
{
    x_free(inf->pend);
    inf->pend = NULL;
    inf->pend_off = inf->pend_len = inf->pend_cap = 0;
    inf->paused = inf->done_pending = false;
    if (inf->drain)
        uv_idle_stop(inf->drain);
}

static void on_drain(uv_idle_t *h);

static void drain_closed(uv_handle_t *h)
{
    x_free(h);
}

/* An idle handle, not a timer: a timer due now that starts itself again from its callback runs
 * again in the same loop iteration, an idle handle only in the next one. */
static int drain_soon(struct inf_informer *inf)
{
    if (!inf->drain) {
        inf->drain = x_calloc(1, sizeof(*inf->drain));
        if (!inf->drain)
            return -ENOMEM;
        uv_idle_init(kapi_client_loop(inf->c), inf->drain);
        inf->drain->data = inf;
    }
    uv_idle_start(inf->drain, on_drain);
    return 0;
}

/* The next loop iteration: decode the pending text while the iteration's shared budget lasts
 * (common/slice.h; one piece at least), then let the transfer go on or finish the list, or come
 * back in the iteration after. */
static void on_drain(uv_idle_t *h)
{
    struct inf_informer *inf = h->data;
    uv_loop_t *loop = kapi_client_loop(inf->c);
    int r = 0;

    uv_idle_stop(h);
    while (inf->pend_off < inf->pend_len && r == 0) {
        size_t n = inf->pend_len - inf->pend_off;
        size_t piece = inf->wire == WIRE_PB ? SLICE_PIECE_PB : SLICE_PIECE;
        n = n < piece ? n : piece;
        r = split_feed(inf, inf->pend + inf->pend_off, n);
        inf->pend_off += n;
        if (!slice_left(loop))
            break;
    }
    if (r < 0) {
        /* Malformed or refused: the list fails as if the chunk had been refused on arrival. */
        kapi_call_cancel(inf->list_call);
        inf->list_call = NULL;
        pend_clear(inf);
        list_done(inf, r, 0, strerror(-r));
        return;
    }
    if (inf->pend_off == inf->pend_len) {
        inf->pend_off = inf->pend_len = 0;
        if (inf->done_pending) {
            pend_clear(inf); /* the buffer does not stay for the watch's lifetime */
            list_done(inf, 0, 200, "");
            return;
        }
    } else {
        drain_soon(inf);
    }
    /* The transfer goes on once half of the text waiting is decoded, not all of it, so that the
     * next text is on its way while the rest is decoded (no gap with nothing to decode). Last:
     * curl may hand text over (on_list_chunk), or end the list, from inside the call. */
    if (inf->paused && inf->pend_len - inf->pend_off <= MAX_PENDING / 2) {
        inf->paused = false;
        kapi_call_resume(inf->list_call);
    }
}

/* A chunk of the list. It runs from curl's I/O callback: the text is only kept here, and decoded
 * from an idle callback (on_drain) in the iteration's shared budget of time (common/slice.h), with
 * the other informers' lists and the other sliced jobs; past MAX_PENDING bytes the transfer pauses.
 * So decoding long lists, even several at once, does not hold the loop (health probes, leases,
 * other watches), and the text waiting stays bounded. */
static int on_list_chunk(struct kapi_client *c, const char *chunk, size_t len, void *data)
{
    struct inf_informer *inf = data;

    (void)c;
    if (inf->pend_len - inf->pend_off + len > MAX_PENDING) {
        if (drain_soon(inf) < 0)
            return -ENOMEM;
        inf->paused = true;
        return KAPI_CHUNK_PAUSE;
    }
    if (inf->pend_off && inf->pend_len + len > inf->pend_cap) {
        memmove(inf->pend, inf->pend + inf->pend_off, inf->pend_len - inf->pend_off);
        inf->pend_len -= inf->pend_off;
        inf->pend_off = 0;
    }
    if (inf->pend_len + len > inf->pend_cap) {
        size_t cap = inf->pend_cap ? inf->pend_cap * 2 : 65536;
        if (cap < inf->pend_len + len)
            cap = inf->pend_len + len;
        char *p = x_reallocarray(inf->pend, cap, 1);
        if (!p)
            return -ENOMEM;
        inf->pend = p;
        inf->pend_cap = cap;
    }
    memcpy(inf->pend + inf->pend_len, chunk, len);
    inf->pend_len += len;
    return drain_soon(inf);
}

static void on_list(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct inf_informer *inf = data;

    (void)c;
    inf->list_call = NULL;
    if (res->err == 0 && inf->pend_off < inf->pend_len) {
        inf->done_pending = true; /* on_drain finishes once the rest is decoded */
        return;
    }
    pend_clear(inf);
    list_done(inf, res->err, res->http_status, res->status.message);
}

/* Whether the list overflowed the informer or a view that had it, clearing the marks. */
static bool overflowed(struct inf_informer *inf)
{
    bool any = inf->overflow;

    inf->overflow = false;
    for (struct inf_informer *v = inf->views; v; v = v->view_next) {
        any = any || (v->joined && v->overflow);
        v->overflow = false;
    }
    return any;
}

/* The list's response ended (err 0) or failed, and all its text was decoded. */
static void list_done(struct inf_informer *inf, int err, long http_status, const char *message)
{
    json_t *env = NULL;
    const char *cont, *rv;
    int r;

    if (err == 0)
        inf->last_wire = inf->wire;
    if (err < 0)
        r = err;
    else if (inf->wire == WIRE_PB)
        r = kpb_list_finish(&inf->pbsplit, &env);
    else
        r = kls_finish(&inf->split, &env);
    kls_done(&inf->split);
    kpb_list_done(&inf->pbsplit);
    if (r == -EIDRM && inf->cont) {
        /* The continue token expired: start the list again (a new snapshot, a new mark). */
        start_list(inf);
        return;
    }
    if (r < 0 && inf->from_cache && !inf->consistent &&
        (r == -EIDRM || http_status == 504 || http_status == 500)) {
        /* The cache cannot serve that version (too old, or not reached in time): read from
         * etcd instead, as client-go's reflector does. */
        inf->consistent = true;
        start_list(inf);
        return;
    }
    if (r < 0) {
        log_debug("informer", "listing %s failed: %s", inf->res->resource,
                  err < 0 ? message : strerror(-r));
        if (r == -EPERM || r == -EACCES)
            report(inf, r, message);
        x_free(inf->cont);
        inf->cont = NULL;
        retry_later(inf);
        return;
    }
    /* The page was applied while it arrived: a paged list is one snapshot, so applying it page by
     * page ends in the same store as applying it whole. */
    if (overflowed(inf)) {
        /* The collection is over max_objects (of the informer or of a view): a cache holding part
         * of it must not pass for synced. Keep what fits, report (once, in upsert) and try again
         * later. */
        log_warn("informer", "%s: more objects than a cache takes, not synced; retrying",
                 inf->res->resource);
        x_free(inf->cont);
        inf->cont = NULL;
        json_decref(env);
        retry_later(inf);
        return;
    }
    cont = json_string_value(json_object_get(json_object_get(env, "metadata"), "continue"));
    x_free(inf->cont);
    inf->cont = NULL;
    if (cont && *cont) {
        inf->cont = x_strdup(cont);
        json_decref(env);
        if (!inf->cont) {
            retry_later(inf);
            return;
        }
        list_page(inf);
        return;
    }
    rv = json_string_value(json_object_get(json_object_get(env, "metadata"), "resourceVersion"));
    note_rv(inf, rv);
    inf->consistent = false;
    if (inf->cut_cap > MAX_LIST_REST) {
        x_free(inf->cut); /* a large object's buffer does not stay for the watch's lifetime */
        inf->cut = NULL;
        inf->cut_cap = 0;
    }
    if (inf->jtext_cap > MAX_LIST_REST) {
        x_free(inf->jtext); /* nor the text of a large object written from protobuf */
        inf->jtext = NULL;
        inf->jtext_cap = 0;
    }
    if (inf->rbuf_cap > MAX_LIST_REST) {
        x_free(inf->rbuf); /* nor a large record's */
        inf->rbuf = NULL;
        inf->rbuf_cap = 0;
    }
    finish_list(inf, rv);
    json_decref(env);
}

/* Protobuf only from a server of the schema's own version: a newer one has fields the schema does
 * not know, which its JSON would carry (and the informer's owners copy, e.g. a pod's spec to a
 * peer) and protobuf would lose. */
static void pb_decide(struct inf_informer *inf, int major, int minor)
{
    inf->pb_checked = true;
    inf->pb_on = major == kpb_schema.major && minor == kpb_schema.minor;
    if (!inf->pb_on)
        log_debug("informer", "%s: server 1.%d, protobuf schema %d.%d: listing in JSON",
                  inf->res->resource, minor, kpb_schema.major, kpb_schema.minor);
}

static void on_version(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct inf_informer *inf = data;
    int major, minor;

    inf->list_call = NULL;
    if (res->err == 0 && kapi_client_note_version(c, res->body) == 0 &&
        kapi_client_version(c, &major, &minor) == 0) {
        pb_decide(inf, major, minor);
    } else if (res->err == -EPERM || res->err == -ENOENT || res->err == 0) {
        pb_decide(inf, 0, 0); /* no version to be had: JSON */
    } else {
        retry_later(inf); /* the server is not there: the list would fail too */
        return;
    }
    list_page(inf);
}

static void list_page(struct inf_informer *inf)
{
    struct kapi_list_opts o = {.label_selector = inf->label_selector,
                               .field_selector = inf->field_selector,
                               .limit = inf->page_size,
                               .continue_token = inf->cont};
    /* The body is split into objects while it arrives (kube/liststream.h): no bound on its
     * length is needed, only on each object's. A list from the cache comes in one response, so
     * the request's time is not bounded either: only silence ends it. */
    struct kapi_request req = {
        .method = "GET", .on_chunk = on_list_chunk, .timeout_ms = -1, .low_speed_secs = 60};
    struct sbuf p;
    int r;

    if (inf->from_cache && !inf->consistent && !inf->cont) {
        /* The watch cache's copy, not older than what this informer saw last (any copy for the
         * first list); it ignores the page size and answers in one response. */
        o.resource_version = inf->rv[0] ? inf->rv : "0";
    }
    pend_clear(inf);
    if (inf->pb_msg >= 0 && !inf->pb_checked) {
        int major, minor;
        struct kapi_request vr = {.method = "GET", .path = "/version"};
        if (kapi_client_version(inf->c, &major, &minor) == 0) {
            pb_decide(inf, major, minor);
        } else {
            r = kapi_send(inf->c, &vr, on_version, inf, &inf->list_call);
            if (r == 0)
                return; /* on_version lists */
            if (r != -ECANCELED)
                retry_later(inf);
            return;
        }
    }
    kls_done(&inf->split);
    kls_init(&inf->split, MAX_LIST_ITEM, MAX_LIST_REST, on_list_item, inf);
    kpb_list_done(&inf->pbsplit);
    kpb_list_init(&inf->pbsplit, MAX_LIST_ITEM, MAX_LIST_REST, on_pb_item, inf);
    inf->wire = WIRE_UNKNOWN;
    req.protobuf = inf->pb_msg >= 0 && inf->pb_on;
    /* kapi_list gives no call handle; send the same request through kapi_send to keep it
     * cancellable. */
    sbuf_init(&p, 16384);
    r = kapi_list_path(&p, inf->res, inf->ns, &o);
    if (r >= 0) {
        req.path = sbuf_str(&p);
        r = kapi_send(inf->c, &req, on_list, inf, &inf->list_call);
    }
    sbuf_done(&p);
    if (r < 0 && r != -ECANCELED)
        retry_later(inf);
}

static void start_list(struct inf_informer *inf)
{
    for (struct inf_informer *v = inf->views; v; v = v->view_next) {
        kstore_new_generation(v->store);
        v->joined = true; /* from this list's first object on */
    }
    inf->relist_wanted = false;
    kstore_new_generation(inf->store);
    x_free(inf->cont);
    inf->cont = NULL;
    list_page(inf);
}

/* ---- resync --------------------------------------------------------------------------------- */

static void resync_visit(json_t *obj, void *data)
{
    struct inf_informer *inf = data;

    inf->h.on_update(inf, obj, obj, inf->data);
}

/* Hands e's object to fn with its record marked as current (inf_record): 1, or 0 when it could
 * not be decoded. */
static int visit_one(struct inf_informer *inf, struct kstore_entry *e, inf_visit_fn fn, void *data)
{
    const void *rec = kstore_entry_record(e);
    struct current cur, was;
    json_t *obj;

    if (kstore_decode(inf->store, e, &obj) < 0)
        return 0;
    cur = (struct current){obj, obj, rec, rec};
    was = set_current(inf, &cur);
    fn(obj, data);
    set_current(inf, &was);
    json_decref(obj);
    return 1;
}

static size_t visit_all(struct inf_informer *inf, inf_visit_fn fn, void *data)
{
    struct kstore_entry *e;
    size_t it = 0, n = 0;

    while ((e = kstore_next(inf->store, &it)))
        n += (size_t)visit_one(inf, e, fn, data);
    return n;
}

static void on_resync(uv_timer_t *t)
{
    struct inf_informer *inf = t->data;

    if (!inf->synced || inf->held || !inf->h.on_update)
        return;
    visit_all(inf, resync_visit, inf);
}

/* ---- public --------------------------------------------------------------------------------- */

static void link_all(struct inf_informer *inf)
{
    inf->all_next = all_infs;
    if (all_infs)
        all_infs->all_prev = &inf->all_next;
    inf->all_prev = &all_infs;
    all_infs = inf;
}

int inf_new(struct kapi_client *c, const struct inf_options *o, const struct inf_handlers *h,
            void *data, struct inf_informer **ret)
{
    struct inf_informer *inf;

    if (!c || !o || !o->resource || !ret)
        return -EINVAL;
    inf = x_calloc(1, sizeof(*inf));
    if (!inf)
        return -ENOMEM;
    inf->c = c;
    inf->res = o->resource;
    inf->page_size = o->page_size > 0 ? o->page_size : DEFAULT_PAGE_SIZE;
    inf->resync_ms = o->resync_ms;
    inf->max_objects = o->max_objects ? o->max_objects : DEFAULT_MAX_OBJS;
    inf->transform = o->transform;
    inf->keep = o->keep;
    inf->pb_msg = o->json_only || json_only_all ? -1
                                                : kpb_root(&kpb_schema, o->resource->group,
                                                           o->resource->version, o->resource->kind);
    if (inf->pb_msg < 0)
        inf->pb_msg = -1;
    inf->without_old = o->update_without_old;
    inf->from_cache = o->list_from_cache;
    if (o->extractor && !o->extractor->extract) {
        x_free(inf);
        return -EINVAL;
    }
    if (o->extractor)
        inf->x = *o->extractor;
    backoff_init(&inf->backoff, 200, 30000); /* failed lists: 200 ms doubling up to 30 s */
    if (h)
        inf->h = *h;
    inf->data = data;
    if (o->store != INF_STORE_COMPACT && o->store != INF_STORE_TREE) {
        x_free(inf);
        return -EINVAL;
    }
    if (kstore_new(o->store == INF_STORE_TREE ? KSTORE_TREE : KSTORE_COMPACT, &inf->store) < 0 ||
        (o->namespace_ && !(inf->ns = x_strdup(o->namespace_))) ||
        (o->label_selector && !(inf->label_selector = x_strdup(o->label_selector))) ||
        (o->field_selector && !(inf->field_selector = x_strdup(o->field_selector)))) {
        inf_free(inf);
        return -ENOMEM;
    }
    link_all(inf);
    *ret = inf;
    return 0;
}

int inf_view_new(struct inf_informer *src, const struct inf_options *o,
                 const struct inf_handlers *h, void *data, struct inf_informer **ret)
{
    struct inf_informer *v;
    int r;

    if (!src || src->is_view || !o || !ret || !o->resource ||
        strcmp(o->resource->resource, src->res->resource) != 0 ||
        strcmp(o->resource->group, src->res->group) != 0 || o->namespace_ || o->label_selector ||
        o->field_selector || o->list_from_cache)
        return -EINVAL;
    r = inf_new(src->c, o, h, data, &v);
    if (r < 0)
        return r;
    v->res = src->res;
    v->pb_msg = src->pb_msg;
    v->is_view = true;
    v->src = src;
    v->view_next = src->views;
    if (src->views)
        src->views->view_prev = &v->view_next;
    v->view_prev = &src->views;
    src->views = v;
    *ret = v;
    return 0;
}

int inf_add_index(struct inf_informer *inf, const char *name, inf_index_fn fn)
{
    if (!inf || !name || !fn || inf->started)
        return -EINVAL;
    return kstore_add_index(inf->store, name, fn);
}

int inf_set_extractor(struct inf_informer *inf, const struct inf_extractor *x)
{
    if (!inf || !x || !x->extract)
        return -EINVAL;
    if (inf->x.extract)
        return inf->x.extract == x->extract && inf->x.data == x->data &&
                       inf->x.handlers_only == x->handlers_only
                   ? 0
                   : -EEXIST;
    if (inf->started)
        return -EBUSY;
    inf->x = *x;
    return 0;
}

/* A view starts: it joins its source's next list from the start. A source that watches lists
 * again now (from the watch cache when it may); one that lists, or is held, does once it is done;
 * one not started yet, or waiting to retry a failed list, is about to list anyway. */
static int view_start(struct inf_informer *v)
{
    struct inf_informer *s = v->src;

    if (!s)
        return -ENODEV;
    if (!s->started || (s->retry_timer && uv_is_active((uv_handle_t *)s->retry_timer)))
        return 0;
    if (s->held || s->list_call || s->done_pending) {
        s->relist_wanted = true;
        return 0;
    }
    drop_watch(s);
    start_list(s);
    return 0;
}

int inf_start(struct inf_informer *inf)
{
    if (!inf || inf->started)
        return -EINVAL;
    inf->started = true;
    if (inf->resync_ms) {
        inf->resync_timer = ktimer_new(kapi_client_loop(inf->c), inf);
        if (!inf->resync_timer)
            return -ENOMEM;
        uv_timer_start(inf->resync_timer, on_resync, inf->resync_ms, inf->resync_ms);
    }
    if (inf->is_view)
        return view_start(inf);
    start_list(inf);
    return 0;
}

void inf_free(struct inf_informer *inf)
{
    if (!inf)
        return;
    if (inf->all_prev) {
        *inf->all_prev = inf->all_next;
        if (inf->all_next)
            inf->all_next->all_prev = inf->all_prev;
    }
    if (inf->src) { /* a view leaves its source */
        *inf->view_prev = inf->view_next;
        if (inf->view_next)
            inf->view_next->view_prev = inf->view_prev;
    }
    while (inf->views) { /* a source's views stay, fed no more: not synced */
        struct inf_informer *v = inf->views;
        inf->views = v->view_next;
        v->src = NULL;
        v->view_prev = NULL;
        v->view_next = NULL;
        v->joined = v->synced = false;
    }
    drop_watch(inf);
    kapi_call_cancel(inf->list_call);
    ktimer_free(inf->retry_timer);
    ktimer_free(inf->resync_timer);
    ktimer_free(inf->trim_timer);
    if (inf->drain)
        uv_close((uv_handle_t *)inf->drain, drain_closed);
    x_free(inf->pend);
    kstore_free(inf->store);
    x_free(inf->rbuf);
    kls_done(&inf->split);
    kpb_list_done(&inf->pbsplit);
    x_free(inf->jtext);
    x_free(inf->cut);
    x_free(inf->cont);
    x_free(inf->ns);
    x_free(inf->label_selector);
    x_free(inf->field_selector);
    x_free(inf);
}

bool inf_synced(const struct inf_informer *inf)
{
    return inf && inf->synced && !inf->held;
}

bool inf_listed(const struct inf_informer *inf)
{
    return inf && inf->synced;
}

int inf_hold(struct inf_informer *inf)
{
    const char *rv;

    if (!inf || !inf->synced || inf->held || inf->is_view)
        return -EINVAL;
    /* Only while watching: a list in progress changes the store as its pages arrive. */
    if (!inf->watch || inf->list_call || inf->done_pending)
        return -EBUSY;
    rv = kw_resource_version(inf->watch);
    if (!rv || !*rv || strlen(rv) > MAX_RV_LEN)
        return -EBUSY;
    memcpy(inf->held_rv, rv, strlen(rv) + 1);
    drop_watch(inf);
    inf->held = true;
    return 0;
}

void inf_release(struct inf_informer *inf)
{
    if (!inf || !inf->held)
        return;
    inf->held = false;
    if (inf->relist_wanted)
        start_list(inf); /* a view waits to join: a list, from the watch cache when it may */
    else
        start_watch(inf, inf->held_rv); /* what happened meanwhile comes now, in order */
}

bool inf_held(const struct inf_informer *inf)
{
    return inf && inf->held;
}

int inf_foreach_slice(const struct inf_informer *inf, size_t *cursor, uint64_t budget_ns,
                      inf_visit_fn fn, void *data)
{
    struct inf_informer *w = (struct inf_informer *)inf; /* only the current marks change */
    uint64_t t0 = uv_hrtime();
    struct kstore_entry *e;

    if (!inf || !cursor || !fn)
        return -EINVAL;
    while ((e = kstore_next(w->store, cursor))) {
        if (visit_one(w, e, fn, data) && uv_hrtime() - t0 >= budget_ns)
            return 0;
    }
    return 1;
}

size_t inf_count(const struct inf_informer *inf)
{
    return inf ? kstore_count(inf->store) : 0;
}

json_t *inf_get(const struct inf_informer *inf, const char *ns, const char *name)
{
    char key[MAX_KEY];
    struct kstore_entry *e;
    json_t *obj;

    if (!inf || key_of(ns, name, key, sizeof(key)) < 0)
        return NULL;
    e = kstore_find(inf->store, key);
    if (!e || kstore_decode(inf->store, e, &obj) < 0)
        return NULL;
    return obj;
}

void inf_foreach(const struct inf_informer *inf, inf_visit_fn fn, void *data)
{
    if (inf)
        visit_all((struct inf_informer *)inf, fn, data); /* only the current marks change */
}

const void *inf_record(const struct inf_informer *inf, const json_t *obj)
{
    if (!inf || !obj)
        return NULL;
    if (obj == inf->cur_obj)
        return inf->cur_rec;
    return obj == inf->cur_old ? inf->cur_old_rec : NULL;
}

const void *inf_get_record(const struct inf_informer *inf, const char *ns, const char *name)
{
    char key[MAX_KEY];
    struct kstore_entry *e;

    if (!inf || key_of(ns, name, key, sizeof(key)) < 0)
        return NULL;
    e = kstore_find(inf->store, key);
    return e ? kstore_entry_record(e) : NULL;
}

size_t inf_foreach_record(const struct inf_informer *inf, inf_record_fn fn, void *data)
{
    struct kstore_entry *e;
    size_t it = 0, n = 0;

    if (!inf || !fn)
        return 0;
    while ((e = kstore_next(inf->store, &it))) {
        const void *rec = kstore_entry_record(e);
        if (rec) {
            fn(rec, data);
            n++;
        }
    }
    return n;
}

int inf_index_foreach(const struct inf_informer *inf, const char *index, const char *value,
                      inf_visit_fn fn, void *data)
{
    return inf ? kstore_index_foreach(inf->store, index, value, fn, data) : 0;
}

unsigned inf_lists(const struct inf_informer *inf)
{
    return inf->lists;
}

void inf_store_stats(const struct inf_informer *inf, struct kstore_stats *ret)
{
    kstore_get_stats(inf->store, ret);
}

void inf_foreach_informer(void (*fn)(const struct inf_informer *inf, void *data), void *data)
{
    for (const struct inf_informer *inf = all_infs; inf; inf = inf->all_next)
        fn(inf, data);
}

const char *inf_resource(const struct inf_informer *inf)
{
    return inf->res->resource;
}

unsigned inf_watch_reconnects(const struct inf_informer *inf)
{
    if (inf->src)
        inf = inf->src;
    return inf->reconnects_before + (inf->watch ? kw_reconnects(inf->watch) : 0);
}

int inf_index_by_namespace(const json_t *obj, const char **values, size_t max)
{
    const char *ns = kapi_obj_namespace(obj);

    if (!ns || max < 1)
        return 0;
    values[0] = ns;
    return 1;
}
