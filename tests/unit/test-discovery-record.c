/* Unit tests of src/discovery/record.c: TXT keys, instance names, full names, URLs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "discovery/record.h"

#define ID   "7d3f4c5e-8a2b-4c1d-9e0f-123456789abc"
#define HASH "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* Parses a NULL-terminated list of C strings as TXT items. */
static int parse_strs(const char *const *s, unsigned flags, struct drec_announce *a,
                      enum drec_reason *why)
{
    struct drec_txt_item items[64];
    size_t n = 0;

    for (; s[n]; n++) {
        items[n].data = (const unsigned char *)s[n];
        items[n].len = strlen(s[n]);
    }
    return drec_txt_parse(items, n, flags, a, why);
}

static void test_txt_roundtrip(void **state)
{
    struct drec_announce a = {0}, b;
    char items[DREC_TXT_BUILD_MAX][DREC_TXT_ITEM_MAX + 1];
    struct drec_txt_item ti[DREC_TXT_BUILD_MAX];
    enum drec_reason why;
    size_t n = 0;

    (void)state;
    snprintf(a.id, sizeof(a.id), "%s", ID);
    snprintf(a.name, sizeof(a.name), "edge-1");
    snprintf(a.url, sizeof(a.url), "https://10.77.0.2:19207");
    snprintf(a.ca_hash, sizeof(a.ca_hash), "%s", HASH);
    assert_int_equal(drec_txt_build(&a, items, &n), 0);
    assert_int_equal(n, 5);
    assert_string_equal(items[0], "txtvers=1");
    assert_string_equal(items[1], "id=" ID);
    assert_string_equal(items[2], "name=edge-1");
    assert_string_equal(items[3], "url=https://10.77.0.2:19207");
    assert_string_equal(items[4], "cahash=" HASH);
    for (size_t i = 0; i < n; i++) {
        ti[i].data = (const unsigned char *)items[i];
        ti[i].len = strlen(items[i]);
    }
    assert_int_equal(drec_txt_parse(ti, n, DREC_REQUIRE_URL, &b, &why), 0);
    assert_int_equal(why, DREC_OK);
    assert_memory_equal(&a, &b, sizeof(a));

    /* Absent optional fields are left out. */
    a.name[0] = a.ca_hash[0] = '\0';
    assert_int_equal(drec_txt_build(&a, items, &n), 0);
    assert_int_equal(n, 3);
    /* An invalid announcement is not written. */
    snprintf(a.url, sizeof(a.url), "http://x");
    assert_int_equal(drec_txt_build(&a, items, &n), -EINVAL);
}

static void test_txt_rules(void **state)
{
    struct drec_announce a;
    enum drec_reason why;

    (void)state;
    /* Keys are case-insensitive, the first occurrence wins, unknown keys and empty strings are
     * ignored, txtvers is optional. */
    assert_int_equal(parse_strs((const char *[]){"", "ID=" ID, "id=other", "x=\x01\xff",
                                                 "Url=https://h.example:1",
                                                 "org.freedesktop.Avahi.cookie=1", NULL},
                                DREC_REQUIRE_URL, &a, &why),
                     0);
    assert_string_equal(a.id, ID);
    assert_string_equal(a.url, "https://h.example:1");
    assert_string_equal(a.name, "");
    /* The hash is normalised to lowercase. */
    assert_int_equal(
        parse_strs(
            (const char *[]){
                "id=a",
                "cahash=sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
                NULL},
            0, &a, &why),
        0);
    assert_string_equal(a.ca_hash, HASH);
    /* On the WAN the URL may be missing. */
    assert_int_equal(parse_strs((const char *[]){"id=a", NULL}, 0, &a, &why), 0);

    static const struct {
        const char *items[4];
        unsigned flags;
        enum drec_reason why;
    } bad[] = {
        {{"name=x", NULL}, 0, DREC_MISSING_ID},
        {{"id=" ID, NULL}, DREC_REQUIRE_URL, DREC_MISSING_URL},
        {{"id", NULL}, 0, DREC_BAD_ID},
        {{"id=", NULL}, 0, DREC_BAD_ID},
        {{"id=UPPER", NULL}, 0, DREC_BAD_ID},
        {{"id=a b", NULL}, 0, DREC_BAD_ID},
        {{"id=a_b", NULL}, 0, DREC_BAD_ID},
        {{"id=a", "name=-x", NULL}, 0, DREC_BAD_NAME},
        {{"id=a", "url=http://x", NULL}, 0, DREC_BAD_URL},
        {{"id=a", "url=https://x:0", NULL}, 0, DREC_BAD_URL},
        {{"id=a", "url=https://x/path", NULL}, 0, DREC_BAD_URL},
        {{"id=a", "url=https://user@x", NULL}, 0, DREC_BAD_URL},
        {{"id=a", "cahash=sha256:00", NULL}, 0, DREC_BAD_HASH},
        {{"id=a", "cahash=md5:" HASH, NULL}, 0, DREC_BAD_HASH},
        {{"txtvers=2", "id=a", NULL}, 0, DREC_BAD_VERSION},
        {{"=x", "id=a", NULL}, 0, DREC_BAD_ITEM},
        {{"i\x01d=a", NULL}, 0, DREC_BAD_ITEM},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&a, 0x5a, sizeof(a));
        struct drec_announce keep = a;

        assert_int_equal(parse_strs(bad[i].items, bad[i].flags, &a, &why), -EINVAL);
        if (why != bad[i].why)
            fail_msg("case %zu: reason %s, expected %s", i, drec_reason_name(why),
                     drec_reason_name(bad[i].why));
        assert_memory_equal(&a, &keep, sizeof(a)); /* untouched on failure */
    }
}

