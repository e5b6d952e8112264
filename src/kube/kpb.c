/* kpb: Kubernetes protobuf to JSON text (kpb.h). */
#include "kube/kpb.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/jsonb.h"
#include "common/rfc3339.h"
#include "common/xalloc.h"

enum { WT_VARINT = 0, WT_FIXED64 = 1, WT_LEN = 2, WT_FIXED32 = 5 };

/* Seconds of Go's zero time.Time (January 1, year 1, UTC) since the epoch. */
#define GO_ZERO_SECONDS (-62135596800LL)
/* Seconds of 0000-01-01 and of 10000-01-01: RFC 3339 has four digits of year. */
#define YEAR0_SECONDS     (-62167219200LL)
#define YEAR10000_SECONDS 253402300800LL

/* ---- the wire ------------------------------------------------------------------------------- */

struct rd {
    const uint8_t *p, *end;
};

static int rd_varint(struct rd *r, uint64_t *v)
{
    uint64_t x = 0;
    unsigned shift = 0;

    while (r->p < r->end) {
        uint8_t b = *r->p++;
        if (shift == 63 && b > 1)
            return -EBADMSG; /* over 64 bits */
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
        shift += 7;
        if (shift > 63)
            return -EBADMSG;
    }
    return -EBADMSG;
}

static int rd_tag(struct rd *r, uint32_t *num, unsigned *wt)
{
    uint64_t v;
    int e = rd_varint(r, &v);

    if (e < 0)
        return e;
    if ((v >> 3) == 0 || (v >> 3) > 0x1fffffff)
        return -EBADMSG;
    *num = (uint32_t)(v >> 3);
    *wt = (unsigned)(v & 7);
    return 0;
}

static int rd_bytes(struct rd *r, const uint8_t **p, size_t *n)
{
    uint64_t v;
    int e = rd_varint(r, &v);

    if (e < 0)
        return e;
    if (v > (uint64_t)(r->end - r->p))
        return -EBADMSG;
    *p = r->p;
    *n = (size_t)v;
    r->p += v;
    return 0;
}

static int rd_skip(struct rd *r, unsigned wt)
{
    const uint8_t *p;
    size_t n;
    uint64_t v;

    switch (wt) {
    case WT_VARINT:
        return rd_varint(r, &v);
    case WT_FIXED64:
        if (r->end - r->p < 8)
            return -EBADMSG;
        r->p += 8;
        return 0;
    case WT_LEN:
        return rd_bytes(r, &p, &n);
    case WT_FIXED32:
        if (r->end - r->p < 4)
            return -EBADMSG;
        r->p += 4;
        return 0;
    default:
        return -EBADMSG; /* groups (3, 4), and 6, 7 */
    }
}

/* The fields of a small message (Timestamp, Quantity, IntOrString, a map entry, ListMeta): each
 * wanted number gets the last value given for it, after its wire type is checked (varint or
 * length-delimited); the others are skipped. */
struct fv {
    uint32_t num;
    unsigned wt;
    bool seen;
    uint64_t v;       /* WT_VARINT */
    const uint8_t *p; /* WT_LEN: [p, p + n) */
    size_t n;
};

static int rd_small(const uint8_t *p, size_t n, struct fv *f, size_t nf)
{
    struct rd r = {p, p + n};
    int e;

    while (r.p < r.end) {
        uint32_t num;
        unsigned wt;
        size_t i;
        if ((e = rd_tag(&r, &num, &wt)) < 0)
            return e;
        for (i = 0; i < nf && f[i].num != num; i++)
            ;
        if (i == nf) {
            if ((e = rd_skip(&r, wt)) < 0)
                return e;
            continue;
        }
        if (wt != f[i].wt)
            return -EBADMSG;
        e = wt == WT_LEN ? rd_bytes(&r, &f[i].p, &f[i].n) : rd_varint(&r, &f[i].v);
        if (e < 0)
            return e;
        f[i].seen = true;
    }
    return 0;
}

/* ---- the text ------------------------------------------------------------------------------- */

struct out {
    char *buf;
    size_t len, cap, max;
    char **ret;
    size_t *ret_cap;
    const struct kpb_schema *s;
};

