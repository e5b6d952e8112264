/* bench-reflect: the programs behind bench/reflect.sh (the object reflectors' cost and delay).
 *
 *   fill     --kubeconfig K --namespace NS --kind configmaps|secrets --count N [--bytes B]
 *            [--inflight 32]
 *            creates N ConfigMaps or Secrets r-0..r-N-1 of B bytes of data (default 1024).
 *   wait     --kubeconfig K --namespace NS --kind configmaps|secrets --count N
 *            [--selector SEL] [--timeout-ms T]
 *            waits until the namespace holds N objects of the kind (matching SEL), prints how
 *            long it took from its start.
 *   latency  --home-kubeconfig A --provider-kubeconfig B --namespace NS --remote-namespace RNS
 *            [--updates N] [--gap-ms G]
 *            N times: a merge patch of ConfigMap "latency" at home (a counter in its data), then
 *            the time until an informer on the provider sees the copy with that value, then G ms
 *            of pause. Prints median, p90 and max (milliseconds).
 *
 * Every figure is printed as `key=value` on one line for the script to collect. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/strutil.h"
#include "common/xalloc.h"
#include "kube/api.h"
#include "kube/informer.h"
#include "kube/kubeconfig.h"

static uv_loop_t loop;

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static struct kapi_client *client(const char *path)
{
    struct kapi_client_options o = {.qps = 500, .burst = 1000};
    struct kc_config *cfg = NULL;
    struct kapi_client *c = NULL;
    char err[KC_ERR_LEN];

    if (kc_load_file(path, NULL, &cfg, err, sizeof(err)) < 0) {
        fprintf(stderr, "bench-reflect: %s: %s\n", path, err);
        exit(1);
    }
    if (kapi_client_new(&loop, cfg, &o, &c) < 0) {
        fprintf(stderr, "bench-reflect: cannot make a client for %s\n", path);
        exit(1);
    }
    kc_config_free(cfg);
    return c;
}

static const struct kapi_resource *kind_of(const char *k)
{
    if (k && strcmp(k, "configmaps") == 0)
        return &kapi_configmaps;
    if (k && strcmp(k, "secrets") == 0)
        return &kapi_secrets;
    fprintf(stderr, "bench-reflect: --kind configmaps or secrets\n");
    exit(2);
}

static uint64_t num(const char *name, const char *v)
{
    uint64_t n;

    if (!v || parse_u64(v, 100000000, &n) < 0) {
        fprintf(stderr, "bench-reflect: %s needs a number\n", name);
        exit(2);
    }
    return n;
}

/* ---- fill ------------------------------------------------------------------------------------ */

static struct {
    struct kapi_client *c;
    const struct kapi_resource *res;
    const char *ns;
    uint64_t count, next, done, failed, inflight, max_inflight, bytes;
    char *payload;
} F;

static void fill_more(void);

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void on_created(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    (void)c;
    (void)data;
    F.inflight--;
    F.done++;
    if (res->err < 0 && res->err != -EEXIST) {
        F.failed++;
        fprintf(stderr, "bench-reflect: create: %s\n", res->status.message);
    }
    fill_more();
    if (F.done == F.count)
        uv_stop(&loop);
}

static void fill_more(void)
{
    while (F.next < F.count && F.inflight < F.max_inflight) {
        char name[32];
        json_t *o;

        snprintf(name, sizeof(name), "r-%llu", (unsigned long long)F.next++);
        /* Random base64 characters (valid Secret data when B is a multiple of 4): what compresses
         * least, so the figure is the pessimistic one. */
        for (uint64_t i = 0; i < F.bytes; i++)
            F.payload[i] = b64chars[random() % 64];
        o = json_pack("{s:{s:s},s:{s:s}}", "metadata", "name", name, "data", "v", F.payload);
        if (F.res == &kapi_secrets)
            json_object_set_new(o, "type", json_string("Opaque"));
        F.inflight++;
        if (!o || kapi_create(F.c, F.res, F.ns, o, on_created, NULL) < 0) {
            F.inflight--;
            F.done++;
            F.failed++;
        }
        json_decref(o);
    }
}

static int cmd_fill(const char *kc, const char *ns, const char *kind, uint64_t count,
                    uint64_t bytes, uint64_t inflight)
{
    double t0;

    F.c = client(kc);
    F.res = kind_of(kind);
    F.ns = ns;
    F.count = count;
    F.bytes = bytes;
    F.max_inflight = inflight ? inflight : 32;
    F.payload = x_malloc(bytes + 1);
    F.payload[bytes] = '\0';
    t0 = now_ms();
    fill_more();
    if (F.count)
        uv_run(&loop, UV_RUN_DEFAULT);
    printf("phase=fill kind=%s count=%llu bytes=%llu failed=%llu ms=%.0f\n", kind,
           (unsigned long long)count, (unsigned long long)bytes, (unsigned long long)F.failed,
           now_ms() - t0);
    x_free(F.payload);
    kapi_client_close(F.c);
    uv_run(&loop, UV_RUN_DEFAULT);
    return F.failed ? 1 : 0;
}

