/* Plumbing shared by the agent's controllers: the controller skeleton (struct ctl), and the chain
 * of asynchronous API calls (struct ctl_call_chain).
 *
 * A controller is one instance of struct ctl, made in its module's init (ctl_new) and kept in the
 * agent (agent_set_module_data), never in a file-scope variable. Its work queue is the agent's
 * (agent_queue); its reconcile function gets the instance and the key. One reconcile is one record
 * (struct ctl_rec, the head of the controller's own record type, of ctl_options.rec_size bytes): it
 * begins with ctl_rec_begin and ends, now or from a later callback, with exactly one ctl_rec_end,
 * which says what comes next for the key (enum ctl_requeue), releases what the record holds
 * (ctl_options.rec_release) and frees it.
 *
 * Lifetime: the instance counts its records in flight. ctl_free (from the module's fini) stops the
 * controller at once; the memory goes when the last record in flight ends, so a callback that
 * arrives after fini (a cancelled request) finds its controller, sees it stopped, and touches no
 * queue. Single-threaded (the agent's loop). */
#ifndef CLIQO_AGENT_CTL_H
#define CLIQO_AGENT_CTL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/agent.h"
#include "kube/api.h"
#include "kube/workqueue.h"

/* ---- the chain of calls ------------------------------------------------------------------- */

/* The result of the last call of a chain, copied so that it outlives the kapi callback. */
struct ctl_call {
    int err;
    long http;
    json_t *body; /* owned */
    char reason[64];
    char message[256];
};
/* A kapi callback that stores the result in *(struct ctl_call *)data-> and calls next(data). The
 * owner struct must begin with a struct ctl_call_chain. */
struct ctl_call_chain {
    struct ctl_call last;
    void (*next)(void *owner);
};
void ctl_call_cb(struct kapi_client *c, const struct kapi_result *res, void *data);
void ctl_call_reset(struct ctl_call *pc);

/* ---- the controller skeleton -------------------------------------------------------------- */

struct ctl;

/* The head of a controller's record: its own record type begins with it. */
struct ctl_rec {
    struct ctl_call_chain ch; /* first: a record is the data of ctl_call_cb */
    struct ctl *ctl;
    char key[256];
};

/* What comes next for a record's key when it ends. */
enum ctl_requeue {
    CTL_DONE,    /* nothing: the key comes back with the next event of its objects */
    CTL_NOW,     /* again at once: the next step, after a write that succeeded; after 32 in a
                    row with no event of the key between them, slower and slower (wq_add_again:
                    a pass that writes something that changes nothing would spin), with a
                    warning */
    CTL_RETRY,   /* a request failed or memory ran out: again after ctl_options.retry_ms */
    CTL_WAIT,    /* another component has to act first: again after ctl_options.wait_ms */
    CTL_STALE,   /* a write lost to a newer version of the object: again after 100 ms */
    CTL_BACKOFF, /* a request failed: again after the key's own backoff (the queue's rate limiter:
                    base_delay_ms * 2^failures, capped; ctl_forget starts it again) */
};

struct ctl_options {
    const char *name;       /* the queue's name (metrics) */
    const char *log_module; /* the logs' module; default: name */
    /* The queue; a controller's defaults where 0: rate-limited delays from 200 ms to 60 s (not the
     * bare queue's 5 ms to 1000 s), one key at a time. */
    struct wq_options queue;
    size_t rec_size; /* of the controller's record type, >= sizeof(struct ctl_rec) */
    /* Reconciles key (borrowed until ctl_rec_begin copies it). Called only while the controller
     * runs. */
    void (*reconcile)(struct ctl *c, const char *key);
    /* Releases what a record holds (not the record itself); NULL when it holds nothing. */
    void (*rec_release)(struct ctl_rec *r);
    uint32_t retry_ms, wait_ms; /* defaults 1000 and 2000 */
};

/* Makes the controller and its queue. data is the module's own state (ctl_data). Returns 0,
 * -ENOMEM or -EINVAL. */
int ctl_new(struct agent *a, const struct ctl_options *o, void *data, struct ctl **ret);
/* Stops the controller (ctl_stop) and frees it once no record is in flight. NULL is ignored. */
void ctl_free(struct ctl *c);

void ctl_start(struct ctl *c);
void ctl_stop(struct ctl *c);
bool ctl_running(const struct ctl *c);
struct agent *ctl_agent(const struct ctl *c);
void *ctl_data(const struct ctl *c);
/* Records begun and not yet ended. */
size_t ctl_records(const struct ctl *c);
/* The controller's queue until ctl_free, else NULL. */
struct wq_queue *ctl_queue(const struct ctl *c);
/* Queues key (an informer's event); nothing before ctl_new made c (NULL) or after ctl_free. */
void ctl_enqueue(struct ctl *c, const char *key);

