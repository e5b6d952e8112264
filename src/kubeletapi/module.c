/* kubeletapi agent module: see module.h. */
#include "kubeletapi/module.h"
#include "kubeletapi/service.h"

#include "agent/config.h"
#include "metrics/metrics.h"
#include "common/log.h"
#include "common/xalloc.h"

#include <errno.h>

#include <stdio.h>
#include <string.h>

#define MOD  "kubelet-api"
#define NAME "kubeletapi" /* in the module table */

/* The module's state (agent_module_data "kubeletapi"). */
struct kla_mod {
    struct kla_service *svc;
    kla_resolve_fn resolve;
    void *resolve_data;
    struct metrics_family *serving, *expiry, *requests, *denied, *streams, *open, *upstream_errors;
};

/* The state, made by the first of init and kla_agent_set_resolver (the advertisement operator's
 * init, earlier in the table, sets the resolver); NULL when out of memory. */
static struct kla_mod *mod_state(struct agent *a)
{
    struct kla_mod *m = agent_module_data(a, NAME);

    if (m)
        return m;
    m = x_calloc(1, sizeof(*m));
    if (m && agent_set_module_data(a, NAME, m) < 0) {
        x_free(m);
        m = NULL;
    }
    return m;
}

/* ---- the resolver ------------------------------------------------------------------------- */

/* Until a resolver is set, no pod is known here. */
static int no_target(void *data, const char *ns, const char *pod, struct kla_target *ret)
{
    (void)data;
    (void)ns;
    (void)pod;
    (void)ret;
    return -ENOENT;
}

/* ---- metrics ------------------------------------------------------------------------------- */

static void collect(struct metrics_registry *r, void *data)
{
    struct kla_service_stats s;
    static const char *const unauth[] = {"unauthenticated", NULL},
                             *const forb[] = {"forbidden", NULL}, *const tls[] = {"tls", NULL},
                             *const logs[] = {"logs", NULL}, *const execs[] = {"exec", NULL},
                             *const conns[] = {"connections", NULL};

    struct kla_mod *st = data;

    (void)r;
    if (!st->svc) {
        metrics_set(st->serving, NULL, 0);
        metrics_set(st->open, conns, 0);
        metrics_set(st->open, execs, 0);
        return;
    }
    kla_service_stats(st->svc, &s);
    metrics_set(st->serving, NULL, s.listening ? 1 : 0);
    metrics_set(st->expiry, NULL, (double)s.cert_expires);
    /* counters: these never go down while the service lives (one per leadership) */
    metrics_set(st->requests, NULL, (double)s.server.requests);
    metrics_set(st->denied, tls, (double)s.server.tls_failures);
    metrics_set(st->denied, unauth, (double)s.server.unauthenticated);
    metrics_set(st->denied, forb, (double)s.server.forbidden);
    metrics_set(st->streams, logs, (double)s.server.logs);
    metrics_set(st->streams, execs, (double)s.server.execs);
    metrics_set(st->open, conns, (double)s.server.open_connections);
    metrics_set(st->open, execs, (double)s.server.open_execs);
    metrics_set(st->upstream_errors, NULL, (double)s.relay_upstream_errors);
}

int kla_module_init(struct agent *a)
{
    static const char *const reason[] = {"reason", NULL}, *const kind[] = {"kind", NULL};
    struct metrics_registry *m = agent_metrics(a);
    struct kla_mod *st = mod_state(a);
    int r;

    if (!st)
        return -ENOMEM;
    r = metrics_family_new(m, METRICS_GAUGE, "cliqo_kubelet_api_serving",
                           "1 while the kubelet API of the virtual nodes listens (leader only).",
                           NULL, NULL, 0, &st->serving);
    if (r == 0)
        r = metrics_family_new(m, METRICS_GAUGE, "cliqo_kubelet_api_certificate_expiry_seconds",
                               "When the kubelet API's serving certificate expires (Unix time).",
                               NULL, NULL, 0, &st->expiry);
    if (r == 0)
        r = metrics_family_new(m, METRICS_COUNTER, "cliqo_kubelet_api_requests_total",
                               "Authenticated requests to the kubelet API.", NULL, NULL, 0,
                               &st->requests);
    if (r == 0)
        r = metrics_family_new(m, METRICS_COUNTER, "cliqo_kubelet_api_denied_total",
                               "Connections or requests refused: TLS handshake failures, no valid "
                               "client certificate, no nodes/proxy right.",
                               reason, NULL, 0, &st->denied);
    if (r == 0)
        r = metrics_family_new(m, METRICS_COUNTER, "cliqo_kubelet_api_streams_total",
                               "Authorised logs and exec requests.", kind, NULL, 0, &st->streams);
    if (r == 0)
        r = metrics_family_new(m, METRICS_GAUGE, "cliqo_kubelet_api_open",
                               "Open connections and exec sessions of the kubelet API.", kind, NULL,
                               0, &st->open);
    if (r == 0)
        r = metrics_family_new(m, METRICS_COUNTER, "cliqo_kubelet_api_upstream_errors_total",
                               "Relayed requests the provider's API server could not serve.", NULL,
                               NULL, 0, &st->upstream_errors);
    if (r == 0)
        r = metrics_add_collector(m, collect, st);
    return r;
}

int kla_module_start(struct agent *a)
{
    const struct agent_config *cfg = agent_config(a);
    struct kla_mod *st = agent_module_data(a, NAME);
    struct kla_service_options o = {0};
    char full[320], name[64];
    int r;

    if (!st)
        return -EINVAL;
    if (st->svc)
        return 0;
    snprintf(full, sizeof(full), "cliqo-%s", agent_identity(a));
    kla_service_label(full, name, sizeof(name));
    o.listen_addr = cfg->kubelet_addr;
    o.node_address = cfg->node_address;
    o.name = name;
    r = kla_service_new(agent_loop(a), agent_kube(a), &o, &st->svc);
    if (r < 0)
        /* A bad address or name is a configuration error the flags' checks let through. */
        return log_errno(r, MOD, "cannot set up the kubelet API on %s for %s", o.listen_addr,
                         o.node_address);
    kla_service_set_resolver(st->svc, st->resolve ? st->resolve : no_target, st->resolve_data);
    return 0;
}

void kla_module_stop(struct agent *a)
{
    struct kla_mod *st = agent_module_data(a, NAME);

    if (!st)
        return;
    kla_service_close(st->svc, NULL, NULL);
    st->svc = NULL;
}

void kla_module_fini(struct agent *a)
{
    struct kla_mod *st = agent_module_data(a, NAME);

    kla_module_stop(a);
    x_free(st); /* the resolver goes with it */
    agent_set_module_data(a, NAME, NULL);
}

void kla_agent_set_resolver(struct agent *a, kla_resolve_fn fn, void *data)
{
    struct kla_mod *st = mod_state(a);

    if (!st) {
        log_error(MOD, "out of memory: the kubelet API knows no pod");
        return;
    }
    st->resolve = fn;
    st->resolve_data = data;
    if (st->svc)
        kla_service_set_resolver(st->svc, fn ? fn : no_target, data);
}

bool kla_agent_serving(struct agent *a)
{
    struct kla_mod *st = agent_module_data(a, NAME);
    struct kla_service_stats s;

    if (!st || !st->svc)
        return false;
    kla_service_stats(st->svc, &s);
    return s.listening;
}