/* ---- wait ------------------------------------------------------------------------------------ */

static struct {
    struct inf_informer *inf;
    uint64_t want;
    double t0;
    bool ok;
} W;

static void wait_check(struct inf_informer *inf)
{
    if (inf_synced(inf) && inf_count(inf) >= W.want && !W.ok) {
        W.ok = true;
        uv_stop(&loop);
    }
}

static void w_add(struct inf_informer *inf, json_t *o, void *d)
{
    (void)o;
    (void)d;
    wait_check(inf);
}

static void w_synced(struct inf_informer *inf, void *d)
{
    (void)d;
    wait_check(inf);
}

static void on_timeout(uv_timer_t *t)
{
    (void)t;
    uv_stop(&loop);
}

static int cmd_wait(const char *kc, const char *ns, const char *kind, uint64_t count,
                    const char *sel, uint64_t timeout_ms)
{
    struct kapi_client *c = client(kc);
    struct inf_options o = {.resource = kind_of(kind), .namespace_ = ns, .label_selector = sel};
    struct inf_handlers h = {.on_add = w_add, .on_synced = w_synced};
    uv_timer_t t;

    W.want = count;
    W.t0 = now_ms();
    uv_timer_init(&loop, &t);
    uv_timer_start(&t, on_timeout, timeout_ms ? timeout_ms : 600000, 0);
    if (inf_new(c, &o, &h, NULL, &W.inf) < 0 || inf_start(W.inf) < 0)
        return 1;
    uv_run(&loop, UV_RUN_DEFAULT);
    printf("phase=wait kind=%s count=%zu ok=%d ms=%.0f\n", kind, inf_count(W.inf), W.ok,
           now_ms() - W.t0);
    inf_free(W.inf);
    uv_close((uv_handle_t *)&t, NULL);
    kapi_client_close(c);
    uv_run(&loop, UV_RUN_DEFAULT);
    return W.ok ? 0 : 1;
}

/* ---- latency --------------------------------------------------------------------------------- */

static struct {
    struct kapi_client *a;
    const char *ns, *rns;
    struct inf_informer *inf;
    uint64_t n, i, gap_ms;
    uv_timer_t gap;
    double t0, *samples;
    bool started, waiting;
} L;

static void lat_next(void);

static void on_gap(uv_timer_t *t)
{
    (void)t;
    lat_next();
}

static void on_patched(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    (void)c;
    (void)data;
    if (res->err < 0) {
        fprintf(stderr, "bench-reflect: patch: %s\n", res->status.message);
        uv_stop(&loop);
    }
}

static void lat_seen(json_t *obj)
{
    const char *v = json_string_value(json_object_get(json_object_get(obj, "data"), "n"));
    char want[32];

    if (!v)
        return;
    if (!L.started) { /* the copy as it is before the first update */
        if (strcmp(v, "0") == 0) {
            L.started = true;
            lat_next();
        }
        return;
    }
    if (!L.waiting)
        return;
    snprintf(want, sizeof(want), "%llu", (unsigned long long)L.i);
    if (strcmp(v, want) != 0)
        return;
    L.samples[L.i - 1] = now_ms() - L.t0;
    L.waiting = false;
    if (L.gap_ms)
        uv_timer_start(&L.gap, on_gap, L.gap_ms, 0);
    else
        lat_next();
}

static void l_add(struct inf_informer *inf, json_t *o, void *d)
{
    (void)inf;
    (void)d;
    lat_seen(o);
}

static void l_update(struct inf_informer *inf, json_t *old, json_t *o, void *d)
{
    (void)inf;
    (void)old;
    (void)d;
    lat_seen(o);
}

static void l_synced(struct inf_informer *inf, void *d)
{
    json_t *o = inf_get(inf, L.rns, "latency");

    (void)d;
    if (o) {
        lat_seen(o);
        json_decref(o);
    }
}

