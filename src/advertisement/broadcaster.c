/* broadcaster: the provider side of the advertisement protocol (docs/advertisement.md).
 *
 * One logical broadcaster per admitted PeeringRequest, i.e. per consumer: a key (the consumer's
 * cluster ID) in one work queue, reconciled level-triggered. Everything that talks to the consumer
 * goes through the consumer's unit (agent/peers.h) with the credential the consumer handed over in
 * its PeeringRequest (role PU_REQUESTER, installed by the incoming controller).
 *
 * What is shared is a pure function of the node and pod informers (offer/share.h), kept
 * incrementally by the informer handlers. A pass over a consumer:
 *   sharing not allowed (no admitted request, enableBroadcaster false) -> withdraw: delete the
 *     Advertisement and the credential Secret on the consumer, the NamespaceMap and the virtual
 *     kubelet's identity here; record Withdrawn;
 *   else: issue (or find again) the virtual kubelet's identity vk-<id> here -> write its credential
 *     to Secret vk-kubeconfig-secret-<us> on the consumer when it changed -> apply the
 *     Advertisement when it is missing, due, its policy changed or an amount moved by more than the
 *     threshold -> copy the consumer's decision (watched through the unit) into the PeeringRequest
 *     and the ForeignCluster -> requeue at the next refresh.
 * A burst of node or pod events arms a 200 ms timer that compares every consumer's offer with what
 * was last sent.
 *
 * With offerSource Broker (offersource.h), what is offered to consumer C is what the broker's
 * ConfigMap cliqo-broker-offer-<C> says instead of the computation: an informer on the agent's
 * namespace (label cliqo.io/broker-offer=true) enqueues C on every add, update and delete of it,
 * and the pass reads it from the store; absent or invalid, nothing is offered (logged once per
 * change). Node and pod events then move nothing. */
#include "agent/agent.h"
#include "agent/ctl.h"
#include "agent/identity.h"
#include "agent/peers.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "advertisement/advertisement.h"
#include "advertisement/config.h"
#include "advertisement/offersource.h"
#include "offer/share.h"
#include "common/json.h"
#include "common/log.h"
#include "common/slice.h"
#include "common/rfc3339.h"
#include "common/xalloc.h"
#include "kube/backoff.h"
#include "kube/names.h"
#include "kube/podrec.h"
#include "peering/controllers/controllers.h"
#include "peering/identity.h"
#include "peering/objects.h"
#include "peering/resources.h"

#define OWNER          "broadcaster"
#define MOD            "broadcaster"
#define MAX_CONSUMERS  1024
#define CHECK_DELAY_MS 200
#define MAX_IMAGES     64
#define MAX_IMAGE_NAME 512
#define FIELD_MANAGER  "cliqo-broadcaster"
/* The broker's ConfigMaps: listed a few at a time (each may hold up to 1 MiB before the transform
 * trims it), at most this many cached. */
#define OFFERS_PAGE 16
#define MAX_OFFERS  (2 * MAX_CONSUMERS)

struct bcast;

struct consumer {
    struct bcast *m;
    char id[64], name[64];
    char pr_ns[64];     /* its tenant namespace here, where its PeeringRequest lives */
    char remote_ns[64]; /* our tenant namespace on it (the PeeringRequest's spec.namespace) */
    struct pu_unit *unit;
    struct pu_inf *watch; /* our Advertisement on the consumer */
    char *vk_kubeconfig;  /* the virtual kubelet's credential, as last issued */
    uint64_t vk_issued_ms;
    char cred_hash[17]; /* of the credential last written on the consumer */
    bool sent;          /* an Advertisement was applied by this process */
    uint64_t sent_ms;
    struct shr_list last; /* amounts last sent */
    char sig[512];        /* policy last sent */
    char adv_hash[17];    /* credential hash last put on the Advertisement */
    bool withdrawn;       /* withdrawal finished; nothing to do until sharing is allowed again */
    char offer_note[96];  /* the broker's offer as last logged: "<from>:<resourceVersion>" */
    uint64_t withdraw_since_ms;
    struct consumer *next;
};

/* The module's state (agent_module_data "broadcaster"). */
struct bcast {
    struct ctl_module mod; /* first */
    struct inf_informer *nodes, *pods, *prs, *fcs, *config;
    struct inf_informer *offers; /* the broker's ConfigMaps (offersource.h) */
    struct shr_state *shr;
    struct consumer *consumers;
    size_t nconsumers;
    struct adv_config cfg;
    bool cfg_loaded;
    uv_timer_t *check;
    uv_timer_t *flush; /* applies the first list's staged pods in slices (on_pods_synced) */
    bool flushing;     /* until then no offer is computed (counted) */
    /* The node summary for the Advertisement (labels, images, largest allocatable), recomputed
     * when an Advertisement with node details is to be sent and a node changed what it reads
     * (node_gen): in slices, one per loop iteration (sum_timer), from sum_cursor into sum_work; a
     * node added or deleted (node_set_gen) starts the walk again, since the store's slots move. */
    uint64_t node_gen, summary_gen, node_set_gen;
    json_t *labels, *images;
    struct shr_list largest;
    uv_timer_t *sum_timer;
    struct summary *sum_work; /* NULL: no walk in progress */
    size_t sum_cursor;
    uint64_t sum_gen, sum_set_gen; /* node_gen and node_set_gen when the walk began */
    struct metrics_family *m_sends;
};

struct rec {
    struct ctl_rec h; /* first */
    struct bcast *m;
    struct consumer *c;
    json_t *pr; /* the admitted request (a new reference) or NULL */
    struct shr_list offer, limits;
    /* how the offer is sent (struct advsrc_offer) */
    unsigned threshold;
    bool node_details;
    char sig[512];
    int step; /* of the withdrawal */
};

static void rec_release(struct ctl_rec *h)
{
    json_decref(((struct rec *)h)->pr);
}

static void count_send(struct bcast *m, const char *result)
{
    const char *l[2] = {result, NULL};

    metrics_inc(m->m_sends, l);
}

static uint64_t now_ms(struct bcast *m)
{
    return uv_now(agent_loop(m->mod.a));
}

static bool running(struct bcast *m)
{
    return m->mod.ctl && ctl_running(m->mod.ctl);
}

/* ---- consumers --------------------------------------------------------------------------------
 */

static struct consumer *consumer_find(struct bcast *m, const char *id)
{
    for (struct consumer *c = m->consumers; c; c = c->next)
        if (strcmp(c->id, id) == 0)
            return c;
    return NULL;
}

static struct consumer *consumer_ensure(struct bcast *m, const char *id)
{
    struct consumer *c = consumer_find(m, id);

    if (c)
        return c;
    if (m->nconsumers >= MAX_CONSUMERS) {
        log_warn(MOD, "more than %d consumers: not sharing with %s", MAX_CONSUMERS, id);
        return NULL;
    }
    c = x_calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->m = m;
    snprintf(c->id, sizeof(c->id), "%s", id);
    c->next = m->consumers;
    m->consumers = c;
    m->nconsumers++;
    return c;
}

