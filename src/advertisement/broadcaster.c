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
 * was last sent. */
#include "agent/agent.h"
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
#include "offer/share.h"
#include "common/json.h"
#include "common/log.h"
#include "common/rfc3339.h"
#include "common/xalloc.h"
#include "kube/backoff.h"
#include "kube/names.h"
#include "peering/controllers/controllers.h"
#include "peering/identity.h"
#include "peering/objects.h"
#include "peering/resources.h"

#define OWNER          "broadcaster"
#define MOD            "broadcaster"
#define MAX_CONSUMERS  1024
#define CHECK_DELAY_MS 200
#define RETRY_MS       1000
#define WAIT_MS        500
#define MAX_IMAGES     64
#define MAX_IMAGE_NAME 512
#define FIELD_MANAGER  "cliqo-broadcaster"

struct consumer {
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
    uint64_t withdraw_since_ms;
    struct consumer *next;
};

static struct {
    struct agent *a;
    struct inf_informer *nodes, *pods, *prs, *fcs, *config;
    struct wq_queue *q;
    struct shr_state *shr;
    struct consumer *consumers;
    size_t nconsumers;
    struct adv_config cfg;
    bool cfg_loaded;
    uv_timer_t *check;
    bool running;
    /* node summary for the Advertisement, recomputed lazily after node events */
    uint64_t node_gen, summary_gen;
    json_t *labels, *images;
    struct shr_list largest;
    struct metrics_family *m_sends;
} st;

struct rec {
    struct ctl_call_chain ch; /* first */
    char key[64];
    struct consumer *c;
    json_t *pr; /* the admitted request (a new reference) or NULL */
    struct shr_list offer, limits;
    char sig[512];
    int requeue_ms;
};

static void rec_end(struct rec *r, int requeue_ms)
{
    if (st.q) {
        if (requeue_ms >= 0)
            wq_add_after(st.q, r->key, (uint64_t)requeue_ms);
        wq_done(st.q, r->key);
    }
    json_decref(r->pr);
    ctl_call_reset(&r->ch.last);
    x_free(r);
}

/* Ends with a retry after the key's exponential backoff (per consumer). */
static void rec_fail(struct rec *r)
{
    if (st.q)
        wq_add_rate_limited(st.q, r->key);
    rec_end(r, -1);
}

static void count_send(const char *result)
{
    const char *l[2] = {result, NULL};

    metrics_inc(st.m_sends, l);
}

static uint64_t now_ms(void)
{
    return uv_now(agent_loop(st.a));
}

/* ---- consumers --------------------------------------------------------------------------------
 */

static struct consumer *consumer_find(const char *id)
{
    for (struct consumer *c = st.consumers; c; c = c->next)
        if (strcmp(c->id, id) == 0)
            return c;
    return NULL;
}

static struct consumer *consumer_ensure(const char *id)
{
    struct consumer *c = consumer_find(id);

    if (c)
        return c;
    if (st.nconsumers >= MAX_CONSUMERS) {
        log_warn(MOD, "more than %d consumers: not sharing with %s", MAX_CONSUMERS, id);
        return NULL;
    }
    c = x_calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    snprintf(c->id, sizeof(c->id), "%s", id);
    c->next = st.consumers;
    st.consumers = c;
    st.nconsumers++;
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
    for (struct consumer **pp = &st.consumers; *pp; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            st.nconsumers--;
            break;
        }
    }
    consumer_detach(c);
    x_free(c);
}

static void enqueue_all(void)
{
    for (struct consumer *c = st.consumers; c; c = c->next)
        if (st.q)
            wq_add(st.q, c->id);
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

static void refresh_summary(void)
{
    struct summary s = {.first = true};

    if (st.labels && st.summary_gen == st.node_gen)
        return;
    s.labels = json_object();
    s.images = json_array();
    if (!s.labels || !s.images) {
        json_decref(s.labels);
        json_decref(s.images);
        return;
    }
    inf_foreach(st.nodes, summary_visit, &s);
    json_decref(st.labels);
    json_decref(st.images);
    st.labels = s.labels;
    st.images = s.images;
    st.largest = s.largest;
    st.summary_gen = st.node_gen;
}

/* ---- informer handlers ------------------------------------------------------------------------
 */

static void arm_check(void);

static void on_node(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    (void)data;
    if (shr_node_upsert(st.shr, obj) < 0)
        log_warn(MOD, "node %s not accounted for (out of memory)", kapi_obj_name(obj));
    st.node_gen++;
    arm_check();
}

static void on_node_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_node(inf, new_obj, data);
}

