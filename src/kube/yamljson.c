/* yj: YAML manifests to JSON; see yamljson.h. Built from libyaml's event stream (no node tree),
 * so depth and size are checked as the input is read. */
#include "kube/yamljson.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "common/xalloc.h"

#define TAG_PREFIX "tag:yaml.org,2002:"

struct frame {
    json_t *value;   /* array or object being filled */
    char *key;       /* object: the key waiting for its value, or NULL */
    size_t key_line; /* where that key was, for duplicate-key errors */
    char *anchor;    /* anchor of this collection, registered when it ends */
    size_t nodes_at; /* node count when the collection started (its size, for aliases) */
};

struct anchor {
    char *name;
    json_t *value;
    size_t nodes; /* values inside, charged again at each alias */
};

struct yj {
    const char *origin;
    char *err;
    size_t errlen;
    struct frame stack[YJ_MAX_DEPTH];
    int depth;
    json_t *root;
    bool have_root;
    struct anchor *anchors;
    size_t nanchors, cap_anchors;
    size_t nodes;
};

__attribute__((format(printf, 4, 5))) static int fail(struct yj *y, int r, const yaml_mark_t *m,
                                                      const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (y->err && y->errlen) {
        if (m)
            snprintf(y->err, y->errlen, "%s: line %zu, column %zu: %s", y->origin, m->line + 1,
                     m->column + 1, msg);
        else
            snprintf(y->err, y->errlen, "%s: %s", y->origin, msg);
    }
    return r;
}

static int charge(struct yj *y, size_t n, const yaml_mark_t *m)
{
    if (n > YJ_MAX_NODES - y->nodes)
        return fail(y, -E2BIG, m, "the stream expands to more than %u values (aliases?)",
                    YJ_MAX_NODES);
    y->nodes += n;
    return 0;
}

static void clear_anchors(struct yj *y)
{
    for (size_t i = 0; i < y->nanchors; i++) {
        x_free(y->anchors[i].name);
        json_decref(y->anchors[i].value);
    }
    y->nanchors = 0;
}

static int add_anchor(struct yj *y, const char *name, json_t *value, size_t nodes)
{
    /* A redefined anchor replaces the old one for the aliases that follow (YAML 1.2). */
    for (size_t i = 0; i < y->nanchors; i++) {
        if (strcmp(y->anchors[i].name, name) == 0) {
            json_decref(y->anchors[i].value);
            y->anchors[i].value = json_incref(value);
            y->anchors[i].nodes = nodes;
            return 0;
        }
    }
    if (y->nanchors == y->cap_anchors) {
        size_t cap = y->cap_anchors ? y->cap_anchors * 2 : 8;
        struct anchor *a = x_reallocarray(y->anchors, cap, sizeof(*a));

        if (!a)
            return -ENOMEM;
        y->anchors = a;
        y->cap_anchors = cap;
    }
    y->anchors[y->nanchors].name = x_strdup(name);
    if (!y->anchors[y->nanchors].name)
        return -ENOMEM;
    y->anchors[y->nanchors].value = json_incref(value);
    y->anchors[y->nanchors].nodes = nodes;
    y->nanchors++;
    return 0;
}

/* ---- scalars ------------------------------------------------------------------------------- */

static bool is_digits(const char *s, const char *set)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!strchr(set, *s))
            return false;
    return true;
}

/* Integer of the core schema into *v; -ERANGE beyond int64, -EINVAL if it is not one. */
static int parse_int(const char *s, json_int_t *v)
{
    bool neg = false;
    unsigned base = 10;
    const char *digits = "0123456789";
    uint64_t acc = 0, limit;

    if (*s == '-' || *s == '+') {
        neg = *s == '-';
        s++;
    }
    if (s[0] == '0' && s[1] == 'x') {
        base = 16;
        digits = "0123456789abcdefABCDEF";
        s += 2;
    } else if (s[0] == '0' && s[1] == 'o') {
        base = 8;
        digits = "01234567";
        s += 2;
    }
    if (!is_digits(s, digits))
        return -EINVAL;
    limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; *s; s++) {
        unsigned d = *s <= '9' ? (unsigned)(*s - '0') : (unsigned)((*s | 0x20) - 'a' + 10);

        if (acc > (limit - d) / base)
            return -ERANGE;
        acc = acc * base + d;
    }
    *v = neg ? (acc == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(json_int_t)acc) : (json_int_t)acc;
    return 0;
}