static void wipe_kubeconfig(struct consumer *c)
{
    if (c->vk_kubeconfig) {
        OPENSSL_cleanse(c->vk_kubeconfig, strlen(c->vk_kubeconfig));
        x_free(c->vk_kubeconfig);
    }
    c->vk_kubeconfig = NULL;
    c->vk_issued_ms = 0;
}

static void consumer_detach(struct consumer *c)
{
    pu_informer_close(c->watch);
    c->watch = NULL;
    if (c->unit)
        pu_release(c->unit, OWNER);
    c->unit = NULL;
    wipe_kubeconfig(c);
}

static void consumer_free(struct consumer *c)
{
    struct bcast *m = c->m;

    for (struct consumer **pp = &m->consumers; *pp; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            m->nconsumers--;
            break;
        }
    }
    consumer_detach(c);
    x_free(c);
}

static void enqueue_all(struct bcast *m)
{
    for (struct consumer *c = m->consumers; c; c = c->next)
        ctl_enqueue(m->mod.ctl, c->id);
}

/* ---- the node summary: labels every counted node shares, images, largest allocatable ------------
 */

struct summary {
    bool first;
    json_t *labels, *images;
    struct shr_list largest;
};

static bool node_counted(const json_t *node)
{
    const json_t *labels = json_object_get(json_object_get(node, "metadata"), "labels");
    const char *t1 = json_string_value(json_object_get(labels, PEER_LABEL_TYPE));
    const char *t2 = json_string_value(json_object_get(labels, PEER_LABEL_TYPE_V01));
    size_t i;
    json_t *cond;
    bool ready = false;

    if ((t1 && strcmp(t1, PEER_VIRTUAL_NODE) == 0) || (t2 && strcmp(t2, PEER_VIRTUAL_NODE) == 0))
        return false;
    if (json_is_true(json_object_get(json_object_get(node, "spec"), "unschedulable")))
        return false;
    json_array_foreach(json_object_get(json_object_get(node, "status"), "conditions"), i, cond)
    {
        const char *type = json_string_value(json_object_get(cond, "type"));
        const char *status = json_string_value(json_object_get(cond, "status"));

        if (type && status && strcmp(type, "Ready") == 0)
            ready = strcmp(status, "True") == 0;
    }
    return ready;
}

static void summary_visit(json_t *node, void *data)
{
    struct summary *s = data;
    const json_t *labels = json_object_get(json_object_get(node, "metadata"), "labels");
    const json_t *alloc = json_object_get(json_object_get(node, "status"), "allocatable");
    const char *k;
    json_t *v, *tmp;
    size_t i;

    if (!node_counted(node))
        return;
    if (s->first) {
        s->first = false;
        json_object_foreach((json_t *)labels, k, v)
        {
            if (json_is_string(v) && shr_label_shareable(k))
                json_object_set(s->labels, k, v);
        }
    } else {
        json_object_foreach_safe(s->labels, tmp, k, v)
        {
            const char *mine = json_string_value(json_object_get(labels, k));

            if (!mine || strcmp(mine, json_string_value(v)) != 0)
                json_object_del(s->labels, k);
        }
    }
    json_object_foreach((json_t *)alloc, k, v)
    {
        int64_t amount, cur;
        bool found;

        if (!json_is_string(v) || shr_parse_quantity(k, json_string_value(v), &amount) < 0)
            continue;
        cur = shr_list_get(&s->largest, k, &found);
        if (found && cur >= amount)
            continue;
        for (i = 0; i < s->largest.n; i++)
            if (strcmp(s->largest.items[i].name, k) == 0)
                break;
        if (i == s->largest.n) {
            if (s->largest.n >= SHR_MAX_RESOURCES || strlen(k) >= SHR_NAME_MAX)
                continue;
            snprintf(s->largest.items[i].name, SHR_NAME_MAX, "%s", k);
            s->largest.n++;
        }
        s->largest.items[i].value = amount;
    }
    json_array_foreach(json_object_get(json_object_get(node, "status"), "images"), i, v)
    {
        json_t *names = json_object_get(v, "names"), *n0 = json_array_get(names, 0), *img;
        const char *name = json_string_value(n0);
        size_t j;
        bool dup = false;

        if (json_array_size(s->images) >= MAX_IMAGES || !name || strlen(name) > MAX_IMAGE_NAME)
            continue;
        json_array_foreach(s->images, j, img)
        {
            const char *have = json_string_value(json_array_get(json_object_get(img, "names"), 0));

            if (have && strcmp(have, name) == 0)
                dup = true;
        }
        if (dup)
            continue;
        img = json_pack("{s:[O]}", "names", n0);
        if (img && json_is_integer(json_object_get(v, "sizeBytes")) &&
            json_integer_value(json_object_get(v, "sizeBytes")) >= 0)
            json_object_set(img, "sizeBytes", json_object_get(v, "sizeBytes"));
        if (img)
            json_array_append_new(s->images, img);
    }
}

static bool summary_fresh(const struct bcast *m)
{
    return m->labels && m->summary_gen == m->node_gen;
}

static void summary_work_free(struct bcast *m)
{
    if (!m->sum_work)
        return;
    json_decref(m->sum_work->labels);
    json_decref(m->sum_work->images);
    x_free(m->sum_work);
    m->sum_work = NULL;
}

/* A fresh walk from the first node. 0 or -ENOMEM. */
static int summary_begin(struct bcast *m)
{
    summary_work_free(m);
    m->sum_work = x_calloc(1, sizeof(*m->sum_work));
    if (!m->sum_work)
        return -ENOMEM;
    m->sum_work->first = true;
    m->sum_work->labels = json_object();
    m->sum_work->images = json_array();
    if (!m->sum_work->labels || !m->sum_work->images) {
        summary_work_free(m);
        return -ENOMEM;
    }
    m->sum_cursor = 0;
    m->sum_gen = m->node_gen;
    m->sum_set_gen = m->node_set_gen;
    return 0;
}

/* One slice of the walk, in the loop iteration's shared budget (common/slice.h; 18-22 ms for
 * 5,000 Nodes in one go). Done: the summary is replaced and the consumers queued again. */
static void summary_step(uv_timer_t *t)
{
    struct bcast *m = t->data;
    struct summary *w;
    int r;

    if (!m->sum_work || m->sum_set_gen != m->node_set_gen) {
        if (summary_begin(m) < 0) {
            uv_timer_stop(t);
            log_warn(MOD, "cannot summarise the nodes (out of memory); retried at the next send");
            return;
        }
    }
    r = inf_foreach_slice(m->nodes, &m->sum_cursor, slice_remaining(t->loop), summary_visit,
                          m->sum_work);
    if (r == 0)
        return; /* the timer fires again at the next iteration */
    uv_timer_stop(t);
    w = m->sum_work;
    json_decref(m->labels);
    json_decref(m->images);
    m->labels = w->labels;
    m->images = w->images;
    m->largest = w->largest;
    m->summary_gen = m->sum_gen;
    x_free(w);
    m->sum_work = NULL;
    enqueue_all(m);
}

