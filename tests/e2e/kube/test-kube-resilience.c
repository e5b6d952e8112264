/* End-to-end tests of the Kubernetes client's failure handling against a real kube-apiserver:
 * an apiserver restart under a watch and an informer, a deterministic 410 relist (objects changed
 * in etcd behind the apiserver's back), watch resumption across server-side stream ends, the limits
 * on what is read from the network, and bearer-token rotation through a token file.
 *
 * The group has its own cluster (the tests stop and start its apiserver). Environment: E2E_STATE
 * (state directory), CLIQOCTL, CLIQO_DEV_BASE_PORT (etcd listens on base + 1). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/strutil.h"
#include "kube/api.h"
#include "kube/informer.h"
#include "kube/watch.h"

#define MAX_NAMES 64

static uv_loop_t loop;
static struct kc_config *cfg;
static struct kapi_client *cl;
static char ns[64];
static char kubeconfig[1024];
static char etcd_url[64];

/* ---- helpers ------------------------------------------------------------------------------- */

static void run_for(unsigned ms)
{
    uint64_t deadline;

    uv_update_time(&loop);
    deadline = uv_now(&loop) + ms;
    while (uv_now(&loop) < deadline) {
        uv_run(&loop, UV_RUN_NOWAIT);
        usleep(1000);
        uv_update_time(&loop);
    }
}

static bool run_until_fn(bool (*done)(void *), void *arg, unsigned timeout_ms)
{
    uint64_t deadline;

    uv_update_time(&loop);
    deadline = uv_now(&loop) + timeout_ms;
    while (!done(arg) && uv_now(&loop) < deadline) {
        uv_run(&loop, UV_RUN_NOWAIT);
        usleep(1000);
        uv_update_time(&loop);
    }
    return done(arg);
}

static int sync_call(int r, struct kapi_sync *s)
{
    if (r < 0)
        return r;
    return kapi_sync_wait(cl, s);
}

/* Runs a shell command (kubectl, etcdctl, cliqoctl) while the loop is NOT running: for the
 * client under test the world simply changes while it is not looking. */
static void sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    int r;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    r = system(cmd);
    if (r != 0)
        fail_msg("command failed (%d): %s", r, cmd);
}

static void create_cm(const char *name, const char *label, const char *value)
{
    struct kapi_sync s = {0};
    json_t *o = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s}}", "apiVersion", "v1", "kind",
                          "ConfigMap", "metadata", "name", name, "namespace", ns, "labels", "e2e",
                          label, "data", "k", value);

    assert_int_equal(sync_call(kapi_create(cl, &kapi_configmaps, ns, o, kapi_sync_cb, &s), &s), 0);
    kapi_sync_done(&s);
    json_decref(o);
}

static void patch_cm(const char *name, const char *value)
{
    struct kapi_sync s = {0};
    char body[256];

    snprintf(body, sizeof(body), "{\"data\":{\"k\":\"%s\"}}", value);
    assert_int_equal(sync_call(kapi_patch(cl, &kapi_configmaps, ns, name, NULL, KAPI_PATCH_MERGE,
                                          body, kapi_sync_cb, &s),
                               &s),
                     0);
    kapi_sync_done(&s);
}

static void delete_cm(const char *name)
{
    struct kapi_sync s = {0};

    assert_int_equal(
        sync_call(kapi_delete(cl, &kapi_configmaps, ns, name, NULL, kapi_sync_cb, &s), &s), 0);
    kapi_sync_done(&s);
}

static void apiserver(const char *verb)
{
    sh("\"$CLIQOCTL\" dev %s --cluster cluster-1 --component kube-apiserver >/dev/null 2>&1", verb);
}

/* Event bookkeeping per object name: how many adds, updates and deletes a consumer saw. */
struct tally {
    char names[MAX_NAMES][64];
    int adds[MAX_NAMES], updates[MAX_NAMES], deletes[MAX_NAMES];
    int n, events;
    uint64_t last_rv;
    int rv_regressions; /* an event whose resourceVersion is not above the previous one */
};

