/* peering/identity: cluster identities and the names derived from them (docs/peering.md).
 *
 *  - A cluster ID is what the CRDs accept: `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, 1 to 63 characters.
 *    New IDs are random UUIDs v4 in their canonical lowercase form (36 characters), which match.
 *  - A cluster name is an RFC 1123 (DNS-1123) label: the same pattern, 1 to 63 characters. The same
 *    check serves for namespace names (kname_dns_label, src/kube/names.h).
 *  - The tenant namespace of peer X is `cliqo-tenant-<name>-<hash>`, where <hash> is the first 3
 *    bytes of SHA-256(X's cluster ID, as its ASCII bytes) as 6 lowercase hex digits. <name> is X's
 *    cluster name, sanitised and truncated so that the result is always a valid namespace name of
 * at most 63 characters: ASCII letters are lowercased, every other character outside [a-z0-9-]
 *    becomes '-', the name is cut to PEER_TENANT_NAME_PART_MAX (43) characters (the name is cut,
 *    never the hash), then leading and trailing '-' are removed. If nothing is left (no name, or a
 *    name of only punctuation), the namespace is `cliqo-tenant-<hash>`. The hash keeps two peers
 *    with equal (or equally truncated) names apart; the name is only there for humans.
 *
 * Functions keep no state and never allocate. Output buffers are written on success only. */
#ifndef CLIQO_PEERING_IDENTITY_H
#define CLIQO_PEERING_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>

#define PEER_NAME_MAX             63 /* cluster IDs, cluster names, namespace names */
#define PEER_UUID_LEN             36 /* xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx */
#define PEER_TENANT_PREFIX        "cliqo-tenant-"
#define PEER_TENANT_HASH_LEN      6
#define PEER_TENANT_NAME_PART_MAX 43 /* 63 - strlen("cliqo-tenant-") - strlen("-") - 6 */

/* Writes a new random UUID v4 (RAND_bytes) and its NUL into ret. Returns 0 or -EIO when the
 * random generator fails. */
int peer_uuid_v4(char ret[PEER_UUID_LEN + 1]);

/* True when `s` (NULL allowed: false) is a valid cluster ID / RFC 1123 label of at most 63. */
bool peer_cluster_id_valid(const char *s);
bool peer_cluster_name_valid(const char *s);

/* The tenant namespace for the peer with this ID and name (see above). `cluster_name` may be NULL.
 * Returns 0, or -EINVAL when cluster_id is not valid, or -EIO when hashing fails. */
int peer_tenant_namespace(const char *cluster_id, const char *cluster_name,
                          char ret[PEER_NAME_MAX + 1]);

#endif
