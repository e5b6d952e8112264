/* Unit tests of what the node simulator's kubelet API serves (src/nodesim/logs.c, shell.c): the
 * deterministic container logs and their selection (tail, since, previous), and the built-in
 * commands of the tiny shell, with and without a terminal. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <string.h>

#include "common/strutil.h"
#include "nodesim/nodesim.h"
#include "nodesim/shell.h"

/* ---- logs ---------------------------------------------------------------------------------- */

static const struct ns_log_src running = {.ns = "ns",
                                          .pod = "web",
                                          .container = "app",
                                          .image = "nginx:1.25",
                                          .started = 1000,
                                          .finished = -1,
                                          .restart = 0};

static void test_log_lines(void **state)
{
    struct ns_log_src done = running;
    char buf[256];

    (void)state;
    assert_int_equal(ns_log_count(&running, 999), 0);
    assert_int_equal(ns_log_count(&running, 1000), 1);
    assert_int_equal(ns_log_count(&running, 1005), 6);
    assert_int_equal(ns_log_line(&running, 0, false, buf, sizeof(buf)), 75);
    assert_string_equal(
        buf, "nodesim: container app of pod ns/web started (image nginx:1.25, restart 0)\n");
    ns_log_line(&running, 7, false, buf, sizeof(buf));
    assert_string_equal(buf, "nodesim: app is running, tick 7\n");
    ns_log_line(&running, 7, true, buf, sizeof(buf));
    assert_string_equal(buf, "1970-01-01T00:16:47.000000000Z nodesim: app is running, tick 7\n");
    assert_int_equal(ns_log_line(&running, 7, true, buf, 20), -ENOSPC);
    /* finished at 1004: ticks 1..3, then the exit line at 1004, whatever the time now */
    done.finished = 1004;
    done.exit_code = 3;
    assert_int_equal(ns_log_count(&done, 5000), 5);
    assert_int_equal(ns_log_time(&done, 3), 1003);
    assert_int_equal(ns_log_time(&done, 4), 1004);
    ns_log_line(&done, 4, false, buf, sizeof(buf));
    assert_string_equal(buf, "nodesim: container app exited with code 3\n");
    /* one that ended in its first second: start line and exit line */
    done.finished = 1000;
    assert_int_equal(ns_log_count(&done, 5000), 2);
}

static void test_log_first(void **state)
{
    static const struct {
        int64_t finished, now, since, tail, want;
    } cases[] = {
        {-1, 1010, -1, -1, 0},   /* everything */
        {-1, 1010, -1, 3, 8},    /* 11 lines, the last 3 */
        {-1, 1010, -1, 0, 11},   /* none */
        {-1, 1010, -1, 50, 0},   /* more than there are */
        {-1, 1010, 1007, -1, 7}, /* lines at 1007.. */
        {-1, 1010, 500, -1, 0},    {-1, 1010, 2000, -1, 11},
        {-1, 1010, 1004, 2, 9},    /* since, then tail */
        {1005, 9999, 1004, -1, 4}, /* ticks 1..4, exit at 1005: from tick 4 */
        {1005, 9999, 1005, -1, 5}, /* only the exit line */
        {1005, 9999, 1006, -1, 6}, /* nothing */
        {1005, 9999, -1, 1, 5},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ns_log_src s = running;

        s.finished = cases[i].finished;
        assert_int_equal(ns_log_first(&s, cases[i].now, cases[i].since, cases[i].tail),
                         cases[i].want);
    }
}

static void test_log_source(void **state)
{
    json_t *pod = json_loads(
        "{\"metadata\":{\"name\":\"web\",\"namespace\":\"ns\"},"
        "\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":\"nginx\"},{\"name\":\"side\","
        "\"image\":\"envoy\"}],\"initContainers\":[{\"name\":\"init\",\"image\":\"busybox\"}]},"
        "\"status\":{\"containerStatuses\":["
        "{\"name\":\"app\",\"restartCount\":2,\"state\":{\"running\":{\"startedAt\":"
        "\"1970-01-01T00:16:40Z\"}},\"lastState\":{\"terminated\":{\"exitCode\":1,\"startedAt\":"
        "\"1970-01-01T00:10:00Z\",\"finishedAt\":\"1970-01-01T00:10:30Z\"}}},"
        "{\"name\":\"side\",\"restartCount\":0,\"state\":{\"waiting\":{\"reason\":"
        "\"CrashLoopBackOff\"}},\"lastState\":{}}],"
        "\"initContainerStatuses\":[{\"name\":\"init\",\"restartCount\":0,\"state\":{"
        "\"terminated\":"
        "{\"exitCode\":0,\"startedAt\":\"1970-01-01T00:00:10Z\",\"finishedAt\":"
        "\"1970-01-01T00:00:12Z\"}}}]}}",
        0, NULL);
    struct ns_log_src s;
    const char *reason;

    (void)state;
    assert_non_null(pod);
    assert_int_equal(ns_log_source(pod, "app", false, &s, &reason), 0);
    assert_int_equal(s.started, 1000);
    assert_int_equal(s.finished, -1);
    assert_int_equal(s.restart, 2);
    assert_string_equal(s.image, "nginx");
    assert_int_equal(ns_log_source(pod, "app", true, &s, &reason), 0);
    assert_int_equal(s.started, 600);
    assert_int_equal(s.finished, 630);
    assert_int_equal(s.exit_code, 1);
    assert_int_equal(s.restart, 1);
    assert_int_equal(ns_log_source(pod, "side", false, &s, &reason), -EAGAIN);
    assert_string_equal(reason, "CrashLoopBackOff");
    assert_int_equal(ns_log_source(pod, "side", true, &s, &reason), -ENOENT);
    assert_int_equal(ns_log_source(pod, "init", false, &s, &reason), 0);
    assert_int_equal(s.finished, 12);
    assert_int_equal(ns_log_source(pod, "nope", false, &s, &reason), -ENOENT);
    json_decref(pod);
}

