/* peers: per-peer units; see peers.h and docs/architecture.md ("Per-peer units"). */
#include "agent/peers.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/xalloc.h"
#include "kube/backoff.h"
#include "kube/kubeconfig.h"

#define DEFAULT_QPS        200
#define DEFAULT_BURST      400
#define DEFAULT_TIMEOUT_MS 10000
/* A peer is not trusted to be small: bounded answers and collections. */
#define PEER_MAX_BODY    (8u << 20) /* a list page from a peer; one object: KAPI_MAX_OBJECT_BODY */
#define PEER_MAX_OBJECTS 100000

struct pu_inf {
    struct pu_unit *u;
    enum pu_role role;
    struct inf_options o;
    char *ns, *label_selector, *field_selector;
    struct inf_handlers h;
    void *data;
    struct inf_informer *inf;
    struct pu_inf *next;
};

struct pu_client {
    struct pu_unit *u; /* back pointers for the request observer */
    enum pu_role role;
    struct kc_config *cfg;
    struct kapi_client *c;
    char version[64];
    bool busy; /* being replaced or dropped: callbacks of aborted requests may not install it */
    bool have_state, ok;
    uint64_t since_ms;
    double qps; /* the rate and burst it was given (pu_rate_of) */
    int burst;
};

struct pu_unit {
    struct pu_registry *reg;
    char id[PU_ID_MAX];
    const char *owners[PU_MAX_OWNERS];
    int nowners;
    bool dying;
    struct pu_client cl[PU_ROLE_MAX];
    struct pu_inf *infs;
    int ninfs;
    struct wq_queue *queues[PU_MAX_QUEUES];
    int nqueues;
    struct pu_unit *next;
};

struct pu_registry {
    uv_loop_t *loop;
    struct metrics_family *m_req, *m_dur;
    struct pu_client_options o;
    double qps; /* pu_set_rates: every peer's (0: o's) */
    int burst;
    struct pu_rate *rates; /* and some peers' own */
    size_t nrates;
    struct pu_unit *units;
    size_t n;
    uv_timer_t *reaper;
};

static const char *const role_names[PU_ROLE_MAX] = {"peering", "requester", "vk"};

const char *pu_role_name(enum pu_role role)
{
    return role >= 0 && role < PU_ROLE_MAX ? role_names[role] : "unknown";
}

/* ---- metrics -------------------------------------------------------------------------------- */

static int setup_metrics(struct pu_registry *reg, struct metrics_registry *m)
{
    static const char *const req_labels[] = {"peer", "role", "verb", "code", NULL};
    static const char *const dur_labels[] = {"peer", "role", "verb", NULL};
    static const double buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
    int r;

    if (!m)
        return 0;
    r = metrics_family_new(m, METRICS_COUNTER, "cliqo_peer_requests_total",
                           "Requests to peers' API servers, by peer, credential role, verb and "
                           "HTTP code (\"error\" when no answer arrived).",
                           req_labels, NULL, 0, &reg->m_req);
    if (r < 0)
        return r;
    metrics_family_set_max_series(reg->m_req, 20000);
    r = metrics_family_new(m, METRICS_HISTOGRAM, "cliqo_peer_request_duration_seconds",
                           "Duration of requests to peers' API servers (watches excluded).",
                           dur_labels, buckets, sizeof(buckets) / sizeof(buckets[0]), &reg->m_dur);
    if (r < 0)
        return r;
    metrics_family_set_max_series(reg->m_dur, 10000);
    return 0;
}

static void observe(struct kapi_client *c, const struct kapi_observation *o, void *data)
{
    struct pu_client *pc = data;
    struct pu_registry *reg = pc->u->reg;
    char code[24];
    const char *l[5];
    bool ok;

    (void)c;
    if (!kapi_observation_labels(o, &l[2], code, sizeof(code)))
        return; /* our own abort: says nothing about the peer */
    l[0] = pc->u->id;
    l[1] = role_names[pc->role];
    l[3] = code;
    l[4] = NULL;
    if (reg->m_req)
        metrics_inc(reg->m_req, l);
    if (reg->m_dur && !o->streaming) {
        l[3] = NULL;
        metrics_observe(reg->m_dur, l, o->seconds);
    }
    /* A watch that ends after a long life says little; a failed one that never answered says
     * the peer is down. */
    ok = o->http_status > 0;
    if (o->streaming && ok)
        return;
    if (!pc->have_state || pc->ok != ok) {
        pc->have_state = true;
        pc->ok = ok;
        pc->since_ms = uv_now(reg->loop);
    }
}

