#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "common/strutil.h"
#include "common/slice.h"
#include "common/xalloc.h"
#include "kube/workqueue.h"

/* Timing assertions check lower bounds exactly and upper bounds only loosely: the CI machine is
 * busy and sanitizers slow everything down. */
#define SLACK_MS   2000.0
#define MAX_REC    64
#define KEY_SZ     (WQ_MAX_KEY_LEN + 1)
#define MAX_ACTIVE 16

struct ctx {
    uv_loop_t loop;
    struct wq_queue *q;
    uint64_t start;
    int n; /* fn calls */
    char keys[MAX_REC][KEY_SZ];
    double at_ms[MAX_REC];
    int depth, max_depth; /* nesting of fn calls */
    int inflight, max_inflight;
    int complete_after_ms; /* > 0: finish each key from a timer; 0: finish synchronously */
    char active[MAX_ACTIVE][KEY_SZ]; /* keys being processed: a key must never be there twice */
    int nactive;
    int closed;
    /* Per-test hooks. */
    void (*hook)(struct ctx *c, const char *key);
    int counter;
};

struct completion {
    uv_timer_t timer;
    struct ctx *c;
    char key[KEY_SZ];
};

static double ms_since(uint64_t start)
{
    return (double)(uv_hrtime() - start) / 1e6;
}

static int count_key(const struct ctx *c, const char *key)
{
    int n = 0;

    for (int i = 0; i < c->n && i < MAX_REC; i++)
        n += strcmp(c->keys[i], key) == 0;
    return n;
}

static void active_add(struct ctx *c, const char *key)
{
    for (int i = 0; i < c->nactive; i++)
        if (strcmp(c->active[i], key) == 0)
            fail_msg("key '%s' processed concurrently", key);
    assert_true(c->nactive < MAX_ACTIVE);
    assert_true(strlen(key) < KEY_SZ);
    memcpy(c->active[c->nactive++], key, strlen(key) + 1);
}

/* Reports key as done to the test's bookkeeping, then to the queue. */
static void ctx_done(struct ctx *c, const char *key)
{
    for (int i = 0; i < c->nactive; i++) {
        if (strcmp(c->active[i], key) == 0) {
            memmove(c->active[i], c->active[c->nactive - 1], KEY_SZ);
            c->nactive--;
            c->inflight--;
            wq_done(c->q, key);
            return;
        }
    }
    fail_msg("key '%s' done but not processing", key);
}

static void on_completion_closed(uv_handle_t *h)
{
    x_free(h->data);
}

static void on_complete(uv_timer_t *t)
{
    struct completion *cp = t->data;

    ctx_done(cp->c, cp->key);
    uv_close((uv_handle_t *)&cp->timer, on_completion_closed);
}

static void finish(struct ctx *c, const char *key)
{
    struct completion *cp;

    if (c->complete_after_ms <= 0) {
        ctx_done(c, key);
        return;
    }
    cp = x_calloc(1, sizeof(*cp));
    assert_non_null(cp);
    cp->c = c;
    assert_true(strlen(key) < KEY_SZ);
    memcpy(cp->key, key, strlen(key) + 1);
    assert_int_equal(uv_timer_init(&c->loop, &cp->timer), 0);
    cp->timer.data = cp;
    assert_int_equal(uv_timer_start(&cp->timer, on_complete, (uint64_t)c->complete_after_ms, 0), 0);
}

static void process(struct wq_queue *q, const char *key, void *data)
{
    struct ctx *c = data;

    assert_ptr_equal(q, c->q);
    c->depth++;
    if (c->depth > c->max_depth)
        c->max_depth = c->depth;
    if (c->n < MAX_REC) {
        assert_true(strlen(key) < KEY_SZ);
        memcpy(c->keys[c->n], key, strlen(key) + 1);
        c->at_ms[c->n] = ms_since(c->start);
    }
    c->n++;
    active_add(c, key);
    c->inflight++;
    if (c->inflight > c->max_inflight)
        c->max_inflight = c->inflight;
    assert_true(wq_processing(q) == (size_t)c->inflight);
    if (c->hook)
        c->hook(c, key);
    else
        finish(c, key);
    c->depth--;
}

