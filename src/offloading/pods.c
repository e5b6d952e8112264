/* pods: see pods.h and docs/offloading.md ("Pods").
 *
 * Every request holds a reference on the reflector, so destroy never leaves a callback with a
 * dangling pointer: a destroyed reflector only drops the references of the requests that come back
 * (and never calls wq_done on its closed queue). */
#include "offloading/pods.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/ctl.h"
#include "common/liveref.h"
#include "common/log.h"
#include "common/rfc3339.h"
#include "common/xalloc.h"
#include "kube/backoff.h"
#include "kube/informer.h"
#include "kube/workqueue.h"
#include "peering/objects.h"
#include "offloading/podxlate.h"

#define MOD             "vk-pods"
#define NS_MAX          64
#define NAME_MAX_       254
#define KEY_MAX         (NS_MAX + NAME_MAX_ + 2)
#define RV_MAX          32
#define UID_MAX_        48 /* a UID is 36 characters */
#define BUCKETS         4096
#define REFUSE_BASE_MS  1000
#define REFUSE_MAX_MS   300000 /* 5 min */
#define EVENTS_INFLIGHT 32
#define EVENT_POD_BURST 5.0
#define EVENT_POD_RATE  0.2 /* per second, per pod */
#define EVENT_MAX_AGE_S 120 /* at start, Events older than this before it are not forwarded */
#define IDX_NS          "namespace"
#define EXISTS_TRIES    3
/* A status that stays Pending is written this long after the remote pod appeared, not at each of
 * its first steps (created, scheduled): most pods are Running by then, one write instead of three.
 * A Pending that would show the user nothing new (vkp_status_quiet: the provider has not started
 * its containers, nor said it cannot place the pod) waits longer: a provider with a backlog keeps
 * pods Pending for minutes, and each such write costs the home API server and its controllers
 * (at 10,000 pods, half the pods had one before their Running one).
 */
#define PENDING_COALESCE_MS 5000
#define PENDING_QUIET_MS    60000
#define EXISTS_WAIT_MS      1000
/* A create the provider refused for a moment (vkp_refusal_transient: a namespace just made, without
 * its default service account yet) is sent again after NOT_READY_MS, neither reported on the home
 * pod nor backed off, NOT_READY_TRIES times in a row at most (10 s); then it is a refusal. */
#define NOT_READY_MS    250
#define NOT_READY_TRIES 40
#define NOW_STREAK      32 /* CTL_NOW in a row with no event before a key slows down (agent/ctl.h) */

/* Per home pod, created when first needed, removed with the pod. */
struct pstate {
    struct pstate *next;
    uint64_t retry_at;             /* refused: the next create attempt (loop ms) */
    struct backoff bo;             /* refusals */
    char *refuse_msg;              /* NULL: not refused */
    char home_rv[RV_MAX];          /* the home pod's version when we wrote its status */
    char remote_rv[RV_MAX];        /* the remote pod's version when we patched it */
    char update_failed_rv[RV_MAX]; /* home version whose remote update the provider refused */
    char deleted_uid[UID_MAX_];    /* the home pod we deleted (grace 0): its UID */
    double ev_tokens;
    uint64_t ev_at;
    unsigned exists;     /* creates answered AlreadyExists in a row */
    unsigned not_ready;  /* creates refused transiently in a row (NOT_READY_TRIES) */
    uint64_t pending_at; /* when a Pending -> Pending status write was first held back */
    bool evicting;
    /* Waiting for a creation slot (VK_PODS_CREATES), in the FIFO p->parked; park_prev is NULL
     * when not. */
    struct pstate *park_next, **park_prev;
    bool turn; /* taken out of the FIFO and queued, for a creation slot kept for it */
    char key[];
};

struct podns {
    struct pods *p;
    char local[NS_MAX], remote[NS_MAX];
    struct pu_inf *pods_inf, *events_inf;
    struct podns *next;
};

struct pods {
    struct vk_reflect_env env;
    char home_id[64], peer_id[64], node[96], address[64];
    struct inf_informer *home;
    struct wq_queue *q;
    struct podns *nss;
    struct pstate *table[BUCKETS];
    size_t nstates;
    unsigned creating;                  /* creations in flight */
    unsigned turns;                     /* pods queued again for a creation slot, not yet run */
    struct pstate *parked, **park_tail; /* pods to create when a creation ends, oldest first */
    struct liveref life;                /* the owner's reference and one per request in flight */
    bool reachable, mapping_synced;
    /* The pod-CIDR remapping is pending: no new remote pod. True until the virtual kubelet has said
     * (network_told), so that nothing is sent before it has read the Advertisement. */
    bool network_pending, network_told;
    char unreachable[256];
    int64_t started_wall;
    double ev_tokens;
    uint64_t ev_at;
    unsigned ev_inflight;
    struct vk_pods_shared *sh; /* env.pods: NULL without one, and once destroyed */
    struct pods *next_all;     /* sh's list: every reflector sharing it (vk_pod_target) */
};

/* ---- what the reflectors share
 * ------------------------------------------------------------------------ */

struct vk_pods_shared {
    struct pods *all; /* every live reflector given this context */
    struct metrics_registry *r;
    struct metrics_family *offloaded, *creations, *refusals, *status, *events, *dropped, *orphans,
        *deletions, *waited;
    unsigned max_creations;    /* creations in flight per reflector; 0: VK_PODS_CREATES */
    struct inf_informer *home; /* every home pod (vk_pods_shared_set_home), or NULL */
};

/* A metric family of p's shared context, or NULL (nothing counted). */
#define FAMILY(p, f) ((p)->sh ? (p)->sh->f : NULL)

int vk_pods_shared_new(struct metrics_registry *r, struct vk_pods_shared **ret)
{
    static const char *const peer[] = {"peer", NULL};
    static const char *const peer_reason[] = {"peer", "reason", NULL};
    struct vk_pods_shared *m;
    int e = 0;

    if (!ret)
        return -EINVAL;
    *ret = NULL;
    m = x_calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    if (!r) {
        *ret = m;
        return 0;
    }
#define FAM(type, name, help, labels, out)                                                         \
    if (e == 0)                                                                                    \
    e = metrics_family_new(r, type, name, help, labels, NULL, 0, out)
    FAM(METRICS_GAUGE, "cliqo_vk_offloaded_pods",
        "Home pods bound to the virtual node of a provider whose remote pod exists.", peer,
        &m->offloaded);
    FAM(METRICS_COUNTER, "cliqo_vk_pod_creations_total",
        "Remote pods created (first creation or re-creation), by provider.", peer, &m->creations);
    FAM(METRICS_COUNTER, "cliqo_vk_pod_refusals_total",
        "Remote pod creations the provider refused, by provider and reason.", peer_reason,
        &m->refusals);
    FAM(METRICS_COUNTER, "cliqo_vk_pod_status_updates_total",
        "Status updates written to home pods, by provider.", peer, &m->status);
    FAM(METRICS_COUNTER, "cliqo_vk_pod_events_forwarded_total",
        "Provider Events about remote pods re-emitted on home pods, by provider.", peer,
        &m->events);
    FAM(METRICS_COUNTER, "cliqo_vk_pod_events_dropped_total",
        "Provider Events not forwarded because of the rate limits, by provider.", peer,
        &m->dropped);
    FAM(METRICS_COUNTER, "cliqo_vk_pod_orphan_deletions_total",
        "Remote pods deleted because their home pod is gone or not bound here, by provider.", peer,
        &m->orphans);
    FAM(METRICS_COUNTER, "cliqo_vk_pod_remote_deletions_total",
        "Remote pods deleted because their home pod was deleted or stale, by provider.", peer,
        &m->deletions);
    FAM(METRICS_COUNTER, "cliqo_vk_pod_creations_waited_total",
        "Remote pod creations that waited for one in flight to end (at most "
        "--vk-pod-creations at once), by provider.",
        peer, &m->waited);
#undef FAM
    if (e < 0) {
        x_free(m);
        return e;
    }
    m->r = r;
    *ret = m;
    return 0;
}

