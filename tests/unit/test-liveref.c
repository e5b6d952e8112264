#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>

#include "common/liveref.h"

struct obj {
    struct liveref life;
    int *freed;
};

static void obj_free(void *data)
{
    struct obj *o = data;

    (*o->freed)++;
    free(o);
}

static struct obj *obj_new(int *freed)
{
    struct obj *o = calloc(1, sizeof(*o));

    assert_non_null(o);
    o->freed = freed;
    liveref_init(&o->life, obj_free, o);
    return o;
}

/* Each case: how many requests are sent (each takes a reference), how many of them fail to be sent,
 * whether the owner kills the object before the callbacks of the others run, and what follows. */
static void test_lifetimes(void **state)
{
    static const struct {
        const char *name;
        int sent, failed;
        bool kill_first;
        int dead_callbacks; /* callbacks whose put says dead */
        int freed_after_kill;
    } cases[] = {
        {"no request, killed: freed at once", 0, 0, true, 0, 1},
        {"two in flight, killed first: the last callback frees", 2, 0, true, 2, 0},
        {"two in flight, answered before the kill", 2, 0, false, 0, 1},
        {"one of three never sent: its reference comes back", 3, 1, true, 2, 0},
        {"every request failed to send", 2, 2, true, 0, 1},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int freed = 0, dead = 0, inflight = cases[i].sent - cases[i].failed;
        struct obj *o = obj_new(&freed);

        for (int s = 0; s < cases[i].sent; s++) {
            void *data = liveref_hold(&o->life);

            assert_ptr_equal(data, o);
            assert_int_equal(liveref_sent(&o->life, s < cases[i].failed ? -EAGAIN : 0),
                             s < cases[i].failed ? -EAGAIN : 0);
        }
        assert_int_equal(o->life.refs, 1 + inflight);
        if (cases[i].kill_first) {
            liveref_kill(&o->life);
            assert_int_equal(freed, 0); /* the owner's reference stands */
            assert_true(liveref_put(&o->life));
            assert_int_equal(freed, cases[i].freed_after_kill);
        }
        for (int c = 0; c < inflight; c++)
            dead += liveref_put(&o->life);
        if (!cases[i].kill_first) {
            assert_int_equal(freed, 0);
            liveref_kill(&o->life);
            assert_true(liveref_put(&o->life));
            assert_int_equal(freed, cases[i].freed_after_kill);
        }
        assert_int_equal(dead, cases[i].dead_callbacks);
        assert_int_equal(freed, 1); /* exactly once, whatever the order */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lifetimes),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
