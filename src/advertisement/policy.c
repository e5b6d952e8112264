/* advpol: see policy.h. */
#include "advertisement/policy.h"

#include "common/rfc3339.h"
#include "kube/quantity.h"
#include "peering/objects.h"
#include "peering/resources.h"

#include <stdio.h>
#include <inttypes.h>
#include <string.h>

static bool is(const char *a, const char *b)
{
    return a && strcmp(a, b) == 0;
}

bool advpol_waiting(const char *status, const char *reason, bool by_operator)
{
    if (by_operator)
        return false;
    return !status || !*status || (is(status, "Refused") && is(reason, ADVPOL_MAX));
}

void advpol_decide(const struct advpol_input *in, struct advpol_result *ret)
{
    const struct adv_config *c = in->cfg;

    memset(ret, 0, sizeof(*ret));
    if (in->invalid_reason) {
        ret->reason = in->invalid_reason;
        snprintf(ret->message, sizeof(ret->message), "%s",
                 in->invalid_message ? in->invalid_message : "the Advertisement is invalid");
        return;
    }
    if (advcfg_list_has(c->deny, in->peer)) {
        ret->reason = ADVPOL_DENIED;
        snprintf(ret->message, sizeof(ret->message), "cluster %s is in the deny list", in->peer);
        return;
    }
    if (in->by_operator && (is(in->cur_status, "Accepted") || is(in->cur_status, "Refused"))) {
        ret->accept = is(in->cur_status, "Accepted");
        ret->by_operator = true;
        ret->reason = ret->accept ? ADVPOL_ACCEPTED_BY_OPERATOR : ADVPOL_REFUSED_BY_OPERATOR;
        snprintf(ret->message, sizeof(ret->message), "%s by an operator (cliqoctl %s)",
                 ret->accept ? "accepted" : "refused", ret->accept ? "accept" : "refuse");
        return;
    }
    if (json_array_size(c->allow) > 0 && !advcfg_list_has(c->allow, in->peer)) {
        ret->reason = ADVPOL_NOT_ALLOWED;
        snprintf(ret->message, sizeof(ret->message), "cluster %s is not in the allow list",
                 in->peer);
        return;
    }
    if (c->accept == ADVCFG_MANUAL) {
        if (is(in->cur_status, "Accepted") && is(in->cur_reason, ADVPOL_ACCEPTED_BY_POLICY)) {
            /* Accepted before the switch to Manual: it stays, as with a lower maximum. */
            ret->accept = true;
            ret->reason = ADVPOL_ACCEPTED_BY_POLICY;
            snprintf(ret->message, sizeof(ret->message),
                     "accepted by policy AutoAcceptMax before acceptPolicy became Manual");
            return;
        }
        ret->reason = ADVPOL_MANUAL;
        snprintf(ret->message, sizeof(ret->message),
                 "acceptPolicy is Manual: run 'cliqoctl accept' to accept it");
        return;
    }
    if (is(in->cur_status, "Accepted") && is(in->cur_reason, ADVPOL_ACCEPTED_BY_POLICY)) {
        ret->accept = true;
        ret->reason = ADVPOL_ACCEPTED_BY_POLICY;
        snprintf(ret->message, sizeof(ret->message),
                 "accepted by policy AutoAcceptMax (at most %u)", c->max_accept);
        return;
    }
    if (in->accepted_others + in->waiting_before < c->max_accept) {
        ret->accept = true;
        ret->reason = ADVPOL_ACCEPTED_BY_POLICY;
        snprintf(ret->message, sizeof(ret->message),
                 "accepted by policy AutoAcceptMax (at most %u)", c->max_accept);
        return;
    }
    ret->reason = ADVPOL_MAX;
    snprintf(ret->message, sizeof(ret->message),
             "%zu Advertisements are accepted already, the maximum is %u", in->accepted_others,
             c->max_accept);
}

/* Every value of a map of amounts (a ResourceList) is a quantity, and none is negative; false
 * with the first offending key in msg. */
static bool valid_amounts(const json_t *map, const char *field, char *msg, size_t msglen)
{
    const char *k;
    json_t *v;

    json_object_foreach((json_t *)map, k, v)
    {
        char buf[64];
        const char *text = json_string_value(v);
        struct kq q;

        if (json_is_integer(v)) {
            snprintf(buf, sizeof(buf), "%" PRId64, (int64_t)json_integer_value(v));
            text = buf;
        }
        if (!text || kq_parse(text, &q) < 0) {
            snprintf(msg, msglen, "%s[%.100s] is not a valid quantity", field, k);
            return false;
        }
        if (kq_sign(&q) < 0) {
            snprintf(msg, msglen, "%s[%.100s] is negative (%.32s)", field, k, text);
            return false;
        }
    }
    return true;
}

const char *advpol_validate(const json_t *adv, const char *peer, int64_t now, char *msg,
                            size_t msglen)
{
    const json_t *meta = json_object_get(adv, "metadata"), *spec = json_object_get(adv, "spec");
    const json_t *hard = json_object_get(json_object_get(spec, "resourceQuota"), "hard");
    const json_t *ref = json_object_get(spec, "kubeConfigRef");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *cid = json_string_value(json_object_get(spec, "clusterId"));
    const char *refns = json_string_value(json_object_get(ref, "namespace"));
    const json_t *prices = json_object_get(spec, "prices");
    char want[128];
    int64_t ts, ttl;

    snprintf(want, sizeof(want), PEER_ADV_PREFIX "%s", peer ? peer : "");
    if (!peer || !name || strcmp(name, want) != 0 || !cid || strcmp(cid, peer) != 0) {
        snprintf(msg, msglen,
                 "an Advertisement in the tenant namespace of cluster %s must be named %s and "
                 "carry spec.clusterId %s",
                 peer ? peer : "?", want, peer ? peer : "?");
        return "IdentityMismatch";
    }
    if (!json_is_object(hard) || json_object_size(hard) == 0) {
        snprintf(msg, msglen, "spec.resourceQuota.hard is missing or empty");
        return "MissingField";
    }
    if (!valid_amounts(hard, "spec.resourceQuota.hard", msg, msglen))
        return "InvalidQuantity";
    if (prices && !json_is_null(prices)) {
        if (!json_is_object(prices) || json_object_size(prices) > ADVPOL_MAX_PRICES) {
            snprintf(msg, msglen, "spec.prices must be a map of at most %d quantities",
                     ADVPOL_MAX_PRICES);
            return "InvalidPrice";
        }
        if (!valid_amounts(prices, "spec.prices", msg, msglen))
            return "InvalidPrice";
    }
    if (!json_string_value(json_object_get(ref, "name"))) {
        snprintf(msg, msglen, "spec.kubeConfigRef.name is missing");
        return "MissingField";
    }
    if (refns && ns && strcmp(refns, ns) != 0) {
        snprintf(msg, msglen,
                 "spec.kubeConfigRef must name a Secret of the Advertisement's own namespace");
        return "InvalidField";
    }
    if (rfc3339_parse(json_string_value(json_object_get(spec, "timestamp")), RFC3339_OFFSET, &ts) <
            0 ||
        rfc3339_parse(json_string_value(json_object_get(spec, "timeToLive")), RFC3339_OFFSET,
                      &ttl) < 0) {
        snprintf(msg, msglen, "spec.timestamp and spec.timeToLive must be RFC 3339 times");
        return "MissingField";
    }
    if (ttl <= now) {
        snprintf(msg, msglen, "spec.timeToLive (%s) is in the past",
                 json_string_value(json_object_get(spec, "timeToLive")));
        return "Expired";
    }
    return NULL;
}
