/* common/jsonpatch: JSON pointers (RFC 6901) and patches (RFC 6902); see jsonpatch.h. */
#include "common/jsonpatch.h"
#include "common/errbuf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int jpatch_pointer(char *buf, size_t size, ...)
{
    va_list ap;
    size_t n = 0;
    const char *seg;

    if (!buf || size == 0)
        return -EINVAL;
    va_start(ap, size);
    while ((seg = va_arg(ap, const char *)) != NULL) {
        if (n + 1 >= size)
            goto long_;
        buf[n++] = '/';
        for (; *seg; seg++) {
            const char *rep = *seg == '~' ? "~0" : *seg == '/' ? "~1" : NULL;
            size_t k = rep ? 2 : 1;

            if (n + k >= size)
                goto long_;
            if (rep) {
                buf[n++] = rep[0];
                buf[n++] = rep[1];
            } else {
                buf[n++] = *seg;
            }
        }
    }
    va_end(ap);
    buf[n] = '\0';
    return 0;
long_:
    va_end(ap);
    buf[0] = '\0';
    return -ENAMETOOLONG;
}

int jpatch_op(json_t *patch, const char *op, const char *path, json_t *value)
{
    json_t *o;

    if (!json_is_array(patch) || !op || !path)
        return -EINVAL;
    o = value ? json_pack("{s:s,s:s,s:O}", "op", op, "path", path, "value", value)
              : json_pack("{s:s,s:s}", "op", op, "path", path);
    if (!o)
        return -ENOMEM;
    return json_array_append_new(patch, o) == 0 ? 0 : -ENOMEM;
}

/* Splits the next segment of a pointer (after the leading '/') into seg, unescaped. */
static int next_segment(const char **p, char *seg, size_t size)
{
    size_t n = 0;
    const char *s = *p;

    if (*s != '/')
        return -EINVAL;
    s++;
    while (*s && *s != '/') {
        char c = *s;

        if (c == '~') {
            if (s[1] == '0')
                c = '~';
            else if (s[1] == '1')
                c = '/';
            else
                return -EINVAL;
            s++;
        }
        if (n + 1 >= size)
            return -EINVAL;
        seg[n++] = c;
        s++;
    }
    seg[n] = '\0';
    *p = s;
    return 0;
}

static bool parse_index(const char *s, size_t *ret)
{
    size_t v = 0;

    if (!*s || (s[0] == '0' && s[1]))
        return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > 100000000)
            return false;
        v = v * 10 + (size_t)(*s - '0');
    }
    *ret = v;
    return true;
}

int jpatch_apply(json_t *doc, const json_t *patch, char *err, size_t errlen)
{
    size_t i;
    const json_t *op;

    if (!json_is_array(patch))
        return errbuf_fmt(err, errlen, -EINVAL, "the patch is not an array");
    json_array_foreach(patch, i, op)
    {
        const char *kind = json_string_value(json_object_get(op, "op"));
        const char *path = json_string_value(json_object_get(op, "path"));
        json_t *value = json_object_get(op, "value"), *parent = doc;
        char seg[JPATCH_POINTER_MAX];
        const char *p = path;
        bool add, replace, rm;

        if (!kind || !path || !*path)
            return errbuf_fmt(err, errlen, -EINVAL, "operation %zu has no op or path", i);
        add = strcmp(kind, "add") == 0;
        replace = strcmp(kind, "replace") == 0;
        rm = strcmp(kind, "remove") == 0;
        if (!add && !replace && !rm)
            return errbuf_fmt(err, errlen, -EINVAL, "operation %zu: op '%s' is not supported", i,
                              kind);
        if ((add || replace) && !value)
            return errbuf_fmt(err, errlen, -EINVAL, "operation %zu has no value", i);
        /* Walk to the parent of the last segment. */
        for (;;) {
            if (next_segment(&p, seg, sizeof(seg)) < 0)
                return errbuf_fmt(err, errlen, -EINVAL, "operation %zu: bad path %s", i, path);
            if (*p == '\0')
                break;
            if (json_is_object(parent)) {
                parent = json_object_get(parent, seg);
            } else if (json_is_array(parent)) {
                size_t idx;

                parent = parse_index(seg, &idx) ? json_array_get(parent, idx) : NULL;
            } else {
                parent = NULL;
            }
            if (!parent)
                return errbuf_fmt(err, errlen, -EINVAL, "operation %zu: %s does not exist", i,
                                  path);
        }
        if (json_is_object(parent)) {
            if ((replace || rm) && !json_object_get(parent, seg))
                return errbuf_fmt(err, errlen, -EINVAL, "operation %zu: %s does not exist", i,
                                  path);
            if (rm ? json_object_del(parent, seg) != 0
                   : json_object_set_new(parent, seg, json_deep_copy(value)) != 0)
                return errbuf_fmt(err, errlen, -EINVAL, "operation %zu: cannot apply", i);
        } else if (json_is_array(parent)) {
            size_t idx, n = json_array_size(parent);

            if (add && strcmp(seg, "-") == 0) {
                if (json_array_append_new(parent, json_deep_copy(value)) != 0)
                    return errbuf_fmt(err, errlen, -EINVAL, "operation %zu: cannot apply", i);
                continue;
            }
            if (!parse_index(seg, &idx) || idx > n || (!add && idx == n))
                return errbuf_fmt(err, errlen, -EINVAL, "operation %zu: index out of range in %s",
                                  i, path);
            if ((add       ? json_array_insert_new(parent, idx, json_deep_copy(value))
                 : replace ? json_array_set_new(parent, idx, json_deep_copy(value))
                           : json_array_remove(parent, idx)) != 0)
                return errbuf_fmt(err, errlen, -EINVAL, "operation %zu: cannot apply", i);
        } else {
            return errbuf_fmt(err, errlen, -EINVAL,
                              "operation %zu: the parent of %s is not a container", i, path);
        }
    }
    return 0;
}