/* Float of the core schema: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static bool looks_float(const char *s)
{
    bool mant = false;

    if (*s == '-' || *s == '+')
        s++;
    while (*s >= '0' && *s <= '9') {
        s++;
        mant = true;
    }
    if (*s == '.') {
        s++;
        while (*s >= '0' && *s <= '9') {
            s++;
            mant = true;
        }
    }
    if (!mant)
        return false;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '-' || *s == '+')
            s++;
        if (!(*s >= '0' && *s <= '9'))
            return false;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return *s == '\0';
}

static bool one_of(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0)
            return true;
    return false;
}

static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
static const char *const trues[] = {"true", "True", "TRUE", NULL};
static const char *const falses[] = {"false", "False", "FALSE", NULL};
static const char *const specials[] = {".inf",  ".Inf", ".INF", "-.inf", "-.Inf", "-.INF",
                                       "+.inf", ".nan", ".NaN", ".NAN",  NULL};

/* Types one scalar; *ret is a new reference. */
static int scalar_value(struct yj *y, const yaml_event_t *ev, json_t **ret)
{
    const char *s = (const char *)ev->data.scalar.value;
    const char *tag = (const char *)ev->data.scalar.tag;
    bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    const char *want = NULL; /* the tag's type, or NULL to resolve a plain scalar */
    json_int_t iv;
    int r;

    if (strlen(s) != ev->data.scalar.length)
        return fail(y, -EINVAL, &ev->start_mark, "NUL character in a scalar");
    if (tag && strcmp(tag, "!") != 0) {
        if (strncmp(tag, TAG_PREFIX, strlen(TAG_PREFIX)) != 0)
            return fail(y, -EINVAL, &ev->start_mark, "unsupported tag \"%.60s\"", tag);
        want = tag + strlen(TAG_PREFIX);
        if (!one_of(want, (const char *const[]){"str", "int", "float", "bool", "null", NULL}))
            return fail(y, -EINVAL, &ev->start_mark, "unsupported tag \"%.60s\"", tag);
    } else if (!plain || tag) {
        want = "str";
    }

    if (want && strcmp(want, "str") == 0) {
        *ret = json_stringn(s, ev->data.scalar.length);
        if (!*ret)
            return fail(y, -EINVAL, &ev->start_mark, "scalar is not valid UTF-8");
        return 0;
    }
    if ((!want || strcmp(want, "null") == 0) && one_of(s, nulls)) {
        *ret = json_null();
        return 0;
    }
    if (!want || strcmp(want, "bool") == 0) {
        if (one_of(s, trues) || one_of(s, falses)) {
            *ret = json_boolean(one_of(s, trues));
            return 0;
        }
    }
    if (!want || strcmp(want, "int") == 0) {
        r = parse_int(s, &iv);
        if (r == -ERANGE)
            return fail(y, -ERANGE, &ev->start_mark, "integer %.40s is out of range", s);
        if (r == 0) {
            *ret = json_integer(iv);
            return *ret ? 0 : -ENOMEM;
        }
    }
    if (!want || strcmp(want, "float") == 0) {
        if (one_of(s, specials))
            return fail(y, -ERANGE, &ev->start_mark, "%s has no JSON representation", s);
        if (looks_float(s)) {
            double d = strtod(s, NULL);

            if (!isfinite(d))
                return fail(y, -ERANGE, &ev->start_mark, "number %.40s is out of range", s);
            *ret = json_real(d);
            return *ret ? 0 : -ENOMEM;
        }
    }
    if (want)
        return fail(y, -EINVAL, &ev->start_mark, "\"%.40s\" is not a valid !!%s", s, want);
    *ret = json_stringn(s, ev->data.scalar.length);
    if (!*ret)
        return fail(y, -EINVAL, &ev->start_mark, "scalar is not valid UTF-8");
    return 0;
}

