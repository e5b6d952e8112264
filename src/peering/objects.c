/* Helpers on cliqo's objects shared by the agent's controllers and the CLI: ForeignCluster
 * peering conditions, finalizers, timestamps, base64 Secret data. See objects.h. */
#include "peering/objects.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/xalloc.h"
#include "kube/informer.h"
#include "peering/resources.h"
#include "peering/token.h"

void peer_now_rfc3339(char *buf, size_t size)
{
    time_t t = time(NULL);
    struct tm tm;

    gmtime_r(&t, &tm);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void peer_time_rfc3339(int64_t t, char *buf, size_t size)
{
    time_t tt = (time_t)t;
    struct tm tm;

    /* RFC 3339 wants four digits of year, which strftime's %Y does not pad. */
    if (!gmtime_r(&tt, &tm) || tm.tm_year + 1900 < 0 || tm.tm_year + 1900 > 9999) {
        snprintf(buf, size, "1970-01-01T00:00:00Z");
        return;
    }
    snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static int digits(const char *s, int n, int *ret)
{
    int v = 0;

    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -EINVAL;
        v = v * 10 + (s[i] - '0');
    }
    *ret = v;
    return 0;
}

int peer_parse_rfc3339(const char *s, int64_t *ret)
{
    struct tm tm;
    int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
    size_t n;
    const char *p;
    int64_t t;

    if (!s || !ret)
        return -EINVAL;
    n = strlen(s);
    if (n < 20 || n > 40 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
        s[13] != ':' || s[16] != ':')
        return -EINVAL;
    if (digits(s, 4, &y) < 0 || digits(s + 5, 2, &mo) < 0 || digits(s + 8, 2, &d) < 0 ||
        digits(s + 11, 2, &h) < 0 || digits(s + 14, 2, &mi) < 0 || digits(s + 17, 2, &sec) < 0)
        return -EINVAL;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return -EINVAL;
    p = s + 19;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return -EINVAL;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        sign = *p == '+' ? 1 : -1;
        if (digits(p + 1, 2, &oh) < 0 || p[3] != ':' || digits(p + 4, 2, &om) < 0 || oh > 23 ||
            om > 59)
            return -EINVAL;
        p += 6;
    } else {
        return -EINVAL;
    }
    if (*p)
        return -EINVAL;
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    t = (int64_t)timegm(&tm);
    t -= (int64_t)sign * (oh * 3600 + om * 60);
    *ret = t;
    return 0;
}

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
    struct tm tm;
    const char *end;

    if (!t)
        return 0;
    memset(&tm, 0, sizeof(tm));
    end = strptime(t, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (!end || *end)
        return 0;
    return (int64_t)timegm(&tm);
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
    peer_now_rfc3339(now, sizeof(now));
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
    if (!exp || peer_parse_rfc3339(exp, &t) < 0 || t <= now) {
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
