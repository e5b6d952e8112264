#include "common/xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static long fail_countdown = -1;

static int should_fail(void)
{
    if (fail_countdown < 0)
        return 0;
    if (fail_countdown == 0)
        return 1;
    fail_countdown--;
    return 0;
}

void xalloc_fail_after(long n)
{
    fail_countdown = n;
}

void *x_malloc(size_t size)
{
    if (should_fail())
        return NULL;
    return malloc(size ? size : 1);
}

void *x_calloc(size_t nmemb, size_t size)
{
    if (should_fail())
        return NULL;
    return calloc(nmemb ? nmemb : 1, size ? size : 1);
}

void *x_reallocarray(void *ptr, size_t nmemb, size_t size)
{
    if (size && nmemb > SIZE_MAX / size)
        return NULL;

    size_t total = nmemb * size;

    if (should_fail())
        return NULL;
    return realloc(ptr, total ? total : 1);
}

char *x_strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *d = x_malloc(len + 1);

    if (!d)
        return NULL;
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

char *x_strdup(const char *s)
{
    return x_strndup(s, SIZE_MAX);
}

void x_free(void *ptr)
{
    free(ptr);
}