static int slot(struct tally *t, const char *name)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->names[i], name) == 0)
            return i;
    assert_true(t->n < MAX_NAMES);
    snprintf(t->names[t->n], sizeof(t->names[0]), "%s", name);
    return t->n++;
}

static void count(struct tally *t, const json_t *obj, int kind, bool check_rv)
{
    int i = slot(t, kapi_obj_name(obj));
    uint64_t rv = 0;

    if (kind == 0)
        t->adds[i]++;
    else if (kind == 1)
        t->updates[i]++;
    else
        t->deletes[i]++;
    t->events++;
    if (check_rv && parse_u64(kapi_obj_rv(obj), UINT64_MAX, &rv) == 0) {
        if (rv <= t->last_rv)
            t->rv_regressions++;
        t->last_rv = rv;
    }
}

static void expect(struct tally *t, const char *name, int adds, int updates, int deletes)
{
    int i = slot(t, name);

    if (t->adds[i] != adds || t->updates[i] != updates || t->deletes[i] != deletes)
        fail_msg("%s: saw %d adds, %d updates, %d deletes; expected %d, %d, %d", name, t->adds[i],
                 t->updates[i], t->deletes[i], adds, updates, deletes);
}

struct target {
    struct tally *t;
    int events;
};

static bool reached(void *arg)
{
    struct target *g = arg;

    return g->t->events >= g->events;
}

static void wait_events(struct tally *t, int events, unsigned timeout_ms)
{
    struct target g = {t, events};

    if (!run_until_fn(reached, &g, timeout_ms))
        fail_msg("saw %d events, expected %d", t->events, events);
}

/* ---- fixture --------------------------------------------------------------------------------- */

static int setup(void **state)
{
    char err[512];
    const char *st = getenv("E2E_STATE"), *base = getenv("CLIQO_DEV_BASE_PORT");
    struct kapi_sync s = {0};
    uint64_t port;
    json_t *obj;

    (void)state;
    assert_non_null(st);
    assert_non_null(getenv("CLIQOCTL"));
    assert_non_null(base);
    assert_int_equal(parse_u64(base, 65535, &port), 0);
    snprintf(etcd_url, sizeof(etcd_url), "http://127.0.0.1:%llu", (unsigned long long)port + 1);
    snprintf(kubeconfig, sizeof(kubeconfig), "%s/cluster-1/kubeconfig", st);
    assert_int_equal(uv_loop_init(&loop), 0);
    if (kc_load_file(kubeconfig, NULL, &cfg, err, sizeof(err)) < 0)
        fail_msg("kubeconfig: %s", err);
    assert_int_equal(kapi_client_new(&loop, cfg, NULL, &cl), 0);
    snprintf(ns, sizeof(ns), "e2e-res-%ld", (long)getpid());
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

/* ---- a watch resumes across stream ends --------------------------------------------------------
 */

static void on_watch_event(struct kw_watch *w, enum kw_event_type type, json_t *obj, void *data)
{
    (void)w;
    if (type != KW_BOOKMARK)
        count(data, obj, type == KW_ADDED ? 0 : type == KW_MODIFIED ? 1 : 2, true);
}

static void on_watch_end(struct kw_watch *w, int err, const char *message, void *data)
{
    (void)w;
    (void)data;
    fail_msg("watch ended: %d %s", err, message);
}

/* The server ends the stream every second; changes made while the client is between streams are
 * delivered once, in order, after it resumes from the last resourceVersion. */
static void test_watch_resumes(void **state)
{
    static struct tally t;
    struct kw_watch *w = NULL;
    struct kw_options o = {.namespace_ = ns,
                           .label_selector = "e2e=resume",
                           .server_timeout_secs = 1,
                           .backoff_base_ms = 50,
                           .backoff_max_ms = 200};
    char name[32];

    (void)state;
    assert_int_equal(kw_start(cl, &kapi_configmaps, &o, on_watch_event, on_watch_end, &t, &w), 0);
    run_for(300);
    for (int round = 0; round < 4; round++) {
        snprintf(name, sizeof(name), "resume-%d", round);
        create_cm(name, "resume", "a");
        patch_cm(name, "b");
        /* Let at least one server-side end and reconnect happen between rounds. */
        run_for(1300);
    }
    wait_events(&t, 8, 10000);
    run_for(1500); /* nothing more must arrive */
    for (int round = 0; round < 4; round++) {
        snprintf(name, sizeof(name), "resume-%d", round);
        expect(&t, name, 1, 1, 0);
    }
    assert_int_equal(t.events, 8);
    assert_int_equal(t.rv_regressions, 0);
    assert_true(kw_reconnects(w) >= 3);
    kw_stop(w);
}

/* A watch from a resourceVersion older than the apiserver's watch window is told 410 Gone: the
 * watch ends with -EIDRM so that its owner relists. Runs after the restart test: a restarted
 * apiserver's window starts at etcd's revision of the time, so version 1 is surely too old. */
static bool end_seen(void *arg)
{
    return *(int *)arg != 0;
}

static void on_end_record(struct kw_watch *w, int err, const char *message, void *data)
{
    (void)w;
    (void)message;
    *(int *)data = err;
}

static void on_event_ignore(struct kw_watch *w, enum kw_event_type type, json_t *obj, void *data)
{
    (void)w;
    (void)type;
    (void)obj;
    (void)data;
}

static void test_watch_too_old_is_gone(void **state)
{
    struct kw_watch *w = NULL;
    struct kw_options o = {.namespace_ = ns, .resource_version = "1"};
    static int err; /* static: a failed assertion leaves the watch running */

    (void)state;
    assert_int_equal(kw_start(cl, &kapi_configmaps, &o, on_event_ignore, on_end_record, &err, &w),
                     0);
    assert_true(run_until_fn(end_seen, &err, 20000));
    assert_int_equal(err, -EIDRM);
    kw_stop(w);
}

/* ---- an informer across an apiserver restart, with a deterministic 410 ------------------------
 */

struct inf_rec {
    struct tally t;
    bool synced;
    int errors;
};

static void inf_add(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    count(&((struct inf_rec *)data)->t, obj, 0, false);
}

static void inf_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)inf;
    (void)old_obj;
    count(&((struct inf_rec *)data)->t, new_obj, 1, false);
}

