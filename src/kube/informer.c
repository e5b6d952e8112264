#include "kube/informer.h"
#include "kube/backoff.h"
#include "common/log.h"
#include "common/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_INDEXES       8
#define MAX_INDEX_VALUES  16
#define DEFAULT_PAGE_SIZE 500
#define DEFAULT_MAX_OBJS  1000000

struct index {
    char *name;
    inf_index_fn fn;
    json_t *map; /* value -> { key: true } */
};

struct inf_informer {
    struct kapi_client *c;
    const struct kapi_resource *res;
    char *ns, *label_selector, *field_selector;
    long page_size;
    uint64_t resync_ms;
    size_t max_objects;
    struct inf_handlers h;
    void *data;
    json_t *store;   /* key -> object */
    json_t *listing; /* objects of the list in progress */
    char *cont;      /* continue token of the list in progress */
    struct index idx[MAX_INDEXES];
    int nidx;
    struct kw_watch *watch;
    struct kapi_call *list_call;
    uv_timer_t *retry_timer, *resync_timer;
    struct backoff backoff;
    unsigned lists;
    unsigned reconnects_before; /* of watches already stopped */
    bool started, synced;
};

static void start_list(struct inf_informer *inf);

static int obj_key(const json_t *obj, char *buf, size_t size)
{
    const char *name = kapi_obj_name(obj), *ns = kapi_obj_namespace(obj);
    int n;

    if (!name)
        return -EINVAL;
    n = ns && *ns ? snprintf(buf, size, "%s/%s", ns, name) : snprintf(buf, size, "%s", name);
    return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static void strip(json_t *obj)
{
    json_object_del(json_object_get(obj, "metadata"), "managedFields");
}

static void index_update(struct inf_informer *inf, const char *key, json_t *old_obj,
                         json_t *new_obj)
{
    const char *vals[MAX_INDEX_VALUES];

    for (int i = 0; i < inf->nidx; i++) {
        struct index *ix = &inf->idx[i];
        int n;
        if (old_obj && (n = ix->fn(old_obj, vals, MAX_INDEX_VALUES)) > 0)
            for (int j = 0; j < n; j++) {
                json_t *set = json_object_get(ix->map, vals[j]);
                json_object_del(set, key);
                if (set && json_object_size(set) == 0)
                    json_object_del(ix->map, vals[j]);
            }
        if (new_obj && (n = ix->fn(new_obj, vals, MAX_INDEX_VALUES)) > 0)
            for (int j = 0; j < n; j++) {
                json_t *set = json_object_get(ix->map, vals[j]);
                if (!set) {
                    set = json_object();
                    if (!set || json_object_set_new(ix->map, vals[j], set) < 0)
                        continue;
                }
                json_object_set_new(set, key, json_true());
            }
    }
}

/* Puts obj (a new reference is taken) into the store and calls the handler. */
static void upsert(struct inf_informer *inf, json_t *obj)
{
    char key[600];
    json_t *old;

    if (obj_key(obj, key, sizeof(key)) < 0)
        return;
    strip(obj);
    old = json_object_get(inf->store, key);
    if (old) {
        const char *orv = kapi_obj_rv(old), *nrv = kapi_obj_rv(obj);
        if (orv && nrv && strcmp(orv, nrv) == 0)
            return; /* nothing changed (relist of an unchanged object) */
        json_incref(old);
    } else if (json_object_size(inf->store) >= inf->max_objects) {
        if (inf->h.on_error)
            inf->h.on_error(inf, -E2BIG, "too many objects in the collection", inf->data);
        return;
    }
    if (json_object_set(inf->store, key, obj) < 0) {
        json_decref(old);
        return;
    }
    index_update(inf, key, old, obj);
    if (old) {
        if (inf->h.on_update)
            inf->h.on_update(inf, old, obj, inf->data);
        json_decref(old);
    } else if (inf->h.on_add) {
        inf->h.on_add(inf, obj, inf->data);
    }
}

static void remove_key(struct inf_informer *inf, const char *key)
{
    json_t *old = json_object_get(inf->store, key);

    if (!old)
        return;
    json_incref(old);
    json_object_del(inf->store, key);
    index_update(inf, key, old, NULL);
    if (inf->h.on_delete)
        inf->h.on_delete(inf, old, inf->data);
    json_decref(old);
}

/* ---- watch ---------------------------------------------------------------------------------- */

static void on_watch_event(struct kw_watch *w, enum kw_event_type type, json_t *obj, void *data)
{
    struct inf_informer *inf = data;
    char key[600];

    (void)w;
    switch (type) {
    case KW_ADDED:
    case KW_MODIFIED:
        upsert(inf, obj);
        break;
    case KW_DELETED:
        if (obj_key(obj, key, sizeof(key)) == 0)
            remove_key(inf, key);
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
    if (err != -EIDRM && inf->h.on_error)
        inf->h.on_error(inf, err, message, inf->data);
    start_list(inf);
}

static void start_watch(struct inf_informer *inf, const char *rv)
{
    struct kw_options o = {.namespace_ = inf->ns,
                           .label_selector = inf->label_selector,
                           .field_selector = inf->field_selector,
                           .resource_version = rv};
    int r = kw_start(inf->c, inf->res, &o, on_watch_event, on_watch_end, inf, &inf->watch);

    if (r < 0) {
        inf->watch = NULL;
        if (inf->h.on_error)
            inf->h.on_error(inf, r, "cannot start watch", inf->data);
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

/* The list is complete: reconcile the store with it, then watch from its version. */
static void finish_list(struct inf_informer *inf, const char *rv)
{
    const char *key;
    json_t *obj, *gone;
    void *tmp;

    gone = json_array();
    json_object_foreach(inf->store, key, obj)
    {
        if (!json_object_get(inf->listing, key))
            json_array_append_new(gone, json_string(key));
    }
    for (size_t i = 0; i < json_array_size(gone); i++)
        remove_key(inf, json_string_value(json_array_get(gone, i)));
    json_decref(gone);
    json_object_foreach_safe(inf->listing, tmp, key, obj)
    {
        upsert(inf, obj);
    }
    json_decref(inf->listing);
    inf->listing = NULL;
    inf->lists++;
    backoff_reset(&inf->backoff);
    start_watch(inf, rv);
    if (!inf->synced) {
        inf->synced = true;
        if (inf->h.on_synced)
            inf->h.on_synced(inf, inf->data);
    }
}

static void list_page(struct inf_informer *inf);

static void on_list(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct inf_informer *inf = data;
    json_t *items, *item;
    const char *cont, *rv;
    size_t i;
    char key[600];

    (void)c;
    inf->list_call = NULL;
    if (res->err == -EIDRM && inf->cont) {
        /* The continue token expired: start the list again. */
        x_free(inf->cont);
        inf->cont = NULL;
        json_object_clear(inf->listing);
        list_page(inf);
        return;
    }
    if (res->err < 0) {
        log_debug("informer", "listing %s failed: %s", inf->res->resource, res->status.message);
        if ((res->err == -EPERM || res->err == -EACCES) && inf->h.on_error)
            inf->h.on_error(inf, res->err, res->status.message, inf->data);
        json_decref(inf->listing);
        inf->listing = NULL;
        x_free(inf->cont);
        inf->cont = NULL;
        retry_later(inf);
        return;
    }
    items = json_object_get(res->body, "items");
    json_array_foreach(items, i, item)
    {
        if (obj_key(item, key, sizeof(key)) < 0)
            continue;
        if (json_object_size(inf->listing) >= inf->max_objects) {
            if (inf->h.on_error)
                inf->h.on_error(inf, -E2BIG, "collection larger than the informer's limit",
                                inf->data);
            break;
        }
        json_object_set(inf->listing, key, item);
    }
    cont = json_string_value(json_object_get(json_object_get(res->body, "metadata"), "continue"));
    x_free(inf->cont);
    inf->cont = NULL;
    if (cont && *cont) {
        inf->cont = x_strdup(cont);
        if (!inf->cont) {
            retry_later(inf);
            return;
        }
        list_page(inf);
        return;
    }
    rv = json_string_value(
        json_object_get(json_object_get(res->body, "metadata"), "resourceVersion"));
    finish_list(inf, rv);
}

static void list_page(struct inf_informer *inf)
{
    struct kapi_list_opts o = {.label_selector = inf->label_selector,
                               .field_selector = inf->field_selector,
                               .limit = inf->page_size,
                               .continue_token = inf->cont};
    struct kapi_request req = {.method = "GET"};
    struct sbuf p;
    int r;

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
    json_decref(inf->listing);
    inf->listing = json_object();
    x_free(inf->cont);
    inf->cont = NULL;
    if (!inf->listing) {
        retry_later(inf);
        return;
    }
    list_page(inf);
}

/* ---- resync --------------------------------------------------------------------------------- */

static void on_resync(uv_timer_t *t)
{
    struct inf_informer *inf = t->data;
    const char *key;
    json_t *obj;

    if (!inf->synced || !inf->h.on_update)
        return;
    json_object_foreach(inf->store, key, obj)
    {
        inf->h.on_update(inf, obj, obj, inf->data);
    }
}

/* ---- public --------------------------------------------------------------------------------- */

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
    if (h)
        inf->h = *h;
    inf->data = data;
    inf->store = json_object();
    if (!inf->store || (o->namespace_ && !(inf->ns = x_strdup(o->namespace_))) ||
        (o->label_selector && !(inf->label_selector = x_strdup(o->label_selector))) ||
        (o->field_selector && !(inf->field_selector = x_strdup(o->field_selector)))) {
        inf_free(inf);
        return -ENOMEM;
    }
    *ret = inf;
    return 0;
}

int inf_add_index(struct inf_informer *inf, const char *name, inf_index_fn fn)
{
    struct index *ix;

    if (!inf || !name || !fn || inf->started)
        return -EINVAL;
    if (inf->nidx >= MAX_INDEXES)
        return -ENOSPC;
    for (int i = 0; i < inf->nidx; i++)
        if (strcmp(inf->idx[i].name, name) == 0)
            return -EEXIST;
    ix = &inf->idx[inf->nidx];
    ix->name = x_strdup(name);
    ix->map = json_object();
    if (!ix->name || !ix->map) {
        x_free(ix->name);
        json_decref(ix->map);
        ix->name = NULL;
        ix->map = NULL;
        return -ENOMEM;
    }
    ix->fn = fn;
    inf->nidx++;
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
    start_list(inf);
    return 0;
}

void inf_free(struct inf_informer *inf)
{
    if (!inf)
        return;
    drop_watch(inf);
    kapi_call_cancel(inf->list_call);
    ktimer_free(inf->retry_timer);
    ktimer_free(inf->resync_timer);
    for (int i = 0; i < inf->nidx; i++) {
        x_free(inf->idx[i].name);
        json_decref(inf->idx[i].map);
    }
    json_decref(inf->store);
    json_decref(inf->listing);
    x_free(inf->cont);
    x_free(inf->ns);
    x_free(inf->label_selector);
    x_free(inf->field_selector);
    x_free(inf);
}

bool inf_synced(const struct inf_informer *inf)
{
    return inf->synced;
}

size_t inf_count(const struct inf_informer *inf)
{
    return json_object_size(inf->store);
}

json_t *inf_get(const struct inf_informer *inf, const char *ns, const char *name)
{
    char key[600];
    int n;

    if (!name)
        return NULL;
    n = ns && *ns ? snprintf(key, sizeof(key), "%s/%s", ns, name)
                  : snprintf(key, sizeof(key), "%s", name);
    if (n < 0 || (size_t)n >= sizeof(key))
        return NULL;
    return json_incref(json_object_get(inf->store, key));
}

void inf_foreach(const struct inf_informer *inf, inf_visit_fn fn, void *data)
{
    const char *key;
    json_t *obj;

    json_object_foreach(inf->store, key, obj)
    {
        fn(obj, data);
    }
}

int inf_index_foreach(const struct inf_informer *inf, const char *index, const char *value,
                      inf_visit_fn fn, void *data)
{
    const char *key;
    json_t *v;
    int n = 0;

    for (int i = 0; i < inf->nidx; i++) {
        if (strcmp(inf->idx[i].name, index) != 0)
            continue;
        json_object_foreach(json_object_get(inf->idx[i].map, value), key, v)
        {
            json_t *obj = json_object_get(inf->store, key);
            if (obj) {
                fn(obj, data);
                n++;
            }
        }
        return n;
    }
    return -ENOENT;
}

unsigned inf_lists(const struct inf_informer *inf)
{
    return inf->lists;
}

unsigned inf_watch_reconnects(const struct inf_informer *inf)
{
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
