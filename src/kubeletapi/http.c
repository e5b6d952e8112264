/* kla_http: see http.h. */
#include "kubeletapi/http.h"

#include "common/jsonb.h"
#include "common/rfc3339.h"
#include "common/strutil.h"
#include "common/xalloc.h"
#include "kube/names.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- heads --------------------------------------------------------------------------------- */

static bool tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Finds the end of the head ("\r\n\r\n"); returns its length (with the blank line) or 0. */
static size_t head_end(const char *buf, size_t len)
{
    if (len > KLA_HTTP_MAX_HEAD)
        len = KLA_HTTP_MAX_HEAD;
    for (size_t i = 3; i < len; i++)
        if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' && buf[i - 3] == '\r')
            return i + 1;
    return 0;
}

/* Header lines from p to end (end points after the final CRLF CRLF). */
static int parse_headers(const char *p, const char *end, struct kla_http_head *h)
{
    h->n = 0;
    while (p < end) {
        const char *eol = memchr(p, '\r', (size_t)(end - p)), *colon, *v, *ve;

        if (!eol || eol + 1 >= end || eol[1] != '\n')
            return -EINVAL;
        if (eol == p) /* the blank line */
            return p + 2 == end ? 0 : -EINVAL;
        if (h->n >= KLA_HTTP_MAX_HEADERS)
            return -E2BIG;
        colon = p;
        while (colon < eol && tchar((unsigned char)*colon))
            colon++;
        if (colon == p || colon == eol || *colon != ':')
            return -EINVAL; /* also refuses obsolete folding (a line starting with space) */
        v = colon + 1;
        while (v < eol && (*v == ' ' || *v == '\t'))
            v++;
        ve = eol;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
            ve--;
        for (const char *q = v; q < ve; q++) {
            unsigned char c = (unsigned char)*q;

            if ((c < 0x20 && c != '\t') || c == 0x7f)
                return -EINVAL;
        }
        h->h[h->n++] = (struct kla_http_header){p, v, (size_t)(colon - p), (size_t)(ve - v)};
        p = eol + 2;
    }
    return -EINVAL;
}

static int parse_version(const char *p, int *minor)
{
    if (memcmp(p, "HTTP/1.", 7) != 0 || p[7] < '0' || p[7] > '9')
        return -EINVAL;
    *minor = p[7] - '0';
    return 0;
}

int kla_http_parse_request(const char *buf, size_t len, struct kla_http_head *ret)
{
    size_t hl = head_end(buf, len);
    const char *p = buf, *end, *sp1, *sp2, *eol;
    struct kla_http_head h;
    int r;

    if (!hl)
        return len >= KLA_HTTP_MAX_HEAD ? -E2BIG : -EAGAIN;
    memset(&h, 0, sizeof(h));
    end = buf + hl;
    eol = memchr(p, '\r', hl);
    sp1 = memchr(p, ' ', (size_t)(eol - p));
    if (!sp1 || sp1 == p || sp1 - p > 16)
        return -EINVAL;
    for (const char *q = p; q < sp1; q++)
        if (!tchar((unsigned char)*q))
            return -EINVAL;
    sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1));
    if (!sp2 || sp2 == sp1 + 1)
        return -EINVAL;
    if ((size_t)(sp2 - sp1 - 1) > KLA_HTTP_MAX_TARGET)
        return -E2BIG;
    for (const char *q = sp1 + 1; q < sp2; q++) {
        unsigned char c = (unsigned char)*q;

        if (c <= 0x20 || c >= 0x7f)
            return -EINVAL;
    }
    if (eol - sp2 - 1 != 8 || parse_version(sp2 + 1, &h.minor) < 0)
        return -EINVAL;
    h.method = p;
    h.method_len = (size_t)(sp1 - p);
    h.target = sp1 + 1;
    h.target_len = (size_t)(sp2 - sp1 - 1);
    r = parse_headers(eol + 2, end, &h);
    if (r < 0)
        return r;
    h.head_len = hl;
    *ret = h;
    return 0;
}

