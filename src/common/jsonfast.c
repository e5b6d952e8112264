#include "common/jsonfast.h"
#include "common/xalloc.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define STACK_BUF 1024

struct jsf {
    const unsigned char *p, *end;
    unsigned char *buf; /* decoded escaped strings */
    size_t cap, len;
    bool reject_duplicates; /* a repeated key gives up (jansson then refuses the text) */
    unsigned char stack[STACK_BUF];
};

static json_t *value(struct jsf *f, unsigned depth);

static void ws(struct jsf *f)
{
    while (f->p < f->end && (*f->p == ' ' || *f->p == '\n' || *f->p == '\r' || *f->p == '\t'))
        f->p++;
}

static bool put(struct jsf *f, const void *p, size_t n)
{
    if (n > f->cap - f->len) {
        size_t ncap = f->cap * 2;
        unsigned char *nb;
        while (ncap - f->len < n)
            ncap *= 2;
        nb = x_malloc(ncap);
        if (!nb)
            return false;
        memcpy(nb, f->buf, f->len);
        if (f->buf != f->stack)
            x_free(f->buf);
        f->buf = nb;
        f->cap = ncap;
    }
    memcpy(f->buf + f->len, p, n);
    f->len += n;
    return true;
}

static int hex4(const unsigned char *p)
{
    int v = 0;

    for (int i = 0; i < 4; i++) {
        unsigned char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= c - '0';
        else if (c >= 'a' && c <= 'f')
            v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v |= c - 'A' + 10;
        else
            return -1;
    }
    return v;
}

static bool put_utf8(struct jsf *f, uint32_t cp)
{
    unsigned char b[4];
    size_t n;

    if (cp < 0x80) {
        b[0] = (unsigned char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (unsigned char)(0xC0 | cp >> 6);
        b[1] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (unsigned char)(0xE0 | cp >> 12);
        b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        b[2] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        b[0] = (unsigned char)(0xF0 | cp >> 18);
        b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
        b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        b[3] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return put(f, b, n);
}

/* Length of the valid UTF-8 sequence at p (lead byte >= 0x80), or 0. */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end)
{
    size_t n;
    uint32_t cp;

    if (p[0] >= 0xC2 && p[0] <= 0xDF) {
        n = 2;
        cp = p[0] & 0x1F;
    } else if (p[0] >= 0xE0 && p[0] <= 0xEF) {
        n = 3;
        cp = p[0] & 0x0F;
    } else if (p[0] >= 0xF0 && p[0] <= 0xF4) {
        n = 4;
        cp = p[0] & 0x07;
    } else {
        return 0;
    }
    if ((size_t)(end - p) < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

/* f->p is just after an opening quote. On success *out and *len hold the decoded string (in the
 * text when it has no escape, else in f->buf) and f->p is after the closing quote. */
static bool string(struct jsf *f, const char **out, size_t *len)
{
    const unsigned char *s = f->p, *p = s, *end = f->end;

    while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
        p++;
    if (p < end && *p == '"') {
        *out = (const char *)s;
        *len = (size_t)(p - s);
        f->p = p + 1;
        return true;
    }
    f->len = 0;
    if (!put(f, s, (size_t)(p - s)))
        return false;
    while (p < end) {
        unsigned char c = *p;
        if (c == '"') {
            *out = (const char *)f->buf;
            *len = f->len;
            f->p = p + 1;
            return true;
        }
        if (c < 0x20)
            return false;
        if (c == '\\') {
            int cp;
            if (end - p < 2)
                return false;
            switch (p[1]) {
            case '"':
            case '\\':
            case '/':
                if (!put(f, p + 1, 1))
                    return false;
                p += 2;
                continue;
            case 'b':
                c = '\b';
                break;
            case 'f':
                c = '\f';
                break;
            case 'n':
                c = '\n';
                break;
            case 'r':
                c = '\r';
                break;
            case 't':
                c = '\t';
                break;
            case 'u':
                if (end - p < 6 || (cp = hex4(p + 2)) <= 0 || (cp >= 0xDC00 && cp <= 0xDFFF))
                    return false;
                p += 6;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    int lo;
                    if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || (lo = hex4(p + 2)) < 0xDC00 ||
                        lo > 0xDFFF)
                        return false;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    p += 6;
                }
                if (!put_utf8(f, (uint32_t)cp))
                    return false;
                continue;
            default:
                return false;
            }
            if (!put(f, &c, 1))
                return false;
            p += 2;
            continue;
        }
        if (c < 0x80) {
            const unsigned char *q = p;
            while (q < end && *q >= 0x20 && *q < 0x80 && *q != '"' && *q != '\\')
                q++;
            if (!put(f, p, (size_t)(q - p)))
                return false;
            p = q;
            continue;
        }
        size_t n = utf8_seq(p, end);
        if (!n || !put(f, p, n))
            return false;
        p += n;
    }
    return false;
}

static json_t *number(struct jsf *f)
{
    const unsigned char *p = f->p, *end = f->end;
    bool neg = false;
    json_int_t v = 0;
    int digits = 0;

    if (*p == '-') {
        neg = true;
        p++;
    }
    if (p >= end)
        return NULL;
    if (*p == '0') {
        p++;
        if (p < end && *p >= '0' && *p <= '9')
            return NULL;
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && *p >= '0' && *p <= '9') {
            if (++digits > 18)
                return NULL; /* may not fit: jansson's strtoll decides */
            v = v * 10 + (*p++ - '0');
        }
    } else {
        return NULL;
    }
    if (p < end && (*p == '.' || *p == 'e' || *p == 'E'))
        return NULL; /* a real: jansson's strtod */
    f->p = p;
    return json_integer(neg ? -v : v);
}

