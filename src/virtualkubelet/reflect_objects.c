/* reflect_objects: the Service, EndpointSlice, ConfigMap and Secret reflectors of a virtual kubelet
 * (reflect.h; docs/offloading.md, "Objects"). What a copy holds is decided by the pure functions
 * of reflect_translate.c; this file keeps the copies in step.
 *
 * One instance per kind. Per namespace pair (local namespace -> the namespace B made for us):
 *   - a local informer, namespaced, label selector virtualkubelet.liqo.io/origin!=<provider>
 *     (what the provider itself reflected here never goes back to it; copies from other
 *     clusters go on, as a broker's two hops need: docs/broker.md; slices: also with a
 *     kubernetes.io/service-name), field selector type!=service-account token (Secrets) or
 *     name!=kube-root-ca.crt (ConfigMaps);
 *   - a remote informer on the unit's PU_VK client (pu_informer: a rotated credential re-creates
 *     it), namespaced, label selector origin=<home> (slices: and managed-by ours, so B's own
 *     slices, which copy the Service's labels, are never even cached);
 *   - slices only: a second remote informer, of the Services with our origin label, reduced to
 *     their name and UID (a slice is reflected once its Service's copy exists, owned by it).
 * All feed one work queue keyed "<local ns>/<name>"; a remote object is mapped back only through
 * the pair its informer belongs to, never through what B wrote in it.
 *
 * Reconcile (level-triggered, after every informer of the pair has synced): desired copy
 * (vkr_desired) vs B's object (remote cache):
 *   desired, none on B         create (refused when B already holds max_objects_per_ns copies);
 *                              409 AlreadyExists: read it; ours (origin label) -> update it, not
 *                              ours -> a name clash: log, metric, retried with backoff, never
 *                              overwritten;
 *   desired, differs on B      update (PUT with B's resourceVersion: optimistic concurrency; a
 *                              409 conflict waits for the informer); 422 (an immutable field:
 *                              Service clusterIP, Secret type, immutable data, slice
 *                              addressType) -> delete with a UID precondition, then create;
 *   no desired copy, ours on B delete with a UID precondition, unless the local cache may be
 *                              incomplete (it reached max_objects_per_ns).
 * Optimistic concurrency rather than server-side apply: a copy must equal the desired one in
 * every field reflection owns, including labels and annotations someone added on B (apply would
 * leave fields of other managers), and the comparison tells whether a write is needed at all, so
 * an object in sync costs no request. An update whose answer still differs from the desired copy
 * (B drops or rewrites a field) is remembered by resourceVersion, so it is not sent again and
 * again; anything that changes the object on B clears that.
 *
 * Bounds: namespace pairs (MAX_PAIRS), objects per namespace (max_objects_per_ns: the local
 * informer does not sync beyond it, the remote one caches a little more, creations beyond it are
 * refused), requests in flight (CONCURRENCY keys at once, one request each), object sizes
 * (ConfigMap and Secret lists in pages of PAGE_SMALL objects so that a page of 1 MiB objects
 * stays under the unit's 16 MiB answer limit; data above the API's 1 MiB refused), per-key
 * backoff from BASE_DELAY_MS to MAX_DELAY_MS.
 *
 * Life cycle: every request and discovery holds a reference on the reflector; destroy drops the
 * creator's, stops the informers, closes the queue, and callbacks that come back later only drop
 * theirs. */
#include "virtualkubelet/reflect.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/liveref.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "kube/backoff.h"
#include "kube/discovery.h"
#include "kube/names.h"
#include "virtualkubelet/reflect_translate.h"

#define MOD           "reflection"
#define MAX_PAIRS     1024
#define CONCURRENCY   8
#define BASE_DELAY_MS 200
#define MAX_DELAY_MS  300000
#define WAIT_MS       1000 /* B's client missing, an object being deleted */
#define CONFLICT_MS   500  /* a 409 conflict: the informer brings the new version */
#define RETRY_MIN_MS  1000 /* discovery, informers that could not start */
#define RETRY_MAX_MS  60000
#define REMOTE_SLACK  64 /* remote caches hold a little more than the cap */
#define PAGE_SMALL    10 /* ConfigMaps and Secrets: up to 1.5 MiB each */
#define PAGE_LARGE    100
#define NAME_MAX_LEN  253
#define NS_MAX_LEN    63
#define UID_MAX       64
#define INDEX_SERVICE "service"

static const struct kapi_resource res_slices_v1 = {"discovery.k8s.io", "v1", "endpointslices",
                                                   "EndpointSlice", true};
static const struct kapi_resource res_slices_v1beta1 = {"discovery.k8s.io", "v1beta1",
                                                        "endpointslices", "EndpointSlice", true};

struct kind_desc {
    enum vk_reflect_kind kind;
    const struct kapi_resource *res; /* NULL: found by discovery on each side (EndpointSlices) */
    long page_size;
};

static const struct kind_desc kind_services = {VK_REFLECT_SERVICES, &kapi_services, PAGE_LARGE};
static const struct kind_desc kind_slices = {VK_REFLECT_ENDPOINTSLICES, NULL, PAGE_LARGE};
static const struct kind_desc kind_configmaps = {VK_REFLECT_CONFIGMAPS, &kapi_configmaps,
                                                 PAGE_SMALL};
static const struct kind_desc kind_secrets = {VK_REFLECT_SECRETS, &kapi_secrets, PAGE_SMALL};

