/* peering/wire: the JSON bodies of the auth endpoint (docs/peering.md), strictly decoded and
 * encoded. Both sides use it: the agent's endpoint decodes requests and encodes answers, the
 * peering controller and cliqoctl encode requests and decode answers.
 *
 *   POST /identity  request   {"clusterID": "...", "clusterName": "...", "token": "...",
 *                              "publicKey": "<base64 DER SPKI>", "timestamp": <Unix seconds>,
 *                              "signature": "<base64 DER ECDSA>"}       (peering/idkey.h)
 *                   201       {"namespace": "...", "kubeconfig": "<kubeconfig text>",
 *                              "keyId": "<the provider's key ID>"}
 *   GET /ids        200       {"clusterId": "...", "clusterName": "...", "keyId": "..."}
 *   any error                 {"error": "<reason>", "message": "<human text>"}
 * (The field names follow Liqo's: "clusterID" in the request, "clusterId" in /ids.)
 *
 * Decoding rules, for every body:
 *  - The body is at most PEER_WIRE_REQUEST_MAX (16 KiB: requests, server side) or
 *    PEER_WIRE_RESPONSE_MAX (64 KiB: answers, client side) bytes; more is reason "body-too-large"
 *    (-E2BIG; HTTP 413 on the server).
 *  - It must be exactly one JSON value (UTF-8, no trailing garbage, no duplicate keys, no NUL in
 *    strings): else "malformed-json"; the value must be an object: else "not-an-object".
 *  - Every documented field is required and must be a JSON string (null is not a string):
 *    "missing-field" / "invalid-field-type", the message naming the field.
 *  - Values are then checked: cluster IDs and names (peering/identity.h): "invalid-cluster-id",
 *    "invalid-cluster-name"; the token's format (peering/token.h): "invalid-token"; a namespace:
 *    "invalid-namespace"; the kubeconfig must load with kc_load_mem() with no base directory (so it
 *    refers to no local file) and its context's namespace must be the answer's namespace:
 *    "invalid-kubeconfig"; an error body's reason must look like one ([a-z0-9-], 1 to 63):
 *    "invalid-error-reason"; "publicKey" and "signature" must be strict base64 of 1 to
 *    PEER_WIRE_KEY_MAX / PEER_WIRE_SIG_MAX bytes: "invalid-public-key" / "invalid-signature"
 *    (whether they are a P-256 key and a valid signature is peering/idkey.c's check);
 *    "timestamp" must be an integer from 0 to PEER_WIRE_TS_MAX: "invalid-timestamp".
 *  - "keyId" (answers only) is optional, for answers from older peers; when present it must be a
 *    key ID (64 lowercase hex digits): "invalid-key-id".
 *  - Unknown fields are ignored, so that a newer peer may add fields (forward compatibility). Only
 *    the documented fields are ever read.
 *  - An error body's message is display text from a peer: it is cut to PEER_WIRE_MESSAGE_MAX bytes
 *    (at a UTF-8 character boundary) and control characters become spaces, so it is safe to log
 *    and to store in a condition. Encoders apply the same to the messages they are given.
 * A failed decode returns -EINVAL (-E2BIG for size) and fills `err` with the reason and a human
 * message: exactly what the server answers with status peer_wire_http_status(err->reason).
 * On success `err` (may be NULL) is left with empty strings, and *ret is written.
 *
 * Encoders check their input the same way (-EINVAL for a value the decoder would refuse) and return
 * a compact JSON text allocated with x_malloc (caller frees with x_free), or -ENOMEM.
 * Structs are plain values; the only pointer is peer_identity_response.kubeconfig (owned, freed
 * and wiped by peer_identity_response_done). The token and the kubeconfig are secrets: wipe
 * encoded bodies that carry them (OPENSSL_cleanse) before freeing them. */
#ifndef CLIQO_PEERING_WIRE_H
#define CLIQO_PEERING_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "peering/identity.h"
#include "peering/token.h"

#define PEER_WIRE_REQUEST_MAX  (16u << 10)
#define PEER_WIRE_RESPONSE_MAX (64u << 10)
#define PEER_WIRE_REASON_MAX   63
#define PEER_WIRE_MESSAGE_MAX  511
#define PEER_WIRE_KEY_MAX      256            /* DER SPKI of the public key (P-256: 91) */
#define PEER_WIRE_SIG_MAX      80             /* DER ECDSA signature (P-256: at most 72) */
#define PEER_WIRE_TS_MAX       253402300799LL /* 9999-12-31T23:59:59Z */
#define PEER_KEY_ID_LEN        64             /* hex SHA-256 of the DER SPKI */

/* Reasons (the "error" field). The first group comes from the decoders; the second is for the
 * endpoint's own answers, so that every program uses the same words. */