/* ---- informers ------------------------------------------------------------------------------ */

static void pi_stop(struct pu_inf *pi)
{
    inf_free(pi->inf);
    pi->inf = NULL;
}

static void pi_start(struct pu_inf *pi)
{
    struct kapi_client *c = pi->u->cl[pi->role].c;
    int r;

    if (pi->inf || !c)
        return;
    r = inf_new(c, &pi->o, &pi->h, pi->data, &pi->inf);
    if (r == 0)
        r = inf_start(pi->inf);
    if (r < 0) {
        log_warn("peers", "peer %s: cannot start an informer of %s (%s credential): %s", pi->u->id,
                 pi->o.resource->resource, role_names[pi->role], strerror(-r));
        pi_stop(pi);
    }
}

int pu_informer(struct pu_unit *u, enum pu_role role, const struct inf_options *o,
                const struct inf_handlers *h, void *data, struct pu_inf **ret)
{
    struct pu_inf *pi;

    if (!u || role < 0 || role >= PU_ROLE_MAX || !o || !o->resource || !h || !ret || u->dying)
        return -EINVAL;
    if (u->ninfs >= PU_MAX_INFS)
        return -ENOSPC;
    pi = x_calloc(1, sizeof(*pi));
    if (!pi)
        return -ENOMEM;
    pi->u = u;
    pi->role = role;
    pi->o = *o;
    if (!pi->o.max_objects || pi->o.max_objects > PEER_MAX_OBJECTS)
        pi->o.max_objects = PEER_MAX_OBJECTS;
    pi->h = *h;
    pi->data = data;
    if ((o->namespace_ && !(pi->ns = x_strdup(o->namespace_))) ||
        (o->label_selector && !(pi->label_selector = x_strdup(o->label_selector))) ||
        (o->field_selector && !(pi->field_selector = x_strdup(o->field_selector)))) {
        x_free(pi->ns);
        x_free(pi->label_selector);
        x_free(pi->field_selector);
        x_free(pi);
        return -ENOMEM;
    }
    pi->o.namespace_ = pi->ns;
    pi->o.label_selector = pi->label_selector;
    pi->o.field_selector = pi->field_selector;
    pi->next = u->infs;
    u->infs = pi;
    u->ninfs++;
    pi_start(pi);
    *ret = pi;
    return 0;
}

struct inf_informer *pu_inf_get(const struct pu_inf *pi)
{
    return pi ? pi->inf : NULL;
}

static void pi_free(struct pu_inf *pi)
{
    pi_stop(pi);
    x_free(pi->ns);
    x_free(pi->label_selector);
    x_free(pi->field_selector);
    x_free(pi);
}

void pu_informer_close(struct pu_inf *pi)
{
    struct pu_unit *u;

    if (!pi)
        return;
    u = pi->u;
    for (struct pu_inf **pp = &u->infs; *pp; pp = &(*pp)->next) {
        if (*pp == pi) {
            *pp = pi->next;
            u->ninfs--;
            break;
        }
    }
    pi_free(pi);
}

/* ---- clients -------------------------------------------------------------------------------- */

static void client_drop(struct pu_unit *u, enum pu_role role)
{
    struct pu_client *pc = &u->cl[role];
    struct kapi_client *c = pc->c;

    for (struct pu_inf *pi = u->infs; pi; pi = pi->next)
        if (pi->role == role)
            pi_stop(pi);
    pc->c = NULL;
    pc->version[0] = '\0';
    pc->have_state = false;
    /* Callbacks of aborted requests may look at the unit: it no longer offers this client. */
    pc->busy = true;
    kapi_client_abort(c);
    pc->busy = false;
    pc->cfg = kc_config_free(pc->cfg);
}