static int grow(struct out *o, size_t need)
{
    size_t cap;
    char *p;

    if (need > o->max || need + 1 < need)
        return -E2BIG;
    cap = o->cap ? o->cap : 4096;
    while (cap < need + 1)
        cap *= 2;
    if (cap > o->max + 1)
        cap = o->max + 1;
    p = x_reallocarray(o->buf, cap, 1);
    if (!p)
        return -ENOMEM;
    o->buf = p;
    o->cap = cap;
    return 0;
}

static inline int put(struct out *o, const char *s, size_t n)
{
    if (o->len + n + 1 > o->cap) {
        int e = grow(o, o->len + n);
        if (e < 0)
            return e;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    return 0;
}

static inline int putc_(struct out *o, char c)
{
    return put(o, &c, 1);
}

#define PUTS(o, lit) put((o), (lit), sizeof(lit) - 1)

/* Go's utf8.DecodeRune: the length of the valid UTF-8 sequence at p, or 0 when it is not one. */
static size_t utf8_len(const uint8_t *p, size_t n)
{
    uint8_t c = p[0];

    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        return n >= 2 && (p[1] & 0xc0) == 0x80 ? 2 : 0;
    if (c >= 0xe0 && c <= 0xef) {
        uint8_t lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
        return n >= 3 && p[1] >= lo && p[1] <= hi && (p[2] & 0xc0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        uint8_t lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
        return n >= 4 && p[1] >= lo && p[1] <= hi && (p[2] & 0xc0) == 0x80 && (p[3] & 0xc0) == 0x80
                   ? 4
                   : 0;
    }
    return 0;
}

/* A JSON string of the bytes, as encoding/json writes a Go string: invalid UTF-8 becomes U+FFFD. */
static int put_str(struct out *o, const uint8_t *p, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t i = 0, run = 0;
    int e;

    if ((e = putc_(o, '"')) < 0)
        return e;
    while (i < n) {
        uint8_t c = p[i];
        size_t l;
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
            i++;
            run++;
            continue;
        }
        if (run && (e = put(o, (const char *)p + i - run, run)) < 0)
            return e;
        run = 0;
        if (c >= 0x80) {
            l = utf8_len(p + i, n - i);
            if (l) {
                if ((e = put(o, (const char *)p + i, l)) < 0)
                    return e;
                i += l;
            } else {
                if ((e = PUTS(o, "\\ufffd")) < 0)
                    return e;
                i++;
            }
            continue;
        }
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            e = put(o, esc, 2);
        } else {
            char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            e = put(o, esc, 6);
        }
        if (e < 0)
            return e;
        i++;
    }
    if (run && (e = put(o, (const char *)p + i - run, run)) < 0)
        return e;
    return putc_(o, '"');
}

static int put_base64(struct out *o, const uint8_t *p, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char q[4];
    size_t i;
    int e;

    if ((e = putc_(o, '"')) < 0)
        return e;
    for (i = 0; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        q[0] = tab[v >> 18];
        q[1] = tab[(v >> 12) & 63];
        q[2] = tab[(v >> 6) & 63];
        q[3] = tab[v & 63];
        if ((e = put(o, q, 4)) < 0)
            return e;
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)p[i] << 16;
        q[0] = tab[v >> 18];
        q[1] = tab[(v >> 12) & 63];
        q[2] = q[3] = '=';
        if ((e = put(o, q, 4)) < 0)
            return e;
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
        q[0] = tab[v >> 18];
        q[1] = tab[(v >> 12) & 63];
        q[2] = tab[(v >> 6) & 63];
        q[3] = '=';
        if ((e = put(o, q, 4)) < 0)
            return e;
    }
    return putc_(o, '"');
}

static int put_int(struct out *o, long long v)
{
    char b[24];
    int n = snprintf(b, sizeof(b), "%lld", v);
    return put(o, b, (size_t)n);
}

/* ---- values --------------------------------------------------------------------------------- */

static int emit_msg(struct out *o, int mi, const uint8_t *p, size_t n, bool *first, unsigned depth);
static int emit_defaults(struct out *o, int mi, bool *first, unsigned depth);

static int put_key(struct out *o, const struct kpb_field *f, bool *first)
{
    int e;

    if (!*first && (e = putc_(o, ',')) < 0)
        return e;
    *first = false;
    if ((e = put_str(o, (const uint8_t *)f->json, strlen(f->json))) < 0)
        return e;
    return putc_(o, ':');
}

