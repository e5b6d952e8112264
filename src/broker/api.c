/* brk api: see api.h. */
#include "broker/api.h"
#include "broker/catalog.h"
#include "broker/core.h"
#include "broker/dashboard.h"
#include "broker/state.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/jsonb.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/xalloc.h"
#include "kube/names.h"
#include "peering/objects.h"

#define MOD  "api"
#define JSON "application/json"

/* clang-format off */
const struct brk_api_route brk_api_routes[] = {
    {"GET", "/api/clusters", "catalog", false},
    {"POST", "/api/toggle", "orchestrator", true},
    {"GET", "/api/toggle", "orchestrator", true},
    {"GET", "/api/policy", NULL, false},
    {"PUT", "/api/policy", NULL, true},
    {"GET", "/", NULL, false},
    {"GET", "/app.js", NULL, false},
    {"GET", "/style.css", NULL, false},
};
/* clang-format on */
const size_t brk_api_nroutes = sizeof(brk_api_routes) / sizeof(brk_api_routes[0]);

struct write_op;

struct api {
    struct agent *a;
    struct brk_core *core;
    const struct brk_config *cfg;
    struct brk_bucket global;
    struct {
        char ip[48];
        struct brk_bucket b;
    } clients[BRK_API_MAX_CLIENTS];
    /* The whole catalog (no query), rebuilt when the generation moves. */
    struct httpd_body *cat_body; /* sent without a copy: every answer shares it */
    uint64_t cat_gen;
    bool cat_valid;
    struct write_op *ops; /* writes in flight */
};

bool brk_bucket_take(struct brk_bucket *b, uint32_t rate, uint32_t burst, uint64_t now_ms,
                     unsigned *retry_s)
{
    double need;

    if (rate == 0)
        return true;
    if (burst < 1)
        burst = 1;
    if (!b->used) {
        b->used = true;
        b->tokens = burst;
        b->at_ms = now_ms;
    }
    if (now_ms > b->at_ms) {
        b->tokens += (double)(now_ms - b->at_ms) * rate / 1000.0;
        if (b->tokens > burst)
            b->tokens = burst;
        b->at_ms = now_ms;
    }
    if (b->tokens >= 1.0) {
        b->tokens -= 1.0;
        return true;
    }
    need = (1.0 - b->tokens) / rate;
    if (retry_s)
        *retry_s = (unsigned)ceil(need) ? (unsigned)ceil(need) : 1;
    return false;
}

/* ---- answers --------------------------------------------------------------------------------- */

static void respond_json(struct httpd_request *req, unsigned status, json_t *body)
{
    char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;

    json_decref(body);
    if (!s) {
        httpd_respond_error(req, 500, "internal", "out of memory");
        return;
    }
    httpd_respond(req, status, JSON, s, strlen(s));
    free(s);
}

static void fail(struct httpd_request *req, unsigned status, const char *error, const char *fmt,
                 ...) __attribute__((format(printf, 4, 5)));
static void fail(struct httpd_request *req, unsigned status, const char *error, const char *fmt,
                 ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    httpd_respond_error(req, status, error, msg);
}

/* ---- guards --------------------------------------------------------------------------------- */

