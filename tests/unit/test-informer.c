/* The informer's typed records (src/kube/informer.c, "Typed records"): an informer given the pod
 * extractor (kube/podrec.h) hands its handlers each object's record (on_update: the old one and
 * the new one), keeps it beside the cached object for listers, and sets extractors only before it
 * starts. A small HTTP server in this process (fakeapi.h) plays the API server: it lists two pods,
 * then its first watch sends an update, a delete and an add and ends (the watch reconnects; later
 * watches get no answer). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "kube/api.h"
#include "kube/informer.h"
#include "kube/kubeconfig.h"
#include "kube/podrec.h"

#include "fakeapi.h"
#include "kube/kpb.h"

static const struct kpod_options opts = {.nlabels = 1, .labels = {"app"}};
static const struct inf_extractor pod_x = {kpod_extract, &opts};

static uv_loop_t loop;

static struct {
    struct fakeapi http;
    int watches;
    char last_watch[512]; /* the request line of the last watch */
    char last_list[512];  /* of the last list */
    const char *minor;    /* GET /version answers {"major":"1","minor":minor}; NULL: a PodList */
    int versions, lists, pb_lists; /* requests: /version, lists, lists accepting protobuf */
} srv;

static const char *pod_json(const char *name, const char *node, const char *rv, char *buf,
                            size_t size)
{
    snprintf(buf, size,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"resourceVersion\":\"%s\","
             "\"labels\":{\"app\":\"web-%s\"},\"managedFields\":[{\"manager\":\"m\"}]},"
             "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\",\"resources\":"
             "{\"requests\":{\"cpu\":\"100m\"}}}]},\"status\":{\"phase\":\"Running\"}}",
             name, rv, name, node);
    return buf;
}

/* The list: two pods. The first watch: p1 moved to node-2, p2 deleted, p3 added. Later watches: no
 * answer (the connection stays open until the test ends). */
static void answer(struct fakeapi_conn *c, const char *request, void *data)
{
    char a[1024], b[1024], body[4096], out[4352];

    (void)data;
    if (strncmp(request, "GET /version ", 13) == 0) {
        srv.versions++;
        if (srv.minor) {
            snprintf(body, sizeof(body), "{\"major\":\"1\",\"minor\":\"%s\"}", srv.minor);
            snprintf(out, sizeof(out),
                     "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n%s",
                     strlen(body), body);
            fakeapi_reply(c, out);
            return;
        }
    } else if (!strstr(request, "watch=1")) {
        srv.lists++;
        srv.pb_lists += strstr(request, "application/vnd.kubernetes.protobuf") != NULL;
        snprintf(srv.last_list, sizeof(srv.last_list), "%.*s", (int)strcspn(request, "\r\n"),
                 request);
    }
    if (strstr(request, "watch=1"))
        snprintf(srv.last_watch, sizeof(srv.last_watch), "%.*s", (int)strcspn(request, "\r\n"),
                 request);
    if (!strstr(request, "watch=1")) {
        snprintf(body, sizeof(body),
                 "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":"
                 "\"10\"},\"items\":[%s,%s]}",
                 pod_json("p1", "node-1", "1", a, sizeof(a)),
                 pod_json("p2", "node-1", "2", b, sizeof(b)));
    } else if (srv.watches++ == 0) {
        int k = snprintf(body, sizeof(body), "{\"type\":\"MODIFIED\",\"object\":%s}\n",
                         pod_json("p1", "node-2", "11", a, sizeof(a)));
        k += snprintf(body + k, sizeof(body) - (size_t)k, "{\"type\":\"DELETED\",\"object\":%s}\n",
                      pod_json("p2", "node-1", "12", a, sizeof(a)));
        snprintf(body + k, sizeof(body) - (size_t)k, "{\"type\":\"ADDED\",\"object\":%s}\n",
                 pod_json("p3", "node-3", "13", a, sizeof(a)));
    } else {
        return;
    }
    snprintf(out, sizeof(out),
             "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
             "Connection: close\r\n\r\n%s",
             strlen(body), body);
    fakeapi_reply(c, out);
}

