/* duration: the durations of command lines and annotations ("500ms", "15s", "2m", "1h"), parsed
 * and written.
 *
 * dur_parse() takes a whole decimal number followed by one unit: ms, s, m or h (no sign, no
 * fraction, no spaces); with DUR_SECONDS a bare number is a number of seconds too. Bounds are the
 * caller's: only a result that does not fit in 64 bits is refused here. */
#ifndef CLIQO_COMMON_DURATION_H
#define CLIQO_COMMON_DURATION_H

#include <stddef.h>
#include <stdint.h>

/* Flags of dur_parse(). */
#define DUR_SECONDS 0x1u /* a bare number ("30") is seconds; without it a unit is required */

/* Parses s into milliseconds. Returns 0, -EINVAL (not a duration) or -ERANGE (over 64 bits);
 * *ret_ms is written on success only. */
int dur_parse(const char *s, unsigned flags, uint64_t *ret_ms);

/* Writes ms the short way for messages: "2h", "2m", "45s", "1.5s", "250ms". Always NUL-terminates
 * (truncates to size; 24 bytes suffice). */
void dur_format(uint64_t ms, char *buf, size_t size);

#endif
