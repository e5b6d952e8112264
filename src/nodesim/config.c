/* nodesim configuration: command-line flags, their defaults and validation. */
#include "nodesim/nodesim.h"

#include "common/duration.h"
#include "common/errbuf.h"
#include "common/opts.h"
#include "common/strutil.h"
#include "common/xalloc.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

#define DEF_NODES       1
#define DEF_PREFIX      "nodesim"
#define DEF_CPU         "8"
#define DEF_MEMORY      "32Gi"
#define DEF_PODS        "110"
#define DEF_STORAGE     "100Gi"
#define DEF_POD_CIDR    "10.244.0.0/16"
#define DEF_NODE_MASK   24
#define DEF_NODE_IP     "127.0.1.1"
#define DEF_LEASE_MS    10000
#define DEF_STATUS_MS   60000
#define DEF_LEASE_DUR_S 40
#define DEF_QPS         200
#define DEF_BURST       400
#define DEF_CONCURRENCY 64
#define MAX_CONCURRENCY 1024
#define MAX_DURATION_MS 86400000ULL

int ns_parse_duration_ms(const char *s, uint64_t *ret)
{
    uint64_t v;

    if (dur_parse(s, DUR_SECONDS, &v) < 0 || v > MAX_DURATION_MS)
        return -EINVAL;
    *ret = v;
    return 0;
}

int ns_parse_ipv4(const char *s, uint32_t *ret)
{
    uint32_t ip = 0;
    const char *p = s;

    if (!s || !ret)
        return -EINVAL;
    for (int part = 0; part < 4; part++) {
        char buf[4];
        size_t n = 0;
        uint64_t v;
        while (p[n] >= '0' && p[n] <= '9' && n < 4)
            n++;
        if (n == 0 || n > 3 || (n > 1 && p[0] == '0'))
            return -EINVAL;
        memcpy(buf, p, n);
        buf[n] = '\0';
        if (parse_u64(buf, 255, &v) < 0)
            return -EINVAL;
        ip = ip << 8 | (uint32_t)v;
        p += n;
        if (part < 3) {
            if (*p != '.')
                return -EINVAL;
            p++;
        }
    }
    if (*p != '\0')
        return -EINVAL;
    *ret = ip;
    return 0;
}

int ns_parse_cidr(const char *s, uint32_t *ret_addr, unsigned *ret_prefix)
{
    char buf[NS_IP_LEN];
    const char *slash;
    uint32_t ip, mask;
    uint64_t prefix;

    if (!s || !(slash = strchr(s, '/')) || (size_t)(slash - s) >= sizeof(buf))
        return -EINVAL;
    memcpy(buf, s, (size_t)(slash - s));
    buf[slash - s] = '\0';
    if (ns_parse_ipv4(buf, &ip) < 0 || parse_u64(slash + 1, 32, &prefix) < 0)
        return -EINVAL;
    mask = prefix == 0 ? 0 : ~0u << (32 - prefix);
    if ((ip & ~mask) != 0)
        return -EINVAL;
    *ret_addr = ip;
    *ret_prefix = (unsigned)prefix;
    return 0;
}

