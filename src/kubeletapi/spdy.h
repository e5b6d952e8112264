/* kla_spdy: SPDY/3.1 framing (draft 3.1, the "SPDY/3.1" that Kubernetes' remotecommand and
 * port-forward protocols upgrade HTTP/1.1 connections to), usable as server and as client.
 *
 * Two layers:
 *  - Pure codec functions: the 8-byte frame header, header blocks (count, then length-prefixed
 *    lower-case names and NUL-separated values) before compression, and the SPDY/3 zlib dictionary.
 *  - A session (struct kla_spdy_session): one per connection and direction pair. It owns the two
 *    zlib contexts (header blocks of one direction form one zlib stream, each block ending with a
 *    sync flush), the table of open streams and their flow-control windows, and calls back the
 *    application for every frame. It does no I/O: received bytes go in through kla_spdy_feed(),
 *    frames to send come out through the `output` callback, in order.
 *
 * Bounds (struct kla_spdy_limits): the payload of one frame, the size of a header block after
 * decompression (a small compressed frame cannot inflate into more), the number of headers in a
 * block and the lengths of names and values, and the number of streams open at once (a new stream
 * beyond it is refused with RST_STREAM REFUSED_STREAM). A frame over the bound, a malformed frame
 * or a header block that does not decompress is a session error: kla_spdy_feed() queues a GOAWAY
 * (PROTOCOL_ERROR) and returns a negative errno; the caller closes the connection.
 *
 * Flow control. SPDY/3.1 has per-stream windows (initial 64 KiB, changed by SETTINGS
 * INITIAL_WINDOW_SIZE) and a session window (stream 0, 64 KiB), both opened by WINDOW_UPDATE. The
 * session keeps both for each direction. Kubernetes' own SPDY library (spdystream) neither sends
 * nor obeys WINDOW_UPDATE, so the sending side only enforces the peer's windows once the peer has
 * shown that it does flow control (it sent SETTINGS with INITIAL_WINDOW_SIZE or any WINDOW_UPDATE);
 * every session sends such a SETTINGS frame first, so two cliqo peers enforce windows from the
 * first byte. Received data is never refused for overrunning a window (the peer may not know), and
 * the receiving application says what it has consumed (kla_spdy_consumed()), which opens the
 * windows again with WINDOW_UPDATE once half of a window is used: a slow consumer stops a
 * flow-controlling peer, and the transport's own backpressure (stop reading) stops the others.
 *
 * Ownership: headers passed to callbacks are borrowed for the duration of the call. Strings given
 * to the send functions are copied into the output before they return. Single-threaded. */
#ifndef CLIQO_KUBELETAPI_SPDY_H
#define CLIQO_KUBELETAPI_SPDY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KLA_SPDY_VERSION        3
#define KLA_SPDY_HEADER_LEN     8
#define KLA_SPDY_MAX_LENGTH     0xffffffu /* the 24-bit length field */
#define KLA_SPDY_INITIAL_WINDOW 65536u
#define KLA_SPDY_MAX_WINDOW     0x7fffffffu
#define KLA_SPDY_DICT_LEN       1423
#define KLA_SPDY_MAX_HEADERS    64 /* hard bound of struct kla_spdy_headers */

enum kla_spdy_type {
    KLA_SPDY_DATA = 0, /* not a control type: the type of a data frame in struct kla_spdy_frame */
    KLA_SPDY_SYN_STREAM = 1,
    KLA_SPDY_SYN_REPLY = 2,
    KLA_SPDY_RST_STREAM = 3,
    KLA_SPDY_SETTINGS = 4,
    KLA_SPDY_PING = 6,
    KLA_SPDY_GOAWAY = 7,
    KLA_SPDY_HEADERS = 8,
    KLA_SPDY_WINDOW_UPDATE = 9,
};

#define KLA_SPDY_FLAG_FIN            0x01
#define KLA_SPDY_FLAG_UNIDIRECTIONAL 0x02

/* RST_STREAM status codes. */
enum kla_spdy_rst {
    KLA_SPDY_PROTOCOL_ERROR = 1,
    KLA_SPDY_INVALID_STREAM = 2,
    KLA_SPDY_REFUSED_STREAM = 3,
    KLA_SPDY_UNSUPPORTED_VERSION = 4,
    KLA_SPDY_CANCEL = 5,
    KLA_SPDY_INTERNAL_ERROR = 6,
    KLA_SPDY_FLOW_CONTROL_ERROR = 7,
    KLA_SPDY_STREAM_IN_USE = 8,
    KLA_SPDY_STREAM_ALREADY_CLOSED = 9,
    KLA_SPDY_FRAME_TOO_LARGE = 11,
};