struct refl;

struct pair {
    struct pair *next;
    struct refl *r;
    char local[NS_MAX_LEN + 1], remote[NS_MAX_LEN + 1];
    struct inf_informer *linf;
    struct pu_inf *rinf, *rsvc;
    bool started;
};

struct refl {
    const struct kind_desc *k;
    const char *kname;
    const struct vk_reflect_env *env;
    size_t cap;
    struct wq_queue *q;
    struct pair *pairs;
    size_t npairs;
    char lsel[256], rsel[256], svcsel[128];
    const char *lfield; /* the home informer's field selector: what is never reflected stays out */
    /* the resource on each side (fixed for all kinds but slices) */
    const struct kapi_resource *lres, *rres;
    bool disc_local_busy, disc_remote_busy;
    struct backoff retry_backoff;
    uv_timer_t *retry_timer;
    json_t *stuck;       /* key -> resourceVersion B answered an update with, still differing */
    struct liveref life; /* the owner's reference and one per request in flight */
};

/* ---- metrics --------------------------------------------------------------------------------- */

struct vk_reflect_metrics {
    bool on; /* the families are registered */
    struct metrics_family *objects, *namespaces, *writes, *refused, *clashes;
};

int vk_reflect_metrics_new(struct metrics_registry *reg, struct vk_reflect_metrics **ret)
{
    static const char *const pk[] = {"peer", "kind", NULL};
    static const char *const w[] = {"peer", "kind", "verb", "result", NULL};
    static const char *const rf[] = {"peer", "kind", "reason", NULL};
    struct metrics_family *f[5] = {0};
    struct vk_reflect_metrics *m;
    int r;

    if (!ret)
        return -EINVAL;
    *ret = m = x_calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    if (!reg)
        return 0;
    r = metrics_family_new(reg, METRICS_GAUGE, "cliqo_vk_reflect_objects",
                           "Copies of home objects a virtual kubelet keeps on its provider.", pk,
                           NULL, 0, &f[0]);
    if (r == -EEXIST)
        return 0; /* registered by another context: this one counts nothing */
    if (r == 0)
        r = metrics_family_new(reg, METRICS_GAUGE, "cliqo_vk_reflect_namespaces",
                               "Namespace pairs a reflector keeps in sync.", pk, NULL, 0, &f[1]);
    if (r == 0)
        r = metrics_family_new(reg, METRICS_COUNTER, "cliqo_vk_reflect_writes_total",
                               "Writes to the provider by reflectors (verb create, update, "
                               "delete; result ok, conflict, exists, error).",
                               w, NULL, 0, &f[2]);
    if (r == 0)
        r = metrics_family_new(reg, METRICS_COUNTER, "cliqo_vk_reflect_refused_total",
                               "Home objects not reflected for a limit (reason cap: objects per "
                               "namespace; too-big: the API's data size).",
                               rf, NULL, 0, &f[3]);
    if (r == 0)
        r = metrics_family_new(reg, METRICS_COUNTER, "cliqo_vk_reflect_clashes_total",
                               "Attempts to create a copy whose name is taken on the provider by "
                               "an object that is not ours (never overwritten).",
                               pk, NULL, 0, &f[4]);
    if (r < 0) {
        log_warn(MOD, "cannot register the reflection metrics: %s", strerror(-r));
        return 0;
    }
    for (int i = 0; i < 5; i++)
        metrics_family_set_max_series(f[i], 20000);
    m->on = true;
    m->objects = f[0];
    m->namespaces = f[1];
    m->writes = f[2];
    m->refused = f[3];
    m->clashes = f[4];
    return 0;
}

void vk_reflect_metrics_free(struct vk_reflect_metrics *m)
{
    x_free(m);
}

static bool metrics_on(const struct refl *r)
{
    return r->env->metrics && r->env->metrics->on;
}

static void m_write(struct refl *r, const char *verb, int err)
{
    const char *result = err == 0         ? "ok"
                         : err == -ESTALE ? "conflict"
                         : err == -EEXIST ? "exists"
                                          : "error";
    const char *v[] = {r->env->peer_id, r->kname, verb, result};

    if (metrics_on(r))
        metrics_inc(r->env->metrics->writes, v);
}

static void m_refused(struct refl *r, const char *reason)
{
    const char *v[] = {r->env->peer_id, r->kname, reason};

    if (metrics_on(r))
        metrics_inc(r->env->metrics->refused, v);
}

static void m_clash(struct refl *r)
{
    const char *v[] = {r->env->peer_id, r->kname};

    if (metrics_on(r))
        metrics_inc(r->env->metrics->clashes, v);
}

static void m_gauges(struct refl *r)
{
    const char *v[] = {r->env->peer_id, r->kname};
    size_t n = 0;

    if (!metrics_on(r))
        return;
    for (struct pair *p = r->pairs; p; p = p->next) {
        struct inf_informer *inf = pu_inf_get(p->rinf);

        n += inf ? inf_count(inf) : 0;
    }
    metrics_set(r->env->metrics->objects, v, (double)n);
    metrics_set(r->env->metrics->namespaces, v, (double)r->npairs);
}

/* ---- references ------------------------------------------------------------------------------ */

static void refl_free(void *data)
{
    struct refl *r = data;

    json_decref(r->stuck);
    x_free(r);
}

/* ---- names and keys -------------------------------------------------------------------------- */

