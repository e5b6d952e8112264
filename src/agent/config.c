#include "agent/config.h"
#include "common/netaddr.h"
#include "common/strutil.h"
#include "httpd/httpd.h"
#include "kube/names.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *agent_usage(void)
{
    return "Usage: cliqo-agent [flags]\n"
           "\n"
           "The cliqo agent of one cluster: identity, peering and sharing controllers, with\n"
           "health checks, Prometheus metrics and leader election.\n"
           "\n"
           "Flags:\n"
           "  --kubeconfig PATH         kubeconfig to use (default: $KUBECONFIG, ~/.kube/config,\n"
           "                            then the in-cluster service account)\n"
           "  --namespace NS            namespace of the agent's objects and Lease (default "
           "cliqo)\n"
           "  --http-addr HOST:PORT     health (/healthz, /livez, /readyz) (default :8080)\n"
           "  --metrics-addr HOST:PORT  /metrics (default 127.0.0.1:9090; the --http-addr\n"
           "                            listener when that is a loopback address or the same)\n"
           "  --auth-addr HOST:PORT     the peering auth HTTPS endpoint (default :8443)\n"
           "  --identity NAME           leader election identity (default $POD_NAME, else\n"
           "                            <hostname>_<pid>)\n"
           "  --leader-elect[=BOOL]     elect one active replica with a Lease (default true)\n"
           "  --lease-name NAME         the Lease's name (default cliqo-agent)\n"
           "  --lease-duration DUR      how long standbys wait before taking over (default 15s)\n"
           "  --renew-deadline DUR      the leader gives up when it cannot renew in time\n"
           "                            (default 10s; below --lease-duration)\n"
           "  --retry-period DUR        between attempts (default 2s; below --renew-deadline)\n"
           "  --shutdown-timeout DUR    longest graceful shutdown before a forced exit (default "
           "10s)\n"
           "  --api-server-url URL      the API server URL peers are given to reach this cluster\n"
           "                            (default: the server of the agent's own kubeconfig)\n"
           "  --auth-url URL            this cluster's auth endpoint URL, sent to peers (default:\n"
           "                            ClusterConfig spec.peeringConfig.authUrl)\n"
           "  --unpeer-timeout DUR      how long unpeering waits for an unreachable peer before\n"
           "                            finishing locally (default 30s)\n"
           "  --peer-check-interval DUR how often established peerings are checked on the peer\n"
           "                            (default 30s)\n"
           "  --kubelet-addr HOST:PORT  the kubelet API of the virtual nodes (logs, exec;\n"
           "                            default :10250; its port is the one nodes publish)\n"
           "  --node-address IP         the virtual nodes' InternalIP, where the API server\n"
           "                            reaches that kubelet API (default $POD_IP, else\n"
           "                            127.0.0.1)\n"
           "  --webhook-addr HOST:PORT  the admission webhooks' HTTPS server (default :9443)\n"
           "  --webhook-url URL         the https:// URL the API server calls the webhooks at\n"
           "                            (default: Service cliqo-agent-webhook, port 443)\n"
           "  --webhook-client-ca FILE  PEM bundle of the CA that signs the API server's webhook\n"
           "                            client certificate: the webhooks then require it in the\n"
           "                            TLS handshake (re-read every minute). Without it anyone\n"
           "                            who reaches the port can send reviews (a warning; the\n"
           "                            offer enforcement then holds reservations 3 s, not 15,\n"
           "                            and its refusals show no amounts). docs/security.md\n"
           "  --webhook-client-cn NAME  a common name that certificate may have (repeatable or\n"
           "                            comma-separated, at most 16; default: any of the CA)\n"
           "  --log-level LEVEL         debug, info, warn or error (default info)\n"
           "  --version                 print the version and exit\n"
           "  --help                    print this help and exit\n"
           "\n"
           "HOST may be empty (all IPv4 addresses), an IPv4 address, [IPv6] or localhost.\n"
           "Durations: a whole number with a unit, e.g. 500ms, 15s, 2m.\n"
           "Exit status: 0 after a graceful shutdown (SIGTERM, SIGINT), 1 on a runtime failure or\n"
           "lost leadership, 2 on a bad command line.\n";
}

int agent_parse_duration(const char *s, uint64_t *ret_ms)
{
    static const struct {
        const char *unit;
        uint64_t ms;
    } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
    char num[24];
    size_t n = 0;
    uint64_t v;
    int r;

    if (!s || !ret_ms)
        return -EINVAL;
    while (s[n] >= '0' && s[n] <= '9')
        n++;
    if (n == 0 || n >= sizeof(num))
        return n == 0 ? -EINVAL : -ERANGE;
    memcpy(num, s, n);
    num[n] = '\0';
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(s + n, units[i].unit) != 0)
            continue;
        r = parse_u64(num, UINT64_MAX / units[i].ms, &v);
        if (r < 0)
            return r;
        *ret_ms = v * units[i].ms;
        return 0;
    }
    return -EINVAL;
}