static void on_closed(void *data)
{
    struct ctx *c = data;

    c->closed++;
}

static void ctx_init(struct ctx *c, const struct wq_options *o)
{
    memset(c, 0, sizeof(*c));
    assert_int_equal(uv_loop_init(&c->loop), 0);
    c->q = wq_new(&c->loop, o, process, c);
    assert_non_null(c->q);
    c->start = uv_hrtime();
}

static void ctx_run(struct ctx *c)
{
    assert_int_equal(uv_run(&c->loop, UV_RUN_DEFAULT), 0);
}

static void ctx_close(struct ctx *c)
{
    if (c->q)
        wq_close(c->q, on_closed, c);
    ctx_run(c);
    assert_int_equal(c->closed, 1);
    assert_int_equal(uv_loop_close(&c->loop), 0);
}

static void test_bad_args(void **state)
{
    char long_key[WQ_MAX_KEY_LEN + 2];
    struct wq_options o = {.base_delay_ms = 10, .max_delay_ms = 5};
    struct wq_options one = {.max_keys = 1};
    uv_loop_t loop;
    struct ctx c;

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_null(wq_new(NULL, NULL, process, NULL));
    assert_null(wq_new(&loop, NULL, NULL, NULL));
    assert_null(wq_new(&loop, &o, process, NULL)); /* base > max */
    xalloc_fail_after(0);
    assert_null(wq_new(&loop, NULL, process, NULL));
    xalloc_fail_after(1);
    assert_null(wq_new(&loop, NULL, process, NULL));
    xalloc_fail_after(-1);
    assert_int_equal(uv_loop_close(&loop), 0);

    ctx_init(&c, &one);
    assert_int_equal(wq_add(NULL, "a"), -EINVAL);
    assert_int_equal(wq_add(c.q, NULL), -EINVAL);
    assert_int_equal(wq_add(c.q, ""), -EINVAL);
    memset(long_key, 'k', sizeof(long_key));
    long_key[WQ_MAX_KEY_LEN + 1] = '\0';
    assert_int_equal(wq_add(c.q, long_key), -ENAMETOOLONG);
    assert_int_equal(wq_add_after(c.q, long_key, 10), -ENAMETOOLONG);
    assert_int_equal(wq_add_rate_limited(c.q, long_key), -ENAMETOOLONG);
    assert_int_equal(wq_num_requeues(NULL, "a"), -EINVAL);
    assert_int_equal(wq_num_requeues(c.q, NULL), -EINVAL);
    assert_int_equal(wq_num_requeues(c.q, "unknown"), 0);
    wq_forget(c.q, "unknown");
    wq_forget(NULL, "unknown");
    wq_done(c.q, "unknown");
    wq_done(NULL, "unknown");
    assert_int_equal(wq_len(NULL), 0);
    assert_int_equal(wq_processing(NULL), 0);

    /* Out of memory: nothing is left behind (the single key slot stays free). */
    xalloc_fail_after(0);
    assert_int_equal(wq_add(c.q, "a"), -ENOMEM);
    xalloc_fail_after(1); /* the key is created, the delay heap cannot be */
    assert_int_equal(wq_add_after(c.q, "a", 10), -ENOMEM);
    xalloc_fail_after(1);
    assert_int_equal(wq_add_rate_limited(c.q, "a"), -ENOMEM);
    xalloc_fail_after(-1);
    assert_int_equal(wq_num_requeues(c.q, "a"), 0);
    assert_int_equal(wq_len(c.q), 0);

    /* The longest key is fine, and took the only slot. */
    long_key[WQ_MAX_KEY_LEN] = '\0';
    assert_int_equal(wq_add(c.q, long_key), 0);
    assert_int_equal(wq_add(c.q, "b"), -ENOSPC);
    ctx_run(&c);
    assert_int_equal(c.n, 1);
    wq_close(NULL, NULL, NULL);
    wq_shutdown(NULL);
    ctx_close(&c);
}

