/* Unit tests of the kubelet API's pure parts (src/kubeletapi/spdy.c, http.c): the SPDY/3.1 codec
 * and sessions (two sessions joined in memory), HTTP heads, queries, routes, options, chunked
 * bodies, and the remotecommand helpers. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/netaddr.h"
#include "common/strutil.h"
#include "kubeletapi/http.h"
#include "kubeletapi/spdy.h"

/* ---- SPDY: codec --------------------------------------------------------------------------- */

static void test_dictionary(void **state)
{
    const uint8_t *d = kla_spdy_dictionary();

    (void)state;
    /* The SPDY/3 dictionary Go's spdystream (and every SPDY/3 peer) primes zlib with: its length
     * and Adler-32, which is also the DICTID in every zlib header of a header block. */
    assert_int_equal(adler32(adler32(0, NULL, 0), d, KLA_SPDY_DICT_LEN), 0xe3c6a7c2);
    assert_memory_equal(d, "\0\0\0\x07options\0\0\0\x04head", 15);
    assert_memory_equal(d + KLA_SPDY_DICT_LEN - 6, "enq=0.", 6);
}

static void test_frame_parse(void **state)
{
    static const struct {
        const char *bytes;
        size_t len, max;
        int r;
        bool control;
        uint16_t type;
        uint8_t flags;
        uint32_t length, stream, consumed;
    } cases[] = {
        /* a data frame for stream 5 with FIN and 3 bytes */
        {"\x00\x00\x00\x05\x01\x00\x00\x03"
         "abc",
         11, 100, 0, false, KLA_SPDY_DATA, 1, 3, 5, 11},
        /* PING, version 3 */
        {"\x80\x03\x00\x06\x00\x00\x00\x04\x00\x00\x00\x01", 12, 100, 0, true, KLA_SPDY_PING, 0, 4,
         0, 12},
        /* incomplete header, then incomplete payload: how much is needed */
        {"\x80\x03\x00", 3, 100, -EAGAIN, false, 0, 0, 0, 0, 8},
        {"\x80\x03\x00\x06\x00\x00\x00\x04\x00", 9, 100, -EAGAIN, false, 0, 0, 0, 0, 12},
        /* a 24-bit length over the bound */
        {"\x00\x00\x00\x01\x00\x01\x00\x00", 8, 65535, -E2BIG, false, 0, 0, 0, 0, 0},
        /* stream IDs keep 31 bits */
        {"\x7f\xff\xff\xff\x00\x00\x00\x00", 8, 10, 0, false, KLA_SPDY_DATA, 0, 0, 0x7fffffff, 8},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct kla_spdy_frame f;
        size_t used = 0;
        int r = kla_spdy_frame_parse((const uint8_t *)cases[i].bytes, cases[i].len, cases[i].max,
                                     &f, &used);

        assert_int_equal(r, cases[i].r);
        if (r == 0 || r == -EAGAIN)
            assert_int_equal(used, cases[i].consumed);
        if (r != 0)
            continue;
        assert_int_equal(f.control, cases[i].control);
        assert_int_equal(f.type, cases[i].type);
        assert_int_equal(f.flags, cases[i].flags);
        assert_int_equal(f.length, cases[i].length);
        if (!f.control)
            assert_int_equal(f.stream_id, cases[i].stream);
    }
}

static void test_block_roundtrip(void **state)
{
    struct kla_spdy_headers h = {.n = 0}, d;
    uint8_t buf[256];
    char v[32];
    int n;

    (void)state;
    assert_int_equal(kla_spdy_header_add(&h, "streamtype", "stdout"), 0);
    assert_int_equal(kla_spdy_header_add(&h, "x-multi", "a"), 0);
    h.h[1].value = "a\0b";
    h.h[1].value_len = 3;
    assert_int_equal(kla_spdy_header_add(&h, "Upper", "x"), -EINVAL);
    n = kla_spdy_block_encode(&h, buf, sizeof(buf));
    /* count, then (len name len value) for each */
    assert_int_equal(n, 4 + 4 + 10 + 4 + 6 + 4 + 7 + 4 + 3);
    assert_memory_equal(buf, "\0\0\0\x02\0\0\0\x0astreamtype\0\0\0\x06stdout", 28);
    assert_int_equal(kla_spdy_block_decode(buf, (size_t)n, 64, 256, 8192, &d), 0);
    assert_int_equal(d.n, 2);
    assert_int_equal(kla_spdy_header_get(&d, "streamtype", v, sizeof(v)), 6);
    assert_string_equal(v, "stdout");
    assert_int_equal(kla_spdy_header_get(&d, "x-multi", v, sizeof(v)), 1); /* the first value */
    assert_string_equal(v, "a");
    assert_int_equal(kla_spdy_header_get(&d, "absent", v, sizeof(v)), -ENOENT);
    assert_int_equal(kla_spdy_header_get(&d, "streamtype", v, 3), -ENAMETOOLONG);
    assert_int_equal(kla_spdy_block_encode(&h, buf, 20), -ENOSPC);
}

static void test_block_decode_errors(void **state)
{
    static const struct {
        const char *bytes;
        size_t len;
        int r;
    } cases[] = {
        {"\0\0\0", 3, -EPROTO},               /* no count */
        {"\0\0\0\x01\0\0\0\x01", 8, -EPROTO}, /* truncated name */
        {"\0\0\0\x01\0\0\0\x01"
         "a\0\0\0\x02"
         "b",
         14, -EPROTO},             /* truncated value */
        {"\0\0\0\x41", 4, -E2BIG}, /* 65 headers */
        {"\0\0\0\x01\0\0\0\x01"
         "A\0\0\0\x00",
         13, -EPROTO},                                   /* upper case */
        {"\0\0\0\x01\0\0\0\x00\0\0\0\x00", 12, -EPROTO}, /* empty name */
        {"\0\0\0\x01\0\0\0\x01"
         "a\0\0\0\x02"
         "b\0",
         15, -EPROTO}, /* NUL at the end */
        {"\0\0\0\x01\0\0\0\x01"
         "a\0\0\0\x03"
         "b\0\0",
         16, -EPROTO}, /* empty element */
        {"\0\0\0\x02\0\0\0\x01"
         "a\0\0\0\0\0\0\0\x01"
         "a\0\0\0\0",
         22, -EPROTO}, /* twice */
        {"\0\0\0\x00"
         "x",
         5, -EPROTO},                          /* trailing bytes */
        {"\0\0\0\x01\0\0\x01\x01", 8, -E2BIG}, /* name over 256 */
        {"\0\0\0\x01\0\0\0\x01"
         "a\0\0\x20\x01",
         13, -E2BIG}, /* value over 8192 */
        {"\0\0\0\x01\0\0\0\x01"
         "a\0\0\0\x01"
         "b",
         14, 0},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct kla_spdy_headers h;

        assert_int_equal(
            kla_spdy_block_decode((const uint8_t *)cases[i].bytes, cases[i].len, 64, 256, 8192, &h),
            cases[i].r);
    }
}

