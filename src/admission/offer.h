/* admission/offer: the arithmetic of the offer enforcement (docs/offloading.md, "Admission"), the
 * provider's check that a consumer's pods stay within what its Advertisement offered.
 *
 * Amounts are those of the broadcaster (advertisement/share.h): per resource name, in the
 * resource's smallest unit (cpu in millicores, the rest in whole units), quantities read from
 * objects rounded up to that unit. A pod's effective request is the scheduler's rule, as the
 * broadcaster computes it: per resource, max(sum of the containers' requests, largest init
 * container's request) + spec.overhead; every pod also takes one `pods`, whatever it requests (a
 * pod without requests counts toward `pods` only). Sums saturate at INT64_MAX.
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

#include "advertisement/share.h"

/* The effective requests of pod (a v1 Pod, or one trimmed by shr_pod_transform), `pods` = 1
 * included. Returns 0, -EINVAL (a quantity that does not parse or is negative: the reason in err),
 * or -ENOSPC (more than SHR_MAX_RESOURCES names). */
int adm_offer_pod_requests(const json_t *pod, struct shr_list *ret, char *err, size_t errlen);

/* True while a pod holds resources: its phase is neither Succeeded nor Failed. */
bool adm_offer_pod_live(const json_t *pod);

/* a += b per name (saturating). Returns 0 or -ENOSPC. */
int adm_offer_add(struct shr_list *a, const struct shr_list *b);

/* A map of quantities (e.g. resourceQuota.hard, or status.advertisement.sent.resources) into a
 * list; entries that do not parse are skipped and counted in *ret_bad (may be NULL). */
int adm_offer_from_quantities(const json_t *q, struct shr_list *ret, size_t *ret_bad);

/* 0 when used + pod fits the offer, else -EDQUOT with the refusal message in msg (consumer names
 * the consumer in it). */
int adm_offer_check(const struct shr_list *used, const struct shr_list *pod,
                    const struct shr_list *offer, const char *consumer, char *msg, size_t len);

#endif
