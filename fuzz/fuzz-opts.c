/* libFuzzer harness for the command-line options (src/common/opts.c) and the durations they read
 * (src/common/duration.c).
 *
 * The input is split at NUL bytes into at most 15 arguments, parsed against a table with every kind
 * of option; invariants:
 *   - the result is -EINVAL with a message of one line, or the number of positional arguments
 *     (at most the spec's) with no message, and every stored string is one of the arguments or
 *     lies inside one (the value after '=');
 *   - the help renders;
 *   - a duration that parses and is written without a fraction parses back to itself.
 * A violated invariant aborts, which libFuzzer reports as a crash. The units are included so that
 * they are built with the fuzzer's instrumentation (see fuzz-quantity.c). */
#include "../src/common/duration.c"
#include "../src/common/opts.c"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 16

static void check(bool ok)
{
    if (!ok)
        abort();
}

static int custom(const struct opts_def *o, const char *value, char *err, size_t errlen)
{
    if (value[0] == 'x')
        return opts_fail(o, err, errlen, "'%s' starts with x", value);
    *(const char **)o->dest = value;
    return 0;
}

/* Is s NULL, or inside one of the arguments? */
static bool in_args(const char *s, char **argv, int argc)
{
    if (!s)
        return true;
    for (int i = 1; i < argc; i++)
        if (s >= argv[i] && s <= argv[i] + strlen(argv[i]))
            return true;
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const choices[] = {"a", "bb", NULL};
    char buf[4096], *argv[MAX_ARGS], err[256], fmt[32];
    const char *str = NULL, *choice = NULL, *cus = NULL, *items[3], *args[2];
    struct opts_list list = {.items = items, .max = 3};
    bool flag = false, b = false, help = false;
    unsigned u = 0;
    uint64_t dur = 0, ms, ms2;
    enum log_level level = LOG_LEVEL_INFO;
    int argc = 1, r;
    /* clang-format off */
    const struct opts_def defs[] = {
        {.name = "flag", .short_name = 'f', .kind = OPTS_FLAG, .dest = &flag},
        {.name = "bool", .kind = OPTS_BOOL, .dest = &b},
        {.name = "str", .short_name = 's', .kind = OPTS_STRING, .flags = OPTS_NONEMPTY,
         .dest = &str},
        {.name = "choice", .kind = OPTS_CHOICE, .dest = &choice, .choices = choices},
        {.name = "uint", .kind = OPTS_UINT, .dest = &u, .size = sizeof(u), .min = 2, .max = 7},
        {.name = "dur", .kind = OPTS_DURATION, .flags = OPTS_SECONDS, .dest = &dur, .min = 1},
        {.name = "list", .kind = OPTS_LIST, .dest = &list},
        {.name = "custom", .kind = OPTS_CUSTOM, .dest = &cus, .fn = custom},
        {.name = "log-level", .kind = OPTS_CUSTOM, .dest = &level, .fn = opts_log_level},
        {.name = "no-flag", .kind = OPTS_FLAG, .flags = OPTS_CLEAR | OPTS_HIDDEN, .dest = &flag},
        {.name = "help", .short_name = 'h', .kind = OPTS_FLAG, .flags = OPTS_STOP, .dest = &help},
        {0},
    };
    /* clang-format on */
    const struct opts_spec spec = {.defs = defs, .args = args, .max_args = 2};
    struct sbuf help_text;

    if (size >= sizeof(buf))
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    argv[0] = "prog";
    for (char *p = buf; argc < MAX_ARGS && p <= buf + size; p += strlen(p) + 1)
        argv[argc++] = p;
    r = opts_parse(&spec, argc, argv, err, sizeof(err));
    if (r < 0) {
        check(r == -EINVAL && err[0] != '\0' && !strchr(err, '\n'));
    } else {
        check(r <= 2 && err[0] == '\0');
        check(in_args(str, argv, argc) && in_args(choice, argv, argc) && in_args(cus, argv, argc));
        check(list.n <= list.max && u <= 7 && (u == 0 || u >= 2));
        for (int i = 0; i < r; i++)
            check(in_args(args[i], argv, argc));
        for (size_t i = 0; i < list.n; i++)
            check(in_args(items[i], argv, argc));
    }
    sbuf_init(&help_text, 1 << 16);
    check(opts_help(&spec, &help_text) == 0);
    sbuf_done(&help_text);
    if (dur_parse(argv[1], DUR_SECONDS, &ms) == 0 && (ms < 1000 || ms % 1000 == 0)) {
        dur_format(ms, fmt, sizeof(fmt));
        check(dur_parse(fmt, 0, &ms2) == 0 && ms2 == ms);
    }
    return 0;
}
