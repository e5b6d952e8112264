/* nodecond: the pure part of the virtual node's conditions (docs/advertisement.md, "Virtual
 * kubelet and virtual node"): what the Advertisement's status.network says of the pod-CIDR
 * remapping, and the Ready and NetworkUnavailable conditions that follow from it, the keepalive's
 * verdict and the offer. No I/O: vk.c writes the conditions and tells the pods reflector whether
 * new pods wait for the remapping (offloading/pods.h, vk_pods_set_network_pending).
 *
 * Ownership: inputs are borrowed; the results hold static text and copies, nothing borrowed. */
#ifndef CLIQO_VIRTUALKUBELET_NODECOND_H
#define CLIQO_VIRTUALKUBELET_NODECOND_H

#include <jansson.h>
#include <stdbool.h>

#define VKC_MESSAGE_MAX 512

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

struct vkc_input {
    const char *peer;        /* the provider's ID, for the messages */
    bool reachable;          /* the keepalive's verdict */
    unsigned threshold;      /* keepaliveThreshold: how many probes failed, when unreachable */
    const char *unreachable; /* the last probe's error (may be NULL) */
    struct vkc_network net;
    bool has_resources; /* cpu, memory and pods offered */
};

struct vkc_conditions {
    bool ready;
    const char *ready_reason; /* static: ProviderReady or why not */
    char ready_message[VKC_MESSAGE_MAX];
    bool network_unavailable;   /* NetworkUnavailable's status */
    const char *network_reason; /* static */
    char network_message[VKC_MESSAGE_MAX];
};

/* Ready is True (ProviderReady) unless, first that applies: the provider is unreachable
 * (ProviderUnreachable), the remapping is pending (RemappingPending; never with networking
 * disabled), nothing is offered (NoResources). NetworkUnavailable is True with NetworkingDisabled
 * when networking is disabled, else True with RemappingPending until settled, then False with
 * RemappingSettled. */
void vkc_conditions(const struct vkc_input *in, struct vkc_conditions *ret);

#endif
