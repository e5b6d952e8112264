#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "common/strutil.h"
#include "common/xalloc.h"

static void test_parse_u64(void **state)
{
    uint64_t v = 7;

    (void)state;
    assert_int_equal(parse_u64("0", UINT64_MAX, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(parse_u64("18446744073709551615", UINT64_MAX, &v), 0);
    assert_true(v == UINT64_MAX);
    v = 7;
    assert_int_equal(parse_u64("18446744073709551616", UINT64_MAX, &v), -ERANGE);
    assert_int_equal(parse_u64("100", 99, &v), -ERANGE);
    assert_int_equal(parse_u64("", 10, &v), -EINVAL);
    assert_int_equal(parse_u64("-1", 10, &v), -EINVAL);
    assert_int_equal(parse_u64(" 1", 10, &v), -EINVAL);
    assert_int_equal(parse_u64("1x", 10, &v), -EINVAL);
    assert_int_equal(parse_u64(NULL, 10, &v), -EINVAL);
    /* Never written on failure. */
    assert_int_equal(v, 7);
}

static void test_sbuf_bounded(void **state)
{
    struct sbuf b;

    (void)state;
    sbuf_init(&b, 8);
    assert_string_equal(sbuf_str(&b), "");
    assert_int_equal(sbuf_adds(&b, "abcd"), 0);
    assert_int_equal(sbuf_printf(&b, "%d", 123), 0);
    assert_string_equal(sbuf_str(&b), "abcd123");
    assert_int_equal(sbuf_adds(&b, "x"), 0);
    assert_int_equal(sbuf_len(&b), 8);
    /* One byte past the maximum fails and drops the contents. */
    assert_int_equal(sbuf_adds(&b, "y"), -E2BIG);
    assert_int_equal(sbuf_len(&b), 0);
    sbuf_done(&b);
}

static void test_sbuf_steal_and_oom(void **state)
{
    struct sbuf b;
    char *s;

    (void)state;
    sbuf_init(&b, 1 << 20);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(sbuf_adds(&b, "0123456789"), 0);
    assert_int_equal(sbuf_len(&b), 10000);
    s = sbuf_steal(&b);
    assert_int_equal(strlen(s), 10000);
    x_free(s);
    assert_int_equal(sbuf_len(&b), 0);

    xalloc_fail_after(0);
    assert_int_equal(sbuf_adds(&b, "abc"), -ENOMEM);
    xalloc_fail_after(-1);
    assert_int_equal(sbuf_adds(&b, "abc"), 0);
    sbuf_done(&b);
}

static void test_glob(void **state)
{
    static const struct {
        const char *p, *s;
        bool match;
    } cases[] = {
        {"abc", "abc", true},
        {"abc", "abcd", false},
        {"*", "", true},
        {"*", "anything", true},
        {"a*", "a", true},
        {"a*c", "abbbc", true},
        {"a*c", "abbbd", false},
        {"*-system", "kube-system", true},
        {"kube-*", "kube", false},
        {"a*b*c", "aXbYbZc", true},
        {"", "", true},
        {"", "a", false},
        {"**", "x", true},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (str_glob(cases[i].p, cases[i].s) != cases[i].match)
            fail_msg("case %zu: '%s' ~ '%s'", i, cases[i].p, cases[i].s);
}

static void test_xalloc(void **state)
{
    char *s;

    (void)state;
    s = x_strndup("hello world", 5);
    assert_string_equal(s, "hello");
    x_free(s);
    assert_null(x_reallocarray(NULL, SIZE_MAX / 2, 4));
    xalloc_fail_after(1);
    s = x_strdup("a");
    assert_non_null(s);
    assert_null(x_strdup("b"));
    xalloc_fail_after(-1);
    x_free(s);
}

static void test_hex(void **state)
{
    static const unsigned char bytes[] = {0x00, 0x0f, 0xa5, 0xff, 0x10};
    char out[2 * sizeof(bytes) + 1];

    (void)state;
    memset(out, 'x', sizeof(out));
    str_hex(bytes, sizeof(bytes), out);
    assert_string_equal(out, "000fa5ff10");
    str_hex(bytes, 0, out);
    assert_string_equal(out, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_u64),
        cmocka_unit_test(test_sbuf_bounded),
        cmocka_unit_test(test_sbuf_steal_and_oom),
        cmocka_unit_test(test_xalloc),
        cmocka_unit_test(test_glob),
        cmocka_unit_test(test_hex),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
