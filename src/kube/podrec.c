/* kpod: see podrec.h. The record is built in one walk over the object into scratch arrays (the
 * containers, the quantities, the strings; on the stack, on the heap for a pod larger than they
 * are), then laid out in the caller's buffer: struct kpod, the label values, the containers, the
 * quantities, then the strings, whose offsets are fixed up by where the strings land. (Two walks,
 * one counting and one filling the buffer, made twice the jansson lookups.) */
#include "kube/podrec.h"
#include "common/xalloc.h"

#include <errno.h>
#include <stdalign.h>
#include <stdbool.h>
#include <string.h>

#define STACK_CTRS 16
#define STACK_QTYS 64
#define STACK_STRS 4096
#define SMALL_POD  2048 /* kpod_from_json builds into a stack buffer of this size first */

/* Scratch arrays; the strings' offsets are from the start of strs, plus 1 (0 stays "absent"). */
struct build {
    struct kpod_ctr *ctr;
    struct kpod_qty *qty;
    char *strs;
    size_t nctr, nqty, nstrs;
    size_t cap_ctr, cap_qty, cap_strs;
    bool heap_ctr, heap_qty, heap_strs;
    int err;
    struct kpod head;
    struct kpod_str labels[KPOD_MAX_LABELS];
    struct kpod_ctr ctr0[STACK_CTRS];
    struct kpod_qty qty0[STACK_QTYS];
    char strs0[STACK_STRS];
};

/* Makes room for `more` elements of `size` bytes in *v (n in use, capacity *cap, on the heap when
 * *heap). False (b->err set) when it cannot. */
static bool room(struct build *b, void **v, size_t n, size_t more, size_t size, size_t *cap,
                 bool *heap)
{
    size_t ncap;
    void *nv;

    if (b->err)
        return false;
    if (n + more <= *cap)
        return true;
    if ((n + more) * size > KPOD_MAX_SIZE) {
        b->err = -E2BIG;
        return false;
    }
    ncap = *cap * 2 > n + more ? *cap * 2 : n + more;
    nv = x_reallocarray(*heap ? *v : NULL, ncap, size);
    if (!nv) {
        b->err = -ENOMEM;
        return false;
    }
    if (!*heap)
        memcpy(nv, *v, n * size);
    *v = nv;
    *cap = ncap;
    *heap = true;
    return true;
}

static void str_put(struct build *b, const char *s, size_t len, struct kpod_str *out)
{
    if (!room(b, (void **)&b->strs, b->nstrs, len + 1, 1, &b->cap_strs, &b->heap_strs))
        return;
    memcpy(b->strs + b->nstrs, s, len);
    b->strs[b->nstrs + len] = '\0';
    out->off = (uint32_t)(b->nstrs + 1);
    out->len = (uint32_t)len;
    b->nstrs += len + 1;
}

static void str_val(struct build *b, const json_t *v, struct kpod_str *out)
{
    if (json_is_string(v))
        str_put(b, json_string_value(v), json_string_length(v), out);
}

/* Appends the members of a quantity map; returns how many. */
static uint32_t qty_map(struct build *b, const json_t *map)
{
    json_t *m = (json_t *)map;
    uint32_t n = 0;

    if (!json_is_object(map))
        return 0;
    for (void *it = json_object_iter(m); it; it = json_object_iter_next(m, it)) {
        struct kpod_qty q = {{0, 0}, {0, 0}};

        if (!room(b, (void **)&b->qty, b->nqty, 1, sizeof(q), &b->cap_qty, &b->heap_qty))
            return n;
        str_put(b, json_object_iter_key(it), json_object_iter_key_len(it), &q.name);
        str_val(b, json_object_iter_value(it), &q.value);
        b->qty[b->nqty++] = q;
        n++;
    }
    return n;
}