static void server_start(void)
{
    memset(&srv, 0, sizeof(srv));
    assert_int_equal(fakeapi_start(&srv.http, &loop, answer, NULL), 0);
}

static void server_stop(void)
{
    fakeapi_stop(&srv.http);
}

/* ---- the handlers --------------------------------------------------------------------------- */

struct seen {
    int adds, updates, deletes, synced, visits, records;
    char log[512];
};

static const char *node_of(const void *rec)
{
    const struct kpod *p = rec;

    return p ? kpod_text(p, p->node) : "(none)";
}

static void note(struct seen *s, const char *what, const json_t *obj, const void *rec)
{
    const struct kpod *p = rec;
    size_t n = strlen(s->log);

    assert_non_null(p);
    /* the record is the object's */
    assert_string_equal(kpod_text(p, p->name), json_string_value(json_object_get(
                                                   json_object_get(obj, "metadata"), "name")));
    snprintf(s->log + n, sizeof(s->log) - n, "%s %s@%s;", what, kpod_text(p, p->name), node_of(p));
}

static void on_add(struct inf_informer *inf, json_t *obj, void *data)
{
    struct seen *s = data;
    json_t *other = json_object();

    s->adds++;
    note(s, "add", obj, inf_record(inf, obj));
    assert_null(inf_record(inf, other)); /* not an object being handed over */
    assert_null(inf_record(inf, NULL));
    json_decref(other);
}

static void on_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    struct seen *s = data;

    s->updates++;
    note(s, "old", old_obj, inf_record(inf, old_obj));
    note(s, "new", new_obj, inf_record(inf, new_obj));
    /* what listers see already */
    assert_ptr_equal(inf_get_record(inf, "ns", "p1"), inf_record(inf, new_obj));
}

static void on_delete(struct inf_informer *inf, json_t *obj, void *data)
{
    struct seen *s = data;

    s->deletes++;
    note(s, "delete", obj, inf_record(inf, obj));
    assert_null(inf_get_record(inf, "ns", "p2")); /* gone from the store */
}

static void on_synced(struct inf_informer *inf, void *data)
{
    (void)inf;
    ((struct seen *)data)->synced++;
}

static struct inf_informer *visited_inf;

static void visit(json_t *obj, void *data)
{
    struct seen *s = data;

    s->visits++;
    note(s, "visit", obj, inf_record(visited_inf, obj));
}

static void count_record(const void *rec, void *data)
{
    (void)rec;
    ((struct seen *)data)->records++;
}

static struct kapi_client *client_new(void)
{
    char url[64];
    struct kc_config cfg = {0};
    struct kapi_client_options o = {.qps = 1000, .burst = 1000};
    struct kapi_client *c = NULL;

    snprintf(url, sizeof(url), "http://127.0.0.1:%d", srv.http.port);
    cfg.server = url;
    assert_int_equal(kapi_client_new(&loop, &cfg, &o, &c), 0);
    return c;
}

/* The end of a case: the client closed, the server stopped, and the loop given the iterations
 * their handles need to close. */
static void client_done(struct kapi_client *c)
{
    kapi_client_close(c);
    server_stop();
    for (int i = 0; i < 20; i++)
        uv_run(&loop, UV_RUN_NOWAIT);
}

static void run_until(const int *counter, int want)
{
    uint64_t until = uv_now(&loop) + 10000;

    while (*counter < want && uv_now(&loop) < until)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(*counter, want);
}

