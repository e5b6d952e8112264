/* libFuzzer harness for the object reflectors' pure part: src/virtualkubelet/reflect_filter.c
 * (allow and deny lists from a ClusterConfig) and src/virtualkubelet/reflect_translate.c (home
 * objects to desired copies, the provider's objects through the comparison and update bodies).
 *
 * Input: one selector byte (kind, EndpointSlice versions on each side, whether the copy of the
 * slice's Service exists), then up to three JSON documents separated by lines "--": a
 * ClusterConfig, a home object, a provider object (a missing or unparsable one is JSON null).
 * Invariants:
 *   - filters parse or are refused with a one-line reason; every home name is matched without
 *     harm, and with no pattern everything is reflected;
 *   - a desired copy is labelled as ours, in the remote namespace, compares equal to itself, and
 *     to the update body built from it against any provider object; a slice keeps no endpoint on
 *     the virtual node; a ConfigMap or Secret holds at most the API's 1 MiB of data; no
 *     service-account token and no kube-root-ca.crt is ever a copy, nor an object whose origin
 *     label names the provider (it would go back where it came from);
 *   - the provider's object, whatever it is, goes through vkr_extract, vkr_needs_update,
 *     vkr_is_ours and vkr_update_body (the body never takes more than its resourceVersion string
 *     from a hostile object's metadata).
 * A violated invariant aborts, which libFuzzer reports as a crash. */
#include "../src/virtualkubelet/reflect_filter.c"
#include "../src/virtualkubelet/reflect_translate.c"

#include "common/json.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok)
        abort();
}

/* The peering's remapping in the harness: 10.x.y.z -> 10.99.y.z, others untranslatable. */
static int remap(void *d, const char *ip, char *out, size_t size)
{
    (void)d;
    if (strncmp(ip, "10.", 3) != 0 || !strchr(ip + 3, '.'))
        return -EINVAL;
    snprintf(out, size, "10.99%s", strchr(ip + 3, '.'));
    return 0;
}

static json_t *doc(const char *p, size_t n)
{
    json_t *j = json_loadb(p, n, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);

    return j ? j : json_null();
}