static void on_node_delete(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    (void)data;
    shr_node_delete(st.shr, kapi_obj_name(obj));
    st.node_gen++;
    arm_check();
}

static void on_pod(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    (void)data;
    if (shr_pod_upsert(st.shr, obj) < 0)
        log_warn(MOD, "pod %s/%s not accounted for (out of memory)", kapi_obj_namespace(obj),
                 kapi_obj_name(obj));
    arm_check();
}

static void on_pod_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_pod(inf, new_obj, data);
}

static void on_pod_delete(struct inf_informer *inf, json_t *obj, void *data)
{
    (void)inf;
    (void)data;
    shr_pod_delete(st.shr, kapi_obj_namespace(obj), kapi_obj_name(obj));
    arm_check();
}

/* The first list of pods is in: the pods it staged are applied (share.h, "Staging"). Offers are
 * computed only from now on (see counted()), so no consumer is ever sent an offer made before the
 * pods running here were all counted. */
static void on_pods_synced(struct inf_informer *inf, void *data)
{
    int r;

    (void)data;
    r = shr_flush(st.shr);
    if (r < 0)
        log_warn(MOD, "pods not accounted for yet: %s (retried at the next computation)",
                 strerror(-r));
    log_info(MOD, "accounting for %zu pods on %zu nodes", inf_count(inf), inf_count(st.nodes));
    arm_check();
}

/* Whether the computation has seen every node and pod once (both informers synced). */
static bool counted(void)
{
    return inf_synced(st.nodes) && inf_synced(st.pods);
}

static void on_pr(struct inf_informer *inf, json_t *obj, void *data)
{
    const char *phase = json_string_value(json_object_get(json_object_get(obj, "status"), "phase"));
    const char *id = kapi_obj_name(obj), *ns = kapi_obj_namespace(obj);
    struct consumer *c;

    (void)inf;
    (void)data;
    if (!id || !ns || !peer_cluster_id_valid(id))
        return;
    c = consumer_find(id);
    if (!c && phase && strcmp(phase, "Accepted") == 0)
        c = consumer_ensure(id);
    if (!c)
        return;
    snprintf(c->pr_ns, sizeof(c->pr_ns), "%s", ns);
    if (st.q)
        wq_add(st.q, id);
}

static void on_pr_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_pr(inf, new_obj, data);
}

static void on_config(struct inf_informer *inf, json_t *obj, void *data)
{
    struct adv_config old = st.cfg;

    (void)inf;
    (void)data;
    if (strcmp(kapi_obj_name(obj) ? kapi_obj_name(obj) : "", PEER_CLUSTER_CONFIG) != 0)
        return;
    advcfg_read(obj, &st.cfg);
    if (!st.cfg_loaded || old.percent != st.cfg.percent || old.enabled != st.cfg.enabled ||
        old.ttl_s != st.cfg.ttl_s || old.refresh_s != st.cfg.refresh_s ||
        !json_equal(old.per_cluster, st.cfg.per_cluster) ||
        !json_equal(old.prices, st.cfg.prices)) {
        if (st.cfg_loaded)
            log_info(MOD,
                     "sharing configuration changed (percentage %u, broadcaster %s, refresh %us, "
                     "ttl %us, threshold %u%%): re-sending",
                     st.cfg.percent, st.cfg.enabled ? "enabled" : "disabled", st.cfg.refresh_s,
                     st.cfg.ttl_s, st.cfg.threshold);
        enqueue_all();
    }
    st.cfg_loaded = true;
    advcfg_done(&old);
}

static void on_config_update(struct inf_informer *inf, json_t *old_obj, json_t *new_obj, void *data)
{
    (void)old_obj;
    on_config(inf, new_obj, data);
}

