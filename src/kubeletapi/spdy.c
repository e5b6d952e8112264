/* kla_spdy: see spdy.h. Frame layouts (all integers big-endian):
 *
 *   control: 1 | version(15) | type(16) | flags(8) | length(24) | payload
 *   data:    0 | stream-id(31)          | flags(8) | length(24) | payload
 *
 *   SYN_STREAM    stream-id(31) assoc-id(31) priority(3)+unused(5) slot(8) header-block
 *   SYN_REPLY     stream-id(31) header-block
 *   RST_STREAM    stream-id(31) status(32)
 *   SETTINGS      count(32) { flags(8) id(24) value(32) } * count
 *   PING          id(32)
 *   GOAWAY        last-good-stream-id(31) status(32)
 *   HEADERS       stream-id(31) header-block
 *   WINDOW_UPDATE stream-id(31) delta(31)
 *
 * A header block is count(32) { name-length(32) name value-length(32) value } * count, compressed
 * with zlib primed with the SPDY/3 dictionary; the blocks of one direction form one zlib stream. */
#include "kubeletapi/spdy.h"

#include "common/xalloc.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

/* ---- headers ------------------------------------------------------------------------------- */

int kla_spdy_header_get(const struct kla_spdy_headers *h, const char *name, char *buf, size_t size)
{
    size_t nlen = strlen(name);

    for (size_t i = 0; i < h->n; i++) {
        const struct kla_spdy_header *e = &h->h[i];
        size_t vlen = 0;

        if (e->name_len != nlen || memcmp(e->name, name, nlen) != 0)
            continue;
        while (vlen < e->value_len && e->value[vlen] != '\0')
            vlen++;
        if (vlen >= size)
            return -ENAMETOOLONG;
        memcpy(buf, e->value, vlen);
        buf[vlen] = '\0';
        return (int)vlen;
    }
    return -ENOENT;
}