/* Time and MicroTime: a Timestamp message (seconds 1, nanos 2), empty for the zero time. */
static int put_time(struct out *o, const uint8_t *p, size_t n, bool micro)
{
    struct fv f[] = {{1, WT_VARINT}, {2, WT_VARINT}};
    int64_t sec, nsec;
    char b[RFC3339_MAX + 1];
    int e;

    if (n == 0)
        return PUTS(o, "null");
    if ((e = rd_small(p, n, f, 2)) < 0)
        return e;
    sec = (int64_t)f[0].v;
    nsec = (int32_t)(uint32_t)f[1].v;
    if (!micro)
        nsec = 0; /* Time keeps seconds only (metav1 time_proto.go) */
    if (nsec < 0 || nsec >= 1000000000)
        return -EBADMSG;
    if (sec == GO_ZERO_SECONDS && nsec == 0)
        return PUTS(o, "null");
    if (sec < YEAR0_SECONDS || sec >= YEAR10000_SECONDS)
        return -EBADMSG;
    b[0] = '"';
    rfc3339_format(sec, (long)nsec, micro ? 6 : 0, b + 1, sizeof(b) - 2);
    size_t l = strlen(b);
    b[l] = '"';
    return put(o, b, l + 1);
}

/* Quantity: its string (field 1), written by the server in canonical form; "0" when absent. */
static int put_quantity(struct out *o, const uint8_t *p, size_t n)
{
    struct fv f[] = {{1, WT_LEN}};
    int e;

    if ((e = rd_small(p, n, f, 1)) < 0)
        return e;
    if (!f[0].seen || f[0].n == 0)
        return PUTS(o, "\"0\"");
    return put_str(o, f[0].p, f[0].n);
}

/* IntOrString: type 1 (0 int, 1 string), intVal 2, strVal 3. */
static int put_intorstr(struct out *o, const uint8_t *p, size_t n)
{
    struct fv f[] = {{1, WT_VARINT}, {2, WT_VARINT}, {3, WT_LEN}};
    int e;

    if ((e = rd_small(p, n, f, 3)) < 0)
        return e;
    if (f[0].v == 0)
        return put_int(o, (int32_t)(uint32_t)f[1].v);
    if (f[0].v == 1)
        return put_str(o, f[2].p ? f[2].p : (const uint8_t *)"", f[2].n);
    return -EBADMSG; /* encoding/json refuses it too ("impossible IntOrString.Type") */
}

static unsigned wire_of(unsigned kind)
{
    return kind == KPB_BOOL || kind == KPB_INT32 || kind == KPB_INT64 ? WT_VARINT : WT_LEN;
}

static bool scalar(unsigned kind)
{
    return wire_of(kind) == WT_VARINT;
}

static int put_scalar(struct out *o, unsigned kind, uint64_t v)
{
    switch (kind) {
    case KPB_BOOL:
        return v ? PUTS(o, "true") : PUTS(o, "false");
    case KPB_INT32:
        return put_int(o, (int32_t)(uint32_t)v);
    default:
        return put_int(o, (long long)(int64_t)v);
    }
}

/* One length-delimited value of kind (msg for KPB_MSG). */
static int put_len_value(struct out *o, unsigned kind, int msg, const uint8_t *p, size_t n,
                         unsigned depth)
{
    bool first = true;
    int e;

    switch (kind) {
    case KPB_STRING:
        return put_str(o, p, n);
    case KPB_BYTES:
        return put_base64(o, p, n);
    case KPB_MSG:
        if ((e = putc_(o, '{')) < 0 || (e = emit_msg(o, msg, p, n, &first, depth + 1)) < 0)
            return e;
        return putc_(o, '}');
    case KPB_TIME:
    case KPB_MICROTIME:
        return put_time(o, p, n, kind == KPB_MICROTIME);
    case KPB_QUANTITY:
        return put_quantity(o, p, n);
    case KPB_INTORSTR:
        return put_intorstr(o, p, n);
    default:
        return -EBADMSG;
    }
}

