/* kla-relay-test: the kubelet API relay (src/kubeletapi) run with a resolver of its own, for the
 * relay e2e test (relay.sh) and the relay benchmark.
 *
 * It registers a Node on the home cluster (--kubeconfig) whose InternalIP and kubelet port are its
 * listener, serves the kubelet API there (serving certificate and client CA given as files,
 * callers authorised with SubjectAccessReviews on the home cluster), and resolves the home pods
 * named by --map to pods of the provider cluster (--remote-kubeconfig), reached with that
 * kubeconfig's credential: through a kapi client (default) or the kubeconfig data itself
 * (--by-config). On SIGTERM it deletes the Node (unless --keep-node) and exits 0. */
#include "common/log.h"
#include "common/xalloc.h"
#include "kube/api.h"
#include "kube/kubeconfig.h"
#include "kubeletapi/kubeletapi.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MOD      "kla-relay-test"
#define MAX_MAPS 16

struct map {
    char home_ns[KLA_MAX_NS + 1], home_pod[KLA_MAX_POD + 1];
    char remote_ns[KLA_MAX_NS + 1], remote_pod[KLA_MAX_POD + 1];
};

static struct {
    uv_loop_t loop;
    const char *listen, *cert, *key, *ca, *kubeconfig, *remote, *node;
    bool by_config, keep_node;
    struct map maps[MAX_MAPS];
    size_t nmaps;
    struct kc_config *home_kc, *remote_kc;
    struct kapi_client *home, *rc;
    struct kla_sar *sar;
    struct kla_relay *relay;
    struct kla_server *srv;
    uv_signal_t sigterm, sigint;
    int exit_code;
    bool stopping;
} g;

static int resolve(void *data, const char *ns, const char *pod, struct kla_target *ret)
{
    (void)data;
    for (size_t i = 0; i < g.nmaps; i++) {
        const struct map *m = &g.maps[i];

        if (strcmp(m->home_ns, ns) != 0 || strcmp(m->home_pod, pod) != 0)
            continue;
        snprintf(ret->node, sizeof(ret->node), "%s", g.node);
        snprintf(ret->ns, sizeof(ret->ns), "%s", m->remote_ns);
        snprintf(ret->pod, sizeof(ret->pod), "%s", m->remote_pod);
        if (g.by_config)
            ret->config = g.remote_kc;
        else
            ret->client = g.rc;
        return 0;
    }
    return -ENOENT;
}

static int read_file(const char *path, char **ret)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    char *buf = x_malloc(1 << 20);
    ssize_t n;
    size_t len = 0;

    if (fd < 0 || !buf) {
        if (fd >= 0)
            close(fd);
        x_free(buf);
        return -ENOENT;
    }
    while ((n = read(fd, buf + len, (1 << 20) - 1 - len)) > 0)
        len += (size_t)n;
    close(fd);
    buf[len] = '\0';
    *ret = buf;
    return 0;
}

/* ---- the node ------------------------------------------------------------------------------ */

static void on_status(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    (void)c;
    (void)data;
    if (res->err < 0) {
        log_error(MOD, "cannot write the status of node %s: %s", g.node, res->status.message);
        g.exit_code = 1;
        return;
    }
    /* The test script waits for this line. */
    printf("relay ready on %s for node %s\n", g.listen, g.node);
    fflush(stdout);
}

static void on_created(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    char ip[64], *colon, patch[1024];
    const char *port;

    (void)data;
    if (res->err < 0 && res->err != -EEXIST) {
        log_error(MOD, "cannot create node %s: %s", g.node, res->status.message);
        g.exit_code = 1;
        return;
    }
    snprintf(ip, sizeof(ip), "%s", g.listen);
    colon = strrchr(ip, ':');
    if (!colon)
        return;
    *colon = '\0';
    port = colon + 1;
    snprintf(patch, sizeof(patch),
             "{\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"%s\"},"
             "{\"type\":\"Hostname\",\"address\":\"%s\"}],"
             "\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":%s}}}}",
             ip, g.node, port);
    kapi_patch(c, &kapi_nodes, NULL, g.node, "status", KAPI_PATCH_MERGE, patch, on_status, NULL);
}

