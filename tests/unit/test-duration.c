/* Unit tests of src/common/duration.c: "500ms", "15s", "2m", "1h", parsed and written. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "common/duration.h"

static void test_parse(void **state)
{
    static const struct {
        const char *s;
        unsigned flags;
        int r;
        uint64_t ms;
    } cases[] = {
        {"0ms", 0, 0, 0},
        {"500ms", 0, 0, 500},
        {"5ms", DUR_SECONDS, 0, 5},
        {"15s", 0, 0, 15000},
        {"2m", 0, 0, 120000},
        {"2h", 0, 0, 7200000},
        {"007s", 0, 0, 7000},
        {"30", DUR_SECONDS, 0, 30000},
        {"30", 0, -EINVAL, 0},
        {"", DUR_SECONDS, -EINVAL, 0},
        {"s", 0, -EINVAL, 0},
        {"1.5s", 0, -EINVAL, 0},
        {"-1s", 0, -EINVAL, 0},
        {"1 s", 0, -EINVAL, 0},
        {"1sec", 0, -EINVAL, 0},
        {"1d", DUR_SECONDS, -EINVAL, 0},
        {"1S", 0, -EINVAL, 0},
        {"18446744073709551615ms", 0, 0, UINT64_MAX},
        {"18446744073709551616ms", 0, -ERANGE, 0},
        {"18446744073709552h", 0, -ERANGE, 0},
        {"99999999999999999999999h", 0, -ERANGE, 0},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint64_t ms = 12345;
        int r = dur_parse(cases[i].s, cases[i].flags, &ms);

        if (r != cases[i].r)
            fail_msg("case %zu '%s': returned %d, want %d", i, cases[i].s, r, cases[i].r);
        assert_int_equal(ms, r == 0 ? cases[i].ms : 12345); /* written on success only */
    }
    assert_int_equal(dur_parse(NULL, 0, &(uint64_t){0}), -EINVAL);
}

static void test_format(void **state)
{
    static const struct {
        uint64_t ms;
        const char *want;
    } cases[] = {
        {0, "0ms"},      {250, "250ms"},   {1000, "1s"},      {1500, "1.5s"},
        {45000, "45s"},  {60000, "1m"},    {90000, "90s"},    {120000, "2m"},
        {3600000, "1h"}, {5400000, "90m"}, {86400000, "24h"},
    };
    char buf[24];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        dur_format(cases[i].ms, buf, sizeof(buf));
        assert_string_equal(buf, cases[i].want);
    }
    dur_format(3600000, buf, 2);
    assert_string_equal(buf, "1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_format),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