void vk_pods_shared_free(struct vk_pods_shared *m)
{
    x_free(m);
}

void vk_pods_shared_set_creations(struct vk_pods_shared *sh, unsigned n)
{
    if (sh)
        sh->max_creations = n < VK_PODS_CONCURRENCY ? n : VK_PODS_CONCURRENCY - 1;
}

void vk_pods_shared_set_home(struct vk_pods_shared *sh, struct inf_informer *pods)
{
    if (sh)
        sh->home = pods;
}

/* Creations in flight at most: the rest of the queue's slots stay for status writes home. */
static unsigned max_creations(const struct pods *p)
{
    return p->sh && p->sh->max_creations ? p->sh->max_creations : VK_PODS_CREATES;
}

static void count(struct metrics_family *f, struct pods *p)
{
    const char *l[] = {p->peer_id, NULL};

    if (f)
        metrics_inc(f, l);
}

static void count_refusal(struct pods *p, const char *reason)
{
    const char *l[] = {p->peer_id, reason, NULL};

    if (FAMILY(p, refusals))
        metrics_inc(p->sh->refusals, l);
}

static void offloaded_gauge(struct pods *p)
{
    const char *l[] = {p->peer_id, NULL};

    if (FAMILY(p, offloaded))
        metrics_set(p->sh->offloaded, l, (double)vk_pods_remote_count(p));
}

/* ---- references
 * ----------------------------------------------------------------------------------- */

static void pstate_free(struct pstate *s)
{
    if (s) {
        x_free(s->refuse_msg);
        x_free(s);
    }
}

static void pods_free(void *data)
{
    struct pods *p = data;

    for (size_t i = 0; i < BUCKETS; i++) {
        while (p->table[i]) {
            struct pstate *s = p->table[i];

            p->table[i] = s->next;
            pstate_free(s);
        }
    }
    x_free(p);
}

static uint64_t now_ms(struct pods *p)
{
    return uv_now(p->env.loop);
}

/* ---- per-pod state
 * --------------------------------------------------------------------------------- */

static size_t bucket(const char *key)
{
    uint32_t h = 2166136261u;

    for (; *key; key++)
        h = (h ^ (unsigned char)*key) * 16777619u;
    return h % BUCKETS;
}

static struct pstate *ps_find(struct pods *p, const char *key)
{
    for (struct pstate *s = p->table[bucket(key)]; s; s = s->next)
        if (strcmp(s->key, key) == 0)
            return s;
    return NULL;
}

static struct pstate *ps_get(struct pods *p, const char *key)
{
    struct pstate *s = ps_find(p, key);
    size_t b, n = strlen(key);

    if (s || p->nstates >= VK_PODS_MAX || n >= KEY_MAX)
        return s;
    s = x_calloc(1, sizeof(*s) + n + 1);
    if (!s)
        return NULL;
    memcpy(s->key, key, n + 1);
    backoff_init(&s->bo, REFUSE_BASE_MS, REFUSE_MAX_MS);
    s->ev_tokens = EVENT_POD_BURST;
    b = bucket(key);
    s->next = p->table[b];
    p->table[b] = s;
    p->nstates++;
    return s;
}

/* ---- creations past VK_PODS_CREATES wait in a FIFO ---------------------------------------- */

static void park(struct pods *p, struct pstate *s)
{
    if (s->park_prev)
        return; /* waiting already, in its place */
    s->park_next = NULL;
    s->park_prev = p->park_tail;
    *p->park_tail = s;
    p->park_tail = &s->park_next;
}

static void unpark(struct pods *p, struct pstate *s)
{
    if (!s->park_prev)
        return;
    *s->park_prev = s->park_next;
    if (s->park_next)
        s->park_next->park_prev = s->park_prev;
    else
        p->park_tail = s->park_prev;
    s->park_next = NULL;
    s->park_prev = NULL;
}

/* A creation slot is free: the oldest waiting pod goes back to the queue (its reconcile decides
 * again: it may have been deleted meanwhile). */
static void unpark_one(struct pods *p)
{
    struct pstate *s = p->parked;

    if (!s || p->creating + p->turns >= max_creations(p) || p->life.dead || !p->q)
        return;
    unpark(p, s);
    s->turn = true;
    p->turns++;
    wq_add(p->q, s->key);
}

/* Its reconcile runs: the slot kept for it is its own to take now, or to leave. */
static void turn_taken(struct pods *p, struct pstate *s)
{
    if (s && s->turn) {
        s->turn = false;
        p->turns--;
    }
}

static void ps_drop(struct pods *p, const char *key)
{
    for (struct pstate **pp = &p->table[bucket(key)]; *pp; pp = &(*pp)->next) {
        if (strcmp((*pp)->key, key) == 0) {
            struct pstate *s = *pp;

            *pp = s->next;
            unpark(p, s);
            turn_taken(p, s);
            pstate_free(s);
            p->nstates--;
            return;
        }
    }
}

static void set_rv(char *dst, const char *rv)
{
    if (rv && strlen(rv) < RV_MAX)
        snprintf(dst, RV_MAX, "%s", rv);
    else
        dst[0] = '\0';
}

static bool rv_is(const char *stored, const char *rv)
{
    return stored[0] && rv && strcmp(stored, rv) == 0;
}

/* ---- namespaces
 * -------------------------------------------------------------------------------------- */

static struct podns *ns_by_local(struct pods *p, const char *local)
{
    for (struct podns *n = p->nss; n; n = n->next)
        if (strcmp(n->local, local) == 0)
            return n;
    return NULL;
}

static struct inf_informer *remote_pods(const struct podns *n)
{
    return n && n->pods_inf ? pu_inf_get(n->pods_inf) : NULL;
}

/* ---- keys
 * ----------------------------------------------------------------------------------------- */

static void enqueue(struct pods *p, const char *ns, const char *name)
{
    char key[KEY_MAX];
    int n;

    if (p->life.dead || !p->q || !ns || !name)
        return;
    n = snprintf(key, sizeof(key), "%s/%s", ns, name);
    if (n > 0 && (size_t)n < sizeof(key))
        wq_add(p->q, key);
}

static int split_key(const char *key, char *ns, char *name)
{
    const char *slash = strchr(key, '/');

    if (!slash || slash == key || (size_t)(slash - key) >= NS_MAX ||
        strlen(slash + 1) >= NAME_MAX_ || !slash[1])
        return -EINVAL;
    snprintf(ns, NS_MAX, "%.*s", (int)(slash - key), key);
    snprintf(name, NAME_MAX_, "%s", slash + 1);
    return 0;
}

struct visit {
    struct pods *p;
    const char *ns; /* for remote objects: the local namespace */
};

static void visit_home(json_t *obj, void *data)
{
    struct visit *v = data;

    enqueue(v->p, kapi_obj_namespace(obj), kapi_obj_name(obj));
}

static void visit_remote(json_t *obj, void *data)
{
    struct visit *v = data;

    enqueue(v->p, v->ns, kapi_obj_name(obj));
}

