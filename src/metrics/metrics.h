/* metrics: a Prometheus registry with the text exposition format (version 0.0.4), hand-written.
 *
 * A registry holds metric families (counter, gauge, histogram), each with a fixed list of label
 * names; a family holds series, one per combination of label values, created on first use. Output
 * is stable: families sorted by name, series by label values, histogram buckets in increasing
 * order, every family with its # HELP and # TYPE lines. Label values and help texts are escaped as
 * the format requires (backslash, double quote in label values, newline).
 *
 * Collectors (metrics_add_collector) run just before each rendering, to refresh gauges that are
 * cheaper to read on demand (process statistics, queue depths).
 *
 * Limits: names are checked ([a-zA-Z_:][a-zA-Z0-9_:]*, labels without ':' and not starting with
 * "__"), a family has at most METRICS_MAX_LABELS labels, METRICS_MAX_BUCKETS buckets and
 * max_series series (default METRICS_DEFAULT_MAX_SERIES): a new series beyond it fails with
 * -ENOSPC, so label values taken from requests cannot grow memory without bound.
 *
 * Ownership: strings are copied. Families and series belong to the registry and live until
 * metrics_registry_free; pointers to them stay valid until then. Not thread-safe (one loop). */
#ifndef CLIQO_METRICS_METRICS_H
#define CLIQO_METRICS_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "common/strutil.h"

#define METRICS_MAX_LABELS         8
#define METRICS_MAX_BUCKETS        32
#define METRICS_DEFAULT_MAX_SERIES 1000
#define METRICS_CONTENT_TYPE       "text/plain; version=0.0.4; charset=utf-8"

enum metrics_type {
    METRICS_COUNTER,
    METRICS_GAUGE,
    METRICS_HISTOGRAM,
};

struct metrics_registry;
struct metrics_family;
struct metrics_series;

typedef void (*metrics_collect_fn)(struct metrics_registry *r, void *data);

struct metrics_registry *metrics_registry_new(void);
/* NULL-safe; returns NULL. */
struct metrics_registry *metrics_registry_free(struct metrics_registry *r);

/* Adds a family. labels: label names, NULL-terminated (NULL: none). buckets: the upper bounds of a
 * histogram, strictly increasing, finite, without +Inf (added by itself); NULL for other types.
 * Returns 0, -EINVAL (bad name, label, buckets), -EEXIST or -ENOMEM. */
int metrics_family_new(struct metrics_registry *r, enum metrics_type type, const char *name,
                       const char *help, const char *const *labels, const double *buckets,
                       size_t nbuckets, struct metrics_family **ret);
/* Sets the family's series limit (default METRICS_DEFAULT_MAX_SERIES). */
void metrics_family_set_max_series(struct metrics_family *f, size_t max);

/* The series of these label values (one per label name, in order; NULL when the family has no
 * labels), created at zero on first use. Returns 0, -EINVAL (wrong count, NULL value), -ENOSPC or
 * -ENOMEM. */
int metrics_series_get(struct metrics_family *f, const char *const *values,
                       struct metrics_series **ret);
/* Removes every series of the family (for gauges rebuilt by a collector). */
void metrics_family_reset(struct metrics_family *f);
/* Removes the series whose label `label` has value `value` (e.g. every series of a peer that is
 * gone, so that label values of departed objects do not accumulate); returns how many. */
size_t metrics_family_remove(struct metrics_family *f, const char *label, const char *value);

/* Counters only increase: a negative or NaN v is ignored. */
void metrics_counter_add(struct metrics_series *s, double v);
void metrics_gauge_set(struct metrics_series *s, double v);
/* For counters kept elsewhere (e.g. CPU time from /proc): sets the value; never lowers it. */
void metrics_counter_set(struct metrics_series *s, double v);
void metrics_gauge_add(struct metrics_series *s, double v);
void metrics_histogram_observe(struct metrics_series *s, double v);
double metrics_series_value(const struct metrics_series *s);

/* Shortcuts that look the series up and ignore errors (a metric must never break the caller):
 * values as for metrics_series_get. */
void metrics_inc(struct metrics_family *f, const char *const *values);
/* Gauges: sets the value; counters: metrics_counter_set. */
void metrics_set(struct metrics_family *f, const char *const *values, double v);
void metrics_observe(struct metrics_family *f, const char *const *values, double v);

/* Adds a collector, run before every metrics_render in the order added. Returns 0 or -ENOMEM. */
int metrics_add_collector(struct metrics_registry *r, metrics_collect_fn fn, void *data);

/* Runs the collectors and appends the exposition text to out. Returns 0, -E2BIG (out's maximum)
 * or -ENOMEM. */
int metrics_render(struct metrics_registry *r, struct sbuf *out);

/* Appends a float in the exposition format: shortest round-trip form, "+Inf", "-Inf", "NaN". */
int metrics_format_value(struct sbuf *out, double v);

#endif
