#include "admission/offer.h"
#include "admission/review.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct shr_amount *find(struct shr_list *l, const char *name, bool create)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i].name, name) == 0)
            return &l->items[i];
    if (!create || l->n >= SHR_MAX_RESOURCES || strlen(name) >= SHR_NAME_MAX)
        return NULL;
    snprintf(l->items[l->n].name, SHR_NAME_MAX, "%s", name);
    l->items[l->n].value = 0;
    return &l->items[l->n++];
}

static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;

    return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

enum acc_mode { ACC_SUM, ACC_MAX };

/* Accumulates a map of quantities into l. */
static int acc_map(struct shr_list *l, const json_t *map, enum acc_mode mode, char *err,
                   size_t errlen)
{
    const char *k;
    json_t *v;

    if (!map || json_is_null(map))
        return 0;
    if (!json_is_object(map)) {
        snprintf(err, errlen, "a list of requests is not an object");
        return -EINVAL;
    }
    json_object_foreach((json_t *)map, k, v)
    {
        struct shr_amount *a;
        int64_t x;
        char shown[64];

        if (strcmp(k, "pods") == 0)
            continue; /* a pod is one pod, whatever it says */
        if (!json_is_string(v) || shr_parse_quantity(k, json_string_value(v), &x) < 0) {
            snprintf(err, errlen, "the request of %s is not a valid quantity",
                     adm_printable(k, shown, sizeof(shown)));
            return -EINVAL;
        }
        a = find(l, k, true);
        if (!a) {
            snprintf(err, errlen, "too many resource names");
            return -ENOSPC;
        }
        if (mode == ACC_SUM)
            a->value = sat_add(a->value, x);
        else if (x > a->value)
            a->value = x;
    }
    return 0;
}

static int acc_containers(struct shr_list *l, const json_t *list, enum acc_mode mode, char *err,
                          size_t errlen)
{
    for (size_t i = 0; i < json_array_size(list); i++) {
        int rc = acc_map(
            l, json_object_get(json_object_get(json_array_get(list, i), "resources"), "requests"),
            mode, err, errlen);

        if (rc < 0)
            return rc;
    }
    return 0;
}

/* A struct shr_list is 8.7 KB (SHR_MAX_RESOURCES names of SHR_NAME_MAX bytes): the functions below
 * only ever touch its first n items (no zeroing or copying of the whole), since the offer
 * enforcement runs this for every pod of a consumer on every admission (bench/bench-admission). */
static void copy_list(struct shr_list *dst, const struct shr_list *src)
{
    dst->n = src->n;
    memcpy(dst->items, src->items, src->n * sizeof(src->items[0]));
}

int adm_offer_pod_requests(const json_t *pod, struct shr_list *ret, char *err, size_t errlen)
{
    const json_t *spec = json_object_get(pod, "spec");
    struct shr_list sum, init, ov, out;
    char dummy[8];
    int rc;

    sum.n = init.n = ov.n = out.n = 0;
    if (!err) {
        err = dummy;
        errlen = sizeof(dummy);
    }
    if ((rc = acc_containers(&sum, json_object_get(spec, "containers"), ACC_SUM, err, errlen)) <
            0 ||
        (rc = acc_containers(&init, json_object_get(spec, "initContainers"), ACC_MAX, err,
                             errlen)) < 0 ||
        (rc = acc_map(&ov, json_object_get(spec, "overhead"), ACC_SUM, err, errlen)) < 0)
        return rc;
    /* max(sum, init) + overhead; zero amounts say nothing and are left out */
    copy_list(&out, &sum);
    for (size_t i = 0; i < init.n; i++) {
        struct shr_amount *a = find(&out, init.items[i].name, true);

        if (!a) {
            snprintf(err, errlen, "too many resource names");
            return -ENOSPC;
        }
        if (init.items[i].value > a->value)
            a->value = init.items[i].value;
    }
    for (size_t i = 0; i < ov.n; i++) {
        struct shr_amount *a = find(&out, ov.items[i].name, true);

        if (!a) {
            snprintf(err, errlen, "too many resource names");
            return -ENOSPC;
        }
        a->value = sat_add(a->value, ov.items[i].value);
    }
    rc = 0;
    for (size_t i = 0; i < out.n; i++)
        rc += out.items[i].value > 0;
    if (rc >= SHR_MAX_RESOURCES) {
        snprintf(err, errlen, "too many resource names");
        return -ENOSPC;
    }
    ret->n = 0;
    for (size_t i = 0; i < out.n; i++)
        if (out.items[i].value > 0)
            ret->items[ret->n++] = out.items[i];
    snprintf(ret->items[ret->n].name, SHR_NAME_MAX, "pods");
    ret->items[ret->n++].value = 1;
    return 0;
}

bool adm_offer_pod_live(const json_t *pod)
{
    const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));

    return !phase || (strcmp(phase, "Succeeded") != 0 && strcmp(phase, "Failed") != 0);
}

int adm_offer_add(struct shr_list *a, const struct shr_list *b)
{
    for (size_t i = 0; i < b->n; i++) {
        struct shr_amount *x = find(a, b->items[i].name, true);

        if (!x)
            return -ENOSPC;
        x->value = sat_add(x->value, b->items[i].value);
    }
    return 0;
}

int adm_offer_from_quantities(const json_t *q, struct shr_list *ret, size_t *ret_bad)
{
    struct shr_list l;
    size_t badn = 0;
    const char *k;
    json_t *v;

    l.n = 0;

    if (q && !json_is_object(q))
        return -EINVAL;
    json_object_foreach((json_t *)q, k, v)
    {
        int64_t x;
        struct shr_amount *a;

        if (!json_is_string(v) || shr_parse_quantity(k, json_string_value(v), &x) < 0) {
            badn++;
            continue;
        }
        a = find(&l, k, true);
        if (!a)
            return -ENOSPC;
        a->value = x;
    }
    *ret = l;
    if (ret_bad)
        *ret_bad = badn;
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(((const struct shr_amount *)a)->name, ((const struct shr_amount *)b)->name);
}

int adm_offer_check(const struct shr_list *used, const struct shr_list *pod,
                    const struct shr_list *offer, const char *consumer, char *msg, size_t len)
{
    struct shr_list sorted;

    copy_list(&sorted, pod);

    qsort(sorted.items, sorted.n, sizeof(sorted.items[0]), name_cmp);
    for (size_t i = 0; i < sorted.n; i++) {
        const char *name = sorted.items[i].name;
        bool found;
        int64_t u = shr_list_get(used, name, &found), o = shr_list_get(offer, name, &found);
        int64_t want = sorted.items[i].value;
        char us[64], ws[64], os[64], shown[64];

        if (want <= 0 || sat_add(u, want) <= o)
            continue;
        if (shr_format_quantity(name, u, us, sizeof(us)) < 0)
            snprintf(us, sizeof(us), "?");
        if (shr_format_quantity(name, want, ws, sizeof(ws)) < 0)
            snprintf(ws, sizeof(ws), "?");
        if (shr_format_quantity(name, o, os, sizeof(os)) < 0)
            snprintf(os, sizeof(os), "?");
        snprintf(msg, len, "offer exceeded: %s %s requested + %s > %s offered to %s",
                 adm_printable(name, shown, sizeof(shown)), us, ws, os,
                 consumer ? consumer : "the consumer");
        return -EDQUOT;
    }
    return 0;
}
