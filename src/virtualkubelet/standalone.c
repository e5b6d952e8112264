/* `cliqo-agent virtual-kubelet`: one virtual kubelet in a process of its own (Deployment mode,
 * docs/advertisement.md). The operator creates a Deployment running exactly this command with the
 * provider's credential mounted from its Secret; the process registers the virtual node and keeps
 * it, and when its Advertisement is deleted it tears down in order, removes the Advertisement's
 * finalizer and exits 0. SIGTERM stops it at once (the node stays, its Lease expires). It serves
 * its node's kubelet API (logs, exec: kla_service, src/kubeletapi/service.h) on --kubelet-addr,
 * by default every address on the node's kubelet port. */
#include "virtualkubelet/standalone.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/peers.h"
#include "common/fileio.h"
#include "common/errbuf.h"
#include "common/log.h"
#include "common/opts.h"
#include "common/xalloc.h"
#include "kube/backoff.h"
#include "kube/kubeconfig.h"
#include "kubeletapi/module.h"
#include "kubeletapi/service.h"
#include "peering/identity.h"
#include "peering/objects.h"
#include "peering/resources.h"
#include "offloading/pods.h"
#include "virtualkubelet/vk.h"

#define MOD             "virtual-kubelet"
#define OWNER           "standalone"
#define CRED_CHECK_MS   10000
#define FINALIZER_RETRY 1000

static const char usage_head[] =
    "Usage: cliqo-agent virtual-kubelet --peer ID --home-id ID --advertisement NS/NAME\n"
    "                                   --remote-kubeconfig PATH [flags]\n"
    "\n"
    "Runs the virtual kubelet of one provider cluster (the Deployment mode of the advertisement\n"
    "operator): registers the virtual node liqo-<ID>, keeps its status and Lease, probes the\n"
    "provider, maps the offloaded namespaces and runs the pods bound to the node there, and tears\n"
    "down when its Advertisement is deleted.\n"
    "\n"
    "Flags:\n";

static const char usage_foot[] =
    "\n"
    "Exit status: 0 after a teardown or SIGTERM, 1 on a runtime failure, 2 on a bad command "
    "line.\n";

/* The process's own context: this file is the main of `cliqo-agent virtual-kubelet` (a composition
 * root of its own, one virtual kubelet per process), and signal and timer callbacks reach it here.
 */
static struct {
    uv_loop_t loop;
    const char *peer, *home, *home_name, *adv_ns, *adv_name, *remote_path, *kubeconfig, *address,
        *kla_addr;
    unsigned port;
    bool port_given;
    char kla_addr_buf[16];
    struct kla_service *kla;
    struct kc_config *kc;
    struct kapi_client *local;
    struct pu_registry *reg;
    struct pu_unit *unit;
    struct inf_informer *adv_inf, *node_inf, *cc_inf;
    struct vk *vk;
    struct vk_pods_shared *pods; /* the pods reflector's (no metrics here) */
    uv_signal_t sigterm, sigint;
    uv_timer_t *cred_timer, *fin_timer;
    char cred_version[32];
    int exit_code;
    bool stopping, torn_down;
    char adv_ns_buf[64], adv_name_buf[256];
} g;

static void stop(int code);

/* ---- the credential file ----------------------------------------------------------------------
 */

static void load_credential(uv_timer_t *t)
{
    char *data = NULL, version[32], err[256];
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    size_t len = 0;
    int r;

    (void)t;
    if (g.stopping)
        return;
    r = file_read(g.remote_path, PU_CONFIG_MAX, 0, &data, &len);
    if (r < 0) {
        log_warn(MOD, "cannot read the provider's credential %s: %s", g.remote_path, strerror(-r));
        goto out;
    }
    if (!EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) || mdlen < 8)
        goto out;
    for (int i = 0; i < 8; i++)
        snprintf(version + 2 * i, 3, "%02x", md[i]);
    if (strcmp(version, g.cred_version) == 0)
        goto out;
    r = pu_set_credential(g.unit, PU_VK, data, len, version, err, sizeof(err));
    if (r < 0)
        log_warn(MOD, "the provider's credential %s is not usable: %s", g.remote_path, err);
    else
        snprintf(g.cred_version, sizeof(g.cred_version), "%s", version);