int kla_spdy_header_add(struct kla_spdy_headers *h, const char *name, const char *value)
{
    if (!name || !value || !name[0])
        return -EINVAL;
    for (const char *p = name; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            return -EINVAL;
    if (h->n >= KLA_SPDY_MAX_HEADERS)
        return -ENOSPC;
    h->h[h->n++] = (struct kla_spdy_header){name, strlen(name), value, strlen(value)};
    return 0;
}

/* ---- the dictionary ------------------------------------------------------------------------ */

/* The SPDY/3 dictionary (draft 3, "Compression"): these words, each preceded by its length as a
 * 32-bit big-endian integer, then the tail as it is. */
static const char *const dict_words[] = {"options",
                                         "head",
                                         "post",
                                         "put",
                                         "delete",
                                         "trace",
                                         "accept",
                                         "accept-charset",
                                         "accept-encoding",
                                         "accept-language",
                                         "accept-ranges",
                                         "age",
                                         "allow",
                                         "authorization",
                                         "cache-control",
                                         "connection",
                                         "content-base",
                                         "content-encoding",
                                         "content-language",
                                         "content-length",
                                         "content-location",
                                         "content-md5",
                                         "content-range",
                                         "content-type",
                                         "date",
                                         "etag",
                                         "expect",
                                         "expires",
                                         "from",
                                         "host",
                                         "if-match",
                                         "if-modified-since",
                                         "if-none-match",
                                         "if-range",
                                         "if-unmodified-since",
                                         "last-modified",
                                         "location",
                                         "max-forwards",
                                         "pragma",
                                         "proxy-authenticate",
                                         "proxy-authorization",
                                         "range",
                                         "referer",
                                         "retry-after",
                                         "server",
                                         "te",
                                         "trailer",
                                         "transfer-encoding",
                                         "upgrade",
                                         "user-agent",
                                         "vary",
                                         "via",
                                         "warning",
                                         "www-authenticate",
                                         "method",
                                         "get",
                                         "status",
                                         "200 OK",
                                         "version",
                                         "HTTP/1.1",
                                         "url",
                                         "public",
                                         "set-cookie",
                                         "keep-alive",
                                         "origin"};
static const char dict_tail[] =
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 "
    "Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 "
    "Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, "
    "Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,application/xml,"
    "application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age=gzip,deflate,sdch"
    "charset=utf-8charset=iso-8859-1,utf-,*,enq=0.";

/* Stays at file scope: a constant of the protocol, the same for every agent, built once from the
 * readable word list above (as a literal it would be 1.4 kB of length-prefixed bytes). */
static uint8_t dict[KLA_SPDY_DICT_LEN];
static bool dict_built;

const uint8_t *kla_spdy_dictionary(void)
{
    size_t off = 0;

    if (dict_built)
        return dict;
    for (size_t i = 0; i < sizeof(dict_words) / sizeof(dict_words[0]); i++) {
        size_t n = strlen(dict_words[i]);

        dict[off++] = 0;
        dict[off++] = 0;
        dict[off++] = 0;
        dict[off++] = (uint8_t)n;
        memcpy(dict + off, dict_words[i], n);
        off += n;
    }
    memcpy(dict + off, dict_tail, sizeof(dict_tail) - 1);
    dict_built = true;
    return dict;
}

/* ---- codec --------------------------------------------------------------------------------- */

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

int kla_spdy_frame_parse(const uint8_t *buf, size_t len, size_t max_payload,
                         struct kla_spdy_frame *f, size_t *ret_consumed)
{
    uint32_t w0, w1, length;

    if (len < KLA_SPDY_HEADER_LEN) {
        *ret_consumed = KLA_SPDY_HEADER_LEN;
        return -EAGAIN;
    }
    w0 = get32(buf);
    w1 = get32(buf + 4);
    length = w1 & 0xffffff;
    if (length > max_payload)
        return -E2BIG;
    if (len < KLA_SPDY_HEADER_LEN + (size_t)length) {
        *ret_consumed = KLA_SPDY_HEADER_LEN + (size_t)length;
        return -EAGAIN;
    }
    memset(f, 0, sizeof(*f));
    f->control = (w0 & 0x80000000u) != 0;
    if (f->control) {
        f->version = (uint16_t)((w0 >> 16) & 0x7fff);
        f->type = (uint16_t)(w0 & 0xffff);
    } else {
        f->type = KLA_SPDY_DATA;
        f->stream_id = w0 & 0x7fffffff;
    }
    f->flags = (uint8_t)(w1 >> 24);
    f->length = length;
    f->payload = buf + KLA_SPDY_HEADER_LEN;
    *ret_consumed = KLA_SPDY_HEADER_LEN + (size_t)length;
    return 0;
}

static bool valid_name(const uint8_t *p, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (p[i] == '\0' || (p[i] >= 'A' && p[i] <= 'Z'))
            return false;
    return true;
}

static bool valid_value(const uint8_t *p, size_t n)
{
    /* NUL separates values: none at either end, never two in a row. */
    if (n == 0)
        return true;
    if (p[0] == '\0' || p[n - 1] == '\0')
        return false;
    for (size_t i = 1; i < n; i++)
        if (p[i] == '\0' && p[i - 1] == '\0')
            return false;
    return true;
}

int kla_spdy_block_decode(const uint8_t *block, size_t len, size_t max_headers, size_t max_name,
                          size_t max_value, struct kla_spdy_headers *h)
{
    size_t off = 4;
    uint32_t count;

    h->n = 0;
    if (max_headers > KLA_SPDY_MAX_HEADERS)
        max_headers = KLA_SPDY_MAX_HEADERS;
    if (len < 4)
        return -EPROTO;
    count = get32(block);
    if (count > max_headers)
        return -E2BIG;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t nlen, vlen;
        const uint8_t *name, *value;

        if (len - off < 4)
            return -EPROTO;
        nlen = get32(block + off);
        off += 4;
        if (nlen > max_name)
            return -E2BIG;
        if (len - off < nlen)
            return -EPROTO;
        name = block + off;
        off += nlen;
        if (len - off < 4)
            return -EPROTO;
        vlen = get32(block + off);
        off += 4;
        if (vlen > max_value)
            return -E2BIG;
        if (len - off < vlen)
            return -EPROTO;
        value = block + off;
        off += vlen;
        if (!valid_name(name, nlen) || !valid_value(value, vlen))
            return -EPROTO;
        for (size_t j = 0; j < h->n; j++)
            if (h->h[j].name_len == nlen && memcmp(h->h[j].name, name, nlen) == 0)
                return -EPROTO; /* duplicate name */
        h->h[h->n++] =
            (struct kla_spdy_header){(const char *)name, nlen, (const char *)value, vlen};
    }
    if (off != len)
        return -EPROTO;
    return 0;
}

int kla_spdy_block_encode(const struct kla_spdy_headers *h, uint8_t *out, size_t size)
{
    size_t off = 4;

    if (size < 4)
        return -ENOSPC;
    put32(out, (uint32_t)h->n);
    for (size_t i = 0; i < h->n; i++) {
        const struct kla_spdy_header *e = &h->h[i];

        if (!valid_name((const uint8_t *)e->name, e->name_len))
            return -EINVAL;
        if (e->name_len > UINT32_MAX || e->value_len > UINT32_MAX ||
            size - off < 8 + e->name_len + e->value_len)
            return -ENOSPC;
        put32(out + off, (uint32_t)e->name_len);
        off += 4;
        memcpy(out + off, e->name, e->name_len);
        off += e->name_len;
        put32(out + off, (uint32_t)e->value_len);
        off += 4;
        memcpy(out + off, e->value, e->value_len);
        off += e->value_len;
    }
    if (off > INT32_MAX)
        return -ENOSPC;
    return (int)off;
}

