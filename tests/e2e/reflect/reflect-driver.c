/* reflect-driver: the four object reflectors of a virtual kubelet (src/virtualkubelet/reflect.h)
 * run against two real clusters without the rest of the virtual kubelet, for the e2e test
 * tests/e2e/reflect/objects.sh and the benchmark bench/reflect.sh.
 *
 * It does what a virtual kubelet does for them: a per-peer registry whose unit holds the
 * provider's credential as PU_VK, a client of the home cluster, one instance of each reflector,
 * and ns_add/ns_remove from a file of namespace pairs (where the real one reads the NamespaceMap's
 * Accepted entries); the filters come from a ClusterConfig-shaped JSON file. SIGHUP re-reads both
 * (and kicks), SIGUSR1 writes the metrics to a file, SIGTERM or SIGINT stops. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metrics/metrics.h"
#include "agent/peers.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/xalloc.h"
#include "kube/kubeconfig.h"
#include "virtualkubelet/reflect.h"

#define MOD       "reflect-driver"
#define OWNER     "reflect-driver"
#define MAX_PAIRS 256
#define FILE_MAX  (1u << 20)

static const char usage[] =
    "Usage: reflect-driver --home-kubeconfig PATH --provider-kubeconfig PATH --home-id ID\n"
    "                      --peer-id ID --pairs FILE [flags]\n"
    "\n"
    "Runs the Service, EndpointSlice, ConfigMap and Secret reflectors of a virtual kubelet\n"
    "between a home cluster and a provider cluster.\n"
    "\n"
    "Flags:\n"
    "  --home-kubeconfig PATH      the home cluster (A)\n"
    "  --provider-kubeconfig PATH  the credential used on the provider (B), as PU_VK\n"
    "  --home-id ID                the home cluster's ID (origin label of the copies)\n"
    "  --peer-id ID                the provider's ID (the virtual node is liqo-ID)\n"
    "  --pairs FILE                lines 'LOCAL-NAMESPACE REMOTE-NAMESPACE'\n"
    "  --filters FILE              a ClusterConfig (JSON) whose spec.offloadingConfig.reflection\n"
    "                              gives the allow and deny lists\n"
    "  --remap FROM=TO             home addresses starting with FROM start with TO on the\n"
    "                              provider (e.g. 10.210.=10.99.)\n"
    "  --max-objects N             copies per namespace and kind (default 5000)\n"
    "  --metrics FILE              where SIGUSR1 writes the metrics\n"
    "  --log-level LEVEL           debug, info, warn or error (default info)\n"
    "  --help                      print this help and exit\n"
    "\n"
    "SIGHUP re-reads --pairs and --filters; SIGUSR1 writes --metrics; SIGTERM stops.\n";

static struct {
    uv_loop_t loop;
    const char *home_kc, *prov_kc, *home_id, *peer_id, *pairs_path, *filters_path, *metrics_path;
    char remap_from[32], remap_to[32], node[96];
    size_t max_objects;
    struct kc_config *kc;
    struct kapi_client *local;
    struct metrics_registry *metrics;
    struct vk_reflect_metrics *rmetrics; /* the reflectors' families in metrics */
    struct pu_registry *reg;
    struct pu_unit *unit;
    struct vk_reflect_filter filters[_VK_REFLECT_KINDS];
    struct vk_reflect_env env;
    void *state[_VK_REFLECT_KINDS];
    char pairs[MAX_PAIRS][2][64];
    size_t npairs;
    uv_signal_t sigterm, sigint, sighup, sigusr1;
    bool stopping;
    int exit_code;
} g;

static const struct vk_reflector_ops *const ops[_VK_REFLECT_KINDS] = {
    [VK_REFLECT_SERVICES] = &vk_reflect_services,
    [VK_REFLECT_ENDPOINTSLICES] = &vk_reflect_endpointslices,
    [VK_REFLECT_CONFIGMAPS] = &vk_reflect_configmaps,
    [VK_REFLECT_SECRETS] = &vk_reflect_secrets,
};