int pu_set_credential(struct pu_unit *u, enum pu_role role, const char *kubeconfig, size_t len,
                      const char *version, char *err, size_t errlen)
{
    struct pu_client *pc;
    struct kapi_client_options o = {0};
    struct kc_config *cfg = NULL;
    struct kapi_client *c = NULL;
    char kerr[KC_ERR_LEN], origin[96];
    int r;

    if (err && errlen)
        err[0] = '\0';
    if (!u || role < 0 || role >= PU_ROLE_MAX || !kubeconfig || !version || u->dying) {
        if (err)
            snprintf(err, errlen, "invalid arguments");
        return -EINVAL;
    }
    pc = &u->cl[role];
    if (pc->c && strcmp(pc->version, version) == 0)
        return 0;
    if (pc->busy) {
        if (err)
            snprintf(err, errlen, "the %s client is being replaced", role_names[role]);
        return -EAGAIN;
    }
    if (len > PU_CONFIG_MAX) {
        if (err)
            snprintf(err, errlen, "the %s kubeconfig is larger than %u bytes", role_names[role],
                     PU_CONFIG_MAX);
        return -E2BIG;
    }
    snprintf(origin, sizeof(origin), "%s credential of peer %s", role_names[role], u->id);
    r = kc_load_peer(kubeconfig, len, origin, &cfg, kerr, sizeof(kerr));
    if (r < 0) {
        if (err)
            snprintf(err, errlen, "%s", kerr);
        return r;
    }
    pu_rate_of(u, &o.qps, &o.burst);
    o.timeout_ms = u->reg->o.timeout_ms;
    o.max_body = PEER_MAX_BODY;
    o.observe = observe;
    o.observe_data = pc;
    r = kapi_client_new(u->reg->loop, cfg, &o, &c);
    if (r < 0) {
        if (err)
            snprintf(err, errlen, "cannot create a client for %s: %s", cfg->server, strerror(-r));
        kc_config_free(cfg);
        return r;
    }
    if (pc->c)
        log_info("peers", "peer %s: %s credential replaced (version %s -> %s)", u->id,
                 role_names[role], pc->version, version);
    else
        log_info("peers", "peer %s: %s credential installed (server %s, namespace %s)", u->id,
                 role_names[role], cfg->server, cfg->namespace);
    if (pc->c)
        client_drop(u, role);
    pc->cfg = cfg;
    pc->c = c;
    pc->qps = o.qps;
    pc->burst = o.burst;
    snprintf(pc->version, sizeof(pc->version), "%s", version);
    for (struct pu_inf *pi = u->infs; pi; pi = pi->next)
        if (pi->role == role)
            pi_start(pi);
    return 1;
}

void pu_drop_credential(struct pu_unit *u, enum pu_role role)
{
    if (!u || role < 0 || role >= PU_ROLE_MAX || !u->cl[role].c)
        return;
    log_info("peers", "peer %s: %s credential removed", u->id, role_names[role]);
    client_drop(u, role);
}

struct kapi_client *pu_client(const struct pu_unit *u, enum pu_role role)
{
    if (!u || role < 0 || role >= PU_ROLE_MAX || u->dying)
        return NULL;
    return u->cl[role].c;
}

const char *pu_namespace(const struct pu_unit *u, enum pu_role role)
{
    if (!u || role < 0 || role >= PU_ROLE_MAX || !u->cl[role].cfg)
        return NULL;
    return u->cl[role].cfg->namespace;
}

const char *pu_credential_version(const struct pu_unit *u, enum pu_role role)
{
    if (!u || role < 0 || role >= PU_ROLE_MAX || !u->cl[role].c)
        return NULL;
    return u->cl[role].version;
}

int pu_reachable(const struct pu_unit *u, enum pu_role role, bool *ret_ok, uint64_t *ret_since_ms)
{
    const struct pu_client *pc;

    if (!u || role < 0 || role >= PU_ROLE_MAX)
        return -EINVAL;
    pc = &u->cl[role];
    if (!pc->c || !pc->have_state)
        return -ENOENT;
    if (ret_ok)
        *ret_ok = pc->ok;
    if (ret_since_ms)
        *ret_since_ms = pc->since_ms;
    return 0;
}

/* ---- queues --------------------------------------------------------------------------------- */

int pu_queue(struct pu_unit *u, const struct wq_options *o, wq_process_fn fn, void *data,
             struct wq_queue **ret)
{
    struct wq_queue *q;