/* Starts recomputing the summary unless a walk is on its way already. */
static void summary_refresh(struct bcast *m)
{
    if (!uv_is_active((uv_handle_t *)m->sum_timer))
        uv_timer_start(m->sum_timer, summary_step, 0, 1);
}

/* Whether a node update changed what the summary reads: counted or not, labels, allocatable,
 * images. Status heartbeats change none of them, and then no summary is recomputed. */
static bool node_summary_changed(const json_t *old_node, const json_t *node)
{
    const json_t *os = json_object_get(old_node, "status"), *ns = json_object_get(node, "status");

    return node_counted(old_node) != node_counted(node) ||
           !json_equal(json_object_get(json_object_get(old_node, "metadata"), "labels"),
                       json_object_get(json_object_get(node, "metadata"), "labels")) ||
           !json_equal(json_object_get(os, "allocatable"), json_object_get(ns, "allocatable")) ||
           !json_equal(json_object_get(os, "images"), json_object_get(ns, "images"));
}

/* ---- informer handlers ------------------------------------------------------------------------
 */

static void arm_check(struct bcast *m);

static void node_upsert(struct bcast *m, const json_t *obj)
{
    if (shr_node_upsert(m->shr, obj) < 0)
        log_warn(MOD, "node %s not accounted for (out of memory)", kapi_obj_name(obj));
    arm_check(m);
}

static void on_node(struct inf_informer *inf, json_t *obj, void *data)
{
    struct bcast *m = data;

    (void)inf;
    m->node_gen++;
    m->node_set_gen++;
    node_upsert(m, obj);
}

static void on_node_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    struct bcast *m = data;

    (void)inf;
    if (!old_obj || node_summary_changed(old_obj, new_obj))
        m->node_gen++;
    node_upsert(m, new_obj);
}

static void on_node_delete(struct inf_informer *inf, json_t *obj, void *data)
{
    struct bcast *m = data;

    (void)inf;
    shr_node_delete(m->shr, kapi_obj_name(obj));
    m->node_gen++;
    m->node_set_gen++;
    arm_check(m);
}

/* Pods are read from their typed record (kube/podrec.h), extracted by the informer while the object
 * was hot; the tree only when the informer has no record for it (see bcast_init). */
static void on_pod(struct inf_informer *inf, json_t *obj, void *data)
{
    struct bcast *m = data;
    const struct kpod *rec = inf_record(inf, obj);

    if ((rec ? shr_pod_upsert_record(m->shr, rec) : shr_pod_upsert(m->shr, obj)) < 0)
        log_warn(MOD, "pod %s/%s not accounted for (out of memory)", kapi_obj_namespace(obj),
                 kapi_obj_name(obj));
    arm_check(m);
}

static void on_pod_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_pod(inf, new_obj, data);
}

static void on_pod_delete(struct inf_informer *inf, json_t *obj, void *data)
{
    struct bcast *m = data;
    const struct kpod *rec = inf_record(inf, obj);

    if (rec)
        shr_pod_delete(m->shr, kpod_text(rec, rec->ns), kpod_text(rec, rec->name));
    else
        shr_pod_delete(m->shr, kapi_obj_namespace(obj), kapi_obj_name(obj));
    arm_check(m);
}

/* The staged pods are applied (r 1), or could not all be (r < 0). */
static void flushed(struct bcast *m, int r)
{
    m->flushing = false;
    if (r < 0)
        log_warn(MOD, "pods not accounted for yet: %s (retried at the next computation)",
                 strerror(-r));
    log_info(MOD, "accounting for %zu pods on %zu nodes", inf_count(m->pods), inf_count(m->nodes));
    arm_check(m);
}

static void flush_step(uv_timer_t *t)
{
    struct bcast *m = t->data;
    /* The iteration's shared budget (common/slice.h); shr_flush_some applies one pod at least. */
    int r = shr_flush_some(m->shr, slice_remaining(t->loop));

    if (r == 0)
        return; /* the timer fires again at the next iteration */
    uv_timer_stop(t);
    flushed(m, r);
}

/* The first list of pods is in: the pods it staged are applied (share.h, "Staging"), in slices,
 * one per loop iteration in its shared budget (common/slice.h) (150,000 pods take 25-45 ms). Offers
 * are computed only once they are all applied (see counted()), so no consumer is ever sent an offer
 * made before the pods running here were all counted. */
static void on_pods_synced(struct inf_informer *inf, void *data)
{
    struct bcast *m = data;

    (void)inf;
    if (!shr_staging(m->shr)) {
        flushed(m, 1); /* nothing staged: applied already */
        return;
    }
    m->flushing = true;
    if (!uv_is_active((uv_handle_t *)m->flush))
        uv_timer_start(m->flush, flush_step, 0, 1);
}

/* Whether the computation has seen every node and pod once (both informers synced). */
static bool counted(struct bcast *m)
{
    return inf_synced(m->nodes) && inf_synced(m->pods) && !m->flushing;
}

static void on_pr(struct inf_informer *inf, json_t *obj, void *data)
{
    const char *phase = json_string_value(json_object_get(json_object_get(obj, "status"), "phase"));
    const char *id = kapi_obj_name(obj), *ns = kapi_obj_namespace(obj);
    struct bcast *m = data;
    struct consumer *c;

    (void)inf;
    if (!id || !ns || !peer_cluster_id_valid(id))
        return;
    c = consumer_find(m, id);
    if (!c && phase && strcmp(phase, "Accepted") == 0)
        c = consumer_ensure(m, id);
    if (!c)
        return;
    snprintf(c->pr_ns, sizeof(c->pr_ns), "%s", ns);
    ctl_enqueue(m->mod.ctl, id);
}

static void on_pr_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_pr(inf, new_obj, data);
}

static void on_config(struct inf_informer *inf, json_t *obj, void *data)
{
    struct bcast *m = data;
    struct adv_config old = m->cfg;

    (void)inf;
    if (strcmp(kapi_obj_name(obj) ? kapi_obj_name(obj) : "", PEER_CLUSTER_CONFIG) != 0)
        return;
    advcfg_read(obj, &m->cfg);
    if (m->cfg.error[0] && (!m->cfg_loaded || strcmp(old.error, m->cfg.error) != 0))
        log_warn(MOD, "ClusterConfig: %s: offering nothing until it is fixed", m->cfg.error);
    if (m->cfg_loaded && old.offer_source != m->cfg.offer_source && !m->cfg.error[0])
        log_info(MOD, "offer source is now %s", advcfg_offer_source_name(m->cfg.offer_source));
    if (!m->cfg_loaded || old.offer_source != m->cfg.offer_source ||
        old.percent != m->cfg.percent || old.enabled != m->cfg.enabled ||
        old.ttl_s != m->cfg.ttl_s || old.refresh_s != m->cfg.refresh_s ||
        !json_equal(old.per_cluster, m->cfg.per_cluster) ||
        !json_equal(old.prices, m->cfg.prices)) {
        if (m->cfg_loaded)
            log_info(MOD,
                     "sharing configuration changed (percentage %u, broadcaster %s, refresh %us, "
                     "ttl %us, threshold %u%%): re-sending",
                     m->cfg.percent, m->cfg.enabled ? "enabled" : "disabled", m->cfg.refresh_s,
                     m->cfg.ttl_s, m->cfg.threshold);
        enqueue_all(m);
    }
    m->cfg_loaded = true;
    advcfg_done(&old);
}

