#include "kube/workqueue.h"

#include "common/slice.h"
#include "common/xalloc.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <sys/random.h>

#define NSEC_PER_MSEC  1000000ULL
#define WQ_NOT_DELAYED SIZE_MAX
#define WQ_BATCH       1024 /* keys dispatched per loop iteration, so other handles get a turn */
#define WQ_MIN_BUCKETS 64
#define WQ_MAX_BUCKETS ((size_t)1 << 30)
#define WQ_MIN_HEAP    16

/* One tracked key. It lives in the hash table while any of its state is set (queued, dirty,
 * processing, delayed, failures) and is freed as soon as none is. */
struct wq_entry {
    struct wq_entry *hnext; /* hash chain */
    struct wq_entry *qnext; /* ready FIFO */
    uint64_t hash;
    uint64_t ready_ns; /* when delayed: uv_hrtime() at which the key is added */
    size_t heap_idx;   /* index in the delay heap, WQ_NOT_DELAYED if not delayed */
    uint32_t failures; /* rate-limited requeues since the last wq_forget() */
    uint32_t streak;   /* wq_add_again() in a row since the last other add */
    bool queued;       /* in the ready FIFO */
    bool dirty;        /* added while processing: queue again at wq_done() */
    bool processing;   /* handed to fn, wq_done() not called yet */
    size_t len;
    char key[]; /* NUL-terminated copy */
};

struct wq_queue {
    uv_loop_t *loop;
    uv_idle_t idle;   /* dispatches; active only while a key can be dispatched */
    uv_timer_t timer; /* armed for the earliest delayed key */
    wq_process_fn fn;
    void *data;

    unsigned max_concurrent;
    uint64_t base_delay_ms;
    uint64_t max_delay_ms;
    size_t max_keys;

    /* Hash table of every tracked key, chained, power-of-two size. */
    struct wq_entry **buckets;
    size_t nbuckets;
    size_t nkeys;
    uint64_t seed[2];

    /* Ready FIFO. */
    struct wq_entry *head, *tail;
    size_t nqueued;
    size_t nprocessing;

    /* Min-heap of delayed keys by ready_ns. */
    struct wq_entry **heap;
    size_t heap_len;
    size_t heap_cap;

    bool shut;
    bool closing;
    int handles_open;
    wq_close_cb close_cb;
    void *close_data;
};

/* ---- SipHash-1-3, keyed per queue so that crafted object names cannot flood one bucket ---- */

