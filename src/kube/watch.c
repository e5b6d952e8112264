#include "kube/watch.h"
#include "common/jsonb.h"
#include "kube/backoff.h"
#include "kube/kpb.h"
#include "kube/liststream.h"
#include "common/log.h"
#include "common/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define DEFAULT_MAX_LINE ((size_t)3 << 20) /* one object (etcd: <= 1.5 MiB) and its envelope */
#define MAX_RV_LEN       64
#define FRAME_HDR        4 /* a protobuf stream's frame: 4-byte big-endian length, then the bytes */

enum { WIRE_UNSET, WIRE_JSON, WIRE_PB };

struct kw_watch {
    struct kapi_client *c;
    const struct kapi_resource *res;
    char *ns, *label_selector, *field_selector;
    char rv[MAX_RV_LEN + 1];
    size_t max_line;
    long server_timeout;
    struct backoff backoff;
    kw_event_cb on_event;
    kw_end_cb on_end;
    void *data;
    struct kapi_call *call;
    struct sbuf line;
    char *cut; /* an event's text without its object's managedFields */
    size_t cut_cap;
    bool drop_managed_fields;
    bool protobuf; /* asked for (kw_options.protobuf) */
    int pb_msg;
    unsigned wire;          /* of the current stream, told by its first byte */
    uint8_t hdr[FRAME_HDR]; /* the frame's length, as it arrives */
    unsigned hdr_n;         /* its bytes seen: FRAME_HDR once the frame's bytes are coming */
    size_t frame_len;       /* the frame's length */
    char *jtext;            /* an event's object as JSON text (protobuf) */
    size_t jtext_cap;
    uv_timer_t *timer; /* reconnect timer: heap-allocated, freed in its close callback */
    unsigned reconnects;
    int stream_err; /* an error seen inside the stream (ERROR event, bad line) */
    char stream_msg[256];
    bool in_callback;
    bool stopped;
    bool ended;
};

static void connect_watch(struct kw_watch *w);

static void watch_free(struct kw_watch *w)
{
    ktimer_free(w->timer);
    sbuf_done(&w->line);
    x_free(w->cut);
    x_free(w->jtext);
    x_free(w->ns);
    x_free(w->label_selector);
    x_free(w->field_selector);
    x_free(w);
}

void kw_stop(struct kw_watch *w)
{
    if (!w || w->stopped)
        return;
    w->stopped = true;
    if (w->in_callback)
        return; /* the callback's caller sees `stopped` and finishes the job */
    if (w->call) {
        kapi_call_cancel(w->call);
        w->call = NULL;
    }
    watch_free(w);
}

const char *kw_resource_version(const struct kw_watch *w)
{
    return w->rv;
}

unsigned kw_reconnects(const struct kw_watch *w)
{
    return w->reconnects;
}

static void end_watch(struct kw_watch *w, int err, const char *msg)
{
    w->ended = true;
    w->in_callback = true;
    if (w->on_end)
        w->on_end(w, err, msg, w->data);
    w->in_callback = false;
    /* A watch that ended is finished: the owner stops (frees) it, now or later. */
    if (w->stopped)
        watch_free(w);
}

static void set_rv(struct kw_watch *w, const json_t *obj)
{
    const char *rv = kapi_obj_rv(obj);

    if (rv && strlen(rv) <= MAX_RV_LEN)
        snprintf(w->rv, sizeof(w->rv), "%s", rv);
}

/* The event's text without object.metadata.managedFields, when it has one (in w->cut): about half
 * of a pod's decoding, for a member the informers drop. The text is decoded right after, which
 * validates it. Buffers over CUT_KEEP are not kept for the next event. */
#define CUT_KEEP (64 * 1024)
static void cut_managed_fields(struct kw_watch *w, const char **s, size_t *len)
{
    static const char *const path[] = {"object", "metadata", "managedFields"};

    /* Out of memory: decoded whole, the informer drops it anyway. */
    if (w->drop_managed_fields)
        (void)kls_cut_member(*s, *len, path, 3, &w->cut, &w->cut_cap, s, len);
}

static void cut_release(struct kw_watch *w)
{
    if (w->cut_cap > CUT_KEEP) {
        x_free(w->cut);
        w->cut = NULL;
        w->cut_cap = 0;
    }
    if (w->jtext_cap > CUT_KEEP) {
        x_free(w->jtext);
        w->jtext = NULL;
        w->jtext_cap = 0;
    }
}

static bool type_is(const char *type, size_t len, const char *name)
{
    return strlen(name) == len && memcmp(type, name, len) == 0;
}

