/* Helpers shared by the peering controllers; see ctl.h. */
#include "peering/ctl.h"

#include <stdio.h>
#include <string.h>

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

void peer_call_reset(struct peer_call *pc)
{
    json_decref(pc->body);
    memset(pc, 0, sizeof(*pc));
}

void peer_call_cb(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct peer_call_chain *ch = data;

    (void)c;
    peer_call_reset(&ch->last);
    ch->last.err = res->err;
    ch->last.http = res->http_status;
    ch->last.body = json_incref(res->body);
    snprintf(ch->last.reason, sizeof(ch->last.reason), "%s", res->status.reason);
    snprintf(ch->last.message, sizeof(ch->last.message), "%s", res->status.message);
    ch->next(data);
}