    if (!u || !fn || !ret || u->dying)
        return -EINVAL;
    if (u->nqueues >= PU_MAX_QUEUES)
        return -ENOSPC;
    q = wq_new(u->reg->loop, o, fn, data);
    if (!q)
        return -ENOMEM;
    u->queues[u->nqueues++] = q;
    *ret = q;
    return 0;
}

/* ---- units ---------------------------------------------------------------------------------- */

static void unit_destroy(struct pu_unit *u)
{
    struct pu_registry *reg = u->reg;

    for (struct pu_unit **pp = &reg->units; *pp; pp = &(*pp)->next) {
        if (*pp == u) {
            *pp = u->next;
            reg->n--;
            break;
        }
    }
    u->dying = true;
    log_info("peers", "peer %s: unit closed", u->id);
    while (u->infs) {
        struct pu_inf *pi = u->infs;
        u->infs = pi->next;
        pi_free(pi);
    }
    for (int i = 0; i < PU_ROLE_MAX; i++)
        if (u->cl[i].c)
            client_drop(u, (enum pu_role)i);
    for (int i = 0; i < u->nqueues; i++)
        wq_close(u->queues[i], NULL, NULL);
    if (reg->m_req)
        metrics_family_remove(reg->m_req, "peer", u->id);
    if (reg->m_dur)
        metrics_family_remove(reg->m_dur, "peer", u->id);
    x_free(u);
}

static void reap(uv_timer_t *t)
{
    struct pu_registry *reg = t->data;
    struct pu_unit *u = reg->units, *next;

    for (; u; u = next) {
        next = u->next;
        if (u->dying && u->nowners == 0)
            unit_destroy(u);
    }
}

struct pu_unit *pu_find(struct pu_registry *reg, const char *id)
{
    if (!reg || !id)
        return NULL;
    for (struct pu_unit *u = reg->units; u; u = u->next)
        if (strcmp(u->id, id) == 0)
            return u;
    return NULL;
}

static bool id_ok(const char *id)
{
    size_t n = id ? strlen(id) : 0;

    if (n == 0 || n >= PU_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= '0' && id[i] <= '9') || id[i] == '-'))
            return false;
    return id[0] != '-' && id[n - 1] != '-';
}

int pu_acquire(struct pu_registry *reg, const char *id, const char *owner, struct pu_unit **ret)
{
    struct pu_unit *u;

    if (!reg || !owner || !ret || !id_ok(id))
        return -EINVAL;
    u = pu_find(reg, id);
    if (!u) {
        if (reg->n >= PU_MAX_UNITS)
            return -ENOSPC;
        u = x_calloc(1, sizeof(*u));
        if (!u)
            return -ENOMEM;
        u->reg = reg;
        snprintf(u->id, sizeof(u->id), "%s", id);
        for (int i = 0; i < PU_ROLE_MAX; i++) {
            u->cl[i].u = u;
            u->cl[i].role = (enum pu_role)i;
        }
        u->next = reg->units;
        reg->units = u;
        reg->n++;
        log_debug("peers", "peer %s: unit opened", id);
    }
    if (!pu_holds(u, owner)) {
        if (u->nowners >= PU_MAX_OWNERS)
            return -ENOSPC;
        u->owners[u->nowners++] = owner;
    }
    u->dying = false; /* revived before the reaper ran */
    *ret = u;
    return 0;
}

bool pu_holds(const struct pu_unit *u, const char *owner)
{
    if (!u || !owner)
        return false;
    for (int i = 0; i < u->nowners; i++)
        if (strcmp(u->owners[i], owner) == 0)
            return true;
    return false;
}

void pu_release(struct pu_unit *u, const char *owner)
{
    if (!u || !owner)
        return;
    for (int i = 0; i < u->nowners; i++) {
        if (strcmp(u->owners[i], owner) == 0) {
            u->owners[i] = u->owners[--u->nowners];
            break;
        }
    }
    if (u->nowners == 0 && !u->dying) {
        u->dying = true;
        if (u->reg->reaper)
            uv_timer_start(u->reg->reaper, reap, 0, 0);
    }
}

const char *pu_id(const struct pu_unit *u)
{
    return u ? u->id : NULL;
}

