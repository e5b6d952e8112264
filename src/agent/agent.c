/* agent: see agent.h for the module interface, docs/agent.md for the design.
 *
 * Lost leadership does not end the process: on_recycle makes the modules again (a new generation)
 * while the elector campaigns on.
 *
 * Shutdown, whatever triggers it (signal, a failing module), always runs from a
 * timer callback (never from inside a library callback such as the elector's) in two phases:
 *   begin:  stop the modules and their queues, release the Lease (bounded by half the shutdown
 *           timeout: a Lease that cannot be released simply expires);
 *   finish: close the HTTP servers (pending requests are aborted), fini the modules, free the
 *           informers, close the queues and the Kubernetes client, close every handle.
 * A force timer (--shutdown-timeout, unreferenced so it never keeps the loop alive by itself)
 * exits the process with status 1 if this takes too long; a second signal does the same at once. */
#include "agent/agent-internal.h"
#include "agent/ctl.h"
#include "common/log.h"
#include "common/looplag.h"
#include "common/slice.h"
#include "common/netaddr.h"
#include "common/strutil.h"
#include "common/xalloc.h"
#include "agent/peers.h"
#include "kube/leader.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define PROBE_PERIOD_MS   5000
#define PROBE_TIMEOUT_MS  5000
#define PROBE_STALE_MS    (3 * PROBE_PERIOD_MS)
#define SYNC_CHECK_MS     100
#define MAX_INFORMERS     64
#define MAX_QUEUES        64
#define MAX_NET_SUBS      4
#define METRICS_MAX_BYTES (4u << 20)

struct inf_entry {
    struct inf_handlers h;
    void *data;
    unsigned flags;
    bool replaying; /* its handlers are being handed the cached objects (replay_informers) */
    struct inf_entry *next;
};

struct shared_inf {
    struct agent *a;
    const struct kapi_resource *res;
    char *ns, *selector, *field_selector;
    void (*transform)(json_t *obj, void *data);
    struct inf_informer *inf;
    struct inf_entry *entries, **entries_tail;
    bool replaying;       /* held (inf_hold) while its cached objects are replayed in slices */
    size_t replay_cursor; /* inf_foreach_slice's */
    size_t replayed;
    uint64_t replay_start;  /* uv_hrtime */
    unsigned replay_slices; /* loop iterations it took */
    struct shared_inf *next;
};

struct queue_ent {
    char *name;
    struct wq_queue *q;
    struct queue_ent *next;
};

struct agent {
    uv_loop_t *loop;
    const struct agent_config *cfg;
    const struct agent_module *modules;
    int nmodules, ninited;
    bool modules_started, modules_stopped;
    uv_idle_t replay_idle; /* runs replay slices while some informer is replaying */

    struct kc_config *kc;
    struct kapi_client *own;  /* the agent's own requests: the Lease and the probe */
    struct kapi_client *kube; /* the modules' client, made again for each generation */
    struct pu_registry *peers;
    struct httpd_server *http, *auth;
    struct httpd_server *metrics_http; /* NULL: /metrics is served by http */
    const char *metrics_addr;
    struct le_elector *le;
    bool leading;

    struct shared_inf *infs;
    int ninfs;
    bool infs_started;
    struct queue_ent *queues;
    int nqueues;

    struct metrics_registry *metrics;  /* the process's: the agent's own families */
    struct metrics_registry *mmetrics; /* the modules' and peer units', one per generation */
    unsigned generation;               /* module generations begun after the first */
    struct metrics_family *m_generations;
    struct metrics_family *m_leader, *m_http, *m_module_ready, *m_inf_synced, *m_inf_objects,
        *m_queue_depth, *m_kube_pending, *m_kube_req, *m_kube_up, *m_rss, *m_vsize, *m_fds,
        *m_max_fds, *m_cpu, *m_start, *m_build, *m_loop_iter, *m_loop_max, *m_loop_max_faults,
        *m_loop_max_io, *m_store_bytes;
    double start_time;
    struct llag lag;      /* the loop's CPU time per iteration */
    uint64_t lag_warn_at; /* loop time of the last warning about a long iteration */

    uv_signal_t sigterm, sigint;
    uv_timer_t probe_timer, shutdown_timer, force_timer, release_timer, recycle_timer, sync_timer;
    uint64_t sync_wait_since; /* loop time the modules began waiting for the informers' caches */
    bool recycling;           /* leadership lost: the modules are being made again (on_recycle) */
    bool handles_open;
    struct kapi_call *probe_call;
    bool probe_ok;
    uint64_t probe_ok_at;
    char probe_err[160];

    bool shutting_down, finishing;
    int exit_code;

    agent_last_offer_fn last_offer;     /* agent_set_last_offer: cleared with the modules */
    agent_peer_network_fn peer_network; /* agent_set_peer_network: cleared with the modules */
    struct {
        agent_peer_network_changed_fn fn;
        void *data;
    } net_subs[MAX_NET_SUBS];       /* agent_subscribe_peer_network: likewise */
    void *mdata[AGENT_MAX_MODULES]; /* agent_set_module_data, by index in the table */
};

/* ---- accessors ------------------------------------------------------------------------------ */

uv_loop_t *agent_loop(struct agent *a)
{
    return a->loop;
}

struct kapi_client *agent_kube(struct agent *a)
{
    return a->kube;
}

const struct kc_config *agent_kubeconfig(struct agent *a)
{
    return a->kc;
}

const struct agent_config *agent_config(struct agent *a)
{
    return a->cfg;
}

static int module_index(struct agent *a, const char *name)
{
    for (int i = 0; i < a->nmodules && i < AGENT_MAX_MODULES; i++)
        if (strcmp(a->modules[i].name, name) == 0)
            return i;
    return -1;
}

int agent_set_module_data(struct agent *a, const char *name, void *data)
{
    int i = module_index(a, name);

    if (i < 0)
        return -ENOENT;
    a->mdata[i] = data;
    return 0;
}

void *agent_module_data(struct agent *a, const char *name)
{
    int i = module_index(a, name);

    return i < 0 ? NULL : a->mdata[i];
}

void agent_set_last_offer(struct agent *a, agent_last_offer_fn fn)
{
    a->last_offer = fn;
}

int agent_last_offer(struct agent *a, const char *id, struct shr_list *ret, char *name,
                     size_t namelen)
{
    return a->last_offer ? a->last_offer(a, id, ret, name, namelen) : -ENOENT;
}

void agent_set_peer_network(struct agent *a, agent_peer_network_fn fn)
{
    a->peer_network = fn;
}

int agent_peer_network(struct agent *a, const char *id, struct agent_peer_network *ret)
{
    return a->peer_network ? a->peer_network(a, id, ret) : -ENOENT;
}

int agent_subscribe_peer_network(struct agent *a, agent_peer_network_changed_fn fn, void *data)
{
    for (int i = 0; i < MAX_NET_SUBS; i++) {
        if (!a->net_subs[i].fn) {
            a->net_subs[i].fn = fn;
            a->net_subs[i].data = data;
            return 0;
        }
    }
    return -ENOSPC;
}

void agent_peer_network_changed(struct agent *a, const char *id)
{
    for (int i = 0; i < MAX_NET_SUBS; i++)
        if (a->net_subs[i].fn)
            a->net_subs[i].fn(id, a->net_subs[i].data);
}

const char *agent_namespace(struct agent *a)
{
    return a->cfg->namespace_;
}

const char *agent_identity(struct agent *a)
{
    return a->cfg->identity;
}

bool agent_is_leader(struct agent *a)
{
    return a->leading && a->modules_started && !a->modules_stopped;
}

bool agent_shutting_down(struct agent *a)
{
    return a->shutting_down;
}

struct metrics_registry *agent_metrics(struct agent *a)
{
    return a->mmetrics;
}

