/* cliqo-agent: parses the command line, runs the agent on one libuv loop, exits with its status.
 * `cliqo-agent virtual-kubelet ...` runs one standalone virtual kubelet instead (Deployment mode);
 * `cliqo-agent gateway ...` the data plane's gateway (network/gateway.h) on the same skeleton, and
 * `cliqo-agent node ...` its per-node mode (network/nodeagent.h).
 */
#include "agent/agent-internal.h"
#include "common/log.h"
#include "network/gateway.h"
#include "network/nodeagent.h"
#include "virtualkubelet/standalone.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    struct agent_config cfg;
    char err[512];

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
    if (cfg.gateway) {
        static const struct agent_module gateway[] = {AGENT_MODULE_GATEWAY, {0}};

        return agent_run_process("cliqo-agent gateway", &cfg, gateway);
    }
    if (cfg.node) {
        static const struct agent_module node[] = {AGENT_MODULE_NODE, {0}};

        return agent_run_process("cliqo-agent node", &cfg, node);
    }
    return agent_run_process("cliqo-agent", &cfg, agent_modules);
}
