/* common/looplag: the busy time of an iteration from two readings of the thread's CPU time, and
 * the handle on a real loop (a callback that works 30 ms of CPU is measured; waiting is not). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/looplag.h"

static void test_busy_table(void **state)
{
    static const struct {
        uint64_t prev, now, want;
    } cases[] = {
        {1000, 1000, 0},             /* no CPU used */
        {1000, 6000, 5000},          /* 5 us of it */
        {6000, 1000, 0},             /* the reading went backwards */
        {0, UINT64_MAX, UINT64_MAX}, /* no overflow */
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_int_equal(llag_busy_ns(cases[i].prev, cases[i].now), cases[i].want);
}

struct run {
    struct llag lag;
    uint64_t sum_ns, calls;
    int fired;
};

static void on_iter(struct llag *l, uint64_t busy_ns, void *data)
{
    struct run *r = data;

    (void)l;
    r->sum_ns += busy_ns;
    r->calls++;
}

/* Works ms of the thread's CPU time (whatever the machine's load stretches it to in wall time). */
static void spin_cpu_ms(unsigned ms)
{
    uint64_t t0 = llag_thread_cpu_ns();

    while (llag_thread_cpu_ns() - t0 < ms * 1000000ull)
        ;
}

static void on_busy_timer(uv_timer_t *t)
{
    struct run *r = t->data;

    if (++r->fired == 1) {
        /* the first firing works, and touches 8 MiB of fresh memory (2,048 pages: a page fault
         * each); the next ones only wait for the timer */
        size_t len = (size_t)8 << 20;
        char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        assert_true(m != MAP_FAILED);
        (void)madvise(m, len, MADV_NOHUGEPAGE);
        for (size_t i = 0; i < len; i += 4096)
            m[i] = 1;
        munmap(m, len);
        spin_cpu_ms(30);
    }
    if (r->fired == 4)
        uv_timer_stop(t);
}

static void test_real_loop(void **state)
{
    uv_loop_t loop;
    uv_timer_t t;
    struct run r = {0};

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(llag_start(&r.lag, &loop, on_iter, &r), 0);
    uv_timer_init(&loop, &t);
    t.data = &r;
    uv_timer_start(&t, on_busy_timer, 1, 100); /* 300 ms of waiting after the busy firing */
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(r.fired, 4);
    assert_true(r.lag.iterations >= 3);
    assert_int_equal(r.calls, r.lag.iterations);
    /* The 30 ms of work are one iteration's; waiting uses no CPU, so the whole run's busy time
     * stays far below the 300 ms it lasted, whatever the machine's load. */
    assert_true(r.lag.max_ns >= 30 * 1000000ull);
    assert_true(llag_max_seconds(&r.lag) >= 0.030);
    /* and its page faults are counted as that iteration's */
    assert_true(llag_max_faults(&r.lag) >= 2000);
    assert_true(llag_thread_faults() > 0);
    assert_true(r.sum_ns < 250 * 1000000ull);
    /* A timer's work is not the I/O callbacks' share. */
    assert_true(llag_max_io_seconds(&r.lag) < 0.030);
    llag_stop(&r.lag);
    llag_stop(&r.lag); /* idempotent */
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* The same work in an I/O callback (a uv_async's, run by the poll): the busiest iteration's I/O
 * share holds it. */
static void on_busy_async(uv_async_t *h)
{
    spin_cpu_ms(30);
    uv_close((uv_handle_t *)h, NULL);
}

static void on_send_timer(uv_timer_t *t)
{
    uv_async_send(t->data);
}

static void test_io_share(void **state)
{
    uv_loop_t loop;
    uv_timer_t t;
    uv_async_t as;
    struct run r = {0};

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(llag_start(&r.lag, &loop, on_iter, &r), 0);
    assert_int_equal(uv_async_init(&loop, &as, on_busy_async), 0);
    uv_timer_init(&loop, &t);
    t.data = &as;
    uv_timer_start(&t, on_send_timer, 1, 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_true(llag_max_seconds(&r.lag) >= 0.030);
    assert_true(llag_max_io_seconds(&r.lag) >= 0.030);
    assert_true(llag_max_io_seconds(&r.lag) <= llag_max_seconds(&r.lag));
    llag_stop(&r.lag);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* llag_trace: the 30 ms iteration writes the loop's stack to standard error (captured through a
 * pipe), naming the function that held it; the idle waits after it write nothing more. */
static void test_trace(void **state)
{
    uv_loop_t loop;
    uv_timer_t t;
    struct run r = {0};
    int fds[2], saved;
    char out[65536];
    ssize_t n, len = 0;

    (void)state;
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
    saved = dup(STDERR_FILENO);
    assert_true(saved >= 0);
    assert_int_equal(dup2(fds[1], STDERR_FILENO), STDERR_FILENO);
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(llag_trace(&r.lag, 5), -EINVAL); /* not started */
    assert_int_equal(llag_start(&r.lag, &loop, on_iter, &r), 0);
    assert_int_equal(llag_trace(&r.lag, 0), -EINVAL);
    assert_int_equal(llag_trace(&r.lag, 5), 0);
    assert_int_equal(llag_trace(&r.lag, 5), -EINVAL); /* once */
    uv_timer_init(&loop, &t);
    t.data = &r;
    uv_timer_start(&t, on_busy_timer, 1, 100);
    uv_run(&loop, UV_RUN_DEFAULT);
    llag_stop(&r.lag);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
    close(saved);
    close(fds[1]);
    while (len < (ssize_t)sizeof(out) - 1 &&
           (n = read(fds[0], out + len, sizeof(out) - 1 - (size_t)len)) > 0)
        len += n;
    close(fds[0]);
    out[len] = '\0';
    /* At least one sample in the 30 ms (CPU timers tick every few ms), each a header and frames. */
    assert_non_null(strstr(out, "loop stall trace: iteration "));
    /* The time of day follows, in epoch milliseconds (after 2020, before 2100). */
    {
        const char *w = strstr(out, " us (wall ");
        unsigned long long ms;
        assert_non_null(w);
        assert_int_equal(sscanf(w, " us (wall %llu ms)", &ms), 1);
        assert_true(ms > 1577836800000ull && ms < 4102444800000ull);
        assert_non_null(strstr(w, " ms)\n"));
    }
    /* The busy iteration sampled after 5 ms of its CPU time, then every 2 ms of it: no more samples
     * than its CPU time allows. That time is measured, not assumed: on a loaded machine the 2,048
     * page faults alone can take tens of milliseconds (CI saw more than 20 samples once). */
    {
        unsigned samples = 0, bound = (unsigned)(r.lag.max_ns / 2000000ull) + 2;
        for (const char *p = out; (p = strstr(p, "loop stall trace")); p++)
            samples++;
        if (samples < 1 || samples > bound)
            fail_msg("%u samples for an iteration of %llu us of CPU (at most %u)", samples,
                     (unsigned long long)(r.lag.max_ns / 1000), bound);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_busy_table),
        cmocka_unit_test(test_real_loop),
        cmocka_unit_test(test_io_share),
        cmocka_unit_test(test_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