struct pu_registry *agent_peers(struct agent *a)
{
    return a->peers;
}

struct httpd_server *agent_http_server(struct agent *a)
{
    return a->http;
}

/* ---- HTTP ----------------------------------------------------------------------------------- */

static void on_http_response(const struct httpd_request *req, const char *route, unsigned status,
                             void *data)
{
    struct agent *a = data;
    char code[8];
    const char *labels[3];

    snprintf(code, sizeof(code), "%u", status);
    labels[0] = route ? route : "unmatched";
    labels[1] = code;
    labels[2] = NULL;
    metrics_inc(a->m_http, labels);
    log_debug("http", "%s %s from %s: %u", httpd_req_method(req), httpd_req_path(req),
              httpd_req_peer_ip(req), status);
}

int agent_auth_server(struct agent *a, const char *cert_pem, const char *key_pem,
                      struct httpd_server **ret)
{
    struct httpd_options o = {
        .name = "auth",
        .addr = a->cfg->auth_addr,
        .tls_cert_pem = cert_pem,
        .tls_key_pem = key_pem,
        .on_response = on_http_response,
        .data = a,
    };
    int r;

    if (!ret)
        return -EINVAL;
    if (a->shutting_down)
        return -ESHUTDOWN;
    if (!a->auth) {
        if (!cert_pem || !key_pem)
            return -EINVAL;
        r = httpd_new(a->loop, &o, &a->auth);
        if (r < 0)
            return r;
    }
    *ret = a->auth;
    return 0;
}

static void handle_healthz(struct httpd_request *req, void *data)
{
    (void)data;
    httpd_respond_text(req, 200, "ok");
}

static bool kube_reachable(struct agent *a)
{
    return a->probe_ok && uv_now(a->loop) - a->probe_ok_at < PROBE_STALE_MS;
}

static bool informers_synced(struct agent *a, const char **ret_which)
{
    for (struct shared_inf *si = a->infs; si; si = si->next) {
        if (!inf_listed(si->inf)) { /* listed: a replay in progress holds it, still serving */
            *ret_which = si->res->resource;
            return false;
        }
    }
    return true;
}

static void check_line(struct sbuf *b, bool *all, const char *name, bool ok, const char *why)
{
    if (ok) {
        sbuf_printf(b, "[+]%s ok\n", name);
        return;
    }
    *all = false;
    sbuf_printf(b, "[-]%s failed: %s\n", name, why);
}

static void handle_readyz(struct httpd_request *req, void *data)
{
    struct agent *a = data;
    struct sbuf b;
    bool all = true;
    const char *which = "";
    char name[96], why[200];

    sbuf_init(&b, 64 * 1024);
    check_line(&b, &all, "ping", true, NULL);
    check_line(&b, &all, "shutdown", !a->shutting_down, "the agent is shutting down");
    snprintf(why, sizeof(why), "%s", a->probe_err[0] ? a->probe_err : "no answer yet");
    check_line(&b, &all, "kube-apiserver", kube_reachable(a), why);
    {
        bool ok = informers_synced(a, &which);
        snprintf(why, sizeof(why), "informer of %s not synced", which);
        check_line(&b, &all, "informers-synced", ok, why);
    }
    if (a->cfg->leader_elect)
        check_line(&b, &all, "leader-election", true, NULL);
    for (int i = 0; i < a->ninited; i++) {
        const struct agent_module *m = &a->modules[i];

        snprintf(name, sizeof(name), "module-%s", m->name);
        check_line(&b, &all, name, !m->ready || m->ready(a), "not ready");
    }
    sbuf_adds(&b, all ? "readyz check passed\n" : "readyz check failed\n");
    if (sbuf_len(&b) == 0)
        httpd_respond_text(req, 500, "internal error\n");
    else
        httpd_respond(req, all ? 200 : 503, "text/plain; charset=utf-8", sbuf_str(&b),
                      sbuf_len(&b));
    sbuf_done(&b);
}

static void handle_metrics(struct httpd_request *req, void *data)
{
    struct agent *a = data;
    struct sbuf b;
    int r;

    sbuf_init(&b, METRICS_MAX_BYTES);
    r = metrics_render(a->metrics, &b);
    if (r == 0 && a->mmetrics)
        r = metrics_render(a->mmetrics, &b);
    if (r < 0) {
        log_warn("agent", "rendering metrics failed: %s", strerror(-r));
        httpd_respond_error(req, 500, "InternalError", "cannot render metrics");
    } else {
        httpd_respond(req, 200, METRICS_CONTENT_TYPE, sbuf_str(&b), sbuf_len(&b));
    }
    sbuf_done(&b);
}

/* ---- process metrics ------------------------------------------------------------------------ */

/* Reads a small /proc file (NUL-terminated, truncated to size - 1). Returns the length or -errno.
 */
static ssize_t read_proc(const char *path, char *buf, size_t size)
{
    ssize_t n, total = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -errno;
    while ((size_t)total < size - 1) {
        n = read(fd, buf + total, size - 1 - (size_t)total);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        total += n;
    }
    close(fd);
    buf[total] = '\0';
    return total;
}

/* Field `field` (1-based, as in proc(5)) of /proc/self/stat, parsed after the command name. */
static int stat_field(const char *stat, int field, uint64_t *ret)
{
    const char *p = strrchr(stat, ')');
    char tok[32];
    int i = 2;

    if (!p)
        return -EINVAL;
    p++;
    while (*p) {
        size_t n;

        while (*p == ' ')
            p++;
        n = strcspn(p, " \n");
        if (n == 0)
            break;
        if (++i == field) {
            if (n >= sizeof(tok))
                return -ERANGE;
            memcpy(tok, p, n);
            tok[n] = '\0';
            return parse_u64(tok, UINT64_MAX, ret);
        }
        p += n;
    }
    return -ENOENT;
}

static double boot_time(void)
{
    static char buf[65536];
    const char *p;
    char tok[24];
    uint64_t v;
    size_t n;

    if (read_proc("/proc/stat", buf, sizeof(buf)) < 0)
        return 0;
    p = strstr(buf, "\nbtime ");
    if (!p)
        return 0;
    p += 7;
    n = strcspn(p, "\n");
    if (n >= sizeof(tok))
        return 0;
    memcpy(tok, p, n);
    tok[n] = '\0';
    return parse_u64(tok, UINT64_MAX, &v) == 0 ? (double)v : 0;
}

static void collect_process(struct metrics_registry *r, void *data)
{
    struct agent *a = data;
    char stat[1024];
    uint64_t ut, st, vsize, rss;
    long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    struct rlimit rl;
    DIR *d;
    int nfd = 0;

    (void)r;
    if (read_proc("/proc/self/stat", stat, sizeof(stat)) > 0) {
        if (stat_field(stat, 14, &ut) == 0 && stat_field(stat, 15, &st) == 0 && tck > 0)
            metrics_set(a->m_cpu, NULL, (double)(ut + st) / (double)tck);
        if (stat_field(stat, 23, &vsize) == 0)
            metrics_set(a->m_vsize, NULL, (double)vsize);
        if (stat_field(stat, 24, &rss) == 0 && page > 0)
            metrics_set(a->m_rss, NULL, (double)rss * (double)page);
    }
    d = opendir("/proc/self/fd");
    if (d) {
        while (readdir(d))
            nfd++;
        closedir(d);
        metrics_set(a->m_fds, NULL, nfd - 3); /* ".", ".." and the directory's own descriptor */
    }
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        metrics_set(a->m_max_fds, NULL, (double)rl.rlim_cur);
    metrics_set(a->m_start, NULL, a->start_time);
}

/* The memory of every informer's cache in the process (the agent's shared ones, the peer units'
 * and the virtual kubelets'), summed by resource and by part (struct kstore_stats). */
