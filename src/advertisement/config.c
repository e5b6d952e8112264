/* advcfg: see config.h. */
#include "advertisement/config.h"

#include "common/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const json_t *path(const json_t *o, const char *a, const char *b)
{
    o = json_object_get(o, a);
    return b ? json_object_get(o, b) : o;
}

static unsigned uint_in(const json_t *v, unsigned lo, unsigned hi, unsigned def)
{
    json_int_t i;

    if (!json_is_integer(v))
        return def;
    i = json_integer_value(v);
    return i >= (json_int_t)lo && i <= (json_int_t)hi ? (unsigned)i : def;
}

static json_t *list_ref(const json_t *v, bool array)
{
    if (array ? !json_is_array(v) : !json_is_object(v))
        return NULL;
    return json_incref((json_t *)v);
}

const char *advcfg_offer_source_name(enum advcfg_offer_source s)
{
    switch (s) {
    case ADVCFG_OFFER_CLUSTER:
        return "Cluster";
    case ADVCFG_OFFER_BROKER:
        return "Broker";
    default:
        return "invalid";
    }
}

/* outgoingConfig.offerSource: absent or null is the default; anything but the two names is
 * refused (config.h). */
static enum advcfg_offer_source offer_source(const json_t *v, char *err, size_t errlen)
{
    const char *s = json_string_value(v);

    if (!v || json_is_null(v) || (s && strcmp(s, "Cluster") == 0))
        return ADVCFG_OFFER_CLUSTER;
    if (s && strcmp(s, "Broker") == 0)
        return ADVCFG_OFFER_BROKER;
    if (s)
        snprintf(err, errlen,
                 "advertisementConfig.outgoingConfig.offerSource \"%.32s%s\" is neither Cluster "
                 "nor Broker",
                 s, strlen(s) > 32 ? "..." : "");
    else
        snprintf(err, errlen,
                 "advertisementConfig.outgoingConfig.offerSource must be a string, Cluster or "
                 "Broker");
    return ADVCFG_OFFER_INVALID;
}

void advcfg_read(const json_t *cc, struct adv_config *ret)
{
    const json_t *adv = path(json_object_get(cc, "spec"), "advertisementConfig", NULL);
    const json_t *out = json_object_get(adv, "outgoingConfig");
    const json_t *in = json_object_get(adv, "ingoingConfig");
    const char *s;

    memset(ret, 0, sizeof(*ret));
    ret->offer_source =
        offer_source(json_object_get(out, "offerSource"), ret->error, sizeof(ret->error));
    ret->percent = uint_in(json_object_get(out, "resourceSharingPercentage"), 0, 100, 30);
    ret->enabled = !json_is_false(json_object_get(out, "enableBroadcaster"));
    ret->refresh_s = uint_in(json_object_get(out, "refreshSeconds"), 1, 86400, 600);
    ret->ttl_s = uint_in(json_object_get(out, "ttlSeconds"), 2, 604800, 1800);
    ret->threshold = uint_in(json_object_get(out, "updateThresholdPercentage"), 0, 100, 5);
    ret->per_cluster = list_ref(json_object_get(out, "perCluster"), true);
    ret->prices = list_ref(json_object_get(out, "prices"), false);

    s = json_string_value(json_object_get(in, "acceptPolicy"));
    ret->accept = s && strcmp(s, "Manual") == 0 ? ADVCFG_MANUAL : ADVCFG_AUTO_ACCEPT_MAX;
    ret->max_accept = uint_in(json_object_get(in, "maxAcceptableAdvertisement"), 0, 1000000, 5);
    ret->allow = list_ref(json_object_get(in, "allowList"), true);
    ret->deny = list_ref(json_object_get(in, "denyList"), true);
    s = json_string_value(json_object_get(in, "virtualKubeletMode"));
    ret->vk_mode = s && strcmp(s, "Deployment") == 0 ? ADVCFG_VK_DEPLOYMENT : ADVCFG_VK_EMBEDDED;
    s = json_string_value(json_object_get(in, "virtualKubeletImage"));
    snprintf(ret->vk_image, sizeof(ret->vk_image), "%s",
             s && *s && strlen(s) < sizeof(ret->vk_image) ? s : "");

    ret->keepalive_retry_s = uint_in(json_object_get(adv, "keepaliveRetryTime"), 1, 3600, 20);
    ret->keepalive_threshold = uint_in(json_object_get(adv, "keepaliveThreshold"), 1, 1000, 3);
}

void advcfg_done(struct adv_config *c)
{
    if (!c)
        return;
    json_decref(c->per_cluster);
    json_decref(c->prices);
    json_decref(c->allow);
    json_decref(c->deny);
    c->per_cluster = c->prices = c->allow = c->deny = NULL;
}

bool advcfg_list_has(const json_t *list, const char *id)
{
    size_t i;
    json_t *v;

    if (!id)
        return false;
    json_array_foreach(list, i, v)
    {
        const char *s = json_string_value(v);

        if (s && strcmp(s, id) == 0)
            return true;
    }
    return false;
}

static int parse_fixed(const json_t *res, struct shr_list *fixed)
{
    const char *name;
    json_t *v;
    char num[32];

    memset(fixed, 0, sizeof(*fixed));
    json_object_foreach((json_t *)res, name, v)
    {
        const char *text = json_string_value(v);
        int64_t amount;

        if (json_is_integer(v)) {
            snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
            text = num;
        }
        if (!text || fixed->n >= SHR_MAX_RESOURCES || strlen(name) >= SHR_NAME_MAX ||
            shr_parse_quantity(name, text, &amount) < 0 || amount < 0)
            return -EINVAL;
        snprintf(fixed->items[fixed->n].name, SHR_NAME_MAX, "%s", name);
        fixed->items[fixed->n].value = amount;
        fixed->n++;
    }
    return 0;
}

int advcfg_policy_for(const struct adv_config *c, const char *id, struct shr_policy *ret,
                      struct shr_list *fixed, char *sig, size_t sigsize)
{
    size_t i;
    json_t *e;
    int r = 0;

    ret->percent = c->percent;
    ret->fixed = NULL;
    json_array_foreach(c->per_cluster, i, e)
    {
        const char *cid = json_string_value(json_object_get(e, "clusterID"));
        const json_t *res = json_object_get(e, "resources");
        const json_t *pct = json_object_get(e, "percentage");

        if (!cid || !id || strcmp(cid, id) != 0)
            continue;
        if (json_is_object(res)) {
            if (parse_fixed(res, fixed) == 0) {
                char *dump = json_dumps(res, JSON_COMPACT | JSON_SORT_KEYS);

                ret->fixed = fixed;
                snprintf(sig, sigsize, "fixed:%s", dump ? dump : "?");
                x_free(dump);
                return 0;
            }
            r = -EINVAL;
            break;
        }
        if (json_is_integer(pct) && json_integer_value(pct) >= 0 &&
            json_integer_value(pct) <= 100) {
            ret->percent = (unsigned)json_integer_value(pct);
            snprintf(sig, sigsize, "cluster:%u", ret->percent);
            return 0;
        }
        r = -EINVAL;
        break;
    }
    snprintf(sig, sigsize, "global:%u", ret->percent);
    return r;
}
