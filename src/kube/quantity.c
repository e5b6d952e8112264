/* Resource quantities: see quantity.h for the rules and the differences from upstream.
 *
 * Arithmetic is done on magnitudes (uint64_t, so that -INT64_MIN is representable) and, where two
 * values must be aligned to a common scale, in 128-bit integers: a magnitude is at most 2^63 and
 * alignment multiplies by at most 10^19, so the product stays below 2^127. Every path that could
 * exceed these bounds is cut off before with -ERANGE. */
#include "kube/quantity.h"

#include <errno.h>
#include <string.h>

__extension__ typedef unsigned __int128 kq_u128;
__extension__ typedef __int128 kq_i128;

#define KQ_MAG_POS       ((uint64_t)INT64_MAX)     /* largest magnitude of a positive value */
#define KQ_MAG_NEG       ((uint64_t)INT64_MAX + 1) /* largest magnitude of a negative value */
#define KQ_NANO_PER_UNIT 1000000000ULL

static const uint64_t pow10_u64[20] = {
    1ULL,
    10ULL,
    100ULL,
    1000ULL,
    10000ULL,
    100000ULL,
    1000000ULL,
    10000000ULL,
    100000000ULL,
    1000000000ULL,
    10000000000ULL,
    100000000000ULL,
    1000000000000ULL,
    10000000000000ULL,
    100000000000000ULL,
    1000000000000000ULL,
    10000000000000000ULL,
    100000000000000000ULL,
    1000000000000000000ULL,
    10000000000000000000ULL,
};

/* A quantity as sign, magnitude and scale, with the trailing zeros of the magnitude moved into the
 * scale (int64_t, so that this never overflows). Zero is {0, 0, false}. */
struct kq_norm {
    uint64_t mag;
    int64_t scale;
    bool neg;
};

static bool kq_valid(const struct kq *q)
{
    return q && q->scale >= KQ_SCALE_MIN && (unsigned)q->format < (unsigned)KQ_FORMAT_MAX;
}

static struct kq_norm kq_norm_of(const struct kq *q)
{
    struct kq_norm n;

    n.neg = q->value < 0;
    n.mag = n.neg ? (uint64_t)0 - (uint64_t)q->value : (uint64_t)q->value;
    n.scale = q->scale;
    if (n.mag == 0) {
        n.scale = 0;
        n.neg = false;
        return n;
    }
    while (n.mag % 10 == 0) {
        n.mag /= 10;
        n.scale++;
    }
    return n;
}

