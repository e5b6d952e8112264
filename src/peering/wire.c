#include "peering/wire.h"
#include "common/jsonb.h"
#include "peering/internal.h"
#include "common/xalloc.h"
#include "kube/kubeconfig.h"
#include "kube/names.h"
#include "peering/objects.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>
#include <openssl/crypto.h>

int peer__json_dump(const json_t *j, char **ret)
{
    size_t n = json_dumpb(j, NULL, 0, JSON_COMPACT), m;
    char *s;

    if (n == 0)
        return -EINVAL;
    s = x_malloc(n + 1);
    if (!s)
        return -ENOMEM;
    m = json_dumpb(j, s, n, JSON_COMPACT);
    if (m != n) {
        x_free(s);
        return -ENOMEM;
    }
    s[n] = '\0';
    *ret = s;
    return 0;
}

static const struct {
    const char *reason;
    int status;
} wire_statuses[] = {
    {PEER_WIRE_E_TOO_LARGE, 413},    {PEER_WIRE_E_MALFORMED, 400},
    {PEER_WIRE_E_NOT_OBJECT, 400},   {PEER_WIRE_E_MISSING, 400},
    {PEER_WIRE_E_FIELD_TYPE, 400},   {PEER_WIRE_E_CLUSTER_ID, 400},
    {PEER_WIRE_E_CLUSTER_NAME, 400}, {PEER_WIRE_E_TOKEN, 400},
    {PEER_WIRE_E_NAMESPACE, 400},    {PEER_WIRE_E_KUBECONFIG, 400},
    {PEER_WIRE_E_ERROR_REASON, 400}, {PEER_WIRE_E_OWN_ID, 400},
    {PEER_WIRE_E_PUBLIC_KEY, 400},   {PEER_WIRE_E_TIMESTAMP, 400},
    {PEER_WIRE_E_KEY_ID, 400},       {PEER_WIRE_E_SIGNATURE, 403},
    {PEER_WIRE_E_STALE, 403},        {PEER_WIRE_E_MISMATCH, 403},
    {PEER_WIRE_E_FORBIDDEN, 403},    {PEER_WIRE_E_NOT_FOUND, 404},
    {PEER_WIRE_E_METHOD, 405},       {PEER_WIRE_E_MEDIA_TYPE, 415},
    {PEER_WIRE_E_RATE_LIMITED, 429}, {PEER_WIRE_E_UNAVAILABLE, 503},
};

int peer_wire_http_status(const char *reason)
{
    if (!reason)
        return 500;
    for (size_t i = 0; i < sizeof wire_statuses / sizeof wire_statuses[0]; i++)
        if (strcmp(reason, wire_statuses[i].reason) == 0)
            return wire_statuses[i].status;
    return 500;
}

/* Length of the valid UTF-8 sequence at s (n bytes available), or 0 if invalid (RFC 3629: no
 * overlong forms, no surrogates, nothing above U+10FFFF). */
static size_t wire_utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf;

    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4;
    else
        return 0;
    if (c == 0xe0)
        lo = 0xa0;
    else if (c == 0xed)
        hi = 0x9f;
    else if (c == 0xf0)
        lo = 0x90;
    else if (c == 0xf4)
        hi = 0x8f;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

void peer_wire_sanitize(char *dst, size_t dstlen, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0, i = 0;

    if (dstlen == 0)
        return;
    while (s && i < len) {
        size_t l = wire_utf8_len(p + i, len - i);

        if (l == 0 || l == 1) {
            char c = l == 0 ? '?' : (char)p[i];

            if (l == 1 && (p[i] < 0x20 || p[i] == 0x7f))
                c = ' ';
            if (o + 1 >= dstlen)
                break;
            dst[o++] = c;
            i++;
            continue;
        }
        if (o + l >= dstlen)
            break;
        memcpy(dst + o, p + i, l);
        o += l;
        i += l;
    }
    dst[o] = '\0';
}

__attribute__((format(printf, 3, 4))) static int wire_fail(struct peer_wire_error *err,
                                                           const char *reason, const char *fmt, ...)
{
    char msg[PEER_WIRE_MESSAGE_MAX + 1];
    va_list ap;

    if (!err)
        return -EINVAL;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(err->reason, sizeof err->reason, "%s", reason);
    peer_wire_sanitize(err->message, sizeof err->message, msg, strlen(msg));
    return -EINVAL;
}