/* A label value usable in a selector (the home ID goes into one). */
static bool label_value(const char *s)
{
    size_t n = s ? strlen(s) : 0;

    if (n == 0 || n > 63)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');

        if (!alnum && ((c != '-' && c != '_' && c != '.') || i == 0 || i == n - 1))
            return false;
    }
    return true;
}

static bool name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;

    return n > 0 && n <= NAME_MAX_LEN && !memchr(s, '/', n);
}

static void enqueue(struct pair *p, const char *name)
{
    char key[WQ_MAX_KEY_LEN];
    int r;

    if (!name_ok(name))
        return;
    snprintf(key, sizeof(key), "%s/%s", p->local, name);
    r = wq_add(p->r->q, key);
    if (r < 0 && r != -ESHUTDOWN)
        log_warn(MOD, "%s: cannot queue %s: %s", p->r->kname, key, strerror(-r));
}

static void visit_enqueue(json_t *obj, void *data)
{
    enqueue(data, kapi_obj_name(obj));
}

static void pair_enqueue_all(struct pair *p)
{
    struct inf_informer *rinf = pu_inf_get(p->rinf);

    if (p->linf)
        inf_foreach(p->linf, visit_enqueue, p);
    if (rinf)
        inf_foreach(rinf, visit_enqueue, p);
}

static struct pair *pair_find(struct refl *r, const char *local)
{
    for (struct pair *p = r->pairs; p; p = p->next)
        if (strcmp(p->local, local) == 0)
            return p;
    return NULL;
}

/* ---- informers ------------------------------------------------------------------------------- */

static void on_add(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    enqueue(data, kapi_obj_name(obj));
}

static void on_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)inf;
    (void)old_obj;
    enqueue(data, kapi_obj_name(new_obj));
}

static void on_synced(struct inf_informer *inf, void *data)
{
    struct pair *p = data;

    (void)inf;
    pair_enqueue_all(p);
    m_gauges(p->r);
}

static void on_error(struct inf_informer *inf, int err, const char *message, void *data)
{
    struct pair *p = data;
    bool local = inf == p->linf;

    log_warn(MOD, "%s of %s (%s namespace %s): %s", p->r->kname, p->local,
             local ? "home" : "provider's", local ? p->local : p->remote, message);
    if (err == -E2BIG && local)
        m_refused(p->r, "cap");
}

/* Copies of B's Services (slices reflector): their slices follow them. */
static void svc_changed(struct pair *p, const json_t *svc)
{
    const char *name = kapi_obj_name(svc);

    if (p->linf && name)
        inf_index_foreach(p->linf, INDEX_SERVICE, name, visit_enqueue, p);
}

static void svc_add(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    svc_changed(data, obj);
}

static void svc_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    const char *a = kapi_obj_uid(old_obj), *b = kapi_obj_uid(new_obj);

    (void)inf;
    if (!a || !b || strcmp(a, b) != 0)
        svc_changed(data, new_obj);
}

static void svc_synced(struct inf_informer *inf, void *data)
{
    (void)inf;
    pair_enqueue_all(data);
}

static int index_service(const json_t *obj, const char **values, size_t max)
{
    const char *s = json_string_value(json_object_get(
        json_object_get(json_object_get(obj, "metadata"), "labels"), VKR_LABEL_SERVICE_NAME));

    if (!s || max < 1)
        return 0;
    values[0] = s;
    return 1;
}

/* What the caches never need: status; kubectl's copy of the whole object at home. */
static void local_transform(json_t *obj, void *data)
{
    (void)data;
    json_object_del(obj, "status");
    json_object_del(json_object_get(json_object_get(obj, "metadata"), "annotations"),
                    VKR_ANNOT_LAST_APPLIED);
}

static void remote_transform(json_t *obj, void *data)
{
    (void)data;
    json_object_del(obj, "status");
}

/* Services seen by the slices reflector: name and UID are all it reads. */
static void svc_transform(json_t *obj, void *data)
{
    json_t *meta = json_object_get(obj, "metadata"), *keep;

    (void)data;
    keep = json_pack("{s:O?,s:O?,s:O?,s:O?}", "name", json_object_get(meta, "name"), "namespace",
                     json_object_get(meta, "namespace"), "uid", json_object_get(meta, "uid"),
                     "resourceVersion", json_object_get(meta, "resourceVersion"));
    json_object_clear(obj);
    if (keep)
        json_object_set_new(obj, "metadata", keep);
}

static void pair_stop(struct pair *p)
{
    pu_informer_close(p->rsvc);
    pu_informer_close(p->rinf);
    inf_free(p->linf);
    p->rsvc = p->rinf = NULL;
    p->linf = NULL;
    p->started = false;
}

