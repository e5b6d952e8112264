/* Plumbing shared by the agent's controllers; see ctl.h. */
#include "agent/ctl.h"
#include "common/liveref.h"
#include "common/log.h"
#include "common/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ctl_call_reset(struct ctl_call *pc)
{
    json_decref(pc->body);
    memset(pc, 0, sizeof(*pc));
}

void ctl_call_cb(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct ctl_call_chain *ch = data;

    (void)c;
    ctl_call_reset(&ch->last);
    ch->last.err = res->err;
    ch->last.http = res->http_status;
    ch->last.body = json_incref(res->body);
    snprintf(ch->last.reason, sizeof(ch->last.reason), "%s", res->status.reason);
    snprintf(ch->last.message, sizeof(ch->last.message), "%s", res->status.message);
    ch->next(data);
}

/* ---- the controller skeleton -------------------------------------------------------------- */

#define STALE_MS 100
/* CTL_NOW's in a row for a key with no event between them before the key slows down (ctl.h). A
 * reconcile's steps are a handful; only a pass that writes nothing new and goes again reaches it.
 */
#define CTL_NOW_STREAK 32

struct ctl {
    struct agent *a;
    struct ctl_options o;
    char name[64], log_module[64];
    void *data;
    struct wq_queue *q; /* the agent's; NULL once freed */
    bool running;
    struct liveref life; /* ctl_free's and one per record begun and not ended; dead once freed */
};

static void process(struct wq_queue *q, const char *key, void *data)
{
    struct ctl *c = data;

    if (!c->running || c->life.dead) {
        wq_done(q, key);
        return;
    }
    c->o.reconcile(c, key);
}

int ctl_new(struct agent *a, const struct ctl_options *o, void *data, struct ctl **ret)
{
    struct ctl *c;
    int r;

    if (!a || !o || !o->name || !o->reconcile || o->rec_size < sizeof(struct ctl_rec) || !ret)
        return -EINVAL;
    c = x_calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->a = a;
    c->o = *o;
    snprintf(c->name, sizeof(c->name), "%s", o->name);
    snprintf(c->log_module, sizeof(c->log_module), "%s", o->log_module ? o->log_module : o->name);
    c->o.name = c->name;
    c->o.log_module = c->log_module;
    if (!c->o.retry_ms)
        c->o.retry_ms = 1000;
    if (!c->o.wait_ms)
        c->o.wait_ms = 2000;
    if (!c->o.queue.base_delay_ms)
        c->o.queue.base_delay_ms = 200;
    if (!c->o.queue.max_delay_ms)
        c->o.queue.max_delay_ms = 60000;
    c->data = data;
    liveref_init(&c->life, x_free, c);
    r = agent_queue(a, c->name, &c->o.queue, process, c, &c->q);
    if (r < 0) {
        x_free(c);
        return r;
    }
    *ret = c;
    return 0;
}

void ctl_free(struct ctl *c)
{
    if (!c)
        return;
    c->running = false;
    liveref_kill(&c->life);
    c->q = NULL; /* the agent frees its queues with the module generation */
    (void)liveref_put(&c->life);
}

void ctl_start(struct ctl *c)
{
    c->running = true;
}

void ctl_stop(struct ctl *c)
{
    c->running = false;
}

bool ctl_running(const struct ctl *c)
{
    return c->running && !c->life.dead;
}

struct agent *ctl_agent(const struct ctl *c)
{
    return c->a;
}

void *ctl_data(const struct ctl *c)
{
    return c->data;
}

size_t ctl_records(const struct ctl *c)
{
    return (size_t)c->life.refs - !c->life.dead; /* the owner's reference is no record */
}

struct wq_queue *ctl_queue(const struct ctl *c)
{
    return c->life.dead ? NULL : c->q;
}

void ctl_enqueue(struct ctl *c, const char *key)
{
    if (c && !c->life.dead && c->q)
        wq_add(c->q, key);
}

void ctl_enqueue_ns_name(struct ctl *c, const char *ns, const char *name)
{
    char key[sizeof(((struct ctl_rec *)0)->key)];
    int n;

    if (!ns || !name)
        return;
    n = snprintf(key, sizeof(key), "%s/%s", ns, name);
    if (n < 0 || (size_t)n >= sizeof(key))
        return; /* longer than any valid namespace/name */
    ctl_enqueue(c, key);
}

