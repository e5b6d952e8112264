/* peering/pki: the auth endpoint's small PKI and the CA pin of `--ca-cert-hash`.
 *
 *  - peer_pki_ca_create: a self-signed CA with a new EC P-256 key. Subject CN as given; serial 128
 *    random bits; notBefore now - 5 min (clock skew between clusters), notAfter + `years`;
 *    basicConstraints critical CA:TRUE, pathlen:0; keyUsage critical keyCertSign, cRLSign;
 *    subjectKeyIdentifier (hash); signed with ECDSA-SHA256.
 *  - peer_pki_server_issue: a server certificate with a new EC P-256 key, signed by that CA (any CA
 *    key type OpenSSL signs with SHA-256). basicConstraints critical CA:FALSE; keyUsage critical
 *    digitalSignature; extendedKeyUsage serverAuth; subjectKeyIdentifier; authorityKeyIdentifier
 *    (keyid); subjectAltName from `sans`: each string that parses as an IPv4 or IPv6 address
 *    (inet_pton; no brackets, no zone) becomes an iPAddress, anything else must be a DNS name
 * (labels of [A-Za-z0-9-] not starting or ending with '-', at most 63 each, 253 in all; a leading
 * "*." is allowed) and becomes a dNSName. SANs are added as typed GeneralNames, never through
 * OpenSSL's configuration syntax, so a string with commas or "IP:" cannot inject other entries.
 * notAfter is clamped to the CA's notAfter.
 *  - Keys go out as unencrypted PKCS#8 PEM ("PRIVATE KEY"), certificates as "CERTIFICATE" PEM.
 *  - The CA hash is "sha256:" followed by 64 lowercase hex digits of SHA-256 over the DER
 *    SubjectPublicKeyInfo of the certificate, as kubeadm's --discovery-token-ca-cert-hash, i.e.
 *        openssl x509 -pubkey -noout | openssl pkey -pubin -outform der | sha256sum
 *  - A PEM CA received from a peer (GET /ca) is strictly parsed: exactly one PEM block, of type
 *    CERTIFICATE, whose DER is one complete X.509 certificate (text around the block is allowed, as
 * in PEM files). A second certificate is refused, since it would become a trust anchor that the pin
 *    did not cover.
 *
 * Errors: 0 or a negative errno: -EINVAL (bad argument or input, with a message), -EACCES (the CA
 * does not match the pin), -E2BIG (input over PEER_PKI_PEM_MAX), -ENOMEM, -EIO (OpenSSL failed).
 * `err` (may be NULL, `errlen` bytes) is always left NUL-terminated: empty on success, otherwise a
 * message (which may end with OpenSSL's reason). Output strings are allocated with x_malloc, belong
 * to the caller (x_free; wipe key PEM with OPENSSL_cleanse(key, strlen(key)) first) and are written
 * on success only. Input PEM buffers need not be NUL-terminated. */
#ifndef CLIQO_PEERING_PKI_H
#define CLIQO_PEERING_PKI_H

#include <openssl/types.h>
#include <stddef.h>

#define PEER_CA_HASH_PREFIX "sha256:"
#define PEER_CA_HASH_LEN    71 /* "sha256:" + 64 hex digits */
#define PEER_PKI_MAX_SANS   64
#define PEER_PKI_PEM_MAX    (64u << 10)
#define PEER_PKI_MAX_YEARS  100
#define PEER_PKI_MAX_DAYS   (PEER_PKI_MAX_YEARS * 366)

/* A certificate, or a private key (unencrypted PKCS#8, its buffer wiped when freed), as PEM into a
 * new string *ret (x_free). Returns 0, -EIO or -ENOMEM; *ret is untouched on failure. */
int peer_pki_cert_pem(X509 *x, char **ret);
int peer_pki_key_pem(EVP_PKEY *key, char **ret);

int peer_pki_ca_create(const char *common_name, unsigned years, char **ret_cert_pem,
                       char **ret_key_pem, char *err, size_t errlen);

int peer_pki_server_issue(const char *ca_cert_pem, size_t ca_cert_len, const char *ca_key_pem,
                          size_t ca_key_len, const char *common_name, const char *const *sans,
                          size_t nsans, unsigned days, char **ret_cert_pem, char **ret_key_pem,
                          char *err, size_t errlen);

/* The hash of the (single) certificate in `pem` into ret ("sha256:<64 hex>" and a NUL). */
int peer_pki_ca_hash(const char *pem, size_t len, char ret[PEER_CA_HASH_LEN + 1], char *err,
                     size_t errlen);

/* Parses a user-supplied "sha256:<64 hex digits>" (hex digits in either case; nothing else, no
 * spaces) into the 32-byte digest. Errors say what is wrong: the prefix, the length, or the first
 * bad character and its position. */
int peer_pki_hash_parse(const char *s, unsigned char ret_digest[32], char *err, size_t errlen);

/* 0 when the single certificate in `pem` has the public key pinned by `hash` (a string for
 * peer_pki_hash_parse); -EACCES when it has another one; -EINVAL when either is malformed. */
int peer_pki_ca_match(const char *pem, size_t len, const char *hash, char *err, size_t errlen);

#endif
