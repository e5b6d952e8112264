/* kla_sar: the SubjectAccessReview authoriser (kubeletapi.h).
 *
 * The cache is a list kept in least-recently-used order (lookups move an entry to the front; past
 * max_entries the last one goes): a few hundred callers at most ask a kubelet API, so a linear
 * search is cheaper than a hash table's bookkeeping and bounded all the same. Questions asked
 * while the same review is in flight wait for it (one review, many callbacks). Errors of the
 * review itself are not cached. */
#include "kubeletapi/kubeletapi.h"

#include "common/strutil.h"
#include "common/xalloc.h"
#include "kube/api.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#define KEY_MAX (KLA_MAX_USER + 1 + KLA_MAX_GROUPS * (KLA_MAX_USER + 1) + 16 + KLA_MAX_NODE + 8)

struct entry {
    struct entry *prev, *next;
    char *key;
    bool allowed;
    char reason[160];
    uint64_t expires;
};

struct waiter {
    struct waiter *next;
    struct pending *p;
    kla_authz_cb cb;
    void *data;
};

struct pending {
    struct pending *prev, *next;
    struct kla_sar *s;
    char *key;
    struct waiter *waiters;
    struct kapi_call *call;
};

struct kla_sar {
    struct kapi_client *c;
    struct kla_sar_options o;
    struct entry *head, *tail;
    size_t nentries;
    struct pending *pending;
    size_t npending;
    uint64_t reviews, hits;
};

int kla_sar_key(const struct kla_authz_attrs *a, char *buf, size_t size)
{
    struct sbuf b;
    int r;

    /* Fields are separated by '\n', which no certificate name may hold unescaped here: the user
     * and groups are escaped ("\\" and "\n" -> "\\\\" and "\\n"). */
    sbuf_init(&b, size);
    r = 0;
    for (int f = 0; f < 2 + (int)a->user->ngroups && r == 0; f++) {
        const char *v = f == 0 ? a->user->name : f == 1 ? a->verb : a->user->groups[f - 2];

        for (const char *p = v; *p && r == 0; p++) {
            if (*p == '\\')
                r = sbuf_add(&b, "\\\\", 2);
            else if (*p == '\n')
                r = sbuf_add(&b, "\\n", 2);
            else
                r = sbuf_add(&b, p, 1);
        }
        if (r == 0)
            r = sbuf_add(&b, "\n", 1);
    }
    if (r == 0)
        r = sbuf_printf(&b, "%s\n%s", a->subresource ? a->subresource : "",
                        a->node ? a->node : "*");
    if (r < 0 || sbuf_len(&b) >= size) {
        sbuf_done(&b);
        return -ENAMETOOLONG;
    }
    memcpy(buf, sbuf_str(&b), sbuf_len(&b) + 1);
    r = (int)sbuf_len(&b);
    sbuf_done(&b);
    return r;
}

int kla_sar_new(struct kapi_client *c, const struct kla_sar_options *o, struct kla_sar **ret)
{
    struct kla_sar *s;

    if (!c || !ret)
        return -EINVAL;
    s = x_calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->c = c;
    s->o = o ? *o : (struct kla_sar_options){0};
    if (!s->o.allow_ttl_ms)
        s->o.allow_ttl_ms = 5 * 60 * 1000;
    if (!s->o.deny_ttl_ms)
        s->o.deny_ttl_ms = 30 * 1000;
    if (!s->o.max_entries)
        s->o.max_entries = 1024;
    if (!s->o.max_pending)
        s->o.max_pending = 64;
    *ret = s;
    return 0;
}

static void unlink_entry(struct kla_sar *s, struct entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        s->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        s->tail = e->prev;
    e->prev = e->next = NULL;
}

static void push_front(struct kla_sar *s, struct entry *e)
{
    e->next = s->head;
    if (s->head)
        s->head->prev = e;
    s->head = e;
    if (!s->tail)
        s->tail = e;
}

static void drop_entry(struct kla_sar *s, struct entry *e)
{
    unlink_entry(s, e);
    s->nentries--;
    x_free(e->key);
    x_free(e);
}

static void free_pending(struct kla_sar *s, struct pending *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else
        s->pending = p->next;
    if (p->next)
        p->next->prev = p->prev;
    s->npending--;
    for (struct waiter *w = p->waiters, *n; w; w = n) {
        n = w->next;
        x_free(w);
    }
    x_free(p->key);
    x_free(p);
}

void kla_sar_free(struct kla_sar *s)
{
    if (!s)
        return;
    while (s->pending) {
        struct pending *p = s->pending;

        kapi_call_cancel(p->call);
        free_pending(s, p);
    }
    while (s->head)
        drop_entry(s, s->head);
    x_free(s);
}

static void remember(struct kla_sar *s, const char *key, bool allowed, const char *reason)
{
    uint64_t now = uv_now(kapi_client_loop(s->c));
    struct entry *e = NULL;

    for (struct entry *i = s->head; i; i = i->next)
        if (strcmp(i->key, key) == 0) {
            e = i;
            unlink_entry(s, e);
            break;
        }
    if (!e) {
        e = x_calloc(1, sizeof(*e));
        if (!e)
            return;
        e->key = x_strdup(key);
        if (!e->key) {
            x_free(e);
            return;
        }
        s->nentries++;
    }
    e->allowed = allowed;
    snprintf(e->reason, sizeof(e->reason), "%s", reason ? reason : "");
    e->expires = now + (allowed ? s->o.allow_ttl_ms : s->o.deny_ttl_ms);
    push_front(s, e);
    while (s->nentries > s->o.max_entries)
        drop_entry(s, s->tail);
}

