/* metrics: see metrics.h. Families are kept in a list sorted by name and series in a list sorted by
 * their label values, so rendering is a plain walk; lookups are linear, which is fine for the tens
 * of series an agent has (and max_series bounds the worst case). */
#include "metrics/metrics.h"
#include "common/xalloc.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct metrics_series {
    const struct metrics_family *fam;
    char **values; /* one per label */
    double value;  /* counter, gauge; histogram: sum */
    uint64_t count;
    uint64_t *bucket_counts; /* histogram: per bucket, not cumulative */
    struct metrics_series *next;
};

struct metrics_family {
    enum metrics_type type;
    char *name, *help;
    char *labels[METRICS_MAX_LABELS];
    int nlabels;
    double buckets[METRICS_MAX_BUCKETS];
    size_t nbuckets;
    size_t nseries, max_series;
    struct metrics_series *series;
    struct metrics_family *next;
};

struct collector {
    metrics_collect_fn fn;
    void *data;
    struct collector *next;
};

struct metrics_registry {
    struct metrics_family *families;
    struct collector *collectors, **collectors_tail;
};

struct metrics_registry *metrics_registry_new(void)
{
    struct metrics_registry *r = x_calloc(1, sizeof(*r));

    if (r)
        r->collectors_tail = &r->collectors;
    return r;
}

static void series_free(struct metrics_series *s, int nlabels)
{
    if (!s)
        return;
    for (int i = 0; s->values && i < nlabels; i++)
        x_free(s->values[i]);
    x_free(s->values);
    x_free(s->bucket_counts);
    x_free(s);
}

void metrics_family_reset(struct metrics_family *f)
{
    if (!f)
        return;
    while (f->series) {
        struct metrics_series *s = f->series;
        f->series = s->next;
        series_free(s, f->nlabels);
    }
    f->nseries = 0;
}

size_t metrics_family_remove(struct metrics_family *f, const char *label, const char *value)
{
    struct metrics_series **pp;
    size_t removed = 0;
    int idx = -1;

    if (!f || !label || !value)
        return 0;
    for (int i = 0; i < f->nlabels; i++)
        if (strcmp(f->labels[i], label) == 0)
            idx = i;
    if (idx < 0)
        return 0;
    pp = &f->series;
    while (*pp) {
        struct metrics_series *s = *pp;

        if (strcmp(s->values[idx], value) == 0) {
            *pp = s->next;
            series_free(s, f->nlabels);
            f->nseries--;
            removed++;
            continue;
        }
        pp = &s->next;
    }
    return removed;
}

static void family_free(struct metrics_family *f)
{
    if (!f)
        return;
    metrics_family_reset(f);
    for (int i = 0; i < f->nlabels; i++)
        x_free(f->labels[i]);
    x_free(f->name);
    x_free(f->help);
    x_free(f);
}

struct metrics_registry *metrics_registry_free(struct metrics_registry *r)
{
    if (!r)
        return NULL;
    while (r->families) {
        struct metrics_family *f = r->families;
        r->families = f->next;
        family_free(f);
    }
    while (r->collectors) {
        struct collector *c = r->collectors;
        r->collectors = c->next;
        x_free(c);
    }
    x_free(r);
    return NULL;
}

static bool valid_name(const char *s, bool colon_ok)
{
    if (!s || !*s)
        return false;
    for (const char *p = s; *p; p++) {
        bool alpha = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_';
        bool digit = *p >= '0' && *p <= '9';
        if (!(alpha || (digit && p != s) || (colon_ok && *p == ':')))
            return false;
    }
    return true;
}

int metrics_family_new(struct metrics_registry *r, enum metrics_type type, const char *name,
                       const char *help, const char *const *labels, const double *buckets,
                       size_t nbuckets, struct metrics_family **ret)
{
    struct metrics_family *f = NULL, **pp;
    int n = 0, rc = -EINVAL;

    if (!r || !valid_name(name, true) || !help ||
        (type != METRICS_COUNTER && type != METRICS_GAUGE && type != METRICS_HISTOGRAM))
        return -EINVAL;
    if (type == METRICS_HISTOGRAM) {
        if (!buckets || nbuckets == 0 || nbuckets > METRICS_MAX_BUCKETS)
            return -EINVAL;
        for (size_t i = 0; i < nbuckets; i++)
            if (!isfinite(buckets[i]) || (i > 0 && buckets[i] <= buckets[i - 1]))
                return -EINVAL;
    } else if (buckets || nbuckets) {
        return -EINVAL;
    }
    for (n = 0; labels && labels[n]; n++) {
        if (n >= METRICS_MAX_LABELS || !valid_name(labels[n], false) ||
            strncmp(labels[n], "__", 2) == 0 ||
            (type == METRICS_HISTOGRAM && strcmp(labels[n], "le") == 0))
            return -EINVAL;
        for (int j = 0; j < n; j++)
            if (strcmp(labels[j], labels[n]) == 0)
                return -EINVAL;
    }
    for (pp = &r->families; *pp; pp = &(*pp)->next) {
        int c = strcmp((*pp)->name, name);
        if (c == 0)
            return -EEXIST;
        if (c > 0)
            break;
    }
    rc = -ENOMEM;
    f = x_calloc(1, sizeof(*f));
    if (!f)
        goto out;
    f->type = type;
    f->max_series = METRICS_DEFAULT_MAX_SERIES;
    f->name = x_strdup(name);
    f->help = x_strdup(help);
    if (!f->name || !f->help)
        goto out;
    for (int i = 0; i < n; i++) {
        f->labels[i] = x_strdup(labels[i]);
        if (!f->labels[i])
            goto out;
        f->nlabels = i + 1;
    }
    if (type == METRICS_HISTOGRAM) {
        memcpy(f->buckets, buckets, nbuckets * sizeof(*buckets));
        f->nbuckets = nbuckets;
    }
    f->next = *pp;
    *pp = f;
    if (ret)
        *ret = f;
    f = NULL;
    rc = 0;
out:
    family_free(f);
    return rc;
}

