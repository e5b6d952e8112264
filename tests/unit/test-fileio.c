#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/xalloc.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/cliqo-test-fileio-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    static const char *const names[] = {"empty", "five", "six", "fifo"};
    char p[128];

    (void)state;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
        unlink(p);
    }
    return rmdir(dir);
}

static void put(const char *name, const char *text)
{
    char p[128];
    FILE *f;

    snprintf(p, sizeof(p), "%s/%s", dir, name);
    f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_read(void **state)
{
    static const struct {
        const char *name; /* below dir; NULL: path as is */
        const char *path;
        size_t max;
        unsigned flags;
        int r;
        const char *want; /* NULL: not compared (length want_len) */
        size_t want_len;
    } cases[] = {
        {"empty", NULL, 5, 0, 0, "", 0},
        {"five", NULL, 5, 0, 0, "12345", 5},
        {"five", NULL, 5, FILE_READ_REGULAR, 0, "12345", 5},
        {"five", NULL, 4, 0, -E2BIG, NULL, 0},
        {"six", NULL, 5, FILE_READ_REGULAR, -E2BIG, NULL, 0},
        {"missing", NULL, 5, 0, -ENOENT, NULL, 0},
        {"", NULL, 5, 0, -EISDIR, NULL, 0},
        {"", NULL, 5, FILE_READ_REGULAR, -EISDIR, NULL, 0},
        /* Not regular: refused only when asked (a FIFO without blocking). */
        {"fifo", NULL, 5, FILE_READ_REGULAR, -EINVAL, NULL, 0},
        {NULL, "/dev/null", 5, FILE_READ_REGULAR, -EINVAL, NULL, 0},
        {NULL, "/dev/null", 5, 0, 0, "", 0},
        /* Size unknown: read in growing steps, up to max. */
        {NULL, "/dev/zero", 10000, 0, -E2BIG, NULL, 0},
    };
    char p[128];

    (void)state;
    put("empty", "");
    put("five", "12345");
    put("six", "123456");
    snprintf(p, sizeof(p), "%s/fifo", dir);
    assert_int_equal(mkfifo(p, 0600), 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *buf = (char *)"untouched";
        size_t len = 99;
        int r;

        if (cases[i].name)
            snprintf(p, sizeof(p), "%s/%s", dir, cases[i].name);
        else
            snprintf(p, sizeof(p), "%s", cases[i].path);
        r = file_read(p, cases[i].max, cases[i].flags, &buf, &len);
        if (r != cases[i].r)
            fail_msg("%s (max %zu, flags %u): %d, want %d", p, cases[i].max, cases[i].flags, r,
                     cases[i].r);
        if (r < 0) {
            assert_string_equal(buf, "untouched");
            assert_int_equal(len, 99);
            continue;
        }
        assert_int_equal(len, cases[i].want_len);
        assert_string_equal(buf, cases[i].want);
        x_free(buf);
    }
}

static void test_args_and_oom(void **state)
{
    char p[128], *buf = NULL;

    (void)state;
    put("five", "12345");
    snprintf(p, sizeof(p), "%s/five", dir);
    assert_int_equal(file_read(NULL, 5, 0, &buf, NULL), -EINVAL);
    assert_int_equal(file_read(p, 5, 0, NULL, NULL), -EINVAL);
    assert_int_equal(file_read(p, SIZE_MAX, 0, &buf, NULL), -EINVAL);
    /* The length is optional. */
    assert_int_equal(file_read(p, 5, 0, &buf, NULL), 0);
    assert_string_equal(buf, "12345");
    x_free(buf);
    buf = NULL;
    xalloc_fail_after(0);
    assert_int_equal(file_read(p, 5, 0, &buf, NULL), -ENOMEM);
    assert_int_equal(file_read("/dev/zero", 100000, 0, &buf, NULL), -ENOMEM);
    xalloc_fail_after(1);
    assert_int_equal(file_read("/dev/zero", 100000, 0, &buf, NULL), -ENOMEM);
    xalloc_fail_after(-1);
    assert_null(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read),
        cmocka_unit_test(test_args_and_oom),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