/* ---- session ------------------------------------------------------------------------------- */

struct stream {
    uint32_t id;
    bool used;
    bool local_fin, remote_fin;
    bool replied; /* a SYN_REPLY was received (streams we opened) */
    int64_t send_window;
    uint32_t recv_unacked;
};

struct kla_spdy_session {
    bool server;
    bool dead; /* a session error happened: nothing more in or out */
    bool goaway_sent, goaway_received;
    bool enforce; /* the peer does flow control */
    struct kla_spdy_limits lim;
    struct kla_spdy_callbacks cb;
    void *data;
    z_stream zin, zout;
    bool zin_ok, zout_ok;
    uint8_t *block; /* decompressed header block (max_header_block + 1) */
    uint8_t *in;    /* a partial frame (max_frame + 8) */
    size_t in_len;
    struct stream *streams; /* max_streams entries */
    size_t nopen;
    uint32_t next_id;      /* our next stream ID */
    uint32_t last_peer_id; /* highest stream ID the peer opened */
    int64_t peer_initial_window;
    int64_t send_session_window;
    uint32_t session_recv_target, session_unacked;
    struct kla_spdy_stats st;
};

static void limits_default(struct kla_spdy_limits *l, const struct kla_spdy_limits *in)
{
    *l = in ? *in : (struct kla_spdy_limits){0};
    if (!l->max_frame)
        l->max_frame = 1u << 20;
    if (l->max_frame > KLA_SPDY_MAX_LENGTH)
        l->max_frame = KLA_SPDY_MAX_LENGTH;
    if (!l->max_header_block)
        l->max_header_block = 64u << 10;
    if (!l->max_headers || l->max_headers > KLA_SPDY_MAX_HEADERS)
        l->max_headers = KLA_SPDY_MAX_HEADERS;
    if (!l->max_name)
        l->max_name = 256;
    if (!l->max_value)
        l->max_value = 8192;
    if (!l->max_streams)
        l->max_streams = 16;
    if (!l->recv_window || l->recv_window > KLA_SPDY_MAX_WINDOW)
        l->recv_window = 256u << 10;
    if (!l->max_data_frame || l->max_data_frame > KLA_SPDY_MAX_LENGTH)
        l->max_data_frame = 32u << 10;
}

static struct stream *find(const struct kla_spdy_session *s, uint32_t id)
{
    if (id == 0)
        return NULL;
    for (size_t i = 0; i < s->lim.max_streams; i++)
        if (s->streams[i].used && s->streams[i].id == id)
            return &s->streams[i];
    return NULL;
}

static struct stream *add_stream(struct kla_spdy_session *s, uint32_t id)
{
    for (size_t i = 0; i < s->lim.max_streams; i++) {
        struct stream *st = &s->streams[i];

        if (st->used)
            continue;
        *st = (struct stream){.id = id, .used = true, .send_window = s->peer_initial_window};
        s->nopen++;
        return st;
    }
    return NULL;
}

static void remove_stream(struct kla_spdy_session *s, struct stream *st)
{
    if (!st || !st->used)
        return;
    st->used = false;
    s->nopen--;
}

static void maybe_forget(struct kla_spdy_session *s, struct stream *st)
{
    if (st && st->local_fin && st->remote_fin)
        remove_stream(s, st);
}

static int emit(struct kla_spdy_session *s, const uint8_t *buf, size_t len)
{
    int r = s->cb.output(s->data, buf, len);

    if (r < 0) {
        s->dead = true;
        return r;
    }
    s->st.frames_out++;
    return 0;
}

static void control_header(uint8_t *p, uint16_t type, uint8_t flags, uint32_t length)
{
    put32(p, 0x80000000u | (uint32_t)KLA_SPDY_VERSION << 16 | type);
    put32(p + 4, (uint32_t)flags << 24 | (length & 0xffffff));
}

static int send_simple(struct kla_spdy_session *s, uint16_t type, uint32_t a, uint32_t b)
{
    uint8_t f[16];

    if (s->dead)
        return -EPIPE;
    control_header(f, type, 0, 8);
    put32(f + 8, a);
    put32(f + 12, b);
    return emit(s, f, sizeof(f));
}