/* One event, decoded from either encoding: type (len bytes, not NUL-terminated) and its object. */
static int deliver(struct kw_watch *w, const char *type, size_t len, json_t *obj)
{
    enum kw_event_type t;
    int r;

    if (type_is(type, len, "ERROR")) {
        json_int_t code = json_integer_value(json_object_get(obj, "code"));
        const char *m = json_string_value(json_object_get(obj, "message"));
        snprintf(w->stream_msg, sizeof(w->stream_msg), "%s", m ? m : "watch error");
        r = code == 410 ? -EIDRM : kapi_err_from_status((long)code, NULL);
        return r == 0 ? -EPROTO : r;
    }
    if (type_is(type, len, "ADDED"))
        t = KW_ADDED;
    else if (type_is(type, len, "MODIFIED"))
        t = KW_MODIFIED;
    else if (type_is(type, len, "DELETED"))
        t = KW_DELETED;
    else if (type_is(type, len, "BOOKMARK"))
        t = KW_BOOKMARK;
    else {
        snprintf(w->stream_msg, sizeof(w->stream_msg), "unknown watch event type \"%.*s\"",
                 (int)(len < 40 ? len : 40), type);
        return -EBADMSG;
    }
    set_rv(w, obj);
    backoff_reset(&w->backoff); /* the stream works: the next reconnect starts from the base */
    w->in_callback = true;
    w->on_event(w, t, obj, w->data);
    w->in_callback = false;
    return w->stopped ? -ECANCELED : 0;
}

/* Handles one complete line of the stream: {"type": "...", "object": {...}}. */
static int handle_line(struct kw_watch *w, const char *s, size_t len)
{
    json_error_t jerr;
    json_t *ev = NULL;
    const char *type;
    json_t *obj;
    int r;

    cut_managed_fields(w, &s, &len);
    r = jsonb_load(s, len, jsonb_budget(len, JSONB_RATIO_KUBE), 0, 0, &ev, &jerr);
    cut_release(w);

    if (r < 0) {
        snprintf(w->stream_msg, sizeof(w->stream_msg), "malformed watch event: %s", jerr.text);
        return -EBADMSG;
    }
    type = json_string_value(json_object_get(ev, "type"));
    obj = json_object_get(ev, "object");
    if (!type || !json_is_object(obj)) {
        snprintf(w->stream_msg, sizeof(w->stream_msg), "watch event without type or object");
        r = -EBADMSG;
    } else {
        r = deliver(w, type, strlen(type), obj);
    }
    json_decref(ev);
    return r;
}

/* A watch event's object in JSON carries apiVersion and kind (a list's items do not); the protobuf
 * object has them only in its envelope. They are set as the JSON stream would have them, so that
 * the owner sees the same object either way. */
static int set_type_meta(struct kw_watch *w, json_t *obj)
{
    char av[128];

    if (w->res->group[0])
        snprintf(av, sizeof(av), "%s/%s", w->res->group, w->res->version);
    else
        snprintf(av, sizeof(av), "%s", w->res->version);
    if (json_object_set_new(obj, "apiVersion", json_string(av)) < 0 ||
        json_object_set_new(obj, "kind", json_string(w->res->kind)) < 0)
        return -ENOMEM;
    return 0;
}

/* Handles one complete frame of a protobuf stream (kpb_watch_event): its object, whose envelope
 * must name the watched kind (or Status, for an ERROR), is written as JSON text (managedFields
 * left out) and decoded, given its apiVersion and kind, then delivered as a line's would be. */
static int handle_frame(struct kw_watch *w, const uint8_t *p, size_t n)
{
    const uint8_t *type, *env, *raw;
    size_t tlen, env_len, raw_len, text_len;
    char kind[64];
    json_t *obj = NULL;
    int msg = w->pb_msg, r;
    bool is_error;

    r = kpb_watch_event(p, n, &type, &tlen, &env, &env_len);
    if (r == 0)
        r = kpb_unwrap(env, env_len, &raw, &raw_len, kind, sizeof(kind));
    if (r < 0) {
        snprintf(w->stream_msg, sizeof(w->stream_msg), "malformed watch event (protobuf)");
        return -EBADMSG;
    }
    is_error = type_is((const char *)type, tlen, "ERROR");
    if (is_error)
        msg = strcmp(kind, "Status") == 0 ? kpb_root(&kpb_schema, "meta.k8s.io", "v1", "Status")
                                          : -ENOENT;
    else if (strcmp(kind, w->res->kind) != 0)
        msg = -ENOENT;
    if (msg < 0) {
        snprintf(w->stream_msg, sizeof(w->stream_msg),
                 "watch event (protobuf) of kind \"%.40s\" in a watch of %s", kind, w->res->kind);
        return -EBADMSG;
    }
    r = kpb_to_tree(&kpb_schema, msg, raw, raw_len, &w->jtext, &w->jtext_cap, &text_len,
                    w->max_line, &obj);
    if (r == 0 && json_is_object(obj) && !is_error)
        r = set_type_meta(w, obj);
    if (r == 0 && json_is_object(obj))
        r = deliver(w, (const char *)type, tlen, obj);
    else if (r != -ENOMEM) {
        snprintf(w->stream_msg, sizeof(w->stream_msg), "malformed watch event (protobuf): %s",
                 r == -E2BIG ? "its object's text is over the limit" : "its object");
        r = r == -E2BIG ? -E2BIG : -EBADMSG;
    }
    json_decref(obj);
    cut_release(w);
    return r;
}