static int bool_arg(const char *v, bool *ret)
{
    if (!v || strcmp(v, "true") == 0) {
        *ret = true;
        return 0;
    }
    if (strcmp(v, "false") == 0) {
        *ret = false;
        return 0;
    }
    return -EINVAL;
}

enum {
    OPT_KUBECONFIG = 256,
    OPT_NAMESPACE,
    OPT_HTTP_ADDR,
    OPT_METRICS_ADDR,
    OPT_AUTH_ADDR,
    OPT_IDENTITY,
    OPT_LEADER_ELECT,
    OPT_LEASE_NAME,
    OPT_LEASE_DURATION,
    OPT_RENEW_DEADLINE,
    OPT_RETRY_PERIOD,
    OPT_SHUTDOWN_TIMEOUT,
    OPT_API_SERVER_URL,
    OPT_AUTH_URL,
    OPT_UNPEER_TIMEOUT,
    OPT_PEER_CHECK,
    OPT_KUBELET_ADDR,
    OPT_NODE_ADDRESS,
    OPT_WEBHOOK_ADDR,
    OPT_WEBHOOK_URL,
    OPT_WEBHOOK_CLIENT_CA,
    OPT_WEBHOOK_CLIENT_CN,
    OPT_LOG_LEVEL,
    OPT_VERSION,
    OPT_HELP,
};