/* Waiting keys are deduplicated and handed out in FIFO order, from the loop only. */
static void test_dedupe_fifo(void **state)
{
    struct ctx c;

    (void)state;
    ctx_init(&c, NULL);
    assert_int_equal(wq_add(c.q, "a"), 0);
    assert_int_equal(wq_add(c.q, "b"), 0);
    assert_int_equal(wq_add(c.q, "a"), 0);
    assert_int_equal(wq_add(c.q, "c"), 0);
    assert_int_equal(wq_add(c.q, "b"), 0);
    assert_int_equal(wq_len(c.q), 3);
    assert_int_equal(c.n, 0); /* nothing is processed inside wq_add() */
    ctx_run(&c);
    assert_int_equal(c.n, 3);
    assert_string_equal(c.keys[0], "a");
    assert_string_equal(c.keys[1], "b");
    assert_string_equal(c.keys[2], "c");
    assert_int_equal(wq_len(c.q), 0);
    assert_int_equal(wq_processing(c.q), 0);
    ctx_close(&c);
}

/* fn may add keys and finish synchronously; it is never re-entered. */
static void hook_add_more(struct ctx *c, const char *key)
{
    char k[KEY_SZ];

    if (c->counter < 10) {
        snprintf(k, sizeof(k), "more-%d", c->counter++);
        assert_int_equal(wq_add(c->q, k), 0);
        assert_int_equal(wq_add(c->q, key), 0); /* itself: marked dirty */
        ctx_done(c, key);                       /* ...so queued again */
        return;
    }
    finish(c, key);
}

static void test_no_reentrancy(void **state)
{
    struct wq_options o = {.max_concurrent = 4};
    struct ctx c;

    (void)state;
    ctx_init(&c, &o);
    c.hook = hook_add_more;
    assert_int_equal(wq_add(c.q, "seed"), 0);
    ctx_run(&c);
    assert_int_equal(c.max_depth, 1);
    /* "seed" re-added itself on each of the first 10 calls (every call re-adds its own key). */
    assert_int_equal(c.n, 21);
    assert_int_equal(wq_len(c.q), 0);
    ctx_close(&c);
}

/* A key added while being processed is processed once more after wq_done(), never concurrently. */
static void hook_dirty(struct ctx *c, const char *key)
{
    if (strcmp(key, "a") == 0) {
        if (count_key(c, "a") == 1) {
            assert_int_equal(wq_add(c->q, "a"), 0);
            assert_int_equal(wq_add(c->q, "a"), 0);
            assert_int_equal(wq_add(c->q, "b"), 0);
            assert_int_equal(wq_len(c->q), 1); /* only "b": "a" is dirty, not queued */
            c->complete_after_ms = 30;
        } else {
            c->complete_after_ms = 0;
        }
    }
    finish(c, key);
}

static void test_dirty_requeue(void **state)
{
    struct wq_options o = {.max_concurrent = 4};
    struct ctx c;

    (void)state;
    ctx_init(&c, &o);
    c.hook = hook_dirty;
    assert_int_equal(wq_add(c.q, "a"), 0);
    ctx_run(&c);
    assert_int_equal(count_key(&c, "a"), 2);
    assert_int_equal(count_key(&c, "b"), 1);
    assert_int_equal(c.n, 3);
    ctx_close(&c);
}

/* A delayed add that fires while the key is processing (or just after) also yields exactly one
 * more processing, whichever of the two timers runs first. */
static void hook_delayed_while_processing(struct ctx *c, const char *key)
{
    if (count_key(c, key) == 1) {
        assert_int_equal(wq_add_after(c->q, key, 1), 0);
        c->complete_after_ms = 20;
    } else {
        c->complete_after_ms = 0;
    }
    finish(c, key);
}

