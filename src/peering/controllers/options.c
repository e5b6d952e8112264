/* The options the agent's flags give the peering controllers; see controllers.h. */
#include "peering/controllers/controllers.h"

/* The defaults hold until peer_ctl_configure (tests and tools may never call it). */
static struct peer_ctl_options opts = {.unpeer_timeout_ms = 30000, .resync_ms = 30000};

void peer_ctl_configure(const struct peer_ctl_options *o)
{
    opts = *o;
    opts.unpeer_timeout_set = o->unpeer_timeout_ms != 0;
    if (!opts.unpeer_timeout_ms)
        opts.unpeer_timeout_ms = 30000;
    if (!opts.resync_ms)
        opts.resync_ms = 30000;
}

const struct peer_ctl_options *peer_ctl_options(void)
{
    return &opts;
}