/* A chunk of a protobuf stream: frames, each collected whole (in w->line, unless a chunk holds it
 * whole) and handled. A frame over max_line ends the watch with -E2BIG, an empty one is refused. */
static int on_frames(struct kw_watch *w, const uint8_t *p, size_t len)
{
    const uint8_t *end = p + len;
    int r;

    while (p < end) {
        size_t have, take;
        if (w->hdr_n < FRAME_HDR) {
            w->hdr[w->hdr_n++] = *p++;
            if (w->hdr_n < FRAME_HDR)
                continue;
            w->frame_len = (size_t)w->hdr[0] << 24 | (size_t)w->hdr[1] << 16 |
                           (size_t)w->hdr[2] << 8 | w->hdr[3];
            if (w->frame_len > w->max_line) {
                snprintf(w->stream_msg, sizeof(w->stream_msg),
                         "watch event longer than the limit of %zu bytes", w->max_line);
                return -E2BIG;
            }
            if (w->frame_len == 0) {
                snprintf(w->stream_msg, sizeof(w->stream_msg), "empty watch event (protobuf)");
                return -EBADMSG;
            }
            continue;
        }
        have = sbuf_len(&w->line);
        take = w->frame_len - have;
        take = take < (size_t)(end - p) ? take : (size_t)(end - p);
        if (have == 0 && take == w->frame_len) {
            r = handle_frame(w, p, take);
            p += take;
        } else {
            if ((r = sbuf_add(&w->line, (const char *)p, take)) < 0)
                return r;
            p += take;
            if (sbuf_len(&w->line) < w->frame_len)
                continue;
            r = handle_frame(w, (const uint8_t *)sbuf_str(&w->line), w->frame_len);
            sbuf_done(&w->line);
        }
        w->hdr_n = 0;
        if (r < 0)
            return r;
    }
    return 0;
}

static int on_chunk(struct kapi_client *c, const char *chunk, size_t len, void *data)
{
    struct kw_watch *w = data;
    const char *p = chunk, *end = chunk + len, *nl;
    int r;

    (void)c;
    if (w->wire == WIRE_UNSET && len)
        w->wire = w->protobuf && chunk[0] == '\0' ? WIRE_PB : WIRE_JSON;
    if (w->wire == WIRE_PB) {
        r = on_frames(w, (const uint8_t *)chunk, len);
        if (r < 0)
            w->stream_err = r;
        return r;
    }
    while (p < end) {
        nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) {
            r = sbuf_add(&w->line, p, (size_t)(end - p));
            if (r < 0) {
                snprintf(w->stream_msg, sizeof(w->stream_msg),
                         "watch event longer than the limit of %zu bytes", w->max_line);
                w->stream_err = r;
                return r;
            }
            break;
        }
        if (sbuf_len(&w->line) > 0) {
            r = sbuf_add(&w->line, p, (size_t)(nl - p));
            if (r < 0) {
                snprintf(w->stream_msg, sizeof(w->stream_msg),
                         "watch event longer than the limit of %zu bytes", w->max_line);
                w->stream_err = r;
                return r;
            }
            r = handle_line(w, sbuf_str(&w->line), sbuf_len(&w->line));
            sbuf_done(&w->line);
        } else if (nl > p) {
            if ((size_t)(nl - p) > w->max_line) {
                snprintf(w->stream_msg, sizeof(w->stream_msg),
                         "watch event longer than the limit of %zu bytes", w->max_line);
                w->stream_err = -E2BIG;
                return -E2BIG;
            }
            r = handle_line(w, p, (size_t)(nl - p));
        } else {
            r = 0;
        }
        if (r < 0) {
            w->stream_err = r;
            return r;
        }
        p = nl + 1;
    }
    return 0;
}

static void on_reconnect_timer(uv_timer_t *t)
{
    struct kw_watch *w = t->data;

    connect_watch(w);
}

