#include "agent/config.h"
#include "common/duration.h"
#include "common/errbuf.h"
#include "common/netaddr.h"
#include "common/opts.h"
#include "common/strutil.h"
#include "httpd/httpd.h"
#include "kube/names.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_head[] =
    "Usage: cliqo-agent [flags]\n"
    "       cliqo-agent gateway [flags]\n"
    "       cliqo-agent node [flags]\n"
    "       cliqo-agent virtual-kubelet ... (see cliqo-agent virtual-kubelet --help)\n"
    "\n"
    "The cliqo agent of one cluster: identity, peering and sharing controllers, with\n"
    "health checks, Prometheus metrics and leader election.\n"
    "\n"
    "`cliqo-agent gateway` is the data plane's gateway instead (docs/dataplane.md), run on\n"
    "the gateway node with host networking: one WireGuard interface (wireguard-go, which it\n"
    "supervises) with one peer per peering, the routes to each peer's pods (protocol 146) and\n"
    "the nftables table cliqo (prefix NAT), reconciled with what the peers' NetworkConfigs\n"
    "and TunnelEndpoints say; its private key in Secret cliqo-wg-key of namespace\n"
    "cliqo-gateway. Its Lease is cliqo-gateway; the --gateway-* and tunnel flags below are\n"
    "its own.\n"
    "\n"
    "`cliqo-agent node` is the data plane's per-node mode (docs/dataplane.md, section 5), run\n"
    "on every node but the gateway's with host networking (a DaemonSet): one route per peer's\n"
    "pod block as seen here, via the InternalIP of the node labelled net.liqo.io/gateway=true\n"
    "(protocol 146), reconciled with the peers' NetworkConfigs; read-only on the API, no\n"
    "leader election by default. --node-name (or $NODE_NAME) is required. The routes stay\n"
    "when it stops (a rolling update does not cut traffic); the next start reconciles them.\n"
    "\n"
    "Flags:\n";

static const char usage_foot[] =
    "\n"
    "HOST may be empty (all IPv4 addresses), an IPv4 address, [IPv6] or localhost.\n"
    "Durations: a whole number with a unit, e.g. 500ms, 15s, 2m.\n"
    "Exit status: 0 after a graceful shutdown (SIGTERM, SIGINT), 1 on a runtime failure or\n"
    "lost leadership, 2 on a bad command line.\n";

int agent_parse_duration(const char *s, uint64_t *ret_ms)
{
    return dur_parse(s, 0, ret_ms);
}

/* --namespace */
static int namespace_flag(const struct opts_def *o, const char *v, char *err, size_t errlen)
{
    if (!kname_dns_label(v))
        return opts_fail(o, err, errlen, "'%s' is not a valid namespace name", v);
    *(const char **)o->dest = v;
    return 0;
}

/* --lease-name */
static int object_name_flag(const struct opts_def *o, const char *v, char *err, size_t errlen)
{
    if (!kname_dns_subdomain(v))
        return opts_fail(o, err, errlen, "'%s' is not a valid object name", v);
    *(const char **)o->dest = v;
    return 0;
}

/* The listeners' HOST:PORT. */
static int addr_flag(const struct opts_def *o, const char *v, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t sl;

    if (netaddr_parse(v, &ss, &sl) < 0)
        return opts_fail(o, err, errlen,
                         "invalid address '%s' (expected HOST:PORT, e.g. :8080, 127.0.0.1:8080, "
                         "[::1]:8080)",
                         v);
    *(const char **)o->dest = v;
    return 0;
}

/* --kubelet-addr: also its port, which the virtual nodes publish. */
static int kubelet_addr_flag(const struct opts_def *o, const char *v, char *err, size_t errlen)
{
    struct agent_config *cfg = o->dest;
    struct sockaddr_storage ss;
    socklen_t sl;
    in_port_t port;

    if (netaddr_parse(v, &ss, &sl) < 0)
        return addr_flag(o, v, err, errlen);
    port = ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                    : ((struct sockaddr_in *)&ss)->sin_port;
    if (ntohs(port) == 0)
        return opts_fail(o, err, errlen, "the port must be given (nodes publish it)");
    cfg->kubelet_addr = v;
    cfg->kubelet_port = ntohs(port);
    return 0;
}

