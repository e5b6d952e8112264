/* admission/ledger: see ledger.h. A singly linked list, newest first: a check walks it once (at
 * most ADM_LEDGER_MAX entries, and in practice the few pods in flight). Each entry keeps only the
 * amounts its pod requests (a few names), not a whole struct shr_list. */
#include "admission/ledger.h"
#include "common/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

struct entry {
    struct entry *next;
    char origin[ADM_LEDGER_ORIGIN_MAX + 1];
    char ns[ADM_LEDGER_NS_MAX + 1];
    char name[ADM_LEDGER_NAME_MAX + 1];
    char uid[ADM_LEDGER_UID_MAX + 1];
    uint64_t expires_ms;
    size_t n;
    struct shr_amount items[]; /* n */
};

struct adm_ledger {
    struct entry *head;
    size_t count;
    size_t per_consumer, max;
};

int adm_ledger_new(size_t per_consumer, size_t max, struct adm_ledger **ret)
{
    struct adm_ledger *l = x_calloc(1, sizeof(*l));

    if (!l)
        return -ENOMEM;
    l->per_consumer = per_consumer ? per_consumer : ADM_LEDGER_PER_CONSUMER;
    l->max = max ? max : ADM_LEDGER_MAX;
    *ret = l;
    return 0;
}

static void unlink_free(struct adm_ledger *l, struct entry **p)
{
    struct entry *e = *p;

    *p = e->next;
    x_free(e);
    l->count--;
}

struct adm_ledger *adm_ledger_free(struct adm_ledger *l)
{
    if (!l)
        return NULL;
    while (l->head)
        unlink_free(l, &l->head);
    x_free(l);
    return NULL;
}

size_t adm_ledger_purge(struct adm_ledger *l, uint64_t now_ms)
{
    size_t n = 0;

    for (struct entry **p = l ? &l->head : NULL; p && *p;) {
        if ((*p)->expires_ms > now_ms) {
            p = &(*p)->next;
            continue;
        }
        unlink_free(l, p);
        n++;
    }
    return n;
}

size_t adm_ledger_seen(struct adm_ledger *l, const char *ns, const char *name)
{
    size_t n = 0;

    if (!l || !ns || !name)
        return 0;
    for (struct entry **p = &l->head; *p;) {
        if (strcmp((*p)->ns, ns) != 0 || strcmp((*p)->name, name) != 0) {
            p = &(*p)->next;
            continue;
        }
        unlink_free(l, p);
        n++;
    }
    return n;
}

static bool fits(const char *s, size_t max)
{
    size_t n = s ? strlen(s) : 0;

    return n > 0 && n <= max;
}

int adm_ledger_reserve(struct adm_ledger *l, const char *origin, const char *ns, const char *name,
                       const char *uid, const struct shr_list *amounts, bool trusted,
                       uint64_t now_ms, uint64_t expires_ms)
{
    struct entry *e;
    size_t held = 0;

    if (!l || !amounts || amounts->n > SHR_MAX_RESOURCES || !fits(origin, ADM_LEDGER_ORIGIN_MAX) ||
        !fits(ns, ADM_LEDGER_NS_MAX) || !fits(name, ADM_LEDGER_NAME_MAX) ||
        !fits(uid, ADM_LEDGER_UID_MAX))
        return -EINVAL;
    adm_ledger_purge(l, now_ms);
    /* The same pod reviewed again (or, trusted, the same name): its reservation is replaced (and
     * not counted against the bound). */
    for (struct entry **p = &l->head; *p;) {
        struct entry *x = *p;

        if (strcmp(x->ns, ns) == 0 && strcmp(x->name, name) == 0 &&
            (trusted || strcmp(x->uid, uid) == 0)) {
            unlink_free(l, p);
            continue;
        }
        held += strcmp(x->origin, origin) == 0;
        p = &x->next;
    }
    if (held >= l->per_consumer)
        return -EDQUOT;
    if (l->count >= l->max)
        return -ENOSPC;
    e = x_calloc(1, sizeof(*e) + amounts->n * sizeof(e->items[0]));
    if (!e)
        return -ENOMEM;
    snprintf(e->origin, sizeof(e->origin), "%s", origin);
    snprintf(e->ns, sizeof(e->ns), "%s", ns);
    snprintf(e->name, sizeof(e->name), "%s", name);
    snprintf(e->uid, sizeof(e->uid), "%s", uid);
    e->expires_ms = expires_ms;
    e->n = amounts->n;
    memcpy(e->items, amounts->items, amounts->n * sizeof(e->items[0]));
    e->next = l->head;
    l->head = e;
    l->count++;
    return 0;
}

/* used[name] += value, saturating; a new name is appended. */
static int add_amount(struct shr_list *used, const struct shr_amount *a)
{
    for (size_t i = 0; i < used->n; i++) {
        if (strcmp(used->items[i].name, a->name) != 0)
            continue;
        used->items[i].value = used->items[i].value > INT64_MAX - a->value
                                   ? INT64_MAX
                                   : used->items[i].value + a->value;
        return 0;
    }
    if (used->n >= SHR_MAX_RESOURCES)
        return -ENOSPC;
    used->items[used->n++] = *a;
    return 0;
}

int adm_ledger_sum(const struct adm_ledger *l, const char *origin, const char *skip_ns,
                   const char *skip_name, uint64_t now_ms, adm_ledger_known_fn known, void *data,
                   struct shr_list *used)
{
    for (const struct entry *e = l ? l->head : NULL; e; e = e->next) {
        if (e->expires_ms <= now_ms || strcmp(e->origin, origin) != 0)
            continue;
        if (skip_ns && skip_name && strcmp(e->ns, skip_ns) == 0 && strcmp(e->name, skip_name) == 0)
            continue;
        if (known && known(e->ns, e->name, data))
            continue;
        for (size_t i = 0; i < e->n; i++)
            if (e->items[i].value > 0 && add_amount(used, &e->items[i]) < 0)
                return -ENOSPC;
    }
    return 0;
}

size_t adm_ledger_count(const struct adm_ledger *l, const char *origin)
{
    size_t n = 0;

    if (!origin)
        return l ? l->count : 0;
    for (const struct entry *e = l ? l->head : NULL; e; e = e->next)
        n += strcmp(e->origin, origin) == 0;
    return n;
}
