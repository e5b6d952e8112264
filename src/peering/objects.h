/* Helpers on cliqo's objects, shared by the agent's controllers and the CLI. */
#ifndef CLIQO_PEERING_OBJECTS_H
#define CLIQO_PEERING_OBJECTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The condition `type` of fc.status.peeringConditions (borrowed), or NULL. */
json_t *peer_fc_condition_obj(const json_t *fc, const char *type);
/* The status of condition `type`, "None" when absent or empty. Borrowed. */
const char *peer_fc_condition(const json_t *fc, const char *type);
/* The lastTransitionTime of condition `type` as Unix seconds, 0 if absent or unparsable. */
int64_t peer_fc_condition_since(const json_t *fc, const char *type);
/* Sets condition `type` in fc.status.peeringConditions (creating what is missing); the
 * lastTransitionTime changes only with the status; empty reason or message are left out (the v1.20
 * apiserver turns "" in a merge patch into null). Returns true when anything changed. */
bool peer_fc_set_condition(json_t *fc, const char *type, const char *status, const char *reason,
                           const char *message);
bool peer_has_finalizer(const json_t *obj, const char *finalizer);
/* RFC 3339 "now" (UTC, seconds) into buf (at least 21 bytes). */
void peer_now_rfc3339(char *buf, size_t size);
/* RFC 3339 of Unix time t (UTC, seconds) into buf (at least 21 bytes). */
void peer_time_rfc3339(int64_t t, char *buf, size_t size);
/* Parses an RFC 3339 timestamp ("2006-01-02T15:04:05Z", optional fraction, "Z" or "+hh:mm") into
 * Unix seconds. Returns 0 or -EINVAL. */
int peer_parse_rfc3339(const char *s, int64_t *ret);
/* Strict base64 (standard alphabet, padding only at the end) of at most `max` decoded bytes into
 * *ret (x_malloc'd, NUL-terminated; wipe secrets before x_free). Returns 0, -EINVAL, -E2BIG or
 * -ENOMEM. */
int peer_base64_decode(const char *s, size_t max, char **ret, size_t *ret_len);

#endif