static void inf_delete(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    count(&((struct inf_rec *)data)->t, obj, 2, false);
}

static void inf_synced_cb(struct inf_informer *inf, void *data)
{
    (void)inf;
    ((struct inf_rec *)data)->synced = true;
}

static void inf_error(struct inf_informer *inf, int err, const char *message, void *data)
{
    (void)inf;
    (void)err;
    (void)message;
    ((struct inf_rec *)data)->errors++;
}

static bool is_synced(void *arg)
{
    return ((struct inf_rec *)arg)->synced;
}

/* Checks the cache against the apiserver, object by object, with kubectl as the independent
 * reader: same names, same resourceVersions. */
static void expect_cache_matches_server(struct inf_informer *inf, const char *label)
{
    char cmd[2048], line[256];
    FILE *p;
    size_t n = 0;

    snprintf(
        cmd, sizeof(cmd),
        "kubectl --kubeconfig '%s' -n %s get cm -l e2e=%s -o "
        "jsonpath='{range .items[*]}{.metadata.name} {.metadata.resourceVersion}{\"\\n\"}{end}'",
        kubeconfig, ns, label);
    p = popen(cmd, "r");
    assert_non_null(p);
    while (fgets(line, sizeof(line), p)) {
        char *sp = strchr(line, ' ');
        json_t *cached;

        if (!sp)
            continue;
        *sp = '\0';
        sp[1 + strcspn(sp + 1, "\n")] = '\0';
        cached = inf_get(inf, ns, line);
        if (!cached)
            fail_msg("%s is on the server but not in the cache", line);
        if (strcmp(kapi_obj_rv(cached), sp + 1) != 0)
            fail_msg("%s: cache has version %s, server %s", line, kapi_obj_rv(cached), sp + 1);
        json_decref(cached);
        n++;
    }
    assert_int_equal(pclose(p), 0);
    assert_int_equal(inf_count(inf), n);
}

