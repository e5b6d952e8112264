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

/* ---- which namespaces may be offloaded, and claimed on a provider (docs/security.md,
 * "Namespaces") ---------------------------------------------------------------------------------
 */
#define NSOF_MAX_NS_PATTERNS 64

/* True for a name that is not a DNS label, agent_ns (may be NULL), default, kube-*, cliqo,
 * cliqo-* (tenant namespaces among them), liqo, liqo-*, openshift, openshift-* and a few
 * well-known system add-ons' namespaces (local-path-storage, calico-system, calico-apiserver,
 * tigera-operator, gatekeeper-system, cattle-system). */
bool nsof_reserved(const char *name, const char *agent_ns);

/* Home: may namespace ns be offloaded? tenant: it is labelled a tenant namespace. Returns 0, or
 * -EPERM (reserved, tenant) / -EINVAL (not a DNS label) with a one-line reason in err. */
int nsof_home_offloadable(const char *ns, const char *agent_ns, bool tenant, char *err,
                          size_t errlen);

/* Provider: is remote what nsof_remote_namespace gives for local with DefaultName and consumer
 * home_id, whatever the consumer's cluster name: it keeps the start of local and ends with
 * "-<6 hex of sha256(home_id)>", a suffix only that consumer's names have. */
bool nsof_default_shaped(const char *local, const char *remote, const char *home_id);

/* Provider: may consumer home_id claim namespace remote for its namespace local? Never a reserved
 * name (-EPERM); then its DefaultName shape, or a match of one of patterns (a JSON array of
 * strings where '*' matches any run of characters: ClusterConfig
 * spec.offloadingConfig.allowedRemoteNamespaces, may be NULL; at most NSOF_MAX_NS_PATTERNS read);
 * else -EACCES. The reason is in err. */
int nsof_remote_allowed(const char *local, const char *remote, const char *home_id,
                        const json_t *patterns, const char *agent_ns, char *err, size_t errlen);

const char *nsof_mapping_name(enum nsof_mapping m);
const char *nsof_pods_name(enum nsof_pods p);

/* ---- status (nsof.c) -------------------------------------------------------------------------
 *
 * The phase of a NamespaceOffloading (docs/offloading.md, "Which namespaces go where"). Each
 * virtual kubelet writes its own key of status.remoteNamespacesConditions: a list of conditions
 * with types OffloadingRequired and Ready. One provider's state is read from its Ready condition:
 * True is ready; False is failed, except with reason Terminating or Pending (the provider is still
 * working on it); Unknown, a missing condition or a missing key is in progress. */
enum nsof_phase {
    NSOF_PHASE_READY,
    NSOF_PHASE_NO_CLUSTER_SELECTED,
    NSOF_PHASE_IN_PROGRESS,
    NSOF_PHASE_SOME_FAILED,
    NSOF_PHASE_ALL_FAILED,
    NSOF_PHASE_TERMINATING,
    NSOF_PHASE_INVALID,
};
enum nsof_cluster_state {
    NSOF_CLUSTER_IN_PROGRESS,
    NSOF_CLUSTER_READY,
    NSOF_CLUSTER_FAILED,
};
#define NSOF_FINALIZER "offloading.cliqo.io/namespace"

/* The state of one provider from its conditions (a JSON array, NULL when the key is absent). */
enum nsof_cluster_state nsof_cluster_state(const json_t *conditions);
/* The phase: Invalid (invalid spec) first, then Terminating (being deleted), NoClusterSelected (no
 * virtual node selected), and from the selected providers' states: all ready -> Ready, all failed
 * -> AllFailed, some failed -> SomeFailed, else InProgress. conds is
 * status.remoteNamespacesConditions (may be NULL); selected the cluster IDs of the selected
 * virtual nodes. */
enum nsof_phase nsof_phase_of(bool invalid, bool terminating, const json_t *conds,
                              const char *const *selected, size_t nselected);
const char *nsof_phase_name(enum nsof_phase p);