static void test_delayed_while_processing(void **state)
{
    struct wq_options o = {.max_concurrent = 4};
    struct ctx c;

    (void)state;
    ctx_init(&c, &o);
    c.hook = hook_delayed_while_processing;
    assert_int_equal(wq_add(c.q, "d"), 0);
    ctx_run(&c);
    assert_int_equal(c.n, 2);
    assert_true(c.at_ms[1] >= 1.0 - 0.01);
    ctx_close(&c);
}

/* At most max_concurrent keys are outstanding, with completion from uv timers. */
static void test_concurrency_cap(void **state)
{
    struct wq_options o = {.max_concurrent = 3};
    char k[KEY_SZ];
    struct ctx c;

    (void)state;
    ctx_init(&c, &o);
    c.complete_after_ms = 5;
    for (int i = 0; i < 20; i++) {
        snprintf(k, sizeof(k), "key-%02d", i);
        assert_int_equal(wq_add(c.q, k), 0);
    }
    ctx_run(&c);
    assert_int_equal(c.n, 20);
    assert_int_equal(c.max_inflight, 3);
    assert_int_equal(c.inflight, 0);
    for (int i = 0; i < 20; i++) {
        snprintf(k, sizeof(k), "key-%02d", i);
        assert_string_equal(c.keys[i], k);
    }
    /* Seven waves of 3 keys, each waiting for a 5 ms completion of the previous wave (uv timers
     * run on the millisecond loop clock, so allow 1.5 ms of rounding per wave). */
    assert_true(c.at_ms[19] >= 30.0 - 6 * 1.5);
    ctx_close(&c);
}

/* Rate-limited requeues back off exponentially; wq_forget() resets the count. */
static void hook_backoff(struct ctx *c, const char *key)
{
    if (c->counter < 4) {
        assert_int_equal(wq_num_requeues(c->q, key), c->counter);
        assert_int_equal(wq_add_rate_limited(c->q, key), 0);
        c->counter++;
        assert_int_equal(wq_num_requeues(c->q, key), c->counter);
    } else if (c->counter == 4) {
        wq_forget(c->q, key);
        assert_int_equal(wq_num_requeues(c->q, key), 0);
        assert_int_equal(wq_add_rate_limited(c->q, key), 0);
        assert_int_equal(wq_num_requeues(c->q, key), 1);
        c->counter++;
    } else {
        wq_forget(c->q, key);
    }
    finish(c, key);
}

static void test_rate_limited_backoff(void **state)
{
    const double want[] = {5, 10, 20, 40, 5};
    struct ctx c;

    (void)state;
    ctx_init(&c, NULL); /* client-go defaults: 5 ms base */
    c.hook = hook_backoff;
    assert_int_equal(wq_add(c.q, "k"), 0);
    ctx_run(&c);
    assert_int_equal(c.n, 6);
    for (int i = 0; i < 5; i++) {
        double d = c.at_ms[i + 1] - c.at_ms[i];

        if (d < want[i] - 0.01)
            fail_msg("requeue %d after %.3f ms, want >= %.0f ms", i, d, want[i]);
        assert_true(d < want[i] * 10 + SLACK_MS);
    }
    /* Each delay is twice the previous one: their sum is at least 75 ms. */
    assert_true(c.at_ms[4] - c.at_ms[0] >= 75.0 - 0.01);
    assert_int_equal(wq_num_requeues(c.q, "k"), 0);
    ctx_close(&c);
}

/* The backoff is capped at max_delay_ms: 12 failures at base 5 ms would otherwise take 20 s. */
static void hook_capped(struct ctx *c, const char *key)
{
    if (c->counter++ < 12)
        assert_int_equal(wq_add_rate_limited(c->q, key), 0);
    else
        wq_forget(c->q, key);
    finish(c, key);
}

static void test_backoff_cap(void **state)
{
    struct wq_options o = {.base_delay_ms = 5, .max_delay_ms = 10};
    struct ctx c;

    (void)state;
    ctx_init(&c, &o);
    c.hook = hook_capped;
    assert_int_equal(wq_add(c.q, "k"), 0);
    ctx_run(&c);
    assert_int_equal(c.n, 13);
    for (int i = 0; i < 12; i++)
        assert_true(c.at_ms[i + 1] - c.at_ms[i] >= (i == 0 ? 5.0 : 10.0) - 0.01);
    assert_true(c.at_ms[12] < 115.0 * 10 + SLACK_MS);
    ctx_close(&c);
}

