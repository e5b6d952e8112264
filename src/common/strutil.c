#include "common/strutil.h"
#include "common/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int parse_u64(const char *s, uint64_t max, uint64_t *ret)
{
    uint64_t v = 0;

    if (!s || !*s)
        return -EINVAL;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -EINVAL;
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -ERANGE;
        v = v * 10 + d;
    }
    if (v > max)
        return -ERANGE;
    *ret = v;
    return 0;
}

void sbuf_init(struct sbuf *b, size_t max)
{
    b->buf = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
}

void sbuf_done(struct sbuf *b)
{
    x_free(b->buf);
    b->buf = NULL;
    b->len = 0;
    b->cap = 0;
}

/* Makes room for `extra` more bytes plus a NUL. */
static int sbuf_reserve(struct sbuf *b, size_t extra)
{
    size_t need, cap;
    char *n;

    if (extra > b->max || b->len > b->max - extra) {
        sbuf_done(b);
        return -E2BIG;
    }
    need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    if (cap > b->max + 1)
        cap = b->max + 1;
    n = x_reallocarray(b->buf, cap, 1);
    if (!n)
        return -ENOMEM;
    b->buf = n;
    b->cap = cap;
    return 0;
}

int sbuf_add(struct sbuf *b, const void *data, size_t len)
{
    int r = sbuf_reserve(b, len);

    if (r < 0)
        return r;
    if (len)
        memcpy(b->buf + b->len, data, len);
    b->len += len;
    b->buf[b->len] = '\0';
    return 0;
}

int sbuf_adds(struct sbuf *b, const char *s)
{
    return sbuf_add(b, s, strlen(s));
}

int sbuf_printf(struct sbuf *b, const char *fmt, ...)
{
    va_list ap;
    int n, r;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -EINVAL;
    r = sbuf_reserve(b, (size_t)n);
    if (r < 0)
        return r;
    va_start(ap, fmt);
    vsnprintf(b->buf + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

const char *sbuf_str(const struct sbuf *b)
{
    return b->buf ? b->buf : "";
}

size_t sbuf_len(const struct sbuf *b)
{
    return b->len;
}

char *sbuf_steal(struct sbuf *b)
{
    char *s = b->buf;

    if (!s)
        s = x_strdup("");
    b->buf = NULL;
    b->len = 0;
    b->cap = 0;
    return s;
}

uint64_t str_fnv1a64(const char *s)
{
    uint64_t h = UINT64_C(14695981039346656037);

    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
    return h;
}

bool str_glob(const char *p, const char *s)
{
    const char *star = NULL, *retry = NULL;

    while (*s) {
        if (*p == '*') {
            star = p++;
            retry = s;
        } else if (*p == *s) {
            p++;
            s++;
        } else if (star) {
            p = star + 1;
            s = ++retry;
        } else {
            return false;
        }
    }
    while (*p == '*')
        p++;
    return *p == '\0';
}

void str_hex(const void *data, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    const unsigned char *b = data;

    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 0x0f];
    }
    out[2 * n] = '\0';
}
