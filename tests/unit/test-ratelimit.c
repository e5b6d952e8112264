#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <string.h>
#include <uv.h>

#include "common/xalloc.h"
#include "kube/ratelimit.h"

#define MAX_CALLS 64

/* Timing assertions check lower bounds exactly and upper bounds only loosely: the CI machine is
 * busy and sanitizers slow everything down. */
#define SLACK_MS 2000.0

struct rec {
    struct rl_limiter *l;
    uint64_t start;
    int ncalls;
    int order[MAX_CALLS];
    int status[MAX_CALLS];
    double at_ms[MAX_CALLS];
    int in_acquire; /* set while rl_acquire() runs: callbacks must never see it */
    int reentered;
    int close_at; /* close the limiter from the callback of this call number (1-based), or 0 */
    int closed;   /* close_cb ran */
    int after_close_acquire;
};

struct slot {
    struct rec *rec;
    int idx;
};

static double ms_since(uint64_t start)
{
    return (double)(uv_hrtime() - start) / 1e6;
}

static void on_closed(void *data)
{
    struct rec *r = data;

    r->closed++;
}

static void on_ready(struct rl_limiter *l, int status, void *data)
{
    struct slot *s = data;
    struct rec *r = s->rec;

    assert_ptr_equal(l, r->l);
    assert_true(r->ncalls < MAX_CALLS);
    if (r->in_acquire)
        r->reentered = 1;
    r->order[r->ncalls] = s->idx;
    r->status[r->ncalls] = status;
    r->at_ms[r->ncalls] = ms_since(r->start);
    r->ncalls++;
    assert_int_equal(r->closed, 0); /* waiters are always called before close_cb */
    if (status == -ECANCELED)
        r->after_close_acquire = rl_acquire(l, on_ready, data);
    if (r->close_at && r->ncalls == r->close_at)
        rl_close(l, on_closed, r);
}

static void acquire_n(struct rec *r, struct slot *slots, int n)
{
    for (int i = 0; i < n; i++) {
        slots[i].rec = r;
        slots[i].idx = i;
        r->in_acquire = 1;
        assert_int_equal(rl_acquire(r->l, on_ready, &slots[i]), 0);
        r->in_acquire = 0;
    }
}

static void close_and_drain(uv_loop_t *loop, struct rec *r)
{
    if (!r->closed) {
        rl_close(r->l, on_closed, r);
        assert_int_equal(uv_run(loop, UV_RUN_DEFAULT), 0);
    }
    assert_int_equal(r->closed, 1);
    assert_int_equal(uv_loop_close(loop), 0);
}

static void test_bad_args(void **state)
{
    uv_loop_t loop;
    struct rl_limiter *l;

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_null(rl_new(NULL, 1, 1));
    assert_null(rl_new(&loop, 0, 1));
    assert_null(rl_new(&loop, -5, 1));
    assert_null(rl_new(&loop, NAN, 1));
    assert_null(rl_new(&loop, INFINITY, 1));
    assert_null(rl_new(&loop, 10, 0));
    assert_null(rl_new(&loop, 10, -1));

    xalloc_fail_after(0);
    assert_null(rl_new(&loop, 10, 1));
    xalloc_fail_after(-1);

    l = rl_new(&loop, 10, 1);
    assert_non_null(l);
    assert_int_equal(rl_acquire(l, NULL, NULL), -EINVAL);
    assert_int_equal(rl_acquire(NULL, on_ready, NULL), -EINVAL);
    xalloc_fail_after(0);
    assert_int_equal(rl_acquire(l, on_ready, NULL), -ENOMEM);
    xalloc_fail_after(-1);
    /* The failed acquisition did not consume the only token. */
    assert_int_equal(rl_try_acquire(l), 1);
    assert_int_equal(rl_waiting(l), 0);

    assert_int_equal(rl_try_acquire(NULL), 0);
    assert_int_equal(rl_waiting(NULL), 0);
    rl_close(NULL, NULL, NULL);
    rl_close(l, NULL, NULL);
    rl_close(l, NULL, NULL); /* ignored */
    assert_int_equal(rl_acquire(l, on_ready, NULL), -ECANCELED);
    assert_int_equal(rl_try_acquire(l), 0);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* The burst is granted at once, but always from the loop, never inside rl_acquire(). */
static void test_burst_immediate(void **state)
{
    uv_loop_t loop;
    struct rec r = {0};
    struct slot slots[5];

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    r.l = rl_new(&loop, 0.1, 5); /* a token every 10 s: only the burst can be fast */
    assert_non_null(r.l);
    r.start = uv_hrtime();
    acquire_n(&r, slots, 5);
    assert_int_equal(r.ncalls, 0);
    assert_int_equal(rl_waiting(r.l), 5);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(r.ncalls, 5);
    assert_int_equal(r.reentered, 0);
    assert_int_equal(rl_waiting(r.l), 0);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(r.order[i], i);
        assert_int_equal(r.status[i], 0);
        assert_true(r.at_ms[i] < 5000.0); /* well under the 10 s a sixth token would take */
    }
    /* The bucket is empty now. */
    assert_int_equal(rl_try_acquire(r.l), 0);
    close_and_drain(&loop, &r);
}

