/* The resource table of cliqo's kinds; see resources.h. */
#include "peering/resources.h"

#include <string.h>

const struct kapi_resource peer_res_foreignclusters = {"discovery.liqo.io", "v1alpha1",
                                                       "foreignclusters", "ForeignCluster", false};
const struct kapi_resource peer_res_peeringrequests = {"discovery.liqo.io", "v1alpha1",
                                                       "peeringrequests", "PeeringRequest", true};
const struct kapi_resource peer_res_searchdomains = {"discovery.liqo.io", "v1alpha1",
                                                     "searchdomains", "SearchDomain", false};
const struct kapi_resource peer_res_advertisements = {"sharing.liqo.io", "v1alpha1",
                                                      "advertisements", "Advertisement", true};
const struct kapi_resource peer_res_clusterconfigs = {"config.liqo.io", "v1alpha1",
                                                      "clusterconfigs", "ClusterConfig", false};
const struct kapi_resource peer_res_networkconfigs = {"net.liqo.io", "v1alpha1", "networkconfigs",
                                                      "NetworkConfig", true};
const struct kapi_resource peer_res_tunnelendpoints = {"net.liqo.io", "v1alpha1", "tunnelendpoints",
                                                       "TunnelEndpoint", true};
const struct kapi_resource peer_res_namespaceoffloadings = {
    "offloading.liqo.io", "v1alpha1", "namespaceoffloadings", "NamespaceOffloading", true};
const struct kapi_resource peer_res_namespacenattingtables = {
    "virtualkubelet.liqo.io", "v1alpha1", "namespacenattingtables", "NamespaceNattingTable", false};
const struct kapi_resource peer_res_namespacemaps = {"virtualkubelet.liqo.io", "v1alpha1",
                                                     "namespacemaps", "NamespaceMap", true};
const struct kapi_resource peer_res_roles = {"rbac.authorization.k8s.io", "v1", "roles", "Role",
                                             true};
const struct kapi_resource peer_res_rolebindings = {"rbac.authorization.k8s.io", "v1",
                                                    "rolebindings", "RoleBinding", true};
const struct kapi_resource peer_res_clusterroles = {"rbac.authorization.k8s.io", "v1",
                                                    "clusterroles", "ClusterRole", false};
const struct kapi_resource peer_res_clusterrolebindings = {
    "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", false};

static const struct kapi_resource *const known[] = {
    &peer_res_foreignclusters,
    &peer_res_peeringrequests,
    &peer_res_searchdomains,
    &peer_res_advertisements,
    &peer_res_clusterconfigs,
    &peer_res_networkconfigs,
    &peer_res_tunnelendpoints,
    &peer_res_namespaceoffloadings,
    &peer_res_namespacenattingtables,
    &peer_res_namespacemaps,
    &peer_res_roles,
    &peer_res_rolebindings,
    &peer_res_clusterroles,
    &peer_res_clusterrolebindings,
    &kapi_pods,
    &kapi_nodes,
    &kapi_namespaces,
    &kapi_configmaps,
    &kapi_secrets,
    &kapi_services,
    &kapi_events,
    &kapi_leases,
    &kapi_deployments,
    &kapi_daemonsets,
    &kapi_crds,
    &kapi_serviceaccounts,
};

const struct kapi_resource *peer_res_by_kind(const char *api_version, const char *kind)
{
    const char *slash;
    size_t glen;

    if (!api_version || !kind)
        return NULL;
    slash = strchr(api_version, '/');
    glen = slash ? (size_t)(slash - api_version) : 0;
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        const struct kapi_resource *r = known[i];

        if (strcmp(r->kind, kind) != 0 || strlen(r->group) != glen ||
            strncmp(r->group, api_version, glen) != 0 ||
            strcmp(r->version, slash ? slash + 1 : api_version) != 0)
            continue;
        return r;
    }
    return NULL;
}

json_t *peer_tenant_quota_hard(void)
{
    return json_pack("{s:s,s:s,s:s}", "count/secrets", "64", "count/configmaps", "16",
                     "count/serviceaccounts", "16");
}
