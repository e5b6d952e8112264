/* liveref: keeps an object alive while the requests it started are in flight.
 *
 * An object that sends asynchronous requests (the virtual kubelet's node, its pod and object
 * reflectors, its namespace mapping) can be destroyed by its owner while some are still in
 * flight; their callbacks then run later with the object as their data. The owner holds one
 * reference from liveref_init until liveref_kill, and every request holds one more from the moment
 * it is sent (liveref_hold, whose result is the callback's data) until its callback gives it back
 * (liveref_put). When the owner is done it marks the object dead (liveref_kill), stops what it
 * runs, and drops its own reference (liveref_put); whoever drops the last one frees the object with
 * the function given to liveref_init. A callback whose liveref_put returns true must stop at once:
 * the object is dead, and perhaps freed. A request that could not be sent gives its reference back
 * through liveref_sent.
 *
 * Single-threaded, as everything on the event loop. */
#ifndef CLIQO_COMMON_LIVEREF_H
#define CLIQO_COMMON_LIVEREF_H

#include <stdbool.h>

struct liveref {
    int refs;  /* the owner's (until liveref_kill) and one per request in flight */
    bool dead; /* liveref_kill ran: callbacks must stop */
    void (*free_fn)(void *obj);
    void *obj;
};

/* The owner's reference: refs 1, alive. free_fn(obj) runs when the last reference goes. */
void liveref_init(struct liveref *l, void (*free_fn)(void *obj), void *obj);
/* One more reference, for a request about to be sent; returns the object (the callback's data). */
void *liveref_hold(struct liveref *l);
/* Gives a reference back. Returns true when the object is dead (freed when this was the last
 * reference): the caller must not touch it again. */
bool liveref_put(struct liveref *l);
/* rc is the result of sending a request that took a reference: when negative (it was not sent and
 * its callback never runs), gives that reference back (liveref_put). Returns rc. A live object
 * outlives it: the owner's reference stands. */
int liveref_sent(struct liveref *l, int rc);
/* The owner is done: marks the object dead, so callbacks that still hold a reference stop. The
 * owner's reference stays until its liveref_put. */
void liveref_kill(struct liveref *l);

#endif
