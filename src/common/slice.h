/* slice: one budget of time per event-loop iteration, shared by every job of the thread that
 * cuts long work into slices (an informer decoding a large list, the agent replaying a cache to its
 * modules, the broadcaster applying staged pods), so that together, not each, they hold the loop
 * for about SLICE_BUDGET_NS per iteration and a health probe, a lease renewal or a peer's request
 * waits no longer than that.
 *
 * How an iteration is told from the next: jobs run from timer and idle callbacks only (never from
 * I/O callbacks). libuv updates the loop's time (uv_now) once before it runs the timers and the
 * idle handles, and again after polling; so every timer and idle callback of one iteration reads
 * the same uv_now, and the budget starts again when uv_now moves. Two iterations within the same
 * millisecond share one budget: the second gets less, never more.
 *
 * A job does one piece of its work (tens of microseconds to a few hundred), then calls slice_left()
 * before each further piece and stops when it returns false, to go on at the next iteration. The
 * first piece is unconditional so that no job is starved by the ones before it in the iteration:
 * the overshoot is at most one piece per job. The budget is wall time (uv_hrtime): on a busy
 * machine a slice holds less CPU, never more.
 *
 * State is per thread (one loop per thread, c-conventions); nothing to set up or free. */
#ifndef CLIQO_COMMON_SLICE_H
#define CLIQO_COMMON_SLICE_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#define SLICE_BUDGET_NS (3 * 1000 * 1000ull)

/* The budget of this iteration has time left (starting it at the first call of an iteration). */
bool slice_left(uv_loop_t *loop);
/* The CPU time left in this iteration's budget, in nanoseconds (0: spent). */
uint64_t slice_remaining(uv_loop_t *loop);

/* For tests: the budget of the iteration at loop time tick, with the clock read from now_ns()
 * instead of uv_hrtime (NULL: uv_hrtime). */
uint64_t slice_remaining_at(uv_loop_t *loop, uint64_t tick, uint64_t (*now_ns)(void));

#endif
