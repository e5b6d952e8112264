/* brk select: which providers the broker uses (docs/broker.md, "Selection by criteria"): a pure
 * function of the policy, the manual toggle, what is known of each provider and the time, so that
 * every rule has a table-driven unit test and the orchestrator and the aggregator agree.
 *
 * Policy (GET/PUT /api/policy), every field optional:
 *   minUptimeSeconds   integer 0..315360000 (0: no minimum)
 *   maxLatencyMs       integer 0..600000 (0: no maximum)
 *   minFree            object: resource name -> quantity; the provider's offer must have at least
 *                      that much of each (a resource it does not offer counts as 0)
 *   maxPrice           decimal string >= 0; the provider's price annotation must be at most that
 *                      (a provider without a valid price fails it)
 *   requiredLabels     object: label key -> value; its ForeignCluster must carry each
 *   hysteresisSeconds  integer 0..86400, default 60: how long a provider must stay inside (or
 *                      outside) the thresholds before it enters (or leaves) the selection
 * An unknown field, a wrong type or a value out of range is -EINVAL with a message that names the
 * field (the API answers it as a 400). Everything is bounded: BRK_MAX_FREE resources,
 * BRK_MAX_LABELS labels.
 *
 * Selection: a provider is selected when it is enabled (the toggle acts at once) and its criteria
 * state is "in". The criteria state starts as the first evaluation says, then changes only after
 * the opposite result held for hysteresisSeconds without a break, so a KPI that flaps moves
 * nothing. */
#ifndef CLIQO_BROKER_SELECT_H
#define CLIQO_BROKER_SELECT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kube/quantity.h"

#define BRK_MAX_FREE      16
#define BRK_MAX_LABELS    16
#define BRK_RESOURCE_MAX  128 /* bytes of a resource name, NUL included */
#define BRK_LABEL_KEY_MAX 318 /* prefix (253) + '/' + name (63) + NUL */
#define BRK_LABEL_VAL_MAX 64

struct brk_policy {
    int64_t min_uptime_s;
    int64_t max_latency_ms;
    size_t nfree;
    struct {
        char name[BRK_RESOURCE_MAX];
        struct kq min;
    } free[BRK_MAX_FREE];
    bool has_max_price;
    struct kq max_price;
    size_t nlabels;
    struct {
        char key[BRK_LABEL_KEY_MAX];
        char value[BRK_LABEL_VAL_MAX];
    } labels[BRK_MAX_LABELS];
    int64_t hysteresis_s;
};

/* The empty policy: no criteria, hysteresis 60 s. */
void brk_policy_default(struct brk_policy *p);
/* Parses and validates a policy object into p (p is only written on success). */
int brk_policy_parse(const json_t *j, struct brk_policy *p, char *err, size_t errlen);
/* The policy as the API shows it (only the fields that are set, and hysteresisSeconds); NULL when
 * out of memory. Parsing it again gives the same policy. */
json_t *brk_policy_json(const struct brk_policy *p);

/* What the broker knows of one provider (borrowed for the call). */
struct brk_kpi {
    int64_t
        up_since_ms; /* since when every probe answered; -1: the last probe failed, or none yet */
    int64_t latency_ms;   /* of the last probe that answered; -1: unknown */
    const json_t *offer;  /* resource name -> quantity string (its Advertisement); NULL: none */
    const json_t *labels; /* its ForeignCluster's labels; NULL: none */
    const char *price;    /* its price annotation; NULL: none */
};

/* True when k meets every criterion of p at now_ms; otherwise why says the first one it fails. */
bool brk_meets(const struct brk_policy *p, const struct brk_kpi *k, int64_t now_ms, char *why,
               size_t whylen);

/* The criteria state of one provider, kept by the caller between evaluations (zeroed: never
 * evaluated). */
struct brk_hyst {
    bool known, in;
    int64_t
        flip_since_ms; /* since when the evaluation has said the opposite of `in`; -1: it agrees */
};

/* Evaluates the provider at now_ms, updates h and returns whether it is selected. *recheck_ms is
 * the time at which the state would change if the evaluation keeps saying what it says now (0: no
 * change pending). why says why it is out (disabled, or the failing criterion), or is empty. */
bool brk_select(const struct brk_policy *p, bool enabled, const struct brk_kpi *k,
                struct brk_hyst *h, int64_t now_ms, int64_t *recheck_ms, char *why, size_t whylen);

#endif