/* ---- SPDY: two sessions joined in memory --------------------------------------------------- */

struct side {
    struct kla_spdy_session *s;
    struct side *peer;
    struct sbuf wire; /* bytes written, not yet delivered */
    bool hold;        /* keep them (to inspect or to test flow control) */
    uint32_t syn_id, reply_id, rst_id, rst_status, goaway_status, windows;
    char streamtype[32];
    struct sbuf data; /* data received */
    bool fin, goaway;
    int data_frames;
};

static int side_output(void *d, const uint8_t *buf, size_t len)
{
    struct side *sd = d;

    return sbuf_add(&sd->wire, buf, len);
}

static int side_syn(void *d, uint32_t id, const struct kla_spdy_headers *h, bool fin)
{
    struct side *sd = d;

    (void)fin;
    sd->syn_id = id;
    if (kla_spdy_header_get(h, "streamtype", sd->streamtype, sizeof(sd->streamtype)) < 0)
        sd->streamtype[0] = '\0';
    return 0;
}

static int side_reply(void *d, uint32_t id, const struct kla_spdy_headers *h, bool fin)
{
    struct side *sd = d;

    (void)h;
    (void)fin;
    sd->reply_id = id;
    return 0;
}

static int side_data(void *d, uint32_t id, const uint8_t *buf, size_t len, bool fin)
{
    struct side *sd = d;

    (void)id;
    sd->data_frames++;
    if (fin)
        sd->fin = true;
    return sbuf_add(&sd->data, buf, len);
}

static void side_rst(void *d, uint32_t id, uint32_t status)
{
    struct side *sd = d;

    sd->rst_id = id;
    sd->rst_status = status;
}

static void side_goaway(void *d, uint32_t last, uint32_t status)
{
    struct side *sd = d;

    (void)last;
    sd->goaway = true;
    sd->goaway_status = status;
}

static void side_window(void *d, uint32_t id)
{
    struct side *sd = d;

    (void)id;
    sd->windows++;
}

static const struct kla_spdy_callbacks side_cb = {
    .output = side_output,
    .syn_stream = side_syn,
    .syn_reply = side_reply,
    .data = side_data,
    .rst = side_rst,
    .goaway = side_goaway,
    .window = side_window,
};

/* Delivers what each side wrote to the other, until quiet. Returns the last feed error. */
static int pump(struct side *a, struct side *b)
{
    int r = 0;

    for (int round = 0; round < 100; round++) {
        bool moved = false;
        struct side *sides[2] = {a, b};

        for (int i = 0; i < 2; i++) {
            struct side *from = sides[i];
            struct sbuf w;

            if (from->hold || sbuf_len(&from->wire) == 0)
                continue;
            w = from->wire;
            sbuf_init(&from->wire, 64u << 20);
            /* Byte by byte for the first round: every split must work. */
            if (round == 0) {
                for (size_t k = 0; k < sbuf_len(&w) && r == 0; k++)
                    r = kla_spdy_feed(from->peer->s, (const uint8_t *)sbuf_str(&w) + k, 1);
            } else {
                r = kla_spdy_feed(from->peer->s, (const uint8_t *)sbuf_str(&w), sbuf_len(&w));
            }
            sbuf_done(&w);
            moved = true;
            if (r < 0)
                return r;
        }
        if (!moved)
            break;
    }
    return r;
}

static void pair(struct side *c, struct side *s, const struct kla_spdy_limits *lim)
{
    memset(c, 0, sizeof(*c));
    memset(s, 0, sizeof(*s));
    c->peer = s;
    s->peer = c;
    sbuf_init(&c->wire, 64u << 20);
    sbuf_init(&s->wire, 64u << 20);
    sbuf_init(&c->data, 64u << 20);
    sbuf_init(&s->data, 64u << 20);
    assert_int_equal(kla_spdy_session_new(false, lim, &side_cb, c, &c->s), 0);
    assert_int_equal(kla_spdy_session_new(true, lim, &side_cb, s, &s->s), 0);
}

static void unpair(struct side *c, struct side *s)
{
    kla_spdy_session_free(c->s);
    kla_spdy_session_free(s->s);
    sbuf_done(&c->wire);
    sbuf_done(&s->wire);
    sbuf_done(&c->data);
    sbuf_done(&s->data);
}