/* The value a Go field of this kind has when absent from the wire (not a pointer, not a slice). */
static int put_zero(struct out *o, unsigned kind, int msg, unsigned depth)
{
    bool first = true;
    int e;

    switch (kind) {
    case KPB_STRING:
        return PUTS(o, "\"\"");
    case KPB_BYTES:
        return PUTS(o, "null");
    case KPB_BOOL:
        return PUTS(o, "false");
    case KPB_INT32:
    case KPB_INT64:
    case KPB_INTORSTR:
        return putc_(o, '0');
    case KPB_TIME:
    case KPB_MICROTIME:
        return PUTS(o, "null");
    case KPB_QUANTITY:
        return PUTS(o, "\"0\"");
    case KPB_MSG:
        if ((e = putc_(o, '{')) < 0 || (e = emit_defaults(o, msg, &first, depth + 1)) < 0)
            return e;
        return putc_(o, '}');
    default:
        return -EBADMSG;
    }
}

/* A map entry: key 1, value 2. */
static int put_entry(struct out *o, const struct kpb_field *f, const uint8_t *p, size_t n,
                     unsigned depth)
{
    struct fv kv[] = {{1, WT_LEN}, {2, wire_of(f->vkind)}};
    int e;

    if ((e = rd_small(p, n, kv, 2)) < 0)
        return e;
    if ((e = put_str(o, kv[0].p ? kv[0].p : (const uint8_t *)"", kv[0].n)) < 0 ||
        (e = putc_(o, ':')) < 0)
        return e;
    if (!kv[1].seen)
        return put_zero(o, f->vkind, f->vmsg, depth);
    if (scalar(f->vkind))
        return put_scalar(o, f->vkind, kv[1].v);
    if (f->vkind == KPB_BYTES && kv[1].n == 0)
        return PUTS(o, "\"\"");
    return put_len_value(o, f->vkind, f->vmsg, kv[1].p, kv[1].n, depth);
}

static const struct kpb_field *find_field(const struct kpb_msg *m, uint32_t num, size_t *idx)
{
    size_t lo = 0, hi = m->nfields;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->fields[mid].num == num) {
            *idx = mid;
            return &m->fields[mid];
        }
        if (m->fields[mid].num < num)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static int emit_default(struct out *o, const struct kpb_field *f, bool *first, unsigned depth)
{
    int e;

    if (f->kind == KPB_SKIP)
        return 0;
    if (f->flags & KPB_F_INLINE)
        return emit_defaults(o, f->msg, first, depth + 1);
    if (f->flags & (KPB_F_PTR | KPB_F_REPEATED) || f->kind == KPB_MAP || f->kind == KPB_BYTES) {
        /* nil: dropped, or null */
        if (f->flags & KPB_F_OMITEMPTY)
            return 0;
        if ((e = put_key(o, f, first)) < 0)
            return e;
        return PUTS(o, "null");
    }
    if (f->flags & KPB_F_OMITEMPTY && (f->kind == KPB_STRING || f->kind == KPB_BOOL ||
                                       f->kind == KPB_INT32 || f->kind == KPB_INT64))
        return 0;
    if ((e = put_key(o, f, first)) < 0)
        return e;
    return put_zero(o, f->kind, f->msg, depth);
}

/* Message mi of the schema, at nesting depth: -EBADMSG past KPB_MAX_DEPTH, -EINVAL for no such
 * message (or one with more fields than emit_msg tracks). */
static int msg_at(const struct out *o, int mi, unsigned depth, const struct kpb_msg **m)
{
    if (depth > KPB_MAX_DEPTH)
        return -EBADMSG;
    if (mi < 0 || (size_t)mi >= o->s->nmsgs || o->s->msgs[mi].nfields > KPB_MAX_FIELDS)
        return -EINVAL;
    *m = &o->s->msgs[mi];
    return 0;
}

static int emit_defaults(struct out *o, int mi, bool *first, unsigned depth)
{
    const struct kpb_msg *m;
    int e;

    if ((e = msg_at(o, mi, depth, &m)) < 0)
        return e;
    for (size_t i = 0; i < m->nfields; i++)
        if ((e = emit_default(o, &m->fields[i], first, depth)) < 0)
            return e;
    return 0;
}

