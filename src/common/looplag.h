/* llag: how long the event loop's iterations keep it busy.
 *
 * A uv_prepare handle runs once per iteration, just before the loop polls for I/O. The time between
 * two of its runs, less the time the loop spent waiting in that poll (libuv's idle-time metric,
 * which llag_start turns on), is what the iteration's callbacks took: timers, I/O, checks, closes.
 * It is how long an event that arrived meanwhile (a health probe, a lease renewal, a peer's
 * request) may have waited for the loop. The handle is unreferenced: it never keeps the loop alive.
 *
 * Ownership: the caller owns struct llag and the loop; llag_stop closes the handle (the struct must
 * stay valid until the loop has run the close). All calls on the loop's thread. */
#ifndef CLIQO_COMMON_LOOPLAG_H
#define CLIQO_COMMON_LOOPLAG_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

struct llag;
/* Called after each iteration with the time its callbacks took, in nanoseconds. */
typedef void (*llag_fn)(struct llag *l, uint64_t busy_ns, void *data);

struct llag {
    uv_prepare_t prep;
    uint64_t last_ns, last_idle_ns; /* at the previous run: the clock and the loop's idle total */
    uint64_t max_ns;                /* the busiest iteration since llag_start */
    uint64_t iterations;            /* iterations measured */
    llag_fn fn;
    void *data;
    bool primed, running;
};

/* Starts measuring (fn may be NULL). 0 or a negative errno (the loop cannot report idle time). */
int llag_start(struct llag *l, uv_loop_t *loop, llag_fn fn, void *data);
/* Stops and closes the handle; NULL-safe, idempotent. */
void llag_stop(struct llag *l);
/* The busiest iteration measured since llag_start, in seconds. */
double llag_max_seconds(const struct llag *l);

/* The time an iteration took from two readings of the clock and of the loop's idle total (both
 * nanoseconds, as uv_hrtime and uv_metrics_idle_time give them); 0 when the readings went
 * backwards. Exposed for the unit test. */
uint64_t llag_busy_ns(uint64_t prev_ns, uint64_t prev_idle_ns, uint64_t now_ns, uint64_t idle_ns);

#endif