void metrics_family_set_max_series(struct metrics_family *f, size_t max)
{
    if (f)
        f->max_series = max;
}

/* Orders series by their label values, value by value. */
static int series_cmp(const struct metrics_family *f, char *const *a, const char *const *b)
{
    for (int i = 0; i < f->nlabels; i++) {
        int c = strcmp(a[i], b[i]);
        if (c)
            return c;
    }
    return 0;
}

int metrics_series_get(struct metrics_family *f, const char *const *values,
                       struct metrics_series **ret)
{
    struct metrics_series *s = NULL, **pp;
    int rc = -EINVAL;

    if (!f || !ret)
        return -EINVAL;
    for (int i = 0; i < f->nlabels; i++)
        if (!values || !values[i])
            return -EINVAL;
    if (f->nlabels == 0 && values && values[0])
        return -EINVAL;
    for (pp = &f->series; *pp; pp = &(*pp)->next) {
        int c = series_cmp(f, (*pp)->values, values);
        if (c == 0) {
            *ret = *pp;
            return 0;
        }
        if (c > 0)
            break;
    }
    if (f->nseries >= f->max_series)
        return -ENOSPC;
    rc = -ENOMEM;
    s = x_calloc(1, sizeof(*s));
    if (!s)
        goto out;
    if (f->nlabels) {
        s->values = x_calloc((size_t)f->nlabels, sizeof(*s->values));
        if (!s->values)
            goto out;
        for (int i = 0; i < f->nlabels; i++) {
            s->values[i] = x_strdup(values[i]);
            if (!s->values[i])
                goto out;
        }
    }
    if (f->type == METRICS_HISTOGRAM) {
        s->bucket_counts = x_calloc(f->nbuckets, sizeof(*s->bucket_counts));
        if (!s->bucket_counts)
            goto out;
    }
    s->fam = f;
    s->next = *pp;
    *pp = s;
    f->nseries++;
    *ret = s;
    s = NULL;
    rc = 0;
out:
    series_free(s, f->nlabels);
    return rc;
}

void metrics_counter_add(struct metrics_series *s, double v)
{
    if (s && v >= 0)
        s->value += v;
}

void metrics_gauge_set(struct metrics_series *s, double v)
{
    if (s)
        s->value = v;
}

void metrics_counter_set(struct metrics_series *s, double v)
{
    if (s && v > s->value)
        s->value = v;
}

void metrics_gauge_add(struct metrics_series *s, double v)
{
    if (s)
        s->value += v;
}

double metrics_series_value(const struct metrics_series *s)
{
    return s ? s->value : 0;
}

void metrics_histogram_observe(struct metrics_series *s, double v)
{
    const struct metrics_family *f;

    if (!s || !s->bucket_counts || isnan(v))
        return;
    f = s->fam;
    s->value += v;
    s->count++;
    for (size_t i = 0; i < f->nbuckets; i++) {
        if (v <= f->buckets[i]) {
            s->bucket_counts[i]++;
            break;
        }
    }
}

void metrics_inc(struct metrics_family *f, const char *const *values)
{
    struct metrics_series *s;

    if (f && f->type == METRICS_COUNTER && metrics_series_get(f, values, &s) == 0)
        metrics_counter_add(s, 1);
}

void metrics_set(struct metrics_family *f, const char *const *values, double v)
{
    struct metrics_series *s;

    if (!f || f->type == METRICS_HISTOGRAM || metrics_series_get(f, values, &s) < 0)
        return;
    if (f->type == METRICS_GAUGE)
        metrics_gauge_set(s, v);
    else
        metrics_counter_set(s, v);
}

