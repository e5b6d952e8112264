/* docs/broker-openapi.yaml checked against cliqo-broker's server (src/broker/api.c and the agent
 * skeleton's routes): every route is described and every description is served, the security of
 * each operation, the statuses each handler can answer with their content types, and the schemas
 * of what the code emits.
 *
 * Run with arguments, `test-broker-openapi --check METHOD PATH STATUS CONTENT_TYPE` tells whether
 * the description documents that answer (CONTENT_TYPE "-" for one without a body, as a 304): exit
 * 0 when it does, 1 with a one-line reason on stderr when not, 2 on misuse. The e2e tests call it
 * on the broker's real answers. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testjson.h"
#include "broker/api.h"
#include "broker/dashboard.h"
#include "broker/kpi.h"
#include "broker/select.h"
#include "common/fileio.h"
#include "common/strutil.h"
#include "common/xalloc.h"
#include "kube/yamljson.h"

#ifndef CLIQO_OPENAPI_YAML
#error "CLIQO_OPENAPI_YAML: the path of docs/broker-openapi.yaml (tests/unit/broker.cmake)"
#endif

#define N(a)     (sizeof(a) / sizeof((a)[0]))
#define JSON     "application/json"
#define NO_BODY  "-"
#define MAX_REFS 8 /* $ref hops followed */
#define MAX_ANSW 16
#define WHY_MAX  512
#define TYPE_MAX 128

/* ---- the description ----------------------------------------------------------------------- */

static json_t *doc; /* the description as JSON, loaded once */

static int load(const char *path, json_t **ret, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    json_t *all = NULL;
    int r;

    r = file_read(path, 1u << 20, FILE_READ_REGULAR, &text, &len);
    if (r < 0) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(-r));
        return r;
    }
    r = yj_load_all(text, len, path, &all, err, errlen);
    x_free(text);
    if (r < 0)
        return r;
    if (json_array_size(all) != 1 || !json_is_object(json_array_get(all, 0))) {
        snprintf(err, errlen, "%s: expected one YAML document, an object", path);
        json_decref(all);
        return -EINVAL;
    }
    *ret = json_incref(json_array_get(all, 0));
    json_decref(all);
    return 0;
}

/* v with its local $ref followed ("#/components/responses/Error"), NULL when one does not
 * resolve. */
static const json_t *deref(const json_t *v)
{
    for (int hops = 0; hops < MAX_REFS; hops++) {
        const char *ref = json_string_value(json_object_get(v, "$ref"));
        char part[256];

        if (!ref)
            return v;
        if (strncmp(ref, "#/", 2) != 0)
            return NULL;
        v = doc;
        for (const char *p = ref + 2; v && *p;) {
            size_t n = strcspn(p, "/"), k = 0;

            if (n >= sizeof(part))
                return NULL;
            /* JSON Pointer's escapes: ~1 is '/', ~0 is '~'. */
            for (size_t i = 0; i < n; i++) {
                if (p[i] == '~' && i + 1 < n && (p[i + 1] == '0' || p[i + 1] == '1')) {
                    part[k++] = p[i + 1] == '1' ? '/' : '~';
                    i++;
                } else {
                    part[k++] = p[i];
                }
            }
            part[k] = '\0';
            v = json_object_get(v, part);
            p += n;
            if (*p == '/')
                p++;
        }
    }
    return NULL;
}

/* The media type of a Content-Type: before any parameter, trimmed, lower case. */
static void media_type(const char *ct, char *out, size_t outlen)
{
    size_t n = 0;

    while (*ct == ' ' || *ct == '\t')
        ct++;
    for (; *ct && *ct != ';' && n + 1 < outlen; ct++)
        out[n++] = (char)tolower((unsigned char)*ct);
    while (n > 0 && (out[n - 1] == ' ' || out[n - 1] == '\t'))
        n--;
    out[n] = '\0';
}

/* The operation of method (upper case, as HTTP has it; HEAD is GET's) on path, NULL when the
 * description has none. */
static const json_t *operation(const char *method, const char *path)
{
    char m[16];
    size_t i;

    if (strcmp(method, "HEAD") == 0)
        method = "GET";
    for (i = 0; method[i] && i + 1 < sizeof(m); i++)
        m[i] = (char)tolower((unsigned char)method[i]);
    m[i] = '\0';
    return json_object_get(deref(json_object_get(json_object_get(doc, "paths"), path)), m);
}