/* Our Advertisement on a consumer changed (its decision) or disappeared: look again. */
static void on_adv(struct inf_informer *inf, json_t *obj, void *data)
{
    struct consumer *c = data;

    (void)inf;
    (void)obj;
    if (st.q)
        wq_add(st.q, c->id);
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
    (void)t;
    if (!st.running || !counted())
        return;
    for (struct consumer *c = st.consumers; c; c = c->next) {
        struct shr_list fixed, offer;
        struct shr_policy p;
        char sig[512];

        if (!c->sent)
            continue;
        advcfg_policy_for(&st.cfg, c->id, &p, &fixed, sig, sizeof(sig));
        if (shr_offer(st.shr, c->id, &p, &offer) < 0)
            continue;
        if (shr_list_moved(&c->last, &offer, st.cfg.threshold)) {
            log_debug(MOD, "offer to %s moved by more than %u%%", c->id, st.cfg.threshold);
            wq_add(st.q, c->id);
        }
    }
}

static void arm_check(void)
{
    if (st.running && st.check && !uv_is_active((uv_handle_t *)st.check))
        uv_timer_start(st.check, check_moves, CHECK_DELAY_MS, 0);
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

static json_t *find_fc(const char *id);

/* Merge-patches fc.status.advertisement.sent when it differs. Fire and forget: the next pass
 * writes it again if this one was lost. */
static void on_fc_patched(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    (void)c;
    (void)data;
    if (res->err < 0 && res->err != -ENOENT)
        log_debug(MOD, "cannot update a ForeignCluster's sharing status: %s", res->status.message);
}

static void write_fc_sent(const char *id, json_t *sent)
{
    json_t *fc = find_fc(id), *patch;
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
        kapi_patch(agent_kube(st.a), &peer_res_foreignclusters, NULL, kapi_obj_name(fc), "status",
                   KAPI_PATCH_MERGE, body, on_fc_patched, NULL);
    x_free(body);
    json_decref(patch);
    json_decref(fc);
}

static json_t *find_fc(const char *id)
{
    return peer_fc_find(st.fcs, id);
}

/* ---- withdrawal --------------------------------------------------------------------------------
 */

static void withdraw_step(struct rec *r);

static bool withdraw_timed_out(struct rec *r)
{
    json_t *cc = inf_get(st.config, NULL, PEER_CLUSTER_CONFIG);
    json_int_t secs = json_integer_value(json_object_get(
        json_object_get(json_object_get(cc, "spec"), "peeringConfig"), "unpeerTimeoutSeconds"));

    json_decref(cc);
    if (secs <= 0 || secs > 3600)
        secs = 30;
    return now_ms() - r->c->withdraw_since_ms >= (uint64_t)secs * 1000;
}

static void after_withdraw_call(void *owner)
{
    struct rec *r = owner;

    if (r->ch.last.err < 0 && r->ch.last.err != -ENOENT) {
        if (r->c->unit && !withdraw_timed_out(r)) {
            log_warn(MOD, "withdrawing from %s: %s (retrying)", r->c->id, r->ch.last.message);
            rec_end(r, RETRY_MS);
            return;
        }
        log_warn(MOD, "withdrawing from %s: %s; giving up on the consumer's side", r->c->id,
                 r->ch.last.message);
        consumer_detach(r->c); /* no client: the remaining steps are local */
    }
    withdraw_step(r);
}

static int delete_local(struct rec *r, const struct kapi_resource *res, const char *name)
{
    r->ch.next = after_withdraw_call;
    return kapi_delete(agent_kube(st.a), res, r->c->pr_ns, name, NULL, ctl_call_cb, r);
}

/* One deletion per step, in order; each is idempotent (NotFound is success). */
static void withdraw_step(struct rec *r)
{
    struct consumer *c = r->c;
    struct kapi_client *remote = pu_client(c->unit, PU_REQUESTER);
    char name[128];
    json_t *sent;

    switch (r->requeue_ms++) {
    case 0: /* the Advertisement on the consumer */
        if (remote && c->remote_ns[0]) {
            snprintf(name, sizeof(name), PEER_ADV_PREFIX "%s", identity_cluster_id(st.a));
            r->ch.next = after_withdraw_call;
            if (kapi_delete(remote, &peer_res_advertisements, c->remote_ns, name, NULL, ctl_call_cb,
                            r) == 0)
                return;
        }
        /* fall through */
    case 1: /* the credential Secret on the consumer */
        r->requeue_ms = 2;
        if (remote && c->remote_ns[0]) {
            snprintf(name, sizeof(name), PEER_VK_SECRET_PREFIX "%s", identity_cluster_id(st.a));
            r->ch.next = after_withdraw_call;
            if (kapi_delete(remote, &kapi_secrets, c->remote_ns, name, NULL, ctl_call_cb, r) == 0)
                return;
        }
        /* fall through */
    case 2: /* the namespaces made for the consumer (the NamespaceMap's finalizer deletes them) */
        r->requeue_ms = 3;
        if (c->pr_ns[0] && delete_local(r, &peer_res_namespacemaps, c->id) == 0)
            return;
        /* fall through */
    case 3: /* the virtual kubelet's identity: its ServiceAccount, token and binding */
        r->requeue_ms = 4;
        snprintf(name, sizeof(name), PEER_VK_SA_PREFIX "%s", c->id);
        if (c->pr_ns[0] && delete_local(r, &kapi_serviceaccounts, name) == 0)
            return;
        /* fall through */
    case 4:
        r->requeue_ms = 5;
        snprintf(name, sizeof(name), PEER_VK_SA_PREFIX "%s-token", c->id);
        if (c->pr_ns[0] && delete_local(r, &kapi_secrets, name) == 0)
            return;
        /* fall through */
    case 5:
        r->requeue_ms = 6;
        if (c->pr_ns[0] && delete_local(r, &peer_res_rolebindings, PEER_VK_TENANT_ROLE) == 0)
            return;
        /* fall through */
    default:
        break;
    }
    log_info(MOD, "stopped sharing with %s: Advertisement withdrawn, credential revoked", c->id);
    sent = json_pack("{s:s,s:s,s:s}", "status", "Withdrawn", "reason",
                     st.cfg.enabled ? "PeeringEnded" : "SharingDisabled", "message",
                     st.cfg.enabled ? "the peering request is gone or no longer admitted"
                                    : "enableBroadcaster is false");
    if (sent)
        write_fc_sent(c->id, sent);
    consumer_detach(c);
    c->sent = false;
    c->cred_hash[0] = c->adv_hash[0] = '\0';
    c->withdrawn = true;
    if (!r->pr) {
        consumer_free(c);
        r->c = NULL;
    }
    rec_end(r, -1);
}

static void withdraw(struct rec *r)
{
    if (r->c->withdrawn) {
        if (!r->pr)
            consumer_free(r->c);
        rec_end(r, -1);
        return;
    }
    if (!r->c->withdraw_since_ms)
        r->c->withdraw_since_ms = now_ms();
    r->requeue_ms = 0; /* used as the step counter */
    withdraw_step(r);
}

/* ---- sharing -----------------------------------------------------------------------------------
 */

static void mirror_status(struct rec *r);

static json_t *remote_adv(struct consumer *c)
{
    char name[128];

    snprintf(name, sizeof(name), PEER_ADV_PREFIX "%s", identity_cluster_id(st.a));
    return inf_get(pu_inf_get(c->watch), c->remote_ns, name);
}

static void after_status_patch(void *owner)
{
    struct rec *r = owner;

    if (r->ch.last.err < 0 && r->ch.last.err != -ENOENT)
        log_debug(MOD, "cannot copy the decision of %s: %s", r->c->id, r->ch.last.message);
    mirror_status(r);
}

/* The consumer's decision, into the PeeringRequest's status and the ForeignCluster's. */
static void mirror_status(struct rec *r)
{
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
        r->ch.next = after_status_patch;
        if (body && kapi_patch(agent_kube(st.a), &peer_res_peeringrequests, c->pr_ns, c->id,
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
            write_fc_sent(c->id, sent);
    }
    json_decref(adv);
    due = c->sent_ms + (uint64_t)st.cfg.refresh_s * 1000;
    rec_end(r, due > now_ms() ? (int)(due - now_ms()) : 0);
}

static void after_apply(void *owner)
{
    struct rec *r = owner;
    struct consumer *c = r->c;
    char now[32];
    json_t *sent;

    if (r->ch.last.err < 0) {
        count_send("error");
        log_warn(MOD, "cannot write the Advertisement on %s: %s", c->id, r->ch.last.message);
        rec_fail(r);
        return;
    }
    count_send("ok");
    wq_forget(st.q, r->key);
    if (!c->sent || shr_list_moved(&c->last, &r->offer, 0))
        log_info(MOD, "Advertisement sent to %s (%s, %zu resources)", c->id, r->sig, r->offer.n);
    c->sent = true;
    c->sent_ms = now_ms();
    c->last = r->offer;
    snprintf(c->sig, sizeof(c->sig), "%s", r->sig);
    snprintf(c->adv_hash, sizeof(c->adv_hash), "%s", c->cred_hash);
    rfc3339_now(0, now, sizeof(now));
    sent = json_pack("{s:s,s:o}", "lastSent", now, "resources", list_to_quantities(&r->offer));
    if (sent)
        write_fc_sent(c->id, sent);
    mirror_status(r);
}

static void send_advertisement(struct rec *r)
{
    struct consumer *c = r->c;
    struct kapi_client *remote = pu_client(c->unit, PU_REQUESTER);
    char name[128], secret[128], ts[32], ttl[32];
    int64_t now = (int64_t)time(NULL);
    json_t *adv, *spec, *hard, *max;

    refresh_summary();
    for (size_t i = 0; i < st.largest.n; i++) {
        bool found;
        int64_t offered = shr_list_get(&r->offer, st.largest.items[i].name, &found);
        struct shr_amount a = st.largest.items[i];

        if (!found)
            continue;
        if (offered < a.value)
            a.value = offered;
        r->limits.items[r->limits.n++] = a;
    }
    snprintf(name, sizeof(name), PEER_ADV_PREFIX "%s", identity_cluster_id(st.a));
    snprintf(secret, sizeof(secret), PEER_VK_SECRET_PREFIX "%s", identity_cluster_id(st.a));
    rfc3339_format(now, 0, 0, ts, sizeof(ts));
    rfc3339_format(now + (int64_t)st.cfg.ttl_s, 0, 0, ttl, sizeof(ttl));
    hard = list_to_quantities(&r->offer);
    max = list_to_quantities(&r->limits);
    adv = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s},s:{s:s}},s:{s:s,s:{s:o},s:{s:[{s:s,s:o}]},"
                    "s:{s:s,s:s},s:s,s:s}}",
                    "apiVersion", "sharing.liqo.io/v1alpha1", "kind", "Advertisement", "metadata",
                    "name", name, "namespace", c->remote_ns, "labels", PEER_LABEL_CLUSTER_ID,
                    identity_cluster_id(st.a), "annotations", PEER_ANNOT_CRED_HASH, c->cred_hash,
                    "spec", "clusterId", identity_cluster_id(st.a), "resourceQuota", "hard", hard,
                    "limitRange", "limits", "type", "Pod", "max", max, "kubeConfigRef", "name",
                    secret, "namespace", c->remote_ns, "timestamp", ts, "timeToLive", ttl);
    spec = json_object_get(adv, "spec");
    if (spec && st.labels && json_object_size(st.labels))
        json_object_set(spec, "labels", st.labels);
    if (spec && st.images && json_array_size(st.images))
        json_object_set(spec, "images", st.images);
    if (spec && st.cfg.prices)
        json_object_set(spec, "prices", st.cfg.prices);
    r->ch.next = after_apply;
    if (!adv || kapi_apply(remote, &peer_res_advertisements, c->remote_ns, name, NULL, adv,
                           FIELD_MANAGER, true, ctl_call_cb, r) < 0)
        rec_end(r, RETRY_MS);
    json_decref(adv);
}

