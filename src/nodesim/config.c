/* nodesim configuration: command-line flags, their defaults and validation. */
#include "nodesim/nodesim.h"

#include "common/errbuf.h"
#include "common/strutil.h"
#include "common/xalloc.h"

#include <errno.h>
#include <getopt.h>
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
#define DEF_QPS         200.0
#define DEF_BURST       400
#define DEF_CONCURRENCY 64
#define MAX_CONCURRENCY 1024
#define MAX_DURATION_MS 86400000ULL

enum {
    OPT_KUBECONFIG = 256,
    OPT_CONTEXT,
    OPT_NODES,
    OPT_PREFIX,
    OPT_CPU,
    OPT_MEMORY,
    OPT_PODS,
    OPT_STORAGE,
    OPT_EXT,
    OPT_LABEL,
    OPT_POD_CIDR,
    OPT_NODE_MASK,
    OPT_NODE_IP,
    OPT_HEARTBEAT,
    OPT_STATUS,
    OPT_LEASE_DUR,
    OPT_QPS,
    OPT_BURST,
    OPT_CONCURRENCY,
    OPT_HEALTHZ,
    OPT_KUBELET_ADDR,
    OPT_TLS_CERT,
    OPT_TLS_KEY,
    OPT_CLIENT_CA,
    OPT_DELETE,
    OPT_LOG_LEVEL,
};

