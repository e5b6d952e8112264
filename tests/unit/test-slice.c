/* common/slice: one budget of time per loop iteration, shared by every sliced job of the thread.
 * A table of (loop, tick, clock) readings with the budget each must see, then two idle jobs on a
 * real loop: in every iteration the job that runs second gets exactly its one unconditional piece,
 * because the first one spent the budget they share (which is the point: together, not each). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/slice.h"

static uint64_t fake_now;

static uint64_t fake_clock(void)
{
    return fake_now;
}

static void test_budget_table(void **state)
{
    static uv_loop_t *const A = (uv_loop_t *)0x1000, *const B = (uv_loop_t *)0x2000;
    static const struct {
        uv_loop_t *loop;
        uint64_t tick, now, want;
    } steps[] = {
        {A, 5, 1000000, SLICE_BUDGET_NS},           /* first call: a full budget */
        {A, 5, 2000000, SLICE_BUDGET_NS - 1000000}, /* same iteration: 1 ms spent */
        {A, 5, 1000000 + SLICE_BUDGET_NS, 0},       /* spent exactly */
        {A, 5, 9000000, 0},                         /* overspent: 0, not a wrap */
        {A, 6, 9500000, SLICE_BUDGET_NS},           /* uv_now moved: a new iteration */
        {A, 6, 9400000, SLICE_BUDGET_NS},           /* the clock went back: nothing spent */
        {B, 6, 9600000, SLICE_BUDGET_NS},           /* another loop: its own budget */
        {A, 6, 9700000, SLICE_BUDGET_NS},           /* back on A: started again */
        {A, 6, 9700000 + SLICE_BUDGET_NS / 2, SLICE_BUDGET_NS / 2},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        fake_now = steps[i].now;
        assert_int_equal(slice_remaining_at(steps[i].loop, steps[i].tick, fake_clock),
                         steps[i].want);
    }
}

#define PIECE_NS   (200 * 1000ull)
#define ITERATIONS 20

struct job {
    uv_idle_t idle;
    unsigned pieces[ITERATIONS]; /* per iteration */
};

struct run {
    struct job a, b;
    uv_check_t check;
    unsigned iteration;
    unsigned order[ITERATIONS][2]; /* which job ran first, second (1: a, 2: b) */
    unsigned ran;
};

static struct run run;

static void spin(uint64_t ns)
{
    uint64_t t0 = uv_hrtime();

    while (uv_hrtime() - t0 < ns)
        ;
}

static void on_job(uv_idle_t *h)
{
    struct job *j = h->data;

    if (run.iteration >= ITERATIONS)
        return;
    if (run.ran < 2)
        run.order[run.iteration][run.ran++] = j == &run.a ? 1 : 2;
    do {
        spin(PIECE_NS);
        j->pieces[run.iteration]++;
    } while (slice_left(h->loop));
}

static void on_check(uv_check_t *h)
{
    run.ran = 0;
    if (++run.iteration >= ITERATIONS) {
        uv_idle_stop(&run.a.idle);
        uv_idle_stop(&run.b.idle);
        uv_check_stop(h);
    }
}

static void test_shared_on_a_loop(void **state)
{
    uv_loop_t loop;
    unsigned second_one_piece = 0, iterations_with_both = 0;

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    uv_idle_init(&loop, &run.a.idle);
    uv_idle_init(&loop, &run.b.idle);
    uv_check_init(&loop, &run.check);
    run.a.idle.data = &run.a;
    run.b.idle.data = &run.b;
    uv_idle_start(&run.a.idle, on_job);
    uv_idle_start(&run.b.idle, on_job);
    uv_check_start(&run.check, on_check);
    uv_run(&loop, UV_RUN_DEFAULT);
    for (unsigned i = 0; i < ITERATIONS; i++) {
        unsigned first = run.order[i][0], second = run.order[i][1];
        const struct job *f = first == 1 ? &run.a : &run.b, *s = second == 1 ? &run.a : &run.b;

        if (!first || !second)
            continue;
        iterations_with_both++;
        assert_true(f->pieces[i] >= 1);
        /* The first job stopped only once the shared budget was spent: the second gets its one
         * unconditional piece and no more. */
        if (s->pieces[i] == 1)
            second_one_piece++;
    }
    assert_true(iterations_with_both > 0);
    assert_int_equal(second_one_piece, iterations_with_both);
    uv_close((uv_handle_t *)&run.a.idle, NULL);
    uv_close((uv_handle_t *)&run.b.idle, NULL);
    uv_close((uv_handle_t *)&run.check, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_budget_table),
        cmocka_unit_test(test_shared_on_a_loop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