static const char *const http_methods[] = {"get",     "put",  "post",  "delete",
                                           "options", "head", "patch", "trace"};

static bool is_http_method(const char *k)
{
    for (size_t i = 0; i < N(http_methods); i++)
        if (strcmp(k, http_methods[i]) == 0)
            return true;
    return false;
}

/* Whether the description documents the answer: status with a body of content type ct (NO_BODY:
 * none) to method on path (a query string is ignored). Else why says why not. The server itself
 * answers 404 to a path the description does not list and 405 to a method a path does not list
 * (the description's info says so): those are documented for every path and method. */
static bool documented(const char *method, const char *path_q, unsigned status, const char *ct,
                       char *why, size_t whylen)
{
    char path[1024], code[8], want[TYPE_MAX], have[TYPE_MAX], list[256] = "";
    const json_t *item, *op, *resp, *content, *v;
    bool no_body = strcmp(ct, NO_BODY) == 0;
    const char *k;
    size_t n;

    n = strcspn(path_q, "?");
    if (n >= sizeof(path)) {
        snprintf(why, whylen, "path too long");
        return false;
    }
    memcpy(path, path_q, n);
    path[n] = '\0';
    media_type(ct, want, sizeof(want));
    item = deref(json_object_get(json_object_get(doc, "paths"), path));
    if (!item) {
        if (status == 404 && strcmp(want, JSON) == 0)
            return true;
        snprintf(why, whylen, "%.160s: no such path in the description (only a JSON 404 is)", path);
        return false;
    }
    op = operation(method, path);
    if (!op) {
        if (status == 405 && strcmp(want, JSON) == 0)
            return true;
        snprintf(why, whylen, "%.16s %.160s: no such operation in the description (only a JSON 405 is)",
                 method, path);
        return false;
    }
    snprintf(code, sizeof(code), "%u", status);
    resp = deref(json_object_get(json_object_get(op, "responses"), code));
    if (!resp) {
        json_object_foreach((json_t *)json_object_get(op, "responses"), k, v)
        {
            size_t l = strlen(list);

            snprintf(list + l, sizeof(list) - l, "%s%s", l ? ", " : "", k);
        }
        snprintf(why, whylen, "%.16s %.160s: status %u is not documented (documented: %.160s)", method, path,
                 status, list);
        return false;
    }
    content = json_object_get(resp, "content");
    if (no_body) {
        if (json_object_size(content) == 0)
            return true;
        snprintf(why, whylen, "%.16s %.160s %u: documented with a body, the answer has none", method, path,
                 status);
        return false;
    }
    json_object_foreach((json_t *)content, k, v)
    {
        size_t l = strlen(list);

        media_type(k, have, sizeof(have));
        if (strcmp(have, want) == 0)
            return true;
        snprintf(list + l, sizeof(list) - l, "%s%s", l ? ", " : "", k);
    }
    snprintf(why, whylen, "%.16s %.160s %u: content type %.64s is not documented (documented: %.160s)", method,
             path, status, ct, list[0] ? list : "no body");
    return false;
}

/* ---- what the server answers ----------------------------------------------------------------- */

/* The agent skeleton's own routes on the API's listener (src/agent/agent.c, agent_run): not in
 * brk_api_routes, served whatever modules run, neither rate-limited nor guarded. */
static const struct {
    const char *method, *path;
} skeleton[] = {
    {"GET", "/healthz"},
    {"GET", "/livez"},
    {"GET", "/readyz"},
    {"GET", "/metrics"},
};

static bool is_skeleton(const char *method, const char *path)
{
    for (size_t i = 0; i < N(skeleton); i++)
        if (strcmp(skeleton[i].method, method) == 0 && strcmp(skeleton[i].path, path) == 0)
            return true;
    return false;
}

static const struct brk_api_route *route_of(const char *method, const char *path)
{
    for (size_t i = 0; i < brk_api_nroutes; i++)
        if (strcmp(brk_api_routes[i].method, method) == 0 &&
            strcmp(brk_api_routes[i].path, path) == 0)
            return &brk_api_routes[i];
    return NULL;
}

struct answer {
    unsigned status;
    const char *type; /* media type; NO_BODY for none */
};

