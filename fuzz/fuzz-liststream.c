/* libFuzzer harness for the streaming list splitter (src/kube/liststream.c).
 *
 * The first byte of the input picks a chunk size (1 to 64 bytes), the rest is the body. Invariants:
 *   - fed whole or in chunks, the splitter gives the same elements, in the same order, and the
 *     same result (or both fail, see below);
 *   - no element is longer than max_item;
 *   - for a body jansson accepts (without duplicate keys) that is an object whose "items" is an
 *     array of objects, nested less deeply than KLS_MAX_DEPTH, the splitter succeeds, its elements
 *     decode to the array's elements and its envelope to the object with an empty array;
 *   - kls_find_managed_fields on a text jansson accepts: the text without the range it gives
 *     decodes to the same object once metadata.managedFields is deleted from both; when it finds
 *     nothing in a text without duplicate keys nested less than KLS_MAX_DEPTH, the object has no
 *     metadata.managedFields;
 *   - the same for kls_find_member on a watch event's path, object.metadata.managedFields.
 * A violated invariant aborts, which libFuzzer reports as a crash. The unit is included so that it
 * is built with the fuzzer's instrumentation (see fuzz-quantity.c). */
#include "../src/kube/liststream.c"

#include <stdint.h>
#include <stdlib.h>

#define MAX_ITEM 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok)
        abort();
}

struct seen {
    json_t *texts; /* array of the elements' texts */
};

static int note(const char *item, size_t len, void *data)
{
    struct seen *s = data;

    check(len <= MAX_ITEM);
    json_array_append_new(s->texts, json_stringn_nocheck(item, len));
    return 0;
}

static int run(const char *text, size_t size, size_t step, json_t **texts, json_t **env)
{
    struct seen s = {json_array()};
    struct kls k;
    int r = 0;

    kls_init(&k, MAX_ITEM, 1 << 20, note, &s);
    for (size_t off = 0; off < size && r == 0; off += step) {
        size_t n = size - off > step ? step : size - off;
        r = kls_feed(&k, text + off, n);
    }
    *env = NULL;
    if (r == 0)
        r = kls_finish(&k, env);
    kls_done(&k);
    *texts = s.texts;
    return r;
}

static unsigned depth(const json_t *j)
{
    unsigned d = 0;
    const char *key;
    json_t *v;
    size_t i;

    if (json_is_object(j)) {
        json_object_foreach((json_t *)j, key, v)
        {
            unsigned e = depth(v);
            (void)key;
            d = e > d ? e : d;
        }
        return d + 1;
    }
    if (json_is_array(j)) {
        json_array_foreach(j, i, v)
        {
            unsigned e = depth(v);
            d = e > d ? e : d;
        }
        return d + 1;
    }
    return 0;
}

static void drop_mf(json_t *obj)
{
    json_object_del(json_object_get(obj, "metadata"), "managedFields");
}

static json_t *event_object(json_t *ev)
{
    return json_object_get(ev, "object");
}

static json_t *same(json_t *obj)
{
    return obj;
}

/* inner: where the object that holds metadata is, in the top object. */
static void check_cut_at(const char *text, size_t size, const char *const *path, unsigned n,
                         json_t *(*inner)(json_t *))
{
    json_t *ref = json_loadb(text, size, 0, NULL), *strict, *got;
    size_t from, to;
    char *cut;

    if (!json_is_object(ref)) {
        json_decref(ref);
        return;
    }
    if (kls_find_member(text, size, path, n, &from, &to) == 1) {
        check(from <= to && to <= size);
        cut = malloc(size - (to - from) + 1);
        check(cut != NULL);
        memcpy(cut, text, from);
        memcpy(cut + from, text + to, size - to);
        got = json_loadb(cut, size - (to - from), 0, NULL);
        check(got != NULL);
        drop_mf(inner(ref));
        drop_mf(inner(got));
        check(json_equal(got, ref));
        json_decref(got);
        free(cut);
    } else {
        strict = json_loadb(text, size, JSON_REJECT_DUPLICATES, NULL);
        if (strict && depth(strict) < KLS_MAX_DEPTH)
            check(!json_object_get(json_object_get(inner(strict), "metadata"), "managedFields"));
        json_decref(strict);
    }
    json_decref(ref);
}

static void check_cut(const char *text, size_t size)
{
    static const char *const list_path[] = {"metadata", "managedFields"};
    static const char *const event_path[] = {"object", "metadata", "managedFields"};
    size_t f1, t1, f2, t2;

    check_cut_at(text, size, list_path, 2, same);
    check_cut_at(text, size, event_path, 3, event_object);
    /* The list's own finder is the two-name path. */
    check(kls_find_managed_fields(text, size, &f1, &t1) ==
          kls_find_member(text, size, list_path, 2, &f2, &t2));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *t1, *t2, *e1, *e2, *ref, *items, *v;
    const char *text;
    size_t step, i;
    bool list = true;
    int r1, r2;

    if (size < 1)
        return 0;
    step = (size_t)(data[0] % 64) + 1;
    text = (const char *)data + 1;
    size--;
    r1 = run(text, size, size ? size : 1, &t1, &e1);
    r2 = run(text, size, step, &t2, &e2);
    /* The same success, or both refused: an element over max_item that is not complete is
     * refused at the first chunk's end past the limit (-E2BIG), so fed in chunks the splitter may
     * refuse it before it reaches what the whole text is refused for (-EBADMSG further on). The
     * elements given before are the same either way. */
    check(r1 == r2 || (r1 < 0 && r2 < 0));
    check(json_equal(t1, t2));
    check((e1 == NULL) == (e2 == NULL) && (!e1 || json_equal(e1, e2)));

    ref = json_loadb(text, size, JSON_REJECT_DUPLICATES, NULL);
    items = json_object_get(ref, "items");
    list = json_is_object(ref) && json_is_array(items) && depth(ref) < KLS_MAX_DEPTH;
    json_array_foreach(items, i, v) list = list && json_is_object(v);
    if (list) {
        char *whole = json_dumps(items, JSON_COMPACT);
        check(r1 == 0 || (r1 == -E2BIG && whole && strlen(whole) > MAX_ITEM));
        free(whole);
        if (r1 == 0) {
            check(json_array_size(t1) == json_array_size(items));
            json_array_foreach(items, i, v)
            {
                json_t *t = json_array_get(t1, i);
                json_t *got = json_loadb(json_string_value(t), json_string_length(t), 0, NULL);
                check(got && json_equal(got, v));
                json_decref(got);
            }
            json_object_set_new(ref, "items", json_array());
            check(json_equal(ref, e1));
        }
    }
    json_decref(ref);
    check_cut(text, size);
    json_decref(t1);
    json_decref(t2);
    json_decref(e1);
    json_decref(e2);
    return 0;
}