static void test_records(void **state)
{
    struct inf_options o = {.resource = &kapi_pods};
    struct inf_handlers h = {
        .on_add = on_add, .on_update = on_update, .on_delete = on_delete, .on_synced = on_synced};
    const struct inf_extractor other = {kpod_extract, NULL};
    struct kstore_stats st;
    struct seen s = {0};
    struct inf_informer *inf;
    struct kapi_client *c;
    const struct kpod *p;

    (void)state;
    server_start();
    c = client_new();
    assert_int_equal(inf_new(c, &o, &h, &s, &inf), 0);
    assert_int_equal(inf_set_extractor(inf, &pod_x), 0);
    assert_int_equal(inf_set_extractor(inf, &pod_x), 0);       /* the same again */
    assert_int_equal(inf_set_extractor(inf, &other), -EEXIST); /* another one */
    assert_int_equal(inf_start(inf), 0);
    run_until(&s.synced, 1);
    assert_int_equal(s.adds, 2);
    p = inf_get_record(inf, "ns", "p1");
    assert_non_null(p);
    assert_string_equal(kpod_text(p, p->node), "node-1");
    assert_string_equal(kpod_text(p, kpod_label(p, "app")), "web-p1");
    assert_null(inf_get_record(inf, "ns", "p9"));
    inf_store_stats(inf, &st);
    assert_true(st.records >= 2 * sizeof(struct kpod));
    /* the watch: update, delete, add */
    run_until(&s.adds, 3);
    assert_int_equal(s.updates, 1);
    assert_int_equal(s.deletes, 1);
    assert_string_equal(s.log, "add p1@node-1;add p2@node-1;old p1@node-1;new p1@node-2;"
                               "delete p2@node-1;add p3@node-3;");
    /* listers */
    s.log[0] = '\0';
    visited_inf = inf;
    inf_foreach(inf, visit, &s);
    assert_int_equal(s.visits, 2);
    assert_int_equal(inf_foreach_record(inf, count_record, &s), 2);
    assert_int_equal(s.records, 2);
    assert_int_equal(inf_set_extractor(inf, &other), -EEXIST);
    inf_free(inf);
    /* started without one: too late to set it; no records */
    s = (struct seen){0};
    srv.watches = 1;
    assert_int_equal(inf_new(c, &o, &h, &s, &inf), 0);
    assert_int_equal(inf_start(inf), 0);
    assert_int_equal(inf_set_extractor(inf, &pod_x), -EBUSY);
    inf_free(inf);
    client_done(c);
}

/* Records for the handlers only: the added and updated objects have one, nothing is kept (the old
 * object of an update, the deleted one and listers have none). */
static void h_add(struct inf_informer *inf, json_t *obj, void *data)
{
    note(data, "add", obj, inf_record(inf, obj));
    ((struct seen *)data)->adds++;
}

static void h_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    assert_null(inf_record(inf, old_obj));
    note(data, "new", new_obj, inf_record(inf, new_obj));
    ((struct seen *)data)->updates++;
}

static void h_delete(struct inf_informer *inf, json_t *obj, void *data)
{
    assert_null(inf_record(inf, obj));
    ((struct seen *)data)->deletes++;
}

static void test_handlers_only(void **state)
{
    const struct inf_extractor x = {kpod_extract, &opts, true};
    struct inf_options o = {.resource = &kapi_pods, .extractor = &x};
    struct inf_handlers h = {
        .on_add = h_add, .on_update = h_update, .on_delete = h_delete, .on_synced = on_synced};
    struct kstore_stats st;
    struct seen s = {0};
    struct inf_informer *inf;
    struct kapi_client *c;

    (void)state;
    server_start();
    c = client_new();
    assert_int_equal(inf_new(c, &o, &h, &s, &inf), 0);
    assert_int_equal(inf_set_extractor(inf, &pod_x), -EEXIST); /* kept records: another one */
    assert_int_equal(inf_start(inf), 0);
    run_until(&s.synced, 1);
    run_until(&s.adds, 3);
    assert_int_equal(s.updates, 1);
    assert_int_equal(s.deletes, 1);
    assert_string_equal(s.log, "add p1@node-1;add p2@node-1;new p1@node-2;add p3@node-3;");
    assert_null(inf_get_record(inf, "ns", "p1"));
    assert_int_equal(inf_foreach_record(inf, count_record, &s), 0);
    inf_store_stats(inf, &st);
    assert_int_equal(st.records, 0);
    inf_free(inf);
    client_done(c);
}

