/* The options the agent's flags give the peering controllers; see controllers.h. */
#include "peering/controllers/controllers.h"

#include <string.h>

#include "agent/config.h"

#define PEER_CTL_DEFAULT_MS 30000

struct peer_ctl_options peer_ctl_options(struct agent *a)
{
    const struct agent_config *cfg = a ? agent_config(a) : NULL;
    struct peer_ctl_options o;

    memset(&o, 0, sizeof(o));
    if (cfg) {
        o.api_server_url = cfg->api_server_url;
        o.auth_url = cfg->auth_url;
        o.unpeer_timeout_ms = cfg->unpeer_timeout_ms;
        o.resync_ms = cfg->peer_check_ms;
    }
    o.unpeer_timeout_set = o.unpeer_timeout_ms != 0;
    if (!o.unpeer_timeout_ms)
        o.unpeer_timeout_ms = PEER_CTL_DEFAULT_MS;
    if (!o.resync_ms)
        o.resync_ms = PEER_CTL_DEFAULT_MS;
    return o;
}