/* wq_add_again() queues a key at once until its streak passes the limit, then delays it by the
 * backoff of the streak; any other add resets the streak. The table: what each pass of the key
 * does and what the queue must say. */
static const struct {
    bool outside_add; /* an event first: wq_add() while the key is processing */
    int want_streak;  /* wq_add_again()'s return; 0: the pass ends the key */
    bool want_now;    /* queued at once (wq_len() is 1 after wq_done), not delayed */
} again_passes[] = {
    {false, 1, true},  {false, 2, true},  {false, 3, true}, /* up to the limit (3): at once */
    {false, 4, false}, {false, 5, false},                   /* past it: 5 ms, then 10 ms */
    {true, 1, true},   {false, 2, true},                    /* an event resets the streak */
    {false, 0, false},
};

static void hook_again(struct ctx *c, const char *key)
{
    int i = c->counter++, r = 0;

    assert_true(i < (int)(sizeof(again_passes) / sizeof(again_passes[0])));
    if (again_passes[i].outside_add)
        assert_int_equal(wq_add(c->q, key), 0);
    if (again_passes[i].want_streak) {
        r = wq_add_again(c->q, key, 3);
        assert_int_equal(r, again_passes[i].want_streak);
    }
    ctx_done(c, key);
    assert_int_equal(wq_len(c->q), again_passes[i].want_now ? 1 : 0);
}

static void test_add_again(void **state)
{
    struct wq_options o = {.base_delay_ms = 5};
    struct ctx c;

    (void)state;
    ctx_init(&c, &o);
    assert_int_equal(wq_add_again(c.q, "s", 0), -EINVAL);
    c.hook = hook_again;
    assert_int_equal(wq_add(c.q, "s"), 0);
    ctx_run(&c);
    assert_int_equal(c.n, 8);
    assert_true(c.at_ms[4] - c.at_ms[3] >= 5.0 - 0.01);
    assert_true(c.at_ms[5] - c.at_ms[4] >= 10.0 - 0.01);
    assert_int_equal(wq_num_requeues(c.q, "s"), 0); /* no failure counted */
    ctx_close(&c);
}

/* wq_add_after() delays; the earliest requested time wins. */
static void test_add_after(void **state)
{
    struct ctx c;

    (void)state;
    ctx_init(&c, NULL);
    assert_int_equal(wq_add_after(c.q, "x", 30), 0);
    assert_int_equal(wq_add_after(c.q, "x", 5000), 0); /* later: ignored */
    assert_int_equal(wq_add_after(c.q, "y", 60), 0);
    assert_int_equal(wq_add_after(c.q, "y", 10), 0); /* earlier: wins */
    assert_int_equal(wq_add_after(c.q, "z", 0), 0);  /* now */
    assert_int_equal(wq_len(c.q), 1);
    ctx_run(&c);
    assert_int_equal(c.n, 3);
    assert_string_equal(c.keys[0], "z");
    assert_string_equal(c.keys[1], "y");
    assert_string_equal(c.keys[2], "x");
    assert_true(c.at_ms[1] >= 10.0 - 0.01);
    assert_true(c.at_ms[2] >= 30.0 - 0.01);
    assert_true(c.at_ms[2] < 4000.0);
    ctx_close(&c);
}

