/* admission/placement: see placement.h. */
#include "admission/placement.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/errbuf.h"
#include "common/json.h"
#include "admission/review.h"
#include "peering/resources.h"

#define HOSTNAME_LABEL "kubernetes.io/hostname"
#define NAME_FIELD     "metadata.name"
#define WHERE          "ClusterConfig spec.offloadingConfig.placement."

/* Is name in placement[list] (or "*" there, when star)? */
static bool allowed(const json_t *placement, const char *list, const char *name, bool star)
{
    const json_t *arr = json_object_get(placement, list);
    size_t n = json_array_size(arr);

    if (n > ADM_PLACEMENT_MAX_NAMES)
        n = ADM_PLACEMENT_MAX_NAMES;
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(arr, i));

        if (!s)
            return false;
        if ((name && strcmp(s, name) == 0) || (star && strcmp(s, "*") == 0))
            return true;
    }
    return false;
}

/* The first expression of a NodeSelectorTerm-like object that names a node, or -1. field is set
 * to "matchExpressions" or "matchFields". */
static long node_named(const json_t *term, const char **ret_field)
{
    static const char *const lists[] = {"matchExpressions", "matchFields"};
    static const char *const keys[] = {HOSTNAME_LABEL, NAME_FIELD};

    for (size_t l = 0; l < 2; l++) {
        const json_t *arr = json_object_get(term, lists[l]);

        for (size_t i = 0; i < json_array_size(arr) && i < ADM_PLACEMENT_MAX_ITEMS; i++) {
            const char *k = jsn_str(json_array_get(arr, i), "key");

            if (k && strcmp(k, keys[l]) == 0) {
                *ret_field = lists[l];
                return (long)i;
            }
        }
    }
    return -1;
}

static int check_nodes(const json_t *spec, char *msg, size_t len)
{
    const json_t *na = json_object_get(json_object_get(spec, "affinity"), "nodeAffinity");
    const json_t *req = json_object_get(
        json_object_get(na, "requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms");
    const json_t *pref = json_object_get(na, "preferredDuringSchedulingIgnoredDuringExecution");
    const char *field, *name = jsn_str(spec, "nodeName");
    char shown[80];
    long e;

    if (name && *name)
        return errbuf_fmt(
            msg, len, -EPERM,
            "spec.nodeName \"%s\": naming the provider's nodes is not allowed on this "
            "provider (" WHERE "allowNodeNames)",
            adm_printable(name, shown, sizeof(shown)));
    if (jsn_str(json_object_get(spec, "nodeSelector"), HOSTNAME_LABEL))
        return errbuf_fmt(msg, len, -EPERM,
                          "spec.nodeSelector[" HOSTNAME_LABEL
                          "]: naming the provider's nodes is not "
                          "allowed on this provider (" WHERE "allowNodeNames)");
    for (size_t i = 0; i < json_array_size(req) && i < ADM_PLACEMENT_MAX_ITEMS; i++)
        if ((e = node_named(json_array_get(req, i), &field)) >= 0)
            return errbuf_fmt(
                msg, len, -EPERM,
                "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                ".nodeSelectorTerms[%zu].%s[%ld]: naming the provider's nodes is not "
                "allowed on this provider (" WHERE "allowNodeNames)",
                i, field, e);
    for (size_t i = 0; i < json_array_size(pref) && i < ADM_PLACEMENT_MAX_ITEMS; i++)
        if ((e = node_named(json_object_get(json_array_get(pref, i), "preference"), &field)) >= 0)
            return errbuf_fmt(
                msg, len, -EPERM,
                "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
                "[%zu].preference.%s[%ld]: naming the provider's nodes is not allowed on "
                "this provider (" WHERE "allowNodeNames)",
                i, field, e);
    return 0;
}

static bool standard_toleration(const char *key)
{
    return strcmp(key, PEER_VNODE_TAINT_KEY) == 0 ||
           strcmp(key, "node.kubernetes.io/not-ready") == 0 ||
           strcmp(key, "node.kubernetes.io/unreachable") == 0;
}

static int check_tolerations(const json_t *spec, const json_t *placement, char *msg, size_t len)
{
    const json_t *tols = json_object_get(spec, "tolerations");
    char shown[80];

    if (json_array_size(tols) > ADM_PLACEMENT_MAX_ITEMS)
        return errbuf_fmt(msg, len, -EPERM, "spec.tolerations: more than %d tolerations",
                          ADM_PLACEMENT_MAX_ITEMS);
    for (size_t i = 0; i < json_array_size(tols); i++) {
        const char *key = jsn_str(json_array_get(tols, i), "key");

        if (!key || !*key) {
            if (allowed(placement, "allowedTolerations", NULL, true))
                continue;
            return errbuf_fmt(msg, len, -EPERM,
                              "spec.tolerations[%zu] has no key: tolerating every taint of the "
                              "provider is not allowed (\"*\" in " WHERE "allowedTolerations)",
                              i);
        }
        if (standard_toleration(key) || allowed(placement, "allowedTolerations", key, true))
            continue;
        return errbuf_fmt(
            msg, len, -EPERM,
            "spec.tolerations[%zu].key \"%s\": tolerating the provider's taints is not "
            "allowed on this provider (allowed: " WHERE "allowedTolerations)",
            i, adm_printable(key, shown, sizeof(shown)));
    }
    return 0;
}

int adm_placement_check(const json_t *pod, const json_t *placement, char *msg, size_t len)
{
    const json_t *spec = json_object_get(pod, "spec"), *nn;
    const char *pc = jsn_str(spec, "priorityClassName"), *rc = jsn_str(spec, "runtimeClassName");
    char shown[80];
    int r;

    if (!json_is_object(placement))
        placement = NULL;
    nn = json_object_get(placement, "allowNodeNames");
    if (!json_is_true(nn) && (r = check_nodes(spec, msg, len)) < 0)
        return r;
    if ((r = check_tolerations(spec, placement, msg, len)) < 0)
        return r;
    if (pc && *pc && !allowed(placement, "allowedPriorityClasses", pc, false))
        return errbuf_fmt(
            msg, len, -EPERM,
            "spec.priorityClassName \"%s\" is not allowed on this provider (allowed: " WHERE
            "allowedPriorityClasses)",
            adm_printable(pc, shown, sizeof(shown)));
    if (rc && *rc && !allowed(placement, "allowedRuntimeClasses", rc, false))
        return errbuf_fmt(
            msg, len, -EPERM,
            "spec.runtimeClassName \"%s\" is not allowed on this provider (allowed: " WHERE
            "allowedRuntimeClasses)",
            adm_printable(rc, shown, sizeof(shown)));
    return 0;
}
