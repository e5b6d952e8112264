/* kube/kpb: Kubernetes protobuf to JSON text. A small schema with one field of every kind and flag,
 * then a table of (wire bytes, JSON the Go API server would write, or the error) for each rule of
 * kpb.h; the list splitter fed whole, byte by byte and in random chunks; the envelope. The real
 * schema is checked against a real API server by e2e.kube.protobuf. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "kube/kpb.h"

enum { T, SUB, IN };

static const struct kpb_field t_fields[] = {
    {1, "s", KPB_STRING, KPB_F_OMITEMPTY, 0, -1, -1},
    {2, "sn", KPB_STRING, 0, 0, -1, -1},
    {3, "i", KPB_INT32, KPB_F_OMITEMPTY, 0, -1, -1},
    {4, "in", KPB_INT64, 0, 0, -1, -1},
    {5, "b", KPB_BOOL, KPB_F_OMITEMPTY, 0, -1, -1},
    {6, "pi", KPB_INT32, KPB_F_PTR | KPB_F_OMITEMPTY, 0, -1, -1},
    {7, "pn", KPB_BOOL, KPB_F_PTR, 0, -1, -1},
    {8, "sub", KPB_MSG, KPB_F_OMITEMPTY, 0, SUB, -1},
    {9, "psub", KPB_MSG, KPB_F_PTR | KPB_F_OMITEMPTY, 0, SUB, -1},
    {10, "", KPB_MSG, KPB_F_INLINE, 0, IN, -1},
    {11, "rs", KPB_STRING, KPB_F_REPEATED | KPB_F_OMITEMPTY, 0, -1, -1},
    {12, "rm", KPB_MSG, KPB_F_REPEATED, 0, SUB, -1},
    {13, "ri", KPB_INT64, KPB_F_REPEATED | KPB_F_OMITEMPTY, 0, -1, -1},
    {14, "m", KPB_MAP, KPB_F_OMITEMPTY, KPB_STRING, -1, -1},
    {15, "mq", KPB_MAP, KPB_F_OMITEMPTY, KPB_QUANTITY, -1, -1},
    {16, "mb", KPB_MAP, KPB_F_OMITEMPTY, KPB_BYTES, -1, -1},
    {17, "by", KPB_BYTES, KPB_F_OMITEMPTY, 0, -1, -1},
    {18, "byn", KPB_BYTES, 0, 0, -1, -1},
    {19, "t", KPB_TIME, KPB_F_OMITEMPTY, 0, -1, -1},
    {20, "pt", KPB_TIME, KPB_F_PTR | KPB_F_OMITEMPTY, 0, -1, -1},
    {21, "mt", KPB_MICROTIME, KPB_F_PTR | KPB_F_OMITEMPTY, 0, -1, -1},
    {22, "q", KPB_QUANTITY, KPB_F_OMITEMPTY, 0, -1, -1},
    {23, "ios", KPB_INTORSTR, KPB_F_PTR | KPB_F_OMITEMPTY, 0, -1, -1},
    {24, "skip", KPB_SKIP, 0, 0, -1, -1},
    {25, "rec", KPB_MSG, KPB_F_PTR | KPB_F_OMITEMPTY, 0, T, -1},
    {26, "ms", KPB_MAP, KPB_F_OMITEMPTY, KPB_MSG, -1, SUB},
};
static const struct kpb_field sub_fields[] = {
    {1, "name", KPB_STRING, 0, 0, -1, -1},
    {2, "n", KPB_INT32, KPB_F_OMITEMPTY, 0, -1, -1},
};
static const struct kpb_field in_fields[] = {
    {1, "x", KPB_STRING, KPB_F_OMITEMPTY, 0, -1, -1},
    {2, "y", KPB_INT32, 0, 0, -1, -1},
};
static const struct kpb_msg msgs[] = {
    {"T", t_fields, sizeof(t_fields) / sizeof(t_fields[0])},
    {"Sub", sub_fields, 2},
    {"In", in_fields, 2},
};
static const struct kpb_root roots[] = {{"", "v1", "T", T}, {"apps", "v1", "Sub", SUB}};
static const struct kpb_schema schema = {msgs, 3, roots, 2};

/* What every T has when its fields are absent. */
#define DEFAULTS                                                                                   \
    "\"sn\":\"\",\"in\":0,\"pn\":null,\"sub\":{\"name\":\"\"},\"y\":0,\"rm\":null,\"byn\":null,"   \
    "\"t\":null,\"q\":\"0\""