/* ---- building ------------------------------------------------------------------------------- */

/* Puts a finished value (stolen) where it belongs: the document root, the next item of a
 * sequence, or the key or value of a mapping. `key_text` is the scalar's text when the value is
 * a scalar (keys are always strings, as Kubernetes' YAML reader makes them). */
static int place(struct yj *y, json_t *v, const char *key_text, const yaml_mark_t *m)
{
    struct frame *f;
    int r = 0;

    if (y->depth == 0) {
        y->root = v;
        y->have_root = true;
        return 0;
    }
    f = &y->stack[y->depth - 1];
    if (json_is_array(f->value)) {
        if (json_array_append_new(f->value, v) < 0)
            return -ENOMEM;
        return 0;
    }
    if (!f->key) {
        if (!key_text) {
            if (json_is_string(v))
                key_text = json_string_value(v);
            else
                r = fail(y, -EINVAL, m, "mapping keys must be scalars");
        }
        if (r == 0 && json_object_get(f->value, key_text))
            r = fail(y, -EINVAL, m, "duplicate mapping key \"%.60s\"", key_text);
        if (r == 0 && !(f->key = x_strdup(key_text)))
            r = -ENOMEM;
        f->key_line = m->line;
        json_decref(v);
        return r;
    }
    r = json_object_set_new(f->value, f->key, v) < 0 ? -ENOMEM : 0;
    x_free(f->key);
    f->key = NULL;
    return r;
}

static int start_collection(struct yj *y, const yaml_event_t *ev, bool mapping)
{
    const char *tag =
        (const char *)(mapping ? ev->data.mapping_start.tag : ev->data.sequence_start.tag);
    const char *anchor =
        (const char *)(mapping ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor);
    struct frame *f;
    int r;

    if (tag && strcmp(tag, mapping ? TAG_PREFIX "map" : TAG_PREFIX "seq") != 0)
        return fail(y, -EINVAL, &ev->start_mark, "unsupported tag \"%.60s\"", tag);
    if (y->depth >= YJ_MAX_DEPTH)
        return fail(y, -E2BIG, &ev->start_mark, "nested deeper than %d levels", YJ_MAX_DEPTH);
    r = charge(y, 1, &ev->start_mark);
    if (r < 0)
        return r;
    f = &y->stack[y->depth];
    memset(f, 0, sizeof(*f));
    f->value = mapping ? json_object() : json_array();
    if (!f->value)
        return -ENOMEM;
    if (anchor && !(f->anchor = x_strdup(anchor))) {
        json_decref(f->value);
        return -ENOMEM;
    }
    f->nodes_at = y->nodes;
    y->depth++;
    return 0;
}

static int end_collection(struct yj *y, const yaml_event_t *ev)
{
    struct frame *f = &y->stack[--y->depth];
    json_t *v = f->value;
    int r = 0;

    if (f->key)
        r = fail(y, -EINVAL, &ev->start_mark, "mapping key without a value");
    if (r == 0 && f->anchor)
        r = add_anchor(y, f->anchor, v, y->nodes - f->nodes_at + 1);
    x_free(f->key);
    x_free(f->anchor);
    if (r < 0) {
        json_decref(v);
        return r;
    }
    return place(y, v, NULL, &ev->start_mark);
}

static int on_scalar(struct yj *y, const yaml_event_t *ev)
{
    json_t *v = NULL;
    const char *text = (const char *)ev->data.scalar.value;
    const struct frame *top = y->depth ? &y->stack[y->depth - 1] : NULL;
    bool is_key = top && json_is_object(top->value) && !top->key;
    int r = charge(y, 1, &ev->start_mark);

    /* A key is its text, whatever it looks like ("1", "true", ".inf"). */
    if (r == 0 && is_key && !(v = json_stringn(text, ev->data.scalar.length)))
        r = fail(y, -EINVAL, &ev->start_mark, "key is not valid UTF-8");
    else if (r == 0 && !is_key)
        r = scalar_value(y, ev, &v);
    if (r == 0 && ev->data.scalar.anchor)
        r = add_anchor(y, (const char *)ev->data.scalar.anchor, v, 1);
    if (r < 0) {
        json_decref(v);
        return r;
    }
    return place(y, v, text, &ev->start_mark);
}