static bool rate_ok(struct api *api, struct httpd_request *req)
{
    uint64_t now = uv_now(agent_loop(api->a));
    const char *ip = httpd_req_peer_ip(req);
    unsigned retry = 1;
    uint32_t h = 2166136261u;
    char ra[16];

    if (api->cfg->global_rate && !brk_bucket_take(&api->global, api->cfg->global_rate,
                                                  api->cfg->global_rate * 2, now, &retry))
        goto limited;
    if (!api->cfg->rate || !ip)
        return true;
    for (const char *p = ip; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    {
        size_t i = h % BRK_API_MAX_CLIENTS;

        /* One bucket per slot: an address that takes another's slot starts afresh (a client can
         * only gain a burst this way by owning many addresses, which the global bucket bounds). */
        if (strcmp(api->clients[i].ip, ip) != 0) {
            snprintf(api->clients[i].ip, sizeof(api->clients[i].ip), "%s", ip);
            api->clients[i].b.used = false;
        }
        if (brk_bucket_take(&api->clients[i].b, api->cfg->rate, api->cfg->rate * 2, now, &retry))
            return true;
    }
limited:
    snprintf(ra, sizeof(ra), "%u", retry);
    (void)httpd_add_header(req, "Retry-After", ra);
    fail(req, 429, "too-many-requests", "over the rate limit: retry in %u s", retry);
    return false;
}

/* Whether the request carries the bearer token (constant-time comparison). */
static bool token_ok(struct api *api, struct httpd_request *req)
{
    const char *h = httpd_req_header(req, "Authorization");
    const char *want = brk_core_token(api->core);
    size_t wl = strlen(want), gl;
    unsigned char diff;

    if (!want[0] || !h || strncasecmp(h, "Bearer ", 7) != 0)
        return false;
    h += 7;
    gl = strlen(h);
    diff = gl != wl;
    for (size_t i = 0; i < wl; i++)
        diff |= (unsigned char)(want[i] ^ (i < gl ? h[i] : 0));
    return diff == 0;
}

static bool auth_ok(struct api *api, struct httpd_request *req, bool mutating)
{
    bool need =
        mutating ? api->cfg->require_token : !api->cfg->api_loopback && !api->cfg->public_catalog;

    if (!need || token_ok(api, req))
        return true;
    (void)httpd_add_header(req, "WWW-Authenticate", "Bearer realm=\"cliqo-broker\"");
    if (!brk_core_token(api->core)[0])
        fail(req, 401, "unauthorized",
             "no bearer token is configured (%s%s%s): this endpoint refuses every request",
             api->cfg->token_file ? api->cfg->token_file : agent_namespace(api->a),
             api->cfg->token_file ? "" : "/", api->cfg->token_file ? "" : api->cfg->token_secret);
    else
        fail(req, 401, "unauthorized", "a valid \"Authorization: Bearer <token>\" is required");
    return false;
}

static bool ready_ok(struct api *api, struct httpd_request *req)
{
    if (brk_core_ready(api->core))
        return true;
    (void)httpd_add_header(req, "Retry-After", "1");
    fail(req, 503, "not-ready", "the broker has not read its cluster yet");
    return false;
}

/* ---- GET /api/clusters ---------------------------------------------------------------------- */

struct fc_list {
    json_t **items;
    size_t n, cap;
};

static void fc_collect(json_t *fc, void *data)
{
    struct fc_list *l = data;

    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        json_t **n = realloc(l->items, cap * sizeof(*n));

        if (!n)
            return;
        l->items = n;
        l->cap = cap;
    }
    l->items[l->n++] = json_incref(fc);
}

static int fc_cmp(const void *a, const void *b)
{
    const char *x = kapi_obj_name(*(json_t *const *)a), *y = kapi_obj_name(*(json_t *const *)b);

    return strcmp(x ? x : "", y ? y : "");
}

static json_t *extra(const json_t *fc, void *data)
{
    return brk_core_cluster_extra(data, fc);
}

/* The page for q as JSON text (malloc'd), *next the continue token. */
static char *catalog_text(struct api *api, const struct brk_catalog_query *q, char *next)
{
    struct fc_list l = {0};
    json_t *page;
    char *s;

    inf_foreach(brk_core_fcs(api->core), fc_collect, &l);
    if (l.n)
        qsort(l.items, l.n, sizeof(*l.items), fc_cmp);
    page = brk_catalog_page((const json_t *const *)l.items, l.n, q, extra, api->core,
                            brk_core_token_key(api->core), next);
    s = page ? json_dumps(page, JSON_COMPACT) : NULL;
    json_decref(page);
    for (size_t i = 0; i < l.n; i++)
        json_decref(l.items[i]);
    free(l.items);
    return s;
}

