/* libFuzzer harness for Kubernetes' protobuf encoding to JSON text (src/kube/kpb.c).
 *
 * The first byte of the input picks the message (a root of the build's schema, or of the small
 * schema below when the build has none) and a chunk size (1 to 8 bytes); the rest is the bytes.
 * Invariants:
 *   - kpb_to_json either fails with -EBADMSG, -E2BIG or -ENOMEM, or writes text of the length it
 *     says, no longer than max_out, which jansson decodes to an object (with JSON_ALLOW_NUL: a
 *     string with a NUL byte is written "\u0000", as encoding/json does, and refused later by the
 *     informer's decoder, as the server's own JSON would be);
 *   - the list splitter, fed the bytes whole or in chunks, gives the same items in the same order
 *     and the same result, and no item is longer than max_item;
 *   - kpb_unwrap either refuses the bytes or gives a raw range inside them;
 *   - kpb_watch_event either refuses them (-EBADMSG) or gives a type of at least one byte and an
 *     object, both ranges inside them.
 * A violated invariant aborts, which libFuzzer reports as a crash. The unit is included so that it
 * is built with the fuzzer's instrumentation (see fuzz-quantity.c). */
#include "../src/kube/kpb.c"

#include <stdint.h>
#include <stdlib.h>

#define MAX_OUT  (64 * 1024)
#define MAX_ITEM 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok)
        abort();
}

/* One field of every kind, for builds without the generated schema. */
static const struct kpb_field small_fields[] = {
    {1, "s", KPB_STRING, KPB_F_OMITEMPTY, 0, -1, -1},
    {2, "i", KPB_INT32, 0, 0, -1, -1},
    {3, "b", KPB_BOOL, KPB_F_PTR, 0, -1, -1},
    {4, "m", KPB_MSG, 0, 0, 0, -1},
    {5, "", KPB_MSG, KPB_F_INLINE | KPB_F_PTR, 0, 1, -1},
    {6, "r", KPB_INT64, KPB_F_REPEATED, 0, -1, -1},
    {7, "mp", KPB_MAP, 0, KPB_BYTES, -1, -1},
    {8, "t", KPB_TIME, 0, 0, -1, -1},
    {9, "mt", KPB_MICROTIME, KPB_F_PTR, 0, -1, -1},
    {10, "q", KPB_QUANTITY, 0, 0, -1, -1},
    {11, "ios", KPB_INTORSTR, 0, 0, -1, -1},
    {12, "ms", KPB_MAP, KPB_F_OMITEMPTY, KPB_MSG, -1, 1},
    {13, "by", KPB_BYTES, 0, 0, -1, -1},
    {14, "x", KPB_SKIP, 0, 0, -1, -1},
};
static const struct kpb_field small_leaf[] = {{1, "name", KPB_STRING, 0, 0, -1, -1}};
static const struct kpb_msg small_msgs[] = {{"Small", small_fields, 14}, {"Leaf", small_leaf, 1}};
static const struct kpb_root small_roots[] = {{"", "v1", "Small", 0}};
static const struct kpb_schema small = {small_msgs, 2, small_roots, 1};

struct items {
    uint64_t hash;
    size_t n;
};

static int note(const uint8_t *item, size_t len, void *data)
{
    struct items *it = data;

    check(len <= MAX_ITEM);
    for (size_t i = 0; i < len; i++)
        it->hash = (it->hash ^ item[i]) * 1099511628211ULL;
    it->hash = (it->hash ^ len) * 1099511628211ULL;
    it->n++;
    return 0;
}

static int split(const uint8_t *p, size_t n, size_t step, struct items *it)
{
    struct kpb_list l;
    json_t *env = NULL;
    int r = 0;

    *it = (struct items){14695981039346656037ULL, 0};
    kpb_list_init(&l, MAX_ITEM, 1024, note, it);
    for (size_t off = 0; off < n && r == 0; off += step)
        r = kpb_list_feed(&l, p + off, n - off > step ? step : n - off);
    if (r == 0)
        r = kpb_list_finish(&l, &env);
    check((r == 0) == (env != NULL));
    json_decref(env);
    kpb_list_done(&l);
    return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct kpb_schema *s = kpb_schema.nroots ? &kpb_schema : &small;
    const uint8_t *raw;
    size_t raw_len, cap = 0, len = 0;
    char *out = NULL;
    struct items a, b;
    int r, r2;

    if (size < 1)
        return 0;
    int msg = s->roots[data[0] % s->nroots].msg;
    size_t step = 1 + (data[0] >> 5);
    data++;
    size--;

    r = kpb_to_json(s, msg, data, size, &out, &cap, &len, MAX_OUT);
    check(r == 0 || r == -EBADMSG || r == -E2BIG || r == -ENOMEM);
    if (r == 0) {
        json_error_t e;
        check(len <= MAX_OUT && strlen(out) == len);
        json_t *j = json_loadb(out, len, JSON_ALLOW_NUL, &e);       /* Go writes \u0000 too */
        check(json_is_object(j) || (!j && strstr(out, "\\u0000"))); /* jansson: no NUL in keys */
        json_decref(j);
    }
    x_free(out);

    r = split(data, size, size ? size : 1, &a);
    r2 = split(data, size, step, &b);
    check(r == r2);
    if (r == 0)
        check(a.n == b.n && a.hash == b.hash);

    if (kpb_unwrap(data, size, &raw, &raw_len, NULL, 0) == 0)
        check(raw >= data && raw + raw_len <= data + size);

    const uint8_t *type, *obj;
    size_t type_len, obj_len;
    r = kpb_watch_event(data, size, &type, &type_len, &obj, &obj_len);
    check(r == 0 || r == -EBADMSG);
    if (r == 0)
        check(type_len > 0 && type >= data && type + type_len <= data + size && obj >= data &&
              obj + obj_len <= data + size);
    return 0;
}
