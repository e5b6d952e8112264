/* The agent's process-level entry points (main.c): not for modules. */
#ifndef CLIQO_AGENT_INTERNAL_H
#define CLIQO_AGENT_INTERNAL_H

#include "agent/agent.h"
#include "agent/config.h"

/* Creates the agent on loop from a parsed configuration: loads the kubeconfig, makes the client,
 * the HTTP server and the metrics, initialises the modules of `modules` (NULL-name terminated).
 * Logs what failed. Returns 0 or a negative errno; on failure nothing is left open except what
 * agent_run's loop run closes (call agent_free after running the loop either way). */
int agent_new(uv_loop_t *loop, const struct agent_config *cfg, const struct agent_module *modules,
              struct agent **ret);
/* Starts serving, informers and leader election; installs SIGTERM/SIGINT handlers. */
int agent_start(struct agent *a);
/* After the loop has stopped: the exit status the agent chose. Frees the agent. */
int agent_free(struct agent *a);
/* A daemon's whole life on the skeleton (cliqo-agent's and cliqo-broker's main): ignores SIGPIPE,
 * makes the loop, hands freed heap pages back every few seconds, runs the agent with modules
 * until it stops and closes the loop. name is the program's, for the messages. Returns the exit
 * status. */
int agent_run_process(const char *name, const struct agent_config *cfg,
                      const struct agent_module *modules);

#endif
