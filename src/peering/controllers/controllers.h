/* The peering controllers of cliqo-agent (docs/peering.md), as agent modules:
 *
 *   auth      the HTTPS auth endpoint (/ca, /ids, /identity): issues scoped credentials to peers.
 *   outgoing  the ForeignCluster controller: authenticates to a peer, hands it a credential back
 *             in a PeeringRequest, tracks the conditions, unpeers (with a bounded timeout).
 *   incoming  the PeeringRequest controller: admits or denies requests made to this cluster,
 *             records the incoming peering on the ForeignCluster, cleans up after an unpeer.
 *
 * Shared here: ForeignCluster condition helpers and the options the agent's flags give the
 * controllers. */
#ifndef CLIQO_PEERING_CONTROLLERS_H
#define CLIQO_PEERING_CONTROLLERS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/agent.h"
#include "agent/ctl.h"
#include "peering/objects.h"

/* Options of the controllers, from the agent's flags (agent_config; NULL/0: the default). */
struct peer_ctl_options {
    const char *api_server_url; /* the URL peers use to reach this cluster's apiserver;
                                   default: the server of the agent's own kubeconfig */
    const char *auth_url;       /* this cluster's auth URL, sent to peers; default:
                                   ClusterConfig spec.peeringConfig.authUrl */
    uint64_t unpeer_timeout_ms; /* default 30 s, or ClusterConfig unpeerTimeoutSeconds */
    bool unpeer_timeout_set;    /* given by flag: wins over ClusterConfig */
    uint64_t resync_ms;         /* re-check of established peerings; default 30 s */
};
/* The options of agent a's controllers, defaults filled in (a NULL agent: every default). */
struct peer_ctl_options peer_ctl_options(struct agent *a);

/* ---- modules -------------------------------------------------------------------------------- */

int peer_auth_init(struct agent *a);
int peer_auth_start(struct agent *a);
void peer_auth_stop(struct agent *a);
void peer_auth_fini(struct agent *a);
bool peer_auth_ready(struct agent *a);
#define AGENT_MODULE_PEER_AUTH                                                                     \
    {                                                                                              \
        "auth", peer_auth_init, peer_auth_start, peer_auth_stop, peer_auth_fini, peer_auth_ready   \
    }

int peer_outgoing_init(struct agent *a);
int peer_outgoing_start(struct agent *a);
void peer_outgoing_stop(struct agent *a);
void peer_outgoing_fini(struct agent *a);
#define AGENT_MODULE_PEER_OUTGOING                                                                 \
    {                                                                                              \
        "outgoing", peer_outgoing_init, peer_outgoing_start, peer_outgoing_stop,                   \
            peer_outgoing_fini, NULL                                                               \
    }

int peer_incoming_init(struct agent *a);
/* start, stop, fini: the controller skeleton's (agent_module.ctl) */
#define AGENT_MODULE_PEER_INCOMING                                                                 \
    {                                                                                              \
        .name = "incoming", .init = peer_incoming_init, .ctl = true                                \
    }

/* Issues (or finds again) the credential of peer `cluster_id` on this cluster: its tenant
 * namespace, ServiceAccount, RoleBindings and token, as the auth endpoint does. done() gets 0 with
 * the tenant namespace and the kubeconfig (borrowed for the call), or a negative errno (-EAGAIN:
 * not ready yet, retry; -ECANCELED: the auth module stopped, the agent is shutting down) and a
 * message. It runs exactly once, on the loop, and never after the agent aborted its requests
 * (before any module's fini): a caller may free in its fini what data points to. Returns 0, or
 * -EINVAL / -ENOMEM / -ESHUTDOWN (the auth module of agent a stopped, or is not initialised);
 * done is then not called. */
typedef void (*peer_issue_cb)(int err, const char *message, const char *ns, const char *kubeconfig,
                              void *data);
int peer_issue_credential(struct agent *a, const char *cluster_id, const char *cluster_name,
                          peer_issue_cb done, void *data);

/* The identities the agent issues to a peer, each a ServiceAccount in the peer's tenant namespace
 * bound there to one ClusterRole: the peering identity (remote-<id>, cliqo-remote-peering) and the
 * virtual kubelet's (vk-<id>, cliqo-virtual-kubelet-tenant; namespaces the peer asks for through
 * its NamespaceMap get cliqo-virtual-kubelet-remote bound to it too). */
enum peer_cred_kind {
    PEER_CRED_PEERING,
    PEER_CRED_VK,
};
/* peer_issue_credential for either kind; ns names the tenant namespace (NULL: derived from the
 * cluster ID and name). Same returns. */
int peer_issue_credential_kind(struct agent *a, enum peer_cred_kind kind, const char *cluster_id,
                               const char *cluster_name, const char *ns, peer_issue_cb done,
                               void *data);

/* Largest Secret value the controllers decode (kubeconfigs, certificates, tokens). */
#define PEER_SECRET_MAX (256u << 10)

#endif
