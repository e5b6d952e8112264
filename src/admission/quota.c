/* admission/quota: see quota.h. */
#include "admission/quota.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kube/quantity.h"

#define KEY_MAX 256

/* A resource name a quota can hold: a qualified name of at most 253 bytes, printable, no space. */
static bool name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;

    if (n == 0 || n > 253)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.' || c == '_' || c == '/'))
            return false;
    }
    return true;
}

const char *adm_quota_key(const char *resource, char *buf, size_t size)
{
    if (!name_ok(resource) || !buf || size < KEY_MAX)
        return NULL;
    if (strcmp(resource, "pods") == 0) {
        snprintf(buf, size, "pods");
        return buf;
    }
    /* Compute and storage resources a pod requests, and extended resources (a domain prefix
     * outside kubernetes.io): quota counts their requests. Node-level names (attachable volumes,
     * "storage" of claims) and unknown unprefixed names are left to the webhook. */
    if (strcmp(resource, "cpu") == 0 || strcmp(resource, "memory") == 0 ||
        strcmp(resource, "ephemeral-storage") == 0 || strncmp(resource, "hugepages-", 10) == 0 ||
        (strchr(resource, '/') && !strstr(resource, "kubernetes.io/"))) {
        snprintf(buf, size, "requests.%s", resource);
        return buf;
    }
    return NULL;
}

/* The canonical text of a non-negative quantity, or -EINVAL. */
static int canonical(const json_t *v, char out[KQ_STR_MAX])
{
    struct kq q;

    if (!json_is_string(v) || kq_parse(json_string_value(v), &q) < 0 || kq_sign(&q) < 0 ||
        kq_format(&q, out, KQ_STR_MAX) < 0)
        return -EINVAL;
    return 0;
}

static int set_str(json_t *o, const char *k, const char *v)
{
    return json_object_set_new(o, k, json_string(v));
}

json_t *adm_quota_consumer_hard(const json_t *offer, bool *ret_bad)
{
    json_t *hard = json_object();
    const char *k;
    json_t *v;
    bool bad = false;

    if (!hard)
        return NULL;
    if (set_str(hard, "count/configmaps", ADM_QUOTA_CONFIGMAPS) < 0 ||
        set_str(hard, "count/secrets", ADM_QUOTA_SECRETS) < 0 ||
        set_str(hard, "count/services", ADM_QUOTA_SERVICES) < 0 ||
        set_str(hard, "count/endpointslices.discovery.k8s.io", ADM_QUOTA_ENDPOINTSLICES) < 0 ||
        set_str(hard, "services.loadbalancers", "0") < 0 ||
        set_str(hard, "services.nodeports", "0") < 0)
        goto fail;
    if (offer && !json_is_object(offer))
        bad = true;
    json_object_foreach((json_t *)offer, k, v)
    {
        char key[KEY_MAX], text[KQ_STR_MAX];

        if (!adm_quota_key(k, key, sizeof(key)))
            continue;
        if (canonical(v, text) < 0) {
            bad = true;
            continue;
        }
        if (set_str(hard, key, text) < 0)
            goto fail;
    }
    if (ret_bad)
        *ret_bad = bad;
    return hard;
fail:
    json_decref(hard);
    return NULL;
}

/* The configured default of one resource, or def. */
static const char *default_of(const json_t *dr, const char *name, const char *def, bool *bad,
                              char buf[KQ_STR_MAX])
{
    const json_t *v = json_object_get(dr, name);

    if (!v)
        return def;
    if (canonical(v, buf) < 0) {
        *bad = true;
        return def;
    }
    return buf;
}

json_t *adm_limitrange_spec(const json_t *clusterconfig, bool *ret_bad)
{
    const json_t *dr =
        json_object_get(json_object_get(json_object_get(clusterconfig, "spec"), "offloadingConfig"),
                        "defaultRequests");
    char cpu_buf[KQ_STR_MAX], mem_buf[KQ_STR_MAX];
    bool bad = dr && !json_is_object(dr);
    const char *cpu, *mem;

    if (!json_is_object(dr))
        dr = NULL;
    cpu = default_of(dr, "cpu", ADM_DEFAULT_CPU, &bad, cpu_buf);
    mem = default_of(dr, "memory", ADM_DEFAULT_MEMORY, &bad, mem_buf);
    if (ret_bad)
        *ret_bad = bad;
    return json_pack("{s:[{s:s,s:{s:s,s:s}}]}", "limits", "type", "Container", "defaultRequest",
                     "cpu", cpu, "memory", mem);
}

static bool same_quantity(const json_t *a, const json_t *b)
{
    struct kq qa, qb;

    if (!json_is_string(a) || !json_is_string(b))
        return false;
    if (kq_parse(json_string_value(a), &qa) < 0 || kq_parse(json_string_value(b), &qb) < 0)
        return strcmp(json_string_value(a), json_string_value(b)) == 0;
    return kq_cmp(&qa, &qb) == 0;
}

bool adm_quantities_equal(const json_t *a, const json_t *b)
{
    const char *k;
    json_t *v;

    if (!json_is_object(a) || !json_is_object(b) || json_object_size(a) != json_object_size(b))
        return false;
    json_object_foreach((json_t *)a, k, v)
    {
        if (!same_quantity(v, json_object_get(b, k)))
            return false;
    }
    return true;
}

bool adm_limitrange_equal(const json_t *desired, const json_t *observed)
{
    const json_t *dl = json_object_get(desired, "limits"),
                 *ol = json_object_get(observed, "limits");
    size_t i;
    const json_t *d;

    if (!json_is_array(dl) || !json_is_array(ol) || json_array_size(dl) != json_array_size(ol))
        return false;
    json_array_foreach(dl, i, d)
    {
        const json_t *o = json_array_get(ol, i);
        const char *k;
        json_t *v;

        if (!json_equal(json_object_get(d, "type"), json_object_get(o, "type")))
            return false;
        /* Every field of the observed entry must be one we set (no limits, max, min added). */
        json_object_foreach((json_t *)o, k, v)
        {
            if (!json_object_get(d, k))
                return false;
        }
        if (!adm_quantities_equal(json_object_get(d, "defaultRequest"),
                                  json_object_get(o, "defaultRequest")))
            return false;
    }
    return true;
}

json_t *adm_quantities_merge_patch(const json_t *desired, const json_t *observed)
{
    json_t *p = json_deep_copy(desired);
    const char *k;
    json_t *v;

    if (!p)
        return NULL;
    json_object_foreach((json_t *)observed, k, v)
    {
        if (!json_object_get(desired, k) && json_object_set_new(p, k, json_null()) < 0) {
            json_decref(p);
            return NULL;
        }
    }
    return p;
}
