/* admission/placement: the provider's check that a consumer's pod stays within the offer's
 * placement (docs/security.md, "Placement"): a consumer gets capacity, not a say in which of the
 * provider's nodes, priorities or runtimes its pods use.
 *
 * A pod created in a consumer's namespace is refused (one line naming the field) when it carries
 *   - spec.nodeName, a nodeSelector on kubernetes.io/hostname, or a node-affinity term (required
 *     or preferred) on kubernetes.io/hostname (matchExpressions) or metadata.name (matchFields),
 *     unless placement.allowNodeNames is true;
 *   - a toleration whose key is not cliqo's own taint (virtual-node.liqo.io/not-allowed) nor
 *     node.kubernetes.io/not-ready or unreachable (the API server's DefaultTolerationSeconds adds
 *     those to every pod), unless its key is in placement.allowedTolerations; a toleration without
 *     a key (it tolerates every taint) only when that list holds "*";
 *   - a priorityClassName not in placement.allowedPriorityClasses (a provider with a globalDefault
 *     PriorityClass lists it there: the API server sets it on pods without one);
 *   - a runtimeClassName not in placement.allowedRuntimeClasses.
 * `placement` is spec.offloadingConfig.placement of the provider's ClusterConfig (NULL: nothing
 * allowed). Lists are read up to ADM_PLACEMENT_MAX_NAMES entries; anything that is not a string in
 * them allows nothing.
 *
 * Pure, no state. Objects are borrowed. */
#ifndef CLIQO_ADMISSION_PLACEMENT_H
#define CLIQO_ADMISSION_PLACEMENT_H

#include <jansson.h>
#include <stddef.h>

#define ADM_PLACEMENT_MAX_NAMES 64
/* Bounds on what a pod may list before the check gives up (the API server's own are higher). */
#define ADM_PLACEMENT_MAX_ITEMS 256

/* 0 when pod (a v1 Pod) stays within placement, else -EPERM with the refusal in msg, e.g.
 *   spec.priorityClassName "system-node-critical" is not allowed on this provider (allowed:
 *   ClusterConfig spec.offloadingConfig.placement.allowedPriorityClasses) */
int adm_placement_check(const json_t *pod, const json_t *placement, char *msg, size_t len);

#endif