static void register_node(void)
{
    json_t *node = json_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:{s:[{s:s,s:s,s:s}]}}", "apiVersion", "v1",
                             "kind", "Node", "metadata", "name", g.node, "labels",
                             "kla.cliqo.io/relay-test", "true", "spec", "taints", "key",
                             "kla.cliqo.io/relay-test", "value", "true", "effect", "NoSchedule");

    kapi_create(g.home, &kapi_nodes, NULL, node, on_created, NULL);
    json_decref(node);
}

/* ---- shutdown ------------------------------------------------------------------------------ */

static void server_closed(void *data)
{
    uint64_t made = 0, reused = 0;
    size_t kept = 0;

    (void)data;
    if (g.relay) {
        kla_relay_tls_stats(g.relay, &made, &reused, &kept);
        /* relay.sh reads this line: one context per provider credential, shared by the streams. */
        log_info(MOD, "tls contexts: made %llu, reused %llu, kept %zu", (unsigned long long)made,
                 (unsigned long long)reused, kept);
    }
    kla_relay_free(g.relay);
    g.relay = NULL;
    kla_sar_free(g.sar);
    g.sar = NULL;
    kapi_client_close(g.home);
    kapi_client_close(g.rc);
    uv_close((uv_handle_t *)&g.sigterm, NULL);
    uv_close((uv_handle_t *)&g.sigint, NULL);
}

static void on_deleted(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    (void)c;
    (void)data;
    if (res->err < 0 && res->err != -ENOENT)
        log_warn(MOD, "cannot delete node %s: %s", g.node, res->status.message);
    kla_server_close(g.srv, server_closed, NULL);
}

static void on_signal(uv_signal_t *s, int signum)
{
    (void)s;
    (void)signum;
    if (g.stopping)
        return;
    g.stopping = true;
    if (g.keep_node) {
        kla_server_close(g.srv, server_closed, NULL);
        return;
    }
    kapi_delete(g.home, &kapi_nodes, NULL, g.node, NULL, on_deleted, NULL);
}

/* ---- main ---------------------------------------------------------------------------------- */

static const char usage[] =
    "Usage: kla-relay-test --listen IP:PORT --cert FILE --key FILE --client-ca FILE\n"
    "                      --kubeconfig HOME --remote-kubeconfig PROVIDER --node NAME\n"
    "                      --map NS/POD=RNS/RPOD [--map ...] [--by-config] [--keep-node]\n"
    "\n"
    "Serves the kubelet API relay for node NAME (registered on the home cluster with the\n"
    "listener as its address), relaying the mapped home pods to the provider's pods.\n";

