/* quantity: Kubernetes resource quantities ("100m", "1.5Gi", "129e6"), with the semantics of
 * resource.Quantity in k8s.io/apimachinery/pkg/api/resource.
 *
 * Representation. A quantity is exactly value * 10^scale: no floating point anywhere. Kubernetes
 * keeps values down to nano precision, so a valid quantity has KQ_SCALE_MIN (-9) <= scale
 * <= KQ_SCALE_MAX. `format` remembers the suffix family of the parsed text and picks the suffix
 * family of the canonical string, as upstream does. Every function returns normalized quantities
 * (trailing zeros of `value` moved into `scale`; zero is {0, 0}), but accepts any valid struct, so
 * callers may build one by hand or with kq_from_int64()/kq_from_milli(). A zeroed struct kq is the
 * quantity "0" in DecimalSI format. The struct is a plain value: copy it freely; no function keeps
 * a pointer to its arguments, and output structs may alias inputs.
 *
 * Parsing (kq_parse) follows upstream ParseQuantity:
 *   <quantity>     ::= <sign>? <number> <suffix>
 *   <number>       ::= <digits> | <digits> "." <digits> | <digits> "." | "." <digits>
 *   <suffix>       ::= "" | n u m k M G T P E            (KQ_DECIMAL_SI)
 *                    | Ki Mi Gi Ti Pi Ei                  (KQ_BINARY_SI)
 *                    | ("e" | "E") <sign>? <digits>       (KQ_DECIMAL_EXPONENT)
 * A non-zero value finer than 1n rounds away from zero to the next nano ("0.1n" is "1n"). A
 * binarySI value above 2^63-1 is capped at 2^63-1 ("9Ei"), as upstream does; a binarySI value
 * strictly between -1 and 1 takes the DecimalSI format. The differences from upstream, all on the
 * side of refusing input rather than changing its meaning:
 *   - a number needs at least one digit: upstream accepts ".", "+", "-" and "Ki" as zero on some
 *     code paths and rejects "-Ei" or ".Ei" on others; here they are all -EINVAL;
 *   - upstream stores decimal values of any size (big decimals); here the normalized value must
 *     fit an int64 (about 19 significant digits) and the scale an int32, else -ERANGE. So
 *     "9223372036854775808" is -ERANGE but "12E" and "1e300" parse;
 *   - an exponent outside int32 is -ERANGE (upstream truncates it to 32 bits);
 *   - text longer than KQ_PARSE_MAX bytes is -ERANGE.
 *
 * Canonical strings (kq_format) follow upstream String(): the largest suffix of the quantity's
 * format that leaves an integer mantissa ("1.5Gi" -> "1536Mi", "0.1" -> "100m", "1000" -> "1k",
 * "1e3" -> "1e3"). A BinarySI quantity that is not an integer or is below 1024 in magnitude is
 * written in DecimalSI ("1.1Ki" -> "1126400m"); so is one above 2^63-1, where upstream writes a
 * binary suffix (e.g. "8Ei" for 2^63) that would parse back to a different (capped) value. A
 * DecimalSI quantity beyond the "E" suffix is written with an exponent ("1000E" -> "1e21"). The
 * canonical string always parses back to an equal quantity. It also formats to itself again, except
 * in one upstream case: a BinarySI integer of 1024 or more without a binary factor is written as
 * plain digits ("1.953125Ki" -> "2000"), which parse back as DecimalSI ("2000" -> "2k"); after that
 * one round the string is a fixpoint.
 *
 * Errors are negative errno values: -EINVAL for NULL pointers, malformed text or an invalid struct
 * (scale below KQ_SCALE_MIN, unknown format), -ERANGE when a result does not fit the
 * representation, -ENOSPC when an output buffer is too small. Output parameters are written only on
 * success. */
#ifndef CLIQO_KUBE_QUANTITY_H
#define CLIQO_KUBE_QUANTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum kq_format {
    KQ_DECIMAL_SI,       /* 12M = 12 * 10^6; suffixes n u m "" k M G T P E */
    KQ_BINARY_SI,        /* 12Mi = 12 * 2^20; suffixes Ki Mi Gi Ti Pi Ei */
    KQ_DECIMAL_EXPONENT, /* 12e6 */
    KQ_FORMAT_MAX,
};

#define KQ_SCALE_MIN (-9)
#define KQ_SCALE_MAX INT32_MAX
/* Longest text kq_parse() accepts, in bytes, without the terminating NUL. */
#define KQ_PARSE_MAX 256
/* A buffer of this size holds any canonical string, NUL included. */
#define KQ_STR_MAX 48

struct kq {
    int64_t value;
    int32_t scale;
    enum kq_format format;
};

/* Parses the NUL-terminated text s (borrowed). Returns 0, -EINVAL or -ERANGE. */
int kq_parse(const char *s, struct kq *ret);

/* Writes the canonical string of q, NUL-terminated, into buf (size bytes; KQ_STR_MAX is always
 * enough). Returns its length (without the NUL), -EINVAL, or -ENOSPC with buf untouched. */
int kq_format(const struct kq *q, char *buf, size_t size);

/* Compares by value, whatever the formats: -1, 0 or 1 ("1Gi" == "1073741824"). Both must be
 * non-NULL; any int64/int32 pair compares correctly, valid or not. */
int kq_cmp(const struct kq *a, const struct kq *b);

/* a + b and a - b, exact. The result takes a's format, or b's when a is zero (upstream Add/Sub).
 * Returns 0, -EINVAL or -ERANGE (result not representable). */
int kq_add(const struct kq *a, const struct kq *b, struct kq *ret);
int kq_sub(const struct kq *a, const struct kq *b, struct kq *ret);

/* q * percent / 100 for percent in 0..100 (else -EINVAL), in q's format. The result is rounded
 * toward zero to a multiple of 1m, or of 1n when q itself is not a multiple of 1m. So an integer
 * count is not truncated to an integer (1 * 30% = 300m, where truncating to integers gives 0; see
 * liqo #1035), while "1500u" * 33% keeps its precision (495u). Returns 0, -EINVAL or -ERANGE. */
int kq_scale_percent(const struct kq *q, unsigned percent, struct kq *ret);

/* The value rounded up (away from zero) to an integer, as upstream Value(), or to thousandths, as
 * upstream MilliValue() ("100m" -> 1 and 100; "-9.01" -> -10). Returns 0, -EINVAL, or -ERANGE when
 * the result does not fit an int64 (upstream overflows silently). */
int kq_value(const struct kq *q, int64_t *ret);
int kq_milli_value(const struct kq *q, int64_t *ret);

/* q must be non-NULL. kq_sign returns -1, 0 or 1. */
bool kq_is_zero(const struct kq *q);
int kq_sign(const struct kq *q);

/* v, or v thousandths, in format f (upstream NewQuantity and NewMilliQuantity). f must be a
 * kq_format value below KQ_FORMAT_MAX; any other value makes an invalid quantity. */
void kq_from_int64(int64_t v, enum kq_format f, struct kq *ret);
void kq_from_milli(int64_t v, enum kq_format f, struct kq *ret);

#endif
