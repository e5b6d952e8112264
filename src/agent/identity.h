/* The cluster's identity, as every module of the agent reads it. */
#ifndef CLIQO_AGENT_IDENTITY_H
#define CLIQO_AGENT_IDENTITY_H

#include <stdbool.h>

#include "agent/agent.h"

/* identity (identity.c): follows the ConfigMap cluster-id of the agent's namespace (see
 * docs/peering.md) and exports cliqo_cluster_info{cluster_id,cluster_name} 1. */
int identity_init(struct agent *a);
void identity_fini(struct agent *a);
bool identity_ready(struct agent *a);
/* The cluster's ID and name, or NULL while the ConfigMap is unknown. Borrowed until the next loop
 * iteration. */
const char *identity_cluster_id(struct agent *a);
const char *identity_cluster_name(struct agent *a);
/* The cluster's identity key (Secret identity-key of the agent's namespace, made by the first
 * replica that finds it missing; peering/idkey.h) and its key ID, or NULL while there is none.
 * Borrowed until the next loop iteration. */
struct evp_pkey_st *identity_key(struct agent *a);
const char *identity_key_id(struct agent *a);
#define AGENT_MODULE_IDENTITY                                                                      \
    {                                                                                              \
        "identity", identity_init, NULL, NULL, identity_fini, identity_ready                       \
    }

#endif