static void wire_clear(struct peer_wire_error *err)
{
    if (err) {
        err->reason[0] = '\0';
        err->message[0] = '\0';
    }
}

/* Parses a body: size, JSON syntax, object. */
static int wire_parse(const void *buf, size_t len, size_t max, json_t **ret,
                      struct peer_wire_error *err)
{
    json_error_t jerr;
    json_t *j;

    wire_clear(err);
    if (len > max) {
        wire_fail(err, PEER_WIRE_E_TOO_LARGE, "body is over %zu bytes", max);
        return -E2BIG;
    }
    if (!buf && len > 0)
        return wire_fail(err, PEER_WIRE_E_MALFORMED, "body is missing");
    j = NULL;
    if (jsonb_load(buf ? buf : "", len, 0, 0, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &j, &jerr) <
        0)
        return wire_fail(err, PEER_WIRE_E_MALFORMED,
                         "body is not valid JSON: %s (line %d, column %d)", jerr.text, jerr.line,
                         jerr.column);
    if (!json_is_object(j)) {
        json_decref(j);
        return wire_fail(err, PEER_WIRE_E_NOT_OBJECT, "body must be a JSON object");
    }
    *ret = j;
    return 0;
}

/* Gets the required string field `key`; *ret_len excludes the NUL. */
static int wire_str(const json_t *obj, const char *key, const char **ret, size_t *ret_len,
                    struct peer_wire_error *err)
{
    const json_t *v = json_object_get(obj, key);
    const char *s;
    size_t n;

    if (!v)
        return wire_fail(err, PEER_WIRE_E_MISSING, "field \"%s\" is required", key);
    if (!json_is_string(v))
        return wire_fail(err, PEER_WIRE_E_FIELD_TYPE, "field \"%s\" must be a string", key);
    s = json_string_value(v);
    n = json_string_length(v);
    if (strlen(s) != n) /* cannot happen without JSON_ALLOW_NUL; belt and braces */
        return wire_fail(err, PEER_WIRE_E_FIELD_TYPE, "field \"%s\" contains a NUL", key);
    *ret = s;
    if (ret_len)
        *ret_len = n;
    return 0;
}

static int wire_id_field(const json_t *obj, const char *key, char out[PEER_NAME_MAX + 1],
                         struct peer_wire_error *err)
{
    const char *s;
    int r = wire_str(obj, key, &s, NULL, err);

    if (r < 0)
        return r;
    if (!peer_cluster_id_valid(s))
        return wire_fail(err, PEER_WIRE_E_CLUSTER_ID,
                         "field \"%s\" must be a cluster ID: 1 to %d characters of [a-z0-9-], "
                         "starting and ending with a letter or digit",
                         key, PEER_NAME_MAX);
    memcpy(out, s, strlen(s) + 1);
    return 0;
}

static int wire_name_field(const json_t *obj, const char *key, char out[PEER_NAME_MAX + 1],
                           struct peer_wire_error *err)
{
    const char *s;
    int r = wire_str(obj, key, &s, NULL, err);

    if (r < 0)
        return r;
    if (!peer_cluster_name_valid(s))
        return wire_fail(err, PEER_WIRE_E_CLUSTER_NAME,
                         "field \"%s\" must be a cluster name: 1 to %d characters of [a-z0-9-], "
                         "starting and ending with a letter or digit",
                         key, PEER_NAME_MAX);
    memcpy(out, s, strlen(s) + 1);
    return 0;
}

/* A required field of strict base64 of 1 to max bytes, decoded into out. */
static int wire_b64_field(const json_t *obj, const char *key, const char *reason,
                          unsigned char *out, size_t max, size_t *ret_len,
                          struct peer_wire_error *err)
{
    const char *s;
    char *bytes = NULL;
    size_t n = 0;
    int r = wire_str(obj, key, &s, NULL, err);