static void test_session_streams(void **state)
{
    struct side c, s;
    struct kla_spdy_headers h = {.n = 0}, none = {.n = 0};
    struct kla_spdy_stats st;
    uint32_t id, id2;

    (void)state;
    pair(&c, &s, NULL);
    assert_int_equal(pump(&c, &s), 0);
    /* Both announced flow control (SETTINGS): both enforce. */
    assert_true(kla_spdy_flow_enforced(c.s));
    assert_true(kla_spdy_flow_enforced(s.s));
    kla_spdy_header_add(&h, "streamtype", "stdin");
    assert_int_equal(kla_spdy_syn_stream(c.s, &h, false, &id), 0);
    assert_int_equal(id, 1);
    assert_int_equal(kla_spdy_syn_stream(c.s, &h, false, &id2), 0);
    assert_int_equal(id2, 3);
    assert_int_equal(pump(&c, &s), 0);
    assert_int_equal(s.syn_id, 3);
    assert_string_equal(s.streamtype, "stdin");
    assert_int_equal(kla_spdy_syn_reply(s.s, 1, &none, false), 0);
    assert_int_equal(kla_spdy_data(c.s, 1, "hello", 5, true), 5);
    assert_int_equal(kla_spdy_data(c.s, 1, "more", 4, false), -EPIPE); /* after FIN */
    assert_int_equal(pump(&c, &s), 0);
    assert_int_equal(c.reply_id, 1);
    assert_int_equal(sbuf_len(&s.data), 5);
    assert_memory_equal(sbuf_str(&s.data), "hello", 5);
    assert_true(s.fin);
    /* The server closes its side too: the stream is forgotten on both. */
    assert_int_equal(kla_spdy_data(s.s, 1, "", 0, true), 0);
    assert_int_equal(pump(&c, &s), 0);
    assert_false(kla_spdy_stream_open(c.s, 1));
    assert_false(kla_spdy_stream_open(s.s, 1));
    /* Reset of stream 3 by the client; late data from the server is dropped, not an error. */
    assert_int_equal(kla_spdy_rst(c.s, 3, KLA_SPDY_CANCEL), 0);
    assert_int_equal(kla_spdy_data(s.s, 3, "late", 4, false), 4); /* in flight before the RST */
    assert_int_equal(pump(&c, &s), 0);
    assert_int_equal(s.rst_id, 3);
    assert_int_equal(s.rst_status, KLA_SPDY_CANCEL);
    kla_spdy_stats(c.s, &st);
    assert_int_equal(st.dropped_frames, 1);
    assert_int_equal(st.open_streams, 0);
    /* Pings from the server are echoed by the client (the reply is ignored by the server). */
    assert_int_equal(kla_spdy_ping(s.s, 2), 0);
    assert_int_equal(pump(&c, &s), 0);
    /* GOAWAY: no new stream from either side. */
    assert_int_equal(kla_spdy_goaway(s.s, KLA_SPDY_GOAWAY_OK), 0);
    assert_int_equal(pump(&c, &s), 0);
    assert_true(c.goaway);
    assert_int_equal(kla_spdy_syn_stream(c.s, &h, false, &id), -ESHUTDOWN);
    unpair(&c, &s);
}

static void test_session_flow_control(void **state)
{
    struct kla_spdy_limits lim = {.recv_window = 8192, .max_data_frame = 1000};
    struct side c, s;
    struct kla_spdy_headers h = {.n = 0};
    char big[20000];
    uint32_t id;
    int n;

    (void)state;
    memset(big, 'x', sizeof(big));
    pair(&c, &s, &lim);
    assert_int_equal(pump(&c, &s), 0);
    kla_spdy_header_add(&h, "streamtype", "stdout");
    assert_int_equal(kla_spdy_syn_stream(s.s, &h, false, &id), 0);
    assert_int_equal(id, 2);
    assert_int_equal(pump(&c, &s), 0);
    /* The client announced an 8 KiB window: the server sends that much and no more. */
    assert_int_equal(kla_spdy_send_window(s.s, id), 8192);
    n = kla_spdy_data(s.s, id, big, sizeof(big), true);
    assert_int_equal(n, 8192);
    assert_int_equal(kla_spdy_send_window(s.s, id), 0);
    assert_int_equal(pump(&c, &s), 0);
    assert_int_equal(sbuf_len(&c.data), 8192);
    assert_int_equal(c.data_frames, 9); /* frames of at most max_data_frame */
    assert_false(c.fin);                /* FIN was not sent with a partial write */
    /* The application consumed less than half a window: no update yet. */
    assert_int_equal(kla_spdy_consumed(c.s, id, 3000), 0);
    assert_int_equal(pump(&c, &s), 0);
    assert_int_equal(kla_spdy_send_window(s.s, id), 0);
    /* Past half: WINDOW_UPDATE, the sender's window opens, it is told. */
    s.windows = 0;
    assert_int_equal(kla_spdy_consumed(c.s, id, 2000), 0);
    assert_int_equal(pump(&c, &s), 0);
    assert_int_equal(kla_spdy_send_window(s.s, id), 5000);
    assert_true(s.windows >= 1);
    unpair(&c, &s);
}

/* A peer that never announces flow control (Kubernetes' spdystream): no window is enforced. */
static void test_session_no_flow_control_peer(void **state)
{
    struct kla_spdy_limits lim = {.recv_window = 8192};
    struct side c, s;
    struct kla_spdy_headers h = {.n = 0};
    static char big[300000];
    uint32_t id;

    (void)state;
    pair(&c, &s, &lim);
    /* Drop the client's SETTINGS and WINDOW_UPDATE, as if it were spdystream. */
    sbuf_done(&c.wire);
    sbuf_init(&c.wire, 64u << 20);
    assert_int_equal(pump(&c, &s), 0);
    assert_false(kla_spdy_flow_enforced(s.s));
    kla_spdy_header_add(&h, "streamtype", "stdout");
    assert_int_equal(kla_spdy_syn_stream(s.s, &h, false, &id), 0);
    assert_int_equal(kla_spdy_send_window(s.s, id), SIZE_MAX);
    assert_int_equal(kla_spdy_data(s.s, id, big, sizeof(big), true), (int)sizeof(big));
    /* The receiver does not refuse data over its window (the peer may not know about it). */
    assert_int_equal(pump(&c, &s), 0);
    assert_int_equal(sbuf_len(&c.data), sizeof(big));
    unpair(&c, &s);
}