static void on_review(struct kapi_client *c, const struct kapi_result *res, void *data)
{
    struct pending *p = data;
    struct kla_sar *s = p->s;
    json_t *st = json_object_get(res->body, "status");
    const char *reason = json_string_value(json_object_get(st, "reason"));
    const char *everr = json_string_value(json_object_get(st, "evaluationError"));
    char why[256];
    int decision;

    (void)c;
    p->call = NULL;
    if (res->err < 0) {
        decision = res->err == -ECANCELED ? -ECANCELED : -EIO;
        snprintf(why, sizeof(why), "SubjectAccessReview failed: %s", res->status.message);
    } else if (json_is_true(json_object_get(st, "allowed"))) {
        decision = 0;
        snprintf(why, sizeof(why), "%s", reason ? reason : "");
        remember(s, p->key, true, why);
    } else {
        decision = -EPERM;
        snprintf(why, sizeof(why), "%s%s%s", reason ? reason : "", reason && everr ? "; " : "",
                 everr ? everr : "");
        remember(s, p->key, false, why);
    }
    /* Take the waiters first: a callback may ask again (and so find the cache). */
    {
        struct waiter *w = p->waiters;

        p->waiters = NULL;
        free_pending(s, p);
        while (w) {
            struct waiter *n = w->next;
            kla_authz_cb cb = w->cb;
            void *d = w->data;

            x_free(w);
            cb(decision, why, d);
            w = n;
        }
    }
}

static int send_review(struct kla_sar *s, const struct kla_authz_attrs *a, struct pending *p)
{
    json_t *groups = json_array(), *ra, *obj;
    char *body;
    struct kapi_request req = {0};
    int r;

    if (!groups)
        return -ENOMEM;
    for (size_t i = 0; i < a->user->ngroups; i++)
        json_array_append_new(groups, json_string(a->user->groups[i]));
    ra = json_pack("{s:s,s:s,s:s,s:s}", "group", "", "verb", a->verb, "resource", "nodes",
                   "subresource", a->subresource ? a->subresource : "proxy");
    if (ra && a->node)
        json_object_set_new(ra, "name", json_string(a->node));
    obj = json_pack("{s:s,s:s,s:{s:s,s:o,s:o}}", "apiVersion", "authorization.k8s.io/v1", "kind",
                    "SubjectAccessReview", "spec", "user", a->user->name, "groups", groups,
                    "resourceAttributes", ra);
    if (!obj)
        return -ENOMEM;
    body = json_dumps(obj, JSON_COMPACT);
    json_decref(obj);
    if (!body)
        return -ENOMEM;
    req.method = "POST";
    req.path = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    req.body = body;
    req.body_len = strlen(body);
    r = kapi_send(s->c, &req, on_review, p, &p->call);
    free(body);
    if (r == 0)
        s->reviews++;
    return r;
}

static int sar_check(void *impl, const struct kla_authz_attrs *a, kla_authz_cb cb, void *cb_data,
                     void **ret_handle)
{
    struct kla_sar *s = impl;
    char key[KEY_MAX];
    uint64_t now = uv_now(kapi_client_loop(s->c));
    struct pending *p;
    struct waiter *w;
    int r;

    if (kla_sar_key(a, key, sizeof(key)) < 0)
        return -ENAMETOOLONG;
    for (struct entry *e = s->head, *n; e; e = n) {
        n = e->next;
        if (strcmp(e->key, key) != 0)
            continue;
        if (now >= e->expires) {
            drop_entry(s, e);
            break;
        }
        unlink_entry(s, e);
        push_front(s, e);
        s->hits++;
        *ret_handle = NULL;
        cb(e->allowed ? 0 : -EPERM, e->reason, cb_data);
        return 0;
    }
    for (p = s->pending; p; p = p->next)
        if (strcmp(p->key, key) == 0)
            break;
    w = x_calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->cb = cb;
    w->data = cb_data;
    if (!p) {
        if (s->npending >= s->o.max_pending) {
            x_free(w);
            return -EBUSY;
        }
        p = x_calloc(1, sizeof(*p));
        if (!p || !(p->key = x_strdup(key))) {
            x_free(p);
            x_free(w);
            return -ENOMEM;
        }
        p->s = s;
        p->next = s->pending;
        if (s->pending)
            s->pending->prev = p;
        s->pending = p;
        s->npending++;
        r = send_review(s, a, p);
        if (r < 0) {
            free_pending(s, p);
            x_free(w);
            return r;
        }
    }
    w->p = p;
    w->next = p->waiters;
    p->waiters = w;
    *ret_handle = w;
    return 0;
}

static void sar_cancel(void *impl, void *handle)
{
    struct kla_sar *s = impl;
    struct waiter *w = handle;

    (void)s;
    if (!w)
        return;
    for (struct waiter **pp = &w->p->waiters; *pp; pp = &(*pp)->next) {
        if (*pp == w) {
            *pp = w->next;
            x_free(w);
            return;
        }
    }
}

struct kla_authorizer kla_sar_authorizer(struct kla_sar *s)
{
    return (struct kla_authorizer){.check = sar_check, .cancel = sar_cancel, .impl = s};
}

void kla_sar_stats(const struct kla_sar *s, uint64_t *ret_reviews, uint64_t *ret_hits,
                   size_t *ret_entries)
{
    if (ret_reviews)
        *ret_reviews = s->reviews;
    if (ret_hits)
        *ret_hits = s->hits;
    if (ret_entries)
        *ret_entries = s->nentries;
}
