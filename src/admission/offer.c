#include "admission/offer.h"
#include "admission/review.h"
#include "common/strutil.h"
#include "common/xalloc.h"

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

/* A sidecar: an init container with restartPolicy Always, which runs for the pod's whole life. */
static bool is_sidecar(const json_t *c)
{
    const char *p = json_string_value(json_object_get(c, "restartPolicy"));

    return p && strcmp(p, "Always") == 0;
}

/* dst[name] = max(dst[name], value) for every name of src, plus add[name] when add is not NULL. */
static int max_into(struct shr_list *dst, const struct shr_list *src, const struct shr_list *add,
                    char *err, size_t errlen)
{
    for (size_t i = 0; i < src->n; i++) {
        struct shr_amount *a = find(dst, src->items[i].name, true);
        bool found;
        int64_t v = src->items[i].value;

        if (!a) {
            snprintf(err, errlen, "too many resource names");
            return -ENOSPC;
        }
        if (add)
            v = sat_add(v, shr_list_get(add, src->items[i].name, &found));
        if (v > a->value)
            a->value = v;
    }
    return 0;
}

/* dst[name] = max(dst[name], src[name]) for the names of only (a sidecar's own requests). */
static int max_names(struct shr_list *dst, const struct shr_list *src, const struct shr_list *only,
                     char *err, size_t errlen)
{
    for (size_t i = 0; i < only->n; i++) {
        struct shr_amount *a = find(dst, only->items[i].name, true);
        int64_t v = shr_list_get(src, only->items[i].name, NULL);

        if (!a) {
            snprintf(err, errlen, "too many resource names");
            return -ENOSPC;
        }
        if (v > a->value)
            a->value = v;
    }
    return 0;
}

/* The init containers in their order, as the scheduler counts them: a regular one needs its
 * request on top of the sidecars started before it; a sidecar adds its request to those of the
 * sidecars before it, from its start to the pod's end. *init is the largest need while
 * initialising, *side the sidecars' sum (which the app containers run beside). After each
 * container *init holds at least *side for every name, so a sidecar can raise *init only at the
 * names it requests itself: the work is the containers' own requests, not the containers times
 * the names of the sum (116,000 sidecars without requests after one of 64 names, in a 3 MB review,
 * held the loop 1.7 s when the whole sum was compared after each). */
static int acc_init(struct shr_list *init, struct shr_list *side, const json_t *list, char *err,
                    size_t errlen)
{
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *c = json_array_get(list, i);
        struct shr_list one;
        int rc;

        one.n = 0;
        rc = acc_map(&one, json_object_get(json_object_get(c, "resources"), "requests"), ACC_SUM,
                     err, errlen);
        if (rc < 0)
            return rc;
        if (!is_sidecar(c)) {
            if ((rc = max_into(init, &one, side, err, errlen)) < 0)
                return rc;
            continue;
        }
        if (adm_offer_add(side, &one) < 0) {
            snprintf(err, errlen, "too many resource names");
            return -ENOSPC;
        }
        if ((rc = max_names(init, side, &one, err, errlen)) < 0)
            return rc;
    }
    return 0;
}

