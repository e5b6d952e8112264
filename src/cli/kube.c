/* cli/kube: options, the synchronous API client and JSON helpers of the cluster-facing verbs. */
#include "cli/cli.h"
#include "cli/kube.h"

#include "common/duration.h"
#include "common/rfc3339.h"
#include "kube/names.h"
#include "common/strutil.h"
#include "common/xalloc.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static void common_init(struct cli_common *co, const char *verb, uint64_t default_timeout_ms)
{
    memset(co, 0, sizeof(*co));
    co->verb = verb;
    co->ns = "cliqo";
    co->timeout_ms = default_timeout_ms;
}

int cli_namespace_opt(const struct opts_def *o, const char *value, char *err, size_t errlen)
{
    if (!kname_dns_label(value))
        return opts_fail(o, err, errlen, "'%s' is not a valid namespace name", value);
    *(const char **)o->dest = value;
    return 0;
}

int cli_output_json_opt(const struct opts_def *o, const char *value, char *err, size_t errlen)
{
    if (strcmp(value, "json") != 0)
        return opts_fail(o, err, errlen, "unknown output format '%s' (only json)", value);
    *(bool *)o->dest = true;
    return 0;
}

int cli_parse(struct cli_common *co, const char *verb, uint64_t default_timeout_ms,
              const struct opts_spec *spec, int argc, char **argv)
{
    char err[512];
    int n;

    common_init(co, verb, default_timeout_ms);
    if (cli_wants_help(argc, argv)) {
        opts_print_help(spec, stdout);
        return CLI_PARSED_HELP;
    }
    n = opts_parse(spec, argc, argv, err, sizeof(err));
    if (n < 0) {
        cli_misuse(verb, "%s", err);
        return CLI_PARSED_MISUSE;
    }
    return n;
}

int cli_parsed_exit(int parsed)
{
    return parsed == CLI_PARSED_HELP ? 0 : 2;
}

__attribute__((format(printf, 3, 0))) static void vreport(const char *verb, const char *kind,
                                                          const char *fmt, va_list ap)
{
    char msg[2048];

    vsnprintf(msg, sizeof(msg), fmt, ap);
    /* One line: a server message with a newline must not split the reason. */
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    fprintf(stderr, "cliqoctl %s: %s%s\n", verb, kind, msg);
}

int cli_misuse(const char *verb, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vreport(verb, "error: ", fmt, ap);
    va_end(ap);
    return 2;
}

int cli_error(const char *verb, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vreport(verb, "error: ", fmt, ap);
    va_end(ap);
    return 1;
}

void cli_progress(const char *verb, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stderr, "%s: ", verb);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
}

