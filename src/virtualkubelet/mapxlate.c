/* mapxlate: see mapxlate.h. */
#include "virtualkubelet/mapxlate.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "offloading/nsof.h"
#include "common/json.h"

static bool text_ok(const char *s, size_t max)
{
    size_t n;

    if (!s)
        return false;
    n = strlen(s);
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 && s[i] != '\n' && s[i] != '\t')
            return false;
    return true;
}

int vkm_nsof_wants(const json_t *nsof, const char *node_name, const json_t *node_labels,
                   const char *home_name, const char *home_id, char *remote, size_t size, char *err,
                   size_t errlen)
{
    const json_t *md = json_object_get(nsof, "metadata");
    const char *name = jsn_str(md, "name"), *ns = jsn_str(md, "namespace");
    struct nsof_spec spec;
    int r;

    if (!name || !ns || strcmp(name, NSOF_NAME) != 0) {
        snprintf(err, errlen, "a NamespaceOffloading must be named %s", NSOF_NAME);
        return -EINVAL;
    }
    if (nsof_spec_parse(nsof, &spec, err, errlen) < 0)
        return -EINVAL;
    if (nsof_home_offloadable(ns, NULL, false, err, errlen) < 0)
        return -EINVAL;
    if (json_object_get(md, "deletionTimestamp"))
        return 0;
    if (!nsof_selector_match(spec.selector, node_name, node_labels))
        return 0;
    r = nsof_remote_namespace(ns, spec.mapping, home_name, home_id, remote, size);
    if (r < 0) {
        snprintf(err, errlen, "no remote namespace name for %s: %s", ns, strerror(-r));
        return r;
    }
    return 1;
}

enum vkm_phase vkm_entry(const json_t *current_mapping, const char *local, const char *want_remote,
                         const char **ret_reason, const char **ret_message)
{
    const json_t *e = json_object_get(current_mapping, local);
    const char *remote = jsn_str(e, "remoteNamespace"), *phase = jsn_str(e, "phase");
    const char *reason = jsn_str(e, "reason"), *msg = jsn_str(e, "message");
    enum vkm_phase p;

    if (ret_reason)
        *ret_reason = NULL;
    if (ret_message)
        *ret_message = NULL;
    if (!e)
        return VKM_NONE;
    if (!json_is_object(e) || !remote || !phase || !want_remote || strcmp(remote, want_remote) != 0)
        return VKM_MISMATCH;
    if (strcmp(phase, "Accepted") == 0)
        p = VKM_ACCEPTED;
    else if (strcmp(phase, "Refused") == 0 || strcmp(phase, "CreationFailed") == 0)
        p = VKM_REFUSED;
    else if (strcmp(phase, "Terminating") == 0)
        p = VKM_TERMINATING;
    else
        return VKM_MISMATCH;
    if (ret_reason && text_ok(reason, VKM_MAX_REASON))
        *ret_reason = reason;
    if (ret_message && text_ok(msg, VKM_MAX_MESSAGE))
        *ret_message = msg;
    return p;
}

const char *vkm_phase_name(enum vkm_phase p)
{
    static const char *const names[] = {"None", "Accepted", "Refused", "Terminating", "Mismatch"};

    return p >= 0 && p <= VKM_MISMATCH ? names[p] : "Unknown";
}

static const char *since(const json_t *old, const char *type, const char *status, const char *now)
{
    size_t i;
    const json_t *c;

    json_array_foreach(old, i, c)
    {
        const char *t = jsn_str(c, "type"), *s = jsn_str(c, "status"),
                   *l = jsn_str(c, "lastTransitionTime");

        if (t && s && l && strcmp(t, type) == 0 && strcmp(s, status) == 0)
            return l;
    }
    return now;
}

static json_t *cond(const json_t *old, const char *type, bool status, const char *reason,
                    const char *message, const char *now)
{
    const char *s = status ? "True" : "False";

    return json_pack("{s:s,s:s,s:s,s:s,s:s}", "type", type, "status", s, "reason", reason,
                     "message", message, "lastTransitionTime", since(old, type, s, now));
}

json_t *vkm_conditions(bool wanted, enum vkm_phase phase, const char *remote, const char *reason,
                       const char *message, const json_t *old, const char *now)
{
    char req_msg[256], msg[VKM_MAX_MESSAGE + 128];
    const char *ready_reason;
    bool ready = phase == VKM_ACCEPTED;
    json_t *out = json_array();

    if (!out)
        return NULL;
    snprintf(req_msg, sizeof(req_msg),
             wanted ? "the namespace's NamespaceOffloading selects this cluster"
                    : "the namespace is no longer offloaded to this cluster; removing it");
    switch (phase) {
    case VKM_ACCEPTED:
        ready_reason = "Accepted";
        snprintf(msg, sizeof(msg), "namespace %s is ready on the provider", remote);
        break;
    case VKM_NONE:
        ready_reason = wanted ? "Pending" : "Removed";
        snprintf(msg, sizeof(msg),
                 wanted ? "waiting for the provider to create namespace %s"
                        : "namespace %s is not on the provider",
                 remote);
        break;
    case VKM_REFUSED:
        ready_reason = reason ? reason : "Refused";
        snprintf(msg, sizeof(msg), "the provider refused namespace %s: %s", remote,
                 message ? message : "no reason given");
        break;
    case VKM_TERMINATING:
        ready_reason = "Terminating";
        snprintf(msg, sizeof(msg), "namespace %s is being deleted on the provider", remote);
        break;
    case VKM_MISMATCH:
    default:
        ready_reason = "Mismatch";
        snprintf(msg, sizeof(msg),
                 "the provider's NamespaceMap does not report namespace %s as asked", remote);
        break;
    }
    json_array_append_new(out, cond(old, "OffloadingRequired", wanted,
                                    wanted ? "Selected" : "NotSelected", req_msg, now));
    json_array_append_new(out, cond(old, "Ready", ready, ready_reason, msg, now));
    return out;
}

bool vkm_conditions_equal(const json_t *a, const json_t *b)
{
    static const char *const keys[] = {"type", "status", "reason", "message", NULL};

    if (json_array_size(a) != json_array_size(b))
        return false;
    for (size_t i = 0; i < json_array_size(a); i++)
        for (const char *const *k = keys; *k; k++)
            if (!json_equal(json_object_get(json_array_get(a, i), *k),
                            json_object_get(json_array_get(b, i), *k)))
                return false;
    return true;
}

json_t *vkm_desired_patch(const json_t *have, const json_t *want)
{
    json_t *dm = json_object();
    const char *k;
    json_t *v;

    if (!dm)
        return NULL;
    json_object_foreach((json_t *)want, k, v)
    {
        if (!json_equal(json_object_get(have, k), v))
            json_object_set(dm, k, v);
    }
    json_object_foreach((json_t *)have, k, v)
    {
        if (!json_object_get(want, k))
            json_object_set_new(dm, k, json_null());
    }
    if (json_object_size(dm) == 0) {
        json_decref(dm);
        return NULL;
    }
    return json_pack("{s:{s:o}}", "spec", "desiredMapping", dm);
}
