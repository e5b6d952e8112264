/* Unit tests for the shared capped exponential backoff with jitter, and the heap timer helper. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kube/backoff.h"

/* Every delay lies within +-25% of base * 2^n, capped at max, and never exceeds 1.25 * max. */
static void test_sequence_within_bounds(void **state)
{
    (void)state;
    for (int round = 0; round < 200; round++) {
        struct backoff b;
        uint64_t nominal = 200;

        backoff_init(&b, 200, 30000);
        for (int i = 0; i < 12; i++) {
            uint64_t d = backoff_next(&b);

            assert_true(d >= nominal - nominal / 4);
            assert_true(d <= nominal + nominal / 4);
            nominal = nominal * 2 > 30000 ? 30000 : nominal * 2;
        }
    }
}

static void test_reset_starts_over(void **state)
{
    struct backoff b;

    (void)state;
    backoff_init(&b, 100, 1000);
    for (int i = 0; i < 10; i++)
        backoff_next(&b);
    assert_int_equal(b.cur_ms, 1000);
    backoff_reset(&b);
    uint64_t d = backoff_next(&b);
    assert_true(d >= 75 && d <= 125);
}

/* The delays of many clients spread out: jitter is real, not a constant. */
static void test_jitter_spreads(void **state)
{
    uint64_t lo = UINT64_MAX, hi = 0;

    (void)state;
    for (int i = 0; i < 500; i++) {
        struct backoff b;

        backoff_init(&b, 1000, 1000);
        uint64_t d = backoff_next(&b);
        lo = d < lo ? d : lo;
        hi = d > hi ? d : hi;
    }
    assert_true(hi - lo >= 250);
}

/* backoff_jitter stays within 0..span (both included) and takes every value of a small span. */
static void test_jitter_bounds(void **state)
{
    static const uint64_t spans[] = {0, 1, 7, 1000, UINT64_MAX};

    (void)state;
    for (size_t i = 0; i < sizeof(spans) / sizeof(spans[0]); i++) {
        unsigned char seen[8] = {0};
        for (int k = 0; k < 2000; k++) {
            uint64_t v = backoff_jitter(spans[i]);
            assert_true(v <= spans[i]);
            if (spans[i] < 8)
                seen[v] = 1;
        }
        for (uint64_t v = 0; spans[i] < 8 && v <= spans[i]; v++)
            assert_true(seen[v]);
    }
}

/* Odd parameters stay sane: a zero base, a max below the base, a cap near UINT64_MAX. */
static void test_degenerate_parameters(void **state)
{
    struct backoff b;

    (void)state;
    backoff_init(&b, 0, 0);
    assert_true(backoff_next(&b) <= 1);
    backoff_init(&b, 500, 10);
    for (int i = 0; i < 5; i++)
        assert_true(backoff_next(&b) <= 625);
    backoff_init(&b, 1, UINT64_MAX);
    for (int i = 0; i < 100; i++)
        backoff_next(&b);
    assert_int_equal(b.cur_ms, UINT64_MAX);
}

static int fired;
static void on_fire(uv_timer_t *t)
{
    fired++;
    ktimer_free(t);
}

/* A timer freed from its own callback and one freed before it fires both release their memory
 * (ASan's leak checker verifies the latter). */
static void test_ktimer(void **state)
{
    uv_loop_t loop;

    (void)state;
    uv_loop_init(&loop);
    uv_timer_t *a = ktimer_new(&loop, &loop);
    uv_timer_t *b = ktimer_new(&loop, NULL);
    assert_non_null(a);
    assert_ptr_equal(a->data, &loop);
    uv_timer_start(a, on_fire, 1, 0);
    uv_timer_start(b, on_fire, 60000, 0);
    ktimer_free(b);
    ktimer_free(NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(fired, 1);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sequence_within_bounds), cmocka_unit_test(test_reset_starts_over),
        cmocka_unit_test(test_jitter_spreads),         cmocka_unit_test(test_jitter_bounds),
        cmocka_unit_test(test_degenerate_parameters),  cmocka_unit_test(test_ktimer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