static json_t *literal(struct jsf *f, const char *word, json_t *v)
{
    size_t n = strlen(word);

    if ((size_t)(f->end - f->p) < n || memcmp(f->p, word, n) != 0)
        return NULL;
    f->p += n;
    return v;
}

/* After a member or an element: 1 for a comma (another follows), 0 for the closing bracket (f->p
 * is then past it), -1 for anything else. */
static int next(struct jsf *f, char close)
{
    ws(f);
    if (f->p >= f->end)
        return -1;
    if (*f->p == ',') {
        f->p++;
        return 1;
    }
    if (*f->p == (unsigned char)close) {
        f->p++;
        return 0;
    }
    return -1;
}

static json_t *object(struct jsf *f, unsigned depth)
{
    json_t *o = json_object();

    if (!o)
        return NULL;
    ws(f);
    if (f->p < f->end && *f->p == '}') {
        f->p++;
        return o;
    }
    for (;;) {
        const char *key;
        char *copy = NULL;
        size_t klen;
        json_t *v;
        int r;

        ws(f);
        if (f->p >= f->end || *f->p != '"')
            goto fail;
        f->p++;
        if (!string(f, &key, &klen))
            goto fail;
        if (key == (const char *)f->buf) {
            /* The value's strings reuse the buffer. */
            copy = x_malloc(klen ? klen : 1);
            if (!copy)
                goto fail;
            memcpy(copy, key, klen);
            key = copy;
        }
        ws(f);
        if (f->p >= f->end || *f->p != ':') {
            x_free(copy);
            goto fail;
        }
        f->p++;
        if (f->reject_duplicates && json_object_getn(o, key, klen)) {
            x_free(copy);
            goto fail;
        }
        v = value(f, depth);
        r = v ? json_object_setn_new_nocheck(o, key, klen, v) : -1;
        x_free(copy);
        if (r < 0 || (r = next(f, '}')) < 0)
            goto fail;
        if (r == 0)
            return o;
    }
fail:
    json_decref(o);
    return NULL;
}

static json_t *array(struct jsf *f, unsigned depth)
{
    json_t *a = json_array();

    if (!a)
        return NULL;
    ws(f);
    if (f->p < f->end && *f->p == ']') {
        f->p++;
        return a;
    }
    for (;;) {
        json_t *v = value(f, depth);
        int r;
        if (!v || json_array_append_new(a, v) < 0 || (r = next(f, ']')) < 0)
            goto fail;
        if (r == 0)
            return a;
    }
fail:
    json_decref(a);
    return NULL;
}

static json_t *value(struct jsf *f, unsigned depth)
{
    const char *s;
    size_t n;

    ws(f);
    if (f->p >= f->end)
        return NULL;
    switch (*f->p) {
    case '{':
    case '[':
        if (depth + 1 > JSF_MAX_DEPTH)
            return NULL;
        return *f->p++ == '{' ? object(f, depth + 1) : array(f, depth + 1);
    case '"':
        f->p++;
        return string(f, &s, &n) ? json_stringn_nocheck(s, n) : NULL;
    case 't':
        return literal(f, "true", json_true());
    case 'f':
        return literal(f, "false", json_false());
    case 'n':
        return literal(f, "null", json_null());
    default:
        return number(f);
    }
}

json_t *jsf_load(const char *buf, size_t len, size_t flags)
{
    struct jsf f = {.p = (const unsigned char *)buf,
                    .end = (const unsigned char *)buf + len,
                    .reject_duplicates = (flags & JSON_REJECT_DUPLICATES) != 0};
    json_t *j = NULL;

    if (!buf || (flags & ~(size_t)JSON_REJECT_DUPLICATES) != 0)
        return NULL;
    f.buf = f.stack;
    f.cap = sizeof(f.stack);
    ws(&f);
    if (f.p < f.end && (*f.p == '{' || *f.p == '['))
        j = value(&f, 0);
    if (j) {
        ws(&f);
        if (f.p != f.end) {
            json_decref(j);
            j = NULL;
        }
    }
    if (f.buf != f.stack)
        x_free(f.buf);
    return j;
}
