/* podxlate: see podxlate.h and docs/offloading.md ("Pods"). */
#include "offloading/podxlate.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/rfc3339.h"
#include "common/strutil.h"
#include "common/xalloc.h"
#include "peering/resources.h"
#include "offloading/reflector.h"

#define MAX_IP_TEXT 46
#define SA_TOKEN    "-token-"

/* ---- small helpers ------------------------------------------------------------------------------
 */

static const json_t *obj(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);

    return json_is_object(v) ? v : NULL;
}

static const json_t *meta(const json_t *o)
{
    return obj(o, "metadata");
}

static bool deleting(const json_t *o)
{
    return json_object_get(meta(o), "deletionTimestamp") != NULL;
}

static bool printable(const char *s, size_t max)
{
    size_t n;

    if (!s)
        return false;
    n = strlen(s);
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

/* A string cut at `max` bytes on a UTF-8 character boundary (jansson strings are valid UTF-8, so
 * only the cut can break a sequence). */
static json_t *cut(const char *s, size_t max)
{
    size_t n = strlen(s);

    if (n <= max)
        return json_string(s);
    n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
        n--;
    return json_stringn(s, n);
}

/* Copies o[k] into d[k] when it is a string of at most max bytes (cut otherwise). */
static void copy_str(json_t *d, const json_t *o, const char *k, size_t max)
{
    const char *s = jsn_str(o, k);

    if (s && *s)
        json_object_set_new(d, k, cut(s, max));
}

static void copy_time(json_t *d, const json_t *o, const char *k)
{
    char t[32];

    if (vkp_rfc3339_seconds(jsn_str(o, k), t, sizeof(t)))
        json_object_set_new(d, k, json_string(t));
}

static void copy_int(json_t *d, const json_t *o, const char *k, json_int_t lo, json_int_t hi)
{
    const json_t *v = json_object_get(o, k);

    if (json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi)
        json_object_set_new(d, k, json_integer(json_integer_value(v)));
}

static void copy_bool(json_t *d, const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);

    if (json_is_boolean(v))
        json_object_set_new(d, k, json_boolean(json_is_true(v)));
}

static bool one_of(const char *s, const char *const *set)
{
    for (; s && *set; set++)
        if (strcmp(s, *set) == 0)
            return true;
    return false;
}

/* Removes from array a, in one pass, the elements drop(e, data) says. A removal by index moves the
 * rest of the array: one by one, the removals would cost the square of what the pod's author wrote
 * (45,000 token volumes of a 3 MB pod held the loop 0.46 s, their mounts far longer). */
static void array_filter(json_t *a, bool (*drop)(json_t *e, void *data), void *data)
{
    size_t k = 0, n = json_array_size(a);

    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(a, i);

        if (drop(e, data))
            continue;
        if (k != i)
            json_array_set(a, k, e); /* the element at k was dropped, or moved before k */
        k++;
    }
    while (json_array_size(a) > k)
        json_array_remove(a, json_array_size(a) - 1);
}

bool vkp_rfc3339_seconds(const char *s, char *out, size_t size)
{
    int64_t t;

    if (size < 21 || rfc3339_parse(s, 0, &t) < 0)
        return false;
    /* The text, not the second it names: a leap second stays ":60". */
    memcpy(out, s, 19);
    out[19] = 'Z';
    out[20] = '\0';
    return true;
}

/* ---- home -> remote
 * ------------------------------------------------------------------------------ */

bool vkp_is_daemonset(const json_t *pod)
{
    size_t i;
    const json_t *o;

    json_array_foreach(json_object_get(meta(pod), "ownerReferences"), i, o)
    {
        const char *kind = jsn_str(o, "kind");

        if (json_is_true(json_object_get(o, "controller")) && kind &&
            strcmp(kind, "DaemonSet") == 0)
            return true;
    }
    return false;
}

bool vkp_terminal(const json_t *pod)
{
    const char *p = jsn_str(obj(pod, "status"), "phase");

    return p && (strcmp(p, "Succeeded") == 0 || strcmp(p, "Failed") == 0);
}

static bool our_label(const char *k)
{
    return strcmp(k, VK_LABEL_ORIGIN) == 0 || strcmp(k, VK_LABEL_DESTINATION) == 0 ||
           strcmp(k, VK_LABEL_REFLECTED) == 0 || strcmp(k, VK_LABEL_HOME_UID) == 0 ||
           strcmp(k, VK_LABEL_HOME_NS) == 0;
}