#define PEER_WIRE_E_TOO_LARGE    "body-too-large"     /* 413 */
#define PEER_WIRE_E_MALFORMED    "malformed-json"     /* 400 */
#define PEER_WIRE_E_NOT_OBJECT   "not-an-object"      /* 400 */
#define PEER_WIRE_E_MISSING      "missing-field"      /* 400 */
#define PEER_WIRE_E_FIELD_TYPE   "invalid-field-type" /* 400 */
#define PEER_WIRE_E_CLUSTER_ID   "invalid-cluster-id" /* 400 */
#define PEER_WIRE_E_CLUSTER_NAME "invalid-cluster-name"
#define PEER_WIRE_E_TOKEN        "invalid-token" /* 400: format; a wrong token is "forbidden" */
#define PEER_WIRE_E_NAMESPACE    "invalid-namespace"
#define PEER_WIRE_E_KUBECONFIG   "invalid-kubeconfig"
#define PEER_WIRE_E_ERROR_REASON "invalid-error-reason"
#define PEER_WIRE_E_PUBLIC_KEY   "invalid-public-key" /* 400 */
#define PEER_WIRE_E_TIMESTAMP    "invalid-timestamp"  /* 400 */
#define PEER_WIRE_E_KEY_ID       "invalid-key-id"
#define PEER_WIRE_E_SIGNATURE    "invalid-signature"      /* 403: no proof of the key */
#define PEER_WIRE_E_STALE        "request-expired"        /* 403: timestamp outside the window */
#define PEER_WIRE_E_MISMATCH     "identity-mismatch"      /* 403: the ID is bound to another key */
#define PEER_WIRE_E_OWN_ID       "own-cluster-id"         /* 400 */
#define PEER_WIRE_E_FORBIDDEN    "forbidden"              /* 403 */
#define PEER_WIRE_E_NOT_FOUND    "not-found"              /* 404 */
#define PEER_WIRE_E_METHOD       "method-not-allowed"     /* 405 */
#define PEER_WIRE_E_MEDIA_TYPE   "unsupported-media-type" /* 415 */
#define PEER_WIRE_E_RATE_LIMITED "too-many-attempts"      /* 429 */
#define PEER_WIRE_E_INTERNAL     "internal-error"         /* 500 */
#define PEER_WIRE_E_UNAVAILABLE  "unavailable"            /* 503 */

struct peer_wire_error {
    char reason[PEER_WIRE_REASON_MAX + 1];
    char message[PEER_WIRE_MESSAGE_MAX + 1];
};

struct peer_identity_request {
    char cluster_id[PEER_NAME_MAX + 1];
    char cluster_name[PEER_NAME_MAX + 1];
    char token[PEER_TOKEN_LEN + 1];
    unsigned char public_key[PEER_WIRE_KEY_MAX];
    size_t public_key_len;
    int64_t timestamp;
    unsigned char signature[PEER_WIRE_SIG_MAX];
    size_t signature_len;
};

struct peer_identity_response {
    char namespace[PEER_NAME_MAX + 1];
    char *kubeconfig;                 /* owned; NUL-terminated */
    char key_id[PEER_KEY_ID_LEN + 1]; /* the provider's; empty when the answer had none */
};

struct peer_ids {
    char cluster_id[PEER_NAME_MAX + 1];
    char cluster_name[PEER_NAME_MAX + 1];
    char key_id[PEER_KEY_ID_LEN + 1]; /* empty: none (not sent, or not yet made) */
};

/* The HTTP status for a reason above: 400, 403, 404, 405, 413, 415, 429, 503; 500 for
 * "internal-error", NULL and any other string. */
int peer_wire_http_status(const char *reason);

int peer_wire_identity_request_decode(const void *buf, size_t len,
                                      struct peer_identity_request *ret,
                                      struct peer_wire_error *err);
int peer_wire_identity_request_encode(const struct peer_identity_request *req, char **ret_json);
/* Wipes the struct (it holds a token). */
void peer_identity_request_clear(struct peer_identity_request *req);

int peer_wire_identity_response_decode(const void *buf, size_t len,
                                       struct peer_identity_response *ret,
                                       struct peer_wire_error *err);
/* key_id NULL or "": no "keyId". */
int peer_wire_identity_response_encode(const char *namespace, const char *kubeconfig,
                                       const char *key_id, char **ret_json);
/* Wipes and frees the kubeconfig; the struct may be reused. NULL-safe. */
void peer_identity_response_done(struct peer_identity_response *resp);

int peer_wire_ids_decode(const void *buf, size_t len, struct peer_ids *ret,
                         struct peer_wire_error *err);
int peer_wire_ids_encode(const struct peer_ids *ids, char **ret_json);

/* Decodes an error body into *ret (a peer's reason and sanitised message); `err` says why the body
 * itself is unusable. */
int peer_wire_error_decode(const void *buf, size_t len, struct peer_wire_error *ret,
                           struct peer_wire_error *err);
/* `reason` must have the reason format; `message` (NULL: "") is sanitised as above. */
int peer_wire_error_encode(const char *reason, const char *message, char **ret_json);

/* Copies `s` into `dst` (dstlen > 0 bytes, always terminated) the way messages are sanitised:
 * invalid UTF-8 bytes become '?', control characters ' ', cut at a character boundary. */
void peer_wire_sanitize(char *dst, size_t dstlen, const char *s, size_t len);

#endif
