/* llag: how long the event loop's iterations keep it busy.
 *
 * A uv_check handle runs once per iteration, right after the loop has polled for I/O and run its
 * callbacks, and a uv_prepare handle right before the poll, to tell the I/O callbacks' share. The
 * CPU time the loop's thread used between two of its runs is what that iteration's callbacks took
 * (timers, I/O, prepares, closes): waiting for events uses none, and the time the machine gave to
 * other processes is not the loop's. It is how long an event that arrived meanwhile (a health
 * probe, a lease renewal, a peer's request) waited for the loop, on a machine with a free CPU. The
 * handle is unreferenced: it never keeps the loop alive.
 *
 * Ownership: the caller owns struct llag and the loop; llag_stop closes the handle (the struct must
 * stay valid until the loop has run the close). All calls on the loop's thread. */
#ifndef CLIQO_COMMON_LOOPLAG_H
#define CLIQO_COMMON_LOOPLAG_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <uv.h>

struct llag;
/* Called after each iteration with the CPU time it took, in nanoseconds. */
typedef void (*llag_fn)(struct llag *l, uint64_t busy_ns, void *data);

struct llag {
    uv_check_t check;
    uv_prepare_t prepare; /* runs just before the poll: splits an iteration in two */
    uint64_t last_cpu_ns; /* the thread's CPU time at the previous run */
    uint64_t poll_cpu_ns; /* the thread's CPU time when this iteration's poll began */
    uint64_t max_ns;      /* the busiest iteration since llag_start */
    uint64_t max_io_ns;   /* of which from the poll on (I/O callbacks) */
    uint64_t last_faults; /* the thread's page faults (minor and major) at the previous run */
    uint64_t max_faults;  /* page faults during the busiest iteration */
    uint64_t iterations;  /* iterations measured */
    timer_t trace_timer;  /* llag_trace */
    unsigned trace_ms;    /* 0: not tracing */
    llag_fn fn;
    void *data;
    bool running;
};

/* Starts measuring from now (fn may be NULL). 0 or a negative errno. */
int llag_start(struct llag *l, uv_loop_t *loop, llag_fn fn, void *data);
/* Stops and closes the handles; NULL-safe, idempotent. */
void llag_stop(struct llag *l);
/* The busiest iteration measured since llag_start, in seconds, and the page faults the loop thread
 * took during it (getrusage RUSAGE_THREAD: a busy iteration full of them waited on memory, not on
 * its own code). */
double llag_max_seconds(const struct llag *l);
uint64_t llag_max_faults(const struct llag *l);
/* Of the busiest iteration, the CPU time from the poll on, in seconds: the I/O callbacks (sockets
 * read, requests served); the rest went to timers, idle and prepare callbacks, where the sliced
 * jobs run (common/slice.h). */
double llag_max_io_seconds(const struct llag *l);
/* The calling thread's page faults so far (minor and major), 0 when unknown. */
uint64_t llag_thread_faults(void);

/* Diagnostics: from now on, when an iteration has used more than threshold_ms of CPU, the loop
 * thread writes a backtrace to standard error (a line "loop stall trace: iteration I at U us (wall
 * T ms)", U the iteration's CPU time so far and T the time of day in epoch milliseconds, then the
 * frames),
 * then again every 2 ms of CPU while that iteration goes on. A CPU-time timer of the thread drives
 * it (SIGPROF); it is re-armed after each iteration. For finding what holds the loop, not for
 * normal runs. 0 or a negative errno. */
int llag_trace(struct llag *l, unsigned threshold_ms);

/* The calling thread's CPU time in nanoseconds (CLOCK_THREAD_CPUTIME_ID). */
uint64_t llag_thread_cpu_ns(void);
/* The time an iteration took from two readings of the thread's CPU time; 0 when the readings went
 * backwards. Exposed for the unit test. */
uint64_t llag_busy_ns(uint64_t prev_cpu_ns, uint64_t now_cpu_ns);

#endif
