/* backoff, heap timers: see backoff.h. */
#include "kube/backoff.h"

#include <stdlib.h>

#include "common/xalloc.h"

void backoff_init(struct backoff *b, uint64_t base_ms, uint64_t max_ms)
{
    b->base_ms = base_ms ? base_ms : 1;
    b->max_ms = max_ms >= b->base_ms ? max_ms : b->base_ms;
    b->cur_ms = 0;
}

uint64_t backoff_next(struct backoff *b)
{
    if (b->cur_ms == 0)
        b->cur_ms = b->base_ms;
    else if (b->cur_ms < b->max_ms)
        b->cur_ms = b->cur_ms > b->max_ms / 2 ? b->max_ms : b->cur_ms * 2;
    return b->cur_ms - b->cur_ms / 4 + (uint64_t)random() % (b->cur_ms / 2 + 1);
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
