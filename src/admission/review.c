#include "admission/review.h"
#include "common/errbuf.h"
#include "common/jsonb.h"
#include "common/xalloc.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *adm_printable(const char *s, char *buf, size_t size)
{
    size_t n = 0;

    if (size == 0)
        return buf;
    for (; s && *s && n + 1 < size; s++)
        buf[n++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
    buf[n] = '\0';
    return buf;
}

/* Copies an optional string member into buf. Absent or null: "" (unless required). A string
 * longer than size - 1, with a NUL or a control character, or of another type is refused. */
static int get_str(const json_t *obj, const char *key, bool required, char *buf, size_t size,
                   const char *where, char *err, size_t errlen)
{
    const json_t *v = json_object_get(obj, key);
    size_t n;
    const char *s;

    buf[0] = '\0';
    if (!v || json_is_null(v)) {
        if (required)
            return errbuf_fmt(err, errlen, -EINVAL, "%s%s is missing", where, key);
        return 0;
    }
    if (!json_is_string(v))
        return errbuf_fmt(err, errlen, -EINVAL, "%s%s is not a string", where, key);
    s = json_string_value(v);
    n = json_string_length(v);
    if (n != strlen(s))
        return errbuf_fmt(err, errlen, -EINVAL, "%s%s contains a NUL byte", where, key);
    if (n >= size)
        return errbuf_fmt(err, errlen, -EINVAL, "%s%s is longer than %zu bytes", where, key,
                          size - 1);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return errbuf_fmt(err, errlen, -EINVAL, "%s%s contains a control character", where,
                              key);
    if (required && n == 0)
        return errbuf_fmt(err, errlen, -EINVAL, "%s%s is empty", where, key);
    memcpy(buf, s, n + 1);
    return 0;
}

static int get_obj(const json_t *obj, const char *key, bool required, const json_t **ret,
                   const char *where, char *err, size_t errlen)
{
    const json_t *v = json_object_get(obj, key);

    *ret = NULL;
    if (!v || json_is_null(v)) {
        if (required)
            return errbuf_fmt(err, errlen, -EINVAL, "%s%s is missing", where, key);
        return 0;
    }
    if (!json_is_object(v))
        return errbuf_fmt(err, errlen, -EINVAL, "%s%s is not an object", where, key);
    *ret = v;
    return 0;
}

int adm_review_decode(const char *body, size_t len, struct adm_request *ret, char *err,
                      size_t errlen)
{
    struct adm_request r;
    json_error_t je;
    const json_t *req, *kind, *res, *user, *dry;
    char api[64], k[64];
    static const char *const ops[] = {"CREATE", "UPDATE", "DELETE", "CONNECT"};
    bool op_ok = false;
    int rc;

    memset(&r, 0, sizeof(r));
    if (!body || !ret)
        return errbuf_fmt(err, errlen, -EINVAL, "no review");
    if (len > ADM_REVIEW_MAX) {
        snprintf(err, errlen, "the review is larger than %u bytes", ADM_REVIEW_MAX);
        return -E2BIG;
    }
    rc = jsonb_load(body, len, jsonb_budget(len, JSONB_RATIO_KUBE), 0, JSON_REJECT_DUPLICATES,
                    &r.review, &je);
    if (rc == -E2BIG) {
        rc = errbuf_fmt(err, errlen, -EINVAL, "the review is refused: %s", je.text);
        goto out;
    }
    if (rc < 0) {
        char shown[120];

        rc = errbuf_fmt(err, errlen, -EINVAL, "the body is not JSON: %s (line %d, column %d)",
                        adm_printable(je.text, shown, sizeof(shown)), je.line, je.column);
        goto out;
    }
    rc = -EINVAL;
    if (!json_is_object(r.review)) {
        errbuf_fmt(err, errlen, -EINVAL, "the body is not a JSON object");
        goto out;
    }
    if (get_str(r.review, "apiVersion", true, api, sizeof(api), "", err, errlen) < 0 ||
        get_str(r.review, "kind", true, k, sizeof(k), "", err, errlen) < 0)
        goto out;
    if (strcmp(api, ADM_REVIEW_API) != 0 || strcmp(k, ADM_REVIEW_KIND) != 0) {
        char a[40], b[40];

        errbuf_fmt(err, errlen, -EINVAL, "expected %s %s, not %s %s", ADM_REVIEW_API,
                   ADM_REVIEW_KIND, adm_printable(api, a, sizeof(a)),
                   adm_printable(k, b, sizeof(b)));
        goto out;
    }
    if (get_obj(r.review, "request", true, &req, "", err, errlen) < 0 ||
        get_str(req, "uid", true, r.uid, sizeof(r.uid), "request.", err, errlen) < 0 ||
        get_str(req, "operation", true, r.operation, sizeof(r.operation), "request.", err, errlen) <
            0 ||
        get_obj(req, "kind", true, &kind, "request.", err, errlen) < 0 ||
        get_str(kind, "group", false, r.group, sizeof(r.group), "request.kind.", err, errlen) < 0 ||
        get_str(kind, "version", true, r.version, sizeof(r.version), "request.kind.", err, errlen) <
            0 ||
        get_str(kind, "kind", true, r.kind, sizeof(r.kind), "request.kind.", err, errlen) < 0 ||
        get_obj(req, "resource", false, &res, "request.", err, errlen) < 0 ||
        get_str(res, "resource", false, r.resource, sizeof(r.resource), "request.resource.", err,
                errlen) < 0 ||
        get_str(req, "subResource", false, r.subresource, sizeof(r.subresource), "request.", err,
                errlen) < 0 ||
        get_str(req, "namespace", false, r.ns, sizeof(r.ns), "request.", err, errlen) < 0 ||
        get_str(req, "name", false, r.name, sizeof(r.name), "request.", err, errlen) < 0 ||
        get_obj(req, "userInfo", true, &user, "request.", err, errlen) < 0 ||
        get_str(user, "username", false, r.username, sizeof(r.username), "request.userInfo.", err,
                errlen) < 0 ||
        get_obj(req, "object", false, &r.object, "request.", err, errlen) < 0)
        goto out;
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        op_ok = op_ok || strcmp(r.operation, ops[i]) == 0;
    if (!op_ok) {
        char shown[20];

        errbuf_fmt(err, errlen, -EINVAL,
                   "request.operation '%s' is not CREATE, UPDATE, DELETE or CONNECT",
                   adm_printable(r.operation, shown, sizeof(shown)));
        goto out;
    }
    if (strcmp(r.operation, "CREATE") == 0 && !r.object) {
        errbuf_fmt(err, errlen, -EINVAL, "request.object is missing for a CREATE");
        goto out;
    }
    dry = json_object_get(req, "dryRun");
    if (dry && !json_is_null(dry) && !json_is_boolean(dry)) {
        errbuf_fmt(err, errlen, -EINVAL, "request.dryRun is not a boolean");
        goto out;
    }
    r.dry_run = json_is_true(dry);
    *ret = r;
    r.review = NULL;
    rc = 0;
    if (err && errlen)
        err[0] = '\0';
out:
    json_decref(r.review);
    return rc;
}

void adm_request_done(struct adm_request *r)
{
    if (!r)
        return;
    json_decref(r->review);
    r->review = NULL;
    r->object = NULL;
}

static char *b64(const char *data, size_t len)
{
    char *out;

    if (len > ADM_PATCH_MAX)
        return NULL;
    out = x_malloc(4 * ((len + 2) / 3) + 1);
    if (!out)
        return NULL;
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)data, (int)len);
    return out;
}

