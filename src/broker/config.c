/* brk config: see config.h. */
#include "broker/config.h"
#include "common/errbuf.h"
#include "common/netaddr.h"
#include "common/opts.h"
#include "kube/names.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char usage_head[] =
    "Usage: cliqo-broker --with-catalog|--with-orchestrator|--with-aggregator [flags]\n"
    "\n"
    "The cliqo broker of a federation: runs in the broker's cluster beside its cliqo agent and\n"
    "talks only to that cluster's API. The catalog lists the clusters it knows with their offers\n"
    "and measured KPIs (GET /api/clusters); the orchestrator re-offloads what consumers offload\n"
    "to the broker onto the providers selected by hand (/api/toggle) and by criteria\n"
    "(/api/policy); the aggregator offers each consumer the sum of the selected providers'\n"
    "offers. A dashboard is served at /. docs/broker.md\n"
    "\n"
    "Flags:\n";

static const char usage_foot[] =
    "\n"
    "HOST may be empty (all IPv4 addresses), an IPv4 address, [IPv6] or localhost.\n"
    "Durations: a whole number with a unit, e.g. 500ms, 15s, 2m.\n"
    "Exit status: 0 after a graceful shutdown (SIGTERM, SIGINT), 1 on a runtime failure, 2 on a\n"
    "bad command line.\n";

/* A flag of cliqo-agent's that the broker shares: kept as "--name=value" for agent_config_parse. */
static int forward(const struct opts_def *o, const char *v, char *err, size_t errlen)
{
    struct brk_config *cfg = o->dest;
    int n;

    if (cfg->nfwd >= BRK_MAX_FORWARD)
        return opts_fail(o, err, errlen, "too many flags");
    n = snprintf(cfg->fwd_buf[cfg->nfwd], BRK_FORWARD_MAX, "--%s=%s", o->name, v);
    if (n < 0 || n >= BRK_FORWARD_MAX)
        return opts_fail(o, err, errlen, "value too long");
    cfg->nfwd++;
    return 0;
}

static int addr_flag(const struct opts_def *o, const char *v, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t sl;

    if (netaddr_parse(v, &ss, &sl) < 0)
        return opts_fail(o, err, errlen,
                         "invalid address '%s' (expected HOST:PORT, e.g. :8000, 127.0.0.1:8000)",
                         v);
    *(const char **)o->dest = v;
    return 0;
}

static int secret_flag(const struct opts_def *o, const char *v, char *err, size_t errlen)
{
    if (!kname_dns_subdomain(v))
        return opts_fail(o, err, errlen, "'%s' is not a valid Secret name", v);
    *(const char **)o->dest = v;
    return 0;
}

struct brk_flags {
    struct opts_def defs[40];
    struct opts_spec spec;
};

#define FWD(n, a, h)                                                                               \
    {                                                                                              \
        .name = n, .kind = OPTS_CUSTOM, .arg = a, .dest = cfg, .fn = forward, .help = h            \
    }

