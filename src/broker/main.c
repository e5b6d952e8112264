/* cliqo-broker: parses the command line, runs the broker's modules on the agent's skeleton (one
 * libuv loop), exits with its status. docs/broker.md */
#include "agent/agent-internal.h"
#include "broker/aggregator.h"
#include "broker/api.h"
#include "broker/config.h"
#include "broker/core.h"
#include "broker/orchestrator.h"
#include "common/log.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

/* As cliqo-agent (agent/main.c): the catalog of a large federation is rebuilt as short-lived trees,
 * and glibc keeps freed pages resident unless they are handed back. */
#define TRIM_INTERVAL_MS 5000

static void on_trim(uv_timer_t *t)
{
    (void)t;
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

int main(int argc, char **argv)
{
    static struct brk_config cfg; /* large (the forwarded flags); lives as long as the process */
    struct agent_module modules[6];
    struct agent *a = NULL;
    char err[512];
    uv_loop_t loop;
    uv_timer_t trim;
    size_t n = 0;
    int code, r;

    if (brk_config_parse(argc, argv, &cfg, err, sizeof(err)) < 0) {
        fprintf(stderr, "cliqo-broker: %s\n", err);
        return 2;
    }
    if (cfg.help) {
        brk_usage(stdout);
        return 0;
    }
    if (cfg.version) {
        printf("cliqo-broker %s\n", CLIQO_VERSION);
        return 0;
    }
    /* The module table: the core and the API always, the rest as asked. */
    memset(modules, 0, sizeof(modules));
    modules[n++] = (struct agent_module)BRK_MODULE_CORE;
    modules[n++] = (struct agent_module)BRK_MODULE_API;
    if (cfg.orchestrator)
        modules[n++] = (struct agent_module)BRK_MODULE_ORCH;
    if (cfg.aggregator)
        modules[n++] = (struct agent_module)BRK_MODULE_AGG;
    log_set_level(cfg.agent.log_level);
    signal(SIGPIPE, SIG_IGN);
    r = uv_loop_init(&loop);
    if (r < 0) {
        fprintf(stderr, "cliqo-broker: cannot create the event loop: %s\n", uv_strerror(r));
        return 1;
    }
    log_info("broker", "starting: catalog %s, orchestrator %s, aggregator %s; API on %s (token %s)",
             cfg.catalog ? "on" : "off", cfg.orchestrator ? "on" : "off",
             cfg.aggregator ? "on" : "off", cfg.api_addr,
             cfg.require_token ? "required for writes" : "not required on loopback");
    uv_timer_init(&loop, &trim);
    uv_timer_start(&trim, on_trim, TRIM_INTERVAL_MS, TRIM_INTERVAL_MS);
    uv_unref((uv_handle_t *)&trim);
    r = agent_new(&loop, &cfg.agent, modules, &a);
    if (r == 0)
        r = agent_start(a);
    if (r == 0)
        uv_run(&loop, UV_RUN_DEFAULT);
    code = agent_free(a);
    uv_close((uv_handle_t *)&trim, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    r = uv_loop_close(&loop);
    if (r < 0) {
        log_error("broker", "event loop still has open handles at exit: %s", uv_strerror(r));
        if (code == 0)
            code = 1;
    }
    return code;
}
