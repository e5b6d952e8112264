/* brk aggregate: the offer a consumer sees from the broker (docs/broker.md, "Aggregator"): the
 * per-resource sum of the offers the selected providers make to the broker, the consumer's own
 * never counted (a consumer may be a provider of the broker too). Pure.
 *
 * Quantities are summed exactly (kq_add) and written back in their canonical form, as bare quantity
 * strings (the original broker wrote JSON-quoted ones its own reader rejected). What a provider
 * sends is untrusted: a value that is not a string, not a quantity or negative is skipped and
 * counted; so is a resource name that is not a qualified name, or beyond BRK_AGG_MAX_RESOURCES
 * names; a sum that would overflow keeps its last value and is counted. Nothing fails the whole
 * sum. */
#ifndef CLIQO_BROKER_AGGREGATE_H
#define CLIQO_BROKER_AGGREGATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define BRK_AGG_MAX_RESOURCES 64

struct brk_offer_in {
    const char *provider; /* its cluster ID */
    bool selected;
    const json_t *resources; /* resource name -> quantity string (borrowed) */
};

struct brk_agg_stats {
    size_t providers; /* whose offers were summed */
    size_t skipped;   /* values skipped or sums kept (see above) */
};

/* The sum for consumer (its ID; NULL: nobody is left out), as a new object resource name ->
 * canonical quantity string; NULL when out of memory. stats may be NULL. */
json_t *brk_aggregate(const struct brk_offer_in *offers, size_t n, const char *consumer,
                      struct brk_agg_stats *stats);

#endif
