#include "common/slice.h"

/* The budget of the current iteration of this thread's loop. */
static _Thread_local struct {
    uv_loop_t *loop;
    uint64_t tick;  /* uv_now when it started */
    uint64_t start; /* the clock then */
} cur;

uint64_t slice_remaining_at(uv_loop_t *loop, uint64_t tick, uint64_t (*now_ns)(void))
{
    uint64_t now = now_ns ? now_ns() : uv_hrtime(), spent;

    if (loop != cur.loop || tick != cur.tick) {
        cur.loop = loop;
        cur.tick = tick;
        cur.start = now;
    }
    spent = now >= cur.start ? now - cur.start : 0;
    return spent >= SLICE_BUDGET_NS ? 0 : SLICE_BUDGET_NS - spent;
}

uint64_t slice_remaining(uv_loop_t *loop)
{
    return slice_remaining_at(loop, uv_now(loop), NULL);
}

bool slice_left(uv_loop_t *loop)
{
    return slice_remaining(loop) > 0;
}