/* max_keys bounds the distinct keys tracked; known keys can always be re-added. */
static void test_max_keys(void **state)
{
    struct wq_options o = {.max_keys = 3};
    struct ctx c;

    (void)state;
    ctx_init(&c, &o);
    assert_int_equal(wq_add(c.q, "a"), 0);
    assert_int_equal(wq_add(c.q, "b"), 0);
    assert_int_equal(wq_add_after(c.q, "c", 5), 0);
    assert_int_equal(wq_add(c.q, "d"), -ENOSPC);
    assert_int_equal(wq_add_after(c.q, "d", 5), -ENOSPC);
    assert_int_equal(wq_add_rate_limited(c.q, "d"), -ENOSPC);
    /* Known keys need no slot. */
    assert_int_equal(wq_add(c.q, "a"), 0);
    assert_int_equal(wq_add_after(c.q, "c", 1), 0);
    assert_int_equal(wq_add_rate_limited(c.q, "c"), 0); /* 5 ms: the 1 ms wins */
    ctx_run(&c);
    assert_int_equal(c.n, 3);
    assert_int_equal(count_key(&c, "a"), 1);
    assert_int_equal(count_key(&c, "b"), 1);
    assert_int_equal(count_key(&c, "c"), 1);

    /* "c" still holds a failure count, and so a slot, until it is forgotten. */
    assert_int_equal(wq_num_requeues(c.q, "c"), 1);
    assert_int_equal(wq_add(c.q, "x"), 0);
    assert_int_equal(wq_add(c.q, "y"), 0);
    assert_int_equal(wq_add(c.q, "z"), -ENOSPC);
    wq_forget(c.q, "c");
    assert_int_equal(wq_add(c.q, "z"), 0);
    ctx_run(&c);
    assert_int_equal(c.n, 6);
    ctx_close(&c);
}

/* Closing with waiting, delayed and rate-limited keys frees everything; fn is never called. */
static void test_close_pending(void **state)
{
    struct wq_options o = {.max_concurrent = 2};
    char k[KEY_SZ];
    struct ctx c;

    (void)state;
    ctx_init(&c, &o);
    for (int i = 0; i < 1000; i++) {
        snprintf(k, sizeof(k), "ready-%d", i);
        assert_int_equal(wq_add(c.q, k), 0);
        snprintf(k, sizeof(k), "later-%d", i);
        assert_int_equal(wq_add_after(c.q, k, 10000 + (uint64_t)i), 0);
        snprintf(k, sizeof(k), "failed-%d", i);
        assert_int_equal(wq_add_rate_limited(c.q, k), 0);
    }
    assert_int_equal(wq_len(c.q), 1000);
    wq_close(c.q, on_closed, &c);
    assert_int_equal(wq_add(c.q, "late"), -ESHUTDOWN);
    assert_int_equal(wq_len(c.q), 0);
    wq_close(c.q, on_closed, &c); /* ignored */
    c.q = NULL;
    ctx_run(&c);
    assert_int_equal(c.n, 0);
    assert_int_equal(c.closed, 1);
    assert_int_equal(uv_loop_close(&c.loop), 0);
}

/* Shutdown from fn: nothing more is dispatched, adds fail, the processing key can still finish. */
static void hook_shutdown(struct ctx *c, const char *key)
{
    wq_shutdown(c->q);
    wq_shutdown(c->q); /* idempotent */
    assert_int_equal(wq_len(c->q), 0);
    assert_int_equal(wq_add(c->q, "late"), -ESHUTDOWN);
    assert_int_equal(wq_add_after(c->q, "late", 5), -ESHUTDOWN);
    assert_int_equal(wq_add_rate_limited(c->q, key), -ESHUTDOWN);
    c->complete_after_ms = 10;
    finish(c, key);
}

static void test_shutdown(void **state)
{
    struct ctx c;

    (void)state;
    ctx_init(&c, NULL);
    c.hook = hook_shutdown;
    assert_int_equal(wq_add(c.q, "a"), 0);
    assert_int_equal(wq_add(c.q, "b"), 0);
    assert_int_equal(wq_add_after(c.q, "c", 5), 0);
    assert_int_equal(wq_add_rate_limited(c.q, "d"), 0);
    ctx_run(&c);
    assert_int_equal(c.n, 1);
    assert_string_equal(c.keys[0], "a");
    assert_int_equal(c.inflight, 0);
    assert_int_equal(wq_processing(c.q), 0);
    ctx_close(&c);
}