void ctl_enqueue_obj(struct ctl *c, const json_t *obj)
{
    ctl_enqueue_ns_name(c, kapi_obj_namespace(obj), kapi_obj_name(obj));
}

static void enqueue_visit(json_t *obj, void *data)
{
    ctl_enqueue_obj(data, obj);
}

void ctl_enqueue_all(struct ctl *c, struct inf_informer *inf)
{
    if (c && inf)
        inf_foreach(inf, enqueue_visit, c);
}

/* Queues key again after ms (none when ms < 0) and marks it done; nothing once the controller is
 * freed. */
static void key_end_after(struct ctl *c, const char *key, int64_t ms)
{
    if (c->life.dead || !c->q)
        return;
    if (ms >= 0)
        wq_add_after(c->q, key, (uint64_t)ms);
    wq_done(c->q, key);
}

/* Requeues key as how says and marks it done; nothing once the controller is freed. */
static void key_end(struct ctl *c, const char *key, enum ctl_requeue how)
{
    switch (how) {
    case CTL_NOW:
        if (c->life.dead || !c->q)
            break;
        if (wq_add_again(c->q, key, CTL_NOW_STREAK) == CTL_NOW_STREAK + 1)
            log_warn(c->log_module,
                     "%s: %d passes in a row went again at once with no event between them; "
                     "slowing it down until the next event (a write that changes nothing?)",
                     key, CTL_NOW_STREAK + 1);
        wq_done(c->q, key);
        break;
    case CTL_RETRY:
        key_end_after(c, key, c->o.retry_ms);
        break;
    case CTL_WAIT:
        key_end_after(c, key, c->o.wait_ms);
        break;
    case CTL_STALE:
        key_end_after(c, key, STALE_MS);
        break;
    case CTL_BACKOFF:
        if (!c->life.dead && c->q)
            wq_add_rate_limited(c->q, key);
        key_end_after(c, key, -1);
        break;
    case CTL_DONE:
    default:
        key_end_after(c, key, -1);
        break;
    }
}

void ctl_skip(struct ctl *c, const char *key, enum ctl_requeue how)
{
    key_end(c, key, how);
}

struct ctl_rec *ctl_rec_begin(struct ctl *c, const char *key)
{
    struct ctl_rec *r;

    if (strlen(key) >= sizeof(r->key)) {
        log_warn(c->log_module, "key %.64s... is too long; dropped", key);
        key_end(c, key, CTL_DONE);
        return NULL;
    }
    r = x_calloc(1, c->o.rec_size);
    if (!r) {
        key_end(c, key, CTL_RETRY);
        return NULL;
    }
    r->ctl = c;
    snprintf(r->key, sizeof(r->key), "%s", key);
    (void)liveref_hold(&c->life);
    return r;
}

/* Releases and frees r, and its controller when fini freed it and r was its last record. */
static void rec_free(struct ctl_rec *r)
{
    struct ctl *c = r->ctl;

    if (c->o.rec_release)
        c->o.rec_release(r);
    ctl_call_reset(&r->ch.last);
    x_free(r);
    (void)liveref_put(&c->life);
}

void ctl_rec_end(struct ctl_rec *r, enum ctl_requeue how)
{
    key_end(r->ctl, r->key, how);
    rec_free(r);
}

void ctl_chain_after_write(void *owner)
{
    struct ctl_rec *r = owner;
    int e = r->ch.last.err;

    if (e < 0 && e != -ENOENT && e != -EEXIST) {
        log_warn(r->ctl->log_module, "%s: %s", r->key, r->ch.last.message);
        ctl_rec_end(r, e == -ESTALE ? CTL_STALE : CTL_RETRY);
        return;
    }
    ctl_rec_end(r, CTL_NOW);
}

void ctl_rec_end_after(struct ctl_rec *r, uint32_t ms)
{
    key_end_after(r->ctl, r->key, ms);
    rec_free(r);
}

void ctl_forget(struct ctl *c, const char *key)
{
    struct wq_queue *q = ctl_queue(c);

    if (q)
        wq_forget(q, key);
}