/* The (burst + n)th acquisition waits about n / qps, in FIFO order. */
static void test_delay_and_fifo(void **state)
{
    enum { BURST = 3, EXTRA = 5, N = BURST + EXTRA };
    const double qps = 100.0; /* a token every 10 ms */
    uv_loop_t loop;
    struct rec r = {0};
    struct slot slots[N];

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    r.l = rl_new(&loop, qps, BURST);
    assert_non_null(r.l);
    r.start = uv_hrtime();
    acquire_n(&r, slots, N);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(r.ncalls, N);
    assert_int_equal(r.reentered, 0);
    for (int i = 0; i < N; i++) {
        double want = i < BURST ? 0.0 : (i - BURST + 1) * 1000.0 / qps;

        assert_int_equal(r.order[i], i);
        assert_int_equal(r.status[i], 0);
        if (i > 0)
            assert_true(r.at_ms[i] >= r.at_ms[i - 1]);
        /* Tokens are reserved after r.start, so the lower bound is exact (minus rounding). */
        if (r.at_ms[i] < want - 0.01)
            fail_msg("call %d at %.3f ms, before %.3f ms", i, r.at_ms[i], want);
        assert_true(r.at_ms[i] < want * 10 + SLACK_MS);
    }
    close_and_drain(&loop, &r);
}

/* rl_set_qps() moves the waiters already queued: raised, they are served at once; lowered, they
 * wait at the new rate; in their order both ways. */
static void test_set_qps(void **state)
{
    enum { N = 4 };
    uv_loop_t loop;
    struct rec r = {0};
    struct slot slots[N];

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    r.l = rl_new(&loop, 1.0, 1); /* 3 s for the four */
    assert_non_null(r.l);
    r.start = uv_hrtime();
    acquire_n(&r, slots, N);
    rl_set_qps(r.l, 1000.0);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(r.ncalls, N);
    for (int i = 0; i < N; i++)
        assert_int_equal(r.order[i], i);
    assert_true(r.at_ms[N - 1] < 900.0); /* not the 3 s of 1 request/s */
    close_and_drain(&loop, &r);

    memset(&r, 0, sizeof(r));
    assert_int_equal(uv_loop_init(&loop), 0);
    r.l = rl_new(&loop, 1000.0, 1);
    assert_non_null(r.l);
    r.start = uv_hrtime();
    acquire_n(&r, slots, N);
    rl_set_qps(r.l, 10.0);
    rl_set_qps(r.l, 0.0); /* ignored */
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(r.ncalls, N);
    for (int i = 0; i < N; i++)
        assert_int_equal(r.order[i], i);
    if (r.at_ms[N - 1] < 299.0)
        fail_msg("the last waiter ran at %.1f ms, before the 300 ms of 10 requests/s",
                 r.at_ms[N - 1]);
    close_and_drain(&loop, &r);
}

