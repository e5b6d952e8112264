/* auv: Avahi's main-loop abstraction (AvahiPoll) on a libuv loop, so that Avahi's embeddable mDNS
 * stack (libavahi-core) runs on the agent's one loop with no thread and no daemon.
 *
 * An AvahiWatch is a uv_poll_t on Avahi's descriptor; an AvahiTimeout is a uv_timer_t armed from
 * the absolute time Avahi gives (gettimeofday clock), one-shot as the AvahiPoll contract says.
 * Avahi may free a watch or timeout from inside its own callback: the handle is closed at once
 * (no further callback) and freed from its close callback.
 *
 * Ownership: the adapter borrows the loop. auv_free() may be called once nothing uses the
 * AvahiPoll any more (after avahi_server_free()); memory is released when the last handle has
 * closed, so the loop must run a little more (the agent's shutdown does). */
#ifndef CLIQO_DISCOVERY_AVAHI_UV_H
#define CLIQO_DISCOVERY_AVAHI_UV_H

#include <avahi-common/watch.h>
#include <uv.h>

struct auv;

/* data is the owner's (auv_dispatching). Returns 0, -EINVAL or -ENOMEM. */
int auv_new(uv_loop_t *loop, void *data, struct auv **ret);
const AvahiPoll *auv_poll(struct auv *p);
/* Number of watches and timeouts not yet freed by Avahi (tests). */
unsigned auv_live(const struct auv *p);
/* NULL-safe; returns NULL. */
struct auv *auv_free(struct auv *p);
/* The data of the adapter whose watch or timeout callback is running now (everything Avahi does
 * on its own runs in one), or NULL outside them: what a process-wide hook such as Avahi's log
 * function has instead of a context. */
void *auv_dispatching(void);

#endif