static int parse_map(const char *s, struct map *m)
{
    char buf[600], *eq, *s1, *s2;

    if (strlen(s) >= sizeof(buf))
        return -EINVAL;
    memcpy(buf, s, strlen(s) + 1);
    eq = strchr(buf, '=');
    if (!eq)
        return -EINVAL;
    *eq = '\0';
    s1 = strchr(buf, '/');
    s2 = strchr(eq + 1, '/');
    if (!s1 || !s2)
        return -EINVAL;
    *s1 = *s2 = '\0';
    if (strlen(buf) > KLA_MAX_NS || strlen(s1 + 1) > KLA_MAX_POD || strlen(eq + 1) > KLA_MAX_NS ||
        strlen(s2 + 1) > KLA_MAX_POD)
        return -EINVAL;
    memcpy(m->home_ns, buf, strlen(buf) + 1);
    memcpy(m->home_pod, s1 + 1, strlen(s1 + 1) + 1);
    memcpy(m->remote_ns, eq + 1, strlen(eq + 1) + 1);
    memcpy(m->remote_pod, s2 + 1, strlen(s2 + 1) + 1);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"listen", required_argument, NULL, 'l'},
        {"cert", required_argument, NULL, 'c'},
        {"key", required_argument, NULL, 'k'},
        {"client-ca", required_argument, NULL, 'a'},
        {"kubeconfig", required_argument, NULL, 'h'},
        {"remote-kubeconfig", required_argument, NULL, 'r'},
        {"node", required_argument, NULL, 'n'},
        {"map", required_argument, NULL, 'm'},
        {"by-config", no_argument, NULL, 'b'},
        {"keep-node", no_argument, NULL, 'K'},
        {"help", no_argument, NULL, 'H'},
        {NULL, 0, NULL, 0},
    };
    char err[KC_ERR_LEN], *cert = NULL, *key = NULL, *ca = NULL;
    int c, r;

    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'l':
            g.listen = optarg;
            break;
        case 'c':
            g.cert = optarg;
            break;
        case 'k':
            g.key = optarg;
            break;
        case 'a':
            g.ca = optarg;
            break;
        case 'h':
            g.kubeconfig = optarg;
            break;
        case 'r':
            g.remote = optarg;
            break;
        case 'n':
            g.node = optarg;
            break;
        case 'b':
            g.by_config = true;
            break;
        case 'K':
            g.keep_node = true;
            break;
        case 'm':
            if (g.nmaps >= MAX_MAPS || parse_map(optarg, &g.maps[g.nmaps]) < 0) {
                fprintf(stderr, "kla-relay-test: bad --map '%s'\n", optarg);
                return 2;
            }
            g.nmaps++;
            break;
        case 'H':
            fputs(usage, stdout);
            return 0;
        default:
            fputs(usage, stderr);
            return 2;
        }
    }
    if (!g.listen || !g.cert || !g.key || !g.ca || !g.kubeconfig || !g.remote || !g.node) {
        fputs(usage, stderr);
        return 2;
    }
    log_set_level(getenv("KLA_DEBUG") ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO);
    signal(SIGPIPE, SIG_IGN); /* writes to a connection the peer closed fail with EPIPE */
    if (kc_load_file(g.kubeconfig, NULL, &g.home_kc, err, sizeof(err)) < 0 ||
        kc_load_file(g.remote, NULL, &g.remote_kc, err, sizeof(err)) < 0) {
        fprintf(stderr, "kla-relay-test: %s\n", err);
        return 1;
    }
    if (read_file(g.cert, &cert) < 0 || read_file(g.key, &key) < 0 || read_file(g.ca, &ca) < 0) {
        fprintf(stderr, "kla-relay-test: cannot read the TLS files\n");
        return 1;
    }
    uv_loop_init(&g.loop);
    uv_signal_init(&g.loop, &g.sigterm);
    uv_signal_init(&g.loop, &g.sigint);
    uv_signal_start(&g.sigterm, on_signal, SIGTERM);
    uv_signal_start(&g.sigint, on_signal, SIGINT);
    r = kapi_client_new(&g.loop, g.home_kc, NULL, &g.home);
    if (r == 0)
        r = kapi_client_new(&g.loop, g.remote_kc, NULL, &g.rc);
    if (r == 0)
        r = kla_sar_new(g.home, NULL, &g.sar);
    if (r == 0)
        r = kla_relay_new(&g.loop, NULL, &g.relay);
    if (r < 0) {
        fprintf(stderr, "kla-relay-test: setup: %s\n", strerror(-r));
        return 1;
    }
    kla_relay_set_resolver(g.relay, resolve, NULL);
    {
        struct kla_server_options o = {.addr = g.listen,
                                       .backend = kla_relay_backend(g.relay),
                                       .authz = kla_sar_authorizer(g.sar)};

        r = kla_server_new(&g.loop, &o, &g.srv);
    }
    if (r == 0)
        r = kla_server_set_tls(g.srv, cert, key, ca, err, sizeof(err));
    if (r == 0)
        r = kla_server_start(g.srv, err, sizeof(err));
    x_free(cert);
    x_free(key);
    x_free(ca);
    if (r < 0) {
        fprintf(stderr, "kla-relay-test: server: %s\n", err);
        return 1;
    }
    register_node();
    uv_run(&g.loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&g.loop) < 0)
        log_warn(MOD, "handles left open at exit");
    kc_config_free(g.home_kc);
    kc_config_free(g.remote_kc);
    log_info(MOD, "stopped");
    return g.exit_code;
}
