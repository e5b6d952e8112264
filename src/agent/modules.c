/* The modules of cliqo-agent, in start order (see struct agent_module in agent.h). A new controller
 * adds one line here and its own file. */
#include "agent/agent.h"
#include "agent/identity.h"
#include "admission/admission.h"
#include "advertisement/advertisement.h"
#include "discovery/module.h"
#include "kubeletapi/module.h"
#include "network/network.h"
#include "offloading/offloading.h"
#include "peering/controllers/controllers.h"
#include "offloading/provider_namespacemap.h"

/* One module per line, so that adding one is a one-line change. */
/* clang-format off */
const struct agent_module agent_modules[] = {
    AGENT_MODULE_IDENTITY,
    AGENT_MODULE_PEER_AUTH,
    AGENT_MODULE_PEER_OUTGOING,
    AGENT_MODULE_PEER_INCOMING,
    AGENT_MODULE_DISCOVERY,
    AGENT_MODULE_NETWORK,
    AGENT_MODULE_NAMESPACEMAP,
    AGENT_MODULE_BROADCASTER,
    AGENT_MODULE_ADVOPERATOR,
    AGENT_MODULE_ADMISSION,
    AGENT_MODULE_OFFLOADING,
    AGENT_MODULE_KUBELETAPI,
    {NULL, NULL, NULL, NULL, NULL, NULL},
};
/* clang-format on */
