/* yj: YAML manifests to JSON, for the CLI's install/apply paths and anything else that reads
 * Kubernetes YAML.
 *
 * yj_load_all() reads a stream of YAML documents ("---" separated) and returns a JSON array with
 * one value per non-empty document. Scalars follow the YAML 1.2 core schema, as Kubernetes
 * manifests are written: plain true/false, null/~/empty, decimal, 0x and 0o integers and floats
 * are typed; everything else (including yes/no/on/off, YAML 1.1's booleans) and every quoted
 * scalar is a string; the tags !!str, !!int, !!float, !!bool and !!null are honoured, others are
 * refused. Mapping keys must be scalars and unique. Anchors and aliases work; the expansion of
 * aliases counts against the size budget, so "billion laughs" documents are refused, as are
 * documents nested deeper than YJ_MAX_DEPTH. Values JSON cannot hold (.inf, .nan, integers out of
 * the int64 range) are errors. Errors name the origin, the line and the column. */
#ifndef CLIQO_KUBE_YAMLJSON_H
#define CLIQO_KUBE_YAMLJSON_H

#include <jansson.h>
#include <stddef.h>

#define YJ_MAX_INPUT (16u << 20) /* bytes of YAML */
#define YJ_MAX_DEPTH 64
#define YJ_MAX_NODES 1000000u /* values produced, aliases expanded */

/* origin names the input in errors (a file name, "<stdin>"). *ret is a new JSON array. */
int yj_load_all(const char *buf, size_t len, const char *origin, json_t **ret, char *err,
                size_t errlen);

#endif