#define STORE_RESOURCES 32
struct store_sums {
    const char *resource[STORE_RESOURCES];
    struct kstore_stats st[STORE_RESOURCES];
    size_t n;
};

static void add_store(const struct inf_informer *inf, void *data)
{
    struct store_sums *s = data;
    const char *res = inf_resource(inf);
    struct kstore_stats st;
    size_t i;

    for (i = 0; i < s->n && strcmp(s->resource[i], res) != 0; i++)
        ;
    if (i == s->n) {
        if (s->n == STORE_RESOURCES)
            return; /* more kinds than the families' bound: the rest unreported */
        s->resource[s->n++] = res;
    }
    inf_store_stats(inf, &st);
    s->st[i].count += st.count;
    s->st[i].entries += st.entries;
    s->st[i].values += st.values;
    s->st[i].slack += st.slack;
    s->st[i].table += st.table;
    s->st[i].indexes += st.indexes;
    s->st[i].records += st.records;
    s->st[i].fixed += st.fixed;
}

static void collect_stores(struct agent *a)
{
    struct store_sums s = {.n = 0};

    metrics_family_reset(a->m_store_bytes);
    inf_foreach_informer(add_store, &s);
    for (size_t i = 0; i < s.n; i++) {
        const struct kstore_stats *st = &s.st[i];
        const struct {
            const char *part;
            size_t bytes;
        } parts[] = {{"entries", st->entries}, {"values", st->values},   {"slack", st->slack},
                     {"table", st->table},     {"indexes", st->indexes}, {"records", st->records},
                     {"fixed", st->fixed}};

        for (size_t j = 0; j < sizeof(parts) / sizeof(parts[0]); j++) {
            const char *l[] = {s.resource[i], parts[j].part, NULL};
            metrics_set(a->m_store_bytes, l, (double)parts[j].bytes);
        }
    }
}

static void collect_agent(struct metrics_registry *r, void *data)
{
    struct agent *a = data;
    const char *l[3];

    (void)r;
    metrics_set(a->m_leader, NULL, agent_is_leader(a) ? 1 : 0);
    metrics_set(a->m_kube_pending, NULL, a->kube ? (double)kapi_client_pending(a->kube) : 0);
    metrics_set(a->m_kube_up, NULL, kube_reachable(a) ? 1 : 0);
    metrics_set(a->m_loop_max, NULL, llag_max_seconds(&a->lag));
    metrics_set(a->m_loop_max_faults, NULL, (double)llag_max_faults(&a->lag));
    metrics_set(a->m_loop_max_io, NULL, llag_max_io_seconds(&a->lag));
    for (int i = 0; i < a->ninited; i++) {
        const struct agent_module *m = &a->modules[i];
        l[0] = m->name;
        l[1] = NULL;
        metrics_set(a->m_module_ready, l, !m->ready || m->ready(a) ? 1 : 0);
    }
    for (struct shared_inf *si = a->infs; si; si = si->next) {
        l[0] = si->res->resource;
        l[1] = si->ns ? si->ns : "";
        l[2] = NULL;
        metrics_set(a->m_inf_synced, l, inf_listed(si->inf) ? 1 : 0);
        metrics_set(a->m_inf_objects, l, (double)inf_count(si->inf));
    }
    for (struct queue_ent *q = a->queues; q; q = q->next) {
        l[0] = q->name;
        l[1] = NULL;
        metrics_set(a->m_queue_depth, l, (double)wq_len(q->q));
    }
    collect_stores(a);
}

/* Iterations: 1 ms is a busy one, 10 ms the responsiveness the informers' slices aim for, a second
 * a stall that probes notice. */
static const double loop_buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                      0.05,   0.1,   0.25,   0.5,   1,    2.5};
#define LOOP_WARN_NS       (500 * 1000 * 1000ull) /* an iteration this long is logged */
#define LOOP_WARN_EVERY_MS 60000                  /* at most one such warning a minute */

static void on_loop_iteration(struct llag *l, uint64_t busy_ns, void *data)
{
    struct agent *a = data;
    uint64_t now;

    (void)l;
    metrics_observe(a->m_loop_iter, NULL, (double)busy_ns / 1e9);
    if (busy_ns < LOOP_WARN_NS)
        return;
    now = uv_now(a->loop);
    if (a->lag_warn_at && now - a->lag_warn_at < LOOP_WARN_EVERY_MS)
        return;
    a->lag_warn_at = now;
    log_warn("agent",
             "the event loop was busy for %llu ms of CPU in one iteration: probes, leases and "
             "peers' requests waited at least that long (cliqo_event_loop_iteration_seconds)",
             (unsigned long long)(busy_ns / 1000000));
}

static int setup_metrics(struct agent *a)
{
    static const char *const http_labels[] = {"path", "code", NULL};
    static const char *const module_labels[] = {"module", NULL};
    static const char *const inf_labels[] = {"resource", "namespace", NULL};
    static const char *const queue_labels[] = {"queue", NULL};
    static const char *const store_labels[] = {"resource", "part", NULL};
    static const char *const verb_code_labels[] = {"verb", "code", NULL};
    static const char *const build_labels[] = {"version", NULL};
    struct metrics_registry *m = a->metrics;
    const char *build[] = {CLIQO_VERSION, NULL};
    int r = 0;

#define FAM(type, var, name, help, labels)                                                         \
    if (r == 0)                                                                                    \
    r = metrics_family_new(m, type, name, help, labels, NULL, 0, &a->var)
    FAM(METRICS_GAUGE, m_leader, "cliqo_leader", "1 when this replica leads and runs the modules.",
        NULL);
    FAM(METRICS_COUNTER, m_generations, "cliqo_module_restarts_total",
        "Times the modules were made again in this process after a lost leadership.", NULL);
    FAM(METRICS_COUNTER, m_http, "cliqo_http_requests_total",
        "HTTP requests answered by the agent's servers, by route and status code.", http_labels);
    FAM(METRICS_GAUGE, m_module_ready, "cliqo_module_ready", "1 when the module reports ready.",
        module_labels);
    FAM(METRICS_GAUGE, m_inf_synced, "cliqo_informer_synced",
        "1 when the shared informer has completed its first list.", inf_labels);
    FAM(METRICS_GAUGE, m_inf_objects, "cliqo_informer_objects",
        "Objects in the shared informer's store.", inf_labels);
    FAM(METRICS_GAUGE, m_queue_depth, "cliqo_workqueue_depth", "Keys waiting in the work queue.",
        queue_labels);
    FAM(METRICS_GAUGE, m_store_bytes, "cliqo_informer_store_bytes",
        "Memory of every informer's cache in the process, by resource and part: entries (keys), "
        "values (the compressed objects), slack (free room in the cache's slabs), table, "
        "indexes, records, fixed (dictionaries, scratch buffers).",
        store_labels);
    FAM(METRICS_GAUGE, m_kube_pending, "cliqo_kube_client_pending_requests",
        "Kubernetes API requests queued or in flight.", NULL);
    FAM(METRICS_COUNTER, m_kube_req, "cliqo_kube_requests_total",
        "Requests the modules sent to this cluster's API server, by verb and HTTP code "
        "(\"error\" when no answer arrived).",
        verb_code_labels);
    FAM(METRICS_GAUGE, m_kube_up, "cliqo_kube_apiserver_reachable",
        "1 when the last probe of the Kubernetes API server succeeded recently.", NULL);
    FAM(METRICS_GAUGE, m_build, "cliqo_build_info", "Build information; always 1.", build_labels);
    FAM(METRICS_GAUGE, m_rss, "process_resident_memory_bytes", "Resident memory size in bytes.",
        NULL);
    FAM(METRICS_GAUGE, m_vsize, "process_virtual_memory_bytes", "Virtual memory size in bytes.",
        NULL);
    FAM(METRICS_GAUGE, m_fds, "process_open_fds", "Number of open file descriptors.", NULL);
    FAM(METRICS_GAUGE, m_max_fds, "process_max_fds", "Maximum number of open file descriptors.",
        NULL);
    FAM(METRICS_COUNTER, m_cpu, "process_cpu_seconds_total",
        "Total user and system CPU time spent in seconds.", NULL);
    FAM(METRICS_GAUGE, m_start, "process_start_time_seconds",
        "Start time of the process since unix epoch in seconds.", NULL);
    if (r == 0)
        r = metrics_family_new(
            m, METRICS_HISTOGRAM, "cliqo_event_loop_iteration_seconds",
            "CPU time the event loop's callbacks took in one iteration: how long "
            "an event arriving meanwhile waited, on a free CPU.",
            NULL, loop_buckets, sizeof(loop_buckets) / sizeof(loop_buckets[0]), &a->m_loop_iter);
    FAM(METRICS_GAUGE, m_loop_max, "cliqo_event_loop_busiest_iteration_seconds",
        "The longest iteration of the event loop since the process started.", NULL);
    FAM(METRICS_GAUGE, m_loop_max_faults, "cliqo_event_loop_busiest_iteration_page_faults",
        "Page faults the event loop's thread took during its longest iteration.", NULL);
    FAM(METRICS_GAUGE, m_loop_max_io, "cliqo_event_loop_busiest_iteration_io_seconds",
        "Of the longest iteration, the CPU time of its I/O callbacks (from the poll on); the rest "
        "went to timers and idle callbacks, where long work runs in slices.",
        NULL);
#undef FAM
    if (r == 0)
        r = metrics_add_collector(m, collect_process, a);
    if (r == 0)
        r = metrics_add_collector(m, collect_agent, a);
    if (r == 0) {
        metrics_set(a->m_build, build, 1);
        metrics_set(a->m_generations, NULL, 0);
    }
    return r;
}

