/* Unit tests of src/common/opts.c: declarative command-line options (every kind, every error, the
 * `=` forms, `--`, positional arguments and the help). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/opts.h"

/* Where one parse puts its values. */
struct vals {
    bool flag, b, help;
    const char *s, *ne, *choice, *custom;
    unsigned u;
    uint16_t u16;
    uint64_t dur, dur_s;
    enum log_level level;
    const char *items[2];
    size_t nitems;
    const char *args[2];
    int nargs;
};

static int even_len(const struct opts_def *o, const char *value, char *err, size_t errlen)
{
    if (strlen(value) % 2)
        return opts_fail(o, err, errlen, "'%s' has an odd length", value);
    *(const char **)o->dest = value;
    return 0;
}

static const char *const colours[] = {"red", "green", "blue", NULL};

/* The table under test writes into these; run() resets them. */
static struct vals v;
static struct opts_list list = {.items = v.items, .max = 2};

/* clang-format off */
static const struct opts_def defs[] = {
    {.name = "flag", .short_name = 'f', .kind = OPTS_FLAG, .help = "a flag", .dest = &v.flag},
    {.name = "bool", .kind = OPTS_BOOL, .help = "a boolean", .dest = &v.b},
    {.name = "str", .short_name = 's', .kind = OPTS_STRING, .arg = "S", .help = "a string",
     .dest = &v.s},
    {.name = "nonempty", .kind = OPTS_STRING, .flags = OPTS_NONEMPTY, .arg = "S",
     .help = "a string that is not empty", .dest = &v.ne},
    {.name = "colour", .kind = OPTS_CHOICE, .arg = "C", .help = "red, green or blue",
     .dest = &v.choice, .choices = colours},
    {.name = "count", .kind = OPTS_UINT, .arg = "N", .help = "1 to 10", .dest = &v.u,
     .size = sizeof(v.u), .min = 1, .max = 10},
    {.name = "port", .kind = OPTS_UINT, .arg = "P", .help = "a port", .dest = &v.u16,
     .size = sizeof(v.u16)},
    {.name = "wait", .kind = OPTS_DURATION, .arg = "D", .help = "a duration", .dest = &v.dur,
     .min = 1},
    {.name = "ttl", .kind = OPTS_DURATION, .flags = OPTS_SECONDS, .arg = "D",
     .help = "in seconds too", .dest = &v.dur_s, .min = 1000, .max = 3600000},
    {.name = "item", .kind = OPTS_LIST, .arg = "I", .help = "repeatable", .dest = &list},
    {.name = "even", .kind = OPTS_CUSTOM, .arg = "E", .help = "an even length", .dest = &v.custom,
     .fn = even_len},
    {.name = "log-level", .kind = OPTS_CUSTOM, .arg = "L", .help = "a log level",
     .dest = &v.level, .fn = opts_log_level},
    {.name = "secret", .kind = OPTS_FLAG, .flags = OPTS_HIDDEN, .dest = &v.flag},
    {.name = "no-flag", .kind = OPTS_FLAG, .flags = OPTS_CLEAR, .help = "not the flag",
     .dest = &v.flag},
    {.name = "help", .short_name = 'h', .kind = OPTS_FLAG, .flags = OPTS_STOP,
     .help = "this help", .dest = &v.help},
    {0},
};
/* clang-format on */

/* Parses args (NULL-terminated) with defs; the values are left in v. */
static int run(const char *const *args, char *err, size_t errlen)
{
    const struct opts_spec spec = {.defs = defs, .noun = "flag", .args = v.args, .max_args = 2};
    char *argv[16] = {"prog"};
    int argc = 1, r;

    memset(&v, 0, sizeof(v));
    list.n = 0;
    for (; args[argc - 1]; argc++)
        argv[argc] = (char *)args[argc - 1];
    r = opts_parse(&spec, argc, argv, err, errlen);
    v.nitems = list.n;
    v.nargs = r;
    return r;
}

static void check_str(size_t i, const char *what, const char *got, const char *want)
{
    if ((got == NULL) != (want == NULL) || (got && strcmp(got, want) != 0))
        fail_msg("case %zu: %s is '%s', want '%s'", i, what, got ? got : "(null)",
                 want ? want : "(null)");
}

