#include "common/jsonb.h"
#include "common/jsonfast.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

size_t jsonb_budget(size_t len, unsigned ratio)
{
    if (ratio == 0)
        ratio = JSONB_RATIO;
    if (len > (SIZE_MAX - JSONB_BASE_COST) / ratio)
        return SIZE_MAX;
    return len * ratio + JSONB_BASE_COST;
}

int jsonb_scan(const char *buf, size_t len, size_t max_cost, unsigned max_depth,
               struct jsonb_count *ret)
{
    struct jsonb_count c = {0, 0, 0};
    unsigned depth = 0;
    bool in_string = false, escaped = false, in_scalar = false;
    int r = 0;

    for (size_t i = 0; i < len; i++) {
        char ch = buf[i];

        if (in_string) {
            if (escaped)
                escaped = false;
            else if (ch == '\\')
                escaped = true;
            else if (ch == '"')
                in_string = false;
            continue;
        }
        switch (ch) {
        case '"':
            in_string = true;
            in_scalar = false;
            c.elements++;
            c.cost += JSONB_COST_STRING;
            break;
        case '{':
        case '[':
            in_scalar = false;
            c.elements++;
            c.cost += ch == '{' ? JSONB_COST_OBJECT : JSONB_COST_ARRAY;
            if (++depth > c.depth)
                c.depth = depth;
            break;
        case '}':
        case ']':
            in_scalar = false;
            if (depth > 0)
                depth--;
            break;
        case ',':
        case ':':
        case ' ':
        case '\t':
        case '\n':
        case '\r':
            in_scalar = false;
            break;
        default: /* a number, true, false, null (or garbage jansson will refuse) */
            if (!in_scalar) {
                c.elements++;
                c.cost += JSONB_COST_SCALAR;
            }
            in_scalar = true;
            break;
        }
        if (c.cost > max_cost || c.depth > max_depth) {
            r = -E2BIG;
            break;
        }
    }
    if (ret)
        *ret = c;
    return r;
}

int jsonb_load(const void *buf, size_t len, size_t max_cost, unsigned max_depth, size_t flags,
               json_t **ret, json_error_t *err)
{
    struct jsonb_count c;
    json_error_t jerr;
    json_t *j;

    if (!buf && len)
        return -EINVAL;
    if (max_cost == 0)
        max_cost = jsonb_budget(len, 0);
    if (max_depth == 0)
        max_depth = JSONB_MAX_DEPTH;
    if (jsonb_scan(buf, len, max_cost, max_depth, &c) < 0) {
        if (err) {
            *err = (json_error_t){.line = -1, .column = -1};
            if (c.depth > max_depth)
                snprintf(err->text, sizeof(err->text), "JSON nested deeper than %u levels",
                         max_depth);
            else
                snprintf(err->text, sizeof(err->text),
                         "%zu bytes of JSON would take more than %zu bytes of memory (%zu values "
                         "or more)",
                         len, max_cost, c.elements);
        }
        return -E2BIG;
    }
    /* The fast path builds the same tree as jansson (common/jsonfast.h) or gives up, and then
     * jansson decides. */
    j = jsf_load(buf, len, flags);
    if (j) {
        *ret = j;
        return 0;
    }
    j = json_loadb(buf ? buf : "", len, flags, &jerr);
    if (!j) {
        if (err)
            *err = jerr;
        return json_error_code(&jerr) == json_error_out_of_memory ? -ENOMEM : -EINVAL;
    }
    *ret = j;
    return 0;
}
