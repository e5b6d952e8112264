/* The modules of cliqo-agent, in start order (see struct agent_module in agent.h). A new controller
 * adds one line here and its own file. */
#include "agent/agent.h"
#include "agent/modules.h"
#include "discovery/module.h"
#include "peering/ctl.h"

/* One module per line, so that adding one is a one-line change. */
/* clang-format off */
const struct agent_module agent_modules[] = {
    AGENT_MODULE_IDENTITY,
    AGENT_MODULE_PEER_AUTH,
    AGENT_MODULE_PEER_OUTGOING,
    AGENT_MODULE_PEER_INCOMING,
    AGENT_MODULE_DISCOVERY,
    {NULL, NULL, NULL, NULL, NULL, NULL},
};
/* clang-format on */
