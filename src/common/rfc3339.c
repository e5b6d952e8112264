#include "common/rfc3339.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* n decimal digits at s into *ret; -EINVAL at the first other character (the NUL included). */
static int digits(const char *s, int n, int *ret)
{
    int v = 0;

    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -EINVAL;
        v = v * 10 + (s[i] - '0');
    }
    *ret = v;
    return 0;
}

static bool leap_year(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar (H. Hinnant's
 * days_from_civil), for years 0..9999. */
static int64_t days_from_civil(int y, int m, int d)
{
    int64_t era, yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int rfc3339_parse(const char *s, unsigned flags, int64_t *ret)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
    const char *p;

    if (!s || !ret)
        return -EINVAL;
    /* digits() stops at the NUL, so a short string fails before any read past its end. */
    if (digits(s, 4, &y) < 0 || s[4] != '-' || digits(s + 5, 2, &mo) < 0 || s[7] != '-' ||
        digits(s + 8, 2, &d) < 0 || s[10] != 'T' || digits(s + 11, 2, &h) < 0 || s[13] != ':' ||
        digits(s + 14, 2, &mi) < 0 || s[16] != ':' || digits(s + 17, 2, &sec) < 0)
        return -EINVAL;
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] + (mo == 2 && leap_year(y)) || h > 23 ||
        mi > 59 || sec > 60)
        return -EINVAL;
    p = s + 19;
    if (*p == '.') {
        const char *q = ++p;

        while (*p >= '0' && *p <= '9')
            p++;
        if (p == q || p - q > 9)
            return -EINVAL;
    }
    if (*p == 'Z') {
        p++;
    } else if ((flags & RFC3339_OFFSET) && (*p == '+' || *p == '-')) {
        sign = *p == '+' ? 1 : -1;
        if (digits(p + 1, 2, &oh) < 0 || p[3] != ':' || digits(p + 4, 2, &om) < 0 || oh > 23 ||
            om > 59)
            return -EINVAL;
        p += 6;
    } else {
        return -EINVAL;
    }
    if (*p)
        return -EINVAL;
    *ret = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec -
           (int64_t)sign * (oh * 3600 + om * 60);
    return 0;
}

/* The date of a day count since 1970-01-01 (proleptic Gregorian; H. Hinnant's civil_from_days). */
static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    int64_t era;
    unsigned doe, yoe, doy, mp;

    z += 719468;
    era = (z >= 0 ? z : z - 146096) / 146097;
    doe = (unsigned)(z - era * 146097);
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static char *put_digits(char *p, unsigned v, unsigned n)
{
    for (unsigned i = n; i-- > 0; v /= 10)
        p[i] = (char)('0' + v % 10);
    return p + n;
}

/* Written by hand rather than with gmtime_r and snprintf: the informers write every timestamp of
 * every object they list in protobuf with it (kube/kpb.c), eight or more per pod. */
void rfc3339_format(int64_t sec, long nsec, unsigned digits, char *buf, size_t size)
{
    char out[RFC3339_MAX + 1], *p = out;
    int64_t days, y;
    unsigned m, d, sod;
    size_t n;

    if (!buf || size == 0)
        return;
    if (digits > 9)
        digits = 9;
    if (nsec < 0 || nsec > 999999999L)
        nsec = 0;
    if (sec < -62167219200LL || sec >= 253402300800LL) {
        sec = 0; /* years RFC 3339 cannot write: the epoch */
        nsec = 0;
    }
    days = sec / 86400;
    if (sec % 86400 < 0)
        days--;
    sod = (unsigned)(sec - days * 86400);
    civil_from_days(days, &y, &m, &d);
    p = put_digits(p, (unsigned)y, 4);
    *p++ = '-';
    p = put_digits(p, m, 2);
    *p++ = '-';
    p = put_digits(p, d, 2);
    *p++ = 'T';
    p = put_digits(p, sod / 3600, 2);
    *p++ = ':';
    p = put_digits(p, sod / 60 % 60, 2);
    *p++ = ':';
    p = put_digits(p, sod % 60, 2);
    if (digits) {
        unsigned long div = 1;
        for (unsigned i = digits; i < 9; i++)
            div *= 10;
        *p++ = '.';
        p = put_digits(p, (unsigned)((unsigned long)nsec / div), digits);
    }
    *p++ = 'Z';
    n = (size_t)(p - out);
    if (n >= size)
        n = size - 1; /* truncated, as snprintf did */
    memcpy(buf, out, n);
    buf[n] = '\0';
}

void rfc3339_now(unsigned digits, char *buf, size_t size)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    rfc3339_format((int64_t)ts.tv_sec, ts.tv_nsec, digits, buf, size);
}
