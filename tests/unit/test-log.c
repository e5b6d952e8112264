#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

/* Captures what the logger writes to stderr into buf. */
static void capture(char *buf, size_t size, void (*fn)(void))
{
    FILE *tmp = tmpfile();
    int saved = dup(STDERR_FILENO);
    size_t n;

    assert_non_null(tmp);
    fflush(stderr);
    dup2(fileno(tmp), STDERR_FILENO);
    fn();
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(tmp);
    n = fread(buf, 1, size - 1, tmp);
    buf[n] = '\0';
    fclose(tmp);
}

static void emit_quoted(void)
{
    log_info("test", "value=%s", "a \"quoted\"\nline");
}

static void emit_filtered(void)
{
    log_debug("test", "hidden");
}

static void emit_errno(void)
{
    int r = log_errno(-ENOENT, "test", "cannot open '%s'", "x.yaml");
    assert_int_equal(r, -ENOENT);
}

static void test_levels(void **state)
{
    (void)state;
    assert_int_equal(log_level_from_string("warn"), LOG_LEVEL_WARN);
    assert_int_equal(log_level_from_string("verbose"), _LOG_LEVEL_INVALID);
    assert_int_equal(log_level_from_string(NULL), _LOG_LEVEL_INVALID);
    assert_string_equal(log_level_to_string(LOG_LEVEL_ERROR), "error");
}

static void test_format_and_escape(void **state)
{
    char buf[4096];

    (void)state;
    log_set_level(LOG_LEVEL_INFO);
    capture(buf, sizeof(buf), emit_quoted);
    assert_non_null(strstr(buf, " level=info mod=test msg=\"value=a \\\"quoted\\\"\\nline\"\n"));
    assert_int_equal(strncmp(buf, "ts=", 3), 0);
    /* One line only: the embedded newline was escaped. */
    assert_ptr_equal(strchr(buf, '\n'), buf + strlen(buf) - 1);

    capture(buf, sizeof(buf), emit_filtered);
    assert_string_equal(buf, "");
    log_set_level(LOG_LEVEL_DEBUG);
    capture(buf, sizeof(buf), emit_filtered);
    assert_non_null(strstr(buf, "msg=\"hidden\""));

    capture(buf, sizeof(buf), emit_errno);
    assert_non_null(strstr(buf, "level=error"));
    assert_non_null(strstr(buf, "cannot open 'x.yaml': No such file or directory"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_levels),
        cmocka_unit_test(test_format_and_escape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