/* ---- informers and queues ------------------------------------------------------------------- */

static bool entry_active(const struct shared_inf *si, const struct inf_entry *e)
{
    return (e->flags & AGENT_INF_ALWAYS) || agent_is_leader(si->a);
}

static void sh_add(struct inf_informer *inf, json_t *obj, void *data)
{
    struct shared_inf *si = data;

    for (struct inf_entry *e = si->entries; e; e = e->next)
        if (entry_active(si, e) && e->h.on_add)
            e->h.on_add(inf, obj, e->data);
}

static void sh_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    struct shared_inf *si = data;

    for (struct inf_entry *e = si->entries; e; e = e->next)
        if (entry_active(si, e) && e->h.on_update)
            e->h.on_update(inf, old_obj, new_obj, e->data);
}

static void sh_delete(struct inf_informer *inf, json_t *obj, void *data)
{
    struct shared_inf *si = data;

    for (struct inf_entry *e = si->entries; e; e = e->next)
        if (entry_active(si, e) && e->h.on_delete)
            e->h.on_delete(inf, obj, e->data);
}

static void sh_synced(struct inf_informer *inf, void *data)
{
    struct shared_inf *si = data;

    log_info("agent", "informer of %s%s%s synced with %zu objects", si->res->resource,
             si->ns ? " in namespace " : "", si->ns ? si->ns : "", inf_count(inf));
    for (struct inf_entry *e = si->entries; e; e = e->next)
        if (entry_active(si, e) && e->h.on_synced)
            e->h.on_synced(inf, e->data);
}

static void sh_error(struct inf_informer *inf, int err, const char *message, void *data)
{
    struct shared_inf *si = data;

    log_warn("agent", "informer of %s%s%s: %s (%s), retrying", si->res->resource,
             si->ns ? " in namespace " : "", si->ns ? si->ns : "", message, strerror(-err));
    for (struct inf_entry *e = si->entries; e; e = e->next)
        if (entry_active(si, e) && e->h.on_error)
            e->h.on_error(inf, err, message, e->data);
}

/* The transform of a shared informer runs with the first registrant's function (registrations with
 * another transform get an informer of their own) and no module data. */
static void sh_transform(json_t *obj, void *data)
{
    struct shared_inf *si = data;

    si->transform(obj, NULL);
}

static bool same_str(const char *x, const char *y)
{
    return (!x && !y) || (x && y && strcmp(x, y) == 0);
}

static bool same_resource(const struct kapi_resource *x, const struct kapi_resource *y)
{
    return x == y || (strcmp(x->group, y->group) == 0 && strcmp(x->version, y->version) == 0 &&
                      strcmp(x->resource, y->resource) == 0);
}

static void shared_free(struct shared_inf *si)
{
    if (!si)
        return;
    inf_free(si->inf);
    while (si->entries) {
        struct inf_entry *e = si->entries;
        si->entries = e->next;
        x_free(e);
    }
    x_free(si->ns);
    x_free(si->selector);
    x_free(si->field_selector);
    x_free(si);
}

int agent_informer(struct agent *a, const struct kapi_resource *resource, const char *ns,
                   const char *label_selector, unsigned flags, const struct inf_handlers *h,
                   void *data, struct inf_informer **ret)
{
    struct inf_options o = {
        .resource = resource, .namespace_ = ns, .label_selector = label_selector};

    return agent_informer_ex(a, &o, flags, h, data, ret);
}

int agent_informer_ex(struct agent *a, const struct inf_options *opts, unsigned flags,
                      const struct inf_handlers *h, void *data, struct inf_informer **ret)
{
    static const struct inf_handlers sh = {sh_add, sh_update, sh_delete, sh_synced, sh_error};
    struct shared_inf *si, *fresh = NULL;
    struct inf_entry *e = NULL;
    const struct kapi_resource *resource = opts ? opts->resource : NULL;
    const char *ns = opts ? opts->namespace_ : NULL;
    const char *label_selector = opts ? opts->label_selector : NULL;
    const char *field_selector = opts ? opts->field_selector : NULL;
    int r = -ENOMEM;

    if (!a || !resource || (flags & ~AGENT_INF_ALWAYS) || a->shutting_down)
        return -EINVAL;
    for (si = a->infs; si; si = si->next)
        if (same_resource(si->res, resource) && same_str(si->ns, ns) &&
            same_str(si->selector, label_selector) &&
            same_str(si->field_selector, field_selector) && si->transform == opts->transform)
            break;
    if (!si) {
        struct inf_options o = *opts;

        o.transform = NULL; /* set below with the shared informer's data */
        if (a->ninfs >= MAX_INFORMERS)
            return -ENOSPC;
        fresh = si = x_calloc(1, sizeof(*si));
        if (!si)
            goto out;
        si->a = a;
        si->res = resource;
        si->entries_tail = &si->entries;
        si->ns = ns ? x_strdup(ns) : NULL;
        si->selector = label_selector ? x_strdup(label_selector) : NULL;
        si->field_selector = field_selector ? x_strdup(field_selector) : NULL;
        si->transform = opts->transform;
        if ((ns && !si->ns) || (label_selector && !si->selector) ||
            (field_selector && !si->field_selector))
            goto out;
        o.namespace_ = si->ns;
        o.label_selector = si->selector;
        o.field_selector = si->field_selector;
        if (si->transform)
            o.transform = sh_transform;
        r = inf_new(a->kube, &o, &sh, si, &si->inf);
        if (r < 0)
            goto out;
        r = -ENOMEM;
    }
    if (h) {
        e = x_calloc(1, sizeof(*e));
        if (!e)
            goto out;
        e->h = *h;
        e->data = data;
        e->flags = flags;
        *si->entries_tail = e;
        si->entries_tail = &e->next;
    }
    if (fresh) {
        if (a->infs_started) {
            r = inf_start(si->inf);
            if (r < 0)
                goto out;
        }
        si->next = a->infs;
        a->infs = si;
        a->ninfs++;
        fresh = NULL;
    }
    if (ret)
        *ret = si->inf;
    r = 0;
out:
    shared_free(fresh);
    return r;
}

