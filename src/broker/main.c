/* cliqo-broker: parses the command line, runs the broker's modules on the agent's skeleton (one
 * libuv loop), exits with its status. docs/broker.md */
#include "agent/agent-internal.h"
#include "broker/aggregator.h"
#include "broker/api.h"
#include "broker/config.h"
#include "broker/core.h"
#include "broker/orchestrator.h"
#include "common/log.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    static struct brk_config cfg; /* large (the forwarded flags); lives as long as the process */
    struct agent_module modules[6];
    char err[512];
    size_t n = 0;

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
    log_info("broker", "starting: catalog %s, orchestrator %s, aggregator %s; API on %s (token %s)",
             cfg.catalog ? "on" : "off", cfg.orchestrator ? "on" : "off",
             cfg.aggregator ? "on" : "off", cfg.api_addr,
             cfg.require_token ? "required for writes" : "not required on loopback");
    return agent_run_process("cliqo-broker", &cfg.agent, modules);
}
