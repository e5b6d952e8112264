#include "common/opts.h"
#include "common/duration.h"
#include "common/errbuf.h"
#include "common/log.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

#define HELP_WIDTH   92 /* columns of the help */
#define HELP_MAX_COL 32 /* the column of the help texts at most; a longer entry stands alone */
#define HELP_MAX     (1 << 16)

int opts_fail(const struct opts_def *o, char *err, size_t errlen, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return errbuf_fmt(err, errlen, -EINVAL, "--%s: %s", o->name, msg);
}

int opts_log_level(const struct opts_def *o, const char *value, char *err, size_t errlen)
{
    enum log_level l = log_level_from_string(value);

    if (l == _LOG_LEVEL_INVALID)
        return opts_fail(o, err, errlen, "expected debug, info, warn or error, not '%s'", value);
    *(enum log_level *)o->dest = l;
    return 0;
}

static const struct opts_def *find_long(const struct opts_def *d, const char *name, size_t len)
{
    for (; d->name; d++)
        if (strncmp(d->name, name, len) == 0 && d->name[len] == '\0')
            return d;
    return NULL;
}

static const struct opts_def *find_short(const struct opts_def *d, char c)
{
    for (; d->name; d++)
        if (d->short_name && d->short_name == c)
            return d;
    return NULL;
}

static bool takes_value(const struct opts_def *d)
{
    return d->kind != OPTS_FLAG && d->kind != OPTS_BOOL;
}

static int store_choice(const struct opts_def *d, const char *v, char *err, size_t errlen)
{
    char list[256] = "";
    size_t n = 0, len;

    for (const char *const *c = d->choices; *c; c++, n++)
        if (strcmp(*c, v) == 0) {
            *(const char **)d->dest = v;
            return 0;
        }
    for (size_t i = 0; i < n; i++) {
        len = strlen(list);
        snprintf(list + len, sizeof(list) - len, "%s%s",
                 i == 0       ? ""
                 : i + 1 == n ? " or "
                              : ", ",
                 d->choices[i]);
    }
    return opts_fail(d, err, errlen, "'%s' is not %s", v, list);
}

static int store_uint(const struct opts_def *d, const char *v, char *err, size_t errlen)
{
    size_t size = d->size ? d->size : sizeof(uint64_t);
    uint64_t max = size >= 8 ? UINT64_MAX : (UINT64_C(1) << (8 * size)) - 1, n;

    if (d->max && d->max < max)
        max = d->max;
    if (parse_u64(v, max, &n) < 0 || n < d->min)
        return opts_fail(d, err, errlen,
                         "invalid number '%s' (--%s must be an integer from %llu to %llu)", v,
                         d->name, (unsigned long long)d->min, (unsigned long long)max);
    switch (size) {
    case 1:
        *(uint8_t *)d->dest = (uint8_t)n;
        break;
    case 2:
        *(uint16_t *)d->dest = (uint16_t)n;
        break;
    case 4:
        *(uint32_t *)d->dest = (uint32_t)n;
        break;
    default:
        *(uint64_t *)d->dest = n;
        break;
    }
    return 0;
}

static int store_duration(const struct opts_def *d, const char *v, char *err, size_t errlen)
{
    char lo[24], hi[24], range[64] = "";
    uint64_t ms;

    if (dur_parse(v, d->flags & OPTS_SECONDS ? DUR_SECONDS : 0, &ms) == 0 && ms >= d->min &&
        (!d->max || ms <= d->max)) {
        *(uint64_t *)d->dest = ms;
        return 0;
    }
    dur_format(d->min, lo, sizeof(lo));
    dur_format(d->max, hi, sizeof(hi));
    if (d->min && d->max)
        snprintf(range, sizeof(range), " from %s to %s", lo, hi);
    else if (d->min)
        snprintf(range, sizeof(range), " of at least %s", lo);
    else if (d->max)
        snprintf(range, sizeof(range), " of at most %s", hi);
    return opts_fail(d, err, errlen,
                     "invalid duration '%s' (not a duration%s, e.g. 500ms, 15s, 2m)", v, range);
}

/* Checks and stores the value of d (NULL: none given). */
static int store(const struct opts_def *d, const char *v, char *err, size_t errlen)
{
    switch (d->kind) {
    case OPTS_FLAG:
        if (v)
            return opts_fail(d, err, errlen, "takes no value, not '%s'", v);
        *(bool *)d->dest = !(d->flags & OPTS_CLEAR);
        return 0;
    case OPTS_BOOL:
        if (!v || strcmp(v, "true") == 0)
            *(bool *)d->dest = true;
        else if (strcmp(v, "false") == 0)
            *(bool *)d->dest = false;
        else
            return opts_fail(d, err, errlen, "expected true or false, not '%s'", v);
        return 0;
    case OPTS_STRING:
        *(const char **)d->dest = v;
        return 0;
    case OPTS_CHOICE:
        return store_choice(d, v, err, errlen);
    case OPTS_UINT:
        return store_uint(d, v, err, errlen);
    case OPTS_DURATION:
        return store_duration(d, v, err, errlen);
    case OPTS_LIST: {
        struct opts_list *l = d->dest;

        if (l->n >= l->max)
            return opts_fail(d, err, errlen, "at most %zu values", l->max);
        l->items[l->n++] = v;
        return 0;
    }
    case OPTS_CUSTOM:
        return d->fn(d, v, err, errlen);
    }
    return errbuf_fmt(err, errlen, -EINVAL, "--%s: unknown kind of option", d->name);
}

/* The message stays on one line when a value has line breaks. */
static int one_line(char *err, size_t errlen, int r)
{
    for (size_t i = 0; err && i < errlen && err[i]; i++)
        if (err[i] == '\n' || err[i] == '\r')
            err[i] = ' ';
    return r;
}