static void flags_init(struct brk_flags *f, struct brk_config *cfg)
{
    /* clang-format off */
    const struct opts_def defs[] = {
        {.name = "with-catalog", .kind = OPTS_FLAG, .dest = &cfg->catalog,
         .help = "serve the catalog: GET /api/clusters"},
        {.name = "with-orchestrator", .kind = OPTS_FLAG, .dest = &cfg->orchestrator,
         .help = "re-offload the namespaces consumers offload to this cluster onto the selected "
                 "providers; serves /api/toggle and /api/policy"},
        {.name = "with-aggregator", .kind = OPTS_FLAG, .dest = &cfg->aggregator,
         .help = "offer each consumer the sum of the selected providers' offers (needs ClusterConfig "
                 "advertisementConfig.outgoingConfig.offerSource: Broker); serves /api/policy"},
        {.name = "api-addr", .kind = OPTS_CUSTOM, .arg = "HOST:PORT", .dest = &cfg->api_addr,
         .fn = addr_flag,
         .help = "the API, the dashboard, /healthz, /readyz and /metrics (default "
                 BRK_DEFAULT_API_ADDR ")"},
        {.name = "token-secret", .kind = OPTS_CUSTOM, .arg = "NAME", .dest = &cfg->token_secret,
         .fn = secret_flag,
         .help = "the Secret (key \"token\") holding the bearer token of the mutating endpoints "
                 "(default " BRK_DEFAULT_TOKEN_SECRET ")"},
        {.name = "token-file", .kind = OPTS_STRING, .flags = OPTS_NONEMPTY, .arg = "PATH",
         .dest = &cfg->token_file,
         .help = "read the bearer token from this file instead (a Secret mounted into the pod: "
                 "the broker then needs no right on Secrets); re-read every --probe-interval"},
        {.name = "require-token", .kind = OPTS_BOOL, .dest = &cfg->require_token,
         .help = "require the bearer token on /api/toggle and PUT /api/policy (default: true "
                 "unless --api-addr is a loopback address; false is refused beyond loopback)"},
        {.name = "public-catalog", .kind = OPTS_BOOL, .dest = &cfg->public_catalog,
         .help = "serve the reads (catalog, policy, dashboard) without the token beyond loopback "
                 "(default false: they need it too)"},
        {.name = "default-enabled", .kind = OPTS_BOOL, .dest = &cfg->default_enabled,
         .help = "a provider nobody toggled is enabled (default false: disabled until toggled)"},
        {.name = "probe-interval", .kind = OPTS_DURATION, .arg = "DUR",
         .dest = &cfg->probe_interval_ms, .min = 100, .max = 3600000,
         .help = "how often each provider's endpoint is probed for uptime and latency (default "
                 "10s)"},
        {.name = "probe-timeout", .kind = OPTS_DURATION, .arg = "DUR",
         .dest = &cfg->probe_timeout_ms, .min = 100, .max = 60000,
         .help = "a probe without an answer by then failed (default 5s)"},
        {.name = "rate-limit", .kind = OPTS_UINT, .arg = "N", .dest = &cfg->rate,
         .size = sizeof(cfg->rate), .max = 1000000,
         .help = "API requests per second per client address, with bursts of twice that (default "
                 "20; 0: no limit)"},
        {.name = "global-rate-limit", .kind = OPTS_UINT, .arg = "N", .dest = &cfg->global_rate,
         .size = sizeof(cfg->global_rate), .max = 10000000,
         .help = "API requests per second of all clients together (default 2000; 0: no limit)"},
        FWD("kubeconfig", "PATH", "kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, then "
                                  "the in-cluster service account)"),
        FWD("namespace", "NS", "namespace of the broker's objects and Lease (default cliqo)"),
        FWD("identity", "NAME", "leader election identity (default $POD_NAME, else "
                                "<hostname>_<pid>)"),
        /* A boolean, parsed here: a forwarded flag takes a value, and `--leader-elect` alone
         * would take the next word for it. */
        {.name = "leader-elect", .kind = OPTS_BOOL, .dest = &cfg->leader_elect,
         .help = "elect one active replica with a Lease (default true)"},
        FWD("lease-name", "NAME", "the Lease's name (default cliqo-broker)"),
        FWD("lease-duration", "DUR", "how long standbys wait before taking over (default 15s)"),
        FWD("renew-deadline", "DUR", "the leader gives up when it cannot renew in time (default "
                                     "10s)"),
        FWD("retry-period", "DUR", "between attempts (default 2s)"),
        FWD("shutdown-timeout", "DUR", "longest graceful shutdown (default 10s)"),
        FWD("log-level", "LEVEL", "debug, info, warn or error (default info)"),
        {.name = "version", .kind = OPTS_FLAG, .dest = &cfg->version,
         .help = "print the version and exit"},
        {.name = "help", .kind = OPTS_FLAG, .flags = OPTS_STOP, .dest = &cfg->help,
         .help = "print this help and exit"},
        {0},
    };
    /* clang-format on */

    _Static_assert(sizeof(defs) <= sizeof(f->defs), "brk_flags: defs too small");
    memcpy(f->defs, defs, sizeof(defs));
    f->spec = (struct opts_spec){
        .defs = f->defs, .noun = "flag", .usage = usage_head, .footer = usage_foot};
}

