/* backoff, heap timers: see backoff.h. */
#include "kube/backoff.h"

#include <unistd.h>

#include "common/xalloc.h"

void backoff_init(struct backoff *b, uint64_t base_ms, uint64_t max_ms)
{
    b->base_ms = base_ms ? base_ms : 1;
    b->max_ms = max_ms >= b->base_ms ? max_ms : b->base_ms;
    b->cur_ms = 0;
}

uint64_t backoff_jitter(uint64_t span)
{
    static _Thread_local uint64_t state;
    uint64_t z;

    if (state == 0)
        state = uv_hrtime() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&state;
    /* splitmix64 */
    z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return span == UINT64_MAX ? z : z % (span + 1);
}

uint64_t backoff_next(struct backoff *b)
{
    if (b->cur_ms == 0)
        b->cur_ms = b->base_ms;
    else if (b->cur_ms < b->max_ms)
        b->cur_ms = b->cur_ms > b->max_ms / 2 ? b->max_ms : b->cur_ms * 2;
    return b->cur_ms - b->cur_ms / 4 + backoff_jitter(b->cur_ms / 2);
}

void backoff_reset(struct backoff *b)
{
    b->cur_ms = 0;
}

uv_timer_t *ktimer_new(uv_loop_t *loop, void *data)
{
    uv_timer_t *t = x_calloc(1, sizeof(*t));

    if (!t)
        return NULL;
    uv_timer_init(loop, t);
    t->data = data;
    return t;
}

static void ktimer_closed(uv_handle_t *h)
{
    x_free(h);
}

void ktimer_free(uv_timer_t *t)
{
    if (!t)
        return;
    uv_timer_stop(t);
    uv_close((uv_handle_t *)t, ktimer_closed);
}
