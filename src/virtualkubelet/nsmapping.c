/* nsmapping: see nsmapping.h and docs/offloading.md ("Each virtual kubelet").
 *
 * One loop timer drives it (a pass: armed by vkns_kick, after each write, and every RESYNC_MS).
 * Every request holds a reference, so vkns_free never leaves a callback with a dangling pointer. */
#include "virtualkubelet/nsmapping.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/liveref.h"
#include "common/log.h"
#include "common/rfc3339.h"
#include "common/xalloc.h"
#include "kube/backoff.h"
#include "kube/informer.h"
#include "kube/names.h"
#include "offloading/nsof.h"
#include "peering/identity.h"
#include "peering/objects.h"
#include "peering/resources.h"
#include "virtualkubelet/mapxlate.h"

#define MOD       "vk-namespaces"
#define RETRY_MS  1000
#define RESYNC_MS 30000
#define MAX_NSOFS 4096 /* NamespaceOffloadings looked at per pass */

struct vkns {
    struct vkns_params p;
    char home_id[64], home_name[64], peer_id[64], node[96], manager[96];
    struct inf_informer *nsofs;
    struct pu_inf *map_inf;
    char map_ns[64];
    uv_timer_t *tick;
    json_t *active; /* local -> remote given to the reflectors */
    /* What was last written, with the version of the object it was written on: while the
     * informer still shows that version, the same write is not sent again. */
    char *map_sent, map_sent_rv[32];
    json_t *applied;     /* namespace -> {"rv": version written on, "conds": conditions or null} */
    struct liveref life; /* the owner's reference and one per write in flight */
    bool busy, dirty, synced_told;
    bool releasing;
    uint64_t release_deadline;
    void (*done)(void *data);
    void *done_data;
};

static void pass(uv_timer_t *t);

/* ---- references ------------------------------------------------------------------------------ */

static void destroy(void *data)
{
    struct vkns *m = data;

    ktimer_free(m->tick);
    json_decref(m->active);
    json_decref(m->applied);
    x_free(m->map_sent);
    x_free(m);
}

static void schedule(struct vkns *m, uint64_t ms)
{
    if (!m->life.dead && m->tick)
        uv_timer_start(m->tick, pass, ms, 0);
}

static void pass_end(struct vkns *m, uint64_t next_ms)
{
    m->busy = false;
    if (m->dirty) {
        m->dirty = false;
        next_ms = 0;
    }
    schedule(m, next_ms);
}

void vkns_kick(struct vkns *m)
{
    if (!m || m->life.dead)
        return;
    if (m->busy)
        m->dirty = true;
    else
        schedule(m, 0);
}

size_t vkns_active(const struct vkns *m)
{
    return m ? json_object_size(m->active) : 0;
}

/* ---- informers ----------------------------------------------------------------------------------
 */

static void on_any(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    (void)obj;
    vkns_kick(data);
}

static void on_any_update(struct inf_informer *inf, json_t *o, json_t *n, void *data)
{
    (void)o;
    on_any(inf, n, data);
}

static void on_synced(struct inf_informer *inf, void *data)
{
    (void)inf;
    vkns_kick(data);
}

/* The map's informer needs the tenant namespace, known once the credential is installed. */
static void ensure_map_informer(struct vkns *m)
{
    const char *ns = pu_namespace(m->p.unit, PU_VK);
    char fs[128];
    struct inf_options o = {.resource = &peer_res_namespacemaps, .store = INF_STORE_TREE};
    struct inf_handlers h = {
        .on_add = on_any, .on_update = on_any_update, .on_delete = on_any, .on_synced = on_synced};

    if (!ns || (m->map_inf && strcmp(ns, m->map_ns) == 0))
        return;
    pu_informer_close(m->map_inf);
    m->map_inf = NULL;
    snprintf(m->map_ns, sizeof(m->map_ns), "%s", ns);
    snprintf(fs, sizeof(fs), "metadata.name=%s", m->home_id);
    o.namespace_ = m->map_ns;
    o.field_selector = fs;
    if (pu_informer(m->p.unit, PU_VK, &o, &h, m, &m->map_inf) < 0)
        log_warn(MOD, "provider %s: cannot watch NamespaceMap %s/%s", m->peer_id, m->map_ns,
                 m->home_id);
}

/* ---- writes -----------------------------------------------------------------------------------
 */

