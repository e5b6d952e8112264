/* brk core: see core.h. */
#include "broker/core.h"
#include "broker/catalog.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fileio.h"
#include "common/json.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "kube/names.h"
#include "peering/objects.h"
#include "peering/resources.h"

#define MOD           BRK_MODULE
#define KEY_PROVIDERS "providers"
#define KEY_PROBE     "probe"
#define KEY_SELECT    "select"
#define TOKEN_MAX     512  /* bytes of the bearer token */
#define URL_MAX       2048 /* foreignAuthUrl's bound in the CRD */
#define MAX_SUBS      4

struct provider {
    char id[BRK_ID_MAX];
    char server[URL_MAX + 1]; /* scheme://host[:port] of its auth URL; "" when none */
    struct kapi_client *probe;
    bool in_flight;
    uint64_t sent_ms;
    struct brk_kpi_hist hist;
    struct brk_hyst hyst;
    json_t *offer;  /* owned; NULL: none */
    json_t *labels; /* owned; its ForeignCluster's labels */
    char *price;    /* owned; NULL: none */
    bool enabled, selected, seen;
    char why[192];
};

struct brk_core {
    struct agent *a;
    const struct brk_config *cfg;
    struct inf_informer *fcs, *advs, *state_cm, *token_secret;
    struct wq_queue *q;
    struct brk_state state;
    bool state_known;
    char state_error[256];
    char token[TOKEN_MAX + 1];
    struct provider **prov; /* sorted by id */
    size_t nprov;
    uint64_t generation;
    unsigned char token_key[BRK_TOKEN_KEY_LEN];
    struct {
        brk_changed_fn fn;
        void *data;
    } subs[MAX_SUBS];
    size_t nsubs;
    struct metrics_family *m_providers, *m_selected, *m_probes;
};

struct brk_core *brk_core_of(struct agent *a)
{
    return agent_module_data(a, MOD);
}

const struct brk_config *brk_core_config(const struct brk_core *c)
{
    return c->cfg;
}

int brk_core_subscribe(struct brk_core *c, brk_changed_fn fn, void *data)
{
    if (c->nsubs >= MAX_SUBS)
        return -ENOSPC;
    c->subs[c->nsubs].fn = fn;
    c->subs[c->nsubs].data = data;
    c->nsubs++;
    return 0;
}

static void announce(struct brk_core *c, unsigned what)
{
    c->generation++;
    for (size_t i = 0; i < c->nsubs; i++)
        c->subs[i].fn(what, c->subs[i].data);
}

struct inf_informer *brk_core_fcs(struct brk_core *c)
{
    return c->fcs;
}

const struct brk_state *brk_core_state(const struct brk_core *c)
{
    return &c->state;
}

uint64_t brk_core_generation(const struct brk_core *c)
{
    return c->generation;
}

bool brk_core_ready(const struct brk_core *c)
{
    return c && inf_synced(c->fcs) && inf_synced(c->advs) && inf_synced(c->state_cm) &&
           (c->cfg->token_file || inf_synced(c->token_secret));
}

const char *brk_core_token(const struct brk_core *c)
{
    return c->token;
}

const unsigned char *brk_core_token_key(const struct brk_core *c)
{
    return c->token_key;
}

/* ---- the provider table ------------------------------------------------------------------- */

static int prov_cmp(const void *a, const void *b)
{
    return strcmp((*(struct provider *const *)a)->id, (*(struct provider *const *)b)->id);
}

static struct provider *prov_find(struct brk_core *c, const char *id)
{
    struct provider key, *kp = &key, **hit;

    if (!id || strlen(id) >= sizeof(key.id))
        return NULL;
    snprintf(key.id, sizeof(key.id), "%s", id);
    hit = c->nprov ? bsearch(&kp, c->prov, c->nprov, sizeof(*c->prov), prov_cmp) : NULL;
    return hit ? *hit : NULL;
}

