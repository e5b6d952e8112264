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
struct inf_informer;
/* The ForeignCluster of cluster ID id (spec.clusterIdentity.clusterID) in the informer of
 * ForeignClusters fcs, a new reference, or NULL. */
json_t *peer_fc_find(struct inf_informer *fcs, const char *id);
/* Strict base64 (standard alphabet, padding only at the end) of at most `max` decoded bytes into
 * *ret (x_malloc'd, NUL-terminated; wipe secrets before x_free). Returns 0, -EINVAL, -E2BIG or
 * -ENOMEM. */
int peer_base64_decode(const char *s, size_t max, char **ret, size_t *ret_len);
/* Checks a single-use token Secret (docs/peering.md, "Tokens": label cliqo.io/peering-token=
 * single-use, data sha256 and expires) at Unix time now. digest NULL: any token's; else the hex
 * SHA-256 of the token presented (peer_token_digest), compared in constant time. Returns 0 (valid
 * until *ret_expires, may be NULL), -EKEYEXPIRED (expired, or no readable expiry: such a Secret
 * is garbage), -ENOENT (not a single-use token Secret, or another token's). */
int peer_token_secret_check(const json_t *secret, const char *digest, int64_t now,
                            int64_t *ret_expires);

/* Standard base64 with padding of len bytes (at most 1 MiB) into *ret (x_malloc'd). Returns 0,
 * -E2BIG or -ENOMEM. */
int peer_base64_encode(const void *data, size_t len, char **ret);

#endif