static size_t unhex(const char *h, uint8_t *out, size_t size)
{
    size_t n = 0;

    for (; h[0] && h[1]; h += 2) {
        if (h[0] == ' ') {
            h--;
            continue;
        }
        unsigned v;
        assert_int_equal(sscanf(h, "%2x", &v), 1);
        assert_true(n < size);
        out[n++] = (uint8_t)v;
    }
    return n;
}

static int to_json(const char *hex, size_t max_out, char **text)
{
    uint8_t b[4096];
    size_t n = unhex(hex, b, sizeof(b)), cap = 0, len = 0;
    char *out = NULL;
    int r = kpb_to_json(&schema, T, b, n, &out, &cap, &len, max_out);

    if (r == 0) {
        assert_int_equal(strlen(out), len);
        *text = out;
    } else {
        x_free(out);
        *text = NULL;
    }
    return r;
}

struct wcase {
    const char *what;
    const char *hex;
    const char *json; /* members besides DEFAULTS' (which the case may override); NULL: err */
    int err;
};

static const struct wcase cases[] = {
    {"empty message: every default", "", "", 0},
    {"omitempty string present and empty: dropped", "0a00", "", 0},
    {"string present", "0a0161", "\"s\":\"a\"", 0},
    {"non-omitempty string present", "1201 62", "\"sn\":\"b\"", 0},
    {"escapes: quote, backslash, control, DEL kept", "0a05 225c0a017f",
     "\"s\":\"\\\"\\\\\\n\\u0001\x7f\"", 0},
    {"valid UTF-8 kept", "0a05 c3a9e29883", "\"s\":\"\xc3\xa9\xe2\x98\x83\"", 0},
    {"invalid UTF-8 becomes U+FFFD per byte (as encoding/json)", "0a04 ff61c0af",
     "\"s\":\"\xef\xbf\xbd"
     "a\xef\xbf\xbd\xef\xbf\xbd\"",
     0},
    {"surrogate in UTF-8 is invalid", "0a03 eda080",
     "\"s\":\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"", 0},
    {"int32 zero with omitempty: dropped", "1800", "", 0},
    {"negative int32 (10-byte varint)", "18 ffffffffffffffffff01", "\"i\":-1", 0},
    {"int64 large", "20 ffffffffffffffff7f", "\"in\":9223372036854775807", 0},
    {"bool true", "2801", "\"b\":true", 0},
    {"pointer to zero: kept", "3000", "\"pi\":0", 0},
    {"pointer without omitempty: present", "3801", "\"pn\":true", 0},
    {"struct present", "4203 0a0178", "\"sub\":{\"name\":\"x\"}", 0},
    {"struct present and empty: its defaults", "4200", "", 0},
    {"pointer to struct present and empty", "4a00", "\"psub\":{\"name\":\"\"}", 0},
    {"inline struct: members in the parent", "5205 0a017a1007", "\"x\":\"z\",\"y\":7", 0},
    {"repeated strings, an empty one kept", "5a0161 5a00 5a0163", "\"rs\":[\"a\",\"\",\"c\"]", 0},
    {"repeated messages", "6200 6203 0a0171", "\"rm\":[{\"name\":\"\"},{\"name\":\"q\"}]", 0},
    {"repeated int64 not packed", "6801 6802", "\"ri\":[1,2]", 0},
    {"repeated int64 packed", "6a03 010203", "\"ri\":[1,2,3]", 0},
    {"repeated split by another field", "5a0161 0a0162 5a0163", NULL, -EBADMSG},
    {"map of strings", "7206 0a016b120176 7205 0a016c1200", "\"m\":{\"k\":\"v\",\"l\":\"\"}", 0},
    {"map entry without value: the zero value", "7203 0a016b", "\"m\":{\"k\":\"\"}", 0},
    {"map of quantities", "7a0a 0a03637075 1203 0a0132", "\"mq\":{\"cpu\":\"2\"}", 0},
    {"bytes: base64 of 1 byte", "8a01 01 ff", "\"by\":\"/w==\"", 0},
    {"bytes of 2", "8a01 02 fffe", "\"by\":\"//4=\"", 0},
    {"bytes of 3", "8a01 03 000102", "\"by\":\"AAEC\"", 0},
    {"bytes empty with omitempty: dropped", "8a01 00", "", 0},
    {"bytes empty without omitempty: \"\"", "9201 00", "\"byn\":\"\"", 0},
    {"time: seconds, RFC 3339", "9a01 06 08 c0cdcdb106", "\"t\":\"2024-05-02T10:11:12Z\"", 0},
    {"time: nanos dropped (Time keeps seconds)", "9a01 09 08 c0cdcdb106 10 e807",
     "\"t\":\"2024-05-02T10:11:12Z\"", 0},
    {"time: empty is the zero time, null", "9a01 00", "\"t\":null", 0},
    {"time: Go's zero instant is null", "9a01 0b 08 8092b8c398feffffff01", "\"t\":null", 0},
    {"pointer time empty: null", "a201 00", "\"pt\":null", 0},
    {"micro time: microseconds", "aa01 0b 08 c0cdcdb106 10 8094ef3a",
     "\"mt\":\"2024-05-02T10:11:12.123456Z\"", 0},
    {"time: nanos out of range", "aa01 08 08 01 10 ffffffff0f", NULL, -EBADMSG},
    {"quantity", "b201 06 0a04 3132 3853", "\"q\":\"128S\"", 0},
    {"int or string: int", "ba01 04 0800 1050", "\"ios\":80", 0},
    {"int or string: string", "ba01 08 0801 1a04 68747470", "\"ios\":\"http\"", 0},
    {"int or string: unknown type", "ba01 02 0802", NULL, -EBADMSG},
    {"skipped field", "c201 03 616263", "", 0},
    {"unknown field skipped, every wire type",
     "f801 05 f901 0102030405060708 fa01 01 00 fd01 01020304", "", 0},
    {"map of bytes: base64, and an empty value is \"\"",
     "8201 06 0a0161 1201ff 8201 05 0a0162 1200", "\"mb\":{\"a\":\"/w==\",\"b\":\"\"}", 0},
    {"map of messages", "d201 08 0a016b 1203 0a0176", "\"ms\":{\"k\":{\"name\":\"v\"}}", 0},
    {"singular field twice", "0a0161 0a0162", NULL, -EBADMSG},
    {"wrong wire type", "0801", NULL, -EBADMSG},
    {"truncated length", "0a05 61", NULL, -EBADMSG},
    {"truncated varint", "18 ff", NULL, -EBADMSG},
    {"varint over 64 bits", "18 ffffffffffffffffff7f", NULL, -EBADMSG},
    {"group", "0b", NULL, -EBADMSG},
    {"field number 0", "0200", NULL, -EBADMSG},
};

static void test_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct wcase *c = &cases[i];
        char *text = NULL, want[2048];
        json_t *got, *exp, *defaults;
        json_error_t jerr;
        int r;

        r = to_json(c->hex, 1 << 20, &text);
        if (!c->json) {
            if (r != c->err)
                fail_msg("%s: %d, want %d (%s)", c->what, r, c->err, text ? text : "");
            continue;
        }
        if (r != 0)
            fail_msg("%s: %s", c->what, strerror(-r));
        got = json_loads(text, 0, &jerr);
        if (!got)
            fail_msg("%s: not JSON (%s): %s", c->what, jerr.text, text);
        snprintf(want, sizeof(want), "{%s}", c->json);
        exp = json_loads(want, 0, &jerr);
        if (!exp)
            fail_msg("%s: the case's JSON: %s", c->what, jerr.text);
        defaults = json_loads("{" DEFAULTS "}", 0, NULL);
        json_object_update(defaults, exp);
        json_decref(exp);
        exp = defaults;
        if (!json_equal(got, exp)) {
            char *e = json_dumps(exp, JSON_SORT_KEYS);
            fail_msg("%s:\n got  %s\n want %s", c->what, text, e);
        }
        json_decref(got);
        json_decref(exp);
        x_free(text);
    }
}

