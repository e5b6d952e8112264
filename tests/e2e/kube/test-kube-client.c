/* End-to-end tests of the Kubernetes client (src/kube/) against a real kube-apiserver of the local
 * environment. The cluster's admin kubeconfig is $E2E_STATE/cluster-1/kubeconfig. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/rfc3339.h"
#include "kube/api.h"
#include "kube/discovery.h"
#include "kube/informer.h"
#include "kube/leader.h"

static uv_loop_t loop;
static struct kc_config *cfg;
static struct kapi_client *cl;
static char ns[64];

static void run_until(bool *flag, unsigned timeout_ms)
{
    uint64_t deadline = uv_now(&loop) + timeout_ms;

    while (!*flag && uv_now(&loop) < deadline) {
        uv_run(&loop, UV_RUN_NOWAIT);
        usleep(1000);
        uv_update_time(&loop);
    }
}

/* Runs the loop for `ms`. */
static void spin(unsigned ms)
{
    bool never = false;

    run_until(&never, ms);
}

static int sync_call(int r, struct kapi_sync *s)
{
    if (r < 0)
        return r;
    return kapi_sync_wait(cl, s);
}

static json_t *cm(const char *name, const char *label)
{
    return json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s}}", "apiVersion", "v1", "kind",
                     "ConfigMap", "metadata", "name", name, "namespace", ns, "labels", "e2e", label,
                     "data", "k", "v0");
}

static int setup(void **state)
{
    char err[512], path[1024];
    const char *st = getenv("E2E_STATE");
    struct kapi_sync s = {0};
    json_t *obj;

    (void)state;
    assert_non_null(st);
    snprintf(path, sizeof(path), "%s/cluster-1/kubeconfig", st);
    assert_int_equal(uv_loop_init(&loop), 0);
    if (kc_load_file(path, NULL, &cfg, err, sizeof(err)) < 0)
        fail_msg("kubeconfig: %s", err);
    assert_int_equal(kapi_client_new(&loop, cfg, NULL, &cl), 0);
    snprintf(ns, sizeof(ns), "e2e-kube-%ld", (long)getpid());
    obj = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata",
                    "name", ns);
    assert_int_equal(sync_call(kapi_create(cl, &kapi_namespaces, NULL, obj, kapi_sync_cb, &s), &s),
                     0);
    json_decref(obj);
    kapi_sync_done(&s);
    return 0;
}

static int teardown(void **state)
{
    struct kapi_sync s = {0};

    (void)state;
    sync_call(kapi_delete(cl, &kapi_namespaces, NULL, ns, NULL, kapi_sync_cb, &s), &s);
    kapi_sync_done(&s);
    kapi_client_close(cl);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    cfg = kc_config_free(cfg);
    return 0;
}

/* create, get, conflict on a stale update and its retry, patches, apply, delete with preconditions
 */