int kla_http_parse_response(const char *buf, size_t len, struct kla_http_head *ret)
{
    size_t hl = head_end(buf, len);
    const char *eol;
    struct kla_http_head h;
    int r;

    if (!hl)
        return len >= KLA_HTTP_MAX_HEAD ? -E2BIG : -EAGAIN;
    memset(&h, 0, sizeof(h));
    eol = memchr(buf, '\r', hl);
    if (eol - buf < 12 || parse_version(buf, &h.minor) < 0 || buf[8] != ' ')
        return -EINVAL;
    for (int i = 9; i < 12; i++)
        if (buf[i] < '0' || buf[i] > '9')
            return -EINVAL;
    h.status = (unsigned)((buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0'));
    if (h.status < 100)
        return -EINVAL;
    if (eol - buf > 12) {
        if (buf[12] != ' ')
            return -EINVAL;
        h.reason = buf + 13;
        h.reason_len = (size_t)(eol - buf - 13);
        for (size_t i = 0; i < h.reason_len; i++) {
            unsigned char c = (unsigned char)h.reason[i];

            if ((c < 0x20 && c != '\t') || c == 0x7f)
                return -EINVAL;
        }
    } else {
        h.reason = eol;
    }
    r = parse_headers(eol + 2, buf + hl, &h);
    if (r < 0)
        return r;
    h.head_len = hl;
    *ret = h;
    return 0;
}

static bool name_is(const struct kla_http_header *e, const char *name)
{
    return strlen(name) == e->name_len && strncasecmp(e->name, name, e->name_len) == 0;
}

int kla_http_header(const struct kla_http_head *h, const char *name, char *buf, size_t size)
{
    for (size_t i = 0; i < h->n; i++) {
        const struct kla_http_header *e = &h->h[i];

        if (!name_is(e, name))
            continue;
        if (e->value_len >= size)
            return -ENAMETOOLONG;
        memcpy(buf, e->value, e->value_len);
        buf[e->value_len] = '\0';
        return (int)e->value_len;
    }
    return -ENOENT;
}

bool kla_http_has_token(const struct kla_http_head *h, const char *name, const char *token)
{
    size_t tlen = strlen(token);

    for (size_t i = 0; i < h->n; i++) {
        const struct kla_http_header *e = &h->h[i];
        const char *p = e->value, *end = e->value + e->value_len;

        if (!name_is(e, name))
            continue;
        while (p < end) {
            const char *comma = memchr(p, ',', (size_t)(end - p)), *te;

            if (!comma)
                comma = end;
            while (p < comma && (*p == ' ' || *p == '\t'))
                p++;
            te = comma;
            while (te > p && (te[-1] == ' ' || te[-1] == '\t'))
                te--;
            if ((size_t)(te - p) == tlen && strncasecmp(p, token, tlen) == 0)
                return true;
            p = comma + 1;
        }
    }
    return false;
}

int kla_http_join(const struct kla_http_head *h, const char *name, char *buf, size_t size)
{
    size_t len = 0;

    if (size == 0)
        return -ENAMETOOLONG;
    buf[0] = '\0';
    for (size_t i = 0; i < h->n; i++) {
        const struct kla_http_header *e = &h->h[i];
        size_t need;

        if (!name_is(e, name) || e->value_len == 0)
            continue;
        need = (len ? 2 : 0) + e->value_len;
        if (len + need >= size)
            return -ENAMETOOLONG;
        if (len) {
            memcpy(buf + len, ", ", 2);
            len += 2;
        }
        memcpy(buf + len, e->value, e->value_len);
        len += e->value_len;
        buf[len] = '\0';
    }
    return (int)len;
}

int kla_http_content_length(const struct kla_http_head *h, uint64_t *ret)
{
    bool found = false;
    uint64_t v = 0;

    for (size_t i = 0; i < h->n; i++) {
        const struct kla_http_header *e = &h->h[i];
        char tmp[24];
        uint64_t x;

        if (!name_is(e, "content-length"))
            continue;
        if (e->value_len == 0 || e->value_len >= sizeof(tmp))
            return -EINVAL;
        memcpy(tmp, e->value, e->value_len);
        tmp[e->value_len] = '\0';
        if (parse_u64(tmp, UINT64_MAX / 2, &x) < 0 || (found && x != v))
            return -EINVAL;
        v = x;
        found = true;
    }
    if (!found)
        return -ENOENT;
    *ret = v;
    return 0;
}

/* ---- query strings ------------------------------------------------------------------------- */

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes [p, end) into out (size bytes, NUL-terminated). */
static int decode(const char *p, const char *end, char *out, size_t size, bool plus)
{
    size_t n = 0;

    while (p < end) {
        char c = *p++;

        if (c == '%') {
            int hi, lo;

            if (end - p < 2 || (hi = hexval(p[0])) < 0 || (lo = hexval(p[1])) < 0)
                return -EINVAL;
            c = (char)(hi << 4 | lo);
            p += 2;
            if (c == '\0')
                return -EINVAL;
        } else if (c == '+' && plus) {
            c = ' ';
        }
        if (n + 1 >= size)
            return -E2BIG;
        out[n++] = c;
    }
    if (size == 0)
        return -E2BIG;
    out[n] = '\0';
    return (int)n;
}

int kla_query_next(const char **cursor, const char *end, char *key, size_t ksize, char *val,
                   size_t vsize)
{
    const char *p = *cursor;

    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p)), *eq;
        int r;

        if (!amp)
            amp = end;
        if (amp == p) { /* empty pair */
            p++;
            continue;
        }
        eq = memchr(p, '=', (size_t)(amp - p));
        r = decode(p, eq ? eq : amp, key, ksize, true);
        if (r < 0)
            return r;
        r = eq ? decode(eq + 1, amp, val, vsize, true) : decode(amp, amp, val, vsize, true);
        if (r < 0)
            return r;
        *cursor = amp < end ? amp + 1 : end;
        return 1;
    }
    *cursor = end;
    return 0;
}