void ctl_after_write(struct kapi_client *kc, const struct kapi_result *res, void *data)
{
    struct ctl_rec *r = data;

    (void)kc;
    if (res->err < 0 && res->err != -ENOENT) {
        if (res->err != -ECANCELED)
            log_warn(r->ctl->log_module, "%s: %s", r->key, res->status.message);
        ctl_rec_end(r, res->err == -ESTALE ? CTL_STALE : CTL_BACKOFF);
        return;
    }
    ctl_forget(r->ctl, r->key);
    ctl_rec_end(r, CTL_NOW);
}

void ctl_merge_patch_then(struct ctl_rec *r, const struct kapi_resource *res, const char *ns,
                          const char *name, const char *sub, json_t *patch,
                          void (*next)(void *owner))
{
    char *body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;

    if (next)
        r->ch.next = next;
    if (!body || kapi_patch(agent_kube(r->ctl->a), res, ns, name, sub, KAPI_PATCH_MERGE, body,
                            next ? ctl_call_cb : ctl_after_write, r) < 0)
        ctl_rec_end(r, CTL_RETRY);
    free(body);
    json_decref(patch);
}

void ctl_merge_patch(struct ctl_rec *r, const struct kapi_resource *res, const char *ns,
                     const char *name, const char *sub, json_t *patch)
{
    ctl_merge_patch_then(r, res, ns, name, sub, patch, NULL);
}

void ctl_set_finalizer_then(struct ctl_rec *r, const struct kapi_resource *res, const json_t *obj,
                            const char *finalizer, bool on, void (*next)(void *owner))
{
    const json_t *meta = json_object_get(obj, "metadata");
    json_t *fins = json_array(), *f;
    size_t i;

    if (!fins) {
        ctl_rec_end(r, CTL_RETRY);
        return;
    }
    json_array_foreach(json_object_get(meta, "finalizers"), i, f)
    {
        if (!json_is_string(f) || strcmp(json_string_value(f), finalizer) != 0)
            json_array_append(fins, f);
    }
    if (on)
        json_array_append_new(fins, json_string(finalizer));
    ctl_merge_patch_then(r, res, kapi_obj_namespace(obj), kapi_obj_name(obj), NULL,
                         json_pack("{s:{s:s,s:o}}", "metadata", "resourceVersion", kapi_obj_rv(obj),
                                   "finalizers", fins),
                         next);
}

void ctl_set_finalizer(struct ctl_rec *r, const struct kapi_resource *res, const json_t *obj,
                       const char *finalizer, bool on)
{
    ctl_set_finalizer_then(r, res, obj, finalizer, on, NULL);
}

/* ---- modules on the skeleton -------------------------------------------------------------- */

void *ctl_module_new(struct agent *a, const char *name, size_t size)
{
    struct ctl_module *m;

    if (size < sizeof(*m))
        return NULL;
    m = x_calloc(1, size);
    if (!m)
        return NULL;
    m->a = a;
    if (agent_set_module_data(a, name, m) < 0) {
        x_free(m);
        return NULL;
    }
    return m;
}

int ctl_module_start(struct agent *a, const char *name)
{
    struct ctl_module *m = agent_module_data(a, name);

    if (!m || !m->ctl)
        return -EINVAL;
    ctl_start(m->ctl);
    return 0;
}

void ctl_module_stop(struct agent *a, const char *name)
{
    struct ctl_module *m = agent_module_data(a, name);

    if (m && m->ctl)
        ctl_stop(m->ctl);
}

void ctl_module_fini(struct agent *a, const char *name)
{
    struct ctl_module *m = agent_module_data(a, name);

    if (!m)
        return;
    ctl_free(m->ctl);
    x_free(m);
    agent_set_module_data(a, name, NULL);
}

void ctl_module_on_obj(struct inf_informer *inf, json_t *obj, void *data)
{
    struct ctl_module *m = data;

    (void)inf;
    ctl_enqueue_obj(m->ctl, obj);
}

void ctl_module_on_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    ctl_module_on_obj(inf, new_obj, data);
}

const struct inf_handlers ctl_module_obj_handlers = {
    .on_add = ctl_module_on_obj, .on_update = ctl_module_on_update, .on_delete = ctl_module_on_obj};