static void after_write(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct vkns *m = data;

    (void)c;
    if (liveref_put(&m->life))
        return;
    if (res->err < 0 && res->err != -ENOENT) {
        log_warn(MOD, "provider %s: %s", m->peer_id, res->status.message);
        /* What was sent did not land: the next pass sends it again, even on the same version. */
        json_object_clear(m->applied);
        x_free(m->map_sent);
        m->map_sent = NULL;
        pass_end(m, res->err == -ESTALE ? 100 : RETRY_MS);
        return;
    }
    pass_end(m, 0);
}

/* Returns 1 when a write was started, 0 when the same one was just sent on this version, or a
 * negative errno. */
static int patch_map(struct vkns *m, const json_t *map, json_t *patch)
{
    char *body = json_dumps(patch, JSON_COMPACT);
    struct kapi_client *c = pu_client(m->p.unit, PU_VK);
    const char *rv = kapi_obj_rv(map);
    int e;

    if (!body || !c) {
        x_free(body);
        return -EAGAIN;
    }
    if (m->map_sent && rv && strcmp(m->map_sent, body) == 0 && strcmp(m->map_sent_rv, rv) == 0) {
        x_free(body);
        return 0;
    }
    x_free(m->map_sent);
    m->map_sent = x_strdup(body);
    snprintf(m->map_sent_rv, sizeof(m->map_sent_rv), "%s", rv ? rv : "");
    log_info(MOD, "provider %s: NamespaceMap desiredMapping %s", m->peer_id, body);
    e = liveref_sent(&m->life,
                     kapi_patch(c, &peer_res_namespacemaps, m->map_ns, m->home_id, NULL,
                                KAPI_PATCH_MERGE, body, after_write, liveref_hold(&m->life)));
    x_free(body);
    return e < 0 ? e : 1;
}

/* Server-side apply of this provider's key of the status (conds NULL: the key removed) on the
 * NamespaceOffloading as cached (nsof). False when nothing was sent: an error, or the same write
 * was just sent on this version (the informer has not shown its result yet). */
static bool apply_conditions(struct vkns *m, const json_t *nsof, const char *ns, json_t *conds)
{
    const json_t *last = json_object_get(m->applied, ns);
    const char *rv = kapi_obj_rv(nsof);
    json_t *obj;
    int e;

    if (last && rv && json_string_value(json_object_get(last, "rv")) &&
        strcmp(json_string_value(json_object_get(last, "rv")), rv) == 0 &&
        json_equal(json_object_get(last, "conds"), conds ? conds : json_null()))
        return false;
    json_object_set_new(
        m->applied, ns,
        json_pack("{s:s,s:O}", "rv", rv ? rv : "", "conds", conds ? conds : json_null()));
    obj = json_pack("{s:s,s:s,s:{s:s,s:s},s:{}}", "apiVersion", NSOF_GROUP_VERSION, "kind",
                    NSOF_KIND, "metadata", "name", NSOF_NAME, "namespace", ns, "status");
    if (!obj)
        return false;
    if (conds)
        json_object_set_new(json_object_get(obj, "status"), "remoteNamespacesConditions",
                            json_pack("{s:O}", m->peer_id, conds));
    log_debug(MOD, "provider %s: NamespaceOffloading %s: %s", m->peer_id, ns,
              conds ? "conditions" : "key removed");
    e = liveref_sent(&m->life,
                     kapi_apply(m->p.local, &peer_res_namespaceoffloadings, ns, NSOF_NAME, "status",
                                obj, m->manager, true, after_write, liveref_hold(&m->life)));
    json_decref(obj);
    return e == 0;
}

/* ---- a pass -------------------------------------------------------------------------------------
 */

static void collect(json_t *obj, void *data)
{
    json_t *list = data;

    if (json_array_size(list) < MAX_NSOFS)
        json_array_append(list, obj);
}

static const json_t *own_conditions(const struct vkns *m, const json_t *nsof)
{
    return json_object_get(
        json_object_get(json_object_get(nsof, "status"), "remoteNamespacesConditions"), m->peer_id);
}

