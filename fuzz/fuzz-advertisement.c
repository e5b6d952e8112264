/* libFuzzer harness for what the advertisement protocol reads from objects a peer (or an operator)
 * writes: an Advertisement's validation (src/advertisement/policy.c, with the RFC 3339 parser of
 * src/common/rfc3339.c, which fuzz-rfc3339.c covers on its own), the ClusterConfig's sharing
 * settings (config.c), the broker's offer (offersource.c) and the broadcaster's computation fed
 * arbitrary nodes and pods (share.c).
 *
 * The input, as the text of a broker's ConfigMap's data.resources, and the ConfigMap holding it
 * through the informer's transform, give the same verdict; an accepted map holds at most
 * SHR_MAX_RESOURCES resource names, unique, sorted, shorter than SHR_NAME_MAX, with amounts
 * >= 0, and a refused one says why on one line; with source Broker the choice offers exactly
 * that map or nothing (cpu, memory and pods at 0), never the computed share.
 *
 * The input is also a JSON document; when it parses:
 *   - advpol_validate never crashes, and when it refuses it says why (a non-empty message);
 *   - advcfg_read gives values in their documented ranges, whatever the input, and an offer
 *     source that is refused exactly when it says why;
 *   - read as a broker's ConfigMap, it follows the rules above;
 *   - fed as a node and as a pod (then deleted), the computation's state stays consistent: after
 * the deletes it equals an empty state (no availability, no usage) and an offer is never negative;
 *   - fed as a pod to a state that knows a node of the pod's nodeName, it gives the same result as
 *     its copy trimmed by shr_pod_transform (what the informer hands over) fed to a state that
 *     applies it at once (its stage ended: shr_flush), while the first state stages it until the
 *     comparison flushes it; and feeding it again (an update that changes nothing) changes
 *     nothing;
 *   - every string value found is given to rfc3339_parse and, when it parses, it was a
 *     well-formed timestamp (formatting the result again parses back to the same second).
 * A violated invariant aborts, which libFuzzer reports as a crash.
 *
 * The units are included rather than only linked so that they are compiled here with the fuzzer's
 * instrumentation; the libraries' copies are then never pulled from the archives. */
#include "../src/advertisement/config.c"
#include "../src/advertisement/offersource.c"
#include "../src/advertisement/policy.c"
#include "../src/offer/share.c"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "peering/objects.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok)
        abort();
}

static void strings(const json_t *j, int depth)
{
    const char *k;
    json_t *v;
    size_t i;

    if (depth > 8)
        return;
    if (json_is_string(j)) {
        int64_t t, t2;
        char buf[32];

        if (rfc3339_parse(json_string_value(j), RFC3339_OFFSET, &t) == 0 && t > -62135596800 &&
            t < 253402300800) {
            rfc3339_format(t, 0, 0, buf, sizeof(buf));
            check(rfc3339_parse(buf, RFC3339_OFFSET, &t2) == 0 && t2 == t);
        }
        return;
    }
    json_object_foreach((json_t *)j, k, v) strings(v, depth + 1);
    json_array_foreach(j, i, v) strings(v, depth + 1);
}

static void same_lists(const struct shr_list *a, const struct shr_list *b)
{
    check(a->n == b->n);
    for (size_t i = 0; i < a->n; i++)
        check(strcmp(a->items[i].name, b->items[i].name) == 0 &&
              a->items[i].value == b->items[i].value);
}

static void same_states(struct shr_state *a, struct shr_state *b, const char *origin)
{
    struct shr_list la, lb, ua, ub;
    struct shr_policy p = {.percent = 100};
    struct shr_stats sa, sb;

    shr_totals(a, &la, &ua);
    shr_totals(b, &lb, &ub);
    same_lists(&la, &lb);
    same_lists(&ua, &ub);
    check(shr_offer(a, origin, &p, &la) == 0 && shr_offer(b, origin, &p, &lb) == 0);
    same_lists(&la, &lb);
    shr_get_stats(a, &sa);
    shr_get_stats(b, &sb);
    check(sa.pods == sb.pods && sa.counted_pods == sb.counted_pods && sa.origins == sb.origins &&
          sa.nodes == sb.nodes && sa.counted_nodes == sb.counted_nodes);
}

/* The input as a broker's ConfigMap: the parser's rules, the transform changes no verdict, and
 * the choice offers the map or nothing. */