static int on_alias(struct yj *y, const yaml_event_t *ev)
{
    const char *name = (const char *)ev->data.alias.anchor;
    json_t *copy;
    int r;

    for (size_t i = 0; i < y->nanchors; i++) {
        if (strcmp(y->anchors[i].name, name) != 0)
            continue;
        r = charge(y, y->anchors[i].nodes, &ev->start_mark);
        if (r < 0)
            return r;
        copy = json_deep_copy(y->anchors[i].value);
        if (!copy)
            return -ENOMEM;
        return place(y, copy, json_is_string(copy) ? json_string_value(copy) : NULL,
                     &ev->start_mark);
    }
    return fail(y, -EINVAL, &ev->start_mark, "unknown anchor \"%.60s\"", name);
}

static int parser_error(struct yj *y, const yaml_parser_t *p)
{
    if (p->error == YAML_MEMORY_ERROR)
        return -ENOMEM;
    return fail(y, -EINVAL, &p->problem_mark, "invalid YAML: %s",
                p->problem ? p->problem : "syntax error");
}

int yj_load_all(const char *buf, size_t len, const char *origin, json_t **ret, char *err,
                size_t errlen)
{
    struct yj y = {.origin = origin ? origin : "<input>", .err = err, .errlen = errlen};
    yaml_parser_t parser;
    yaml_event_t ev;
    json_t *docs = NULL;
    bool done = false;
    int r = 0;

    if (err && errlen)
        err[0] = '\0';
    if (!buf || !ret)
        return -EINVAL;
    if (len > YJ_MAX_INPUT)
        return fail(&y, -E2BIG, NULL, "input larger than %u bytes", YJ_MAX_INPUT);
    docs = json_array();
    if (!docs)
        return -ENOMEM;
    if (!yaml_parser_initialize(&parser)) {
        json_decref(docs);
        return -ENOMEM;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    while (!done && r == 0) {
        if (!yaml_parser_parse(&parser, &ev)) {
            r = parser_error(&y, &parser);
            break;
        }
        switch (ev.type) {
        case YAML_DOCUMENT_START_EVENT:
            y.root = NULL;
            y.have_root = false;
            break;
        case YAML_DOCUMENT_END_EVENT:
            /* Empty documents (only comments, a stray "---", or null) are skipped, as kubectl
             * does. */
            if (y.have_root && !json_is_null(y.root) && json_array_append(docs, y.root) < 0)
                r = -ENOMEM;
            json_decref(y.root);
            y.root = NULL;
            y.have_root = false;
            clear_anchors(&y);
            break;
        case YAML_SCALAR_EVENT:
            r = on_scalar(&y, &ev);
            break;
        case YAML_ALIAS_EVENT:
            r = on_alias(&y, &ev);
            break;
        case YAML_SEQUENCE_START_EVENT:
            r = start_collection(&y, &ev, false);
            break;
        case YAML_MAPPING_START_EVENT:
            r = start_collection(&y, &ev, true);
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            r = end_collection(&y, &ev);
            break;
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    while (y.depth > 0) {
        struct frame *f = &y.stack[--y.depth];

        json_decref(f->value);
        x_free(f->key);
        x_free(f->anchor);
    }
    json_decref(y.root);
    clear_anchors(&y);
    x_free(y.anchors);
    if (r < 0) {
        if (r == -ENOMEM && err && errlen && !err[0])
            fail(&y, r, NULL, "out of memory");
        json_decref(docs);
        return r;
    }
    *ret = docs;
    return 0;
}