static void handle_clusters(struct api *api, struct httpd_request *req)
{
    const char *ls = httpd_req_query(req, "labelSelector"),
               *fs = httpd_req_query(req, "fieldSelector"), *lim = httpd_req_query(req, "limit"),
               *cont = httpd_req_query(req, "continue"),
               *inm = httpd_req_header(req, "If-None-Match");
    struct brk_catalog_query q = {0};
    char err[256], next[BRK_TOKEN_MAX] = "", etag[96];
    uint32_t h = 2166136261u;
    bool whole = !ls && !fs && !lim && !cont;
    char *body = NULL;
    int r;

    if (!ready_ok(api, req))
        return;
    /* The ETag: the generation of what the catalog shows, and the query. */
    {
        const char *parts[4] = {ls, fs, lim, cont};

        for (int i = 0; i < 4; i++) {
            const char *s = parts[i] ? parts[i] : "\x01";

            for (; *s; s++)
                h = (h ^ (unsigned char)*s) * 16777619u;
            h = (h ^ 0xffu) * 16777619u;
        }
    }
    snprintf(etag, sizeof(etag), "\"%llx-%08x\"",
             (unsigned long long)brk_core_generation(api->core), h);
    if (inm && strcmp(inm, etag) == 0) {
        (void)httpd_add_header(req, "ETag", etag);
        httpd_respond(req, 304, NULL, "", 0);
        return;
    }
    r = brk_catalog_query_parse(&q, ls, fs, lim, cont, brk_core_token_key(api->core), err,
                                sizeof(err));
    if (r < 0) {
        brk_catalog_query_free(&q);
        if (r == -ESTALE)
            fail(req, 410, "expired", "%s", err);
        else
            fail(req, 400, "bad-parameter", "%s", err);
        return;
    }
    if (whole) {
        if (!api->cat_valid || api->cat_gen != brk_core_generation(api->core)) {
            char *text = catalog_text(api, &q, next);

            httpd_body_put(api->cat_body);
            api->cat_body = text ? httpd_body_new(text, strlen(text)) : NULL;
            api->cat_gen = brk_core_generation(api->core);
            api->cat_valid = api->cat_body != NULL;
        }
        brk_catalog_query_free(&q);
        if (!api->cat_valid) {
            fail(req, 500, "internal", "out of memory");
            return;
        }
        (void)httpd_add_header(req, "ETag", etag);
        httpd_respond_body(req, 200, JSON, api->cat_body);
        return;
    }
    body = catalog_text(api, &q, next);
    brk_catalog_query_free(&q);
    if (!body) {
        fail(req, 500, "internal", "out of memory");
        return;
    }
    (void)httpd_add_header(req, "ETag", etag);
    if (next[0])
        (void)httpd_add_header(req, "Continue", next);
    httpd_respond(req, 200, JSON, body, strlen(body));
    free(body);
}

/* ---- writes of the state ConfigMap ---------------------------------------------------------- */

enum op_kind { OP_TOGGLE, OP_POLICY };

struct write_op {
    struct write_op *next;
    struct api *api; /* NULL once the module's generation ended */
    struct httpd_request *req;
    enum op_kind kind;
    char id[BRK_ID_MAX];
    bool enable;
    struct brk_policy policy;
    int attempts;
};

static void op_free(struct write_op *op)
{
    if (op->api) {
        for (struct write_op **pp = &op->api->ops; *pp; pp = &(*pp)->next)
            if (*pp == op) {
                *pp = op->next;
                break;
            }
    }
    x_free(op);
}

static void op_abort(struct httpd_request *req, void *data)
{
    struct write_op *op = data;

    (void)req;
    op->req = NULL;
}

static void op_answer(struct write_op *op, unsigned status, json_t *body, const char *error,
                      const char *message)
{
    if (op->req) {
        if (body)
            respond_json(op->req, status, body);
        else
            httpd_respond_error(op->req, status, error, message);
        op->req = NULL;
    } else {
        json_decref(body);
    }
}

static void op_step(struct write_op *op);