/* Every answer of every operation, and the code path that makes it. Every route of brk_api_routes
 * goes through dispatch() in src/broker/api.c, which answers first:
 *   503 JSON  the module "api" between two generations (agent restarting its modules);
 *   429 JSON  rate_ok(): over the per-address or the global token bucket (Retry-After);
 *   401 JSON  auth_ok(): mutating with --require-token, or a read beyond loopback without
 *             --public-catalog, and no valid bearer token;
 * then its handler, whose answers are listed per operation. The writes (toggle, PUT policy) wait
 * for the API server: httpd answers 504 to one still pending after handler_timeout_ms and 503 to
 * one pending when it shuts down (src/httpd/httpd.c, on_deadline and httpd_close). */
/* clang-format off */
#define DISPATCH {401, JSON}, {429, JSON}, {503, JSON}
/* clang-format on */
/* op_got / op_written / op_step in api.c: 400 brk_state_data refused the ID, 409 the state
 * ConfigMap changed BRK_API_WRITE_ATTEMPTS times, 500 out of memory, 502 the API server refused
 * or failed, 503 (listed in DISPATCH) cannot reach it (kapi_* < 0), 504 httpd's handler timeout. */
/* clang-format off */
#define WRITE {400, JSON}, {409, JSON}, {500, JSON}, {502, JSON}, {504, JSON}
/* clang-format on */

static const struct {
    const char *method, *path;
    struct answer answers[MAX_ANSW];
} expected[] = {
    /* handle_clusters: 200 the page (respond with JSON, ETag, Continue), 304 If-None-Match equals
     * the ETag, 400 brk_catalog_query_parse -EINVAL, 410 its -ESTALE, 500 out of memory, 503
     * ready_ok(); 404 module_on(): without --with-catalog. */
    {"GET",
     "/api/clusters",
     {DISPATCH, {200, JSON}, {304, NO_BODY}, {400, JSON}, {404, JSON}, {410, JSON}, {500, JSON}}},
    /* handle_toggle: 400 a missing or bad id or enable, 404 no ForeignCluster has the ID (and
     * module_on(): without --with-orchestrator), 503 ready_ok(), 500 op_new() out of memory,
     * then the write; 200 op_written() {id, enabled}. */
    {"POST", "/api/toggle", {DISPATCH, WRITE, {200, JSON}, {404, JSON}}},
    {"GET", "/api/toggle", {DISPATCH, WRITE, {200, JSON}, {404, JSON}}},
    /* handle_policy_get: 200 brk_policy_json, 500 respond_json() when that is NULL, 503
     * ready_ok(). */
    {"GET", "/api/policy", {DISPATCH, {200, JSON}, {500, JSON}}},
    /* handle_policy_put: 415 a Content-Type other than application/json, 400 not JSON or
     * brk_policy_parse refused it, 413 over BRK_API_MAX_BODY (httpd, the route's max_body), 503
     * ready_ok(), then the write; 200 op_written() the policy. */
    {"PUT", "/api/policy", {DISPATCH, WRITE, {200, JSON}, {413, JSON}, {415, JSON}}},
    /* handle_asset: 200 the file with its content type (brk_asset_find, checked below never to
     * miss, so its 404 cannot happen), 304 If-None-Match equals the file's ETag. */
    {"GET", "/", {DISPATCH, {200, "text/html"}, {304, NO_BODY}}},
    {"GET", "/app.js", {DISPATCH, {200, "text/javascript"}, {304, NO_BODY}}},
    {"GET", "/style.css", {DISPATCH, {200, "text/css"}, {304, NO_BODY}}},
    /* src/agent/agent.c: handle_healthz (httpd_respond_text 200), handle_readyz (200 or 503 with
     * one line per check, 500 text when out of memory), handle_metrics (200 text exposition, 500
     * JSON when rendering fails). */
    {"GET", "/healthz", {{200, "text/plain"}}},
    {"GET", "/livez", {{200, "text/plain"}}},
    {"GET", "/readyz", {{200, "text/plain"}, {500, "text/plain"}, {503, "text/plain"}}},
    {"GET", "/metrics", {{200, "text/plain"}, {500, JSON}}},
};

static const struct answer *expected_answer(size_t i, unsigned status)
{
    for (size_t j = 0; j < MAX_ANSW && expected[i].answers[j].status; j++)
        if (expected[i].answers[j].status == status)
            return &expected[i].answers[j];
    return NULL;
}

/* ---- the tests ------------------------------------------------------------------------------- */

