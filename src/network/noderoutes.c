/* noderoutes: the node mode's pure decisions; see noderoutes.h. */
#include "network/noderoutes.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

static bool usable(int family, const uint8_t *a)
{
    static const uint8_t zero[16];

    if (family == 4)
        return memcmp(a, zero, 4) != 0 && a[0] != 127 && a[0] < 224;
    return memcmp(a, zero, 16) != 0 && a[0] != 0xff && !(memcmp(a, zero, 15) == 0 && a[15] == 1);
}

int nrt_gateway_node(const json_t *node, struct nrt_gateway *ret)
{
    const json_t *meta = json_object_get(node, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *label =
        json_string_value(json_object_get(json_object_get(meta, "labels"), NRT_GATEWAY_LABEL));
    const json_t *a;
    size_t i;

    if (!label || strcmp(label, "true") != 0)
        return 0;
    if (!name || strlen(name) >= sizeof(ret->name))
        return -EINVAL;
    json_array_foreach(json_object_get(json_object_get(node, "status"), "addresses"), i, a)
    {
        const char *type = json_string_value(json_object_get(a, "type"));
        const char *addr = json_string_value(json_object_get(a, "address"));
        struct nrt_gateway g;

        if (!type || !addr || strcmp(type, "InternalIP") != 0)
            continue;
        memset(&g, 0, sizeof(g));
        if (inet_pton(AF_INET, addr, g.ip) == 1)
            g.family = 4;
        else if (inet_pton(AF_INET6, addr, g.ip) == 1)
            g.family = 6;
        if (!g.family || !usable(g.family, g.ip))
            return -EINVAL; /* the first InternalIP is the node's: not another one instead */
        snprintf(g.name, sizeof(g.name), "%s", name);
        *ret = g;
        return 1;
    }
    return -EINVAL;
}

int nrt_want(const char *self, const struct nrt_gateway *gw, const struct cidr *blocks, size_t n,
             struct rt_route *out, size_t max)
{
    size_t k = 0;

    if (!gw || (self && strcmp(self, gw->name) == 0))
        return 0;
    for (size_t i = 0; i < n; i++) {
        bool seen = false;

        if (blocks[i].family != gw->family)
            continue;
        for (size_t j = 0; j < k && !seen; j++)
            seen = cidr_equal(&out[j].dst, &blocks[i]);
        if (seen)
            continue;
        if (k >= max)
            return -E2BIG;
        memset(&out[k], 0, sizeof(out[k]));
        out[k].dst = blocks[i];
        out[k].has_via = true;
        memcpy(out[k].via, gw->ip, gw->family == 4 ? 4 : 16);
        k++;
    }
    return (int)k;
}

size_t nrt_owned(struct rt_route *routes, size_t n)
{
    size_t k = 0;

    for (size_t i = 0; i < n; i++)
        if (routes[i].has_via)
            routes[k++] = routes[i];
    return k;
}