/* inf_options.extractor at creation, and a record-less informer's handlers see NULL. */
/* update_without_old: on_update gets no old object (nothing decoded for it); the new one and its
 * record as before. */
static void n_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    assert_null(old_obj);
    note(data, "new", new_obj, inf_record(inf, new_obj));
    ((struct seen *)data)->updates++;
}

static void test_update_without_old(void **state)
{
    struct inf_options o = {.resource = &kapi_pods, .update_without_old = true};
    struct inf_handlers h = {
        .on_add = h_add, .on_update = n_update, .on_delete = on_delete, .on_synced = on_synced};
    struct seen s = {0};
    struct inf_informer *inf;
    struct kapi_client *c;

    (void)state;
    server_start();
    c = client_new();
    assert_int_equal(inf_new(c, &o, &h, &s, &inf), 0);
    assert_int_equal(inf_set_extractor(inf, &pod_x), 0);
    assert_int_equal(inf_start(inf), 0);
    run_until(&s.synced, 1);
    run_until(&s.adds, 3);
    assert_int_equal(s.updates, 1);
    assert_int_equal(s.deletes, 1); /* the deleted object is still decoded for on_delete */
    assert_string_equal(s.log, "add p1@node-1;add p2@node-1;new p1@node-2;delete p2@node-1;"
                               "add p3@node-3;");
    inf_free(inf);
    client_done(c);
}

/* keep: objects it refuses are not the informer's. Kept: node-1's pods. The list brings p1 and p2
 * (both node-1's); the watch moves p1 to node-2 (it leaves: a delete), deletes p2 and adds p3 on
 * node-3 (never seen). Kept the other way (not node-1's): nothing listed; p1 arrives by its move
 * (an add), p2's delete is nobody's, p3 is added. */
struct kept {
    const char *node;
    bool except; /* keep every node but `node` */
    int adds, updates, deletes, synced;
    char log[256];
};

static bool keep_node(const json_t *obj, void *data)
{
    const struct kept *k = data;
    const char *node = json_string_value(json_object_get(json_object_get(obj, "spec"), "nodeName"));
    bool on = node && strcmp(node, k->node) == 0;

    return k->except ? !on : on;
}

static void k_note(struct kept *k, const char *what, const json_t *obj)
{
    size_t n = strlen(k->log);

    snprintf(k->log + n, sizeof(k->log) - n, "%s %s;", what,
             json_string_value(json_object_get(json_object_get(obj, "metadata"), "name")));
}

static void k_add(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    ((struct kept *)data)->adds++;
    k_note(data, "add", obj);
}

static void k_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)inf;
    (void)old_obj;
    ((struct kept *)data)->updates++;
    k_note(data, "update", new_obj);
}

static void k_delete(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    ((struct kept *)data)->deletes++;
    k_note(data, "delete", obj);
}

static void k_synced(struct inf_informer *inf, void *data)
{
    (void)inf;
    ((struct kept *)data)->synced++;
}

static void keep_case(struct kept *k, const char *want_log, size_t want_count)
{
    struct inf_options o = {.resource = &kapi_pods, .keep = keep_node};
    struct inf_handlers h = {
        .on_add = k_add, .on_update = k_update, .on_delete = k_delete, .on_synced = k_synced};
    struct inf_informer *inf;
    struct kapi_client *c;

    server_start();
    c = client_new();
    assert_int_equal(inf_new(c, &o, &h, k, &inf), 0);
    assert_int_equal(inf_start(inf), 0);
    run_until(&k->synced, 1);
    run_until(&srv.watches, 2); /* the first watch's events applied, the watch reconnected */
    assert_string_equal(k->log, want_log);
    assert_int_equal(inf_count(inf), want_count);
    assert_null(inf_get(inf, "ns", "p2"));
    inf_free(inf);
    client_done(c);
}