/* Changes made in etcd while the apiserver is down (one object deleted, one written), changes
 * made through the restarted apiserver before the informer is back, and changes made afterwards:
 * every one is seen exactly once, nothing unchanged is reported, and the cache ends equal to the
 * server. Writing to etcd moves its revision past the informer's resourceVersion, so the
 * restarted apiserver must answer 410 and the informer must relist: that is the deterministic
 * 410 of the issue, checked through inf_lists(). */
static void test_informer_across_restart_and_410(void **state)
{
    static struct inf_rec r;
    struct inf_informer *inf = NULL;
    struct inf_options o = {
        .resource = &kapi_configmaps, .namespace_ = ns, .label_selector = "e2e=restart"};
    struct inf_handlers h = {inf_add, inf_update, inf_delete, inf_synced_cb, inf_error};
    char name[32];
    struct timespec ts;
    char created[32];

    (void)state;
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof(name), "restart-%d", i);
        create_cm(name, "restart", "a");
    }
    assert_int_equal(inf_new(cl, &o, &h, &r, &inf), 0);
    assert_int_equal(inf_start(inf), 0);
    assert_true(run_until_fn(is_synced, &r, 20000));
    wait_events(&r.t, 10, 5000);
    patch_cm("restart-0", "b"); /* watched normally */
    wait_events(&r.t, 11, 10000);
    assert_int_equal(inf_lists(inf), 1);

    /* Down: the informer keeps its cache and retries. */
    apiserver("stop");
    run_for(1500);
    /* Behind the apiserver's back: delete restart-1, write restart-10 (JSON is a storage encoding
     * the apiserver reads). */
    clock_gettime(CLOCK_REALTIME, &ts);
    strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%SZ", gmtime(&ts.tv_sec));
    sh("ETCDCTL_API=3 etcdctl --endpoints=%s del /registry/configmaps/%s/restart-1 >/dev/null",
       etcd_url, ns);
    sh("ETCDCTL_API=3 etcdctl --endpoints=%s put /registry/configmaps/%s/restart-10 "
       "'{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"restart-10\","
       "\"namespace\":\"%s\",\"uid\":\"6d1b7a52-0000-4000-8000-%012ld\",\"creationTimestamp\":"
       "\"%s\",\"labels\":{\"e2e\":\"restart\"}},\"data\":{\"k\":\"etcd\"}}' >/dev/null",
       etcd_url, ns, ns, (long)getpid(), created);
    apiserver("start");
    /* Up again, and the informer not yet back (the loop is not running): more changes. */
    sh("kubectl --kubeconfig '%s' -n %s create cm restart-11 --from-literal=k=a >/dev/null && "
       "kubectl --kubeconfig '%s' -n %s label cm restart-11 e2e=restart >/dev/null && "
       "kubectl --kubeconfig '%s' -n %s patch cm restart-2 -p '{\"data\":{\"k\":\"c\"}}' "
       ">/dev/null",
       kubeconfig, ns, kubeconfig, ns, kubeconfig, ns);
    /* 11 so far + delete restart-1 + add restart-10 + add restart-11 + update restart-2 */
    wait_events(&r.t, 15, 60000);
    /* And after it is back, through its new watch. */
    delete_cm("restart-3");
    patch_cm("restart-4", "d");
    wait_events(&r.t, 17, 20000);
    run_for(1500); /* nothing more must arrive */

    assert_int_equal(r.t.events, 17);
    expect(&r.t, "restart-0", 1, 1, 0);
    expect(&r.t, "restart-1", 1, 0, 1);
    expect(&r.t, "restart-2", 1, 1, 0);
    expect(&r.t, "restart-3", 1, 0, 1);
    expect(&r.t, "restart-4", 1, 1, 0);
    for (int i = 5; i < 10; i++) {
        snprintf(name, sizeof(name), "restart-%d", i);
        expect(&r.t, name, 1, 0, 0);
    }
    expect(&r.t, "restart-10", 1, 0, 0);
    expect(&r.t, "restart-11", 1, 0, 0);
    assert_true(inf_lists(inf) >= 2); /* the 410 relist */
    expect_cache_matches_server(inf, "restart");
    inf_free(inf);
}

