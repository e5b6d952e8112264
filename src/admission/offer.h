/* admission/offer: the arithmetic of the offer enforcement (docs/offloading.md, "Admission"), the
 * provider's check that a consumer's pods stay within what its Advertisement offered.
 *
 * Amounts are those of the broadcaster (offer/share.h): per resource name, in the
 * resource's smallest unit (cpu in millicores, the rest in whole units), quantities read from
 * objects rounded up to that unit. A pod's effective request is the scheduler's rule, as the
 * broadcaster computes it: per resource, max(sum of the containers' requests + sum of the sidecars'
 * requests, the largest need of an init container) + spec.overhead, where a sidecar is an init
 * container with restartPolicy Always and the need of an init container is its request plus those
 * of the sidecars started before it (a sidecar's: the sum of the sidecars up to it); every pod also
 * takes one `pods`, whatever it requests (a pod without requests counts toward `pods` only). Sums
 * saturate at INT64_MAX.
 *
 * The check: for every resource the new pod requests (pods included), in name order, used + pod
 * must not exceed what was offered (a resource the offer does not list was offered 0). The first
 * resource that does not fit gives the refusal, one line:
 *     offer exceeded: cpu 2500m requested + 500m > 2800m offered to cluster-1
 * where 2500m is what the consumer's pods already request on this cluster.
 *
 * Pure functions, no state. Objects are borrowed. */
#ifndef CLIQO_ADMISSION_OFFER_H
#define CLIQO_ADMISSION_OFFER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "offer/share.h"

/* The effective requests of pod (a v1 Pod, or one trimmed by shr_pod_transform), `pods` = 1
 * included. Returns 0, -EINVAL (a quantity that does not parse or is negative: the reason in err),
 * or -ENOSPC (more than SHR_MAX_RESOURCES names). */
int adm_offer_pod_requests(const json_t *pod, struct shr_list *ret, char *err, size_t errlen);

/* True while a pod holds resources: its phase is neither Succeeded nor Failed. */
bool adm_offer_pod_live(const json_t *pod);

/* a += b per name (saturating). Returns 0 or -ENOSPC. */
int adm_offer_add(struct shr_list *a, const struct shr_list *b);

/* a -= b per name, never below 0; names a does not have are left out. */
void adm_offer_sub(struct shr_list *a, const struct shr_list *b);

/* A map of quantities (e.g. resourceQuota.hard, or status.advertisement.sent.resources) into a
 * list; entries that do not parse are skipped and counted in *ret_bad (may be NULL). */
int adm_offer_from_quantities(const json_t *q, struct shr_list *ret, size_t *ret_bad);

/* 0 when used + pod fits the offer, else -EDQUOT with the refusal message in msg (consumer names
 * the consumer in it). figures false: the message names the resource but no amount, for a caller
 * that cannot tell who asks (the consumer's usage and its offer are not everyone's to read):
 *     offer exceeded: cpu does not fit the offer to cluster-1 */
int adm_offer_check(const struct shr_list *used, const struct shr_list *pod,
                    const struct shr_list *offer, const char *consumer, bool figures, char *msg,
                    size_t len);

/* ---- running totals ------------------------------------------------------------------------
 *
 * The effective requests of the live pods of each namespace, kept up to date by the caller's pod
 * informer (add the new object, remove the old one, on every event), so that the offer check costs
 * the same whatever the number of pods: it sums the totals of the consumer's few namespaces. A
 * namespace's entry exists while it has a counted pod. Removing a pod that was never added (or a
 * different version of it: the caller removes exactly what it added) would corrupt the totals;
 * amounts never go below 0. At most ADM_USAGE_MAX_NAMESPACES namespaces. */
#define ADM_USAGE_MAX_NAMESPACES (1u << 17)

struct adm_usage;

int adm_usage_new(struct adm_usage **ret);
/* NULL-safe. */
void adm_usage_free(struct adm_usage *u);
/* Counts (sign 1) or uncounts (sign -1) pod, a v1 Pod or one trimmed by shr_pod_transform, in its
 * namespace; nothing for a pod that is not live or has no namespace. Returns 0, -EINVAL (requests
 * that do not parse), -ENOSPC (too many names or namespaces), -ENOMEM. */
int adm_usage_pod(struct adm_usage *u, const json_t *pod, int sign);
/* used += the totals of namespace ns (nothing when it has none). Returns 0 or -ENOSPC. */
int adm_usage_add_ns(const struct adm_usage *u, const char *ns, struct shr_list *used);
/* How many namespaces and pods are counted. */
size_t adm_usage_namespaces(const struct adm_usage *u);
size_t adm_usage_pods(const struct adm_usage *u);

#endif