static void test_keep(void **state)
{
    struct kept only = {.node = "node-1"}, others = {.node = "node-1", .except = true};

    (void)state;
    keep_case(&only, "add p1;add p2;delete p1;delete p2;", 0);
    assert_int_equal(only.updates, 0);
    keep_case(&others, "add p1;add p3;", 2);
    assert_int_equal(others.deletes, 0);
}

/* inf_hold: the watch stops, the store stays as it is while inf_foreach_slice visits it, and
 * inf_release watches again from where the watch was. */
struct sliced {
    int visits, p1, p3;
};

static void slice_visit(json_t *obj, void *data)
{
    struct sliced *v = data;
    const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));

    v->visits++;
    v->p1 += strcmp(name, "p1") == 0;
    v->p3 += strcmp(name, "p3") == 0;
}

static void test_hold_and_slices(void **state)
{
    struct inf_options o = {.resource = &kapi_pods};
    struct inf_handlers h = {
        .on_add = h_add, .on_update = n_update, .on_delete = on_delete, .on_synced = on_synced};
    struct seen s = {0};
    struct sliced v = {0};
    struct inf_informer *inf, *idle;
    struct kapi_client *c;
    size_t cursor = 0;
    int r, calls = 0;

    (void)state;
    o.update_without_old = true;
    server_start();
    c = client_new();
    assert_int_equal(inf_new(c, &o, &h, &s, &idle), 0);
    assert_int_equal(inf_hold(idle), -EINVAL); /* not synced */
    assert_int_equal(inf_new(c, &o, &h, &s, &inf), 0);
    assert_int_equal(inf_set_extractor(inf, &pod_x), 0);
    assert_int_equal(inf_start(inf), 0);
    run_until(&s.synced, 1);
    run_until(&s.adds, 3);
    run_until(&srv.watches, 2); /* the first watch ended: watching again from 13 */
    assert_int_equal(inf_hold(inf), 0);
    assert_true(inf_held(inf));
    assert_false(inf_synced(inf));
    assert_true(inf_listed(inf));
    assert_int_equal(inf_hold(inf), -EINVAL); /* already */
    /* a zero budget: one object per call, then the end */
    while ((r = inf_foreach_slice(inf, &cursor, 0, slice_visit, &v)) == 0)
        calls++;
    assert_int_equal(r, 1);
    assert_int_equal(calls, 2);
    assert_int_equal(v.visits, 2);
    assert_int_equal(v.p1, 1);
    assert_int_equal(v.p3, 1);
    /* a large budget: all at once */
    cursor = 0;
    v = (struct sliced){0};
    assert_int_equal(inf_foreach_slice(inf, &cursor, UINT64_MAX, slice_visit, &v), 1);
    assert_int_equal(v.visits, 2);
    assert_int_equal(inf_foreach_slice(NULL, &cursor, 0, slice_visit, &v), -EINVAL);
    inf_release(inf);
    inf_release(inf); /* idempotent */
    assert_false(inf_held(inf));
    assert_true(inf_synced(inf));
    run_until(&srv.watches, 3);
    assert_non_null(strstr(srv.last_watch, "resourceVersion=13"));
    assert_int_equal(s.updates, 1); /* nothing was replayed to the handlers by the hold */
    inf_free(idle);
    inf_free(inf);
    client_done(c);
}

