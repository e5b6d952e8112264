#include "kube/leader.h"
#include "kube/backoff.h"
#include "common/log.h"
#include "common/rfc3339.h"
#include "common/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

struct le_elector {
    struct kapi_client *c;
    char *ns, *name, *identity;
    uint64_t duration_ms, deadline_ms, retry_ms;
    struct le_callbacks cb;
    void *data;
    uv_timer_t *timer;
    bool leader;
    bool busy;         /* a request is in flight */
    bool releasing;    /* le_release was called */
    bool release_sent; /* the write clearing holderIdentity is in flight */
    char observed_holder[256];
    char observed_rv[64];
    uint64_t observed_at; /* loop time when the Lease's record last changed */
    uint64_t last_renew;  /* loop time of our last successful write */
    json_t *held; /* while leading: the Lease as our last write returned it (renewed from) */
    void (*done)(void *data);
    void *done_data;
};

static void tick(struct le_elector *le);
static void on_get(struct kapi_client *c, const struct kapi_result *res, void *data);

static uint64_t now_ms(const struct le_elector *le)
{
    return uv_now(kapi_client_loop(le->c));
}

static void le_free(struct le_elector *le)
{
    void (*done)(void *) = le->done;
    void *dd = le->done_data;

    ktimer_free(le->timer);
    json_decref(le->held);
    x_free(le->ns);
    x_free(le->name);
    x_free(le->identity);
    x_free(le);
    if (done)
        done(dd);
}

static void set_leader(struct le_elector *le, bool leader)
{
    if (!leader) {
        json_decref(le->held);
        le->held = NULL;
    }
    if (le->leader == leader)
        return;
    le->leader = leader;
    log_info("leader", "%s leadership of %s/%s", leader ? "acquired" : "lost", le->ns, le->name);
    if (leader && le->cb.on_started_leading)
        le->cb.on_started_leading(le, le->data);
    else if (!leader && le->cb.on_stopped_leading)
        le->cb.on_stopped_leading(le, le->data);
}

static void observe(struct le_elector *le, const char *holder, const char *rv)
{
    if (strcmp(le->observed_rv, rv ? rv : "") != 0) {
        snprintf(le->observed_rv, sizeof(le->observed_rv), "%s", rv ? rv : "");
        le->observed_at = now_ms(le);
    }
    if (strcmp(le->observed_holder, holder ? holder : "") != 0) {
        snprintf(le->observed_holder, sizeof(le->observed_holder), "%s", holder ? holder : "");
        if (le->cb.on_new_leader)
            le->cb.on_new_leader(le, le->observed_holder, le->data);
    }
}

static void on_timer(uv_timer_t *t)
{
    tick(t->data);
}

static void schedule(struct le_elector *le, uint64_t ms)
{
    uv_timer_start(le->timer, on_timer, ms, 0);
}

/* After a failed attempt: a leader that has not renewed within the deadline steps down. */
static void attempt_failed(struct le_elector *le)
{
    if (le->leader && now_ms(le) - le->last_renew >= le->deadline_ms)
        set_leader(le, false);
}

static void on_write(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct le_elector *le = data;
    json_t *spec;

    (void)c;
    le->busy = false;
    if (le->releasing) {
        /* A renewal was in flight when le_release came: now send the release itself. */
        if (!le->release_sent && le->leader && res->err == 0 &&
            kapi_get(c, &kapi_leases, le->ns, le->name, on_get, le) == 0) {
            le->busy = true;
            return;
        }
        set_leader(le, false);
        le_free(le);
        return;
    }
    json_decref(le->held); /* a failed write (a conflict: someone else wrote) reads it again */
    le->held = NULL;
    if (res->err < 0) {
        log_debug("leader", "writing lease %s/%s failed: %s", le->ns, le->name,
                  res->status.message);
        attempt_failed(le);
    } else {
        spec = json_object_get(res->body, "spec");
        observe(le, json_string_value(json_object_get(spec, "holderIdentity")),
                kapi_obj_rv(res->body));
        le->last_renew = now_ms(le);
        set_leader(le, true);
        le->held = json_deep_copy(res->body); /* NULL (no memory): the next tick reads it */
    }
    schedule(le, le->retry_ms);
}

static json_t *lease_spec(struct le_elector *le, const json_t *old_spec, bool release)
{
    char now[40];
    json_t *spec = old_spec ? json_deep_copy(old_spec) : json_object();
    const char *holder = json_string_value(json_object_get(old_spec, "holderIdentity"));
    json_int_t transitions = json_integer_value(json_object_get(old_spec, "leaseTransitions"));

    if (!spec)
        return NULL;
    rfc3339_now(6, now, sizeof(now));
    if (release) {
        json_object_set_new(spec, "holderIdentity", json_string(""));
        json_object_set_new(spec, "leaseDurationSeconds", json_integer(1));
        json_object_set_new(spec, "renewTime", json_string(now));
        return spec;
    }
    if (!holder || strcmp(holder, le->identity) != 0) {
        json_object_set_new(spec, "acquireTime", json_string(now));
        if (holder && *holder)
            transitions++;
    }
    json_object_set_new(spec, "holderIdentity", json_string(le->identity));
    json_object_set_new(spec, "leaseDurationSeconds",
                        json_integer((json_int_t)((le->duration_ms + 999) / 1000)));
    json_object_set_new(spec, "renewTime", json_string(now));
    json_object_set_new(spec, "leaseTransitions", json_integer(transitions));
    return spec;
}

