/* cliqo-nodesim: simulated kubelets for local clusters (see docs/nodesim.md). One libuv loop runs
 * everything: the API client, two informers (our nodes, bound pods), two work queues, the lease and
 * status timers, the health endpoint and the signal handlers. */
#include "nodesim/sim.h"

#include "common/log.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD             "nodesim"
#define STOP_TIMEOUT_MS 10000

static int exit_code;

bool ns_sim_ready(const struct ns_sim *sim)
{
    return !sim->stopping && sim->n_registered == sim->n_nodes && sim->pods_synced;
}

static void close_handle(uv_handle_t *h)
{
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

/* Releases everything that holds the loop; uv_run then returns. Idempotent. */
static void sim_close(struct ns_sim *sim)
{
    if (sim->closed)
        return;
    sim->closed = true;
    sim->stopping = true;
    inf_free(sim->pod_inf);
    sim->pod_inf = NULL;
    inf_free(sim->node_inf);
    sim->node_inf = NULL;
    wq_close(sim->pq, NULL, NULL);
    sim->pq = NULL;
    wq_close(sim->nq, NULL, NULL);
    sim->nq = NULL;
    close_handle((uv_handle_t *)&sim->lease_timer);
    close_handle((uv_handle_t *)&sim->status_timer);
    close_handle((uv_handle_t *)&sim->stop_timer);
    close_handle((uv_handle_t *)&sim->sigterm);
    close_handle((uv_handle_t *)&sim->sigint);
    ns_health_close(sim->health);
    sim->health = NULL;
    ns_kubelet_close(sim->kubelet);
    sim->kubelet = NULL;
    kapi_client_close(sim->c);
    sim->c = NULL;
}

static void on_stop_timeout(uv_timer_t *t)
{
    log_warn(MOD, "node deletion did not finish in time; exiting");
    sim_close(t->data);
}

static void on_signal(uv_signal_t *s, int signum)
{
    struct ns_sim *sim = s->data;

    if (sim->stopping) {
        sim_close(sim);
        return;
    }
    log_info(MOD, "%s: stopping", strsignal(signum));
    sim->stopping = true;
    if (sim->cfg->delete_nodes_on_exit && sim->n_nodes > 0 && sim->c) {
        uv_timer_start(&sim->stop_timer, on_stop_timeout, STOP_TIMEOUT_MS, 0);
        ns_nodes_delete_all(sim, sim_close);
        return;
    }
    sim_close(sim);
}

void ns_sim_nodes_registered(struct ns_sim *sim)
{
    int r;

    if (sim->pods_started || sim->stopping)
        return;
    sim->pods_started = true;
    log_info(MOD, "all %u nodes registered; watching their pods", sim->n_nodes);
    r = ns_pods_start(sim);
    if (r < 0) {
        log_errno(r, MOD, "cannot start the pod informer");
        exit_code = 1;
        sim_close(sim);
    }
}

static int load_kubeconfig(const struct ns_config *cfg, struct kc_config **ret)
{
    char err[KC_ERR_LEN];
    int r;

    r = cfg->kubeconfig ? kc_load_file(cfg->kubeconfig, cfg->context, ret, err, sizeof(err))
                        : kc_load_default(cfg->context, ret, err, sizeof(err));
    if (r < 0)
        fprintf(stderr, "cliqo-nodesim: kubeconfig: %s\n", err[0] ? err : strerror(-r));
    return r;
}

int main(int argc, char **argv)
{
    struct ns_config cfg;
    struct kc_config *kc = NULL;
    struct ns_sim sim = {0};
    char err[NS_ERR_LEN];
    uv_loop_t loop;
    int r;

    /* A peer that closes its connection must not kill us on the next write (the kubelet API). */
    signal(SIGPIPE, SIG_IGN);
    r = ns_config_parse(argc, argv, &cfg, err, sizeof(err));
    if (r == NS_CONFIG_HELP) {
        ns_usage(stdout);
        ns_config_done(&cfg);
        return 0;
    }
    if (r < 0) {
        fprintf(stderr, "cliqo-nodesim: %s\n", err);
        ns_config_done(&cfg);
        return 1;
    }
    log_set_level(cfg.log_level);
    if (load_kubeconfig(&cfg, &kc) < 0) {
        ns_config_done(&cfg);
        return 1;
    }
    if (uv_loop_init(&loop) < 0) {
        kc_config_free(kc);
        ns_config_done(&cfg);
        return 1;
    }
    sim.loop = &loop;
    sim.cfg = &cfg;
    uv_timer_init(&loop, &sim.lease_timer);
    uv_timer_init(&loop, &sim.status_timer);
    uv_timer_init(&loop, &sim.stop_timer);
    uv_signal_init(&loop, &sim.sigterm);
    uv_signal_init(&loop, &sim.sigint);
    sim.lease_timer.data = sim.status_timer.data = sim.stop_timer.data = &sim;
    sim.sigterm.data = sim.sigint.data = &sim;
    uv_signal_start(&sim.sigterm, on_signal, SIGTERM);
    uv_signal_start(&sim.sigint, on_signal, SIGINT);

    struct kapi_client_options co = {
        .qps = cfg.qps, .burst = cfg.burst, .user_agent = "cliqo-nodesim/" CLIQO_VERSION};
    r = kapi_client_new(&loop, kc, &co, &sim.c);
    if (r < 0) {
        log_errno(r, MOD, "cannot create the API client for %s", kc->server);
        goto fail;
    }
    r = ns_nodes_init(&sim);
    if (r < 0) {
        log_errno(r, MOD, "cannot set up the nodes");
        goto fail;
    }
    if (cfg.healthz_port) {
        r = ns_health_start(&sim, cfg.healthz_port, &sim.health);
        if (r < 0) {
            log_errno(r, MOD, "cannot serve /healthz on 127.0.0.1:%u", cfg.healthz_port);
            goto fail;
        }
    }
    if (cfg.kubelet_addr) {
        r = ns_kubelet_start(&sim, &sim.kubelet);
        if (r < 0) {
            log_errno(r, MOD, "cannot serve the kubelet API on %s", cfg.kubelet_addr);
            goto fail;
        }
    }
    r = ns_nodes_start(&sim);
    if (r < 0) {
        log_errno(r, MOD, "cannot start");
        goto fail;
    }
    log_info(MOD, "simulating %u nodes %s-0..%u against %s (qps %.0f, burst %d, concurrency %u)",
             cfg.nodes, cfg.node_prefix, cfg.nodes ? cfg.nodes - 1 : 0, kc->server, cfg.qps,
             cfg.burst, cfg.concurrency);
    goto run;
fail:
    exit_code = 1;
    sim_close(&sim);
run:
    uv_run(&loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop) < 0)
        log_warn(MOD, "loop closed with handles still open");
    ns_pods_done(&sim);
    ns_nodes_done(&sim);
    kc_config_free(kc);
    ns_config_done(&cfg);
    log_info(MOD, "stopped");
    return exit_code;
}