static void lat_next(void)
{
    char body[128];

    if (L.i == L.n) {
        uv_stop(&loop);
        return;
    }
    L.i++;
    snprintf(body, sizeof(body), "{\"data\":{\"n\":\"%llu\"}}", (unsigned long long)L.i);
    L.waiting = true;
    L.t0 = now_ms();
    if (kapi_patch(L.a, &kapi_configmaps, L.ns, "latency", NULL, KAPI_PATCH_MERGE, body, on_patched,
                   NULL) < 0)
        uv_stop(&loop);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static int cmd_latency(const char *akc, const char *bkc, const char *ns, const char *rns,
                       uint64_t n, uint64_t gap_ms)
{
    struct kapi_client *b;
    struct inf_options o = {
        .resource = &kapi_configmaps, .namespace_ = rns, .field_selector = "metadata.name=latency"};
    struct inf_handlers h = {.on_add = l_add, .on_update = l_update, .on_synced = l_synced};
    struct kapi_sync s = {0};
    json_t *cm;

    L.a = client(akc);
    b = client(bkc);
    L.ns = ns;
    L.rns = rns;
    L.n = n ? n : 100;
    L.gap_ms = gap_ms;
    uv_timer_init(&loop, &L.gap);
    L.samples = x_calloc(L.n, sizeof(double));
    cm = json_pack("{s:{s:s},s:{s:s}}", "metadata", "name", "latency", "data", "n", "0");
    kapi_create(L.a, &kapi_configmaps, ns, cm, kapi_sync_cb, &s);
    kapi_sync_wait(L.a, &s);
    if (s.err == -EEXIST) { /* from an earlier run: back to 0 */
        kapi_sync_done(&s);
        memset(&s, 0, sizeof(s));
        kapi_patch(L.a, &kapi_configmaps, ns, "latency", NULL, KAPI_PATCH_MERGE,
                   "{\"data\":{\"n\":\"0\"}}", kapi_sync_cb, &s);
        kapi_sync_wait(L.a, &s);
    }
    kapi_sync_done(&s);
    json_decref(cm);
    if (inf_new(b, &o, &h, NULL, &L.inf) < 0 || inf_start(L.inf) < 0)
        return 1;
    uv_run(&loop, UV_RUN_DEFAULT);
    if (L.i == L.n && !L.waiting) {
        qsort(L.samples, L.n, sizeof(double), cmp_double);
        printf("phase=latency updates=%llu gap_ms=%llu median_ms=%.1f p90_ms=%.1f max_ms=%.1f "
               "min_ms=%.1f\n",
               (unsigned long long)L.n, (unsigned long long)L.gap_ms, L.samples[L.n / 2],
               L.samples[L.n * 9 / 10], L.samples[L.n - 1], L.samples[0]);
    } else {
        printf("phase=latency failed_at=%llu\n", (unsigned long long)L.i);
    }
    inf_free(L.inf);
    uv_close((uv_handle_t *)&L.gap, NULL);
    kapi_client_close(L.a);
    kapi_client_close(b);
    uv_run(&loop, UV_RUN_DEFAULT);
    x_free(L.samples);
    return L.i == L.n && !L.waiting ? 0 : 1;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"kubeconfig", required_argument, NULL, 'k'},
        {"home-kubeconfig", required_argument, NULL, 'a'},
        {"provider-kubeconfig", required_argument, NULL, 'b'},
        {"namespace", required_argument, NULL, 'n'},
        {"remote-namespace", required_argument, NULL, 'r'},
        {"kind", required_argument, NULL, 'K'},
        {"count", required_argument, NULL, 'c'},
        {"bytes", required_argument, NULL, 'B'},
        {"inflight", required_argument, NULL, 'i'},
        {"selector", required_argument, NULL, 's'},
        {"timeout-ms", required_argument, NULL, 't'},
        {"updates", required_argument, NULL, 'u'},
        {"gap-ms", required_argument, NULL, 'g'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *cmd = argc > 1 ? argv[1] : "", *kc = NULL, *akc = NULL, *bkc = NULL, *ns = NULL,
               *rns = NULL, *kind = NULL, *sel = NULL;
    uint64_t count = 0, bytes = 1024, inflight = 0, timeout = 0, updates = 0, gap = 0;
    int c, r;

    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || argc < 2) {
        printf("Usage: bench-reflect fill|wait|latency [options] (see bench/bench-reflect.c)\n");
        return argc < 2 ? 2 : 0;
    }
    optind = 2;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'k':
            kc = optarg;
            break;
        case 'a':
            akc = optarg;
            break;
        case 'b':
            bkc = optarg;
            break;
        case 'n':
            ns = optarg;
            break;
        case 'r':
            rns = optarg;
            break;
        case 'K':
            kind = optarg;
            break;
        case 'c':
            count = num("--count", optarg);
            break;
        case 'B':
            bytes = num("--bytes", optarg);
            break;
        case 'i':
            inflight = num("--inflight", optarg);
            break;
        case 's':
            sel = optarg;
            break;
        case 't':
            timeout = num("--timeout-ms", optarg);
            break;
        case 'g':
            gap = num("--gap-ms", optarg);
            break;
        case 'u':
            updates = num("--updates", optarg);
            break;
        case 'h':
            printf("see bench/bench-reflect.c\n");
            return 0;
        default:
            return 2;
        }
    }
    uv_loop_init(&loop);
    if (strcmp(cmd, "fill") == 0 && kc && ns)
        r = cmd_fill(kc, ns, kind, count, bytes, inflight);
    else if (strcmp(cmd, "wait") == 0 && kc && ns)
        r = cmd_wait(kc, ns, kind, count, sel, timeout);
    else if (strcmp(cmd, "latency") == 0 && akc && bkc && ns && rns)
        r = cmd_latency(akc, bkc, ns, rns, updates, gap);
    else {
        fprintf(stderr, "bench-reflect: bad command line (see --help)\n");
        r = 2;
    }
    uv_loop_close(&loop);
    return r;
}