static uint64_t rotl64(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

static void sipround(uint64_t v[4])
{
    v[0] += v[1];
    v[1] = rotl64(v[1], 13);
    v[1] ^= v[0];
    v[0] = rotl64(v[0], 32);
    v[2] += v[3];
    v[3] = rotl64(v[3], 16);
    v[3] ^= v[2];
    v[0] += v[3];
    v[3] = rotl64(v[3], 21);
    v[3] ^= v[0];
    v[2] += v[1];
    v[1] = rotl64(v[1], 17);
    v[1] ^= v[2];
    v[2] = rotl64(v[2], 32);
}

static uint64_t siphash13(const uint64_t k[2], const char *in, size_t len)
{
    uint64_t v[4] = {
        0x736f6d6570736575ULL ^ k[0],
        0x646f72616e646f6dULL ^ k[1],
        0x6c7967656e657261ULL ^ k[0],
        0x7465646279746573ULL ^ k[1],
    };
    uint64_t b = (uint64_t)len << 56;
    uint64_t m;

    for (; len >= 8; in += 8, len -= 8) {
        /* Host byte order: the value only has to be stable within this process. */
        memcpy(&m, in, sizeof(m));
        v[3] ^= m;
        sipround(v);
        v[0] ^= m;
    }
    for (size_t i = 0; i < len; i++)
        b |= (uint64_t)(unsigned char)in[i] << (8 * i);
    v[3] ^= b;
    sipround(v);
    v[0] ^= b;
    v[2] ^= 0xff;
    sipround(v);
    sipround(v);
    sipround(v);
    return v[0] ^ v[1] ^ v[2] ^ v[3];
}

static void wq_seed(struct wq_queue *q)
{
    if (getrandom(q->seed, sizeof(q->seed), GRND_NONBLOCK) == (ssize_t)sizeof(q->seed))
        return;
    /* No entropy yet (early boot): a weaker seed still spreads ordinary keys well. */
    q->seed[0] = uv_hrtime() ^ 0x9e3779b97f4a7c15ULL;
    q->seed[1] = (uint64_t)(uintptr_t)q ^ rotl64(q->seed[0], 29);
}

/* ---- hash table ---- */

/* Validates key and returns its length in *ret_len. */
static int wq_key_len(const char *key, size_t *ret_len)
{
    size_t len;

    if (!key)
        return -EINVAL;
    len = strnlen(key, WQ_MAX_KEY_LEN + 1);
    if (len == 0)
        return -EINVAL;
    if (len > WQ_MAX_KEY_LEN)
        return -ENAMETOOLONG;
    *ret_len = len;
    return 0;
}

static struct wq_entry *wq_find(const struct wq_queue *q, const char *key, size_t len,
                                uint64_t hash)
{
    for (struct wq_entry *e = q->buckets[hash & (q->nbuckets - 1)]; e; e = e->hnext)
        if (e->hash == hash && e->len == len && memcmp(e->key, key, len) == 0)
            return e;
    return NULL;
}

static struct wq_entry *wq_lookup(const struct wq_queue *q, const char *key)
{
    size_t len;

    if (!q || wq_key_len(key, &len) < 0)
        return NULL;
    return wq_find(q, key, len, siphash13(q->seed, key, len));
}

/* Doubles the table. Failing to grow is not an error: chains just get longer. */
static void wq_grow(struct wq_queue *q)
{
    size_t n = q->nbuckets * 2;
    struct wq_entry **b;

    if (n > WQ_MAX_BUCKETS)
        return;
    b = x_calloc(n, sizeof(*b));
    if (!b)
        return;
    for (size_t i = 0; i < q->nbuckets; i++) {
        struct wq_entry *e = q->buckets[i], *next;

        for (; e; e = next) {
            next = e->hnext;
            e->hnext = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
        }
    }
    x_free(q->buckets);
    q->buckets = b;
    q->nbuckets = n;
}

/* Finds key's entry or creates an idle one. Returns 0 and the entry in *ret_e. */
static int wq_get(struct wq_queue *q, const char *key, struct wq_entry **ret_e)
{
    struct wq_entry *e;
    uint64_t hash;
    size_t len;
    int r;

    if (!q)
        return -EINVAL;
    r = wq_key_len(key, &len);
    if (r < 0)
        return r;
    if (q->shut)
        return -ESHUTDOWN;
    hash = siphash13(q->seed, key, len);
    e = wq_find(q, key, len, hash);
    if (e) {
        *ret_e = e;
        return 0;
    }
    if (q->nkeys >= q->max_keys)
        return -ENOSPC;
    e = x_malloc(sizeof(*e) + len + 1);
    if (!e)
        return -ENOMEM;
    memset(e, 0, sizeof(*e));
    e->hash = hash;
    e->heap_idx = WQ_NOT_DELAYED;
    e->len = len;
    memcpy(e->key, key, len + 1);
    if (q->nkeys >= q->nbuckets)
        wq_grow(q);
    e->hnext = q->buckets[hash & (q->nbuckets - 1)];
    q->buckets[hash & (q->nbuckets - 1)] = e;
    q->nkeys++;
    *ret_e = e;
    return 0;
}

/* Frees e if nothing refers to it any more. */
static void wq_release(struct wq_queue *q, struct wq_entry *e)
{
    struct wq_entry **p;

    if (e->queued || e->dirty || e->processing || e->heap_idx != WQ_NOT_DELAYED || e->failures)
        return;
    for (p = &q->buckets[e->hash & (q->nbuckets - 1)]; *p != e; p = &(*p)->hnext)
        ;
    *p = e->hnext;
    q->nkeys--;
    x_free(e);
}

/* ---- delay heap ---- */

static void heap_set(struct wq_queue *q, size_t i, struct wq_entry *e)
{
    q->heap[i] = e;
    e->heap_idx = i;
}

static void heap_up(struct wq_queue *q, size_t i)
{
    struct wq_entry *e = q->heap[i];

    while (i > 0) {
        size_t parent = (i - 1) / 2;

        if (q->heap[parent]->ready_ns <= e->ready_ns)
            break;
        heap_set(q, i, q->heap[parent]);
        i = parent;
    }
    heap_set(q, i, e);
}

static void heap_down(struct wq_queue *q, size_t i)
{
    struct wq_entry *e = q->heap[i];

    for (;;) {
        size_t child = 2 * i + 1;

        if (child >= q->heap_len)
            break;
        if (child + 1 < q->heap_len && q->heap[child + 1]->ready_ns < q->heap[child]->ready_ns)
            child++;
        if (e->ready_ns <= q->heap[child]->ready_ns)
            break;
        heap_set(q, i, q->heap[child]);
        i = child;
    }
    heap_set(q, i, e);
}

static int heap_push(struct wq_queue *q, struct wq_entry *e)
{
    if (q->heap_len == q->heap_cap) {
        size_t cap = q->heap_cap ? q->heap_cap * 2 : WQ_MIN_HEAP;
        struct wq_entry **h = x_reallocarray(q->heap, cap, sizeof(*h));

        if (!h)
            return -ENOMEM;
        q->heap = h;
        q->heap_cap = cap;
    }
    heap_set(q, q->heap_len++, e);
    heap_up(q, q->heap_len - 1);
    return 0;
}

static struct wq_entry *heap_pop(struct wq_queue *q)
{
    struct wq_entry *top = q->heap[0];

    q->heap_len--;
    if (q->heap_len > 0) {
        heap_set(q, 0, q->heap[q->heap_len]);
        heap_down(q, 0);
    }
    top->heap_idx = WQ_NOT_DELAYED;
    return top;
}

/* ---- loop plumbing ---- */

static void wq_on_idle(uv_idle_t *idle);
static void wq_on_timer(uv_timer_t *timer);

/* Starts the dispatcher if a key can be dispatched, stops it otherwise (so the loop can block). */
static void wq_kick(struct wq_queue *q)
{
    if (q->closing)
        return;
    if (!q->shut && q->head && q->nprocessing < q->max_concurrent)
        (void)uv_idle_start(&q->idle, wq_on_idle); /* no-op when active; cannot fail */
    else
        (void)uv_idle_stop(&q->idle);
}

/* Arms the timer for the earliest delayed key. */
static void wq_arm(struct wq_queue *q, uint64_t now)
{
    uint64_t delta, ms = 0;

    if (q->closing)
        return;
    if (q->shut || q->heap_len == 0) {
        (void)uv_timer_stop(&q->timer);
        return;
    }
    if (q->heap[0]->ready_ns > now) {
        delta = q->heap[0]->ready_ns - now;
        ms = delta / NSEC_PER_MSEC + (delta % NSEC_PER_MSEC != 0);
    }
    (void)uv_timer_start(&q->timer, wq_on_timer, ms, 0); /* cannot fail on a live handle */
}

/* The heart of wq_add() for a tracked key. Never calls fn. */
static void wq_enqueue(struct wq_queue *q, struct wq_entry *e)
{
    if (e->queued)
        return;
    if (e->processing) {
        e->dirty = true;
        return;
    }
    e->queued = true;
    e->qnext = NULL;
    if (q->tail)
        q->tail->qnext = e;
    else
        q->head = e;
    q->tail = e;
    q->nqueued++;
    wq_kick(q);
}

static struct wq_entry *wq_dequeue(struct wq_queue *q)
{
    struct wq_entry *e = q->head;

    q->head = e->qnext;
    if (!q->head)
        q->tail = NULL;
    e->qnext = NULL;
    e->queued = false;
    q->nqueued--;
    return e;
}

static void wq_on_idle(uv_idle_t *idle)
{
    struct wq_queue *q = idle->data;

    /* fn may add keys, finish keys (synchronously or not), shut down or close the queue. The keys
     * share the iteration's budget with the other sliced jobs (common/slice.h): the first one
     * unconditionally, then while it lasts, so that a backlog of keys whose reconciles end at once
     * (nothing to write) cannot hold the loop for hundreds of them while requests (a webhook's
     * reviews, a lease renewal) wait for the poll. */
    for (int n = 0; n < WQ_BATCH; n++) {
        struct wq_entry *e;

        if (q->shut || !q->head || q->nprocessing >= q->max_concurrent ||
            (n > 0 && !slice_left(idle->loop)))
            break;
        e = wq_dequeue(q);
        e->processing = true;
        q->nprocessing++;
        q->fn(q, e->key, q->data);
    }
    wq_kick(q);
}

static void wq_on_timer(uv_timer_t *timer)
{
    struct wq_queue *q = timer->data;
    uint64_t now = uv_hrtime();

    /* The loop clock is in whole milliseconds and may lag uv_hrtime(): a key not due yet is
     * re-armed rather than added early. */
    while (!q->shut && q->heap_len > 0 && q->heap[0]->ready_ns <= now) {
        struct wq_entry *e = heap_pop(q);

        wq_enqueue(q, e);
        wq_release(q, e);
    }
    wq_arm(q, uv_hrtime());
}

/* Delays e by delay_ms (> 0); an earlier pending time wins. */
static int wq_delay(struct wq_queue *q, struct wq_entry *e, uint64_t delay_ms)
{
    uint64_t now = uv_hrtime(), ready;
    int r;

    if (delay_ms > (UINT64_MAX - now) / NSEC_PER_MSEC)
        ready = UINT64_MAX;
    else
        ready = now + delay_ms * NSEC_PER_MSEC;
    if (e->heap_idx != WQ_NOT_DELAYED) {
        if (ready >= e->ready_ns)
            return 0;
        e->ready_ns = ready;
        heap_up(q, e->heap_idx);
    } else {
        e->ready_ns = ready;
        r = heap_push(q, e);
        if (r < 0)
            return r;
    }
    if (e->heap_idx == 0)
        wq_arm(q, now);
    return 0;
}

static uint64_t wq_backoff_ms(const struct wq_queue *q, uint32_t failures)
{
    if (failures >= 64 || q->base_delay_ms > (q->max_delay_ms >> failures))
        return q->max_delay_ms;
    return q->base_delay_ms << failures;
}

/* ---- API ---- */

struct wq_queue *wq_new(uv_loop_t *loop, const struct wq_options *opts, wq_process_fn fn,
                        void *data)
{
    struct wq_options o = opts ? *opts : (struct wq_options){0};
    struct wq_queue *q;

    if (!loop || !fn)
        return NULL;
    if (!o.max_concurrent)
        o.max_concurrent = WQ_DEFAULT_CONCURRENCY;
    if (!o.base_delay_ms)
        o.base_delay_ms = WQ_DEFAULT_BASE_DELAY;
    if (!o.max_delay_ms)
        o.max_delay_ms = WQ_DEFAULT_MAX_DELAY;
    if (!o.max_keys)
        o.max_keys = WQ_DEFAULT_MAX_KEYS;
    if (o.base_delay_ms > o.max_delay_ms)
        return NULL;

    q = x_calloc(1, sizeof(*q));
    if (!q)
        return NULL;
    q->buckets = x_calloc(WQ_MIN_BUCKETS, sizeof(*q->buckets));
    if (!q->buckets) {
        x_free(q);
        return NULL;
    }
    q->nbuckets = WQ_MIN_BUCKETS;
    wq_seed(q);
    q->loop = loop;
    q->fn = fn;
    q->data = data;
    q->max_concurrent = o.max_concurrent;
    q->base_delay_ms = o.base_delay_ms;
    q->max_delay_ms = o.max_delay_ms;
    q->max_keys = o.max_keys;
    /* On unix both only link the handle into the loop and always return 0. */
    (void)uv_idle_init(loop, &q->idle);
    (void)uv_timer_init(loop, &q->timer);
    q->idle.data = q;
    q->timer.data = q;
    return q;
}

int wq_add(struct wq_queue *q, const char *key)
{
    struct wq_entry *e;
    int r;

    r = wq_get(q, key, &e);
    if (r < 0)
        return r;
    e->streak = 0;
    wq_enqueue(q, e);
    return 0;
}

int wq_add_again(struct wq_queue *q, const char *key, uint32_t limit)
{
    struct wq_entry *e;
    uint32_t over;
    int r;

    if (limit == 0)
        return -EINVAL;
    r = wq_get(q, key, &e);
    if (r < 0)
        return r;
    if (e->streak < INT_MAX)
        e->streak++;
    if (e->streak <= limit) {
        wq_enqueue(q, e);
        return (int)e->streak;
    }
    over = e->streak - limit - 1;
    r = wq_delay(q, e, wq_backoff_ms(q, over));
    if (r < 0) {
        wq_release(q, e);
        return r;
    }
    return (int)e->streak;
}

int wq_add_after(struct wq_queue *q, const char *key, uint64_t delay_ms)
{
    struct wq_entry *e;
    int r;

    if (delay_ms == 0)
        return wq_add(q, key);
    r = wq_get(q, key, &e);
    if (r < 0)
        return r;
    e->streak = 0;
    r = wq_delay(q, e, delay_ms);
    wq_release(q, e); /* only frees a key that wq_get() just created, on failure */
    return r;
}

int wq_add_rate_limited(struct wq_queue *q, const char *key)
{
    struct wq_entry *e;
    int r;

    r = wq_get(q, key, &e);
    if (r < 0)
        return r;
    e->streak = 0;
    r = wq_delay(q, e, wq_backoff_ms(q, e->failures));
    if (r < 0) {
        wq_release(q, e);
        return r;
    }
    if (e->failures < UINT32_MAX)
        e->failures++;
    return 0;
}

void wq_forget(struct wq_queue *q, const char *key)
{
    struct wq_entry *e = wq_lookup(q, key);

    if (!e)
        return;
    e->failures = 0;
    wq_release(q, e);
}

int wq_num_requeues(struct wq_queue *q, const char *key)
{
    struct wq_entry *e;

    if (!q || !key)
        return -EINVAL;
    e = wq_lookup(q, key);
    if (!e)
        return 0;
    return e->failures > INT_MAX ? INT_MAX : (int)e->failures;
}

void wq_done(struct wq_queue *q, const char *key)
{
    struct wq_entry *e = wq_lookup(q, key);

    if (!e || !e->processing)
        return;
    e->processing = false;
    q->nprocessing--;
    if (e->dirty) {
        e->dirty = false;
        if (!q->shut)
            wq_enqueue(q, e);
    }
    wq_release(q, e); /* key may point into e: it is not used past this point */
    wq_kick(q);
}

size_t wq_len(const struct wq_queue *q)
{
    return q ? q->nqueued : 0;
}

size_t wq_processing(const struct wq_queue *q)
{
    return q ? q->nprocessing : 0;
}

void wq_shutdown(struct wq_queue *q)
{
    if (!q || q->shut)
        return;
    q->shut = true;
    while (q->head)
        (void)wq_dequeue(q);
    for (size_t i = 0; i < q->heap_len; i++)
        q->heap[i]->heap_idx = WQ_NOT_DELAYED;
    q->heap_len = 0;
    for (size_t i = 0; i < q->nbuckets; i++) {
        struct wq_entry *e = q->buckets[i], *next;

        for (; e; e = next) {
            next = e->hnext;
            e->dirty = false;
            e->failures = 0;
            wq_release(q, e);
        }
    }
    wq_kick(q);
    wq_arm(q, 0);
}

static void wq_on_closed(uv_handle_t *handle)
{
    struct wq_queue *q = handle->data;
    wq_close_cb close_cb = q->close_cb;
    void *close_data = q->close_data;

    if (--q->handles_open > 0)
        return;
    /* Only keys still being processed are left: they are abandoned. */
    for (size_t i = 0; i < q->nbuckets; i++) {
        struct wq_entry *e = q->buckets[i], *next;

        for (; e; e = next) {
            next = e->hnext;
            x_free(e);
        }
    }
    x_free(q->buckets);
    x_free(q->heap);
    x_free(q);
    if (close_cb)
        close_cb(close_data);
}

void wq_close(struct wq_queue *q, wq_close_cb close_cb, void *data)
{
    if (!q || q->closing)
        return;
    wq_shutdown(q);
    q->closing = true;
    q->close_cb = close_cb;
    q->close_data = data;
    q->handles_open = 2;
    uv_close((uv_handle_t *)&q->idle, wq_on_closed);
    uv_close((uv_handle_t *)&q->timer, wq_on_closed);
}