char *adm_review_response(const char *uid, bool allowed, int code, const char *message,
                          const json_t *patch)
{
    json_t *resp = NULL, *doc = NULL;
    char *text = NULL, *p = NULL, *enc = NULL, msg[ADM_MESSAGE_MAX + 1];

    if (!uid)
        return NULL;
    resp = json_pack("{s:s,s:b}", "uid", uid, "allowed", allowed);
    if (!resp)
        goto out;
    if (!allowed) {
        int c = code >= 400 && code < 600 ? code : 403;
        const char *reason = c == 400   ? "BadRequest"
                             : c == 403 ? "Forbidden"
                             : c == 429 ? "TooManyRequests"
                             : c >= 500 ? "InternalError"
                                        : "Invalid";

        adm_printable(message ? message : "denied", msg, sizeof(msg));
        if (json_object_set_new(
                resp, "status",
                json_pack("{s:i,s:s,s:s}", "code", c, "reason", reason, "message", msg)) < 0)
            goto out;
    } else if (json_array_size(patch) > 0) {
        p = json_dumps(patch, JSON_COMPACT);
        if (!p)
            goto out;
        enc = b64(p, strlen(p));
        if (!enc || json_object_set_new(resp, "patchType", json_string("JSONPatch")) < 0 ||
            json_object_set_new(resp, "patch", json_string(enc)) < 0)
            goto out;
    }
    doc = json_pack("{s:s,s:s,s:O}", "apiVersion", ADM_REVIEW_API, "kind", ADM_REVIEW_KIND,
                    "response", resp);
    if (!doc)
        goto out;
    {
        char *t = json_dumps(doc, JSON_COMPACT);

        if (t) {
            text = x_strdup(t);
            free(t);
        }
    }
out:
    free(p);
    x_free(enc);
    json_decref(resp);
    json_decref(doc);
    return text;
}