void ns_format_ipv4(uint32_t ip, char buf[NS_IP_LEN])
{
    snprintf(buf, NS_IP_LEN, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
}

int ns_node_cidr(const struct ns_config *cfg, unsigned index, uint32_t *ret_addr)
{
    unsigned bits = cfg->node_cidr_mask - cfg->pod_cidr_prefix;

    if (cfg->node_cidr_mask < cfg->pod_cidr_prefix || (bits < 32 && index >= (1u << bits)))
        return -ERANGE;
    *ret_addr = cfg->pod_cidr_base + (uint32_t)index * (1u << (32 - cfg->node_cidr_mask));
    return 0;
}

static bool is_alnum_lower(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool ns_valid_dns_subdomain(const char *s)
{
    size_t n = s ? strlen(s) : 0;

    if (n == 0 || n > NS_MAX_NAME || !is_alnum_lower(s[0]) || !is_alnum_lower(s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_alnum_lower(s[i]) && s[i] != '-' && s[i] != '.')
            return false;
    return true;
}

static bool is_alnum(char c)
{
    return is_alnum_lower(c) || (c >= 'A' && c <= 'Z');
}

/* A label name or value part: [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, at most max. */
static bool valid_label_part(const char *s, size_t n, size_t max, bool allow_empty)
{
    if (n == 0)
        return allow_empty;
    if (n > max || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    return true;
}

/* A qualified name: [prefix/]name, prefix a DNS subdomain. */
static bool valid_qualified_name(const char *s)
{
    const char *slash = strchr(s, '/');

    if (!slash)
        return valid_label_part(s, strlen(s), 63, false);
    if ((size_t)(slash - s) > NS_MAX_NAME)
        return false;
    char prefix[NS_MAX_NAME + 1];
    memcpy(prefix, s, (size_t)(slash - s));
    prefix[slash - s] = '\0';
    return ns_valid_dns_subdomain(prefix) &&
           valid_label_part(slash + 1, strlen(slash + 1), 63, false);
}

static int parse_qty(const char *flag, const char *s, struct kq *ret, char *err, size_t errlen)
{
    struct kq q;

    if (kq_parse(s, &q) < 0)
        return errbuf_fmt(err, errlen, -EINVAL,
                          "--%s: '%s' is not a Kubernetes quantity (e.g. 4, 500m, 16Gi)", flag, s);
    if (kq_sign(&q) < 0)
        return errbuf_fmt(err, errlen, -EINVAL, "--%s: '%s' must not be negative", flag, s);
    *ret = q;
    return 0;
}

static int parse_ext(struct ns_config *cfg, const char *s, char *err, size_t errlen)
{
    const char *eq = strchr(s, '=');
    char name[NS_MAX_NAME + 1];
    struct kq q;
    int r;

    if (cfg->n_ext >= NS_MAX_EXTENDED)
        return errbuf_fmt(err, errlen, -EINVAL, "--extended-resource: at most %d resources",
                          NS_MAX_EXTENDED);
    if (!eq || eq == s || (size_t)(eq - s) > NS_MAX_NAME)
        return errbuf_fmt(err, errlen, -EINVAL, "--extended-resource: '%s' is not NAME=QUANTITY",
                          s);
    memcpy(name, s, (size_t)(eq - s));
    name[eq - s] = '\0';
    /* Extended resources live outside kubernetes.io and need a domain (upstream
     * IsExtendedResourceName). */
    if (!strchr(name, '/') || !valid_qualified_name(name) || strstr(name, "kubernetes.io/"))
        return errbuf_fmt(err, errlen, -EINVAL,
                          "--extended-resource: '%s' is not an extended resource name (DOMAIN/NAME "
                          "outside kubernetes.io, e.g. nvidia.com/gpu)",
                          name);
    r = parse_qty("extended-resource", eq + 1, &q, err, errlen);
    if (r < 0)
        return r;
    for (size_t i = 0; i < cfg->n_ext; i++)
        if (strcmp(cfg->ext[i].name, name) == 0)
            return errbuf_fmt(err, errlen, -EINVAL, "--extended-resource: '%s' given twice", name);
    cfg->ext[cfg->n_ext].name = x_strdup(name);
    if (!cfg->ext[cfg->n_ext].name)
        return -ENOMEM;
    cfg->ext[cfg->n_ext++].qty = q;
    return 0;
}

static int parse_label(struct ns_config *cfg, const char *s, char *err, size_t errlen)
{
    const char *eq = strchr(s, '=');
    char key[NS_MAX_NAME + 65];

    if (cfg->n_labels >= NS_MAX_LABELS)
        return errbuf_fmt(err, errlen, -EINVAL, "--label: at most %d labels", NS_MAX_LABELS);
    if (!eq || eq == s || (size_t)(eq - s) >= sizeof(key))
        return errbuf_fmt(err, errlen, -EINVAL, "--label: '%s' is not KEY=VALUE", s);
    memcpy(key, s, (size_t)(eq - s));
    key[eq - s] = '\0';
    if (!valid_qualified_name(key))
        return errbuf_fmt(err, errlen, -EINVAL, "--label: '%s' is not a valid label key", key);
    if (!valid_label_part(eq + 1, strlen(eq + 1), NS_MAX_LABEL_VAL, true))
        return errbuf_fmt(err, errlen, -EINVAL, "--label: '%s' is not a valid label value", eq + 1);
    for (size_t i = 0; i < cfg->n_labels; i++)
        if (strcmp(cfg->labels[i].key, key) == 0)
            return errbuf_fmt(err, errlen, -EINVAL, "--label: '%s' given twice", key);
    cfg->labels[cfg->n_labels].key = x_strdup(key);
    cfg->labels[cfg->n_labels].value = x_strdup(eq + 1);
    if (!cfg->labels[cfg->n_labels].key || !cfg->labels[cfg->n_labels].value) {
        x_free(cfg->labels[cfg->n_labels].key);
        x_free(cfg->labels[cfg->n_labels].value);
        cfg->labels[cfg->n_labels].key = cfg->labels[cfg->n_labels].value = NULL;
        return -ENOMEM;
    }
    cfg->n_labels++;
    return 0;
}

static int set_str(char **dst, const char *s)
{
    char *d = x_strdup(s);

    if (!d)
        return -ENOMEM;
    x_free(*dst);
    *dst = d;
    return 0;
}

/* A decimal number such as 200 or 12.5 (the flag needs no exponent or sign). */
static int parse_qps(const char *s, double *ret)
{
    const char *dot = strchr(s, '.');
    uint64_t ip, fp = 0;
    double div = 1;
    char buf[32];
    size_t n = dot ? (size_t)(dot - s) : strlen(s);

    if (n == 0 || n >= sizeof(buf))
        return -EINVAL;
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (parse_u64(buf, 1000000, &ip) < 0)
        return -EINVAL;
    if (dot) {
        if (strlen(dot + 1) == 0 || strlen(dot + 1) > 6 || parse_u64(dot + 1, 999999, &fp) < 0)
            return -EINVAL;
        for (size_t i = 0; i < strlen(dot + 1); i++)
            div *= 10;
    }
    *ret = (double)ip + (double)fp / div;
    return 0;
}

static int set_defaults(struct ns_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->nodes = DEF_NODES;
    cfg->node_cidr_mask = DEF_NODE_MASK;
    cfg->lease_ms = DEF_LEASE_MS;
    cfg->status_ms = DEF_STATUS_MS;
    cfg->lease_duration_s = DEF_LEASE_DUR_S;
    cfg->qps = DEF_QPS;
    cfg->burst = DEF_BURST;
    cfg->concurrency = DEF_CONCURRENCY;
    cfg->log_level = LOG_LEVEL_INFO;
    if (kq_parse(DEF_CPU, &cfg->cpu) < 0 || kq_parse(DEF_MEMORY, &cfg->memory) < 0 ||
        kq_parse(DEF_PODS, &cfg->pods) < 0 || kq_parse(DEF_STORAGE, &cfg->storage) < 0 ||
        ns_parse_cidr(DEF_POD_CIDR, &cfg->pod_cidr_base, &cfg->pod_cidr_prefix) < 0 ||
        ns_parse_ipv4(DEF_NODE_IP, &cfg->node_ip_base) < 0)
        return -EINVAL;
    return set_str(&cfg->node_prefix, DEF_PREFIX);
}

/* Checks that span several flags. */
static int validate(struct ns_config *cfg, char *err, size_t errlen)
{
    char name[NS_MAX_NAME + 32];
    uint32_t last;
    int64_t pods;

    snprintf(name, sizeof(name), "%s-%u", cfg->node_prefix, cfg->nodes ? cfg->nodes - 1 : 0);
    if (!ns_valid_dns_subdomain(cfg->node_prefix) || !ns_valid_dns_subdomain(name))
        return errbuf_fmt(err, errlen, -EINVAL,
                          "--node-prefix: '%s' does not make valid node names (lower-case letters, "
                          "digits, '-' and '.', at most %d characters with the index)",
                          cfg->node_prefix, NS_MAX_NAME);
    if (cfg->node_cidr_mask < cfg->pod_cidr_prefix)
        return errbuf_fmt(err, errlen, -EINVAL,
                          "--node-cidr-mask /%u is larger than --pod-cidr-base's /%u",
                          cfg->node_cidr_mask, cfg->pod_cidr_prefix);
    if (cfg->nodes > 0 && ns_node_cidr(cfg, cfg->nodes - 1, &last) < 0)
        return errbuf_fmt(err, errlen, -EINVAL,
                          "--pod-cidr-base /%u holds %llu blocks of /%u, fewer than --nodes %u",
                          cfg->pod_cidr_prefix,
                          1ULL << (cfg->node_cidr_mask - cfg->pod_cidr_prefix), cfg->node_cidr_mask,
                          cfg->nodes);
    if (kq_value(&cfg->pods, &pods) < 0 || pods < 0 ||
        (uint64_t)pods > (1ULL << (32 - cfg->node_cidr_mask)) - 3)
        return errbuf_fmt(err, errlen, -EINVAL,
                          "--pods must be at most %llu (the addresses of a /%u per node)",
                          (1ULL << (32 - cfg->node_cidr_mask)) - 3, cfg->node_cidr_mask);
    if (cfg->nodes > 0 && (uint64_t)cfg->node_ip_base + cfg->nodes - 1 > UINT32_MAX)
        return errbuf_fmt(err, errlen, -EINVAL, "--node-ip-base: %u nodes do not fit after it",
                          cfg->nodes);
    if (cfg->lease_duration_s * 1000 <= cfg->lease_ms)
        return errbuf_fmt(err, errlen, -EINVAL, "--lease-duration must be longer than --heartbeat");
    if (cfg->kubelet_addr && (!cfg->tls_cert_file || !cfg->tls_key_file || !cfg->client_ca_file))
        return errbuf_fmt(err, errlen, -EINVAL,
                          "--kubelet-addr needs --tls-cert-file, --tls-private-key-file and "
                          "--client-ca-file");
    if (!cfg->kubelet_addr && (cfg->tls_cert_file || cfg->tls_key_file || cfg->client_ca_file))
        return errbuf_fmt(err, errlen, -EINVAL,
                          "--tls-cert-file, --tls-private-key-file and --client-ca-file go with "
                          "--kubelet-addr");
    return 0;
}

/* ---- the command line ------------------------------------------------------------------------ */

#define STR_(x) #x
#define STR(x)  STR_(x)

static const char usage_head[] =
    "Usage: cliqo-nodesim [options]\n"
    "\n"
    "Simulated kubelets: registers N nodes, keeps them Ready (status and Leases in\n"
    "kube-node-lease), runs the pods bound to them (status only) and finishes their\n"
    "deletion. Failure injection: node annotation " NS_ANN_READY "=false|unknown, pod\n"
    "annotation " NS_ANN_FAIL "=<exit code> (see docs/nodesim.md).\n"
    "\n"
    "Options:\n";

static const char usage_foot[] =
    "\n"
    "Quantities use Kubernetes syntax (500m, 4, 16Gi); durations are 500ms, 10s, 2m, 1h\n"
    "or a number of seconds.\n";

/* A string option the configuration owns a copy of. */
static int str_flag(const struct opts_def *o, const char *v, char *err, size_t errlen)
{
    return set_str(o->dest, v) < 0 ? opts_fail(o, err, errlen, "out of memory") : 0;
}

static int qty_flag(const struct opts_def *o, const char *v, char *err, size_t errlen)
{
    return parse_qty(o->name, v, o->dest, err, errlen);
}

static int ext_flag(const struct opts_def *o, const char *v, char *err, size_t errlen)
{
    int r = parse_ext(o->dest, v, err, errlen);

    return r == -ENOMEM ? opts_fail(o, err, errlen, "out of memory") : r;
}

static int label_flag(const struct opts_def *o, const char *v, char *err, size_t errlen)
{
    int r = parse_label(o->dest, v, err, errlen);

    return r == -ENOMEM ? opts_fail(o, err, errlen, "out of memory") : r;
}

static int pod_cidr_flag(const struct opts_def *o, const char *v, char *err, size_t errlen)
{
    struct ns_config *cfg = o->dest;

    if (ns_parse_cidr(v, &cfg->pod_cidr_base, &cfg->pod_cidr_prefix) < 0 ||
        cfg->pod_cidr_prefix < 8 || cfg->pod_cidr_prefix > 28)
        return opts_fail(o, err, errlen,
                         "'%s' is not an IPv4 network address with a prefix from /8 to /28 (e.g. "
                         "10.244.0.0/16)",
                         v);
    return 0;
}

static int node_ip_flag(const struct opts_def *o, const char *v, char *err, size_t errlen)
{
    if (ns_parse_ipv4(v, o->dest) < 0)
        return opts_fail(o, err, errlen, "'%s' is not an IPv4 address", v);
    return 0;
}

static int qps_flag(const struct opts_def *o, const char *v, char *err, size_t errlen)
{
    double *qps = o->dest;

    if (parse_qps(v, qps) < 0 || *qps <= 0)
        return opts_fail(o, err, errlen, "must be a positive number, got '%s'", v);
    return 0;
}

static int kubelet_addr_flag(const struct opts_def *o, const char *v, char *err, size_t errlen)
{
    struct ns_config *cfg = o->dest;
    const char *colon = strrchr(v, ':');
    char host[NS_IP_LEN];
    uint64_t port;

    if (!colon || (size_t)(colon - v) >= sizeof(host) || parse_u64(colon + 1, 65535, &port) < 0 ||
        port == 0)
        return opts_fail(o, err, errlen, "must be IP:PORT (e.g. 127.0.0.1:10250), got '%s'", v);
    memcpy(host, v, (size_t)(colon - v));
    host[colon - v] = '\0';
    if (ns_parse_ipv4(host, &cfg->kubelet_ip) < 0 || cfg->kubelet_ip == 0)
        return opts_fail(o, err, errlen, "'%s' is not an IPv4 address nodes can publish", host);
    cfg->kubelet_port = (unsigned)port;
    return set_str(&cfg->kubelet_addr, v) < 0 ? opts_fail(o, err, errlen, "out of memory") : 0;
}

/* The options of cliqo-nodesim, writing into cfg (and f): one table for the parser and the help. */
struct ns_flags {
    struct opts_def defs[32];
    struct opts_spec spec;
    uint64_t lease_duration_ms;
    bool help;
};

static void ns_flags_init(struct ns_flags *f, struct ns_config *cfg)
{
    /* clang-format off */
    const struct opts_def defs[] = {
        {.name = "kubeconfig", .kind = OPTS_CUSTOM, .arg = "FILE", .dest = &cfg->kubeconfig,
         .fn = str_flag, .help = "kubeconfig (default $KUBECONFIG, ~/.kube/config, in-cluster)"},
        {.name = "context", .kind = OPTS_CUSTOM, .arg = "NAME", .dest = &cfg->context,
         .fn = str_flag, .help = "kubeconfig context (default: the current one)"},
        {.name = "nodes", .kind = OPTS_UINT, .arg = "N", .dest = &cfg->nodes,
         .size = sizeof(cfg->nodes), .max = NS_MAX_NODES,
         .help = "simulated nodes, 0.." STR(NS_MAX_NODES) " (default " STR(DEF_NODES) ")"},
        {.name = "node-prefix", .kind = OPTS_CUSTOM, .arg = "P", .dest = &cfg->node_prefix,
         .fn = str_flag, .help = "node names are P-0 .. P-(N-1) (default " DEF_PREFIX ")"},
        {.name = "cpu", .kind = OPTS_CUSTOM, .arg = "Q", .dest = &cfg->cpu, .fn = qty_flag,
         .help = "cpu capacity and allocatable per node (default " DEF_CPU ")"},
        {.name = "memory", .kind = OPTS_CUSTOM, .arg = "Q", .dest = &cfg->memory, .fn = qty_flag,
         .help = "memory per node (default " DEF_MEMORY ")"},
        {.name = "pods", .kind = OPTS_CUSTOM, .arg = "Q", .dest = &cfg->pods, .fn = qty_flag,
         .help = "pod capacity per node (default " DEF_PODS
                 "; at most the addresses of a node's pod CIDR)"},
        {.name = "ephemeral-storage", .kind = OPTS_CUSTOM, .arg = "Q", .dest = &cfg->storage,
         .fn = qty_flag, .help = "ephemeral-storage per node (default " DEF_STORAGE ")"},
        {.name = "extended-resource", .kind = OPTS_CUSTOM, .arg = "R=Q", .dest = cfg,
         .fn = ext_flag,
         .help = "an extended resource per node, e.g. nvidia.com/gpu=4 (repeatable, at most "
                 STR(NS_MAX_EXTENDED) ")"},
        {.name = "label", .kind = OPTS_CUSTOM, .arg = "K=V", .dest = cfg, .fn = label_flag,
         .help = "a label on every node (repeatable, at most " STR(NS_MAX_LABELS) ")"},
        {.name = "pod-cidr-base", .kind = OPTS_CUSTOM, .arg = "CIDR", .dest = cfg,
         .fn = pod_cidr_flag,
         .help = "pod address space; node i gets its i-th block (default " DEF_POD_CIDR ")"},
        {.name = "node-cidr-mask", .kind = OPTS_UINT, .arg = "M", .dest = &cfg->node_cidr_mask,
         .size = sizeof(cfg->node_cidr_mask), .min = 16, .max = 28,
         .help = "prefix length of each node's block, 16..28 (default " STR(DEF_NODE_MASK) ")"},
        {.name = "node-ip-base", .kind = OPTS_CUSTOM, .arg = "IP", .dest = &cfg->node_ip_base,
         .fn = node_ip_flag,
         .help = "InternalIP of node 0; node i gets IP+i (default " DEF_NODE_IP ")"},
        {.name = "heartbeat", .kind = OPTS_DURATION, .flags = OPTS_SECONDS, .arg = "D",
         .dest = &cfg->lease_ms, .min = 100, .max = MAX_DURATION_MS,
         .help = "Lease renewal interval (default 10s)"},
        {.name = "status-interval", .kind = OPTS_DURATION, .flags = OPTS_SECONDS, .arg = "D",
         .dest = &cfg->status_ms, .min = 100, .max = MAX_DURATION_MS,
         .help = "node status heartbeat interval (default 1m)"},
        {.name = "lease-duration", .kind = OPTS_DURATION, .flags = OPTS_SECONDS, .arg = "D",
         .dest = &f->lease_duration_ms, .min = 1000, .max = MAX_DURATION_MS,
         .help = "leaseDurationSeconds of the Leases (default 40s)"},
        {.name = "qps", .kind = OPTS_CUSTOM, .arg = "X", .dest = &cfg->qps, .fn = qps_flag,
         .help = "client-side API rate limit (default " STR(DEF_QPS) ")"},
        {.name = "burst", .kind = OPTS_UINT, .arg = "N", .dest = &cfg->burst,
         .size = sizeof(cfg->burst), .min = 1, .max = 100000,
         .help = "client-side API burst (default " STR(DEF_BURST) ")"},
        {.name = "concurrency", .kind = OPTS_UINT, .arg = "N", .dest = &cfg->concurrency,
         .size = sizeof(cfg->concurrency), .min = 1, .max = MAX_CONCURRENCY,
         .help = "pods processed at once, 1.." STR(MAX_CONCURRENCY) " (default "
                 STR(DEF_CONCURRENCY) ")"},
        {.name = "healthz-port", .kind = OPTS_UINT, .arg = "P", .dest = &cfg->healthz_port,
         .size = sizeof(cfg->healthz_port), .max = 65535,
         .help = "serve GET /healthz on 127.0.0.1:P, plain HTTP (default: off)"},
        {.name = "kubelet-addr", .kind = OPTS_CUSTOM, .arg = "IP:PORT", .dest = cfg,
         .fn = kubelet_addr_flag,
         .help = "serve the kubelet API (logs, exec, /healthz) over HTTPS on IP:PORT for every "
                 "node; the nodes then publish IP as their InternalIP and PORT as their kubelet "
                 "port (default: off; nodes publish --node-ip-base + i and 10250)"},
        {.name = "tls-cert-file", .kind = OPTS_CUSTOM, .arg = "FILE", .dest = &cfg->tls_cert_file,
         .fn = str_flag,
         .help = "the kubelet API's serving certificate (PEM; with --kubelet-addr)"},
        {.name = "tls-private-key-file", .kind = OPTS_CUSTOM, .arg = "F",
         .dest = &cfg->tls_key_file, .fn = str_flag, .help = "its key (PEM)"},
        {.name = "client-ca-file", .kind = OPTS_CUSTOM, .arg = "FILE", .dest = &cfg->client_ca_file,
         .fn = str_flag,
         .help = "CA bundle the API server's client certificate must chain to; callers are then "
                 "authorised with SubjectAccessReviews (nodes/proxy)"},
        {.name = "delete-nodes-on-exit", .kind = OPTS_FLAG, .dest = &cfg->delete_nodes_on_exit,
         .help = "delete the nodes on SIGTERM/SIGINT (default: leave them, they go NotReady as "
                 "when a kubelet stops)"},
        {.name = "log-level", .kind = OPTS_CUSTOM, .arg = "L", .dest = &cfg->log_level,
         .fn = opts_log_level, .help = "debug, info, warn or error (default info)"},
        {.name = "help", .short_name = 'h', .kind = OPTS_FLAG, .flags = OPTS_STOP, .dest = &f->help,
         .help = "show this help"},
        {0},
    };
    /* clang-format on */

    _Static_assert(sizeof(defs) <= sizeof(f->defs), "ns_flags: defs too small");
    memcpy(f->defs, defs, sizeof(defs));
    f->spec = (struct opts_spec){.defs = f->defs, .usage = usage_head, .footer = usage_foot};
    f->lease_duration_ms = cfg->lease_duration_s * 1000;
    f->help = false;
}

void ns_usage(FILE *f)
{
    struct ns_config cfg = {0};
    struct ns_flags flags;

    ns_flags_init(&flags, &cfg);
    opts_print_help(&flags.spec, f);
}

int ns_config_parse(int argc, char **argv, struct ns_config *cfg, char *err, size_t errlen)
{
    struct ns_flags flags;

    errbuf_clear(err, errlen);
    if (set_defaults(cfg) < 0)
        return errbuf_fmt(err, errlen, -EINVAL, "internal error: bad defaults");
    ns_flags_init(&flags, cfg);
    if (opts_parse(&flags.spec, argc, argv, err, errlen) < 0)
        return -EINVAL;
    if (flags.help)
        return NS_CONFIG_HELP;
    cfg->lease_duration_s = (flags.lease_duration_ms + 999) / 1000;
    return validate(cfg, err, errlen);
}

void ns_config_done(struct ns_config *cfg)
{
    if (!cfg)
        return;
    x_free(cfg->kubeconfig);
    x_free(cfg->context);
    x_free(cfg->node_prefix);
    x_free(cfg->kubelet_addr);
    x_free(cfg->tls_cert_file);
    x_free(cfg->tls_key_file);
    x_free(cfg->client_ca_file);
    for (size_t i = 0; i < cfg->n_ext; i++)
        x_free(cfg->ext[i].name);
    for (size_t i = 0; i < cfg->n_labels; i++) {
        x_free(cfg->labels[i].key);
        x_free(cfg->labels[i].value);
    }
    memset(cfg, 0, sizeof(*cfg));
}