/* Queues the key "ns/name" (the key of a namespaced object); nothing when either is missing or
 * the key would not fit a record's key (no valid object's does). */
void ctl_enqueue_ns_name(struct ctl *c, const char *ns, const char *name);
/* Queues the "namespace/name" key of obj. */
void ctl_enqueue_obj(struct ctl *c, const json_t *obj);
/* Queues the key of every object in inf's store (a change that concerns them all). */
void ctl_enqueue_all(struct ctl *c, struct inf_informer *inf);

/* A new record for key (zeroed beyond its head), or NULL: the key was too long (dropped, with a
 * warning) or memory ran out (the key is queued again after retry_ms). Either way, with NULL the
 * key is done and the caller returns. */
struct ctl_rec *ctl_rec_begin(struct ctl *c, const char *key);
/* Ends r: requeues its key as `how` says (not once the controller has stopped), marks it done,
 * releases and frees r. */
void ctl_rec_end(struct ctl_rec *r, enum ctl_requeue how);
/* Ends r with its key queued again after ms milliseconds. */
void ctl_rec_end_after(struct ctl_rec *r, uint32_t ms);
/* Forgets the failures of key: its next CTL_BACKOFF waits base_delay_ms again. */
void ctl_forget(struct ctl *c, const char *key);
/* Ends the pass over key of a reconcile that begins no record (nothing to do, or not yet): the key
 * is requeued as `how` says. */
void ctl_skip(struct ctl *c, const char *key, enum ctl_requeue how);

/* A kapi callback for a write of a record (data = the record): a missing object counts as
 * success; any other failure is logged and CTL_BACKOFF (CTL_STALE on a conflict); a
 * success forgets the key's failures and goes on to the next step (CTL_NOW). Ends the record. */
void ctl_after_write(struct kapi_client *kc, const struct kapi_result *res, void *data);
/* The next step of a chain (ctl_call_chain.next, owner = the record) after a write: a missing or an
 * existing object counts as success (CTL_NOW); a conflict is CTL_STALE; any other failure is logged
 * and CTL_RETRY. Ends the record. */
void ctl_chain_after_write(void *owner);
/* A JSON merge patch of an object by the agent's client; the record ends in ctl_after_write
 * (CTL_RETRY when it cannot be sent). patch is consumed. */
void ctl_merge_patch(struct ctl_rec *r, const struct kapi_resource *res, const char *ns,
                     const char *name, const char *sub, json_t *patch);
/* Adds (on) or removes finalizer from obj (ns/name of resource res), keeping its other
 * finalizers, guarded by obj's resourceVersion; as ctl_merge_patch. */
void ctl_set_finalizer(struct ctl_rec *r, const struct kapi_resource *res, const json_t *obj,
                       const char *finalizer, bool on);
/* The same writes as a step of the record's chain: the result goes to next (ctl_call_chain.next,
 * owner = the record; e.g. ctl_chain_after_write), which ends the record; NULL next is the two
 * above (ctl_after_write). CTL_RETRY when the request cannot be sent. */
void ctl_merge_patch_then(struct ctl_rec *r, const struct kapi_resource *res, const char *ns,
                          const char *name, const char *sub, json_t *patch,
                          void (*next)(void *owner));
void ctl_set_finalizer_then(struct ctl_rec *r, const struct kapi_resource *res, const json_t *obj,
                            const char *finalizer, bool on, void (*next)(void *owner));

/* ---- modules on the skeleton -------------------------------------------------------------- */

/* The head of the state of a module whose work is one controller: the module's own state type
 * begins with it, and lives in the agent (agent_set_module_data under the module's name). */
struct ctl_module {
    struct agent *a;
    struct ctl *ctl; /* made by the module's init (ctl_new) */
};
/* A zeroed state of size bytes (>= sizeof(struct ctl_module)) for module name, kept by the agent;
 * NULL when out of memory or name is not in the module table. */
void *ctl_module_new(struct agent *a, const char *name, size_t size);
/* The module table's start, stop and fini of such a module: they start and stop its controller;
 * fini frees the controller (ctl_free) and the state. */
int ctl_module_start(struct agent *a, const char *name);
void ctl_module_stop(struct agent *a, const char *name);
void ctl_module_fini(struct agent *a, const char *name);
/* Informer handlers of such a module (data: its state, which begins with struct ctl_module) that
 * queue the "namespace/name" key of the object an event is about: on_add and on_delete take
 * ctl_module_on_obj, on_update ctl_module_on_update (the new object). */
void ctl_module_on_obj(struct inf_informer *inf, json_t *obj, void *data);
void ctl_module_on_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data);
/* Those two as the handlers of every event (on_add, on_update, on_delete). */
extern const struct inf_handlers ctl_module_obj_handlers;

#endif
