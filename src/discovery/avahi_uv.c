/* auv: AvahiPoll on libuv (see avahi_uv.h). */
#include "discovery/avahi_uv.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>

#include "common/xalloc.h"

struct auv {
    AvahiPoll api; /* first: Avahi hands &api back to us */
    uv_loop_t *loop;
    unsigned live;    /* watches and timeouts Avahi has not freed */
    unsigned handles; /* uv handles not closed yet */
    bool freeing;
    void *data; /* the owner's, for auv_dispatching */
};

struct AvahiWatch {
    uv_poll_t h;
    struct auv *owner;
    int fd;
    AvahiWatchEvent revents; /* during the callback only */
    AvahiWatchCallback cb;
    void *data;
};

struct AvahiTimeout {
    uv_timer_t h;
    struct auv *owner;
    AvahiTimeoutCallback cb;
    void *data;
};

/* The adapter whose watch or timeout callback is running, NULL between callbacks. It stays at file
 * scope because Avahi's log function is process-wide and gets no context (auv_dispatching); it
 * holds no state from one callback to the next. */
static struct auv *dispatching;

void *auv_dispatching(void)
{
    return dispatching ? dispatching->data : NULL;
}

static void handle_closed(struct auv *p)
{
    p->handles--;
    if (p->freeing && p->handles == 0)
        x_free(p);
}

static void watch_closed(uv_handle_t *h)
{
    struct AvahiWatch *w = h->data;
    struct auv *p = w->owner;

    x_free(w);
    handle_closed(p);
}

static void timeout_closed(uv_handle_t *h)
{
    struct AvahiTimeout *t = h->data;
    struct auv *p = t->owner;

    x_free(t);
    handle_closed(p);
}

static int uv_events(AvahiWatchEvent e)
{
    return ((e & AVAHI_WATCH_IN) ? UV_READABLE : 0) | ((e & AVAHI_WATCH_OUT) ? UV_WRITABLE : 0);
}

static void on_poll(uv_poll_t *h, int status, int events)
{
    struct AvahiWatch *w = h->data;
    struct auv *outer = dispatching;

    if (status < 0)
        w->revents = AVAHI_WATCH_ERR;
    else
        w->revents = (AvahiWatchEvent)(((events & UV_READABLE) ? AVAHI_WATCH_IN : 0) |
                                       ((events & UV_WRITABLE) ? AVAHI_WATCH_OUT : 0) |
                                       ((events & UV_DISCONNECT) ? AVAHI_WATCH_HUP : 0));
    /* The callback may free w (uv_close: the memory stays until the close callback). */
    dispatching = w->owner;
    w->cb(w, w->fd, w->revents, w->data);
    dispatching = outer;
    if (!uv_is_closing((uv_handle_t *)h))
        w->revents = 0;
}

static void watch_update(AvahiWatch *w, AvahiWatchEvent event)
{
    int ev = uv_events(event);

    if (uv_is_closing((uv_handle_t *)&w->h))
        return;
    if (ev)
        (void)uv_poll_start(&w->h, ev, on_poll);
    else
        (void)uv_poll_stop(&w->h);
}

static AvahiWatch *watch_new(const AvahiPoll *api, int fd, AvahiWatchEvent event,
                             AvahiWatchCallback cb, void *data)
{
    struct auv *p = (struct auv *)api;
    struct AvahiWatch *w = x_calloc(1, sizeof(*w));

    if (!w)
        return NULL;
    if (uv_poll_init(p->loop, &w->h, fd) < 0) {
        x_free(w);
        return NULL;
    }
    w->h.data = w;
    w->owner = p;
    w->fd = fd;
    w->cb = cb;
    w->data = data;
    p->live++;
    p->handles++;
    watch_update(w, event);
    return w;
}

static AvahiWatchEvent watch_get_events(AvahiWatch *w)
{
    return w->revents;
}

static void watch_free(AvahiWatch *w)
{
    if (uv_is_closing((uv_handle_t *)&w->h))
        return;
    w->owner->live--;
    uv_close((uv_handle_t *)&w->h, watch_closed);
}

static void on_timer(uv_timer_t *h)
{
    struct AvahiTimeout *t = h->data;
    struct auv *outer = dispatching;

    dispatching = t->owner;
    t->cb(t, t->data);
    dispatching = outer;
}

/* Arms the one-shot timer for the absolute wall-clock time tv (NULL: disarm). */
static void timeout_arm(struct AvahiTimeout *t, const struct timeval *tv)
{
    struct timeval now;
    int64_t ms, us;

    if (uv_is_closing((uv_handle_t *)&t->h))
        return;
    if (!tv) {
        (void)uv_timer_stop(&t->h);
        return;
    }
    gettimeofday(&now, NULL);
    us = ((int64_t)tv->tv_sec - now.tv_sec) * 1000000 + ((int64_t)tv->tv_usec - now.tv_usec);
    /* Rounded up, plus one: the loop's clock counts whole milliseconds, and a timer that fires
     * before Avahi's deadline only makes it re-arm. */
    ms = us > 0 ? (us + 999) / 1000 + 1 : 0;
    /* The loop's clock is cached at the start of the iteration: refresh it so that the timer does
     * not fire early by the time this iteration has already spent. */
    uv_update_time(t->owner->loop);
    (void)uv_timer_start(&t->h, on_timer, (uint64_t)ms, 0);
}

static AvahiTimeout *timeout_new(const AvahiPoll *api, const struct timeval *tv,
                                 AvahiTimeoutCallback cb, void *data)
{
    struct auv *p = (struct auv *)api;
    struct AvahiTimeout *t = x_calloc(1, sizeof(*t));

    if (!t)
        return NULL;
    if (uv_timer_init(p->loop, &t->h) < 0) {
        x_free(t);
        return NULL;
    }
    t->h.data = t;
    t->owner = p;
    t->cb = cb;
    t->data = data;
    p->live++;
    p->handles++;
    timeout_arm(t, tv);
    return t;
}

static void timeout_update(AvahiTimeout *t, const struct timeval *tv)
{
    timeout_arm(t, tv);
}

static void timeout_free(AvahiTimeout *t)
{
    if (uv_is_closing((uv_handle_t *)&t->h))
        return;
    t->owner->live--;
    uv_close((uv_handle_t *)&t->h, timeout_closed);
}

int auv_new(uv_loop_t *loop, void *data, struct auv **ret)
{
    struct auv *p;

    if (!loop || !ret)
        return -EINVAL;
    p = x_calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->loop = loop;
    p->data = data;
    p->api.userdata = p;
    p->api.watch_new = watch_new;
    p->api.watch_update = watch_update;
    p->api.watch_get_events = watch_get_events;
    p->api.watch_free = watch_free;
    p->api.timeout_new = timeout_new;
    p->api.timeout_update = timeout_update;
    p->api.timeout_free = timeout_free;
    *ret = p;
    return 0;
}

const AvahiPoll *auv_poll(struct auv *p)
{
    return &p->api;
}

unsigned auv_live(const struct auv *p)
{
    return p ? p->live : 0;
}

struct auv *auv_free(struct auv *p)
{
    if (!p)
        return NULL;
    p->freeing = true;
    if (p->handles == 0)
        x_free(p);
    return NULL;
}