struct pu_registry *pu_registry(const struct pu_unit *u)
{
    return u ? u->reg : NULL;
}

/* ---- registry ------------------------------------------------------------------------------- */

int pu_registry_new(uv_loop_t *loop, struct metrics_registry *metrics,
                    const struct pu_client_options *o, struct pu_registry **ret)
{
    struct pu_registry *reg;
    int r;

    if (!loop || !ret)
        return -EINVAL;
    reg = x_calloc(1, sizeof(*reg));
    if (!reg)
        return -ENOMEM;
    reg->loop = loop;
    reg->o.qps = o && o->qps > 0 ? o->qps : DEFAULT_QPS;
    reg->o.burst = o && o->burst > 0 ? o->burst : DEFAULT_BURST;
    reg->o.timeout_ms = o && o->timeout_ms > 0 ? o->timeout_ms : DEFAULT_TIMEOUT_MS;
    reg->reaper = ktimer_new(loop, reg);
    if (!reg->reaper) {
        x_free(reg);
        return -ENOMEM;
    }
    r = setup_metrics(reg, metrics);
    if (r < 0) {
        ktimer_free(reg->reaper);
        x_free(reg);
        return r;
    }
    *ret = reg;
    return 0;
}

void pu_registry_abort(struct pu_registry *reg)
{
    if (!reg)
        return;
    for (struct pu_unit *u = reg->units; u; u = u->next)
        for (int i = 0; i < PU_ROLE_MAX; i++)
            if (u->cl[i].c)
                client_drop(u, (enum pu_role)i);
}

void pu_rate_of(const struct pu_unit *u, double *ret_qps, int *ret_burst)
{
    const struct pu_registry *reg = u->reg;

    *ret_qps = reg->qps > 0 ? reg->qps : reg->o.qps;
    *ret_burst = reg->burst > 0 ? reg->burst : reg->o.burst;
    for (size_t i = 0; i < reg->nrates; i++)
        if (strcmp(reg->rates[i].id, u->id) == 0) {
            *ret_qps = reg->rates[i].qps;
            *ret_burst = reg->rates[i].burst;
            break;
        }
}

int pu_set_rates(struct pu_registry *reg, double qps, int burst, const struct pu_rate *per,
                 size_t n)
{
    struct pu_rate *copy = NULL;
    bool changed;

    if (!reg || qps < 0 || burst < 0 || (n && !per))
        return -EINVAL;
    if (n > PU_MAX_RATES)
        return -E2BIG;
    for (size_t i = 0; i < n; i++)
        if (!(per[i].qps > 0) || per[i].burst < 1 || !per[i].id[0] ||
            !memchr(per[i].id, '\0', sizeof(per[i].id)))
            return -EINVAL;
    if (n) {
        copy = x_calloc(n, sizeof(*copy));
        if (!copy)
            return -ENOMEM;
        memcpy(copy, per, n * sizeof(*copy));
    }
    changed = qps != reg->qps || burst != reg->burst || n != reg->nrates ||
              (n && memcmp(copy, reg->rates, n * sizeof(*copy)) != 0);
    x_free(reg->rates);
    reg->rates = copy;
    reg->nrates = n;
    reg->qps = qps;
    reg->burst = burst;
    for (struct pu_unit *u = reg->units; u; u = u->next) {
        double q;
        int b;

        pu_rate_of(u, &q, &b);
        for (int role = 0; role < PU_ROLE_MAX; role++)
            if (u->cl[role].c && (u->cl[role].qps != q || u->cl[role].burst != b)) {
                kapi_client_set_rate(u->cl[role].c, q, b);
                u->cl[role].qps = q;
                u->cl[role].burst = b;
                log_info("peers", "peer %s: %s client at %.0f requests/s, burst %d", u->id,
                         role_names[role], q, b);
            }
    }
    return changed;
}

void pu_registry_free(struct pu_registry *reg)
{
    if (!reg)
        return;
    while (reg->units) {
        reg->units->nowners = 0;
        unit_destroy(reg->units);
    }
    ktimer_free(reg->reaper);
    x_free(reg->rates);
    x_free(reg);
}

size_t pu_registry_count(const struct pu_registry *reg)
{
    return reg ? reg->n : 0;
}
