/* The CLI's selector syntax: see nsof.h ("the CLI's selector syntax"). A small hand-written
 * scanner: position-accurate errors, no allocation but the result. */
#include "offloading/nsof.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

struct scan {
    const char *s;
    size_t pos, len;
    char *err;
    size_t errlen;
};

static int serr(struct scan *sc, const char *what)
{
    if (sc->err && sc->errlen)
        snprintf(sc->err, sc->errlen, "selector, at character %zu: %s", sc->pos + 1, what);
    return -EINVAL;
}

static void skip_ws(struct scan *sc)
{
    while (sc->pos < sc->len && (sc->s[sc->pos] == ' ' || sc->s[sc->pos] == '\t'))
        sc->pos++;
}

/* Characters of keys and values: letters, digits, '-', '_', '.', '/'. */
static bool word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.' || c == '/';
}

/* A word into buf (may be empty). */
static int word(struct scan *sc, char *buf, size_t size)
{
    size_t n = 0;

    skip_ws(sc);
    while (sc->pos < sc->len && word_char(sc->s[sc->pos])) {
        if (n + 1 >= size)
            return serr(sc, "a key or value is too long");
        buf[n++] = sc->s[sc->pos++];
    }
    buf[n] = '\0';
    return 0;
}

static bool at(struct scan *sc, const char *tok)
{
    size_t n = strlen(tok);

    skip_ws(sc);
    if (sc->len - sc->pos >= n && strncmp(sc->s + sc->pos, tok, n) == 0) {
        sc->pos += n;
        return true;
    }
    return false;
}

/* "(a, b, ...)" into values. */
static int value_list(struct scan *sc, json_t *values)
{
    char v[256];

    if (!at(sc, "("))
        return serr(sc, "expected '(' after in/notin");
    for (;;) {
        if (word(sc, v, sizeof(v)) < 0)
            return -EINVAL;
        if (json_array_size(values) >= NSOF_MAX_VALUES)
            return serr(sc, "too many values (max 64)");
        if (json_array_append_new(values, json_string(v)) != 0)
            return -ENOMEM;
        if (at(sc, ")"))
            return 0;
        if (!at(sc, ","))
            return serr(sc, "expected ',' or ')' in a list of values");
    }
}

/* Does the next word equal kw, followed by a space or '(' (so "index" is not "in" + "dex")? */
static bool keyword(struct scan *sc, const char *kw)
{
    size_t save = sc->pos, n = strlen(kw);

    skip_ws(sc);
    if (sc->len - sc->pos >= n && strncmp(sc->s + sc->pos, kw, n) == 0 &&
        (sc->pos + n == sc->len || !word_char(sc->s[sc->pos + n]))) {
        sc->pos += n;
        return true;
    }
    sc->pos = save;
    return false;
}

static int requirement(struct scan *sc, json_t *exprs)
{
    char key[320], v[256];
    const char *op = NULL;
    json_t *values = json_array(), *x;
    bool negate = false;
    int rc = -ENOMEM;

    if (!values)
        return -ENOMEM;
    if (at(sc, "!"))
        negate = true;
    if ((rc = word(sc, key, sizeof(key))) < 0)
        goto out;
    rc = -EINVAL;
    if (!key[0]) {
        serr(sc, "expected a label key");
        goto out;
    }
    if (negate) {
        op = "DoesNotExist";
    } else if (at(sc, "==") || at(sc, "=")) {
        op = "In";
    } else if (at(sc, "!=")) {
        op = "NotIn";
    } else if (at(sc, ">")) {
        op = "Gt";
    } else if (at(sc, "<")) {
        op = "Lt";
    } else if (keyword(sc, "notin")) {
        op = "NotIn";
        if ((rc = value_list(sc, values)) < 0)
            goto out;
    } else if (keyword(sc, "in")) {
        op = "In";
        if ((rc = value_list(sc, values)) < 0)
            goto out;
    } else {
        op = "Exists";
    }
    if (json_array_size(values) == 0 && strcmp(op, "Exists") != 0 &&
        strcmp(op, "DoesNotExist") != 0) {
        if ((rc = word(sc, v, sizeof(v))) < 0)
            goto out;
        rc = -EINVAL;
        if (!v[0] && strcmp(op, "In") != 0 && strcmp(op, "NotIn") != 0) {
            serr(sc, "expected a number");
            goto out;
        }
        if (json_array_append_new(values, json_string(v)) != 0) {
            rc = -ENOMEM;
            goto out;
        }
    }
    if (json_array_size(exprs) >= NSOF_MAX_EXPRESSIONS) {
        rc = serr(sc, "too many requirements (max 32)");
        goto out;
    }
    x = json_array_size(values)
            ? json_pack("{s:s,s:s,s:O}", "key", key, "operator", op, "values", values)
            : json_pack("{s:s,s:s}", "key", key, "operator", op);
    rc = x && json_array_append_new(exprs, x) == 0 ? 0 : -ENOMEM;
out:
    json_decref(values);
    return rc;
}

int nsof_selector_from_text(const char *text, json_t **ret, char *err, size_t errlen)
{
    struct scan sc = {text, 0, 0, err, errlen};
    json_t *exprs = NULL, *sel = NULL;
    char verr[256];
    int rc;

    if (err && errlen)
        err[0] = '\0';
    if (!text || !ret)
        return -EINVAL;
    sc.len = strnlen(text, NSOF_TEXT_MAX + 1);
    if (sc.len > NSOF_TEXT_MAX) {
        if (err && errlen)
            snprintf(err, errlen, "selector: longer than %d characters", NSOF_TEXT_MAX);
        return -EINVAL;
    }
    skip_ws(&sc);
    if (sc.pos == sc.len) {
        *ret = NULL;
        return 0;
    }
    exprs = json_array();
    if (!exprs)
        return -ENOMEM;
    for (;;) {
        rc = requirement(&sc, exprs);
        if (rc < 0)
            goto out;
        skip_ws(&sc);
        if (sc.pos == sc.len)
            break;
        if (!at(&sc, ",")) {
            rc = serr(&sc, "expected ',' between requirements");
            goto out;
        }
    }
    sel = json_pack("{s:[{s:O}]}", "nodeSelectorTerms", "matchExpressions", exprs);
    rc = -ENOMEM;
    if (!sel)
        goto out;
    rc = nsof_selector_validate(sel, verr, sizeof(verr));
    if (rc < 0) {
        /* "term 0, expression N: ..." is the validator's wording: say it the CLI's way. */
        const char *p = strstr(verr, "expression "), *end = NULL;
        unsigned n = 0;

        if (p)
            for (end = p + strlen("expression "); *end >= '0' && *end <= '9' && n < 1000; end++)
                n = n * 10 + (unsigned)(*end - '0');
        if (err && errlen) {
            if (end && *end == ':')
                snprintf(err, errlen, "selector: requirement %u%s", n + 1, end);
            else
                snprintf(err, errlen, "selector: %s", verr);
        }
        goto out;
    }
    *ret = sel;
    sel = NULL;
out:
    json_decref(exprs);
    json_decref(sel);
    return rc;
}