int kla_spdy_session_new(bool server, const struct kla_spdy_limits *lim,
                         const struct kla_spdy_callbacks *cb, void *data,
                         struct kla_spdy_session **ret)
{
    struct kla_spdy_session *s;
    uint8_t settings[20];
    int r = -ENOMEM;

    if (!cb || !cb->output || !ret)
        return -EINVAL;
    s = x_calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->server = server;
    limits_default(&s->lim, lim);
    s->cb = *cb;
    s->data = data;
    s->next_id = server ? 2 : 1;
    s->peer_initial_window = KLA_SPDY_INITIAL_WINDOW;
    s->send_session_window = KLA_SPDY_INITIAL_WINDOW;
    s->session_recv_target =
        s->lim.recv_window > KLA_SPDY_MAX_WINDOW / 4 ? KLA_SPDY_MAX_WINDOW : s->lim.recv_window * 4;
    if (s->session_recv_target < KLA_SPDY_INITIAL_WINDOW)
        s->session_recv_target = KLA_SPDY_INITIAL_WINDOW;
    s->block = x_malloc(s->lim.max_header_block + 1);
    s->in = x_malloc(s->lim.max_frame + KLA_SPDY_HEADER_LEN);
    s->streams = x_calloc(s->lim.max_streams, sizeof(*s->streams));
    if (!s->block || !s->in || !s->streams)
        goto fail;
    if (inflateInit(&s->zin) != Z_OK)
        goto fail;
    s->zin_ok = true;
    if (deflateInit(&s->zout, Z_DEFAULT_COMPRESSION) != Z_OK)
        goto fail;
    s->zout_ok = true;
    if (deflateSetDictionary(&s->zout, kla_spdy_dictionary(), KLA_SPDY_DICT_LEN) != Z_OK)
        goto fail;
    /* Announce our window: the peer learns that we do flow control. */
    control_header(settings, KLA_SPDY_SETTINGS, 0, 12);
    put32(settings + 8, 1);
    put32(settings + 12, KLA_SPDY_SETTINGS_INITIAL_WINDOW_SIZE);
    put32(settings + 16, s->lim.recv_window);
    r = emit(s, settings, sizeof(settings));
    if (r < 0)
        goto fail;
    if (s->session_recv_target > KLA_SPDY_INITIAL_WINDOW) {
        r = send_simple(s, KLA_SPDY_WINDOW_UPDATE, 0,
                        s->session_recv_target - KLA_SPDY_INITIAL_WINDOW);
        if (r < 0)
            goto fail;
    }
    *ret = s;
    return 0;
fail:
    kla_spdy_session_free(s);
    return r;
}

struct kla_spdy_session *kla_spdy_session_free(struct kla_spdy_session *s)
{
    if (!s)
        return NULL;
    if (s->zin_ok)
        inflateEnd(&s->zin);
    if (s->zout_ok)
        deflateEnd(&s->zout);
    x_free(s->block);
    x_free(s->in);
    x_free(s->streams);
    x_free(s);
    return NULL;
}

/* Inflates one compressed header block into s->block; returns its length or a negative errno. */
static int inflate_block(struct kla_spdy_session *s, const uint8_t *p, size_t n, size_t *ret_len)
{
    z_stream *z = &s->zin;
    size_t cap = s->lim.max_header_block + 1; /* one more: detects a block over the bound */

    z->next_in = (Bytef *)(uintptr_t)p;
    z->avail_in = (uInt)n;
    z->next_out = s->block;
    z->avail_out = (uInt)cap;
    while (z->avail_in > 0) {
        int zr = inflate(z, Z_SYNC_FLUSH);

        if (zr == Z_NEED_DICT) {
            if (inflateSetDictionary(z, kla_spdy_dictionary(), KLA_SPDY_DICT_LEN) != Z_OK)
                return -EPROTO;
            continue;
        }
        if (zr == Z_MEM_ERROR)
            return -ENOMEM;
        if (zr != Z_OK)
            return -EPROTO; /* data error, stream end, or no progress possible */
        if (z->avail_out == 0)
            return -E2BIG;
    }
    *ret_len = cap - z->avail_out;
    if (*ret_len > s->lim.max_header_block)
        return -E2BIG;
    return 0;
}

static int decode_block(struct kla_spdy_session *s, const uint8_t *p, size_t n,
                        struct kla_spdy_headers *h)
{
    size_t blen = 0;
    int r = inflate_block(s, p, n, &blen);

    if (r < 0)
        return r;
    return kla_spdy_block_decode(s->block, blen, s->lim.max_headers, s->lim.max_name,
                                 s->lim.max_value, h);
}

