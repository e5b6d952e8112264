#include "common/looplag.h"

#include <string.h>
#include <time.h>

uint64_t llag_thread_cpu_ns(void)
{
    struct timespec t;

    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) < 0)
        return 0;
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

uint64_t llag_busy_ns(uint64_t prev_cpu_ns, uint64_t now_cpu_ns)
{
    return now_cpu_ns < prev_cpu_ns ? 0 : now_cpu_ns - prev_cpu_ns;
}

static void on_check(uv_check_t *h)
{
    struct llag *l = h->data;
    uint64_t now = llag_thread_cpu_ns(), busy;

    busy = llag_busy_ns(l->last_cpu_ns, now);
    l->iterations++;
    if (busy > l->max_ns)
        l->max_ns = busy;
    if (l->fn)
        l->fn(l, busy, l->data);
    /* Read again: the callback's own work (a metric, a log line) is not the next iteration's. */
    l->last_cpu_ns = l->fn ? llag_thread_cpu_ns() : now;
}

int llag_start(struct llag *l, uv_loop_t *loop, llag_fn fn, void *data)
{
    int r;

    memset(l, 0, sizeof(*l));
    r = uv_check_init(loop, &l->check);
    if (r < 0)
        return r;
    l->check.data = l;
    l->fn = fn;
    l->data = data;
    l->running = true;
    l->last_cpu_ns = llag_thread_cpu_ns(); /* the first iteration counts from here */
    uv_check_start(&l->check, on_check);
    uv_unref((uv_handle_t *)&l->check);
    return 0;
}

void llag_stop(struct llag *l)
{
    if (!l || !l->running)
        return;
    l->running = false;
    uv_close((uv_handle_t *)&l->check, NULL);
}

double llag_max_seconds(const struct llag *l)
{
    return (double)l->max_ns / 1e9;
}
