/* mapxlate: the pure part of a virtual kubelet's namespace mapping (docs/offloading.md, "Each
 * virtual kubelet", steps 1 and 2): which namespaces a NamespaceOffloading asks of this provider,
 * how much of the provider's NamespaceMap status is believed, the conditions mirrored into the
 * NamespaceOffloading, and the patch of the map's spec.desiredMapping. No I/O; the loop side is
 * nsmapping.c. Inputs borrowed, returned json_t are new references. */
#ifndef CLIQO_VIRTUALKUBELET_MAPXLATE_H
#define CLIQO_VIRTUALKUBELET_MAPXLATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define VKM_MAX_MESSAGE 1024
#define VKM_MAX_REASON  128

/* Whether a NamespaceOffloading (nsof) asks for namespace offloading on this virtual node: it is
 * named "offloading", not being deleted, its spec valid, its namespace not reserved
 * (nsof_home_offloadable), and its clusterSelector matches the node
 * (name, labels). Returns 1 with the remote namespace name in remote (size >= 64), 0 when it does
 * not, or -EINVAL when it is invalid (an error in err). */
int vkm_nsof_wants(const json_t *nsof, const char *node_name, const json_t *node_labels,
                   const char *home_name, const char *home_id, char *remote, size_t size, char *err,
                   size_t errlen);

/* What the provider says of local namespace `local` (status.currentMapping[local]), believed only
 * for the remote name we asked for. */
enum vkm_phase {
    VKM_NONE,        /* no entry (yet) */
    VKM_ACCEPTED,    /* created and bound: pods may go there */
    VKM_REFUSED,     /* Refused or CreationFailed */
    VKM_TERMINATING, /* being deleted */
    VKM_MISMATCH,    /* an entry for another remote name, or malformed */
};
/* ret_reason and ret_message (may be NULL) point into current_mapping or to static text. */
enum vkm_phase vkm_entry(const json_t *current_mapping, const char *local, const char *want_remote,
                         const char **ret_reason, const char **ret_message);
const char *vkm_phase_name(enum vkm_phase p);

/* The conditions for remoteNamespacesConditions[<provider>]: OffloadingRequired (True while the
 * namespace is selected) and Ready (True when Accepted). lastTransitionTime is kept from old (the
 * current list) for a condition whose status did not change, else now. */
json_t *vkm_conditions(bool wanted, enum vkm_phase phase, const char *remote, const char *reason,
                       const char *message, const json_t *old, const char *now);
/* Whether two condition lists say the same (type, status, reason, message; times ignored). */
bool vkm_conditions_equal(const json_t *a, const json_t *b);

/* The merge patch {"spec":{"desiredMapping":{...}}} that turns `have` (the map's
 * spec.desiredMapping, may be NULL) into `want` (local -> remote), or NULL when equal. */
json_t *vkm_desired_patch(const json_t *have, const json_t *want);

#endif