/* Sends a control frame whose payload is `pre` (pre_len bytes) and a compressed header block. */
static int send_with_block(struct kla_spdy_session *s, uint16_t type, uint8_t flags,
                           const uint8_t *pre, size_t pre_len, const struct kla_spdy_headers *h)
{
    size_t raw_cap = 4, cap;
    uint8_t *raw = NULL, *frame = NULL;
    z_stream *z = &s->zout;
    int n, r;

    for (size_t i = 0; i < h->n; i++)
        raw_cap += 8 + h->h[i].name_len + h->h[i].value_len;
    if (raw_cap > s->lim.max_header_block)
        return -E2BIG;
    cap = KLA_SPDY_HEADER_LEN + pre_len + raw_cap + raw_cap / 8 + 64;
    raw = x_malloc(raw_cap);
    frame = x_malloc(cap);
    r = -ENOMEM;
    if (!raw || !frame)
        goto out;
    n = kla_spdy_block_encode(h, raw, raw_cap);
    if (n < 0) {
        r = n;
        goto out;
    }
    memcpy(frame + KLA_SPDY_HEADER_LEN, pre, pre_len);
    z->next_in = raw;
    z->avail_in = (uInt)n;
    z->next_out = frame + KLA_SPDY_HEADER_LEN + pre_len;
    z->avail_out = (uInt)(cap - KLA_SPDY_HEADER_LEN - pre_len);
    if (deflate(z, Z_SYNC_FLUSH) != Z_OK || z->avail_in != 0 || z->avail_out == 0) {
        /* The bound above is generous (incompressible input grows by a few bytes): failing here
         * leaves the compressor out of step with the peer, so the session cannot go on. */
        s->dead = true;
        r = -EIO;
        goto out;
    }
    {
        size_t len = cap - z->avail_out - KLA_SPDY_HEADER_LEN;

        control_header(frame, type, flags, (uint32_t)len);
        r = emit(s, frame, KLA_SPDY_HEADER_LEN + len);
    }
out:
    x_free(raw);
    x_free(frame);
    return r;
}

/* A session error: GOAWAY (if still possible), then nothing more. */
static int session_error(struct kla_spdy_session *s, int err)
{
    if (!s->dead && !s->goaway_sent) {
        s->goaway_sent = true;
        (void)send_simple(s, KLA_SPDY_GOAWAY, s->last_peer_id, KLA_SPDY_GOAWAY_PROTOCOL_ERROR);
    }
    s->dead = true;
    return err;
}

static bool peer_parity(const struct kla_spdy_session *s, uint32_t id)
{
    /* The client opens odd streams, the server even ones. */
    return s->server ? (id & 1) == 1 : (id & 1) == 0;
}

static int on_syn_stream(struct kla_spdy_session *s, const struct kla_spdy_frame *f)
{
    struct kla_spdy_headers h;
    struct stream *st;
    uint32_t id;
    int r;

    if (f->length < 10)
        return -EPROTO;
    id = get32(f->payload) & 0x7fffffff;
    /* The block is always inflated: the zlib stream must stay in step even for refused streams. */
    r = decode_block(s, f->payload + 10, f->length - 10, &h);
    if (r < 0)
        return r;
    if (id == 0)
        return -EPROTO;
    if (!peer_parity(s, id) || id <= s->last_peer_id) {
        /* A stream ID out of order or of the wrong parity: refuse that stream only. */
        s->st.dropped_frames++;
        (void)send_simple(s, KLA_SPDY_RST_STREAM, id, KLA_SPDY_PROTOCOL_ERROR);
        return s->dead ? -EPIPE : 0;
    }
    s->last_peer_id = id;
    if (s->goaway_sent || s->nopen >= s->lim.max_streams) {
        s->st.refused_streams++;
        (void)send_simple(s, KLA_SPDY_RST_STREAM, id, KLA_SPDY_REFUSED_STREAM);
        return s->dead ? -EPIPE : 0;
    }
    st = add_stream(s, id);
    if (!st)
        return -ENOMEM;
    st->remote_fin = (f->flags & KLA_SPDY_FLAG_FIN) != 0;
    st->local_fin = (f->flags & KLA_SPDY_FLAG_UNIDIRECTIONAL) != 0;
    st->replied = true;
    if (s->cb.syn_stream) {
        r = s->cb.syn_stream(s->data, id, &h, st->remote_fin);
        if (r < 0)
            return r;
    }
    maybe_forget(s, find(s, id));
    return 0;
}