static void op_written(struct kapi_client *kc, const struct kapi_result *res, void *data)
{
    struct write_op *op = data;
    json_t *written;

    (void)kc;
    if (!op->api) {
        x_free(op);
        return;
    }
    if (res->err == -ESTALE || res->err == -EEXIST) {
        if (++op->attempts < BRK_API_WRITE_ATTEMPTS) {
            op_step(op);
            return;
        }
        op_answer(op, 409, NULL, "conflict",
                  "the state ConfigMap kept changing under this write; try again");
        op_free(op);
        return;
    }
    if (res->err < 0) {
        log_warn(MOD, "cannot write ConfigMap %s/%s: %s", agent_namespace(op->api->a),
                 BRK_STATE_CONFIGMAP, res->status.message);
        op_answer(op, 502, NULL, "api-server", res->status.message);
        op_free(op);
        return;
    }
    written = json_object_get(res->body, "data");
    brk_core_state_written(op->api->core, written);
    if (op->kind == OP_TOGGLE) {
        log_info(MOD, "provider %s %s by the API", op->id, op->enable ? "enabled" : "disabled");
        op_answer(op, 200, json_pack("{s:s,s:b}", "id", op->id, "enabled", op->enable), NULL, NULL);
    } else {
        log_info(MOD, "policy replaced by the API");
        op_answer(op, 200, brk_policy_json(&op->policy), NULL, NULL);
    }
    op_free(op);
}

static void op_got(struct kapi_client *kc, const struct kapi_result *res, void *data)
{
    struct write_op *op = data;
    struct brk_state cur = {0};
    json_t *cm = NULL, *d = NULL;
    char err[256] = "";
    const char *ns;
    int r;

    (void)kc;
    if (!op->api) {
        x_free(op);
        return;
    }
    ns = agent_namespace(op->api->a);
    if (res->err < 0 && res->err != -ENOENT) {
        op_answer(op, 502, NULL, "api-server", res->status.message);
        op_free(op);
        return;
    }
    if (res->err == 0) {
        cm = json_deep_copy(res->body);
        if (brk_state_read(json_object_get(cm, "data"), &cur, err, sizeof(err)) < 0) {
            /* Someone edited it into nonsense: the write starts from the last good state the
             * broker read, as the broker itself kept using it, not from nothing (which would
             * drop every toggle). */
            const struct brk_state *good = brk_core_state(op->api->core);

            log_warn(MOD,
                     "ConfigMap %s/%s does not parse (%s): this write replaces it, starting "
                     "from the last good state",
                     ns, BRK_STATE_CONFIGMAP, err);
            brk_state_free(&cur);
            cur = (struct brk_state){0};
            cur.policy = good->policy;
            cur.toggles = good->toggles ? json_deep_copy(good->toggles) : NULL;
            err[0] = '\0';
        }
    } else {
        brk_policy_default(&cur.policy);
        cm = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}}}", "apiVersion", "v1", "kind", "ConfigMap",
                       "metadata", "name", BRK_STATE_CONFIGMAP, "namespace", ns, "labels",
                       "app.kubernetes.io/managed-by", "cliqo-broker");
    }
    if (op->kind == OP_POLICY)
        cur.policy = op->policy;
    d = brk_state_data(&cur, op->kind == OP_TOGGLE ? op->id : NULL, op->enable, err, sizeof(err));
    brk_state_free(&cur);
    if (!d || !cm) {
        json_decref(cm);
        json_decref(d);
        op_answer(op, err[0] ? 400 : 500, NULL, err[0] ? "bad-parameter" : "internal",
                  err[0] ? err : "out of memory");
        op_free(op);
        return;
    }
    json_object_set_new(cm, "data", d);
    if (res->err == 0)
        r = kapi_update(agent_kube(op->api->a), &kapi_configmaps, ns, BRK_STATE_CONFIGMAP, NULL, cm,
                        op_written, op);
    else
        r = kapi_create(agent_kube(op->api->a), &kapi_configmaps, ns, cm, op_written, op);
    json_decref(cm);
    if (r < 0) {
        op_answer(op, 503, NULL, "unavailable", "cannot reach the API server");
        op_free(op);
    }
}