/* ---- shell --------------------------------------------------------------------------------- */

struct run {
    struct sbuf out, err;
    int code;
    bool exited;
    uint64_t sleep_ms;
    int sleeps;
};

static void r_out(void *d, int fd, const char *buf, size_t len)
{
    struct run *r = d;

    sbuf_add(fd == 2 ? &r->err : &r->out, buf, len);
}

static void r_sleep(void *d, uint64_t ms)
{
    struct run *r = d;

    r->sleep_ms = ms;
    r->sleeps++;
}

static void r_exit(void *d, int code)
{
    struct run *r = d;

    assert_false(r->exited);
    r->exited = true;
    r->code = code;
}

static const char *const env_vars[] = {"HOSTNAME=web", "GREETING=hi there", "EMPTY="};

/* Runs argv with input (NULL: no stdin) and optional terminal; wakes sleeps at once. */
static struct ns_shell *start(struct run *r, const char *const *argv, size_t argc, bool tty,
                              bool in)
{
    struct ns_shell_env env = {
        .hostname = "web", .vars = env_vars, .nvars = 3, .tty = tty, .has_stdin = in};
    struct ns_shell_io io = {.out = r_out, .sleep = r_sleep, .exit = r_exit, .data = r};
    struct ns_shell *sh = NULL;

    memset(r, 0, sizeof(*r));
    sbuf_init(&r->out, 1 << 20);
    sbuf_init(&r->err, 1 << 20);
    assert_int_equal(ns_shell_new(argv, argc, &env, &io, &sh), 0);
    ns_shell_start(sh);
    return sh;
}

static void done(struct run *r, struct ns_shell *sh)
{
    ns_shell_free(sh);
    sbuf_done(&r->out);
    sbuf_done(&r->err);
}

static void test_shell_commands(void **state)
{
    static const struct {
        const char *argv[4];
        size_t argc;
        const char *out, *err;
        int code;
    } cases[] = {
        {{"echo", "a", "b c"}, 3, "a b c\n", "", 0},
        {{"/bin/echo", "-n", "x"}, 3, "x", "", 0},
        {{"hostname"}, 1, "web\n", "", 0},
        {{"printenv", "GREETING"}, 2, "hi there\n", "", 0},
        {{"printenv", "NOPE"}, 2, "", "", 1},
        {{"env"}, 1, "HOSTNAME=web\nGREETING=hi there\nEMPTY=\n", "", 0},
        {{"true"}, 1, "", "", 0},
        {{"false"}, 1, "", "", 1},
        {{"cat", "/etc/passwd"}, 2, "", "cat: /etc/passwd: No such file or directory\n", 1},
        {{"sleep", "soon"}, 2, "", "sleep: invalid time interval 'soon'\n", 1},
        {{"ls"},
         1,
         "",
         "OCI runtime exec failed: exec failed: unable to start container process: exec: \"ls\": "
         "executable file not found in $PATH: unknown\n",
         127},
        {{"sh", "-c", "echo $GREETING; exit 4"}, 3, "hi there\n", "", 4},
        {{"sh", "-c", "false; echo $?; true && echo and || echo or"}, 3, "1\nand\n", "", 0},
        {{"sh", "-c", "false && echo no; echo \"${GREETING}-x\" 'lit $X' \\$X"},
         3,
         "hi there-x lit $X $X\n",
         "",
         0},
        {{"sh", "-c", "echo to-err >&2; echo both 2>&1; nope"},
         3,
         "both\n",
         "to-err\nsh: 1: nope: not found\n",
         127},
        {{"sh", "-c", "# a comment\necho a # trailing\nexit 300"}, 3, "a\n", "", 44},
        {{"sh", "-c", "echo a | cat"}, 3, "", "sh: unsupported syntax near '|'\n", 2},
        {{"sh", "-c", "echo 'open"}, 3, "", "sh: unterminated quoted string\n", 2},
        {{"sh", "-c", "&& echo"}, 3, "", "sh: syntax error near '&&'\n", 2},
        {{"sh", "-c"}, 2, "", "sh: -c: option requires an argument\n", 2},
        {{"sh", "-c", "exit x"}, 3, "", "sh: exit: Illegal number: x\n", 2},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct run r;
        struct ns_shell *sh = start(&r, cases[i].argv, cases[i].argc, false, false);

        assert_true(r.exited);
        assert_int_equal(r.code, cases[i].code);
        assert_string_equal(sbuf_str(&r.out), cases[i].out);
        assert_string_equal(sbuf_str(&r.err), cases[i].err);
        done(&r, sh);
    }
}

