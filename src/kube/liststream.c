#include "kube/liststream.h"
#include "common/jsonb.h"
#include "common/xalloc.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

void kls_init(struct kls *s, size_t max_item, size_t max_rest, kls_item_fn fn, void *data)
{
    memset(s, 0, sizeof(*s));
    s->fn = fn;
    s->data = data;
    s->max_item = max_item;
    s->max_rest = max_rest;
}

void kls_done(struct kls *s)
{
    x_free(s->item);
    x_free(s->rest);
    memset(s, 0, sizeof(*s));
}

/* Appends n bytes to a buffer bounded by max. */
static int buf_add(char **buf, size_t *len, size_t *cap, size_t max, const char *p, size_t n)
{
    if (n > max - *len)
        return -E2BIG;
    if (*len + n > *cap) {
        size_t ncap = *cap ? *cap : 4096;
        char *nb;
        while (ncap < *len + n)
            ncap = ncap > max / 2 ? max : ncap * 2;
        nb = x_reallocarray(*buf, ncap, 1);
        if (!nb)
            return -ENOMEM;
        *buf = nb;
        *cap = ncap;
    }
    memcpy(*buf + *len, p, n);
    *len += n;
    return 0;
}

static int rest_add(struct kls *s, const char *p, size_t n)
{
    return buf_add(&s->rest, &s->rest_len, &s->rest_cap, s->max_rest, p, n);
}

static int item_add(struct kls *s, const char *p, size_t n)
{
    return buf_add(&s->item, &s->item_len, &s->item_cap, s->max_item, p, n);
}

/* The element that ends at p[end] (its closing brace) is complete. from: where it began in this
 * chunk, or SIZE_MAX when it began in an earlier one (then it is in s->item). */
static int emit(struct kls *s, const char *p, size_t from, size_t end)
{
    int r;

    s->items++;
    if (from != SIZE_MAX) {
        if (end + 1 - from > s->max_item)
            return -E2BIG;
        return s->fn(p + from, end + 1 - from, s->data);
    }
    r = item_add(s, p, end + 1);
    if (r < 0)
        return r;
    r = s->fn(s->item, s->item_len, s->data);
    s->item_len = 0;
    return r;
}

static bool space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int kls_feed(struct kls *s, const char *p, size_t n)
{
    size_t copy_from = s->in_items ? SIZE_MAX : 0; /* bytes of this chunk for the envelope */
    size_t elem_from = SIZE_MAX;                   /* start of the element in this chunk */
    int r = 0;

    if (s->err)
        return s->err;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];

        if (s->in_str) {
            if (s->esc) {
                s->esc = false;
            } else if (c == '\\') {
                s->esc = true;
                s->key_len = UINT8_MAX; /* an escaped name is never "items" */
            } else if (c == '"') {
                s->in_str = false;
                if (s->key_capture) {
                    s->key_capture = false;
                    s->items_next = s->key_len == 5 && memcmp(s->key, "items", 5) == 0;
                }
            } else if (s->key_capture) {
                if (s->key_len < sizeof(s->key))
                    s->key[s->key_len++] = c;
                else
                    s->key_len = UINT8_MAX;
            } else {
                /* Skip the plain part of the string at once. */
                while (i + 1 < n && p[i + 1] != '"' && p[i + 1] != '\\')
                    i++;
            }
            continue;
        }
        if (space(c))
            continue;
        if (s->ended || (!s->started && c != '{')) {
            r = -EBADMSG;
            goto fail;
        }
        switch (c) {
        case '"':
            s->in_str = true;
            if (s->depth == 1 && s->key_expected) {
                s->key_capture = true;
                s->key_len = 0;
            }
            break;
        case '{':
        case '[':
            if (!s->started) {
                s->started = true;
                s->depth = 1;
                s->key_expected = true;
                break;
            }
            if (s->depth == 1 && c == '[' && s->items_next && !s->key_expected) {
                /* The items array: the envelope keeps its brackets, the elements go out. */
                r = rest_add(s, p + copy_from, i + 1 - copy_from);
                if (r < 0)
                    goto fail;
                copy_from = SIZE_MAX;
                s->in_items = true;
                s->need_comma = false;
                s->items_next = false;
                s->depth = 2;
                break;
            }
            if (s->in_items && s->depth == 2) {
                if (c != '{' || s->need_comma) {
                    r = -EBADMSG;
                    goto fail;
                }
                s->in_elem = true;
                elem_from = i;
                s->item_len = 0;
            }
            if (++s->depth > KLS_MAX_DEPTH) {
                r = -EBADMSG;
                goto fail;
            }
            break;
        case '}':
        case ']':
            if (s->in_items && s->depth == 2) {
                if (c != ']') {
                    r = -EBADMSG;
                    goto fail;
                }
                s->in_items = false;
                s->depth = 1;
                copy_from = i;
                break;
            }
            if (s->depth <= 1 && c == ']') {
                r = -EBADMSG;
                goto fail;
            }
            s->depth--;
            if (s->in_items && s->depth == 2) {
                s->in_elem = false;
                s->need_comma = true;
                r = emit(s, p, elem_from, i);
                elem_from = SIZE_MAX;
                if (r < 0)
                    goto fail;
            } else if (s->depth == 0) {
                s->ended = true;
                r = rest_add(s, p + copy_from, i + 1 - copy_from);
                if (r < 0)
                    goto fail;
                copy_from = SIZE_MAX;
            }
            break;
        case ',':
            if (s->in_items && s->depth == 2) {
                if (!s->need_comma) {
                    r = -EBADMSG;
                    goto fail;
                }
                s->need_comma = false;
            } else if (s->depth == 1) {
                s->key_expected = true;
                s->items_next = false;
            }
            break;
        case ':':
            if (s->depth == 1)
                s->key_expected = false;
            break;
        default:
            if (s->in_items && s->depth == 2) {
                r = -EBADMSG; /* an element that is not an object */
                goto fail;
            }
            break;
        }
    }
    if (s->in_elem) {
        size_t from = elem_from != SIZE_MAX ? elem_from : 0;
        r = item_add(s, p + from, n - from);
        if (r < 0)
            goto fail;
    }
    if (copy_from != SIZE_MAX && s->started && !s->ended) {
        r = rest_add(s, p + copy_from, n - copy_from);
        if (r < 0)
            goto fail;
    }
    return 0;
