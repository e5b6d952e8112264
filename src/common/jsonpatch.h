/* common/jsonpatch: JSON patches (RFC 6902) built as a JSON array of operations, whose paths are
 * JSON pointers (RFC 6901) made with jpatch_pointer, which escapes '~' and '/'. jpatch_apply
 * applies add, replace and remove to a document (tests and fuzzing use it to check that a patch
 * does what it says). Mutating webhooks answer with such patches; the agent's controllers send
 * them. Pure. */
#ifndef CLIQO_COMMON_JSONPATCH_H
#define CLIQO_COMMON_JSONPATCH_H

#include <jansson.h>
#include <stddef.h>

#define JPATCH_POINTER_MAX 1024 /* bytes of a path segment jpatch_apply decodes */

/* A JSON pointer from segments (NULL-terminated), each escaped: jpatch_pointer(buf, size, "spec",
 * "tolerations", "-", NULL) gives "/spec/tolerations/-". Returns 0 or -ENAMETOOLONG. */
int jpatch_pointer(char *buf, size_t size, ...) __attribute__((sentinel));
/* Appends {"op": op, "path": path[, "value": value]} to the array patch; value is borrowed (a
 * reference is taken). Returns 0 or -ENOMEM / -EINVAL. */
int jpatch_op(json_t *patch, const char *op, const char *path, json_t *value);

/* Applies a patch (add, replace, remove; the others are refused) to doc in place. Returns 0 or
 * -EINVAL with a reason (a path that does not exist, an index out of range, a bad op). */
int jpatch_apply(json_t *doc, const json_t *patch, char *err, size_t errlen);

#endif