static void enqueue_all(struct pods *p)
{
    struct visit v = {p, NULL};

    if (p->life.dead)
        return;
    if (p->home)
        inf_foreach(p->home, visit_home, &v);
    for (struct podns *n = p->nss; n; n = n->next) {
        struct inf_informer *ri = remote_pods(n);

        v.ns = n->local;
        if (ri)
            inf_foreach(ri, visit_remote, &v);
    }
}

static void enqueue_ns(struct pods *p, const char *local)
{
    struct visit v = {p, local};
    struct podns *n = ns_by_local(p, local);
    struct inf_informer *ri = remote_pods(n);

    if (p->home)
        inf_index_foreach(p->home, IDX_NS, local, visit_home, &v);
    if (ri)
        inf_foreach(ri, visit_remote, &v);
}

/* ---- home informer
 * ---------------------------------------------------------------------------------- */

static void on_home(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    enqueue(data, kapi_obj_namespace(obj), kapi_obj_name(obj));
}

static void on_home_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_home(inf, new_obj, data);
}

static void on_home_delete(struct inf_informer *inf, json_t *obj, void *data)
{
    struct pods *p = data;
    char key[KEY_MAX];

    (void)inf;
    if (snprintf(key, sizeof(key), "%s/%s", kapi_obj_namespace(obj), kapi_obj_name(obj)) <
        (int)sizeof(key))
        ps_drop(p, key);
    on_home(inf, obj, data);
}

static void on_home_synced(struct inf_informer *inf, void *data)
{
    struct pods *p = data;

    (void)inf;
    log_info(MOD, "provider %s: %zu home pods bound to %s", p->peer_id, inf_count(p->home),
             p->node);
    enqueue_all(p); /* remote pods of gone home pods: orphans now */
}

static void on_error(struct inf_informer *inf, int err, const char *message, void *data)
{
    struct pods *p = data;

    (void)inf;
    log_warn(MOD, "provider %s: pods informer: %s (%s)", p->peer_id, message, strerror(-err));
}

/* The remote informers of one namespace (data: its podns). */
static void on_ns_error(struct inf_informer *inf, int err, const char *message, void *data)
{
    struct podns *n = data;

    (void)inf;
    log_warn(MOD, "provider %s: namespace %s: informer: %s (%s)", n->p->peer_id, n->remote, message,
             strerror(-err));
}

/* The home informer's filter: pods bound to this virtual node. The watch asks for every bound pod
 * (pods_create): a watch with spec.nodeName=<node> is one of the API server's per-node watchers,
 * whose buffer holds 10 events (a kubelet's pace); a virtual node's pods change faster, and on a
 * busy control plane the server closed that watch as unresponsive 46 times in a Deployment of 1,000
 * pods, replaying (and deep-copying) every event since at each reconnect (docs/offloading.md). */
static bool home_keep(const json_t *obj, void *data)
{
    const struct pods *p = data;
    const char *node = json_string_value(json_object_get(json_object_get(obj, "spec"), "nodeName"));

    return node && strcmp(node, p->node) == 0;
}

static void home_transform(json_t *obj, void *data)
{
    (void)data;
    vkp_home_transform(obj);
}

/* ---- remote informers
 * --------------------------------------------------------------------------------- */

static void on_remote(struct inf_informer *inf, json_t *obj, void *data)
{
    struct podns *n = data;

    (void)inf;
    enqueue(n->p, n->local, kapi_obj_name(obj));
}

static void on_remote_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_remote(inf, new_obj, data);
}

static void on_remote_add_delete(struct inf_informer *inf, json_t *obj, void *data)
{
    struct podns *n = data;

    on_remote(inf, obj, data);
    if (inf_synced(inf))
        offloaded_gauge(n->p);
}

static void on_remote_synced(struct inf_informer *inf, void *data)
{
    struct podns *n = data;

    (void)inf;
    log_debug(MOD, "provider %s: remote pods of %s (%s) listed", n->p->peer_id, n->local,
              n->remote);
    enqueue_ns(n->p, n->local);
    offloaded_gauge(n->p);
}

static void remote_transform(json_t *obj, void *data)
{
    (void)data;
    vkp_remote_transform(obj);
}

static void event_transform(json_t *obj, void *data)
{
    (void)data;
    vkp_event_transform(obj);
}

/* ---- Events
 * ------------------------------------------------------------------------------------------ */

struct evreq {
    struct pods *p;
    json_t *ev; /* the home Event */
    char ns[NS_MAX], name[VKP_EVENT_NAME_MAX + 1];
    bool patched;
};

static void refill(double *tokens, uint64_t *at, uint64_t now, double rate, double burst)
{
    if (now > *at) {
        *tokens += (double)(now - *at) / 1000.0 * rate;
        if (*tokens > burst)
            *tokens = burst;
    }
    *at = now;
}

static void after_event(struct kapi_client *c, const struct kapi_result *res, void *data);

static void send_event(struct evreq *r, bool patch)
{
    struct pods *p = r->p;
    int e;

    r->patched = patch;
    if (patch) {
        json_t *body = json_pack("{s:O,s:O,s:O}", "count", json_object_get(r->ev, "count"),
                                 "lastTimestamp", json_object_get(r->ev, "lastTimestamp"),
                                 "message", json_object_get(r->ev, "message"));
        char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;

        json_decref(body);
        e = s ? kapi_patch(p->env.local, &kapi_events, r->ns, r->name, NULL, KAPI_PATCH_MERGE, s,
                           after_event, r)
              : -ENOMEM;
        x_free(s);
    } else {
        e = kapi_create(p->env.local, &kapi_events, r->ns, r->ev, after_event, r);
    }
    if (liveref_sent(&p->life, e) < 0) {
        p->ev_inflight--;
        json_decref(r->ev);
        x_free(r);
    }
}

static void after_event(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct evreq *r = data;
    struct pods *p = r->p;

    (void)c;
    if (liveref_put(&p->life)) {
        json_decref(r->ev);
        x_free(r);
        return;
    }
    if (!r->patched && res->err == -EEXIST) {
        (void)liveref_hold(&p->life); /* the retry's reference */
        send_event(r, true);
        return;
    }
    p->ev_inflight--;
    if (res->err == 0)
        count(FAMILY(p, events), p);
    else
        log_debug(MOD, "provider %s: cannot forward an Event to %s/%s: %s", p->peer_id, r->ns,
                  r->name, res->status.message);
    json_decref(r->ev);
    x_free(r);
}

