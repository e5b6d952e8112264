/* cliqo-agent: parses the command line, runs the agent on one libuv loop, exits with its status.
 * `cliqo-agent virtual-kubelet ...` runs one standalone virtual kubelet instead (Deployment mode).
 */
#include "agent/agent-internal.h"
#include "common/log.h"
#include "virtualkubelet/standalone.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

/* Memory: the agent's caches live in compact stores, but every watch event and response is parsed
 * into short-lived trees; after a burst (a rollout of a thousand offloaded pods) glibc keeps the
 * freed pages resident unless they are at the top of the heap. Hand them back every few seconds
 * (malloc_trim releases free pages anywhere in the heap; a pass over a heap of tens of MiB takes
 * well under a millisecond when there is nothing to release). */
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
    struct agent_config cfg;
    struct agent *a = NULL;
    char err[512];
    uv_loop_t loop;
    uv_timer_t trim;
    int code, r;

    if (argc > 1 && strcmp(argv[1], "virtual-kubelet") == 0)
        return vk_standalone_main(argc - 1, argv + 1);
    if (agent_config_parse(argc, argv, &cfg, err, sizeof(err)) < 0) {
        fprintf(stderr, "cliqo-agent: %s\n", err);
        return 2;
    }
    if (cfg.help) {
        agent_usage(stdout);
        return 0;
    }
    if (cfg.version) {
        printf("cliqo-agent %s\n", CLIQO_VERSION);
        return 0;
    }
    log_set_level(cfg.log_level);
    signal(SIGPIPE, SIG_IGN);
    r = uv_loop_init(&loop);
    if (r < 0) {
        fprintf(stderr, "cliqo-agent: cannot create the event loop: %s\n", uv_strerror(r));
        return 1;
    }
    /* The trim timer does not keep the loop alive (unreferenced); closed once the agent stopped. */
    uv_timer_init(&loop, &trim);
    uv_timer_start(&trim, on_trim, TRIM_INTERVAL_MS, TRIM_INTERVAL_MS);
    uv_unref((uv_handle_t *)&trim);
    r = agent_new(&loop, &cfg, agent_modules, &a);
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