/* Closing from fn while another key is still processing: that key is abandoned and freed. */
static void hook_close(struct ctx *c, const char *key)
{
    if (strcmp(key, "b") == 0) {
        wq_close(c->q, on_closed, c);
        ctx_done(c, "b"); /* safe until close_cb */
        assert_int_equal(wq_add(c->q, "c"), -ESHUTDOWN);
    }
    /* "a" is never finished. */
}

static void test_close_from_fn(void **state)
{
    struct wq_options o = {.max_concurrent = 2};
    struct ctx c;

    (void)state;
    ctx_init(&c, &o);
    c.hook = hook_close;
    assert_int_equal(wq_add(c.q, "a"), 0);
    assert_int_equal(wq_add(c.q, "b"), 0);
    assert_int_equal(wq_add(c.q, "c"), 0);
    ctx_run(&c);
    assert_int_equal(c.n, 2);
    assert_int_equal(c.closed, 1);
    assert_int_equal(uv_loop_close(&c.loop), 0);
}

/* 100,000 distinct keys (each added twice) are processed exactly once each, finished
 * asynchronously in batches from an idle handle. */
#define MANY 100000

struct many {
    uv_loop_t loop;
    uv_idle_t finisher;
    struct wq_queue *q;
    unsigned char seen[MANY];
    const char *pending[256];
    size_t npending;
    size_t total;
    int bad;
};

static void many_finish(uv_idle_t *h);

static void many_process(struct wq_queue *q, const char *key, void *data)
{
    struct many *m = data;
    uint64_t idx;

    (void)q;
    if (strncmp(key, "ns/obj-", 7) != 0 || parse_u64(key + 7, MANY - 1, &idx) < 0) {
        m->bad++;
        wq_done(m->q, key);
        return;
    }
    m->seen[idx]++;
    m->total++;
    if (idx % 2) {
        wq_done(m->q, key);
        return;
    }
    /* Even keys finish later; the key pointer stays valid until wq_done(). */
    if (m->npending >= sizeof(m->pending) / sizeof(m->pending[0])) {
        m->bad++;
        wq_done(m->q, key);
        return;
    }
    m->pending[m->npending++] = key;
    (void)uv_idle_start(&m->finisher, many_finish);
}

static void many_finish(uv_idle_t *h)
{
    struct many *m = h->data;
    size_t n = m->npending;

    m->npending = 0;
    for (size_t i = 0; i < n; i++)
        wq_done(m->q, m->pending[i]);
    if (m->total == MANY && m->npending == 0)
        uv_idle_stop(h);
}

