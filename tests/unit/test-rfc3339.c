#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>
#include <time.h>

#include "common/rfc3339.h"

#define OFF RFC3339_OFFSET

static void test_parse(void **state)
{
    static const struct {
        const char *s;
        unsigned flags;
        int r;
        int64_t t;
    } cases[] = {
        {"1970-01-01T00:00:00Z", 0, 0, 0},
        {"2023-11-14T22:13:20Z", 0, 0, 1700000000},
        {"2023-11-14T22:13:20.123456Z", 0, 0, 1700000000},
        {"2024-02-29T23:59:59Z", 0, 0, 1709251199},
        {"2000-02-29T00:00:00Z", 0, 0, 951782400},
        {"1969-12-31T23:59:59Z", 0, 0, -1},
        {"0000-01-01T00:00:00Z", 0, 0, -62167219200},
        {"9999-12-31T23:59:59Z", 0, 0, 253402300799},
        /* A leap second is the next minute's first. */
        {"2016-12-31T23:59:60Z", 0, 0, 1483228800},
        {"2024-01-02T03:04:05.999999999Z", OFF, 0, 1704164645},
        {"2024-01-02T03:04:05.5Z", OFF, 0, 1704164645},
        {"2024-01-02T03:04:05-02:30", OFF, 0, 1704164645 + 9000},
        {"2024-01-02T03:04:05+01:00", OFF, 0, 1704164645 - 3600},
        {"2024-01-02T03:04:05.25+23:59", OFF, 0, 1704164645 - 86340},
        /* Offsets only when asked for. */
        {"2024-01-02T03:04:05+01:00", 0, -EINVAL, 0},
        {"2024-01-02T03:04:05+24:00", OFF, -EINVAL, 0},
        {"2024-01-02T03:04:05+01:60", OFF, -EINVAL, 0},
        {"2024-01-02T03:04:05+0100", OFF, -EINVAL, 0},
        {"2024-01-02T03:04:05+01:00x", OFF, -EINVAL, 0},
        {"2024-01-02T03:04:05+01:0", OFF, -EINVAL, 0},
        /* Dates that do not exist, fields out of range. */
        {"2023-02-29T00:00:00Z", 0, -EINVAL, 0},
        {"1900-02-29T00:00:00Z", 0, -EINVAL, 0},
        {"2024-04-31T00:00:00Z", 0, -EINVAL, 0},
        {"2024-02-30T00:00:00Z", OFF, -EINVAL, 0},
        {"2024-13-02T03:04:05Z", OFF, -EINVAL, 0},
        {"2024-00-02T03:04:05Z", 0, -EINVAL, 0},
        {"2024-01-00T03:04:05Z", 0, -EINVAL, 0},
        {"2024-01-02T24:00:00Z", 0, -EINVAL, 0},
        {"2024-01-02T03:60:05Z", 0, -EINVAL, 0},
        {"2024-01-02T03:04:61Z", 0, -EINVAL, 0},
        /* Shapes. */
        {"2024-01-02T03:04:05", OFF, -EINVAL, 0},
        {"2024-01-02 03:04:05Z", OFF, -EINVAL, 0},
        {"2024-01-02t03:04:05Z", OFF, -EINVAL, 0},
        {"2024-01-02T03:04:05z", OFF, -EINVAL, 0},
        {"2024-01-02T03:04:05.Z", OFF, -EINVAL, 0},
        {"2024-01-02T03:04:05.1234567890Z", OFF, -EINVAL, 0},
        {"2024-01-02T03:04:05Zjunk", OFF, -EINVAL, 0},
        {"2024-1-02T03:04:05Z", 0, -EINVAL, 0},
        {" 2024-01-02T03:04:05Z", 0, -EINVAL, 0},
        {"+024-01-02T03:04:05Z", 0, -EINVAL, 0},
        {"2024-01-02T03:04:5Z", 0, -EINVAL, 0},
        {"2024-01-02T03:04", 0, -EINVAL, 0},
        {"2024", 0, -EINVAL, 0},
        {"", 0, -EINVAL, 0},
        {NULL, OFF, -EINVAL, 0},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t t = 42;
        int r = rfc3339_parse(cases[i].s, cases[i].flags, &t);

        if (r != cases[i].r)
            fail_msg("\"%s\" (flags %u): %d, want %d", cases[i].s ? cases[i].s : "(null)",
                     cases[i].flags, r, cases[i].r);
        /* Written on success only. */
        assert_int_equal(t, r == 0 ? cases[i].t : 42);
    }
}

