#include "common/json.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>

const char *jsn_str(const json_t *obj, const char *key)
{
    /* json_object_get() is NULL for a NULL or non-object obj and a NULL key; json_string_value()
     * is NULL for NULL and for anything but a string. */
    return json_string_value(json_object_get(obj, key));
}

const char *jsn_str_or_empty(const json_t *obj, const char *key)
{
    const char *s = jsn_str(obj, key);

    return s ? s : "";
}

const char *jsn_str_at(const json_t *obj, ...)
{
    va_list ap;
    const char *key;
    const json_t *v = obj;

    va_start(ap, obj);
    while (v && (key = va_arg(ap, const char *)) != NULL)
        v = json_object_get(v, key);
    va_end(ap);
    return json_string_value(v);
}

static const char *meta_member(const json_t *obj, const char *map, const char *key)
{
    return jsn_str(json_object_get(json_object_get(obj, "metadata"), map), key);
}

const char *jsn_label(const json_t *obj, const char *key)
{
    return meta_member(obj, "labels", key);
}

const char *jsn_annotation(const json_t *obj, const char *key)
{
    return meta_member(obj, "annotations", key);
}

int jsn_merge_patch_removals(json_t *want, const json_t *have)
{
    const char *k;
    json_t *v, *w;
    int rc;

    if (!json_is_object(want))
        return -EINVAL;
    if (!json_is_object(have))
        return 0;
    json_object_foreach((json_t *)have, k, v)
    {
        w = json_object_get(want, k);
        if (!w) {
            if (json_object_set_new(want, k, json_null()) < 0)
                return -ENOMEM;
        } else if (json_is_object(w) && json_is_object(v)) {
            rc = jsn_merge_patch_removals(w, v);
            if (rc < 0)
                return rc;
        }
    }
    return 0;
}