static void prov_free(struct provider *p)
{
    if (!p)
        return;
    kapi_client_close(p->probe);
    json_decref(p->offer);
    json_decref(p->labels);
    x_free(p->price);
    x_free(p);
}

/* The scheme://host[:port] of an https URL, or "" (the CRD's pattern already requires https). */
static void url_origin(const char *url, char *out, size_t outlen)
{
    const char *host, *end;

    out[0] = '\0';
    if (!url || strncmp(url, "https://", 8) != 0)
        return;
    host = url + 8;
    end = host + strcspn(host, "/?#");
    if (end == host || (size_t)(end - url) >= outlen || memchr(host, '@', (size_t)(end - host)))
        return;
    memcpy(out, url, (size_t)(end - url));
    out[end - url] = '\0';
}

/* A price annotation that is a non-negative decimal, else NULL. */
static const char *valid_price(const char *s)
{
    struct kq q;

    if (!s || strlen(s) > 32 || kq_parse(s, &q) < 0 || kq_sign(&q) < 0)
        return NULL;
    return s;
}

struct adv_seen {
    char id[BRK_ID_MAX], ns[64];
    json_t *offer;
    char *price;
};

/* A peer's tenant namespace here (from its ForeignCluster): where its Advertisement counts. */
struct tenant {
    char id[BRK_ID_MAX], ns[64];
};

static int tenant_cmp(const void *a, const void *b)
{
    const struct tenant *x = a, *y = b;
    int d = strcmp(x->id, y->id);

    return d ? d : strcmp(x->ns, y->ns);
}

struct refresh {
    struct brk_core *c;
    struct tenant *tenants; /* sorted (tenant_cmp) */
    size_t ntenants, tcap;
    struct adv_seen *advs;
    size_t nadvs, cap;
    struct provider **next;
    size_t nnext;
    bool changed_offers;
};

/* Room for one more element in *arr (n used, *cap allocated; doubling from 16). 0 or -ENOMEM. */
static int grow(void **arr, size_t *cap, size_t n, size_t size)
{
    size_t c = *cap ? *cap * 2 : 16;
    void *p;

    if (n < *cap)
        return 0;
    p = x_reallocarray(*arr, c, size);
    if (!p)
        return -ENOMEM;
    *arr = p;
    *cap = c;
    return 0;
}

static void tenant_visit(json_t *fc, void *data)
{
    struct refresh *r = data;
    const char *id = jsn_str_at(fc, "spec", "clusterIdentity", "clusterID", NULL);
    const char *tenant = jsn_str_at(fc, "status", "tenantNamespace", "local", NULL);

    if (!id || !tenant || strlen(id) >= BRK_ID_MAX || strlen(tenant) >= 64 ||
        r->ntenants >= BRK_MAX_PROVIDERS)
        return;
    if (grow((void **)&r->tenants, &r->tcap, r->ntenants, sizeof(*r->tenants)) < 0)
        return;
    snprintf(r->tenants[r->ntenants].id, BRK_ID_MAX, "%s", id);
    snprintf(r->tenants[r->ntenants].ns, 64, "%s", tenant);
    r->ntenants++;
}