static void schedule_reconnect(struct kw_watch *w)
{
    if (!w->timer && !(w->timer = ktimer_new(kapi_client_loop(w->c), w))) {
        end_watch(w, -ENOMEM, "out of memory");
        return;
    }
    uv_timer_start(w->timer, on_reconnect_timer, backoff_next(&w->backoff), 0);
}

static void on_done(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct kw_watch *w = data;
    int err = w->stream_err ? w->stream_err : res->err;
    const char *msg = w->stream_err ? w->stream_msg : res->status.message;

    (void)c;
    w->call = NULL;
    sbuf_done(&w->line);
    w->stream_err = 0;
    if (w->stopped) {
        /* Stopped from inside an event callback: the stream was aborted, now it can go. */
        watch_free(w);
        return;
    }
    switch (err) {
    case 0:
        /* The server closed the stream (its timeout): resume at once from the last version. */
        w->reconnects++;
        connect_watch(w);
        return;
    case -EIDRM:
    case -E2BIG:
    case -EPERM:
    case -EACCES:
    case -ENOENT:
    case -EINVAL:
        log_debug("watch", "%s watch ends: %s", w->res->resource, msg);
        end_watch(w, err, msg);
        return;
    default:
        log_debug("watch", "%s watch interrupted (%s), reconnecting from %s", w->res->resource, msg,
                  w->rv);
        w->reconnects++;
        schedule_reconnect(w);
    }
}

static void connect_watch(struct kw_watch *w)
{
    struct kapi_request req = {
        .method = "GET", .on_chunk = on_chunk, .timeout_ms = -1, .protobuf = w->protobuf};
    struct sbuf p;
    char num[32];
    int r;

    w->wire = WIRE_UNSET;
    w->hdr_n = 0;
    sbuf_done(&w->line);

    sbuf_init(&p, 16384);
    r = kapi_path(&p, w->res, w->ns, NULL, NULL);
    if (r >= 0)
        r = kapi_query_add(&p, "watch", "1");
    if (r >= 0)
        r = kapi_query_add(&p, "allowWatchBookmarks", "true");
    if (r >= 0 && w->rv[0])
        r = kapi_query_add(&p, "resourceVersion", w->rv);
    if (r >= 0 && w->label_selector)
        r = kapi_query_add(&p, "labelSelector", w->label_selector);
    if (r >= 0 && w->field_selector)
        r = kapi_query_add(&p, "fieldSelector", w->field_selector);
    if (r >= 0) {
        snprintf(num, sizeof(num), "%ld", w->server_timeout);
        r = kapi_query_add(&p, "timeoutSeconds", num);
    }
    if (r >= 0) {
        req.path = sbuf_str(&p);
        /* Bookmarks arrive about once a minute: silence for much longer means a dead connection. */
        req.low_speed_secs = w->server_timeout + 30;
        r = kapi_send(w->c, &req, on_done, w, &w->call);
    }
    sbuf_done(&p);
    if (r == -ECANCELED)
        return; /* the client is closing */
    if (r < 0)
        schedule_reconnect(w);
}

int kw_start(struct kapi_client *c, const struct kapi_resource *r, const struct kw_options *o,
             kw_event_cb on_event, kw_end_cb on_end, void *data, struct kw_watch **ret)
{
    struct kw_watch *w;

    if (!c || !r || !on_event || !ret)
        return -EINVAL;
    if (o && o->resource_version && strlen(o->resource_version) > MAX_RV_LEN)
        return -EINVAL;
    w = x_calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->c = c;
    w->res = r;
    w->on_event = on_event;
    w->on_end = on_end;
    w->data = data;
    w->drop_managed_fields = o && o->drop_managed_fields;
    w->protobuf = o && o->protobuf && o->pb_msg >= 0;
    w->pb_msg = w->protobuf ? o->pb_msg : -1;
    w->max_line = o && o->max_line ? o->max_line : DEFAULT_MAX_LINE;
    w->server_timeout =
        o && o->server_timeout_secs > 0 ? o->server_timeout_secs : 300 + (long)backoff_jitter(299);
    backoff_init(&w->backoff, o && o->backoff_base_ms ? o->backoff_base_ms : 200,
                 o && o->backoff_max_ms ? o->backoff_max_ms : 30000);
    sbuf_init(&w->line, w->max_line);
    if (o && o->resource_version)
        snprintf(w->rv, sizeof(w->rv), "%s", o->resource_version);
    if ((o && o->namespace_ && r->namespaced && !(w->ns = x_strdup(o->namespace_))) ||
        (o && o->label_selector && !(w->label_selector = x_strdup(o->label_selector))) ||
        (o && o->field_selector && !(w->field_selector = x_strdup(o->field_selector)))) {
        watch_free(w);
        return -ENOMEM;
    }
    connect_watch(w);
    *ret = w;
    return 0;
}