/* A remote Event about a pod: re-emitted on the home pod, within the rate limits. */
static void forward_event(struct podns *n, const json_t *ev)
{
    struct pods *p = n->p;
    const json_t *io = json_object_get(ev, "involvedObject");
    const char *name = json_string_value(json_object_get(io, "name"));
    struct inf_informer *ri = remote_pods(n);
    json_t *home = NULL, *remote = NULL, *out = NULL;
    struct pstate *s;
    struct evreq *r;
    char key[KEY_MAX], evname[VKP_EVENT_NAME_MAX + 1], last[32];
    int64_t t;
    uint64_t now = now_ms(p);

    if (p->life.dead || !name || !ri || strlen(name) >= NAME_MAX_)
        return;
    /* Old Events of the first list (a restart) were forwarded then, or are history. */
    if (vkp_rfc3339_seconds(json_string_value(json_object_get(ev, "lastTimestamp")), last,
                            sizeof(last)) &&
        rfc3339_parse(last, RFC3339_OFFSET, &t) == 0 && t < p->started_wall - EVENT_MAX_AGE_S)
        return;
    home = inf_get(p->home, n->local, name);
    remote = inf_get(ri, n->remote, name);
    /* The Event's watch may run ahead of the pods' one: a remote pod not cached yet is not a
     * reason to drop it; a cached one must be ours (and vkp_home_event checks its UID). */
    if (!home || (remote && vkp_classify(home, remote, p->home_id) != VKP_OURS))
        goto out;
    out = vkp_home_event(ev, home, remote ? kapi_obj_uid(remote) : NULL, p->peer_id, evname);
    if (!out)
        goto out;
    snprintf(key, sizeof(key), "%s/%s", n->local, name);
    s = ps_get(p, key);
    refill(&p->ev_tokens, &p->ev_at, now, VK_PODS_EVENT_QPS, VK_PODS_EVENT_BURST);
    if (s)
        refill(&s->ev_tokens, &s->ev_at, now, EVENT_POD_RATE, EVENT_POD_BURST);
    if (!s || s->ev_tokens < 1 || p->ev_tokens < 1 || p->ev_inflight >= EVENTS_INFLIGHT) {
        count(FAMILY(p, dropped), p);
        goto out;
    }
    r = x_calloc(1, sizeof(*r));
    if (!r)
        goto out;
    s->ev_tokens -= 1;
    p->ev_tokens -= 1;
    r->p = liveref_hold(&p->life);
    r->ev = out;
    out = NULL;
    snprintf(r->ns, sizeof(r->ns), "%s", n->local);
    snprintf(r->name, sizeof(r->name), "%s", evname);
    p->ev_inflight++;
    send_event(r, false);
out:
    json_decref(out);
    json_decref(home);
    json_decref(remote);
}

static void on_event(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    forward_event(data, obj);
}

static void on_event_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)inf;
    if (json_equal(json_object_get(old_obj, "count"), json_object_get(new_obj, "count")) &&
        json_equal(json_object_get(old_obj, "series"), json_object_get(new_obj, "series")) &&
        json_equal(json_object_get(old_obj, "lastTimestamp"),
                   json_object_get(new_obj, "lastTimestamp")))
        return;
    forward_event(data, new_obj);
}

/* ---- reconcile
 * ---------------------------------------------------------------------------------------- */

struct rec {
    struct pods *p;
    char key[KEY_MAX], ns[NS_MAX], name[NAME_MAX_];
    enum vkp_action action;
    bool orphan;
    char home_rv[RV_MAX], remote_rv[RV_MAX];
    char home_uid[UID_MAX_];
};

/* Ends r with the skeleton's outcomes (agent/ctl.h; the reflector has a queue of its own, not a
 * struct ctl): CTL_DONE forgets the key's failures, CTL_NOW queues it again at once (slower
 * after NOW_STREAK in a row with no event, as the skeleton does), CTL_BACKOFF
 * after its own backoff (the queue's rate limiter); the others are not used here. */
static void rec_end(struct rec *r, enum ctl_requeue how)
{
    struct pods *p = r->p;

    if (!p->life.dead && p->q) {
        if (how == CTL_NOW) {
            if (wq_add_again(p->q, r->key, NOW_STREAK) == NOW_STREAK + 1)
                log_warn(MOD,
                         "provider %s: pod %s: %d passes in a row went again at once with no "
                         "event between them; slowing it down until the next event",
                         p->peer_id, r->key, NOW_STREAK + 1);
        } else if (how == CTL_BACKOFF) {
            wq_add_rate_limited(p->q, r->key);
        } else {
            wq_forget(p->q, r->key);
        }
        wq_done(p->q, r->key);
    }
    x_free(r);
}

static void status_ctx(struct pods *p, const char *now, struct vkp_status_ctx *ret)
{
    ret->node_address = p->address;
    ret->remote_to_home = p->env.remote_to_home_ip;
    ret->ip_data = p->env.ip_data;
    ret->reachable = p->reachable;
    ret->unreachable = p->unreachable;
    ret->now = now;
}

static void emit_refusal_event(struct pods *p, const json_t *home, const char *msg)
{
    char name[VKP_EVENT_NAME_MAX + 1], now[32];
    json_t *ev, *fake;
    struct evreq *r;
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    rfc3339_now(0, now, sizeof(now));
    /* Built through the forwarding path so that it is bounded the same way. */
    fake = json_pack("{s:{s:s},s:{s:s,s:s},s:s,s:s,s:s,s:s,s:i}", "metadata", "uid", "refusal",
                     "involvedObject", "kind", "Pod", "name", kapi_obj_name(home), "reason",
                     VKP_REASON_REFUSED, "message", msg, "type", "Warning", "lastTimestamp", now,
                     "count", 1);
    ev = fake ? vkp_home_event(fake, home, NULL, p->peer_id, name) : NULL;
    json_decref(fake);
    if (!ev)
        return;
    /* A new name per refusal (the deterministic one is for forwarded Events). */
    snprintf(name, sizeof(name), "%.200s.%lx%05lx", kapi_obj_name(home), (long)ts.tv_sec,
             (long)(ts.tv_nsec / 10000));
    json_object_set_new(json_object_get(ev, "metadata"), "name", json_string(name));
    r = x_calloc(1, sizeof(*r));
    if (!r) {
        json_decref(ev);
        return;
    }
    r->p = liveref_hold(&p->life);
    r->ev = ev;
    snprintf(r->ns, sizeof(r->ns), "%s", kapi_obj_namespace(home));
    snprintf(r->name, sizeof(r->name), "%s", name);
    p->ev_inflight++;
    r->patched = true; /* no retry as a patch */
    if (liveref_sent(&p->life, kapi_create(p->env.local, &kapi_events, r->ns, ev, after_event, r)) <
        0) {
        p->ev_inflight--;
        json_decref(r->ev);
        x_free(r);
    }
}

/* A refused create: reported on the home pod (status and Event), retried with backoff. */
static void refused(struct rec *r, const json_t *home, const struct kapi_result *res)
{
    struct pods *p = r->p;
    struct pstate *s = ps_get(p, r->key);
    const char *why = res->status.message && *res->status.message ? res->status.message
                                                                  : "refused by the provider";
    const char *reason = res->err == -EEXIST   ? "AlreadyExists"
                         : res->err == -EPERM  ? "Forbidden"
                         : res->err == -EINVAL ? "Invalid"
                                               : "Error";
    char msg[VKP_MAX_MESSAGE];
    uint64_t delay;

    if (res->err == -EEXIST)
        snprintf(msg, sizeof(msg),
                 "provider %s: a pod of this name exists in namespace %s and was not created for "
                 "this pod",
                 p->peer_id, kapi_obj_namespace(home) ? kapi_obj_namespace(home) : "");
    else
        snprintf(msg, sizeof(msg), "provider %s refused the pod: %s", p->peer_id, why);
    if (s && vkp_refusal_transient(res->err, why) && s->not_ready < NOT_READY_TRIES) {
        if (s->not_ready++ == 0)
            log_info(MOD,
                     "provider %s: pod %s: its namespace takes no pods yet (%s); again in %d ms",
                     p->peer_id, r->key, why, NOT_READY_MS);
        count_refusal(p, "NotReady");
        if (!p->life.dead && p->q)
            wq_add_after(p->q, r->key, NOT_READY_MS);
        rec_end(r, CTL_DONE);
        return;
    }
    count_refusal(p, reason);
    if (!s) {
        rec_end(r, CTL_BACKOFF);
        return;
    }
    delay = backoff_next(&s->bo);
    s->retry_at = now_ms(p) + delay;
    if (!s->refuse_msg || strcmp(s->refuse_msg, msg) != 0) {
        log_warn(MOD, "provider %s refused pod %s: %s (retry in %llu ms)", p->peer_id, r->key, why,
                 (unsigned long long)delay);
        x_free(s->refuse_msg);
        s->refuse_msg = x_strdup(msg);
        emit_refusal_event(p, home, msg);
    }
    if (!p->life.dead && p->q)
        wq_add_after(p->q, r->key, delay);
    rec_end(r, CTL_NOW); /* the status now */
}