static void test_parse(void **state)
{
    static const struct {
        const char *args[8];
        struct vals want;
    } cases[] = {
        {{NULL}, {.nargs = 0}},
        {{"--flag", "-f", NULL}, {.flag = true}},
        {{"--bool", NULL}, {.b = true}},
        {{"--bool=true", NULL}, {.b = true}},
        {{"--bool=true", "--bool=false", NULL}, {.b = false}},
        {{"--str", "a", NULL}, {.s = "a"}},
        {{"--str=a=b", NULL}, {.s = "a=b"}},
        {{"--str=", NULL}, {.s = ""}},
        {{"-s", "x", NULL}, {.s = "x"}},
        {{"-s=x", NULL}, {.s = "x"}},
        {{"--str", "--flag", NULL}, {.s = "--flag"}}, /* a separate value is taken as it is */
        {{"--str", "a", "--str", "b", NULL}, {.s = "b"}},
        {{"--nonempty", "x", NULL}, {.ne = "x"}},
        {{"--colour", "green", NULL}, {.choice = "green"}},
        {{"--count=10", "--port", "65535", NULL}, {.u = 10, .u16 = 65535}},
        {{"--wait", "500ms", "--ttl", "30", NULL}, {.dur = 500, .dur_s = 30000}},
        {{"--wait=2h", "--ttl=1h", NULL}, {.dur = 7200000, .dur_s = 3600000}},
        {{"--item", "a", "--item=b", NULL}, {.items = {"a", "b"}, .nitems = 2}},
        {{"--even", "ab", NULL}, {.custom = "ab"}},
        {{"--log-level", "warn", NULL}, {.level = LOG_LEVEL_WARN}},
        {{"--secret", NULL}, {.flag = true}},
        {{"--flag", "--no-flag", NULL}, {.flag = false}},
        {{"--no-flag", "--flag", NULL}, {.flag = true}},
        {{"one", "--flag", "two", NULL}, {.flag = true, .args = {"one", "two"}, .nargs = 2}},
        {{"-", NULL}, {.args = {"-"}, .nargs = 1}},
        {{"--", "--flag", "-s", NULL}, {.args = {"--flag", "-s"}, .nargs = 2}},
        {{"--help", "--bogus", NULL}, {.help = true}}, /* OPTS_STOP: nothing after it is read */
        {{"--flag", "-h", NULL}, {.flag = true, .help = true}},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct vals *w = &cases[i].want;
        char err[256];
        int r = run(cases[i].args, err, sizeof(err));

        if (r < 0)
            fail_msg("case %zu: %s", i, err);
        assert_string_equal(err, "");
        if (v.flag != w->flag || v.b != w->b || v.help != w->help || v.u != w->u ||
            v.u16 != w->u16 || v.dur != w->dur || v.dur_s != w->dur_s || v.level != w->level ||
            v.nitems != w->nitems || v.nargs != w->nargs)
            fail_msg("case %zu: flag %d bool %d help %d u %u u16 %u dur %llu dur_s %llu level %d "
                     "items %zu args %d",
                     i, v.flag, v.b, v.help, v.u, v.u16, (unsigned long long)v.dur,
                     (unsigned long long)v.dur_s, v.level, v.nitems, v.nargs);
        check_str(i, "str", v.s, w->s);
        check_str(i, "nonempty", v.ne, w->ne);
        check_str(i, "choice", v.choice, w->choice);
        check_str(i, "custom", v.custom, w->custom);
        for (size_t k = 0; k < 2; k++) {
            check_str(i, "item", k < v.nitems ? v.items[k] : NULL, w->items[k]);
            check_str(i, "arg", (int)k < v.nargs ? v.args[k] : NULL, w->args[k]);
        }
    }
}

