/* Helpers shared by the peering controllers; see ctl.h. */
#include "peering/ctl.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/xalloc.h"

static struct peer_ctl_options opts;

void peer_ctl_configure(const struct peer_ctl_options *o)
{
    opts = *o;
    opts.unpeer_timeout_set = o->unpeer_timeout_ms != 0;
    if (!opts.unpeer_timeout_ms)
        opts.unpeer_timeout_ms = 30000;
    if (!opts.resync_ms)
        opts.resync_ms = 30000;
}

const struct peer_ctl_options *peer_ctl_options(void)
{
    if (!opts.unpeer_timeout_ms)
        opts.unpeer_timeout_ms = 30000;
    if (!opts.resync_ms)
        opts.resync_ms = 30000;
    return &opts;
}

void peer_call_reset(struct peer_call *pc)
{
    json_decref(pc->body);
    memset(pc, 0, sizeof(*pc));
}

void peer_call_cb(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct peer_call_chain *ch = data;

    (void)c;
    peer_call_reset(&ch->last);
    ch->last.err = res->err;
    ch->last.http = res->http_status;
    ch->last.body = json_incref(res->body);
    snprintf(ch->last.reason, sizeof(ch->last.reason), "%s", res->status.reason);
    snprintf(ch->last.message, sizeof(ch->last.message), "%s", res->status.message);
    ch->next(data);
}

void peer_now_rfc3339(char *buf, size_t size)
{
    time_t t = time(NULL);
    struct tm tm;

    gmtime_r(&t, &tm);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static json_t *find_condition(const json_t *fc, const char *type)
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
    const char *s = json_string_value(json_object_get(find_condition(fc, type), "status"));

    return s ? s : "None";
}

int64_t peer_fc_condition_since(const json_t *fc, const char *type)
{
    const char *t =
        json_string_value(json_object_get(find_condition(fc, type), "lastTransitionTime"));
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
    c = find_condition(fc, type);
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

int peer_base64_decode(const char *in, char **ret, size_t *ret_len)
{
    size_t len = strlen(in), pad = 0;
    unsigned char *out;
    int n;

    if (len == 0 || len % 4 != 0 || len > (1u << 20))
        return -EINVAL;
    out = x_malloc(len / 4 * 3 + 1);
    if (!out)
        return -ENOMEM;
    n = EVP_DecodeBlock(out, (const unsigned char *)in, (int)len);
    if (n < 0) {
        x_free(out);
        return -EINVAL;
    }
    if (in[len - 1] == '=')
        pad++;
    if (in[len - 2] == '=')
        pad++;
    n -= (int)pad;
    out[n] = '\0';
    *ret = (char *)out;
    *ret_len = (size_t)n;
    return 0;
}
