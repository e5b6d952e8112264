/* reflect_translate: the pure part of the object reflectors (reflect_objects.c, docs/offloading.md
 * "Objects"): what copy of a home object the provider should hold, whether the copy it holds
 * differs, and what to send to make it so. No loop, no I/O: table-driven tests
 * (tests/unit/test-vk-reflect.c) and a fuzz harness (fuzz/fuzz-vk-reflect.c) call it directly.
 *
 * Desired copies. vkr_desired() turns a home object (as the home API server returned it, so with
 * its defaults filled) into the object to create on the provider, or says why there is none:
 *   every kind  name; namespace = the remote one; labels copied with ours set over them
 *               (VK_LABEL_ORIGIN, VK_LABEL_DESTINATION, VK_LABEL_REFLECTED=true); annotations
 *               copied but kubectl's last-applied-configuration. No copy of an object that came
 *               from the provider itself (its VK_LABEL_ORIGIN names ctx->peer_id: the copy would
 *               go back where it came from; vkr_back_to_origin), nor of one the kind's filter does
 *               not let through. A copy from a third cluster flows on (a broker's two hops,
 *               docs/broker.md): its labels are ours like any other's, so it leaves with this
 *               cluster as its origin.
 *   Service     type (LoadBalancer -> ClusterIP: B's load balancers are B's to give), ports
 *               (name, protocol, port, targetPort, appProtocol; never nodePort), selector,
 *               sessionAffinity(+Config), publishNotReadyAddresses, clusterIP only when "None"
 *               (headless), externalName (ExternalName), externalTrafficPolicy (NodePort). The
 *               provider allocates clusterIP(s), nodePorts and health-check ports itself.
 *   EndpointSlice  only with a kubernetes.io/service-name label, only once the copy of that
 *               Service exists (ctx->service_uid: the copy's owner reference, so that the
 *               provider's garbage collector removes the slices with it); managed-by
 *               endpointslice.reflection.cliqo.io (neither side's controller touches it);
 *               addressType, ports, endpoints in the provider's version (v1beta1 topology vs v1
 *               nodeName/zone/deprecatedTopology); addresses of IPv4/IPv6 slices translated with
 *               ctx->home_to_remote_ip (untranslatable ones dropped, and endpoints left without
 *               any; FQDN slices never reflected: docs/security.md); targetRef and hints dropped
 *               (they name home pods and home zones); endpoints on the virtual node dropped (those
 *               pods run on the provider, whose own controller lists them); no copy when no
 *               endpoint is left.
 *   ConfigMap   data, binaryData, immutable; never kube-root-ca.crt (each namespace of the
 *               provider has its own).
 *   Secret      type, data, immutable; never a service-account token (type
 *               kubernetes.io/service-account-token, or any Secret annotated with
 *               kubernetes.io/service-account.name) nor a bootstrap token.
 *   ConfigMaps and Secrets above the API's limit (1 MiB of data) are refused.
 *
 * Comparison. vkr_extract() reduces an object to what reflection owns (labels, annotations,
 * owner references of slices, and the kind's fields above, read with the same rules, without
 * translation): fields the provider sets (clusterIP, nodePorts, ipFamilies, resourceVersion,
 * managedFields, ...) are left out. vkr_needs_update() compares the extracts of the desired copy
 * and of the provider's object: anything else edited on the provider is put back.
 *
 * Everything from the provider is untrusted: any JSON is accepted by vkr_extract,
 * vkr_needs_update, vkr_is_ours and vkr_update_body (wrong types read as absent).
 *
 * Ownership: inputs are borrowed; returned trees are new references. */
#ifndef CLIQO_VIRTUALKUBELET_REFLECT_TRANSLATE_H
#define CLIQO_VIRTUALKUBELET_REFLECT_TRANSLATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "virtualkubelet/reflect.h"

#define VKR_LABEL_MANAGED_BY   "endpointslice.kubernetes.io/managed-by"
#define VKR_MANAGED_BY         "endpointslice.reflection.cliqo.io"
#define VKR_LABEL_SERVICE_NAME "kubernetes.io/service-name"
#define VKR_ANNOT_LAST_APPLIED "kubectl.kubernetes.io/last-applied-configuration"
#define VKR_ANNOT_SA_NAME      "kubernetes.io/service-account.name"
#define VKR_ROOT_CA_CONFIGMAP  "kube-root-ca.crt"
#define VKR_TOPOLOGY_HOSTNAME  "kubernetes.io/hostname"
#define VKR_TOPOLOGY_ZONE      "topology.kubernetes.io/zone"
#define VKR_MAX_DATA           (1024 * 1024) /* ConfigMap and Secret data: the API's limit */
#define VKR_MAX_ENDPOINTS      1000          /* per slice: the API's limit */
#define VKR_MAX_ADDRESSES      100           /* per endpoint: the API's limit */
#define VKR_MAX_PORTS          1000