static int on_reply_or_headers(struct kla_spdy_session *s, const struct kla_spdy_frame *f)
{
    struct kla_spdy_headers h;
    struct stream *st;
    bool fin = (f->flags & KLA_SPDY_FLAG_FIN) != 0;
    uint32_t id;
    int r;

    if (f->length < 4)
        return -EPROTO;
    id = get32(f->payload) & 0x7fffffff;
    r = decode_block(s, f->payload + 4, f->length - 4, &h);
    if (r < 0)
        return r;
    st = find(s, id);
    if (!st || st->remote_fin || (f->type == KLA_SPDY_SYN_REPLY && st->replied)) {
        s->st.dropped_frames++;
        return 0;
    }
    if (f->type == KLA_SPDY_SYN_REPLY)
        st->replied = true;
    if (fin)
        st->remote_fin = true;
    if (f->type == KLA_SPDY_SYN_REPLY && s->cb.syn_reply)
        r = s->cb.syn_reply(s->data, id, &h, fin);
    else if (f->type == KLA_SPDY_HEADERS && s->cb.headers)
        r = s->cb.headers(s->data, id, &h, fin);
    if (r < 0)
        return r;
    maybe_forget(s, find(s, id));
    return 0;
}

static int on_data(struct kla_spdy_session *s, const struct kla_spdy_frame *f)
{
    struct stream *st = find(s, f->stream_id);
    bool fin = (f->flags & KLA_SPDY_FLAG_FIN) != 0;
    int r = 0;

    if (f->stream_id == 0)
        return -EPROTO;
    s->st.data_in += f->length;
    if (!st || st->remote_fin) {
        s->st.dropped_frames++;
        return 0;
    }
    if (fin)
        st->remote_fin = true;
    if (s->cb.data)
        r = s->cb.data(s->data, f->stream_id, f->payload, f->length, fin);
    if (r < 0)
        return r;
    maybe_forget(s, find(s, f->stream_id));
    return 0;
}

static void open_window(struct kla_spdy_session *s, struct stream *st, int64_t delta)
{
    int64_t *w = st ? &st->send_window : &s->send_session_window;

    *w += delta;
    if (*w > KLA_SPDY_MAX_WINDOW)
        *w = KLA_SPDY_MAX_WINDOW;
}

static int on_control(struct kla_spdy_session *s, const struct kla_spdy_frame *f)
{
    const uint8_t *p = f->payload;

    if (f->version != KLA_SPDY_VERSION)
        return -EPROTO;
    switch (f->type) {
    case KLA_SPDY_SYN_STREAM:
        return on_syn_stream(s, f);
    case KLA_SPDY_SYN_REPLY:
    case KLA_SPDY_HEADERS:
        return on_reply_or_headers(s, f);
    case KLA_SPDY_RST_STREAM: {
        uint32_t id;
        struct stream *st;

        if (f->length != 8)
            return -EPROTO;
        id = get32(p) & 0x7fffffff;
        st = find(s, id);
        if (!st) {
            s->st.dropped_frames++;
            return 0;
        }
        remove_stream(s, st);
        if (s->cb.rst)
            s->cb.rst(s->data, id, get32(p + 4));
        return 0;
    }
    case KLA_SPDY_SETTINGS: {
        uint32_t count;

        if (f->length < 4)
            return -EPROTO;
        count = get32(p);
        if (count > (f->length - 4) / 8 || f->length != 4 + (size_t)count * 8)
            return -EPROTO;
        for (uint32_t i = 0; i < count; i++) {
            uint32_t idf = get32(p + 4 + 8 * i), v = get32(p + 8 + 8 * i);

            if ((idf & 0xffffff) != KLA_SPDY_SETTINGS_INITIAL_WINDOW_SIZE)
                continue;
            if (v > KLA_SPDY_MAX_WINDOW)
                return -EPROTO;
            for (size_t j = 0; j < s->lim.max_streams; j++)
                if (s->streams[j].used)
                    open_window(s, &s->streams[j], (int64_t)v - s->peer_initial_window);
            s->peer_initial_window = v;
            s->enforce = true;
            if (s->cb.window)
                s->cb.window(s->data, 0);
        }
        return 0;
    }
    case KLA_SPDY_PING: {
        uint32_t id;

        if (f->length != 4)
            return -EPROTO;
        id = get32(p);
        /* The client's pings are odd, the server's even: echo the peer's, ignore answers. */
        if (((id & 1) == 1) == s->server) {
            uint8_t ping[12];

            control_header(ping, KLA_SPDY_PING, 0, 4);
            put32(ping + 8, id);
            return emit(s, ping, sizeof(ping));
        }
        return 0;
    }
    case KLA_SPDY_GOAWAY:
        if (f->length != 8)
            return -EPROTO;
        s->goaway_received = true;
        if (s->cb.goaway)
            s->cb.goaway(s->data, get32(p) & 0x7fffffff, get32(p + 4));
        return 0;
    case KLA_SPDY_WINDOW_UPDATE: {
        uint32_t id, delta;
        struct stream *st = NULL;

        if (f->length != 8)
            return -EPROTO;
        id = get32(p) & 0x7fffffff;
        delta = get32(p + 4) & 0x7fffffff;
        if (delta == 0)
            return -EPROTO;
        s->enforce = true;
        if (id != 0) {
            st = find(s, id);
            if (!st) {
                s->st.dropped_frames++;
                return 0;
            }
        }
        open_window(s, st, delta);
        if (s->cb.window)
            s->cb.window(s->data, id);
        return 0;
    }
    default:
        return 0; /* unknown control frames are ignored (draft 3) */
    }
}

