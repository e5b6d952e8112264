/* admission/objects: see objects.h. */
#include "admission/objects.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/errbuf.h"
#include "common/json.h"
#include "admission/placement.h"
#include "admission/review.h"

#define SA_PREFIX "system:serviceaccount:"
#define IP_MAX    64

int adm_objects_sa_namespace(const char *username, char *ns, size_t size)
{
    const char *p, *colon;

    if (!username || strncmp(username, SA_PREFIX, strlen(SA_PREFIX)) != 0)
        return -ENOENT;
    p = username + strlen(SA_PREFIX);
    colon = strchr(p, ':');
    if (!colon || colon == p || !colon[1] || strchr(colon + 1, ':') || (size_t)(colon - p) >= size)
        return -ENOENT;
    snprintf(ns, size, "%.*s", (int)(colon - p), p);
    return 0;
}

int adm_objects_service_check(const json_t *svc, char *msg, size_t len)
{
    const json_t *spec = json_object_get(svc, "spec");
    const char *type = jsn_str(spec, "type");
    char shown[64];

    if (type && (strcmp(type, "NodePort") == 0 || strcmp(type, "LoadBalancer") == 0))
        return errbuf_fmt(msg, len, -EPERM,
                          "spec.type %s: a consumer's Service may not open ports on the provider's "
                          "nodes or load balancers (ClusterIP only)",
                          type);
    if (type && strcmp(type, "ExternalName") == 0)
        return errbuf_fmt(msg, len, -EPERM,
                          "spec.type ExternalName: a consumer's Service may not alias names in the "
                          "provider's DNS (ClusterIP only)");
    if (type && strcmp(type, "ClusterIP") != 0)
        return errbuf_fmt(msg, len, -EPERM,
                          "spec.type \"%s\": a consumer's Service is ClusterIP only",
                          adm_printable(type, shown, sizeof(shown)));
    if (json_array_size(json_object_get(spec, "externalIPs")) > 0)
        return errbuf_fmt(
            msg, len, -EPERM,
            "spec.externalIPs: a consumer's Service may not take traffic for external "
            "addresses on the provider's nodes");
    return 0;
}

static bool in_cidrs(const char *ip, const struct cidr *cidrs, size_t n)
{
    char buf[IP_MAX + 8];
    struct cidr c;

    if (strlen(ip) >= IP_MAX)
        return false;
    snprintf(buf, sizeof(buf), "%s/%s", ip, strchr(ip, ':') ? "128" : "32");
    if (cidr_parse(buf, &c) < 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (cidr_contains(&cidrs[i], &c))
            return true;
    return false;
}

int adm_objects_slice_check(const json_t *slice, const char *ns, const struct cidr *cidrs, size_t n,
                            adm_pod_ip_fn is_pod_ip, void *data, char *msg, size_t len)
{
    const char *at = jsn_str(slice, "addressType");
    const json_t *eps = json_object_get(slice, "endpoints");
    char shown[IP_MAX], shown_ns[64];

    if (!at || (strcmp(at, "IPv4") != 0 && strcmp(at, "IPv6") != 0))
        return errbuf_fmt(msg, len, -EPERM,
                          "addressType \"%s\": a consumer's EndpointSlice holds IPs only",
                          adm_printable(at ? at : "", shown, sizeof(shown)));
    if (json_array_size(eps) > ADM_OBJ_MAX_ENDPOINTS)
        return errbuf_fmt(msg, len, -EPERM, "endpoints: more than %d", ADM_OBJ_MAX_ENDPOINTS);
    for (size_t i = 0; i < json_array_size(eps); i++) {
        const json_t *ep = json_array_get(eps, i), *addrs = json_object_get(ep, "addresses");
        const char *tns = jsn_str(json_object_get(ep, "targetRef"), "namespace");

        if (tns && *tns && strcmp(tns, ns ? ns : "") != 0)
            return errbuf_fmt(
                msg, len, -EPERM,
                "endpoints[%zu].targetRef.namespace \"%s\": a consumer's EndpointSlice "
                "may only name objects of its own namespace",
                i, adm_printable(tns, shown_ns, sizeof(shown_ns)));
        if (json_array_size(addrs) > ADM_OBJ_MAX_ADDRESSES)
            return errbuf_fmt(msg, len, -EPERM, "endpoints[%zu].addresses: more than %d", i,
                              ADM_OBJ_MAX_ADDRESSES);
        for (size_t j = 0; j < json_array_size(addrs); j++) {
            const char *ip = json_string_value(json_array_get(addrs, j));

            if (ip && (in_cidrs(ip, cidrs, n) || (is_pod_ip && is_pod_ip(ip, data))))
                continue;
            return errbuf_fmt(
                msg, len, -EPERM,
                "endpoints[%zu].addresses[%zu] %s is neither in the consumer's pod CIDR "
                "as this provider sees it nor the IP of one of its pods here",
                i, j, adm_printable(ip ? ip : "(not a string)", shown, sizeof(shown)));
        }
    }
    return 0;
}

int adm_objects_secret_check(const json_t *secret, char *msg, size_t len)
{
    const char *type = jsn_str(secret, "type");

    if (type && strcmp(type, ADM_SA_TOKEN_TYPE) == 0)
        return errbuf_fmt(msg, len, -EPERM,
                          "type " ADM_SA_TOKEN_TYPE
                          ": a peer's credential may not ask the provider "
                          "for ServiceAccount tokens");
    return 0;
}

static const struct {
    const char *group, *resource;
    int limit;
} tenant_limits[] = {
    /* One of each per peer in normal use; room for a few more (a rename, a retry). */
    {"discovery.liqo.io", "peeringrequests", 4},    {"sharing.liqo.io", "advertisements", 8},
    {"net.liqo.io", "networkconfigs", 8},           {"net.liqo.io", "tunnelendpoints", 4},
    {"virtualkubelet.liqo.io", "namespacemaps", 4},
};

int adm_objects_tenant_limit(const char *group, const char *resource)
{
    if (!group || !resource)
        return -1;
    for (size_t i = 0; i < sizeof(tenant_limits) / sizeof(tenant_limits[0]); i++)
        if (strcmp(group, tenant_limits[i].group) == 0 &&
            strcmp(resource, tenant_limits[i].resource) == 0)
            return tenant_limits[i].limit;
    return -1;
}

int adm_objects_tenant_check(const char *group, const char *resource, size_t count, char *msg,
                             size_t len)
{
    int limit = adm_objects_tenant_limit(group, resource);

    if (limit < 0 || count < (size_t)limit)
        return 0;
    snprintf(msg, len, "at most %d %s.%s in a tenant namespace (%zu exist): delete one first",
             limit, resource, group, count);
    return -EDQUOT;
}
