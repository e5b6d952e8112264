/* nodecond: the pure part of the virtual node's conditions (docs/advertisement.md, "Virtual
 * kubelet and virtual node"; docs/dataplane.md, section 6): what the Advertisement's
 * status.network says of the pod-CIDR remapping, what the provider's TunnelEndpoint here says of
 * the tunnel (when this cluster runs a data plane), and the Ready and NetworkUnavailable conditions
 * that follow from them, the keepalive's verdict and the offer. No I/O, no clock: the time is an
 * input. vk.c writes the conditions and tells the pods reflector whether new pods wait for the
 * remapping (offloading/pods.h, vk_pods_set_network_pending).
 *
 * Ownership: inputs are borrowed; the results hold static text and copies, nothing borrowed. */
#ifndef CLIQO_VIRTUALKUBELET_NODECOND_H
#define CLIQO_VIRTUALKUBELET_NODECOND_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define VKC_MESSAGE_MAX 512
/* WireGuard's Reject-After-Time: a session whose last handshake is older carries nothing (the
 * gateway's Up means the same, docs/dataplane.md, section 3). */
#define VKC_HANDSHAKE_MAX_S 180

/* The Advertisement's status.network, as the advertisement operator writes it from the network
 * module's state of the provider. */
struct vkc_network {
    bool enabled; /* enabled is not false: a missing field (or status.network) reads as enabled */
    bool settled; /* settled is true */
};
void vkc_network_read(const json_t *adv, struct vkc_network *ret);
/* Whether the remapping is pending: networking enabled and not settled. With networking disabled
 * (ForeignCluster spec.networkingEnabled: No) nothing is pending: there is nothing to wait for. */
bool vkc_network_pending(const struct vkc_network *n);

/* The tunnel to the provider, as this cluster's gateway reports it in the status of the provider's
 * TunnelEndpoint here (tep-<provider> in its tenant namespace). */
struct vkc_tunnel {
    bool dataplane; /* this cluster runs a gateway: its record, ConfigMap cliqo-gateway, exists */
    bool endpoint;  /* the provider's TunnelEndpoint exists here */
    char phase[16]; /* status.phase: Pending, Up, Error; "" when missing or anything else */
    int64_t handshake; /* status.lastHandshake in Unix seconds; 0: none (or not a time) */
    char message[256]; /* status.message, truncated; "" when none */
};
/* tep: the TunnelEndpoint (NULL: none); dataplane: whether the gateway's record exists. */
void vkc_tunnel_read(const json_t *tep, bool dataplane, struct vkc_tunnel *ret);

struct vkc_input {
    const char *peer;        /* the provider's ID, for the messages */
    bool reachable;          /* the keepalive's verdict */
    unsigned threshold;      /* keepaliveThreshold: how many probes failed, when unreachable */
    const char *unreachable; /* the last probe's error (may be NULL) */
    struct vkc_network net;
    bool has_resources; /* cpu, memory and pods offered */
    /* The tunnel (NULL: not known, as without a data plane) and the time to judge its last
     * handshake by (Unix seconds). */
    const struct vkc_tunnel *tunnel;
    int64_t now;
};

struct vkc_conditions {
    bool ready;
    const char *ready_reason; /* static: ProviderReady or why not */
    char ready_message[VKC_MESSAGE_MAX];
    bool network_unavailable;   /* NetworkUnavailable's status */
    const char *network_reason; /* static */
    char network_message[VKC_MESSAGE_MAX];
    /* Seconds after which the time alone changes NetworkUnavailable (a handshake growing too old;
     * 0: never): when to look again without any event. */
    unsigned recheck_s;
};

/* Ready is True (ProviderReady) unless, first that applies: the provider is unreachable
 * (ProviderUnreachable), the remapping is pending (RemappingPending; never with networking
 * disabled), nothing is offered (NoResources). The tunnel never changes Ready.
 *
 * NetworkUnavailable is True with NetworkingDisabled when networking is disabled, else True with
 * RemappingPending until settled. Once settled, without a data plane here (no tunnel, or
 * tunnel->dataplane false) it is False with RemappingSettled, as before the data plane existed.
 * With one, the first that applies:
 *   - no TunnelEndpoint of the provider here: True, TunnelPending;
 *   - status.phase Error: True, TunnelError, with the gateway's message;
 *   - a handshake younger than VKC_HANDSHAKE_MAX_S (a time in the future counts as now): False,
 *     TunnelUp (recheck_s: when it turns too old);
 *   - an older handshake: True, NoHandshake, with its age in whole minutes (so that the message
 *     changes at most once a minute) and its time;
 *   - no handshake yet: True, TunnelPending, with the gateway's message when there is one. */
void vkc_conditions(const struct vkc_input *in, struct vkc_conditions *ret);

#endif
