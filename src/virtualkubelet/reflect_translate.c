/* reflect_translate: see reflect_translate.h.
 *
 * One set of field rules per kind serves both directions: translating a home object and reading
 * a provider object for comparison go through the same copy functions (with `translate` false for
 * the latter), so a copy made by vkr_desired always compares equal to itself and the comparison
 * only sees what reflection writes. */
#include "virtualkubelet/reflect_translate.h"
#include "common/json.h"

#include <errno.h>
#include <string.h>

#define IP_MAX 64

static const char *const verdict_names[_VKR_VERDICTS] = {
    [VKR_REFLECT] = "reflect",
    [VKR_SKIP_INVALID] = "invalid",
    [VKR_SKIP_COPY] = "copy",
    [VKR_SKIP_FILTERED] = "filtered",
    [VKR_SKIP_EXCLUDED] = "excluded",
    [VKR_SKIP_TOO_BIG] = "too-big",
    [VKR_SKIP_NO_SERVICE] = "no-service",
    [VKR_SKIP_EMPTY] = "empty",
};

const char *vkr_verdict_name(int verdict)
{
    return verdict >= 0 && verdict < _VKR_VERDICTS ? verdict_names[verdict] : "error";
}

/* ---- small JSON helpers ---------------------------------------------------------------------- */

/* Sets o[k] = v (a new reference, may be NULL); -ENOMEM when v is NULL or the set fails. */
static int set_new(json_t *o, const char *k, json_t *v)
{
    return v && json_object_set_new(o, k, v) == 0 ? 0 : -ENOMEM;
}

static int set_copy(json_t *o, const char *k, json_t *v)
{
    return json_object_set(o, k, v) == 0 ? 0 : -ENOMEM;
}

/* A copy of a string -> string map: other values and keys in skip (NULL-terminated) dropped; an
 * absent or non-object map gives {}. */