    if (r < 0)
        return r;
    r = strlen(s) > 4 * max ? -E2BIG : peer_base64_decode(s, max, &bytes, &n);
    if (r == -ENOMEM)
        return r;
    if (r < 0 || n == 0) {
        x_free(bytes);
        return wire_fail(err, reason, "field \"%s\" must be base64 of 1 to %zu bytes", key, max);
    }
    memcpy(out, bytes, n);
    *ret_len = n;
    x_free(bytes);
    return 0;
}

static int wire_ts_field(const json_t *obj, const char *key, int64_t *ret,
                         struct peer_wire_error *err)
{
    const json_t *v = json_object_get(obj, key);
    json_int_t t;

    if (!v)
        return wire_fail(err, PEER_WIRE_E_MISSING, "field \"%s\" is required", key);
    if (!json_is_integer(v))
        return wire_fail(err, PEER_WIRE_E_FIELD_TYPE, "field \"%s\" must be an integer", key);
    t = json_integer_value(v);
    if (t < 0 || t > PEER_WIRE_TS_MAX)
        return wire_fail(err, PEER_WIRE_E_TIMESTAMP,
                         "field \"%s\" must be Unix seconds from 0 to %lld", key,
                         (long long)PEER_WIRE_TS_MAX);
    *ret = (int64_t)t;
    return 0;
}

/* The optional "keyId" of answers: absent, or a key ID. */
static int wire_key_id_field(const json_t *obj, char out[PEER_KEY_ID_LEN + 1],
                             struct peer_wire_error *err)
{
    const char *s;
    size_t n;
    int r;

    out[0] = '\0';
    if (!json_object_get(obj, "keyId"))
        return 0;
    r = wire_str(obj, "keyId", &s, &n, err);
    if (r < 0)
        return r;
    if (n != PEER_KEY_ID_LEN || strspn(s, "0123456789abcdef") != PEER_KEY_ID_LEN)
        return wire_fail(err, PEER_WIRE_E_KEY_ID, "field \"keyId\" must be %d lowercase hex digits",
                         PEER_KEY_ID_LEN);
    memcpy(out, s, n + 1);
    return 0;
}

static bool wire_key_id_ok(const char *s)
{
    return !s || !*s ||
           (strlen(s) == PEER_KEY_ID_LEN && strspn(s, "0123456789abcdef") == PEER_KEY_ID_LEN);
}

int peer_wire_identity_request_decode(const void *buf, size_t len,
                                      struct peer_identity_request *ret,
                                      struct peer_wire_error *err)
{
    struct peer_identity_request req;
    json_t *j = NULL;
    const char *tok;
    int r;

    memset(&req, 0, sizeof req);
    r = wire_parse(buf, len, PEER_WIRE_REQUEST_MAX, &j, err);
    if (r < 0)
        return r;
    r = wire_id_field(j, "clusterID", req.cluster_id, err);
    if (r < 0)
        goto out;
    r = wire_name_field(j, "clusterName", req.cluster_name, err);
    if (r < 0)
        goto out;
    r = wire_str(j, "token", &tok, NULL, err);
    if (r < 0)
        goto out;
    if (!peer_token_valid(tok)) {
        r = wire_fail(err, PEER_WIRE_E_TOKEN, "field \"token\" must be %d lowercase hex digits",
                      PEER_TOKEN_LEN);
        goto out;
    }
    memcpy(req.token, tok, PEER_TOKEN_LEN + 1);
    r = wire_b64_field(j, "publicKey", PEER_WIRE_E_PUBLIC_KEY, req.public_key, PEER_WIRE_KEY_MAX,
                       &req.public_key_len, err);
    if (r < 0)
        goto out;
    r = wire_ts_field(j, "timestamp", &req.timestamp, err);
    if (r < 0)
        goto out;
    r = wire_b64_field(j, "signature", PEER_WIRE_E_SIGNATURE, req.signature, PEER_WIRE_SIG_MAX,
                       &req.signature_len, err);
    if (r < 0)
        goto out;
    *ret = req;
    r = 0;
out:
    OPENSSL_cleanse(&req, sizeof req);
    json_decref(j);
    return r;
}

