#include "common/fileio.h"
#include "common/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_READ_FIRST_CAP                                                                        \
    4096 /* first buffer when the size is not known (not a regular file)                           \
          */

static void wipe_free(char *p, size_t len)
{
    if (!p)
        return;
    explicit_bzero(p, len);
    x_free(p);
}

int file_read(const char *path, size_t max, unsigned flags, char **ret, size_t *ret_len)
{
    struct stat st;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int fd, r;

    if (!path || !ret || max >= SIZE_MAX - 2)
        return -EINVAL;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer before it is refused. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | (flags & FILE_READ_REGULAR ? O_NONBLOCK : 0));
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0) {
        r = -errno;
        goto out;
    }
    if (S_ISDIR(st.st_mode)) {
        r = -EISDIR;
        goto out;
    }
    if ((flags & FILE_READ_REGULAR) && !S_ISREG(st.st_mode)) {
        r = -EINVAL;
        goto out;
    }
    if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > max) {
        r = -E2BIG;
        goto out;
    }
    /* The size plus the NUL plus one byte, so that the read that sees EOF needs no growth. */
    if (S_ISREG(st.st_mode))
        cap = (size_t)st.st_size + 2;
    else
        cap = max + 2 < FILE_READ_FIRST_CAP ? max + 2 : FILE_READ_FIRST_CAP;
    buf = x_malloc(cap);
    if (!buf) {
        r = -ENOMEM;
        goto out;
    }
    for (;;) {
        ssize_t n;

        if (len == cap - 1) {
            /* The file grew since fstat (or its size was unknown). */
            size_t ncap = cap < (max + 2) / 2 ? cap * 2 : max + 2;
            char *nbuf;

            if (len > max) {
                r = -E2BIG;
                goto out;
            }
            nbuf = x_malloc(ncap);
            if (!nbuf) {
                r = -ENOMEM;
                goto out;
            }
            memcpy(nbuf, buf, len);
            wipe_free(buf, cap);
            buf = nbuf;
            cap = ncap;
        }
        n = read(fd, buf + len, cap - 1 - len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            r = -errno;
            goto out;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    if (len > max) {
        r = -E2BIG;
        goto out;
    }
    buf[len] = '\0';
    *ret = buf;
    if (ret_len)
        *ret_len = len;
    buf = NULL;
    r = 0;
out:
    wipe_free(buf, cap);
    close(fd);
    return r;
}
