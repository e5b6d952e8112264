/* libFuzzer harness for the kubelet API's SPDY/3.1 codec (src/kubeletapi/spdy.c): everything a
 * peer can send on an upgraded exec connection. The first byte chooses the target:
 *   'b': a header block, decoded as it is (no compression);
 *   anything else: the bytes are fed to a server session (and again byte-group by byte-group to a
 *   second one, which must reach the same verdict), whose callbacks answer the way the exec server
 *   does (reply to every stream, send data back, reset some).
 * Invariants: decoded headers respect the bounds and are lower case; a session error is one of the
 * documented errnos and is final; the two feeding patterns agree; output never exceeds what the
 * session announced. The unit is included so that it is built with coverage instrumentation. */
#include "../src/kubeletapi/spdy.c"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct out {
    size_t bytes;
    struct kla_spdy_session *s;
};

static int f_output(void *d, const uint8_t *buf, size_t len)
{
    struct out *o = d;

    (void)buf;
    o->bytes += len;
    return o->bytes > (64u << 20) ? -ENOBUFS : 0;
}

static void check_headers(const struct kla_spdy_headers *h, size_t max_headers)
{
    if (h->n > max_headers)
        __builtin_trap();
    for (size_t i = 0; i < h->n; i++) {
        const struct kla_spdy_header *e = &h->h[i];

        if (e->name_len == 0 || e->name_len > 256 || e->value_len > 8192)
            __builtin_trap();
        for (size_t k = 0; k < e->name_len; k++)
            if (e->name[k] >= 'A' && e->name[k] <= 'Z')
                __builtin_trap();
    }
}

static int f_syn(void *d, uint32_t id, const struct kla_spdy_headers *h, bool fin)
{
    struct out *o = d;
    struct kla_spdy_headers none = {.n = 0};
    char v[32];

    check_headers(h, KLA_SPDY_MAX_HEADERS);
    (void)fin;
    if (id == 0 || !(id & 1))
        __builtin_trap(); /* clients open odd streams */
    (void)kla_spdy_header_get(h, "streamtype", v, sizeof(v));
    if (id % 7 == 0)
        return kla_spdy_rst(o->s, id, KLA_SPDY_REFUSED_STREAM) == -EPIPE ? -EPIPE : 0;
    if (kla_spdy_syn_reply(o->s, id, &none, false) < 0)
        return -EPIPE;
    return 0;
}

static int f_headers(void *d, uint32_t id, const struct kla_spdy_headers *h, bool fin)
{
    (void)d;
    (void)id;
    (void)fin;
    check_headers(h, KLA_SPDY_MAX_HEADERS);
    return 0;
}

static int f_data(void *d, uint32_t id, const uint8_t *buf, size_t len, bool fin)
{
    struct out *o = d;
    int n;

    if (len > (1u << 20))
        __builtin_trap();
    (void)kla_spdy_consumed(o->s, id, len);
    if (kla_spdy_stream_open(o->s, id)) {
        n = kla_spdy_data(o->s, id, buf, len > 100 ? 100 : len, fin);
        if (n < 0 && n != -EPIPE && n != -ENOENT)
            return n;
    }
    return 0;
}

static const struct kla_spdy_callbacks cb = {
    .output = f_output, .syn_stream = f_syn, .headers = f_headers, .data = f_data};

static int run(const uint8_t *data, size_t size, size_t step, size_t *ret_out)
{
    struct kla_spdy_limits lim = {.max_streams = 8, .max_frame = 65536, .max_header_block = 16384};
    struct out o = {0};
    int r = 0;

    if (kla_spdy_session_new(true, &lim, &cb, &o, &o.s) < 0)
        return -ENOMEM;
    for (size_t off = 0; off < size && r == 0; off += step) {
        size_t n = size - off < step ? size - off : step;

        r = kla_spdy_feed(o.s, data + off, n);
    }
    if (r < 0 && kla_spdy_feed(o.s, (const uint8_t *)"x", 1) != -EPIPE)
        __builtin_trap(); /* a session error is final */
    kla_spdy_session_free(o.s);
    *ret_out = o.bytes;
    return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t out1 = 0, out2 = 0;
    int r1, r2;

    if (size > 0 && data[0] == 'b') {
        struct kla_spdy_headers h;
        int r = kla_spdy_block_decode(data + 1, size - 1, 64, 256, 8192, &h);

        if (r != 0 && r != -EPROTO && r != -E2BIG)
            __builtin_trap();
        if (r == 0) {
            uint8_t *buf = malloc(size + 16);

            check_headers(&h, 64);
            /* a decoded block encodes back to the same bytes */
            if (buf && kla_spdy_block_encode(&h, buf, size + 16) != (int)(size - 1))
                __builtin_trap();
            if (buf && memcmp(buf, data + 1, size - 1) != 0)
                __builtin_trap();
            free(buf);
        }
        return 0;
    }
    r1 = run(data, size, size ? size : 1, &out1);
    r2 = run(data, size, 7, &out2);
    if (r1 != 0 && r1 != -EPROTO && r1 != -E2BIG && r1 != -ENOMEM && r1 != -ENOBUFS && r1 != -EPIPE)
        __builtin_trap();
    /* Splitting the input differently cannot change the verdict or what is answered. */
    if (r1 != r2 || out1 != out2)
        __builtin_trap();
    return 0;
}
