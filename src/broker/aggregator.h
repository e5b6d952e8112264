/* brk aggregator (docs/broker.md, "Aggregator"): for every consumer of the broker's cluster (a
 * ForeignCluster whose IncomingPeering is Established), the ConfigMap cliqo-broker-offer-<ID> in
 * the broker's namespace (label cliqo.io/broker-offer=true) whose data.resources is the
 * per-resource sum of the selected providers' offers, the consumer's own never counted
 * (brk_aggregate): the broker's cluster's broadcaster advertises that to the consumer when its
 * ClusterConfig says offerSource: Broker. A provider's offer change, a selection change or a
 * consumer's arrival queues the consumers; a ConfigMap of a cluster that is no longer a consumer is
 * deleted. Writes by server-side apply, only when the content differs. Leader only. */
#ifndef CLIQO_BROKER_AGGREGATOR_H
#define CLIQO_BROKER_AGGREGATOR_H

#include <jansson.h>
#include <stdbool.h>

#include "agent/agent.h"

#define BRK_MODULE_AGGREGATOR "aggregator"
#define BRK_OFFER_PREFIX      "cliqo-broker-offer-"
#define BRK_OFFER_LABEL       "cliqo.io/broker-offer"

/* Whether ForeignCluster fc's IncomingPeering condition is Established (pure). */
bool brk_is_consumer(const json_t *fc);

int brk_agg_init(struct agent *a);
#define BRK_MODULE_AGG                                                                             \
    {                                                                                              \
        BRK_MODULE_AGGREGATOR, brk_agg_init, NULL, NULL, NULL, NULL, true                          \
    }

#endif