static int pair_start(struct refl *r, struct pair *p)
{
    const struct vk_reflect_env *env = r->env;
    struct inf_options lo = {.resource = r->lres,
                             .namespace_ = p->local,
                             .label_selector = r->lsel,
                             .field_selector = r->lfield,
                             .page_size = r->k->page_size,
                             .max_objects = r->cap,
                             .transform = local_transform};
    struct inf_options ro = {.resource = r->rres,
                             .namespace_ = p->remote,
                             .label_selector = r->rsel,
                             .page_size = r->k->page_size,
                             .max_objects = r->cap + REMOTE_SLACK,
                             .transform = remote_transform};
    struct inf_options so = {.resource = &kapi_services,
                             .namespace_ = p->remote,
                             .label_selector = r->svcsel,
                             .page_size = PAGE_LARGE,
                             .max_objects = r->cap + REMOTE_SLACK,
                             .transform = svc_transform};
    struct inf_handlers h = {on_add, on_update, on_add, on_synced, on_error};
    struct inf_handlers sh = {svc_add, svc_update, svc_add, svc_synced, on_error};
    int e;

    if (p->started || !r->lres || !r->rres)
        return 0;
    e = inf_new(env->local, &lo, &h, p, &p->linf);
    if (e == 0 && r->k->kind == VK_REFLECT_ENDPOINTSLICES)
        e = inf_add_index(p->linf, INDEX_SERVICE, index_service);
    if (e == 0)
        e = inf_start(p->linf);
    if (e == 0)
        e = pu_informer(env->unit, PU_VK, &ro, &h, p, &p->rinf);
    if (e == 0 && r->k->kind == VK_REFLECT_ENDPOINTSLICES)
        e = pu_informer(env->unit, PU_VK, &so, &sh, p, &p->rsvc);
    if (e < 0) {
        pair_stop(p);
        return e;
    }
    p->started = true;
    return 0;
}

/* ---- retries of discovery and of pairs that could not start ---------------------------------- */

static void start_pending(struct refl *r);

static void on_retry(uv_timer_t *t)
{
    start_pending(t->data);
}

static void retry_later(struct refl *r)
{
    if (r->life.dead)
        return;
    if (!r->retry_timer && !(r->retry_timer = ktimer_new(r->env->loop, r)))
        return;
    if (!uv_is_active((uv_handle_t *)r->retry_timer))
        uv_timer_start(r->retry_timer, on_retry, backoff_next(&r->retry_backoff), 0);
}

static const struct kapi_resource *slices_resource(const char *version)
{
    if (version && strcmp(version, "v1") == 0)
        return &res_slices_v1;
    if (version && strcmp(version, "v1beta1") == 0)
        return &res_slices_v1beta1;
    return NULL;
}

static void disc_done(struct refl *r, bool local, int err, const char *version)
{
    const struct kapi_resource *res = err == 0 ? slices_resource(version) : NULL;

    if (!res) {
        log_warn(MOD,
                 "endpointslices: the %s API server serves no EndpointSlice version cliqo "
                 "knows (%s); retrying",
                 local ? "home" : "provider's", err < 0 ? strerror(-err) : version);
        retry_later(r);
        return;
    }
    if (local)
        r->lres = res;
    else
        r->rres = res;
    log_info(MOD, "endpointslices: discovery.k8s.io/%s on the %s API server", res->version,
             local ? "home" : "provider's");
    start_pending(r);
}

static void on_disc_local(struct kapi_client *c, int err, const char *version, const char *kind,
                          bool namespaced, void *data)
{
    struct refl *r = data;

    (void)c;
    (void)kind;
    (void)namespaced;
    r->disc_local_busy = false;
    if (liveref_put(&r->life))
        return;
    disc_done(r, true, err, version);
}

static void on_disc_remote(struct kapi_client *c, int err, const char *version, const char *kind,
                           bool namespaced, void *data)
{
    struct refl *r = data;

    (void)c;
    (void)kind;
    (void)namespaced;
    r->disc_remote_busy = false;
    if (liveref_put(&r->life))
        return;
    disc_done(r, false, err, version);
}

static void start_pending(struct refl *r)
{
    static const char *const prefer[] = {"v1", "v1beta1", NULL};
    struct kapi_client *rc = pu_client(r->env->unit, PU_VK);
    bool again = false;
    int e;

    if (r->life.dead)
        return;
    if (!r->lres && !r->disc_local_busy) {
        r->disc_local_busy = true;
        e = liveref_sent(&r->life,
                         kdisc_resolve(r->env->local, "discovery.k8s.io", "endpointslices", prefer,
                                       on_disc_local, liveref_hold(&r->life)));
        if (e < 0) {
            r->disc_local_busy = false;
            again = true;
        }
    }
    if (!r->rres && !r->disc_remote_busy) {
        if (rc) {
            r->disc_remote_busy = true;
            e = liveref_sent(&r->life,
                             kdisc_resolve(rc, "discovery.k8s.io", "endpointslices", prefer,
                                           on_disc_remote, liveref_hold(&r->life)));
            if (e < 0) {
                r->disc_remote_busy = false;
                again = true;
            }
        } else {
            again = true; /* no credential for B yet */
        }
    }
    for (struct pair *p = r->pairs; p && r->lres && r->rres; p = p->next) {
        if (p->started)
            continue;
        e = pair_start(r, p);
        if (e < 0) {
            log_warn(MOD, "%s of %s: cannot start the informers: %s; retrying", r->kname, p->local,
                     strerror(-e));
            again = true;
        }
    }
    if (again)
        retry_later(r);
    else
        backoff_reset(&r->retry_backoff);
}

/* ---- reconcile ------------------------------------------------------------------------------- */

enum step {
    STEP_CREATE,
    STEP_READ, /* after 409 AlreadyExists */
    STEP_UPDATE,
    STEP_DELETE,
    STEP_RECREATE, /* delete after a refused update; the create follows */
};

struct op {
    struct refl *r;
    enum step step;
    char key[WQ_MAX_KEY_LEN];
    char name[NAME_MAX_LEN + 1], remote_ns[NS_MAX_LEN + 1];
    char uid[UID_MAX];
    json_t *desired;
};

