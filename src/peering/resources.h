/* The Kubernetes resources cliqo reads and writes, for the kapi_* calls of the agent and the CLI:
 * cliqo's own kinds (deploy/crds/) and the built-in kinds the peering flow touches beyond the
 * kube client's own table. Scopes follow docs/peering.md: PeeringRequest, Advertisement,
 * NetworkConfig, TunnelEndpoint and NamespaceOffloading are namespaced. */
#ifndef CLIQO_PEERING_RESOURCES_H
#define CLIQO_PEERING_RESOURCES_H

#include <stddef.h>

#include <jansson.h>

#include "kube/api.h"

extern const struct kapi_resource peer_res_foreignclusters, peer_res_peeringrequests,
    peer_res_searchdomains, peer_res_advertisements, peer_res_clusterconfigs,
    peer_res_networkconfigs, peer_res_tunnelendpoints, peer_res_namespaceoffloadings,
    peer_res_namespacenattingtables, peer_res_namespacemaps;
extern const struct kapi_resource peer_res_roles, peer_res_rolebindings, peer_res_clusterroles,
    peer_res_clusterrolebindings;

/* The resource of an object by its apiVersion and kind (for applying manifests); NULL if unknown.
 */
const struct kapi_resource *peer_res_by_kind(const char *api_version, const char *kind);

/* spec.hard of the ResourceQuota PEER_TENANT_QUOTA in each tenant namespace: counts of the built-in
 * kinds a peer's credentials may create there (Secrets; ConfigMaps and ServiceAccounts, which
 * Kubernetes puts there), with room for what the agent and Kubernetes put there, so that a peer
 * cannot fill the agent's caches with objects (docs/security.md). cliqo's own kinds are counted
 * by the agent's objects webhook instead (admission/objects.h, adm_objects_tenant_limit): a
 * quota on a custom resource is "status unknown", refusing every create, until
 * kube-controller-manager has discovered the kind. A new object, NULL when out of memory. */
json_t *peer_tenant_quota_hard(void);
#define PEER_TENANT_QUOTA "cliqo-tenant-objects"

/* Well-known names (docs/peering.md). */
#define PEER_NAMESPACE_DEFAULT "cliqo"
#define PEER_CLUSTER_ID_CM     "cluster-id"
#define PEER_AUTH_TOKEN_SECRET "auth-token"
#define PEER_AUTH_TLS_SECRET   "auth-tls"
#define PEER_CLUSTER_CONFIG    "configuration"
#define PEER_REMOTE_ROLE       "cliqo-remote-peering"
#define PEER_LABEL_CLUSTER_ID  "discovery.liqo.io/cluster-id"
#define PEER_LABEL_TENANT      "discovery.liqo.io/tenant-namespace"
#define PEER_LABEL_DISC_TYPE   "discovery.liqo.io/discovery-type"
#define PEER_LABEL_AUTH_TOKEN  "discovery.liqo.io/auth-token"
#define PEER_LABEL_REMOTE_ID   "discovery.liqo.io/remote-identity"
#define PEER_FINALIZER         "cliqo.io/peering"
/* Identity keys and single-use tokens (docs/peering.md, "Identity keys", "Tokens"). */
#define PEER_IDENTITY_KEY_SECRET "identity-key" /* key tls.key: the cluster's P-256 key */
#define PEER_ANN_KEY_ID          "cliqo.io/identity-key-id" /* on a tenant namespace: its peer's */
#define PEER_TOKEN_SECRET_PREFIX "peering-token-" /* + first 32 hex digits of SHA-256(token) */
#define PEER_LABEL_TOKEN         "cliqo.io/peering-token" /* "single-use" */
#define PEER_ANN_TOKEN_CLUSTER   "cliqo.io/token-used-by-cluster-id"
#define PEER_ANN_TOKEN_KEY       "cliqo.io/token-used-by-key-id"

/* The advertisement protocol (docs/advertisement.md). */
#define PEER_VK_SA_PREFIX         "vk-"
#define PEER_VK_TENANT_ROLE       "cliqo-virtual-kubelet-tenant"
#define PEER_VK_REMOTE_ROLE       "cliqo-virtual-kubelet-remote"
#define PEER_VK_LOCAL_ROLE        "cliqo-virtual-kubelet-local"
#define PEER_VK_SECRET_PREFIX     "vk-kubeconfig-secret-"
#define PEER_ADV_PREFIX           "advertisement-"
#define PEER_NETCFG_PREFIX        "net-config-"
#define PEER_VNODE_PREFIX         "liqo-"
#define PEER_VK_FINALIZER         "cliqo.io/virtual-kubelet"
#define PEER_NSMAP_FINALIZER      "cliqo.io/namespacemap"
#define PEER_LABEL_ORIGIN         "virtualkubelet.liqo.io/origin"
#define PEER_LABEL_HOME_NS        "virtualkubelet.liqo.io/home-namespace"
#define PEER_LABEL_HOME_UID       "virtualkubelet.liqo.io/home-uid"
#define PEER_ANNOT_HOME_NAME      "virtualkubelet.liqo.io/home-name"
#define PEER_ANNOT_NSMAP          "virtualkubelet.liqo.io/namespacemap"
#define PEER_ANNOT_CRED_HASH      "cliqo.io/credential-hash"
#define PEER_LABEL_TYPE           "liqo.io/type"
#define PEER_LABEL_TYPE_V01       "type"
#define PEER_VIRTUAL_NODE         "virtual-node"
#define PEER_LABEL_REMOTE_CLUSTER "liqo.io/remote-cluster-id"
#define PEER_VNODE_TAINT_KEY      "virtual-node.liqo.io/not-allowed"

#endif