fail:
    s->err = r;
    return r;
}

int kls_finish(struct kls *s, json_t **envelope)
{
    int r;

    if (s->err)
        return s->err;
    if (!s->ended || s->in_str) {
        s->err = -EBADMSG;
        return s->err;
    }
    r = jsonb_load(s->rest, s->rest_len, jsonb_budget(s->rest_len, JSONB_RATIO_KUBE), 0, 0,
                   envelope, NULL);
    if (r == -EINVAL)
        r = -EBADMSG;
    return r;
}

/* Reads the string that starts at text[i] (its opening quote); returns the index after its closing
 * quote (len when unterminated). Sets *plain when it has no escape. */
static size_t skip_string(const char *text, size_t len, size_t i, bool *plain)
{
    *plain = true;
    for (i++; i < len; i++) {
        if (text[i] == '\\') {
            *plain = false;
            i++;
        } else if (text[i] == '"') {
            return i + 1;
        }
    }
    return len;
}

static bool name_is(const char *text, size_t start, size_t end, bool plain, const char *name)
{
    size_t n = strlen(name);

    return plain && end - start == n + 2 && memcmp(text + start + 1, name, n) == 0;
}

int kls_find_member(const char *text, size_t len, const char *const *path, unsigned n, size_t *from,
                    size_t *to)
{
    /* depth: of the character read (the top object is 1); on: the deepest object of the path the
     * scan is inside (0: not yet in the top one); want: the member being read is path[on - 1]. */
    unsigned depth = 0, on = 0;
    bool key_expected = false, want = false;
    size_t sep = 0, start = 0; /* the separator before the member being read, its name */

    if (n == 0 || n > KLS_MAX_DEPTH)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        bool plain;
        size_t end;

        switch (c) {
        case '"':
            end = skip_string(text, len, i, &plain);
            if (key_expected && on > 0 && depth == on) {
                want = name_is(text, i, end, plain, path[on - 1]);
                start = i;
            }
            i = end - 1;
            break;
        case ':':
            key_expected = false;
            break;
        case ',':
            if (on > 0 && depth == on) {
                if (want && on == n) {
                    /* The value ended: drop the member and the comma on one side of it. */
                    if (text[sep] == ',') {
                        *from = sep;
                        *to = i;
                    } else {
                        *from = start;
                        *to = i + 1;
                    }
                    return 1;
                }
                key_expected = true;
                sep = i;
                want = false;
            }
            break;
        case '{':
        case '[':
            depth++;
            if (c == '{' && depth == on + 1 && (on == 0 || (want && on < n))) {
                on = depth; /* into the top object, or the path's next one */
                want = false;
                key_expected = true;
                sep = i;
            } else if (on == 0) {
                return 0; /* not an object */
            }
            if (depth > KLS_MAX_DEPTH)
                return 0;
            break;
        case '}':
        case ']':
            if (depth == 0)
                return 0;
            if (depth == on) {
                if (want && on == n) {
                    *from = text[sep] == ',' ? sep : start;
                    *to = i;
                    return 1;
                }
                return 0; /* the (first) object of the path has no such member */
            }
            depth--;
            break;
        default:
            break;
        }
    }
    return 0;
}

int kls_find_managed_fields(const char *text, size_t len, size_t *from, size_t *to)
{
    static const char *const path[] = {"metadata", "managedFields"};

    return kls_find_member(text, len, path, 2, from, to);
}

int kls_cut_member(const char *text, size_t len, const char *const *path, unsigned n, char **buf,
                   size_t *cap, const char **out, size_t *out_len)
{
    size_t from, to;

    *out = text;
    *out_len = len;
    if (kls_find_member(text, len, path, n, &from, &to) != 1)
        return 0;
    if (*cap < len - (to - from)) {
        char *p = x_malloc(len - (to - from));

        if (!p)
            return -ENOMEM;
        x_free(*buf);
        *buf = p;
        *cap = len - (to - from);
    }
    memcpy(*buf, text, from);
    memcpy(*buf + from, text + to, len - to);
    *out = *buf;
    *out_len = len - (to - from);
    return 1;
}

int kls_decode_object(const char *item, size_t len, char **buf, size_t *cap, json_t **obj,
                      const char **text, size_t *text_len)
{
    static const char *const path[] = {"metadata", "managedFields"};
    int r = kls_cut_member(item, len, path, 2, buf, cap, &item, &len);

    if (r < 0)
        return r;
    r = jsonb_load(item, len, jsonb_budget(len, JSONB_RATIO_KUBE), 0, 0, obj, NULL);
    if (r < 0)
        return r == -EINVAL ? -EBADMSG : r;
    *text = item;
    *text_len = len;
    return 0;
}
