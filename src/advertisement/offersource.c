/* advsrc: see offersource.h. */
#include "advertisement/offersource.h"

#include "kube/names.h"
#include "peering/identity.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int advsrc_name(const char *id, char *buf, size_t size)
{
    int n;

    if (!peer_cluster_id_valid(id) || !buf)
        return -EINVAL;
    n = snprintf(buf, size, ADVSRC_PREFIX "%s", id);
    return n < 0 || (size_t)n >= size ? -ENOSPC : 0;
}

const char *advsrc_consumer_of(const char *name)
{
    size_t n = strlen(ADVSRC_PREFIX);

    if (!name || strncmp(name, ADVSRC_PREFIX, n) != 0 || !peer_cluster_id_valid(name + n))
        return NULL;
    return name + n;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct shr_amount *)a)->name, ((const struct shr_amount *)b)->name);
}

/* One entry of the map into *ret, or -EINVAL with the reason. */
static int entry(const char *name, const json_t *v, struct shr_amount *ret, char *err,
                 size_t errlen)
{
    char num[32];
    const char *text = json_string_value(v);
    struct kq q;
    int64_t amount;

    if (strlen(name) >= SHR_NAME_MAX || !kname_label_key(name)) {
        snprintf(err, errlen, "data.resources: \"%.64s\" is not a resource name", name);
        return -EINVAL;
    }
    if (json_is_integer(v)) {
        snprintf(num, sizeof(num), "%" PRId64, (int64_t)json_integer_value(v));
        text = num;
    }
    if (!text) {
        snprintf(err, errlen, "data.resources[%s] is not a quantity string", name);
        return -EINVAL;
    }
    if (kq_parse(text, &q) < 0) {
        snprintf(err, errlen, "data.resources[%s] \"%.32s\" is not a valid quantity", name, text);
        return -EINVAL;
    }
    if (kq_sign(&q) < 0) {
        snprintf(err, errlen, "data.resources[%s] \"%.32s\" is negative", name, text);
        return -EINVAL;
    }
    if (shr_parse_quantity(name, text, &amount) < 0) {
        snprintf(err, errlen, "data.resources[%s] \"%.32s\" is too large", name, text);
        return -EINVAL;
    }
    snprintf(ret->name, sizeof(ret->name), "%s", name);
    ret->value = amount;
    return 0;
}

