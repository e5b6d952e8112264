#include "kube/ratelimit.h"

#include "common/xalloc.h"

#include <errno.h>
#include <math.h> /* isinf(): a macro, no libm needed */
#include <stdint.h>

#define NSEC_PER_SEC   1000000000ULL
#define NSEC_PER_MSEC  1000000ULL
#define RL_MAX_WAIT_NS 1e18

struct rl_waiter {
    struct rl_waiter *next;
    uint64_t due_ns; /* uv_hrtime() at which the reserved token is available */
    rl_ready_cb cb;
    void *data;
};

struct rl_limiter {
    uv_loop_t *loop;
    uv_timer_t timer; /* armed for the first waiter while there is one */
    double qps;
    double burst;
    double tokens;    /* may be negative: tokens reserved ahead of time by waiters */
    uint64_t last_ns; /* when tokens was last brought up to date */
    struct rl_waiter *head, *tail;
    size_t nwaiting;
    int closing;
    rl_close_cb close_cb;
    void *close_data;
};

/* Brings the bucket up to date at `now`, never above burst. */
static void rl_refill(struct rl_limiter *l, uint64_t now)
{
    if (now <= l->last_ns)
        return;
    l->tokens += (double)(now - l->last_ns) / (double)NSEC_PER_SEC * l->qps;
    if (l->tokens > l->burst)
        l->tokens = l->burst;
    l->last_ns = now;
}

/* Reserves one token and returns when it can be used: now, or when the refill covers it. Later
 * reservations get later (or equal) times, which is what keeps waiters FIFO. */
static uint64_t rl_reserve(struct rl_limiter *l, uint64_t now)
{
    double wait;
    uint64_t wait_ns;

    rl_refill(l, now);
    l->tokens -= 1.0;
    if (l->tokens >= 0.0)
        return now;
    wait = -l->tokens / l->qps * (double)NSEC_PER_SEC;
    /* Beyond ~31 years the token is as good as never: saturate instead of overflowing. */
    if (wait > RL_MAX_WAIT_NS)
        return UINT64_MAX;
    wait_ns = (uint64_t)wait;
    if ((double)wait_ns < wait)
        wait_ns++; /* round up: never grant early */
    return now > UINT64_MAX - wait_ns ? UINT64_MAX : now + wait_ns;
}

static void rl_on_timer(uv_timer_t *timer);

/* Arms the timer for the first waiter (0 ms when it is due already). */
static void rl_arm(struct rl_limiter *l, uint64_t now)
{
    uint64_t delta, ms = 0;

    if (l->closing || !l->head)
        return;
    if (l->head->due_ns > now) {
        delta = l->head->due_ns - now;
        ms = delta / NSEC_PER_MSEC + (delta % NSEC_PER_MSEC != 0);
    }
    /* Cannot fail on an initialised, non-closing handle with a callback. */
    (void)uv_timer_start(&l->timer, rl_on_timer, ms, 0);
}

static void rl_on_timer(uv_timer_t *timer)
{
    struct rl_limiter *l = timer->data;
    uint64_t now = uv_hrtime();

    /* The loop clock is in whole milliseconds and may lag uv_hrtime(), so the timer can fire a
     * little early: anything not yet due is simply re-armed. A callback may acquire again (it
     * queues behind the others) or close the limiter (the rest is then cancelled). */
    while (!l->closing && l->head && l->head->due_ns <= now) {
        struct rl_waiter *w = l->head;
        rl_ready_cb cb = w->cb;
        void *data = w->data;

        l->head = w->next;
        if (!l->head)
            l->tail = NULL;
        l->nwaiting--;
        x_free(w);
        cb(l, 0, data);
    }
    rl_arm(l, uv_hrtime()); /* callbacks took time: measure again */
}

struct rl_limiter *rl_new(uv_loop_t *loop, double qps, int burst)
{
    struct rl_limiter *l;

    /* The negated comparison also rejects NaN. */
    if (!loop || !(qps > 0.0) || isinf(qps) || burst < 1)
        return NULL;
    l = x_calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    if (uv_timer_init(loop, &l->timer) < 0) {
        x_free(l);
        return NULL;
    }
    l->timer.data = l;
    l->loop = loop;
    l->qps = qps;
    l->burst = burst;
    l->tokens = burst;
    l->last_ns = uv_hrtime();
    return l;
}

int rl_acquire(struct rl_limiter *l, rl_ready_cb cb, void *data)
{
    struct rl_waiter *w;
    uint64_t now;

    if (!l || !cb)
        return -EINVAL;
    if (l->closing)
        return -ECANCELED;
    w = x_malloc(sizeof(*w));
    if (!w)
        return -ENOMEM;
    now = uv_hrtime();
    w->next = NULL;
    w->due_ns = rl_reserve(l, now);
    w->cb = cb;
    w->data = data;
    if (l->tail) {
        /* The timer is already armed for the head, which is due no later than w. */
        l->tail->next = w;
        l->tail = w;
    } else {
        l->head = l->tail = w;
        rl_arm(l, now);
    }
    l->nwaiting++;
    return 0;
}

int rl_try_acquire(struct rl_limiter *l)
{
    if (!l || l->closing)
        return 0;
    rl_refill(l, uv_hrtime());
    if (l->tokens < 1.0)
        return 0;
    l->tokens -= 1.0;
    return 1;
}

void rl_set_qps(struct rl_limiter *l, double qps)
{
    uint64_t now;
    size_t n = 0;

    if (!l || l->closing || !(qps > 0.0) || isinf(qps))
        return;
    now = uv_hrtime();
    rl_refill(l, now); /* what was earned so far, at the old rate */
    for (struct rl_waiter *w = l->head; w; w = w->next)
        n++;
    /* Give the waiters' reservations back, then reserve again in order at the new rate. */
    l->tokens += (double)n;
    if (l->tokens > l->burst)
        l->tokens = l->burst;
    l->qps = qps;
    for (struct rl_waiter *w = l->head; w; w = w->next)
        w->due_ns = rl_reserve(l, now);
    rl_arm(l, now);
}

void rl_set_burst(struct rl_limiter *l, int burst)
{
    if (!l || l->closing || burst < 1)
        return;
    rl_refill(l, uv_hrtime());
    l->burst = burst;
    if (l->tokens > l->burst)
        l->tokens = l->burst;
}

size_t rl_waiting(const struct rl_limiter *l)
{
    return l ? l->nwaiting : 0;
}

static void rl_on_closed(uv_handle_t *handle)
{
    struct rl_limiter *l = handle->data;
    rl_close_cb close_cb = l->close_cb;
    void *close_data = l->close_data;

    while (l->head) {
        struct rl_waiter *w = l->head;
        rl_ready_cb cb = w->cb;
        void *data = w->data;

        l->head = w->next;
        l->nwaiting--;
        x_free(w);
        cb(l, -ECANCELED, data);
    }
    l->tail = NULL;
    x_free(l);
    if (close_cb)
        close_cb(close_data);
}

void rl_close(struct rl_limiter *l, rl_close_cb close_cb, void *data)
{
    if (!l || l->closing)
        return;
    l->closing = 1;
    l->close_cb = close_cb;
    l->close_data = data;
    uv_close((uv_handle_t *)&l->timer, rl_on_closed);
}
