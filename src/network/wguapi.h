/* wguapi: WireGuard's configuration as data, and the text protocol of its cross-platform userspace
 * API (docs/dataplane.md, "The gateway"). Pure: no socket and no event loop here; the gateway owns
 * the connection to `wireguard-go`'s socket and sends what these functions build.
 *
 * Keys are 32 bytes. TunnelEndpoints and Secrets carry them in base64 (44 characters, one '='),
 * the userspace API in hex (64 characters). A private key is clamped as X25519 wants (RFC 7748)
 * when it is generated.
 *
 * Requests. A "set" request is WG_UAPI_SET, then the device's lines (wg_uapi_device_lines, which
 * hold the private key: they go into a fixed buffer the caller wipes, never into a growing one that
 * would leave copies behind), then any number of peers' lines (wg_uapi_peer_lines,
 * wg_uapi_remove_lines), then WG_UAPI_END. The answer is "errno=N\n\n" (wg_uapi_set_result).
 * A "get" request is WG_UAPI_GET; its answer is read by wg_uapi_get_parse.
 *
 * Everything read comes from another process and is bounded: at most WG_MAX_PEERS peers,
 * WG_MAX_ALLOWED allowed IPs a peer, WG_UAPI_LINE_MAX bytes a line, WG_UAPI_MAX bytes in all.
 * Endpoints are numeric (an address and a port): no name is ever resolved. */
#ifndef CLIQO_NETWORK_WGUAPI_H
#define CLIQO_NETWORK_WGUAPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/strutil.h"
#include "network/ipam.h"

#define WG_KEY_LEN       32
#define WG_KEY_B64_LEN   44
#define WG_KEY_HEX_LEN   64
#define WG_ENDPOINT_MAX  56 /* "[" IPv6 "]:" port and the NUL */
#define WG_MAX_ALLOWED   8
#define WG_MAX_PEERS     4096
#define WG_UAPI_LINE_MAX 256
#define WG_UAPI_MAX      (4u << 20)
#define WG_UAPI_SET      "set=1\n"
#define WG_UAPI_GET      "get=1\n\n"
#define WG_UAPI_END      "\n"

struct wg_key {
    uint8_t b[WG_KEY_LEN];
};

/* Strict base64 of exactly 32 bytes (44 characters ending in one '='). Returns 0 or -EINVAL. */
int wg_key_parse(const char *b64, struct wg_key *ret);
/* The key in base64 and a NUL (WG_KEY_B64_LEN + 1 bytes). */
void wg_key_format(const struct wg_key *k, char *out);
bool wg_key_equal(const struct wg_key *a, const struct wg_key *b);
bool wg_key_is_zero(const struct wg_key *k);
/* A new private key (random, clamped). Returns 0 or -EIO. */
int wg_key_generate(struct wg_key *priv);
/* The public key of a private key (X25519). Returns 0 or -EIO. */
int wg_key_public(const struct wg_key *priv, struct wg_key *pub);
/* Wipes a key (it may be a private one). */
void wg_key_wipe(struct wg_key *k);

/* "a.b.c.d:port" or "[ipv6]:port" (port 1..65535, no zone, no name). Returns 0 or -EINVAL; *ret
 * is written only on success. */
int wg_endpoint_parse(const char *s, struct sockaddr_storage *ret);
/* The same forms. Returns the length, -EINVAL (no address) or -ENOSPC. */
int wg_endpoint_format(const struct sockaddr_storage *ss, char *buf, size_t size);

struct wg_peer {
    struct wg_key pub;
    struct sockaddr_storage endpoint; /* ss_family AF_UNSPEC: none */
    uint16_t keepalive_s;             /* 0: off */
    struct cidr allowed[WG_MAX_ALLOWED];
    size_t nallowed;
    /* Read back only (wg_uapi_get_parse): */
    int64_t last_handshake_s; /* Unix seconds, 0: never */
    uint64_t rx_bytes, tx_bytes;
};

struct wg_device {
    bool has_private;
    struct wg_key priv;
    uint16_t listen_port;
    struct wg_peer *peers; /* x_malloc'd by wg_uapi_get_parse */
    size_t npeers;
};

/* The device's lines of a set request: private key (when has_private), listen port, and
 * "replace_peers=true" when replace_peers. Returns the length written (with its NUL, buf holds a
 * string), -ENOSPC or -EINVAL (has_private with an all-zero key). */
int wg_uapi_device_lines(const struct wg_device *dev, bool replace_peers, char *buf, size_t size);
/* A peer's lines: it is created or updated, its endpoint and keepalive set (keepalive 0 turns it
 * off), its allowed IPs replaced by p->allowed. Returns 0, -EINVAL (zero key, nallowed too large,
 * an invalid CIDR) or sbuf_add's error. */
int wg_uapi_peer_lines(const struct wg_peer *p, struct sbuf *out);
/* The lines that remove a peer. Returns 0, -EINVAL or sbuf_add's error. */
int wg_uapi_remove_lines(const struct wg_key *pub, struct sbuf *out);

/* The answer to a set request: 0 for "errno=0\n\n", -N for errno=N (1..4095), -EPROTO for anything
 * else. */
int wg_uapi_set_result(const char *buf, size_t len);
/* The answer to a get request, into *ret (cleared first; free with wg_device_clear). Returns 0;
 * -N for an answer "errno=N"; -EPROTO for a malformed answer (a line without '=', a bad value, a
 * peer key before any public_key, no final errno line); -E2BIG past the bounds above; -ENOMEM.
 * err (may be NULL) says what was wrong, with the line's number. On failure *ret is empty. */
int wg_uapi_get_parse(const char *buf, size_t len, struct wg_device *ret, char *err, size_t errlen);
/* Frees the peers and wipes the private key. NULL-safe. */
void wg_device_clear(struct wg_device *dev);

#endif
