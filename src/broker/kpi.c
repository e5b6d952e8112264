/* brk kpi: see kpi.h. */
#include "broker/kpi.h"

#include <string.h>

void brk_kpi_init(struct brk_kpi_hist *h)
{
    memset(h, 0, sizeof(*h));
    h->up_since_ms = -1;
}

void brk_kpi_record(struct brk_kpi_hist *h, int64_t now_ms, bool answered, int64_t latency_ms)
{
    if (answered && latency_ms < 0)
        latency_ms = 0;
    if (latency_ms > INT32_MAX)
        latency_ms = INT32_MAX;
    h->s[h->head].at_ms = now_ms;
    h->s[h->head].latency_ms = answered ? (int32_t)latency_ms : -1;
    h->head = (h->head + 1) % BRK_KPI_SAMPLES;
    if (h->n < BRK_KPI_SAMPLES)
        h->n++;
    h->probes++;
    if (!answered) {
        h->failures++;
        h->up_since_ms = -1;
    } else if (h->up_since_ms < 0) {
        h->up_since_ms = now_ms;
    }
}

/* The median of the last BRK_KPI_LATENCY_OF answered probes, -1 without any. */
static int64_t latency(const struct brk_kpi_hist *h)
{
    int32_t v[BRK_KPI_LATENCY_OF];
    size_t k = 0;

    for (size_t i = 0; i < h->n && k < BRK_KPI_LATENCY_OF; i++) {
        int32_t l = h->s[(h->head + BRK_KPI_SAMPLES - 1 - i) % BRK_KPI_SAMPLES].latency_ms;

        if (l >= 0)
            v[k++] = l;
    }
    if (k == 0)
        return -1;
    for (size_t i = 1; i < k; i++) /* insertion sort of at most 5 */
        for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            int32_t t = v[j];

            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return k % 2 ? v[k / 2] : ((int64_t)v[k / 2 - 1] + v[k / 2]) / 2;
}

void brk_kpi_view(const struct brk_kpi_hist *h, struct brk_kpi *k)
{
    k->up_since_ms = h->up_since_ms;
    k->latency_ms = latency(h);
}

json_t *brk_kpi_json(const struct brk_kpi_hist *h, int64_t now_ms)
{
    int64_t l = latency(h);
    size_t answered = 0;

    for (size_t i = 0; i < h->n; i++)
        answered += h->s[i].latency_ms >= 0;
    return json_pack("{s:o,s:o,s:o,s:I,s:I}", "uptimeSeconds",
                     h->up_since_ms < 0 ? json_null()
                                        : json_integer((now_ms - h->up_since_ms) / 1000),
                     "latencyMs", l < 0 ? json_null() : json_integer(l), "availabilityPercent",
                     h->n ? json_integer((json_int_t)(answered * 100 / h->n)) : json_null(),
                     "probes", (json_int_t)h->probes, "failures", (json_int_t)h->failures);
}