static void test_crud(void **state)
{
    struct kapi_sync s = {0};
    json_t *obj = cm("crud", "crud"), *stale;
    char uid[64];

    (void)state;
    assert_int_equal(sync_call(kapi_create(cl, &kapi_configmaps, ns, obj, kapi_sync_cb, &s), &s),
                     0);
    assert_string_equal(kapi_obj_name(s.body), "crud");
    snprintf(uid, sizeof(uid), "%s", kapi_obj_uid(s.body));
    stale = json_deep_copy(s.body);
    kapi_sync_done(&s);
    memset(&s, 0, sizeof(s));

    /* A second create is AlreadyExists. */
    assert_int_equal(sync_call(kapi_create(cl, &kapi_configmaps, ns, obj, kapi_sync_cb, &s), &s),
                     -EEXIST);
    assert_string_equal(s.reason, "AlreadyExists");
    kapi_sync_done(&s);
    memset(&s, 0, sizeof(s));

    /* Update from the fresh copy succeeds; the same update again is now stale: a conflict. */
    json_object_set_new(json_object_get(stale, "data"), "k", json_string("v1"));
    assert_int_equal(
        sync_call(kapi_update(cl, &kapi_configmaps, ns, "crud", NULL, stale, kapi_sync_cb, &s), &s),
        0);
    kapi_sync_done(&s);
    memset(&s, 0, sizeof(s));
    json_object_set_new(json_object_get(stale, "data"), "k", json_string("v2"));
    assert_int_equal(
        sync_call(kapi_update(cl, &kapi_configmaps, ns, "crud", NULL, stale, kapi_sync_cb, &s), &s),
        -ESTALE);
    assert_int_equal(s.http_status, 409);
    assert_string_equal(s.reason, "Conflict");
    kapi_sync_done(&s);
    /* The caller retries: re-read, re-apply the change, write. */
    memset(&s, 0, sizeof(s));
    assert_int_equal(sync_call(kapi_get(cl, &kapi_configmaps, ns, "crud", kapi_sync_cb, &s), &s),
                     0);
    json_t *fresh = json_incref(s.body);
    kapi_sync_done(&s);
    json_object_set_new(json_object_get(fresh, "data"), "k", json_string("v2"));
    memset(&s, 0, sizeof(s));
    assert_int_equal(
        sync_call(kapi_update(cl, &kapi_configmaps, ns, "crud", NULL, fresh, kapi_sync_cb, &s), &s),
        0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(s.body, "data"), "k")),
                        "v2");
    kapi_sync_done(&s);
    json_decref(fresh);

    /* Merge patch, JSON patch, server-side apply with a field manager. */
    memset(&s, 0, sizeof(s));
    assert_int_equal(sync_call(kapi_patch(cl, &kapi_configmaps, ns, "crud", NULL, KAPI_PATCH_MERGE,
                                          "{\"data\":{\"m\":\"merge\"}}", kapi_sync_cb, &s),
                               &s),
                     0);
    kapi_sync_done(&s);
    memset(&s, 0, sizeof(s));
    assert_int_equal(
        sync_call(kapi_patch(cl, &kapi_configmaps, ns, "crud", NULL, KAPI_PATCH_JSON,
                             "[{\"op\":\"add\",\"path\":\"/data/j\",\"value\":\"json\"}]",
                             kapi_sync_cb, &s),
                  &s),
        0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(s.body, "data"), "m")),
                        "merge");
    kapi_sync_done(&s);
    json_t *applied =
        json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                  "metadata", "name", "applied", "namespace", ns, "data", "a", "1");
    memset(&s, 0, sizeof(s));
    assert_int_equal(sync_call(kapi_apply(cl, &kapi_configmaps, ns, "applied", NULL, applied,
                                          "cliqo-e2e", true, kapi_sync_cb, &s),
                               &s),
                     0);
    json_t *mf =
        json_array_get(json_object_get(json_object_get(s.body, "metadata"), "managedFields"), 0);
    assert_string_equal(json_string_value(json_object_get(mf, "manager")), "cliqo-e2e");
    assert_string_equal(json_string_value(json_object_get(mf, "operation")), "Apply");
    kapi_sync_done(&s);
    json_decref(applied);

    /* Delete with a wrong uid precondition is refused; with the right one it goes. */
    struct kapi_delete_opts bad = {.precondition_uid = "00000000-0000-0000-0000-000000000000",
                                   .grace_period_seconds = -1};
    memset(&s, 0, sizeof(s));
    assert_int_equal(
        sync_call(kapi_delete(cl, &kapi_configmaps, ns, "crud", &bad, kapi_sync_cb, &s), &s),
        -ESTALE);
    kapi_sync_done(&s);
    struct kapi_delete_opts good = {
        .precondition_uid = uid, .propagation = "Foreground", .grace_period_seconds = -1};
    memset(&s, 0, sizeof(s));
    assert_int_equal(
        sync_call(kapi_delete(cl, &kapi_configmaps, ns, "crud", &good, kapi_sync_cb, &s), &s), 0);
    /* Foreground: the answer is the object, now terminating with the foregroundDeletion finalizer.
     */
    json_t *fin = json_object_get(json_object_get(s.body, "metadata"), "finalizers");
    assert_non_null(json_object_get(json_object_get(s.body, "metadata"), "deletionTimestamp"));
    assert_string_equal(json_string_value(json_array_get(fin, 0)), "foregroundDeletion");
    kapi_sync_done(&s);
    /* The garbage collector then removes it. */
    int r = 0;
    for (int i = 0; i < 100 && r != -ENOENT; i++) {
        memset(&s, 0, sizeof(s));
        r = sync_call(kapi_get(cl, &kapi_configmaps, ns, "crud", kapi_sync_cb, &s), &s);
        if (r == -ENOENT)
            assert_string_equal(s.reason, "NotFound");
        kapi_sync_done(&s);
        spin(100);
    }
    assert_int_equal(r, -ENOENT);
    json_decref(stale);
    json_decref(obj);
}

