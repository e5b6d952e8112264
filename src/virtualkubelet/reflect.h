/* reflect: the virtual kubelet's object reflectors (docs/offloading.md, "Each virtual kubelet"):
 * services, endpointslices, configmaps and secrets (reflect_objects.c), with their reflection
 * filters (reflect_filter.c). They implement struct vk_reflector_ops (offloading/reflector.h, with
 * the labels and the environment every reflector shares); the pods reflector is pod offloading's
 * (offloading/pods.h). A virtual kubelet (vk.c) owns one instance of each. */
#ifndef CLIQO_VIRTUALKUBELET_REFLECT_H
#define CLIQO_VIRTUALKUBELET_REFLECT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "offloading/reflector.h"

/* The reflection filters of one kind: "namespace/name" patterns where '*' matches any run of
 * characters; an object is reflected when it matches no deny pattern and (allow is empty or it
 * matches an allow pattern). */
#define VK_REFLECT_MAX_PATTERNS 64
#define VK_REFLECT_PATTERN_MAX  320 /* a namespace (63), '/', a name (253), a little slack */
struct vk_reflect_filter {
    size_t n_allow, n_deny;
    char *allow[VK_REFLECT_MAX_PATTERNS];
    char *deny[VK_REFLECT_MAX_PATTERNS];
};

enum vk_reflect_kind {
    VK_REFLECT_SERVICES,
    VK_REFLECT_ENDPOINTSLICES,
    VK_REFLECT_CONFIGMAPS,
    VK_REFLECT_SECRETS,
    _VK_REFLECT_KINDS,
};

extern const struct vk_reflector_ops vk_reflect_services;
extern const struct vk_reflector_ops vk_reflect_endpointslices;
extern const struct vk_reflector_ops vk_reflect_configmaps;
extern const struct vk_reflector_ops vk_reflect_secrets;

/* Filters: parses a ClusterConfig `reflection.<kind>` object ({allow: [..], deny: [..]}; NULL or
 * absent: the defaults) into f (previous content freed). Returns 0 or -EINVAL with a reason in err
 * (f unchanged). vk_reflect_filter_match tells whether ns/name is reflected. */
int vk_reflect_filter_parse(const json_t *obj, enum vk_reflect_kind kind,
                            struct vk_reflect_filter *f, char *err, size_t errlen);
bool vk_reflect_filter_match(const struct vk_reflect_filter *f, const char *ns, const char *name);
void vk_reflect_filter_clear(struct vk_reflect_filter *f);
/* All four from a ClusterConfig (spec.offloadingConfig.reflection; NULL or absent: the defaults)
 * into filters[_VK_REFLECT_KINDS]: all or nothing, 0 or -EINVAL with a reason in err. */
int vk_reflect_filters_from_config(const json_t *clusterconfig,
                                   struct vk_reflect_filter filters[_VK_REFLECT_KINDS], char *err,
                                   size_t errlen);
/* The object reflectors' metrics (cliqo_vk_reflect_*, labels peer and kind) in registry reg (NULL:
 * none): made by whoever creates the reflectors and given to each through env->metrics, freed after
 * the last of them is destroyed (NULL-safe). Families the registry refuses are left off with a
 * warning: the reflectors then count nothing. Returns 0, -EINVAL or -ENOMEM. */
struct metrics_registry;
int vk_reflect_metrics_new(struct metrics_registry *reg, struct vk_reflect_metrics **ret);
void vk_reflect_metrics_free(struct vk_reflect_metrics *m);

/* "services", "endpointslices", "configmaps", "secrets" (NULL for another value). */
const char *vk_reflect_kind_name(enum vk_reflect_kind kind);

#endif