/* rl_try_acquire() takes free tokens only and never jumps ahead of waiters. */
static void test_try_acquire(void **state)
{
    const uint64_t token_ns = 50 * 1000000ULL; /* qps 20 */
    uv_loop_t loop;
    struct rec r = {0};
    struct slot slots[1];
    uint64_t t0;

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    r.l = rl_new(&loop, 20, 2);
    assert_non_null(r.l);
    t0 = r.start = uv_hrtime();
    assert_int_equal(rl_try_acquire(r.l), 1);
    assert_int_equal(rl_try_acquire(r.l), 1);
    assert_int_equal(rl_try_acquire(r.l), 0);

    /* A waiter reserves the next token (due at t0 + 50 ms at the earliest), so try_acquire needs
     * a fourth one (t0 + 100 ms at the earliest): it must fail until then, even once the waiter's
     * token is due. The loop stops at 90 ms. */
    acquire_n(&r, slots, 1);
    for (;;) {
        int got = rl_try_acquire(r.l);
        uint64_t now = uv_hrtime();

        /* Reading the clock after the call keeps this exact even if the test is preempted. */
        if (got) {
            assert_true(now - t0 >= 2 * token_ns);
            break;
        }
        if (now - t0 >= 90 * 1000000ULL)
            break;
    }
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(r.ncalls, 1);
    assert_true(r.at_ms[0] >= 50.0 - 0.01);

    /* With nobody waiting, the refill lets try_acquire succeed again. */
    while (!rl_try_acquire(r.l))
        assert_true(uv_hrtime() - t0 < 100 * token_ns);
    assert_true(uv_hrtime() - t0 >= 2 * token_ns - 10000);
    close_and_drain(&loop, &r);
}

/* Closing from a grant callback cancels the rest: each waiter is called exactly once, in order,
 * then close_cb; rl_acquire() fails from then on. */
static void test_close_cancels(void **state)
{
    enum { N = 6 };
    uv_loop_t loop;
    struct rec r = {0};
    struct slot slots[N];

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    r.l = rl_new(&loop, 0.1, 2); /* the third token would take 10 s */
    assert_non_null(r.l);
    r.close_at = 2;
    r.after_close_acquire = 1;
    r.start = uv_hrtime();
    acquire_n(&r, slots, N);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(r.closed, 1);
    assert_int_equal(r.ncalls, N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(r.order[i], i);
        assert_int_equal(r.status[i], i < 2 ? 0 : -ECANCELED);
    }
    assert_int_equal(r.after_close_acquire, -ECANCELED);
    /* Cancellation does not wait for the tokens. */
    assert_true(r.at_ms[N - 1] < 5000.0);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* Closing with waiters before the loop ever runs: all are cancelled, nothing leaks. */
static void test_close_before_run(void **state)
{
    enum { N = 4 };
    uv_loop_t loop;
    struct rec r = {0};
    struct slot slots[N];

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    r.l = rl_new(&loop, 1000, 10);
    assert_non_null(r.l);
    acquire_n(&r, slots, N);
    rl_close(r.l, on_closed, &r);
    assert_int_equal(r.ncalls, 0); /* cancellation is from the loop too */
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(r.ncalls, N);
    for (int i = 0; i < N; i++)
        assert_int_equal(r.status[i], -ECANCELED);
    assert_int_equal(r.closed, 1);
    assert_int_equal(uv_loop_close(&loop), 0);
}

struct chain {
    struct rl_limiter *l;
    int left;
    int granted;
    uint64_t start;
    double last_ms;
};

/* Acquiring again from a grant callback queues behind everyone, at the refill rate. */
static void on_chain(struct rl_limiter *l, int status, void *data)
{
    struct chain *c = data;

    assert_int_equal(status, 0);
    c->granted++;
    c->last_ms = ms_since(c->start);
    if (--c->left > 0)
        assert_int_equal(rl_acquire(l, on_chain, c), 0);
}

static void test_acquire_from_callback(void **state)
{
    uv_loop_t loop;
    struct chain c = {0};

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    c.l = rl_new(&loop, 200, 1); /* a token every 5 ms */
    assert_non_null(c.l);
    c.left = 6;
    c.start = uv_hrtime();
    assert_int_equal(rl_acquire(c.l, on_chain, &c), 0);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(c.granted, 6);
    assert_true(c.last_ms >= 25.0 - 0.01);
    assert_true(c.last_ms < 250.0 + SLACK_MS);
    rl_close(c.l, NULL, NULL);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_args),         cmocka_unit_test(test_burst_immediate),
        cmocka_unit_test(test_delay_and_fifo),   cmocka_unit_test(test_try_acquire),
        cmocka_unit_test(test_set_qps),          cmocka_unit_test(test_close_cancels),
        cmocka_unit_test(test_close_before_run), cmocka_unit_test(test_acquire_from_callback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