static int read_file(const char *path, char **ret, size_t *ret_len)
{
    struct sbuf b;
    char chunk[4096];
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC), r = 0;

    if (fd < 0)
        return -errno;
    sbuf_init(&b, FILE_MAX);
    while ((n = read(fd, chunk, sizeof(chunk))) > 0)
        if ((r = sbuf_add(&b, chunk, (size_t)n)) < 0)
            break;
    if (n < 0)
        r = -errno;
    close(fd);
    if (r < 0) {
        sbuf_done(&b);
        return r;
    }
    *ret_len = sbuf_len(&b);
    *ret = sbuf_len(&b) ? sbuf_steal(&b) : x_strdup("");
    sbuf_done(&b);
    return *ret ? 0 : -ENOMEM;
}

static int remap(void *data, const char *ip, char *out, size_t size)
{
    size_t n = strlen(g.remap_from);
    int w;

    (void)data;
    if (!n || strncmp(ip, g.remap_from, n) != 0)
        return -EINVAL;
    w = snprintf(out, size, "%s%s", g.remap_to, ip + n);
    return w < 0 || (size_t)w >= size ? -ENAMETOOLONG : 0;
}

/* ---- pairs and filters -------------------------------------------------------------------- */

static void load_filters(void)
{
    json_t *cc;
    json_error_t je;
    char err[256];

    if (!g.filters_path)
        return;
    cc = json_load_file(g.filters_path, 0, &je);
    if (!cc) {
        log_warn(MOD, "cannot read %s: %s; filters unchanged", g.filters_path, je.text);
        return;
    }
    if (vk_reflect_filters_from_config(cc, g.filters, err, sizeof(err)) < 0)
        log_warn(MOD, "%s: %s; filters unchanged", g.filters_path, err);
    else
        log_info(MOD, "filters loaded from %s", g.filters_path);
    json_decref(cc);
}

static void load_pairs(void)
{
    char *text = NULL, *line, *eol, next[MAX_PAIRS][2][64];
    size_t len, n = 0;
    int r = read_file(g.pairs_path, &text, &len);

    if (r < 0) {
        log_warn(MOD, "cannot read %s: %s; pairs unchanged", g.pairs_path, strerror(-r));
        return;
    }
    for (line = text; line && *line && n < MAX_PAIRS; line = eol ? eol + 1 : NULL) {
        char a[64], b[64];

        eol = strchr(line, '\n');
        if (eol)
            *eol = '\0';
        if (sscanf(line, "%63s %63s", a, b) == 2) {
            snprintf(next[n][0], 64, "%s", a);
            snprintf(next[n][1], 64, "%s", b);
            n++;
        }
    }
    x_free(text);
    /* pairs gone */
    for (size_t i = 0; i < g.npairs; i++) {
        bool keep = false;

        for (size_t j = 0; j < n && !keep; j++)
            keep = strcmp(g.pairs[i][0], next[j][0]) == 0;
        for (int k = 0; k < _VK_REFLECT_KINDS && !keep; k++)
            ops[k]->ns_remove(g.state[k], g.pairs[i][0]);
    }
    /* pairs added or changed (the same pair again is a no-op) */
    for (size_t j = 0; j < n; j++)
        for (int k = 0; k < _VK_REFLECT_KINDS; k++)
            ops[k]->ns_add(g.state[k], next[j][0], next[j][1]);
    memcpy(g.pairs, next, sizeof(next));
    g.npairs = n;
}

static void write_metrics(void)
{
    struct sbuf b;
    char tmp[512];
    FILE *f;

    if (!g.metrics_path)
        return;
    sbuf_init(&b, 16u << 20);
    snprintf(tmp, sizeof(tmp), "%s.tmp", g.metrics_path);
    if (metrics_render(g.metrics, &b) == 0 && (f = fopen(tmp, "w"))) {
        fwrite(sbuf_str(&b), 1, sbuf_len(&b), f);
        if (fclose(f) == 0)
            rename(tmp, g.metrics_path);
    }
    sbuf_done(&b);
}