static void test_shell_cat_and_sleep(void **state)
{
    static const char *const cat[] = {"cat"};
    static const char *const sleep_then[] = {"sh", "-c", "sleep 0.25; echo woke"};
    static const char *const sh[] = {"sh"};
    struct run r;
    struct ns_shell *s;
    char bin[256];

    (void)state;
    for (int i = 0; i < 256; i++)
        bin[i] = (char)i;
    /* cat copies stdin, binary included, until its end. */
    s = start(&r, cat, 1, false, true);
    assert_false(r.exited);
    ns_shell_input(s, bin, sizeof(bin));
    ns_shell_input(s, "tail", 4);
    assert_false(r.exited);
    ns_shell_input(s, "", 0);
    assert_true(r.exited);
    assert_int_equal(r.code, 0);
    assert_int_equal(sbuf_len(&r.out), 260);
    assert_memory_equal(sbuf_str(&r.out), bin, 256);
    done(&r, s);
    /* without stdin, cat ends at once */
    s = start(&r, cat, 1, false, false);
    assert_true(r.exited);
    done(&r, s);
    /* sleep asks to be woken, then the script goes on */
    s = start(&r, sleep_then, 3, false, false);
    assert_false(r.exited);
    assert_int_equal(r.sleep_ms, 250);
    ns_shell_wake(s);
    assert_true(r.exited);
    assert_string_equal(sbuf_str(&r.out), "woke\n");
    done(&r, s);
    /* a shell reading commands from stdin, split anywhere; input queued while it sleeps */
    s = start(&r, sh, 1, false, true);
    ns_shell_input(s, "echo o", 6);
    ns_shell_input(s, "ne\nsleep 1\necho two\n", 20);
    assert_string_equal(sbuf_str(&r.out), "one\n");
    assert_int_equal(r.sleeps, 1);
    ns_shell_wake(s);
    assert_string_equal(sbuf_str(&r.out), "one\ntwo\n");
    assert_false(r.exited);
    ns_shell_input(s, "exit 9", 6);
    ns_shell_input(s, "", 0); /* a last line without newline still runs */
    assert_true(r.exited);
    assert_int_equal(r.code, 9);
    done(&r, s);
}

static void test_shell_tty(void **state)
{
    static const char *const sh[] = {"sh"};
    static const char *const cat[] = {"cat"};
    struct run r;
    struct ns_shell *s;

    (void)state;
    /* Prompt, echo, CR to LF, erase, LF out as CR LF, stderr on the terminal. */
    s = start(&r, sh, 1, true, true);
    assert_string_equal(sbuf_str(&r.out), "# ");
    ns_shell_input(s, "echo hix\x7f\r", 10);
    ns_shell_input(s, "echo err >&2\r", 13);
    ns_shell_input(s, "exit 3\r", 7);
    assert_true(r.exited);
    assert_int_equal(r.code, 3);
    assert_string_equal(sbuf_str(&r.out),
                        "# echo hix\b \b\r\nhi\r\n# echo err >&2\r\nerr\r\n# exit 3\r\n");
    assert_string_equal(sbuf_str(&r.err), "");
    done(&r, s);
    /* ^C interrupts */
    s = start(&r, sh, 1, true, true);
    ns_shell_input(s, "sleep 100\r", 10);
    ns_shell_input(s, "\x03", 1);
    assert_true(r.exited);
    assert_int_equal(r.code, 130);
    done(&r, s);
    /* ^D on an empty line ends cat's input; lines reach cat when complete */
    s = start(&r, cat, 1, true, true);
    ns_shell_input(s, "ab", 2);
    assert_string_equal(sbuf_str(&r.out), "ab"); /* the echo only */
    ns_shell_input(s, "\r", 1);
    assert_string_equal(sbuf_str(&r.out), "ab\r\nab\r\n");
    ns_shell_input(s, "\x04", 1);
    assert_true(r.exited);
    assert_int_equal(r.code, 0);
    done(&r, s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_lines),           cmocka_unit_test(test_log_first),
        cmocka_unit_test(test_log_source),          cmocka_unit_test(test_shell_commands),
        cmocka_unit_test(test_shell_cat_and_sleep), cmocka_unit_test(test_shell_tty),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