static void op_free(struct op *o)
{
    json_decref(o->desired);
    x_free(o);
}

/* Ends the processing of the op's key. requeue: 0 none (success: the key's backoff is reset),
 * >0 after that many ms, <0 with the key's backoff. */
static void op_end(struct op *o, long requeue)
{
    struct refl *r = o->r;

    if (requeue == 0)
        wq_forget(r->q, o->key);
    else if (requeue > 0)
        wq_add_after(r->q, o->key, (uint64_t)requeue);
    else
        wq_add_rate_limited(r->q, o->key);
    wq_done(r->q, o->key);
    m_gauges(r);
    op_free(o);
}

static bool first_failure(struct refl *r, const char *key)
{
    return wq_num_requeues(r->q, key) == 0;
}

static void on_result(struct kapi_client *c, const struct kapi_result *res, void *data);

/* Sends the op's next request; on a send failure ends it with backoff. */
static void op_send(struct op *o, json_t *body)
{
    struct refl *r = o->r;
    struct kapi_client *c = pu_client(r->env->unit, PU_VK);
    struct kapi_delete_opts del = {.precondition_uid = o->uid, .grace_period_seconds = -1};
    int e = -ENOTCONN;

    if (c) {
        (void)liveref_hold(&r->life);
        switch (o->step) {
        case STEP_CREATE:
            e = kapi_create(c, r->rres, o->remote_ns, body, on_result, o);
            break;
        case STEP_READ:
            e = kapi_get(c, r->rres, o->remote_ns, o->name, on_result, o);
            break;
        case STEP_UPDATE:
            e = kapi_update(c, r->rres, o->remote_ns, o->name, NULL, body, on_result, o);
            break;
        case STEP_DELETE:
        case STEP_RECREATE:
            if (!o->uid[0])
                del.precondition_uid = NULL;
            e = kapi_delete(c, r->rres, o->remote_ns, o->name, &del, on_result, o);
            break;
        }
        (void)liveref_sent(&r->life, e);
    }
    if (e < 0) {
        log_warn(MOD, "%s %s: cannot send the request: %s", r->kname, o->key, strerror(-e));
        op_end(o, e == -ENOTCONN ? WAIT_MS : -1);
    }
}

static void stuck_set(struct refl *r, const char *key, const char *rv)
{
    if (rv)
        json_object_set_new(r->stuck, key, json_string(rv));
    else
        json_object_del(r->stuck, key);
}

static void after_update(struct op *o, const struct kapi_result *res)
{
    struct refl *r = o->r;
    enum vkr_slice_version v = r->rres == &res_slices_v1 ? VKR_SLICES_V1 : VKR_SLICES_V1BETA1;
    int d = vkr_needs_update(r->k->kind, o->desired, res->body, v);

    if (d == 1) {
        const char *rv = kapi_obj_rv(res->body);

        if (!json_object_get(r->stuck, o->key))
            log_warn(MOD,
                     "%s %s: the provider keeps the copy different from what was written "
                     "(a field it drops or sets); not writing it again until it changes",
                     r->kname, o->key);
        stuck_set(r, o->key, rv);
    } else {
        stuck_set(r, o->key, NULL);
    }
}

/* A failed request, said once: a provider that does not answer only at the key's first failure
 * (its retries are quiet), a refusal every time. */
static void log_failure(struct op *o, const char *verb, const struct kapi_result *res)
{
    struct refl *r = o->r;

    if (res->err == -ECANCELED)
        log_debug(MOD, "%s %s: %s cancelled (the provider's client was replaced)", r->kname, o->key,
                  verb);
    else if (res->http_status == 0 && first_failure(r, o->key))
        log_warn(MOD, "%s %s: cannot %s the copy, the provider does not answer: %s; retrying",
                 r->kname, o->key, verb, res->status.message);
    else if (res->http_status != 0)
        log_warn(MOD, "%s %s: the provider refused to %s the copy: %s", r->kname, o->key, verb,
                 res->status.message);
}

static void on_result(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct op *o = data;
    struct refl *r = o->r;
    json_t *body;

    (void)c;
    if (liveref_put(&r->life)) {
        op_free(o);
        return;
    }
    switch (o->step) {
    case STEP_CREATE:
        m_write(r, "create", res->err);
        if (res->err == 0) {
            log_debug(MOD, "%s %s: created on the provider", r->kname, o->key);
            op_end(o, 0);
        } else if (res->err == -EEXIST) {
            o->step = STEP_READ; /* ours the informer has not shown yet, or a clash */
            op_send(o, NULL);
        } else {
            log_failure(o, "create", res);
            op_end(o, -1);
        }
        return;
    case STEP_READ:
        if (res->err == -ENOENT) {
            op_end(o, 1); /* gone meanwhile: create again */
        } else if (res->err < 0) {
            log_failure(o, "read", res);
            op_end(o, -1);
        } else if (!vkr_is_ours(r->k->kind, res->body, r->env->home_id)) {
            if (first_failure(r, o->key))
                log_warn(MOD,
                         "%s %s: the name is taken on the provider (namespace %s) by an "
                         "object that is not a copy of ours; leaving it alone",
                         r->kname, o->key, o->remote_ns);
            m_clash(r);
            op_end(o, -1);
        } else {
            body = vkr_update_body(r->k->kind, o->desired, res->body);
            snprintf(o->uid, sizeof(o->uid), "%s",
                     kapi_obj_uid(res->body) ? kapi_obj_uid(res->body) : "");
            o->step = STEP_UPDATE;
            if (!body) {
                op_end(o, -1);
                return;
            }
            op_send(o, body);
            json_decref(body);
        }
        return;
    case STEP_UPDATE:
        m_write(r, "update", res->err);
        if (res->err == 0) {
            after_update(o, res);
            op_end(o, 0);
        } else if (res->err == -ESTALE) {
            op_end(o, CONFLICT_MS);
        } else if (res->err == -ENOENT) {
            op_end(o, 1);
        } else if (res->err == -EINVAL && o->uid[0]) {
            log_info(MOD, "%s %s: the provider refused the update (%s); re-creating the copy",
                     r->kname, o->key, res->status.message);
            o->step = STEP_RECREATE;
            op_send(o, NULL);
        } else {
            log_failure(o, "update", res);
            op_end(o, -1);
        }
        return;
    case STEP_DELETE:
    case STEP_RECREATE:
        m_write(r, "delete", res->err == -ENOENT ? 0 : res->err);
        if (res->err == 0 || res->err == -ENOENT) {
            log_debug(MOD, "%s %s: deleted on the provider", r->kname, o->key);
            /* A re-creation follows the informer's delete event; the delay is a safety net. */
            op_end(o, o->step == STEP_RECREATE ? WAIT_MS : 0);
        } else {
            log_failure(o, "delete", res);
            op_end(o, -1);
        }
        return;
    }
}