static int digits_u64(uint64_t v)
{
    int n = 1;

    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

/* Stores -mag or mag times 10^scale, normalized, into *ret. -ERANGE when the normalized magnitude
 * does not fit an int64 or the scale leaves [KQ_SCALE_MIN, KQ_SCALE_MAX]. */
static int kq_make(bool neg, kq_u128 mag, int64_t scale, enum kq_format format, struct kq *ret)
{
    int64_t value;

    if (mag == 0) {
        ret->value = 0;
        ret->scale = 0;
        ret->format = format;
        return 0;
    }
    while (mag % 10 == 0) {
        mag /= 10;
        scale++;
    }
    if (mag > (neg ? KQ_MAG_NEG : KQ_MAG_POS))
        return -ERANGE;
    if (scale < KQ_SCALE_MIN || scale > KQ_SCALE_MAX)
        return -ERANGE;
    if (!neg)
        value = (int64_t)mag;
    else if (mag == KQ_MAG_NEG)
        value = INT64_MIN;
    else
        value = -(int64_t)mag;
    ret->value = value;
    ret->scale = (int32_t)scale;
    ret->format = format;
    return 0;
}

/* ---- Parsing ---- */

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* The digits of the number, integer part then fraction, as one sequence. */
struct kq_digits {
    const char *ip; /* integer digits */
    size_t il;
    const char *fp; /* fraction digits */
    size_t fl;
};

static unsigned digit_at(const struct kq_digits *d, size_t i)
{
    return (unsigned)(i < d->il ? d->ip[i] - '0' : d->fp[i - d->il] - '0');
}

enum kq_suffix_kind {
    KQ_SUFFIX_DEC, /* times 10^exp */
    KQ_SUFFIX_BIN, /* times 2^exp */
};

static const struct {
    const char *name;
    enum kq_suffix_kind kind;
    int exp;
} kq_suffixes[] = {
    {"", KQ_SUFFIX_DEC, 0},    {"n", KQ_SUFFIX_DEC, -9},  {"u", KQ_SUFFIX_DEC, -6},
    {"m", KQ_SUFFIX_DEC, -3},  {"k", KQ_SUFFIX_DEC, 3},   {"M", KQ_SUFFIX_DEC, 6},
    {"G", KQ_SUFFIX_DEC, 9},   {"T", KQ_SUFFIX_DEC, 12},  {"P", KQ_SUFFIX_DEC, 15},
    {"E", KQ_SUFFIX_DEC, 18},  {"Ki", KQ_SUFFIX_BIN, 10}, {"Mi", KQ_SUFFIX_BIN, 20},
    {"Gi", KQ_SUFFIX_BIN, 30}, {"Ti", KQ_SUFFIX_BIN, 40}, {"Pi", KQ_SUFFIX_BIN, 50},
    {"Ei", KQ_SUFFIX_BIN, 60},
};

/* Interprets the suffix text s (up to its NUL). */
static int parse_suffix(const char *s, enum kq_suffix_kind *ret_kind, int64_t *ret_exp,
                        enum kq_format *ret_format)
{
    const char *p;
    bool neg = false;
    int64_t e = 0;

    for (size_t i = 0; i < sizeof(kq_suffixes) / sizeof(kq_suffixes[0]); i++) {
        if (strcmp(s, kq_suffixes[i].name) == 0) {
            *ret_kind = kq_suffixes[i].kind;
            *ret_exp = kq_suffixes[i].exp;
            *ret_format = kq_suffixes[i].kind == KQ_SUFFIX_BIN ? KQ_BINARY_SI : KQ_DECIMAL_SI;
            return 0;
        }
    }
    if (s[0] != 'e' && s[0] != 'E')
        return -EINVAL;
    p = s + 1;
    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    if (!is_digit(*p))
        return -EINVAL;
    for (; is_digit(*p); p++) {
        /* Saturate: any exponent beyond int32 is out of range, but the text must still be
         * checked to the end for junk (which is -EINVAL, not -ERANGE). */
        if (e <= INT32_MAX)
            e = e * 10 + (*p - '0');
    }
    if (*p != '\0')
        return -EINVAL;
    if (e > INT32_MAX)
        return -ERANGE;
    *ret_kind = KQ_SUFFIX_DEC;
    *ret_exp = neg ? -e : e;
    *ret_format = KQ_DECIMAL_EXPONENT;
    return 0;
}

/* digits * 10^exp. Significant digits are kept exactly; those finer than 1n round the magnitude
 * up (away from zero), like upstream's inf.RoundUp to nano. */
static int parse_decimal(const struct kq_digits *d, bool neg, int64_t exp, enum kq_format format,
                         struct kq *ret)
{
    size_t len = d->il + d->fl, first = 0, last, n, keep;
    int64_t scale;
    uint64_t mag = 0;
    bool round_up = false;

    while (first < len && digit_at(d, first) == 0)
        first++;
    if (first == len)
        return kq_make(false, 0, 0, format, ret);
    last = len - 1;
    while (digit_at(d, last) == 0)
        last--;
    n = last - first + 1;
    /* Lengths are at most KQ_PARSE_MAX and exp is within int32: no overflow. */
    scale = exp - (int64_t)d->fl + (int64_t)(len - 1 - last);
    keep = n;
    if (scale < KQ_SCALE_MIN) {
        int64_t drop = KQ_SCALE_MIN - scale;

        /* The last significant digit is non-zero and among the dropped ones. */
        round_up = true;
        keep = drop >= (int64_t)n ? 0 : n - (size_t)drop;
        scale = KQ_SCALE_MIN;
    }
    if (keep > 19)
        return -ERANGE;
    for (size_t i = 0; i < keep; i++)
        mag = mag * 10 + digit_at(d, first + i);
    /* keep <= 19 digits: mag < 10^19, and mag + 1 <= 10^19 still fits a uint64_t. */
    if (round_up)
        mag++;
    return kq_make(neg, mag, scale, format, ret);
}

/* digits * 2^bits, capped at 2^63-1 in magnitude like upstream (maxAllowed). Exact rounding to
 * nano: the integer part times 2^bits is an integer; the fraction F contributes ceil(F * K) nano
 * units with K = 2^bits * 10^9, computed from the last fraction digit to the first: with
 * Y_j = (d_j * K + Y_{j+1}) / 10, floor(Y_j) = floor((d_j * K + floor(Y_{j+1})) / 10), and Y_j is
 * an integer iff Y_{j+1} is and the division is exact. */
static int parse_binary(const struct kq_digits *d, bool neg, int bits, struct kq *ret)
{
    const kq_u128 cap_nano = (kq_u128)KQ_MAG_POS * KQ_NANO_PER_UNIT;
    kq_u128 whole, nano, k, acc = 0;
    uint64_t ipart = 0;
    size_t first = 0;
    bool inexact = false;

    while (first < d->il && d->ip[first] == '0')
        first++;
    if (d->il - first > 19)
        goto cap; /* at least 10^19 > 2^63-1 */
    for (size_t i = first; i < d->il; i++)
        ipart = ipart * 10 + (uint64_t)(d->ip[i] - '0');
    whole = (kq_u128)ipart << bits; /* < 2^64 * 2^60 */
    if (whole > KQ_MAG_POS)
        goto cap;
    nano = whole * KQ_NANO_PER_UNIT; /* < 2^63 * 2^30 */
    k = (kq_u128)KQ_NANO_PER_UNIT << bits;
    for (size_t j = d->fl; j-- > 0;) {
        kq_u128 t = (kq_u128)(unsigned)(d->fp[j] - '0') * k + acc; /* < 10 * 2^90 */

        acc = t / 10;
        if (t % 10)
            inexact = true;
    }
    nano += acc + (inexact ? 1 : 0);
    if (nano > cap_nano)
        goto cap;
    /* A non-zero binary value between -1 and 1 switches to DecimalSI, as upstream. */
    return kq_make(neg, nano, KQ_SCALE_MIN,
                   nano != 0 && nano < KQ_NANO_PER_UNIT ? KQ_DECIMAL_SI : KQ_BINARY_SI, ret);

cap:
    return kq_make(neg, KQ_MAG_POS, 0, KQ_BINARY_SI, ret);
}

int kq_parse(const char *s, struct kq *ret)
{
    struct kq_digits d = {0};
    enum kq_suffix_kind kind;
    enum kq_format format;
    const char *p;
    bool neg = false;
    int64_t exp;
    size_t len;
    int r;

    if (!s || !ret)
        return -EINVAL;
    len = strnlen(s, KQ_PARSE_MAX + 1);
    if (len == 0)
        return -EINVAL;
    if (len > KQ_PARSE_MAX)
        return -ERANGE;

    p = s;
    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    d.ip = p;
    while (is_digit(*p))
        p++;
    d.il = (size_t)(p - d.ip);
    d.fp = p;
    if (*p == '.') {
        d.fp = ++p;
        while (is_digit(*p))
            p++;
        d.fl = (size_t)(p - d.fp);
    }
    if (d.il + d.fl == 0)
        return -EINVAL;

    r = parse_suffix(p, &kind, &exp, &format);
    if (r < 0)
        return r;
    if (kind == KQ_SUFFIX_BIN)
        return parse_binary(&d, neg, (int)exp, ret);
    return parse_decimal(&d, neg, exp, format, ret);
}

/* ---- Formatting ---- */

static size_t put_u64(char *p, uint64_t v)
{
    char tmp[20];
    size_t n = 0;

    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        p[i] = tmp[n - 1 - i];
    return n;
}

static size_t put_i64(char *p, int64_t v)
{
    if (v < 0) {
        p[0] = '-';
        return 1 + put_u64(p + 1, (uint64_t)0 - (uint64_t)v);
    }
    return put_u64(p, (uint64_t)v);
}

/* Writes the BinarySI form of n into p when it has one: n is an integer of at least 1024 and at
 * most 2^63-1 in magnitude. Returns the length written, or 0. */
static size_t put_binary(char *p, const struct kq_norm *n)
{
    static const char *const suffix[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    uint64_t v;
    size_t len;
    int k = 0;

    if (n->scale < 0 || n->scale > 18)
        return 0;
    if ((kq_u128)n->mag * pow10_u64[n->scale] > KQ_MAG_POS)
        return 0;
    v = n->mag * pow10_u64[n->scale];
    if (v < 1024)
        return 0;
    while (k < 6 && v % 1024 == 0) {
        v /= 1024;
        k++;
    }
    len = put_u64(p, v);
    memcpy(p + len, suffix[k], strlen(suffix[k]));
    return len + strlen(suffix[k]);
}

/* Mantissa and suffix in DecimalSI or DecimalExponent: the exponent is the largest multiple of 3
 * not above the normalized scale (upstream AsCanonicalBytes). */
static size_t put_decimal(char *p, const struct kq_norm *n, enum kq_format format)
{
    static const char *const si[] = {"n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
    int64_t e = n->scale - ((n->scale % 3) + 3) % 3;
    size_t len = put_u64(p, n->mag);

    for (int64_t z = e; z < n->scale; z++)
        p[len++] = '0';
    if (format == KQ_DECIMAL_SI && e >= -9 && e <= 18) {
        const char *s = si[(e + 9) / 3];

        memcpy(p + len, s, strlen(s));
        return len + strlen(s);
    }
    if (e == 0)
        return len;
    p[len++] = 'e';
    return len + put_i64(p + len, e);
}

int kq_format(const struct kq *q, char *buf, size_t size)
{
    char tmp[KQ_STR_MAX];
    struct kq_norm n;
    size_t len = 0, w = 0;

    if (!kq_valid(q) || !buf)
        return -EINVAL;
    n = kq_norm_of(q);
    if (n.mag == 0) {
        tmp[len++] = '0';
    } else {
        if (n.neg)
            tmp[len++] = '-';
        if (q->format == KQ_BINARY_SI)
            w = put_binary(tmp + len, &n);
        if (w == 0)
            w = put_decimal(tmp + len, &n,
                            q->format == KQ_DECIMAL_EXPONENT ? KQ_DECIMAL_EXPONENT : KQ_DECIMAL_SI);
        len += w;
    }
    if (len + 1 > size)
        return -ENOSPC;
    memcpy(buf, tmp, len);
    buf[len] = '\0';
    return (int)len;
}

/* ---- Comparison and arithmetic ---- */

bool kq_is_zero(const struct kq *q)
{
    return q->value == 0;
}

int kq_sign(const struct kq *q)
{
    return (q->value > 0) - (q->value < 0);
}

int kq_cmp(const struct kq *a, const struct kq *b)
{
    struct kq_norm x = kq_norm_of(a), y = kq_norm_of(b);
    int sa = kq_sign(a), sb = kq_sign(b), c;
    int64_t ex, ey;
    kq_u128 mx, my;

    if (sa != sb)
        return sa < sb ? -1 : 1;
    if (sa == 0)
        return 0;
    /* Position of the leading digit first; when equal, the scales differ by at most 18. */
    ex = digits_u64(x.mag) + x.scale;
    ey = digits_u64(y.mag) + y.scale;
    if (ex != ey) {
        c = ex < ey ? -1 : 1;
    } else {
        mx = x.mag;
        my = y.mag;
        if (x.scale > y.scale)
            mx *= pow10_u64[x.scale - y.scale];
        else
            my *= pow10_u64[y.scale - x.scale];
        c = (mx > my) - (mx < my);
    }
    return sa > 0 ? c : -c;
}

static kq_i128 kq_signed(const struct kq_norm *n, int64_t shift)
{
    kq_i128 v = (kq_i128)((kq_u128)n->mag * pow10_u64[shift]);

    return n->neg ? -v : v;
}

static int kq_addsub(const struct kq *a, const struct kq *b, bool sub, struct kq *ret)
{
    struct kq_norm x, y;
    enum kq_format format;
    int64_t lo;
    kq_i128 r;

    if (!kq_valid(a) || !kq_valid(b) || !ret)
        return -EINVAL;
    x = kq_norm_of(a);
    y = kq_norm_of(b);
    if (sub)
        y.neg = !y.neg;
    format = a->value == 0 ? b->format : a->format;
    if (y.mag == 0)
        return kq_make(x.neg, x.mag, x.scale, format, ret);
    if (x.mag == 0)
        return kq_make(y.neg, y.mag, y.scale, format, ret);
    /* Both normalized and non-zero: with scales 20 or more apart, the sum ends in the last,
     * non-zero digit of the finer operand and has at least 20 digits from there, so it cannot be
     * an int64 at that scale. Otherwise both fit 128 bits at the finer scale (2^63 * 10^19). */
    lo = x.scale < y.scale ? x.scale : y.scale;
    if (x.scale - lo > 19 || y.scale - lo > 19)
        return -ERANGE;
    r = kq_signed(&x, x.scale - lo) + kq_signed(&y, y.scale - lo);
    return kq_make(r < 0, r < 0 ? (kq_u128)-r : (kq_u128)r, lo, format, ret);
}

int kq_add(const struct kq *a, const struct kq *b, struct kq *ret)
{
    return kq_addsub(a, b, false, ret);
}

int kq_sub(const struct kq *a, const struct kq *b, struct kq *ret)
{
    return kq_addsub(a, b, true, ret);
}

int kq_scale_percent(const struct kq *q, unsigned percent, struct kq *ret)
{
    struct kq_norm n;
    int64_t target, scale;
    kq_u128 m;

    if (!kq_valid(q) || !ret || percent > 100)
        return -EINVAL;
    n = kq_norm_of(q);
    target = n.scale >= -3 ? -3 : KQ_SCALE_MIN;
    /* Exactly mag * percent * 10^(scale - 2); then truncate to the target precision. */
    m = (kq_u128)n.mag * percent;
    scale = n.scale - 2;
    for (; scale < target; scale++)
        m /= 10;
    return kq_make(n.neg, m, scale, q->format, ret);
}

/* ceil(|q| / 10^target) with q's sign, i.e. rounded away from zero. */
static int kq_scaled_value(const struct kq *q, int64_t target, int64_t *ret)
{
    struct kq_norm n;
    kq_u128 m;

    if (!kq_valid(q) || !ret)
        return -EINVAL;
    n = kq_norm_of(q);
    m = n.mag;
    if (n.scale >= target) {
        /* A non-zero magnitude times 10^20 or more exceeds an int64 (zero has scale 0). */
        if (n.scale - target > 19)
            return -ERANGE;
        m *= pow10_u64[n.scale - target];
    } else {
        /* n.scale >= KQ_SCALE_MIN and target >= -3: at most 9 digits are dropped. */
        uint64_t p = pow10_u64[target - n.scale];
        bool inexact = m % p != 0;

        m = m / p + (inexact ? 1 : 0);
    }
    if (m > (n.neg ? KQ_MAG_NEG : KQ_MAG_POS))
        return -ERANGE;
    if (!n.neg)
        *ret = (int64_t)m;
    else if (m == KQ_MAG_NEG)
        *ret = INT64_MIN;
    else
        *ret = -(int64_t)m;
    return 0;
}

int kq_value(const struct kq *q, int64_t *ret)
{
    return kq_scaled_value(q, 0, ret);
}

int kq_milli_value(const struct kq *q, int64_t *ret)
{
    return kq_scaled_value(q, -3, ret);
}

void kq_from_int64(int64_t v, enum kq_format f, struct kq *ret)
{
    struct kq q = {.value = v, .scale = 0, .format = f};
    struct kq_norm n = kq_norm_of(&q);

    /* Cannot fail: the magnitude shrinks and the scale stays within 0..18. */
    (void)kq_make(n.neg, n.mag, n.scale, f, ret);
}

void kq_from_milli(int64_t v, enum kq_format f, struct kq *ret)
{
    struct kq q = {.value = v, .scale = -3, .format = f};
    struct kq_norm n = kq_norm_of(&q);

    (void)kq_make(n.neg, n.mag, n.scale, f, ret);
}