int peer_wire_identity_request_encode(const struct peer_identity_request *req, char **ret_json)
{
    char *key = NULL, *sig = NULL;
    json_t *j = NULL;
    int r;

    if (!req || !peer_cluster_id_valid(req->cluster_id) ||
        !peer_cluster_name_valid(req->cluster_name) || !peer_token_valid(req->token) ||
        req->public_key_len == 0 || req->public_key_len > PEER_WIRE_KEY_MAX ||
        req->signature_len == 0 || req->signature_len > PEER_WIRE_SIG_MAX || req->timestamp < 0 ||
        req->timestamp > PEER_WIRE_TS_MAX)
        return -EINVAL;
    r = peer_base64_encode(req->public_key, req->public_key_len, &key);
    if (r == 0)
        r = peer_base64_encode(req->signature, req->signature_len, &sig);
    if (r < 0)
        goto out;
    j = json_pack("{s:s, s:s, s:s, s:s, s:I, s:s}", "clusterID", req->cluster_id, "clusterName",
                  req->cluster_name, "token", req->token, "publicKey", key, "timestamp",
                  (json_int_t)req->timestamp, "signature", sig);
    r = j ? peer__json_dump(j, ret_json) : -ENOMEM;
out:
    x_free(key);
    x_free(sig);
    json_decref(j);
    return r;
}

void peer_identity_request_clear(struct peer_identity_request *req)
{
    if (req)
        OPENSSL_cleanse(req, sizeof *req);
}

/* The kubeconfig must stand alone, verify its server against a pinned CA (kc_check_peer) and
 * point at `ns`. */
static int wire_check_kubeconfig(const char *kubeconfig, size_t len, const char *ns,
                                 struct peer_wire_error *err)
{
    char kerr[KC_ERR_LEN];
    struct kc_config *c = NULL;
    int r = kc_load_peer(kubeconfig, len, "kubeconfig", &c, kerr, sizeof kerr);

    if (r == -ENOMEM)
        return r;
    if (r < 0)
        return wire_fail(err, PEER_WIRE_E_KUBECONFIG, "field \"kubeconfig\" does not load: %s",
                         kerr);
    if (strcmp(c->namespace, ns) != 0)
        r = wire_fail(err, PEER_WIRE_E_KUBECONFIG,
                      "field \"kubeconfig\" is for namespace \"%s\", not \"%s\"", c->namespace, ns);
    kc_config_free(c);
    return r;
}

int peer_wire_identity_response_decode(const void *buf, size_t len,
                                       struct peer_identity_response *ret,
                                       struct peer_wire_error *err)
{
    json_t *j = NULL;
    const char *ns, *kc;
    size_t kclen;
    char *copy = NULL, key_id[PEER_KEY_ID_LEN + 1];
    int r;

    r = wire_parse(buf, len, PEER_WIRE_RESPONSE_MAX, &j, err);
    if (r < 0)
        return r;
    r = wire_str(j, "namespace", &ns, NULL, err);
    if (r < 0)
        goto out;
    if (!kname_dns_label(ns)) {
        r = wire_fail(err, PEER_WIRE_E_NAMESPACE,
                      "field \"namespace\" must be a namespace name (RFC 1123 label)");
        goto out;
    }
    r = wire_str(j, "kubeconfig", &kc, &kclen, err);
    if (r < 0)
        goto out;
    r = wire_check_kubeconfig(kc, kclen, ns, err);
    if (r < 0)
        goto out;
    r = wire_key_id_field(j, key_id, err);
    if (r < 0)
        goto out;
    copy = x_strndup(kc, kclen);
    if (!copy) {
        r = -ENOMEM;
        goto out;
    }
    memcpy(ret->namespace, ns, strlen(ns) + 1);
    ret->kubeconfig = copy;
    memcpy(ret->key_id, key_id, sizeof key_id);
    r = 0;
out:
    json_decref(j);
    return r;
}

int peer_wire_identity_response_encode(const char *namespace, const char *kubeconfig,
                                       const char *key_id, char **ret_json)
{
    json_t *j;
    int r;

    if (!kname_dns_label(namespace) || !kubeconfig || !*kubeconfig || !wire_key_id_ok(key_id))
        return -EINVAL;
    j = json_object();
    if (!j)
        return -ENOMEM;
    r = json_object_set_new(j, "namespace", json_string(namespace));
    if (r == 0)
        r = json_object_set_new(j, "kubeconfig", json_string(kubeconfig)); /* NULL: bad UTF-8 */
    if (r == 0 && key_id && *key_id)
        r = json_object_set_new(j, "keyId", json_string(key_id));
    r = r == 0 ? peer__json_dump(j, ret_json) : -EINVAL;
    json_decref(j);
    return r;
}