/* The members of message mi encoded in [p, p + n), written after what *first says is there. */
static int emit_msg(struct out *o, int mi, const uint8_t *p, size_t n, bool *first, unsigned depth)
{
    const struct kpb_msg *m;
    struct rd r = {p, p + n};
    uint64_t seen[KPB_MAX_FIELDS / 64] = {0};
    size_t open = SIZE_MAX; /* the repeated field or map whose array or object is open */
    int e;

    if ((e = msg_at(o, mi, depth, &m)) < 0)
        return e;
    while (r.p < r.end) {
        const struct kpb_field *f;
        uint32_t num;
        unsigned wt;
        size_t fi;
        const uint8_t *vp;
        size_t vl;
        uint64_t v;
        bool was_seen;

        if ((e = rd_tag(&r, &num, &wt)) < 0)
            return e;
        f = find_field(m, num, &fi);
        if (!f || f->kind == KPB_SKIP) {
            if ((e = rd_skip(&r, wt)) < 0)
                return e;
            continue;
        }
        was_seen = seen[fi / 64] >> (fi % 64) & 1;
        seen[fi / 64] |= (uint64_t)1 << (fi % 64);
        if (open != SIZE_MAX && open != fi) {
            if ((e = putc_(o, m->fields[open].kind == KPB_MAP ? '}' : ']')) < 0)
                return e;
            open = SIZE_MAX;
        }
        if (f->flags & KPB_F_REPEATED || f->kind == KPB_MAP) {
            bool packed = f->flags & KPB_F_REPEATED && scalar(f->kind) && wt == WT_LEN;
            if (!packed && wt != wire_of(f->kind == KPB_MAP ? KPB_MSG : f->kind))
                return -EBADMSG;
            if (was_seen && open != fi)
                return -EBADMSG; /* split by another field */
            if (open == fi) {
                if ((e = putc_(o, ',')) < 0)
                    return e;
            } else {
                if ((e = put_key(o, f, first)) < 0 ||
                    (e = putc_(o, f->kind == KPB_MAP ? '{' : '[')) < 0)
                    return e;
                open = fi;
            }
            if (f->kind == KPB_MAP) {
                if ((e = rd_bytes(&r, &vp, &vl)) < 0 || (e = put_entry(o, f, vp, vl, depth)) < 0)
                    return e;
            } else if (packed) {
                struct rd pr;
                if ((e = rd_bytes(&r, &vp, &vl)) < 0)
                    return e;
                pr = (struct rd){vp, vp + vl};
                for (bool one = true; pr.p < pr.end; one = false) {
                    if ((e = rd_varint(&pr, &v)) < 0)
                        return e;
                    if ((!one && (e = putc_(o, ',')) < 0) || (e = put_scalar(o, f->kind, v)) < 0)
                        return e;
                }
            } else if (scalar(f->kind)) {
                if ((e = rd_varint(&r, &v)) < 0 || (e = put_scalar(o, f->kind, v)) < 0)
                    return e;
            } else {
                if ((e = rd_bytes(&r, &vp, &vl)) < 0 ||
                    (e = put_len_value(o, f->kind, f->msg, vp, vl, depth)) < 0)
                    return e;
            }
            continue;
        }
        if (was_seen)
            return -EBADMSG; /* a singular field twice: the server never writes that */
        if (wt != wire_of(f->kind))
            return -EBADMSG;
        if (scalar(f->kind)) {
            if ((e = rd_varint(&r, &v)) < 0)
                return e;
            if (v == 0 && !(f->flags & KPB_F_PTR) && f->flags & KPB_F_OMITEMPTY)
                continue;
            if ((e = put_key(o, f, first)) < 0 || (e = put_scalar(o, f->kind, v)) < 0)
                return e;
            continue;
        }
        if ((e = rd_bytes(&r, &vp, &vl)) < 0)
            return e;
        if (f->flags & KPB_F_INLINE) {
            if ((e = emit_msg(o, f->msg, vp, vl, first, depth + 1)) < 0)
                return e;
            continue;
        }
        if ((f->kind == KPB_STRING || f->kind == KPB_BYTES) && vl == 0 &&
            f->flags & KPB_F_OMITEMPTY && !(f->flags & KPB_F_PTR))
            continue;
        if ((e = put_key(o, f, first)) < 0 ||
            (e = put_len_value(o, f->kind, f->msg, vp, vl, depth)) < 0)
            return e;
    }
    if (open != SIZE_MAX && (e = putc_(o, m->fields[open].kind == KPB_MAP ? '}' : ']')) < 0)
        return e;
    for (size_t i = 0; i < m->nfields; i++)
        if (!(seen[i / 64] >> (i % 64) & 1) &&
            (e = emit_default(o, &m->fields[i], first, depth)) < 0)
            return e;
    return 0;
}