static void test_many_keys(void **state)
{
    struct wq_options o = {.max_concurrent = 64};
    struct many *m;
    char k[KEY_SZ];

    (void)state;
    m = x_calloc(1, sizeof(*m));
    assert_non_null(m);
    assert_int_equal(uv_loop_init(&m->loop), 0);
    assert_int_equal(uv_idle_init(&m->loop, &m->finisher), 0);
    m->finisher.data = m;
    assert_int_equal(uv_idle_start(&m->finisher, many_finish), 0);
    m->q = wq_new(&m->loop, &o, many_process, m);
    assert_non_null(m->q);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < MANY; i++) {
            snprintf(k, sizeof(k), "ns/obj-%d", i);
            assert_int_equal(wq_add(m->q, k), 0);
        }
    }
    assert_int_equal(wq_len(m->q), MANY);
    assert_int_equal(uv_run(&m->loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(m->bad, 0);
    assert_int_equal(m->total, MANY);
    for (int i = 0; i < MANY; i++)
        if (m->seen[i] != 1)
            fail_msg("key %d processed %d times", i, m->seen[i]);
    assert_int_equal(wq_len(m->q), 0);
    assert_int_equal(wq_processing(m->q), 0);
    wq_close(m->q, NULL, NULL);
    uv_close((uv_handle_t *)&m->finisher, NULL);
    assert_int_equal(uv_run(&m->loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(uv_loop_close(&m->loop), 0);
    x_free(m);
}

/* Keys whose processing takes time share the loop iteration's budget (common/slice.h): one
 * iteration processes the first key whatever it costs, then stops once the budget is spent; the
 * rest follow in later iterations, in order. */
static void spin_hook(struct ctx *c, const char *key)
{
    uint64_t t0 = uv_hrtime();

    while (uv_hrtime() - t0 < 1000000) /* 1 ms */
        ;
    ctx_done(c, key);
}

static void test_sliced(void **state)
{
    struct wq_options o = {.max_concurrent = 64};
    struct ctx *c = x_calloc(1, sizeof(*c));
    char k[KEY_SZ];
    int iterations = 0;

    (void)state;
    assert_non_null(c);
    ctx_init(c, &o);
    c->hook = spin_hook;
    for (int i = 0; i < 40; i++) {
        snprintf(k, sizeof(k), "ns/obj-%02d", i);
        assert_int_equal(wq_add(c->q, k), 0);
    }
    uv_update_time(&c->loop);
    (void)uv_run(&c->loop, UV_RUN_NOWAIT);
    /* A budget of 3 ms: three or four keys of 1 ms (fewer when the machine is slow), not 40. */
    assert_true(c->n >= 1);
    assert_true(c->n <= (int)(SLICE_BUDGET_NS / 1000000) + 1);
    while (c->n < 40 && iterations++ < 1000) {
        uv_sleep(1); /* the next iteration's clock moves on */
        (void)uv_run(&c->loop, UV_RUN_NOWAIT);
    }
    assert_int_equal(c->n, 40);
    for (int i = 0; i < 40; i++) {
        snprintf(k, sizeof(k), "ns/obj-%02d", i);
        assert_string_equal(c->keys[i], k);
    }
    ctx_close(c);
    x_free(c);
}

/* Every allocation failing in turn: errors are returned, nothing leaks or crashes. */
static void test_oom_sweep(void **state)
{
    char k[KEY_SZ];

    (void)state;
    for (long n = 0; n < 200; n++) {
        struct ctx c;
        int r;

        memset(&c, 0, sizeof(c));
        assert_int_equal(uv_loop_init(&c.loop), 0);
        xalloc_fail_after(n);
        c.q = wq_new(&c.loop, NULL, process, &c);
        if (c.q) {
            for (int i = 0; i < 40; i++) {
                snprintf(k, sizeof(k), "k%d", i);
                r = wq_add(c.q, k);
                assert_true(r == 0 || r == -ENOMEM);
                r = wq_add_after(c.q, k, 1 + (uint64_t)i % 3);
                assert_true(r == 0 || r == -ENOMEM);
                snprintf(k, sizeof(k), "f%d", i);
                r = wq_add_rate_limited(c.q, k);
                assert_true(r == 0 || r == -ENOMEM);
            }
        }
        xalloc_fail_after(-1);
        if (c.q) {
            ctx_run(&c);
            wq_close(c.q, on_closed, &c);
        } else {
            c.closed = 1;
        }
        ctx_run(&c);
        assert_int_equal(c.closed, 1);
        assert_int_equal(uv_loop_close(&c.loop), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_args),
        cmocka_unit_test(test_dedupe_fifo),
        cmocka_unit_test(test_no_reentrancy),
        cmocka_unit_test(test_dirty_requeue),
        cmocka_unit_test(test_delayed_while_processing),
        cmocka_unit_test(test_concurrency_cap),
        cmocka_unit_test(test_rate_limited_backoff),
        cmocka_unit_test(test_backoff_cap),
        cmocka_unit_test(test_add_again),
        cmocka_unit_test(test_add_after),
        cmocka_unit_test(test_max_keys),
        cmocka_unit_test(test_close_pending),
        cmocka_unit_test(test_shutdown),
        cmocka_unit_test(test_close_from_fn),
        cmocka_unit_test(test_many_keys),
        cmocka_unit_test(test_sliced),
        cmocka_unit_test(test_oom_sweep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