struct replay {
    struct inf_informer *inf;
    struct inf_entry *e;
};

static void replay_one(json_t *obj, void *data)
{
    struct replay *rp = data;

    rp->e->h.on_add(rp->inf, obj, rp->e->data);
}

/* After the modules started, leader-only handlers see what was cached while standing by (on_add for
 * each object, then on_synced). A large informer is replayed in slices, one per loop iteration (a
 * uv_idle, in the iteration's budget shared with the other sliced jobs: common/slice.h), so that
 * probes, leases and peers' requests are served meanwhile (150,000 pods took 0.7 s in one
 * iteration): the informer is held (inf_hold) so that its store does not change between slices,
 * which also pauses its events for every handler, those of AGENT_INF_ALWAYS too, until the replay
 * ends and the watch resumes where it was. While held, inf_synced is false: a module does not take
 * its partly replayed state for a complete one. */

static bool replay_wanted(const struct inf_entry *e)
{
    return !(e->flags & AGENT_INF_ALWAYS) && (e->h.on_add || e->h.on_synced);
}

static void replay_visit(json_t *obj, void *data)
{
    struct shared_inf *si = data;

    si->replayed++;
    for (struct inf_entry *e = si->entries; e; e = e->next)
        if (e->replaying && e->h.on_add && agent_is_leader(si->a))
            e->h.on_add(si->inf, obj, e->data);
}

/* The replay of si is over (done: every object handed over; else cancelled). */
static void replay_end(struct shared_inf *si, bool done)
{
    si->replaying = false;
    inf_release(si->inf);
    if (done)
        log_info(
            "agent", "replayed %zu cached %s to the modules in %llu ms over %u loop iterations",
            si->replayed, si->res->resource,
            (unsigned long long)((uv_hrtime() - si->replay_start) / 1000000), si->replay_slices);
    for (struct inf_entry *e = si->entries; e; e = e->next) {
        if (!e->replaying)
            continue;
        e->replaying = false;
        if (done && e->h.on_synced && inf_synced(si->inf) && agent_is_leader(si->a))
            e->h.on_synced(si->inf, e->data);
    }
}

static void replay_cancel(struct agent *a)
{
    for (struct shared_inf *si = a->infs; si; si = si->next)
        if (si->replaying)
            replay_end(si, false);
    if (a->handles_open)
        uv_idle_stop(&a->replay_idle);
}

static void on_replay(uv_idle_t *h)
{
    struct agent *a = h->data;

    for (struct shared_inf *si = a->infs; si; si = si->next) {
        int r;

        if (!si->replaying)
            continue;
        if (!agent_is_leader(a) || a->modules_stopped) {
            replay_cancel(a);
            return;
        }
        si->replay_slices++;
        /* The iteration's shared budget (common/slice.h): one object at least. */
        r = inf_foreach_slice(si->inf, &si->replay_cursor, slice_remaining(a->loop), replay_visit,
                              si);
        if (r == 0)
            return;
        replay_end(si, true);
    }
    uv_idle_stop(&a->replay_idle);
}

static void replay_informers(struct agent *a)
{
    bool sliced = false;

    for (struct shared_inf *si = a->infs; si; si = si->next) {
        bool want = false;

        for (struct inf_entry *e = si->entries; e; e = e->next)
            want = want || replay_wanted(e);
        if (!want)
            continue;
        if (a->handles_open && inf_count(si->inf) > a->cfg->replay_at_once &&
            inf_hold(si->inf) == 0) {
            for (struct inf_entry *e = si->entries; e; e = e->next)
                e->replaying = replay_wanted(e);
            si->replaying = true;
            si->replay_cursor = si->replayed = 0;
            si->replay_slices = 0;
            si->replay_start = uv_hrtime();
            sliced = true;
            continue;
        }
        for (struct inf_entry *e = si->entries; e; e = e->next) {
            struct replay rp = {si->inf, e};

            if (!replay_wanted(e))
                continue;
            if (e->h.on_add)
                inf_foreach(si->inf, replay_one, &rp);
            if (e->h.on_synced && inf_synced(si->inf))
                e->h.on_synced(si->inf, e->data);
            if (!agent_is_leader(a))
                return; /* a handler asked to shut down */
        }
    }
    if (sliced)
        uv_idle_start(&a->replay_idle, on_replay);
}

int agent_queue(struct agent *a, const char *name, const struct wq_options *o, wq_process_fn fn,
                void *data, struct wq_queue **ret)
{
    struct queue_ent *q;

    if (!a || !name || !*name || !fn || !ret || a->shutting_down)
        return -EINVAL;
    if (a->nqueues >= MAX_QUEUES)
        return -ENOSPC;
    q = x_calloc(1, sizeof(*q));
    if (!q)
        return -ENOMEM;
    q->name = x_strdup(name);
    q->q = q->name ? wq_new(a->loop, o, fn, data) : NULL;
    if (!q->q) {
        x_free(q->name);
        x_free(q);
        return -ENOMEM;
    }
    q->next = a->queues;
    a->queues = q;
    a->nqueues++;
    *ret = q->q;
    return 0;
}

/* ---- modules and leadership ----------------------------------------------------------------- */

static void stop_modules(struct agent *a)
{
    if (a->modules_stopped)
        return;
    a->modules_stopped = true;
    replay_cancel(a); /* a module stops: no more of the cache for it */
    if (a->handles_open)
        uv_timer_stop(&a->sync_timer);
    a->sync_wait_since = 0;
    for (int i = a->ninited - 1; i >= 0; i--) {
        const struct agent_module *m = &a->modules[i];

        if (m->stop || m->ctl)
            log_debug("agent", "stopping module %s", m->name);
        if (m->stop)
            m->stop(a);
        else if (m->ctl)
            ctl_module_stop(a, m->name);
    }
    for (struct queue_ent *q = a->queues; q; q = q->next)
        wq_shutdown(q->q);
}

static void start_modules(struct agent *a);

static void on_sync_check(uv_timer_t *t)
{
    start_modules(t->data);
}

/* Modules start only once every shared informer has listed (as client-go controllers wait for
 * their caches): acting on a cache still empty after an outage would take every object for
 * deleted (a peer's PeeringRequest, a NamespaceMap's namespaces) and undo it. */
static bool caches_ready(struct agent *a)
{
    const char *which = "";
    uint64_t now = uv_now(a->loop);

    if (informers_synced(a, &which)) {
        if (a->sync_wait_since)
            log_info("agent", "every informer has synced after %llu ms: starting modules",
                     (unsigned long long)(now - a->sync_wait_since));
        a->sync_wait_since = 0;
        return true;
    }
    if (!a->sync_wait_since) {
        a->sync_wait_since = now;
        log_info("agent", "waiting for the informers to sync before starting modules (%s)", which);
    } else if ((now - a->sync_wait_since) % 10000 < SYNC_CHECK_MS) {
        log_warn("agent", "still waiting for the informer of %s to sync before starting modules",
                 which);
    }
    if (!a->handles_open)
        return true; /* not running a loop yet (never here: agent_start opens the handles) */
    uv_timer_start(&a->sync_timer, on_sync_check, SYNC_CHECK_MS, 0);
    return false;
}

static void start_modules(struct agent *a)
{
    if (a->modules_started || a->modules_stopped || a->shutting_down || !a->leading)
        return;
    if (!caches_ready(a))
        return;
    a->modules_started = true;
    for (int i = 0; i < a->ninited; i++) {
        const struct agent_module *m = &a->modules[i];
        int r;

        if (!m->start && !m->ctl)
            continue;
        r = m->start ? m->start(a) : ctl_module_start(a, m->name);
        if (r < 0) {
            log_errno(r, "agent", "module %s failed to start; giving up leadership", m->name);
            stop_modules(a);
            agent_shutdown(a, 1);
            return;
        }
        log_info("agent", "module %s started", m->name);
    }
    replay_informers(a);
}