int kpb_to_json(const struct kpb_schema *s, int msg, const uint8_t *p, size_t n, char **out,
                size_t *cap, size_t *len, size_t max_out)
{
    struct out o = {.buf = *out, .len = 0, .cap = *cap, .max = max_out, .s = s};
    bool first = true;
    int e;

    if (!s || msg < 0 || (size_t)msg >= s->nmsgs)
        return -EINVAL;
    e = putc_(&o, '{');
    if (e == 0)
        e = emit_msg(&o, msg, p, n, &first, 0);
    if (e == 0)
        e = putc_(&o, '}');
    *out = o.buf;
    *cap = o.cap;
    if (e < 0)
        return e;
    o.buf[o.len] = '\0';
    *len = o.len;
    return 0;
}

int kpb_to_tree(const struct kpb_schema *s, int msg, const uint8_t *p, size_t n, char **out,
                size_t *cap, size_t *len, size_t max_out, json_t **obj)
{
    int r = kpb_to_json(s, msg, p, n, out, cap, len, max_out);

    *obj = NULL;
    if (r < 0)
        return r;
    r = jsonb_load(*out, *len, jsonb_budget(*len, JSONB_RATIO_KUBE), 0, 0, obj, NULL);
    return r == -EINVAL ? -EBADMSG : r;
}

int kpb_root(const struct kpb_schema *s, const char *group, const char *version, const char *kind)
{
    for (size_t i = 0; s && i < s->nroots; i++) {
        const struct kpb_root *r = &s->roots[i];
        if (strcmp(r->group, group ? group : "") == 0 && strcmp(r->version, version) == 0 &&
            strcmp(r->kind, kind) == 0)
            return r->msg;
    }
    return -ENOENT;
}

/* ---- the envelope --------------------------------------------------------------------------- */

int kpb_unwrap(const uint8_t *p, size_t n, const uint8_t **raw, size_t *raw_len, char *kind,
               size_t kind_size)
{
    /* typeMeta 1 (apiVersion 1, kind 2), raw 2, contentEncoding 3, contentType 4 */
    struct fv f[] = {{1, WT_LEN}, {2, WT_LEN}, {3, WT_LEN}, {4, WT_LEN}};
    struct fv tm[] = {{2, WT_LEN}};
    int e;

    if (kind && kind_size)
        kind[0] = '\0';
    if (n < KPB_MAGIC_LEN || memcmp(p, KPB_MAGIC, KPB_MAGIC_LEN) != 0)
        return -EBADMSG;
    if ((e = rd_small(p + KPB_MAGIC_LEN, n - KPB_MAGIC_LEN, f, 4)) < 0)
        return e;
    if (f[2].n)
        return -EBADMSG; /* a content encoding (none is ever used) */
    if (f[0].seen && (e = rd_small(f[0].p, f[0].n, tm, 1)) < 0)
        return e;
    if (kind && kind_size && tm[0].seen) {
        size_t kl = tm[0].n < kind_size ? tm[0].n : kind_size - 1;
        memcpy(kind, tm[0].p, kl);
        kind[kl] = '\0';
    }
    *raw = f[1].seen ? f[1].p : p + n;
    *raw_len = f[1].n;
    return 0;
}

/* ---- a watch event --------------------------------------------------------------------------- */

