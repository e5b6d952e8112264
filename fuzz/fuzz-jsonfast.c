/* libFuzzer harness for the fast JSON decoder (src/common/jsonfast.c).
 *
 * Invariant: whenever jsf_load() returns a tree, json_loadb() with the same flags (0, or
 * JSON_REJECT_DUPLICATES, chosen by the input's first byte) accepts the same text and decodes it
 * to an equal tree (json_equal: same types, integers and reals apart, same members). jsf_load() may
 * give up where jansson succeeds (reals, long integers), never succeed where jansson fails. A
 * violated invariant aborts, which libFuzzer reports as a crash. The unit is included so that it is
 * built with the fuzzer's instrumentation (see fuzz-quantity.c). */
#include "../src/common/jsonfast.c"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t flags = size > 0 && (data[0] & 1) ? JSON_REJECT_DUPLICATES : 0;
    json_t *fast, *ref;

    if (size > 0) { /* the first byte chooses the flags; the text is the rest */
        data++;
        size--;
    }
    fast = jsf_load((const char *)data, size, flags);
    if (!fast)
        return 0;
    ref = json_loadb((const char *)data, size, flags, NULL);
    if (!ref || !json_equal(fast, ref))
        abort();
    json_decref(ref);
    json_decref(fast);
    return 0;
}
