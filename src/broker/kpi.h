/* brk kpi: what the broker measures of each provider (docs/broker.md, "Selection by criteria"): a
 * bounded history of probes of its API, and the uptime and latency derived from it. Pure: the
 * caller probes and passes each result with its time.
 *
 *   uptime   since the first answered probe after the last failed one (-1 while the last probe
 *            failed, or before any answered). After a restart of the broker the history starts
 *            empty, so a provider's uptime counts from the broker's first answered probe: the
 * honest figure, and the reason a minimum uptime waits after a restart. latency  the median of the
 * last BRK_KPI_LATENCY_OF answered probes (one slow answer does not move it), -1 before any. The
 * history keeps the last BRK_KPI_SAMPLES probes; availability is the share of them answered. */
#ifndef CLIQO_BROKER_KPI_H
#define CLIQO_BROKER_KPI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/select.h"

#define BRK_KPI_SAMPLES    256
#define BRK_KPI_LATENCY_OF 5

struct brk_kpi_hist {
    struct {
        int64_t at_ms;
        int32_t latency_ms; /* -1: the probe failed */
    } s[BRK_KPI_SAMPLES];
    size_t head, n; /* the next slot; how many are kept */
    int64_t up_since_ms;
    uint64_t probes, failures; /* since the history began */
};

void brk_kpi_init(struct brk_kpi_hist *h);
/* One probe at now_ms: answered (latency_ms >= 0, capped at INT32_MAX) or failed (answered false).
 */
void brk_kpi_record(struct brk_kpi_hist *h, int64_t now_ms, bool answered, int64_t latency_ms);
/* Fills k's up_since_ms and latency_ms (its other fields are left alone). */
void brk_kpi_view(const struct brk_kpi_hist *h, struct brk_kpi *k);
/* {"uptimeSeconds": n|null, "latencyMs": n|null, "availabilityPercent": n|null, "probes": n,
 *  "failures": n} for the API; NULL when out of memory. */
json_t *brk_kpi_json(const struct brk_kpi_hist *h, int64_t now_ms);

#endif
