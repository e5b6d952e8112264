/* Helpers on cliqo's objects shared by the agent's controllers and the CLI: ForeignCluster
 * peering conditions, finalizers, timestamps, base64 Secret data. See objects.h. */
#include "peering/objects.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/rfc3339.h"
#include "common/xalloc.h"
#include "kube/informer.h"
#include "peering/resources.h"
#include "peering/token.h"

json_t *peer_fc_condition_obj(const json_t *fc, const char *type)
{
    json_t *conds = json_object_get(json_object_get(fc, "status"), "peeringConditions");
    size_t i;
    json_t *c;

    json_array_foreach(conds, i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));

        if (t && strcmp(t, type) == 0)
            return c;
    }
    return NULL;
}

const char *peer_fc_condition(const json_t *fc, const char *type)
{
    const char *s = json_string_value(json_object_get(peer_fc_condition_obj(fc, type), "status"));

    return s && *s ? s : "None";
}

int64_t peer_fc_condition_since(const json_t *fc, const char *type)
{
    const char *t =
        json_string_value(json_object_get(peer_fc_condition_obj(fc, type), "lastTransitionTime"));
    int64_t since;

    return rfc3339_parse(t, 0, &since) == 0 ? since : 0;
}

static bool set_str(json_t *obj, const char *key, const char *value)
{
    const char *old = json_string_value(json_object_get(obj, key));

    if (old && strcmp(old, value) == 0)
        return false;
    json_object_set_new(obj, key, json_string(value));
    return true;
}

bool peer_fc_set_condition(json_t *fc, const char *type, const char *status, const char *reason,
                           const char *message)
{
    json_t *st = json_object_get(fc, "status"), *conds, *c;
    bool changed = false;
    char now[32];

    if (!json_is_object(st)) {
        st = json_object();
        json_object_set_new(fc, "status", st);
    }
    conds = json_object_get(st, "peeringConditions");
    if (!json_is_array(conds)) {
        conds = json_array();
        json_object_set_new(st, "peeringConditions", conds);
    }
    c = peer_fc_condition_obj(fc, type);
    if (!c) {
        c = json_pack("{s:s}", "type", type);
        json_array_append_new(conds, c);
        changed = true;
    }
    rfc3339_now(0, now, sizeof(now));
    if (set_str(c, "status", status)) {
        json_object_set_new(c, "lastTransitionTime", json_string(now));
        changed = true;
    }
    /* Empty strings are left out rather than written: the v1.20 apiserver turns "" in a merge
     * patch into null, which the schema (type: string) then refuses. */
    if (reason && *reason) {
        changed |= set_str(c, "reason", reason);
    } else if (json_object_get(c, "reason")) {
        json_object_del(c, "reason");
        changed = true;
    }
    if (message && *message) {
        changed |= set_str(c, "message", message);
    } else if (json_object_get(c, "message")) {
        json_object_del(c, "message");
        changed = true;
    }
    return changed;
}

bool peer_has_finalizer(const json_t *obj, const char *finalizer)
{
    json_t *fins = json_object_get(json_object_get(obj, "metadata"), "finalizers");
    size_t i;
    json_t *f;

    json_array_foreach(fins, i, f)
    {
        if (json_is_string(f) && strcmp(json_string_value(f), finalizer) == 0)
            return true;
    }
    return false;
}

int peer_base64_decode(const char *s, size_t max, char **ret, size_t *ret_len)
{
    size_t len = strlen(s), pad = 0;
    unsigned char *buf;
    int n;

    if (len % 4 != 0 || strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
                                  "=") != len)
        return -EINVAL;
    if (len / 4 * 3 > max + 2 || len > (1u << 28))
        return -E2BIG;
    if (len >= 1 && s[len - 1] == '=')
        pad++;
    if (len >= 2 && s[len - 2] == '=')
        pad++;
    if (strchr(s, '=') && strchr(s, '=') < s + len - pad)
        return -EINVAL;
    buf = x_malloc(len / 4 * 3 + 1);
    if (!buf)
        return -ENOMEM;
    n = len ? EVP_DecodeBlock(buf, (const unsigned char *)s, (int)len) : 0;
    if (n < 0 || (size_t)n < pad) {
        x_free(buf);
        return -EINVAL;
    }
    n -= (int)pad;
    if ((size_t)n > max) {
        OPENSSL_cleanse(buf, (size_t)n);
        x_free(buf);
        return -E2BIG;
    }
    buf[n] = '\0';
    *ret = (char *)buf;
    *ret_len = (size_t)n;
    return 0;
}

int peer_base64_encode(const void *data, size_t len, char **ret)
{
    char *buf;

    if (len > (1u << 20))
        return -E2BIG;
    buf = x_malloc((len + 2) / 3 * 4 + 1);
    if (!buf)
        return -ENOMEM;
    EVP_EncodeBlock((unsigned char *)buf, data, (int)len);
    *ret = buf;
    return 0;
}

/* The decoded data[key] of a Secret, at most max bytes, into *ret (x_free); NULL when absent. */
static char *obj_secret_str(const json_t *secret, const char *key, size_t max)
{
    const char *b64 = json_string_value(json_object_get(json_object_get(secret, "data"), key));
    char *v = NULL;
    size_t len;

    if (!b64 || peer_base64_decode(b64, max, &v, &len) < 0)
        return NULL;
    if (strlen(v) != len) {
        x_free(v);
        return NULL;
    }
    return v;
}

int peer_token_secret_check(const json_t *secret, const char *digest, int64_t now,
                            int64_t *ret_expires)
{
    const char *kind = json_string_value(json_object_get(
        json_object_get(json_object_get(secret, "metadata"), "labels"), PEER_LABEL_TOKEN));
    char *sha = NULL, *exp = NULL;
    int64_t t = 0;
    int r = -ENOENT;

    if (!kind || strcmp(kind, "single-use") != 0)
        return -ENOENT;
    sha = obj_secret_str(secret, "sha256", 128);
    if (digest && (!sha || !peer_token_digest_equal(sha, digest)))
        goto out;
    exp = obj_secret_str(secret, "expires", 64);
    if (!exp || rfc3339_parse(exp, RFC3339_OFFSET, &t) < 0 || t <= now) {
        r = -EKEYEXPIRED;
        goto out;
    }
    if (ret_expires)
        *ret_expires = t;
    r = 0;
out:
    x_free(sha);
    x_free(exp);
    return r;
}

struct fc_find {
    const char *id;
    json_t *fc;
};

static void fc_visit(json_t *fc, void *data)
{
    struct fc_find *f = data;
    const char *id = json_string_value(json_object_get(
        json_object_get(json_object_get(fc, "spec"), "clusterIdentity"), "clusterID"));

    if (!f->fc && id && strcmp(id, f->id) == 0)
        f->fc = json_incref(fc);
}

json_t *peer_fc_find(struct inf_informer *fcs, const char *id)
{
    struct fc_find f = {id, NULL};

    if (fcs && id)
        inf_foreach(fcs, fc_visit, &f);
    return f.fc;
}