/* ---- the pod webhook's patch (nsof_patch.c) --------------------------------------------------
 *
 * What the pod webhook changes on a pod created in an offloaded namespace, as an RFC 6902 patch of
 * "add" and "replace" operations (docs/offloading.md, "Admission"):
 *   Local: nothing. DaemonSet pods (controller owner of kind DaemonSet): nothing.
 *   Remote, LocalAndRemote:
 *     - the toleration {virtual-node.liqo.io/not-allowed, Exists, NoExecute}, unless a toleration
 *       of the pod already tolerates that taint without a time limit;
 *     - for node.kubernetes.io/unreachable and node.kubernetes.io/not-ready (NoExecute), the grace
 *       period: nothing when a toleration of the pod already tolerates the taint without a time
 *       limit; otherwise the pod's tolerations of exactly that key with effect NoExecute (or none)
 *       get tolerationSeconds = grace when they are the DefaultTolerationSeconds plugin's shape
 *       ({key, Exists, NoExecute, 300}: the API server adds it before webhooks run, so it says
 *       nothing about the pod's wishes) or shorter than grace (longer ones are kept); with no such
 *       toleration one is added. Tolerations are never duplicated and never removed.
 *     - the required node affinity: the pod's own terms (P, empty terms dropped since they match
 *       nothing) crossed with the strategy's terms (S): each result term is a union of one term
 *       of P and one of S (expressions already in the P term are not repeated). No P: S itself.
 *       Remote: S = the selector's terms, each ANDed with liqo.io/type In [virtual-node] (no
 *       selector: that expression alone). LocalAndRemote: S = the selector's terms (no selector:
 *       liqo.io/type In [virtual-node]) plus the term liqo.io/type NotIn [virtual-node].
 *       nodeSelector, preferred terms and pod (anti-)affinity are untouched.
 * The pod's own tolerations and terms are kept: tolerations are appended, the terms replaced by
 * their crossed form (which contains them). One exception: a pod labelled
 * virtualkubelet.liqo.io/origin (offloaded here by a consumer's virtual kubelet) loses from its
 * terms the expression liqo.io/type NotIn [virtual-node] that the virtual kubelet adds so that a
 * provider runs what it receives on its own nodes: this cluster's NamespaceOffloading (a broker's
 * orchestrator writes it) sends such pods onward, and excludes the origin itself. */
#define NSOF_VNODE_TAINT                "virtual-node.liqo.io/not-allowed"
#define NSOF_LABEL_ORIGIN               "virtualkubelet.liqo.io/origin"
#define NSOF_TAINT_UNREACHABLE          "node.kubernetes.io/unreachable"
#define NSOF_TAINT_NOT_READY            "node.kubernetes.io/not-ready"
#define NSOF_DEFAULT_TOLERATION_SECONDS 300  /* kube-apiserver's DefaultTolerationSeconds */
#define NSOF_MAX_POD_TERMS              256  /* crossed terms of one pod */
#define NSOF_MAX_POD_REQUIREMENTS       4096 /* their requirements, all terms together */
#define NSOF_MAX_TOLERATIONS            1024
/* Crossed terms that hold all of another's requirements are dropped only in lists of at most this
 * many terms, of at most this many requirements each (nsof_patch.c, drop_subsumed). */
#define NSOF_SUBSUME_MAX 16

/* True when the pod's controller owner is a DaemonSet. */
bool nsof_pod_is_daemonset(const json_t *pod);
/* The patch for pod (a v1 Pod) under strategy pods with the selector (NULL: none; as
 * struct nsof_spec.selector) and grace seconds (>= 0). *ret is a new JSON array (possibly empty).
 * Returns 0, -EINVAL (the pod is malformed: a reason in err) or -E2BIG (the crossed terms would be
 * more than NSOF_MAX_POD_TERMS, or hold more than NSOF_MAX_POD_REQUIREMENTS requirements), or
 * -ENOMEM. */
int nsof_pod_patch(const json_t *pod, enum nsof_pods pods, const json_t *selector, long long grace,
                   json_t **ret, char *err, size_t errlen);

/* ---- the CLI's selector syntax (nsof_text.c) -------------------------------------------------
 *
 * `cliqoctl offload --selector` takes a label-selector string and makes it one NodeSelector term:
 *   key=value, key==value -> key In [value];   key!=value -> key NotIn [value]
 *   key in (a,b)          -> key In [a,b];     key notin (a,b) -> key NotIn [a,b]
 *   key                   -> key Exists;       !key -> key DoesNotExist
 *   key>N, key<N          -> key Gt [N], key Lt [N]
 * Requirements are separated by commas (outside parentheses); spaces around tokens are ignored.
 * The result is checked with nsof_selector_validate. An empty or blank text is no selector (*ret
 * NULL: every virtual node). At most NSOF_TEXT_MAX bytes. */
#define NSOF_TEXT_MAX 4096

/* Returns 0 with *ret a new {"nodeSelectorTerms":[{"matchExpressions":[...]}]} (or NULL for an
 * empty text), or -EINVAL with a one-line reason naming the position. */
int nsof_selector_from_text(const char *text, json_t **ret, char *err, size_t errlen);

#endif
