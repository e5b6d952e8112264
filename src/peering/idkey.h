/* peering/idkey: a cluster's identity key, and the proof of possession that binds an identity
 * issued by a provider to the consumer that first obtained it (docs/peering.md, "Identity keys").
 *
 *  - The identity key is an EC P-256 key pair made once by the agent and kept in the Secret
 *    identity-key of its namespace (key "tls.key", unencrypted PKCS#8 PEM). It never leaves the
 *    cluster. Its key ID is the SHA-256 of its public key's DER SubjectPublicKeyInfo, as 64
 *    lowercase hex digits (what `openssl pkey -pubout -outform der | sha256sum` prints).
 *  - POST /identity carries the public key (DER SPKI), a timestamp (Unix seconds) and an
 *    ECDSA-SHA256 signature (DER) over the canonical string
 *        "cliqo-identity-v1\n<provider ID>\n<cluster ID>\n<cluster name>\n<timestamp>\n<key ID>\n"
 *    where the provider ID is the cluster ID of the cluster asked (so a signed request cannot be
 *    replayed to another provider), the cluster ID and name are the caller's, the timestamp is
 *    in decimal without leading zeros, and the key ID is that of the public key sent. Every field
 *    is validated before the string is made (IDs and names are DNS labels, so none holds '\n').
 *  - The provider accepts a request whose timestamp is within PEER_IDKEY_WINDOW seconds of its
 *    own clock, either way, and whose signature verifies with the key sent; the caller is then
 *    known by the key ID, which the provider binds to the identity it issues.
 *
 * Returns are 0 or a negative errno: -EINVAL (bad argument or input), -EBADMSG (a public key that
 * is not a P-256 key in canonical DER, or a signature that does not verify), -ETIME (timestamp
 * outside the window), -ENOMEM, -EIO (OpenSSL or the random generator failed). `err` (may be NULL,
 * errlen bytes) is left NUL-terminated: empty on success, else a one-line reason. Output
 * parameters are written on success only; EVP_PKEY objects belong to the caller (EVP_PKEY_free). */
#ifndef CLIQO_PEERING_IDKEY_H
#define CLIQO_PEERING_IDKEY_H

#include <openssl/types.h>
#include <stddef.h>
#include <stdint.h>

#include "peering/wire.h"

#define PEER_IDKEY_CONTEXT "cliqo-identity-v1"
#define PEER_IDKEY_WINDOW  300 /* seconds of clock skew accepted, either way */
#define PEER_IDKEY_MSG_MAX 512 /* the canonical string always fits */
#define PEER_IDKEY_PEM_MAX (8u << 10)

/* A new P-256 key as unencrypted PKCS#8 PEM into *ret_pem (x_free; wipe it first). */
int peer_idkey_generate(char **ret_pem);

/* Loads a private P-256 key from PEM (at most PEER_IDKEY_PEM_MAX bytes, not NUL-terminated). */
int peer_idkey_load(const char *pem, size_t len, EVP_PKEY **ret, char *err, size_t errlen);

/* The DER SubjectPublicKeyInfo of key (at most max bytes) into buf, its length in *ret_len. */
int peer_idkey_spki(EVP_PKEY *key, unsigned char *buf, size_t max, size_t *ret_len);

/* The key ID of a DER SubjectPublicKeyInfo into ret. */
int peer_idkey_id(const unsigned char *spki, size_t len, char ret[PEER_KEY_ID_LEN + 1]);

/* True when s (NULL: false) has the key ID format: 64 lowercase hex digits. */
bool peer_idkey_id_valid(const char *s);

/* The canonical string above into buf (size bytes); returns its length, or -EINVAL when a field
 * is not valid (timestamp outside 0..PEER_WIRE_TS_MAX) or it does not fit. */
int peer_idkey_message(const char *provider_id, const char *cluster_id, const char *cluster_name,
                       int64_t timestamp, const char *key_id, char *buf, size_t size);

/* Fills req's public key, timestamp (now) and signature for a request to provider_id, from its
 * cluster ID and name (which must be set). */
int peer_idkey_sign_request(EVP_PKEY *key, const char *provider_id, int64_t now,
                            struct peer_identity_request *req);

/* Checks req's proof for a request made to provider_id (this cluster) at now: the key is a P-256
 * key in canonical DER (-EBADMSG), the timestamp is within `window` seconds of now (-ETIME), the
 * signature verifies (-EBADMSG). On success, the key ID of req's key into ret_key_id. */
int peer_idkey_verify_request(const struct peer_identity_request *req, const char *provider_id,
                              int64_t now, int64_t window, char ret_key_id[PEER_KEY_ID_LEN + 1],
                              char *err, size_t errlen);

#endif
