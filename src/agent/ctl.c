/* Plumbing shared by the agent's controllers; see ctl.h. */
#include "agent/ctl.h"

#include <stdio.h>
#include <string.h>

void ctl_call_reset(struct ctl_call *pc)
{
    json_decref(pc->body);
    memset(pc, 0, sizeof(*pc));
}

void ctl_call_cb(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct ctl_call_chain *ch = data;

    (void)c;
    ctl_call_reset(&ch->last);
    ch->last.err = res->err;
    ch->last.http = res->http_status;
    ch->last.body = json_incref(res->body);
    snprintf(ch->last.reason, sizeof(ch->last.reason), "%s", res->status.reason);
    snprintf(ch->last.message, sizeof(ch->last.message), "%s", res->status.message);
    ch->next(data);
}
