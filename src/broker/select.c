/* brk select: see select.h. */
#include "broker/select.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/errbuf.h"
#include "kube/names.h"

#define MAX_UPTIME_S     315360000 /* ten years */
#define MAX_LATENCY_MS   600000
#define MAX_HYSTERESIS_S 86400
#define DEFAULT_HYST_S   60

void brk_policy_default(struct brk_policy *p)
{
    memset(p, 0, sizeof(*p));
    p->hysteresis_s = DEFAULT_HYST_S;
}

/* An integer field within [0, max]; absent leaves *out alone. */
static int int_field(const json_t *j, const char *name, int64_t max, int64_t *out, char *err,
                     size_t errlen)
{
    const json_t *v = json_object_get(j, name);

    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max)
        return errbuf_fmt(err, errlen, -EINVAL, "%s: expected an integer from 0 to %lld", name,
                          (long long)max);
    *out = json_integer_value(v);
    return 0;
}

/* A quantity string >= 0. */
static int quantity(const json_t *v, const char *what, const char *key, struct kq *out, char *err,
                    size_t errlen)
{
    const char *s = json_string_value(v);

    if (!s || kq_parse(s, out) < 0 || kq_sign(out) < 0)
        return errbuf_fmt(err, errlen, -EINVAL, "%s%s%s: expected a quantity of 0 or more", what,
                          key ? "." : "", key ? key : "");
    return 0;
}

int brk_policy_parse(const json_t *j, struct brk_policy *out, char *err, size_t errlen)
{
    static const char *const known[] = {"minUptimeSeconds", "maxLatencyMs",   "minFree",
                                        "maxPrice",         "requiredLabels", "hysteresisSeconds"};
    struct brk_policy p;
    const char *key;
    const json_t *v, *obj;
    int e;

    if (!json_is_object(j))
        return errbuf_fmt(err, errlen, -EINVAL, "policy: expected an object");
    json_object_foreach((json_t *)j, key, v)
    {
        size_t i = 0;

        while (i < sizeof(known) / sizeof(known[0]) && strcmp(key, known[i]) != 0)
            i++;
        if (i == sizeof(known) / sizeof(known[0]))
            return errbuf_fmt(err, errlen, -EINVAL, "unknown field \"%.64s\"", key);
    }
    brk_policy_default(&p);
    if ((e = int_field(j, "minUptimeSeconds", MAX_UPTIME_S, &p.min_uptime_s, err, errlen)) < 0 ||
        (e = int_field(j, "maxLatencyMs", MAX_LATENCY_MS, &p.max_latency_ms, err, errlen)) < 0 ||
        (e = int_field(j, "hysteresisSeconds", MAX_HYSTERESIS_S, &p.hysteresis_s, err, errlen)) < 0)
        return e;
    if ((obj = json_object_get(j, "minFree"))) {
        if (!json_is_object(obj))
            return errbuf_fmt(err, errlen, -EINVAL, "minFree: expected an object");
        if (json_object_size(obj) > BRK_MAX_FREE)
            return errbuf_fmt(err, errlen, -EINVAL, "minFree: at most %d resources", BRK_MAX_FREE);
        json_object_foreach((json_t *)obj, key, v)
        {
            if (strlen(key) >= BRK_RESOURCE_MAX || !kname_label_key(key))
                return errbuf_fmt(err, errlen, -EINVAL, "minFree: \"%.64s\" is not a resource name",
                                  key);
            snprintf(p.free[p.nfree].name, sizeof(p.free[p.nfree].name), "%s", key);
            if ((e = quantity(v, "minFree", key, &p.free[p.nfree].min, err, errlen)) < 0)
                return e;
            p.nfree++;
        }
    }
    if ((v = json_object_get(j, "maxPrice"))) {
        if ((e = quantity(v, "maxPrice", NULL, &p.max_price, err, errlen)) < 0)
            return e;
        p.has_max_price = true;
    }
    if ((obj = json_object_get(j, "requiredLabels"))) {
        if (!json_is_object(obj))
            return errbuf_fmt(err, errlen, -EINVAL, "requiredLabels: expected an object");
        if (json_object_size(obj) > BRK_MAX_LABELS)
            return errbuf_fmt(err, errlen, -EINVAL, "requiredLabels: at most %d labels",
                              BRK_MAX_LABELS);
        json_object_foreach((json_t *)obj, key, v)
        {
            const char *s = json_string_value(v);

            if (!kname_label_key(key))
                return errbuf_fmt(err, errlen, -EINVAL,
                                  "requiredLabels: \"%.64s\" is not a label key", key);
            if (!s || !kname_label_value(s, true))
                return errbuf_fmt(err, errlen, -EINVAL,
                                  "requiredLabels.%.64s: expected a label value", key);
            snprintf(p.labels[p.nlabels].key, sizeof(p.labels[p.nlabels].key), "%s", key);
            snprintf(p.labels[p.nlabels].value, sizeof(p.labels[p.nlabels].value), "%s", s);
            p.nlabels++;
        }
    }
    *out = p;
    return 0;
}