static bool our_annotation(const char *k)
{
    return strcmp(k, VK_ANNOT_HOME_NAME) == 0 || strcmp(k, VK_ANNOT_HOME_NS) == 0 ||
           strcmp(k, VK_ANNOT_HOME_UID) == 0 || strcmp(k, VKP_ANNOT_PROPAGATED) == 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The labels the remote pod of `home` carries. */
static json_t *want_labels(const json_t *home, const struct vkp_ids *ids)
{
    json_t *l = json_object();
    const char *k;
    json_t *v;

    if (!l)
        return NULL;
    json_object_foreach(json_object_get(meta(home), "labels"), k, v)
    {
        if (json_is_string(v) && !our_label(k))
            json_object_set(l, k, v);
    }
    json_object_set_new(l, VK_LABEL_ORIGIN, json_string(ids->home_id));
    json_object_set_new(l, VK_LABEL_DESTINATION, json_string(ids->peer_id));
    json_object_set_new(l, VK_LABEL_REFLECTED, json_string("true"));
    json_object_set_new(l, VK_LABEL_HOME_UID, json_string(jsn_str(meta(home), "uid")));
    json_object_set_new(l, VK_LABEL_HOME_NS, json_string(jsn_str(meta(home), "namespace")));
    return l;
}

/* The annotations the remote pod of `home` carries, with the list of the home keys. */
static json_t *want_annotations(const json_t *home)
{
    const json_t *ha = json_object_get(meta(home), "annotations");
    json_t *a = json_object();
    const char **keys = NULL;
    const char *k;
    json_t *v;
    size_t n = 0;
    struct sbuf list;

    if (!a)
        return NULL;
    keys = x_calloc(json_object_size(ha) + 1, sizeof(*keys));
    if (!keys) {
        json_decref(a);
        return NULL;
    }
    json_object_foreach((json_t *)ha, k, v)
    {
        if (json_is_string(v) && !our_annotation(k)) {
            json_object_set(a, k, v);
            keys[n++] = k;
        }
    }
    qsort(keys, n, sizeof(*keys), cmp_str);
    sbuf_init(&list, 1u << 20);
    for (size_t i = 0; i < n; i++)
        if ((i && sbuf_adds(&list, ",") < 0) || sbuf_adds(&list, keys[i]) < 0)
            break;
    x_free(keys);
    json_object_set_new(a, VK_ANNOT_HOME_NAME, json_string(jsn_str(meta(home), "name")));
    json_object_set_new(a, VK_ANNOT_HOME_NS, json_string(jsn_str(meta(home), "namespace")));
    json_object_set_new(a, VK_ANNOT_HOME_UID, json_string(jsn_str(meta(home), "uid")));
    json_object_set_new(a, VKP_ANNOT_PROPAGATED, json_string(sbuf_str(&list)));
    sbuf_done(&list);
    return a;
}

static bool sa_token_secret(const char *secret, const char *sa)
{
    size_t n = strlen(sa), t = strlen(SA_TOKEN);

    if (!secret || strncmp(secret, sa, n) != 0 || strncmp(secret + n, SA_TOKEN, t) != 0)
        return false;
    secret += n + t;
    if (strlen(secret) != 5)
        return false;
    for (; *secret; secret++)
        if (!((*secret >= 'a' && *secret <= 'z') || (*secret >= '0' && *secret <= '9')))
            return false;
    return true;
}

/* A volume of A's service-account token: projected with a serviceAccountToken source
 * (kube-api-access-*), or the secret <sa>-token-xxxxx the 1.20 admission mounts. */
static bool token_volume(const json_t *vol, const char *sa)
{
    const json_t *proj = obj(vol, "projected"), *src;
    size_t i;

    json_array_foreach(json_object_get(proj, "sources"), i, src)
    {
        if (json_object_get(src, "serviceAccountToken"))
            return true;
    }
    return sa_token_secret(jsn_str(obj(vol, "secret"), "secretName"), sa);
}

/* A mount of a volume in dropped (a set: name -> true). */
static bool dropped_mount(json_t *m, void *dropped)
{
    const char *name = jsn_str(m, "name");

    return name && json_object_get(dropped, name) != NULL;
}

static void drop_mounts(json_t *containers, const json_t *dropped)
{
    size_t i;
    json_t *c, *mounts;

    json_array_foreach(containers, i, c)
    {
        mounts = json_object_get(c, "volumeMounts");
        if (!json_is_array(mounts))
            continue;
        array_filter(mounts, dropped_mount, (void *)dropped);
        if (json_array_size(mounts) == 0)
            json_object_del(c, "volumeMounts");
    }
}

struct token_volumes {
    const char *sa;
    json_t *gone; /* the names of the volumes dropped: name -> true */
};

static bool dropped_volume(json_t *v, void *data)
{
    struct token_volumes *tv = data;

    if (!token_volume(v, tv->sa))
        return false;
    if (jsn_str(v, "name"))
        json_object_set_new(tv->gone, jsn_str(v, "name"), json_true());
    return true;
}

static json_t *no_loop_affinity(void)
{
    return json_pack("{s:{s:[{s:[{s:s,s:s,s:[s]}]}]}}",
                     "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms",
                     "matchExpressions", "key", PEER_LABEL_TYPE, "operator", "NotIn", "values",
                     PEER_VIRTUAL_NODE);
}

static json_t *remote_spec(const json_t *home)
{
    static const char *const dropped[] = {"nodeName",
                                          "nodeSelector",
                                          "serviceAccountName",
                                          "serviceAccount",
                                          "priority",
                                          "priorityClassName",
                                          "runtimeClassName",
                                          "tolerations",
                                          "schedulerName",
                                          "preemptionPolicy",
                                          "ephemeralContainers",
                                          "overhead",
                                          NULL};
    const json_t *hs = obj(home, "spec");
    json_t *spec = json_deep_copy(hs), *vols, *aff, *gone = json_object();
    const char *sa = jsn_str(hs, "serviceAccountName");
    struct token_volumes tv;

    if (!spec || !gone) {
        json_decref(spec);
        json_decref(gone);
        return NULL;
    }
    if (!sa || !*sa)
        sa = jsn_str(hs, "serviceAccount");
    if (!sa || !*sa)
        sa = "default";
    vols = json_object_get(spec, "volumes");
    tv.sa = sa;
    tv.gone = gone;
    array_filter(vols, dropped_volume, &tv);
    if (json_is_array(vols) && json_array_size(vols) == 0)
        json_object_del(spec, "volumes");
    drop_mounts(json_object_get(spec, "containers"), gone);
    drop_mounts(json_object_get(spec, "initContainers"), gone);
    json_decref(gone);
    for (const char *const *d = dropped; *d; d++)
        json_object_del(spec, *d);
    json_object_set_new(spec, "automountServiceAccountToken", json_false());
    aff = json_object_get(spec, "affinity");
    if (!json_is_object(aff)) {
        aff = json_object();
        json_object_set_new(spec, "affinity", aff);
    }
    if (aff)
        json_object_set_new(aff, "nodeAffinity", no_loop_affinity());
    return spec;
}

int vkp_remote_pod(const json_t *home, const char *remote_ns, const struct vkp_ids *ids,
                   json_t **ret, char *err, size_t errlen)
{
    const json_t *md = meta(home);
    json_t *labels = NULL, *annots = NULL, *spec = NULL, *pod = NULL;
    int r = -ENOMEM;

    if (!jsn_str(md, "name") || !jsn_str(md, "namespace") || !jsn_str(md, "uid") || !remote_ns ||
        !ids || !ids->home_id || !ids->peer_id) {
        snprintf(err, errlen, "the home pod has no name, namespace or UID");
        return -EINVAL;
    }
    if (json_array_size(json_object_get(obj(home, "spec"), "containers")) == 0) {
        snprintf(err, errlen, "the home pod has no containers");
        return -EINVAL;
    }
    labels = want_labels(home, ids);
    annots = want_annotations(home);
    spec = remote_spec(home);
    if (!labels || !annots || !spec)
        goto out;
    pod = json_pack("{s:s,s:s,s:{s:s,s:s,s:O,s:O},s:O}", "apiVersion", "v1", "kind", "Pod",
                    "metadata", "name", jsn_str(md, "name"), "namespace", remote_ns, "labels",
                    labels, "annotations", annots, "spec", spec);
    if (!pod)
        goto out;
    *ret = pod;
    r = 0;
out:
    json_decref(labels);
    json_decref(annots);
    json_decref(spec);
    return r;
}

enum vkp_match vkp_classify(const json_t *home, const json_t *remote, const char *home_id)
{
    const json_t *l = json_object_get(meta(remote), "labels");
    const char *origin = jsn_str(l, VK_LABEL_ORIGIN), *uid = jsn_str(l, VK_LABEL_HOME_UID);
    const char *home_uid = jsn_str(meta(home), "uid");

    if (!origin || !home_id || strcmp(origin, home_id) != 0)
        return VKP_FOREIGN;
    return uid && home_uid && strcmp(uid, home_uid) == 0 ? VKP_OURS : VKP_STALE;
}

/* Sets in `patch` (a map patch) what turns `have` into `want`; keys of have not in want are set to
 * null when removable(key) says so. Returns how many entries the patch has. */
static size_t map_patch(json_t *patch, const json_t *have, const json_t *want,
                        bool (*removable)(const char *key, void *data), void *data)
{
    const char *k;
    json_t *v;

    json_object_foreach((json_t *)want, k, v)
    {
        if (!json_equal(json_object_get(have, k), v))
            json_object_set(patch, k, v);
    }
    json_object_foreach((json_t *)have, k, v)
    {
        if (!json_object_get(want, k) && removable(k, data))
            json_object_set_new(patch, k, json_null());
    }
    return json_object_size(patch);
}

static bool label_removable(const char *key, void *data)
{
    (void)key;
    (void)data;
    return true;
}

/* An annotation is ours to remove when the remote pod's list says we put it there (data: the
 * list's keys as a set, propagated_set). */
static bool annotation_removable(const char *key, void *data)
{
    return json_object_get(data, key) != NULL;
}

/* The keys of a VKP_ANNOT_PROPAGATED list (comma-separated) as a set: key -> true (NULL: no
 * memory). Looked up once per annotation of the remote pod, which the provider writes: a scan of
 * the list for each would cost their product (20,000 keys in each held the loop 3.5 s). */
static json_t *propagated_set(const char *list)
{
    json_t *set = json_object();

    for (const char *p = list; set && p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);

        (void)json_object_setn_new(set, p, len, json_true()); /* if not: not removed, as unlisted */
        p = end ? end + 1 : NULL;
    }
    return set;
}