static void test_txt_limits(void **state)
{
    struct drec_txt_item items[DREC_TXT_ITEMS_MAX + 1];
    unsigned char big[DREC_TXT_ITEM_MAX + 1];
    struct drec_announce a;
    enum drec_reason why;

    (void)state;
    for (size_t i = 0; i <= DREC_TXT_ITEMS_MAX; i++) {
        items[i].data = (const unsigned char *)"id=a";
        items[i].len = 4;
    }
    assert_int_equal(drec_txt_parse(items, DREC_TXT_ITEMS_MAX, 0, &a, &why), 0);
    assert_int_equal(drec_txt_parse(items, DREC_TXT_ITEMS_MAX + 1, 0, &a, &why), -EINVAL);
    assert_int_equal(why, DREC_TOO_LARGE);
    memset(big, 'x', sizeof(big));
    items[1].data = big;
    items[1].len = sizeof(big);
    assert_int_equal(drec_txt_parse(items, 2, 0, &a, &why), -EINVAL);
    assert_int_equal(why, DREC_TOO_LARGE);
    /* Many long unknown strings: the total is bounded too. */
    for (size_t i = 1; i < DREC_TXT_ITEMS_MAX; i++) {
        items[i].data = big;
        items[i].len = DREC_TXT_ITEM_MAX;
    }
    assert_int_equal(drec_txt_parse(items, DREC_TXT_ITEMS_MAX, 0, &a, &why), -EINVAL);
    assert_int_equal(why, DREC_TOO_LARGE);
    assert_int_equal(drec_txt_parse(NULL, 0, 0, &a, &why), -EINVAL);
    assert_int_equal(why, DREC_MISSING_ID);
}