/* ---- life cycle ---------------------------------------------------------------------------- */

static void on_closed(uv_handle_t *h)
{
    (void)h;
}

static void stop(int code)
{
    if (g.stopping)
        return;
    g.stopping = true;
    g.exit_code = code;
    for (int k = 0; k < _VK_REFLECT_KINDS; k++) {
        if (g.state[k])
            ops[k]->destroy(g.state[k]);
        g.state[k] = NULL;
    }
    pu_registry_free(g.reg);
    g.reg = NULL;
    kapi_client_abort(g.local);
    g.local = NULL;
    uv_close((uv_handle_t *)&g.sigterm, on_closed);
    uv_close((uv_handle_t *)&g.sigint, on_closed);
    uv_close((uv_handle_t *)&g.sighup, on_closed);
    uv_close((uv_handle_t *)&g.sigusr1, on_closed);
}

static void on_signal(uv_signal_t *s, int signum)
{
    (void)s;
    if (signum == SIGHUP) {
        load_filters();
        load_pairs();
        for (int k = 0; k < _VK_REFLECT_KINDS; k++)
            ops[k]->kick(g.state[k]);
        return;
    }
    if (signum == SIGUSR1) {
        write_metrics();
        return;
    }
    log_info(MOD, "received %s: stopping", strsignal(signum));
    stop(0);
}

static int start(void)
{
    char err[KC_ERR_LEN], *cred = NULL;
    size_t len = 0;
    int r;

    r = kc_load_file(g.home_kc, NULL, &g.kc, err, sizeof(err));
    if (r < 0) {
        log_error(MOD, "cannot load %s: %s", g.home_kc, err);
        return r;
    }
    r = read_file(g.prov_kc, &cred, &len);
    if (r < 0)
        return log_errno(r, MOD, "cannot read %s", g.prov_kc);
    g.metrics = metrics_registry_new();
    if (!g.metrics || (r = kapi_client_new(&g.loop, g.kc, NULL, &g.local)) < 0 ||
        (r = pu_registry_new(&g.loop, g.metrics, NULL, &g.reg)) < 0 ||
        (r = pu_acquire(g.reg, g.peer_id, OWNER, &g.unit)) < 0) {
        x_free(cred);
        return log_errno(r < 0 ? r : -ENOMEM, MOD, "cannot set up the clients");
    }
    r = pu_set_credential(g.unit, PU_VK, cred, len, "1", err, sizeof(err));
    explicit_bzero(cred, len);
    x_free(cred);
    if (r < 0) {
        log_error(MOD, "the provider's credential: %s", err);
        return r;
    }
    snprintf(g.node, sizeof(g.node), "liqo-%s", g.peer_id);
    g.env = (struct vk_reflect_env){
        .loop = &g.loop,
        .local = g.local,
        .unit = g.unit,
        .home_id = g.home_id,
        .peer_id = g.peer_id,
        .node_name = g.node,
        .node_address = "127.0.0.1",
        .filters = g.filters,
        .home_to_remote_ip = g.remap_from[0] ? remap : NULL,
        .max_objects_per_ns = g.max_objects,
    };
    load_filters();
    /* The reflectors' metric families, in the registry of the unit's (--metrics). */
    if ((r = vk_reflect_metrics_new(g.metrics, &g.rmetrics)) < 0)
        return log_errno(r, MOD, "cannot set up the reflectors' metrics");
    g.env.metrics = g.rmetrics;
    for (int k = 0; k < _VK_REFLECT_KINDS; k++) {
        r = ops[k]->create(&g.env, &g.state[k]);
        if (r < 0)
            return log_errno(r, MOD, "cannot create the %s reflector", ops[k]->kind);
    }
    load_pairs();
    log_info(MOD, "reflecting from home %s to provider %s (%zu namespace pairs)", g.home_id,
             g.peer_id, g.npairs);
    return 0;
}

