/* brk aggregate: see aggregate.h. */
#include "broker/aggregate.h"

#include <string.h>

#include "kube/names.h"
#include "kube/quantity.h"

struct sum {
    const char *name; /* borrowed from the offers, valid for the call */
    struct kq q;
};

json_t *brk_aggregate(const struct brk_offer_in *offers, size_t n, const char *consumer,
                      struct brk_agg_stats *stats)
{
    struct sum sums[BRK_AGG_MAX_RESOURCES];
    struct brk_agg_stats st = {0};
    size_t nsums = 0;
    json_t *out;

    for (size_t i = 0; i < n; i++) {
        const char *name;
        const json_t *v;

        if (!offers[i].selected || !offers[i].provider ||
            (consumer && strcmp(offers[i].provider, consumer) == 0))
            continue;
        st.providers++;
        json_object_foreach((json_t *)offers[i].resources, name, v)
        {
            const char *s = json_string_value(v);
            struct kq q, total;
            size_t j = 0;

            if (!s || kq_parse(s, &q) < 0 || kq_sign(&q) < 0 || !kname_label_key(name)) {
                st.skipped++;
                continue;
            }
            while (j < nsums && strcmp(sums[j].name, name) != 0)
                j++;
            if (j == nsums) {
                if (nsums == BRK_AGG_MAX_RESOURCES) {
                    st.skipped++;
                    continue;
                }
                sums[nsums].name = name;
                memset(&sums[nsums].q, 0, sizeof(sums[nsums].q));
                nsums++;
            }
            if (kq_add(&sums[j].q, &q, &total) < 0)
                st.skipped++;
            else
                sums[j].q = total;
        }
    }
    out = json_object();
    for (size_t j = 0; out && j < nsums; j++) {
        char buf[KQ_STR_MAX];

        if (kq_format(&sums[j].q, buf, sizeof(buf)) < 0 ||
            json_object_set_new(out, sums[j].name, json_string(buf)) < 0) {
            json_decref(out);
            out = NULL;
        }
    }
    if (stats)
        *stats = st;
    return out;
}
