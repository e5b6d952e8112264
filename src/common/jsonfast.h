/* common/jsonfast: a fast path to the jansson tree of a JSON text, for the texts Kubernetes sends.
 *
 * jansson's own decoder reads its input one character at a time through a stream layer: on a pod
 * it spends about four fifths of its time there and one fifth building the tree (a 4 KB pod, CPU
 * time: json_loadb 76 us, json_deep_copy of the tree 24 us, jsf_load 15 us). jsf_load() builds the
 * same tree with jansson's constructors from a direct scan
 * of the text, and gives up (returns NULL) on anything it does not handle exactly as json_loadb()
 * with flags 0 does, so that its caller can fall back to json_loadb(), which then decides (and
 * gives its error message). What it handles: a top-level object or array; objects (a repeated key
 * replaces the earlier value, as jansson does), arrays, true, false, null; integers of up to 18
 * digits; strings of printable ASCII, valid UTF-8 (no overlong forms, surrogates or code points
 * above U+10FFFF) and the escapes \" \\ \/ \b \f \n \r \t \uXXXX (surrogate pairs included,
 * \u0000 excluded). What it leaves to jansson: real numbers (exponent or fraction) and longer
 * integers, and every malformed text. Nesting deeper than JSF_MAX_DEPTH gives up too.
 *
 * flags: 0, or JSON_REJECT_DUPLICATES, with which a repeated key in an object gives up too (jansson
 * then refuses the text, with its message); any other flag gives up at once.
 *
 * The caller bounds the text's cost first (jsonb_scan): jsf_load() allocates what jansson would.
 * Returns a new reference, or NULL (not handled, malformed, or out of memory). */
#ifndef CLIQO_COMMON_JSONFAST_H
#define CLIQO_COMMON_JSONFAST_H

#include <stddef.h>

#include <jansson.h>

#define JSF_MAX_DEPTH 2048 /* jansson's own limit */

json_t *jsf_load(const char *buf, size_t len, size_t flags);

#endif
