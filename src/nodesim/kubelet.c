/* nodesim kubelet API: logs and exec of the simulated containers, and /healthz, on one HTTPS
 * listener for every node (--kubelet-addr), served by src/kubeletapi with this backend:
 *   - a pod is ours when the pod informer has it bound to one of our nodes;
 *   - logs: the deterministic lines of logs.c, streamed; `follow` sends each new line when its
 *     second comes and ends when the container stops or the pod goes;
 *   - exec: the built-in commands of shell.c, in a running container.
 * Callers are authorised with SubjectAccessReviews (nodes/proxy) through the simulator's client. */
#include "nodesim/shell.h"
#include "nodesim/sim.h"

#include "common/fileio.h"
#include "common/json.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "kube/backoff.h"
#include "kubeletapi/kubeletapi.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#define MOD          "nodesim"
#define MAX_PEM      (1u << 20)
#define LINE_MAX_LEN 1024

struct logstream;
struct execsess;

struct ns_kubelet {
    struct ns_sim *sim;
    struct kla_server *srv;
    struct kla_sar *sar;
    struct logstream *streams;
    struct execsess *execs;
};

/* ---- helpers ------------------------------------------------------------------------------- */

static int64_t wall_ms(void)
{
    struct timeval tv;

    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* The cached pod if it is bound to one of our nodes (a new reference), else NULL. */
static json_t *our_pod(struct ns_sim *sim, const char *ns, const char *name)
{
    json_t *pod;
    const char *node;

    if (!sim->pod_inf)
        return NULL;
    pod = inf_get(sim->pod_inf, ns, name);
    node = jsn_str_at(pod, "spec", "nodeName", NULL);
    if (!pod || !node || !ns_node_find(sim, node)) {
        json_decref(pod);
        return NULL;
    }
    return pod;
}

static int node_of(void *data, const char *ns, const char *pod, char *ret_node)
{
    struct ns_kubelet *k = data;
    json_t *p = our_pod(k->sim, ns, pod);

    if (!p)
        return -ENOENT;
    snprintf(ret_node, KLA_MAX_NODE + 1, "%s", jsn_str_at(p, "spec", "nodeName", NULL));
    json_decref(p);
    return 0;
}

/* ---- logs ---------------------------------------------------------------------------------- */

struct logstream {
    struct ns_kubelet *k;
    struct logstream *prev, *next;
    struct kla_request *r;
    char ns[KLA_MAX_NS + 1], pod[KLA_MAX_POD + 1], container[KLA_MAX_CONTAINER + 1];
    char image[512], uid[KLA_MAX_UID + 1];
    struct ns_log_src src;
    bool follow, timestamps, previous;
    int64_t next_line, end_line; /* end_line -1: unbounded (follow) */
    int64_t limit_left;          /* -1: none */
    uv_timer_t *timer;
};

static void stream_free(struct logstream *s)
{
    struct ns_kubelet *k = s->k;

    ktimer_free(s->timer);
    if (s->prev)
        s->prev->next = s->next;
    else
        k->streams = s->next;
    if (s->next)
        s->next->prev = s->prev;
    x_free(s);
}

static void stream_end(struct logstream *s)
{
    if (s->r)
        kla_resp_end(s->r);
    s->r = NULL;
    stream_free(s);
}

static void stream_pump(struct logstream *s);

static void on_stream_timer(uv_timer_t *t)
{
    struct logstream *s = t->data;
    json_t *pod;
    struct ns_log_src cur;
    const char *reason;
    bool same = false;

    if (s->follow && s->src.finished < 0) {
        /* Has the instance we follow stopped? Look at the pod as it is now. */
        pod = our_pod(s->k->sim, s->ns, s->pod);
        if (!pod || strcmp(kapi_obj_uid(pod) ? kapi_obj_uid(pod) : "", s->uid) != 0) {
            json_decref(pod);
            stream_end(s); /* the pod is gone */
            return;
        }
        if (ns_log_source(pod, s->container, false, &cur, &reason) == 0 &&
            cur.started == s->src.started) {
            same = true;
            if (cur.finished >= 0) {
                s->src.finished = cur.finished;
                s->src.exit_code = cur.exit_code;
            }
        }
        if (!same && ns_log_source(pod, s->container, true, &cur, &reason) == 0 &&
            cur.started == s->src.started) {
            /* It restarted: its end is the previous instance's. */
            same = true;
            s->src.finished = cur.finished;
            s->src.exit_code = cur.exit_code;
        }
        json_decref(pod);
        if (!same) {
            stream_end(s);
            return;
        }
        /* Learnt late: a tick of the last second may be out already; the exit line follows it. */
        if (s->src.finished >= 0 && s->next_line > ns_log_count(&s->src, 0) - 1)
            s->next_line = ns_log_count(&s->src, 0) - 1;
    }
    stream_pump(s);
}

static void on_stream_drain(struct kla_request *r, void *data)
{
    (void)r;
    stream_pump(data);
}

static void on_stream_closed(struct kla_request *r, void *data)
{
    struct logstream *s = data;

    (void)r;
    s->r = NULL;
    stream_free(s);
}

/* Sends the lines that exist, within the limits, as fast as the client takes them. */
static void stream_pump(struct logstream *s)
{
    char line[LINE_MAX_LEN];
    int64_t now_ms = wall_ms(), avail = ns_log_count(&s->src, now_ms / 1000);

    if (s->end_line >= 0 && avail > s->end_line)
        avail = s->end_line;
    while (s->next_line < avail) {
        int n;

        if (!kla_resp_writable(s->r)) {
            kla_resp_on_drain(s->r, on_stream_drain, s);
            return;
        }
        n = ns_log_line(&s->src, s->next_line, s->timestamps, line, sizeof(line));
        if (n < 0) {
            stream_end(s);
            return;
        }
        if (s->limit_left >= 0 && n > s->limit_left)
            n = (int)s->limit_left;
        if (kla_resp_write(s->r, line, (size_t)n) < 0)
            return; /* the connection is closing: on_stream_closed frees us */
        s->next_line++;
        if (s->limit_left >= 0) {
            s->limit_left -= n;
            if (s->limit_left == 0) {
                stream_end(s);
                return;
            }
        }
    }
    if (!s->follow || (s->src.finished >= 0 && s->next_line >= ns_log_count(&s->src, 0))) {
        stream_end(s);
        return;
    }
    /* The next line comes at its second (a tick later, to be on the right side of it). */
    {
        int64_t due = ns_log_time(&s->src, s->next_line) * 1000 + 20 - now_ms;

        if (due < 20)
            due = 20;
        if (due > 1000)
            due = 1000; /* look at the pod at least every second */
        uv_timer_start(s->timer, on_stream_timer, (uint64_t)due, 0);
    }
}

static int backend_logs(void *data, struct kla_request *r, const struct kla_pod_ref *ref,
                        const struct kla_logs_opts *o)
{
    struct ns_kubelet *k = data;
    json_t *pod = our_pod(k->sim, ref->ns, ref->pod);
    struct ns_log_src src;
    const char *reason = NULL;
    struct logstream *s;
    int64_t now = wall_ms() / 1000, since = -1;
    int e;

    if (!pod)
        return -ENOENT;
    e = ns_log_source(pod, ref->container, o->previous, &src, &reason);
    if (e == -ENOENT) {
        if (o->previous)
            kla_resp_error(r, 400, "previous terminated container \"%s\" in pod \"%s\" not found",
                           ref->container, ref->pod);
        else
            kla_resp_error(r, 400, "container \"%s\" in pod \"%s\" is not valid", ref->container,
                           ref->pod);
        json_decref(pod);
        return 0;
    }
    if (e == -EAGAIN) {
        kla_resp_error(r, 400, "container \"%s\" in pod \"%s\" is waiting to start: %s",
                       ref->container, ref->pod, reason ? reason : "ContainerCreating");
        json_decref(pod);
        return 0;
    }
    s = x_calloc(1, sizeof(*s));
    if (!s || !(s->timer = ktimer_new(k->sim->loop, s))) {
        x_free(s);
        json_decref(pod);
        return -ENOMEM;
    }
    s->k = k;
    s->r = r;
    snprintf(s->ns, sizeof(s->ns), "%s", ref->ns);
    snprintf(s->pod, sizeof(s->pod), "%s", ref->pod);
    snprintf(s->container, sizeof(s->container), "%s", ref->container);
    snprintf(s->image, sizeof(s->image), "%s", src.image ? src.image : "?");
    snprintf(s->uid, sizeof(s->uid), "%s", kapi_obj_uid(pod) ? kapi_obj_uid(pod) : "");
    json_decref(pod);
    s->src = src;
    s->src.ns = s->ns;
    s->src.pod = s->pod;
    s->src.container = s->container;
    s->src.image = s->image;
    s->follow = o->follow && !o->previous;
    s->timestamps = o->timestamps;
    s->previous = o->previous;
    s->limit_left = o->limit_bytes;
    if (o->since_seconds >= 0)
        since = now - o->since_seconds;
    else if (o->since_time >= 0)
        since = o->since_time;
    s->next_line = ns_log_first(&s->src, now, since, o->tail_lines);
    s->end_line = s->follow ? -1 : ns_log_count(&s->src, now);
    s->next = k->streams;
    if (k->streams)
        k->streams->prev = s;
    k->streams = s;
    kla_req_on_closed(r, on_stream_closed, s);
    if (kla_resp_begin(r, 200, "text/plain") < 0)
        return 0; /* closing: on_stream_closed frees s */
    stream_pump(s);
    return 0;
}

/* ---- exec ---------------------------------------------------------------------------------- */

struct execsess {
    struct ns_kubelet *k;
    struct execsess *prev, *next;
    struct kla_exec *x;
    struct ns_shell *sh;
    uv_timer_t *timer;
    char *vars[NS_SHELL_MAX_ENV];
    size_t nvars;
    char hostname[KLA_MAX_POD + 1];
    bool input_paused;
};

static void sess_free(struct execsess *e)
{
    struct ns_kubelet *k = e->k;

    ns_shell_free(e->sh);
    ktimer_free(e->timer);
    for (size_t i = 0; i < e->nvars; i++)
        x_free(e->vars[i]);
    if (e->prev)
        e->prev->next = e->next;
    else
        k->execs = e->next;
    if (e->next)
        e->next->prev = e->prev;
    x_free(e);
}

static void sh_out(void *data, int fd, const char *buf, size_t len)
{
    struct execsess *e = data;

    if (!e->x)
        return;
    if (kla_exec_write(e->x, fd == 2 ? KLA_STREAM_STDERR : KLA_STREAM_STDOUT, buf, len) < 0)
        return;
    if (!kla_exec_writable(e->x) && !e->input_paused) {
        e->input_paused = true;
        kla_exec_pause_input(e->x, true);
    }
}

static void on_wake(uv_timer_t *t)
{
    struct execsess *e = t->data;

    if (e->sh)
        ns_shell_wake(e->sh);
}

static void sh_sleep(void *data, uint64_t ms)
{
    struct execsess *e = data;

    uv_timer_start(e->timer, on_wake, ms, 0);
}

static void sh_exit(void *data, int code)
{
    struct execsess *e = data;

    uv_timer_stop(e->timer);
    if (e->x)
        kla_exec_finish(e->x, code, NULL);
}

static void x_start(struct kla_exec *x, void *data)
{
    struct execsess *e = data;
    const struct kla_exec_opts *o = kla_exec_options(x);
    struct ns_shell_env env = {.hostname = e->hostname,
                               .vars = (const char *const *)e->vars,
                               .nvars = e->nvars,
                               .tty = o->tty,
                               .has_stdin = o->in};
    struct ns_shell_io io = {.out = sh_out, .sleep = sh_sleep, .exit = sh_exit, .data = e};
    int r;

    e->x = x;
    r = ns_shell_new((const char *const *)o->command, o->ncommand, &env, &io, &e->sh);
    if (r < 0) {
        kla_exec_finish(x, -1, "cannot start the command");
        return;
    }
    ns_shell_start(e->sh);
}

static void x_stdin(struct kla_exec *x, const char *buf, size_t len, void *data)
{
    struct execsess *e = data;

    (void)x;
    if (e->sh)
        ns_shell_input(e->sh, buf, len);
}

static void x_drain(struct kla_exec *x, void *data)
{
    struct execsess *e = data;

    if (e->input_paused) {
        e->input_paused = false;
        kla_exec_pause_input(x, false);
    }
}

static void x_closed(struct kla_exec *x, void *data)
{
    struct execsess *e = data;

    (void)x;
    e->x = NULL;
    sess_free(e);
}

static const struct kla_exec_handlers exec_handlers = {
    .start = x_start, .stdin_data = x_stdin, .drain = x_drain, .closed = x_closed};

static int add_var(struct execsess *e, const char *name, const char *value)
{
    size_t n = strlen(name) + strlen(value) + 2;

    if (e->nvars >= NS_SHELL_MAX_ENV)
        return 0;
    e->vars[e->nvars] = x_malloc(n);
    if (!e->vars[e->nvars])
        return -ENOMEM;
    snprintf(e->vars[e->nvars], n, "%s=%s", name, value);
    e->nvars++;
    return 0;
}

static int backend_exec(void *data, struct kla_request *r, const struct kla_pod_ref *ref,
                        const struct kla_exec_opts *o)
{
    struct ns_kubelet *k = data;
    json_t *pod = our_pod(k->sim, ref->ns, ref->pod), *containers, *c, *env, *v;
    const json_t *spec = NULL;
    struct ns_log_src src;
    const char *reason;
    struct execsess *e;
    size_t i;
    int rr;

    if (!pod)
        return -ENOENT;
    containers = json_object_get(json_object_get(pod, "spec"), "containers");
    json_array_foreach(containers, i, c)
    {
        const char *name = jsn_str_at(c, "name", NULL);

        if (name && strcmp(name, ref->container) == 0)
            spec = c;
    }
    if (!spec) {
        kla_resp_error(r, 404, "container not found (\"%s\")", ref->container);
        json_decref(pod);
        return 0;
    }
    if (ns_log_source(pod, ref->container, false, &src, &reason) < 0 || src.finished >= 0) {
        kla_resp_error(r, 400, "container \"%s\" in pod \"%s\" is not running", ref->container,
                       ref->pod);
        json_decref(pod);
        return 0;
    }
    e = x_calloc(1, sizeof(*e));
    if (!e || !(e->timer = ktimer_new(k->sim->loop, e))) {
        x_free(e);
        json_decref(pod);
        return -ENOMEM;
    }
    e->k = k;
    snprintf(e->hostname, sizeof(e->hostname), "%s", ref->pod);
    rr = add_var(e, "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    if (rr == 0)
        rr = add_var(e, "HOSTNAME", ref->pod);
    env = json_object_get(spec, "env");
    json_array_foreach(env, i, v)
    {
        const char *name = jsn_str_at(v, "name", NULL), *value = jsn_str_at(v, "value", NULL);

        /* Literal values only: valueFrom is not resolved by the simulator. */
        if (rr == 0 && name && value)
            rr = add_var(e, name, value);
    }
    if (rr == 0 && o->tty)
        rr = add_var(e, "TERM", "xterm");
    if (rr == 0)
        rr = add_var(e, "HOME", "/root");
    json_decref(pod);
    e->next = k->execs;
    if (k->execs)
        k->execs->prev = e;
    k->execs = e;
    if (rr < 0) {
        sess_free(e);
        return rr;
    }
    rr = kla_exec_accept(r, &exec_handlers, e);
    if (rr < 0)
        sess_free(e); /* r was answered */
    return 0;
}

/* ---- the server ---------------------------------------------------------------------------- */

static bool healthy(void *data)
{
    return ns_sim_ready(data);
}

int ns_kubelet_start(struct ns_sim *sim, struct ns_kubelet **ret)
{
    const struct ns_config *cfg = sim->cfg;
    struct ns_kubelet *k = x_calloc(1, sizeof(*k));
    char *cert = NULL, *key = NULL, *ca = NULL, err[256];
    const char *bad = NULL;
    int r;

    if (!k)
        return -ENOMEM;
    k->sim = sim;
    if ((r = file_read(cfg->tls_cert_file, MAX_PEM, 0, &cert, NULL)) < 0)
        bad = cfg->tls_cert_file;
    else if ((r = file_read(cfg->tls_key_file, MAX_PEM, 0, &key, NULL)) < 0)
        bad = cfg->tls_key_file;
    else if ((r = file_read(cfg->client_ca_file, MAX_PEM, 0, &ca, NULL)) < 0)
        bad = cfg->client_ca_file;
    if (bad) {
        log_errno(r, MOD, "cannot read %s", bad);
        goto fail;
    }
    r = kla_sar_new(sim->c, NULL, &k->sar);
    if (r < 0)
        goto fail;
    {
        struct kla_server_options o = {
            .addr = cfg->kubelet_addr,
            .name = "nodesim-kubelet",
            .backend = {.node_of = node_of, .logs = backend_logs, .exec = backend_exec, .data = k},
            .authz = kla_sar_authorizer(k->sar),
            .healthy = healthy,
            .healthy_data = sim,
        };

        r = kla_server_new(sim->loop, &o, &k->srv);
        if (r < 0)
            goto fail;
    }
    r = kla_server_set_tls(k->srv, cert, key, ca, err, sizeof(err));
    if (r < 0) {
        log_error(MOD, "kubelet API TLS material: %s", err);
        goto fail;
    }
    r = kla_server_start(k->srv, err, sizeof(err));
    if (r < 0) {
        log_error(MOD, "kubelet API: %s", err);
        goto fail;
    }
    log_info(MOD, "kubelet API on https://%s (logs, exec, /healthz) for every node",
             cfg->kubelet_addr);
    *ret = k;
    r = 0;
    goto out;
fail:
    ns_kubelet_close(k);
    if (r >= 0)
        r = -EINVAL;
out:
    if (key)
        explicit_bzero(key, strlen(key));
    x_free(cert);
    x_free(key);
    x_free(ca);
    return r;
}

static void server_closed(void *data)
{
    struct ns_kubelet *k = data;

    kla_sar_free(k->sar);
    x_free(k);
}

void ns_kubelet_close(struct ns_kubelet *k)
{
    if (!k)
        return;
    /* Closing the server closes every stream and session (their callbacks free them). */
    if (k->srv) {
        kla_server_close(k->srv, server_closed, k);
        return;
    }
    server_closed(k);
}
