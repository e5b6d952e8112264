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

/* Memory mapped from the kernel (anonymous, private, zero-filled, prefaulted), in whole pages: for
 * large or long-lived blocks that should not come from the heap (glibc's malloc, asked for 1 KiB or
 * more, first merges every small chunk freed since it last did, which a process that frees many
 * small chunks pays for at every such call). x_map counts as an allocation for xalloc_fail_after.
 * x_unmap takes the size given to x_map; both NULL-safe. */
void *x_map(size_t size);
void x_unmap(void *ptr, size_t size);
/* The bytes x_map(size) occupies (size rounded up to whole pages). */
size_t x_map_bytes(size_t size);

/* Testing: after `n` more successful allocations, every allocation fails until reset with -1. */
void xalloc_fail_after(long n);

#endif
