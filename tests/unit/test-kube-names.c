#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "kube/names.h"

#define L63                                                                                        \
    "abcdefghij"                                                                                   \
    "abcdefghij"                                                                                   \
    "abcdefghij"                                                                                   \
    "abcdefghij"                                                                                   \
    "abcdefghij"                                                                                   \
    "abcdefghij"                                                                                   \
    "abc"

/* n copies of "<63 bytes>." and one last label of 63, 64n + 63 bytes in all, in buf. */
static const char *long_name(char *buf, size_t size, int n)
{
    buf[0] = '\0';
    for (int i = 0; i < n; i++)
        strncat(buf, L63 ".", size - strlen(buf) - 1);
    strncat(buf, L63, size - strlen(buf) - 1);
    return buf;
}

static void test_label(void **state)
{
    static const struct {
        const char *s;
        bool want;
    } cases[] = {
        {"a", true},      {"0", true},    {"a-1", true},       {"a--b", true}, {L63, true},
        {L63 "d", false}, {"", false},    {"-a", false},       {"a-", false},  {"-", false},
        {"A", false},     {"aB", false},  {"a.b", false},      {"a.", false},  {"a_b", false},
        {"a b", false},   {"a\n", false}, {"\xc3\xa9", false}, {NULL, false},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_int_equal(kname_dns_label(cases[i].s), cases[i].want);
}

static void test_subdomain(void **state)
{
    static const struct {
        const char *s;
        bool want;
    } cases[] = {
        {"a", true},         {"a.b.c", true},    {"a.b-c.d", true},     {"0.9", true},
        {L63 "." L63, true}, {L63 "d.a", false}, {"a." L63 "d", false}, {"", false},
        {".a", false},       {"a.", false},      {"a..b", false},       {".", false},
        {"a.-b", false},     {"a-.b", false},    {"A.b", false},        {"a_b.c", false},
        {"a/b", false},      {NULL, false},
    };
    char buf[512];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(kname_dns_subdomain(cases[i].s), cases[i].want);
        if (cases[i].s)
            assert_int_equal(kname_dns_subdomain_n(cases[i].s, strlen(cases[i].s)), cases[i].want);
    }
    /* 253 bytes in all at most: 3 * 64 + 61 = 253 passes, one more byte does not. */
    long_name(buf, sizeof(buf), 3);
    buf[253] = '\0';
    assert_int_equal(strlen(buf), 253);
    assert_true(kname_dns_subdomain(buf));
    long_name(buf, sizeof(buf), 3);
    buf[254] = '\0';
    assert_false(kname_dns_subdomain(buf));
    assert_false(kname_dns_subdomain(long_name(buf, sizeof(buf), 4)));
}

/* The _n form reads only its n bytes: the prefix of a qualified key, up to the slash. */
static void test_subdomain_n(void **state)
{
    static const struct {
        const char *s;
        size_t n;
        bool want;
    } cases[] = {
        {"example.com/name", 11, true},
        {"example.com/name", 12, false}, /* the slash */
        {"example.com./x", 12, false},   /* a trailing dot */
        {"a/b", 1, true},
        {"a/b", 0, false},
        {"a\0b", 3, false}, /* a NUL among the n bytes */
        {NULL, 1, false},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_int_equal(kname_dns_subdomain_n(cases[i].s, cases[i].n), cases[i].want);
}

static void test_label_value_and_key(void **state)
{
    static const struct {
        const char *s;
        bool value, value_or_empty, key;
    } cases[] = {
        {"web", true, true, true},
        {"Web_1.x-Y", true, true, true},
        {L63, true, true, true},
        {L63 "d", false, false, false},
        {"", false, true, false},
        {"-a", false, false, false},
        {"a.", false, false, false},
        {"a b", false, false, false},
        {"nvidia.com/gpu", false, false, true},
        {"app.kubernetes.io/part-of", false, false, true},
        {"example.com/", false, false, false},
        {"/name", false, false, false},
        {"Example.com/x", false, false, false},
        {"a/b/c", false, false, false},
        {"example.com/" L63, false, false, true},
        {"example.com/" L63 "d", false, false, false},
        {NULL, false, false, false},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(kname_label_value(cases[i].s, false), cases[i].value);
        assert_int_equal(kname_label_value(cases[i].s, true), cases[i].value_or_empty);
        assert_int_equal(kname_label_key(cases[i].s), cases[i].key);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_label),
        cmocka_unit_test(test_subdomain),
        cmocka_unit_test(test_subdomain_n),
        cmocka_unit_test(test_label_value_and_key),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