/* GOAWAY status codes. */
#define KLA_SPDY_GOAWAY_OK             0
#define KLA_SPDY_GOAWAY_PROTOCOL_ERROR 1
#define KLA_SPDY_GOAWAY_INTERNAL_ERROR 2

#define KLA_SPDY_SETTINGS_INITIAL_WINDOW_SIZE 7

/* One header: a lower-case name and its value (several values are separated by NULs). Pointers
 * into a buffer the owner keeps; neither is NUL-terminated. */
struct kla_spdy_header {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
};

struct kla_spdy_headers {
    struct kla_spdy_header h[KLA_SPDY_MAX_HEADERS];
    size_t n;
};

/* The first value of a header (up to the first NUL), copied NUL-terminated into buf; returns its
 * length, -ENOENT when absent, -ENAMETOOLONG when it does not fit. */
int kla_spdy_header_get(const struct kla_spdy_headers *h, const char *name, char *buf, size_t size);
/* Adds a header (name must be lower case; both borrowed until the headers are sent). Returns 0,
 * -EINVAL or -ENOSPC. */
int kla_spdy_header_add(struct kla_spdy_headers *h, const char *name, const char *value);

/* ---- codec --------------------------------------------------------------------------------- */

/* The SPDY/3 header compression dictionary (KLA_SPDY_DICT_LEN bytes). */
const uint8_t *kla_spdy_dictionary(void);

/* A frame header and its payload, as parsed. */
struct kla_spdy_frame {
    bool control;
    uint16_t version; /* control frames */
    uint16_t type;    /* enum kla_spdy_type; KLA_SPDY_DATA for data frames */
    uint8_t flags;
    uint32_t length;        /* payload length */
    uint32_t stream_id;     /* data frames only (control frames carry it in the payload) */
    const uint8_t *payload; /* length bytes, borrowed from the input */
};

/* Parses one frame at the start of buf. Returns 0 with *f and *ret_consumed (8 + length), -EAGAIN
 * when buf does not hold the whole frame yet (*ret_consumed is then the total size needed, or 8
 * while the header itself is incomplete), or -E2BIG when the payload exceeds max_payload. */
int kla_spdy_frame_parse(const uint8_t *buf, size_t len, size_t max_payload,
                         struct kla_spdy_frame *f, size_t *ret_consumed);

/* Decodes an uncompressed header block into h (pointers into block). Names must be non-empty,
 * lower case, unique, without NUL; values may hold NUL-separated lists (no empty list element at
 * either end). Returns 0, -EPROTO (malformed, trailing bytes) or -E2BIG (more than max_headers, a
 * name over max_name or a value over max_value). */
int kla_spdy_block_decode(const uint8_t *block, size_t len, size_t max_headers, size_t max_name,
                          size_t max_value, struct kla_spdy_headers *h);
/* Encodes h as an uncompressed header block into out (size bytes); returns the length, or -ENOSPC
 * / -EINVAL (a name that is empty or not lower case). */
int kla_spdy_block_encode(const struct kla_spdy_headers *h, uint8_t *out, size_t size);

/* ---- session ------------------------------------------------------------------------------- */

struct kla_spdy_session;

struct kla_spdy_limits {
    size_t max_frame;        /* largest frame payload accepted; default 1 MiB */
    size_t max_header_block; /* a decompressed header block; default 64 KiB */
    size_t max_headers;      /* headers in one block; default 64 (at most KLA_SPDY_MAX_HEADERS) */
    size_t max_name;         /* default 256 */
    size_t max_value;        /* default 8 KiB */
    size_t max_streams;      /* open at once; default 16 */
    uint32_t recv_window;    /* initial window offered to the peer per stream; default 256 KiB */
    size_t max_data_frame;   /* data frames sent are cut to this; default 32 KiB */
};

/* Application callbacks; all optional but output. A callback that returns a negative errno makes
 * kla_spdy_feed() stop and return it (a session error). */