static const struct option options[] = {
    {"kubeconfig", required_argument, NULL, OPT_KUBECONFIG},
    {"namespace", required_argument, NULL, OPT_NAMESPACE},
    {"http-addr", required_argument, NULL, OPT_HTTP_ADDR},
    {"metrics-addr", required_argument, NULL, OPT_METRICS_ADDR},
    {"auth-addr", required_argument, NULL, OPT_AUTH_ADDR},
    {"identity", required_argument, NULL, OPT_IDENTITY},
    {"leader-elect", optional_argument, NULL, OPT_LEADER_ELECT},
    {"lease-name", required_argument, NULL, OPT_LEASE_NAME},
    {"lease-duration", required_argument, NULL, OPT_LEASE_DURATION},
    {"renew-deadline", required_argument, NULL, OPT_RENEW_DEADLINE},
    {"retry-period", required_argument, NULL, OPT_RETRY_PERIOD},
    {"shutdown-timeout", required_argument, NULL, OPT_SHUTDOWN_TIMEOUT},
    {"api-server-url", required_argument, NULL, OPT_API_SERVER_URL},
    {"auth-url", required_argument, NULL, OPT_AUTH_URL},
    {"unpeer-timeout", required_argument, NULL, OPT_UNPEER_TIMEOUT},
    {"peer-check-interval", required_argument, NULL, OPT_PEER_CHECK},
    {"kubelet-addr", required_argument, NULL, OPT_KUBELET_ADDR},
    {"node-address", required_argument, NULL, OPT_NODE_ADDRESS},
    {"webhook-addr", required_argument, NULL, OPT_WEBHOOK_ADDR},
    {"webhook-url", required_argument, NULL, OPT_WEBHOOK_URL},
    {"webhook-client-ca", required_argument, NULL, OPT_WEBHOOK_CLIENT_CA},
    {"webhook-client-cn", required_argument, NULL, OPT_WEBHOOK_CLIENT_CN},
    {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
    {"version", no_argument, NULL, OPT_VERSION},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

static int duration_flag(const char *flag, const char *v, uint64_t *ret, char *err, size_t errlen)
{
    uint64_t ms;

    if (agent_parse_duration(v, &ms) < 0 || ms == 0) {
        snprintf(err, errlen, "--%s: invalid duration '%s' (expected e.g. 500ms, 15s, 2m)", flag,
                 v);
        return -EINVAL;
    }
    *ret = ms;
    return 0;
}

_Static_assert(AGENT_MAX_WEBHOOK_CNS == HTTPD_MAX_CLIENT_CNS, "the webhook server's name limit");
_Static_assert(AGENT_CN_MAX == HTTPD_CN_MAX, "the webhook server's name length");

/* --webhook-client-cn: one name or a comma-separated list, added to cfg's. */
static int client_cn_flag(const char *v, struct agent_config *cfg, char *err, size_t errlen)
{
    const char *p = v;

    for (;;) {
        size_t n = strcspn(p, ",");
        bool ok = n > 0 && n <= AGENT_CN_MAX;

        for (size_t i = 0; ok && i < n; i++)
            ok = (unsigned char)p[i] >= 0x20 && (unsigned char)p[i] < 0x7f;
        if (!ok) {
            snprintf(err, errlen,
                     "--webhook-client-cn: '%s' is not a list of common names (1 to %d printable "
                     "characters each, comma-separated)",
                     v, AGENT_CN_MAX);
            return -EINVAL;
        }
        if (cfg->nwebhook_client_cn >= AGENT_MAX_WEBHOOK_CNS) {
            snprintf(err, errlen, "--webhook-client-cn: more than %d names", AGENT_MAX_WEBHOOK_CNS);
            return -EINVAL;
        }
        snprintf(cfg->webhook_client_cn[cfg->nwebhook_client_cn++], AGENT_CN_MAX + 1, "%.*s",
                 (int)n, p);
        if (!p[n])
            return 0;
        p += n + 1;
    }
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
    struct sockaddr_storage ss;
    socklen_t sl;
    bool have_identity = false;
    int c, idx;

    memset(cfg, 0, sizeof(*cfg));
    cfg->namespace_ = "cliqo";
    cfg->http_addr = ":8080";
    cfg->auth_addr = ":8443";
    cfg->kubelet_addr = ":10250";
    cfg->kubelet_port = 10250;
    cfg->webhook_addr = ":9443";
    cfg->leader_elect = true;
    cfg->lease_name = "cliqo-agent";
    cfg->lease_duration_ms = 15000;
    cfg->renew_deadline_ms = 10000;
    cfg->retry_period_ms = 2000;
    cfg->shutdown_timeout_ms = 10000;
    cfg->log_level = LOG_LEVEL_INFO;
    err[0] = '\0';

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":", options, &idx)) != -1) {
        const char *v = optarg;

        switch (c) {
        case OPT_KUBECONFIG:
            if (!*v)
                goto empty;
            cfg->kubeconfig = v;
            break;
        case OPT_NAMESPACE:
            if (!kname_dns_label(v)) {
                snprintf(err, errlen, "--namespace: '%s' is not a valid namespace name", v);
                return -EINVAL;
            }
            cfg->namespace_ = v;
            break;
        case OPT_HTTP_ADDR:
        case OPT_METRICS_ADDR:
        case OPT_AUTH_ADDR:
        case OPT_KUBELET_ADDR:
        case OPT_WEBHOOK_ADDR:
            if (netaddr_parse(v, &ss, &sl) < 0) {
                snprintf(err, errlen,
                         "--%s: invalid address '%s' (expected HOST:PORT, e.g. :8080, "
                         "127.0.0.1:8080, [::1]:8080)",
                         options[idx].name, v);
                return -EINVAL;
            }
            if (c == OPT_HTTP_ADDR)
                cfg->http_addr = v;
            else if (c == OPT_METRICS_ADDR)
                cfg->metrics_addr = v;
            else if (c == OPT_AUTH_ADDR)
                cfg->auth_addr = v;
            else if (c == OPT_WEBHOOK_ADDR)
                cfg->webhook_addr = v;
            else {
                in_port_t port = ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                          : ((struct sockaddr_in *)&ss)->sin_port;
                if (ntohs(port) == 0) {
                    snprintf(err, errlen,
                             "--kubelet-addr: the port must be given (nodes publish it)");
                    return -EINVAL;
                }
                cfg->kubelet_addr = v;
                cfg->kubelet_port = ntohs(port);
            }
            break;
        case OPT_NODE_ADDRESS: {
            struct in6_addr a6;
            struct in_addr a4;
            if (inet_pton(AF_INET, v, &a4) != 1 && inet_pton(AF_INET6, v, &a6) != 1) {
                snprintf(err, errlen, "--node-address: '%s' is not an IP address", v);
                return -EINVAL;
            }
            cfg->node_address = v;
            break;
        }
        case OPT_WEBHOOK_URL:
            if (strncmp(v, "https://", 8) != 0 || strlen(v) < 9 || strlen(v) > 1024) {
                snprintf(err, errlen, "--webhook-url: expected an https:// URL, not '%s'", v);
                return -EINVAL;
            }
            cfg->webhook_url = v;
            break;
        case OPT_WEBHOOK_CLIENT_CA:
            if (!*v)
                goto empty;
            cfg->webhook_client_ca = v;
            break;
        case OPT_WEBHOOK_CLIENT_CN:
            if (client_cn_flag(v, cfg, err, errlen) < 0)
                return -EINVAL;
            break;
        case OPT_IDENTITY:
            if (!*v || strlen(v) > AGENT_MAX_IDENTITY) {
                snprintf(err, errlen, "--identity: must be 1 to %d characters", AGENT_MAX_IDENTITY);
                return -EINVAL;
            }
            snprintf(cfg->identity, sizeof(cfg->identity), "%s", v);
            have_identity = true;
            break;
        case OPT_LEADER_ELECT:
            if (bool_arg(v, &cfg->leader_elect) < 0) {
                snprintf(err, errlen, "--leader-elect: expected true or false, not '%s'", v);
                return -EINVAL;
            }
            break;
        case OPT_LEASE_NAME:
            if (!kname_dns_subdomain(v)) {
                snprintf(err, errlen, "--lease-name: '%s' is not a valid object name", v);
                return -EINVAL;
            }
            cfg->lease_name = v;
            break;
        case OPT_LEASE_DURATION:
            if (duration_flag("lease-duration", v, &cfg->lease_duration_ms, err, errlen) < 0)
                return -EINVAL;
            break;
        case OPT_RENEW_DEADLINE:
            if (duration_flag("renew-deadline", v, &cfg->renew_deadline_ms, err, errlen) < 0)
                return -EINVAL;
            break;
        case OPT_RETRY_PERIOD:
            if (duration_flag("retry-period", v, &cfg->retry_period_ms, err, errlen) < 0)
                return -EINVAL;
            break;
        case OPT_SHUTDOWN_TIMEOUT:
            if (duration_flag("shutdown-timeout", v, &cfg->shutdown_timeout_ms, err, errlen) < 0)
                return -EINVAL;
            break;
        case OPT_API_SERVER_URL:
        case OPT_AUTH_URL:
            if (strncmp(v, "https://", 8) != 0 || strlen(v) < 9 || strlen(v) > 1024) {
                snprintf(err, errlen, "--%s: expected an https:// URL, not '%s'",
                         c == OPT_AUTH_URL ? "auth-url" : "api-server-url", v);
                return -EINVAL;
            }
            if (c == OPT_AUTH_URL)
                cfg->auth_url = v;
            else
                cfg->api_server_url = v;
            break;
        case OPT_UNPEER_TIMEOUT:
            if (duration_flag("unpeer-timeout", v, &cfg->unpeer_timeout_ms, err, errlen) < 0)
                return -EINVAL;
            break;
        case OPT_PEER_CHECK:
            if (duration_flag("peer-check-interval", v, &cfg->peer_check_ms, err, errlen) < 0)
                return -EINVAL;
            break;
        case OPT_LOG_LEVEL: {
            enum log_level l = log_level_from_string(v);
            if (l == _LOG_LEVEL_INVALID) {
                snprintf(err, errlen, "--log-level: expected debug, info, warn or error, not '%s'",
                         v);
                return -EINVAL;
            }
            cfg->log_level = l;
            break;
        }
        case OPT_VERSION:
            cfg->version = true;
            break;
        case OPT_HELP:
            cfg->help = true;
            break;
        case ':':
            snprintf(err, errlen, "%s: missing value", argv[optind - 1]);
            return -EINVAL;
        default:
            if (optopt)
                snprintf(err, errlen, "unknown flag '-%c' (see --help)", optopt);
            else
                snprintf(err, errlen, "unknown flag '%s' (see --help)", argv[optind - 1]);
            return -EINVAL;
        }
        continue;
    empty:
        snprintf(err, errlen, "%s: empty value", argv[optind - 1]);
        return -EINVAL;
    }
    if (optind < argc) {
        snprintf(err, errlen, "unexpected argument '%s' (see --help)", argv[optind]);
        return -EINVAL;
    }
    if (cfg->nwebhook_client_cn && !cfg->webhook_client_ca) {
        snprintf(err, errlen, "--webhook-client-cn needs --webhook-client-ca");
        return -EINVAL;
    }
    if (cfg->renew_deadline_ms >= cfg->lease_duration_ms) {
        snprintf(err, errlen, "--renew-deadline must be shorter than --lease-duration");
        return -EINVAL;
    }
    if (cfg->retry_period_ms >= cfg->renew_deadline_ms) {
        snprintf(err, errlen, "--retry-period must be shorter than --renew-deadline");
        return -EINVAL;
    }
    if (!have_identity)
        default_identity(cfg);
    if (!cfg->node_address) {
        const char *ip = getenv("POD_IP");
        struct in_addr a4;
        struct in6_addr a6;

        cfg->node_address =
            ip && (inet_pton(AF_INET, ip, &a4) == 1 || inet_pton(AF_INET6, ip, &a6) == 1)
                ? ip
                : "127.0.0.1";
    }
    return 0;
}