/* Status subresource of a cluster-scoped object. */
static void test_status_subresource(void **state)
{
    struct kapi_sync s = {0};
    char name[80];
    json_t *node;

    (void)state;
    snprintf(name, sizeof(name), "%s-node", ns);
    node = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Node", "metadata", "name",
                     name);
    assert_int_equal(sync_call(kapi_create(cl, &kapi_nodes, NULL, node, kapi_sync_cb, &s), &s), 0);
    kapi_sync_done(&s);
    memset(&s, 0, sizeof(s));
    assert_int_equal(
        sync_call(kapi_patch(cl, &kapi_nodes, NULL, name, "status", KAPI_PATCH_MERGE,
                             "{\"status\":{\"capacity\":{\"cpu\":\"3\"}}}", kapi_sync_cb, &s),
                  &s),
        0);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(s.body, "status"), "capacity"), "cpu")),
                        "3");
    kapi_sync_done(&s);
    memset(&s, 0, sizeof(s));
    assert_int_equal(
        sync_call(kapi_delete(cl, &kapi_nodes, NULL, name, NULL, kapi_sync_cb, &s), &s), 0);
    kapi_sync_done(&s);
    json_decref(node);
}

/* Paging: more objects than one page, walked with limit/continue. */
static void test_paging(void **state)
{
    struct kapi_sync s;
    char name[32], *cont = NULL;
    int total = 0, pages = 0;

    (void)state;
    for (int i = 0; i < 120; i++) {
        json_t *o;
        snprintf(name, sizeof(name), "page-%03d", i);
        o = cm(name, "paging");
        memset(&s, 0, sizeof(s));
        assert_int_equal(sync_call(kapi_create(cl, &kapi_configmaps, ns, o, kapi_sync_cb, &s), &s),
                         0);
        kapi_sync_done(&s);
        json_decref(o);
    }
    do {
        struct kapi_list_opts lo = {
            .label_selector = "e2e=paging", .limit = 50, .continue_token = cont};
        memset(&s, 0, sizeof(s));
        assert_int_equal(sync_call(kapi_list(cl, &kapi_configmaps, ns, &lo, kapi_sync_cb, &s), &s),
                         0);
        size_t n = json_array_size(json_object_get(s.body, "items"));
        assert_true(n <= 50);
        total += (int)n;
        pages++;
        const char *c =
            json_string_value(json_object_get(json_object_get(s.body, "metadata"), "continue"));
        free(cont);
        cont = c && *c ? strdup(c) : NULL;
        kapi_sync_done(&s);
    } while (cont);
    assert_int_equal(total, 120);
    assert_int_equal(pages, 3);
}

struct counts {
    int adds, updates, deletes;
    bool synced;
};

static void on_add(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    (void)obj;
    ((struct counts *)data)->adds++;
}

static void on_update(struct inf_informer *inf, json_t *o, json_t *n, void *data)
{
    (void)inf;
    (void)o;
    (void)n;
    ((struct counts *)data)->updates++;
}

static void on_delete(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    (void)obj;
    ((struct counts *)data)->deletes++;
}

static void on_synced(struct inf_informer *inf, void *data)
{
    (void)inf;
    ((struct counts *)data)->synced = true;
}

static int label_index(const json_t *obj, const char **values, size_t max)
{
    const char *v = json_string_value(
        json_object_get(json_object_get(json_object_get(obj, "metadata"), "labels"), "e2e"));
    if (!v || max < 1)
        return 0;
    values[0] = v;
    return 1;
}

static void count_visit(json_t *obj, void *data)
{
    (void)obj;
    (*(int *)data)++;
}

