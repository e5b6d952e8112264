/* admission/objects: the provider's checks of the Services, EndpointSlices and Secrets a peer's
 * credential writes (docs/security.md, "Services and EndpointSlices").
 *
 * Who is checked (adm_objects_sa_namespace): a ServiceAccount user
 * system:serviceaccount:<ns>:<sa>; the caller then looks at <ns>: a tenant namespace or a namespace
 * made for a consumer means a peer's credential (its virtual kubelet, its peering identity, a pod
 * of the consumer). Nothing else is checked: the provider's own controllers (the endpointslice
 * controller writes the slices of Services with a selector) and its administrators write what
 * they like.
 *
 * What is refused, each with one line naming the field:
 *   Service: spec.type NodePort, LoadBalancer (they open ports on the provider's nodes or its
 *     load balancers to the outside) and ExternalName (a name in the provider's DNS that resolves
 *     to whatever the consumer says, e.g. a Service of another namespace of the provider);
 *     spec.externalIPs (the provider's nodes would take traffic for any address).
 *   EndpointSlice: addressType FQDN; an address that is not in one of the consumer's CIDRs (its
 *     remapped pod CIDR as the provider sees it) nor the IP of one of the consumer's pods here
 *     (is_pod_ip); an endpoint whose targetRef names another namespace.
 *   Secret: type kubernetes.io/service-account-token, created or updated (also a change of type),
 *     any namespace the webhook sees: the token controller would fill it with a token of any
 *     ServiceAccount of that namespace.
 *
 * Tenant namespaces: how many objects of each of cliqo's kinds a peer's credential may create in
 * its tenant namespace (adm_objects_tenant_limit); the webhook counts those of the namespace in
 * the agent's informers and refuses a create beyond the limit, so that a peer cannot fill the
 * agent's caches. (The built-in kinds there are held by a ResourceQuota: peering/resources.h.)
 *
 * Pure: objects borrowed, no state. */
#ifndef CLIQO_ADMISSION_OBJECTS_H
#define CLIQO_ADMISSION_OBJECTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "network/ipam.h"

#define ADM_OBJ_MAX_ENDPOINTS 1000 /* the API server's own bound on a slice */
#define ADM_OBJ_MAX_ADDRESSES 100
#define ADM_SA_TOKEN_TYPE     "kubernetes.io/service-account-token"

/* The namespace of a ServiceAccount user "system:serviceaccount:<ns>:<sa>" into ns (size >= 64).
 * Returns 0, or -ENOENT for any other user (or a malformed one). */
int adm_objects_sa_namespace(const char *username, char *ns, size_t size);

/* 0 when the Service may be written by a peer, else -EPERM with the reason in msg. */
int adm_objects_service_check(const json_t *svc, char *msg, size_t len);

/* Is ip the address of one of the consumer's pods here? */
typedef bool (*adm_pod_ip_fn)(const char *ip, void *data);

/* 0 when every endpoint of slice (written in namespace ns) is the consumer's, else -EPERM with
 * the reason in msg. cidrs: where the provider sees the consumer's pods (n may be 0). */
int adm_objects_slice_check(const json_t *slice, const char *ns, const struct cidr *cidrs, size_t n,
                            adm_pod_ip_fn is_pod_ip, void *data, char *msg, size_t len);

/* 0 unless the Secret (new) is of type service-account-token: -EPERM with the reason in msg. */
int adm_objects_secret_check(const json_t *secret, char *msg, size_t len);

/* The most objects of kind (API group, resource) a peer's credential may have in its tenant
 * namespace, or -1 when the kind is not limited here. */
int adm_objects_tenant_limit(const char *group, const char *resource);

/* The refusal when count objects already exist (count >= limit): -EDQUOT with the reason in msg;
 * 0 when one more fits. */
int adm_objects_tenant_check(const char *group, const char *resource, size_t count, char *msg,
                             size_t len);

#endif