static void share_advertisement(struct rec *r)
{
    struct consumer *c = r->c;
    struct shr_list fixed;
    struct shr_policy p;
    json_t *adv;
    bool synced = inf_synced(pu_inf_get(c->watch)), need;
    const char *why = NULL;

    if (!counted()) {
        rec_end(r, WAIT_MS); /* the nodes and pods running here are not all counted yet */
        return;
    }
    if (advcfg_policy_for(&st.cfg, c->id, &p, &fixed, r->sig, sizeof(r->sig)) < 0)
        log_warn(MOD, "perCluster entry of %s is invalid: using the global percentage", c->id);
    if (shr_offer(st.shr, c->id, &p, &r->offer) < 0) {
        rec_end(r, RETRY_MS);
        return;
    }
    if (!synced) {
        rec_end(r, WAIT_MS); /* first learn whether it is already there */
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
    else if (shr_list_moved(&c->last, &r->offer, st.cfg.threshold))
        why = "amounts moved";
    else if (now_ms() >= c->sent_ms + (uint64_t)st.cfg.refresh_s * 1000)
        why = "refresh";
    need = why != NULL;
    json_decref(adv);
    if (!need) {
        mirror_status(r);
        return;
    }
    log_debug(MOD, "sending the Advertisement to %s: %s", c->id, why);
    send_advertisement(r);
}

static void after_secret(void *owner)
{
    struct rec *r = owner;

    if (r->ch.last.err < 0) {
        log_warn(MOD, "cannot write the virtual kubelet's credential on %s: %s", r->c->id,
                 r->ch.last.message);
        rec_fail(r);
        return;
    }
    hash16(r->c->vk_kubeconfig, r->c->cred_hash);
    share_advertisement(r);
}

static void share_secret(struct rec *r)
{
    struct consumer *c = r->c;
    char h[17], name[128];
    json_t *sec;

    hash16(c->vk_kubeconfig, h);
    if (strcmp(h, c->cred_hash) == 0) {
        share_advertisement(r);
        return;
    }
    snprintf(name, sizeof(name), PEER_VK_SECRET_PREFIX "%s", identity_cluster_id(st.a));
    sec = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s}}", "apiVersion", "v1", "kind", "Secret",
                    "metadata", "name", name, "namespace", c->remote_ns, "labels",
                    PEER_LABEL_CLUSTER_ID, identity_cluster_id(st.a), "stringData", "kubeconfig",
                    c->vk_kubeconfig);
    r->ch.next = after_secret;
    if (!sec || kapi_apply(pu_client(c->unit, PU_REQUESTER), &kapi_secrets, c->remote_ns, name,
                           NULL, sec, FIELD_MANAGER, true, ctl_call_cb, r) < 0)
        rec_end(r, RETRY_MS);
    json_decref(sec);
}