static int setup(void **state)
{
    char err[512] = "";

    (void)state;
    if (load(CLIQO_OPENAPI_YAML, &doc, err, sizeof(err)) < 0) {
        print_error("%s\n", err);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    json_decref(doc);
    doc = NULL;
    return 0;
}

static void test_document(void **state)
{
    const json_t *paths = json_object_get(doc, "paths");
    const char *desc =
        json_string_value(json_object_get(json_object_get(doc, "info"), "description"));

    (void)state;
    assert_string_equal(json_string_value(json_object_get(doc, "openapi")), "3.0.3");
    assert_true(json_is_object(paths));
    assert_non_null(desc);
    /* The server's own 404 and 405, which --check accepts for any path and method, are stated. */
    assert_non_null(strstr(desc, "405"));
    assert_non_null(strstr(desc, "404"));
    /* Every $ref resolves. */
    {
        const json_t *stack[1024];
        size_t n = 0;

        stack[n++] = doc;
        while (n) {
            const json_t *v = stack[--n], *c;
            const char *k;
            size_t i;

            if (json_is_object(v)) {
                if (json_object_get(v, "$ref") && !deref(v))
                    fail_msg("$ref %s does not resolve",
                             json_string_value(json_object_get(v, "$ref")));
                json_object_foreach((json_t *)v, k, c)
                {
                    assert_true(n < N(stack));
                    stack[n++] = c;
                }
            } else if (json_is_array(v)) {
                json_array_foreach(v, i, c)
                {
                    assert_true(n < N(stack));
                    stack[n++] = c;
                }
            }
        }
    }
}

/* Every route of the server is an operation of the description. */
static void test_routes_described(void **state)
{
    (void)state;
    assert_true(brk_api_nroutes > 0);
    for (size_t i = 0; i < brk_api_nroutes; i++)
        if (!operation(brk_api_routes[i].method, brk_api_routes[i].path))
            fail_msg("route %s %s is not in docs/broker-openapi.yaml", brk_api_routes[i].method,
                     brk_api_routes[i].path);
    for (size_t i = 0; i < N(skeleton); i++)
        if (!operation(skeleton[i].method, skeleton[i].path))
            fail_msg("the skeleton's %s %s is not in docs/broker-openapi.yaml", skeleton[i].method,
                     skeleton[i].path);
}

/* Every operation of the description is served: a route of brk_api_routes or the skeleton's. */
static void test_description_served(void **state)
{
    const char *path, *k;
    json_t *item, *op;
    size_t nops = 0;

    (void)state;
    json_object_foreach(json_object_get(doc, "paths"), path, item)
    {
        json_object_foreach((json_t *)deref(item), k, op)
        {
            char m[16];
            size_t i;

            if (!is_http_method(k)) {
                /* Only what OpenAPI allows beside the operations. */
                if (strcmp(k, "summary") != 0 && strcmp(k, "description") != 0 &&
                    strcmp(k, "parameters") != 0 && strcmp(k, "servers") != 0)
                    fail_msg("%s: unexpected member %s", path, k);
                continue;
            }
            for (i = 0; k[i] && i + 1 < sizeof(m); i++)
                m[i] = (char)toupper((unsigned char)k[i]);
            m[i] = '\0';
            if (!route_of(m, path) && !is_skeleton(m, path))
                fail_msg("%s %s is described but the server has no such route", m, path);
            nops++;
        }
    }
    assert_int_equal(nops, brk_api_nroutes + N(skeleton));
}

/* Mutating operations need the bearer token; the other routes of the API and the dashboard
 * take it beyond loopback (optional: {} or bearer); the skeleton's are open. */
static void test_security(void **state)
{
    const json_t *schemes = json_object_get(json_object_get(doc, "components"), "securitySchemes");
    json_t *bearer_only = test_js("[{'bearer': []}]"), *optional = test_js("[{}, {'bearer': []}]");
    json_t *scheme = test_js("{'type': 'http', 'scheme': 'bearer'}");

    (void)state;
    assert_true(json_equal(json_object_get(schemes, "bearer"), scheme));
    assert_null(json_object_get(doc, "security")); /* no default for every operation */
    for (size_t i = 0; i < brk_api_nroutes; i++) {
        const struct brk_api_route *rt = &brk_api_routes[i];
        const json_t *sec = json_object_get(operation(rt->method, rt->path), "security");

        if (!json_equal(sec, rt->mutating ? bearer_only : optional)) {
            char *s = sec ? json_dumps(sec, JSON_COMPACT) : NULL;

            fail_msg("%s %s: security %s, want %s", rt->method, rt->path, s ? s : "(none)",
                     rt->mutating ? "[{bearer: []}]" : "[{}, {bearer: []}]");
        }
    }
    for (size_t i = 0; i < N(skeleton); i++)
        if (json_object_get(operation(skeleton[i].method, skeleton[i].path), "security"))
            fail_msg("%s %s: the skeleton's routes take no token", skeleton[i].method,
                     skeleton[i].path);
    json_decref(bearer_only);
    json_decref(optional);
    json_decref(scheme);
}

/* The statuses documented for each operation are exactly those its code paths can answer, each
 * with the content type the code sends. */
static void test_statuses(void **state)
{
    char why[WHY_MAX];

    (void)state;
    /* The table covers every operation. */
    for (size_t i = 0; i < brk_api_nroutes; i++) {
        size_t j;

        for (j = 0; j < N(expected); j++)
            if (strcmp(expected[j].method, brk_api_routes[i].method) == 0 &&
                strcmp(expected[j].path, brk_api_routes[i].path) == 0)
                break;
        if (j == N(expected))
            fail_msg("route %s %s: add its answers to the table", brk_api_routes[i].method,
                     brk_api_routes[i].path);
    }
    for (size_t i = 0; i < N(expected); i++) {
        const json_t *op = operation(expected[i].method, expected[i].path);
        const char *k;
        json_t *v;

        if (!op)
            fail_msg("%s %s: not described", expected[i].method, expected[i].path);
        if (!route_of(expected[i].method, expected[i].path) &&
            !is_skeleton(expected[i].method, expected[i].path))
            fail_msg("%s %s: not a route of the server", expected[i].method, expected[i].path);
        /* What the code answers is documented, with its content type... */
        for (size_t j = 0; j < MAX_ANSW && expected[i].answers[j].status; j++) {
            const struct answer *a = &expected[i].answers[j];

            if (!documented(expected[i].method, expected[i].path, a->status, a->type, why,
                            sizeof(why)))
                fail_msg("%s", why);
        }
        /* ...and nothing else is documented: no other status, no other content type. */
        json_object_foreach(json_object_get(op, "responses"), k, v)
        {
            uint64_t status;
            const struct answer *a;
            const json_t *content = json_object_get(deref(v), "content");

            if (parse_u64(k, 599, &status) < 0 || status < 100)
                fail_msg("%s %s: response %s is not a status", expected[i].method, expected[i].path,
                         k);
            a = expected_answer(i, (unsigned)status);
            if (!a)
                fail_msg("%s %s: %s is documented but no code path answers it", expected[i].method,
                         expected[i].path, k);
            if (strcmp(a->type, NO_BODY) == 0 ? json_object_size(content) != 0
                                              : json_object_size(content) != 1)
                fail_msg("%s %s %s: documents %zu content types, the code sends %s",
                         expected[i].method, expected[i].path, k, json_object_size(content),
                         a->type);
        }
    }
}

/* The headers the code sends with its answers are documented: the catalog's ETag and Continue
 * (handle_clusters), Retry-After with 429 (rate_ok), WWW-Authenticate with 401 (auth_ok). */
static void test_headers(void **state)
{
    const json_t *h200 = json_object_get(
        deref(json_object_get(json_object_get(operation("GET", "/api/clusters"), "responses"),
                              "200")),
        "headers");

    (void)state;
    assert_non_null(json_object_get(h200, "ETag"));
    assert_non_null(json_object_get(h200, "Continue"));
    assert_null(json_object_get(h200, "X-Continue"));
    for (size_t i = 0; i < brk_api_nroutes; i++) {
        const json_t *resps = json_object_get(
            operation(brk_api_routes[i].method, brk_api_routes[i].path), "responses");

        assert_non_null(json_object_get(
            json_object_get(deref(json_object_get(resps, "429")), "headers"), "Retry-After"));
        assert_non_null(json_object_get(
            json_object_get(deref(json_object_get(resps, "401")), "headers"), "WWW-Authenticate"));
    }
}

/* The dashboard's routes serve a file each (handle_asset's 404 cannot happen), with the content
 * type the description gives. */
static void test_assets(void **state)
{
    char why[WHY_MAX];
    size_t n = 0;

    (void)state;
    for (size_t i = 0; i < brk_api_nroutes; i++) {
        const struct brk_api_route *rt = &brk_api_routes[i];
        const struct brk_asset *as;

        if (strncmp(rt->path, "/api/", 5) == 0)
            continue;
        as = brk_asset_find(rt->path);
        if (!as)
            fail_msg("%s %s: no dashboard file", rt->method, rt->path);
        if (!documented(rt->method, rt->path, 200, as->content_type, why, sizeof(why)))
            fail_msg("%s", why);
        n++;
    }
    assert_int_equal(n, brk__assets_count);
}

static void expect_keys(const char *what, const json_t *obj, const char *const *keys, size_t n)
{
    if (json_object_size(obj) != n)
        fail_msg("%s: %zu members, want %zu", what, json_object_size(obj), n);
    for (size_t i = 0; i < n; i++)
        if (!json_object_get(obj, keys[i]))
            fail_msg("%s: no member %s", what, keys[i]);
}

/* The schemas list the members the code emits. */
static void test_schemas(void **state)
{
    const json_t *schemas = json_object_get(json_object_get(doc, "components"), "schemas");
    const json_t *broker = json_object_get(
        json_object_get(json_object_get(schemas, "Cluster"), "properties"), "broker");
    const json_t *kpi = json_object_get(json_object_get(broker, "properties"), "kpi");
    /* src/broker/core.c, brk_core_cluster_extra: the "broker" member of each catalog item, with
     * every key present (null when unknown) for providers and non-providers alike. */
    static const char *const broker_keys[] = {"provider", "enabled", "selected", "why",
                                              "offer",    "kpi",     "price"};
    /* src/broker/api.c, op_written: the toggle's answer. */
    static const char *const toggle_keys[] = {"id", "enabled"};
    /* src/httpd/httpd.c, httpd_respond_error: every JSON error. */
    static const char *const error_keys[] = {"error", "message"};
    struct brk_kpi_hist hist;
    struct brk_policy p;
    char err[256];
    json_t *j, *required;
    const char *k;
    json_t *v;
    size_t i;

    (void)state;
    expect_keys("Cluster.broker", json_object_get(broker, "properties"), broker_keys,
                N(broker_keys));
    required = json_object_get(broker, "required");
    assert_int_equal(json_array_size(required), N(broker_keys));
    json_array_foreach(required, i, v)
    {
        assert_non_null(
            json_object_get(json_object_get(broker, "properties"), json_string_value(v)));
    }
    expect_keys("Toggle", json_object_get(json_object_get(schemas, "Toggle"), "properties"),
                toggle_keys, N(toggle_keys));
    expect_keys("Error", json_object_get(json_object_get(schemas, "Error"), "properties"),
                error_keys, N(error_keys));

    /* kpi: brk_kpi_json's members, empty and after probes. */
    brk_kpi_init(&hist);
    for (int round = 0; round < 2; round++) {
        j = brk_kpi_json(&hist, 10000);
        assert_non_null(j);
        assert_int_equal(json_object_size(j), json_object_size(json_object_get(kpi, "properties")));
        json_object_foreach(j, k, v)
        {
            const json_t *prop = json_object_get(json_object_get(kpi, "properties"), k);

            if (!prop)
                fail_msg("Cluster.broker.kpi: no member %s", k);
            if (json_is_null(v) && !json_is_true(json_object_get(prop, "nullable")))
                fail_msg("Cluster.broker.kpi.%s: null but not nullable", k);
        }
        json_decref(j);
        brk_kpi_record(&hist, 1000, true, 12);
        brk_kpi_record(&hist, 2000, false, 0);
        brk_kpi_record(&hist, 3000, true, 15);
    }

    /* Policy: every member brk_policy_json writes of a policy that sets everything. */
    j = test_js("{'minUptimeSeconds': 600, 'maxLatencyMs': 50, 'minFree': {'cpu': '2'},"
                " 'maxPrice': '0.05', 'requiredLabels': {'region': 'eu'}, 'hysteresisSeconds': 3}");
    if (brk_policy_parse(j, &p, err, sizeof(err)) < 0)
        fail_msg("%s", err);
    json_decref(j);
    j = brk_policy_json(&p);
    assert_non_null(j);
    assert_int_equal(json_object_size(j), json_object_size(json_object_get(
                                              json_object_get(schemas, "Policy"), "properties")));
    json_object_foreach(j, k, v)
    {
        if (!json_object_get(json_object_get(json_object_get(schemas, "Policy"), "properties"), k))
            fail_msg("Policy: no member %s", k);
    }
    json_decref(j);
}

/* The check the e2e tests run on real answers. */
static void test_check(void **state)
{
    static const struct {
        const char *method, *path;
        unsigned status;
        const char *type;
        bool ok;
    } cases[] = {
        {"GET", "/api/clusters", 200, "application/json", true},
        {"GET", "/api/clusters?limit=1&continue=x", 200, "application/json", true},
        {"HEAD", "/api/clusters", 200, "application/json", true},
        {"GET", "/api/clusters", 200, "Application/JSON; charset=utf-8", true},
        {"GET", "/api/clusters", 304, "-", true},
        {"GET", "/api/clusters", 304, "application/json", false},
        {"GET", "/api/clusters", 200, "-", false},
        {"GET", "/api/clusters", 200, "text/html", false},
        {"GET", "/api/clusters", 410, "application/json", true},
        {"GET", "/api/clusters", 409, "application/json", false},
        {"POST", "/api/toggle?id=p1&enable=true", 409, "application/json", true},
        {"POST", "/api/toggle", 502, "application/json", true},
        {"PUT", "/api/policy", 415, "application/json", true},
        {"PUT", "/api/policy", 413, "application/json", true},
        {"GET", "/api/policy", 415, "application/json", false},
        {"GET", "/api/policy", 429, "application/json", true},
        {"GET", "/", 200, "text/html; charset=utf-8", true},
        {"GET", "/app.js", 200, "text/javascript; charset=utf-8", true},
        {"GET", "/style.css", 200, "text/css; charset=utf-8", true},
        {"GET", "/style.css", 304, "-", true},
        {"GET", "/healthz", 200, "text/plain; charset=utf-8", true},
        {"GET", "/healthz", 200, "application/json", false},
        {"GET", "/readyz", 503, "text/plain; charset=utf-8", true},
        {"GET", "/metrics", 200, "text/plain; version=0.0.4; charset=utf-8", true},
        /* The server's own: an unknown path, a method a path does not list. */
        {"GET", "/nowhere", 404, "application/json", true},
        {"GET", "/nowhere", 200, "application/json", false},
        {"DELETE", "/api/policy", 405, "application/json", true},
        {"DELETE", "/api/policy", 200, "application/json", false},
        {"POST", "/api/clusters", 405, "application/json", true},
        {"PUT", "/healthz", 405, "text/plain", false},
    };

    (void)state;
    for (size_t i = 0; i < N(cases); i++) {
        char why[WHY_MAX] = "";
        bool ok = documented(cases[i].method, cases[i].path, cases[i].status, cases[i].type, why,
                             sizeof(why));

        if (ok != cases[i].ok)
            fail_msg("case %zu (%s %s %u %s): %s", i, cases[i].method, cases[i].path,
                     cases[i].status, cases[i].type, ok ? "documented" : why);
        if (!ok && (!why[0] || strchr(why, '\n')))
            fail_msg("case %zu: the reason must be one line", i);
    }
}

/* ---- main ------------------------------------------------------------------------------------ */

static int check_main(int argc, char **argv)
{
    char err[512] = "", why[WHY_MAX] = "";
    uint64_t status;
    bool ok;

    if (argc != 6 || strcmp(argv[1], "--check") != 0 || parse_u64(argv[4], 599, &status) < 0 ||
        status < 100) {
        fprintf(stderr,
                "usage: %s [--check METHOD PATH STATUS CONTENT_TYPE]\n"
                "  without arguments: the unit tests of docs/broker-openapi.yaml\n"
                "  --check: exit 0 when the description documents the answer (CONTENT_TYPE "
                "\"-\" for none), 1 when not\n",
                argv[0]);
        return 2;
    }
    if (load(CLIQO_OPENAPI_YAML, &doc, err, sizeof(err)) < 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    ok = documented(argv[2], argv[3], (unsigned)status, argv[5], why, sizeof(why));
    json_decref(doc);
    if (!ok) {
        fprintf(stderr, "%s\n", why);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_document),
        cmocka_unit_test(test_routes_described),
        cmocka_unit_test(test_description_served),
        cmocka_unit_test(test_security),
        cmocka_unit_test(test_statuses),
        cmocka_unit_test(test_headers),
        cmocka_unit_test(test_assets),
        cmocka_unit_test(test_schemas),
        cmocka_unit_test(test_check),
    };

    if (argc > 1)
        return check_main(argc, argv);
    return cmocka_run_group_tests(tests, setup, teardown);
}