static void test_options_and_none(void **state)
{
    struct inf_options o = {.resource = &kapi_pods, .extractor = &pod_x};
    const struct inf_extractor bad = {NULL, &opts};
    struct inf_handlers h = {.on_synced = on_synced};
    struct seen s = {0};
    struct inf_informer *inf;
    struct kapi_client *c;

    (void)state;
    server_start();
    srv.watches = 1; /* no watch events */
    c = client_new();
    o.extractor = &bad;
    assert_int_equal(inf_new(c, &o, &h, &s, &inf), -EINVAL);
    o.extractor = &pod_x;
    assert_int_equal(inf_new(c, &o, &h, &s, &inf), 0);
    assert_int_equal(inf_start(inf), 0);
    run_until(&s.synced, 1);
    assert_int_equal(inf_foreach_record(inf, count_record, &s), 2);
    inf_free(inf);
    o.extractor = NULL;
    s = (struct seen){0};
    assert_int_equal(inf_new(c, &o, &h, &s, &inf), 0);
    assert_int_equal(inf_start(inf), 0);
    run_until(&s.synced, 1);
    assert_null(inf_get_record(inf, "ns", "p1"));
    assert_int_equal(inf_foreach_record(inf, count_record, &s), 0);
    inf_free(inf);
    client_done(c);
}

struct listed {
    int n, pods;
    size_t objects;
};

static void count_informer(const struct inf_informer *inf, void *data)
{
    struct listed *l = data;
    struct kstore_stats st;

    l->n++;
    if (strcmp(inf_resource(inf), "pods") == 0)
        l->pods++;
    inf_store_stats(inf, &st);
    l->objects += st.count;
}

/* Every informer of the thread is listed (for the agent's account of its caches' memory) from its
 * making to its freeing; one whose making failed never is. */
static void test_foreach_informer(void **state)
{
    struct inf_options o = {.resource = &kapi_pods};
    const struct inf_extractor bad = {NULL, NULL};
    struct inf_handlers h = {.on_synced = on_synced};
    struct inf_informer *a, *b, *none = NULL;
    struct listed l = {0};
    struct seen s = {0};
    struct kapi_client *c;

    (void)state;
    server_start();
    srv.watches = 1; /* no watch events */
    c = client_new();
    inf_foreach_informer(count_informer, &l);
    assert_int_equal(l.n, 0);
    assert_int_equal(inf_new(c, &o, &h, &s, &a), 0);
    o.resource = &kapi_events;
    assert_int_equal(inf_new(c, &o, NULL, NULL, &b), 0);
    o.extractor = &bad;
    assert_int_equal(inf_new(c, &o, NULL, NULL, &none), -EINVAL);
    assert_null(none);
    l = (struct listed){0};
    inf_foreach_informer(count_informer, &l);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.pods, 1);
    assert_int_equal(inf_start(a), 0);
    run_until(&s.synced, 1);
    l = (struct listed){0};
    inf_foreach_informer(count_informer, &l);
    assert_int_equal(l.objects, 2); /* the pods listed */
    inf_free(a);                    /* the first made (the list's tail), then the other */
    l = (struct listed){0};
    inf_foreach_informer(count_informer, &l);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.pods, 0);
    inf_free(b);
    l = (struct listed){0};
    inf_foreach_informer(count_informer, &l);
    assert_int_equal(l.n, 0);
    client_done(c);
}

/* Protobuf is asked for only from a server of the schema's own version (kube/kpb.h), once its
 * /version is known; a server that answers JSON anyway (as for custom resources) is read as JSON.
 */
static void test_protobuf_by_version(void **state)
{
    struct inf_options o = {.resource = &kapi_pods};
    struct inf_handlers h = {.on_synced = on_synced};
    char same[16];
    const char *minors[] = {same, "99", "20+x", NULL};
    const int want_pb[] = {1, 0, kpb_schema.minor == 20, 0};

    (void)state;
    snprintf(same, sizeof(same), "%d", kpb_schema.minor);
    for (size_t i = 0; i < 4; i++) {
        struct seen s = {0};
        struct inf_informer *inf;
        struct kapi_client *c;
        int major, minor;

        server_start();
        srv.watches = 1; /* no watch events */
        srv.minor = minors[i];
        c = client_new();
        assert_int_equal(kapi_client_version(c, &major, &minor), -EAGAIN);
        assert_int_equal(inf_new(c, &o, &h, &s, &inf), 0);
        assert_int_equal(inf_start(inf), 0);
        run_until(&s.synced, 1);
        assert_int_equal(inf_count(inf), 2); /* a JSON answer, read as such */
        assert_string_equal(inf_list_encoding(inf), "json");
        assert_int_equal(srv.lists, 1);
        /* without a schema (a build without CLIQO_KPBGEN) nothing is asked */
        assert_int_equal(srv.versions, kpb_schema.nroots ? 1 : 0);
        assert_int_equal(srv.pb_lists, kpb_schema.nroots ? want_pb[i] : 0);
        if (kpb_schema.nroots && minors[i]) {
            assert_int_equal(kapi_client_version(c, &major, &minor), 0);
            assert_int_equal(major, 1);
        }
        inf_free(inf);
        client_done(c);
    }
}