static void on_vk_credential(int err, const char *message, const char *ns, const char *kubeconfig,
                             void *data)
{
    struct rec *r = data;

    (void)ns;
    /* The agent stops: nothing failed, the next leader goes on. */
    if (err == -ECANCELED) {
        rec_end(r, RETRY_MS);
        return;
    }
    if (err < 0) {
        log_warn(MOD, "cannot issue the virtual kubelet's identity for %s: %s", r->c->id, message);
        rec_fail(r);
        return;
    }
    wipe_kubeconfig(r->c);
    r->c->vk_kubeconfig = x_strdup(kubeconfig);
    if (!r->c->vk_kubeconfig) {
        rec_end(r, RETRY_MS);
        return;
    }
    r->c->vk_issued_ms = now_ms();
    share_secret(r);
}

static void share(struct rec *r)
{
    struct consumer *c = r->c;
    const char *rns =
        json_string_value(json_object_get(json_object_get(r->pr, "spec"), "namespace"));
    const char *name = json_string_value(json_object_get(
        json_object_get(json_object_get(r->pr, "spec"), "clusterIdentity"), "clusterName"));
    int rc;

    c->withdrawn = false;
    c->withdraw_since_ms = 0;
    if (!c->unit && (rc = pu_acquire(agent_peers(st.a), c->id, OWNER, &c->unit)) < 0) {
        log_warn(MOD, "cannot open the unit of %s: %s", c->id, strerror(-rc));
        rec_end(r, RETRY_MS);
        return;
    }
    if (!pu_client(c->unit, PU_REQUESTER)) {
        rec_end(r, WAIT_MS); /* the incoming controller installs it once the request is admitted */
        return;
    }
    if (!rns || !kname_dns_label(rns)) {
        log_warn(MOD, "PeeringRequest of %s has no valid spec.namespace", c->id);
        rec_end(r, -1);
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
        snprintf(fs, sizeof(fs), "metadata.name=" PEER_ADV_PREFIX "%s", identity_cluster_id(st.a));
        o.field_selector = fs;
        rc = pu_informer(c->unit, PU_REQUESTER, &o, &h, c, &c->watch);
        if (rc < 0) {
            log_warn(MOD, "cannot watch our Advertisement on %s: %s", c->id, strerror(-rc));
            rec_end(r, RETRY_MS);
            return;
        }
    }
    if (c->vk_kubeconfig && now_ms() - c->vk_issued_ms < (uint64_t)st.cfg.refresh_s * 1000) {
        share_secret(r);
        return;
    }
    if (peer_issue_credential_kind(st.a, PEER_CRED_VK, c->id, c->name, c->pr_ns, on_vk_credential,
                                   r) < 0)
        rec_end(r, RETRY_MS);
}