out:
    if (data) {
        explicit_bzero(data, len);
        x_free(data);
    }
    if (!g.stopping)
        uv_timer_start(g.cred_timer, load_credential, CRED_CHECK_MS, 0);
}

/* ---- sources -----------------------------------------------------------------------------------
 */

static json_t *src_adv(void *data)
{
    (void)data;
    return inf_get(g.adv_inf, g.adv_ns, g.adv_name);
}

static json_t *src_node(void *data, bool *ret_known)
{
    char node[96];

    (void)data;
    *ret_known = inf_synced(g.node_inf);
    if (vk_node_name_for(g.peer, node, sizeof(node)) < 0)
        return NULL;
    return inf_get(g.node_inf, NULL, node);
}

/* ---- teardown and the finalizer
 * ------------------------------------------------------------------ */

static void remove_finalizer(uv_timer_t *t);

static void after_finalizer(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    (void)c;
    (void)data;
    if (res->err < 0 && res->err != -ENOENT && !g.stopping) {
        log_warn(MOD, "cannot remove the Advertisement's finalizer: %s", res->status.message);
        uv_timer_start(g.fin_timer, remove_finalizer, FINALIZER_RETRY, 0);
        return;
    }
    log_info(MOD, "Advertisement %s/%s released; exiting", g.adv_ns, g.adv_name);
    stop(0);
}

static void remove_finalizer(uv_timer_t *t)
{
    json_t *adv = inf_get(g.adv_inf, g.adv_ns, g.adv_name), *fins, *f, *patch;
    size_t i;
    char *body;

    (void)t;
    if (!adv || !peer_has_finalizer(adv, PEER_VK_FINALIZER)) {
        json_decref(adv);
        stop(0);
        return;
    }
    fins = json_array();
    json_array_foreach(json_object_get(json_object_get(adv, "metadata"), "finalizers"), i, f)
    {
        if (!json_is_string(f) || strcmp(json_string_value(f), PEER_VK_FINALIZER) != 0)
            json_array_append(fins, f);
    }
    patch = json_pack("{s:{s:O,s:o}}", "metadata", "resourceVersion",
                      json_object_get(json_object_get(adv, "metadata"), "resourceVersion"),
                      "finalizers", fins);
    body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    if (!body || kapi_patch(g.local, &peer_res_advertisements, g.adv_ns, g.adv_name, NULL,
                            KAPI_PATCH_MERGE, body, after_finalizer, NULL) < 0)
        uv_timer_start(g.fin_timer, remove_finalizer, FINALIZER_RETRY, 0);
    x_free(body);
    json_decref(patch);
    json_decref(adv);
}

static void on_torn_down(struct vk *v, int err, void *data)
{
    (void)v;
    (void)data;
    if (err < 0)
        return;
    g.torn_down = true;
    remove_finalizer(NULL);
}

static void check_adv(void)
{
    json_t *adv = inf_get(g.adv_inf, g.adv_ns, g.adv_name);
    bool gone = inf_synced(g.adv_inf) && !adv;
    bool deleting = adv && json_object_get(json_object_get(adv, "metadata"), "deletionTimestamp");

    json_decref(adv);
    if ((gone || deleting) && g.vk && !vk_tearing_down(g.vk)) {
        log_info(MOD, "Advertisement %s/%s is %s: tearing down", g.adv_ns, g.adv_name,
                 gone ? "gone" : "being deleted");
        vk_teardown(g.vk, on_torn_down, NULL);
    }
}

static void on_adv(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    (void)obj;
    (void)data;
    vk_kick(g.vk);
    check_adv();
}

static void on_adv_update(struct inf_informer *inf, json_t *o, json_t *n, void *data)
{
    (void)o;
    on_adv(inf, n, data);
}

static void on_node(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    (void)obj;
    (void)data;
    vk_kick(g.vk);
}

static void on_node_update(struct inf_informer *inf, json_t *o, json_t *n, void *data)
{
    (void)o;
    on_node(inf, n, data);
}

