/* libFuzzer harness for the bounded JSON decoder (src/common/jsonb.c).
 *
 * Any input is scanned and decoded; invariants:
 *   - with an unbounded budget, jsonb_load() succeeds exactly when json_loadb() does;
 *   - for text jansson accepts (without duplicate keys), the scan counts exactly the values of the
 * decoded tree (object keys included) and its depth, so the budget a caller sets is the one the
 * text is held to;
 *   - the estimated cost is the sum of the per-kind costs of those values;
 *   - a budget one byte under the estimate, or a depth one under the real one, is refused with
 *     -E2BIG, and the estimate itself is accepted.
 * A violated invariant aborts, which libFuzzer reports as a crash. The unit is included so that it
 * is built with the fuzzer's instrumentation (see fuzz-quantity.c). */
#include "../src/common/jsonb.c"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok)
        abort();
}

/* Values, cost and depth of a decoded tree (depth: containers on the deepest path). */
static void tree(const json_t *j, unsigned level, struct jsonb_count *c)
{
    const char *key;
    json_t *v;
    size_t i;

    c->elements++;
    switch (json_typeof(j)) {
    case JSON_OBJECT:
        c->cost += JSONB_COST_OBJECT;
        if (level + 1 > c->depth)
            c->depth = level + 1;
        json_object_foreach((json_t *)j, key, v)
        {
            (void)key;
            c->elements++;
            c->cost += JSONB_COST_STRING;
            tree(v, level + 1, c);
        }
        break;
    case JSON_ARRAY:
        c->cost += JSONB_COST_ARRAY;
        if (level + 1 > c->depth)
            c->depth = level + 1;
        json_array_foreach(j, i, v) tree(v, level + 1, c);
        break;
    case JSON_STRING:
        c->cost += JSONB_COST_STRING;
        break;
    default:
        c->cost += JSONB_COST_SCALAR;
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    struct jsonb_count scan, real = {0, 0, 0};
    json_t *j = NULL, *ref;
    int r;

    r = jsonb_scan(text, size, SIZE_MAX, UINT32_MAX, &scan);
    check(r == 0);
    /* Without duplicate keys, which jansson would fold into one value. */
    ref = json_loadb(text, size, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
    r = jsonb_load(text, size, SIZE_MAX, UINT32_MAX, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &j,
                   NULL);
    check((r == 0) == (ref != NULL));
    if (!ref)
        return 0;
    check(json_equal(j, ref));
    tree(ref, 0, &real);
    check(scan.elements == real.elements && scan.cost == real.cost && scan.depth == real.depth);
    json_decref(j);
    j = NULL;
    check(jsonb_load(text, size, scan.cost, scan.depth, JSON_DECODE_ANY, &j, NULL) == 0);
    json_decref(j);
    check(jsonb_load(text, size, scan.cost - 1, UINT32_MAX, JSON_DECODE_ANY, &j, NULL) == -E2BIG);
    if (scan.depth > 1) /* a max_depth of 0 means the default */
        check(jsonb_load(text, size, SIZE_MAX, scan.depth - 1, JSON_DECODE_ANY, &j, NULL) ==
              -E2BIG);
    json_decref(ref);
    return 0;
}