static void adv_visit(json_t *adv, void *data)
{
    struct refresh *r = data;
    const char *id = jsn_str_at(adv, "spec", "clusterId", NULL);
    const char *ns = kapi_obj_namespace(adv);
    const json_t *hard =
        json_object_get(json_object_get(json_object_get(adv, "spec"), "resourceQuota"), "hard");
    char want[BRK_ID_MAX + 32];
    struct adv_seen *s;

    if (!id || !ns || !kname_dns_label(id) || strlen(id) >= BRK_ID_MAX || strlen(ns) >= 64 ||
        r->nadvs >= BRK_MAX_PROVIDERS)
        return;
    /* Its name says whose it is, as the operator requires, and it sits in that cluster's own tenant
     * namespace: the Advertisements a peer names for others in its namespace (its credential lets
     * it create any there) are skipped here, so however many it makes, they take no room. */
    snprintf(want, sizeof(want), "%s%s", PEER_ADV_PREFIX, id);
    if (strcmp(kapi_obj_name(adv), want) != 0)
        return;
    {
        struct tenant key;

        snprintf(key.id, sizeof(key.id), "%s", id);
        snprintf(key.ns, sizeof(key.ns), "%s", ns);
        if (!r->ntenants || !bsearch(&key, r->tenants, r->ntenants, sizeof(key), tenant_cmp))
            return;
    }
    if (grow((void **)&r->advs, &r->cap, r->nadvs, sizeof(*r->advs)) < 0)
        return;
    s = &r->advs[r->nadvs++];
    snprintf(s->id, sizeof(s->id), "%s", id);
    snprintf(s->ns, sizeof(s->ns), "%s", ns);
    s->offer = json_is_object(hard) ? json_incref((json_t *)hard) : NULL;
    s->price = valid_price(jsn_annotation(adv, BRK_PRICE_ANN))
                   ? x_strdup(jsn_annotation(adv, BRK_PRICE_ANN))
                   : NULL;
}

/* The Advertisement of cluster id in its own tenant namespace. Another peer can name one for id in
 * its own namespace (its credential lets it create Advertisements there): that one is never it. */
static struct adv_seen *adv_of(struct refresh *r, const char *id, const char *tenant)
{
    for (size_t i = 0; i < r->nadvs; i++)
        if (strcmp(r->advs[i].id, id) == 0 && strcmp(r->advs[i].ns, tenant) == 0)
            return &r->advs[i];
    return NULL;
}

static bool str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void fc_visit(json_t *fc, void *data)
{
    struct refresh *r = data;
    const char *id = jsn_str_at(fc, "spec", "clusterIdentity", "clusterID", NULL);
    const char *tenant = jsn_str_at(fc, "status", "tenantNamespace", "local", NULL);
    const json_t *labels = json_object_get(json_object_get(fc, "metadata"), "labels");
    struct adv_seen *s;
    struct provider *p;
    char server[URL_MAX + 1];

    if (!id || !tenant || !(s = adv_of(r, id, tenant)) || r->nnext >= BRK_MAX_PROVIDERS)
        return;
    p = prov_find(r->c, id);
    if (p && p->seen)
        return; /* two ForeignClusters of one ID: the first one counts */
    for (size_t i = 0; !p && i < r->nnext; i++)
        if (strcmp(r->next[i]->id, id) == 0)
            return;
    if (!p) {
        p = x_calloc(1, sizeof(*p));
        if (!p)
            return;
        snprintf(p->id, sizeof(p->id), "%s", id);
        brk_kpi_init(&p->hist);
        log_info(MOD, "provider %s: advertises to this cluster (Advertisement %s/%s%s)", id, tenant,
                 PEER_ADV_PREFIX, id);
        r->changed_offers = true;
    }
    p->seen = true;
    url_origin(jsn_str_at(fc, "spec", "foreignAuthUrl", NULL), server, sizeof(server));
    if (strcmp(server, p->server) != 0) {
        kapi_client_close(p->probe);
        p->probe = NULL;
        p->in_flight = false;
        snprintf(p->server, sizeof(p->server), "%s", server);
    }
    if (!json_equal(p->offer, s->offer) || !str_eq(p->price, s->price))
        r->changed_offers = true;
    json_decref(p->offer);
    p->offer = s->offer ? json_incref(s->offer) : NULL;
    x_free(p->price);
    p->price = s->price ? x_strdup(s->price) : NULL;
    json_decref(p->labels);
    p->labels = json_is_object(labels) ? json_deep_copy(labels) : NULL;
    r->next[r->nnext++] = p;
}