static void after_create(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct rec *r = data;
    struct pods *p = r->p;
    struct pstate *s;
    json_t *home;

    (void)c;
    if (liveref_put(&p->life)) {
        x_free(r);
        return;
    }
    p->creating--;
    unpark_one(p);
    if (res->err == 0) {
        count(FAMILY(p, creations), p);
        if ((s = ps_find(p, r->key))) {
            x_free(s->refuse_msg);
            s->refuse_msg = NULL;
            s->exists = 0;
            s->not_ready = 0;
            backoff_reset(&s->bo);
        }
        rec_end(r, CTL_DONE);
        return;
    }
    if (res->err == -EEXIST && (s = ps_find(p, r->key)) && ++s->exists < EXISTS_TRIES) {
        /* Ours, most likely, and our informer has not shown it yet: look again before calling it
         * someone else's. */
        if (!p->life.dead && p->q)
            wq_add_after(p->q, r->key, EXISTS_WAIT_MS);
        rec_end(r, CTL_DONE);
        return;
    }
    if (res->err == -EEXIST || res->err == -EPERM || res->err == -EINVAL) {
        home = inf_get(p->home, r->ns, r->name);
        if (home) {
            /* EEXIST: if it is ours, the informer shows it soon and the refusal is moot. */
            refused(r, home, res);
            json_decref(home);
            return;
        }
    }
    log_debug(MOD, "provider %s: cannot create pod %s: %s", p->peer_id, r->key,
              res->status.message);
    rec_end(r, CTL_BACKOFF);
}

static void after_write(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct rec *r = data;
    struct pods *p = r->p;
    struct pstate *s;

    (void)c;
    if (liveref_put(&p->life)) {
        x_free(r);
        return;
    }
    if (res->err == 0 || res->err == -ENOENT) {
        switch (r->action) {
        /* Until the informer shows the written object, its cached version is the one the write
         * started from: nothing more is written on it. A write that changed nothing (same
         * version back) sets no such guard, so that it can never hold the key forever. */
        case VKP_STATUS:
            if (res->err == 0) {
                count(FAMILY(p, status), p);
                if ((s = ps_find(p, r->key)) && !rv_is(r->home_rv, kapi_obj_rv(res->body)))
                    set_rv(s->home_rv, r->home_rv);
            }
            break;
        case VKP_UPDATE_REMOTE:
            if (res->err == 0 && (s = ps_find(p, r->key)) &&
                !rv_is(r->remote_rv, kapi_obj_rv(res->body)))
                set_rv(s->remote_rv, r->remote_rv);
            break;
        case VKP_DELETE_REMOTE:
            count(r->orphan ? FAMILY(p, orphans) : FAMILY(p, deletions), p);
            break;
        case VKP_DELETE_HOME:
            /* Gone, whatever the informer shows of it until its DELETED event (the server's last
             * MODIFIED comes first): that pod is not deleted again. */
            if ((s = ps_find(p, r->key)))
                snprintf(s->deleted_uid, sizeof(s->deleted_uid), "%s", r->home_uid);
            break;
        default:
            break;
        }
        rec_end(r, CTL_DONE);
        return;
    }
    if (r->action == VKP_UPDATE_REMOTE && res->err == -EINVAL && (s = ps_find(p, r->key))) {
        /* The API does not allow that change: not retried until the home pod changes. */
        log_warn(MOD, "provider %s: pod %s cannot be updated: %s", p->peer_id, r->key,
                 res->status.message);
        set_rv(s->update_failed_rv, r->home_rv);
        rec_end(r, CTL_NOW);
        return;
    }
    if (res->err == -ESTALE && r->action != VKP_UPDATE_REMOTE) {
        /* A precondition (UID) failed: another incarnation; the informers will say. */
        rec_end(r, CTL_DONE);
        return;
    }
    log_debug(MOD, "provider %s: %s of %s failed: %s", p->peer_id, vkp_action_name(r->action),
              r->key, res->status.message);
    rec_end(r, CTL_BACKOFF);
}

static int do_create(struct rec *r, const json_t *home, struct podns *n)
{
    struct pods *p = r->p;
    struct vkp_ids ids = {p->home_id, p->peer_id};
    struct kapi_client *c = pu_client(p->env.unit, PU_VK);
    json_t *pod = NULL;
    char err[256];
    int e;

    if (!c)
        return -EAGAIN;
    e = vkp_remote_pod(home, n->remote, &ids, &pod, err, sizeof(err));
    if (e < 0) {
        log_warn(MOD, "provider %s: pod %s cannot be offloaded: %s", p->peer_id, r->key, err);
        return e;
    }
    (void)liveref_hold(&p->life);
    e = liveref_sent(&p->life, kapi_create_meta(c, &kapi_pods, n->remote, pod, after_create, r));
    json_decref(pod);
    return e;
}

static int do_delete(struct rec *r, struct kapi_client *c, const char *ns, const json_t *o,
                     long grace)
{
    struct kapi_delete_opts dopt = {.grace_period_seconds = grace,
                                    .precondition_uid = kapi_obj_uid(o)};

    if (!c)
        return -EAGAIN;
    (void)liveref_hold(&r->p->life);
    return liveref_sent(&r->p->life,
                        kapi_delete(c, &kapi_pods, ns, r->name, &dopt, after_write, r));
}

static int do_patch(struct rec *r, struct kapi_client *c, const char *ns, const char *sub,
                    enum kapi_patch_type type, json_t *patch)
{
    char *body = json_dumps(patch, JSON_COMPACT);
    int e;

    if (!c || !body) {
        x_free(body);
        return !c ? -EAGAIN : -ENOMEM;
    }
    (void)liveref_hold(&r->p->life);
    e = liveref_sent(&r->p->life,
                     kapi_patch_meta(c, &kapi_pods, ns, r->name, sub, type, body, after_write, r));
    x_free(body);
    return e;
}

/* The grace period of a home pod being deleted (-1: the server's default). */
static long grace_of(const json_t *home)
{
    const json_t *g =
        json_object_get(json_object_get(home, "metadata"), "deletionGracePeriodSeconds");

    return json_is_integer(g) && json_integer_value(g) >= 0 && json_integer_value(g) <= 86400 * 365
               ? (long)json_integer_value(g)
               : -1;
}

static bool pending(const json_t *pod_or_status)
{
    const json_t *st = json_object_get(pod_or_status, "status");
    const char *ph = json_string_value(json_object_get(st ? st : pod_or_status, "phase"));

    return !ph || strcmp(ph, "Pending") == 0;
}