static int parse(const struct opts_spec *spec, int argc, char **argv, char *err, size_t errlen)
{
    const char *noun = spec->noun ? spec->noun : "option";
    bool only_args = false;
    size_t nargs = 0;

    errbuf_clear(err, errlen);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *eq, *v = NULL;
        const struct opts_def *d = NULL;
        int r;

        if (only_args || a[0] != '-' || a[1] == '\0') {
            if (nargs >= spec->max_args)
                return errbuf_fmt(err, errlen, -EINVAL, "unexpected argument '%s' (see --help)", a);
            spec->args[nargs++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_args = true;
            continue;
        }
        eq = strchr(a, '=');
        if (a[1] == '-')
            d = find_long(spec->defs, a + 2, eq ? (size_t)(eq - a - 2) : strlen(a + 2));
        else if (eq ? eq == a + 2 : a[2] == '\0')
            d = find_short(spec->defs, a[1]);
        if (!d)
            return errbuf_fmt(err, errlen, -EINVAL, "unknown %s '%s' (see --help)", noun, a);
        if (eq) {
            v = eq + 1;
        } else if (takes_value(d)) {
            if (i + 1 >= argc)
                return errbuf_fmt(err, errlen, -EINVAL,
                                  "%s: missing value (the %s needs a value: %s %s)", a, noun, a,
                                  d->arg ? d->arg : "VALUE");
            v = argv[++i];
        }
        if (v && !*v && (d->flags & OPTS_NONEMPTY))
            return eq ? errbuf_fmt(err, errlen, -EINVAL, "%.*s: empty value", (int)(eq - a + 1), a)
                      : errbuf_fmt(err, errlen, -EINVAL, "%s '': empty value", a);
        r = store(d, v, err, errlen);
        if (r < 0)
            return r;
        if (d->kind == OPTS_FLAG && (d->flags & OPTS_STOP))
            break;
    }
    return (int)nargs;
}

int opts_parse(const struct opts_spec *spec, int argc, char **argv, char *err, size_t errlen)
{
    int r = parse(spec, argc, argv, err, errlen);

    return r < 0 ? one_line(err, errlen, r) : r;
}

/* "  -n, --name ARG" into buf; returns its length. */
static size_t entry(const struct opts_def *d, char *buf, size_t size)
{
    const char *arg = d->arg ? d->arg : d->kind == OPTS_BOOL ? "BOOL" : "VALUE";
    char sh[8] = "";
    int n;

    if (d->short_name)
        snprintf(sh, sizeof(sh), "-%c, ", d->short_name);
    if (d->kind == OPTS_FLAG)
        n = snprintf(buf, size, "  %s--%s", sh, d->name);
    else if (d->kind == OPTS_BOOL)
        n = snprintf(buf, size, "  %s--%s[=%s]", sh, d->name, arg);
    else
        n = snprintf(buf, size, "  %s--%s %s", sh, d->name, arg);
    return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}

static int indent(struct sbuf *out, size_t n)
{
    int r = 0;

    while (n-- > 0 && r == 0)
        r = sbuf_add(out, " ", 1);
    return r;
}

/* Appends text wrapped to width, its lines starting at column col (the first one is there). */
static int wrap(struct sbuf *out, const char *text, size_t col)
{
    size_t avail = HELP_WIDTH > col + 24 ? HELP_WIDTH - col : 24, len = 0;
    const char *p = text ? text : "";
    int r = 0;

    while (*p && r == 0) {
        size_t n;

        if (*p == '\n') {
            r = sbuf_adds(out, "\n");
            if (r == 0)
                r = indent(out, col);
            len = 0;
            p++;
            continue;
        }
        if (*p == ' ') {
            p++;
            continue;
        }
        n = strcspn(p, " \n");
        if (len > 0 && len + 1 + n > avail) {
            r = sbuf_adds(out, "\n");
            if (r == 0)
                r = indent(out, col);
            len = 0;
        }
        if (r == 0 && len > 0) {
            r = sbuf_add(out, " ", 1);
            len++;
        }
        if (r == 0)
            r = sbuf_add(out, p, n);
        len += n;
        p += n;
    }
    return r ? r : sbuf_adds(out, "\n");
}

int opts_help(const struct opts_spec *spec, struct sbuf *out)
{
    char buf[128];
    size_t col = 0;
    int r = 0;

    for (const struct opts_def *d = spec->defs; d->name; d++) {
        size_t n = entry(d, buf, sizeof(buf)) + 2;

        if (!(d->flags & OPTS_HIDDEN) && n > col && n <= HELP_MAX_COL)
            col = n;
    }
    if (spec->usage)
        r = sbuf_adds(out, spec->usage);
    for (const struct opts_def *d = spec->defs; d->name && r == 0; d++) {
        size_t n;

        if (d->flags & OPTS_HIDDEN)
            continue;
        n = entry(d, buf, sizeof(buf));
        r = sbuf_add(out, buf, n);
        if (r == 0 && n + 2 > col) {
            r = sbuf_adds(out, "\n");
            n = 0;
        }
        if (r == 0)
            r = indent(out, col - n);
        if (r == 0)
            r = wrap(out, d->help, col);
    }
    if (r == 0 && spec->footer)
        r = sbuf_adds(out, spec->footer);
    return r;
}

void opts_print_help(const struct opts_spec *spec, FILE *f)
{
    struct sbuf b;

    sbuf_init(&b, HELP_MAX);
    if (opts_help(spec, &b) == 0)
        fputs(sbuf_str(&b), f);
    sbuf_done(&b);
}