/* Recomputes the selection of every provider; announces a change. */
static void evaluate(struct brk_core *c, unsigned changed)
{
    uint64_t now = uv_now(agent_loop(c->a));
    int64_t next = 0;
    bool sel_changed = false;

    for (size_t i = 0; i < c->nprov; i++) {
        struct provider *p = c->prov[i];
        struct brk_kpi k = {.offer = p->offer, .labels = p->labels, .price = p->price};
        int64_t recheck = 0;
        bool was = p->selected;

        brk_kpi_view(&p->hist, &k);
        p->enabled = brk_state_enabled(&c->state, p->id, c->cfg->default_enabled);
        p->selected = brk_select(&c->state.policy, p->enabled, &k, &p->hyst, (int64_t)now, &recheck,
                                 p->why, sizeof(p->why));
        if (was != p->selected) {
            sel_changed = true;
            log_info(MOD, "provider %s %s the selection%s%s", p->id,
                     p->selected ? "enters" : "leaves", p->why[0] ? ": " : "", p->why);
        }
        if (recheck > 0 && (next == 0 || recheck < next))
            next = recheck;
    }
    if (next > 0)
        wq_add_after(c->q, KEY_SELECT, (uint64_t)(next > (int64_t)now ? next - (int64_t)now : 1));
    if (sel_changed)
        changed |= BRK_CHANGED_SELECTION;
    if (changed)
        announce(c, changed);
}

/* Rebuilds the provider table from the stores: providers are found in the old table (prov_find,
 * which stays as it is during the pass) or made, and listed in the new one. */
static void refresh(struct brk_core *c)
{
    struct refresh r = {.c = c};
    struct provider **old = c->prov;
    size_t nold = c->nprov;
    bool set_changed = false;

    inf_foreach(c->fcs, tenant_visit, &r);
    if (r.ntenants)
        qsort(r.tenants, r.ntenants, sizeof(*r.tenants), tenant_cmp);
    inf_foreach(c->advs, adv_visit, &r);
    r.next = x_calloc(r.nadvs ? r.nadvs : 1, sizeof(*r.next));
    if (!r.next)
        goto out;
    for (size_t i = 0; i < nold; i++)
        old[i]->seen = false;
    inf_foreach(c->fcs, fc_visit, &r);
    for (size_t i = 0; i < nold; i++)
        if (!old[i]->seen) {
            log_info(MOD, "provider %s: no longer advertises to this cluster", old[i]->id);
            prov_free(old[i]);
            set_changed = true;
        }
    qsort(r.next, r.nnext, sizeof(*r.next), prov_cmp);
    x_free(old);
    c->prov = r.next;
    c->nprov = r.nnext;
    r.next = NULL;
    metrics_set(c->m_providers, NULL, (double)c->nprov);
    evaluate(c,
             BRK_CHANGED_CLUSTERS | ((r.changed_offers || set_changed) ? BRK_CHANGED_OFFERS : 0));
out:
    x_free(r.next);
    for (size_t i = 0; i < r.nadvs; i++) {
        json_decref(r.advs[i].offer);
        x_free(r.advs[i].price);
    }
    x_free(r.advs);
    x_free(r.tenants);
}

/* ---- probes -------------------------------------------------------------------------------- */

struct probe_ctx {
    struct brk_core *c;
    char id[BRK_ID_MAX];
};

static void on_probe(struct kapi_client *kc, const struct kapi_result *res, void *data)
{
    struct probe_ctx *pc = data;
    struct brk_core *c = pc->c;
    struct provider *p = prov_find(c, pc->id);
    uint64_t now;
    bool answered;

    (void)kc;
    x_free(pc);
    /* The client is closed (and its calls cancelled, without this callback) when the provider
     * goes, so p is the provider that sent it. */
    if (!p)
        return;
    now = uv_now(agent_loop(c->a));
    p->in_flight = false;
    answered = res->http_status >= 200 && res->http_status < 500;
    if (!answered && p->hist.up_since_ms >= 0)
        log_info(MOD, "provider %s: probe of %s/ids failed (%s)", p->id, p->server,
                 res->http_status ? "an HTTP error" : res->status.message);
    brk_kpi_record(&p->hist, (int64_t)now, answered, (int64_t)(now - p->sent_ms));
    {
        const char *l[2] = {answered ? "answered" : "failed", NULL};

        metrics_inc(c->m_probes, l);
    }
    evaluate(c, 0);
    /* The KPIs shown changed even when the selection did not. */
    c->generation++;
}

