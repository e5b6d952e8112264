/* ratelimit: client-side token bucket (client-go flowcontrol), driven by a libuv loop.
 *
 * The bucket holds at most `burst` tokens and refills at `qps` tokens per second; it starts full.
 * rl_acquire() reserves the next token at once (the bucket may go negative: that is the queue of
 * reservations) and calls the callback on the loop when the reserved token's time has come. So
 * waiters are served in FIFO order and rl_try_acquire() can never jump ahead of them.
 *
 * Time is measured with uv_hrtime() (nanoseconds); a uv timer, armed for the first waiter,
 * wakes the loop. A callback never runs inside rl_acquire(), even when a token is free: it runs
 * from the loop on its next timer phase.
 *
 * Ownership: the limiter belongs to the caller until rl_close(); it is freed from the loop once
 * its uv handle has closed, just before the close callback runs. The loop is borrowed and must
 * outlive the limiter. Waiter records are allocated per rl_acquire() and are bounded only by the
 * callers: the limiter sits behind code that bounds its own in-flight work (requests, queue
 * workers).
 *
 * Not thread-safe: every call is made from the loop's thread. */
#ifndef CLIQO_KUBE_RATELIMIT_H
#define CLIQO_KUBE_RATELIMIT_H

#include <uv.h>

struct rl_limiter;

/* Called once per successful rl_acquire(): status is 0 when the token is granted, -ECANCELED
 * when the limiter was closed first (the token is then not granted). `data` is the caller's. */
typedef void (*rl_ready_cb)(struct rl_limiter *l, int status, void *data);

/* Called once, last, when a closed limiter has been freed. */
typedef void (*rl_close_cb)(void *data);

/* Creates a limiter with a full bucket. qps must be finite and > 0, burst >= 1.
 * Returns NULL on bad arguments or OOM. */
struct rl_limiter *rl_new(uv_loop_t *loop, double qps, int burst);

/* Queues a request for one token; cb(l, 0, data) runs from the loop when it is granted, in FIFO
 * order with other waiters. Returns 0, -EINVAL (NULL argument), -ENOMEM, or -ECANCELED once
 * rl_close() has been called (cb is then never called). */
int rl_acquire(struct rl_limiter *l, rl_ready_cb cb, void *data);

/* Takes a token now if one is free. Returns 1 if taken, 0 if not (or closed / NULL). */
int rl_try_acquire(struct rl_limiter *l);

/* Changes the refill rate (qps finite and > 0; else ignored). Tokens already earned are kept, and
 * the waiters' due times are computed again at the new rate, in their order. */
void rl_set_qps(struct rl_limiter *l, double qps);

/* Changes the bucket's size (burst >= 1; else ignored); tokens above it are dropped. */
void rl_set_burst(struct rl_limiter *l, int burst);

/* Number of waiters not yet called back. */
size_t rl_waiting(const struct rl_limiter *l);

/* Closes the limiter: further rl_acquire() calls fail with -ECANCELED. From the loop, every
 * pending waiter is called with -ECANCELED (in FIFO order), then close_cb(data) (may be NULL),
 * and the limiter is freed. May be called from a waiter callback. NULL is a no-op; a second call
 * is ignored. */
void rl_close(struct rl_limiter *l, rl_close_cb close_cb, void *data);

#endif
