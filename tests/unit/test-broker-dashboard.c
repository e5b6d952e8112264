#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "broker/dashboard.h"

/* The files of src/broker/dashboard/ and where they are served (dashboard.cmake, embed.cmake). */
static const struct {
    const char *path, *file, *type;
} files[] = {
    {"/", "index.html", "text/html; charset=utf-8"},
    {"/app.js", "app.js", "text/javascript; charset=utf-8"},
    {"/style.css", "style.css", "text/css; charset=utf-8"},
};
#define N_FILES (sizeof(files) / sizeof(files[0]))

/* A whole file from the source tree; fails the test if it cannot be read. */
static unsigned char *slurp(const char *name, size_t *ret_len)
{
    char path[4096];
    FILE *f;
    unsigned char *buf;
    long n;

    assert_true((size_t)snprintf(path, sizeof(path), "%s/%s", CLIQO_DASHBOARD_DIR, name) <
                sizeof(path));
    f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    buf = malloc((size_t)n);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *ret_len = (size_t)n;
    return buf;
}

/* Every file is found at its path with its type, its exact bytes (a NUL after them), and a strong
 * ETag that is the start of their SHA-256; the table holds these files and nothing else. */
static void test_files(void **state)
{
    (void)state;
    assert_int_equal(brk__assets_count, N_FILES);
    for (size_t i = 0; i < N_FILES; i++) {
        const struct brk_asset *a = brk_asset_find(files[i].path);
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int mdlen = 0;
        char want[2 + 32 + 1];
        size_t len;
        unsigned char *content = slurp(files[i].file, &len);

        assert_non_null(a);
        assert_ptr_equal(a, &brk__assets[i]);
        assert_string_equal(a->path, files[i].path);
        assert_string_equal(a->content_type, files[i].type);
        assert_int_equal(a->len, len);
        assert_memory_equal(a->data, content, len);
        assert_int_equal(a->data[len], 0);

        assert_int_equal(EVP_Digest(content, len, md, &mdlen, EVP_sha256(), NULL), 1);
        want[0] = '"';
        for (size_t k = 0; k < 16; k++)
            snprintf(want + 1 + 2 * k, 3, "%02x", md[k]);
        want[33] = '"';
        want[34] = '\0';
        assert_string_equal(a->etag, want);
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(a->etag, brk__assets[j].etag);
        free(content);
    }
}

static void test_unknown(void **state)
{
    static const char *const unknown[] = {
        "",
        "/index.html",
        "index.html",
        "app.js",
        "/app.js?x=1",
        "/APP.JS",
        "/app.js/",
        "//",
        "/style.css.map",
        "/dashboard.cmake",
        "/embed.cmake",
        "/api/clusters",
        "/../dashboard.h",
        "/favicon.ico",
    };
    (void)state;
    assert_null(brk_asset_find(NULL));
    for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
        if (brk_asset_find(unknown[i]))
            fail_msg("\"%s\" is served", unknown[i]);
    }
}

/* The page must work under Content-Security-Policy default-src 'self' and fetch nothing elsewhere,
 * and app.js must not turn data into HTML: a text search for what would break either. */
static void test_strict_page(void **state)
{
    static const struct {
        const char *path, *needle, *why;
    } banned[] = {
        {"/", "<style", "an inline style sheet"},
        {"/", " style=", "an inline style attribute"},
        {"/", " onclick=", "an inline event handler"},
        {"/", " onload=", "an inline event handler"},
        {"/", "javascript:", "a javascript: URL"},
        {"/", "http:", "a resource elsewhere"},
        {"/", "https:", "a resource elsewhere"},
        {"/", "src=\"//", "a resource elsewhere"},
        {"/", "href=\"//", "a resource elsewhere"},
        {"/style.css", "@import", "a style sheet fetched"},
        {"/style.css", "url(", "a resource fetched"},
        {"/style.css", "expression(", "script in a style sheet"},
        {"/app.js", "innerHTML", "data parsed as HTML"},
        {"/app.js", "outerHTML", "data parsed as HTML"},
        {"/app.js", "insertAdjacentHTML", "data parsed as HTML"},
        {"/app.js", "document.write", "data parsed as HTML"},
        {"/app.js", "eval(", "eval, refused by the policy"},
        {"/app.js", "new Function", "eval, refused by the policy"},
        {"/app.js", "http:", "a resource elsewhere"},
        {"/app.js", "https:", "a resource elsewhere"},
        {"/app.js", "localStorage", "the token outliving the session"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(banned) / sizeof(banned[0]); i++) {
        const struct brk_asset *a = brk_asset_find(banned[i].path);
        assert_non_null(a);
        /* data is NUL-terminated and the files hold no NUL (they are text). */
        assert_int_equal(strlen((const char *)a->data), a->len);
        if (strcasestr((const char *)a->data, banned[i].needle))
            fail_msg("%s contains \"%s\": %s", banned[i].path, banned[i].needle, banned[i].why);
    }

    /* Every script of the page is a file of its own: each <script has a src. */
    const char *p = (const char *)brk_asset_find("/")->data;
    int scripts = 0;
    while ((p = strcasestr(p, "<script")) != NULL) {
        const char *end = strchr(p, '>');
        assert_non_null(end);
        if (!memmem(p, (size_t)(end - p), " src=\"", 6))
            fail_msg("index.html has an inline <script>");
        scripts++;
        p = end;
    }
    assert_int_equal(scripts, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_unknown),
        cmocka_unit_test(test_strict_page),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
