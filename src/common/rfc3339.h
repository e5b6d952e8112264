/* rfc3339: the timestamps of the Kubernetes API ("2006-01-02T15:04:05Z"), parsed and written.
 *
 * rfc3339_parse() takes the RFC 3339 date-times that Kubernetes and Go write:
 * "YYYY-MM-DDThh:mm:ss", an optional fraction of one to nine digits (ignored: results are whole
 * seconds), then "Z" or, with RFC3339_OFFSET, "+hh:mm" or "-hh:mm". The date must exist (February
 * 29 only in leap years), hours 0..23, minutes 0..59, seconds 0..60 (a leap second counts as the
 * next minute's first), offsets up to 23:59. "T" and "Z" are upper case only, as Go's time.Parse
 * wants them (RFC 3339 allows lower case; nothing we read writes it). Years are four digits, so
 * every result fits an int64_t (from -62167219200, 0000-01-01T00:00:00Z, on).
 *
 * The formatters write UTC with "Z" and a four-digit year; a time whose year is not 0..9999 is
 * written as the epoch. They always NUL-terminate and truncate to `size` (RFC3339_MAX suffices). */
#ifndef CLIQO_COMMON_RFC3339_H
#define CLIQO_COMMON_RFC3339_H

#include <stddef.h>
#include <stdint.h>

/* "YYYY-MM-DDThh:mm:ss" + '.' + nine digits + "Z" + NUL. */
#define RFC3339_MAX 31

/* Flags of rfc3339_parse(). */
#define RFC3339_OFFSET 0x1u /* also accept a numeric offset ("+02:00"); without it only "Z" */

/* Parses s into seconds since the epoch. Returns 0 or -EINVAL (s NULL or not an RFC 3339 time);
 * *ret is written on success only. */
int rfc3339_parse(const char *s, unsigned flags, int64_t *ret);

/* Writes sec (seconds since the epoch) with `digits` (0..9) digits of nsec as the fraction:
 * digits 0 "2006-01-02T15:04:05Z", 3 "2006-01-02T15:04:05.000Z", 6 microseconds. */
void rfc3339_format(int64_t sec, long nsec, unsigned digits, char *buf, size_t size);

/* rfc3339_format() of the current time (CLOCK_REALTIME). */
void rfc3339_now(unsigned digits, char *buf, size_t size);

#endif
