/* xalloc: the one allocation family of cliqo.
 *
 * Every allocation goes through these wrappers so that tests can make the Nth allocation fail and
 * exercise error paths (xalloc_fail_after). They return NULL on failure like their libc
 * counterparts; callers check and return -ENOMEM. Only a program's main() may decide to abort on
 * OOM. */
#ifndef CLIQO_XALLOC_H
#define CLIQO_XALLOC_H

#include <stddef.h>

void *x_malloc(size_t size);
void *x_calloc(size_t nmemb, size_t size);
/* Fails (NULL, old block untouched) when nmemb * size overflows. */
void *x_reallocarray(void *ptr, size_t nmemb, size_t size);
char *x_strdup(const char *s);
char *x_strndup(const char *s, size_t n);
void x_free(void *ptr);

/* Testing: after `n` more successful allocations, every allocation fails until reset with -1. */
void xalloc_fail_after(long n);

#endif
