/* libFuzzer harness for the pod record (src/kube/podrec.c) and the broadcaster's reading of it
 * (src/offer/share.c, shr_pod_upsert_record).
 *
 * The input is decoded by jansson (any JSON value, NUL bytes in strings allowed); its record is
 * built into a buffer of exactly the size a first call announced (so that ASan sees any write
 * past it), with the broadcaster's options and with every optional part. Invariants: the two calls
 * agree on the size; every string lies inside the record, is NUL-terminated and is the tree's
 * (spot-checked on the name and the origin label); the containers' quantity ranges and the
 * overhead's lie within the quantities; the state takes the record or refuses it with -EINVAL (a
 * bad name), never anything else but -ENOMEM. A violated invariant aborts, which libFuzzer reports
 * as a crash. The unit is included so that it is built with the fuzzer's instrumentation (see
 * fuzz-quantity.c). */
#include "../src/kube/podrec.c"

#include "offer/share.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_str(const struct kpod *p, struct kpod_str s)
{
    if (!s.off) {
        if (s.len)
            abort();
        return;
    }
    if (s.off < sizeof(*p) || (size_t)s.off + s.len >= p->size || kpod_text(p, s)[s.len] != '\0')
        abort();
}

static void check_tree_str(const struct kpod *p, struct kpod_str s, const json_t *v)
{
    if (json_is_string(v) != (s.off != 0))
        abort();
    if (s.off && (s.len != json_string_length(v) ||
                  memcmp(kpod_text(p, s), json_string_value(v), s.len) != 0))
        abort();
}

static void check_range(const struct kpod *p, uint32_t first, uint32_t n)
{
    if ((uint64_t)first + n > p->nqty)
        abort();
}

/* The record of pod with options o, checked; then given to a fresh state. */
static void one(const json_t *pod, const struct kpod_options *o)
{
    struct shr_state *s = NULL;
    struct kpod *p;
    long n;
    int r;

    n = kpod_build(pod, o, NULL, 0);
    if (n < 0) {
        if (n != -E2BIG)
            abort();
        return;
    }
    p = malloc((size_t)n);
    if (!p || kpod_build(pod, o, p, (size_t)n) != n || p->size != (uint32_t)n)
        abort();
    check_str(p, p->ns);
    check_str(p, p->name);
    check_str(p, p->node);
    check_str(p, p->phase);
    check_str(p, p->owner_kind);
    check_str(p, p->owner_name);
    check_str(p, kpod_label(p, SHR_LABEL_ORIGIN));
    check_tree_str(p, p->name, json_object_get(json_object_get(pod, "metadata"), "name"));
    check_tree_str(p, kpod_label(p, SHR_LABEL_ORIGIN),
                   json_object_get(json_object_get(json_object_get(pod, "metadata"), "labels"),
                                   SHR_LABEL_ORIGIN));
    for (uint32_t i = 0; i < p->ncontainers + p->ninit; i++) {
        const struct kpod_ctr *c = &kpod_containers(p)[i];
        check_str(p, c->name);
        check_str(p, c->restart_policy);
        check_range(p, c->req, c->nreq);
        check_range(p, c->lim, c->nlim);
    }
    check_range(p, p->overhead, p->noverhead);
    for (uint32_t i = 0; i < p->nqty; i++) {
        check_str(p, kpod_qtys(p)[i].name);
        check_str(p, kpod_qtys(p)[i].value);
        if (!kpod_qtys(p)[i].name.off)
            abort();
    }
    if (shr_new(&s) == 0) {
        (void)shr_flush(s); /* applied at once, not staged */
        r = shr_pod_upsert_record(s, p);
        if (r < 0 && r != -EINVAL && r != -ENOMEM)
            abort();
        shr_free(s);
    }
    free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct kpod_options all = {.parts = KPOD_LIMITS | KPOD_OWNER | KPOD_CTR_NAMES,
                                            .nlabels = 2,
                                            .labels = {"app", SHR_LABEL_ORIGIN}};
    json_t *pod = json_loadb((const char *)data, size, JSON_ALLOW_NUL | JSON_DECODE_ANY, NULL);

    if (!pod)
        return 0;
    one(pod, &shr_pod_record_options); /* the broadcaster's */
    one(pod, &all);
    json_decref(pod);
    return 0;
}