/* Informer: paged initial list, then watch events reach the handlers and the indexed store. */
static void test_informer(void **state)
{
    struct counts k = {0};
    struct inf_handlers h = {on_add, on_update, on_delete, on_synced, NULL};
    struct inf_options o = {.resource = &kapi_configmaps, .namespace_ = ns, .page_size = 7};
    struct inf_informer *inf;
    struct kapi_sync s;
    int n = 0;

    (void)state;
    assert_int_equal(inf_new(cl, &o, &h, &k, &inf), 0);
    assert_int_equal(inf_add_index(inf, "e2e", label_index), 0);
    assert_int_equal(inf_start(inf), 0);
    run_until(&k.synced, 20000);
    assert_true(k.synced);
    /* 120 paging objects, "applied", and the namespace's kube-root-ca.crt (if created yet). */
    assert_true(inf_count(inf) >= 121);
    assert_int_equal(inf_index_foreach(inf, "e2e", "paging", count_visit, &n), 120);
    json_t *cached = inf_get(inf, ns, "page-000");
    assert_non_null(cached);
    assert_null(json_object_get(json_object_get(cached, "metadata"), "managedFields"));
    json_decref(cached);

    int adds0 = k.adds;
    json_t *o1 = cm("watched", "watch");
    memset(&s, 0, sizeof(s));
    assert_int_equal(sync_call(kapi_create(cl, &kapi_configmaps, ns, o1, kapi_sync_cb, &s), &s), 0);
    kapi_sync_done(&s);
    memset(&s, 0, sizeof(s));
    assert_int_equal(
        sync_call(kapi_patch(cl, &kapi_configmaps, ns, "watched", NULL, KAPI_PATCH_MERGE,
                             "{\"data\":{\"k\":\"changed\"}}", kapi_sync_cb, &s),
                  &s),
        0);
    kapi_sync_done(&s);
    memset(&s, 0, sizeof(s));
    assert_int_equal(
        sync_call(kapi_delete(cl, &kapi_configmaps, ns, "watched", NULL, kapi_sync_cb, &s), &s), 0);
    kapi_sync_done(&s);
    bool seen_delete = false;
    for (int i = 0; i < 200 && !seen_delete; i++) {
        run_until(&seen_delete, 50);
        seen_delete = k.deletes >= 1;
    }
    assert_int_equal(k.adds, adds0 + 1);
    assert_true(k.updates >= 1);
    assert_int_equal(k.deletes, 1);
    assert_null(inf_get(inf, ns, "watched"));
    n = 0;
    assert_int_equal(inf_index_foreach(inf, "e2e", "watch", count_visit, &n), 0);
    inf_free(inf);
    json_decref(o1);
}

/* A wrong token and a wrong CA give clear errors. */
static void test_bad_credentials(void **state)
{
    struct kc_config bad = *cfg;
    struct kapi_client *c2;
    struct kapi_sync s = {0};

    (void)state;
    bad.cert_pem = NULL;
    bad.cert_pem_len = 0;
    bad.key_pem = NULL;
    bad.key_pem_len = 0;
    bad.token = "not-a-valid-token";
    assert_int_equal(kapi_client_new(&loop, &bad, NULL, &c2), 0);
    assert_int_equal(kapi_get(c2, &kapi_namespaces, NULL, "default", kapi_sync_cb, &s), 0);
    assert_int_equal(kapi_sync_wait(c2, &s), -EACCES);
    assert_int_equal(s.http_status, 401);
    assert_non_null(strstr(s.message, "Unauthorized"));
    kapi_sync_done(&s);
    kapi_client_close(c2);

    /* A CA that did not sign the server's certificate: TLS verification fails. */
    static const char other_ca[] =
        "-----BEGIN CERTIFICATE-----\n"
        "MIIBeTCCAR+gAwIBAgIUPIbO6Hd6b5EfYxxeGSvVD9u2NbkwCgYIKoZIzj0EAwIw\n"
        "-----END CERTIFICATE-----\n";
    bad = *cfg;
    bad.ca_pem = (unsigned char *)other_ca;
    bad.ca_pem_len = sizeof(other_ca) - 1;
    memset(&s, 0, sizeof(s));
    assert_int_equal(kapi_client_new(&loop, &bad, NULL, &c2), 0);
    assert_int_equal(kapi_get(c2, &kapi_namespaces, NULL, "default", kapi_sync_cb, &s), 0);
    assert_int_equal(kapi_sync_wait(c2, &s), -EKEYREJECTED);
    assert_int_equal(s.http_status, 0);
    kapi_sync_done(&s);
    kapi_client_close(c2);
}

struct disc {
    bool done;
    int err;
    char version[32], kind[64];
    bool namespaced;
};

static void disc_cb(struct kapi_client *c, int err, const char *version, const char *kind,
                    bool namespaced, void *data)
{
    struct disc *d = data;

    (void)c;
    d->done = true;
    d->err = err;
    snprintf(d->version, sizeof(d->version), "%s", version ? version : "");
    snprintf(d->kind, sizeof(d->kind), "%s", kind ? kind : "");
    d->namespaced = namespaced;
}