static json_t *string_map(const json_t *m, const char *const *skip)
{
    json_t *out = json_object(), *v;
    const char *k;

    if (!out)
        return NULL;
    json_object_foreach((json_t *)m, k, v)
    {
        bool drop = !json_is_string(v);

        for (size_t i = 0; skip && skip[i] && !drop; i++)
            drop = strcmp(k, skip[i]) == 0;
        if (!drop && json_object_set(out, k, v) < 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* Present and not an object of strings. */
static bool map_malformed(const json_t *m)
{
    const char *k;
    json_t *v;

    if (!m || json_is_null(m))
        return false;
    if (!json_is_object(m))
        return true;
    json_object_foreach((json_t *)m, k, v)
    {
        if (!json_is_string(v))
            return true;
    }
    return false;
}

static bool is_true(const json_t *o, const char *k)
{
    return json_is_true(json_object_get(o, k));
}

/* Decoded length of a base64 string (padding allowed), for size accounting. */
static size_t b64_len(const char *s)
{
    size_t n = strlen(s), pad = 0;

    if (n >= 1 && s[n - 1] == '=')
        pad++;
    if (n >= 2 && s[n - 2] == '=')
        pad++;
    return n / 4 * 3 + (n % 4 ? (n % 4) - 1 : 0) - (n % 4 ? 0 : pad);
}

size_t vkr_data_size(enum vk_reflect_kind kind, const json_t *obj)
{
    const char *k;
    json_t *v;
    size_t total = 0;

    if (kind == VK_REFLECT_CONFIGMAPS) {
        json_object_foreach(json_object_get(obj, "data"), k, v) total +=
            json_is_string(v) ? json_string_length(v) : 0;
        json_object_foreach(json_object_get(obj, "binaryData"), k, v) total +=
            json_is_string(v) ? b64_len(json_string_value(v)) : 0;
    } else if (kind == VK_REFLECT_SECRETS) {
        json_object_foreach(json_object_get(obj, "data"), k, v) total +=
            json_is_string(v) ? b64_len(json_string_value(v)) : 0;
    }
    return total;
}

/* ---- metadata -------------------------------------------------------------------------------- */

static const char *const skip_annotations[] = {VKR_ANNOT_LAST_APPLIED, NULL};

/* {apiVersion, kind, metadata: {name, namespace, labels (ours over the copied ones),
 * annotations}}. */
static json_t *copy_head(const json_t *local, const struct vkr_ctx *ctx, const char *api_version,
                         const char *kind, const char *name)
{
    json_t *o = json_object(), *meta = json_object(), *labels = NULL;
    json_t *lmeta = json_object_get(local, "metadata");

    if (!o || !meta || set_new(o, "apiVersion", json_string(api_version)) < 0 ||
        set_new(o, "kind", json_string(kind)) < 0 || set_copy(o, "metadata", meta) < 0)
        goto fail;
    labels = string_map(json_object_get(lmeta, "labels"), NULL);
    if (!labels || set_new(labels, VK_LABEL_ORIGIN, json_string(ctx->home_id)) < 0 ||
        set_new(labels, VK_LABEL_DESTINATION, json_string(ctx->peer_id)) < 0 ||
        set_new(labels, VK_LABEL_REFLECTED, json_string("true")) < 0)
        goto fail;
    if (set_new(meta, "name", json_string(name)) < 0 ||
        set_new(meta, "namespace", json_string(ctx->remote_ns)) < 0 ||
        set_copy(meta, "labels", labels) < 0 ||
        set_new(meta, "annotations",
                string_map(json_object_get(lmeta, "annotations"), skip_annotations)) < 0)
        goto fail;
    json_decref(labels);
    json_decref(meta);
    return o;
fail:
    json_decref(labels);
    json_decref(meta);
    json_decref(o);
    return NULL;
}

/* ---- Services -------------------------------------------------------------------------------- */

static bool service_type_ok(const char *t)
{
    return strcmp(t, "ClusterIP") == 0 || strcmp(t, "NodePort") == 0 ||
           strcmp(t, "LoadBalancer") == 0 || strcmp(t, "ExternalName") == 0;
}

/* A Service port as reflection owns it (no nodePort). 0, VKR_SKIP_INVALID or -ENOMEM. */
static int service_port(const json_t *p, json_t **ret)
{
    json_t *o, *tp = json_object_get(p, "targetPort");
    const char *name = jsn_str(p, "name"), *proto = jsn_str(p, "protocol"),
               *app = jsn_str(p, "appProtocol");

    if (!json_is_object(p) || !json_is_integer(json_object_get(p, "port")))
        return VKR_SKIP_INVALID;
    o = json_object();
    if (!o || set_copy(o, "port", json_object_get(p, "port")) < 0 ||
        (name && *name && set_new(o, "name", json_string(name)) < 0) ||
        (proto && set_new(o, "protocol", json_string(proto)) < 0) ||
        ((json_is_integer(tp) || json_is_string(tp)) && set_copy(o, "targetPort", tp) < 0) ||
        (app && set_new(o, "appProtocol", json_string(app)) < 0)) {
        json_decref(o);
        return -ENOMEM;
    }
    *ret = o;
    return 0;
}

/* The spec reflection owns. translate: from the home object (type mapping, fields only the type
 * allows); else as read (for comparison). */
static int service_spec(const json_t *spec, bool translate, json_t **ret)
{
    const char *type = jsn_str(spec, "type"), *cip = jsn_str(spec, "clusterIP");
    const char *aff = jsn_str(spec, "sessionAffinity"),
               *etp = jsn_str(spec, "externalTrafficPolicy");
    json_t *out, *ports, *p, *sel = json_object_get(spec, "selector"), *affc;
    size_t i;
    int r = -ENOMEM;

    if (!json_is_object(spec) && translate)
        return VKR_SKIP_INVALID;
    if (!type)
        type = "ClusterIP";
    if (translate && !service_type_ok(type))
        return VKR_SKIP_INVALID;
    /* The provider refuses what would expose its nodes or alias its names (docs/security.md,
     * "Services and EndpointSlices"): a copy is ClusterIP (or headless), never ExternalName. */
    if (translate && strcmp(type, "ExternalName") == 0)
        return VKR_SKIP_EXCLUDED;
    if (translate && (strcmp(type, "LoadBalancer") == 0 || strcmp(type, "NodePort") == 0))
        type = "ClusterIP";
    out = json_object();
    ports = json_array();
    if (!out || !ports || set_new(out, "type", json_string(type)) < 0 ||
        set_copy(out, "ports", ports) < 0)
        goto out;
    if (json_array_size(json_object_get(spec, "ports")) > VKR_MAX_PORTS) {
        r = VKR_SKIP_INVALID;
        goto out;
    }
    json_array_foreach(json_object_get(spec, "ports"), i, p)
    {
        json_t *np = NULL;
        int pr = service_port(p, &np);

        if (pr != 0) {
            r = pr;
            goto out;
        }
        if (json_array_append_new(ports, np) < 0)
            goto out;
    }
    if (json_object_size(sel) > 0 && set_new(out, "selector", string_map(sel, NULL)) < 0)
        goto out;
    if (aff && set_new(out, "sessionAffinity", json_string(aff)) < 0)
        goto out;
    affc =
        json_object_get(json_object_get(json_object_get(spec, "sessionAffinityConfig"), "clientIP"),
                        "timeoutSeconds");
    if (json_is_integer(affc) &&
        set_new(out, "sessionAffinityConfig",
                json_pack("{s:{s:O}}", "clientIP", "timeoutSeconds", affc)) < 0)
        goto out;
    if (is_true(spec, "publishNotReadyAddresses") &&
        set_new(out, "publishNotReadyAddresses", json_true()) < 0)
        goto out;
    if (cip && strcmp(cip, "None") == 0 && strcmp(type, "ExternalName") != 0 &&
        set_new(out, "clusterIP", json_string("None")) < 0)
        goto out;
    if ((!translate || strcmp(type, "ExternalName") == 0) && jsn_str(spec, "externalName") &&
        set_new(out, "externalName", json_string(jsn_str(spec, "externalName"))) < 0)
        goto out;
    if ((!translate || strcmp(type, "NodePort") == 0) && etp &&
        set_new(out, "externalTrafficPolicy", json_string(etp)) < 0)
        goto out;
    *ret = out;
    out = NULL;
    r = 0;
out:
    json_decref(ports);
    json_decref(out);
    return r;
}

/* ---- EndpointSlices -------------------------------------------------------------------------- */

static const char *slice_version_name(enum vkr_slice_version v)
{
    return v == VKR_SLICES_V1 ? "v1" : "v1beta1";
}

int vkr_slice_endpoint(const json_t *ep, enum vkr_slice_version from, enum vkr_slice_version to,
                       json_t **ret, const char **ret_node)
{
    json_t *out = NULL, *addrs, *a, *cond, *c, *rest = NULL, *topo;
    const char *host = NULL, *zone = NULL;
    size_t i;
    int r = -ENOMEM;

    addrs = json_object_get(ep, "addresses");
    if (!json_is_object(ep) || !json_is_array(addrs) || json_array_size(addrs) == 0 ||
        json_array_size(addrs) > VKR_MAX_ADDRESSES)
        return VKR_SKIP_INVALID;
    json_array_foreach(addrs, i, a)
    {
        if (!json_is_string(a))
            return VKR_SKIP_INVALID;
    }
    /* Where it runs, whatever the version said it in. */
    if (from == VKR_SLICES_V1BETA1) {
        topo = json_object_get(ep, "topology");
        host = jsn_str(topo, VKR_TOPOLOGY_HOSTNAME);
        zone = jsn_str(topo, VKR_TOPOLOGY_ZONE);
    } else {
        topo = json_object_get(ep, "deprecatedTopology");
        host = jsn_str(ep, "nodeName") ? jsn_str(ep, "nodeName")
                                       : jsn_str(topo, VKR_TOPOLOGY_HOSTNAME);
        zone = jsn_str(ep, "zone") ? jsn_str(ep, "zone") : jsn_str(topo, VKR_TOPOLOGY_ZONE);
    }
    {
        static const char *const topo_skip[] = {VKR_TOPOLOGY_HOSTNAME, VKR_TOPOLOGY_ZONE, NULL};

        rest = string_map(topo, topo_skip);
    }
    out = json_object();
    cond = json_object();
    if (!rest || !out || !cond || set_copy(out, "addresses", addrs) < 0 ||
        set_copy(out, "conditions", cond) < 0)
        goto out;
    c = json_object_get(ep, "conditions");
    if ((json_is_boolean(json_object_get(c, "ready")) &&
         set_copy(cond, "ready", json_object_get(c, "ready")) < 0) ||
        (json_is_boolean(json_object_get(c, "serving")) &&
         set_copy(cond, "serving", json_object_get(c, "serving")) < 0) ||
        (json_is_boolean(json_object_get(c, "terminating")) &&
         set_copy(cond, "terminating", json_object_get(c, "terminating")) < 0))
        goto out;
    if (jsn_str(ep, "hostname") &&
        set_new(out, "hostname", json_string(jsn_str(ep, "hostname"))) < 0)
        goto out;
    if (to == VKR_SLICES_V1BETA1) {
        if (host && set_new(rest, VKR_TOPOLOGY_HOSTNAME, json_string(host)) < 0)
            goto out;
        if (zone && set_new(rest, VKR_TOPOLOGY_ZONE, json_string(zone)) < 0)
            goto out;
        if (json_object_size(rest) > 0 && set_copy(out, "topology", rest) < 0)
            goto out;
    } else {
        if ((host && set_new(out, "nodeName", json_string(host)) < 0) ||
            (zone && set_new(out, "zone", json_string(zone)) < 0) ||
            (json_object_size(rest) > 0 && set_copy(out, "deprecatedTopology", rest) < 0))
            goto out;
    }
    *ret = out;
    out = NULL;
    if (ret_node)
        *ret_node = host;
    r = 0;
out:
    json_decref(cond);
    json_decref(rest);
    json_decref(out);
    return r;
}

static int slice_port(const json_t *p, json_t **ret)
{
    json_t *o;
    const char *name = jsn_str(p, "name"), *proto = jsn_str(p, "protocol"),
               *app = jsn_str(p, "appProtocol");
    json_t *port = json_object_get(p, "port");

    if (!json_is_object(p))
        return VKR_SKIP_INVALID;
    o = json_object();
    if (!o || (name && *name && set_new(o, "name", json_string(name)) < 0) ||
        (proto && set_new(o, "protocol", json_string(proto)) < 0) ||
        (json_is_integer(port) && set_copy(o, "port", port) < 0) ||
        (app && set_new(o, "appProtocol", json_string(app)) < 0)) {
        json_decref(o);
        return -ENOMEM;
    }
    *ret = o;
    return 0;
}

/* The body of a slice (addressType, ports, endpoints) from version `from` to `to`. With ctx
 * (translation): addresses translated, endpoints on the virtual node dropped. */
static int slice_body(const json_t *s, enum vkr_slice_version from, enum vkr_slice_version to,
                      const struct vkr_ctx *ctx, json_t *out)
{
    const char *at = jsn_str(s, "addressType");
    json_t *ports = json_array(), *eps = json_array(), *p, *ep;
    bool ip = at && (strcmp(at, "IPv4") == 0 || strcmp(at, "IPv6") == 0);
    size_t i;
    int r = -ENOMEM;

    if (!ports || !eps)
        goto out;
    if (ctx && at && strcmp(at, "FQDN") == 0) {
        r = VKR_SKIP_EXCLUDED; /* names resolve anywhere: the provider refuses them */
        goto out;
    }
    if ((ctx && !at) || json_array_size(json_object_get(s, "endpoints")) > VKR_MAX_ENDPOINTS ||
        json_array_size(json_object_get(s, "ports")) > VKR_MAX_PORTS) {
        r = VKR_SKIP_INVALID;
        goto out;
    }
    if ((at && set_new(out, "addressType", json_string(at)) < 0) ||
        set_copy(out, "ports", ports) < 0 || set_copy(out, "endpoints", eps) < 0)
        goto out;
    json_array_foreach(json_object_get(s, "ports"), i, p)
    {
        json_t *np = NULL;
        int pr = slice_port(p, &np);

        if (pr != 0) {
            r = pr;
            goto out;
        }
        if (json_array_append_new(ports, np) < 0)
            goto out;
    }
    json_array_foreach(json_object_get(s, "endpoints"), i, ep)
    {
        json_t *ne = NULL, *addrs, *a;
        const char *node = NULL;
        size_t j;
        int er = vkr_slice_endpoint(ep, from, to, &ne, &node);

        if (er < 0)
            goto out;
        if (er > 0) {
            if (ctx)
                continue; /* a bad endpoint is left out of the copy, not the whole slice */
            r = er;
            goto out;
        }
        if (ctx && ctx->node_name && node && strcmp(node, ctx->node_name) == 0) {
            json_decref(ne);
            continue;
        }
        addrs = json_object_get(ne, "addresses");
        if (ctx && ip && ctx->home_to_remote_ip) {
            json_t *tr = json_array();

            if (!tr || json_object_set_new(ne, "addresses", tr) < 0) {
                json_decref(ne);
                goto out;
            }
            json_array_foreach(addrs, j, a)
            {
                char buf[IP_MAX];
                const char *orig = json_string_value(a);

                buf[0] = '\0';
                /* An address the peering does not translate is not the consumer's pod: the
                 * provider would refuse the slice (admission/objects.h), so it is left out. */
                if (ctx->home_to_remote_ip(ctx->ip_data, orig, buf, sizeof(buf)) < 0 ||
                    !memchr(buf, '\0', sizeof(buf)) || !buf[0])
                    continue;
                if (json_array_append_new(tr, json_string(buf)) < 0) {
                    json_decref(ne);
                    goto out;
                }
            }
            if (json_array_size(tr) == 0) {
                json_decref(ne);
                continue;
            }
        }
        if (json_array_append_new(eps, ne) < 0)
            goto out;
    }
    r = 0;
out:
    json_decref(ports);
    json_decref(eps);
    return r;
}

/* ---- desired copies -------------------------------------------------------------------------- */

static int desired_service(const json_t *local, json_t *o)
{
    json_t *spec = NULL;
    int r = service_spec(json_object_get(local, "spec"), true, &spec);

    if (r != 0)
        return r;
    return set_new(o, "spec", spec);
}

static int desired_slice(const json_t *local, const struct vkr_ctx *ctx, json_t *o)
{
    const char *svc = jsn_label(local, VKR_LABEL_SERVICE_NAME);
    json_t *labels = json_object_get(json_object_get(o, "metadata"), "labels");
    int r;

    if (!svc || !*svc || !ctx->service_uid)
        return VKR_SKIP_NO_SERVICE;
    if (set_new(labels, VKR_LABEL_MANAGED_BY, json_string(VKR_MANAGED_BY)) < 0 ||
        set_new(json_object_get(o, "metadata"), "ownerReferences",
                json_pack("[{s:s,s:s,s:s,s:s}]", "apiVersion", "v1", "kind", "Service", "name", svc,
                          "uid", ctx->service_uid)) < 0)
        return -ENOMEM;
    r = slice_body(local, ctx->local_slices, ctx->remote_slices, ctx, o);
    if (r != 0)
        return r;
    return json_array_size(json_object_get(o, "endpoints")) == 0 ? VKR_SKIP_EMPTY : 0;
}

static int desired_data(enum vk_reflect_kind kind, const json_t *local, json_t *o)
{
    json_t *data = json_object_get(local, "data"), *bin = json_object_get(local, "binaryData");
    const char *k;
    json_t *v;

    if ((data && !json_is_object(data)) || (bin && !json_is_object(bin)))
        return VKR_SKIP_INVALID;
    json_object_foreach(data, k, v)
    {
        if (!json_is_string(v))
            return VKR_SKIP_INVALID;
    }
    json_object_foreach(bin, k, v)
    {
        if (!json_is_string(v))
            return VKR_SKIP_INVALID;
    }
    if (vkr_data_size(kind, local) > VKR_MAX_DATA)
        return VKR_SKIP_TOO_BIG;
    if (kind == VK_REFLECT_SECRETS) {
        const char *type = jsn_str(local, "type");

        if (set_new(o, "type", json_string(type ? type : "Opaque")) < 0)
            return -ENOMEM;
    }
    if ((json_object_size(data) > 0 && set_copy(o, "data", data) < 0) ||
        (kind == VK_REFLECT_CONFIGMAPS && json_object_size(bin) > 0 &&
         set_copy(o, "binaryData", bin) < 0) ||
        (is_true(local, "immutable") && set_new(o, "immutable", json_true()) < 0))
        return -ENOMEM;
    return 0;
}

/* Never reflected, whatever the filters say. */
static bool excluded(enum vk_reflect_kind kind, const json_t *local, const char *name)
{
    const char *type = jsn_str(local, "type");

    switch (kind) {
    case VK_REFLECT_CONFIGMAPS:
        return strcmp(name, VKR_ROOT_CA_CONFIGMAP) == 0;
    case VK_REFLECT_SECRETS:
        return (type && (strcmp(type, "kubernetes.io/service-account-token") == 0 ||
                         strcmp(type, "bootstrap.kubernetes.io/token") == 0)) ||
               jsn_annotation(local, VKR_ANNOT_SA_NAME) != NULL;
    default:
        return false;
    }
}

bool vkr_back_to_origin(const json_t *local, const char *dest_id)
{
    const char *origin = jsn_label(local, VK_LABEL_ORIGIN);

    return origin && dest_id && strcmp(origin, dest_id) == 0;
}

int vkr_desired(enum vk_reflect_kind kind, const json_t *local, const struct vkr_ctx *ctx,
                json_t **ret)
{
    static const char *const kinds[_VK_REFLECT_KINDS] = {"Service", "EndpointSlice", "ConfigMap",
                                                         "Secret"};
    const char *name = jsn_str_at(local, "metadata", "name", NULL);
    char api[64];
    json_t *o;
    int r;

    *ret = NULL;
    if ((int)kind < 0 || kind >= _VK_REFLECT_KINDS || !ctx || !ctx->home_id || !ctx->peer_id ||
        !ctx->remote_ns || !ctx->local_ns || !json_is_object(local) || !name || !*name)
        return VKR_SKIP_INVALID;
    if (vkr_back_to_origin(local, ctx->peer_id))
        return VKR_SKIP_COPY;
    if (excluded(kind, local, name))
        return VKR_SKIP_EXCLUDED;
    if (!vk_reflect_filter_match(ctx->filter, ctx->local_ns, name))
        return VKR_SKIP_FILTERED;
    if (kind == VK_REFLECT_ENDPOINTSLICES)
        snprintf(api, sizeof(api), "discovery.k8s.io/%s", slice_version_name(ctx->remote_slices));
    else
        snprintf(api, sizeof(api), "v1");
    o = copy_head(local, ctx, api, kinds[kind], name);
    if (!o)
        return -ENOMEM;
    switch (kind) {
    case VK_REFLECT_SERVICES:
        r = desired_service(local, o);
        break;
    case VK_REFLECT_ENDPOINTSLICES:
        r = desired_slice(local, ctx, o);
        break;
    default:
        r = desired_data(kind, local, o);
        break;
    }
    if (r != 0) {
        json_decref(o);
        return r;
    }
    *ret = o;
    return 0;
}

/* ---- comparison ------------------------------------------------------------------------------ */

bool vkr_is_ours(enum vk_reflect_kind kind, const json_t *obj, const char *home_id)
{
    const char *origin = jsn_label(obj, VK_LABEL_ORIGIN),
               *mb = jsn_label(obj, VKR_LABEL_MANAGED_BY);

    if (!home_id || !origin || strcmp(origin, home_id) != 0)
        return false;
    return kind != VK_REFLECT_ENDPOINTSLICES || (mb && strcmp(mb, VKR_MANAGED_BY) == 0);
}

static json_t *owner_refs(const json_t *obj)
{
    json_t *out = json_array(), *ref;
    size_t i;

    if (!out)
        return NULL;
    json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "ownerReferences"), i, ref)
    {
        json_t *r = json_object();
        static const char *const keys[] = {"apiVersion", "kind", "name", "uid"};

        if (!r || json_array_append_new(out, r) < 0) {
            json_decref(out);
            return NULL;
        }
        for (size_t k = 0; k < 4; k++) {
            if (jsn_str(ref, keys[k]) &&
                set_new(r, keys[k], json_string(jsn_str(ref, keys[k]))) < 0) {
                json_decref(out);
                return NULL;
            }
        }
    }
    return out;
}

json_t *vkr_extract(enum vk_reflect_kind kind, const json_t *obj, enum vkr_slice_version v)
{
    json_t *meta = json_object_get(obj, "metadata"), *out = json_object(), *body = NULL;
    int r = 0;

    if (!out || set_new(out, "labels", string_map(json_object_get(meta, "labels"), NULL)) < 0 ||
        set_new(out, "annotations", string_map(json_object_get(meta, "annotations"), NULL)) < 0)
        goto fail;
    switch (kind) {
    case VK_REFLECT_SERVICES:
        r = service_spec(json_object_get(obj, "spec"), false, &body);
        if (r > 0) /* unreadable: compare as an empty spec (differs from any desired one) */
            body = json_object();
        if (r < 0 || set_new(out, "spec", body) < 0)
            goto fail;
        break;
    case VK_REFLECT_ENDPOINTSLICES:
        if (set_new(out, "ownerReferences", owner_refs(obj)) < 0)
            goto fail;
        body = json_object();
        if (!body || set_copy(out, "slice", body) < 0)
            goto fail;
        r = slice_body(obj, v, v, NULL, body);
        json_decref(body);
        if (r < 0)
            goto fail;
        if (r > 0 && set_new(out, "slice", json_string("invalid")) < 0)
            goto fail;
        break;
    case VK_REFLECT_CONFIGMAPS:
    case VK_REFLECT_SECRETS:
        if ((kind == VK_REFLECT_SECRETS &&
             set_new(out, "type",
                     json_string(jsn_str(obj, "type") ? jsn_str(obj, "type") : "Opaque")) < 0) ||
            set_new(out, "data", string_map(json_object_get(obj, "data"), NULL)) < 0 ||
            (kind == VK_REFLECT_CONFIGMAPS &&
             set_new(out, "binaryData", string_map(json_object_get(obj, "binaryData"), NULL)) <
                 0) ||
            set_new(out, "immutable", json_boolean(is_true(obj, "immutable"))) < 0)
            goto fail;
        /* A map that is not one of strings differs from any desired copy. */
        if ((map_malformed(json_object_get(obj, "data")) ||
             (kind == VK_REFLECT_CONFIGMAPS &&
              map_malformed(json_object_get(obj, "binaryData")))) &&
            set_new(out, "malformed", json_true()) < 0)
            goto fail;
        break;
    default:
        break;
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}

int vkr_needs_update(enum vk_reflect_kind kind, const json_t *desired, const json_t *remote,
                     enum vkr_slice_version v)
{
    json_t *a = vkr_extract(kind, desired, v), *b = vkr_extract(kind, remote, v);
    int r = -ENOMEM;

    if (a && b)
        r = json_equal(a, b) ? 0 : 1;
    json_decref(a);
    json_decref(b);
    return r;
}

/* ---- updates --------------------------------------------------------------------------------- */

static const json_t *find_port(const json_t *ports, const json_t *p)
{
    const json_t *q;
    const char *proto = jsn_str(p, "protocol") ? jsn_str(p, "protocol") : "TCP";
    size_t i;

    json_array_foreach(ports, i, q)
    {
        const char *qp = jsn_str(q, "protocol") ? jsn_str(q, "protocol") : "TCP";

        if (json_equal(json_object_get(q, "port"), json_object_get(p, "port")) &&
            strcmp(proto, qp) == 0)
            return q;
    }
    return NULL;
}

/* What the provider allocated, when the desired Service keeps it. */
static int carry_allocated(json_t *spec, const json_t *rspec)
{
    static const char *const keep[] = {"clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"};
    const char *dt = jsn_str(spec, "type"), *rt = jsn_str(rspec, "type"),
               *rcip = jsn_str(rspec, "clusterIP");
    json_t *p, *nodeport;
    size_t i;

    if (!dt || !rt || strcmp(dt, "ExternalName") == 0 || strcmp(rt, "ExternalName") == 0)
        return 0;
    if (!jsn_str(spec, "clusterIP") && rcip && *rcip && strcmp(rcip, "None") != 0) {
        for (size_t k = 0; k < 4; k++) {
            json_t *v = json_object_get(rspec, keep[k]);

            if (v && set_copy(spec, keep[k], v) < 0)
                return -ENOMEM;
        }
    }
    if (strcmp(dt, "NodePort") != 0 || strcmp(rt, "ClusterIP") == 0)
        return 0;
    json_array_foreach(json_object_get(spec, "ports"), i, p)
    {
        nodeport = json_object_get(find_port(json_object_get(rspec, "ports"), p), "nodePort");
        if (json_is_integer(nodeport) && set_copy(p, "nodePort", nodeport) < 0)
            return -ENOMEM;
    }
    return 0;
}

json_t *vkr_update_body(enum vk_reflect_kind kind, const json_t *desired, const json_t *remote)
{
    json_t *body = json_deep_copy(desired), *meta;
    const char *rv = jsn_str_at(remote, "metadata", "resourceVersion", NULL);

    if (!body)
        return NULL;
    meta = json_object_get(body, "metadata");
    if (!json_is_object(meta) || (rv && set_new(meta, "resourceVersion", json_string(rv)) < 0))
        goto fail;
    if (kind == VK_REFLECT_SERVICES && json_is_object(json_object_get(body, "spec")) &&
        carry_allocated(json_object_get(body, "spec"), json_object_get(remote, "spec")) < 0)
        goto fail;
    return body;
fail:
    json_decref(body);
    return NULL;
}
