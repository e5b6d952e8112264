#include "common/errbuf.h"

#include <stdarg.h>
#include <stdio.h>

int errbuf_fmt(char *err, size_t errlen, int r, const char *fmt, ...)
{
    va_list ap;

    if (!err || errlen == 0)
        return r;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return r;
}

void errbuf_clear(char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
}