/* Views (inf_view_new): one list and watch, several caches. The source's transform drops each
 * pod's spec in place, the view's (trees kept as they are) each pod's status: each sees the pods
 * whole before its own transform. The view keeps the pods not on node-1 (struct kept, except):
 * the list's p1 and p2 are node-1's (not kept), the watch moves p1 to node-2 (an add for the
 * view, an update for the source), deletes p2 (the source's only) and adds p3. */
static void drop_spec(json_t *obj, void *data)
{
    (void)data;
    json_object_del(obj, "spec");
}

static void drop_status(json_t *obj, void *data)
{
    (void)data;
    json_object_del(obj, "status");
}

static const char *phase_in(const struct inf_informer *inf, const char *name)
{
    static char phase[32];
    json_t *o = inf_get(inf, "ns", name);
    const char *n = json_string_value(json_object_get(json_object_get(o, "status"), "phase"));

    snprintf(phase, sizeof(phase), "%s", o ? (n ? n : "(no status)") : "(none)");
    json_decref(o);
    return phase;
}

static const char *node_in(const struct inf_informer *inf, const char *name)
{
    static char node[32];
    json_t *o = inf_get(inf, "ns", name);
    const char *n = json_string_value(json_object_get(json_object_get(o, "spec"), "nodeName"));

    snprintf(node, sizeof(node), "%s", o ? (n ? n : "(no spec)") : "(none)");
    json_decref(o);
    return node;
}

static void test_view_from_the_start(void **state)
{
    struct inf_options so = {.resource = &kapi_pods, .transform = drop_spec};
    struct inf_options vo = {.resource = &kapi_pods,
                             .keep = keep_node,
                             .transform = drop_status,
                             .store = INF_STORE_TREE};
    struct inf_handlers h = {
        .on_add = k_add, .on_update = k_update, .on_delete = k_delete, .on_synced = k_synced};
    struct kept src = {.node = "none"}, view = {.node = "node-1", .except = true};
    struct inf_informer *s, *v, *vv = NULL, *idle;
    struct kapi_client *c;

    (void)state;
    server_start();
    c = client_new();
    assert_int_equal(inf_new(c, &so, &h, &src, &s), 0);
    assert_int_equal(inf_view_new(s, &vo, &h, &view, &v), 0);
    /* what only the source decides, and views of views, are refused */
    vo.field_selector = "spec.nodeName!=";
    assert_int_equal(inf_view_new(s, &vo, &h, &view, &vv), -EINVAL);
    vo.field_selector = NULL;
    vo.resource = &kapi_events;
    assert_int_equal(inf_view_new(s, &vo, &h, &view, &vv), -EINVAL);
    vo.resource = &kapi_pods;
    assert_int_equal(inf_view_new(v, &vo, &h, &view, &vv), -EINVAL);
    assert_null(vv);
    assert_int_equal(inf_start(v), 0); /* before its source: it joins the first list */
    assert_int_equal(inf_start(s), 0);
    run_until(&src.synced, 1);
    run_until(&view.synced, 1);
    run_until(&srv.watches, 2);
    assert_int_equal(srv.lists, 1); /* one list, one watch for both */
    assert_string_equal(src.log, "add p1;add p2;update p1;delete p2;add p3;");
    assert_string_equal(view.log, "add p1;add p3;");
    assert_int_equal(inf_count(v), 2);
    assert_string_equal(node_in(v, "p1"), "node-2"); /* whole, though the source dropped spec */
    assert_string_equal(node_in(s, "p1"), "(no spec)");
    assert_string_equal(phase_in(v, "p1"), "(no status)");
    assert_string_equal(phase_in(s, "p1"), "Running");
    assert_false(inf_synced(NULL));
    assert_true(inf_synced(v));
    assert_int_equal(inf_hold(v), -EINVAL); /* a view is not held */
    assert_int_equal(inf_lists(v), 1);
    assert_int_equal(inf_view_new(s, &vo, NULL, NULL, &idle), 0); /* never started */
    /* the source goes first: the views stay, unfed, not synced; they cannot start nor be held */
    inf_free(s);
    assert_false(inf_synced(v));
    assert_int_equal(inf_count(v), 2);
    assert_int_equal(inf_hold(v), -EINVAL);
    assert_int_equal(inf_start(idle), -ENODEV);
    inf_free(idle);
    inf_free(v);
    client_done(c);
}