static int split_key(const char *key, char *ns, size_t nslen, char *name, size_t namelen)
{
    const char *slash = strchr(key, '/');

    if (!slash || (size_t)(slash - key) >= nslen || strlen(slash + 1) >= namelen)
        return -EINVAL;
    snprintf(ns, nslen, "%.*s", (int)(slash - key), key);
    snprintf(name, namelen, "%s", slash + 1);
    return name_ok(name) ? 0 : -EINVAL;
}

static bool pair_ready(const struct pair *p)
{
    const struct inf_informer *rinf = pu_inf_get(p->rinf), *sinf = pu_inf_get(p->rsvc);

    return p->started && inf_synced(p->linf) && rinf && inf_synced(rinf) &&
           (!p->rsvc || (sinf && inf_synced(sinf)));
}

static void process(struct wq_queue *q, const char *key, void *data)
{
    struct refl *r = data;
    const struct vk_reflect_env *env = r->env;
    char ns[NS_MAX_LEN + 1], name[NAME_MAX_LEN + 1], svc_uid[UID_MAX] = "";
    struct pair *p;
    struct inf_informer *rinf;
    json_t *local = NULL, *remote = NULL, *desired = NULL, *body = NULL;
    struct vkr_ctx ctx = {0};
    struct op *o = NULL;
    const char *stuck;
    int verdict = -ENOENT, d;

    if (split_key(key, ns, sizeof(ns), name, sizeof(name)) < 0 || !(p = pair_find(r, ns))) {
        wq_forget(q, key); /* a namespace removed: its keys are forgotten */
        wq_done(q, key);
        return;
    }
    if (!pair_ready(p)) {
        wq_done(q, key); /* each informer's on_synced queues every key again */
        return;
    }
    rinf = pu_inf_get(p->rinf);
    local = inf_get(p->linf, p->local, name);
    remote = inf_get(rinf, p->remote, name);
    if (remote && !vkr_is_ours(r->k->kind, remote, env->home_id)) {
        json_decref(remote); /* the selector let it in, its labels say otherwise: not ours */
        remote = NULL;
    }
    ctx = (struct vkr_ctx){
        .home_id = env->home_id,
        .peer_id = env->peer_id,
        .node_name = env->node_name,
        .local_ns = p->local,
        .remote_ns = p->remote,
        .filter = env->filters ? &env->filters[r->k->kind] : NULL,
        .local_slices = r->lres == &res_slices_v1 ? VKR_SLICES_V1 : VKR_SLICES_V1BETA1,
        .remote_slices = r->rres == &res_slices_v1 ? VKR_SLICES_V1 : VKR_SLICES_V1BETA1,
        .home_to_remote_ip = env->home_to_remote_ip,
        .ip_data = env->ip_data,
    };
    if (local && r->k->kind == VK_REFLECT_ENDPOINTSLICES) {
        const char *svc = json_string_value(json_object_get(
            json_object_get(json_object_get(local, "metadata"), "labels"), VKR_LABEL_SERVICE_NAME));
        json_t *s = name_ok(svc) ? inf_get(pu_inf_get(p->rsvc), p->remote, svc) : NULL;

        if (s && kapi_obj_uid(s) && strlen(kapi_obj_uid(s)) < sizeof(svc_uid)) {
            snprintf(svc_uid, sizeof(svc_uid), "%s", kapi_obj_uid(s));
            ctx.service_uid = svc_uid;
        }
        json_decref(s);
    }
    if (local)
        verdict = vkr_desired(r->k->kind, local, &ctx, &desired);
    if (verdict == -ENOMEM)
        goto backoff;
    if (verdict == VKR_SKIP_TOO_BIG) {
        if (first_failure(r, key))
            log_warn(MOD, "%s %s: more than %d bytes of data (the API's limit); not reflected",
                     r->kname, key, VKR_MAX_DATA);
        m_refused(r, "too-big");
    }

    o = x_calloc(1, sizeof(*o));
    if (!o)
        goto backoff;
    o->r = r;
    snprintf(o->key, sizeof(o->key), "%s", key);
    snprintf(o->name, sizeof(o->name), "%s", name);
    snprintf(o->remote_ns, sizeof(o->remote_ns), "%s", p->remote);
    if (remote && kapi_obj_uid(remote))
        snprintf(o->uid, sizeof(o->uid), "%s", kapi_obj_uid(remote));

    if (remote && json_object_get(json_object_get(remote, "metadata"), "deletionTimestamp")) {
        op_end(o, WAIT_MS); /* being deleted on B: wait until it is gone */
    } else if (desired && !remote) {
        if (inf_count(rinf) >= r->cap) {
            if (first_failure(r, key))
                log_warn(MOD,
                         "%s %s: the provider's namespace %s already holds %zu copies (the "
                         "limit); not reflected",
                         r->kname, key, p->remote, r->cap);
            m_refused(r, "cap");
            op_end(o, -1);
        } else {
            o->step = STEP_CREATE;
            o->desired = json_incref(desired);
            op_send(o, desired);
        }
    } else if (desired) {
        d = vkr_needs_update(r->k->kind, desired, remote, ctx.remote_slices);
        stuck = json_string_value(json_object_get(r->stuck, key));
        if (d == 1 && stuck && kapi_obj_rv(remote) && strcmp(stuck, kapi_obj_rv(remote)) == 0)
            d = 0; /* B keeps it so after our own write: do not write it again */
        else if (d >= 0)
            stuck_set(r, key, NULL);
        body = d == 1 ? vkr_update_body(r->k->kind, desired, remote) : NULL;
        if (d < 0 || (d == 1 && !body)) {
            op_end(o, -1);
        } else if (d == 0) {
            op_end(o, 0); /* in sync */
        } else {
            o->step = STEP_UPDATE;
            o->desired = json_incref(desired);
            op_send(o, body);
        }
        json_decref(body);
    } else if (remote && !local && inf_count(p->linf) >= r->cap) {
        op_end(o, -1); /* the home cache may be incomplete: keep the copy */
    } else if (remote) {
        log_info(MOD, "%s %s: deleting the copy on the provider (%s)", r->kname, key,
                 local ? vkr_verdict_name(verdict) : "gone at home");
        o->step = STEP_DELETE;
        op_send(o, NULL);
    } else {
        op_end(o, 0); /* nothing on either side */
    }
    json_decref(local);
    json_decref(remote);
    json_decref(desired);
    return;

backoff:
    json_decref(local);
    json_decref(remote);
    json_decref(desired);
    wq_add_rate_limited(q, key);
    wq_done(q, key);
}

