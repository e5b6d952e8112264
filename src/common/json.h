/* common/json: borrowed strings out of jansson objects.
 *
 * Every getter takes an object that may be NULL or not an object at all (then there is no member)
 * and returns a string borrowed from it: valid while the object holds that member, never to be
 * freed. A member that is missing or is not a JSON string reads as NULL (or as "" for
 * jsn_str_or_empty); an empty string is returned as "". The getters allocate nothing and never
 * fail; jsn_merge_patch_removals, the one writer, says below what it does. */
#ifndef CLIQO_COMMON_JSON_H
#define CLIQO_COMMON_JSON_H

#include <jansson.h>

/* obj[key] when it is a string, else NULL. */
const char *jsn_str(const json_t *obj, const char *key);

/* obj[key] when it is a string, else "" (for comparisons and messages that take no NULL). */
const char *jsn_str_or_empty(const json_t *obj, const char *key);

/* The string at a path of object keys, ended by NULL: jsn_str_at(pod, "status", "podIP", NULL) is
 * pod.status.podIP, or NULL when a step is missing or not an object, or the end is not a string.
 * With no key at all, obj itself when it is a string. */
const char *jsn_str_at(const json_t *obj, ...) __attribute__((sentinel));

/* metadata.labels[key], resp. metadata.annotations[key], of a Kubernetes object, or NULL. */
const char *jsn_label(const json_t *obj, const char *key);
const char *jsn_annotation(const json_t *obj, const char *key);

/* Makes want, in place, a JSON merge patch (RFC 7386) that turns have into want: a null is added
 * for every member have holds and want lacks, at the top and inside every member where both hold
 * an object (a merge patch keeps what it does not name, at every depth). Members of want that are
 * not objects, or whose counterpart in have is not one, are left as they are: the patch replaces
 * them whole. The depth followed is want's own. have NULL or not an object: nothing to remove.
 * Returns 0, -EINVAL (want not an object) or -ENOMEM. */
int jsn_merge_patch_removals(json_t *want, const json_t *have);

#endif