/* ---- reconcile ---------------------------------------------------------------------------------
 */

static void reconcile(struct wq_queue *q, const char *key, void *data)
{
    struct consumer *c = consumer_find(key);
    struct rec *r;
    const char *phase;
    bool want;

    (void)data;
    if (!st.running || !c || !identity_cluster_id(st.a) || !st.cfg_loaded) {
        if (st.running && c)
            wq_add_after(q, key, WAIT_MS);
        wq_done(q, key);
        return;
    }
    r = x_calloc(1, sizeof(*r));
    if (!r) {
        wq_add_after(q, key, RETRY_MS);
        wq_done(q, key);
        return;
    }
    snprintf(r->key, sizeof(r->key), "%s", key);
    r->c = c;
    r->requeue_ms = -1;
    if (c->pr_ns[0]) {
        json_t *cached = inf_get(st.prs, c->pr_ns, c->id);

        r->pr = cached ? json_deep_copy(cached) : NULL;
        json_decref(cached);
    }
    if (r->pr && json_object_get(json_object_get(r->pr, "metadata"), "deletionTimestamp")) {
        json_decref(r->pr);
        r->pr = NULL;
    }
    phase = json_string_value(json_object_get(json_object_get(r->pr, "status"), "phase"));
    want = r->pr && phase && strcmp(phase, "Accepted") == 0 && st.cfg.enabled;
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
static int bcast_last_offer(const char *id, struct shr_list *ret, char *name, size_t namelen);

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
    struct inf_options po = {.resource = &kapi_pods, .transform = shr_pod_transform};
    struct wq_options qo = {.max_concurrent = 64, .base_delay_ms = 500, .max_delay_ms = 60000};
    int r;

    memset(&st, 0, sizeof(st));
    st.a = a;
    agent_set_last_offer(a, bcast_last_offer); /* for the offer check of admission */
    advcfg_read(NULL, &st.cfg);
    r = shr_new(&st.shr);
    if (r == 0)
        r = agent_informer(a, &kapi_nodes, NULL, NULL, 0, &nh, NULL, &st.nodes);
    if (r == 0)
        r = agent_informer_ex(a, &po, 0, &ph, NULL, &st.pods);
    if (r == 0)
        r = agent_informer(a, &peer_res_peeringrequests, NULL, NULL, 0, &rh, NULL, &st.prs);
    if (r == 0)
        r = agent_informer(a, &peer_res_foreignclusters, NULL, NULL, 0, NULL, NULL, &st.fcs);
    if (r == 0)
        r = agent_informer(a, &peer_res_clusterconfigs, NULL, NULL, 0, &ch, NULL, &st.config);
    if (r == 0)
        r = agent_queue(a, "broadcaster", &qo, reconcile, NULL, &st.q);
    if (r == 0)
        r = metrics_family_new(
            agent_metrics(a), METRICS_COUNTER, "cliqo_broadcaster_advertisements_sent_total",
            "Advertisements written on consumers, by result.", send_labels, NULL, 0, &st.m_sends);
    if (r == 0 && !(st.check = ktimer_new(agent_loop(a), NULL)))
        r = -ENOMEM;
    return r;
}

int bcast_start(struct agent *a)
{
    (void)a;
    st.running = true;
    return 0;
}

void bcast_stop(struct agent *a)
{
    (void)a;
    st.running = false;
    if (st.check)
        uv_timer_stop(st.check);
}

void bcast_fini(struct agent *a)
{
    (void)a;
    while (st.consumers)
        consumer_free(st.consumers);
    ktimer_free(st.check);
    st.check = NULL;
    st.shr = shr_free(st.shr);
    json_decref(st.labels);
    json_decref(st.images);
    advcfg_done(&st.cfg);
    st.q = NULL;
}

/* For bench/ and tests: the computation state the informer handlers feed. */
struct shr_state *bcast_state(void)
{
    return st.shr;
}

/* For the offer enforcement (src/admission/): what this process last sent the consumer. */
static int bcast_last_offer(const char *id, struct shr_list *ret, char *name, size_t namelen)
{
    struct consumer *c = id ? consumer_find(id) : NULL;

    if (!c || !c->sent || c->withdrawn || !ret)
        return -ENOENT;
    *ret = c->last;
    if (name && namelen)
        snprintf(name, namelen, "%s", c->name[0] ? c->name : c->id);
    return 0;
}