static const struct option long_opts[] = {
    {"kubeconfig", required_argument, NULL, OPT_KUBECONFIG},
    {"context", required_argument, NULL, OPT_CONTEXT},
    {"nodes", required_argument, NULL, OPT_NODES},
    {"node-prefix", required_argument, NULL, OPT_PREFIX},
    {"cpu", required_argument, NULL, OPT_CPU},
    {"memory", required_argument, NULL, OPT_MEMORY},
    {"pods", required_argument, NULL, OPT_PODS},
    {"ephemeral-storage", required_argument, NULL, OPT_STORAGE},
    {"extended-resource", required_argument, NULL, OPT_EXT},
    {"label", required_argument, NULL, OPT_LABEL},
    {"pod-cidr-base", required_argument, NULL, OPT_POD_CIDR},
    {"node-cidr-mask", required_argument, NULL, OPT_NODE_MASK},
    {"node-ip-base", required_argument, NULL, OPT_NODE_IP},
    {"heartbeat", required_argument, NULL, OPT_HEARTBEAT},
    {"status-interval", required_argument, NULL, OPT_STATUS},
    {"lease-duration", required_argument, NULL, OPT_LEASE_DUR},
    {"qps", required_argument, NULL, OPT_QPS},
    {"burst", required_argument, NULL, OPT_BURST},
    {"concurrency", required_argument, NULL, OPT_CONCURRENCY},
    {"healthz-port", required_argument, NULL, OPT_HEALTHZ},
    {"kubelet-addr", required_argument, NULL, OPT_KUBELET_ADDR},
    {"tls-cert-file", required_argument, NULL, OPT_TLS_CERT},
    {"tls-private-key-file", required_argument, NULL, OPT_TLS_KEY},
    {"client-ca-file", required_argument, NULL, OPT_CLIENT_CA},
    {"delete-nodes-on-exit", no_argument, NULL, OPT_DELETE},
    {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

void ns_usage(FILE *f)
{
    fprintf(
        f,
        "Usage: cliqo-nodesim [options]\n"
        "\n"
        "Simulated kubelets: registers N nodes, keeps them Ready (status and Leases in\n"
        "kube-node-lease), runs the pods bound to them (status only) and finishes their\n"
        "deletion. Failure injection: node annotation " NS_ANN_READY "=false|unknown, pod\n"
        "annotation " NS_ANN_FAIL "=<exit code> (see docs/nodesim.md).\n"
        "\n"
        "Options:\n"
        "  --kubeconfig FILE          kubeconfig (default $KUBECONFIG, ~/.kube/config, "
        "in-cluster)\n"
        "  --context NAME             kubeconfig context (default: the current one)\n"
        "  --nodes N                  simulated nodes, 0..%d (default %d)\n"
        "  --node-prefix P            node names are P-0 .. P-(N-1) (default " DEF_PREFIX ")\n"
        "  --cpu Q                    cpu capacity and allocatable per node (default " DEF_CPU ")\n"
        "  --memory Q                 memory per node (default " DEF_MEMORY ")\n"
        "  --pods Q                   pod capacity per node (default " DEF_PODS "; at most the\n"
        "                             addresses of a node's pod CIDR)\n"
        "  --ephemeral-storage Q      ephemeral-storage per node (default " DEF_STORAGE ")\n"
        "  --extended-resource R=Q    an extended resource per node, e.g. nvidia.com/gpu=4\n"
        "                             (repeatable, at most %d)\n"
        "  --label K=V                a label on every node (repeatable, at most %d)\n"
        "  --pod-cidr-base CIDR       pod address space; node i gets its i-th block\n"
        "                             (default " DEF_POD_CIDR ")\n"
        "  --node-cidr-mask M         prefix length of each node's block, 16..28 (default %d)\n"
        "  --node-ip-base IP          InternalIP of node 0; node i gets IP+i (default " DEF_NODE_IP
        ")\n"
        "  --heartbeat D              Lease renewal interval (default 10s)\n"
        "  --status-interval D        node status heartbeat interval (default 1m)\n"
        "  --lease-duration D         leaseDurationSeconds of the Leases (default 40s)\n"
        "  --qps X                    client-side API rate limit (default %.0f)\n"
        "  --burst N                  client-side API burst (default %d)\n"
        "  --concurrency N            pods processed at once, 1..%d (default %d)\n"
        "  --healthz-port P           serve GET /healthz on 127.0.0.1:P, plain HTTP (default:\n"
        "                             off)\n"
        "  --kubelet-addr IP:PORT     serve the kubelet API (logs, exec, /healthz) over HTTPS on\n"
        "                             IP:PORT for every node; the nodes then publish IP as their\n"
        "                             InternalIP and PORT as their kubelet port (default: off;\n"
        "                             nodes publish --node-ip-base + i and 10250)\n"
        "  --tls-cert-file FILE       the kubelet API's serving certificate (PEM; with\n"
        "                             --kubelet-addr)\n"
        "  --tls-private-key-file F   its key (PEM)\n"
        "  --client-ca-file FILE      CA bundle the API server's client certificate must chain\n"
        "                             to; callers are then authorised with SubjectAccessReviews\n"
        "                             (nodes/proxy)\n"
        "  --delete-nodes-on-exit     delete the nodes on SIGTERM/SIGINT (default: leave them,\n"
        "                             they go NotReady as when a kubelet stops)\n"
        "  --log-level L              debug, info, warn or error (default info)\n"
        "  -h, --help                 show this help\n"
        "\n"
        "Quantities use Kubernetes syntax (500m, 4, 16Gi); durations are 500ms, 10s, 2m, 1h\n"
        "or a number of seconds.\n",
        NS_MAX_NODES, DEF_NODES, NS_MAX_EXTENDED, NS_MAX_LABELS, DEF_NODE_MASK, DEF_QPS, DEF_BURST,
        MAX_CONCURRENCY, DEF_CONCURRENCY);
}

int ns_parse_duration_ms(const char *s, uint64_t *ret)
{
    static const struct {
        const char *suffix;
        uint64_t mult;
    } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"", 1000}};
    char num[32];
    uint64_t v;
    size_t len, n;

    if (!s || !ret)
        return -EINVAL;
    len = strlen(s);
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        size_t sl = strlen(units[i].suffix);
        if (len <= sl || strcmp(s + len - sl, units[i].suffix) != 0)
            continue;
        n = len - sl;
        if (n >= sizeof(num))
            return -ERANGE;
        memcpy(num, s, n);
        num[n] = '\0';
        if (num[n - 1] < '0' || num[n - 1] > '9')
            continue; /* "5ms" must not match "s" with "5m" as the number */
        if (parse_u64(num, MAX_DURATION_MS / units[i].mult, &v) < 0)
            return -EINVAL;
        *ret = v * units[i].mult;
        return 0;
    }
    return -EINVAL;
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