static void op_step(struct write_op *op)
{
    if (kapi_get(agent_kube(op->api->a), &kapi_configmaps, agent_namespace(op->api->a),
                 BRK_STATE_CONFIGMAP, op_got, op) < 0) {
        op_answer(op, 503, NULL, "unavailable", "cannot reach the API server");
        op_free(op);
    }
}

static struct write_op *op_new(struct api *api, struct httpd_request *req, enum op_kind kind)
{
    struct write_op *op = x_calloc(1, sizeof(*op));

    if (!op) {
        httpd_respond_error(req, 500, "internal", "out of memory");
        return NULL;
    }
    op->api = api;
    op->req = req;
    op->kind = kind;
    op->next = api->ops;
    api->ops = op;
    httpd_req_on_abort(req, op_abort, op);
    return op;
}

/* ---- /api/toggle, /api/policy --------------------------------------------------------------- */

static void handle_toggle(struct api *api, struct httpd_request *req)
{
    const char *id = httpd_req_query(req, "id"), *en = httpd_req_query(req, "enable");
    struct write_op *op;
    json_t *fc;
    bool enable;

    if (!id || !*id) {
        fail(req, 400, "bad-parameter", "id: the cluster ID is required");
        return;
    }
    if (!kname_dns_label(id) || strlen(id) >= BRK_ID_MAX) {
        fail(req, 400, "bad-parameter", "id: \"%.64s\" is not a cluster ID", id);
        return;
    }
    if (!en || (strcmp(en, "true") != 0 && strcmp(en, "false") != 0)) {
        fail(req, 400, "bad-parameter", "enable: must be true or false");
        return;
    }
    enable = strcmp(en, "true") == 0;
    if (!ready_ok(api, req))
        return;
    fc = peer_fc_find(brk_core_fcs(api->core), id);
    if (!fc) {
        fail(req, 404, "not-found", "no ForeignCluster has cluster ID %s", id);
        return;
    }
    json_decref(fc);
    op = op_new(api, req, OP_TOGGLE);
    if (!op)
        return;
    snprintf(op->id, sizeof(op->id), "%s", id);
    op->enable = enable;
    op_step(op);
}

static void handle_policy_get(struct api *api, struct httpd_request *req)
{
    if (!ready_ok(api, req))
        return;
    respond_json(req, 200, brk_policy_json(&brk_core_state(api->core)->policy));
}

static void handle_policy_put(struct api *api, struct httpd_request *req)
{
    const char *ct = httpd_req_header(req, "Content-Type");
    size_t len = 0;
    const char *body = httpd_req_body(req, &len);
    struct brk_policy p;
    struct write_op *op;
    json_error_t je;
    json_t *j = NULL;
    char err[256];

    if (ct && strncmp(ct, JSON, strlen(JSON)) != 0) {
        fail(req, 415, "unsupported-media-type", "the body must be application/json");
        return;
    }
    if (jsonb_load(body, len, 0, 0, JSON_REJECT_DUPLICATES, &j, &je) < 0) {
        fail(req, 400, "bad-body", "the body is not JSON: %s", je.text);
        return;
    }
    if (brk_policy_parse(j, &p, err, sizeof(err)) < 0) {
        json_decref(j);
        fail(req, 400, "bad-body", "%s", err);
        return;
    }
    json_decref(j);
    if (!ready_ok(api, req))
        return;
    op = op_new(api, req, OP_POLICY);
    if (!op)
        return;
    op->policy = p;
    op_step(op);
}

/* ---- the dashboard -------------------------------------------------------------------------- */