static void broker_offer(const json_t *cm)
{
    struct shr_list l, lt, computed = {.n = 1, .items = {{.name = "cpu", .value = 7}}};
    struct advsrc_offer o;
    char err[256], errt[256];
    json_t *t = json_deep_copy(cm);
    int r, rt;

    err[0] = '\0';
    r = advsrc_parse(cm, &l, err, sizeof(err));
    check(r == 0 || (r == -EINVAL && err[0] && !strchr(err, '\n')));
    if (r == 0) {
        check(l.n <= SHR_MAX_RESOURCES);
        for (size_t i = 0; i < l.n; i++) {
            check(strlen(l.items[i].name) < SHR_NAME_MAX && kname_label_key(l.items[i].name));
            check(l.items[i].value >= 0);
            check(i == 0 || strcmp(l.items[i - 1].name, l.items[i].name) < 0);
        }
    }
    if (t) {
        advsrc_transform(t, NULL);
        rt = advsrc_parse(t, &lt, errt, sizeof(errt));
        check(rt == r);
        if (r == 0)
            same_lists(&l, &lt);
        json_decref(t);
    }
    check(advsrc_choose(ADVCFG_OFFER_BROKER, 5, &computed, cm, &o, err, sizeof(err)) == 0);
    check(o.threshold == 0 && !o.node_details);
    if (r == 0 && l.n > 0) {
        check(o.from == ADVSRC_FROM_BROKER);
        same_lists(&l, &o.amounts);
    } else {
        check(o.amounts.n == 3);
        for (size_t i = 0; i < o.amounts.n; i++)
            check(o.amounts.items[i].value == 0);
    }
}

/* The raw input as data.resources (the API server's strings are UTF-8). */
static void broker_offer_text(const uint8_t *data, size_t size)
{
    json_t *cm = json_pack("{s:{s:s,s:s},s:{}}", "metadata", "name", "cliqo-broker-offer-c",
                           "namespace", "cliqo", "data");
    json_t *text = json_stringn((const char *)data, size);

    if (cm && text && json_object_set_new(json_object_get(cm, "data"), ADVSRC_KEY, text) == 0)
        broker_offer(cm);
    else
        json_decref(text);
    json_decref(cm);
}

/* The input as a pod, on a Ready node of its nodeName, against its trimmed copy. */
static void same_trimmed(const json_t *j)
{
    const char *node = json_string_value(json_object_get(json_object_get(j, "spec"), "nodeName"));
    const char *origin = json_string_value(json_object_get(
        json_object_get(json_object_get(j, "metadata"), "labels"), SHR_LABEL_ORIGIN));
    struct shr_state *a = NULL, *b = NULL;
    json_t *t = json_deep_copy(j), *n = NULL;
    int ra, rb;

    if (!t || shr_new(&a) < 0 || shr_new(&b) < 0 || shr_flush(b) < 0)
        goto out;
    if (node && *node) {
        n = json_pack("{s:{s:s},s:{s:{s:s,s:s,s:s},s:[{s:s,s:s}]}}", "metadata", "name", node,
                      "status", "allocatable", "cpu", "64", "memory", "256Gi", "pods", "110",
                      "conditions", "type", "Ready", "status", "True");
        if (!n || shr_node_upsert(a, n) < 0 || shr_node_upsert(b, n) < 0)
            goto out;
    }
    shr_pod_transform(t, NULL);
    ra = shr_pod_upsert(a, j);
    rb = shr_pod_upsert(b, t);
    if (ra == -ENOMEM || rb == -ENOMEM)
        goto out;
    check(ra == rb);
    same_states(a, b, origin);
    if (ra == 0) {
        check(shr_pod_upsert(a, j) == 0);
        same_states(a, b, origin);
    }
out:
    json_decref(n);
    json_decref(t);
    shr_free(a);
    shr_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *j = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
    struct adv_config c;
    struct shr_state *s = NULL;
    struct shr_list avail, used, offer;
    struct shr_policy p = {.percent = 37};
    const char *reason;
    char msg[256];

    broker_offer_text(data, size);
    if (!j)
        return 0;
    broker_offer(j);
    msg[0] = '\0';
    reason = advpol_validate(j, "p", 1767225600, msg, sizeof(msg));
    check(!reason || msg[0] != '\0');

    advcfg_read(j, &c);
    check(c.percent <= 100 && c.refresh_s >= 1 && c.ttl_s >= 2 && c.threshold <= 100);
    check(c.max_accept <= 1000000 && c.keepalive_retry_s >= 1 && c.keepalive_threshold >= 1);
    check(strlen(c.vk_image) < sizeof(c.vk_image));
    check(c.offer_source <= ADVCFG_OFFER_INVALID);
    check((c.offer_source == ADVCFG_OFFER_INVALID) == (c.error[0] != '\0'));
    {
        struct shr_list fixed;
        struct shr_policy pol;
        char sig[512];

        advcfg_policy_for(&c, "p", &pol, &fixed, sig, sizeof(sig));
        check(pol.percent <= 100);
    }
    advcfg_done(&c);

    if (shr_new(&s) == 0) {
        if (shr_node_upsert(s, j) == 0 && shr_pod_upsert(s, j) == 0) {
            check(shr_offer(s, "o", &p, &offer) == 0);
            for (size_t i = 0; i < offer.n; i++)
                check(offer.items[i].value >= 0);
            shr_pod_delete(
                s, json_string_value(json_object_get(json_object_get(j, "metadata"), "namespace")),
                json_string_value(json_object_get(json_object_get(j, "metadata"), "name")));
            shr_node_delete(
                s, json_string_value(json_object_get(json_object_get(j, "metadata"), "name")));
            shr_totals(s, &avail, &used);
            check(used.n == 0);
            for (size_t i = 0; i < avail.n; i++)
                check(avail.items[i].value == 0);
        }
        shr_free(s);
    }
    same_trimmed(j);
    strings(j, 0);
    json_decref(j);
    return 0;
}