static void test_session_limits(void **state)
{
    struct kla_spdy_limits lim = {.max_streams = 2, .max_frame = 4096, .max_header_block = 1024};
    struct side c, s;
    struct kla_spdy_headers h = {.n = 0};
    struct kla_spdy_stats st;
    uint32_t id;
    char longv[2000];

    (void)state;
    pair(&c, &s, &lim);
    /* The client's own table is full at max_streams. */
    kla_spdy_header_add(&h, "streamtype", "stdin");
    assert_int_equal(kla_spdy_syn_stream(c.s, &h, false, &id), 0);
    assert_int_equal(kla_spdy_syn_stream(c.s, &h, false, &id), 0);
    assert_int_equal(kla_spdy_syn_stream(c.s, &h, false, &id), -ENOSPC);
    assert_int_equal(pump(&c, &s), 0);
    unpair(&c, &s);
    /* A client allowed more: the server refuses the third (REFUSED_STREAM), the session goes on. */
    pair(&c, &s, &lim);
    kla_spdy_session_free(c.s);
    assert_int_equal(kla_spdy_session_new(false, NULL, &side_cb, &c, &c.s), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(kla_spdy_syn_stream(c.s, &h, false, &id), 0);
    assert_int_equal(pump(&c, &s), 0);
    kla_spdy_stats(s.s, &st);
    assert_int_equal(st.open_streams, 2);
    assert_int_equal(st.refused_streams, 1);
    assert_int_equal(c.rst_id, 5);
    assert_int_equal(c.rst_status, KLA_SPDY_REFUSED_STREAM);
    /* A header block that inflates past max_header_block: a session error, GOAWAY. */
    memset(longv, 'v', sizeof(longv) - 1);
    longv[sizeof(longv) - 1] = '\0';
    {
        struct kla_spdy_limits big = {.max_header_block = 8192};
        struct side c2, s2;
        struct kla_spdy_headers hv = {.n = 0};

        pair(&c2, &s2, &big);
        kla_spdy_session_free(s2.s);
        assert_int_equal(kla_spdy_session_new(true, &lim, &side_cb, &s2, &s2.s), 0);
        assert_int_equal(pump(&c2, &s2), 0);
        kla_spdy_header_add(&hv, "x", "");
        hv.h[0].value = longv; /* 1999 bytes: under 8192 for the client, over 1024 for the server */
        hv.h[0].value_len = strlen(longv);
        assert_int_equal(kla_spdy_syn_stream(c2.s, &hv, false, &id), 0);
        assert_int_equal(pump(&c2, &s2), -E2BIG);
        assert_int_equal(pump(&c2, &s2), 0); /* the GOAWAY reaches the client */
        assert_true(c2.goaway);
        assert_int_equal(c2.goaway_status, KLA_SPDY_GOAWAY_PROTOCOL_ERROR);
        assert_int_equal(kla_spdy_feed(s2.s, (const uint8_t *)"x", 1), -EPIPE);
        unpair(&c2, &s2);
    }
    /* A data frame longer than max_frame. */
    {
        static const uint8_t frame[8] = {0, 0, 0, 1, 0, 0, 0x20, 0}; /* 8192 bytes announced */

        assert_int_equal(kla_spdy_feed(s.s, frame, sizeof(frame)), -E2BIG);
    }
    unpair(&c, &s);
}

static void test_session_bad_ids(void **state)
{
    struct side c, s;
    struct kla_spdy_headers h = {.n = 0};
    uint32_t id;

    (void)state;
    pair(&c, &s, NULL);
    assert_int_equal(pump(&c, &s), 0);
    kla_spdy_header_add(&h, "streamtype", "error");
    /* A server opening a stream towards a server: wrong parity, refused with PROTOCOL_ERROR. */
    {
        struct side s2, s3;

        pair(&s2, &s3, NULL);
        kla_spdy_session_free(s2.s);
        assert_int_equal(kla_spdy_session_new(true, NULL, &side_cb, &s2, &s2.s), 0);
        assert_int_equal(pump(&s2, &s3), 0);
        assert_int_equal(kla_spdy_syn_stream(s2.s, &h, false, &id), 0);
        assert_int_equal(id, 2);
        assert_int_equal(pump(&s2, &s3), 0);
        assert_int_equal(s3.syn_id, 0);
        assert_int_equal(s2.rst_id, 2);
        assert_int_equal(s2.rst_status, KLA_SPDY_PROTOCOL_ERROR);
        unpair(&s2, &s3);
    }
    unpair(&c, &s);
}

/* Our header blocks are zlib streams primed with the dictionary, as any SPDY/3 peer expects. */
static void test_session_wire_zlib(void **state)
{
    struct side c, s;
    struct kla_spdy_headers h = {.n = 0};
    struct kla_spdy_frame f;
    const uint8_t *p;
    size_t used;
    uint32_t id;

    (void)state;
    pair(&c, &s, NULL);
    assert_int_equal(pump(&c, &s), 0);
    kla_spdy_header_add(&h, "streamtype", "error");
    c.hold = true;
    assert_int_equal(kla_spdy_syn_stream(c.s, &h, true, &id), 0);
    p = (const uint8_t *)sbuf_str(&c.wire);
    assert_int_equal(kla_spdy_frame_parse(p, sbuf_len(&c.wire), 1 << 20, &f, &used), 0);
    assert_true(f.control);
    assert_int_equal(f.version, 3);
    assert_int_equal(f.type, KLA_SPDY_SYN_STREAM);
    assert_int_equal(f.flags, KLA_SPDY_FLAG_FIN);
    /* zlib header: CMF 0x78, FDICT set, then DICTID = Adler-32 of the dictionary. */
    assert_int_equal(f.payload[10], 0x78);
    assert_true(f.payload[11] & 0x20);
    assert_int_equal(((uint32_t)f.payload[12] << 24 | (uint32_t)f.payload[13] << 16 |
                      (uint32_t)f.payload[14] << 8 | f.payload[15]),
                     0xe3c6a7c2);
    {
        z_stream z = {0};
        uint8_t out[256];

        assert_int_equal(inflateInit(&z), Z_OK);
        z.next_in = (Bytef *)(uintptr_t)(f.payload + 10);
        z.avail_in = f.length - 10;
        z.next_out = out;
        z.avail_out = sizeof(out);
        assert_int_equal(inflate(&z, Z_SYNC_FLUSH), Z_NEED_DICT);
        assert_int_equal(inflateSetDictionary(&z, kla_spdy_dictionary(), KLA_SPDY_DICT_LEN), Z_OK);
        assert_int_equal(inflate(&z, Z_SYNC_FLUSH), Z_OK);
        assert_int_equal(sizeof(out) - z.avail_out, 4 + 4 + 10 + 4 + 5);
        assert_memory_equal(out,
                            "\0\0\0\x01\0\0\0\x0astreamtype\0\0\0\x05"
                            "error",
                            27);
        inflateEnd(&z);
    }
    unpair(&c, &s);
}

/* ---- HTTP heads ---------------------------------------------------------------------------- */

static void test_parse_request(void **state)
{
    static const struct {
        const char *in;
        int r;
        const char *method, *target;
        size_t nheaders;
    } cases[] = {
        {"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 0, "GET", "/healthz", 1},
        {"POST /exec/a/b/c?command=ls HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade:SPDY/3.1 \r\n\r\n",
         0, "POST", "/exec/a/b/c?command=ls", 2},
        {"GET / HTTP/1.0\r\n\r\n", 0, "GET", "/", 0},
        {"GET / HTTP/1.1\r\nHost: x\r\n", -EAGAIN, NULL, NULL, 0},
        {"GET / HTTP/1.1\nHost: x\n\n", -EAGAIN, NULL, NULL, 0}, /* bare LF: never a head end */
        {"GET / HTTP/2.0\r\n\r\n", -EINVAL, NULL, NULL, 0},
        {"GET  / HTTP/1.1\r\n\r\n", -EINVAL, NULL, NULL, 0},
        {"G(T / HTTP/1.1\r\n\r\n", -EINVAL, NULL, NULL, 0},
        {"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", -EINVAL, NULL, NULL, 0},
        {"GET / HTTP/1.1\r\nA: x\r\n folded\r\n\r\n", -EINVAL, NULL, NULL, 0},
        {"GET / HTTP/1.1\r\nA: x\001y\r\n\r\n", -EINVAL, NULL, NULL, 0},
        {"GET /a\001b HTTP/1.1\r\n\r\n", -EINVAL, NULL, NULL, 0},
        {"GET / HTTP/1.1\r\n: empty\r\n\r\n", -EINVAL, NULL, NULL, 0},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct kla_http_head h;
        int r = kla_http_parse_request(cases[i].in, strlen(cases[i].in), &h);

        assert_int_equal(r, cases[i].r);
        if (r)
            continue;
        assert_int_equal(h.method_len, strlen(cases[i].method));
        assert_memory_equal(h.method, cases[i].method, h.method_len);
        assert_int_equal(h.target_len, strlen(cases[i].target));
        assert_memory_equal(h.target, cases[i].target, h.target_len);
        assert_int_equal(h.n, cases[i].nheaders);
        assert_int_equal(h.head_len, strlen(cases[i].in));
    }
}

static void test_parse_request_bounds(void **state)
{
    struct kla_http_head h;
    struct sbuf b;

    (void)state;
    /* 65 headers */
    sbuf_init(&b, 1 << 20);
    sbuf_adds(&b, "GET / HTTP/1.1\r\n");
    for (int i = 0; i < 65; i++)
        sbuf_printf(&b, "H%d: v\r\n", i);
    sbuf_adds(&b, "\r\n");
    assert_int_equal(kla_http_parse_request(sbuf_str(&b), sbuf_len(&b), &h), -E2BIG);
    sbuf_done(&b);
    /* a head of 16 KiB without its end */
    sbuf_init(&b, 1 << 20);
    sbuf_adds(&b, "GET / HTTP/1.1\r\nX: ");
    while (sbuf_len(&b) < KLA_HTTP_MAX_HEAD + 10)
        sbuf_add(&b, "a", 1);
    assert_int_equal(kla_http_parse_request(sbuf_str(&b), sbuf_len(&b), &h), -E2BIG);
    assert_int_equal(kla_http_parse_request(sbuf_str(&b), 100, &h), -EAGAIN);
    sbuf_done(&b);
    /* a target over 8 KiB */
    sbuf_init(&b, 1 << 20);
    sbuf_adds(&b, "GET /");
    for (int i = 0; i < KLA_HTTP_MAX_TARGET; i++)
        sbuf_add(&b, "a", 1);
    sbuf_adds(&b, " HTTP/1.1\r\n\r\n");
    assert_int_equal(kla_http_parse_request(sbuf_str(&b), sbuf_len(&b), &h), -E2BIG);
    sbuf_done(&b);
}

static void test_parse_response_and_headers(void **state)
{
    const char *resp = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
                       "Upgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n"
                       "X-Stream-Protocol-Version: v3.channel.k8s.io\r\nContent-Length: 12\r\n"
                       "content-length: 12\r\n\r\nrest";
    struct kla_http_head h;
    char buf[128];
    uint64_t cl;

    (void)state;
    assert_int_equal(kla_http_parse_response(resp, strlen(resp), &h), 0);
    assert_int_equal(h.status, 101);
    assert_int_equal(h.reason_len, 19);
    assert_int_equal(h.head_len, strlen(resp) - 4);
    assert_true(kla_http_has_token(&h, "connection", "upgrade"));
    assert_true(kla_http_has_token(&h, "Upgrade", "spdy/3.1"));
    assert_false(kla_http_has_token(&h, "Upgrade", "SPDY"));
    assert_int_equal(kla_http_header(&h, "x-stream-protocol-version", buf, sizeof(buf)), 17);
    assert_string_equal(buf, "v4.channel.k8s.io");
    assert_int_equal(kla_http_join(&h, "X-Stream-Protocol-Version", buf, sizeof(buf)), 36);
    assert_string_equal(buf, "v4.channel.k8s.io, v3.channel.k8s.io");
    assert_int_equal(kla_http_join(&h, "X-Stream-Protocol-Version", buf, 20), -ENAMETOOLONG);
    assert_int_equal(kla_http_content_length(&h, &cl), 0);
    assert_int_equal(cl, 12);
    assert_int_equal(kla_http_parse_response("HTTP/1.1 200\r\n\r\n", 16, &h), 0);
    assert_int_equal(h.status, 200);
    assert_int_equal(kla_http_parse_response("HTTP/1.1 2000 OK\r\n\r\n", 20, &h), -EINVAL);
    assert_int_equal(kla_http_parse_response("HTTP/1.1 099 X\r\n\r\n", 18, &h), -EINVAL);
    {
        const char *two = "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n";

        assert_int_equal(kla_http_parse_response(two, strlen(two), &h), 0);
        assert_int_equal(kla_http_content_length(&h, &cl), -EINVAL);
    }
}

/* ---- queries, routes, options -------------------------------------------------------------- */

static void test_query(void **state)
{
    const char *q = "command=sh&command=-c&command=echo+%22a%26b%22&input=1&empty&=x&&tty";
    const char *cur = q, *end = q + strlen(q);
    char k[32], v[64];
    static const char *const want[][2] = {
        {"command", "sh"}, {"command", "-c"}, {"command", "echo \"a&b\""},
        {"input", "1"},    {"empty", ""},     {"", "x"},
        {"tty", ""}};
    size_t n = 0;
    int r;

    (void)state;
    while ((r = kla_query_next(&cur, end, k, sizeof(k), v, sizeof(v))) > 0) {
        assert_true(n < sizeof(want) / sizeof(want[0]));
        assert_string_equal(k, want[n][0]);
        assert_string_equal(v, want[n][1]);
        n++;
    }
    assert_int_equal(r, 0);
    assert_int_equal(n, sizeof(want) / sizeof(want[0]));
    assert_int_equal(kla_query_get(q, strlen(q), "input", v, sizeof(v)), 0);
    assert_string_equal(v, "1");
    assert_int_equal(kla_query_get(q, strlen(q), "nope", v, sizeof(v)), -ENOENT);
    cur = "a=%zz";
    assert_int_equal(kla_query_next(&cur, cur + 5, k, sizeof(k), v, sizeof(v)), -EINVAL);
    cur = "a=%00";
    assert_int_equal(kla_query_next(&cur, cur + 5, k, sizeof(k), v, sizeof(v)), -EINVAL);
    cur = "a=%4";
    assert_int_equal(kla_query_next(&cur, cur + 4, k, sizeof(k), v, sizeof(v)), -EINVAL);
    cur = "a=0123456789";
    assert_int_equal(kla_query_next(&cur, cur + 12, k, sizeof(k), v, 5), -E2BIG);
    {
        char buf[64];
        int len = kla_query_append(buf, sizeof(buf), 0, "command", "echo a&b");

        assert_int_equal(len, 20);
        assert_string_equal(buf, "command=echo%20a%26b");
        assert_int_equal(kla_query_append(buf, sizeof(buf), (size_t)len, "tty", "true"), 29);
        assert_string_equal(buf, "command=echo%20a%26b&tty=true");
        assert_int_equal(kla_query_append(buf, 9, 0, "command", "x"), -ENOSPC);
    }
}

static void test_routes(void **state)
{
    static const struct {
        const char *path;
        int r;
        enum kla_route route;
        const char *ns, *pod, *uid, *container;
    } cases[] = {
        {"/healthz", 0, KLA_ROUTE_HEALTHZ, NULL, NULL, NULL, NULL},
        {"/containerLogs/ns1/web-0/app", 0, KLA_ROUTE_LOGS, "ns1", "web-0", "", "app"},
        {"/exec/ns1/web.a/app", 0, KLA_ROUTE_EXEC, "ns1", "web.a", "", "app"},
        {"/exec/ns1/web/4f1c-ab/app", 0, KLA_ROUTE_EXEC, "ns1", "web", "4f1c-ab", "app"},
        {"/exec/ns%31/web/app", 0, KLA_ROUTE_EXEC, "ns1", "web", "", "app"},
        {"/containerLogs/ns/web/app/extra", -ENOENT, 0, NULL, NULL, NULL, NULL},
        {"/containerLogs/ns/web", -ENOENT, 0, NULL, NULL, NULL, NULL},
        {"/containerLogs/ns/web/app/", -ENOENT, 0, NULL, NULL, NULL, NULL},
        {"/exec/ns//app", -ENOENT, 0, NULL, NULL, NULL, NULL},
        {"/healthz/", -ENOENT, 0, NULL, NULL, NULL, NULL},
        {"/pods", -ENOENT, 0, NULL, NULL, NULL, NULL},
        {"healthz", -ENOENT, 0, NULL, NULL, NULL, NULL},
        {"/exec/NS/web/app", -EINVAL, 0, NULL, NULL, NULL, NULL},
        {"/exec/ns/web%2f..%2fx/app", -EINVAL, 0, NULL, NULL, NULL, NULL},
        {"/exec/ns/web/a_b", -EINVAL, 0, NULL, NULL, NULL, NULL},
        {"/exec/ns/web/u%20id/app", -EINVAL, 0, NULL, NULL, NULL, NULL},
        {"/exec/ns/web/%zz", -EINVAL, 0, NULL, NULL, NULL, NULL},
        {"/exec/ns/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/app",
         -EINVAL, 0, NULL, NULL, NULL, NULL},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        enum kla_route route;
        struct kla_pod_ref ref;
        int r = kla_route_parse(cases[i].path, strlen(cases[i].path), &route, &ref);

        assert_int_equal(r, cases[i].r);
        if (r)
            continue;
        assert_int_equal(route, cases[i].route);
        if (!cases[i].ns)
            continue;
        assert_string_equal(ref.ns, cases[i].ns);
        assert_string_equal(ref.pod, cases[i].pod);
        assert_string_equal(ref.uid, cases[i].uid);
        assert_string_equal(ref.container, cases[i].container);
    }
}

static void test_logs_opts(void **state)
{
    static const struct {
        const char *q;
        int r;
        bool follow, previous, timestamps;
        int64_t tail, since, since_time, limit;
    } cases[] = {
        {"", 0, false, false, false, -1, -1, -1, -1},
        {"follow=true&previous=1&timestamps=True&tailLines=10&limitBytes=500", 0, true, true, true,
         10, -1, -1, 500},
        {"follow=false&tailLines=0", 0, false, false, false, 0, -1, -1, -1},
        {"sinceSeconds=30", 0, false, false, false, -1, 30, -1, -1},
        {"sinceTime=2024-01-02T03:04:05Z", 0, false, false, false, -1, -1, 1704164645, -1},
        {"sinceTime=2024-01-02T04:04:05.123%2B01:00", 0, false, false, false, -1, -1, 1704164645,
         -1},
        {"follow=yes", -EINVAL, 0, 0, 0, 0, 0, 0, 0},
        {"tailLines=-1", -EINVAL, 0, 0, 0, 0, 0, 0, 0},
        {"limitBytes=0", -EINVAL, 0, 0, 0, 0, 0, 0, 0},
        {"sinceSeconds=0", -EINVAL, 0, 0, 0, 0, 0, 0, 0},
        {"sinceSeconds=5&sinceTime=2024-01-02T03:04:05Z", -EINVAL, 0, 0, 0, 0, 0, 0, 0},
        {"sinceTime=yesterday", -EINVAL, 0, 0, 0, 0, 0, 0, 0},
        {"tailLines=99999999999999999999", -EINVAL, 0, 0, 0, 0, 0, 0, 0},
        {"other=1&tailLines=3&tailLines=x", 0, false, false, false, 3, -1, -1, -1},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct kla_logs_opts o;
        char err[256];
        int r = kla_logs_opts_parse(cases[i].q, strlen(cases[i].q), &o, err, sizeof(err));

        assert_int_equal(r, cases[i].r);
        if (r) {
            assert_true(err[0] != '\0');
            continue;
        }
        assert_int_equal(o.follow, cases[i].follow);
        assert_int_equal(o.previous, cases[i].previous);
        assert_int_equal(o.timestamps, cases[i].timestamps);
        assert_int_equal(o.tail_lines, cases[i].tail);
        assert_int_equal(o.since_seconds, cases[i].since);
        assert_int_equal(o.since_time, cases[i].since_time);
        assert_int_equal(o.limit_bytes, cases[i].limit);
    }
}

static void test_exec_opts(void **state)
{
    struct kla_exec_opts o;
    char err[256];
    struct sbuf q;
    const char *q1 = "command=sh&command=-c&command=exit+3&input=1&output=1&error=1&tty=0";
    const char *q2 = "command=ls&output=1&error=1&tty=1&input=true";

    (void)state;
    assert_int_equal(kla_exec_opts_parse(q1, strlen(q1), &o, err, sizeof(err)), 0);
    assert_int_equal(o.ncommand, 3);
    assert_string_equal(o.command[2], "exit 3");
    assert_true(o.in && o.out && o.err && !o.tty);
    kla_exec_opts_done(&o);
    /* tty drops stderr; "true" is not "1" for these flags (as the kubelet) */
    assert_int_equal(kla_exec_opts_parse(q2, strlen(q2), &o, err, sizeof(err)), 0);
    assert_true(o.out && !o.err && o.tty && !o.in);
    kla_exec_opts_done(&o);
    assert_int_equal(kla_exec_opts_parse("command=ls", 10, &o, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "you must specify at least 1 of stdin, stdout, stderr");
    assert_int_equal(kla_exec_opts_parse("output=1", 8, &o, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "you must specify at least one command for the container");
    sbuf_init(&q, 1 << 20);
    for (int i = 0; i <= KLA_MAX_ARGS; i++)
        sbuf_adds(&q, "command=a&");
    sbuf_adds(&q, "output=1");
    assert_int_equal(kla_exec_opts_parse(sbuf_str(&q), sbuf_len(&q), &o, err, sizeof(err)),
                     -EINVAL);
    sbuf_done(&q);
}

static void test_values(void **state)
{
    bool b;
    struct sockaddr_storage ss;
    socklen_t sl;

    (void)state;
    assert_int_equal(kla_parse_bool("TRUE", &b), 0);
    assert_true(b);
    assert_int_equal(kla_parse_bool("F", &b), 0);
    assert_false(b);
    assert_int_equal(kla_parse_bool("yes", &b), -EINVAL);
    assert_int_equal(netaddr_parse("127.0.0.1:10250", &ss, &sl), 0);
    assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port), 10250);
    assert_int_equal(netaddr_parse(":0", &ss, &sl), 0);
    assert_int_equal(netaddr_parse("[::1]:8", &ss, &sl), 0);
    assert_int_equal(ss.ss_family, AF_INET6);
    assert_int_equal(netaddr_parse("::1:8", &ss, &sl), -EINVAL);
    assert_int_equal(netaddr_parse("host:8", &ss, &sl), -EINVAL);
    assert_int_equal(netaddr_parse("1.2.3.4:65536", &ss, &sl), -EINVAL);
}

/* ---- chunked bodies ------------------------------------------------------------------------ */

static int collect(void *data, const char *p, size_t n)
{
    return sbuf_add(data, p, n);
}

static void test_chunked(void **state)
{
    static const struct {
        const char *in;
        ssize_t r; /* bytes consumed, or an error */
        const char *out;
        bool done;
    } cases[] = {
        {"5\r\nhello\r\n0\r\n\r\n", 15, "hello", true},
        {"5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\nnext", 48,
         "hello0123456789", true},
        {"3\r\nabc\r\n", 8, "abc", false},
        {"3\r\nabcd\r\n", -EPROTO, NULL, false},
        {"x\r\n", -EPROTO, NULL, false},
        {"\r\n", -EPROTO, NULL, false},
        {"3\nabc", -EPROTO, NULL, false},
        {"1000000000000\r\n", -EPROTO, NULL, false},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        for (int bytewise = 0; bytewise < 2; bytewise++) {
            struct kla_chunked c = {0};
            struct sbuf out;
            ssize_t r = 0, total = 0;
            size_t len = strlen(cases[i].in);

            sbuf_init(&out, 1 << 16);
            if (bytewise) {
                for (size_t k = 0; k < len && !c.done; k++) {
                    r = kla_chunked_feed(&c, cases[i].in + k, 1, collect, &out);
                    if (r < 0)
                        break;
                    total += r;
                }
                if (r >= 0)
                    r = total;
            } else {
                r = kla_chunked_feed(&c, cases[i].in, len, collect, &out);
            }
            assert_int_equal(r, cases[i].r);
            if (r >= 0) {
                assert_string_equal(sbuf_str(&out), cases[i].out);
                assert_int_equal(c.done, cases[i].done);
            }
            sbuf_done(&out);
        }
    }
}

/* ---- remotecommand ------------------------------------------------------------------------- */

static void test_rc_negotiate(void **state)
{
    (void)state;
    assert_int_equal(kla_rc_negotiate("v4.channel.k8s.io, v3.channel.k8s.io"), KLA_RC_V4);
    assert_int_equal(kla_rc_negotiate("v5.channel.k8s.io,v3.channel.k8s.io"), KLA_RC_V3);
    assert_int_equal(kla_rc_negotiate("v2.channel.k8s.io, v4.channel.k8s.io"), KLA_RC_V2);
    assert_int_equal(kla_rc_negotiate("channel.k8s.io"), KLA_RC_NONE);
    assert_int_equal(kla_rc_negotiate(""), KLA_RC_NONE);
    assert_int_equal(kla_rc_negotiate("v4.channel.k8s.iox"), KLA_RC_NONE);
    assert_string_equal(kla_rc_proto_name(KLA_RC_V3), "v3.channel.k8s.io");
    assert_int_equal(kla_rc_stream_type("stdin"), KLA_STREAM_STDIN);
    assert_int_equal(kla_rc_stream_type("resize"), KLA_STREAM_RESIZE);
    assert_int_equal(kla_rc_stream_type("Stdin"), KLA_STREAM_MAX);
}

static void test_rc_status(void **state)
{
    static const struct {
        enum kla_rc_proto p;
        int code;
        const char *msg, *want;
    } cases[] = {
        /* exactly what a kubelet's encoding/json writes for metav1.Status */
        {KLA_RC_V4, 0, NULL, "{\"metadata\":{},\"status\":\"Success\"}"},
        {KLA_RC_V4, 3, NULL,
         "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"command terminated with non-zero "
         "exit "
         "code: exit status "
         "3\",\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":[{\"reason\":"
         "\"ExitCode\",\"message\":\"3\"}]}}"},
        {KLA_RC_V4, -1, "boom \"x\"",
         "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"Internal error occurred: boom "
         "\\\"x\\\"\",\"reason\":\"InternalError\",\"details\":{\"causes\":[{\"message\":\"boom "
         "\\\"x\\\"\"}]},\"code\":500}"},
        {KLA_RC_V3, 0, NULL, ""},
        {KLA_RC_V3, 2, NULL, "command terminated with non-zero exit code: exit status 2"},
        {KLA_RC_V2, -1, "gone", "Internal error occurred: gone"},
    };
    char buf[1024], msg[256];
    int code;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int n = kla_rc_status(cases[i].p, cases[i].code, cases[i].msg, buf, sizeof(buf));

        assert_int_equal(n, (int)strlen(cases[i].want));
        assert_string_equal(buf, cases[i].want);
    }
    assert_int_equal(kla_rc_status(KLA_RC_V4, 3, NULL, buf, 20), -ENOSPC);
    /* decoding, as client-go's v4 error decoder */
    kla_rc_status(KLA_RC_V4, 42, NULL, buf, sizeof(buf));
    assert_int_equal(kla_rc_status_decode(buf, strlen(buf), &code, msg, sizeof(msg)), 0);
    assert_int_equal(code, 42);
    kla_rc_status(KLA_RC_V4, 0, NULL, buf, sizeof(buf));
    code = -1;
    assert_int_equal(kla_rc_status_decode(buf, strlen(buf), &code, msg, sizeof(msg)), 0);
    assert_int_equal(code, 0);
    kla_rc_status(KLA_RC_V4, -1, "bad", buf, sizeof(buf));
    assert_int_equal(kla_rc_status_decode(buf, strlen(buf), &code, msg, sizeof(msg)), -EREMOTEIO);
    assert_string_equal(msg, "Internal error occurred: bad");
    assert_int_equal(kla_rc_status_decode("[1]", 3, &code, msg, sizeof(msg)), -EPROTO);
}

static unsigned sizes[8][2], nsizes;

static void on_size(void *data, unsigned w, unsigned h)
{
    (void)data;
    if (nsizes < 8) {
        sizes[nsizes][0] = w;
        sizes[nsizes][1] = h;
    }
    nsizes++;
}

static void test_rc_resize(void **state)
{
    const char *in = "{\"Width\":80,\"Height\":24}\n{\"width\":120, \"height\" : 40}\n{\"Width\":1";
    struct kla_rc_resize st = {.len = 0};
    char big[600];

    (void)state;
    nsizes = 0;
    for (size_t i = 0; i < strlen(in); i++) /* byte by byte */
        assert_int_equal(kla_rc_resize_feed(&st, in + i, 1, on_size, NULL), 0);
    assert_int_equal(nsizes, 2);
    assert_int_equal(sizes[0][0], 80);
    assert_int_equal(sizes[0][1], 24);
    assert_int_equal(sizes[1][0], 120);
    assert_int_equal(sizes[1][1], 40);
    /* The pending "{\"Width\":1" completed with an object where a number belongs: refused. */
    assert_int_equal(kla_rc_resize_feed(&st, "0,\"Height\":{\"x\":\"}\"}}", 21, on_size, NULL),
                     -EPROTO);
    assert_int_equal(nsizes, 2);
    memset(&st, 0, sizeof(st));
    assert_int_equal(kla_rc_resize_feed(&st, "{\"Width\":70000}", 15, on_size, NULL), -EPROTO);
    memset(&st, 0, sizeof(st));
    assert_int_equal(kla_rc_resize_feed(&st, "[1]", 3, on_size, NULL), -EPROTO);
    memset(&st, 0, sizeof(st));
    memset(big, ' ', sizeof(big));
    big[0] = '{';
    assert_int_equal(kla_rc_resize_feed(&st, big, sizeof(big), on_size, NULL), -EPROTO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dictionary),
        cmocka_unit_test(test_frame_parse),
        cmocka_unit_test(test_block_roundtrip),
        cmocka_unit_test(test_block_decode_errors),
        cmocka_unit_test(test_session_streams),
        cmocka_unit_test(test_session_flow_control),
        cmocka_unit_test(test_session_no_flow_control_peer),
        cmocka_unit_test(test_session_limits),
        cmocka_unit_test(test_session_bad_ids),
        cmocka_unit_test(test_session_wire_zlib),
        cmocka_unit_test(test_parse_request),
        cmocka_unit_test(test_parse_request_bounds),
        cmocka_unit_test(test_parse_response_and_headers),
        cmocka_unit_test(test_query),
        cmocka_unit_test(test_routes),
        cmocka_unit_test(test_logs_opts),
        cmocka_unit_test(test_exec_opts),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_chunked),
        cmocka_unit_test(test_rc_negotiate),
        cmocka_unit_test(test_rc_status),
        cmocka_unit_test(test_rc_resize),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
