/* The watch (src/kube/watch.c) in Kubernetes' protobuf encoding, against a small HTTP server in
 * this process that plays the API server (fakeapi.h). The stream is frames of a 4-byte big-endian
 * length and a metav1.WatchEvent whose object is the "k8s\0" envelope of a Pod (kube/kpb.h); the
 * watch must hand over the objects a JSON stream would have carried (apiVersion and kind
 * included), whether a frame arrives whole or in pieces, resume from the last version after the
 * stream ends (a frame cut short included), read a JSON answer as JSON, and refuse what the server
 * never sends: a frame over the limit, an empty one, one that is not a WatchEvent, an object of
 * another kind. An ERROR with a Status of code 410 ends the watch with -EIDRM. Needs the build's
 * generated schema (CLIQO_KPBGEN); without it the tests say so and pass, as the informer's do. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fakeapi.h"
#include "kube/api.h"
#include "kube/kpb.h"
#include "kube/watch.h"

static uv_loop_t loop;

/* ---- protobuf, written by hand ------------------------------------------------------------ */

struct pbuf {
    uint8_t b[65536];
    size_t n;
};

static void put_varint(struct pbuf *p, uint64_t v)
{
    do {
        assert_true(p->n < sizeof(p->b));
        p->b[p->n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
}

static void put_bytes(struct pbuf *p, unsigned num, const void *data, size_t len)
{
    put_varint(p, (uint64_t)num << 3 | 2);
    put_varint(p, len);
    assert_true(p->n + len <= sizeof(p->b));
    memcpy(p->b + p->n, data, len);
    p->n += len;
}

static void put_str(struct pbuf *p, unsigned num, const char *s)
{
    put_bytes(p, num, s, strlen(s));
}

static void put_msg(struct pbuf *p, unsigned num, const struct pbuf *m)
{
    put_bytes(p, num, m->b, m->n);
}

/* A Pod: metadata (name 1, namespace 3, resourceVersion 6, annotations 12) and spec.nodeName (10);
 * annot: a value of that many bytes for the annotation "big", 0 for none. */
static void pod(struct pbuf *out, const char *name, const char *rv, const char *node, size_t annot)
{
    static struct pbuf md, spec, entry;
    static char big[40000];

    md.n = spec.n = entry.n = out->n = 0;
    put_str(&md, 1, name);
    put_str(&md, 3, "ns");
    put_str(&md, 6, rv);
    if (annot) {
        assert_true(annot <= sizeof(big));
        memset(big, 'a', annot);
        put_str(&entry, 1, "big");
        put_bytes(&entry, 2, big, annot);
        put_msg(&md, 12, &entry);
    }
    put_str(&spec, 10, node);
    put_msg(out, 1, &md);
    put_msg(out, 2, &spec);
}

/* A Status (status 2, message 3, reason 4, code 6). */
static void status(struct pbuf *out, const char *message, int code)
{
    out->n = 0;
    put_str(out, 2, "Failure");
    put_str(out, 3, message);
    put_str(out, 4, "Expired");
    put_varint(out, 6 << 3 | 0);
    put_varint(out, (uint64_t)code);
}

/* Appends one frame: the length, then a WatchEvent of type with obj in an envelope of kind. */
static void frame(struct pbuf *stream, const char *type, const char *kind, const struct pbuf *obj)
{
    static struct pbuf tm, unknown, env, raw, ev;

    tm.n = unknown.n = env.n = raw.n = ev.n = 0;
    put_str(&tm, 1, "v1");
    put_str(&tm, 2, kind);
    put_msg(&unknown, 1, &tm);
    put_msg(&unknown, 2, obj);
    memcpy(env.b, KPB_MAGIC, KPB_MAGIC_LEN);
    env.n = KPB_MAGIC_LEN;
    memcpy(env.b + env.n, unknown.b, unknown.n);
    env.n += unknown.n;
    put_msg(&raw, 1, &env);
    put_str(&ev, 1, type);
    put_msg(&ev, 2, &raw);
    assert_true(stream->n + 4 + ev.n <= sizeof(stream->b));
    stream->b[stream->n++] = (uint8_t)(ev.n >> 24);
    stream->b[stream->n++] = (uint8_t)(ev.n >> 16);
    stream->b[stream->n++] = (uint8_t)(ev.n >> 8);
    stream->b[stream->n++] = (uint8_t)ev.n;
    memcpy(stream->b + stream->n, ev.b, ev.n);
    stream->n += ev.n;
}

static void raw_frame(struct pbuf *stream, const void *bytes, size_t len)
{
    stream->b[stream->n++] = (uint8_t)(len >> 24);
    stream->b[stream->n++] = (uint8_t)(len >> 16);
    stream->b[stream->n++] = (uint8_t)(len >> 8);
    stream->b[stream->n++] = (uint8_t)len;
    memcpy(stream->b + stream->n, bytes, len);
    stream->n += len;
}

/* ---- the server --------------------------------------------------------------------------- */

#define MAX_ANSWERS 4

static struct {
    struct fakeapi http;
    int watches;
    char requests[MAX_ANSWERS][512]; /* the request lines, then "|" and the Accept header */
    /* the answer to the i-th watch (its body; JSON when json[i]); later ones stay unanswered */
    struct pbuf body[MAX_ANSWERS];
    bool json[MAX_ANSWERS];
    int answers;
} srv;

static void answer(struct fakeapi_conn *c, const char *request, void *data)
{
    static char out[sizeof(srv.body[0].b) + 256];
    const char *accept = strstr(request, "Accept: ");
    int i = srv.watches++, k;

    (void)data;
    if (i < MAX_ANSWERS)
        snprintf(srv.requests[i], sizeof(srv.requests[i]), "%.*s|%.*s",
                 (int)strcspn(request, "\r\n"), request, accept ? (int)strcspn(accept, "\r\n") : 0,
                 accept ? accept : "");
    if (i >= srv.answers)
        return;
    k = snprintf(out, sizeof(out),
                 "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                 "Connection: close\r\n\r\n",
                 srv.json[i] ? "application/json"
                             : "application/vnd.kubernetes.protobuf;stream=watch",
                 srv.body[i].n);
    memcpy(out + k, srv.body[i].b, srv.body[i].n);
    fakeapi_reply_n(c, out, (size_t)k + srv.body[i].n);
}

/* ---- the watch ---------------------------------------------------------------------------- */

struct got {
    int events, ended, err;
    char log[1024];
    size_t annot; /* the length of the last ADDED object's annotation "big" */
    bool typed;   /* every object had apiVersion v1 and kind Pod */
};

static void on_event(struct kw_watch *w, enum kw_event_type type, json_t *obj, void *data)
{
    static const char *const names[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK"};
    struct got *g = data;
    const char *node = json_string_value(json_object_get(json_object_get(obj, "spec"), "nodeName"));
    size_t n = strlen(g->log);

    (void)w;
    g->events++;
    snprintf(g->log + n, sizeof(g->log) - n, "%s %s@%s %s;", names[type],
             kapi_obj_name(obj) ? kapi_obj_name(obj) : "-",
             kapi_obj_rv(obj) ? kapi_obj_rv(obj) : "-", node ? node : "-");
    if (type == KW_ADDED) {
        const char *big = json_string_value(json_object_get(
            json_object_get(json_object_get(obj, "metadata"), "annotations"), "big"));
        g->annot = big ? strlen(big) : 0;
    }
    if (type != KW_BOOKMARK)
        g->typed = g->typed && json_is_string(json_object_get(obj, "apiVersion")) &&
                   strcmp(json_string_value(json_object_get(obj, "apiVersion")), "v1") == 0 &&
                   json_is_string(json_object_get(obj, "kind")) &&
                   strcmp(json_string_value(json_object_get(obj, "kind")), "Pod") == 0;
}

static void on_end(struct kw_watch *w, int err, const char *message, void *data)
{
    struct got *g = data;
    size_t n = strlen(g->log);

    (void)w;
    g->ended++;
    g->err = err;
    snprintf(g->log + n, sizeof(g->log) - n, "end %s;", message);
}

/* Starts a watch of pods in "ns" from version 10 against the server (as set up by the test), runs
 * the loop until `until` is true of g (or 5 s pass), and stops it. */
static struct kw_watch *run(struct got *g, size_t max_line, bool (*until)(const struct got *g),
                            struct kapi_client **cp)
{
    struct kc_config cfg = {0};
    struct kapi_client_options co = {0};
    struct kapi_client *c;
    struct kw_watch *w;
    char url[64];
    int pod_msg = kpb_root(&kpb_schema, "", "v1", "Pod");
    struct kw_options o = {.namespace_ = "ns",
                           .resource_version = "10",
                           .max_line = max_line,
                           .backoff_base_ms = 10,
                           .backoff_max_ms = 20,
                           .drop_managed_fields = true,
                           .protobuf = true,
                           .pb_msg = pod_msg};

    assert_true(pod_msg >= 0);
    memset(g, 0, sizeof(*g));
    g->typed = true;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", srv.http.port);
    cfg.server = url;
    assert_int_equal(kapi_client_new(&loop, &cfg, &co, &c), 0);
    assert_int_equal(kw_start(c, &kapi_pods, &o, on_event, on_end, g, &w), 0);
    for (int t = 0; t < 5000 && !until(g); t++) {
        uv_run(&loop, UV_RUN_NOWAIT);
        usleep(1000);
    }
    *cp = c;
    return w;
}

static void finish(struct kw_watch *w, struct kapi_client *c)
{
    kw_stop(w);
    kapi_client_close(c);
    fakeapi_stop(&srv.http);
    for (int i = 0; i < 50; i++)
        uv_run(&loop, UV_RUN_NOWAIT);
}

static void server_start(void)
{
    memset(&srv, 0, sizeof(srv));
    assert_int_equal(fakeapi_start(&srv.http, &loop, answer, NULL), 0);
}

static bool has_schema(void)
{
    if (kpb_schema.nroots == 0) {
        print_message("this build has no protobuf schema (CLIQO_KPBGEN): nothing to test\n");
        return false;
    }
    return true;
}

static bool three_watches(const struct got *g)
{
    (void)g;
    return srv.watches >= 3;
}

static bool one_event(const struct got *g)
{
    return g->events > 0;
}

static bool ended(const struct got *g)
{
    return g->ended > 0;
}

/* Four events in frames, the first with an annotation of 40,000 bytes (so that it comes in
 * several pieces); the stream then ends and the watch resumes from the bookmark's version, asking
 * for protobuf again. Then a frame cut short: the watch resumes from the last event's version and
 * reads the next stream from its start. */
static void test_frames(void **state)
{
    struct pbuf p;
    struct got g;
    struct kapi_client *c;
    struct kw_watch *w;

    (void)state;
    if (!has_schema())
        return;
    server_start();
    pod(&p, "p1", "11", "n1", 40000);
    frame(&srv.body[0], "ADDED", "Pod", &p);
    pod(&p, "p1", "12", "n2", 0);
    frame(&srv.body[0], "MODIFIED", "Pod", &p);
    frame(&srv.body[0], "DELETED", "Pod", &p);
    pod(&p, "", "20", "", 0);
    frame(&srv.body[0], "BOOKMARK", "Pod", &p);
    /* the second stream: an event whose frame is cut short */
    pod(&p, "p2", "21", "n1", 0);
    frame(&srv.body[1], "ADDED", "Pod", &p);
    srv.body[1].n -= 3;
    /* the third: a whole one */
    pod(&p, "p3", "22", "n3", 0);
    frame(&srv.body[2], "ADDED", "Pod", &p);
    srv.answers = 3;

    w = run(&g, 0, three_watches, &c);
    for (int t = 0; t < 200 && g.events < 5; t++) {
        uv_run(&loop, UV_RUN_NOWAIT);
        usleep(1000);
    }
    assert_string_equal(g.log, "ADDED p1@11 n1;MODIFIED p1@12 n2;DELETED p1@12 n2;BOOKMARK -@20 "
                               "-;ADDED p3@22 n3;");
    assert_int_equal(g.annot, 0); /* the last ADDED had none (the first: below) */
    assert_true(g.typed);
    assert_int_equal(g.ended, 0);
    assert_string_equal(kw_resource_version(w), "22");
    assert_non_null(strstr(srv.requests[0], "resourceVersion=10"));
    assert_non_null(strstr(srv.requests[1], "resourceVersion=20"));
    assert_non_null(strstr(srv.requests[2], "resourceVersion=20")); /* p2 never came whole */
    for (int i = 0; i < 3; i++)
        assert_non_null(strstr(srv.requests[i], "Accept: application/vnd.kubernetes.protobuf"));
    finish(w, c);

    /* ...and the first had all 40,000 bytes */
    server_start();
    pod(&p, "p1", "11", "n1", 40000);
    frame(&srv.body[0], "ADDED", "Pod", &p);
    srv.answers = 1;
    w = run(&g, 0, one_event, &c);
    assert_int_equal(g.events, 1);
    assert_int_equal(g.annot, 40000);
    finish(w, c);
}

/* Protobuf was asked for but the server answered JSON (as it does for custom resources): read as
 * JSON. */
static void test_json_answer(void **state)
{
    const char *lines =
        "{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":"
        "{\"name\":\"p1\",\"namespace\":\"ns\",\"resourceVersion\":\"11\"},\"spec\":{\"nodeName\":"
        "\"n1\"}}}\n";
    struct got g;
    struct kapi_client *c;
    struct kw_watch *w;

    (void)state;
    if (!has_schema())
        return;
    server_start();
    memcpy(srv.body[0].b, lines, strlen(lines));
    srv.body[0].n = strlen(lines);
    srv.json[0] = true;
    srv.answers = 1;
    w = run(&g, 0, one_event, &c);
    assert_string_equal(g.log, "ADDED p1@11 n1;");
    assert_true(g.typed);
    assert_string_equal(kw_resource_version(w), "11");
    finish(w, c);
}

/* ERROR with a Status of code 410 (the version is too old): the watch ends with -EIDRM and the
 * Status's message; the owner relists. */
static void test_gone(void **state)
{
    struct pbuf p;
    struct got g;
    struct kapi_client *c;
    struct kw_watch *w;

    (void)state;
    if (!has_schema())
        return;
    server_start();
    status(&p, "too old resource version: 10 (50)", 410);
    frame(&srv.body[0], "ERROR", "Status", &p);
    srv.answers = 1;
    w = run(&g, 0, ended, &c);
    assert_int_equal(g.ended, 1);
    assert_int_equal(g.err, -EIDRM);
    assert_string_equal(g.log, "end too old resource version: 10 (50);");
    assert_int_equal(g.events, 0);
    finish(w, c);
}

/* A frame over the limit ends the watch (-E2BIG) as soon as its length is read. */
static void test_too_long(void **state)
{
    struct pbuf p;
    struct got g;
    struct kapi_client *c;
    struct kw_watch *w;

    (void)state;
    if (!has_schema())
        return;
    server_start();
    pod(&p, "p1", "11", "n1", 20000);
    frame(&srv.body[0], "ADDED", "Pod", &p);
    srv.answers = 1;
    w = run(&g, 16384, ended, &c);
    assert_int_equal(g.ended, 1);
    assert_int_equal(g.err, -E2BIG);
    assert_int_equal(g.events, 0);
    assert_non_null(strstr(g.log, "longer than the limit of 16384 bytes"));
    finish(w, c);
}

/* What the server never sends is refused (-EBADMSG): the stream is dropped and the watch resumes
 * from its last version, having delivered nothing of it. */
static void test_refused(void **state)
{
    static const uint8_t not_event[] = {0xff, 0xff, 0xff};
    struct pbuf p;
    struct got g;
    struct kapi_client *c;
    struct kw_watch *w;

    (void)state;
    if (!has_schema())
        return;
    server_start();
    raw_frame(&srv.body[0], "", 0); /* an empty frame */
    raw_frame(&srv.body[1], not_event, sizeof(not_event));
    status(&p, "not a pod", 500); /* an object of another kind in an ADDED */
    frame(&srv.body[2], "ADDED", "Status", &p);
    srv.answers = 3;
    w = run(&g, 0, three_watches, &c);
    for (int t = 0; t < 100 && srv.watches < 4; t++) {
        uv_run(&loop, UV_RUN_NOWAIT);
        usleep(1000);
    }
    assert_int_equal(srv.watches, 4); /* each refused stream was dropped, then resumed */
    assert_int_equal(g.events, 0);
    assert_int_equal(g.ended, 0);
    for (int i = 0; i < 3; i++)
        assert_non_null(strstr(srv.requests[i], "resourceVersion=10"));
    assert_true(kw_reconnects(w) >= 3);
    finish(w, c);
}

/* The bytes of the envelope and of the event are checked by kpb_watch_event itself. */
static void test_event_parser(void **state)
{
    struct pbuf p = {0}, ev = {0}, raw = {0};
    const uint8_t *type, *obj;
    size_t tlen, olen;

    (void)state;
    put_str(&raw, 1, "k8s");
    put_str(&ev, 1, "ADDED");
    put_msg(&ev, 2, &raw);
    assert_int_equal(kpb_watch_event(ev.b, ev.n, &type, &tlen, &obj, &olen), 0);
    assert_int_equal(tlen, 5);
    assert_memory_equal(type, "ADDED", 5);
    assert_int_equal(olen, 3);
    assert_memory_equal(obj, "k8s", 3);
    /* no type, an empty type, no object, an object without raw bytes, a truncated one */
    p.n = 0;
    put_msg(&p, 2, &raw);
    assert_int_equal(kpb_watch_event(p.b, p.n, &type, &tlen, &obj, &olen), -EBADMSG);
    p.n = 0;
    put_str(&p, 1, "");
    put_msg(&p, 2, &raw);
    assert_int_equal(kpb_watch_event(p.b, p.n, &type, &tlen, &obj, &olen), -EBADMSG);
    p.n = 0;
    put_str(&p, 1, "ADDED");
    assert_int_equal(kpb_watch_event(p.b, p.n, &type, &tlen, &obj, &olen), -EBADMSG);
    p.n = 0;
    put_str(&p, 1, "ADDED");
    put_str(&p, 2, "");
    assert_int_equal(kpb_watch_event(p.b, p.n, &type, &tlen, &obj, &olen), -EBADMSG);
    assert_int_equal(kpb_watch_event(ev.b, ev.n - 1, &type, &tlen, &obj, &olen), -EBADMSG);
}

static int setup(void **state)
{
    (void)state;
    return uv_loop_init(&loop);
}

static int teardown(void **state)
{
    (void)state;
    uv_run(&loop, UV_RUN_DEFAULT);
    return uv_loop_close(&loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_event_parser), cmocka_unit_test(test_frames),
        cmocka_unit_test(test_json_answer),  cmocka_unit_test(test_gone),
        cmocka_unit_test(test_too_long),     cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
