#include "common/xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

size_t x_map_bytes(size_t size)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t p = page > 0 ? (size_t)page : 4096;

    return (size + p - 1) / p * p;
}

void *x_map(size_t size)
{
    void *p;

    if (should_fail() || size == 0 || size > SIZE_MAX / 2)
        return NULL;
    p = mmap(NULL, x_map_bytes(size), PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void x_unmap(void *ptr, size_t size)
{
    if (ptr)
        munmap(ptr, x_map_bytes(size));
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