static void check_desired(enum vk_reflect_kind kind, const json_t *d, const json_t *remote,
                          const struct vkr_ctx *ctx)
{
    const json_t *meta = json_object_get(d, "metadata"), *ep;
    json_t *body;
    size_t i;

    check(vkr_is_ours(kind, d, ctx->home_id));
    check(strcmp(jsn_str(meta, "namespace"), ctx->remote_ns) == 0);
    check(strcmp(jsn_label(d, VK_LABEL_REFLECTED), "true") == 0);
    check(strcmp(jsn_label(d, VK_LABEL_DESTINATION), ctx->peer_id) == 0);
    check(vkr_needs_update(kind, d, d, ctx->remote_slices) == 0);
    body = vkr_update_body(kind, d, remote);
    if (body) {
        check(vkr_needs_update(kind, d, body, ctx->remote_slices) == 0);
        check(!json_object_get(json_object_get(body, "metadata"), "uid"));
        json_decref(body);
    }
    switch (kind) {
    case VK_REFLECT_ENDPOINTSLICES:
        json_array_foreach(json_object_get(d, "endpoints"), i, ep)
        {
            const char *node = NULL;
            json_t *ne = NULL;

            check(vkr_slice_endpoint(ep, ctx->remote_slices, ctx->remote_slices, &ne, &node) == 0);
            check(!node || strcmp(node, ctx->node_name) != 0);
            json_decref(ne);
        }
        check(json_array_size(json_object_get(d, "endpoints")) > 0);
        break;
    case VK_REFLECT_CONFIGMAPS:
        check(vkr_data_size(kind, d) <= VKR_MAX_DATA);
        check(strcmp(jsn_str(meta, "name"), VKR_ROOT_CA_CONFIGMAP) != 0);
        break;
    case VK_REFLECT_SECRETS:
        check(vkr_data_size(kind, d) <= VKR_MAX_DATA);
        check(strcmp(jsn_str(d, "type"), "kubernetes.io/service-account-token") != 0);
        check(!jsn_annotation(d, VKR_ANNOT_SA_NAME));
        break;
    default:
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vk_reflect_filter filters[_VK_REFLECT_KINDS];
    json_t *docs[3], *desired = NULL;
    const char *p, *end, *sep, *name;
    struct vkr_ctx ctx;
    enum vk_reflect_kind kind;
    char err[256];
    int n = 0, r;
    uint8_t sel;

    if (size < 1)
        return 0;
    sel = data[0];
    kind = (enum vk_reflect_kind)(sel % _VK_REFLECT_KINDS);
    p = (const char *)data + 1;
    end = (const char *)data + size;
    while (n < 3) {
        sep = memmem(p, (size_t)(end - p), "\n--\n", 4);
        docs[n++] = doc(p, sep ? (size_t)(sep - p) : (size_t)(end - p));
        if (!sep)
            break;
        p = sep + 4;
    }
    while (n < 3)
        docs[n++] = json_null();

    /* Filters. */
    memset(filters, 0, sizeof(filters));
    err[0] = '\0';
    r = vk_reflect_filters_from_config(docs[0], filters, err, sizeof(err));
    check(r == 0 || (r == -EINVAL && err[0] && !strchr(err, '\n')));
    if (r == 0 && filters[kind].n_allow == 0 && filters[kind].n_deny == 0)
        check(vk_reflect_filter_match(&filters[kind], "web", "x"));
    name = json_string_value(json_object_get(json_object_get(docs[1], "metadata"), "name"));
    if (name)
        (void)vk_reflect_filter_match(&filters[kind], "web", name);
    {
        struct vk_reflect_filter f = {0};

        if (vk_reflect_filter_parse(docs[0], kind, &f, err, sizeof(err)) == 0 && name)
            (void)vk_reflect_filter_match(&f, name, name);
        vk_reflect_filter_clear(&f);
    }

    /* The home object. */
    ctx = (struct vkr_ctx){.home_id = "home",
                           .peer_id = "peer",
                           .node_name = "liqo-peer",
                           .local_ns = "web",
                           .remote_ns = "web-remote",
                           .filter = &filters[kind],
                           .local_slices = (sel & 0x10) ? VKR_SLICES_V1 : VKR_SLICES_V1BETA1,
                           .remote_slices = (sel & 0x20) ? VKR_SLICES_V1 : VKR_SLICES_V1BETA1,
                           .service_uid = (sel & 0x40) ? NULL : "uid-on-b",
                           .home_to_remote_ip = (sel & 0x80) ? NULL : remap};
    r = vkr_desired(kind, docs[1], &ctx, &desired);
    check(r >= 0 ? (r == 0) == (desired != NULL) : r == -ENOMEM);
    check(r < _VKR_VERDICTS);
    if (desired)
        check_desired(kind, desired, docs[2], &ctx);
    /* Nothing goes back to the cluster it came from. */
    check(!desired || !vkr_back_to_origin(docs[1], ctx.peer_id));

    /* The provider's object. */
    {
        json_t *x = vkr_extract(kind, docs[2], ctx.remote_slices), *b;

        check(x != NULL);
        json_decref(x);
        (void)vkr_is_ours(kind, docs[2], ctx.home_id);
        r = vkr_needs_update(kind, desired ? desired : docs[1], docs[2], ctx.remote_slices);
        check(r == 0 || r == 1);
        b = vkr_update_body(kind, desired ? desired : docs[1], docs[2]);
        if (b && desired) {
            const json_t *rv = json_object_get(json_object_get(b, "metadata"), "resourceVersion");

            check(!rv || json_is_string(rv));
        }
        json_decref(b);
    }

    json_decref(desired);
    for (int k = 0; k < _VK_REFLECT_KINDS; k++)
        vk_reflect_filter_clear(&filters[k]);
    for (int i = 0; i < 3; i++)
        json_decref(docs[i]);
    return 0;
}