static void on_cc(struct inf_informer *inf, json_t *obj, void *data)
{
    const json_t *adv = json_object_get(json_object_get(obj, "spec"), "advertisementConfig");
    json_int_t retry = json_integer_value(json_object_get(adv, "keepaliveRetryTime"));
    json_int_t thr = json_integer_value(json_object_get(adv, "keepaliveThreshold"));

    (void)inf;
    (void)data;
    if (strcmp(kapi_obj_name(obj) ? kapi_obj_name(obj) : "", PEER_CLUSTER_CONFIG) != 0)
        return;
    vk_set_keepalive(g.vk, retry > 0 && retry <= 3600 ? (unsigned)retry : 20,
                     thr > 0 && thr <= 1000 ? (unsigned)thr : 3);
    vk_set_config(g.vk, obj);
}

static void on_cc_update(struct inf_informer *inf, json_t *o, json_t *n, void *data)
{
    (void)o;
    on_cc(inf, n, data);
}

/* ---- life cycle
 * ---------------------------------------------------------------------------------- */

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
    /* Before the clients: it cancels its requests and authorisations now (its listener and
     * connections close on the next loop iterations). */
    kla_service_close(g.kla, NULL, NULL);
    g.kla = NULL;
    vk_free(g.vk);
    g.vk = NULL;
    vk_pods_shared_free(g.pods); /* after its reflector, and the kubelet API that looked in it */
    g.pods = NULL;
    inf_free(g.adv_inf);
    inf_free(g.node_inf);
    inf_free(g.cc_inf);
    g.adv_inf = g.node_inf = g.cc_inf = NULL;
    ktimer_free(g.cred_timer);
    ktimer_free(g.fin_timer);
    g.cred_timer = g.fin_timer = NULL;
    pu_registry_free(g.reg);
    g.reg = NULL;
    kapi_client_abort(g.local);
    g.local = NULL;
    uv_close((uv_handle_t *)&g.sigterm, on_closed);
    uv_close((uv_handle_t *)&g.sigint, on_closed);
}

static void on_signal(uv_signal_t *s, int signum)
{
    (void)s;
    log_info(MOD, "received %s: stopping (the node stays; its Lease expires)", strsignal(signum));
    stop(0);
}

