#include "common/looplag.h"

#include <errno.h>
#include <string.h>

uint64_t llag_busy_ns(uint64_t prev_ns, uint64_t prev_idle_ns, uint64_t now_ns, uint64_t idle_ns)
{
    uint64_t wall, idle;

    if (now_ns < prev_ns || idle_ns < prev_idle_ns)
        return 0;
    wall = now_ns - prev_ns;
    idle = idle_ns - prev_idle_ns;
    return idle >= wall ? 0 : wall - idle;
}

static void on_prepare(uv_prepare_t *h)
{
    struct llag *l = h->data;
    uint64_t now = uv_hrtime(), idle = uv_metrics_idle_time(h->loop), busy;

    if (l->primed) {
        busy = llag_busy_ns(l->last_ns, l->last_idle_ns, now, idle);
        l->iterations++;
        if (busy > l->max_ns)
            l->max_ns = busy;
        if (l->fn)
            l->fn(l, busy, l->data);
    }
    l->primed = true;
    l->last_ns = now;
    l->last_idle_ns = idle;
}

int llag_start(struct llag *l, uv_loop_t *loop, llag_fn fn, void *data)
{
    int r;

    memset(l, 0, sizeof(*l));
    r = uv_loop_configure(loop, UV_METRICS_IDLE_TIME);
    if (r < 0)
        return r;
    r = uv_prepare_init(loop, &l->prep);
    if (r < 0)
        return r;
    l->prep.data = l;
    l->fn = fn;
    l->data = data;
    l->running = true;
    uv_prepare_start(&l->prep, on_prepare);
    uv_unref((uv_handle_t *)&l->prep);
    return 0;
}

void llag_stop(struct llag *l)
{
    if (!l || !l->running)
        return;
    l->running = false;
    uv_close((uv_handle_t *)&l->prep, NULL);
}

double llag_max_seconds(const struct llag *l)
{
    return (double)l->max_ns / 1e9;
}