static bool is_ip(const char *v)
{
    struct in6_addr a6;
    struct in_addr a4;

    return inet_pton(AF_INET, v, &a4) == 1 || inet_pton(AF_INET6, v, &a6) == 1;
}

/* --node-address */
static int ip_flag(const struct opts_def *o, const char *v, char *err, size_t errlen)
{
    if (!is_ip(v))
        return opts_fail(o, err, errlen, "'%s' is not an IP address", v);
    *(const char **)o->dest = v;
    return 0;
}

/* --webhook-url, --api-server-url, --auth-url */
static int https_url_flag(const struct opts_def *o, const char *v, char *err, size_t errlen)
{
    if (strncmp(v, "https://", 8) != 0 || strlen(v) < 9 || strlen(v) > 1024)
        return opts_fail(o, err, errlen, "expected an https:// URL, not '%s'", v);
    *(const char **)o->dest = v;
    return 0;
}

/* --identity */
static int identity_flag(const struct opts_def *o, const char *v, char *err, size_t errlen)
{
    struct agent_config *cfg = o->dest;

    if (!*v || strlen(v) > AGENT_MAX_IDENTITY)
        return opts_fail(o, err, errlen, "must be 1 to %d characters", AGENT_MAX_IDENTITY);
    snprintf(cfg->identity, sizeof(cfg->identity), "%s", v);
    return 0;
}

/* --tunnel-interface: a Linux interface name. */
static int ifname_flag(const struct opts_def *o, const char *v, char *err, size_t errlen)
{
    size_t n = strlen(v);

    if (n == 0 || n > 15 ||
        strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                  "0123456789_.-") != n)
        return opts_fail(o, err, errlen,
                         "'%s' is not an interface name (1 to 15 of A-Z a-z 0-9 _ . -)", v);
    *(const char **)o->dest = v;
    return 0;
}