static void on_started_leading(struct le_elector *le, void *data)
{
    struct agent *a = data;

    (void)le;
    if (a->shutting_down)
        return;
    a->leading = true;
    if (a->recycling) {
        log_info("agent",
                 "became the leader (lease %s/%s): the modules start once they are made again",
                 a->cfg->namespace_, a->cfg->lease_name);
        return;
    }
    log_info("agent", "became the leader (lease %s/%s): starting modules", a->cfg->namespace_,
             a->cfg->lease_name);
    start_modules(a);
}

static void on_recycle(uv_timer_t *t);

static void on_stopped_leading(struct le_elector *le, void *data)
{
    struct agent *a = data;

    (void)le;
    a->leading = false;
    if (a->shutting_down) {
        log_info("agent", "released leadership of lease %s/%s", a->cfg->namespace_,
                 a->cfg->lease_name);
        return;
    }
    log_warn("agent",
             "lost leadership of lease %s/%s (could not renew it in time): stopping modules; they "
             "are made again and this replica campaigns on",
             a->cfg->namespace_, a->cfg->lease_name);
    stop_modules(a);
    /* Not from inside the elector's callback: the modules' requests are cancelled there. */
    if (!a->recycling) {
        a->recycling = true;
        uv_timer_start(&a->recycle_timer, on_recycle, 0, 0);
    }
}

static void on_new_leader(struct le_elector *le, const char *identity, void *data)
{
    struct agent *a = data;

    (void)le;
    if (identity && *identity)
        log_info("agent", "lease %s/%s is held by %s%s", a->cfg->namespace_, a->cfg->lease_name,
                 identity, strcmp(identity, a->cfg->identity) == 0 ? " (this replica)" : "");
    else
        log_info("agent", "lease %s/%s is free", a->cfg->namespace_, a->cfg->lease_name);
}

/* ---- module generations -------------------------------------------------------------------- */

/* Counts every request of the modules' client (cliqo_kube_requests_total). */
static void observe_kube(struct kapi_client *c, const struct kapi_observation *o, void *data)
{
    struct agent *a = data;
    char code[24];
    const char *l[3];

    (void)c;
    if (!a->m_kube_req || !kapi_observation_labels(o, &l[0], code, sizeof(code)))
        return;
    l[1] = code;
    l[2] = NULL;
    metrics_inc(a->m_kube_req, l);
}

/* Makes the modules' world: their Kubernetes client, their metrics registry, the peer units'
 * registry, then init in table order. The informers they register start with start_informers,
 * once every module has added its indexes. Logs what failed. */
static int setup_modules(struct agent *a)
{
    struct kapi_client_options ko = {.qps = a->cfg->kube_api_qps,
                                     .burst = (int)a->cfg->kube_api_burst,
                                     .observe = observe_kube,
                                     .observe_data = a};
    int r;

    a->infs_started = false;
    r = kapi_client_new(a->loop, a->kc, &ko, &a->kube);
    if (r < 0)
        return log_errno(r, "agent", "cannot create the Kubernetes client for %s", a->kc->server);
    a->mmetrics = metrics_registry_new();
    if (!a->mmetrics)
        return log_errno(-ENOMEM, "agent", "cannot create the modules' metrics registry");
    r = pu_registry_new(a->loop, a->mmetrics, NULL, &a->peers);
    if (r < 0)
        return log_errno(r, "agent", "cannot create the registry of peer units");
    for (int i = 0; i < a->nmodules; i++) {
        const struct agent_module *m = &a->modules[i];

        r = m->init ? m->init(a) : 0;
        if (r < 0)
            return log_errno(r, "agent", "module %s failed to initialise", m->name);
        a->ninited = i + 1;
        log_info("agent", "module %s initialised", m->name);
    }
    return 0;
}

static int start_informers(struct agent *a)
{
    int r;

    a->infs_started = true;
    for (struct shared_inf *si = a->infs; si; si = si->next) {
        r = inf_start(si->inf);
        if (r < 0)
            return log_errno(r, "agent", "cannot start the informer of %s", si->res->resource);
    }
    return 0;
}

/* Undoes setup_modules (also after a partial one), in the order that keeps every callback's
 * owner alive: the auth server (its pending requests are aborted while the modules exist), the
 * requests in flight (they complete as cancelled), the modules (fini, in reverse), then what they
 * did not release. The agent's own client, servers and handles stay. */
static void teardown_modules(struct agent *a)
{
    httpd_close(a->auth, NULL, NULL);
    a->auth = NULL;
    pu_registry_abort(a->peers);
    kapi_client_abort(a->kube); /* it closes itself once its handles are closed */
    for (int i = a->ninited - 1; i >= 0; i--) {
        if (a->modules[i].fini)
            a->modules[i].fini(a);
        else if (a->modules[i].ctl)
            ctl_module_fini(a, a->modules[i].name);
    }
    a->ninited = 0;
    a->last_offer = NULL;
    a->peer_network = NULL;
    memset(a->net_subs, 0, sizeof(a->net_subs));
    memset(a->mdata, 0, sizeof(a->mdata));
    pu_registry_free(a->peers);
    a->peers = NULL;
    while (a->infs) {
        struct shared_inf *si = a->infs;
        a->infs = si->next;
        shared_free(si);
    }
    a->ninfs = 0;
    while (a->queues) {
        struct queue_ent *q = a->queues;
        a->queues = q->next;
        wq_close(q->q, NULL, NULL);
        x_free(q->name);
        x_free(q);
    }
    a->nqueues = 0;
    a->kube = NULL;
    a->mmetrics = metrics_registry_free(a->mmetrics);
    /* Series of the modules, informers and queues that are gone. */
    metrics_family_reset(a->m_module_ready);
    metrics_family_reset(a->m_inf_synced);
    metrics_family_reset(a->m_inf_objects);
    metrics_family_reset(a->m_queue_depth);
}

/* Leadership was lost and the modules stopped (on_stopped_leading): everything they hold goes and
 * they are made again, as a fresh process would make them, while the elector campaigns on. A
 * replica that leads again starts them as soon as they are ready. */
static void on_recycle(uv_timer_t *t)
{
    struct agent *a = t->data;
    int r;

    if (a->shutting_down) {
        a->recycling = false;
        return; /* the shutdown tears everything down */
    }
    teardown_modules(a);
    a->modules_started = a->modules_stopped = false;
    a->generation++;
    metrics_inc(a->m_generations, NULL);
    r = setup_modules(a);
    if (r == 0)
        r = start_informers(a);
    a->recycling = false;
    if (r < 0) {
        log_error("agent", "cannot make the modules again: exiting");
        a->modules_stopped = true;
        agent_shutdown(a, 1);
        return;
    }
    log_info("agent", "modules made again (generation %u); campaigning on for lease %s/%s",
             a->generation, a->cfg->namespace_, a->cfg->lease_name);
    if (a->leading) {
        log_info("agent", "this replica leads: starting modules");
        start_modules(a);
    }
}

/* ---- API server probe ----------------------------------------------------------------------- */

static void probe(uv_timer_t *t);

static void on_probe(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct agent *a = data;
    bool ok = res->err == 0;

    (void)c;
    a->probe_call = NULL;
    if (ok != a->probe_ok || (!ok && !a->probe_err[0])) {
        if (ok)
            log_info("agent", "the Kubernetes API server is reachable");
        else
            log_warn("agent", "the Kubernetes API server is not reachable: %s",
                     res->status.message);
    }
    a->probe_ok = ok;
    if (ok) {
        a->probe_ok_at = uv_now(a->loop);
        a->probe_err[0] = '\0';
    } else {
        snprintf(a->probe_err, sizeof(a->probe_err), "%s", res->status.message);
    }
    if (!a->shutting_down)
        uv_timer_start(&a->probe_timer, probe, PROBE_PERIOD_MS, 0);
}

