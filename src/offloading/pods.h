/* pods: the pods reflector of a virtual kubelet (docs/offloading.md, "Pods"): home pods bound to
 * the virtual node run as pods of the same name in the provider's namespaces, their status comes
 * back, deletions go both ways, the provider's Events about them are forwarded.
 *
 * Informers: home pods bound to the node (local, field selector spec.nodeName!= and the informer's
 * keep filter on <node>: see home_keep in pods.c; indexed by
 * namespace, transform vkp_home_transform); per mapped namespace, remote pods (the unit's PU_VK
 * client, label selector origin=<home>) and remote Events about pods (involvedObject.kind=Pod). One
 * work queue keyed by "<home ns>/<name>": every informer event enqueues a key, a reconcile reads
 * the caches, asks vkp_decide what to do and does that one thing, then the next event or a requeue
 * carries on. Nothing is persisted: after a restart the informers' first lists rebuild everything
 * (names and home-uid labels pair the pods).
 *
 * Bounds: VK_PODS_MAX home pods with per-pod state, VK_PODS_CONCURRENCY keys in flight (each makes
 * at most one request; the clients' token buckets pace them), of which VK_PODS_CREATES creations
 * (a pod to create past them waits in a FIFO of its own, out of the queue, so that the provider's
 * slow creations never hold back the fast status writes home), forwarded Events
 * VK_PODS_EVENT_QPS per reflector and a few per pod (the rest are dropped and counted).
 *
 * It implements struct vk_reflector_ops (reflector.h) plus what only pods have: the provider's
 * reachability (set by the keepalive), whether the pod-CIDR remapping is pending, the state of the
 * namespace mapping, counts and evictions for the namespace mapping and the teardown, and the
 * logs/exec resolver. Single-threaded, on the loop.
 */
#ifndef CLIQO_OFFLOADING_PODS_H
#define CLIQO_OFFLOADING_PODS_H

#include <stdbool.h>
#include <stddef.h>

#include "metrics/metrics.h"
#include "kube/api.h"
#include "kubeletapi/kubeletapi.h"
#include "offloading/reflector.h"

#define VK_PODS_MAX         20000 /* home pods with per-pod state */
#define VK_PODS_CONCURRENCY 128
#define VK_PODS_CREATES     96 /* of them, creations on the provider */
#define VK_PODS_EVENT_QPS   20
#define VK_PODS_EVENT_BURST 100

extern const struct vk_reflector_ops vk_reflect_pods;

/* What the pods reflectors of one agent (or of one standalone process) share: the list of them
 * (vk_pod_target looks in every one) and their metrics (cliqo_vk_*{peer} in registry r; NULL: they
 * count nothing). Made by whoever creates the virtual kubelets (the advertisement operator's
 * module state, the standalone process) and given to each through env->pods; freed after the last
 * reflector given it is destroyed (NULL-safe). vk_pods_shared_new returns 0 or a negative errno. */
struct vk_pods_shared;
struct inf_informer;
int vk_pods_shared_new(struct metrics_registry *r, struct vk_pods_shared **ret);
void vk_pods_shared_free(struct vk_pods_shared *sh);
/* Creations each reflector has in flight at most (--vk-pod-creations; 0: VK_PODS_CREATES; capped
 * below VK_PODS_CONCURRENCY, so that status writes always have slots). */
void vk_pods_shared_set_creations(struct vk_pods_shared *sh, unsigned n);
/* The home cluster's informer of every pod (borrowed; it must outlive the reflectors made after
 * the call, or be freed after them: kube/informer.h, "Views"). Each pods reflector then keeps its
 * node's pods in a view of it (one watch of the home pods whatever the number of virtual
 * kubelets, shared with the other users of that informer) instead of a watch of its own. NULL,
 * and for reflectors made before: their own watch of every bound pod. */
void vk_pods_shared_set_home(struct vk_pods_shared *sh, struct inf_informer *pods);

/* The keepalive's verdict (vk.c): while unreachable nothing is created or deleted, home pods keep
 * their status with cliqo.io/ProviderReachable=False; reachable again reconciles every pod. why is
 * copied (may be NULL). */
void vk_pods_set_reachable(void *state, bool reachable, const char *why);
/* Whether the pod-CIDR remapping with the provider is pending (vk.c, from the Advertisement's
 * status.network: enabled and not settled). While it is, no new pod is created on the provider
 * (their home pods wait); pods already there are left alone and deletions go on. Pending from the
 * start until the first call. Settled (or networking disabled) again reconciles every pod. */
void vk_pods_set_network_pending(void *state, bool pending);
/* The namespace mapping has read both sides once: a home pod in a namespace with no Accepted pair
 * can be reported as not offloaded. */
void vk_pods_set_mapping_synced(void *state, bool synced);
/* Home pods of local namespace ns bound to the node (the namespace mapping removes a namespace
 * only when none are left). */
size_t vk_pods_in_namespace(void *state, const char *ns);
/* Deletes those pods (graceful, the server's default grace): their controllers create them again
 * where the webhook now sends them; each is finished once its remote pod is gone. */
void vk_pods_evict_namespace(void *state, const char *ns);
/* Remote pods of ours the reflector sees on the provider (the teardown waits for none). */
size_t vk_pods_remote_count(void *state);
/* Whether the home informer has synced. */
bool vk_pods_synced(void *state);

/* The logs/exec resolver (docs/offloading.md, "Kubelet API"): home pod ns/pod -> its virtual
 * node, the client of the provider (the unit's PU_VK client, borrowed: valid during the current
 * loop callback), the remote namespace and pod name. Looks in every pods reflector of sh (NULL:
 * none).
 * Returns 0, -ENOENT (not a pod of a virtual node here, or not offloaded yet), -EAGAIN (a home pod
 * bound to a virtual node here whose provider has no client now: only ret_node is written) or
 * -ENAMETOOLONG (a buffer too small). */
int vk_pod_target(const struct vk_pods_shared *sh, const char *ns, const char *pod, char *ret_node,
                  size_t node_size, struct kapi_client **ret_client, char *ret_remote_ns,
                  size_t remote_ns_size, char *ret_remote_pod, size_t remote_pod_size);

/* The kubelet API's resolver (kla_resolve_fn, data: the struct vk_pods_shared of the virtual
 * kubelets) over vk_pod_target: 0 with the target, -ENOENT (not a pod of a virtual node of this
 * process) or -EAGAIN (its provider has no client now). The advertisement operator, which makes
 * the virtual kubelets, gives it to the kubeletapi module; the standalone virtual kubelet to its
 * own service. */
int vk_kla_resolve(void *data, const char *ns, const char *pod, struct kla_target *ret);

#endif