static void probe_one(struct brk_core *c, struct provider *p)
{
    struct kapi_request req = {.method = "GET",
                               .path = "/ids",
                               .timeout_ms = (long)c->cfg->probe_timeout_ms,
                               .max_body = 65536};
    struct probe_ctx *pc;
    int r;

    if (p->in_flight || !p->server[0])
        return;
    if (!p->probe) {
        /* No credential: a probe proves the endpoint answers, nothing more. */
        struct kc_config kc = {
            .server = p->server, .namespace = "default", .insecure_skip_tls_verify = true};
        struct kapi_client_options o = {.qps = 1000, .burst = 1000, .max_body = 65536};

        r = kapi_client_new(agent_loop(c->a), &kc, &o, &p->probe);
        if (r < 0) {
            log_errno(r, MOD, "provider %s: cannot make the probe's client for %s", p->id,
                      p->server);
            return;
        }
    }
    pc = x_calloc(1, sizeof(*pc));
    if (!pc)
        return;
    pc->c = c;
    snprintf(pc->id, sizeof(pc->id), "%s", p->id);
    p->sent_ms = uv_now(agent_loop(c->a));
    r = kapi_send(p->probe, &req, on_probe, pc, NULL);
    if (r < 0) {
        x_free(pc);
        brk_kpi_record(&p->hist, (int64_t)p->sent_ms, false, 0);
        return;
    }
    p->in_flight = true;
}

/* ---- state and token ------------------------------------------------------------------------ */

static void read_state(struct brk_core *c)
{
    json_t *cm = inf_get(c->state_cm, agent_namespace(c->a), BRK_STATE_CONFIGMAP);
    struct brk_state s = {0};
    char err[256] = "";

    if (brk_state_read(cm ? json_object_get(cm, "data") : NULL, &s, err, sizeof(err)) < 0) {
        if (strcmp(err, c->state_error) != 0)
            log_warn(MOD, "ConfigMap %s/%s is refused, the last good state stays: %s",
                     agent_namespace(c->a), BRK_STATE_CONFIGMAP, err);
        snprintf(c->state_error, sizeof(c->state_error), "%s", err);
        json_decref(cm);
        return;
    }
    c->state_error[0] = '\0';
    brk_state_free(&c->state);
    c->state = s;
    c->state_known = true;
    json_decref(cm);
    evaluate(c, BRK_CHANGED_OFFERS);
}

void brk_core_state_written(struct brk_core *c, const json_t *data)
{
    struct brk_state s = {0};

    if (brk_state_read(data, &s, NULL, 0) < 0)
        return;
    brk_state_free(&c->state);
    c->state = s;
    c->state_known = true;
    evaluate(c, BRK_CHANGED_OFFERS);
}

static void read_token(struct brk_core *c)
{
    json_t *sec = c->cfg->token_file
                      ? NULL
                      : inf_get(c->token_secret, agent_namespace(c->a), c->cfg->token_secret);
    const char *b64 = jsn_str_at(sec, "data", "token", NULL);
    char *tok = NULL;
    size_t len = 0;
    bool had = c->token[0] != '\0';
    int r = -ENOENT;

    OPENSSL_cleanse(c->token, sizeof(c->token));
    if (c->cfg->token_file)
        r = file_read(c->cfg->token_file, TOKEN_MAX, FILE_READ_REGULAR, &tok, &len);
    else if (b64)
        r = peer_base64_decode(b64, TOKEN_MAX, &tok, &len);
    if (r == 0) {
        /* A token ends at its first line break (a file written with echo). */
        len = strcspn(tok, "\r\n");
        if (len >= 16 && memchr(tok, '\0', len) == NULL)
            snprintf(c->token, sizeof(c->token), "%.*s", (int)len, tok);
        else
            log_warn(MOD, "the bearer token (%s) must hold at least 16 bytes",
                     c->cfg->token_file ? c->cfg->token_file : c->cfg->token_secret);
        OPENSSL_cleanse(tok, strlen(tok));
        x_free(tok);
    }
    if (had != (c->token[0] != '\0'))
        log_info(MOD, "bearer token %s (%s%s%s)",
                 c->token[0] ? "loaded" : "gone: the mutating endpoints refuse every request",
                 c->cfg->token_file ? c->cfg->token_file : agent_namespace(c->a),
                 c->cfg->token_file ? "" : "/", c->cfg->token_file ? "" : c->cfg->token_secret);
    json_decref(sec);
}