static void test_instance(void **state)
{
    char inst[DREC_LABEL_MAX + 1], id[PEER_NAME_MAX + 1];
    unsigned n;
    enum drec_reason why;

    (void)state;
    assert_int_equal(drec_instance_build("edge-1", ID, 0, inst), 0);
    assert_string_equal(inst, "edge-1_" ID);
    assert_int_equal(drec_instance_parse(inst, strlen(inst), id, &n, &why), 0);
    assert_string_equal(id, ID);
    assert_int_equal(n, 0);
    assert_int_equal(drec_instance_build("edge-1", ID, 2, inst), 0);
    assert_string_equal(inst, "edge-1_" ID " #2");
    assert_int_equal(drec_instance_parse(inst, strlen(inst), id, &n, &why), 0);
    assert_int_equal(n, 2);
    assert_int_equal(drec_instance_build("edge-1", ID, 9999, inst), 0);
    assert_true(strlen(inst) <= DREC_LABEL_MAX);
    assert_int_equal(drec_instance_build("edge-1", ID, 10000, inst), -EINVAL);
    /* A long prefix is shortened, the ID never; every conflict number keeps the same prefix. */
    assert_int_equal(
        drec_instance_build("a-very-long-cluster-name-that-does-not-fit-in-a-label", ID, 0, inst),
        0);
    assert_int_equal(strlen(inst), DREC_LABEL_MAX - 6);
    assert_non_null(strstr(inst, "_" ID));
    /* UTF-8 is not cut in the middle of a character; control bytes are replaced. */
    assert_int_equal(drec_instance_build("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                                         "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9",
                                         ID, 0, inst),
                     0);
    assert_int_equal(strlen(inst) - strlen("_" ID), 20);
    assert_int_equal(drec_instance_build("a\nb", ID, 0, inst), 0);
    assert_string_equal(inst, "a-b_" ID);
    assert_int_equal(drec_instance_build(NULL, "x", 0, inst), 0);
    assert_string_equal(inst, "x");
    assert_int_equal(drec_instance_build("p", "Bad_ID", 0, inst), -EINVAL);
    /* The ID alone when it leaves no room; too long with the suffix. */
    {
        char long_id[64];

        memset(long_id, 'a', 63);
        long_id[63] = '\0';
        assert_int_equal(drec_instance_build("p", long_id, 0, inst), 0);
        assert_string_equal(inst, long_id);
        assert_int_equal(drec_instance_build("p", long_id, 2, inst), -ENAMETOOLONG);
    }
    /* Instance names of other software, or forged ones. */
    static const char *const bad[] = {"",        "no id here!", "x_",        "x_BAD",
                                      "x_a #1",  "x_a #0",      "x_a #02",   "x_a #10000",
                                      "x_a\x01", "x_a_b c",     "x_" ID "#2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (drec_instance_parse(bad[i], strlen(bad[i]), id, &n, &why) != -EINVAL)
            fail_msg("'%s' parsed", bad[i]);
    assert_int_equal(drec_instance_parse("My Liqo_abc", 11, id, &n, &why), 0);
    assert_string_equal(id, "abc");
}

static void test_fullname(void **state)
{
    char label[DREC_LABEL_MAX + 1];
    size_t len;

    (void)state;
    assert_int_equal(drec_fullname_split("edge\\0321_abc._liqo_auth._tcp.example.com.",
                                         "_liqo_auth._tcp.example.com", label, &len),
                     0);
    assert_string_equal(label, "edge 1_abc");
    assert_int_equal(len, 10);
    assert_int_equal(drec_fullname_split("a\\.b_x._liqo_auth._TCP.Example.COM",
                                         "_liqo_auth._tcp.example.com.", label, &len),
                     0);
    assert_string_equal(label, "a.b_x");
    assert_int_equal(drec_fullname_split("x._other._tcp.example.com", "_liqo_auth._tcp.example.com",
                                         label, &len),
                     -EINVAL);
    assert_int_equal(drec_fullname_split("x\\000y._s._tcp.d", "_s._tcp.d", label, &len), -EINVAL);
    assert_int_equal(drec_fullname_split("x\\", "_s._tcp.d", label, &len), -EINVAL);
    assert_int_equal(drec_fullname_split("._s._tcp.d", "_s._tcp.d", label, &len), -EINVAL);
    assert_int_equal(drec_fullname_split("x._s._tcp.d.evil", "_s._tcp.d", label, &len), -EINVAL);
}

static void test_urls(void **state)
{
    char url[DREC_URL_MAX + 1];

    (void)state;
    assert_true(drec_url_valid("https://10.0.0.1:8443"));
    assert_true(drec_url_valid("https://[fd00::1]:8443/"));
    assert_true(drec_url_valid("https://auth.example.com"));
    assert_int_equal(drec_url_port("https://auth.example.com"), 443);
    assert_int_equal(drec_url_port("https://a:19207"), 19207);
    assert_false(drec_url_valid("https://10.0.0.256:1"));
    assert_false(drec_url_valid("https://[zz]:1"));
    assert_false(drec_url_valid("https://:1"));
    assert_false(drec_url_valid("https://a:65536"));
    assert_false(drec_url_valid("https://a..b"));
    assert_false(drec_url_valid("https://a b"));
    assert_false(drec_url_valid("https://a?x"));
    assert_false(drec_url_valid("https://-a.b"));
    assert_int_equal(drec_url_from_srv("auth.example.com.", 8443, url), 0);
    assert_string_equal(url, "https://auth.example.com:8443");
    assert_int_equal(drec_url_from_srv("auth.example.com", 0, url), -EINVAL);
    assert_int_equal(drec_url_from_srv("a b", 1, url), -EINVAL);
    assert_int_equal(drec_url_from_srv(".", 1, url), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_txt_roundtrip), cmocka_unit_test(test_txt_rules),
        cmocka_unit_test(test_txt_limits),    cmocka_unit_test(test_instance),
        cmocka_unit_test(test_fullname),      cmocka_unit_test(test_urls),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
