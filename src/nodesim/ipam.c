/* nodesim ipam: one node's pod addresses, a byte per address of its block. */
#include "nodesim/nodesim.h"

#include "common/xalloc.h"

#include <errno.h>
#include <string.h>

#define FIRST_USABLE 2 /* network + 1 is the node's bridge */

int ns_ipam_init(struct ns_ipam *a, uint32_t base, unsigned mask)
{
    uint32_t size;

    if (!a || mask < 16 || mask > 28)
        return -EINVAL;
    size = 1u << (32 - mask);
    if ((base & (size - 1)) != 0)
        return -EINVAL;
    memset(a, 0, sizeof(*a));
    a->used = x_calloc(size, 1);
    if (!a->used)
        return -ENOMEM;
    a->base = base;
    a->mask = mask;
    a->size = size;
    a->next = FIRST_USABLE;
    return 0;
}

void ns_ipam_done(struct ns_ipam *a)
{
    if (!a)
        return;
    x_free(a->used);
    memset(a, 0, sizeof(*a));
}

uint32_t ns_ipam_capacity(const struct ns_ipam *a)
{
    return a->size > FIRST_USABLE + 1 ? a->size - FIRST_USABLE - 1 : 0;
}

bool ns_ipam_usable(const struct ns_ipam *a, uint32_t ip)
{
    uint32_t off = ip - a->base;

    return a->used && ip >= a->base && off >= FIRST_USABLE && off < a->size - 1;
}

int ns_ipam_alloc(struct ns_ipam *a, uint32_t *ret)
{
    uint32_t cap = ns_ipam_capacity(a);

    if (!a->used || a->n_used >= cap)
        return -ENOSPC;
    for (uint32_t i = 0; i < cap; i++) {
        uint32_t off = a->next;
        a->next = off + 1 >= a->size - 1 ? FIRST_USABLE : off + 1;
        if (!a->used[off]) {
            a->used[off] = 1;
            a->n_used++;
            *ret = a->base + off;
            return 0;
        }
    }
    return -ENOSPC;
}

int ns_ipam_reserve(struct ns_ipam *a, uint32_t ip)
{
    if (!ns_ipam_usable(a, ip))
        return -ERANGE;
    if (a->used[ip - a->base])
        return -EEXIST;
    a->used[ip - a->base] = 1;
    a->n_used++;
    return 0;
}

int ns_ipam_release(struct ns_ipam *a, uint32_t ip)
{
    if (!ns_ipam_usable(a, ip) || !a->used[ip - a->base])
        return -ENOENT;
    a->used[ip - a->base] = 0;
    a->n_used--;
    return 0;
}