/* Appends the elements of a container list; returns how many. */
static uint32_t ctr_list(struct build *b, const json_t *list, unsigned parts)
{
    size_t n = json_array_size(list);

    for (size_t i = 0; i < n; i++) {
        const json_t *c = json_array_get(list, i), *res = json_object_get(c, "resources");
        struct kpod_ctr k = {{0, 0}, {0, 0}, 0, 0, 0, 0};
        size_t at = b->nctr;

        if (!room(b, (void **)&b->ctr, b->nctr, 1, sizeof(k), &b->cap_ctr, &b->heap_ctr))
            return (uint32_t)i;
        b->nctr++; /* its place comes before the containers its quantities might add */
        if (parts & KPOD_CTR_NAMES)
            str_val(b, json_object_get(c, "name"), &k.name);
        str_val(b, json_object_get(c, "restartPolicy"), &k.restart_policy);
        k.req = (uint32_t)b->nqty;
        k.nreq = qty_map(b, json_object_get(res, "requests"));
        k.lim = (uint32_t)b->nqty;
        if (parts & KPOD_LIMITS)
            k.nlim = qty_map(b, json_object_get(res, "limits"));
        b->ctr[at] = k;
    }
    return (uint32_t)n;
}

static const json_t *controller_ref(const json_t *meta)
{
    const json_t *refs = json_object_get(meta, "ownerReferences");
    size_t n = json_array_size(refs);

    for (size_t i = 0; i < n; i++) {
        const json_t *ref = json_array_get(refs, i);
        if (json_is_true(json_object_get(ref, "controller")))
            return ref;
    }
    return NULL;
}

/* The walk: the arrays and strings into the scratch, the header and the label values into b. */
static void walk(struct build *b, const json_t *pod, const struct kpod_options *o)
{
    const json_t *meta = json_object_get(pod, "metadata"), *spec = json_object_get(pod, "spec");
    const json_t *lab = json_object_get(meta, "labels");
    const json_t *owner = o->parts & KPOD_OWNER ? controller_ref(meta) : NULL;
    struct kpod *p = &b->head;

    str_val(b, json_object_get(meta, "namespace"), &p->ns);
    str_val(b, json_object_get(meta, "name"), &p->name);
    str_val(b, json_object_get(spec, "nodeName"), &p->node);
    str_val(b, json_object_get(json_object_get(pod, "status"), "phase"), &p->phase);
    str_val(b, json_object_get(owner, "kind"), &p->owner_kind);
    str_val(b, json_object_get(owner, "name"), &p->owner_name);
    for (size_t i = 0; i < o->nlabels; i++)
        str_val(b, json_object_get(lab, o->labels[i]), &b->labels[i]);
    p->ncontainers = ctr_list(b, json_object_get(spec, "containers"), o->parts);
    p->ninit = ctr_list(b, json_object_get(spec, "initContainers"), o->parts);
    p->overhead = (uint32_t)b->nqty;
    p->noverhead = qty_map(b, json_object_get(spec, "overhead"));
    p->nqty = (uint32_t)b->nqty;
}

static void fix(struct kpod_str *s, size_t off_str)
{
    if (s->off)
        s->off = (uint32_t)(s->off - 1 + off_str);
}

_Static_assert(sizeof(struct kpod) % alignof(struct kpod_str) == 0 &&
                   sizeof(struct kpod_str) % alignof(struct kpod_ctr) == 0 &&
                   sizeof(struct kpod_ctr) % alignof(struct kpod_qty) == 0,
               "the record's arrays follow each other aligned");