static void on_config_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_config(inf, new_obj, data);
}

/* A broker's ConfigMap was added, changed or deleted: its consumer looks again (offersource.h). */
static void on_offer(struct inf_informer *inf, json_t *obj, void *data)
{
    struct bcast *m = data;
    const char *id = advsrc_consumer_of(kapi_obj_name(obj));

    (void)inf;
    if (id && m->cfg.offer_source == ADVCFG_OFFER_BROKER && consumer_find(m, id))
        ctl_enqueue(m->mod.ctl, id);
}

static void on_offer_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_offer(inf, new_obj, data);
}

/* Our Advertisement on a consumer changed (its decision) or disappeared: look again. */
static void on_adv(struct inf_informer *inf, json_t *obj, void *data)
{
    struct consumer *c = data;

    (void)inf;
    (void)obj;
    ctl_enqueue(c->m->mod.ctl, c->id);
}

static void on_adv_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_adv(inf, new_obj, data);
}

/* ---- threshold check ---------------------------------------------------------------------------
 */

static void check_moves(uv_timer_t *t)
{
    struct bcast *m = t->data;

    if (!running(m) || !counted(m) || m->cfg.offer_source != ADVCFG_OFFER_CLUSTER)
        return; /* the broker's offer does not move with this cluster's nodes and pods */
    for (struct consumer *c = m->consumers; c; c = c->next) {
        struct shr_list fixed, offer;
        struct shr_policy p;
        char sig[512];

        if (!c->sent)
            continue;
        advcfg_policy_for(&m->cfg, c->id, &p, &fixed, sig, sizeof(sig));
        if (shr_offer(m->shr, c->id, &p, &offer) < 0)
            continue;
        if (shr_list_moved(&c->last, &offer, m->cfg.threshold)) {
            log_debug(MOD, "offer to %s moved by more than %u%%", c->id, m->cfg.threshold);
            ctl_enqueue(m->mod.ctl, c->id);
        }
    }
}

static void arm_check(struct bcast *m)
{
    if (running(m) && m->check && !uv_is_active((uv_handle_t *)m->check))
        uv_timer_start(m->check, check_moves, CHECK_DELAY_MS, 0);
}

/* ---- helpers -----------------------------------------------------------------------------------
 */

