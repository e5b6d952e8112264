/* nsof: NamespaceOffloading, the pure part (docs/offloading.md, "Which namespaces go where").
 *
 * Shared by the `offloading` module (status, the namespace label), the pod webhook (which strategy
 * applies) and every virtual kubelet (does its node match, what is the remote namespace's name).
 * No event loop, no I/O. Everything here reads objects a user wrote: bounded and validated. */
#ifndef CLIQO_OFFLOADING_NSOF_H
#define CLIQO_OFFLOADING_NSOF_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define NSOF_GROUP_VERSION "offloading.liqo.io/v1alpha1"
#define NSOF_KIND          "NamespaceOffloading"
#define NSOF_NAME          "offloading" /* the one per namespace */
/* The namespace label of offloaded namespaces (the webhook's namespaceSelector). */
#define NSOF_LABEL_SCHEDULING "liqo.io/scheduling-enabled"
/* The virtual nodes' label (docs/advertisement.md, "The node"). */
#define NSOF_VNODE_LABEL "liqo.io/type"
#define NSOF_VNODE_VALUE "virtual-node"

/* Bounds on a clusterSelector (a core NodeSelector). */
#define NSOF_MAX_TERMS       32
#define NSOF_MAX_EXPRESSIONS 32
#define NSOF_MAX_VALUES      64

#define NSOF_NS_MAX 63 /* a namespace name */

enum nsof_mapping {
    NSOF_MAP_DEFAULT_NAME,      /* <ns>-<home cluster name>-<6 hex of sha256(home ID)> */
    NSOF_MAP_ENFORCE_SAME_NAME, /* <ns> */
};

enum nsof_pods {
    NSOF_PODS_LOCAL_AND_REMOTE, /* the default */
    NSOF_PODS_LOCAL,
    NSOF_PODS_REMOTE,
};

struct nsof_spec {
    enum nsof_mapping mapping;
    enum nsof_pods pods;
    /* spec.clusterSelector (borrowed from the object), or NULL when absent or without terms: then
     * every virtual node is selected. */
    const json_t *selector;
};

/* Reads and validates spec (obj is the whole NamespaceOffloading). Absent fields take their
 * defaults. Returns 0, or -EINVAL with a one-line reason in err (an unknown strategy, an invalid
 * selector: the reason names the term and expression). */
int nsof_spec_parse(const json_t *obj, struct nsof_spec *ret, char *err, size_t errlen);

/* Validates a NodeSelector ({"nodeSelectorTerms": [{"matchExpressions": [...], "matchFields":
 * [...]}]}): operators In, NotIn (values required), Exists, DoesNotExist (no values), Gt, Lt (one
 * integer); keys are qualified label names (matchFields: metadata.name only); the bounds above.
 * NULL is valid. Returns 0 or -EINVAL with a reason. */
int nsof_selector_validate(const json_t *sel, char *err, size_t errlen);

/* Does a node (its name and metadata.labels, NULL for none) match? Terms are ORed, a term's
 * expressions ANDed, a term without expressions matches nothing (as Kubernetes). NULL selector:
 * the default, liqo.io/type In [virtual-node]. An invalid selector matches nothing. */
bool nsof_selector_match(const json_t *sel, const char *node_name, const json_t *labels);

/* The namespace on the provider for home namespace ns. DefaultName: "<ns>-<name>-<hash>", where
 * name is the home cluster's name made a DNS label (lowercase, other characters to '-', at most 20
 * characters) and hash the first 6 hex digits of sha256(home_id); when the whole would pass 63
 * characters, ns is cut (trailing '-' removed). EnforceSameName: ns. Returns 0, or -EINVAL (ns not
 * a DNS label, home_id empty) or -EIO. size >= NSOF_NS_MAX + 1. */
int nsof_remote_namespace(const char *ns, enum nsof_mapping m, const char *home_name,
                          const char *home_id, char *buf, size_t size);

const char *nsof_mapping_name(enum nsof_mapping m);
const char *nsof_pods_name(enum nsof_pods p);

#endif