/* The command line into g: 0, 1 after the help, or -EINVAL with the reason in err. */
static int parse(int argc, char **argv, char *err, size_t errlen)
{
    enum log_level level = log_get_level();
    const char *adv = NULL, *slash;
    unsigned port_flag = 0;
    bool help = false;
    uint64_t port;
    /* clang-format off */
    const struct opts_def defs[] = {
        {.name = "peer", .kind = OPTS_STRING, .arg = "ID", .dest = &g.peer,
         .help = "the provider's cluster ID"},
        {.name = "home-id", .kind = OPTS_STRING, .arg = "ID", .dest = &g.home,
         .help = "this cluster's ID (names the NamespaceMap on the provider)"},
        {.name = "home-name", .kind = OPTS_STRING, .arg = "NAME", .dest = &g.home_name,
         .help = "this cluster's name (in the names of remote namespaces)"},
        {.name = "advertisement", .kind = OPTS_STRING, .arg = "NS/NAME", .dest = &adv,
         .help = "the accepted Advertisement"},
        {.name = "remote-kubeconfig", .kind = OPTS_STRING, .arg = "PATH", .dest = &g.remote_path,
         .help = "the credential for the provider (a mounted Secret; re-read when it changes)"},
        {.name = "kubeconfig", .kind = OPTS_STRING, .arg = "PATH", .dest = &g.kubeconfig,
         .help = "the home cluster (default: $KUBECONFIG, ~/.kube/config, then the in-cluster "
                 "service account)"},
        {.name = "node-address", .kind = OPTS_STRING, .arg = "IP", .dest = &g.address,
         .help = "the virtual node's InternalIP (default $POD_IP, else 127.0.0.1)"},
        {.name = "kubelet-port", .kind = OPTS_UINT, .arg = "PORT", .dest = &port_flag,
         .size = sizeof(port_flag), .min = 1, .max = 65535,
         .help = "the virtual node's kubelet port (default 10250, or the port of --kubelet-addr)"},
        {.name = "kubelet-addr", .kind = OPTS_STRING, .arg = "HOST:PORT", .dest = &g.kla_addr,
         .help = "where its kubelet API (logs, exec) listens (default every address, on the "
                 "kubelet port)"},
        {.name = "log-level", .kind = OPTS_CUSTOM, .arg = "LEVEL", .dest = &level,
         .fn = opts_log_level, .help = "debug, info, warn or error (default info)"},
        {.name = "help", .kind = OPTS_FLAG, .flags = OPTS_STOP, .dest = &help,
         .help = "print this help and exit"},
        {0},
    };
    /* clang-format on */
    const struct opts_spec spec = {
        .defs = defs, .noun = "flag", .usage = usage_head, .footer = usage_foot};

    if (opts_parse(&spec, argc, argv, err, errlen) < 0)
        return -EINVAL;
    if (help) {
        opts_print_help(&spec, stdout);
        return 1;
    }
    log_set_level(level);
    g.port = port_flag ? port_flag : 10250;
    g.port_given = port_flag != 0;
    if (!g.peer || !peer_cluster_id_valid(g.peer) || !g.home || !peer_cluster_id_valid(g.home))
        return errbuf_fmt(err, errlen, -EINVAL, "--peer and --home-id must be cluster IDs");
    if (g.home_name && *g.home_name && !peer_cluster_name_valid(g.home_name))
        return errbuf_fmt(err, errlen, -EINVAL, "--home-name must be a cluster name");
    if (!g.remote_path || !*g.remote_path)
        return errbuf_fmt(err, errlen, -EINVAL, "--remote-kubeconfig is required");
    if (g.address) {
        unsigned char ip[16];

        if (inet_pton(AF_INET, g.address, ip) != 1 && inet_pton(AF_INET6, g.address, ip) != 1)
            return errbuf_fmt(err, errlen, -EINVAL, "--node-address: '%s' is not an IP address",
                              g.address);
    }
    if (g.kla_addr) {
        const char *colon = strrchr(g.kla_addr, ':');

        if (!colon || parse_u64(colon + 1, 65535, &port) < 0 || port == 0 ||
            (g.port_given && port != g.port))
            return errbuf_fmt(err, errlen, -EINVAL, "--kubelet-addr: want HOST:PORT with a port%s",
                              g.port_given ? " equal to --kubelet-port" : "");
        g.port = (unsigned)port;
    } else {
        snprintf(g.kla_addr_buf, sizeof(g.kla_addr_buf), ":%u", g.port);
        g.kla_addr = g.kla_addr_buf;
    }
    slash = adv ? strchr(adv, '/') : NULL;
    if (!slash || (size_t)(slash - adv) >= sizeof(g.adv_ns_buf) ||
        strlen(slash + 1) >= sizeof(g.adv_name_buf) || slash == adv || !slash[1])
        return errbuf_fmt(err, errlen, -EINVAL, "--advertisement must be NAMESPACE/NAME");
    snprintf(g.adv_ns_buf, sizeof(g.adv_ns_buf), "%.*s", (int)(slash - adv), adv);
    snprintf(g.adv_name_buf, sizeof(g.adv_name_buf), "%s", slash + 1);
    g.adv_ns = g.adv_ns_buf;
    g.adv_name = g.adv_name_buf;
    return 0;
}

