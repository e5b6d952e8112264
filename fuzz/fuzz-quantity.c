/* libFuzzer harness for the resource-quantity parser (src/kube/quantity.c).
 *
 * Any input is parsed; every quantity that parses must satisfy:
 *   - its canonical string fits KQ_STR_MAX, is the same when formatted twice, and parses back to
 *     an equal quantity;
 *   - formatting the re-parsed quantity gives the same string, except in the one upstream case of
 *     a BinarySI integer printed as plain digits ("1.953125Ki" -> "2000" -> "2k"); the second round
 *     is then a fixpoint;
 *   - q - q == 0, q + 0 == q, (q + q) - q == q when q + q fits, 100% of q is q, 0% is zero, and p%
 *     of q is not larger than q in magnitude and has its sign;
 *   - kq_value and kq_milli_value, when they fit, are the ceilings (away from zero) they claim.
 * A violated invariant aborts, which libFuzzer reports as a crash.
 *
 * The unit is included rather than only linked (as wireguard-tools' harnesses do) so that it is
 * compiled here with -fsanitize=fuzzer,address,undefined and its branches guide the fuzzer; the
 * library's own copy of these symbols is then never pulled from the archive. */
#include "../src/kube/quantity.c"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok)
        abort();
}

static void format_ok(const struct kq *q, char *buf)
{
    int n = kq_format(q, buf, KQ_STR_MAX);

    check(n > 0 && n < KQ_STR_MAX && (size_t)n == strlen(buf));
}

static void check_strings(const struct kq *q)
{
    char s1[KQ_STR_MAX], again[KQ_STR_MAX], s2[KQ_STR_MAX], s3[KQ_STR_MAX];
    struct kq back, back2;

    format_ok(q, s1);
    format_ok(q, again);
    check(strcmp(s1, again) == 0);

    check(kq_parse(s1, &back) == 0);
    check(kq_cmp(&back, q) == 0);
    format_ok(&back, s2);
    if (strcmp(s1, s2) != 0) {
        check(q->format == KQ_BINARY_SI && !strchr(s1, 'i') && back.format == KQ_DECIMAL_SI);
        check(kq_parse(s2, &back2) == 0);
        check(kq_cmp(&back2, q) == 0);
        format_ok(&back2, s3);
        check(strcmp(s2, s3) == 0);
    }
}

static void check_arithmetic(const struct kq *q, unsigned percent)
{
    const struct kq zero = {0};
    struct kq r, sum;
    int rc;

    check(kq_sub(q, q, &r) == 0 && kq_is_zero(&r));
    check(kq_add(q, &zero, &r) == 0 && kq_cmp(&r, q) == 0);
    /* A non-zero a keeps its format; a zero a takes b's (upstream Add). */
    check(kq_is_zero(q) ? r.format == zero.format : r.format == q->format);
    check(kq_sub(q, &zero, &r) == 0 && kq_cmp(&r, q) == 0);
    rc = kq_add(q, q, &sum);
    check(rc == 0 || rc == -ERANGE);
    if (rc == 0) {
        check(kq_sub(&sum, q, &r) == 0 && kq_cmp(&r, q) == 0);
        check_strings(&sum);
    }

    check(kq_scale_percent(q, 100, &r) == 0 && kq_cmp(&r, q) == 0);
    check(kq_scale_percent(q, 0, &r) == 0 && kq_is_zero(&r));
    check(kq_scale_percent(q, 101, &r) < 0);
    rc = kq_scale_percent(q, percent, &r);
    if (rc == 0) {
        check(kq_sign(&r) == 0 || kq_sign(&r) == kq_sign(q));
        if (kq_sign(q) >= 0)
            check(kq_cmp(&r, q) <= 0 && kq_sign(&r) >= 0);
        else
            check(kq_cmp(&r, q) >= 0 && kq_sign(&r) <= 0);
        check_strings(&r);
    }
}

/* value = ceil(|q|) and milli = ceil(1000 |q|) with q's sign, so for the magnitudes:
 * 1000 (value - 1) < milli <= 1000 value. */
static void check_values(const struct kq *q)
{
    int64_t v, m;
    kq_i128 av, am;

    if (kq_value(q, &v) != 0 || kq_milli_value(q, &m) != 0)
        return;
    check((v > 0) == (kq_sign(q) > 0) && (v < 0) == (kq_sign(q) < 0));
    av = v < 0 ? -(kq_i128)v : v;
    am = m < 0 ? -(kq_i128)m : m;
    check(am <= av * 1000 && (av == 0 || am > (av - 1) * 1000));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* One byte more than kq_parse accepts, so that the length limit is exercised too. */
    char in[KQ_PARSE_MAX + 2];
    size_t n = size < sizeof(in) - 1 ? size : sizeof(in) - 1;
    unsigned percent = size ? data[0] % 101 : 50;
    struct kq q;

    memcpy(in, data, n);
    in[n] = '\0';
    if (kq_parse(in, &q) != 0)
        return 0;
    check(q.scale >= KQ_SCALE_MIN && (unsigned)q.format < KQ_FORMAT_MAX);
    check(kq_is_zero(&q) == (q.value == 0) && (q.value != 0 || q.scale == 0));
    check_strings(&q);
    check_arithmetic(&q, percent);
    check_values(&q);
    return 0;
}
