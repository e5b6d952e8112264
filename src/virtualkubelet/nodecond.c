/* nodecond: the virtual node's conditions; see nodecond.h. */
#include "virtualkubelet/nodecond.h"

#include <stdio.h>
#include <string.h>

#include "common/rfc3339.h"
#include "network/dpobj.h"

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

void vkc_tunnel_read(const json_t *tep, bool dataplane, struct vkc_tunnel *ret)
{
    const json_t *st = json_object_get(tep, "status");
    const char *phase = json_string_value(json_object_get(st, "phase"));
    const char *msg = json_string_value(json_object_get(st, "message"));
    int64_t t;

    memset(ret, 0, sizeof(*ret));
    ret->dataplane = dataplane;
    ret->endpoint = tep != NULL;
    if (phase && (strcmp(phase, DPO_PHASE_PENDING) == 0 || strcmp(phase, DPO_PHASE_UP) == 0 ||
                  strcmp(phase, DPO_PHASE_ERROR) == 0))
        snprintf(ret->phase, sizeof(ret->phase), "%s", phase);
    if (rfc3339_parse(json_string_value(json_object_get(st, "lastHandshake")), RFC3339_OFFSET,
                      &t) == 0 &&
        t > 0)
        ret->handshake = t;
    snprintf(ret->message, sizeof(ret->message), "%s", msg ? msg : "");
}

/* NetworkUnavailable from the tunnel, once the remapping is settled and a data plane runs. */
static void tunnel_condition(const struct vkc_input *in, const char *peer,
                             struct vkc_conditions *ret)
{
    const struct vkc_tunnel *t = in->tunnel;
    int64_t age = t->handshake > 0 ? in->now - t->handshake : -1;

    ret->network_unavailable = true;
    if (!t->endpoint) {
        ret->network_reason = "TunnelPending";
        snprintf(ret->network_message, sizeof(ret->network_message),
                 "provider %s has published no TunnelEndpoint here yet (its gateway's key and "
                 "endpoint)",
                 peer);
    } else if (strcmp(t->phase, DPO_PHASE_ERROR) == 0) {
        ret->network_reason = "TunnelError";
        snprintf(ret->network_message, sizeof(ret->network_message),
                 "the tunnel to provider %s: %s", peer, t->message[0] ? t->message : "error");
    } else if (t->handshake > 0 && age < VKC_HANDSHAKE_MAX_S) {
        if (age < 0)
            age = 0; /* the gateway's clock ahead of ours */
        ret->network_unavailable = false;
        ret->network_reason = "TunnelUp";
        snprintf(ret->network_message, sizeof(ret->network_message),
                 "the tunnel to provider %s is up (a WireGuard handshake within %d s)", peer,
                 VKC_HANDSHAKE_MAX_S);
        ret->recheck_s = (unsigned)(VKC_HANDSHAKE_MAX_S - age);
    } else if (t->handshake > 0) {
        char when[RFC3339_MAX];

        rfc3339_format(t->handshake, 0, 0, when, sizeof(when));
        ret->network_reason = "NoHandshake";
        snprintf(ret->network_message, sizeof(ret->network_message),
                 "no WireGuard handshake with provider %s for %lld min (the last at %s)", peer,
                 (long long)(age / 60), when);
    } else {
        ret->network_reason = "TunnelPending";
        snprintf(ret->network_message, sizeof(ret->network_message),
                 "no WireGuard handshake with provider %s yet: %s", peer,
                 t->message[0] ? t->message
                 : t->phase[0] ? "no reason given"
                               : "the gateway has not reported on the tunnel yet");
    }
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
    } else if (in->tunnel && in->tunnel->dataplane) {
        tunnel_condition(in, peer, ret);
    } else {
        ret->network_reason = "RemappingSettled";
        snprintf(ret->network_message, sizeof(ret->network_message),
                 "the pod-CIDR remapping is settled");
    }
}