/* A quantity as a JSON string (canonical form). */
static json_t *kq_json(const struct kq *q)
{
    char buf[64];

    return kq_format(q, buf, sizeof(buf)) < 0 ? NULL : json_string(buf);
}

json_t *brk_policy_json(const struct brk_policy *p)
{
    json_t *j = json_object(), *o;
    bool ok = j != NULL;

    if (ok && p->min_uptime_s)
        ok = json_object_set_new(j, "minUptimeSeconds", json_integer(p->min_uptime_s)) == 0;
    if (ok && p->max_latency_ms)
        ok = json_object_set_new(j, "maxLatencyMs", json_integer(p->max_latency_ms)) == 0;
    if (ok && p->nfree) {
        ok = (o = json_object()) && json_object_set_new(j, "minFree", o) == 0;
        for (size_t i = 0; ok && i < p->nfree; i++)
            ok = json_object_set_new(o, p->free[i].name, kq_json(&p->free[i].min)) == 0;
    }
    if (ok && p->has_max_price)
        ok = json_object_set_new(j, "maxPrice", kq_json(&p->max_price)) == 0;
    if (ok && p->nlabels) {
        ok = (o = json_object()) && json_object_set_new(j, "requiredLabels", o) == 0;
        for (size_t i = 0; ok && i < p->nlabels; i++)
            ok = json_object_set_new(o, p->labels[i].key, json_string(p->labels[i].value)) == 0;
    }
    if (ok)
        ok = json_object_set_new(j, "hysteresisSeconds", json_integer(p->hysteresis_s)) == 0;
    if (!ok) {
        json_decref(j);
        return NULL;
    }
    return j;
}

/* Says why in why and returns false. */
__attribute__((format(printf, 3, 4))) static bool why_not(char *why, size_t whylen, const char *fmt,
                                                          ...)
{
    va_list ap;

    if (why && whylen) {
        va_start(ap, fmt);
        vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
    }
    return false;
}

bool brk_meets(const struct brk_policy *p, const struct brk_kpi *k, int64_t now_ms, char *why,
               size_t whylen)
{
    errbuf_clear(why, whylen);
    if (p->min_uptime_s) {
        if (k->up_since_ms < 0)
            return why_not(why, whylen, "not reachable");
        if (now_ms - k->up_since_ms < p->min_uptime_s * 1000)
            return why_not(why, whylen, "up for %llds, under the minimum of %llds",
                           (long long)((now_ms - k->up_since_ms) / 1000),
                           (long long)p->min_uptime_s);
    }
    if (p->max_latency_ms) {
        if (k->latency_ms < 0)
            return why_not(why, whylen, "latency unknown");
        if (k->latency_ms > p->max_latency_ms)
            return why_not(why, whylen, "latency %lldms, over the maximum of %lldms",
                           (long long)k->latency_ms, (long long)p->max_latency_ms);
    }
    for (size_t i = 0; i < p->nfree; i++) {
        const char *s = json_string_value(json_object_get(k->offer, p->free[i].name));
        struct kq have = {0};

        if (s && kq_parse(s, &have) < 0)
            return why_not(why, whylen, "its offer of %s is not a quantity", p->free[i].name);
        if (kq_cmp(&have, &p->free[i].min) < 0)
            return why_not(why, whylen, "offers %s of %s, under the minimum", s ? s : "none",
                           p->free[i].name);
    }
    if (p->has_max_price) {
        struct kq price;

        if (!k->price || kq_parse(k->price, &price) < 0 || kq_sign(&price) < 0)
            return why_not(why, whylen, "no valid price");
        if (kq_cmp(&price, &p->max_price) > 0)
            return why_not(why, whylen, "price %.32s over the maximum", k->price);
    }
    for (size_t i = 0; i < p->nlabels; i++) {
        const char *v = json_string_value(json_object_get(k->labels, p->labels[i].key));

        if (!v || strcmp(v, p->labels[i].value) != 0)
            return why_not(why, whylen, "lacks label %s=%s", p->labels[i].key, p->labels[i].value);
    }
    return true;
}

bool brk_select(const struct brk_policy *p, bool enabled, const struct brk_kpi *k,
                struct brk_hyst *h, int64_t now_ms, int64_t *recheck_ms, char *why, size_t whylen)
{
    char reason[160];
    bool meets = brk_meets(p, k, now_ms, reason, sizeof(reason));

    *recheck_ms = 0;
    if (!h->known) {
        h->known = true;
        h->in = meets;
        h->flip_since_ms = -1;
    } else if (meets == h->in) {
        h->flip_since_ms = -1;
    } else {
        if (h->flip_since_ms < 0)
            h->flip_since_ms = now_ms;
        if (now_ms - h->flip_since_ms >= p->hysteresis_s * 1000) {
            h->in = meets;
            h->flip_since_ms = -1;
        } else {
            *recheck_ms = h->flip_since_ms + p->hysteresis_s * 1000;
        }
    }
    errbuf_clear(why, whylen);
    if (!enabled)
        errbuf_fmt(why, whylen, 0, "disabled");
    else if (!h->in)
        errbuf_fmt(why, whylen, 0, "%s",
                   meets ? "meets the criteria, not for long enough yet" : reason);
    return enabled && h->in;
}