int kla_query_get(const char *query, size_t len, const char *key, char *val, size_t vsize)
{
    const char *cur = query, *end = query + len;
    char k[64];
    int r;

    for (;;) {
        r = kla_query_next(&cur, end, k, sizeof(k), val, vsize);
        if (r == -E2BIG && strlen(key) < sizeof(k)) {
            /* A long value of another key, or a long key: skip that pair. */
            const char *amp = memchr(cur, '&', (size_t)(end - cur));
            char tk[64];
            const char *eq = memchr(cur, '=', amp ? (size_t)(amp - cur) : (size_t)(end - cur));

            if (eq && decode(cur, eq, tk, sizeof(tk), true) >= 0 && strcmp(tk, key) == 0)
                return -E2BIG;
            cur = amp ? amp + 1 : end;
            continue;
        }
        if (r <= 0)
            return r == 0 ? -ENOENT : r;
        if (strcmp(k, key) == 0)
            return 0;
    }
}

int kla_query_append(char *buf, size_t size, size_t len, const char *key, const char *value)
{
    static const char hex[] = "0123456789ABCDEF";
    const char *parts[2] = {key, value};

    if (len > 0) {
        if (len + 1 >= size)
            return -ENOSPC;
        buf[len++] = '&';
    }
    for (int i = 0; i < 2; i++) {
        if (i == 1) {
            if (len + 1 >= size)
                return -ENOSPC;
            buf[len++] = '=';
        }
        for (const unsigned char *p = (const unsigned char *)parts[i]; *p; p++) {
            bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                         (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' ||
                         *p == '~';

            if (len + (plain ? 1 : 3) >= size)
                return -ENOSPC;
            if (plain) {
                buf[len++] = (char)*p;
            } else {
                buf[len++] = '%';
                buf[len++] = hex[*p >> 4];
                buf[len++] = hex[*p & 15];
            }
        }
    }
    buf[len] = '\0';
    return (int)len;
}

/* ---- names and values ---------------------------------------------------------------------- */

static bool valid_uid(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > KLA_MAX_UID)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

int kla_parse_bool(const char *s, bool *ret)
{
    static const char *const t[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const f[] = {"0", "f", "F", "FALSE", "false", "False"};

    for (size_t i = 0; i < 6; i++) {
        if (strcmp(s, t[i]) == 0) {
            *ret = true;
            return 0;
        }
        if (strcmp(s, f[i]) == 0) {
            *ret = false;
            return 0;
        }
    }
    return -EINVAL;
}

/* ---- routes -------------------------------------------------------------------------------- */

void kla_target_split(const char *target, size_t len, const char **ret_path, size_t *ret_path_len,
                      const char **ret_query, size_t *ret_query_len)
{
    const char *q = memchr(target, '?', len);

    *ret_path = target;
    *ret_path_len = q ? (size_t)(q - target) : len;
    *ret_query = q ? q + 1 : target + len;
    *ret_query_len = q ? len - (size_t)(q - target) - 1 : 0;
}

#define MAX_SEGMENTS 6

int kla_route_parse(const char *path, size_t len, enum kla_route *ret, struct kla_pod_ref *ref)
{
    char seg[MAX_SEGMENTS][KLA_MAX_POD + 2];
    const char *p = path, *end = path + len;
    size_t n = 0;

    if (len == 0 || path[0] != '/')
        return -ENOENT;
    p++;
    while (p <= end) {
        const char *slash = memchr(p, '/', (size_t)(end - p));
        int r;

        if (!slash)
            slash = end;
        if (n >= MAX_SEGMENTS)
            return -ENOENT;
        r = decode(p, slash, seg[n], sizeof(seg[n]), false);
        if (r == -E2BIG)
            return n == 0 ? -ENOENT : -EINVAL;
        if (r < 0)
            return -EINVAL;
        n++;
        if (slash == end)
            break;
        p = slash + 1;
    }
    for (size_t i = 0; i < n; i++)
        if (seg[i][0] == '\0')
            return -ENOENT; /* "//" or a trailing slash */
    if (n == 1 && strcmp(seg[0], "healthz") == 0) {
        *ret = KLA_ROUTE_HEALTHZ;
        return 0;
    }
    if (n >= 4 && (strcmp(seg[0], "containerLogs") == 0 || strcmp(seg[0], "exec") == 0)) {
        bool logs = seg[0][0] == 'c';
        struct kla_pod_ref pr;

        if ((logs && n != 4) || (!logs && n != 4 && n != 5))
            return -ENOENT;
        memset(&pr, 0, sizeof(pr));
        if (!kname_dns_label(seg[1]) || !kname_dns_subdomain(seg[2]) ||
            !kname_dns_label(seg[n - 1]))
            return -EINVAL;
        if (n == 5 && !valid_uid(seg[3]))
            return -EINVAL;
        /* Lengths are bounded by the checks above. */
        memcpy(pr.ns, seg[1], strlen(seg[1]) + 1);
        memcpy(pr.pod, seg[2], strlen(seg[2]) + 1);
        memcpy(pr.container, seg[n - 1], strlen(seg[n - 1]) + 1);
        if (n == 5)
            memcpy(pr.uid, seg[3], strlen(seg[3]) + 1);
        *ref = pr;
        *ret = logs ? KLA_ROUTE_LOGS : KLA_ROUTE_EXEC;
        return 0;
    }
    return -ENOENT;
}

/* ---- options ------------------------------------------------------------------------------- */

static int parse_count(const char *v, int64_t min, int64_t *ret)
{
    uint64_t x;

    if (parse_u64(v, INT64_MAX, &x) < 0 || (int64_t)x < min)
        return -EINVAL;
    *ret = (int64_t)x;
    return 0;
}

int kla_logs_opts_parse(const char *query, size_t len, struct kla_logs_opts *ret, char *err,
                        size_t errlen)
{
    const char *cur = query, *end = query + len;
    struct kla_logs_opts o = {
        .tail_lines = -1, .since_seconds = -1, .since_time = -1, .limit_bytes = -1};
    bool seen[7] = {false};
    static const char *const keys[7] = {"follow",       "previous",  "timestamps", "tailLines",
                                        "sinceSeconds", "sinceTime", "limitBytes"};
    char k[32], v[64];
    int r;

    if (err && errlen)
        err[0] = '\0';
    while ((r = kla_query_next(&cur, end, k, sizeof(k), v, sizeof(v))) > 0) {
        int i;

        for (i = 0; i < 7 && strcmp(k, keys[i]) != 0; i++)
            ;
        if (i == 7 || seen[i])
            continue; /* unknown parameters are ignored; the first value counts */
        seen[i] = true;
        switch (i) {
        case 0:
        case 1:
        case 2: {
            bool b;

            if (kla_parse_bool(v, &b) < 0)
                goto bad;
            if (i == 0)
                o.follow = b;
            else if (i == 1)
                o.previous = b;
            else
                o.timestamps = b;
            break;
        }
        case 3:
            if (parse_count(v, 0, &o.tail_lines) < 0)
                goto bad;
            break;
        case 4:
            if (parse_count(v, 1, &o.since_seconds) < 0)
                goto bad;
            break;
        case 5:
            if (strlen(v) >= sizeof(o.since_time_str) ||
                rfc3339_parse(v, RFC3339_OFFSET, &o.since_time) < 0)
                goto bad;
            memcpy(o.since_time_str, v, strlen(v) + 1);
            break;
        case 6:
            if (parse_count(v, 1, &o.limit_bytes) < 0)
                goto bad;
            break;
        }
        continue;
    bad:
        if (err)
            snprintf(err, errlen, "invalid value for %s: \"%s\"%s", keys[i], v,
                     i == 3             ? " (must be an integer >= 0)"
                     : i >= 4 && i != 5 ? " (must be an integer > 0)"
                     : i == 5           ? " (must be an RFC 3339 time)"
                                        : " (must be a boolean)");
        return -EINVAL;
    }
    if (r < 0) {
        if (err)
            snprintf(err, errlen, "malformed query string");
        return -EINVAL;
    }
    if (o.since_seconds >= 0 && o.since_time >= 0) {
        if (err)
            snprintf(err, errlen, "at most one of sinceTime or sinceSeconds may be specified");
        return -EINVAL;
    }
    *ret = o;
    return 0;
}

void kla_exec_opts_done(struct kla_exec_opts *o)
{
    if (!o)
        return;
    for (size_t i = 0; i < o->ncommand; i++)
        x_free(o->command[i]);
    o->ncommand = 0;
}

int kla_exec_opts_parse(const char *query, size_t len, struct kla_exec_opts *ret, char *err,
                        size_t errlen)
{
    const char *cur = query, *end = query + len;
    struct kla_exec_opts o;
    char k[32], *v = x_malloc(KLA_MAX_ARG + 1);
    int r;

    if (err && errlen)
        err[0] = '\0';
    if (!v)
        return -ENOMEM;
    memset(&o, 0, sizeof(o));
    while ((r = kla_query_next(&cur, end, k, sizeof(k), v, KLA_MAX_ARG + 1)) > 0) {
        if (strcmp(k, "command") == 0) {
            if (o.ncommand >= KLA_MAX_ARGS) {
                if (err)
                    snprintf(err, errlen, "too many command arguments (at most %d)", KLA_MAX_ARGS);
                r = -EINVAL;
                goto out;
            }
            o.command[o.ncommand] = x_strdup(v);
            if (!o.command[o.ncommand]) {
                r = -ENOMEM;
                goto out;
            }
            o.ncommand++;
        } else if (strcmp(k, "input") == 0) {
            o.in = strcmp(v, "1") == 0;
        } else if (strcmp(k, "output") == 0) {
            o.out = strcmp(v, "1") == 0;
        } else if (strcmp(k, "error") == 0) {
            o.err = strcmp(v, "1") == 0;
        } else if (strcmp(k, "tty") == 0) {
            o.tty = strcmp(v, "1") == 0;
        }
    }
    if (r < 0) {
        if (err)
            snprintf(err, errlen,
                     r == -E2BIG ? "a command argument is longer than %d bytes"
                                 : "malformed query string",
                     KLA_MAX_ARG);
        r = -EINVAL;
        goto out;
    }
    if (o.tty)
        o.err = false; /* as the kubelet: a terminal merges stderr into stdout */
    if (!o.in && !o.out && !o.err) {
        if (err)
            snprintf(err, errlen, "you must specify at least 1 of stdin, stdout, stderr");
        r = -EINVAL;
        goto out;
    }
    if (o.ncommand == 0) {
        if (err)
            snprintf(err, errlen, "you must specify at least one command for the container");
        r = -EINVAL;
        goto out;
    }
    *ret = o;
    memset(&o, 0, sizeof(o));
    r = 0;
out:
    kla_exec_opts_done(&o);
    x_free(v);
    return r;
}

/* ---- chunked bodies ------------------------------------------------------------------------ */

enum { CH_SIZE, CH_EXT, CH_SIZE_LF, CH_DATA, CH_DATA_CR, CH_DATA_LF, CH_TRAILER, CH_TRAILER_LF };

#define CH_MAX_LINE 4096

ssize_t kla_chunked_feed(struct kla_chunked *c, const char *buf, size_t len,
                         int (*out)(void *data, const char *p, size_t n), void *data)
{
    size_t i = 0;

    while (i < len && !c->done) {
        char ch = buf[i];
        int h;

        switch (c->state) {
        case CH_SIZE:
            h = hexval(ch);
            if (h >= 0) {
                if (c->remaining >> 44)
                    return -EPROTO; /* over 2^48 */
                c->remaining = c->remaining << 4 | (uint64_t)h;
                c->line++;
            } else if (c->line == 0) {
                return -EPROTO;
            } else if (ch == '\r') {
                c->state = CH_SIZE_LF;
            } else if (ch == ';' || ch == ' ' || ch == '\t') {
                c->state = CH_EXT;
            } else {
                return -EPROTO;
            }
            i++;
            break;
        case CH_EXT:
            if (++c->line > CH_MAX_LINE)
                return -EPROTO;
            if (ch == '\r')
                c->state = CH_SIZE_LF;
            else if (ch == '\n')
                return -EPROTO;
            i++;
            break;
        case CH_SIZE_LF:
            if (ch != '\n')
                return -EPROTO;
            i++;
            c->line = 0;
            c->state = c->remaining ? CH_DATA : CH_TRAILER;
            break;
        case CH_DATA: {
            size_t n = len - i;
            int r;

            if (n > c->remaining)
                n = (size_t)c->remaining;
            r = out(data, buf + i, n);
            if (r < 0)
                return r;
            i += n;
            c->remaining -= n;
            if (c->remaining == 0)
                c->state = CH_DATA_CR;
            break;
        }
        case CH_DATA_CR:
            if (ch != '\r')
                return -EPROTO;
            c->state = CH_DATA_LF;
            i++;
            break;
        case CH_DATA_LF:
            if (ch != '\n')
                return -EPROTO;
            c->state = CH_SIZE;
            c->line = 0;
            i++;
            break;
        case CH_TRAILER:
            /* Trailer lines until an empty one. */
            if (ch == '\r') {
                c->state = CH_TRAILER_LF;
            } else if (ch == '\n' || ++c->line > CH_MAX_LINE) {
                return -EPROTO;
            }
            i++;
            break;
        case CH_TRAILER_LF:
            if (ch != '\n')
                return -EPROTO;
            i++;
            if (c->line == 0)
                c->done = true;
            c->line = 0;
            c->state = CH_TRAILER;
            break;
        }
    }
    return (ssize_t)i;
}

/* ---- remotecommand ------------------------------------------------------------------------- */

static const struct {
    enum kla_rc_proto p;
    const char *name;
} protos[] = {
    {KLA_RC_V4, "v4.channel.k8s.io"},
    {KLA_RC_V3, "v3.channel.k8s.io"},
    {KLA_RC_V2, "v2.channel.k8s.io"},
};

enum kla_rc_proto kla_rc_negotiate(const char *list)
{
    const char *p = list;

    while (p && *p) {
        const char *comma = strchr(p, ','), *e;

        if (!comma)
            comma = p + strlen(p);
        while (p < comma && *p == ' ')
            p++;
        e = comma;
        while (e > p && e[-1] == ' ')
            e--;
        for (size_t i = 0; i < sizeof(protos) / sizeof(protos[0]); i++)
            if ((size_t)(e - p) == strlen(protos[i].name) &&
                memcmp(p, protos[i].name, (size_t)(e - p)) == 0)
                return protos[i].p;
        p = *comma ? comma + 1 : comma;
    }
    return KLA_RC_NONE;
}

const char *kla_rc_proto_name(enum kla_rc_proto p)
{
    for (size_t i = 0; i < sizeof(protos) / sizeof(protos[0]); i++)
        if (protos[i].p == p)
            return protos[i].name;
    return "";
}

int kla_rc_status(enum kla_rc_proto p, int exit_code, const char *message, char *buf, size_t size)
{
    char msg[512], code[16];
    json_t *st = NULL;
    char *s = NULL;
    int n, r = -ENOSPC;

    if (exit_code > 0)
        snprintf(msg, sizeof(msg), "command terminated with non-zero exit code: exit status %d",
                 exit_code);
    else if (exit_code < 0)
        snprintf(msg, sizeof(msg), "Internal error occurred: %s", message ? message : "unknown");
    if (p != KLA_RC_V4) {
        if (exit_code == 0) {
            if (size)
                buf[0] = '\0';
            return 0;
        }
        n = snprintf(buf, size, "%s", msg);
        return n >= 0 && (size_t)n < size ? n : -ENOSPC;
    }
    /* As Go marshals metav1.Status: metadata, status, message, reason, details, code. */
    if (exit_code == 0) {
        st = json_pack("{s:{},s:s}", "metadata", "status", "Success");
    } else if (exit_code > 0) {
        snprintf(code, sizeof(code), "%d", exit_code);
        st = json_pack("{s:{},s:s,s:s,s:s,s:{s:[{s:s,s:s}]}}", "metadata", "status", "Failure",
                       "message", msg, "reason", "NonZeroExitCode", "details", "causes", "reason",
                       "ExitCode", "message", code);
    } else {
        st = json_pack("{s:{},s:s,s:s,s:s,s:{s:[{s:s}]},s:i}", "metadata", "status", "Failure",
                       "message", msg, "reason", "InternalError", "details", "causes", "message",
                       message ? message : "unknown", "code", 500);
    }
    if (!st)
        return -ENOMEM;
    s = json_dumps(st, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(st);
    if (!s)
        return -ENOMEM;
    n = (int)strlen(s);
    if ((size_t)n < size) {
        memcpy(buf, s, (size_t)n + 1);
        r = n;
    }
    free(s); /* jansson's allocation */
    return r;
}

int kla_rc_status_decode(const char *json, size_t len, int *ret_exit_code, char *msg, size_t msize)
{
    json_t *st = NULL, *causes;
    const char *status, *reason, *message;
    int r = -EPROTO;

    if (msg && msize)
        msg[0] = '\0';
    if (jsonb_load(json, len, 0, 0, 0, &st, NULL) < 0 || !json_is_object(st))
        goto out;
    status = json_string_value(json_object_get(st, "status"));
    reason = json_string_value(json_object_get(st, "reason"));
    message = json_string_value(json_object_get(st, "message"));
    if (!status)
        goto out;
    if (strcmp(status, "Success") == 0) {
        *ret_exit_code = 0;
        r = 0;
        goto out;
    }
    if (strcmp(status, "Failure") != 0)
        goto out;
    if (msg && message)
        snprintf(msg, msize, "%s", message);
    r = -EREMOTEIO;
    causes = json_object_get(json_object_get(st, "details"), "causes");
    if (reason && strcmp(reason, "NonZeroExitCode") == 0 && json_is_array(causes)) {
        size_t i;
        json_t *c;

        json_array_foreach(causes, i, c)
        {
            const char *cr = json_string_value(json_object_get(c, "reason"));
            const char *cm = json_string_value(json_object_get(c, "message"));
            uint64_t code;

            if (cr && cm && strcmp(cr, "ExitCode") == 0 && parse_u64(cm, 255, &code) == 0) {
                *ret_exit_code = (int)code;
                r = 0;
                break;
            }
        }
    }
out:
    json_decref(st);
    return r;
}

static const char *const stream_names[KLA_STREAM_MAX] = {"error", "stdin", "stdout", "stderr",
                                                         "resize"};

enum kla_stream kla_rc_stream_type(const char *s)
{
    for (int i = 0; i < KLA_STREAM_MAX; i++)
        if (strcmp(s, stream_names[i]) == 0)
            return (enum kla_stream)i;
    return KLA_STREAM_MAX;
}

const char *kla_rc_stream_name(enum kla_stream s)
{
    return s < KLA_STREAM_MAX ? stream_names[s] : "?";
}

/* One complete message in st->buf: its sizes to cb. */
static int resize_message(struct kla_rc_resize *st,
                          void (*cb)(void *data, unsigned width, unsigned height), void *data)
{
    json_t *o = NULL, *v;
    json_int_t w = 0, h = 0;
    const char *key;

    if (jsonb_load(st->buf, st->len, 0, 0, 0, &o, NULL) < 0)
        o = NULL;
    st->len = 0;
    if (!json_is_object(o)) {
        json_decref(o);
        return -EPROTO;
    }
    json_object_foreach(o, key, v)
    {
        /* Go decodes field names case-insensitively; a size must be a number. */
        bool is_w = strcasecmp(key, "width") == 0, is_h = strcasecmp(key, "height") == 0;

        if ((is_w || is_h) && !json_is_integer(v)) {
            w = -1;
            break;
        }
        if (is_w)
            w = json_integer_value(v);
        else if (is_h)
            h = json_integer_value(v);
    }
    json_decref(o);
    if (w < 0 || w > 65535 || h < 0 || h > 65535)
        return -EPROTO;
    cb(data, (unsigned)w, (unsigned)h);
    return 0;
}

/* A byte-at-a-time scanner (so that any split of the input gives the same messages): between
 * messages only whitespace and '{' are allowed; inside one, strings and nesting are followed until
 * the outer object closes. */
int kla_rc_resize_feed(struct kla_rc_resize *st, const char *p, size_t n,
                       void (*cb)(void *data, unsigned width, unsigned height), void *data)
{
    for (size_t i = 0; i < n; i++) {
        char c = p[i];

        if (st->depth == 0) {
            if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
                continue;
            if (c != '{')
                return -EPROTO;
        }
        if (st->len >= sizeof(st->buf))
            return -EPROTO; /* a message larger than the buffer */
        st->buf[st->len++] = c;
        if (st->in_str) {
            if (st->esc)
                st->esc = false;
            else if (c == '\\')
                st->esc = true;
            else if (c == '"')
                st->in_str = false;
            continue;
        }
        if (c == '"') {
            st->in_str = true;
        } else if (c == '{' || c == '[') {
            if (++st->depth > 32)
                return -EPROTO;
        } else if ((c == '}' || c == ']') && --st->depth == 0) {
            int r = resize_message(st, cb, data);

            if (r < 0)
                return r;
        }
    }
    return 0;
}