/* ---- the queue ------------------------------------------------------------------------------ */

static void process(struct wq_queue *q, const char *key, void *data)
{
    struct brk_core *c = data;

    if (strcmp(key, KEY_PROVIDERS) == 0) {
        refresh(c);
    } else if (strcmp(key, KEY_PROBE) == 0) {
        for (size_t i = 0; i < c->nprov; i++)
            probe_one(c, c->prov[i]);
        if (c->cfg->token_file)
            read_token(c); /* a mounted Secret changes under the process */
        wq_add_after(q, KEY_PROBE, c->cfg->probe_interval_ms);
    } else if (strcmp(key, KEY_SELECT) == 0) {
        evaluate(c, 0);
    } else if (strcmp(key, "state") == 0) {
        read_state(c);
    } else if (strcmp(key, "token") == 0) {
        read_token(c);
    }
    wq_done(q, key);
}

static void on_store(struct inf_informer *inf, json_t *obj, void *data)
{
    struct brk_core *c = data;

    (void)obj;
    if (inf == c->state_cm)
        wq_add(c->q, "state");
    else if (inf == c->token_secret)
        wq_add(c->q, "token");
    else
        wq_add(c->q, KEY_PROVIDERS);
}

static void on_store_update(struct inf_informer *inf, json_t *o, json_t *n, void *data)
{
    (void)o;
    on_store(inf, n, data);
}

static void on_synced(struct inf_informer *inf, void *data)
{
    on_store(inf, NULL, data);
}

/* ---- what the API shows --------------------------------------------------------------------- */

json_t *brk_core_cluster_extra(struct brk_core *c, const json_t *fc)
{
    const char *id = jsn_str_at(fc, "spec", "clusterIdentity", "clusterID", NULL);
    struct provider *p = prov_find(c, id);
    uint64_t now = uv_now(agent_loop(c->a));
    json_t *x;

    if (!p)
        return json_pack("{s:b,s:b,s:b,s:s,s:n,s:n,s:n}", "provider", 0, "enabled",
                         id ? brk_state_enabled(&c->state, id, c->cfg->default_enabled) : 0,
                         "selected", 0, "why", "it does not advertise to this cluster", "offer",
                         "kpi", "price");
    x = json_pack("{s:b,s:b,s:b,s:s,s:O?,s:o,s:s?}", "provider", 1, "enabled", p->enabled,
                  "selected", p->selected, "why", p->why, "offer", p->offer, "kpi",
                  brk_kpi_json(&p->hist, (int64_t)now), "price", p->price);
    return x;
}

void brk_core_foreach_provider(struct brk_core *c, brk_provider_fn fn, void *data)
{
    for (size_t i = 0; i < c->nprov; i++) {
        struct provider *p = c->prov[i];
        struct brk_provider_view v = {.id = p->id,
                                      .selected = p->selected,
                                      .enabled = p->enabled,
                                      .offer = p->offer,
                                      .why = p->why};

        fn(&v, data);
    }
}

size_t brk_core_selected(struct brk_core *c, const char **ids, size_t max)
{
    size_t n = 0;

    for (size_t i = 0; i < c->nprov; i++)
        if (c->prov[i]->selected) {
            if (n < max)
                ids[n] = c->prov[i]->id;
            n++;
        }
    return n;
}

/* ---- the module ----------------------------------------------------------------------------- */

