/* opts: declarative command-line options. One table gives the parser and the --help text.
 *
 * A program describes each option once (struct opts_def: its long name, an optional short letter,
 * its kind, the name of its argument and its help text, and where the value goes) and hands the
 * table, with the usage text around it, to opts_parse() and opts_help() (struct opts_spec).
 *
 * Syntax: `--name VALUE`, `--name=VALUE`, `-x VALUE`, `-x=VALUE`; a flag takes no value; a boolean
 * is `--name` (true) or `--name=true|false`. `--` ends the options: what follows is positional, as
 * is a lone `-` and every word that does not start with '-'. Options and positional arguments may
 * be mixed. Long names are matched whole (no abbreviations).
 *
 * Errors, one line in err, in one form (NOUN is the spec's word for its options):
 *   unknown NOUN '--bogus' (see --help)
 *   --name: missing value (the NOUN needs a value: --name ARG)
 *   --name: takes no value, not 'x'
 *   --name=: empty value                        (OPTS_NONEMPTY; `--name ''` with a separate value)
 *   --name: REASON                              (a bad value: the kind's reason or the callback's)
 *   unexpected argument 'x' (see --help)        (more positional arguments than the spec allows)
 * A custom callback writes its own reason with opts_fail(), which prefixes "--name: ". Line breaks
 * in the message (from a value) are turned into spaces.
 *
 * Ownership: strings stored are borrowed from argv; the table and the spec are the caller's and
 * only read. Values are written as options are met, so on failure some may have been stored. */
#ifndef CLIQO_COMMON_OPTS_H
#define CLIQO_COMMON_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/strutil.h"

enum opts_kind {
    OPTS_FLAG,     /* no value: *(bool *)dest = true (false with OPTS_CLEAR) */
    OPTS_BOOL,     /* --name or --name=true|false: *(bool *)dest */
    OPTS_STRING,   /* *(const char **)dest = the value */
    OPTS_CHOICE,   /* one of choices (NULL-terminated): *(const char **)dest = the value */
    OPTS_UINT,     /* a decimal integer from min to max (max 0: no bound), into the unsigned or int
                      of `size` bytes (1, 2, 4 or 8) at dest */
    OPTS_DURATION, /* dur_parse() from min to max ms (max 0: no bound): *(uint64_t *)dest */
    OPTS_LIST,     /* repeatable: appended to *(struct opts_list *)dest, at most its max */
    OPTS_CUSTOM,   /* fn(def, value, err, errlen) checks and stores the value (dest is its own) */
};

/* Flags of struct opts_def. */
#define OPTS_HIDDEN   0x1u  /* parsed, not shown by opts_help() */
#define OPTS_NONEMPTY 0x2u  /* STRING, LIST: an empty value is an error */
#define OPTS_SECONDS  0x4u  /* DURATION: a bare number is seconds (DUR_SECONDS) */
#define OPTS_STOP     0x8u  /* FLAG: parsing ends with it, successfully (a --help that wins) */
#define OPTS_CLEAR    0x10u /* FLAG: stores false (--no-wait beside --wait: the last one wins) */

/* The values of an OPTS_LIST option: items[0..n), at most max (the caller's array). */
struct opts_list {
    const char **items;
    size_t n, max;
};

struct opts_def {
    const char *name; /* long name without "--"; NULL ends the table */
    char short_name;  /* 'n' for -n; 0: none */
    enum opts_kind kind;
    unsigned flags;
    const char *arg;  /* the argument's name in the help ("PATH"; default "VALUE", "BOOL") */
    const char *help; /* wrapped to the help's width; '\n' starts a new line */
    void *dest;
    size_t size;                /* UINT: sizeof(*dest) */
    uint64_t min, max;          /* UINT; DURATION in ms */
    const char *const *choices; /* CHOICE */
    int (*fn)(const struct opts_def *o, const char *value, char *err, size_t errlen);
};

struct opts_spec {
    const struct opts_def *defs;
    const char *noun;   /* what the messages call an option: "option" (NULL) or "flag" */
    const char *usage;  /* opts_help(): the text before the options, as is */
    const char *footer; /* opts_help(): the text after them, as is (may be NULL) */
    const char **args;  /* where positional arguments go (may be NULL when max_args is 0) */
    size_t max_args;    /* how many are allowed */
};

/* Parses argv[1..argc) against spec. Returns the number of positional arguments stored in
 * spec->args (in order), or -EINVAL with the reason in err (one line). An OPTS_STOP flag ends
 * parsing with success at once. */
int opts_parse(const struct opts_spec *spec, int argc, char **argv, char *err, size_t errlen);

/* Appends the help to out: spec->usage, one entry per option that is not hidden ("  -n, --name
 * ARG" then its help, aligned in one column and wrapped), then spec->footer. Returns 0 or a
 * negative errno of out. */
int opts_help(const struct opts_spec *spec, struct sbuf *out);
/* opts_help() written to f. */
void opts_print_help(const struct opts_spec *spec, FILE *f);

/* For callbacks: formats "--name: <message>" into err and returns -EINVAL. */
__attribute__((format(printf, 4, 5))) int opts_fail(const struct opts_def *o, char *err,
                                                    size_t errlen, const char *fmt, ...);

/* OPTS_CUSTOM callback: a log level (debug, info, warn, error) into *(enum log_level *)o->dest. */
int opts_log_level(const struct opts_def *o, const char *value, char *err, size_t errlen);

#endif