/* Absent fields expand into their defaults: the text is bounded by max_out, not by the input. */
static void test_bounds(void **state)
{
    uint8_t b[8192];
    size_t n = 0, cap = 0, len;
    char *out = NULL;

    (void)state;
    for (int i = 0; i < 2000; i++) { /* 2000 empty repeated messages: 4 KB of input */
        b[n++] = 0x62;
        b[n++] = 0x00;
    }
    assert_int_equal(kpb_to_json(&schema, T, b, n, &out, &cap, &len, 16384), -E2BIG);
    assert_int_equal(kpb_to_json(&schema, T, b, n, &out, &cap, &len, 1 << 20), 0);
    assert_true(len > 2000 * 10);
    x_free(out);
    out = NULL;
    cap = 0;
    /* nesting: rec { rec { ... } } deeper than KPB_MAX_DEPTH */
    {
        static uint8_t deep[4096];
        size_t dn = 0;
        for (int d = 0; d < KPB_MAX_DEPTH + 4; d++) {
            uint8_t hdr[8];
            size_t h = 0, v = dn;
            hdr[h++] = 0xca;
            hdr[h++] = 0x01;
            do {
                hdr[h++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
                v >>= 7;
            } while (v);
            memmove(deep + h, deep, dn);
            memcpy(deep, hdr, h);
            dn += h;
        }
        assert_int_equal(kpb_to_json(&schema, T, deep, dn, &out, &cap, &len, 1 << 20), -EBADMSG);
    }
    x_free(out);
    assert_int_equal(kpb_to_json(&schema, 7, b, 0, &out, &cap, &len, 10), -EINVAL);
}

static void test_root(void **state)
{
    (void)state;
    assert_int_equal(kpb_root(&schema, "", "v1", "T"), T);
    assert_int_equal(kpb_root(&schema, NULL, "v1", "T"), T);
    assert_int_equal(kpb_root(&schema, "apps", "v1", "Sub"), SUB);
    assert_int_equal(kpb_root(&schema, "", "v1", "Sub"), -ENOENT);
    assert_int_equal(kpb_root(&schema, "", "v2", "T"), -ENOENT);
}

/* ---- the list ------------------------------------------------------------------------------- */

struct got {
    size_t n;
    char seen[64][16];
};

static int on_item(const uint8_t *item, size_t len, void *data)
{
    struct got *g = data;

    assert_true(g->n < 64);
    assert_true(len < 16);
    memcpy(g->seen[g->n], item, len);
    g->seen[g->n][len] = '\0';
    g->n++;
    return 0;
}

/* "k8s\0", Unknown{typeMeta{apiVersion v1, kind TList}, raw{ListMeta{rv "42", continue "c"},
 * items "a", "bb", "" , "ccc"}, contentType "application/vnd.kubernetes.protobuf"} */
static size_t a_list(uint8_t *b, size_t size)
{
    return unhex("6b387300"
                 "0a0b 0a027631 1205 544c697374"
                 "1219 0a07 12023432 1a0163  1201 61 1202 6262 1200 1203 636363 2003"
                 "2200",
                 b, size);
}

static void feed_in_chunks(const uint8_t *b, size_t n, size_t chunk, struct got *g, int want_finish)
{
    struct kpb_list l;
    json_t *env = NULL;

    memset(g, 0, sizeof(*g));
    kpb_list_init(&l, 1024, 1024, on_item, g);
    for (size_t off = 0; off < n; off += chunk) {
        size_t k = n - off < chunk ? n - off : chunk;
        assert_int_equal(kpb_list_feed(&l, b + off, k), 0);
    }
    assert_int_equal(kpb_list_finish(&l, &env), want_finish);
    if (want_finish == 0) {
        json_t *meta = json_object_get(env, "metadata");
        assert_string_equal(json_string_value(json_object_get(meta, "resourceVersion")), "42");
        assert_string_equal(json_string_value(json_object_get(meta, "continue")), "c");
    }
    json_decref(env);
    kpb_list_done(&l);
}

static void test_list(void **state)
{
    uint8_t b[256];
    size_t n = a_list(b, sizeof(b));
    struct got g;

    (void)state;
    for (size_t chunk = 1; chunk <= n; chunk++) {
        feed_in_chunks(b, n, chunk, &g, 0);
        assert_int_equal(g.n, 4);
        assert_string_equal(g.seen[0], "a");
        assert_string_equal(g.seen[1], "bb");
        assert_string_equal(g.seen[2], "");
        assert_string_equal(g.seen[3], "ccc");
    }
    /* truncated anywhere: refused at the end (or before) */
    for (size_t cut = 0; cut < n - 2; cut++) {
        struct kpb_list l;
        json_t *env = NULL;
        memset(&g, 0, sizeof(g));
        kpb_list_init(&l, 1024, 1024, on_item, &g);
        int r = kpb_list_feed(&l, b, cut);
        if (r == 0)
            r = kpb_list_finish(&l, &env);
        assert_int_equal(r, -EBADMSG);
        assert_null(env);
        kpb_list_done(&l);
    }
}

static void test_list_refused(void **state)
{
    uint8_t b[256];
    size_t n = a_list(b, sizeof(b));
    struct kpb_list l;
    struct got g = {0};

    (void)state;
    /* an item over max_item */
    kpb_list_init(&l, 2, 1024, on_item, &g);
    assert_int_equal(kpb_list_feed(&l, b, n), -E2BIG);
    assert_int_equal(kpb_list_feed(&l, b, 1), -E2BIG); /* sticky */
    kpb_list_done(&l);
    /* the ListMeta over max_rest */
    kpb_list_init(&l, 1024, 2, on_item, &g);
    assert_int_equal(kpb_list_feed(&l, b, n), -E2BIG);
    kpb_list_done(&l);
    /* not the magic */
    kpb_list_init(&l, 1024, 1024, on_item, &g);
    assert_int_equal(kpb_list_feed(&l, (const uint8_t *)"{\"items\":[]}", 12), -EBADMSG);
    kpb_list_done(&l);
    /* a field of the raw list running past the raw field's end */
    n = unhex("6b387300 1203 1205 6161", b, sizeof(b));
    kpb_list_init(&l, 1024, 1024, on_item, &g);
    assert_int_equal(kpb_list_feed(&l, b, n), -EBADMSG);
    kpb_list_done(&l);
    /* two raw fields */
    n = unhex("6b387300 1200 1200", b, sizeof(b));
    kpb_list_init(&l, 1024, 1024, on_item, &g);
    assert_int_equal(kpb_list_feed(&l, b, n), -EBADMSG);
    kpb_list_done(&l);
    /* no raw field at all */
    {
        json_t *env = NULL;
        n = unhex("6b387300 2200", b, sizeof(b));
        kpb_list_init(&l, 1024, 1024, on_item, &g);
        assert_int_equal(kpb_list_feed(&l, b, n), 0);
        assert_int_equal(kpb_list_finish(&l, &env), -EBADMSG);
        kpb_list_done(&l);
    }
}

static int refuse(const uint8_t *item, size_t len, void *data)
{
    (void)item;
    (void)len;
    (void)data;
    return -ENOSPC;
}

static void test_list_callback_error(void **state)
{
    uint8_t b[256];
    size_t n = a_list(b, sizeof(b));
    struct kpb_list l;

    (void)state;
    kpb_list_init(&l, 1024, 1024, refuse, NULL);
    assert_int_equal(kpb_list_feed(&l, b, n), -ENOSPC);
    kpb_list_done(&l);
}

static void test_unwrap(void **state)
{
    uint8_t b[256];
    size_t n = unhex("6b387300 0a0b 0a027631 1205 506f6f6c31 1203 0a0161 2200", b, sizeof(b));
    const uint8_t *raw;
    size_t raw_len;
    char kind[4];

    (void)state;
    assert_int_equal(kpb_unwrap(b, n, &raw, &raw_len, kind, sizeof(kind)), 0);
    assert_int_equal(raw_len, 3);
    assert_memory_equal(raw, "\x0a\x01\x61", 3);
    assert_string_equal(kind, "Poo"); /* truncated to the buffer */
    assert_int_equal(kpb_unwrap(b, 3, &raw, &raw_len, NULL, 0), -EBADMSG);
    n = unhex("6b387300 1a04677a6970", b, sizeof(b)); /* a content encoding */
    assert_int_equal(kpb_unwrap(b, n, &raw, &raw_len, NULL, 0), -EBADMSG);
    n = unhex("6b387300 1205 0a", b, sizeof(b)); /* truncated */
    assert_int_equal(kpb_unwrap(b, n, &raw, &raw_len, NULL, 0), -EBADMSG);
}

/* With the build's schema (when generated): every root decodes an empty message to an object. */
static void test_build_schema(void **state)
{
    (void)state;
    for (size_t i = 0; i < kpb_schema.nroots; i++) {
        char *out = NULL;
        size_t cap = 0, len;
        json_t *j;
        assert_int_equal(
            kpb_to_json(&kpb_schema, kpb_schema.roots[i].msg, NULL, 0, &out, &cap, &len, 1 << 20),
            0);
        j = json_loads(out, 0, NULL);
        assert_true(json_is_object(j));
        json_decref(j);
        x_free(out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),

        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_root),
        cmocka_unit_test(test_list),
        cmocka_unit_test(test_list_refused),
        cmocka_unit_test(test_list_callback_error),
        cmocka_unit_test(test_unwrap),
        cmocka_unit_test(test_build_schema),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
