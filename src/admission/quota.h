/* admission/quota: what Kubernetes' own admission enforces in the namespaces a peer writes, behind
 * the agent's webhooks (docs/security.md, "The offer cannot be bypassed" and "What a provider
 * sends back").
 *
 *  - Each namespace the provider made for a consumer has a LimitRange ADM_LIMITRANGE_NAME whose
 *    container defaultRequest (cpu and memory) is given to every container that requests nothing,
 *    so that a pod without requests uses capacity like any other (the webhook's offer check sees
 *    the defaults: validating webhooks run after LimitRanger). The amounts come from ClusterConfig
 *    spec.offloadingConfig.defaultRequests {cpu, memory}; a missing or malformed value takes the
 *    default (ADM_DEFAULT_CPU, ADM_DEFAULT_MEMORY).
 *  - ... and a ResourceQuota ADM_QUOTA_OFFER_NAME whose hard limits are the consumer's offer (the
 *    Advertisement's resources as sent: cpu, memory, ephemeral-storage, hugepages-* and extended
 *    resources as requests.<name>, pods as pods; other names are left to the webhook) and object
 *    counts (ConfigMaps, Secrets, Services, EndpointSlices). The quota is per namespace and the
 *    offer per consumer: the webhook holds the sum over the consumer's namespaces, the quota is the
 *    backstop that no reservation race, webhook outage or forged review can get past.
 *  - (Tenant namespaces have a ResourceQuota of object counts of their own: peering/resources.h,
 *    peer_tenant_quota_hard.)
 *
 * Pure functions; objects are borrowed, results are new references. */
#ifndef CLIQO_ADMISSION_QUOTA_H
#define CLIQO_ADMISSION_QUOTA_H

#include <jansson.h>
#include <stdbool.h>

#define ADM_LIMITRANGE_NAME  "cliqo-defaults"
#define ADM_QUOTA_OFFER_NAME "cliqo-offer"
#define ADM_DEFAULT_CPU      "100m"
#define ADM_DEFAULT_MEMORY   "128Mi"

/* Object counts in a consumer namespace. */
#define ADM_QUOTA_CONFIGMAPS     "1000"
#define ADM_QUOTA_SECRETS        "1000"
#define ADM_QUOTA_SERVICES       "500"
#define ADM_QUOTA_ENDPOINTSLICES "2000"

/* The quota name of an offered resource ("cpu" -> "requests.cpu", "pods" -> "pods"), or NULL for
 * a name a ResourceQuota cannot hold as a request. buf of at least 256 bytes. */
const char *adm_quota_key(const char *resource, char *buf, size_t size);

/* spec.hard of a consumer namespace's ResourceQuota. offer (a map name -> quantity string, as in
 * ForeignCluster status.advertisement.sent.resources) may be NULL: no offer known, object counts
 * only. Entries that are not strings or do not parse are left out (*ret_bad, may be NULL, says
 * so). NULL when out of memory. */
json_t *adm_quota_consumer_hard(const json_t *offer, bool *ret_bad);

/* spec of the LimitRange of a consumer namespace, from the ClusterConfig (may be NULL). *ret_bad
 * (may be NULL) is set when a configured value was malformed (the default was used). */
json_t *adm_limitrange_spec(const json_t *clusterconfig, bool *ret_bad);

/* Two maps name -> quantity string hold the same names with equal values ("1" equals "1000m").
 * Values that do not parse compare as strings. */
bool adm_quantities_equal(const json_t *a, const json_t *b);

/* A LimitRange's spec equals the desired one (types and defaultRequest quantities by value; the
 * spec must have exactly the desired entries). */
bool adm_limitrange_equal(const json_t *desired, const json_t *observed);

/* A JSON merge patch turning observed into desired (a map of quantities): desired's entries, and a
 * null for each name observed has and desired does not. NULL when out of memory. */
json_t *adm_quantities_merge_patch(const json_t *desired, const json_t *observed);

#endif