static json_t *image_patch(const json_t *home_list, const json_t *remote_list)
{
    json_t *out = json_array();
    size_t i, j;
    const json_t *h, *r;

    json_array_foreach(home_list, i, h)
    {
        const char *name = jsn_str(h, "name"), *img = jsn_str(h, "image");

        json_array_foreach(remote_list, j, r)
        {
            const char *rn = jsn_str(r, "name"), *ri = jsn_str(r, "image");

            if (name && img && rn && strcmp(name, rn) == 0 && (!ri || strcmp(ri, img) != 0))
                json_array_append_new(out, json_pack("{s:s,s:s}", "name", name, "image", img));
        }
    }
    if (json_array_size(out) == 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

json_t *vkp_remote_update(const json_t *home, const json_t *remote, const struct vkp_ids *ids)
{
    const json_t *rm = meta(remote), *hs = obj(home, "spec"), *rs = obj(remote, "spec");
    json_t *wl = want_labels(home, ids), *wa = want_annotations(home);
    json_t *lp = json_object(), *ap = json_object(), *md = json_object(), *spec = json_object();
    json_t *patch = NULL, *imgs;
    json_t *list =
        propagated_set(jsn_str_or_empty(json_object_get(rm, "annotations"), VKP_ANNOT_PROPAGATED));
    const json_t *had = json_object_get(hs, "activeDeadlineSeconds");
    const json_t *rad = json_object_get(rs, "activeDeadlineSeconds");

    if (!wl || !wa || !lp || !ap || !md || !spec || !list)
        goto out;
    if (map_patch(lp, json_object_get(rm, "labels"), wl, label_removable, NULL))
        json_object_set(md, "labels", lp);
    if (map_patch(ap, json_object_get(rm, "annotations"), wa, annotation_removable, list))
        json_object_set(md, "annotations", ap);
    if ((imgs = image_patch(json_object_get(hs, "containers"), json_object_get(rs, "containers"))))
        json_object_set_new(spec, "containers", imgs);
    if ((imgs = image_patch(json_object_get(hs, "initContainers"),
                            json_object_get(rs, "initContainers"))))
        json_object_set_new(spec, "initContainers", imgs);
    /* activeDeadlineSeconds may be set or lowered, never raised or removed. */
    if (json_is_integer(had) && json_integer_value(had) > 0 &&
        (!json_is_integer(rad) || json_integer_value(had) < json_integer_value(rad)))
        json_object_set_new(spec, "activeDeadlineSeconds", json_integer(json_integer_value(had)));
    if (json_object_size(md) == 0 && json_object_size(spec) == 0)
        goto out;
    patch = json_object();
    if (patch && json_object_size(md))
        json_object_set(patch, "metadata", md);
    if (patch && json_object_size(spec))
        json_object_set(patch, "spec", spec);
out:
    json_decref(list);
    json_decref(wl);
    json_decref(wa);
    json_decref(lp);
    json_decref(ap);
    json_decref(md);
    json_decref(spec);
    return patch;
}

/* ---- remote -> home
 * ------------------------------------------------------------------------------ */

static bool cond_type_ok(const char *t)
{
    if (!printable(t, 316))
        return false;
    for (; *t; t++)
        if (!((*t >= 'a' && *t <= 'z') || (*t >= 'A' && *t <= 'Z') || (*t >= '0' && *t <= '9') ||
              *t == '-' || *t == '_' || *t == '.' || *t == '/'))
            return false;
    return true;
}

static json_t *copy_condition(const json_t *c)
{
    static const char *const statuses[] = {"True", "False", "Unknown", NULL};
    const char *type = jsn_str(c, "type"), *status = jsn_str(c, "status");
    json_t *d;

    if (!cond_type_ok(type) || !one_of(status, statuses) || strcmp(type, VKP_COND_REACHABLE) == 0)
        return NULL;
    d = json_pack("{s:s,s:s}", "type", type, "status", status);
    if (!d)
        return NULL;
    if (printable(jsn_str(c, "reason"), VKP_MAX_REASON))
        json_object_set_new(d, "reason", json_string(jsn_str(c, "reason")));
    copy_str(d, c, "message", VKP_MAX_MESSAGE);
    copy_time(d, c, "lastProbeTime");
    copy_time(d, c, "lastTransitionTime");
    return d;
}

/* Our reachability condition; its transition time is kept from the home pod while its status is
 * unchanged. */
static json_t *reach_condition(const json_t *home, const struct vkp_status_ctx *ctx)
{
    const char *status = ctx->reachable ? "True" : "False", *since = ctx->now;
    size_t i;
    const json_t *c;
    char msg[VKP_MAX_MESSAGE];

    json_array_foreach(json_object_get(obj(home, "status"), "conditions"), i, c)
    {
        const char *t = jsn_str(c, "type"), *s = jsn_str(c, "status"),
                   *l = jsn_str(c, "lastTransitionTime");

        if (t && s && l && strcmp(t, VKP_COND_REACHABLE) == 0 && strcmp(s, status) == 0)
            since = l;
    }
    if (ctx->reachable)
        snprintf(msg, sizeof(msg), "the provider answers");
    else
        snprintf(msg, sizeof(msg), "the provider is unreachable: %s; the pod's last status is kept",
                 ctx->unreachable && *ctx->unreachable ? ctx->unreachable : "no answer");
    return json_pack("{s:s,s:s,s:s,s:s,s:s}", "type", VKP_COND_REACHABLE, "status", status,
                     "reason", ctx->reachable ? "ProviderReachable" : "ProviderUnreachable",
                     "message", msg, "lastTransitionTime", since ? since : "");
}

static bool ip_ok(const char *s)
{
    unsigned char buf[16];

    return s && strlen(s) < MAX_IP_TEXT &&
           (inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1);
}

static json_t *home_ip(const char *ip, const struct vkp_status_ctx *ctx)
{
    char out[MAX_IP_TEXT + 4];

    if (!ip_ok(ip))
        return NULL;
    if (!ctx->remote_to_home)
        return json_string(ip);
    /* The provider's word: an address outside its pod CIDR as remapped here (or any, while the
     * remapping is not settled) is dropped, never shown on the home pod, where EndpointSlices and
     * Services would send traffic to it. */
    if (ctx->remote_to_home(ctx->ip_data, ip, out, sizeof(out)) == 0 && ip_ok(out))
        return json_string(out);
    return NULL;
}

static void copy_ips(json_t *st, const json_t *rs, const struct vkp_status_ctx *ctx)
{
    json_t *ips = json_array(), *first;
    const json_t *e;
    size_t i;

    if (!ips)
        return;
    json_array_foreach(json_object_get(rs, "podIPs"), i, e)
    {
        json_t *ip = home_ip(jsn_str(e, "ip"), ctx);

        if (ip && json_array_size(ips) < 2)
            json_array_append_new(ips, json_pack("{s:o}", "ip", ip));
        else
            json_decref(ip);
    }
    if (json_array_size(ips) == 0) {
        json_t *ip = home_ip(jsn_str(rs, "podIP"), ctx);

        if (ip)
            json_array_append_new(ips, json_pack("{s:o}", "ip", ip));
    }
    first = json_object_get(json_array_get(ips, 0), "ip");
    if (first) {
        json_object_set(st, "podIP", first);
        json_object_set_new(st, "podIPs", ips);
    } else {
        json_decref(ips);
    }
}

static json_t *prefixed_id(const char *id)
{
    const char *sep = id ? strstr(id, "://") : NULL;
    char buf[VKP_MAX_STRING + 16];

    if (!id || !printable(id, VKP_MAX_STRING))
        return NULL;
    snprintf(buf, sizeof(buf), VKP_CONTAINER_ID_PREFIX "%s", sep ? sep + 3 : id);
    return json_string(buf);
}

static bool prefixed_id_ok(const char *id)
{
    return printable(id, VKP_MAX_STRING);
}

static json_t *copy_state(const json_t *s)
{
    const json_t *w = obj(s, "waiting"), *r = obj(s, "running"), *t = obj(s, "terminated");
    json_t *d = json_object(), *x;

    if (!d)
        return NULL;
    if (t) {
        x = json_object();
        copy_int(x, t, "exitCode", -2147483647 - 1, 2147483647);
        copy_int(x, t, "signal", 0, 255);
        if (printable(jsn_str(t, "reason"), VKP_MAX_REASON))
            json_object_set_new(x, "reason", json_string(jsn_str(t, "reason")));
        copy_str(x, t, "message", VKP_MAX_MESSAGE);
        copy_time(x, t, "startedAt");
        copy_time(x, t, "finishedAt");
        if (prefixed_id_ok(jsn_str(t, "containerID")))
            json_object_set_new(x, "containerID", prefixed_id(jsn_str(t, "containerID")));
        if (!json_object_get(x, "exitCode"))
            json_object_set_new(x, "exitCode", json_integer(0));
        json_object_set_new(d, "terminated", x);
    } else if (r) {
        x = json_object();
        copy_time(x, r, "startedAt");
        json_object_set_new(d, "running", x);
    } else if (w) {
        x = json_object();
        if (printable(jsn_str(w, "reason"), VKP_MAX_REASON))
            json_object_set_new(x, "reason", json_string(jsn_str(w, "reason")));
        copy_str(x, w, "message", VKP_MAX_MESSAGE);
        json_object_set_new(d, "waiting", x);
    }
    return d;
}

static bool has_container(const json_t *list, const char *name)
{
    size_t i;
    const json_t *c;

    json_array_foreach(list, i, c)
    {
        if (name && jsn_str(c, "name") && strcmp(jsn_str(c, "name"), name) == 0)
            return true;
    }
    return false;
}

static json_t *copy_statuses(const json_t *remote_list, const json_t *home_containers)
{
    json_t *out = json_array();
    size_t i;
    const json_t *c;

    if (!out)
        return NULL;
    json_array_foreach(remote_list, i, c)
    {
        const char *name = jsn_str(c, "name");
        json_t *d, *x;

        if (i >= VKP_MAX_CONTAINERS)
            break;
        if (!has_container(home_containers, name) || has_container(out, name))
            continue;
        d = json_pack("{s:s}", "name", name);
        if (!d)
            continue;
        json_object_set_new(d, "state", copy_state(obj(c, "state")));
        json_object_set_new(d, "lastState", copy_state(obj(c, "lastState")));
        json_object_set_new(d, "ready", json_boolean(json_is_true(json_object_get(c, "ready"))));
        copy_int(d, c, "restartCount", 0, 1000000000);
        if (!json_object_get(d, "restartCount"))
            json_object_set_new(d, "restartCount", json_integer(0));
        if (printable(jsn_str(c, "image"), VKP_MAX_STRING))
            json_object_set_new(d, "image", json_string(jsn_str(c, "image")));
        else
            json_object_set_new(d, "image", json_string(""));
        if (printable(jsn_str(c, "imageID"), VKP_MAX_STRING))
            json_object_set_new(d, "imageID", json_string(jsn_str(c, "imageID")));
        else
            json_object_set_new(d, "imageID", json_string(""));
        if ((x = prefixed_id(jsn_str(c, "containerID"))))
            json_object_set_new(d, "containerID", x);
        copy_bool(d, c, "started");
        json_array_append_new(out, d);
    }
    return out;
}

json_t *vkp_home_status(const json_t *home, const json_t *remote, const struct vkp_status_ctx *ctx)
{
    static const char *const phases[] = {"Pending", "Running", "Succeeded",
                                         "Failed",  "Unknown", NULL};
    static const char *const qos[] = {"Guaranteed", "Burstable", "BestEffort", NULL};
    const json_t *rs = obj(remote, "status"), *hs = obj(home, "spec"), *c;
    json_t *st, *conds, *d;
    size_t i;

    if (!remote) {
        st = json_deep_copy(obj(home, "status"));
        if (!st)
            st = json_object();
        conds = json_object_get(st, "conditions");
        if (!json_is_array(conds)) {
            conds = json_array();
            json_object_set_new(st, "conditions", conds);
        }
        for (i = 0; i < json_array_size(conds);) {
            const char *t = jsn_str(json_array_get(conds, i), "type");

            if (t && strcmp(t, VKP_COND_REACHABLE) == 0)
                json_array_remove(conds, i);
            else
                i++;
        }
        json_array_append_new(conds, reach_condition(home, ctx));
        return st;
    }
    st = json_object();
    conds = json_array();
    if (!st || !conds) {
        json_decref(st);
        json_decref(conds);
        return NULL;
    }
    json_object_set_new(
        st, "phase",
        json_string(one_of(jsn_str(rs, "phase"), phases) ? jsn_str(rs, "phase") : "Pending"));
    json_array_foreach(json_object_get(rs, "conditions"), i, c)
    {
        bool dup = false;
        size_t j;
        const json_t *o;

        if (i >= VKP_MAX_CONDITIONS)
            break;
        if (!(d = copy_condition(c)))
            continue;
        json_array_foreach(conds, j, o)
        {
            if (json_equal(json_object_get(o, "type"), json_object_get(d, "type")))
                dup = true;
        }
        if (dup)
            json_decref(d);
        else
            json_array_append_new(conds, d);
    }
    json_array_append_new(conds, reach_condition(home, ctx));
    json_object_set_new(st, "conditions", conds);
    copy_str(st, rs, "message", VKP_MAX_MESSAGE);
    if (printable(jsn_str(rs, "reason"), VKP_MAX_REASON))
        json_object_set_new(st, "reason", json_string(jsn_str(rs, "reason")));
    if (ctx->node_address && ip_ok(ctx->node_address) &&
        (jsn_str(rs, "hostIP") || jsn_str(rs, "podIP")))
        json_object_set_new(st, "hostIP", json_string(ctx->node_address));
    copy_ips(st, rs, ctx);
    copy_time(st, rs, "startTime");
    if (json_object_get(rs, "containerStatuses"))
        json_object_set_new(st, "containerStatuses",
                            copy_statuses(json_object_get(rs, "containerStatuses"),
                                          json_object_get(hs, "containers")));
    if (json_object_get(rs, "initContainerStatuses"))
        json_object_set_new(st, "initContainerStatuses",
                            copy_statuses(json_object_get(rs, "initContainerStatuses"),
                                          json_object_get(hs, "initContainers")));
    if (one_of(jsn_str(rs, "qosClass"), qos))
        json_object_set_new(st, "qosClass", json_string(jsn_str(rs, "qosClass")));
    return st;
}

bool vkp_status_quiet(const json_t *status)
{
    const char *ph = jsn_str(status, "phase");
    const json_t *c;
    size_t i;

    if ((ph && strcmp(ph, "Pending") != 0) || jsn_str(status, "reason"))
        return false;
    if (json_array_size(json_object_get(status, "containerStatuses")) ||
        json_array_size(json_object_get(status, "initContainerStatuses")))
        return false;
    json_array_foreach(json_object_get(status, "conditions"), i, c)
    {
        const char *t = jsn_str(c, "type"), *st = jsn_str(c, "status");

        if (t && st && strcmp(t, "PodScheduled") == 0 && strcmp(st, "False") == 0)
            return false;
    }
    return true;
}

json_t *vkp_unscheduled_status(const json_t *home, const char *reason, const char *message,
                               const struct vkp_status_ctx *ctx)
{
    json_t *st = vkp_home_status(home, NULL, ctx), *conds, *c, *nc;
    const char *since = ctx->now;
    size_t i;

    if (!st)
        return NULL;
    conds = json_object_get(st, "conditions");
    for (i = 0; i < json_array_size(conds);) {
        c = json_array_get(conds, i);
        if (jsn_str(c, "type") && strcmp(jsn_str(c, "type"), "PodScheduled") == 0) {
            if (jsn_str(c, "status") && strcmp(jsn_str(c, "status"), "False") == 0 &&
                jsn_str(c, "lastTransitionTime"))
                since = jsn_str(c, "lastTransitionTime");
            break;
        }
        i++;
    }
    nc = json_pack("{s:s,s:s,s:s,s:o,s:s}", "type", "PodScheduled", "status", "False", "reason",
                   reason, "message", cut(message ? message : "", VKP_MAX_MESSAGE),
                   "lastTransitionTime", since ? since : "");
    if (!nc) {
        json_decref(st);
        return NULL;
    }
    if (i < json_array_size(conds))
        json_array_set_new(conds, i, nc);
    else
        json_array_insert_new(conds, 0, nc);
    if (!json_object_get(st, "phase"))
        json_object_set_new(st, "phase", json_string("Pending"));
    return st;
}

/* The API server writes absent optional fields of a stored status as null (lastProbeTime, a zero
 * startedAt): compared without them, what we wrote reads back equal. */
static void strip_nulls(json_t *o)
{
    const char *k;
    json_t *v;
    void *tmp;
    size_t i;

    if (json_is_object(o)) {
        json_object_foreach_safe(o, tmp, k, v)
        {
            if (json_is_null(v))
                json_object_del(o, k);
            else
                strip_nulls(v);
        }
    } else if (json_is_array(o)) {
        json_array_foreach(o, i, v)
        {
            strip_nulls(v);
        }
    }
}

json_t *vkp_status_patch(const json_t *home, const json_t *want)
{
    /* Managed keys; the last two are never nulled (set once, by the API server or the start). */
    static const char *const keys[] = {"phase",
                                       "conditions",
                                       "message",
                                       "reason",
                                       "hostIP",
                                       "podIP",
                                       "podIPs",
                                       "containerStatuses",
                                       "initContainerStatuses",
                                       "startTime",
                                       "qosClass",
                                       NULL};
    json_t *cur = json_deep_copy(obj(home, "status"));
    json_t *patch = json_object();

    if (!patch) {
        json_decref(cur);
        return NULL;
    }
    strip_nulls(cur);
    for (size_t i = 0; keys[i]; i++) {
        const json_t *w = json_object_get(want, keys[i]), *c = json_object_get(cur, keys[i]);

        if (w && !json_equal(w, c))
            json_object_set(patch, keys[i], (json_t *)w);
        else if (!w && c && !json_is_null(c) && strcmp(keys[i], "startTime") != 0 &&
                 strcmp(keys[i], "qosClass") != 0)
            json_object_set_new(patch, keys[i], json_null());
    }
    json_decref(cur);
    if (json_object_size(patch) == 0) {
        json_decref(patch);
        return NULL;
    }
    return patch;
}

/* ---- Events
 * -------------------------------------------------------------------------------------- */

json_t *vkp_home_event(const json_t *ev, const json_t *home, const char *remote_uid,
                       const char *peer_id, char *ret_name)
{
    static const char *const types[] = {"Normal", "Warning", NULL};
    const json_t *io = obj(ev, "involvedObject"), *series = obj(ev, "series");
    const char *kind = jsn_str(io, "kind"), *name = jsn_str(io, "name"),
               *uid = jsn_str(meta(ev), "uid");
    const char *io_uid = jsn_str(io, "uid"), *reason = jsn_str(ev, "reason"),
               *type = jsn_str(ev, "type");
    const char *hname = jsn_str(meta(home), "name"), *hns = jsn_str(meta(home), "namespace");
    const char *huid = jsn_str(meta(home), "uid");
    char first[32], last[32], comp[96];
    json_int_t count = 1;
    json_t *out, *hio;

    if (!kind || strcmp(kind, "Pod") != 0 || !name || !hname || strcmp(name, hname) != 0 || !hns ||
        !huid || !printable(uid, 128) || !printable(reason, VKP_MAX_REASON) ||
        !one_of(type, types) || !peer_id || strcmp(reason, VKP_EVENT_REASON_SCHEDULED) == 0)
        return NULL;
    if (io_uid && remote_uid && strcmp(io_uid, remote_uid) != 0)
        return NULL;
    if (!vkp_rfc3339_seconds(jsn_str(ev, "lastTimestamp"), last, sizeof(last)) &&
        !vkp_rfc3339_seconds(jsn_str(series, "lastObservedTime"), last, sizeof(last)) &&
        !vkp_rfc3339_seconds(jsn_str(ev, "eventTime"), last, sizeof(last)))
        return NULL;
    if (!vkp_rfc3339_seconds(jsn_str(ev, "firstTimestamp"), first, sizeof(first)) &&
        !vkp_rfc3339_seconds(jsn_str(ev, "eventTime"), first, sizeof(first)))
        memcpy(first, last, sizeof(first));
    if (json_is_integer(json_object_get(series, "count")))
        count = json_integer_value(json_object_get(series, "count"));
    else if (json_is_integer(json_object_get(ev, "count")))
        count = json_integer_value(json_object_get(ev, "count"));
    if (count < 1 || count > 1000000)
        count = 1;
    snprintf(ret_name, VKP_EVENT_NAME_MAX + 1, "%.200s.%016llx", hname,
             (unsigned long long)str_fnv1a64(uid));
    snprintf(comp, sizeof(comp), "cliqo-vk/%.64s", peer_id);
    hio = json_pack("{s:s,s:s,s:s,s:s,s:s}", "apiVersion", "v1", "kind", "Pod", "name", hname,
                    "namespace", hns, "uid", huid);
    if (hio && printable(jsn_str(io, "fieldPath"), 256))
        json_object_set_new(hio, "fieldPath", json_string(jsn_str(io, "fieldPath")));
    out = json_pack("{s:s,s:s,s:{s:s,s:s},s:o,s:s,s:o,s:s,s:I,s:s,s:s,s:{s:s}}", "apiVersion", "v1",
                    "kind", "Event", "metadata", "name", ret_name, "namespace", hns,
                    "involvedObject", hio, "reason", reason, "message",
                    cut(jsn_str(ev, "message") ? jsn_str(ev, "message") : "", VKP_MAX_MESSAGE),
                    "type", type, "count", count, "firstTimestamp", first, "lastTimestamp", last,
                    "source", "component", comp);
    return out;
}

/* ---- what a reconcile pass does
 * ------------------------------------------------------------------ */

/* The home pod's last step (grace 0), once: a pod we deleted is not deleted again while the
 * informer still shows it (the API server's last MODIFIED comes before its DELETED). */
static enum vkp_action finish_home(const struct vkp_situation *s)
{
    return s->home_deleted ? VKP_WAIT : VKP_DELETE_HOME;
}

enum vkp_action vkp_decide(const struct vkp_situation *s)
{
    bool home_del, remote_del;
    enum vkp_match m;

    if (!s->home_synced)
        return VKP_WAIT;
    if (!s->home) {
        /* An orphan: its home pod is gone or no longer bound here. */
        if (!s->remote || !s->reachable)
            return s->remote ? VKP_WAIT : VKP_NOTHING;
        if (deleting(s->remote))
            return VKP_WAIT;
        return vkp_classify(NULL, s->remote, s->home_id) == VKP_FOREIGN ? VKP_NOTHING
                                                                        : VKP_DELETE_REMOTE;
    }
    home_del = deleting(s->home);
    if (vkp_is_daemonset(s->home) || !s->mapped) {
        /* Never offloaded (or not now): a deletion is finished at once, as a kubelet would. A
         * remote pod left in a namespace no longer mapped goes with that namespace. */
        if (home_del)
            return finish_home(s);
        return s->status_differs ? VKP_STATUS : VKP_NOTHING;
    }
    if (!s->reachable) {
        if (home_del)
            return VKP_WAIT; /* finished when the provider answers again */
        return s->status_differs ? VKP_STATUS : VKP_NOTHING;
    }
    m = s->remote ? vkp_classify(s->home, s->remote, s->home_id) : VKP_FOREIGN;
    remote_del = s->remote && deleting(s->remote);
    if (s->remote && m == VKP_FOREIGN)
        return VKP_NOTHING;
    if (home_del) {
        if (!s->remote)
            return s->remote_synced ? finish_home(s) : VKP_WAIT;
        return remote_del ? VKP_WAIT : VKP_DELETE_REMOTE;
    }
    if (!s->remote) {
        if (!s->remote_synced)
            return VKP_WAIT;
        if (vkp_terminal(s->home))
            return s->status_differs ? VKP_STATUS : VKP_NOTHING;
        if (s->refused)
            return s->status_differs ? VKP_STATUS : VKP_WAIT;
        /* Held until the remapping settles (the pass that says so requeues every pod). */
        if (s->network_pending)
            return s->status_differs ? VKP_STATUS : VKP_WAIT;
        return VKP_CREATE;
    }
    if (m == VKP_STALE)
        return remote_del ? VKP_WAIT : VKP_DELETE_REMOTE;
    if (!remote_del && s->update_remote)
        return VKP_UPDATE_REMOTE;
    if (s->status_differs)
        return VKP_STATUS;
    return remote_del ? VKP_WAIT : VKP_NOTHING;
}

const char *vkp_action_name(enum vkp_action a)
{
    static const char *const names[] = {"nothing",     "wait",          "create", "delete-remote",
                                        "delete-home", "update-remote", "status"};

    return a >= 0 && a <= VKP_STATUS ? names[a] : "unknown";
}

/* ---- informer transforms
 * ------------------------------------------------------------------------- */

static void keep_only(json_t *o, const char *const *keys)
{
    const char *k;
    json_t *v;
    void *tmp;

    if (!json_is_object(o))
        return;
    json_object_foreach_safe(o, tmp, k, v)
    {
        bool keep = false;

        (void)v;
        for (const char *const *p = keys; *p && !keep; p++)
            keep = strcmp(*p, k) == 0;
        if (!keep)
            json_object_del(o, k);
    }
}

static bool not_controller(json_t *ref, void *data)
{
    (void)data;
    return !json_is_true(json_object_get(ref, "controller"));
}

static void trim_array(json_t *a, size_t max)
{
    while (json_is_array(a) && json_array_size(a) > max)
        json_array_remove(a, json_array_size(a) - 1);
}

void vkp_home_transform(json_t *pod)
{
    static const char *const md_keys[] = {"name",
                                          "namespace",
                                          "uid",
                                          "resourceVersion",
                                          "labels",
                                          "annotations",
                                          "ownerReferences",
                                          "deletionTimestamp",
                                          "deletionGracePeriodSeconds",
                                          NULL};
    static const char *const ref_keys[] = {"apiVersion", "kind", "controller", NULL};
    json_t *refs = json_object_get(json_object_get(pod, "metadata"), "ownerReferences"), *r;
    size_t i;

    keep_only(json_object_get(pod, "metadata"), md_keys);
    array_filter(refs, not_controller, NULL);
    json_array_foreach(refs, i, r)
    {
        keep_only(r, ref_keys);
    }
    json_object_del(pod, "apiVersion");
    json_object_del(pod, "kind");
}

static void trim_containers(json_t *list)
{
    static const char *const keys[] = {"name", "image", NULL};
    size_t i;
    json_t *c;

    trim_array(list, VKP_MAX_CONTAINERS);
    json_array_foreach(list, i, c)
    {
        keep_only(c, keys);
    }
}

void vkp_remote_transform(json_t *pod)
{
    static const char *const top[] = {"metadata", "spec", "status", NULL};
    static const char *const md_keys[] = {"name",
                                          "namespace",
                                          "uid",
                                          "resourceVersion",
                                          "labels",
                                          "annotations",
                                          "deletionTimestamp",
                                          "deletionGracePeriodSeconds",
                                          NULL};
    static const char *const spec_keys[] = {"containers", "initContainers", "activeDeadlineSeconds",
                                            NULL};
    json_t *spec = json_object_get(pod, "spec"), *st = json_object_get(pod, "status");

    keep_only(pod, top);
    keep_only(json_object_get(pod, "metadata"), md_keys);
    keep_only(spec, spec_keys);
    trim_containers(json_object_get(spec, "containers"));
    trim_containers(json_object_get(spec, "initContainers"));
    trim_array(json_object_get(st, "conditions"), VKP_MAX_CONDITIONS);
    trim_array(json_object_get(st, "containerStatuses"), VKP_MAX_CONTAINERS);
    trim_array(json_object_get(st, "initContainerStatuses"), VKP_MAX_CONTAINERS);
    json_object_del(st, "ephemeralContainerStatuses");
    json_object_del(st, "nominatedNodeName");
}

void vkp_event_transform(json_t *ev)
{
    static const char *const top[] = {
        "metadata",       "involvedObject", "reason",    "message", "type", "count",
        "firstTimestamp", "lastTimestamp",  "eventTime", "series",  NULL};
    static const char *const md_keys[] = {"name", "namespace", "uid", "resourceVersion", NULL};
    static const char *const io_keys[] = {"kind", "name", "namespace", "uid", "fieldPath", NULL};
    static const char *const series_keys[] = {"count", "lastObservedTime", NULL};

    keep_only(ev, top);
    keep_only(json_object_get(ev, "metadata"), md_keys);
    keep_only(json_object_get(ev, "involvedObject"), io_keys);
    keep_only(json_object_get(ev, "series"), series_keys);
    if (json_is_string(json_object_get(ev, "message")) &&
        strlen(json_string_value(json_object_get(ev, "message"))) > VKP_MAX_MESSAGE)
        json_object_set_new(
            ev, "message", cut(json_string_value(json_object_get(ev, "message")), VKP_MAX_MESSAGE));
}

bool vkp_refusal_transient(int err, const char *message)
{
    return err == -EPERM && message && strstr(message, "error looking up service account") &&
           strstr(message, "not found");
}