/* The status the home pod should show, or NULL when nothing is to be said now. */
static json_t *wanted_status(struct pods *p, const char *key, const json_t *home,
                             const json_t *remote, const struct podns *n, const struct pstate *s,
                             const struct vkp_status_ctx *ctx)
{
    char msg[VKP_MAX_MESSAGE];

    (void)key;
    if (vkp_is_daemonset(home)) {
        snprintf(msg, sizeof(msg), "DaemonSet pods are not offloaded to provider %s", p->peer_id);
        return vkp_unscheduled_status(home, "DaemonSetNotOffloaded", msg, ctx);
    }
    if (!n) {
        if (!p->mapping_synced)
            return NULL;
        snprintf(msg, sizeof(msg),
                 "namespace %s is not offloaded to provider %s (no NamespaceOffloading selects it, "
                 "or the provider has not accepted it)",
                 kapi_obj_namespace(home), p->peer_id);
        return vkp_unscheduled_status(home, "NamespaceNotOffloaded", msg, ctx);
    }
    if (remote && vkp_classify(home, remote, p->home_id) == VKP_OURS)
        return vkp_home_status(home, remote, ctx);
    if (!remote && s && s->refuse_msg)
        return vkp_unscheduled_status(home, VKP_REASON_REFUSED, s->refuse_msg, ctx);
    if (!p->reachable)
        return vkp_home_status(home, NULL, ctx);
    return NULL;
}

static void reconcile(struct wq_queue *q, const char *key, void *data)
{
    struct pods *p = data;
    struct rec *r;
    struct podns *n;
    struct inf_informer *ri;
    struct pstate *s;
    json_t *home = NULL, *remote = NULL, *want = NULL, *spatch = NULL, *upatch = NULL, *body;
    struct vkp_situation sit = {0};
    struct vkp_status_ctx ctx;
    struct vkp_ids ids = {p->home_id, p->peer_id};
    enum vkp_action action;
    uint64_t defer_ms = 0;
    char now[32];
    int e = 0;

    r = x_calloc(1, sizeof(*r));
    if (!r) {
        wq_add_rate_limited(q, key);
        wq_done(q, key);
        return;
    }
    r->p = p;
    snprintf(r->key, sizeof(r->key), "%s", key);
    if (p->life.dead || split_key(key, r->ns, r->name) < 0) {
        rec_end(r, CTL_DONE);
        return;
    }
    n = ns_by_local(p, r->ns);
    ri = remote_pods(n);
    home = inf_get(p->home, r->ns, r->name);
    remote = ri ? inf_get(ri, n->remote, r->name) : NULL;
    turn_taken(p, ps_find(p, key));
    s = home ? ps_find(p, key) : NULL;
    if (s && remote)
        s->exists = 0;
    rfc3339_now(0, now, sizeof(now));
    status_ctx(p, now, &ctx);
    if (home) {
        want = wanted_status(p, key, home, remote, n, s, &ctx);
        if (want && !rv_is(s ? s->home_rv : "", kapi_obj_rv(home)))
            spatch = vkp_status_patch(home, want);
        if (spatch && remote && p->reachable && pending(home) && pending(want) &&
            (s = ps_get(p, key))) {
            uint64_t hold = vkp_status_quiet(want) ? PENDING_QUIET_MS : PENDING_COALESCE_MS;

            if (!s->pending_at)
                s->pending_at = now_ms(p);
            if (now_ms(p) - s->pending_at < hold) {
                defer_ms = hold - (now_ms(p) - s->pending_at);
                json_decref(spatch);
                spatch = NULL;
            }
        }
        if (remote && vkp_classify(home, remote, p->home_id) == VKP_OURS &&
            !rv_is(s ? s->update_failed_rv : "", kapi_obj_rv(home)) &&
            !rv_is(s ? s->remote_rv : "", kapi_obj_rv(remote)))
            upatch = vkp_remote_update(home, remote, &ids);
    }
    sit.home = home;
    sit.remote = remote;
    sit.home_id = p->home_id;
    sit.home_synced = inf_synced(p->home);
    sit.remote_synced = ri && inf_synced(ri);
    sit.mapped = n != NULL;
    sit.reachable = p->reachable;
    sit.network_pending = p->network_pending;
    sit.refused = s && s->refuse_msg && now_ms(p) < s->retry_at;
    sit.status_differs = spatch != NULL;
    sit.update_remote = upatch != NULL;
    sit.home_deleted =
        s && home && kapi_obj_uid(home) && strcmp(s->deleted_uid, kapi_obj_uid(home)) == 0;
    action = r->action = vkp_decide(&sit);
    snprintf(r->home_uid, sizeof(r->home_uid), "%s",
             home && kapi_obj_uid(home) ? kapi_obj_uid(home) : "");
    set_rv(r->home_rv, kapi_obj_rv(home));
    set_rv(r->remote_rv, kapi_obj_rv(remote));
    log_debug(MOD, "provider %s: %s: %s", p->peer_id, key, vkp_action_name(action));
    /* What the answer records is kept in the pod's state: made here, while the home pod is cached,
     * so that a pod deleted while its request is in flight leaves none behind (ps_drop). */
    if (home && (action == VKP_CREATE || action == VKP_STATUS || action == VKP_UPDATE_REMOTE ||
                 action == VKP_DELETE_HOME))
        (void)ps_get(p, key);

    switch (action) {
    case VKP_CREATE:
        if (p->creating >= max_creations(p) && (s = ps_get(p, key))) {
            if (!s->park_prev)
                count(FAMILY(p, waited), p);
            park(p, s); /* its turn comes when a creation ends (after_create) */
            rec_end(r, CTL_DONE);
            r = NULL;
            break;
        }
        e = do_create(r, home, n);
        if (e >= 0)
            p->creating++;
        break;
    case VKP_DELETE_REMOTE:
        r->orphan = home == NULL;
        e = do_delete(r, pu_client(p->env.unit, PU_VK), n->remote, remote,
                      home ? grace_of(home) : -1);
        break;
    case VKP_DELETE_HOME:
        e = do_delete(r, p->env.local, r->ns, home, 0);
        break;
    case VKP_UPDATE_REMOTE:
        log_info(MOD, "provider %s: updating remote pod %s", p->peer_id, key);
        e = do_patch(r, pu_client(p->env.unit, PU_VK), n->remote, NULL, KAPI_PATCH_STRATEGIC,
                     upatch);
        break;
    case VKP_STATUS:
        body = json_pack("{s:{s:s},s:O}", "metadata", "uid", kapi_obj_uid(home), "status", spatch);
        e = body ? do_patch(r, p->env.local, r->ns, "status", KAPI_PATCH_MERGE, body) : -ENOMEM;
        json_decref(body);
        break;
    case VKP_WAIT:
        if (home && s && s->refuse_msg && !remote && now_ms(p) < s->retry_at)
            wq_add_after(q, key, s->retry_at - now_ms(p));
        /* fall through */
    case VKP_NOTHING:
    default:
        if (defer_ms)
            wq_add_after(q, key, defer_ms);
        rec_end(r, CTL_DONE);
        r = NULL;
        break;
    }
    if (r && e < 0) {
        log_debug(MOD, "provider %s: %s of %s not sent: %s", p->peer_id, vkp_action_name(action),
                  key, strerror(-e));
        rec_end(r, e == -EINVAL ? CTL_DONE : CTL_BACKOFF);
    }
    json_decref(home);
    json_decref(remote);
    json_decref(want);
    json_decref(spatch);
    json_decref(upatch);
    /* A slot that a waiting pod's turn did not use (it was deleted meanwhile): the next one. */
    unpark_one(p);
}

/* ---- the reflector's operations
 * ------------------------------------------------------------------------ */