enum vkr_slice_version {
    VKR_SLICES_V1BETA1, /* discovery.k8s.io/v1beta1: endpoints[].topology */
    VKR_SLICES_V1,      /* discovery.k8s.io/v1: endpoints[].nodeName, zone, deprecatedTopology */
};

struct vkr_ctx {
    const char *home_id, *peer_id;
    const char *node_name; /* the virtual node */
    const char *local_ns, *remote_ns;
    const struct vk_reflect_filter *filter; /* the kind's; NULL: everything */
    enum vkr_slice_version local_slices, remote_slices;
    const char *service_uid; /* slices: UID of their Service's copy, NULL when there is none */
    int (*home_to_remote_ip)(void *data, const char *ip, char *out, size_t size);
    void *ip_data;
};

/* Why there is no copy (0: there is one). */
enum vkr_verdict {
    VKR_REFLECT = 0,
    VKR_SKIP_INVALID,  /* not an object of the kind (no name, wrong types) */
    VKR_SKIP_COPY,     /* a copy from the provider itself (origin label = the provider) */
    VKR_SKIP_FILTERED, /* the kind's allow/deny lists */
    VKR_SKIP_EXCLUDED, /* never reflected: kube-root-ca.crt, service-account tokens, ExternalName */
    VKR_SKIP_TOO_BIG,  /* above the API's limit */
    VKR_SKIP_NO_SERVICE, /* a slice without service, or its Service has no copy */
    VKR_SKIP_EMPTY,      /* a slice with no endpoint left */
    _VKR_VERDICTS,
};

/* Whether local came from the cluster dest_id (its VK_LABEL_ORIGIN label is exactly dest_id), so
 * that a copy of it on dest_id would go back where it came from. Any other object, a copy from a
 * third cluster included, may be reflected to dest_id. A missing or non-string label, a NULL
 * object or a NULL dest_id: false (vkr_desired refuses a context without a peer first). */
bool vkr_back_to_origin(const json_t *local, const char *dest_id);

/* The desired copy of local: returns 0 with *ret (a new object), a positive enum vkr_verdict with
 * *ret NULL, or -ENOMEM. */
int vkr_desired(enum vk_reflect_kind kind, const json_t *local, const struct vkr_ctx *ctx,
                json_t **ret);
const char *vkr_verdict_name(int verdict);

/* Whether a provider object is one of ours: origin label = home_id (slices: and our managed-by). */
bool vkr_is_ours(enum vk_reflect_kind kind, const json_t *obj, const char *home_id);

/* The part of obj reflection owns, in a normal form (see above); slices are read in version v.
 * NULL only when out of memory. */
json_t *vkr_extract(enum vk_reflect_kind kind, const json_t *obj, enum vkr_slice_version v);
/* 1 when the provider's object differs from the desired copy in what reflection owns, 0 when not,
 * -ENOMEM. */
int vkr_needs_update(enum vk_reflect_kind kind, const json_t *desired, const json_t *remote,
                     enum vkr_slice_version v);
/* The body of the update (PUT) that makes remote the desired copy: desired, with remote's
 * resourceVersion (optimistic concurrency) and, for Services, what the provider allocated and an
 * update must repeat (clusterIP(s), ipFamilies, ipFamilyPolicy, nodePorts of matching ports) when
 * the two agree on it. NULL when out of memory. */
json_t *vkr_update_body(enum vk_reflect_kind kind, const json_t *desired, const json_t *remote);

/* One slice endpoint normalised and converted from version `from` to `to` (addresses,
 * conditions, hostname, node and zone, other topology); *ret_node is the node it runs on (the
 * hostname topology or nodeName; borrowed from ep) or NULL. 0, VKR_SKIP_INVALID or -ENOMEM. */
int vkr_slice_endpoint(const json_t *ep, enum vkr_slice_version from, enum vkr_slice_version to,
                       json_t **ret, const char **ret_node);

/* The data size the API limits (ConfigMap: data and decoded binaryData values; Secret: decoded
 * data values); 0 for other kinds. */
size_t vkr_data_size(enum vk_reflect_kind kind, const json_t *obj);

#endif