int kpb_watch_event(const uint8_t *p, size_t n, const uint8_t **type, size_t *type_len,
                    const uint8_t **obj, size_t *obj_len)
{
    /* metav1.WatchEvent: type 1, object 2 (runtime.RawExtension: raw 1) */
    struct fv ev[] = {{1, WT_LEN}, {2, WT_LEN}};
    struct fv raw[] = {{1, WT_LEN}};
    int e;

    if ((e = rd_small(p, n, ev, 2)) < 0)
        return e;
    if (!ev[0].seen || ev[0].n == 0 || !ev[1].seen)
        return -EBADMSG;
    if ((e = rd_small(ev[1].p, ev[1].n, raw, 1)) < 0)
        return e;
    if (!raw[0].seen)
        return -EBADMSG;
    *type = ev[0].p;
    *type_len = ev[0].n;
    *obj = raw[0].p;
    *obj_len = raw[0].n;
    return 0;
}

/* ---- the list ------------------------------------------------------------------------------- */

enum { L_MAGIC, L_TAG, L_LEN, L_VALUE, L_SKIPVARINT, L_SKIPFIXED };

void kpb_list_init(struct kpb_list *l, size_t max_item, size_t max_rest, kpb_item_fn fn, void *data)
{
    memset(l, 0, sizeof(*l));
    l->fn = fn;
    l->data = data;
    l->max_item = max_item;
    l->max_rest = max_rest;
    l->state = L_MAGIC;
}

void kpb_list_done(struct kpb_list *l)
{
    x_free(l->buf);
    x_free(l->rv);
    x_free(l->cont);
    l->buf = NULL;
    l->rv = l->cont = NULL;
    l->buf_len = l->buf_cap = 0;
}

static int keep(struct kpb_list *l, const uint8_t *p, size_t n)
{
    if (l->buf_len + n > l->buf_cap) {
        size_t cap = l->buf_cap ? l->buf_cap : 4096;
        uint8_t *b;
        while (cap < l->buf_len + n)
            cap *= 2;
        b = x_reallocarray(l->buf, cap, 1);
        if (!b)
            return -ENOMEM;
        l->buf = b;
        l->buf_cap = cap;
    }
    memcpy(l->buf + l->buf_len, p, n);
    l->buf_len += n;
    return 0;
}

/* The ListMeta: resourceVersion 2, continue 3. */
static int list_meta(struct kpb_list *l, const uint8_t *p, size_t n)
{
    struct fv f[] = {{2, WT_LEN}, {3, WT_LEN}};
    char **dst[] = {&l->rv, &l->cont};
    int e;

    if ((e = rd_small(p, n, f, 2)) < 0)
        return e;
    for (size_t i = 0; i < 2; i++) {
        char *v;
        if (!f[i].seen)
            continue;
        if (memchr(f[i].p, '\0', f[i].n))
            return -EBADMSG;
        if (!(v = x_strndup((const char *)f[i].p, f[i].n)))
            return -ENOMEM;
        x_free(*dst[i]);
        *dst[i] = v;
    }
    return 0;
}

/* A field of the list whose value is all there (in l->buf, or at p when it came in one chunk). */
static int field_done(struct kpb_list *l, const uint8_t *p, size_t n)
{
    if (!l->in_raw)
        return 0; /* the envelope's TypeMeta, contentType: not needed */
    if (l->field == 1)
        return list_meta(l, p, n);
    if (l->field == 2) {
        l->items++;
        return l->fn ? l->fn(p, n, l->data) : 0;
    }
    return 0;
}

/* At a field's boundary inside the raw field with none of it left: back to the envelope. */
static void raw_boundary(struct kpb_list *l)
{
    if (l->in_raw && l->raw_left == 0 && l->state == L_TAG && l->vi_shift == 0) {
        l->in_raw = false;
        l->raw_done = true;
    }
}

/* n more bytes of the raw field are read: -EBADMSG when it has fewer left. */
static int raw_take(struct kpb_list *l, size_t n)
{
    if (!l->in_raw)
        return 0;
    if (n > l->raw_left)
        return -EBADMSG;
    l->raw_left -= n;
    return 0;
}