/* Discovery picks the version the server offers (EndpointSlice is v1beta1 on 1.20). */
static void test_discovery(void **state)
{
    static const char *const prefer[] = {"v1", "v1beta1", NULL};
    struct disc d = {0};

    (void)state;
    assert_int_equal(kdisc_resolve(cl, "discovery.k8s.io", "endpointslices", prefer, disc_cb, &d),
                     0);
    run_until(&d.done, 10000);
    assert_int_equal(d.err, 0);
    assert_string_equal(d.version, "v1beta1");
    assert_string_equal(d.kind, "EndpointSlice");
    assert_true(d.namespaced);
    memset(&d, 0, sizeof(d));
    assert_int_equal(kdisc_resolve(cl, "", "nodes", NULL, disc_cb, &d), 0);
    run_until(&d.done, 10000);
    assert_int_equal(d.err, 0);
    assert_string_equal(d.version, "v1");
    assert_false(d.namespaced);
    memset(&d, 0, sizeof(d));
    assert_int_equal(kdisc_resolve(cl, "discovery.k8s.io", "nosuchthings", prefer, disc_cb, &d), 0);
    run_until(&d.done, 10000);
    assert_int_equal(d.err, -ENOENT);
    memset(&d, 0, sizeof(d));
    assert_int_equal(kdisc_resolve(cl, "nosuch.example.com", "things", prefer, disc_cb, &d), 0);
    run_until(&d.done, 10000);
    assert_int_equal(d.err, -ENOENT);
}

struct lead {
    int started, stopped;
};

static void lead_start(struct le_elector *le, void *data)
{
    (void)le;
    ((struct lead *)data)->started++;
}

static void lead_stop(struct le_elector *le, void *data)
{
    (void)le;
    ((struct lead *)data)->stopped++;
}

static void released(void *data)
{
    *(bool *)data = true;
}

/* Two candidates: exactly one leads; when it releases, the other takes over. */
static void test_leader_election(void **state)
{
    struct lead a = {0}, b = {0};
    struct le_callbacks cb = {lead_start, lead_stop, NULL};
    struct le_options oa = {.namespace_ = ns,
                            .name = "e2e-lock",
                            .identity = "candidate-a",
                            .lease_duration_ms = 3000,
                            .renew_deadline_ms = 2000,
                            .retry_period_ms = 300};
    struct le_options ob = oa;
    struct le_elector *la, *lb;
    bool one = false, done = false;

    (void)state;
    ob.identity = "candidate-b";
    assert_int_equal(le_start(cl, &oa, &cb, &a, &la), 0);
    assert_int_equal(le_start(cl, &ob, &cb, &b, &lb), 0);
    for (int i = 0; i < 100 && !one; i++) {
        run_until(&one, 50);
        one = le_is_leader(la) || le_is_leader(lb);
    }
    assert_true(one);
    /* Let both run several retry periods: never two leaders. */
    for (int i = 0; i < 40; i++) {
        spin(50);
        assert_false(le_is_leader(la) && le_is_leader(lb));
    }
    struct le_elector *leader = le_is_leader(la) ? la : lb, *other = leader == la ? lb : la;
    struct lead *ol = other == la ? &a : &b;
    le_release(leader, released, &done);
    run_until(&done, 5000);
    assert_true(done);
    bool took = false;
    for (int i = 0; i < 100 && !took; i++) {
        run_until(&took, 50);
        took = le_is_leader(other);
    }
    /* Released, not expired: the other one takes over within a few retry periods. */
    assert_true(took);
    assert_int_equal(ol->started, 1);
    done = false;
    le_release(other, released, &done);
    run_until(&done, 5000);
    assert_true(done);
}

struct verbs {
    int get, put, other;
};

static void count_verbs(struct kapi_client *c, const struct kapi_observation *o, void *data)
{
    struct verbs *v = data;

    (void)c;
    if (strcmp(o->method, "GET") == 0)
        v->get++;
    else if (strcmp(o->method, "PUT") == 0)
        v->put++;
    else
        v->other++;
}

/* Writes the Lease `name` as another party would, with `holder` as holderIdentity (NULL: as it is)
 * and an annotation; retried when a renewal of the elector's comes first (a conflict). */