static void probe(uv_timer_t *t)
{
    struct agent *a = t->data;
    struct kapi_request req = {.method = "GET", .path = "/version", .timeout_ms = PROBE_TIMEOUT_MS};
    int r;

    if (a->shutting_down || a->probe_call)
        return;
    r = kapi_send(a->own, &req, on_probe, a, &a->probe_call);
    if (r < 0) {
        a->probe_ok = false;
        snprintf(a->probe_err, sizeof(a->probe_err), "cannot send a request: %s", strerror(-r));
        uv_timer_start(&a->probe_timer, probe, PROBE_PERIOD_MS, 0);
    }
}

/* ---- shutdown ------------------------------------------------------------------------------- */

static void on_force(uv_timer_t *t)
{
    struct agent *a = t->data;

    log_error("agent", "graceful shutdown did not finish within %llu ms: exiting now",
              (unsigned long long)a->cfg->shutdown_timeout_ms);
    _exit(1);
}

static void on_closed(uv_handle_t *h)
{
    (void)h;
}

static void finish_shutdown(struct agent *a)
{
    if (a->finishing)
        return;
    a->finishing = true;
    uv_timer_stop(&a->release_timer);
    /* Servers first: aborting their pending requests calls into modules that still exist. */
    httpd_close(a->http, NULL, NULL);
    a->http = NULL;
    httpd_close(a->metrics_http, NULL, NULL);
    a->metrics_http = NULL;
    httpd_close(a->auth, NULL, NULL);
    a->auth = NULL;
    /* Requests still in flight complete now, as cancelled, while the modules that issued them
     * still exist: their callbacks free what each request kept (nothing leaks, nothing dangles).
     * Peers' clients first (the units the modules did not release), then the local client. */
    kapi_call_cancel(a->probe_call);
    a->probe_call = NULL;
    teardown_modules(a);
    /* An abandoned elector's request completes now, as cancelled. */
    kapi_client_abort(a->own);
    a->own = NULL;
    if (a->handles_open) {
        uv_close((uv_handle_t *)&a->sigterm, on_closed);
        uv_close((uv_handle_t *)&a->sigint, on_closed);
        uv_close((uv_handle_t *)&a->probe_timer, on_closed);
        uv_close((uv_handle_t *)&a->shutdown_timer, on_closed);
        uv_close((uv_handle_t *)&a->release_timer, on_closed);
        uv_close((uv_handle_t *)&a->recycle_timer, on_closed);
        uv_close((uv_handle_t *)&a->sync_timer, on_closed);
        uv_close((uv_handle_t *)&a->replay_idle, on_closed);
        llag_stop(&a->lag);
        /* The force timer stays, unreferenced: it fires only if closing hangs. agent_free
         * closes it. */
        uv_unref((uv_handle_t *)&a->force_timer);
    }
    log_info("agent", "stopped (exit status %d)", a->exit_code);
}

static void on_released(void *data)
{
    struct agent *a = data;

    a->le = NULL;
    if (a->shutting_down)
        finish_shutdown(a);
}

static void on_release_timeout(uv_timer_t *t)
{
    struct agent *a = t->data;

    log_warn("agent", "releasing the lease did not finish in time; it will expire instead");
    a->le = NULL; /* abandoned: closing the client cancels its request */
    finish_shutdown(a);
}

static void begin_shutdown(uv_timer_t *t)
{
    struct agent *a = t->data;
    struct le_elector *le = a->le;

    uv_timer_start(&a->force_timer, on_force, a->cfg->shutdown_timeout_ms, 0);
    uv_timer_stop(&a->probe_timer);
    uv_timer_stop(&a->recycle_timer);
    stop_modules(a);
    if (le) {
        if (le_is_leader(le))
            log_info("agent", "releasing lease %s/%s", a->cfg->namespace_, a->cfg->lease_name);
        uv_timer_start(&a->release_timer, on_release_timeout, a->cfg->shutdown_timeout_ms / 2, 0);
        le_release(le, on_released, a); /* may call on_released at once */
        return;
    }
    finish_shutdown(a);
}

void agent_shutdown(struct agent *a, int exit_code)
{
    if (!a || a->shutting_down)
        return;
    a->shutting_down = true;
    a->exit_code = exit_code;
    if (!a->handles_open) {
        finish_shutdown(a);
        return;
    }
    uv_timer_start(&a->shutdown_timer, begin_shutdown, 0, 0);
}

static void on_signal(uv_signal_t *s, int signum)
{
    struct agent *a = s->data;

    if (a->shutting_down) {
        log_warn("agent", "second signal %s during shutdown: exiting now", strsignal(signum));
        _exit(1);
    }
    log_info("agent", "received %s: shutting down gracefully", strsignal(signum));
    agent_shutdown(a, 0);
}

/* ---- creation, start, free ------------------------------------------------------------------ */

int agent_new(uv_loop_t *loop, const struct agent_config *cfg, const struct agent_module *modules,
              struct agent **ret)
{
    struct httpd_options ho = {.name = "http", .addr = cfg->http_addr};
    char err[KC_ERR_LEN];
    struct agent *a;
    int r, n = 0;

    while (modules && modules[n].name)
        n++;
    if (n > AGENT_MAX_MODULES)
        return log_errno(-E2BIG, "agent", "more than %d modules in the table", AGENT_MAX_MODULES);
    a = x_calloc(1, sizeof(*a));
    if (!a)
        return log_errno(-ENOMEM, "agent", "cannot allocate the agent");
    *ret = a;
    a->loop = loop;
    a->cfg = cfg;
    a->modules = modules;
    while (modules && modules[a->nmodules].name)
        a->nmodules++;
    {
        char stat[1024];
        uint64_t st;
        long tck = sysconf(_SC_CLK_TCK);

        if (read_proc("/proc/self/stat", stat, sizeof(stat)) > 0 &&
            stat_field(stat, 22, &st) == 0 && tck > 0)
            a->start_time = boot_time() + (double)st / (double)tck;
        else
            a->start_time = (double)time(NULL);
    }

    if (cfg->kubeconfig)
        r = kc_load_file(cfg->kubeconfig, NULL, &a->kc, err, sizeof(err));
    else
        r = kc_load_default(NULL, &a->kc, err, sizeof(err));
    if (r < 0) {
        log_error("agent", "cannot load the Kubernetes client configuration: %s", err);
        return r;
    }
    r = kapi_client_new(loop, a->kc, NULL, &a->own);
    if (r < 0)
        return log_errno(r, "agent", "cannot create the Kubernetes client for %s", a->kc->server);
    a->metrics = metrics_registry_new();
    if (!a->metrics)
        return log_errno(-ENOMEM, "agent", "cannot create the metrics registry");
    r = setup_metrics(a);
    if (r < 0)
        return log_errno(r, "agent", "cannot register metrics");
    ho.on_response = on_http_response;
    ho.data = a;
    r = httpd_new(loop, &ho, &a->http);
    if (r == 0)
        r = httpd_route(a->http, "GET", "/healthz", 0, handle_healthz, a);
    if (r == 0)
        r = httpd_route(a->http, "GET", "/livez", 0, handle_healthz, a);
    if (r == 0)
        r = httpd_route(a->http, "GET", "/readyz", 0, handle_readyz, a);
    if (r < 0)
        return log_errno(r, "agent", "cannot set up the HTTP server on %s", cfg->http_addr);
    /* /metrics tells a lot about the cluster and its peers: on loopback unless configured. */
    a->metrics_addr = cfg->metrics_addr                     ? cfg->metrics_addr
                      : netaddr_is_loopback(cfg->http_addr) ? cfg->http_addr
                                                            : AGENT_METRICS_ADDR;
    if (strcmp(a->metrics_addr, cfg->http_addr) == 0) {
        r = httpd_route(a->http, "GET", "/metrics", 0, handle_metrics, a);
    } else {
        struct httpd_options mo = {
            .name = "metrics", .addr = a->metrics_addr, .on_response = on_http_response, .data = a};

        r = httpd_new(loop, &mo, &a->metrics_http);
        if (r == 0)
            r = httpd_route(a->metrics_http, "GET", "/metrics", 0, handle_metrics, a);
    }
    if (r < 0)
        return log_errno(r, "agent", "cannot set up /metrics on %s", a->metrics_addr);

