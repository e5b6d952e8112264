/* workqueue: client-go work queue semantics (queue + delaying + per-key rate limiting), driven by
 * a libuv loop.
 *
 * Keys (strings such as "namespace/name") are queued and handed to the process function from the
 * loop, in FIFO order, with at most max_concurrent keys being processed at once. A key is
 * processed until the caller reports wq_done(); processing may be asynchronous.
 *
 * Invariants (as in client-go):
 *   - A key waiting in the queue is queued once: adding it again is a no-op.
 *   - The same key is never processed concurrently. A key added while it is being processed is
 *     marked dirty and queued again (once) when wq_done() is called for it.
 *   - wq_add_after() keeps, per key, the earliest of the requested times.
 *   - wq_add_rate_limited() delays a key by base_delay_ms * 2^failures, capped at max_delay_ms,
 *     then counts one more failure; wq_forget() resets the count. The delay is deterministic
 *     (client-go's per-item limiter has no jitter either).
 *
 * Dispatch happens from a uv_idle handle, active only while a key can be dispatched, in batches;
 * never inside wq_add() or wq_done(). Delayed keys wait in a min-heap woken by one uv timer; time
 * is measured with uv_hrtime().
 *
 * Limits: keys are 1..WQ_MAX_KEY_LEN bytes. The queue tracks at most max_keys distinct keys at a
 * time: keys waiting, delayed, being processed, or carrying a failure count (call wq_forget()
 * when a key succeeds, as with client-go, or its count is kept). Adding a key that is not
 * tracked yet when max_keys are fails with -ENOSPC; adding a tracked key never needs memory.
 * Every lookup is O(1) on average (a seeded hash table).
 *
 * Ownership: keys are copied. The queue belongs to the caller until wq_close(); it is freed after
 * its uv handles have closed, before the close callback. The loop is borrowed. Not thread-safe:
 * every call is made from the loop's thread. */
#ifndef CLIQO_KUBE_WORKQUEUE_H
#define CLIQO_KUBE_WORKQUEUE_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define WQ_MAX_KEY_LEN         512
#define WQ_DEFAULT_BASE_DELAY  5ULL       /* ms, client-go DefaultControllerRateLimiter */
#define WQ_DEFAULT_MAX_DELAY   1000000ULL /* ms (1000 s), idem */
#define WQ_DEFAULT_MAX_KEYS    1048576
#define WQ_DEFAULT_CONCURRENCY 1

struct wq_queue;

/* Options; a zeroed field (or a NULL options pointer) selects the default. */
struct wq_options {
    unsigned max_concurrent; /* keys processed at once (default 1) */
    uint64_t base_delay_ms;  /* first rate-limited delay (default 5 ms) */
    uint64_t max_delay_ms;   /* cap of the rate-limited delay (default 1000 s); >= base */
    size_t max_keys;         /* distinct keys tracked at once (default 1048576) */
};

/* Processes `key` (borrowed: valid until wq_done() is called for it). Runs from the loop. The
 * callee calls wq_done(q, key) when finished, now or from a later callback; it may add keys,
 * including this one, and may call wq_shutdown() or wq_close(). */
typedef void (*wq_process_fn)(struct wq_queue *q, const char *key, void *data);

/* Called once when a closed queue has been freed. */
typedef void (*wq_close_cb)(void *data);

/* Creates a queue. Returns NULL on bad arguments (NULL loop or fn, base > max delay) or OOM. */
struct wq_queue *wq_new(uv_loop_t *loop, const struct wq_options *opts, wq_process_fn fn,
                        void *data);

/* Queues key for processing (see the invariants above). Returns 0 (also when the key was already
 * queued or is marked dirty), -EINVAL (NULL or empty key), -ENAMETOOLONG, -ENOSPC (max_keys),
 * -ENOMEM, or -ESHUTDOWN after wq_shutdown() / wq_close(). */
int wq_add(struct wq_queue *q, const char *key);

/* Queues key once delay_ms have passed (0: wq_add() now). If the key is already waiting for a
 * later time, the earlier time wins. Same returns as wq_add(). */
int wq_add_after(struct wq_queue *q, const char *key, uint64_t delay_ms);

/* wq_add_after() with the key's backoff, base_delay_ms * 2^failures capped at max_delay_ms, then
 * counts a failure. Same returns as wq_add(). */
int wq_add_rate_limited(struct wq_queue *q, const char *key);

/* Queues key again at once as the next step of its own processing (a write that succeeded, with
 * more to do), counting the key's streak: how many times in a row it was queued this way with no
 * other add between (wq_add, wq_add_after, wq_add_rate_limited reset it; so does the key leaving
 * the queue). Past `limit` in a row (limit > 0), the key is not queued at once but delayed by
 * base_delay_ms * 2^(streak - limit - 1), capped at max_delay_ms: a processor whose passes write
 * and go again with nothing changing (a write that changes nothing brings no event) slows down
 * instead of spinning, and the next event brings it back at once. Not in client-go. Returns the
 * streak (>= 1) or wq_add()'s negative errno; -EINVAL when limit is 0. */
int wq_add_again(struct wq_queue *q, const char *key, uint32_t limit);

/* Resets the key's failure count (a no-op for an unknown key). */
void wq_forget(struct wq_queue *q, const char *key);

/* The key's failure count: how many times wq_add_rate_limited() was called since the last
 * wq_forget(). 0 for an unknown key, -EINVAL for NULL arguments. */
int wq_num_requeues(struct wq_queue *q, const char *key);

/* Reports that the processing of key has finished. If the key was added meanwhile it is queued
 * again. A key that is not being processed is ignored. */
void wq_done(struct wq_queue *q, const char *key);

/* Number of keys waiting to be processed (not counting delayed or processing ones). */
size_t wq_len(const struct wq_queue *q);

/* Number of keys being processed (handed to fn and not yet done). */
size_t wq_processing(const struct wq_queue *q);

/* Stops the queue: waiting and delayed keys and failure counts are dropped, nothing more is
 * dispatched, and adds fail with -ESHUTDOWN. Keys being processed may still be reported with
 * wq_done(). Idempotent; NULL is a no-op. */
void wq_shutdown(struct wq_queue *q);

/* Shuts the queue down and frees it from the loop once its handles have closed, then calls
 * close_cb(data) (may be NULL). Keys still being processed are abandoned: their callers must not
 * call wq_done() after close_cb has run (between wq_close() and close_cb it is a safe no-op).
 * May be called from the process function. NULL is a no-op; a second call is ignored. */
void wq_close(struct wq_queue *q, wq_close_cb close_cb, void *data);

#endif