uint64_t cli_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void cli_sleep_ms(uint64_t ms)
{
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- the client --------------------------------------------------------------------------- */

int cli_kube_open(struct cli_kube *k, const struct cli_common *co)
{
    struct kapi_client_options opts = {.timeout_ms = 20000, .user_agent = "cliqoctl"};
    char kerr[KC_ERR_LEN];
    int r;

    memset(k, 0, sizeof(*k));
    k->ns = co->ns;
    if (co->kubeconfig)
        r = kc_load_file(co->kubeconfig, co->context, &k->cfg, kerr, sizeof(kerr));
    else
        r = kc_load_default(co->context, &k->cfg, kerr, sizeof(kerr));
    if (r < 0) {
        snprintf(k->err, sizeof(k->err), "cannot load the kubeconfig: %s",
                 *kerr ? kerr : strerror(-r));
        return r;
    }
    r = uv_loop_init(&k->loop);
    if (r < 0) {
        snprintf(k->err, sizeof(k->err), "cannot create the event loop: %s", uv_strerror(r));
        return -ENOMEM;
    }
    k->loop_ready = true;
    r = kapi_client_new(&k->loop, k->cfg, &opts, &k->api);
    if (r < 0)
        snprintf(k->err, sizeof(k->err), "cannot create the API client for %s: %s", k->cfg->server,
                 strerror(-r));
    return r;
}

void cli_kube_close(struct cli_kube *k)
{
    if (k->api) {
        kapi_client_close(k->api);
        k->api = NULL;
    }
    if (k->loop_ready) {
        uv_run(&k->loop, UV_RUN_DEFAULT);
        (void)uv_loop_close(&k->loop);
        k->loop_ready = false;
    }
    k->cfg = kc_config_free(k->cfg);
}

/* Runs the call started with s as its data and turns its result into 0/-errno and k->err. */
static int finish(struct cli_kube *k, int sent, struct kapi_sync *s, const char *what,
                  const struct kapi_resource *r, const char *ns, const char *name, json_t **ret)
{
    int e = sent;

    if (e >= 0)
        e = kapi_sync_wait(k->api, s);
    k->http_status = s->http_status;
    if (e < 0) {
        const char *msg = s->message[0] ? s->message : strerror(-e);

        if (name && r->namespaced && ns)
            snprintf(k->err, sizeof(k->err), "%s %s %s/%s: %s", what, r->kind, ns, name, msg);
        else if (name)
            snprintf(k->err, sizeof(k->err), "%s %s %s: %s", what, r->kind, name, msg);
        else
            snprintf(k->err, sizeof(k->err), "%s %s: %s", what, r->resource, msg);
    } else if (ret) {
        *ret = s->body;
        s->body = NULL;
    }
    kapi_sync_done(s);
    return e;
}

int cli_get(struct cli_kube *k, const struct kapi_resource *r, const char *ns, const char *name,
            json_t **ret)
{
    struct kapi_sync s = {0};
    json_t *obj = NULL;
    int e;

    e = finish(k, kapi_get(k->api, r, ns, name, kapi_sync_cb, &s), &s, "get", r, ns, name, &obj);
    if (e >= 0 && !json_is_object(obj)) {
        json_decref(obj);
        snprintf(k->err, sizeof(k->err), "get %s %s: the answer is not an object", r->kind, name);
        return -EPROTO;
    }
    if (e >= 0)
        *ret = obj;
    return e;
}

int cli_list(struct cli_kube *k, const struct kapi_resource *r, const char *ns,
             const char *label_selector, json_t **ret_items)
{
    struct kapi_list_opts o = {.label_selector = label_selector};
    struct kapi_sync s = {0};
    json_t *list = NULL, *items;
    int e;

    e = finish(k, kapi_list(k->api, r, ns, &o, kapi_sync_cb, &s), &s, "list", r, ns, NULL, &list);
    if (e < 0)
        return e;
    items = json_object_get(list, "items");
    if (json_is_null(items) || !items) {
        *ret_items = json_array();
    } else if (!json_is_array(items)) {
        json_decref(list);
        snprintf(k->err, sizeof(k->err), "list %s: the answer has no items", r->resource);
        return -EPROTO;
    } else {
        *ret_items = json_incref(items);
    }
    json_decref(list);
    return *ret_items ? 0 : -ENOMEM;
}

int cli_create(struct cli_kube *k, const struct kapi_resource *r, const char *ns, json_t *obj,
               json_t **ret)
{
    struct kapi_sync s = {0};

    return finish(k, kapi_create(k->api, r, ns, obj, kapi_sync_cb, &s), &s, "create", r, ns,
                  kapi_obj_name(obj), ret);
}

int cli_apply(struct cli_kube *k, const struct kapi_resource *r, const char *ns, json_t *obj,
              bool force, json_t **ret)
{
    struct kapi_sync s = {0};
    const char *name = kapi_obj_name(obj);

    return finish(
        k, kapi_apply(k->api, r, ns, name, NULL, obj, CLI_FIELD_MANAGER, force, kapi_sync_cb, &s),
        &s, "apply", r, ns, name, ret);
}

int cli_merge_patch(struct cli_kube *k, const struct kapi_resource *r, const char *ns,
                    const char *name, const char *sub, const char *patch, json_t **ret)
{
    struct kapi_sync s = {0};

    return finish(k,
                  kapi_patch(k->api, r, ns, name, sub, KAPI_PATCH_MERGE, patch, kapi_sync_cb, &s),
                  &s, "patch", r, ns, name, ret);
}

int cli_delete(struct cli_kube *k, const struct kapi_resource *r, const char *ns, const char *name)
{
    struct kapi_delete_opts o = {.propagation = "Background", .grace_period_seconds = -1};
    struct kapi_sync s = {0};

    return finish(k, kapi_delete(k->api, r, ns, name, &o, kapi_sync_cb, &s), &s, "delete", r, ns,
                  name, NULL);
}

/* ---- JSON helpers ------------------------------------------------------------------------- */

void cli_age(const char *timestamp, char *buf, size_t size)
{
    int64_t t, now = (int64_t)time(NULL);
    long long d;

    if (rfc3339_parse(timestamp, 0, &t) < 0) {
        snprintf(buf, size, "<unknown>");
        return;
    }
    d = now > t ? (long long)(now - t) : 0;
    if (d < 120)
        snprintf(buf, size, "%llds", d);
    else if (d < 7200)
        snprintf(buf, size, "%lldm", d / 60);
    else if (d < 2 * 86400)
        snprintf(buf, size, "%lldh", d / 3600);
    else
        snprintf(buf, size, "%lldd", d / 86400);
}

char *cli_b64_encode(const void *data, size_t len)
{
    size_t out = 4 * ((len + 2) / 3) + 1;
    char *buf;

    if (len > (1u << 28))
        return NULL;
    buf = x_malloc(out);
    if (!buf)
        return NULL;
    EVP_EncodeBlock((unsigned char *)buf, data, (int)len);
    return buf;
}

int cli_secret_value(const json_t *secret, const char *key, size_t max, char **ret, size_t *ret_len)
{
    const char *v = json_string_value(json_object_get(json_object_get(secret, "data"), key));

    if (!v)
        return -ENOENT;
    return peer_base64_decode(v, max, ret, ret_len);
}