static int parse(int argc, char **argv)
{
    static const struct option opts[] = {
        {"home-kubeconfig", required_argument, NULL, 'a'},
        {"provider-kubeconfig", required_argument, NULL, 'b'},
        {"home-id", required_argument, NULL, 'i'},
        {"peer-id", required_argument, NULL, 'p'},
        {"pairs", required_argument, NULL, 'P'},
        {"filters", required_argument, NULL, 'f'},
        {"remap", required_argument, NULL, 'r'},
        {"max-objects", required_argument, NULL, 'm'},
        {"metrics", required_argument, NULL, 'M'},
        {"log-level", required_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *eq;
    uint64_t n;
    int c;

    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'a':
            g.home_kc = optarg;
            break;
        case 'b':
            g.prov_kc = optarg;
            break;
        case 'i':
            g.home_id = optarg;
            break;
        case 'p':
            g.peer_id = optarg;
            break;
        case 'P':
            g.pairs_path = optarg;
            break;
        case 'f':
            g.filters_path = optarg;
            break;
        case 'M':
            g.metrics_path = optarg;
            break;
        case 'r':
            eq = strchr(optarg, '=');
            if (!eq || (size_t)(eq - optarg) >= sizeof(g.remap_from) ||
                strlen(eq + 1) >= sizeof(g.remap_to)) {
                fprintf(stderr, "reflect-driver: --remap wants FROM=TO\n");
                return 2;
            }
            snprintf(g.remap_from, sizeof(g.remap_from), "%.*s", (int)(eq - optarg), optarg);
            snprintf(g.remap_to, sizeof(g.remap_to), "%s", eq + 1);
            break;
        case 'm':
            if (parse_u64(optarg, 1000000, &n) < 0 || n == 0) {
                fprintf(stderr, "reflect-driver: --max-objects wants a number from 1\n");
                return 2;
            }
            g.max_objects = (size_t)n;
            break;
        case 'l':
            if (log_level_from_string(optarg) == _LOG_LEVEL_INVALID) {
                fprintf(stderr, "reflect-driver: unknown log level '%s'\n", optarg);
                return 2;
            }
            log_set_level(log_level_from_string(optarg));
            break;
        case 'h':
            fputs(usage, stdout);
            return -1;
        default:
            fprintf(stderr, "reflect-driver: unknown or incomplete flag (see --help)\n");
            return 2;
        }
    }
    if (optind < argc || !g.home_kc || !g.prov_kc || !g.home_id || !g.peer_id || !g.pairs_path) {
        fprintf(stderr, "reflect-driver: --home-kubeconfig, --provider-kubeconfig, --home-id, "
                        "--peer-id and --pairs are required (see --help)\n");
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int r = parse(argc, argv), code;

    if (r != 0)
        return r < 0 ? 0 : r;
    signal(SIGPIPE, SIG_IGN);
    if (uv_loop_init(&g.loop) < 0)
        return 1;
    uv_signal_init(&g.loop, &g.sigterm);
    uv_signal_init(&g.loop, &g.sigint);
    uv_signal_init(&g.loop, &g.sighup);
    uv_signal_init(&g.loop, &g.sigusr1);
    uv_signal_start(&g.sigterm, on_signal, SIGTERM);
    uv_signal_start(&g.sigint, on_signal, SIGINT);
    uv_signal_start(&g.sighup, on_signal, SIGHUP);
    uv_signal_start(&g.sigusr1, on_signal, SIGUSR1);
    if (start() < 0)
        stop(1);
    uv_run(&g.loop, UV_RUN_DEFAULT);
    code = g.exit_code;
    for (int k = 0; k < _VK_REFLECT_KINDS; k++)
        vk_reflect_filter_clear(&g.filters[k]);
    g.kc = kc_config_free(g.kc);
    vk_reflect_metrics_free(g.rmetrics);
    g.metrics = metrics_registry_free(g.metrics);
    if (uv_loop_close(&g.loop) < 0 && code == 0)
        code = 1;
    log_info(MOD, "stopped (exit status %d)", code);
    return code;
}
