/* backoff, heap timers: two small pieces every reconnecting component of the client shares.
 *
 * backoff_next() gives capped exponential delays with +-25% jitter, so that many clients of a
 * restarted apiserver do not come back in lockstep. ktimer_new()/ktimer_free() own a uv_timer_t on
 * the heap for objects that may be freed while the loop still holds the handle: ktimer_free stops
 * the timer and frees it from its close callback. */
#ifndef CLIQO_KUBE_BACKOFF_H
#define CLIQO_KUBE_BACKOFF_H

#include <stdint.h>
#include <uv.h>

struct backoff {
    uint64_t base_ms, max_ms;
    uint64_t cur_ms; /* 0: the next delay is the base */
};

void backoff_init(struct backoff *b, uint64_t base_ms, uint64_t max_ms);
/* The next delay: base, 2*base, ... capped at max, each with +-25% jitter. */
uint64_t backoff_next(struct backoff *b);
/* Success: the next failure starts again from the base. */
void backoff_reset(struct backoff *b);
/* A random number from 0 to span, both included, for jitter (never for secrets): one generator per
 * thread, seeded from the clock and the process the first time, so that clients of the same
 * server in different processes do not draw the same delays. */
uint64_t backoff_jitter(uint64_t span);

/* A heap-allocated, initialised timer with ->data set; NULL when out of memory. */
uv_timer_t *ktimer_new(uv_loop_t *loop, void *data);
/* Stops the timer and frees it once the loop has closed it. NULL-safe. */
void ktimer_free(uv_timer_t *t);

#endif