static int process(struct kla_spdy_session *s, const uint8_t *buf, size_t len)
{
    struct kla_spdy_frame f;
    size_t used;
    int r = kla_spdy_frame_parse(buf, len, s->lim.max_frame, &f, &used);

    if (r < 0)
        return r == -EAGAIN ? -EPROTO : r;
    s->st.frames_in++;
    return f.control ? on_control(s, &f) : on_data(s, &f);
}

int kla_spdy_feed(struct kla_spdy_session *s, const uint8_t *buf, size_t len)
{
    while (len > 0) {
        struct kla_spdy_frame f;
        size_t need = 0, take;
        int r;

        if (s->dead)
            return -EPIPE;
        if (s->in_len == 0) {
            r = kla_spdy_frame_parse(buf, len, s->lim.max_frame, &f, &need);
            if (r == 0) {
                r = process(s, buf, need);
                if (r < 0)
                    return session_error(s, r);
                buf += need;
                len -= need;
                continue;
            }
            if (r != -EAGAIN)
                return session_error(s, r);
        } else {
            r = kla_spdy_frame_parse(s->in, s->in_len, s->lim.max_frame, &f, &need);
            if (r != -EAGAIN && r != 0)
                return session_error(s, r);
        }
        /* Not a whole frame: buffer up to what the frame (or its header) needs. */
        take = need - s->in_len;
        if (take > len)
            take = len;
        memcpy(s->in + s->in_len, buf, take);
        s->in_len += take;
        buf += take;
        len -= take;
        r = kla_spdy_frame_parse(s->in, s->in_len, s->lim.max_frame, &f, &need);
        if (r == -EAGAIN)
            continue;
        if (r < 0)
            return session_error(s, r);
        s->in_len = 0;
        r = process(s, s->in, need);
        if (r < 0)
            return session_error(s, r);
    }
    return s->dead ? -EPIPE : 0;
}

int kla_spdy_syn_stream(struct kla_spdy_session *s, const struct kla_spdy_headers *h, bool fin,
                        uint32_t *ret_id)
{
    uint8_t pre[10] = {0};
    struct stream *st;
    uint32_t id;
    int r;

    if (s->dead)
        return -EPIPE;
    if (s->goaway_sent || s->goaway_received)
        return -ESHUTDOWN;
    if (s->next_id > 0x7fffffff || s->nopen >= s->lim.max_streams)
        return -ENOSPC;
    id = s->next_id;
    put32(pre, id);
    r = send_with_block(s, KLA_SPDY_SYN_STREAM, fin ? KLA_SPDY_FLAG_FIN : 0, pre, sizeof(pre), h);
    if (r < 0)
        return r;
    s->next_id += 2;
    st = add_stream(s, id);
    if (!st)
        return -ENOMEM; /* cannot happen: checked above */
    st->local_fin = fin;
    if (ret_id)
        *ret_id = id;
    return 0;
}

int kla_spdy_syn_reply(struct kla_spdy_session *s, uint32_t id, const struct kla_spdy_headers *h,
                       bool fin)
{
    struct stream *st = find(s, id);
    uint8_t pre[4];
    int r;

    if (s->dead)
        return -EPIPE;
    if (!st)
        return -ENOENT;
    if (st->local_fin)
        return -EPIPE;
    put32(pre, id);
    r = send_with_block(s, KLA_SPDY_SYN_REPLY, fin ? KLA_SPDY_FLAG_FIN : 0, pre, sizeof(pre), h);
    if (r < 0)
        return r;
    if (fin) {
        st->local_fin = true;
        maybe_forget(s, st);
    }
    return 0;
}