/* ---- limits -----------------------------------------------------------------------------------
 */

static void test_limits(void **state)
{
    struct kapi_client_options co = {.max_body = 4096};
    struct kapi_client *small = NULL;
    struct kapi_sync s = {0};
    static char big[12000];
    json_t *o;

    (void)state;
    memset(big, 'x', sizeof(big) - 1);
    o = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                  "metadata", "name", "big", "namespace", ns, "labels", "e2e", "limits", "data",
                  "k", big);

    /* A response body over the client's limit fails cleanly with -E2BIG and says so. */
    assert_int_equal(kapi_client_new(&loop, cfg, &co, &small), 0);
    assert_int_equal(sync_call(kapi_create(cl, &kapi_configmaps, ns, o, kapi_sync_cb, &s), &s), 0);
    kapi_sync_done(&s);
    memset(&s, 0, sizeof(s));
    assert_int_equal(kapi_get(small, &kapi_configmaps, ns, "big", kapi_sync_cb, &s), 0);
    assert_int_equal(kapi_sync_wait(small, &s), -E2BIG);
    assert_non_null(strstr(s.message, "larger than the limit of 4096 bytes"));
    kapi_sync_done(&s);
    memset(&s, 0, sizeof(s));
    /* The same client still works for small objects. */
    create_cm("small", "limits", "v");
    assert_int_equal(kapi_get(small, &kapi_configmaps, ns, "small", kapi_sync_cb, &s), 0);
    assert_int_equal(kapi_sync_wait(small, &s), 0);
    kapi_sync_done(&s);
    kapi_client_close(small);

    /* A watch event line over the watch's limit ends the watch with -E2BIG. */
    {
        struct kw_watch *w = NULL;
        struct kw_options wo = {
            .namespace_ = ns, .label_selector = "e2e=limits-watch", .max_line = 2048};
        int err = 0;

        assert_int_equal(
            kw_start(cl, &kapi_configmaps, &wo, on_event_ignore, on_end_record, &err, &w), 0);
        run_for(300);
        json_object_set_new(json_object_get(o, "metadata"), "name", json_string("big-watched"));
        json_object_set_new(json_object_get(json_object_get(o, "metadata"), "labels"), "e2e",
                            json_string("limits-watch"));
        memset(&s, 0, sizeof(s));
        assert_int_equal(sync_call(kapi_create(cl, &kapi_configmaps, ns, o, kapi_sync_cb, &s), &s),
                         0);
        kapi_sync_done(&s);
        assert_true(run_until_fn(end_seen, &err, 10000));
        assert_int_equal(err, -E2BIG);
        kw_stop(w);
    }

    /* A collection over the informer's object limit is reported, not cached without bound. */
    {
        static struct inf_rec r;
        struct inf_informer *inf = NULL;
        struct inf_options io = {.resource = &kapi_configmaps,
                                 .namespace_ = ns,
                                 .label_selector = "e2e=limits-many",
                                 .max_objects = 5,
                                 .page_size = 2};
        struct inf_handlers h = {inf_add, inf_update, inf_delete, inf_synced_cb, inf_error};
        char name[32];

        for (int i = 0; i < 8; i++) {
            snprintf(name, sizeof(name), "many-%d", i);
            create_cm(name, "limits-many", "v");
        }
        assert_int_equal(inf_new(cl, &io, &h, &r, &inf), 0);
        assert_int_equal(inf_start(inf), 0);
        run_for(3000);
        assert_true(r.errors >= 1);
        assert_false(r.synced);
        assert_true(inf_count(inf) <= 5);
        inf_free(inf);
    }
    json_decref(o);
}

/* ---- token rotation through a token file ------------------------------------------------------
 */