static int start(void)
{
    char err[KC_ERR_LEN], fs[320], node[96];
    struct inf_options ao = {.resource = &peer_res_advertisements};
    struct inf_options no = {.resource = &kapi_nodes};
    struct inf_options co = {.resource = &peer_res_clusterconfigs};
    struct inf_handlers ah = {.on_add = on_adv, .on_update = on_adv_update, .on_delete = on_adv};
    struct inf_handlers nh = {.on_add = on_node, .on_update = on_node_update, .on_delete = on_node};
    struct inf_handlers ch = {.on_add = on_cc, .on_update = on_cc_update};
    const char *pod_ip = getenv("POD_IP");
    struct vk_params p = {0};
    int r;

    r = g.kubeconfig ? kc_load_file(g.kubeconfig, NULL, &g.kc, err, sizeof(err))
                     : kc_load_default(NULL, &g.kc, err, sizeof(err));
    if (r < 0) {
        log_error(MOD, "cannot load the Kubernetes client configuration: %s", err);
        return r;
    }
    if ((r = kapi_client_new(&g.loop, g.kc, NULL, &g.local)) < 0 ||
        (r = pu_registry_new(&g.loop, NULL, NULL, &g.reg)) < 0 ||
        (r = pu_acquire(g.reg, g.peer, OWNER, &g.unit)) < 0)
        return log_errno(r, MOD, "cannot set up the clients");
    if (!(g.cred_timer = ktimer_new(&g.loop, NULL)) || !(g.fin_timer = ktimer_new(&g.loop, NULL)))
        return -ENOMEM;
    load_credential(NULL);
    snprintf(fs, sizeof(fs), "metadata.name=%s", g.adv_name);
    ao.namespace_ = g.adv_ns;
    ao.field_selector = fs;
    if ((r = inf_new(g.local, &ao, &ah, NULL, &g.adv_inf)) < 0)
        return r;
    if (vk_node_name_for(g.peer, node, sizeof(node)) < 0)
        return -EINVAL;
    {
        char nfs[160];

        snprintf(nfs, sizeof(nfs), "metadata.name=%s", node);
        no.field_selector = nfs;
        r = inf_new(g.local, &no, &nh, NULL, &g.node_inf);
    }
    if (r < 0 || (r = inf_new(g.local, &co, &ch, NULL, &g.cc_inf)) < 0)
        return r;
    p.loop = &g.loop;
    p.local = g.local;
    p.unit = g.unit;
    p.peer_id = g.peer;
    p.home_id = g.home;
    p.home_name = g.home_name;
    p.node_address = g.address ? g.address : (pod_ip && *pod_ip ? pod_ip : "127.0.0.1");
    p.kubelet_port = g.port;
    p.src.advertisement = src_adv;
    p.src.node = src_node;
    if ((r = vk_pods_shared_new(NULL, &g.pods)) < 0)
        return r;
    p.pods = g.pods;
    if ((r = vk_new(&p, &g.vk)) < 0)
        return r;
    {
        struct kla_service_options ko = {
            .listen_addr = g.kla_addr, .node_address = p.node_address, .name = node};

        if (kla_service_check(&ko, err, sizeof(err)) < 0) {
            log_error(MOD, "the kubelet API: %s", err);
            return -EINVAL;
        }
        if ((r = kla_service_new(&g.loop, g.local, &ko, &g.kla)) < 0)
            return log_errno(r, MOD, "cannot set up the kubelet API on %s", g.kla_addr);
        kla_service_set_resolver(g.kla, vk_kla_resolve, g.pods);
    }
    if ((r = inf_start(g.adv_inf)) < 0 || (r = inf_start(g.node_inf)) < 0 ||
        (r = inf_start(g.cc_inf)) < 0)
        return r;
    log_info(MOD, "virtual kubelet of provider %s for Advertisement %s/%s (home cluster %s)",
             g.peer, g.adv_ns, g.adv_name, g.home);
    return 0;
}

int vk_standalone_main(int argc, char **argv)
{
    char err[256];
    int r, code;

    memset(&g, 0, sizeof(g));
    r = parse(argc, argv, err, sizeof(err));
    if (r < 0)
        fprintf(stderr, "cliqo-agent virtual-kubelet: %s\n", err);
    if (r != 0)
        return r < 0 ? 2 : 0;
    signal(SIGPIPE, SIG_IGN);
    if (uv_loop_init(&g.loop) < 0)
        return 1;
    uv_signal_init(&g.loop, &g.sigterm);
    uv_signal_init(&g.loop, &g.sigint);
    uv_signal_start(&g.sigterm, on_signal, SIGTERM);
    uv_signal_start(&g.sigint, on_signal, SIGINT);
    r = start();
    if (r < 0)
        stop(1);
    uv_run(&g.loop, UV_RUN_DEFAULT);
    code = g.exit_code;
    g.kc = kc_config_free(g.kc);
    if (uv_loop_close(&g.loop) < 0 && code == 0)
        code = 1;
    return code;
}