    log_info("agent",
             "starting cliqo-agent %s: identity=%s namespace=%s apiserver=%s context=%s "
             "http-addr=%s auth-addr=%s leader-elect=%s lease=%s lease-duration=%llums "
             "renew-deadline=%llums retry-period=%llums",
             CLIQO_VERSION, cfg->identity, cfg->namespace_, a->kc->server,
             a->kc->context_name ? a->kc->context_name : "", cfg->http_addr, cfg->auth_addr,
             cfg->leader_elect ? "true" : "false", cfg->lease_name,
             (unsigned long long)cfg->lease_duration_ms, (unsigned long long)cfg->renew_deadline_ms,
             (unsigned long long)cfg->retry_period_ms);

    return setup_modules(a);
}

int agent_start(struct agent *a)
{
    char err[256];
    int r;

    uv_signal_init(a->loop, &a->sigterm);
    uv_signal_init(a->loop, &a->sigint);
    uv_timer_init(a->loop, &a->probe_timer);
    uv_timer_init(a->loop, &a->shutdown_timer);
    uv_timer_init(a->loop, &a->force_timer);
    uv_timer_init(a->loop, &a->release_timer);
    uv_timer_init(a->loop, &a->recycle_timer);
    uv_timer_init(a->loop, &a->sync_timer);
    uv_idle_init(a->loop, &a->replay_idle);
    a->replay_idle.data = a;
    a->sigterm.data = a->sigint.data = a;
    a->probe_timer.data = a->shutdown_timer.data = a->force_timer.data = a->release_timer.data = a;
    a->recycle_timer.data = a->sync_timer.data = a;
    a->handles_open = true;
    inf_set_json_only(a->cfg->list_encoding && strcmp(a->cfg->list_encoding, "json") == 0);
    if (llag_start(&a->lag, a->loop, on_loop_iteration, a) < 0)
        log_warn("agent", "the event loop's iterations are not measured");
    else if (a->cfg->loop_trace_ms && llag_trace(&a->lag, a->cfg->loop_trace_ms) == 0)
        log_warn("agent",
                 "writing the stack of loop iterations over %u ms of CPU to standard error "
                 "(--loop-trace-ms)",
                 a->cfg->loop_trace_ms);
    uv_signal_start(&a->sigterm, on_signal, SIGTERM);
    uv_signal_start(&a->sigint, on_signal, SIGINT);

    r = httpd_start(a->http, err, sizeof(err));
    if (r < 0) {
        log_error("agent", "cannot serve health and metrics: %s", err);
        agent_shutdown(a, 1);
        return r;
    }
    if (a->metrics_http && (r = httpd_start(a->metrics_http, err, sizeof(err))) < 0) {
        log_error("agent", "cannot serve metrics: %s", err);
        agent_shutdown(a, 1);
        return r;
    }
    log_info("agent",
             "serving /healthz, /livez and /readyz on %s (port %u), /metrics on %s (port %u)",
             a->cfg->http_addr, (unsigned)httpd_port(a->http), a->metrics_addr,
             (unsigned)httpd_port(a->metrics_http ? a->metrics_http : a->http));
    uv_timer_start(&a->probe_timer, probe, 0, 0);

    r = start_informers(a);
    if (r < 0) {
        agent_shutdown(a, 1);
        return r;
    }

    if (!a->cfg->leader_elect) {
        log_info("agent", "leader election disabled: starting modules");
        a->leading = true;
        start_modules(a);
        return 0;
    }
    {
        struct le_options lo = {
            .namespace_ = a->cfg->namespace_,
            .name = a->cfg->lease_name,
            .identity = a->cfg->identity,
            .lease_duration_ms = a->cfg->lease_duration_ms,
            .renew_deadline_ms = a->cfg->renew_deadline_ms,
            .retry_period_ms = a->cfg->retry_period_ms,
        };
        struct le_callbacks cb = {on_started_leading, on_stopped_leading, on_new_leader};

        r = le_start(a->own, &lo, &cb, a, &a->le);
        if (r < 0) {
            log_errno(r, "agent", "cannot start leader election");
            agent_shutdown(a, 1);
            return r;
        }
    }
    log_info("agent", "campaigning for lease %s/%s as %s", a->cfg->namespace_, a->cfg->lease_name,
             a->cfg->identity);
    return 0;
}

int agent_free(struct agent *a)
{
    int code;

    if (!a)
        return 1;
    /* A failure before agent_start: nothing runs yet, finish by hand. */
    if (!a->finishing) {
        a->shutting_down = true;
        if (!a->exit_code)
            a->exit_code = 1;
        finish_shutdown(a);
    }
    if (a->handles_open) {
        uv_close((uv_handle_t *)&a->force_timer, on_closed);
        a->handles_open = false;
    }
    uv_run(a->loop, UV_RUN_DEFAULT);
    code = a->exit_code;
    a->mmetrics = metrics_registry_free(a->mmetrics);
    a->metrics = metrics_registry_free(a->metrics);
    a->kc = kc_config_free(a->kc);
    x_free(a);
    return code;
}

/* ---- the process ------------------------------------------------------------------------------
 */

/* Memory: the agent's caches live in compact stores, but every watch event and response is parsed
 * into short-lived trees; after a burst (a rollout of a thousand offloaded pods) glibc keeps the
 * freed pages resident unless they are at the top of the heap. Hand them back every few seconds
 * (malloc_trim releases free pages anywhere in the heap; a pass over a heap of tens of MiB takes
 * well under a millisecond when there is nothing to release). */
#define AGENT_TRIM_INTERVAL_MS 5000

static void on_trim(uv_timer_t *t)
{
    (void)t;
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

int agent_run_process(const char *name, const struct agent_config *cfg,
                      const struct agent_module *modules)
{
    struct agent *a = NULL;
    uv_loop_t loop;
    uv_timer_t trim;
    int code, r;

    signal(SIGPIPE, SIG_IGN);
    r = uv_loop_init(&loop);
    if (r < 0) {
        fprintf(stderr, "%s: cannot create the event loop: %s\n", name, uv_strerror(r));
        return 1;
    }
    /* The trim timer does not keep the loop alive (unreferenced); closed once the agent stopped. */
    uv_timer_init(&loop, &trim);
    uv_timer_start(&trim, on_trim, AGENT_TRIM_INTERVAL_MS, AGENT_TRIM_INTERVAL_MS);
    uv_unref((uv_handle_t *)&trim);
    r = agent_new(&loop, cfg, modules, &a);
    if (r == 0)
        r = agent_start(a);
    if (r == 0)
        uv_run(&loop, UV_RUN_DEFAULT);
    code = agent_free(a);
    uv_close((uv_handle_t *)&trim, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    r = uv_loop_close(&loop);
    if (r < 0) {
        log_error("agent", "event loop still has open handles at exit: %s", uv_strerror(r));
        if (code == 0)
            code = 1;
    }
    return code;
}