int kpb_list_feed(struct kpb_list *l, const uint8_t *p, size_t n)
{
    const uint8_t *end = p + n;
    int e = 0;

    if (l->err)
        return l->err;
    while (p < end) {
        raw_boundary(l);
        if (l->state == L_MAGIC) {
            if (*p != (uint8_t)KPB_MAGIC[l->magic]) {
                e = -EBADMSG;
                goto out;
            }
            p++;
            if (++l->magic == KPB_MAGIC_LEN)
                l->state = L_TAG;
            continue;
        }
        if (l->state == L_TAG || l->state == L_LEN || l->state == L_SKIPVARINT) {
            uint8_t b = *p++;
            uint64_t v;
            if ((e = raw_take(l, 1)) < 0)
                goto out;
            if (l->vi_shift > 63 || (l->vi_shift == 63 && (b & 0x7f) > 1)) {
                e = -EBADMSG;
                goto out;
            }
            l->vi |= (uint64_t)(b & 0x7f) << l->vi_shift;
            l->vi_shift += 7;
            if (b & 0x80)
                continue;
            v = l->vi;
            l->vi = 0;
            l->vi_shift = 0;
            if (l->state == L_SKIPVARINT) {
                l->state = L_TAG;
                continue;
            }
            if (l->state == L_TAG) {
                unsigned wt = (unsigned)(v & 7);
                if (v >> 3 == 0) {
                    e = -EBADMSG;
                    goto out;
                }
                l->field = (unsigned)(v >> 3 > 0xffff ? 0xffff : v >> 3);
                if (!l->in_raw && l->field == 2 && l->raw_seen) {
                    e = -EBADMSG; /* a second raw field */
                    goto out;
                }
                if (wt == WT_LEN) {
                    l->state = L_LEN;
                } else if (wt == WT_VARINT) {
                    l->state = L_SKIPVARINT;
                } else if (wt == WT_FIXED64 || wt == WT_FIXED32) {
                    l->want = wt == WT_FIXED64 ? 8 : 4;
                    l->state = L_SKIPFIXED;
                } else {
                    e = -EBADMSG;
                    goto out;
                }
                continue;
            }
            /* L_LEN: the value's length */
            if (l->in_raw && v > l->raw_left) {
                e = -EBADMSG;
                goto out;
            }
            if (!l->in_raw && l->field == 2) {
                l->in_raw = l->raw_seen = true; /* the raw field: its bytes are the list's fields */
                l->raw_left = v;
                l->state = L_TAG;
                continue;
            }
            if (l->in_raw && l->field == 2 ? v > l->max_item : v > l->max_rest) {
                e = -E2BIG;
                goto out;
            }
            l->want = v;
            l->buf_len = 0;
            l->state = L_VALUE;
            if (v == 0) {
                l->state = L_TAG;
                if ((e = field_done(l, p, 0)) < 0)
                    goto out;
            }
            continue;
        }
        /* L_VALUE, L_SKIPFIXED */
        size_t take = (size_t)(end - p) < l->want ? (size_t)(end - p) : (size_t)l->want;
        bool collect = l->state == L_VALUE && l->in_raw && (l->field == 1 || l->field == 2);
        if ((e = raw_take(l, take)) < 0)
            goto out;
        if (collect && l->buf_len == 0 && take == l->want) {
            /* all in this chunk: handed over where it lies */
            l->want = 0;
            l->state = L_TAG;
            p += take;
            if ((e = field_done(l, p - take, take)) < 0)
                goto out;
            continue;
        }
        if (collect && (e = keep(l, p, take)) < 0)
            goto out;
        p += take;
        l->want -= take;
        if (l->want == 0) {
            l->state = L_TAG;
            if (collect && (e = field_done(l, l->buf, l->buf_len)) < 0)
                goto out;
            l->buf_len = 0;
        }
    }
    raw_boundary(l);
out:
    if (e < 0)
        l->err = e;
    return e;
}

int kpb_list_finish(struct kpb_list *l, json_t **envelope)
{
    json_t *env, *meta;

    *envelope = NULL;
    if (l->err)
        return l->err;
    raw_boundary(l);
    if (l->state != L_TAG || l->vi_shift || !l->raw_seen || l->in_raw)
        return -EBADMSG; /* truncated, or not a list */
    env = json_object();
    meta = json_object();
    if (!env || !meta || json_object_set_new(env, "metadata", meta) < 0) {
        json_decref(env);
        return -ENOMEM;
    }
    if ((l->rv && json_object_set_new(meta, "resourceVersion", json_string(l->rv)) < 0) ||
        (l->cont && json_object_set_new(meta, "continue", json_string(l->cont)) < 0)) {
        json_decref(env);
        return -ENOMEM;
    }
    *envelope = env;
    return 0;
}
