/* peering/token: the peering token of the auth endpoint, and a limiter of failed attempts.
 *
 * Token: 32 bytes from RAND_bytes written as 64 lowercase hex digits (256 bits). The format check
 * is strict: exactly 64 characters of [0-9a-f], no whitespace, no upper case (a CLI reading a token
 * typed by a user may lowercase and trim it first). peer_token_equal() compares two tokens in time
 * that does not depend on where they differ: it hashes both with SHA-256 and compares the two
 * digests with CRYPTO_memcmp, so only the lengths of the inputs (public: 64) influence timing.
 *
 * Limiter: at most `max_failures` failed attempts per client address in any sliding window of
 * `window_ms` (defaults 5 per 60 s, as docs/peering.md says). The table holds at most `capacity`
 * addresses (default 1,024); when it is full, the address whose last failure is oldest is evicted.
 * Time is given by the caller (`now_ms`, any monotonic millisecond clock), so the limiter is
 * deterministic and testable; a clock that goes backwards makes entries count longer, never less.
 * Addresses are opaque strings chosen by the caller (the peer's IP without the port), 1 to
 * PEER_LIMITER_ADDR_MAX bytes.
 *
 * The limiter never refuses a right token: many clients can share one source address (a NodePort,
 * a NAT), so a blocked address must not lock out the legitimate peer behind it. The endpoint calls
 * peer_token_verdict() per request: it compares the token first (constant time) and returns
 * PEER_VERDICT_OK for a right one without looking at the limiter; only a wrong token is counted
 * (PEER_VERDICT_WRONG: 403) or, once its address is over the limit, refused without being counted
 * (PEER_VERDICT_LIMITED: 429, Retry-After). A right token does not reset the count of its address
 * either: that would give a wrong-token guesser behind the same address a fresh budget.
 * Not thread-safe: one limiter belongs to one event loop. */
#ifndef CLIQO_PEERING_TOKEN_H
#define CLIQO_PEERING_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PEER_TOKEN_BYTES 32
#define PEER_TOKEN_LEN   64 /* hex digits */

#define PEER_LIMITER_DEFAULT_MAX      5
#define PEER_LIMITER_DEFAULT_WINDOW   60000 /* ms */
#define PEER_LIMITER_DEFAULT_CAPACITY 1024
#define PEER_LIMITER_MAX_FAILURES     64 /* upper bound of max_failures */
#define PEER_LIMITER_MAX_CAPACITY     (1u << 16)
#define PEER_LIMITER_ADDR_MAX         95 /* an IPv6 address with a zone fits */

/* Writes a new token and its NUL into ret. Returns 0 or -EIO when the random generator fails. */
int peer_token_generate(char ret[PEER_TOKEN_LEN + 1]);

/* True when `s` (NULL allowed: false) has the token format. */
bool peer_token_valid(const char *s);

/* True when both tokens are equal (constant time in their contents, see above). NULL never
 * equals anything. Does not check the format. */
bool peer_token_equal(const char *a, const char *b);

/* Single-use tokens (docs/peering.md, "Tokens"): `cliqoctl generate-add-command` keeps only the
 * token's SHA-256 (64 lowercase hex digits) in a Secret named PEER_TOKEN_SECRET_PREFIX followed by
 * the first PEER_TOKEN_NAME_HEX digits of it. ret_hex gets the digest of `token` (which must have
 * the token format). Returns 0, -EINVAL or -EIO. */
#define PEER_TOKEN_DIGEST_LEN 64
#define PEER_TOKEN_NAME_HEX   32
int peer_token_digest(const char *token, char ret_hex[PEER_TOKEN_DIGEST_LEN + 1]);

/* True when two digests (hex, any length) are equal, in constant time for equal lengths. */
bool peer_token_digest_equal(const char *a, const char *b);

struct peer_limiter;

/* Creates a limiter; 0 in any argument takes the default. Returns 0, -EINVAL (max_failures over
 * PEER_LIMITER_MAX_FAILURES, capacity over PEER_LIMITER_MAX_CAPACITY) or -ENOMEM. */
int peer_limiter_new(unsigned max_failures, uint64_t window_ms, size_t capacity,
                     struct peer_limiter **ret);

/* NULL-safe; returns NULL. */
struct peer_limiter *peer_limiter_free(struct peer_limiter *l);

/* True when `addr` has max_failures failures within the window ending at now_ms: the caller must
 * refuse the attempt without looking at it (and without counting it as a failure). When blocked
 * and ret_retry_ms is not NULL, *ret_retry_ms is how long until the oldest counted failure leaves
 * the window (at least 1). An invalid address is never blocked. */
bool peer_limiter_check(const struct peer_limiter *l, const char *addr, uint64_t now_ms,
                        uint64_t *ret_retry_ms);

/* Records a failed attempt of `addr` at now_ms. Returns 0, or -EINVAL (bad address). */
int peer_limiter_fail(struct peer_limiter *l, const char *addr, uint64_t now_ms);

/* Forgets `addr` (after a successful attempt). Unknown addresses are ignored. */
void peer_limiter_reset(struct peer_limiter *l, const char *addr);

enum peer_verdict {
    PEER_VERDICT_OK,      /* right token: go on, whatever the limiter says */
    PEER_VERDICT_WRONG,   /* wrong token, counted as a failure of addr: 403 */
    PEER_VERDICT_LIMITED, /* wrong token from an address over the limit, not counted: 429 */
};

/* Judges one attempt that presents `given` (NULL or "" allowed: wrong) where `expected` is the
 * current token (NULL or "": every token is wrong, e.g. before the token Secret was read). On
 * PEER_VERDICT_LIMITED and ret_retry_ms not NULL, *ret_retry_ms is as for peer_limiter_check(). */
enum peer_verdict peer_token_verdict(struct peer_limiter *l, const char *addr, const char *expected,
                                     const char *given, uint64_t now_ms, uint64_t *ret_retry_ms);

/* How many addresses the table holds (for tests and metrics). */
size_t peer_limiter_size(const struct peer_limiter *l);

#endif