static void collect(struct metrics_registry *reg, void *data)
{
    struct brk_core *c = data;
    const char *ids[1];

    (void)reg;
    metrics_set(c->m_selected, NULL, (double)brk_core_selected(c, ids, 0));
}

int brk_core_init(struct agent *a)
{
    static const char *const probe_labels[] = {"result", NULL};
    const struct brk_config *cfg = agent_config(a)->app;
    struct inf_handlers h = {.on_add = on_store,
                             .on_update = on_store_update,
                             .on_delete = on_store,
                             .on_synced = on_synced};
    struct wq_options qo = {.max_concurrent = 1, .base_delay_ms = 100, .max_delay_ms = 10000};
    char state_sel[128], token_sel[320];
    struct brk_core *c;
    int r;

    if (!cfg)
        return -EINVAL;
    c = x_calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->a = a;
    c->cfg = cfg;
    brk_policy_default(&c->state.policy);
    if (RAND_bytes(c->token_key, sizeof(c->token_key)) != 1) {
        x_free(c);
        return -EIO;
    }
    r = agent_set_module_data(a, MOD, c);
    if (r < 0) {
        x_free(c);
        return r;
    }
    snprintf(state_sel, sizeof(state_sel), "metadata.name=%s", BRK_STATE_CONFIGMAP);
    snprintf(token_sel, sizeof(token_sel), "metadata.name=%s", cfg->token_secret);
    r = agent_queue(a, MOD, &qo, process, c, &c->q);
    if (r == 0)
        r = agent_informer(a, &peer_res_foreignclusters, NULL, NULL, AGENT_INF_ALWAYS, &h, c,
                           &c->fcs);
    if (r == 0)
        r = agent_informer(a, &peer_res_advertisements, NULL, NULL, AGENT_INF_ALWAYS, &h, c,
                           &c->advs);
    if (r == 0) {
        struct inf_options o = {.resource = &kapi_configmaps,
                                .namespace_ = agent_namespace(a),
                                .field_selector = state_sel,
                                .store = INF_STORE_TREE};

        r = agent_informer_ex(a, &o, AGENT_INF_ALWAYS, &h, c, &c->state_cm);
    }
    if (r == 0 && !cfg->token_file) {
        struct inf_options o = {.resource = &kapi_secrets,
                                .namespace_ = agent_namespace(a),
                                .field_selector = token_sel,
                                .store = INF_STORE_TREE};

        r = agent_informer_ex(a, &o, AGENT_INF_ALWAYS, &h, c, &c->token_secret);
    }
    if (r == 0)
        r = metrics_family_new(agent_metrics(a), METRICS_GAUGE, "cliqo_broker_providers",
                               "Clusters that advertise to the broker's cluster.", NULL, NULL, 0,
                               &c->m_providers);
    if (r == 0)
        r = metrics_family_new(agent_metrics(a), METRICS_GAUGE, "cliqo_broker_selected_providers",
                               "Providers selected by toggles and policy.", NULL, NULL, 0,
                               &c->m_selected);
    if (r == 0)
        r = metrics_family_new(agent_metrics(a), METRICS_COUNTER, "cliqo_broker_probes_total",
                               "Probes of the providers' endpoints, by result.", probe_labels, NULL,
                               0, &c->m_probes);
    if (r == 0)
        r = metrics_add_collector(agent_metrics(a), collect, c);
    if (r == 0)
        r = wq_add(c->q, KEY_PROBE);
    return r;
}

void brk_core_fini(struct agent *a)
{
    struct brk_core *c = brk_core_of(a);

    if (!c)
        return;
    for (size_t i = 0; i < c->nprov; i++)
        prov_free(c->prov[i]);
    x_free(c->prov);
    brk_state_free(&c->state);
    OPENSSL_cleanse(c->token, sizeof(c->token));
    OPENSSL_cleanse(c->token_key, sizeof(c->token_key));
    x_free(c);
}

bool brk_core_module_ready(struct agent *a)
{
    return brk_core_ready(brk_core_of(a));
}