int advsrc_parse(const json_t *cm, struct shr_list *ret, char *err, size_t errlen)
{
    const json_t *v = json_object_get(json_object_get(cm, "data"), ADVSRC_KEY);
    const char *text = json_string_value(v), *name;
    struct shr_list l = {0};
    json_error_t je;
    json_t *map = NULL, *q;
    int r = -EINVAL;

    if (json_is_integer(v)) { /* advsrc_transform's mark of a value too long to keep */
        snprintf(err, errlen, "data.resources has %" PRId64 " bytes, more than the %d accepted",
                 (int64_t)json_integer_value(v), ADVSRC_MAX_BYTES);
        goto out;
    }
    if (!text) {
        snprintf(err, errlen, "data.resources is missing");
        goto out;
    }
    if (json_string_length(v) > ADVSRC_MAX_BYTES) {
        snprintf(err, errlen, "data.resources has %zu bytes, more than the %d accepted",
                 json_string_length(v), ADVSRC_MAX_BYTES);
        goto out;
    }
    map = json_loadb(text, json_string_length(v), JSON_REJECT_DUPLICATES, &je);
    if (!map) {
        snprintf(err, errlen, "data.resources is not JSON: %s (column %d)", je.text, je.column);
        /* jansson quotes the token it stopped at, control characters included: the reason goes
         * to a log line and an object's status, so one line of printable text */
        for (char *c = err; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                *c = '?';
        goto out;
    }
    if (!json_is_object(map)) {
        snprintf(err, errlen, "data.resources is not a JSON object of resource quantities");
        goto out;
    }
    if (json_object_size(map) > SHR_MAX_RESOURCES) {
        snprintf(err, errlen, "data.resources has %zu resources, more than the %d accepted",
                 json_object_size(map), SHR_MAX_RESOURCES);
        goto out;
    }
    json_object_foreach(map, name, q)
    {
        if (entry(name, q, &l.items[l.n], err, errlen) < 0)
            goto out;
        l.n++;
    }
    qsort(l.items, l.n, sizeof(l.items[0]), by_name);
    *ret = l;
    r = 0;
out:
    json_decref(map);
    return r;
}

void advsrc_nothing(struct shr_list *ret)
{
    static const char *const names[] = {"cpu", "memory", "pods"}; /* sorted */

    memset(ret, 0, sizeof(*ret));
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        snprintf(ret->items[ret->n++].name, SHR_NAME_MAX, "%s", names[i]);
}

int advsrc_choose(enum advcfg_offer_source source, unsigned threshold,
                  const struct shr_list *computed, const json_t *cm, struct advsrc_offer *ret,
                  char *err, size_t errlen)
{
    if (!ret || (source == ADVCFG_OFFER_CLUSTER && !computed))
        return -EINVAL;
    if (err && errlen)
        err[0] = '\0';
    memset(ret, 0, sizeof(*ret));
    switch (source) {
    case ADVCFG_OFFER_CLUSTER:
        ret->from = ADVSRC_FROM_CLUSTER;
        ret->amounts = *computed;
        ret->threshold = threshold;
        ret->node_details = true;
        return 0;
    case ADVCFG_OFFER_BROKER:
        if (!cm)
            ret->from = ADVSRC_FROM_BROKER_ABSENT;
        else if (advsrc_parse(cm, &ret->amounts, err, errlen) < 0)
            ret->from = ADVSRC_FROM_BROKER_INVALID;
        else
            ret->from = ADVSRC_FROM_BROKER;
        break;
    default:
        ret->from = ADVSRC_FROM_INVALID_SOURCE;
        break;
    }
    if (ret->from != ADVSRC_FROM_BROKER || ret->amounts.n == 0)
        advsrc_nothing(&ret->amounts); /* an empty map offers nothing too, in the same words */
    ret->threshold = 0;
    ret->node_details = false;
    return 0;
}

const char *advsrc_from_name(enum advsrc_from f)
{
    switch (f) {
    case ADVSRC_FROM_CLUSTER:
        return "cluster";
    case ADVSRC_FROM_BROKER:
        return "broker";
    case ADVSRC_FROM_BROKER_ABSENT:
        return "broker:absent";
    case ADVSRC_FROM_BROKER_INVALID:
        return "broker:invalid";
    default:
        return "source:invalid";
    }
}

void advsrc_transform(json_t *cm, void *data)
{
    json_t *meta = json_object_get(cm, "metadata"), *keep_meta, *keep_data, *v;
    static const char *const keys[] = {"name", "namespace", "resourceVersion"};
    const char *k;
    void *tmp;

    (void)data;
    if (!json_is_object(cm))
        return;
    keep_meta = json_object();
    keep_data = json_object();
    if (!keep_meta || !keep_data)
        goto out;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if ((v = json_object_get(meta, keys[i])) && json_object_set(keep_meta, keys[i], v) < 0)
            goto out;
    v = json_object_get(json_object_get(cm, "data"), ADVSRC_KEY);
    if (v && json_is_string(v) && json_string_length(v) > ADVSRC_MAX_BYTES)
        v = json_integer((json_int_t)json_string_length(v));
    else if (v)
        json_incref(v);
    if (v && json_object_set_new(keep_data, ADVSRC_KEY, v) < 0)
        goto out;
    /* Everything needed is copied: only now is the object changed. On ENOMEM above it stays
     * whole, which advsrc_parse reads the same. */
    if (json_object_set_new(cm, "metadata", keep_meta) < 0) {
        json_decref(keep_data); /* set_new released keep_meta; the object keeps what it had */
        return;
    }
    if (json_object_set_new(cm, "data", keep_data) < 0)
        return;
    json_object_foreach_safe(cm, tmp, k, v)
    {
        if (strcmp(k, "metadata") != 0 && strcmp(k, "data") != 0)
            json_object_del(cm, k);
    }
    return;
out:
    json_decref(keep_meta);
    json_decref(keep_data);
}