int adm_offer_pod_requests(const json_t *pod, struct shr_list *ret, char *err, size_t errlen)
{
    const json_t *spec = json_object_get(pod, "spec");
    struct shr_list sum, init, side, ov, out;
    char dummy[8];
    int rc;

    sum.n = init.n = side.n = ov.n = out.n = 0;
    if (!err) {
        err = dummy;
        errlen = sizeof(dummy);
    }
    if ((rc = acc_containers(&sum, json_object_get(spec, "containers"), ACC_SUM, err, errlen)) <
            0 ||
        (rc = acc_init(&init, &side, json_object_get(spec, "initContainers"), err, errlen)) < 0 ||
        (rc = acc_map(&ov, json_object_get(spec, "overhead"), ACC_SUM, err, errlen)) < 0)
        return rc;
    /* max(sum + sidecars, init) + overhead; zero amounts say nothing and are left out */
    copy_list(&out, &sum);
    if (adm_offer_add(&out, &side) < 0 || max_into(&out, &init, NULL, err, errlen) < 0 ||
        adm_offer_add(&out, &ov) < 0) {
        snprintf(err, errlen, "too many resource names");
        return -ENOSPC;
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

void adm_offer_sub(struct shr_list *a, const struct shr_list *b)
{
    for (size_t i = 0; i < b->n; i++) {
        struct shr_amount *x = find(a, b->items[i].name, false);

        if (x)
            x->value = x->value > b->items[i].value ? x->value - b->items[i].value : 0;
    }
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
                    const struct shr_list *offer, const char *consumer, bool figures, char *msg,
                    size_t len)
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
        if (!figures) {
            snprintf(msg, len, "offer exceeded: %s does not fit the offer to %s",
                     adm_printable(name, shown, sizeof(shown)),
                     consumer ? consumer : "the consumer");
            return -EDQUOT;
        }
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

/* ---- running totals ------------------------------------------------------------------------ */

struct usage_ns {
    struct usage_ns *next; /* in its bucket */
    size_t pods;           /* counted pods */
    size_t n, cap;         /* amounts */
    struct shr_amount *items;
    char name[]; /* the namespace */
};

struct adm_usage {
    struct usage_ns **buckets;
    size_t nbuckets, count, pods;
};

int adm_usage_new(struct adm_usage **ret)
{
    struct adm_usage *u = x_calloc(1, sizeof(*u));

    if (!u)
        return -ENOMEM;
    u->nbuckets = 64;
    u->buckets = x_calloc(u->nbuckets, sizeof(*u->buckets));
    if (!u->buckets) {
        x_free(u);
        return -ENOMEM;
    }
    *ret = u;
    return 0;
}

static void usage_ns_free(struct usage_ns *e)
{
    x_free(e->items);
    x_free(e);
}

void adm_usage_free(struct adm_usage *u)
{
    if (!u)
        return;
    for (size_t i = 0; i < u->nbuckets; i++)
        for (struct usage_ns *e = u->buckets[i], *next; e; e = next) {
            next = e->next;
            usage_ns_free(e);
        }
    x_free(u->buckets);
    x_free(u);
}

static struct usage_ns **usage_slot(const struct adm_usage *u, const char *ns)
{
    struct usage_ns **p = &u->buckets[str_fnv1a64(ns) & (u->nbuckets - 1)];

    while (*p && strcmp((*p)->name, ns) != 0)
        p = &(*p)->next;
    return p;
}

/* Doubles the buckets when the table is full (a failed growth keeps the table as it is). */
static void usage_grow(struct adm_usage *u)
{
    size_t n = u->nbuckets * 2;
    struct usage_ns **b;

    if (u->count < u->nbuckets || n > ADM_USAGE_MAX_NAMESPACES)
        return;
    b = x_calloc(n, sizeof(*b));
    if (!b)
        return;
    for (size_t i = 0; i < u->nbuckets; i++)
        for (struct usage_ns *e = u->buckets[i], *next; e; e = next) {
            size_t h = str_fnv1a64(e->name) & (n - 1);

            next = e->next;
            e->next = b[h];
            b[h] = e;
        }
    x_free(u->buckets);
    u->buckets = b;
    u->nbuckets = n;
}

static int usage_apply(struct usage_ns *e, const struct shr_list *req, int sign)
{
    for (size_t i = 0; i < req->n; i++) {
        struct shr_amount *a = NULL;

        for (size_t j = 0; j < e->n && !a; j++)
            if (strcmp(e->items[j].name, req->items[i].name) == 0)
                a = &e->items[j];
        if (!a && sign < 0)
            continue;
        if (!a) {
            if (e->n == e->cap) {
                size_t cap = e->cap ? e->cap * 2 : 4;
                struct shr_amount *items;

                if (cap > SHR_MAX_RESOURCES)
                    cap = SHR_MAX_RESOURCES;
                if (e->n >= cap)
                    return -ENOSPC;
                items = x_reallocarray(e->items, cap, sizeof(*items));
                if (!items)
                    return -ENOMEM;
                e->items = items;
                e->cap = cap;
            }
            a = &e->items[e->n++];
            snprintf(a->name, sizeof(a->name), "%s", req->items[i].name);
            a->value = 0;
        }
        if (sign > 0)
            a->value = sat_add(a->value, req->items[i].value);
        else
            a->value = a->value > req->items[i].value ? a->value - req->items[i].value : 0;
    }
    return 0;
}

int adm_usage_pod(struct adm_usage *u, const json_t *pod, int sign)
{
    const char *ns =
        json_string_value(json_object_get(json_object_get(pod, "metadata"), "namespace"));
    struct usage_ns **p, *e;
    struct shr_list req;
    size_t len;
    int rc;

    if (!ns || !ns[0] || !adm_offer_pod_live(pod))
        return 0;
    if ((rc = adm_offer_pod_requests(pod, &req, NULL, 0)) < 0)
        return rc;
    p = usage_slot(u, ns);
    e = *p;
    if (!e) {
        if (sign < 0)
            return 0;
        if (u->count >= ADM_USAGE_MAX_NAMESPACES)
            return -ENOSPC;
        len = strlen(ns);
        e = x_calloc(1, sizeof(*e) + len + 1);
        if (!e)
            return -ENOMEM;
        memcpy(e->name, ns, len + 1);
        *p = e;
        u->count++;
    }
    rc = usage_apply(e, &req, sign);
    if (rc == 0 && sign > 0) {
        e->pods++;
        u->pods++;
    } else if (rc == 0 && e->pods > 0) {
        e->pods--;
        u->pods--;
    }
    if (e->pods == 0) {
        *p = e->next;
        usage_ns_free(e);
        u->count--;
    } else {
        usage_grow(u);
    }
    return rc;
}

int adm_usage_add_ns(const struct adm_usage *u, const char *ns, struct shr_list *used)
{
    const struct usage_ns *e = ns ? *usage_slot(u, ns) : NULL;

    for (size_t i = 0; e && i < e->n; i++) {
        struct shr_amount *a = find(used, e->items[i].name, true);

        if (!a)
            return -ENOSPC;
        a->value = sat_add(a->value, e->items[i].value);
    }
    return 0;
}

size_t adm_usage_namespaces(const struct adm_usage *u)
{
    return u ? u->count : 0;
}

size_t adm_usage_pods(const struct adm_usage *u)
{
    return u ? u->pods : 0;
}