void brk_usage(FILE *f)
{
    static struct brk_config cfg;
    struct brk_flags flags;

    flags_init(&flags, &cfg);
    opts_print_help(&flags.spec, f);
}

/* The agent's command line: the broker's defaults first, then the forwarded flags (the last value
 * of a flag wins). agent_config_parse borrows every string: all of them live in cfg. */
static int agent_parse(struct brk_config *cfg, char *err, size_t errlen)
{
    int n = 0;

    snprintf(cfg->def_buf[0], BRK_FORWARD_MAX, "--lease-name=cliqo-broker");
    snprintf(cfg->def_buf[1], BRK_FORWARD_MAX, "--http-addr=%s", cfg->api_addr);
    snprintf(cfg->def_buf[2], BRK_FORWARD_MAX, "--metrics-addr=%s", cfg->api_addr);
    snprintf(cfg->def_buf[3], BRK_FORWARD_MAX, "--leader-elect=%s",
             cfg->leader_elect ? "true" : "false");
    cfg->fwd[n++] = "cliqo-broker";
    for (int i = 0; i < 4; i++)
        cfg->fwd[n++] = cfg->def_buf[i];
    for (int i = 0; i < cfg->nfwd; i++)
        cfg->fwd[n++] = cfg->fwd_buf[i];
    cfg->fwd[n] = NULL;
    if (agent_config_parse(n, cfg->fwd, &cfg->agent, err, errlen) < 0)
        return -EINVAL;
    cfg->agent.app = cfg;
    return 0;
}

int brk_config_parse(int argc, char **argv, struct brk_config *cfg, char *err, size_t errlen)
{
    struct brk_flags flags;
    bool explicit_token;

    memset(cfg, 0, sizeof(*cfg));
    cfg->api_addr = BRK_DEFAULT_API_ADDR;
    cfg->token_secret = BRK_DEFAULT_TOKEN_SECRET;
    cfg->probe_interval_ms = 10000;
    cfg->probe_timeout_ms = 5000;
    cfg->rate = 20;
    cfg->global_rate = 2000;
    cfg->leader_elect = true;
    flags_init(&flags, cfg);
    if (opts_parse(&flags.spec, argc, argv, err, errlen) < 0)
        return -EINVAL;
    if (cfg->help || cfg->version)
        return 0;
    /* Whether --require-token was given (its default depends on --api-addr). */
    explicit_token = false;
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--require-token") == 0 ||
            strncmp(argv[i], "--require-token=", 16) == 0)
            explicit_token = true;
    cfg->api_loopback = netaddr_is_loopback(cfg->api_addr);
    if (!explicit_token)
        cfg->require_token = !cfg->api_loopback;
    else if (!cfg->require_token && !cfg->api_loopback)
        return errbuf_fmt(err, errlen, -EINVAL,
                          "--require-token=false: the API listens beyond loopback (%s), where "
                          "anyone who reaches it could toggle providers",
                          cfg->api_addr);
    if (!cfg->catalog && !cfg->orchestrator && !cfg->aggregator)
        return errbuf_fmt(err, errlen, -EINVAL,
                          "nothing to run: give at least one of --with-catalog, "
                          "--with-orchestrator, --with-aggregator");
    if (cfg->probe_timeout_ms > cfg->probe_interval_ms)
        cfg->probe_timeout_ms = cfg->probe_interval_ms;
    return agent_parse(cfg, err, errlen);
}