/* A kubeconfig naming a token file: the client starts with a token the apiserver rejects (401,
 * reported as -EACCES with reason Unauthorized), the file is rewritten with a valid service-account
 * token, and the next request uses it without restarting anything. */
/* A service account of the namespace with a cluster role bound there, and its token. */
static void sa_token(const char *sa, const char *clusterrole, char *token, size_t size)
{
    char cmd[4096];
    FILE *f;
    size_t n;

    sh("kubectl --kubeconfig '%s' -n %s create sa %s >/dev/null && "
       "kubectl --kubeconfig '%s' -n %s create rolebinding %s --clusterrole=%s "
       "--serviceaccount=%s:%s >/dev/null",
       kubeconfig, ns, sa, kubeconfig, ns, sa, clusterrole, ns, sa);
    snprintf(cmd, sizeof(cmd),
             "for i in $(seq 100); do s=$(kubectl --kubeconfig '%s' -n %s get sa %s -o "
             "jsonpath='{.secrets[0].name}'); [ -n \"$s\" ] && break; sleep 0.2; done; "
             "kubectl --kubeconfig '%s' -n %s get secret \"$s\" -o jsonpath='{.data.token}' | "
             "base64 -d",
             kubeconfig, ns, sa, kubeconfig, ns);
    f = popen(cmd, "r");
    assert_non_null(f);
    n = fread(token, 1, size - 1, f);
    token[n] = '\0';
    assert_int_equal(pclose(f), 0);
    assert_true(n > 100);
}

static void test_token_file_rotation(void **state)
{
    char dir[] = "/tmp/cliqo-e2e-token-XXXXXX", path[256], tokpath[256], err[512];
    char token[4096];
    struct kc_config *tcfg = NULL;
    struct kapi_client *tc = NULL;
    struct kapi_sync s = {0};
    FILE *f;

    (void)state;
    /* A service account allowed to read ConfigMaps in the namespace, and its token. */
    sa_token("rotator", "view", token, sizeof(token));

    assert_non_null(mkdtemp(dir));
    snprintf(tokpath, sizeof(tokpath), "%s/token", dir);
    snprintf(path, sizeof(path), "%s/kubeconfig", dir);
    f = fopen(tokpath, "w");
    assert_non_null(f);
    fputs("not-a-valid-token", f);
    fclose(f);
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: %s\n"
            "    certificate-authority: %s/cluster-1/pki/ca.crt\nusers:\n- name: u\n  user:\n    "
            "tokenFile: token\n"
            "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n",
            cfg->server, getenv("E2E_STATE"));
    fclose(f);
    if (kc_load_file(path, NULL, &tcfg, err, sizeof(err)) < 0)
        fail_msg("kubeconfig: %s", err);
    assert_int_equal(kapi_client_new(&loop, tcfg, NULL, &tc), 0);

    assert_int_equal(kapi_list(tc, &kapi_configmaps, ns, NULL, kapi_sync_cb, &s), 0);
    assert_int_equal(kapi_sync_wait(tc, &s), -EACCES);
    assert_int_equal(s.http_status, 401);
    assert_string_equal(s.reason, "Unauthorized");
    kapi_sync_done(&s);
    memset(&s, 0, sizeof(s));

    f = fopen(tokpath, "w");
    assert_non_null(f);
    fputs(token, f);
    fclose(f);
    assert_int_equal(kapi_list(tc, &kapi_configmaps, ns, NULL, kapi_sync_cb, &s), 0);
    assert_int_equal(kapi_sync_wait(tc, &s), 0);
    kapi_sync_done(&s);
    memset(&s, 0, sizeof(s));
    /* The identity is the service account's: allowed here, forbidden in kube-system. */
    assert_int_equal(kapi_list(tc, &kapi_secrets, "kube-system", NULL, kapi_sync_cb, &s), 0);
    assert_int_equal(kapi_sync_wait(tc, &s), -EPERM);
    assert_non_null(strstr(s.message, "system:serviceaccount:"));
    kapi_sync_done(&s);

    kapi_client_close(tc);
    tcfg = kc_config_free(tcfg);
    unlink(tokpath);
    unlink(path);
    rmdir(dir);
}

