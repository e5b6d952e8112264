/* reflector: the interface of a virtual kubelet's reflectors (docs/offloading.md, "Each virtual
 * kubelet"): what offloads one kind of object from the home cluster to one provider. The pods
 * reflector (pods.h) and the object reflectors (src/virtualkubelet/reflect.h) implement it; the
 * virtual kubelet (src/virtualkubelet/vk.c) runs one instance of each. It is here, with pod
 * offloading, so that the virtual kubelet includes offloading and never the other way round.
 *
 * A virtual kubelet tells its reflectors which namespace pairs are mapped (local namespace on the
 * home cluster -> namespace B created for us, Accepted in the NamespaceMap's status) and when
 * anything they depend on changed. Each reflector owns its informers (local ones on env->local,
 * remote ones registered on env->unit with role PU_VK, so that a rotated credential re-creates
 * them), one work queue, and the requests it makes; data flows informer -> store -> queue ->
 * reconcile -> API.
 *
 * Everything read from the provider is untrusted input: a remote object is mapped back to a local
 * one only through the pairs the virtual kubelet gave (remote namespace -> local namespace), never
 * through a name or label the provider wrote.
 *
 * Life cycle, all on the loop: create -> any number of ns_add / ns_remove / kick -> destroy.
 * ns_add for a local namespace already added replaces its remote name (a stop and a start).
 * destroy stops at once: informers closed, queue closed, requests in flight aborted or ignored;
 * nothing is deleted on either side (the namespace's deletion on the provider removes the copies).
 * Single-threaded. */
#ifndef CLIQO_OFFLOADING_REFLECTOR_H
#define CLIQO_OFFLOADING_REFLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "agent/peers.h"
#include "kube/api.h"

/* Labels on every object a virtual kubelet creates on the provider. */
#define VK_LABEL_ORIGIN      "virtualkubelet.liqo.io/origin"      /* the home cluster's ID */
#define VK_LABEL_DESTINATION "virtualkubelet.liqo.io/destination" /* the provider's ID */
#define VK_LABEL_REFLECTED   "liqo.io/reflected"                  /* "true" */
/* On remote pods (labels where the value fits, annotations always). */
#define VK_LABEL_HOME_UID  "offloading.cliqo.io/home-uid"
#define VK_LABEL_HOME_NS   "offloading.cliqo.io/home-namespace"
#define VK_ANNOT_HOME_NAME "offloading.cliqo.io/home-name"
#define VK_ANNOT_HOME_NS   "offloading.cliqo.io/home-namespace"
#define VK_ANNOT_HOME_UID  "offloading.cliqo.io/home-uid"

struct vk_reflect_filter;  /* the object reflectors' filters (src/virtualkubelet/reflect.h) */
struct vk_reflect_metrics; /* the object reflectors' metrics (src/virtualkubelet/reflect.h) */
struct vk_pods_shared;     /* what the pods reflectors share (pods.h) */

/* What a reflector is given; valid from create to destroy (strings and tables owned by the virtual
 * kubelet; the filters may change, followed by a kick). */
struct vk_reflect_env {
    uv_loop_t *loop;
    struct kapi_client *local; /* the home cluster */
    struct pu_unit *unit;      /* the provider's unit: pu_client(unit, PU_VK), pu_informer */
    const char *home_id;       /* this cluster */
    const char *peer_id;       /* the provider */
    const char *node_name;     /* liqo-<peer_id> */
    const char *node_address;  /* the virtual node's InternalIP (the home pods' hostIP) */
    const struct vk_reflect_filter *filters; /* [_VK_REFLECT_KINDS] */
    /* IP translations of the peering (docs/advertisement.md, pod-CIDR remapping): an address of
     * a pod on the provider as the home cluster must use it, and a home address as the provider
     * must use it. They write into out (size >= 46) and return 0, or a negative errno (not an
     * address of the peering's ranges: the caller keeps the original). NULL data is allowed. */
    int (*remote_to_home_ip)(void *data, const char *ip, char *out, size_t size);
    int (*home_to_remote_ip)(void *data, const char *ip, char *out, size_t size);
    void *ip_data;
    /* Optional (zero: the default or none). The most copies of one kind a reflector keeps in one
     * remote namespace (default VK_REFLECT_DEFAULT_MAX_OBJECTS); the object reflectors' metric
     * families (cliqo_vk_reflect_*, labels peer and kind: vk_reflect_metrics_new). */
    size_t max_objects_per_ns;
    struct vk_reflect_metrics *metrics;
    /* What the pods reflectors of the agent (or process) share: their list and metrics (pods.h);
     * NULL: the pods reflector counts nothing and no vk_pod_target finds it. */
    struct vk_pods_shared *pods;
};
#define VK_REFLECT_DEFAULT_MAX_OBJECTS 5000

struct vk_reflector_ops {
    const char *kind; /* for logs and metrics: "pods", "services", ... */
    int (*create)(const struct vk_reflect_env *env, void **ret_state);
    void (*ns_add)(void *state, const char *local_ns, const char *remote_ns);
    void (*ns_remove)(void *state, const char *local_ns);
    /* Filters, translations or reachability changed: reconcile every key again. */
    void (*kick)(void *state);
    /* NULL-safe state. */
    void (*destroy)(void *state);
};

#endif