size_t kla_spdy_send_window(const struct kla_spdy_session *s, uint32_t id)
{
    const struct stream *st = find(s, id);
    int64_t w;

    if (!st || st->local_fin || s->dead)
        return 0;
    if (!s->enforce)
        return SIZE_MAX;
    w = st->send_window < s->send_session_window ? st->send_window : s->send_session_window;
    return w > 0 ? (size_t)w : 0;
}

int kla_spdy_data(struct kla_spdy_session *s, uint32_t id, const void *buf, size_t len, bool fin)
{
    struct stream *st = find(s, id);
    const uint8_t *p = buf;
    size_t allowed, taken = 0;
    uint8_t hdr[KLA_SPDY_HEADER_LEN];

    if (s->dead)
        return -EPIPE;
    if (!st)
        return -ENOENT;
    if (st->local_fin)
        return -EPIPE;
    if (len > INT32_MAX)
        len = INT32_MAX;
    allowed = kla_spdy_send_window(s, id);
    if (len > allowed) {
        len = allowed;
        fin = false;
    }
    do {
        size_t n = len - taken;
        bool last;
        uint8_t *frame;
        int r;

        if (n > s->lim.max_data_frame)
            n = s->lim.max_data_frame;
        last = taken + n == len;
        if (n == 0 && !(last && fin))
            break;
        put32(hdr, id & 0x7fffffff);
        put32(hdr + 4, (uint32_t)(last && fin ? KLA_SPDY_FLAG_FIN : 0) << 24 | (uint32_t)n);
        frame = x_malloc(sizeof(hdr) + n);
        if (!frame)
            return taken ? (int)taken : -ENOMEM;
        memcpy(frame, hdr, sizeof(hdr));
        if (n)
            memcpy(frame + sizeof(hdr), p + taken, n);
        r = emit(s, frame, sizeof(hdr) + n);
        x_free(frame);
        if (r < 0)
            return r;
        taken += n;
        s->st.data_out += n;
        st->send_window -= (int64_t)n;
        s->send_session_window -= (int64_t)n;
    } while (taken < len);
    if (fin && taken == len) {
        st->local_fin = true;
        maybe_forget(s, st);
    }
    return (int)taken;
}

int kla_spdy_rst(struct kla_spdy_session *s, uint32_t id, uint32_t status)
{
    struct stream *st = find(s, id);
    int r;

    if (s->dead)
        return -EPIPE;
    r = send_simple(s, KLA_SPDY_RST_STREAM, id & 0x7fffffff, status);
    if (r < 0)
        return r;
    if (!st)
        return -ENOENT;
    remove_stream(s, st);
    return 0;
}

int kla_spdy_ping(struct kla_spdy_session *s, uint32_t id)
{
    uint8_t ping[12];

    if (s->dead)
        return -EPIPE;
    control_header(ping, KLA_SPDY_PING, 0, 4);
    put32(ping + 8, id);
    return emit(s, ping, sizeof(ping));
}

int kla_spdy_goaway(struct kla_spdy_session *s, uint32_t status)
{
    if (s->dead)
        return -EPIPE;
    if (s->goaway_sent)
        return 0;
    s->goaway_sent = true;
    return send_simple(s, KLA_SPDY_GOAWAY, s->last_peer_id, status);
}

int kla_spdy_consumed(struct kla_spdy_session *s, uint32_t id, size_t n)
{
    struct stream *st = find(s, id);
    int r;

    if (s->dead)
        return -EPIPE;
    if (n > KLA_SPDY_MAX_WINDOW)
        n = KLA_SPDY_MAX_WINDOW;
    s->session_unacked += (uint32_t)n;
    if (s->session_unacked >= s->session_recv_target / 2) {
        r = send_simple(s, KLA_SPDY_WINDOW_UPDATE, 0, s->session_unacked);
        if (r < 0)
            return r;
        s->session_unacked = 0;
    }
    if (!st || st->remote_fin)
        return 0; /* nothing more will come on it */
    st->recv_unacked += (uint32_t)n;
    if (st->recv_unacked >= s->lim.recv_window / 2) {
        r = send_simple(s, KLA_SPDY_WINDOW_UPDATE, id, st->recv_unacked);
        if (r < 0)
            return r;
        st->recv_unacked = 0;
    }
    return 0;
}

bool kla_spdy_stream_open(const struct kla_spdy_session *s, uint32_t id)
{
    return find(s, id) != NULL;
}

bool kla_spdy_flow_enforced(const struct kla_spdy_session *s)
{
    return s->enforce;
}

void kla_spdy_stats(const struct kla_spdy_session *s, struct kla_spdy_stats *ret)
{
    *ret = s->st;
    ret->open_streams = s->nopen;
}
