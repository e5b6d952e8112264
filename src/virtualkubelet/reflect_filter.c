/* reflect_filter: the allow and deny lists of the object reflectors (reflect.h, docs/offloading.md
 * "Objects").
 *
 * A pattern is "namespace/name" where '*' matches any run of characters (none included). Both
 * halves are made of what Kubernetes names may hold (lowercase letters, digits, '-', '.') and '*',
 * so a pattern has exactly one '/', and so has every "namespace/name" it is matched against: a
 * '*' can never swallow the slash, and matching the whole string is matching both halves.
 * Matching is the classic greedy glob with one backtracking point: O(len(pattern) * len(subject))
 * at worst, both bounded (VK_REFLECT_PATTERN_MAX, a namespace and a name). */
#include "virtualkubelet/reflect.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/strutil.h"
#include "common/xalloc.h"

static const char *const kind_names[_VK_REFLECT_KINDS] = {
    [VK_REFLECT_SERVICES] = "services",
    [VK_REFLECT_ENDPOINTSLICES] = "endpointslices",
    [VK_REFLECT_CONFIGMAPS] = "configmaps",
    [VK_REFLECT_SECRETS] = "secrets",
};

const char *vk_reflect_kind_name(enum vk_reflect_kind kind)
{
    return (int)kind >= 0 && kind < _VK_REFLECT_KINDS ? kind_names[kind] : NULL;
}

static bool pattern_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '*';
}

/* 0, or -EINVAL with the reason (the pattern is not echoed: it may be anything). */
static int pattern_check(const char *p, const char **ret_why)
{
    size_t n = strlen(p), slash = 0, nslash = 0;

    if (n < 3 || n > VK_REFLECT_PATTERN_MAX) {
        *ret_why = "must be 3 to 320 characters long";
        return -EINVAL;
    }
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '/') {
            slash = i;
            nslash++;
        } else if (!pattern_char(p[i])) {
            *ret_why = "may hold only a-z, 0-9, '-', '.', '*' and one '/'";
            return -EINVAL;
        }
    }
    if (nslash != 1 || slash == 0 || slash == n - 1) {
        *ret_why = "must be NAMESPACE/NAME (one '/', neither half empty)";
        return -EINVAL;
    }
    return 0;
}

void vk_reflect_filter_clear(struct vk_reflect_filter *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n_allow && i < VK_REFLECT_MAX_PATTERNS; i++)
        x_free(f->allow[i]);
    for (size_t i = 0; i < f->n_deny && i < VK_REFLECT_MAX_PATTERNS; i++)
        x_free(f->deny[i]);
    memset(f, 0, sizeof(*f));
}

static int parse_list(const json_t *obj, const char *kind, const char *list, char **out,
                      size_t *ret_n, char *err, size_t errlen)
{
    const json_t *arr = json_object_get(obj, list), *v;
    const char *why = NULL;
    size_t i;

    *ret_n = 0;
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr)) {
        snprintf(err, errlen, "reflection.%s.%s must be a list of strings", kind, list);
        return -EINVAL;
    }
    if (json_array_size(arr) > VK_REFLECT_MAX_PATTERNS) {
        snprintf(err, errlen, "reflection.%s.%s has %zu patterns, at most %d are allowed", kind,
                 list, json_array_size(arr), VK_REFLECT_MAX_PATTERNS);
        return -EINVAL;
    }
    json_array_foreach(arr, i, v)
    {
        const char *s = json_string_value(v);

        if (!s) {
            snprintf(err, errlen, "reflection.%s.%s[%zu] must be a string", kind, list, i);
            return -EINVAL;
        }
        if (pattern_check(s, &why) < 0) {
            snprintf(err, errlen, "reflection.%s.%s[%zu] %s", kind, list, i, why);
            return -EINVAL;
        }
        out[i] = x_strdup(s);
        if (!out[i]) {
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
        *ret_n = i + 1;
    }
    return 0;
}

int vk_reflect_filter_parse(const json_t *obj, enum vk_reflect_kind kind,
                            struct vk_reflect_filter *f, char *err, size_t errlen)
{
    struct vk_reflect_filter nf = {0};
    const char *kname = vk_reflect_kind_name(kind);
    int r;

    if (!f || !kname) {
        snprintf(err, errlen, "invalid arguments");
        return -EINVAL;
    }
    if (obj && !json_is_null(obj)) {
        if (!json_is_object(obj)) {
            snprintf(err, errlen, "reflection.%s must be an object with allow and deny", kname);
            return -EINVAL;
        }
        /* Unknown keys are ignored: the CRD prunes them, and a newer schema must not make an
         * older agent refuse the whole configuration. */
        r = parse_list(obj, kname, "allow", nf.allow, &nf.n_allow, err, errlen);
        if (r == 0)
            r = parse_list(obj, kname, "deny", nf.deny, &nf.n_deny, err, errlen);
        if (r < 0) {
            vk_reflect_filter_clear(&nf);
            return r;
        }
    }
    vk_reflect_filter_clear(f);
    *f = nf;
    return 0;
}

int vk_reflect_filters_from_config(const json_t *clusterconfig,
                                   struct vk_reflect_filter filters[_VK_REFLECT_KINDS], char *err,
                                   size_t errlen)
{
    struct vk_reflect_filter nf[_VK_REFLECT_KINDS];
    const json_t *refl = json_object_get(
        json_object_get(json_object_get(clusterconfig, "spec"), "offloadingConfig"), "reflection");
    int r = 0;

    if (!filters) {
        snprintf(err, errlen, "invalid arguments");
        return -EINVAL;
    }
    memset(nf, 0, sizeof(nf));
    if (refl && !json_is_null(refl) && !json_is_object(refl)) {
        snprintf(err, errlen, "offloadingConfig.reflection must be an object");
        return -EINVAL;
    }
    for (int k = 0; k < _VK_REFLECT_KINDS && r == 0; k++)
        r = vk_reflect_filter_parse(json_object_get(refl, kind_names[k]), k, &nf[k], err, errlen);
    for (int k = 0; k < _VK_REFLECT_KINDS; k++) {
        if (r == 0) {
            vk_reflect_filter_clear(&filters[k]);
            filters[k] = nf[k];
        } else {
            vk_reflect_filter_clear(&nf[k]);
        }
    }
    return r;
}

static bool any_match(char *const *pats, size_t n, const char *subject)
{
    for (size_t i = 0; i < n && i < VK_REFLECT_MAX_PATTERNS; i++)
        if (pats[i] && str_glob(pats[i], subject))
            return true;
    return false;
}

bool vk_reflect_filter_match(const struct vk_reflect_filter *f, const char *ns, const char *name)
{
    char subject[64 + 1 + 254];
    int n;

    if (!ns || !name || !*ns || !*name || strchr(ns, '/') || strchr(name, '/'))
        return false; /* not Kubernetes names: a star could take the slash */
    n = snprintf(subject, sizeof(subject), "%s/%s", ns, name);
    if (n < 0 || (size_t)n >= sizeof(subject))
        return false; /* longer than any Kubernetes namespace and name */
    if (!f)
        return true;
    if (any_match(f->deny, f->n_deny, subject))
        return false;
    return f->n_allow == 0 || any_match(f->allow, f->n_allow, subject);
}