/* Reflectors follow the Accepted entries of the pairs we ask for. */
static void follow_mapping(struct vkns *m, const json_t *want, const json_t *current)
{
    const char *k;
    json_t *v;
    void *tmp;

    json_object_foreach((json_t *)want, k, v)
    {
        const char *remote = json_string_value(v);
        const char *have = json_string_value(json_object_get(m->active, k));

        if (vkm_entry(current, k, remote, NULL, NULL) == VKM_ACCEPTED) {
            if (!have || strcmp(have, remote) != 0) {
                json_object_set_new(m->active, k, json_string(remote));
                m->p.ns_add(m->p.data, k, remote);
            }
        } else if (have) {
            json_object_del(m->active, k);
            m->p.ns_remove(m->p.data, k);
        }
    }
    json_object_foreach_safe(m->active, tmp, k, v)
    {
        if (!json_object_get(want, k)) {
            /* json_object_del frees k: copy it first. */
            char local[64];

            snprintf(local, sizeof(local), "%s", k);
            json_object_del(m->active, local);
            m->p.ns_remove(m->p.data, local);
        }
    }
}

/* One NamespaceOffloading's conditions; true when a write was started. */
static bool mirror(struct vkns *m, const json_t *nsof, const json_t *wanted, const json_t *want,
                   const json_t *current, const char *now)
{
    const char *ns = kapi_obj_namespace(nsof), *name = kapi_obj_name(nsof);
    const json_t *old = own_conditions(m, nsof);
    const char *remote = json_string_value(json_object_get(want, ns ? ns : ""));
    const char *reason = NULL, *msg = NULL;
    enum vkm_phase ph;
    json_t *conds;
    bool sent;

    if (!ns || !name || strcmp(name, NSOF_NAME) != 0)
        return false;
    if (!remote) {
        /* Not asked for: the key stays while the provider still has the namespace. */
        remote =
            json_string_value(json_object_get(json_object_get(current, ns), "remoteNamespace"));
        if (!remote || !kname_dns_label(remote)) {
            if (!old)
                return false;
            return apply_conditions(m, nsof, ns, NULL);
        }
    }
    ph = vkm_entry(current, ns, remote, &reason, &msg);
    conds = vkm_conditions(json_object_get(wanted, ns) != NULL, ph, remote, reason, msg, old, now);
    if (!conds || vkm_conditions_equal(old, conds)) {
        json_decref(conds);
        return false;
    }
    sent = apply_conditions(m, nsof, ns, conds);
    json_decref(conds);
    return sent;
}

static void release_step(struct vkns *m)
{
    json_t *list = json_array(), *nsof;
    size_t i;
    void (*done)(void *);

    if (list && m->nsofs)
        inf_foreach(m->nsofs, collect, list);
    m->busy = true;
    json_array_foreach(list, i, nsof)
    {
        if (own_conditions(m, nsof) && kapi_obj_namespace(nsof) && kapi_obj_name(nsof) &&
            strcmp(kapi_obj_name(nsof), NSOF_NAME) == 0 &&
            uv_now(m->p.loop) < m->release_deadline) {
            if (apply_conditions(m, nsof, kapi_obj_namespace(nsof), NULL)) {
                json_decref(list);
                return;
            }
            json_decref(list);
            pass_end(m, RETRY_MS);
            return;
        }
    }
    json_decref(list);
    m->busy = false;
    done = m->done;
    m->done = NULL;
    if (done) {
        log_info(MOD, "provider %s: namespace mapping released", m->peer_id);
        done(m->done_data);
    }
}

