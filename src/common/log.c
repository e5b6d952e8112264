#include "common/log.h"
#include "common/rfc3339.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static enum log_level current_level = LOG_LEVEL_INFO;

static const char *const level_names[_LOG_LEVEL_MAX] = {
    [LOG_LEVEL_DEBUG] = "debug",
    [LOG_LEVEL_INFO] = "info",
    [LOG_LEVEL_WARN] = "warn",
    [LOG_LEVEL_ERROR] = "error",
};

enum log_level log_level_from_string(const char *s)
{
    if (!s)
        return _LOG_LEVEL_INVALID;
    for (int i = 0; i < _LOG_LEVEL_MAX; i++)
        if (strcmp(s, level_names[i]) == 0)
            return (enum log_level)i;
    return _LOG_LEVEL_INVALID;
}

const char *log_level_to_string(enum log_level level)
{
    if (level < 0 || level >= _LOG_LEVEL_MAX)
        return "invalid";
    return level_names[level];
}

void log_set_level(enum log_level level)
{
    if (level >= 0 && level < _LOG_LEVEL_MAX)
        current_level = level;
}

enum log_level log_get_level(void)
{
    return current_level;
}

/* Writes s as a logfmt quoted value: backslash, quote and control characters are escaped. */
static void put_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

void log_vmsg(enum log_level level, const char *mod, const char *fmt, va_list ap)
{
    char msg[2048];
    char ts[RFC3339_MAX];

    if (level < current_level || level < 0 || level >= _LOG_LEVEL_MAX)
        return;
    rfc3339_now(3, ts, sizeof(ts));
    /* A message longer than the buffer is truncated, never overflowed. */
    vsnprintf(msg, sizeof(msg), fmt, ap);
    fprintf(stderr, "ts=%s level=%s mod=%s msg=", ts, level_names[level], mod ? mod : "-");
    put_quoted(stderr, msg);
    fputc('\n', stderr);
}

void log_msg(enum log_level level, const char *mod, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    log_vmsg(level, mod, fmt, ap);
    va_end(ap);
}

int log_errno(int err, const char *mod, const char *fmt, ...)
{
    char msg[1536];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    log_msg(LOG_LEVEL_ERROR, mod, "%s: %s", msg, strerror(err < 0 ? -err : err));
    return err;
}