/* Lays the record out in buf (size bytes, known to fit). */
static void lay_out(const struct build *b, const struct kpod_options *o, void *buf, size_t size)
{
    size_t off_ctr = sizeof(struct kpod) + o->nlabels * sizeof(struct kpod_str);
    size_t off_qty = off_ctr + b->nctr * sizeof(struct kpod_ctr);
    size_t off_str = off_qty + b->nqty * sizeof(struct kpod_qty);
    struct kpod *p = buf;
    struct kpod_str *labels = (struct kpod_str *)((char *)buf + sizeof(struct kpod));
    struct kpod_ctr *ctr = (struct kpod_ctr *)((char *)buf + off_ctr);
    struct kpod_qty *qty = (struct kpod_qty *)((char *)buf + off_qty);

    *p = b->head;
    p->opts = o;
    p->size = (uint32_t)size;
    p->labels_off = (uint32_t)sizeof(struct kpod);
    p->ctr_off = (uint32_t)off_ctr;
    p->qty_off = (uint32_t)off_qty;
    memcpy(labels, b->labels, o->nlabels * sizeof(*labels));
    if (b->nctr)
        memcpy(ctr, b->ctr, b->nctr * sizeof(*ctr));
    if (b->nqty)
        memcpy(qty, b->qty, b->nqty * sizeof(*qty));
    if (b->nstrs)
        memcpy((char *)buf + off_str, b->strs, b->nstrs);
    fix(&p->ns, off_str);
    fix(&p->name, off_str);
    fix(&p->node, off_str);
    fix(&p->phase, off_str);
    fix(&p->owner_kind, off_str);
    fix(&p->owner_name, off_str);
    for (size_t i = 0; i < o->nlabels; i++)
        fix(&labels[i], off_str);
    for (size_t i = 0; i < b->nctr; i++) {
        fix(&ctr[i].name, off_str);
        fix(&ctr[i].restart_policy, off_str);
    }
    for (size_t i = 0; i < b->nqty; i++) {
        fix(&qty[i].name, off_str);
        fix(&qty[i].value, off_str);
    }
}

long kpod_build(const json_t *pod, const struct kpod_options *o, void *buf, size_t cap)
{
    struct build b;
    size_t size;
    long r;

    if (!pod || !o || o->nlabels > KPOD_MAX_LABELS)
        return -EINVAL;
    for (size_t i = 0; i < o->nlabels; i++)
        if (!o->labels[i])
            return -EINVAL;
    memset(&b, 0, offsetof(struct build, ctr0));
    b.ctr = b.ctr0;
    b.qty = b.qty0;
    b.strs = b.strs0;
    b.cap_ctr = STACK_CTRS;
    b.cap_qty = STACK_QTYS;
    b.cap_strs = STACK_STRS;
    walk(&b, pod, o);
    /* Each term is bounded by KPOD_MAX_SIZE (room): no overflow. */
    size = sizeof(struct kpod) + o->nlabels * sizeof(struct kpod_str) +
           b.nctr * sizeof(struct kpod_ctr) + b.nqty * sizeof(struct kpod_qty) + b.nstrs;
    r = b.err ? b.err : (size > KPOD_MAX_SIZE ? -E2BIG : (long)size);
    if (r > 0 && buf && size <= cap)
        lay_out(&b, o, buf, size);
    if (b.heap_ctr)
        x_free(b.ctr);
    if (b.heap_qty)
        x_free(b.qty);
    if (b.heap_strs)
        x_free(b.strs);
    return r;
}

int kpod_from_json(const json_t *pod, const struct kpod_options *o, struct kpod **ret)
{
    _Alignas(struct kpod) char small[SMALL_POD];
    long n;
    void *buf;

    if (!ret)
        return -EINVAL;
    n = kpod_build(pod, o, small, sizeof(small));
    if (n < 0)
        return (int)n;
    buf = x_malloc((size_t)n);
    if (!buf)
        return -ENOMEM;
    if ((size_t)n <= sizeof(small))
        memcpy(buf, small, (size_t)n);
    else
        (void)kpod_build(pod, o, buf, (size_t)n);
    *ret = buf;
    return 0;
}

struct kpod_str kpod_label(const struct kpod *p, const char *key)
{
    const struct kpod_str *values = (const struct kpod_str *)((const char *)p + p->labels_off);
    struct kpod_str none = {0, 0};

    if (!key)
        return none;
    for (size_t i = 0; i < p->opts->nlabels; i++)
        if (strcmp(p->opts->labels[i], key) == 0)
            return values[i];
    return none;
}

long kpod_extract(const json_t *obj, const void *data, void *buf, size_t cap)
{
    return kpod_build(obj, data, buf, cap);
}
