/* strutil: checked number parsing and bounded string buffers.
 *
 * struct sbuf is a growable byte buffer with a hard maximum fixed at init: appending past the
 * maximum fails with -E2BIG and frees the buffer, so data read from the network or a file can never
 * grow without bound. Members are private: use the functions. */
#ifndef CLIQO_STRUTIL_H
#define CLIQO_STRUTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parses a whole decimal string into *ret (no sign, no spaces, no trailing text).
 * Returns 0, -EINVAL (not a number) or -ERANGE (above max). *ret is written only on success. */
int parse_u64(const char *s, uint64_t max, uint64_t *ret);

/* The n bytes at data as 2n lowercase hex digits and a NUL, into out (2n + 1 bytes). */
void str_hex(const void *data, size_t n, char *out);

/* 64-bit FNV-1a of a NUL-terminated string: for hash tables and short stable identifiers, not
 * against adversaries choosing collisions. */
uint64_t str_fnv1a64(const char *s);
/* Whole-string glob: '*' in pattern matches any run of characters (none included), everything
 * else itself. Greedy with one backtracking point: O(len(pattern) * len(s)) at worst. */
bool str_glob(const char *pattern, const char *s);

struct sbuf {
    char *buf;
    size_t len;
    size_t cap;
    size_t max;
};

void sbuf_init(struct sbuf *b, size_t max);
/* Frees the contents; b can be reused after sbuf_init. */
void sbuf_done(struct sbuf *b);
int sbuf_add(struct sbuf *b, const void *data, size_t len);
int sbuf_adds(struct sbuf *b, const char *s);
__attribute__((format(printf, 2, 3))) int sbuf_printf(struct sbuf *b, const char *fmt, ...);
/* NUL-terminated contents, "" when empty; borrowed, valid until the next change. */
const char *sbuf_str(const struct sbuf *b);
size_t sbuf_len(const struct sbuf *b);
/* Hands the contents to the caller (caller frees with x_free) and leaves b empty. */
char *sbuf_steal(struct sbuf *b);

#endif