static void handle_asset(struct api *api, struct httpd_request *req)
{
    const struct brk_asset *as = brk_asset_find(httpd_req_path(req));
    const char *inm = httpd_req_header(req, "If-None-Match");

    (void)api;
    if (!as) {
        fail(req, 404, "not-found", "no such path");
        return;
    }
    (void)httpd_add_header(req, "ETag", as->etag);
    (void)httpd_add_header(req, "Content-Security-Policy",
                           "default-src 'self'; frame-ancestors 'none'");
    (void)httpd_add_header(req, "X-Content-Type-Options", "nosniff");
    if (inm && strcmp(inm, as->etag) == 0) {
        httpd_respond(req, 304, NULL, "", 0);
        return;
    }
    httpd_respond(req, 200, as->content_type, as->data, as->len);
}

/* ---- dispatch ------------------------------------------------------------------------------- */

static bool module_on(const struct brk_config *cfg, const char *m)
{
    if (!m)
        return true;
    if (strcmp(m, "catalog") == 0)
        return cfg->catalog;
    if (strcmp(m, "orchestrator") == 0)
        return cfg->orchestrator;
    return cfg->aggregator;
}

/* Every route's handler: the agent outlives the module's generations (routes cannot be removed
 * from the server), so the route's data is the agent and the module's state is looked up here. */
static void dispatch(struct httpd_request *req, void *data)
{
    struct agent *a = data;
    struct api *api = agent_module_data(a, MOD);
    const char *m = httpd_req_method(req), *path = httpd_req_path(req);
    const struct brk_api_route *rt = NULL;

    for (size_t i = 0; i < brk_api_nroutes; i++)
        if (strcmp(brk_api_routes[i].path, path) == 0 &&
            (strcmp(brk_api_routes[i].method, m) == 0 ||
             (strcmp(m, "HEAD") == 0 && strcmp(brk_api_routes[i].method, "GET") == 0)))
            rt = &brk_api_routes[i];
    if (!api || !rt) {
        (void)httpd_add_header(req, "Retry-After", "1");
        fail(req, 503, "unavailable", "the broker is starting again");
        return;
    }
    if (!module_on(api->cfg, rt->module)) {
        fail(req, 404, "not-found", "this broker runs without --with-%s", rt->module);
        return;
    }
    if (!rate_ok(api, req) || !auth_ok(api, req, rt->mutating))
        return;
    if (strcmp(path, "/api/clusters") == 0)
        handle_clusters(api, req);
    else if (strcmp(path, "/api/toggle") == 0)
        handle_toggle(api, req);
    else if (strcmp(path, "/api/policy") == 0 && strcmp(rt->method, "PUT") == 0)
        handle_policy_put(api, req);
    else if (strcmp(path, "/api/policy") == 0)
        handle_policy_get(api, req);
    else
        handle_asset(api, req);
}

int brk_api_init(struct agent *a)
{
    struct httpd_server *srv = agent_http_server(a);
    struct api *api;
    int r = 0;

    if (!srv || !agent_config(a)->app)
        return -EINVAL;
    api = x_calloc(1, sizeof(*api));
    if (!api)
        return -ENOMEM;
    api->a = a;
    api->core = brk_core_of(a);
    api->cfg = agent_config(a)->app;
    if (!api->core) {
        x_free(api);
        return -EINVAL;
    }
    r = agent_set_module_data(a, MOD, api);
    if (r < 0) {
        x_free(api);
        return r;
    }
    for (size_t i = 0; i < brk_api_nroutes && r == 0; i++) {
        const struct brk_api_route *rt = &brk_api_routes[i];

        r = httpd_route(srv, rt->method, rt->path,
                        strcmp(rt->method, "PUT") == 0 ? BRK_API_MAX_BODY : 0, dispatch, a);
        if (r == -EEXIST) /* a generation before this one added it */
            r = 0;
    }
    return r;
}

void brk_api_fini(struct agent *a)
{
    struct api *api = agent_module_data(a, MOD);

    if (!api)
        return;
    /* Writes in flight end without their module: their callbacks free them. */
    for (struct write_op *op = api->ops, *n; op; op = n) {
        n = op->next;
        op_answer(op, 503, NULL, "unavailable", "the broker is starting again");
        op->api = NULL;
        op->next = NULL;
    }
    httpd_body_put(api->cat_body);
    x_free(api);
}