/* A view started while its source lists joins the list after (the source lists twice), and one
 * started while its source watches makes it list again at once, from the watch cache at the
 * version it had reached; the source's own handlers see only what that list changed. */
static void test_view_late(void **state)
{
    struct inf_options so = {.resource = &kapi_pods, .list_from_cache = true};
    struct inf_options vo = {.resource = &kapi_pods};
    struct inf_handlers h = {
        .on_add = k_add, .on_update = k_update, .on_delete = k_delete, .on_synced = k_synced};
    struct kept src = {.node = "none"}, early = {.node = "none"}, late = {.node = "none"};
    struct inf_informer *s, *v1, *v2;
    struct kapi_client *c;

    (void)state;
    server_start();
    c = client_new();
    assert_int_equal(inf_new(c, &so, &h, &src, &s), 0);
    assert_int_equal(inf_start(s), 0); /* its list is on its way */
    assert_int_equal(inf_view_new(s, &vo, &h, &early, &v1), 0);
    assert_int_equal(inf_start(v1), 0);
    run_until(&early.synced, 1);
    assert_int_equal(srv.lists, 2);
    assert_int_equal(src.synced, 1);
    assert_string_equal(early.log, "add p1;add p2;");
    run_until(&srv.watches, 2); /* the watch's events, to both */
    assert_string_equal(early.log, "add p1;add p2;update p1;delete p2;add p3;");
    /* watching from 13: a view now makes the source list again from the cache */
    assert_int_equal(inf_view_new(s, &vo, &h, &late, &v2), 0);
    src.log[0] = '\0';
    assert_int_equal(inf_start(v2), 0);
    run_until(&late.synced, 1);
    assert_int_equal(srv.lists, 3);
    assert_non_null(strstr(srv.last_list, "resourceVersion=13"));
    /* the fake server lists p1@1 and p2@2 again: the source and the early view follow it */
    assert_string_equal(late.log, "add p1;add p2;");
    assert_string_equal(src.log, "update p1;add p2;delete p3;");
    assert_int_equal(inf_count(v1), 2);
    assert_int_equal(inf_count(s), 2);
    assert_int_equal(inf_lists(v1), 2);
    assert_int_equal(inf_lists(v2), 1);
    inf_free(v1); /* the views first, then the source */
    inf_free(v2);
    inf_free(s);
    client_done(c);
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
        cmocka_unit_test(test_records),
        cmocka_unit_test(test_options_and_none),
        cmocka_unit_test(test_handlers_only),
        cmocka_unit_test(test_update_without_old),
        cmocka_unit_test(test_hold_and_slices),
        cmocka_unit_test(test_protobuf_by_version),
        cmocka_unit_test(test_foreach_informer),
        cmocka_unit_test(test_keep),
        cmocka_unit_test(test_view_from_the_start),
        cmocka_unit_test(test_view_late),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
