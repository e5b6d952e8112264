/* errbuf: the caller's message buffer of parsers and loaders.
 *
 * Functions that can fail for a reason a person must read take `char *err, size_t errlen` (a
 * buffer of the caller's, may be NULL or empty: no message wanted), like redis' anet. errbuf_fmt()
 * fills it and hands back the error code, so that a failure is one line:
 * `return errbuf_fmt(err, errlen, -EINVAL, "bad port \"%s\"", s);`. */
#ifndef CLIQO_COMMON_ERRBUF_H
#define CLIQO_COMMON_ERRBUF_H

#include <stddef.h>

/* Formats the message into err (truncated, always NUL-terminated; nothing when err is NULL or
 * errlen 0) and returns r. */
__attribute__((format(printf, 4, 5))) int errbuf_fmt(char *err, size_t errlen, int r,
                                                     const char *fmt, ...);

/* Empties err (when not NULL and errlen > 0). */
void errbuf_clear(char *err, size_t errlen);

#endif
