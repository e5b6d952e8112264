/* Plumbing shared by the agent's controllers. */
#ifndef CLIQO_AGENT_CTL_H
#define CLIQO_AGENT_CTL_H

#include <jansson.h>

#include "kube/api.h"

/* The result of the last call of a chain, copied so that it outlives the kapi callback. */
struct ctl_call {
    int err;
    long http;
    json_t *body; /* owned */
    char reason[64];
    char message[256];
};
/* A kapi callback that stores the result in *(struct ctl_call *)data-> and calls next(data). The
 * owner struct must begin with a struct ctl_call_chain. */
struct ctl_call_chain {
    struct ctl_call last;
    void (*next)(void *owner);
};
void ctl_call_cb(struct kapi_client *c, const struct kapi_result *res, void *data);
void ctl_call_reset(struct ctl_call *pc);

#endif
