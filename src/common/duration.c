#include "common/duration.h"
#include "common/strutil.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int dur_parse(const char *s, unsigned flags, uint64_t *ret_ms)
{
    static const struct {
        const char *unit;
        uint64_t ms;
    } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
    char num[24];
    size_t n;
    uint64_t v, mult = 0;
    int r;

    if (!s || !ret_ms)
        return -EINVAL;
    n = strspn(s, "0123456789");
    if (n == 0)
        return -EINVAL;
    if (s[n] == '\0' && (flags & DUR_SECONDS))
        mult = 1000;
    for (size_t i = 0; !mult && i < sizeof(units) / sizeof(units[0]); i++)
        if (strcmp(s + n, units[i].unit) == 0)
            mult = units[i].ms;
    if (!mult)
        return -EINVAL;
    if (n >= sizeof(num))
        return -ERANGE;
    memcpy(num, s, n);
    num[n] = '\0';
    r = parse_u64(num, UINT64_MAX / mult, &v);
    if (r < 0)
        return r;
    *ret_ms = v * mult;
    return 0;
}

void dur_format(uint64_t ms, char *buf, size_t size)
{
    unsigned long long v = (unsigned long long)ms;

    if (ms >= 3600000 && ms % 3600000 == 0)
        snprintf(buf, size, "%lluh", v / 3600000);
    else if (ms >= 60000 && ms % 60000 == 0)
        snprintf(buf, size, "%llum", v / 60000);
    else if (ms >= 1000 && ms % 1000 == 0)
        snprintf(buf, size, "%llus", v / 1000);
    else if (ms >= 1000)
        snprintf(buf, size, "%llu.%llus", v / 1000, v % 1000 / 100);
    else
        snprintf(buf, size, "%llums", v);
}