/* ---- 429: the API server's priority and fairness turning requests away
 * ---------------------------
 *
 * A priority level with the smallest share (about 3 of the server's 600 seats) that rejects rather
 * than queues, and a flow schema sending one service account's requests to it. That account's
 * client (1,000 requests/s allowed) creates ConfigMaps all at once (again, up to 5 bursts, until
 * the server has turned some away): the server answers many of them 429; every one is created
 * exactly once all the same, the client's rate went down, and once the flow schema is gone the rate
 * grows back to the configured one (API priority and fairness is on in the local clusters, lean or
 * not). */
struct burst {
    int want, done, ok, failed;
    double min_qps; /* the client's rate in force, the lowest seen as answers came */
};

static void on_burst(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct burst *b = data;

    if (b->min_qps == 0 || kapi_client_qps(c) < b->min_qps)
        b->min_qps = kapi_client_qps(c);
    b->done++;
    if (res->err == 0)
        b->ok++;
    else
        b->failed++;
}

static bool burst_done(void *arg)
{
    const struct burst *b = arg;

    return b->done >= b->want;
}

static void test_throttled_by_the_server(void **state)
{
    enum { N = 120, ROUNDS = 5 };
    int rnd;
    const struct kapi_resource fs = {"flowcontrol.apiserver.k8s.io", "v1beta1", "flowschemas",
                                     "FlowSchema", false};
    struct burst b = {.want = N};
    char token[4096], name[32];
    struct kc_config tcfg = {0};
    struct kapi_client_options o = {.qps = 1000, .burst = 1000};
    struct kapi_client *tc = NULL;
    struct kapi_sync s = {0};
    uint64_t t0;
    json_t *cm;

    (void)state;
    sa_token("throttled", "edit", token, sizeof(token));
    sh("printf '%%s\\n' 'apiVersion: flowcontrol.apiserver.k8s.io/v1beta1' "
       "'kind: PriorityLevelConfiguration' 'metadata: {name: e2e-tiny}' "
       "'spec: {type: Limited, limited: {assuredConcurrencyShares: 1, limitResponse: {type: "
       "Reject}}}' '---' 'apiVersion: flowcontrol.apiserver.k8s.io/v1beta1' 'kind: FlowSchema' "
       "'metadata: {name: e2e-tiny}' 'spec:' '  matchingPrecedence: 300' "
       "'  priorityLevelConfiguration: {name: e2e-tiny}' '  rules:' "
       "'  - subjects: [{kind: ServiceAccount, serviceAccount: {name: throttled, namespace: %s}}]' "
       "'    resourceRules: [{verbs: [\"*\"], apiGroups: [\"*\"], resources: [\"*\"], "
       "namespaces: [\"*\"]}]' | kubectl --kubeconfig '%s' apply -f - >/dev/null",
       ns, kubeconfig);
    /* The server applies a new flow schema from its own informer: wait until it says so. */
    sh("for i in $(seq 100); do [ \"$(kubectl --kubeconfig '%s' get flowschema e2e-tiny -o "
       "jsonpath='{.status.conditions[?(@.type==\"Dangling\")].status}')\" = False ] && exit 0; "
       "sleep 0.1; done; exit 1",
       kubeconfig);

    tcfg.server = cfg->server;
    tcfg.ca_pem = cfg->ca_pem;
    tcfg.ca_pem_len = cfg->ca_pem_len;
    tcfg.token = token;
    assert_int_equal(kapi_client_new(&loop, &tcfg, &o, &tc), 0);
    /* The server turns requests away only while more than its 3 seats are taken at once: a client
     * that happens to send them one by one faster than the server answers each is never refused.
     * So bursts are sent until one is (at most ROUNDS); each must be created whole all the same. */
    for (rnd = 0; rnd < ROUNDS && kapi_client_throttled(tc) == 0; rnd++) {
        b = (struct burst){.want = N};
        t0 = uv_hrtime();
        for (int i = 0; i < N; i++) {
            snprintf(name, sizeof(name), "thr-%d-%d", rnd, i);
            cm = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s}}", "apiVersion", "v1", "kind",
                           "ConfigMap", "metadata", "name", name, "namespace", ns, "labels", "e2e",
                           "throttled", "data", "k", "v");
            assert_int_equal(kapi_create(tc, &kapi_configmaps, ns, cm, on_burst, &b), 0);
            json_decref(cm);
        }
        assert_true(run_until_fn(burst_done, &b, 120000));
        printf("FIGURE throttled-creates=%d round=%d answers-429=%llu seconds=%.2f "
               "lowest-rate=%.1f/s rate-after=%.1f/s\n",
               N, rnd + 1, (unsigned long long)kapi_client_throttled(tc),
               (double)(uv_hrtime() - t0) / 1e9, b.min_qps, kapi_client_qps(tc));
        assert_int_equal(b.failed, 0);
        assert_int_equal(b.ok, N);
    }
    /* The server did turn requests away, and the client slowed down for it while it did (its rate
     * grows back as answers come: once the burst is through it may be whole again). */
    assert_true(kapi_client_throttled(tc) > 0);
    assert_true(b.min_qps < 1000);
    /* Exactly N a round, as the admin lists them. */
    assert_int_equal(kapi_list(cl, &kapi_configmaps, ns,
                               &(struct kapi_list_opts){.label_selector = "e2e=throttled"},
                               kapi_sync_cb, &s),
                     0);
    assert_int_equal(kapi_sync_wait(cl, &s), 0);
    assert_int_equal(json_array_size(json_object_get(s.body, "items")), (size_t)(N * rnd));
    kapi_sync_done(&s);

    /* The flow schema gone, answers come and the rate grows back to what was configured. */
    memset(&s, 0, sizeof(s));
    assert_int_equal(kapi_delete(cl, &fs, NULL, "e2e-tiny", NULL, kapi_sync_cb, &s), 0);
    assert_int_equal(kapi_sync_wait(cl, &s), 0);
    kapi_sync_done(&s);
    for (int i = 0; i < 300 && kapi_client_qps(tc) < 1000; i++) {
        memset(&s, 0, sizeof(s));
        assert_int_equal(kapi_get(tc, &kapi_configmaps, ns, "thr-0-0", kapi_sync_cb, &s), 0);
        assert_int_equal(kapi_sync_wait(tc, &s), 0);
        kapi_sync_done(&s);
        run_for(50);
    }
    assert_true(kapi_client_qps(tc) >= 1000);
    sh("kubectl --kubeconfig '%s' delete prioritylevelconfiguration e2e-tiny >/dev/null",
       kubeconfig);
    kapi_client_close(tc);
}

/* tls-server-name: the apiserver's certificate does not name "kubernetes.invalid", and does name
 * "localhost": with the server addressed by IP, verification follows tls-server-name. */
static void test_tls_server_name(void **state)
{
    const char *names[] = {"localhost", "kubernetes.invalid"};
    const int want[] = {0, -EKEYREJECTED};

    (void)state;
    for (int i = 0; i < 2; i++) {
        struct kapi_client *tc = NULL;
        struct kapi_sync s = {0};
        char *saved = cfg->tls_server_name;

        cfg->tls_server_name = (char *)names[i];
        assert_int_equal(kapi_client_new(&loop, cfg, NULL, &tc), 0);
        cfg->tls_server_name = saved;
        assert_int_equal(kapi_get(tc, &kapi_namespaces, NULL, ns, kapi_sync_cb, &s), 0);
        assert_int_equal(kapi_sync_wait(tc, &s), want[i]);
        kapi_sync_done(&s);
        kapi_client_close(tc);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_watch_resumes),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_token_file_rotation),
        cmocka_unit_test(test_throttled_by_the_server),
        cmocka_unit_test(test_tls_server_name),
        cmocka_unit_test(test_informer_across_restart_and_410),
        cmocka_unit_test(test_watch_too_old_is_gone),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