void metrics_observe(struct metrics_family *f, const char *const *values, double v)
{
    struct metrics_series *s;

    if (f && f->type == METRICS_HISTOGRAM && metrics_series_get(f, values, &s) == 0)
        metrics_histogram_observe(s, v);
}

int metrics_add_collector(struct metrics_registry *r, metrics_collect_fn fn, void *data)
{
    struct collector *c;

    if (!r || !fn)
        return -EINVAL;
    c = x_calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->fn = fn;
    c->data = data;
    *r->collectors_tail = c;
    r->collectors_tail = &c->next;
    return 0;
}

int metrics_format_value(struct sbuf *out, double v)
{
    char buf[40];

    if (isnan(v))
        return sbuf_adds(out, "NaN");
    if (isinf(v))
        return sbuf_adds(out, v > 0 ? "+Inf" : "-Inf");
    if (v == 0)
        return sbuf_adds(out, "0"); /* also -0 */
    /* Integers up to 2^53 print exactly; otherwise the shortest precision that reads back. */
    if (fabs(v) < 9007199254740992.0 && v == (double)(int64_t)v)
        return sbuf_printf(out, "%lld", (long long)(int64_t)v);
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof(buf), "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return sbuf_adds(out, buf);
}

/* Rendering state: the first failed append is remembered and everything after it skipped (an
 * sbuf that overflows frees its contents, so later appends must not start it over). */
struct out {
    struct sbuf *b;
    int err;
};

static void put(struct out *o, const char *s, size_t n)
{
    if (o->err == 0)
        o->err = sbuf_add(o->b, s, n);
}

static void puts_(struct out *o, const char *s)
{
    put(o, s, strlen(s));
}

static void put_value(struct out *o, double v)
{
    if (o->err == 0)
        o->err = metrics_format_value(o->b, v);
}

static void escape(struct out *o, const char *s, bool quote)
{
    for (const char *p = s; *p; p++) {
        if (*p == '\\')
            puts_(o, "\\\\");
        else if (*p == '\n')
            puts_(o, "\\n");
        else if (quote && *p == '"')
            puts_(o, "\\\"");
        else
            put(o, p, 1);
    }
}

/* name{l1="v1",...,extra="extra_value"} value */
static void sample(struct out *o, const struct metrics_family *f, const char *suffix,
                   const struct metrics_series *s, const char *extra, const char *extra_value,
                   double v)
{
    puts_(o, f->name);
    puts_(o, suffix);
    if (f->nlabels > 0 || extra) {
        puts_(o, "{");
        for (int i = 0; i < f->nlabels; i++) {
            if (i)
                puts_(o, ",");
            puts_(o, f->labels[i]);
            puts_(o, "=\"");
            escape(o, s->values[i], true);
            puts_(o, "\"");
        }
        if (extra) {
            if (f->nlabels)
                puts_(o, ",");
            puts_(o, extra);
            puts_(o, "=\"");
            puts_(o, extra_value);
            puts_(o, "\"");
        }
        puts_(o, "}");
    }
    puts_(o, " ");
    put_value(o, v);
    puts_(o, "\n");
}

int metrics_render(struct metrics_registry *r, struct sbuf *out)
{
    static const char *const type_names[] = {"counter", "gauge", "histogram"};
    struct out o = {.b = out};

    if (!r || !out)
        return -EINVAL;
    for (struct collector *c = r->collectors; c; c = c->next)
        c->fn(r, c->data);
    for (const struct metrics_family *f = r->families; f; f = f->next) {
        puts_(&o, "# HELP ");
        puts_(&o, f->name);
        puts_(&o, " ");
        escape(&o, f->help, false);
        puts_(&o, "\n# TYPE ");
        puts_(&o, f->name);
        puts_(&o, " ");
        puts_(&o, type_names[f->type]);
        puts_(&o, "\n");
        for (const struct metrics_series *s = f->series; s; s = s->next) {
            uint64_t cum = 0;
            char le[40];

            if (f->type != METRICS_HISTOGRAM) {
                sample(&o, f, "", s, NULL, NULL, s->value);
                continue;
            }
            for (size_t i = 0; i < f->nbuckets; i++) {
                struct sbuf b;

                cum += s->bucket_counts[i];
                sbuf_init(&b, sizeof(le) - 1);
                if (metrics_format_value(&b, f->buckets[i]) < 0) {
                    sbuf_done(&b);
                    return -ENOMEM;
                }
                snprintf(le, sizeof(le), "%s", sbuf_str(&b));
                sbuf_done(&b);
                sample(&o, f, "_bucket", s, "le", le, (double)cum);
            }
            sample(&o, f, "_bucket", s, "le", "+Inf", (double)s->count);
            sample(&o, f, "_sum", s, NULL, NULL, s->value);
            sample(&o, f, "_count", s, NULL, NULL, (double)s->count);
        }
    }
    return o.err;
}