static int pods_create(const struct vk_reflect_env *env, void **ret_state)
{
    struct pods *p;
    /* The handlers read only the new object (on_home_update): no old one decoded per update. */
    struct inf_options o = {.resource = &kapi_pods,
                            .page_size = 500,
                            .transform = home_transform,
                            .update_without_old = true};
    struct inf_handlers h = {.on_add = on_home,
                             .on_update = on_home_update,
                             .on_delete = on_home_delete,
                             .on_synced = on_home_synced,
                             .on_error = on_error};
    struct wq_options qo = {.max_concurrent = VK_PODS_CONCURRENCY,
                            .base_delay_ms = 200,
                            .max_delay_ms = 30000,
                            .max_keys = 4 * VK_PODS_MAX};
    int e = -ENOMEM;

    if (!env || !env->loop || !env->local || !env->unit || !env->home_id || !env->peer_id ||
        !env->node_name || !ret_state)
        return -EINVAL;
    p = x_calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->env = *env;
    snprintf(p->home_id, sizeof(p->home_id), "%s", env->home_id);
    snprintf(p->peer_id, sizeof(p->peer_id), "%s", env->peer_id);
    snprintf(p->node, sizeof(p->node), "%s", env->node_name);
    snprintf(p->address, sizeof(p->address), "%s", env->node_address ? env->node_address : "");
    p->env.home_id = p->home_id;
    p->env.peer_id = p->peer_id;
    p->env.node_name = p->node;
    p->env.node_address = p->address;
    liveref_init(&p->life, pods_free, p);
    p->park_tail = &p->parked;
    p->reachable = true;
    p->network_pending = true;
    p->started_wall = (int64_t)time(NULL);
    p->ev_tokens = VK_PODS_EVENT_BURST;
    p->ev_at = uv_now(env->loop);
    o.keep = home_keep; /* the node's pods */
    p->q = wq_new(env->loop, &qo, reconcile, p);
    if (!p->q)
        goto fail;
    /* A view of the agent's informer of every home pod when there is one (one watch for every
     * virtual kubelet and the other modules); else a watch of every bound pod. */
    if (env->pods && env->pods->home) {
        e = inf_view_new(env->pods->home, &o, &h, p, &p->home);
    } else {
        o.field_selector = "spec.nodeName!=";
        e = inf_new(env->local, &o, &h, p, &p->home);
    }
    if (e < 0 || (e = inf_add_index(p->home, IDX_NS, inf_index_by_namespace)) < 0 ||
        (e = inf_start(p->home)) < 0)
        goto fail;
    p->sh = env->pods;
    if (p->sh) {
        p->next_all = p->sh->all;
        p->sh->all = p;
    }
    *ret_state = p;
    return 0;
fail:
    inf_free(p->home);
    wq_close(p->q, NULL, NULL);
    pods_free(p);
    return e;
}

static void podns_free(struct podns *n)
{
    pu_informer_close(n->pods_inf);
    pu_informer_close(n->events_inf);
    x_free(n);
}

static void pods_ns_remove(void *state, const char *local)
{
    struct pods *p = state;

    for (struct podns **pp = &p->nss; *pp; pp = &(*pp)->next) {
        if (strcmp((*pp)->local, local) == 0) {
            struct podns *n = *pp;

            *pp = n->next;
            log_info(MOD, "provider %s: namespace %s (%s) no longer mapped", p->peer_id, n->local,
                     n->remote);
            podns_free(n);
            offloaded_gauge(p);
            enqueue_ns(p, local);
            return;
        }
    }
}

static void pods_ns_add(void *state, const char *local, const char *remote)
{
    struct pods *p = state;
    struct podns *n = ns_by_local(p, local);
    char ls[128];
    struct inf_options po = {.resource = &kapi_pods,
                             .page_size = 500,
                             .transform = remote_transform,
                             .update_without_old = true}; /* on_remote_update: the new one only */
    struct inf_options eo = {.resource = &kapi_events,
                             .page_size = 500,
                             .field_selector = VKP_EVENT_SELECTOR,
                             .transform = event_transform};
    struct inf_handlers ph = {.on_add = on_remote_add_delete,
                              .on_update = on_remote_update,
                              .on_delete = on_remote_add_delete,
                              .on_synced = on_remote_synced,
                              .on_error = on_ns_error};
    struct inf_handlers eh = {
        .on_add = on_event, .on_update = on_event_update, .on_error = on_ns_error};

    if (p->life.dead || !local || !remote || strlen(local) >= NS_MAX || strlen(remote) >= NS_MAX)
        return;
    if (n && strcmp(n->remote, remote) == 0)
        return;
    if (n)
        pods_ns_remove(p, local);
    n = x_calloc(1, sizeof(*n));
    if (!n)
        return;
    n->p = p;
    snprintf(n->local, sizeof(n->local), "%s", local);
    snprintf(n->remote, sizeof(n->remote), "%s", remote);
    snprintf(ls, sizeof(ls), VK_LABEL_ORIGIN "=%s", p->home_id);
    po.namespace_ = n->remote;
    po.label_selector = ls;
    eo.namespace_ = n->remote;
    if (pu_informer(p->env.unit, PU_VK, &po, &ph, n, &n->pods_inf) < 0 ||
        pu_informer(p->env.unit, PU_VK, &eo, &eh, n, &n->events_inf) < 0) {
        log_warn(MOD, "provider %s: cannot watch namespace %s", p->peer_id, remote);
        podns_free(n);
        return;
    }
    n->next = p->nss;
    p->nss = n;
    log_info(MOD, "provider %s: namespace %s mapped to %s", p->peer_id, local, remote);
    enqueue_ns(p, local);
}

static void pods_kick(void *state)
{
    enqueue_all(state);
}

static void pods_destroy(void *state)
{
    struct pods *p = state;

    if (!p)
        return;
    for (struct pods **pp = p->sh ? &p->sh->all : NULL; pp && *pp; pp = &(*pp)->next_all) {
        if (*pp == p) {
            *pp = p->next_all;
            break;
        }
    }
    liveref_kill(&p->life);
    inf_free(p->home);
    p->home = NULL;
    while (p->nss) {
        struct podns *n = p->nss;

        p->nss = n->next;
        podns_free(n);
    }
    wq_close(p->q, NULL, NULL);
    p->q = NULL;
    if (p->sh && p->sh->r) {
        struct vk_pods_shared *m = p->sh;
        struct metrics_family *fams[] = {m->offloaded, m->creations, m->refusals, m->status,
                                         m->events,    m->dropped,   m->orphans,  m->deletions};
        bool other = false;

        for (struct pods *o = m->all; o; o = o->next_all)
            other |= strcmp(o->peer_id, p->peer_id) == 0;
        for (size_t i = 0; !other && i < sizeof(fams) / sizeof(fams[0]); i++)
            if (fams[i])
                metrics_family_remove(fams[i], "peer", p->peer_id);
    }
    p->sh = NULL; /* its owner may free it once the last reflector is destroyed */
    (void)liveref_put(&p->life);
}

const struct vk_reflector_ops vk_reflect_pods = {
    .kind = "pods",
    .create = pods_create,
    .ns_add = pods_ns_add,
    .ns_remove = pods_ns_remove,
    .kick = pods_kick,
    .destroy = pods_destroy,
};

/* ---- what only pods have
 * ------------------------------------------------------------------------------ */