struct kla_spdy_callbacks {
    /* Bytes to send, in order. Return 0 or a negative errno. */
    int (*output)(void *data, const uint8_t *buf, size_t len);
    /* A stream the peer opened (already in the stream table; refused streams are not reported). */
    int (*syn_stream)(void *data, uint32_t id, const struct kla_spdy_headers *h, bool fin);
    int (*syn_reply)(void *data, uint32_t id, const struct kla_spdy_headers *h, bool fin);
    int (*headers)(void *data, uint32_t id, const struct kla_spdy_headers *h, bool fin);
    /* Data of an open stream (len may be 0 with fin). Frames for streams that are not open (a
     * stream this side reset or closed, whose frames were in flight) are dropped and counted. */
    int (*data)(void *data, uint32_t id, const uint8_t *buf, size_t len, bool fin);
    /* The peer reset the stream; it is gone from the table when this runs. */
    void (*rst)(void *data, uint32_t id, uint32_t status);
    void (*goaway)(void *data, uint32_t last_good_id, uint32_t status);
    /* The peer's windows opened: streams blocked by flow control may send again. */
    void (*window)(void *data, uint32_t id);
};

struct kla_spdy_stats {
    uint64_t frames_in, frames_out, data_in, data_out;
    uint64_t dropped_frames; /* data or control frames for streams not open */
    uint64_t refused_streams;
    size_t open_streams;
};

/* Creates a session (server: streams it opens have even IDs; client: odd) and sends its SETTINGS
 * frame. lim may be NULL (defaults). Returns 0, -EINVAL or -ENOMEM. */
int kla_spdy_session_new(bool server, const struct kla_spdy_limits *lim,
                         const struct kla_spdy_callbacks *cb, void *data,
                         struct kla_spdy_session **ret);
/* NULL-safe; returns NULL. */
struct kla_spdy_session *kla_spdy_session_free(struct kla_spdy_session *s);

/* Feeds received bytes (any split). Returns 0, or a negative errno on a session error (-EPROTO,
 * -E2BIG, -ENOMEM, or a callback's error): a GOAWAY has then been sent (unless output failed) and
 * the session accepts nothing more. */
int kla_spdy_feed(struct kla_spdy_session *s, const uint8_t *buf, size_t len);

/* Opens a stream; *ret_id is its ID. Returns 0, -ENOSPC (too many streams, or IDs exhausted),
 * -ESHUTDOWN (GOAWAY sent or received), -EINVAL or an output error. */
int kla_spdy_syn_stream(struct kla_spdy_session *s, const struct kla_spdy_headers *h, bool fin,
                        uint32_t *ret_id);
int kla_spdy_syn_reply(struct kla_spdy_session *s, uint32_t id, const struct kla_spdy_headers *h,
                       bool fin);
/* Sends data (cut into frames of max_data_frame). With flow control enforced it sends at most
 * what the windows allow and returns the number of bytes taken (possibly fewer than len; then fin
 * is not sent); otherwise all of it. -ENOENT: no such open stream; -EPIPE: this side already
 * sent FIN. */
int kla_spdy_data(struct kla_spdy_session *s, uint32_t id, const void *buf, size_t len, bool fin);
/* How many bytes kla_spdy_data would take now (SIZE_MAX without enforcement); 0 for a closed
 * stream. */
size_t kla_spdy_send_window(const struct kla_spdy_session *s, uint32_t id);
/* Resets a stream (removes it from the table). Returns 0, -ENOENT or an output error. */
int kla_spdy_rst(struct kla_spdy_session *s, uint32_t id, uint32_t status);
int kla_spdy_ping(struct kla_spdy_session *s, uint32_t id);
int kla_spdy_goaway(struct kla_spdy_session *s, uint32_t status);
/* The application consumed n bytes received on the stream: opens the stream and session windows
 * (WINDOW_UPDATE) once half of a window is used. */
int kla_spdy_consumed(struct kla_spdy_session *s, uint32_t id, size_t n);

/* The stream is in the table: opened, and neither reset nor closed by both sides (a stream whose
 * two sides have sent FIN is forgotten). */
bool kla_spdy_stream_open(const struct kla_spdy_session *s, uint32_t id);
/* The peer does flow control, so this side obeys its windows. */
bool kla_spdy_flow_enforced(const struct kla_spdy_session *s);
void kla_spdy_stats(const struct kla_spdy_session *s, struct kla_spdy_stats *ret);

#endif