/* --gateway-endpoint: a numeric IP and a port (never a name: peers must not resolve one). */
static int endpoint_flag(const struct opts_def *o, const char *v, char *err, size_t errlen)
{
    const char *colon = strrchr(v, ':'), *h = v;
    size_t hl = colon ? (size_t)(colon - v) : 0;
    char host[64];
    uint64_t port = 0;

    if (hl >= 2 && v[0] == '[' && v[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    if (!colon || hl == 0 || hl >= sizeof(host) || parse_u64(colon + 1, 65535, &port) < 0 ||
        port < 1)
        return opts_fail(o, err, errlen, "expected IP:PORT or [IPv6]:PORT, not '%s'", v);
    memcpy(host, h, hl);
    host[hl] = '\0';
    if (!is_ip(host) || (h == v && strchr(host, ':')))
        return opts_fail(o, err, errlen, "'%s' is not an IP address (names are not resolved)",
                         host);
    *(const char **)o->dest = v;
    return 0;
}

_Static_assert(AGENT_MAX_WEBHOOK_CNS == HTTPD_MAX_CLIENT_CNS, "the webhook server's name limit");
_Static_assert(AGENT_CN_MAX == HTTPD_CN_MAX, "the webhook server's name length");

/* --webhook-client-cn: one name or a comma-separated list, added to cfg's. */
static int client_cn_flag(const struct opts_def *o, const char *v, char *err, size_t errlen)
{
    struct agent_config *cfg = o->dest;
    const char *p = v;

    for (;;) {
        size_t n = strcspn(p, ",");
        bool ok = n > 0 && n <= AGENT_CN_MAX;

        for (size_t i = 0; ok && i < n; i++)
            ok = (unsigned char)p[i] >= 0x20 && (unsigned char)p[i] < 0x7f;
        if (!ok)
            return opts_fail(o, err, errlen,
                             "'%s' is not a list of common names (1 to %d printable characters "
                             "each, comma-separated)",
                             v, AGENT_CN_MAX);
        if (cfg->nwebhook_client_cn >= AGENT_MAX_WEBHOOK_CNS)
            return opts_fail(o, err, errlen, "more than %d names", AGENT_MAX_WEBHOOK_CNS);
        snprintf(cfg->webhook_client_cn[cfg->nwebhook_client_cn++], AGENT_CN_MAX + 1, "%.*s",
                 (int)n, p);
        if (!p[n])
            return 0;
        p += n + 1;
    }
}

/* The flags of cliqo-agent, writing into cfg: one table for the parser and the help. */
struct agent_flags {
    struct opts_def defs[40];
    struct opts_spec spec;
};

static const char *const list_encodings[] = {"protobuf", "json", NULL};

static void agent_flags_init(struct agent_flags *f, struct agent_config *cfg)
{
    /* clang-format off */
    const struct opts_def defs[] = {
        {.name = "kubeconfig", .kind = OPTS_STRING, .flags = OPTS_NONEMPTY, .arg = "PATH",
         .dest = &cfg->kubeconfig,
         .help = "kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, then the in-cluster "
                 "service account)"},
        {.name = "namespace", .kind = OPTS_CUSTOM, .arg = "NS", .dest = &cfg->namespace_,
         .fn = namespace_flag,
         .help = "namespace of the agent's objects and Lease (default cliqo)"},
        {.name = "http-addr", .kind = OPTS_CUSTOM, .arg = "HOST:PORT", .dest = &cfg->http_addr,
         .fn = addr_flag, .help = "health (/healthz, /livez, /readyz) (default :8080)"},
        {.name = "metrics-addr", .kind = OPTS_CUSTOM, .arg = "HOST:PORT",
         .dest = &cfg->metrics_addr, .fn = addr_flag,
         .help = "/metrics (default 127.0.0.1:9090; the --http-addr listener when that is a "
                 "loopback address or the same)"},
        {.name = "auth-addr", .kind = OPTS_CUSTOM, .arg = "HOST:PORT", .dest = &cfg->auth_addr,
         .fn = addr_flag, .help = "the peering auth HTTPS endpoint (default :8443)"},
        {.name = "identity", .kind = OPTS_CUSTOM, .arg = "NAME", .dest = cfg, .fn = identity_flag,
         .help = "leader election identity (default $POD_NAME, else <hostname>_<pid>)"},
        {.name = "leader-elect", .kind = OPTS_BOOL, .dest = &cfg->leader_elect,
         .help = "elect one active replica with a Lease (default true)"},
        {.name = "lease-name", .kind = OPTS_CUSTOM, .arg = "NAME", .dest = &cfg->lease_name,
         .fn = object_name_flag, .help = "the Lease's name (default cliqo-agent)"},
        {.name = "lease-duration", .kind = OPTS_DURATION, .arg = "DUR",
         .dest = &cfg->lease_duration_ms, .min = 1,
         .help = "how long standbys wait before taking over (default 15s)"},
        {.name = "renew-deadline", .kind = OPTS_DURATION, .arg = "DUR",
         .dest = &cfg->renew_deadline_ms, .min = 1,
         .help = "the leader gives up when it cannot renew in time (default 10s; below "
                 "--lease-duration)"},
        {.name = "retry-period", .kind = OPTS_DURATION, .arg = "DUR", .dest = &cfg->retry_period_ms,
         .min = 1, .help = "between attempts (default 2s; below --renew-deadline)"},
        {.name = "shutdown-timeout", .kind = OPTS_DURATION, .arg = "DUR",
         .dest = &cfg->shutdown_timeout_ms, .min = 1,
         .help = "longest graceful shutdown before a forced exit (default 10s)"},
        {.name = "api-server-url", .kind = OPTS_CUSTOM, .arg = "URL", .dest = &cfg->api_server_url,
         .fn = https_url_flag,
         .help = "the API server URL peers are given to reach this cluster (default: the server "
                 "of the agent's own kubeconfig)"},
        {.name = "auth-url", .kind = OPTS_CUSTOM, .arg = "URL", .dest = &cfg->auth_url,
         .fn = https_url_flag,
         .help = "this cluster's auth endpoint URL, sent to peers (default: ClusterConfig "
                 "spec.peeringConfig.authUrl)"},
        {.name = "unpeer-timeout", .kind = OPTS_DURATION, .arg = "DUR",
         .dest = &cfg->unpeer_timeout_ms, .min = 1,
         .help = "how long unpeering waits for an unreachable peer before finishing locally "
                 "(default 30s)"},
        {.name = "peer-check-interval", .kind = OPTS_DURATION, .arg = "DUR",
         .dest = &cfg->peer_check_ms, .min = 1,
         .help = "how often established peerings are checked on the peer (default 30s)"},
        {.name = "kube-api-qps", .kind = OPTS_UINT, .arg = "N", .dest = &cfg->kube_api_qps,
         .size = sizeof(cfg->kube_api_qps), .min = 1, .max = 100000,
         .help = "requests per second the modules send to this cluster's API server, at most: "
                 "pod statuses and Events of offloaded pods, reflected objects (default "
                 AGENT_KUBE_QPS_S "; a 429 slows it down; docs/offloading.md)"},
        {.name = "kube-api-burst", .kind = OPTS_UINT, .arg = "N", .dest = &cfg->kube_api_burst,
         .size = sizeof(cfg->kube_api_burst), .min = 1, .max = 100000,
         .help = "requests sent at once above that rate (default twice --kube-api-qps)"},
        {.name = "replay-at-once", .kind = OPTS_UINT, .arg = "N", .dest = &cfg->replay_at_once,
         .size = sizeof(cfg->replay_at_once), .min = 0, .max = 100000000,
         .help = "objects an informer may cache for them to be handed at once to the modules when "
                 "they start (on becoming the leader); a larger one is handed over in slices of 3 "
                 "ms, one per loop iteration, its events paused until then (default "
                 AGENT_REPLAY_AT_ONCE_S "; 0: always in slices)"},
        {.name = "list-encoding", .kind = OPTS_CHOICE, .arg = "E", .dest = &cfg->list_encoding,
         .choices = list_encodings,
         .help = "how the informers' lists and watches of built-in kinds are read: protobuf (the "
                 "default, from an API server of the version cliqo was built for; cheaper for the "
                 "server) or json (docs/architecture.md, kpb)"},
        {.name = "vk-pod-creations", .kind = OPTS_UINT, .arg = "N",
         .dest = &cfg->vk_pod_creations, .size = sizeof(cfg->vk_pod_creations), .min = 1,
         .max = 127,
         .help = "remote pods each virtual kubelet creates at once on its provider; the pods "
                 "past them wait their turn, out of the queue, so that status writes home never "
                 "wait behind the provider's slow creations (default 96 of the 128 requests in "
                 "flight)"},
        {.name = "loop-trace-ms", .kind = OPTS_UINT, .arg = "MS", .dest = &cfg->loop_trace_ms,
         .size = sizeof(cfg->loop_trace_ms), .min = 0, .max = 60000,
         .help = "diagnostics: when one event-loop iteration has used MS of CPU, write the loop's "
                 "stack to standard error, then every 2 ms while it goes on (finds what holds the "
                 "loop; default 0: off)"},
        {.name = "kubelet-addr", .kind = OPTS_CUSTOM, .arg = "HOST:PORT", .dest = cfg,
         .fn = kubelet_addr_flag,
         .help = "the kubelet API of the virtual nodes (logs, exec; default :10250; its port is "
                 "the one nodes publish)"},
        {.name = "node-address", .kind = OPTS_CUSTOM, .arg = "IP", .dest = &cfg->node_address,
         .fn = ip_flag,
         .help = "the virtual nodes' InternalIP, where the API server reaches that kubelet API "
                 "(default $POD_IP, else 127.0.0.1)"},
        {.name = "webhook-addr", .kind = OPTS_CUSTOM, .arg = "HOST:PORT",
         .dest = &cfg->webhook_addr, .fn = addr_flag,
         .help = "the admission webhooks' HTTPS server (default :9443)"},
        {.name = "webhook-url", .kind = OPTS_CUSTOM, .arg = "URL", .dest = &cfg->webhook_url,
         .fn = https_url_flag,
         .help = "the https:// URL the API server calls the webhooks at (default: Service "
                 "cliqo-agent-webhook, port 443)"},
        {.name = "webhook-client-ca", .kind = OPTS_STRING, .flags = OPTS_NONEMPTY, .arg = "FILE",
         .dest = &cfg->webhook_client_ca,
         .help = "PEM bundle of the CA that signs the API server's webhook client certificate: "
                 "the webhooks then require it in the TLS handshake (re-read every minute). "
                 "Without it anyone who reaches the port can send reviews (a warning; the offer "
                 "enforcement then holds reservations 3 s, not 15, and its refusals show no "
                 "amounts). docs/security.md"},
        {.name = "webhook-client-cn", .kind = OPTS_CUSTOM, .arg = "NAME", .dest = cfg,
         .fn = client_cn_flag,
         .help = "a common name that certificate may have (repeatable or comma-separated, at "
                 "most 16; default: any of the CA)"},
        {.name = "tunnel-interface", .kind = OPTS_CUSTOM, .arg = "NAME",
         .dest = &cfg->tunnel_interface, .fn = ifname_flag,
         .help = "gateway: the WireGuard interface; its userspace API socket is "
                 "/var/run/wireguard/NAME.sock, so two gateways sharing that directory need "
                 "two names (default cliqo0)"},
        {.name = "gateway-endpoint", .kind = OPTS_CUSTOM, .arg = "IP:PORT",
         .dest = &cfg->gateway_endpoint, .fn = endpoint_flag,
         .help = "gateway: the numeric address and UDP port peers reach this gateway at; it "
                 "listens on that port (default $POD_IP:51820)"},
        {.name = "underlay-mtu", .kind = OPTS_UINT, .arg = "N", .dest = &cfg->underlay_mtu,
         .size = sizeof(cfg->underlay_mtu), .min = 1360, .max = 65535,
         .help = "gateway: the MTU of the path between gateways; the tunnel's is 80 less "
                 "(default: the MTU of the interface holding the endpoint's address)"},
        {.name = "wg-keepalive", .kind = OPTS_DURATION, .arg = "DUR",
         .dest = &cfg->wg_keepalive_ms, .min = 1000, .max = 65535000,
         .help = "gateway: WireGuard's persistent keepalive, whole seconds (default 25s)"},
        {.name = "wireguard-go", .kind = OPTS_STRING, .flags = OPTS_NONEMPTY, .arg = "PATH",
         .dest = &cfg->wireguard_go,
         .help = "gateway: the userspace WireGuard program (default wireguard-go, from PATH)"},
        {.name = "node-name", .kind = OPTS_CUSTOM, .arg = "NAME", .dest = &cfg->node_name,
         .fn = object_name_flag,
         .help = "node: the Node this runs on (default $NODE_NAME); none is installed on the "
                 "gateway node"},
        {.name = "log-level", .kind = OPTS_CUSTOM, .arg = "LEVEL", .dest = &cfg->log_level,
         .fn = opts_log_level, .help = "debug, info, warn or error (default info)"},
        {.name = "version", .kind = OPTS_FLAG, .dest = &cfg->version,
         .help = "print the version and exit"},
        {.name = "help", .kind = OPTS_FLAG, .dest = &cfg->help, .help = "print this help and exit"},
        {0},
    };
    /* clang-format on */

    _Static_assert(sizeof(defs) <= sizeof(f->defs), "agent_flags: defs too small");
    memcpy(f->defs, defs, sizeof(defs));
    f->spec = (struct opts_spec){
        .defs = f->defs, .noun = "flag", .usage = usage_head, .footer = usage_foot};
}

void agent_usage(FILE *f)
{
    struct agent_config cfg;
    struct agent_flags flags;

    agent_flags_init(&flags, &cfg);
    opts_print_help(&flags.spec, f);
}

static void default_identity(struct agent_config *cfg)
{
    const char *pod = getenv("POD_NAME");
    char host[128] = "";

    if (pod && *pod && strlen(pod) <= AGENT_MAX_IDENTITY) {
        snprintf(cfg->identity, sizeof(cfg->identity), "%s", pod);
        return;
    }
    if (gethostname(host, sizeof(host) - 1) < 0 || !host[0])
        snprintf(host, sizeof(host), "cliqo-agent");
    snprintf(cfg->identity, sizeof(cfg->identity), "%.100s_%ld", host, (long)getpid());
}

int agent_config_parse(int argc, char **argv, struct agent_config *cfg, char *err, size_t errlen)
{
    struct agent_flags flags;
    const char *ip = getenv("POD_IP");

    memset(cfg, 0, sizeof(*cfg));
    if (argc > 1 && strcmp(argv[1], "gateway") == 0) {
        cfg->gateway = true;
        argc--;
        argv++;
    } else if (argc > 1 && strcmp(argv[1], "node") == 0) {
        cfg->node = true;
        argc--;
        argv++;
    }
    cfg->namespace_ = "cliqo";
    cfg->http_addr = ":8080";
    cfg->auth_addr = ":8443";
    cfg->kubelet_addr = ":10250";
    cfg->kubelet_port = 10250;
    cfg->webhook_addr = ":9443";
    /* One node agent per node: nothing to elect. */
    cfg->leader_elect = !cfg->node;
    cfg->lease_name = cfg->gateway ? "cliqo-gateway" : cfg->node ? "cliqo-node" : "cliqo-agent";
    cfg->tunnel_interface = "cliqo0";
    cfg->wg_keepalive_ms = 25000;
    cfg->wireguard_go = "wireguard-go";
    cfg->lease_duration_ms = 15000;
    cfg->renew_deadline_ms = 10000;
    cfg->retry_period_ms = 2000;
    cfg->shutdown_timeout_ms = 10000;
    cfg->log_level = LOG_LEVEL_INFO;
    cfg->kube_api_qps = AGENT_KUBE_QPS;
    cfg->replay_at_once = AGENT_REPLAY_AT_ONCE;
    cfg->list_encoding = "protobuf";
    agent_flags_init(&flags, cfg);
    if (opts_parse(&flags.spec, argc, argv, err, errlen) < 0)
        return -EINVAL;
    if (!cfg->kube_api_burst)
        cfg->kube_api_burst = cfg->kube_api_qps * 2;
    if (cfg->nwebhook_client_cn && !cfg->webhook_client_ca)
        return errbuf_fmt(err, errlen, -EINVAL, "--webhook-client-cn needs --webhook-client-ca");
    if (cfg->renew_deadline_ms >= cfg->lease_duration_ms)
        return errbuf_fmt(err, errlen, -EINVAL,
                          "--renew-deadline must be shorter than --lease-duration");
    if (cfg->retry_period_ms >= cfg->renew_deadline_ms)
        return errbuf_fmt(err, errlen, -EINVAL,
                          "--retry-period must be shorter than --renew-deadline");
    if (cfg->wg_keepalive_ms % 1000)
        return errbuf_fmt(err, errlen, -EINVAL, "--wg-keepalive must be whole seconds");
    if (cfg->gateway && !cfg->gateway_endpoint && !cfg->help && !cfg->version) {
        static char def[64];

        if (!ip || !is_ip(ip) || strchr(ip, ':'))
            return errbuf_fmt(err, errlen, -EINVAL,
                              "gateway: --gateway-endpoint is needed ($POD_IP is not an IPv4 "
                              "address)");
        snprintf(def, sizeof(def), "%s:51820", ip);
        cfg->gateway_endpoint = def;
    }
    if (cfg->node && !cfg->node_name && !cfg->help && !cfg->version) {
        const char *env = getenv("NODE_NAME");

        if (!env || !kname_dns_subdomain(env))
            return errbuf_fmt(err, errlen, -EINVAL,
                              "node: --node-name is needed ($NODE_NAME is not a node name)");
        cfg->node_name = env;
    }
    if (!cfg->identity[0])
        default_identity(cfg);
    if (!cfg->node_address)
        cfg->node_address = ip && is_ip(ip) ? ip : "127.0.0.1";
    return 0;
}