void vk_pods_set_reachable(void *state, bool reachable, const char *why)
{
    struct pods *p = state;

    if (!p || p->life.dead)
        return;
    snprintf(p->unreachable, sizeof(p->unreachable), "%s", why ? why : "");
    if (p->reachable == reachable)
        return;
    p->reachable = reachable;
    log_info(MOD, "provider %s is %s: reconciling every pod", p->peer_id,
             reachable ? "reachable again" : "unreachable");
    enqueue_all(p);
}

void vk_pods_set_network_pending(void *state, bool pending)
{
    struct pods *p = state;
    bool first;

    if (!p || p->life.dead || (p->network_told && p->network_pending == pending))
        return;
    first = !p->network_told;
    p->network_told = true;
    if (pending)
        log_info(MOD, "provider %s: pod-CIDR remapping pending: holding new pods", p->peer_id);
    else if (!first) /* held since the start: nothing to say */
        log_info(MOD, "provider %s: pod-CIDR remapping settled (or off): sending held pods",
                 p->peer_id);
    if (p->network_pending == pending)
        return;
    p->network_pending = pending;
    enqueue_all(p);
}

void vk_pods_set_mapping_synced(void *state, bool synced)
{
    struct pods *p = state;

    if (!p || p->life.dead || p->mapping_synced == synced)
        return;
    p->mapping_synced = synced;
    enqueue_all(p);
}

struct nsvisit {
    json_t *list;
    size_t n;
};

static void visit_count(json_t *obj, void *data)
{
    struct nsvisit *v = data;

    (void)obj;
    v->n++;
}

size_t vk_pods_in_namespace(void *state, const char *ns)
{
    struct pods *p = state;
    struct nsvisit v = {NULL, 0};

    if (!p || !p->home)
        return 0;
    inf_index_foreach(p->home, IDX_NS, ns, visit_count, &v);
    return v.n;
}

static void visit_collect(json_t *obj, void *data)
{
    struct nsvisit *v = data;

    if (!json_object_get(json_object_get(obj, "metadata"), "deletionTimestamp"))
        json_array_append_new(v->list, json_pack("{s:s,s:s}", "name", kapi_obj_name(obj), "uid",
                                                 kapi_obj_uid(obj) ? kapi_obj_uid(obj) : ""));
}

struct evict {
    struct pods *p;
    char key[KEY_MAX];
};

static void after_evict(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct evict *ev = data;
    struct pods *p = ev->p;
    struct pstate *s;

    (void)c;
    if (!liveref_put(&p->life) && res->err < 0 && res->err != -ENOENT &&
        (s = ps_find(p, ev->key))) {
        log_warn(MOD, "provider %s: cannot delete pod %s: %s", p->peer_id, ev->key,
                 res->status.message);
        s->evicting = false;
    }
    x_free(ev);
}

void vk_pods_evict_namespace(void *state, const char *ns)
{
    struct pods *p = state;
    struct nsvisit v = {json_array(), 0};
    size_t i;
    json_t *e;

    if (!p || p->life.dead || !p->home || !v.list) {
        json_decref(v.list);
        return;
    }
    inf_index_foreach(p->home, IDX_NS, ns, visit_collect, &v);
    json_array_foreach(v.list, i, e)
    {
        struct kapi_delete_opts dopt = {.grace_period_seconds = -1,
                                        .precondition_uid =
                                            json_string_value(json_object_get(e, "uid"))};
        struct evict *ev = x_calloc(1, sizeof(*ev));
        struct pstate *s;

        if (!ev)
            break;
        snprintf(ev->key, sizeof(ev->key), "%s/%s", ns,
                 json_string_value(json_object_get(e, "name")));
        s = ps_get(p, ev->key);
        if (!s || s->evicting) {
            x_free(ev);
            continue;
        }
        s->evicting = true;
        ev->p = liveref_hold(&p->life);
        log_info(MOD, "provider %s: deleting pod %s (its namespace is no longer offloaded here)",
                 p->peer_id, ev->key);
        if (liveref_sent(&p->life, kapi_delete(p->env.local, &kapi_pods, ns,
                                               json_string_value(json_object_get(e, "name")), &dopt,
                                               after_evict, ev)) < 0) {
            s->evicting = false;
            x_free(ev);
        }
    }
    json_decref(v.list);
}

size_t vk_pods_remote_count(void *state)
{
    struct pods *p = state;
    size_t c = 0;

    for (struct podns *n = p ? p->nss : NULL; n; n = n->next) {
        struct inf_informer *ri = remote_pods(n);

        c += ri ? inf_count(ri) : 0;
    }
    return c;
}

bool vk_pods_synced(void *state)
{
    struct pods *p = state;

    return p && p->home && inf_synced(p->home);
}

int vk_pod_target(const struct vk_pods_shared *sh, const char *ns, const char *pod, char *ret_node,
                  size_t node_size, struct kapi_client **ret_client, char *ret_remote_ns,
                  size_t remote_ns_size, char *ret_remote_pod, size_t remote_pod_size)
{
    if (!ns || !pod)
        return -EINVAL;
    for (struct pods *p = sh ? sh->all : NULL; p; p = p->next_all) {
        struct podns *n = ns_by_local(p, ns);
        struct inf_informer *ri = remote_pods(n);
        json_t *home, *remote;
        struct kapi_client *c;
        bool ours;

        c = pu_client(p->env.unit, PU_VK);
        if (!c) {
            /* Without the provider's credential nothing remote is known here: a home pod bound
             * to this node is still this node's, and can be reached once the credential is back
             * (-EAGAIN, the node named for the authorisation). */
            const char *bound;

            home = inf_get(p->home, ns, pod);
            bound = json_string_value(json_object_get(json_object_get(home, "spec"), "nodeName"));
            ours = bound && strcmp(bound, p->node) == 0 && strlen(p->node) < node_size;
            json_decref(home);
            if (!ours)
                continue;
            snprintf(ret_node, node_size, "%s", p->node);
            return -EAGAIN;
        }
        if (!n || !ri)
            continue;
        home = inf_get(p->home, ns, pod);
        remote = home ? inf_get(ri, n->remote, pod) : NULL;
        ours = home && remote && vkp_classify(home, remote, p->home_id) == VKP_OURS;
        json_decref(home);
        json_decref(remote);
        if (!ours)
            continue;
        if (strlen(p->node) >= node_size || strlen(n->remote) >= remote_ns_size ||
            strlen(pod) >= remote_pod_size)
            return -ENAMETOOLONG;
        snprintf(ret_node, node_size, "%s", p->node);
        snprintf(ret_remote_ns, remote_ns_size, "%s", n->remote);
        snprintf(ret_remote_pod, remote_pod_size, "%s", pod);
        *ret_client = c;
        return 0;
    }
    return -ENOENT;
}

int vk_kla_resolve(void *data, const char *ns, const char *pod, struct kla_target *ret)
{
    struct kapi_client *c = NULL;
    int r;

    r = vk_pod_target(data, ns, pod, ret->node, sizeof(ret->node), &c, ret->ns, sizeof(ret->ns),
                      ret->pod, sizeof(ret->pod));
    if (r < 0) {
        /* -EAGAIN: the pod is ours but the provider's credential is not there (yet), ret->node
         * named; -ENAMETOOLONG cannot happen with names the API validated. */
        if (r != -ENOENT)
            log_debug(MOD, "kubelet API: pod %s/%s: no target: %s", ns, pod, strerror(-r));
        return r == -EAGAIN ? -EAGAIN : -ENOENT;
    }
    ret->client = c;
    ret->config = NULL;
    return 0;
}
