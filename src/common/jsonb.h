/* common/jsonb: bounded JSON decoding of network input.
 *
 * jansson allocates a json_t per value, a hashtable slot per object member and a growing array per
 * array: a body of small elements ("[0,0,0,...]", "[{},{},...]") costs 20 to 80 times its size in
 * heap (a 3 MiB body of them, about 224 MiB). jsonb_load() first scans the text in one linear,
 * string-aware pass that counts the values (object keys included), the nesting depth and the heap
 * jansson will need for them, and refuses the text with -E2BIG before jansson allocates anything
 * when it is over the caller's budget; only then does it decode: with flags 0 through jsf_load()
 * (common/jsonfast.h, the same tree about five times faster, or nothing), else or when that gives
 * up through json_loadb(). The scan does not validate: jansson still does, so malformed text is
 * -EINVAL.
 *
 * Cost model (bytes of heap per value, measured with glibc's allocator in tests/unit/test-jsonb.c,
 * which checks that the estimate is never below the real heap): a number, true, false or null
 * JSONB_COST_SCALAR, a string or object key JSONB_COST_STRING (plus its text, which the budget's
 * ratio covers), an array JSONB_COST_ARRAY, an object JSONB_COST_OBJECT.
 *
 * Budgets: every decode site passes the heap it allows for a message of its kind, usually
 * jsonb_budget(len, ratio): ratio * len + JSONB_BASE_COST. With JSONB_RATIO (16) no message costs
 * more than 16 times its size plus 16 KiB. A list of small pod-like objects (short names, booleans,
 * small numbers: a dense case for Kubernetes text) measures 11.6 times its size in test-jsonb.c;
 * what this refuses is text made of tinier values (arrays of one-digit numbers, of empty objects).
 *
 * Ownership: `buf` is borrowed; *ret is a new reference for the caller (json_decref). */
#ifndef CLIQO_COMMON_JSONB_H
#define CLIQO_COMMON_JSONB_H

#include <stddef.h>

#include <jansson.h>

#define JSONB_COST_SCALAR 48
#define JSONB_COST_STRING 96
#define JSONB_COST_ARRAY  144
#define JSONB_COST_OBJECT 240
#define JSONB_BASE_COST   (16u << 10)
#define JSONB_RATIO       16
/* Kubernetes objects (API responses, watch events, AdmissionReviews) must never be refused: a
 * realistic pod measures 11.9 times its size in heap and its managedFields alone 16.5 times
 * (tests/data/jsonb/pod-managed-fields.json), so their budget is twice the default; their size
 * caps (3 MiB per object) keep the product bounded. */
#define JSONB_RATIO_KUBE 32
#define JSONB_MAX_DEPTH  64 /* Kubernetes objects nest to about 20 */

/* What the scan found: values including object keys, their estimated heap, the deepest nesting. */
struct jsonb_count {
    size_t elements;
    size_t cost;
    unsigned depth;
};

/* ratio * len + JSONB_BASE_COST (ratio 0: JSONB_RATIO), saturating. */
size_t jsonb_budget(size_t len, unsigned ratio);

/* Scans buf[0..len) and stops as soon as max_cost or max_depth is exceeded. Returns 0 with *ret
 * filled (when not NULL), or -E2BIG (over budget; *ret then holds the counts so far). */
int jsonb_scan(const char *buf, size_t len, size_t max_cost, unsigned max_depth,
               struct jsonb_count *ret);

/* Decodes buf[0..len) (need not be NUL-terminated) with json_loadb(flags) after jsonb_scan().
 * max_cost 0: jsonb_budget(len, 0); max_depth 0: JSONB_MAX_DEPTH. Returns 0 with *ret set, -E2BIG
 * over budget, -EINVAL (not JSON; jansson's message in err) or -ENOMEM. `err` (may be NULL) says
 * why on failure. */
int jsonb_load(const void *buf, size_t len, size_t max_cost, unsigned max_depth, size_t flags,
               json_t **ret, json_error_t *err);

#endif