static void test_format(void **state)
{
    static const struct {
        int64_t sec;
        long nsec;
        unsigned digits;
        const char *want;
    } cases[] = {
        {0, 0, 0, "1970-01-01T00:00:00Z"},
        {1700000000, 0, 0, "2023-11-14T22:13:20Z"},
        {1700000000, 123456789, 0, "2023-11-14T22:13:20Z"},
        {1700000000, 123456789, 3, "2023-11-14T22:13:20.123Z"},
        {1700000000, 0, 6, "2023-11-14T22:13:20.000000Z"},
        {1700000000, 123456789, 6, "2023-11-14T22:13:20.123456Z"},
        {1700000000, 5, 9, "2023-11-14T22:13:20.000000005Z"},
        {1700000000, 5, 12, "2023-11-14T22:13:20.000000005Z"},
        {1700000000, -1, 3, "2023-11-14T22:13:20.000Z"},
        {-1, 0, 0, "1969-12-31T23:59:59Z"},
        {-62167219200, 0, 0, "0000-01-01T00:00:00Z"},
        {253402300799, 0, 0, "9999-12-31T23:59:59Z"},
        /* Years RFC 3339 cannot write: the epoch. */
        {253402300800, 0, 0, "1970-01-01T00:00:00Z"},
        {-62167219201, 0, 0, "1970-01-01T00:00:00Z"},
        {INT64_MAX, 0, 3, "1970-01-01T00:00:00.000Z"},
        {INT64_MIN, 7, 3, "1970-01-01T00:00:00.000Z"},
        {951782400, 0, 0, "2000-02-29T00:00:00Z"},  /* a leap day of a year divisible by 400 */
        {4107542400, 0, 0, "2100-03-01T00:00:00Z"}, /* 2100 is not a leap year */
        {-2203891201, 0, 0, "1900-02-28T23:59:59Z"},
    };
    char buf[RFC3339_MAX];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rfc3339_format(cases[i].sec, cases[i].nsec, cases[i].digits, buf, sizeof(buf));
        assert_string_equal(buf, cases[i].want);
    }
    /* Truncated, always terminated; nothing written to an empty buffer. */
    memset(buf, 'x', sizeof(buf));
    rfc3339_format(1700000000, 0, 0, buf, 5);
    assert_string_equal(buf, "2023");
    rfc3339_format(1700000000, 0, 0, buf, 0);
    assert_int_equal(buf[5], 'x');
    rfc3339_format(1700000000, 0, 9, NULL, 10);
}

/* The clock rfc3339_now reads. Not time(): glibc's time() reads the coarse clock, which can still
 * show the previous second when CLOCK_REALTIME has passed into the next (a test failed that way).
 */
static int64_t realtime_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec;
}

static void test_round_trip_and_now(void **state)
{
    char buf[RFC3339_MAX];
    int64_t t, before = realtime_s(), after;

    (void)state;
    for (int64_t s = -62167219200; s < 253402300800; s += 86400 * 365 + 3677) {
        rfc3339_format(s, 999999999, 9, buf, sizeof(buf));
        assert_int_equal(rfc3339_parse(buf, 0, &t), 0);
        assert_int_equal(t, s);
    }
    rfc3339_now(6, buf, sizeof(buf));
    after = realtime_s();
    assert_int_equal(strlen(buf), 27);
    assert_int_equal(rfc3339_parse(buf, 0, &t), 0);
    assert_true(t >= before && t <= after);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_round_trip_and_now),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
