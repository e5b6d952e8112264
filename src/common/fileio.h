/* fileio: whole small files (PEM, tokens, kubeconfigs, credentials) read into memory with a hard
 * maximum size. */
#ifndef CLIQO_COMMON_FILEIO_H
#define CLIQO_COMMON_FILEIO_H

#include <stddef.h>

/* Flags of file_read(). */
#define FILE_READ_REGULAR                                                                          \
    0x1u /* refuse anything but a regular file (-EINVAL), without blocking                         \
          */

/* Reads the whole file at path, at most max bytes, into *ret: x_malloc'd, NUL-terminated, length
 * in *ret_len (may be NULL). The file may hold a secret: every copy left behind (when the file
 * grows while it is read, or on failure) is wiped; the caller wipes and frees *ret. Returns 0,
 * -errno of open/read (-EISDIR for a directory), -EINVAL (FILE_READ_REGULAR: not a regular file),
 * -E2BIG (over max) or -ENOMEM. *ret and *ret_len are written on success only. */
int file_read(const char *path, size_t max, unsigned flags, char **ret, size_t *ret_len);

#endif
