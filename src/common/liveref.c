/* liveref: see liveref.h. */
#include "common/liveref.h"

#include <assert.h>
#include <stddef.h>

void liveref_init(struct liveref *l, void (*free_fn)(void *obj), void *obj)
{
    l->refs = 1;
    l->dead = false;
    l->free_fn = free_fn;
    l->obj = obj;
}

void *liveref_hold(struct liveref *l)
{
    l->refs++;
    return l->obj;
}

bool liveref_put(struct liveref *l)
{
    assert(l->refs > 0);
    if (--l->refs == 0) {
        /* Only the owner's own reference can be the last of a live object, and it goes through
         * liveref_kill: the last reference always belongs to a dead one. */
        assert(l->dead);
        l->free_fn(l->obj); /* may free l */
        return true;
    }
    return l->dead;
}

int liveref_sent(struct liveref *l, int rc)
{
    if (rc < 0)
        (void)liveref_put(l);
    return rc;
}

void liveref_kill(struct liveref *l)
{
    l->dead = true;
}