static void test_errors(void **state)
{
    static const struct {
        const char *args[8];
        const char *msg;
    } cases[] = {
        {{"--bogus", NULL}, "unknown flag '--bogus' (see --help)"},
        {{"--bogus=1", NULL}, "unknown flag '--bogus=1' (see --help)"},
        {{"--fla", NULL}, "unknown flag '--fla' (see --help)"}, /* no abbreviations */
        {{"-x", NULL}, "unknown flag '-x' (see --help)"},
        {{"-fs", NULL}, "unknown flag '-fs' (see --help)"}, /* no bundling */
        {{"---flag", NULL}, "unknown flag '---flag' (see --help)"},
        {{"--str", NULL}, "--str: missing value (the flag needs a value: --str S)"},
        {{"-s", NULL}, "-s: missing value (the flag needs a value: -s S)"},
        {{"--flag=1", NULL}, "--flag: takes no value, not '1'"},
        {{"--flag=", NULL}, "--flag: takes no value, not ''"},
        {{"--bool", "false", "x", "y", NULL}, "unexpected argument 'y' (see --help)"},
        {{"--bool=yes", NULL}, "--bool: expected true or false, not 'yes'"},
        {{"--nonempty=", NULL}, "--nonempty=: empty value"},
        {{"--nonempty", "", NULL}, "--nonempty '': empty value"},
        {{"--colour", "Red", NULL}, "--colour: 'Red' is not red, green or blue"},
        {{"--count", "0", NULL},
         "--count: invalid number '0' (--count must be an integer from 1 to 10)"},
        {{"--count", "11", NULL},
         "--count: invalid number '11' (--count must be an integer from 1 to 10)"},
        {{"--count", "-1", NULL},
         "--count: invalid number '-1' (--count must be an integer from 1 to 10)"},
        {{"--count", "1x", NULL},
         "--count: invalid number '1x' (--count must be an integer from 1 to 10)"},
        {{"--port", "65536", NULL},
         "--port: invalid number '65536' (--port must be an integer from 0 to 65535)"},
        {{"--wait", "0s", NULL},
         "--wait: invalid duration '0s' (not a duration of at least 1ms, e.g. 500ms, 15s, 2m)"},
        {{"--wait", "15", NULL},
         "--wait: invalid duration '15' (not a duration of at least 1ms, e.g. 500ms, 15s, 2m)"},
        {{"--ttl", "2h", NULL},
         "--ttl: invalid duration '2h' (not a duration from 1s to 1h, e.g. 500ms, 15s, 2m)"},
        {{"--ttl", "1.5s", NULL},
         "--ttl: invalid duration '1.5s' (not a duration from 1s to 1h, e.g. 500ms, 15s, 2m)"},
        {{"--item", "a", "--item", "b", "--item", "c"}, "--item: at most 2 values"},
        {{"--even", "abc", NULL}, "--even: 'abc' has an odd length"},
        {{"--colour", "a\nb", NULL}, "--colour: 'a b' is not red, green or blue"},
        {{"--log-level", "loud", NULL},
         "--log-level: expected debug, info, warn or error, not 'loud'"},
        {{"a", "b", "c", NULL}, "unexpected argument 'c' (see --help)"},
        {{"--", "a", "b", "--", NULL}, "unexpected argument '--' (see --help)"},
        {{"--bogus", "--help", NULL}, "unknown flag '--bogus' (see --help)"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char err[256];
        int r = run(cases[i].args, err, sizeof(err));

        if (r != -EINVAL)
            fail_msg("case %zu: returned %d, want -EINVAL", i, r);
        if (strcmp(err, cases[i].msg) != 0)
            fail_msg("case %zu: got '%s', want '%s'", i, err, cases[i].msg);
    }
    /* No buffer: the error code alone. */
    assert_int_equal(run((const char *[]){"--bogus", NULL}, NULL, 0), -EINVAL);
}

/* The default noun, and a spec that takes no positional arguments. */
static void test_noun(void **state)
{
    bool f = false;
    const struct opts_def one[] = {{.name = "f", .kind = OPTS_FLAG, .dest = &f}, {0}};
    const struct opts_spec spec = {.defs = one};
    char *argv[] = {"prog", "--g", "x", NULL};
    char err[128];

    (void)state;
    assert_int_equal(opts_parse(&spec, 2, argv, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "unknown option '--g' (see --help)");
    argv[1] = "--f";
    assert_int_equal(opts_parse(&spec, 3, argv, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "unexpected argument 'x' (see --help)");
    assert_int_equal(opts_parse(&spec, 2, argv, err, sizeof(err)), 0);
    assert_true(f);
}

static void test_help(void **state)
{
    /* clang-format off */
    const struct opts_def wrapped[] = {
        {.name = "a", .kind = OPTS_FLAG, .help = "short"},
        {.name = "a-very-long-option-name", .kind = OPTS_STRING, .arg = "VALUE",
         .help = "stands on a line of its own"},
        {.name = "words", .short_name = 'w', .kind = OPTS_STRING,
         .help = "one two three four five six seven eight nine ten eleven twelve thirteen "
                 "fourteen fifteen sixteen seventeen eighteen nineteen twenty\nnew line"},
        {0},
    };
    /* clang-format on */
    const struct opts_spec spec = {
        .defs = defs, .usage = "Usage: prog [flags]\n\nFlags:\n", .footer = "\nThe end.\n"};
    const struct opts_spec spec2 = {.defs = wrapped};
    struct sbuf b;

    (void)state;
    sbuf_init(&b, 1 << 16);
    assert_int_equal(opts_help(&spec, &b), 0);
    assert_string_equal(sbuf_str(&b), "Usage: prog [flags]\n"
                                      "\n"
                                      "Flags:\n"
                                      "  -f, --flag     a flag\n"
                                      "  --bool[=BOOL]  a boolean\n"
                                      "  -s, --str S    a string\n"
                                      "  --nonempty S   a string that is not empty\n"
                                      "  --colour C     red, green or blue\n"
                                      "  --count N      1 to 10\n"
                                      "  --port P       a port\n"
                                      "  --wait D       a duration\n"
                                      "  --ttl D        in seconds too\n"
                                      "  --item I       repeatable\n"
                                      "  --even E       an even length\n"
                                      "  --log-level L  a log level\n"
                                      "  --no-flag      not the flag\n"
                                      "  -h, --help     this help\n"
                                      "\n"
                                      "The end.\n");
    sbuf_done(&b);
    sbuf_init(&b, 1 << 16);
    assert_int_equal(opts_help(&spec2, &b), 0);
    assert_string_equal(
        sbuf_str(&b),
        "  --a                short\n"
        "  --a-very-long-option-name VALUE\n"
        "                     stands on a line of its own\n"
        "  -w, --words VALUE  one two three four five six seven eight nine ten eleven twelve "
        "thirteen\n"
        "                     fourteen fifteen sixteen seventeen eighteen nineteen twenty\n"
        "                     new line\n");
    sbuf_done(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_noun),
        cmocka_unit_test(test_help),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