/* ---- the interface --------------------------------------------------------------------------- */

static int refl_create(const struct kind_desc *k, const struct vk_reflect_env *env,
                       void **ret_state)
{
    struct wq_options qo = {.max_concurrent = CONCURRENCY,
                            .base_delay_ms = BASE_DELAY_MS,
                            .max_delay_ms = MAX_DELAY_MS};
    struct refl *r;
    int n1, n2, n3;

    if (!env || !env->loop || !env->local || !env->unit || !ret_state ||
        !label_value(env->home_id) || !label_value(env->peer_id) || !env->node_name)
        return -EINVAL;
    r = x_calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->k = k;
    r->kname = vk_reflect_kind_name(k->kind);
    r->env = env;
    r->cap = env->max_objects_per_ns ? env->max_objects_per_ns : VK_REFLECT_DEFAULT_MAX_OBJECTS;
    r->lres = r->rres = k->res;
    liveref_init(&r->life, refl_free, r);
    backoff_init(&r->retry_backoff, RETRY_MIN_MS, RETRY_MAX_MS);
    /* Home objects that came from the provider itself are not even cached (vkr_desired refuses
     * them again); copies from any other cluster are reflected on. "!=" also matches an object
     * without the label. */
    if (k->kind == VK_REFLECT_ENDPOINTSLICES) {
        n1 = snprintf(r->lsel, sizeof(r->lsel), "%s!=%s,%s", VK_LABEL_ORIGIN, env->peer_id,
                      VKR_LABEL_SERVICE_NAME);
        n2 = snprintf(r->rsel, sizeof(r->rsel), "%s=%s,%s=%s", VK_LABEL_ORIGIN, env->home_id,
                      VKR_LABEL_MANAGED_BY, VKR_MANAGED_BY);
    } else {
        n1 = snprintf(r->lsel, sizeof(r->lsel), "%s!=%s", VK_LABEL_ORIGIN, env->peer_id);
        n2 = snprintf(r->rsel, sizeof(r->rsel), "%s=%s", VK_LABEL_ORIGIN, env->home_id);
    }
    n3 = snprintf(r->svcsel, sizeof(r->svcsel), "%s=%s", VK_LABEL_ORIGIN, env->home_id);
    /* Service-account tokens are not even cached (the translation refuses them again). */
    if (k->kind == VK_REFLECT_SECRETS)
        r->lfield = "type!=kubernetes.io/service-account-token";
    else if (k->kind == VK_REFLECT_CONFIGMAPS)
        r->lfield = "metadata.name!=" VKR_ROOT_CA_CONFIGMAP;
    r->stuck = json_object();
    r->q = wq_new(env->loop, &qo, process, r);
    if (n1 < 0 || n2 < 0 || n3 < 0 || (size_t)n1 >= sizeof(r->lsel) ||
        (size_t)n2 >= sizeof(r->rsel) || (size_t)n3 >= sizeof(r->svcsel) || !r->stuck || !r->q) {
        wq_close(r->q, NULL, NULL);
        refl_free(r);
        return -ENOMEM;
    }
    if (!r->lres || !r->rres)
        start_pending(r); /* discovery */
    *ret_state = r;
    return 0;
}

