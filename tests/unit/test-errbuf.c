#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "common/errbuf.h"

static void test_fmt(void **state)
{
    static const struct {
        size_t errlen; /* 0: a NULL buffer */
        int r;
        const char *want;
    } cases[] = {
        {64, -EINVAL, "port 70000: over 65535"},
        {64, 0, "port 70000: over 65535"},
        {64, -EPERM, "port 70000: over 65535"},
        {11, -E2BIG, "port 70000"},
        {1, -EINVAL, ""},
        {0, -ENOENT, NULL},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[64];

        memset(buf, 'x', sizeof(buf));
        assert_int_equal(errbuf_fmt(cases[i].errlen ? buf : NULL, cases[i].errlen, cases[i].r,
                                    "port %d: over %u", 70000, 65535u),
                         cases[i].r);
        if (cases[i].want)
            assert_string_equal(buf, cases[i].want);
        else
            assert_int_equal(buf[0], 'x');
    }
    /* A buffer with errlen 0 is not touched either. */
    {
        char buf[4] = "abc";

        assert_int_equal(errbuf_fmt(buf, 0, -EIO, "%s", "zzz"), -EIO);
        assert_string_equal(buf, "abc");
    }
}

static void test_clear(void **state)
{
    char buf[8] = "message";

    (void)state;
    errbuf_clear(buf, 0);
    assert_string_equal(buf, "message");
    errbuf_clear(buf, sizeof(buf));
    assert_string_equal(buf, "");
    errbuf_clear(NULL, 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fmt),
        cmocka_unit_test(test_clear),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
