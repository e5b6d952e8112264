/* le: leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection.
 *
 * Every retry period a candidate reads the Lease. It takes the Lease when it is absent, held by
 * nobody, or not renewed for lease_duration as observed on the local clock (the holder's clock is
 * never trusted); it renews while it holds it. The holder renews with one write from the Lease its
 * last write returned (no read first); a failed write (a conflict: someone else wrote) makes it
 * read the Lease again. A holder that cannot renew within renew_deadline
 * loses leadership (on_stopped_leading) before another candidate can take over, so two replicas
 * never both act. Writes are conditional on resourceVersion: a concurrent candidate loses with a
 * conflict. le_release gives the Lease up on shutdown so a successor need not wait for it to
 * expire. */
#ifndef CLIQO_KUBE_LEADER_H
#define CLIQO_KUBE_LEADER_H

#include "kube/api.h"

struct le_elector;

struct le_options {
    const char *namespace_;
    const char *name;
    const char *identity;       /* unique per replica, e.g. hostname + random */
    uint64_t lease_duration_ms; /* default 15000 */
    uint64_t renew_deadline_ms; /* default 10000; must be < lease_duration */
    uint64_t retry_period_ms;   /* default 2000; must be < renew_deadline */
};

struct le_callbacks {
    void (*on_started_leading)(struct le_elector *le, void *data);
    void (*on_stopped_leading)(struct le_elector *le, void *data);
    /* The observed holder changed (NULL or "" when nobody holds it). */
    void (*on_new_leader)(struct le_elector *le, const char *identity, void *data);
};

int le_start(struct kapi_client *c, const struct le_options *o, const struct le_callbacks *cb,
             void *data, struct le_elector **ret);
bool le_is_leader(const struct le_elector *le);
/* Stops the elector. If it leads, it first releases the Lease (holderIdentity cleared) and calls
 * on_stopped_leading; done(data) runs when the elector is freed. */
void le_release(struct le_elector *le, void (*done)(void *data), void *done_data);

#endif
