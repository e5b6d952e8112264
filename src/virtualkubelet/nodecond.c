/* nodecond: the virtual node's conditions; see nodecond.h. */
#include "virtualkubelet/nodecond.h"

#include <stdio.h>
#include <string.h>

void vkc_network_read(const json_t *adv, struct vkc_network *ret)
{
    const json_t *n = json_object_get(json_object_get(adv, "status"), "network");

    ret->enabled = !json_is_false(json_object_get(n, "enabled"));
    ret->settled = json_is_true(json_object_get(n, "settled"));
}

bool vkc_network_pending(const struct vkc_network *n)
{
    return n->enabled && !n->settled;
}

void vkc_conditions(const struct vkc_input *in, struct vkc_conditions *ret)
{
    const char *peer = in->peer ? in->peer : "";

    memset(ret, 0, sizeof(*ret));
    if (!in->reachable) {
        ret->ready_reason = "ProviderUnreachable";
        /* No counter in the message: it would change the status on every probe. */
        snprintf(ret->ready_message, sizeof(ret->ready_message),
                 "the last %u probes of provider %s failed: %s", in->threshold, peer,
                 in->unreachable ? in->unreachable : "");
    } else if (vkc_network_pending(&in->net)) {
        ret->ready_reason = "RemappingPending";
        snprintf(ret->ready_message, sizeof(ret->ready_message),
                 "the pod-CIDR remapping with provider %s is not settled yet (NetworkConfig)",
                 peer);
    } else if (!in->has_resources) {
        ret->ready_reason = "NoResources";
        snprintf(ret->ready_message, sizeof(ret->ready_message),
                 "provider %s offers no cpu, memory or pods", peer);
    } else {
        ret->ready_reason = "ProviderReady";
        snprintf(ret->ready_message, sizeof(ret->ready_message),
                 "provider %s is reachable and shares resources", peer);
    }
    ret->ready = strcmp(ret->ready_reason, "ProviderReady") == 0;
    if (!in->net.enabled) {
        ret->network_unavailable = true;
        ret->network_reason = "NetworkingDisabled";
        snprintf(ret->network_message, sizeof(ret->network_message),
                 "networking with provider %s is disabled (ForeignCluster spec.networkingEnabled: "
                 "No)",
                 peer);
    } else if (!in->net.settled) {
        ret->network_unavailable = true;
        ret->network_reason = "RemappingPending";
        snprintf(ret->network_message, sizeof(ret->network_message),
                 "waiting for the pod-CIDR remapping");
    } else {
        ret->network_reason = "RemappingSettled";
        snprintf(ret->network_message, sizeof(ret->network_message),
                 "the pod-CIDR remapping is settled");
    }
}