static void write_lease_as_other(const char *name, const char *holder)
{
    for (int i = 0; i < 20; i++) {
        struct kapi_sync g = {0}, u = {0};
        json_t *obj, *meta, *ann;
        int r;

        assert_int_equal(sync_call(kapi_get(cl, &kapi_leases, ns, name, kapi_sync_cb, &g), &g), 0);
        obj = json_deep_copy(g.body);
        kapi_sync_done(&g);
        assert_non_null(obj);
        meta = json_object_get(obj, "metadata");
        ann = json_object_get(meta, "annotations");
        if (!ann) {
            ann = json_object();
            json_object_set_new(meta, "annotations", ann);
        }
        json_object_set_new(ann, "e2e.cliqo.io/written-by", json_sprintf("try-%d", i));
        if (holder) {
            char now[40];
            json_t *spec = json_object_get(obj, "spec");

            rfc3339_now(6, now, sizeof(now));
            json_object_set_new(spec, "holderIdentity", json_string(holder));
            json_object_set_new(spec, "renewTime", json_string(now));
            json_object_set_new(spec, "acquireTime", json_string(now));
        }
        r = sync_call(kapi_update(cl, &kapi_leases, ns, name, NULL, obj, kapi_sync_cb, &u), &u);
        json_decref(obj);
        kapi_sync_done(&u);
        if (r == 0)
            return;
        assert_int_equal(r, -ESTALE); /* the elector renewed in between: read it again */
    }
    fail_msg("the Lease could not be written for 20 tries");
}

/* The holder renews with one PUT a retry period and no GET. A write by anyone else makes its next
 * renewal conflict: it reads the Lease and renews from it, still leading. A Lease another holder
 * took makes it step down, and take the Lease again once that holder has not renewed it for the
 * lease duration. */
static void test_leader_renewals(void **state)
{
    struct verbs v = {0};
    struct kapi_client_options co = {.observe = count_verbs, .observe_data = &v};
    struct kapi_client *c;
    struct lead a = {0};
    struct le_callbacks cb = {lead_start, lead_stop, NULL};
    struct le_options o = {.namespace_ = ns,
                           .name = "e2e-renewals",
                           .identity = "candidate-r",
                           .lease_duration_ms = 3000,
                           .renew_deadline_ms = 2000,
                           .retry_period_ms = 200};
    struct le_elector *le;
    bool done = false;

    (void)state;
    assert_int_equal(kapi_client_new(&loop, cfg, &co, &c), 0);
    assert_int_equal(le_start(c, &o, &cb, &a, &le), 0);
    for (int i = 0; i < 100 && !le_is_leader(le); i++)
        spin(50);
    assert_true(le_is_leader(le));
    spin(300); /* past the write that made it leader */
    memset(&v, 0, sizeof(v));
    spin(2000);
    /* About ten retry periods: a write each, not one read. */
    if (v.put < 5 || v.get != 0 || v.other != 0)
        fail_msg("renewals in 2 s: %d PUT, %d GET, %d other (want >= 5 PUT and nothing else)",
                 v.put, v.get, v.other);

    write_lease_as_other("e2e-renewals", NULL);
    memset(&v, 0, sizeof(v));
    spin(1000);
    assert_true(le_is_leader(le));
    assert_int_equal(a.stopped, 0);
    if (v.get < 1 || v.put < 2)
        fail_msg("after another's write: %d GET, %d PUT (want the conflict, a read, renewals)",
                 v.get, v.put);

    write_lease_as_other("e2e-renewals", "intruder");
    for (int i = 0; i < 40 && a.stopped == 0; i++)
        spin(50);
    assert_int_equal(a.stopped, 1);
    assert_false(le_is_leader(le));
    /* The intruder never renews: after the lease duration the candidate takes the Lease again. */
    for (int i = 0; i < 120 && !le_is_leader(le); i++)
        spin(50);
    assert_true(le_is_leader(le));
    assert_int_equal(a.started, 2);

    le_release(le, released, &done);
    run_until(&done, 5000);
    assert_true(done);
    kapi_client_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crud),
        cmocka_unit_test(test_status_subresource),
        cmocka_unit_test(test_paging),
        cmocka_unit_test(test_informer),
        cmocka_unit_test(test_bad_credentials),
        cmocka_unit_test(test_discovery),
        cmocka_unit_test(test_leader_election),
        cmocka_unit_test(test_leader_renewals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