/* Forgets what the reflector remembers about keys of a namespace. */
static void forget_ns(struct refl *r, const char *local_ns)
{
    size_t n = strlen(local_ns);
    const char *key;
    json_t *v;
    void *tmp;

    json_object_foreach_safe(r->stuck, tmp, key, v)
    {
        if (strncmp(key, local_ns, n) == 0 && key[n] == '/')
            json_object_del(r->stuck, key);
    }
}

static void refl_ns_add(void *state, const char *local_ns, const char *remote_ns)
{
    struct refl *r = state;
    struct pair *p;
    int e;

    if (!r || r->life.dead)
        return;
    if (!kname_dns_label(local_ns) || !kname_dns_label(remote_ns)) {
        log_warn(MOD,
                 "%s: namespace pair \"%s\" -> \"%s\" is not a pair of namespace names; "
                 "ignored",
                 r->kname, local_ns ? local_ns : "", remote_ns ? remote_ns : "");
        return;
    }
    p = pair_find(r, local_ns);
    if (p && strcmp(p->remote, remote_ns) == 0)
        return;
    if (p) {
        /* a new remote name: a stop and a start */
        struct pair **pp;

        for (pp = &r->pairs; *pp != p; pp = &(*pp)->next)
            ;
        *pp = p->next;
        r->npairs--;
        pair_stop(p);
        x_free(p);
        forget_ns(r, local_ns);
    }
    if (r->npairs >= MAX_PAIRS) {
        log_warn(MOD, "%s: more than %d namespaces; %s not reflected", r->kname, MAX_PAIRS,
                 local_ns);
        return;
    }
    p = x_calloc(1, sizeof(*p));
    if (!p) {
        log_warn(MOD, "%s: out of memory adding namespace %s", r->kname, local_ns);
        return;
    }
    p->r = r;
    snprintf(p->local, sizeof(p->local), "%s", local_ns);
    snprintf(p->remote, sizeof(p->remote), "%s", remote_ns);
    p->next = r->pairs;
    r->pairs = p;
    r->npairs++;
    log_info(MOD, "%s: reflecting namespace %s into %s", r->kname, local_ns, remote_ns);
    e = pair_start(r, p);
    if (e < 0) {
        log_warn(MOD, "%s of %s: cannot start the informers: %s; retrying", r->kname, local_ns,
                 strerror(-e));
        retry_later(r);
    } else if (!p->started) {
        start_pending(r); /* waiting for discovery */
    }
    m_gauges(r);
}

static void refl_ns_remove(void *state, const char *local_ns)
{
    struct refl *r = state;
    struct pair **pp;

    if (!r || r->life.dead || !local_ns)
        return;
    for (pp = &r->pairs; *pp; pp = &(*pp)->next) {
        struct pair *p = *pp;

        if (strcmp(p->local, local_ns) != 0)
            continue;
        *pp = p->next;
        r->npairs--;
        log_info(MOD, "%s: no longer reflecting namespace %s", r->kname, local_ns);
        pair_stop(p);
        x_free(p);
        forget_ns(r, local_ns);
        m_gauges(r);
        return;
    }
}

static void refl_kick(void *state)
{
    struct refl *r = state;

    if (!r || r->life.dead)
        return;
    for (struct pair *p = r->pairs; p; p = p->next)
        pair_enqueue_all(p);
}

static void refl_destroy(void *state)
{
    struct refl *r = state;
    struct pair *p;

    if (!r || r->life.dead)
        return;
    liveref_kill(&r->life);
    while ((p = r->pairs)) {
        r->pairs = p->next;
        pair_stop(p);
        x_free(p);
    }
    r->npairs = 0;
    if (metrics_on(r)) {
        /* The series of a departed peer do not accumulate (its reflectors go together). */
        const struct vk_reflect_metrics *m = r->env->metrics;
        struct metrics_family *fams[] = {m->objects, m->namespaces, m->writes, m->refused,
                                         m->clashes};

        for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++)
            metrics_family_remove(fams[i], "peer", r->env->peer_id);
    }
    wq_close(r->q, NULL, NULL);
    r->q = NULL;
    ktimer_free(r->retry_timer);
    r->retry_timer = NULL;
    (void)liveref_put(&r->life);
}

#define KIND_OPS(var, desc)                                                                        \
    static int var##_create(const struct vk_reflect_env *env, void **ret_state)                    \
    {                                                                                              \
        return refl_create(&desc, env, ret_state);                                                 \
    }                                                                                              \
    const struct vk_reflector_ops vk_reflect_##var = {                                             \
        .kind = #var,                                                                              \
        .create = var##_create,                                                                    \
        .ns_add = refl_ns_add,                                                                     \
        .ns_remove = refl_ns_remove,                                                               \
        .kick = refl_kick,                                                                         \
        .destroy = refl_destroy,                                                                   \
    }

KIND_OPS(services, kind_services);
KIND_OPS(endpointslices, kind_slices);
KIND_OPS(configmaps, kind_configmaps);
KIND_OPS(secrets, kind_secrets);