/* Sends the Lease `lease` (as read, or as our last write returned it) with our record: a write
 * conditional on its resourceVersion. */
static int write_from(struct le_elector *le, const json_t *lease)
{
    json_t *obj = json_deep_copy(lease), *spec;
    int r;

    if (!obj)
        return -ENOMEM;
    spec = lease_spec(le, json_object_get(lease, "spec"), le->releasing);
    if (!spec) {
        json_decref(obj);
        return -ENOMEM;
    }
    json_object_set_new(obj, "spec", spec);
    le->release_sent = le->releasing;
    json_object_del(json_object_get(obj, "metadata"), "managedFields");
    r = kapi_update(le->c, &kapi_leases, le->ns, le->name, NULL, obj, on_write, le);
    json_decref(obj);
    return r;
}

static void on_get(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct le_elector *le = data;
    json_t *obj = NULL, *spec;
    const char *holder;
    int r;

    le->busy = false;
    if (le->releasing && !le->leader) {
        le_free(le);
        return;
    }
    if (res->err == -ENOENT) {
        if (le->releasing) {
            le_free(le);
            return;
        }
        spec = lease_spec(le, NULL, false);
        obj = json_pack("{s:s,s:s,s:{s:s,s:s},s:o}", "apiVersion", "coordination.k8s.io/v1", "kind",
                        "Lease", "metadata", "name", le->name, "namespace", le->ns, "spec", spec);
        r = obj ? kapi_create(c, &kapi_leases, le->ns, obj, on_write, le) : -ENOMEM;
        goto sent;
    }
    if (res->err < 0) {
        log_debug("leader", "reading lease %s/%s failed: %s", le->ns, le->name,
                  res->status.message);
        attempt_failed(le);
        if (le->releasing) {
            set_leader(le, false);
            le_free(le);
            return;
        }
        schedule(le, le->retry_ms);
        return;
    }
    spec = json_object_get(res->body, "spec");
    holder = json_string_value(json_object_get(spec, "holderIdentity"));
    observe(le, holder, kapi_obj_rv(res->body));
    if (le->releasing) {
        if (!holder || strcmp(holder, le->identity) != 0) {
            set_leader(le, false);
            le_free(le);
            return;
        }
    } else if (holder && *holder && strcmp(holder, le->identity) != 0 &&
               now_ms(le) - le->observed_at < le->duration_ms) {
        /* Someone else holds a lease that is still being renewed. */
        set_leader(le, false);
        schedule(le, le->retry_ms);
        return;
    }
    r = write_from(le, res->body);
sent:
    json_decref(obj);
    if (r < 0) {
        attempt_failed(le);
        if (le->releasing) {
            le_free(le);
            return;
        }
        schedule(le, le->retry_ms);
        return;
    }
    le->busy = true;
}

static void tick(struct le_elector *le)
{
    int r;

    if (le->busy)
        return;
    /* The holder renews from the Lease its last write returned: one request, not a read and a
     * write. Its resourceVersion makes the write fail if anyone wrote since; then it reads. */
    if (le->leader && le->held && !le->releasing)
        r = write_from(le, le->held);
    else
        r = kapi_get(le->c, &kapi_leases, le->ns, le->name, on_get, le);
    if (r < 0) {
        attempt_failed(le);
        schedule(le, le->retry_ms);
        return;
    }
    le->busy = true;
}

int le_start(struct kapi_client *c, const struct le_options *o, const struct le_callbacks *cb,
             void *data, struct le_elector **ret)
{
    struct le_elector *le;

    if (!c || !o || !o->namespace_ || !o->name || !o->identity || !*o->identity || !ret)
        return -EINVAL;
    le = x_calloc(1, sizeof(*le));
    if (!le)
        return -ENOMEM;
    le->c = c;
    le->duration_ms = o->lease_duration_ms ? o->lease_duration_ms : 15000;
    le->deadline_ms = o->renew_deadline_ms ? o->renew_deadline_ms : 10000;
    le->retry_ms = o->retry_period_ms ? o->retry_period_ms : 2000;
    if (le->deadline_ms >= le->duration_ms || le->retry_ms >= le->deadline_ms) {
        x_free(le);
        return -EINVAL;
    }
    if (cb)
        le->cb = *cb;
    le->data = data;
    le->ns = x_strdup(o->namespace_);
    le->name = x_strdup(o->name);
    le->identity = x_strdup(o->identity);
    le->timer = ktimer_new(kapi_client_loop(c), le);
    if (!le->ns || !le->name || !le->identity || !le->timer) {
        le_free(le);
        return -ENOMEM;
    }
    schedule(le, 0);
    *ret = le;
    return 0;
}

bool le_is_leader(const struct le_elector *le)
{
    return le && le->leader;
}

void le_release(struct le_elector *le, void (*done)(void *data), void *done_data)
{
    if (!le)
        return;
    le->done = done;
    le->done_data = done_data;
    le->releasing = true;
    uv_timer_stop(le->timer);
    if (le->busy)
        return; /* the request in flight finishes the job */
    if (!le->leader) {
        le_free(le);
        return;
    }
    if (kapi_get(le->c, &kapi_leases, le->ns, le->name, on_get, le) < 0) {
        set_leader(le, false);
        le_free(le);
        return;
    }
    le->busy = true;
}
