/* log: structured, levelled logging for cliqo programs.
 *
 * Lines go to stderr as `ts=<RFC3339> level=<lvl> mod=<module> msg="..." key=value ...`, the logfmt
 * shape that log pipelines parse. Library modules log at debug only (they return errors instead);
 * program code logs each failure once, where it decides what to do about it.
 *
 * Not thread-safe by design: every cliqo process runs one event loop on one thread. */
#ifndef CLIQO_LOG_H
#define CLIQO_LOG_H

#include <stdarg.h>

enum log_level {
    LOG_LEVEL_DEBUG,
    LOG_LEVEL_INFO,
    LOG_LEVEL_WARN,
    LOG_LEVEL_ERROR,
    _LOG_LEVEL_MAX,
    _LOG_LEVEL_INVALID = -22 /* -EINVAL */
};

/* Parses "debug", "info", "warn" or "error"; returns _LOG_LEVEL_INVALID otherwise. */
enum log_level log_level_from_string(const char *s);
const char *log_level_to_string(enum log_level level);

void log_set_level(enum log_level level);
enum log_level log_get_level(void);

/* Logs one line. `mod` names the subsystem ("devenv", "watch", ...). The message is quoted and
 * escaped; user-controlled strings are therefore safe to pass through %s. */
__attribute__((format(printf, 3, 4))) void log_msg(enum log_level level, const char *mod,
                                                   const char *fmt, ...);
__attribute__((format(printf, 3, 0))) void log_vmsg(enum log_level level, const char *mod,
                                                    const char *fmt, va_list ap);

/* Logs at error level with ": <strerror(-err)>" appended and returns err (a negative errno), so
 * that program code can write `return log_errno(r, "agent", "failed to load '%s'", path);`. */
__attribute__((format(printf, 3, 4))) int log_errno(int err, const char *mod, const char *fmt, ...);

#define log_debug(mod, ...) log_msg(LOG_LEVEL_DEBUG, mod, __VA_ARGS__)
#define log_info(mod, ...)  log_msg(LOG_LEVEL_INFO, mod, __VA_ARGS__)
#define log_warn(mod, ...)  log_msg(LOG_LEVEL_WARN, mod, __VA_ARGS__)
#define log_error(mod, ...) log_msg(LOG_LEVEL_ERROR, mod, __VA_ARGS__)

#endif