static void pass(uv_timer_t *t)
{
    struct vkns *m = t->data;
    struct inf_informer *mi;
    json_t *map = NULL, *node = NULL, *list = NULL, *wanted = NULL, *want = NULL, *patch = NULL;
    const json_t *have, *current, *labels, *nsof;
    const char *k;
    json_t *v;
    size_t i;
    char now[32], remote[NSOF_NS_MAX + 1], err[256];

    if (m->life.dead || m->busy)
        return;
    if (m->releasing) {
        release_step(m);
        return;
    }
    ensure_map_informer(m);
    mi = m->map_inf ? pu_inf_get(m->map_inf) : NULL;
    if (!inf_synced(m->nsofs) || !mi || !inf_synced(mi)) {
        schedule(m, RETRY_MS);
        return;
    }
    m->busy = true;
    map = inf_get(mi, m->map_ns, m->home_id);
    node = m->p.node(m->p.data);
    list = json_array();
    wanted = json_object();
    want = json_object();
    if (!list || !wanted || !want || !node) {
        pass_end(m, RETRY_MS); /* no node yet: the virtual kubelet registers it */
        goto out;
    }
    labels = json_object_get(json_object_get(node, "metadata"), "labels");
    inf_foreach(m->nsofs, collect, list);
    json_array_foreach(list, i, nsof)
    {
        int r = vkm_nsof_wants(nsof, m->node, labels, m->home_name, m->home_id, remote,
                               sizeof(remote), err, sizeof(err));

        if (r > 0 && kapi_obj_namespace(nsof))
            json_object_set_new(wanted, kapi_obj_namespace(nsof), json_string(remote));
        else if (r < 0)
            log_debug(MOD, "NamespaceOffloading %s/%s ignored: %s", kapi_obj_namespace(nsof),
                      kapi_obj_name(nsof), err);
    }
    have = json_object_get(json_object_get(map, "spec"), "desiredMapping");
    current = json_object_get(json_object_get(map, "status"), "currentMapping");
    json_object_update(want, wanted);
    json_object_foreach((json_t *)have, k, v)
    {
        /* No longer selected: kept until the home pods of the namespace on the node are gone. */
        if (json_object_get(wanted, k) || !json_is_string(v) ||
            !kname_dns_label(json_string_value(v)))
            continue;
        if (m->p.pods_left(m->p.data, k) > 0) {
            m->p.evict(m->p.data, k);
            json_object_set(want, k, v);
        }
    }
    follow_mapping(m, want, current);
    if (!m->synced_told) {
        m->synced_told = true;
        if (m->p.synced)
            m->p.synced(m->p.data);
    }
    if (map && (patch = vkm_desired_patch(have, want))) {
        int r = patch_map(m, map, patch);

        if (r > 0)
            goto out;
        if (r < 0) {
            pass_end(m, RETRY_MS);
            goto out;
        }
    }
    rfc3339_now(0, now, sizeof(now));
    json_array_foreach(list, i, nsof)
    {
        if (mirror(m, nsof, wanted, want, current, now))
            goto out;
    }
    /* Draining namespaces are looked at again soon; the rest at the resync. */
    pass_end(m, json_object_size(want) > json_object_size(wanted) ? RETRY_MS : RESYNC_MS);
out:
    json_decref(map);
    json_decref(node);
    json_decref(list);
    json_decref(wanted);
    json_decref(want);
    json_decref(patch);
}

/* ---- life cycle
 * ---------------------------------------------------------------------------------- */

int vkns_new(const struct vkns_params *p, struct vkns **ret)
{
    struct vkns *m;
    struct inf_options o = {.resource = &peer_res_namespaceoffloadings, .store = INF_STORE_TREE};
    struct inf_handlers h = {
        .on_add = on_any, .on_update = on_any_update, .on_delete = on_any, .on_synced = on_synced};
    int e;

    if (!p || !p->loop || !p->local || !p->unit || !p->home_id || !p->peer_id || !p->node_name ||
        !p->node || !p->ns_add || !p->ns_remove || !p->pods_left || !p->evict || !ret)
        return -EINVAL;
    m = x_calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    m->p = *p;
    snprintf(m->home_id, sizeof(m->home_id), "%s", p->home_id);
    snprintf(m->home_name, sizeof(m->home_name), "%s", p->home_name ? p->home_name : "");
    snprintf(m->peer_id, sizeof(m->peer_id), "%s", p->peer_id);
    snprintf(m->node, sizeof(m->node), "%s", p->node_name);
    snprintf(m->manager, sizeof(m->manager), "cliqo-vk-%s", p->peer_id);
    liveref_init(&m->life, destroy, m);
    m->active = json_object();
    m->applied = json_object();
    m->tick = ktimer_new(p->loop, m);
    if (!m->active || !m->applied || !m->tick) {
        destroy(m);
        return -ENOMEM;
    }
    e = inf_new(p->local, &o, &h, m, &m->nsofs);
    if (e == 0)
        e = inf_start(m->nsofs);
    if (e < 0) {
        inf_free(m->nsofs);
        destroy(m);
        return e;
    }
    schedule(m, 0);
    *ret = m;
    return 0;
}

void vkns_release(struct vkns *m, uint64_t timeout_ms, void (*done)(void *data), void *data)
{
    if (!m || m->life.dead)
        return;
    m->done = done;
    m->done_data = data;
    if (!m->releasing) {
        m->releasing = true;
        m->release_deadline = uv_now(m->p.loop) + timeout_ms;
    }
    vkns_kick(m);
}

void vkns_free(struct vkns *m)
{
    if (!m)
        return;
    liveref_kill(&m->life);
    uv_timer_stop(m->tick);
    inf_free(m->nsofs);
    m->nsofs = NULL;
    pu_informer_close(m->map_inf);
    m->map_inf = NULL;
    m->done = NULL;
    (void)liveref_put(&m->life);
}
