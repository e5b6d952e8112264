/* kla_http: the HTTP/1.1 pieces of the kubelet API, pure and bounded (no I/O): request and
 * response heads, query strings, the kubelet's routes, chunked bodies, and the remotecommand
 * helpers (protocol negotiation, the status written on the error stream, resize messages).
 *
 * Heads are parsed strictly: CRLF line ends, a request line "METHOD SP target SP HTTP/1.x", header
 * names of token characters, values without control characters (but HTAB), no obsolete line
 * folding, at most KLA_HTTP_MAX_HEAD bytes and KLA_HTTP_MAX_HEADERS headers. Parsed heads point
 * into the caller's buffer. */
#ifndef CLIQO_KUBELETAPI_HTTP_H
#define CLIQO_KUBELETAPI_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "kubeletapi/kubeletapi.h"

#define KLA_HTTP_MAX_HEAD    16384
#define KLA_HTTP_MAX_HEADERS 64
#define KLA_HTTP_MAX_TARGET  8192

struct kla_http_header {
    const char *name, *value; /* not NUL-terminated */
    size_t name_len, value_len;
};

struct kla_http_head {
    /* request */
    const char *method, *target;
    size_t method_len, target_len;
    /* response */
    unsigned status;
    const char *reason;
    size_t reason_len;
    int minor; /* HTTP/1.<minor> */
    struct kla_http_header h[KLA_HTTP_MAX_HEADERS];
    size_t n;
    size_t head_len; /* bytes of the head, the blank line included */
};

/* Return 0 (head_len set), -EAGAIN (no complete head yet), -EINVAL (malformed) or -E2BIG (over
 * the bounds). */
int kla_http_parse_request(const char *buf, size_t len, struct kla_http_head *ret);
int kla_http_parse_response(const char *buf, size_t len, struct kla_http_head *ret);

/* The value of the first header of that name (case-insensitive) copied NUL-terminated into buf;
 * returns its length, -ENOENT or -ENAMETOOLONG. */
int kla_http_header(const struct kla_http_head *h, const char *name, char *buf, size_t size);
/* Some header of that name holds `token` in its comma-separated list (case-insensitive). */
bool kla_http_has_token(const struct kla_http_head *h, const char *name, const char *token);
/* All values of the headers of that name, joined with ", " into buf. Returns the length or
 * -ENAMETOOLONG. */
int kla_http_join(const struct kla_http_head *h, const char *name, char *buf, size_t size);
/* Content-Length: 0 with *ret, -ENOENT when absent, -EINVAL when malformed or repeated with
 * different values. */
int kla_http_content_length(const struct kla_http_head *h, uint64_t *ret);

/* ---- query strings ------------------------------------------------------------------------- */

/* The next key=value pair of a query (without '?'); '+' and %XX are decoded. *cursor advances.
 * Returns 1 with a pair, 0 at the end, -EINVAL (a bad escape, a decoded NUL) or -E2BIG (a key or
 * value over its buffer). A key without '=' has an empty value. */
int kla_query_next(const char **cursor, const char *end, char *key, size_t ksize, char *val,
                   size_t vsize);
/* The first value of key: 0, -ENOENT, or the errors of kla_query_next. */
int kla_query_get(const char *query, size_t len, const char *key, char *val, size_t vsize);
/* Appends "key=value" (percent-encoded) to buf with '&' when not at the start. Returns the new
 * length or -ENOSPC. */
int kla_query_append(char *buf, size_t size, size_t len, const char *key, const char *value);

/* ---- routes -------------------------------------------------------------------------------- */

enum kla_route {
    KLA_ROUTE_HEALTHZ,
    KLA_ROUTE_LOGS,
    KLA_ROUTE_EXEC,
};

/* Splits a request target into path and query (pointers into target). */
void kla_target_split(const char *target, size_t len, const char **ret_path, size_t *ret_path_len,
                      const char **ret_query, size_t *ret_query_len);
/* Parses a path (percent-decoded segment by segment): /healthz, /containerLogs/{ns}/{pod}/
 * {container}, /exec/{ns}/{pod}/{container} or /exec/{ns}/{pod}/{uid}/{container}. Returns 0,
 * -ENOENT (not a route: 404) or -EINVAL (a route with an invalid name: 400). */
int kla_route_parse(const char *path, size_t len, enum kla_route *ret, struct kla_pod_ref *ref);

/* Go's strconv.ParseBool: 1 t T TRUE true True / 0 f F FALSE false False. */
int kla_parse_bool(const char *s, bool *ret);

/* ---- chunked bodies ------------------------------------------------------------------------ */

struct kla_chunked {
    int state;
    uint64_t remaining; /* bytes left in the current chunk */
    size_t line;        /* length of the size line or trailer line so far */
    bool done;
};

/* Decodes a chunked body incrementally: out(data, p, n) gets the payload. Returns the number of
 * bytes consumed (fewer than len only once the body is complete: c->done), or -EPROTO (malformed,
 * a size over 2^48, a line over 4 KiB) or out's error. */
ssize_t kla_chunked_feed(struct kla_chunked *c, const char *buf, size_t len,
                         int (*out)(void *data, const char *p, size_t n), void *data);

/* ---- remotecommand ------------------------------------------------------------------------- */

enum kla_rc_proto {
    KLA_RC_NONE = 0,
    KLA_RC_V2 = 2, /* v2.channel.k8s.io: no resize, errors as text */
    KLA_RC_V3 = 3, /* v3.channel.k8s.io: resize */
    KLA_RC_V4 = 4, /* v4.channel.k8s.io: status as metav1.Status JSON */
};

/* The first of the client's protocols (comma-separated list, in its order of preference) that we
 * serve (v4, v3, v2), or KLA_RC_NONE. */
enum kla_rc_proto kla_rc_negotiate(const char *client_list);
const char *kla_rc_proto_name(enum kla_rc_proto p);
/* The bytes a kubelet writes on the error stream at the end of a command: v4 a metav1.Status
 * (Success; Failure NonZeroExitCode with cause ExitCode; Failure InternalError), v2/v3 nothing on
 * success and the error's text otherwise. exit_code < 0 is an internal error with message. Returns
 * the length (0: write nothing) or -ENOSPC. */
int kla_rc_status(enum kla_rc_proto p, int exit_code, const char *message, char *buf, size_t size);
/* Decodes a v4 status: 0 with *ret_exit_code (0 on Success), -EPROTO when it is not a Status,
 * -EREMOTEIO for another failure (message copied). */
int kla_rc_status_decode(const char *json, size_t len, int *ret_exit_code, char *msg, size_t msize);
/* The stream of a "streamtype" header value, or KLA_STREAM_MAX. */
enum kla_stream kla_rc_stream_type(const char *s);
const char *kla_rc_stream_name(enum kla_stream s);

/* Resize messages: JSON objects {"Width":W,"Height":H} one after the other (Go's json.Encoder
 * writes one per line). Bounded buffer of partial input. */
struct kla_rc_resize {
    char buf[512]; /* the message being read */
    size_t len;
    unsigned depth; /* nesting of the message so far (0: between messages) */
    bool in_str, esc;
};
/* Feeds bytes; cb runs for every complete message. Returns 0 or -EPROTO (not JSON, a message over
 * the buffer, sizes not in 0..65535). */
int kla_rc_resize_feed(struct kla_rc_resize *st, const char *p, size_t n,
                       void (*cb)(void *data, unsigned width, unsigned height), void *data);

#endif
