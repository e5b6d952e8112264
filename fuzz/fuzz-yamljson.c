/* libFuzzer harness for the YAML-to-JSON reader (src/kube/yamljson.c).
 *
 * Arbitrary bytes go to yj_load_all(). Invariants: a failure explains itself and returns nothing;
 * a success returns an array of non-null documents, and each document survives a JSON round trip
 * (serialise, parse, compare): the reader never builds a value JSON cannot hold. The unit is
 * included so that it is compiled with the fuzzer's instrumentation (see fuzz-kubeconfig.c). */
#include "../src/kube/yamljson.c"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    json_t *docs = NULL;
    size_t i;
    json_t *d;
    int r;

    memset(err, 'x', sizeof(err));
    r = yj_load_all((const char *)data, size, "fuzz", &docs, err, sizeof(err));
    if (strnlen(err, sizeof(err)) == sizeof(err))
        __builtin_trap();
    if (r < 0) {
        if (docs || (r != -ENOMEM && err[0] == '\0'))
            __builtin_trap();
        return 0;
    }
    if (!json_is_array(docs))
        __builtin_trap();
    json_array_foreach(docs, i, d)
    {
        char *text;
        json_t *back;

        if (json_is_null(d))
            __builtin_trap();
        text = json_dumps(d, JSON_ENCODE_ANY | JSON_COMPACT);
        if (!text)
            __builtin_trap();
        back = json_loads(text, JSON_DECODE_ANY, NULL);
        if (!back || !json_equal(back, d))
            __builtin_trap();
        json_decref(back);
        free(text);
    }
    json_decref(docs);
    return 0;
}