static int parse_uint(const char *flag, const char *s, uint64_t min, uint64_t max, uint64_t *ret,
                      char *err, size_t errlen)
{
    uint64_t v;

    if (parse_u64(s, max, &v) < 0 || v < min)
        return errbuf_fmt(err, errlen, -EINVAL,
                          "--%s must be an integer from %llu to %llu, got '%s'", flag,
                          (unsigned long long)min, (unsigned long long)max, s);
    *ret = v;
    return 0;
}

static int parse_dur(const char *flag, const char *s, uint64_t min_ms, uint64_t *ret, char *err,
                     size_t errlen)
{
    uint64_t v;

    if (ns_parse_duration_ms(s, &v) < 0 || v < min_ms)
        return errbuf_fmt(err, errlen, -EINVAL,
                          "--%s: '%s' is not a duration of at least %llu ms (e.g. 500ms, 10s, 2m)",
                          flag, s, (unsigned long long)min_ms);
    *ret = v;
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

int ns_config_parse(int argc, char **argv, struct ns_config *cfg, char *err, size_t errlen)
{
    uint64_t v = 0; /* read only after a successful parse, but -O3 cannot tell */
    int c, r;

    if (err && errlen)
        err[0] = '\0';
    r = set_defaults(cfg);
    if (r < 0)
        return errbuf_fmt(err, errlen, -EINVAL, "internal error: bad defaults");
    optind = 0; /* full re-initialisation (glibc), so that tests can parse several times */
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", long_opts, NULL)) != -1) {
        const char *a = optarg;
        r = 0;
        switch (c) {
        case OPT_KUBECONFIG:
            r = set_str(&cfg->kubeconfig, a);
            break;
        case OPT_CONTEXT:
            r = set_str(&cfg->context, a);
            break;
        case OPT_NODES:
            r = parse_uint("nodes", a, 0, NS_MAX_NODES, &v, err, errlen);
            cfg->nodes = (unsigned)v;
            break;
        case OPT_PREFIX:
            r = set_str(&cfg->node_prefix, a);
            break;
        case OPT_CPU:
            r = parse_qty("cpu", a, &cfg->cpu, err, errlen);
            break;
        case OPT_MEMORY:
            r = parse_qty("memory", a, &cfg->memory, err, errlen);
            break;
        case OPT_PODS:
            r = parse_qty("pods", a, &cfg->pods, err, errlen);
            break;
        case OPT_STORAGE:
            r = parse_qty("ephemeral-storage", a, &cfg->storage, err, errlen);
            break;
        case OPT_EXT:
            r = parse_ext(cfg, a, err, errlen);
            break;
        case OPT_LABEL:
            r = parse_label(cfg, a, err, errlen);
            break;
        case OPT_POD_CIDR:
            if (ns_parse_cidr(a, &cfg->pod_cidr_base, &cfg->pod_cidr_prefix) < 0 ||
                cfg->pod_cidr_prefix < 8 || cfg->pod_cidr_prefix > 28)
                r = errbuf_fmt(err, errlen, -EINVAL,
                               "--pod-cidr-base: '%s' is not an IPv4 network address with a prefix "
                               "from /8 to /28 (e.g. 10.244.0.0/16)",
                               a);
            break;
        case OPT_NODE_MASK:
            r = parse_uint("node-cidr-mask", a, 16, 28, &v, err, errlen);
            cfg->node_cidr_mask = (unsigned)v;
            break;
        case OPT_NODE_IP:
            if (ns_parse_ipv4(a, &cfg->node_ip_base) < 0)
                r = errbuf_fmt(err, errlen, -EINVAL, "--node-ip-base: '%s' is not an IPv4 address",
                               a);
            break;
        case OPT_HEARTBEAT:
            r = parse_dur("heartbeat", a, 100, &cfg->lease_ms, err, errlen);
            break;
        case OPT_STATUS:
            r = parse_dur("status-interval", a, 100, &cfg->status_ms, err, errlen);
            break;
        case OPT_LEASE_DUR:
            r = parse_dur("lease-duration", a, 1000, &v, err, errlen);
            cfg->lease_duration_s = (v + 999) / 1000;
            break;
        case OPT_QPS:
            if (parse_qps(a, &cfg->qps) < 0 || cfg->qps <= 0)
                r = errbuf_fmt(err, errlen, -EINVAL, "--qps must be a positive number, got '%s'",
                               a);
            break;
        case OPT_BURST:
            r = parse_uint("burst", a, 1, 100000, &v, err, errlen);
            cfg->burst = (int)v;
            break;
        case OPT_CONCURRENCY:
            r = parse_uint("concurrency", a, 1, MAX_CONCURRENCY, &v, err, errlen);
            cfg->concurrency = (unsigned)v;
            break;
        case OPT_HEALTHZ:
            r = parse_uint("healthz-port", a, 0, 65535, &v, err, errlen);
            cfg->healthz_port = (unsigned)v;
            break;
        case OPT_KUBELET_ADDR: {
            const char *colon = strrchr(a, ':');
            char host[NS_IP_LEN];

            if (!colon || (size_t)(colon - a) >= sizeof(host) ||
                parse_u64(colon + 1, 65535, &v) < 0 || v == 0) {
                r = errbuf_fmt(err, errlen, -EINVAL,
                               "--kubelet-addr must be IP:PORT (e.g. 127.0.0.1:10250), got '%s'",
                               a);
                break;
            }
            memcpy(host, a, (size_t)(colon - a));
            host[colon - a] = '\0';
            if (ns_parse_ipv4(host, &cfg->kubelet_ip) < 0 || cfg->kubelet_ip == 0) {
                r = errbuf_fmt(err, errlen, -EINVAL,
                               "--kubelet-addr: '%s' is not an IPv4 address nodes can publish",
                               host);
                break;
            }
            cfg->kubelet_port = (unsigned)v;
            r = set_str(&cfg->kubelet_addr, a);
            break;
        }
        case OPT_TLS_CERT:
            r = set_str(&cfg->tls_cert_file, a);
            break;
        case OPT_TLS_KEY:
            r = set_str(&cfg->tls_key_file, a);
            break;
        case OPT_CLIENT_CA:
            r = set_str(&cfg->client_ca_file, a);
            break;
        case OPT_DELETE:
            cfg->delete_nodes_on_exit = true;
            break;
        case OPT_LOG_LEVEL:
            cfg->log_level = log_level_from_string(a);
            if (cfg->log_level == _LOG_LEVEL_INVALID)
                r = errbuf_fmt(err, errlen, -EINVAL,
                               "--log-level must be debug, info, warn or error, got '%s'", a);
            break;
        case 'h':
            return NS_CONFIG_HELP;
        case ':':
            return errbuf_fmt(err, errlen, -EINVAL, "%s needs a value", argv[optind - 1]);
        default:
            return errbuf_fmt(err, errlen, -EINVAL, "unknown option '%s' (try --help)",
                              argv[optind - 1]);
        }
        if (r < 0)
            return r == -ENOMEM ? errbuf_fmt(err, errlen, -EINVAL, "out of memory") : r;
    }
    if (optind < argc)
        return errbuf_fmt(err, errlen, -EINVAL, "unexpected argument '%s' (try --help)",
                          argv[optind]);
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