static void hash16(const char *s, char out[17])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;

    if (!EVP_Digest(s, strlen(s), md, &n, EVP_sha256(), NULL) || n < 8) {
        snprintf(out, 17, "0000000000000000");
        return;
    }
    for (int i = 0; i < 8; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static json_t *list_to_quantities(const struct shr_list *l)
{
    json_t *o = json_object();
    char buf[64];

    for (size_t i = 0; o && i < l->n; i++)
        if (shr_format_quantity(l->items[i].name, l->items[i].value, buf, sizeof(buf)) > 0)
            json_object_set_new(o, l->items[i].name, json_string(buf));
    return o;
}

/* Merge-patches fc.status.advertisement.sent when it differs. Fire and forget: the next pass
 * writes it again if this one was lost. */
static void on_fc_patched(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    (void)c;
    (void)data;
    if (res->err < 0 && res->err != -ENOENT)
        log_debug(MOD, "cannot update a ForeignCluster's sharing status: %s", res->status.message);
}

static void write_fc_sent(struct bcast *m, const char *id, json_t *sent)
{
    json_t *fc = peer_fc_find(m->fcs, id), *patch;
    json_t *cur =
        json_object_get(json_object_get(json_object_get(fc, "status"), "advertisement"), "sent");
    char *body;
    bool same = true;
    const char *k;
    json_t *v;

    if (!fc) {
        json_decref(sent);
        return;
    }
    json_object_foreach(sent, k, v)
    {
        if (!json_equal(json_object_get(cur, k), v))
            same = false;
    }
    if (same) {
        json_decref(fc);
        json_decref(sent);
        return;
    }
    patch = json_pack("{s:{s:{s:o}}}", "status", "advertisement", "sent", sent);
    body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    if (body)
        kapi_patch(agent_kube(m->mod.a), &peer_res_foreignclusters, NULL, kapi_obj_name(fc),
                   "status", KAPI_PATCH_MERGE, body, on_fc_patched, NULL);
    x_free(body);
    json_decref(patch);
    json_decref(fc);
}

/* ---- withdrawal --------------------------------------------------------------------------------
 */

static void withdraw_step(struct rec *r);

static bool withdraw_timed_out(struct rec *r)
{
    struct bcast *m = r->m;
    json_t *cc = inf_get(m->config, NULL, PEER_CLUSTER_CONFIG);
    json_int_t secs = json_integer_value(json_object_get(
        json_object_get(json_object_get(cc, "spec"), "peeringConfig"), "unpeerTimeoutSeconds"));

    json_decref(cc);
    if (secs <= 0 || secs > 3600)
        secs = 30;
    return now_ms(m) - r->c->withdraw_since_ms >= (uint64_t)secs * 1000;
}

static void after_withdraw_call(void *owner)
{
    struct rec *r = owner;

    if (r->h.ch.last.err < 0 && r->h.ch.last.err != -ENOENT) {
        if (r->c->unit && !withdraw_timed_out(r)) {
            log_warn(MOD, "withdrawing from %s: %s (retrying)", r->c->id, r->h.ch.last.message);
            ctl_rec_end(&r->h, CTL_RETRY);
            return;
        }
        log_warn(MOD, "withdrawing from %s: %s; giving up on the consumer's side", r->c->id,
                 r->h.ch.last.message);
        consumer_detach(r->c); /* no client: the remaining steps are local */
    }
    withdraw_step(r);
}

static int delete_local(struct rec *r, const struct kapi_resource *res, const char *name)
{
    r->h.ch.next = after_withdraw_call;
    return kapi_delete(agent_kube(r->m->mod.a), res, r->c->pr_ns, name, NULL, ctl_call_cb, r);
}

/* One deletion per step, in order; each is idempotent (NotFound is success). */
static void withdraw_step(struct rec *r)
{
    struct bcast *m = r->m;
    struct consumer *c = r->c;
    struct kapi_client *remote = pu_client(c->unit, PU_REQUESTER);
    char name[128];
    json_t *sent;

    switch (r->step++) {
    case 0: /* the Advertisement on the consumer */
        if (remote && c->remote_ns[0]) {
            snprintf(name, sizeof(name), PEER_ADV_PREFIX "%s", identity_cluster_id(m->mod.a));
            r->h.ch.next = after_withdraw_call;
            if (kapi_delete(remote, &peer_res_advertisements, c->remote_ns, name, NULL, ctl_call_cb,
                            r) == 0)
                return;
        }
        /* fall through */
    case 1: /* the credential Secret on the consumer */
        r->step = 2;
        if (remote && c->remote_ns[0]) {
            snprintf(name, sizeof(name), PEER_VK_SECRET_PREFIX "%s", identity_cluster_id(m->mod.a));
            r->h.ch.next = after_withdraw_call;
            if (kapi_delete(remote, &kapi_secrets, c->remote_ns, name, NULL, ctl_call_cb, r) == 0)
                return;
        }
        /* fall through */
    case 2: /* the namespaces made for the consumer (the NamespaceMap's finalizer deletes them) */
        r->step = 3;
        if (c->pr_ns[0] && delete_local(r, &peer_res_namespacemaps, c->id) == 0)
            return;
        /* fall through */
    case 3: /* the virtual kubelet's identity: its ServiceAccount, token and binding */
        r->step = 4;
        snprintf(name, sizeof(name), PEER_VK_SA_PREFIX "%s", c->id);
        if (c->pr_ns[0] && delete_local(r, &kapi_serviceaccounts, name) == 0)
            return;
        /* fall through */
    case 4:
        r->step = 5;
        snprintf(name, sizeof(name), PEER_VK_SA_PREFIX "%s-token", c->id);
        if (c->pr_ns[0] && delete_local(r, &kapi_secrets, name) == 0)
            return;
        /* fall through */
    case 5:
        r->step = 6;
        if (c->pr_ns[0] && delete_local(r, &peer_res_rolebindings, PEER_VK_TENANT_ROLE) == 0)
            return;
        /* fall through */
    default:
        break;
    }
    log_info(MOD, "stopped sharing with %s: Advertisement withdrawn, credential revoked", c->id);
    sent = json_pack("{s:s,s:s,s:s}", "status", "Withdrawn", "reason",
                     m->cfg.enabled ? "PeeringEnded" : "SharingDisabled", "message",
                     m->cfg.enabled ? "the peering request is gone or no longer admitted"
                                    : "enableBroadcaster is false");
    if (sent)
        write_fc_sent(m, c->id, sent);
    consumer_detach(c);
    c->sent = false;
    c->cred_hash[0] = c->adv_hash[0] = '\0';
    c->withdrawn = true;
    if (!r->pr) {
        consumer_free(c);
        r->c = NULL;
    }
    ctl_rec_end(&r->h, CTL_DONE);
}

static void withdraw(struct rec *r)
{
    struct bcast *m = r->m;

    if (r->c->withdrawn) {
        if (!r->pr)
            consumer_free(r->c);
        ctl_rec_end(&r->h, CTL_DONE);
        return;
    }
    if (!r->c->withdraw_since_ms)
        r->c->withdraw_since_ms = now_ms(m);
    r->step = 0;
    withdraw_step(r);
}

/* ---- sharing -----------------------------------------------------------------------------------
 */

static void mirror_status(struct rec *r);

static json_t *remote_adv(struct consumer *c)
{
    char name[128];

    snprintf(name, sizeof(name), PEER_ADV_PREFIX "%s", identity_cluster_id(c->m->mod.a));
    return inf_get(pu_inf_get(c->watch), c->remote_ns, name);
}

static void after_status_patch(void *owner)
{
    struct rec *r = owner;

    if (r->h.ch.last.err < 0 && r->h.ch.last.err != -ENOENT)
        log_debug(MOD, "cannot copy the decision of %s: %s", r->c->id, r->h.ch.last.message);
    mirror_status(r);
}

/* The consumer's decision, into the PeeringRequest's status and the ForeignCluster's. */
static void mirror_status(struct rec *r)
{
    struct bcast *m = r->m;
    struct consumer *c = r->c;
    json_t *adv = remote_adv(c), *prs = json_object_get(r->pr, "status"), *sent;
    json_t *as = json_object_get(adv, "status");
    const char *status = jsn_str_or_empty(as, "advertisementStatus");
    const char *reason = jsn_str_or_empty(as, "reason");
    const char *msg = jsn_str_or_empty(as, "message");
    uint64_t due;

    if (adv && json_is_object(prs) &&
        (strcmp(status, jsn_str_or_empty(prs, "advertisementStatus")) != 0 ||
         strcmp(reason, jsn_str_or_empty(prs, "advertisementReason")) != 0)) {
        json_t *patch = json_pack("{s:{s:s,s:s,s:s}}", "status", "advertisementStatus", status,
                                  "advertisementReason", reason, "advertisementMessage", msg);
        char *body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;

        json_decref(patch);
        log_info(MOD, "consumer %s: our Advertisement is %s%s%s%s", c->id,
                 *status ? status : "pending", *reason ? " (" : "", reason, *reason ? ")" : "");
        /* Our local copy says what we wrote: this pass goes on from there. */
        json_object_set_new(prs, "advertisementStatus", json_string(status));
        json_object_set_new(prs, "advertisementReason", json_string(reason));
        r->h.ch.next = after_status_patch;
        if (body && kapi_patch(agent_kube(m->mod.a), &peer_res_peeringrequests, c->pr_ns, c->id,
                               "status", KAPI_PATCH_MERGE, body, ctl_call_cb, r) == 0) {
            x_free(body);
            json_decref(adv);
            return;
        }
        x_free(body);
    }
    if (adv) {
        sent = json_pack("{s:s,s:s,s:s}", "status", status, "reason", reason, "message", msg);
        if (sent)
            write_fc_sent(m, c->id, sent);
    }
    json_decref(adv);
    due = c->sent_ms + (uint64_t)m->cfg.refresh_s * 1000;
    ctl_rec_end_after(&r->h, due > now_ms(m) ? (uint32_t)(due - now_ms(m)) : 0);
}

static void after_apply(void *owner)
{
    struct rec *r = owner;
    struct bcast *m = r->m;
    struct consumer *c = r->c;
    char now[32];
    json_t *sent;

    if (r->h.ch.last.err < 0) {
        count_send(m, "error");
        log_warn(MOD, "cannot write the Advertisement on %s: %s", c->id, r->h.ch.last.message);
        ctl_rec_end(&r->h, CTL_BACKOFF);
        return;
    }
    count_send(m, "ok");
    ctl_forget(r->h.ctl, r->h.key);
    if (!c->sent || shr_list_moved(&c->last, &r->offer, 0))
        log_info(MOD, "Advertisement sent to %s (%s, %zu resources)", c->id, r->sig, r->offer.n);
    c->sent = true;
    c->sent_ms = now_ms(m);
    c->last = r->offer;
    snprintf(c->sig, sizeof(c->sig), "%s", r->sig);
    snprintf(c->adv_hash, sizeof(c->adv_hash), "%s", c->cred_hash);
    rfc3339_now(0, now, sizeof(now));
    sent = json_pack("{s:s,s:o}", "lastSent", now, "resources", list_to_quantities(&r->offer));
    if (sent)
        write_fc_sent(m, c->id, sent);
    mirror_status(r);
}

static void send_advertisement(struct rec *r)
{
    struct bcast *m = r->m;
    struct consumer *c = r->c;
    struct kapi_client *remote = pu_client(c->unit, PU_REQUESTER);
    char name[128], secret[128], ts[32], ttl[32];
    int64_t now = (int64_t)time(NULL);
    json_t *adv, *spec, *hard, *max;

    if (r->node_details) {
        for (size_t i = 0; i < m->largest.n; i++) {
            bool found;
            int64_t offered = shr_list_get(&r->offer, m->largest.items[i].name, &found);
            struct shr_amount a = m->largest.items[i];

            if (!found)
                continue;
            if (offered < a.value)
                a.value = offered;
            r->limits.items[r->limits.n++] = a;
        }
    } else {
        r->limits = r->offer; /* the pods run elsewhere: no pod larger than the whole offer */
    }
    snprintf(name, sizeof(name), PEER_ADV_PREFIX "%s", identity_cluster_id(m->mod.a));
    snprintf(secret, sizeof(secret), PEER_VK_SECRET_PREFIX "%s", identity_cluster_id(m->mod.a));
    rfc3339_format(now, 0, 0, ts, sizeof(ts));
    rfc3339_format(now + (int64_t)m->cfg.ttl_s, 0, 0, ttl, sizeof(ttl));
    hard = list_to_quantities(&r->offer);
    max = list_to_quantities(&r->limits);
    adv =
        json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s},s:{s:s}},s:{s:s,s:{s:o},s:{s:[{s:s,s:o}]},"
                  "s:{s:s,s:s},s:s,s:s}}",
                  "apiVersion", "sharing.liqo.io/v1alpha1", "kind", "Advertisement", "metadata",
                  "name", name, "namespace", c->remote_ns, "labels", PEER_LABEL_CLUSTER_ID,
                  identity_cluster_id(m->mod.a), "annotations", PEER_ANNOT_CRED_HASH, c->cred_hash,
                  "spec", "clusterId", identity_cluster_id(m->mod.a), "resourceQuota", "hard", hard,
                  "limitRange", "limits", "type", "Pod", "max", max, "kubeConfigRef", "name",
                  secret, "namespace", c->remote_ns, "timestamp", ts, "timeToLive", ttl);
    spec = r->node_details ? json_object_get(adv, "spec") : NULL;
    if (spec && m->labels && json_object_size(m->labels))
        json_object_set(spec, "labels", m->labels);
    if (spec && m->images && json_array_size(m->images))
        json_object_set(spec, "images", m->images);
    spec = json_object_get(adv, "spec");
    if (spec && m->cfg.prices)
        json_object_set(spec, "prices", m->cfg.prices);
    r->h.ch.next = after_apply;
    if (!adv || kapi_apply(remote, &peer_res_advertisements, c->remote_ns, name, NULL, adv,
                           FIELD_MANAGER, true, ctl_call_cb, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
    json_decref(adv);
}

/* Logs the state of the broker's offer to c once per change (of state or of the ConfigMap). */
static void note_broker_offer(struct consumer *c, enum advsrc_from from, const json_t *cm,
                              const char *err)
{
    const char *rv = kapi_obj_rv(cm);
    char note[sizeof(c->offer_note)], name[128];

    snprintf(note, sizeof(note), "%s:%.63s", advsrc_from_name(from), rv ? rv : "");
    if (strcmp(note, c->offer_note) == 0)
        return;
    snprintf(c->offer_note, sizeof(c->offer_note), "%s", note);
    if (advsrc_name(c->id, name, sizeof(name)) < 0)
        name[0] = '\0';
    if (from == ADVSRC_FROM_BROKER_INVALID)
        log_warn(MOD, "broker offer for %s (ConfigMap %s) is invalid: %s; offering nothing", c->id,
                 name, err);
    else if (from == ADVSRC_FROM_BROKER_ABSENT)
        log_info(MOD, "no broker offer for %s yet (ConfigMap %s labelled %s): offering nothing",
                 c->id, name, ADVSRC_LABEL_SELECTOR);
    else if (from == ADVSRC_FROM_BROKER)
        log_debug(MOD, "broker offer for %s: ConfigMap %s, resourceVersion %s", c->id, name,
                  rv ? rv : "?");
}

/* What to offer c now (offersource.h): this cluster's share, or the broker's, into r. False when
 * the pass must end instead, as *ret_how says (the inputs are not all there yet, out of memory). */
static bool choose_offer(struct rec *r, enum ctl_requeue *ret_how)
{
    struct bcast *m = r->m;
    struct consumer *c = r->c;
    struct shr_list fixed, computed;
    struct shr_policy p;
    struct advsrc_offer chosen;
    json_t *cm = NULL;
    char name[128], err[256];
    int rc;

    *ret_how = CTL_WAIT;
    if (m->cfg.offer_source == ADVCFG_OFFER_CLUSTER) {
        if (!counted(m))
            return false; /* the nodes and pods running here are not all counted yet */
        if (advcfg_policy_for(&m->cfg, c->id, &p, &fixed, r->sig, sizeof(r->sig)) < 0)
            log_warn(MOD, "perCluster entry of %s is invalid: using the global percentage", c->id);
        *ret_how = CTL_RETRY;
        if (shr_offer(m->shr, c->id, &p, &computed) < 0)
            return false;
    } else if (m->cfg.offer_source == ADVCFG_OFFER_BROKER) {
        if (!inf_synced(m->offers))
            return false; /* absent means nothing only once the list is in */
        if (advsrc_name(c->id, name, sizeof(name)) == 0)
            cm = inf_get(m->offers, agent_namespace(m->mod.a), name);
    }
    rc = advsrc_choose(m->cfg.offer_source, m->cfg.threshold,
                       m->cfg.offer_source == ADVCFG_OFFER_CLUSTER ? &computed : NULL, cm, &chosen,
                       err, sizeof(err));
    if (rc == 0 && m->cfg.offer_source == ADVCFG_OFFER_BROKER)
        note_broker_offer(c, chosen.from, cm, err);
    json_decref(cm);
    if (rc < 0) {
        *ret_how = CTL_RETRY;
        return false;
    }
    if (chosen.from != ADVSRC_FROM_CLUSTER)
        snprintf(r->sig, sizeof(r->sig), "%s", advsrc_from_name(chosen.from));
    r->offer = chosen.amounts;
    r->threshold = chosen.threshold;
    r->node_details = chosen.node_details;
    return true;
}

static void share_advertisement(struct rec *r)
{
    struct bcast *m = r->m;
    struct consumer *c = r->c;
    json_t *adv;
    bool synced = inf_synced(pu_inf_get(c->watch)), need;
    const char *why = NULL;
    enum ctl_requeue how;

    if (!choose_offer(r, &how)) {
        ctl_rec_end(&r->h, how);
        return;
    }
    if (!synced) {
        ctl_rec_end(&r->h, CTL_WAIT); /* first learn whether it is already there */
        return;
    }
    adv = remote_adv(c);
    if (!c->sent)
        why = "first";
    else if (!adv)
        why = "missing on the consumer";
    else if (strcmp(c->sig, r->sig) != 0)
        why = "policy changed";
    else if (strcmp(c->adv_hash, c->cred_hash) != 0)
        why = "credential changed";
    else if (shr_list_moved(&c->last, &r->offer, r->threshold))
        why = "amounts moved";
    else if (now_ms(m) >= c->sent_ms + (uint64_t)m->cfg.refresh_s * 1000)
        why = "refresh";
    need = why != NULL;
    json_decref(adv);
    if (!need) {
        mirror_status(r);
        return;
    }
    if (r->node_details && !summary_fresh(m)) {
        /* The nodes are summarised first, over a few loop iterations; the walk queues every
         * consumer again when it is done (and the wait retries). */
        summary_refresh(m);
        ctl_rec_end(&r->h, CTL_WAIT);
        return;
    }
    log_info(MOD, "sending the Advertisement to %s: %s", c->id, why);
    send_advertisement(r);
}

static void after_secret(void *owner)
{
    struct rec *r = owner;

    if (r->h.ch.last.err < 0) {
        log_warn(MOD, "cannot write the virtual kubelet's credential on %s: %s", r->c->id,
                 r->h.ch.last.message);
        ctl_rec_end(&r->h, CTL_BACKOFF);
        return;
    }
    hash16(r->c->vk_kubeconfig, r->c->cred_hash);
    share_advertisement(r);
}

static void share_secret(struct rec *r)
{
    struct bcast *m = r->m;
    struct consumer *c = r->c;
    char h[17], name[128];
    json_t *sec;

    hash16(c->vk_kubeconfig, h);
    if (strcmp(h, c->cred_hash) == 0) {
        share_advertisement(r);
        return;
    }
    snprintf(name, sizeof(name), PEER_VK_SECRET_PREFIX "%s", identity_cluster_id(m->mod.a));
    sec = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s}}", "apiVersion", "v1", "kind", "Secret",
                    "metadata", "name", name, "namespace", c->remote_ns, "labels",
                    PEER_LABEL_CLUSTER_ID, identity_cluster_id(m->mod.a), "stringData",
                    "kubeconfig", c->vk_kubeconfig);
    r->h.ch.next = after_secret;
    if (!sec || kapi_apply(pu_client(c->unit, PU_REQUESTER), &kapi_secrets, c->remote_ns, name,
                           NULL, sec, FIELD_MANAGER, true, ctl_call_cb, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
    json_decref(sec);
}

static void on_vk_credential(int err, const char *message, const char *ns, const char *kubeconfig,
                             void *data)
{
    struct rec *r = data;
    struct bcast *m = r->m;

    (void)ns;
    /* The agent stops: nothing failed, the next leader goes on. */
    if (err == -ECANCELED) {
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    if (err < 0) {
        log_warn(MOD, "cannot issue the virtual kubelet's identity for %s: %s", r->c->id, message);
        ctl_rec_end(&r->h, CTL_BACKOFF);
        return;
    }
    wipe_kubeconfig(r->c);
    r->c->vk_kubeconfig = x_strdup(kubeconfig);
    if (!r->c->vk_kubeconfig) {
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    r->c->vk_issued_ms = now_ms(m);
    share_secret(r);
}

static void share(struct rec *r)
{
    struct bcast *m = r->m;
    struct consumer *c = r->c;
    const char *rns =
        json_string_value(json_object_get(json_object_get(r->pr, "spec"), "namespace"));
    const char *name = json_string_value(json_object_get(
        json_object_get(json_object_get(r->pr, "spec"), "clusterIdentity"), "clusterName"));
    int rc;

    c->withdrawn = false;
    c->withdraw_since_ms = 0;
    if (!c->unit && (rc = pu_acquire(agent_peers(m->mod.a), c->id, OWNER, &c->unit)) < 0) {
        log_warn(MOD, "cannot open the unit of %s: %s", c->id, strerror(-rc));
        ctl_rec_end(&r->h, CTL_RETRY);
        return;
    }
    if (!pu_client(c->unit, PU_REQUESTER)) {
        /* the incoming controller installs it once the request is admitted */
        ctl_rec_end(&r->h, CTL_WAIT);
        return;
    }
    if (!rns || !kname_dns_label(rns)) {
        log_warn(MOD, "PeeringRequest of %s has no valid spec.namespace", c->id);
        ctl_rec_end(&r->h, CTL_DONE);
        return;
    }
    snprintf(c->name, sizeof(c->name), "%s", name && kname_dns_label(name) ? name : c->id);
    if (strcmp(c->remote_ns, rns) != 0 || !c->watch) {
        struct inf_options o = {.resource = &peer_res_advertisements, .namespace_ = rns};
        struct inf_handlers h = {.on_add = on_adv, .on_update = on_adv_update, .on_delete = on_adv};
        char fs[192];

        pu_informer_close(c->watch);
        c->watch = NULL;
        snprintf(c->remote_ns, sizeof(c->remote_ns), "%s", rns);
        snprintf(fs, sizeof(fs), "metadata.name=" PEER_ADV_PREFIX "%s",
                 identity_cluster_id(m->mod.a));
        o.field_selector = fs;
        rc = pu_informer(c->unit, PU_REQUESTER, &o, &h, c, &c->watch);
        if (rc < 0) {
            log_warn(MOD, "cannot watch our Advertisement on %s: %s", c->id, strerror(-rc));
            ctl_rec_end(&r->h, CTL_RETRY);
            return;
        }
    }
    if (c->vk_kubeconfig && now_ms(m) - c->vk_issued_ms < (uint64_t)m->cfg.refresh_s * 1000) {
        share_secret(r);
        return;
    }
    if (peer_issue_credential_kind(m->mod.a, PEER_CRED_VK, c->id, c->name, c->pr_ns,
                                   on_vk_credential, r) < 0)
        ctl_rec_end(&r->h, CTL_RETRY);
}

/* ---- reconcile ---------------------------------------------------------------------------------
 */

static void reconcile(struct ctl *ctl, const char *key)
{
    struct bcast *m = ctl_data(ctl);
    struct consumer *c = consumer_find(m, key);
    struct rec *r;
    const char *phase;
    bool want;

    if (!c || !identity_cluster_id(m->mod.a) || !m->cfg_loaded) {
        ctl_skip(ctl, key, c ? CTL_WAIT : CTL_DONE);
        return;
    }
    r = (struct rec *)ctl_rec_begin(ctl, key);
    if (!r)
        return;
    r->m = m;
    r->c = c;
    if (c->pr_ns[0]) {
        json_t *cached = inf_get(m->prs, c->pr_ns, c->id);

        r->pr = cached ? json_deep_copy(cached) : NULL;
        json_decref(cached);
    }
    if (r->pr && json_object_get(json_object_get(r->pr, "metadata"), "deletionTimestamp")) {
        json_decref(r->pr);
        r->pr = NULL;
    }
    phase = json_string_value(json_object_get(json_object_get(r->pr, "status"), "phase"));
    want = r->pr && phase && strcmp(phase, "Accepted") == 0 && m->cfg.enabled;
    if (!want)
        withdraw(r);
    else
        share(r);
}

/* ---- module -------------------------------------------------------------------------------------
 */

/* The amounts of the Advertisement this process last sent consumer `id` (read-only, for the offer
 * enforcement) and the consumer's cluster name (may be NULL). Returns 0, or -ENOENT when this
 * process sent none since it started or since the last withdrawal (a standby replica, a consumer
 * whose sharing was withdrawn). */
static int bcast_last_offer(struct agent *a, const char *id, struct shr_list *ret, char *name,
                            size_t namelen);

int bcast_init(struct agent *a)
{
    static const char *const send_labels[] = {"result", NULL};
    struct inf_handlers nh = {
        .on_add = on_node, .on_update = on_node_update, .on_delete = on_node_delete};
    struct inf_handlers ph = {.on_add = on_pod,
                              .on_update = on_pod_update,
                              .on_delete = on_pod_delete,
                              .on_synced = on_pods_synced};
    struct inf_handlers rh = {.on_add = on_pr, .on_update = on_pr_update, .on_delete = on_pr};
    struct inf_handlers ch = {.on_add = on_config, .on_update = on_config_update};
    struct inf_handlers oh = {
        .on_add = on_offer, .on_update = on_offer_update, .on_delete = on_offer};
    /* The first list from the API server's watch cache, as client-go's reflectors read it: this
     * module writes no pods, so nothing it did can be missing from the cache's copy, and the watch
     * brings whatever the cache had not yet seen. On 150,000 pods it is the difference between a
     * consistent read paged from etcd and one response (bench/README.md, agent-startup). Shared
     * with admission's registration, which asks the same. */
    struct inf_options po = {
        .resource = &kapi_pods, .transform = shr_pod_transform, .list_from_cache = true};
    /* Records for the handlers only: the state keeps what it needs of each pod (its contribution),
     * so a record per cached pod would only cost memory (366 bytes per pod, bench/README.md). */
    const struct inf_extractor px = {kpod_extract, &shr_pod_record_options, true};
    struct inf_options oo = {.resource = &kapi_configmaps,
                             .namespace_ = agent_namespace(a),
                             .label_selector = ADVSRC_LABEL_SELECTOR,
                             .page_size = OFFERS_PAGE,
                             .max_objects = MAX_OFFERS,
                             .transform = advsrc_transform};
    struct ctl_options co = {.name = "broadcaster",
                             .log_module = MOD,
                             .queue = {.max_concurrent = 64, .base_delay_ms = 500},
                             .rec_size = sizeof(struct rec),
                             .reconcile = reconcile,
                             .rec_release = rec_release,
                             .wait_ms = 500};
    struct bcast *m = ctl_module_new(a, MOD, sizeof(*m));
    int r, x;

    if (!m)
        return -ENOMEM;
    agent_set_last_offer(a, bcast_last_offer); /* for the offer check of admission */
    advcfg_read(NULL, &m->cfg);
    r = shr_new(&m->shr);
    if (r == 0)
        r = agent_informer(a, &kapi_nodes, NULL, NULL, 0, &nh, m, &m->nodes);
    if (r == 0)
        r = agent_informer_ex(a, &po, 0, &ph, m, &m->pods);
    if (r == 0 && (x = inf_set_extractor(m->pods, &px)) < 0) /* shared, set otherwise: trees */
        log_debug(MOD, "pods read from their objects: no records (%s)", strerror(-x));
    if (r == 0)
        r = agent_informer(a, &peer_res_peeringrequests, NULL, NULL, 0, &rh, m, &m->prs);
    if (r == 0)
        r = agent_informer(a, &peer_res_foreignclusters, NULL, NULL, 0, NULL, NULL, &m->fcs);
    if (r == 0)
        r = agent_informer(a, &peer_res_clusterconfigs, NULL, NULL, 0, &ch, m, &m->config);
    if (r == 0) /* watched whatever the offer source, so that a switch to Broker finds them */
        r = agent_informer_ex(a, &oo, 0, &oh, m, &m->offers);
    if (r == 0)
        r = ctl_new(a, &co, m, &m->mod.ctl);
    if (r == 0)
        r = metrics_family_new(
            agent_metrics(a), METRICS_COUNTER, "cliqo_broadcaster_advertisements_sent_total",
            "Advertisements written on consumers, by result.", send_labels, NULL, 0, &m->m_sends);
    if (r == 0 && !(m->flush = ktimer_new(agent_loop(a), m)))
        r = -ENOMEM;
    if (r == 0 && !(m->sum_timer = ktimer_new(agent_loop(a), m)))
        r = -ENOMEM;
    if (r == 0 && !(m->check = ktimer_new(agent_loop(a), m)))
        r = -ENOMEM;
    return r;
}

int bcast_start(struct agent *a)
{
    return ctl_module_start(a, MOD);
}

void bcast_stop(struct agent *a)
{
    struct bcast *m = agent_module_data(a, MOD);

    ctl_module_stop(a, MOD);
    if (m && m->check)
        uv_timer_stop(m->check);
    if (m && m->flush)
        uv_timer_stop(m->flush);
    if (m && m->sum_timer)
        uv_timer_stop(m->sum_timer);
    if (m)
        m->flushing = false; /* what is left stays staged: the next query flushes it */
}

void bcast_fini(struct agent *a)
{
    struct bcast *m = agent_module_data(a, MOD);

    if (!m)
        return;
    while (m->consumers)
        consumer_free(m->consumers);
    ktimer_free(m->check);
    ktimer_free(m->flush);
    ktimer_free(m->sum_timer);
    summary_work_free(m);
    m->shr = shr_free(m->shr);
    json_decref(m->labels);
    json_decref(m->images);
    advcfg_done(&m->cfg);
    ctl_module_fini(a, MOD);
}

/* For bench/ and tests: the computation state the informer handlers feed. */
struct shr_state *bcast_state(struct agent *a)
{
    struct bcast *m = agent_module_data(a, MOD);

    return m ? m->shr : NULL;
}

/* For the offer enforcement (src/admission/): what this process last sent the consumer. */
static int bcast_last_offer(struct agent *a, const char *id, struct shr_list *ret, char *name,
                            size_t namelen)
{
    struct bcast *m = agent_module_data(a, MOD);
    struct consumer *c = m && id ? consumer_find(m, id) : NULL;

    if (!c || !c->sent || c->withdrawn || !ret)
        return -ENOENT;
    *ret = c->last;
    if (name && namelen)
        snprintf(name, namelen, "%s", c->name[0] ? c->name : c->id);
    return 0;
}
