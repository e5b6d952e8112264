/* libFuzzer harness for the RFC 3339 parser (src/common/rfc3339.c), which reads timestamps from
 * peers' objects (Advertisements, token Secrets, events) and the kubelet API's sinceTime.
 *
 * The input is one NUL-terminated string, parsed with and without RFC3339_OFFSET; invariants:
 *   - what parses without offsets parses with them, to the same second;
 *   - what parses has the shape "dddd-dd-ddTdd:dd:dd", and its fields are those of a real UTC
 *     time: gmtime of the result (with its offset added back, a leap second taken back) gives the
 *     same year, month, day, hour, minute and second (so February 30 never parses);
 *   - formatting the result and parsing that gives the same second, for years 0..9999.
 * A violated invariant aborts, which libFuzzer reports as a crash. The unit is included so that it
 * is built with the fuzzer's instrumentation (see fuzz-quantity.c). */
#include "../src/common/rfc3339.c"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok)
        abort();
}

static int field(const char *s, int n)
{
    int v = 0;

    for (int i = 0; i < n; i++)
        v = v * 10 + (s[i] - '0');
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char s[96], buf[RFC3339_MAX];
    int64_t t, t_off, t2, local;
    const char *tz;
    time_t tt;
    struct tm tm;
    int sec;

    if (size >= sizeof(s))
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    if (rfc3339_parse(s, RFC3339_OFFSET, &t_off) < 0) {
        check(rfc3339_parse(s, 0, &t) < 0);
        return 0;
    }
    if (rfc3339_parse(s, 0, &t) == 0)
        check(t == t_off);
    check(strlen(s) >= 20 && s[4] == '-' && s[7] == '-' && s[10] == 'T' && s[13] == ':' &&
          s[16] == ':');
    /* Local time: the result plus the offset ("Z": none). */
    tz = s + strlen(s) - 1;
    local = t_off;
    if (*tz != 'Z') {
        tz = s + strlen(s) - 6;
        check(*tz == '+' || *tz == '-');
        local += (*tz == '+' ? 1 : -1) * (int64_t)(field(tz + 1, 2) * 3600 + field(tz + 4, 2) * 60);
    }
    sec = field(s + 17, 2);
    if (sec == 60)
        local--;
    tt = (time_t)local;
    check(gmtime_r(&tt, &tm) != NULL);
    check(tm.tm_year + 1900 == field(s, 4) && tm.tm_mon + 1 == field(s + 5, 2) &&
          tm.tm_mday == field(s + 8, 2) && tm.tm_hour == field(s + 11, 2) &&
          tm.tm_min == field(s + 14, 2) && tm.tm_sec == (sec == 60 ? 59 : sec));
    if (t_off >= -62167219200 && t_off < 253402300800) {
        rfc3339_format(t_off, 0, 0, buf, sizeof(buf));
        check(rfc3339_parse(buf, 0, &t2) == 0 && t2 == t_off);
    }
    return 0;
}
