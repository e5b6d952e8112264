#include "network/nodecidrs.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "common/strutil.h"
#include "common/xalloc.h"

struct slot {
    char *name; /* NULL: free */
    uint64_t hash;
    struct cidr c;
};

struct ncidr {
    struct slot *slots;
    size_t cap; /* a power of two, or 0 */
    size_t n;
};

int ncidr_new(struct ncidr **ret)
{
    struct ncidr *t = x_calloc(1, sizeof(*t));

    if (!t)
        return -ENOMEM;
    *ret = t;
    return 0;
}

void ncidr_free(struct ncidr *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->cap; i++)
        x_free(t->slots[i].name);
    x_free(t->slots);
    x_free(t);
}

size_t ncidr_count(const struct ncidr *t)
{
    return t ? t->n : 0;
}

/* The slot holding name, or the free slot where it would go. */
static size_t find(const struct ncidr *t, const char *name, uint64_t h)
{
    size_t i = (size_t)h & (t->cap - 1);

    while (t->slots[i].name && (t->slots[i].hash != h || strcmp(t->slots[i].name, name) != 0))
        i = (i + 1) & (t->cap - 1);
    return i;
}

static int grow(struct ncidr *t)
{
    size_t cap = t->cap ? t->cap * 2 : 64;
    struct slot *old = t->slots, *s = x_calloc(cap, sizeof(*s));
    size_t old_cap = t->cap;

    if (!s)
        return -ENOMEM;
    t->slots = s;
    t->cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].name)
            t->slots[find(t, old[i].name, old[i].hash)] = old[i];
    x_free(old);
    return 0;
}

/* Frees slot i and moves the entries after it that probing would no longer reach. */
static void remove_at(struct ncidr *t, size_t i)
{
    size_t j = i;

    x_free(t->slots[i].name);
    t->slots[i].name = NULL;
    t->n--;
    for (;;) {
        size_t home;

        j = (j + 1) & (t->cap - 1);
        if (!t->slots[j].name)
            return;
        home = (size_t)t->slots[j].hash & (t->cap - 1);
        /* The entry at j stays if its home lies cyclically in (i, j]. */
        if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
            continue;
        t->slots[i] = t->slots[j];
        t->slots[j].name = NULL;
        i = j;
    }
}

int ncidr_set(struct ncidr *t, const char *name, const struct cidr *c)
{
    size_t len, i;
    uint64_t h;
    char *copy;

    if (!t || !name || !*name || (len = strnlen(name, NCIDR_NAME_MAX + 1)) > NCIDR_NAME_MAX)
        return -EINVAL;
    h = str_fnv1a64(name); /* our own API server's names: a collision costs a probe */
    if (t->cap) {
        i = find(t, name, h);
        if (t->slots[i].name) {
            if (!c) {
                remove_at(t, i);
                return 1;
            }
            if (cidr_equal(&t->slots[i].c, c))
                return 0;
            t->slots[i].c = *c;
            return 1;
        }
    }
    if (!c)
        return 0;
    if ((t->n + 1) * 4 > t->cap * 3) { /* at most 3/4 full */
        int r = grow(t);
        if (r < 0)
            return r;
    }
    copy = x_strdup(name);
    if (!copy)
        return -ENOMEM;
    i = find(t, name, h);
    t->slots[i] = (struct slot){.name = copy, .hash = h, .c = *c};
    t->n++;
    return 1;
}

int ncidr_covering(const struct ncidr *t, unsigned family, struct cidr *ret)
{
    struct cidr pair[2];
    bool any = false;

    if (!t || !ret)
        return -EINVAL;
    for (size_t i = 0; i < t->cap; i++) {
        const struct slot *s = &t->slots[i];

        if (!s->name || s->c.family != family)
            continue;
        if (!any) {
            pair[0] = s->c;
            any = true;
            continue;
        }
        pair[1] = s->c;
        if (cidr_covering(pair, 2, &pair[0]) < 0)
            return -EINVAL;
    }
    if (!any)
        return -ENOENT;
    *ret = pair[0];
    return 0;
}