void peer_identity_response_done(struct peer_identity_response *resp)
{
    if (!resp)
        return;
    if (resp->kubeconfig) {
        OPENSSL_cleanse(resp->kubeconfig, strlen(resp->kubeconfig));
        x_free(resp->kubeconfig);
    }
    resp->kubeconfig = NULL;
    resp->namespace[0] = '\0';
    resp->key_id[0] = '\0';
}

int peer_wire_ids_decode(const void *buf, size_t len, struct peer_ids *ret,
                         struct peer_wire_error *err)
{
    struct peer_ids ids;
    json_t *j = NULL;
    int r;

    memset(&ids, 0, sizeof ids);
    r = wire_parse(buf, len, PEER_WIRE_RESPONSE_MAX, &j, err);
    if (r < 0)
        return r;
    r = wire_id_field(j, "clusterId", ids.cluster_id, err);
    if (r >= 0)
        r = wire_name_field(j, "clusterName", ids.cluster_name, err);
    if (r >= 0)
        r = wire_key_id_field(j, ids.key_id, err);
    if (r >= 0)
        *ret = ids;
    json_decref(j);
    return r;
}

int peer_wire_ids_encode(const struct peer_ids *ids, char **ret_json)
{
    json_t *j;
    int r;

    if (!ids || !peer_cluster_id_valid(ids->cluster_id) ||
        !peer_cluster_name_valid(ids->cluster_name) || !wire_key_id_ok(ids->key_id))
        return -EINVAL;
    j = json_pack("{s:s, s:s}", "clusterId", ids->cluster_id, "clusterName", ids->cluster_name);
    if (!j)
        return -ENOMEM;
    if (ids->key_id[0] && json_object_set_new(j, "keyId", json_string(ids->key_id)) < 0) {
        json_decref(j);
        return -ENOMEM;
    }
    r = peer__json_dump(j, ret_json);
    json_decref(j);
    return r;
}

static bool wire_reason_valid(const char *s)
{
    size_t n = strnlen(s, PEER_WIRE_REASON_MAX + 1);

    if (n == 0 || n > PEER_WIRE_REASON_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

int peer_wire_error_decode(const void *buf, size_t len, struct peer_wire_error *ret,
                           struct peer_wire_error *err)
{
    struct peer_wire_error out;
    json_t *j = NULL;
    const char *reason, *msg;
    size_t msglen;
    int r;

    r = wire_parse(buf, len, PEER_WIRE_RESPONSE_MAX, &j, err);
    if (r < 0)
        return r;
    r = wire_str(j, "error", &reason, NULL, err);
    if (r < 0)
        goto out;
    if (!wire_reason_valid(reason)) {
        r = wire_fail(err, PEER_WIRE_E_ERROR_REASON,
                      "field \"error\" must be 1 to %d characters of [a-z0-9-]",
                      PEER_WIRE_REASON_MAX);
        goto out;
    }
    r = wire_str(j, "message", &msg, &msglen, err);
    if (r < 0)
        goto out;
    memcpy(out.reason, reason, strlen(reason) + 1);
    peer_wire_sanitize(out.message, sizeof out.message, msg, msglen);
    *ret = out;
    r = 0;
out:
    json_decref(j);
    return r;
}

int peer_wire_error_encode(const char *reason, const char *message, char **ret_json)
{
    char msg[PEER_WIRE_MESSAGE_MAX + 1];
    json_t *j;
    int r;

    if (!reason || !wire_reason_valid(reason))
        return -EINVAL;
    peer_wire_sanitize(msg, sizeof msg, message, message ? strlen(message) : 0);
    j = json_pack("{s:s, s:s}", "error", reason, "message", msg);
    if (!j)
        return -ENOMEM;
    r = peer__json_dump(j, ret_json);
    json_decref(j);
    return r;
}
