/* brk state: see state.h. */
#include "broker/state.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "kube/names.h"

int brk_state_read(const json_t *data, struct brk_state *s, char *err, size_t errlen)
{
    const char *tt = json_string_value(json_object_get(data, "toggles"));
    const char *pt = json_string_value(json_object_get(data, "policy"));
    struct brk_state n = {0};
    char why[256];
    const char *id;
    json_t *v, *pj;
    int e;

    if (data && !json_is_object(data))
        return errbuf_fmt(err, errlen, -EINVAL, "data: expected an object");
    if ((json_object_get(data, "toggles") && !tt) || (json_object_get(data, "policy") && !pt))
        return errbuf_fmt(err, errlen, -EINVAL, "toggles and policy must be strings");
    n.toggles = tt ? json_loads(tt, JSON_REJECT_DUPLICATES, NULL) : json_object();
    if (!json_is_object(n.toggles)) {
        json_decref(n.toggles);
        return errbuf_fmt(err, errlen, -EINVAL, "toggles: expected a JSON object");
    }
    if (json_object_size(n.toggles) > BRK_MAX_TOGGLES) {
        json_decref(n.toggles);
        return errbuf_fmt(err, errlen, -EINVAL, "toggles: at most %d entries", BRK_MAX_TOGGLES);
    }
    json_object_foreach(n.toggles, id, v)
    {
        if (!kname_dns_label(id) || !json_is_boolean(v)) {
            e = errbuf_fmt(err, errlen, -EINVAL,
                           "toggles: \"%.64s\" is not a cluster ID with true "
                           "or false",
                           id);
            json_decref(n.toggles);
            return e;
        }
    }
    brk_policy_default(&n.policy);
    if (pt) {
        pj = json_loads(pt, JSON_REJECT_DUPLICATES, NULL);
        e = pj ? brk_policy_parse(pj, &n.policy, why, sizeof(why)) : -EINVAL;
        json_decref(pj);
        if (e < 0) {
            json_decref(n.toggles);
            return errbuf_fmt(err, errlen, -EINVAL, "policy: %s", pj ? why : "not JSON");
        }
    }
    brk_state_free(s);
    *s = n;
    return 0;
}

void brk_state_free(struct brk_state *s)
{
    json_decref(s->toggles);
    s->toggles = NULL;
}

bool brk_state_enabled(const struct brk_state *s, const char *id, bool dflt)
{
    const json_t *v = id ? json_object_get(s->toggles, id) : NULL;

    return v ? json_is_true(v) : dflt;
}

json_t *brk_state_data(const struct brk_state *s, const char *toggle_id, bool enable, char *err,
                       size_t errlen)
{
    json_t *t = s->toggles ? json_deep_copy(s->toggles) : json_object(), *pol, *out = NULL;
    char *ts = NULL, *ps = NULL;

    errbuf_clear(err, errlen);
    if (!t)
        return NULL;
    if (toggle_id) {
        if (!kname_dns_label(toggle_id)) {
            errbuf_fmt(err, errlen, -EINVAL, "\"%.64s\" is not a cluster ID", toggle_id);
            goto out;
        }
        if (!json_object_get(t, toggle_id) && json_object_size(t) >= BRK_MAX_TOGGLES) {
            errbuf_fmt(err, errlen, -ENOSPC, "at most %d toggles", BRK_MAX_TOGGLES);
            goto out;
        }
        if (json_object_set_new(t, toggle_id, json_boolean(enable)) < 0)
            goto out;
    }
    pol = brk_policy_json(&s->policy);
    ts = json_dumps(t, JSON_COMPACT | JSON_SORT_KEYS);
    ps = pol ? json_dumps(pol, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(pol);
    if (ts && ps)
        out = json_pack("{s:s,s:s}", "toggles", ts, "policy", ps);
out:
    free(ts);
    free(ps);
    json_decref(t);
    return out;
}
