/* Internal interfaces of the kubeletapi module (server.c, relay.c, tls.c). Not for other modules.
 */
#ifndef CLIQO_KUBELETAPI_INTERNAL_H
#define CLIQO_KUBELETAPI_INTERNAL_H

#include "kubeletapi/kubeletapi.h"

#include <openssl/ssl.h>

/* ---- raw upgrades (the relay's exec) ------------------------------------------------------- */

/* After the upgrade the client's connection carries opaque bytes both ways. */
struct kla__raw;
struct kla__raw_ops {
    void (*data)(void *d, const char *buf, size_t len); /* len 0: the client's end of data */
    void (*drain)(void *d);
    void (*closed)(void *d, int err); /* the connection is gone: forget the raw handle */
};
/* Answers 101 Switching Protocols (Upgrade: SPDY/3.1, X-Stream-Protocol-Version: protocol when
 * not NULL or empty) and turns the connection into a raw pipe. Returns 0 with *ret (r is gone),
 * or a negative errno (r was answered 500 and is gone). */
int kla__upgrade_raw(struct kla_request *r, const char *protocol, const struct kla__raw_ops *ops,
                     void *d, struct kla__raw **ret);
int kla__raw_write(struct kla__raw *x, const void *buf, size_t len);
bool kla__raw_writable(const struct kla__raw *x);
void kla__raw_pause(struct kla__raw *x, bool pause);
/* Graceful close after what is queued (closed follows). */
void kla__raw_shutdown(struct kla__raw *x);

/* ---- TLS material (tls.c) ------------------------------------------------------------------ */

/* A server context from PEM certificate chain and key (ALPN http/1.1, TLS >= 1.2). Client
 * certificates are requested (ca_names advertised) and optional; one that is sent is verified
 * against ca_store in the handshake (a failure ends the handshake; NULL store: none verifies).
 * kla__authenticate verifies again when a request arrives (the bundle may have changed). */
int kla__tls_server_ctx(const char *cert_pem, const char *key_pem, X509_STORE *ca_store,
                        STACK_OF(X509_NAME) * ca_names, SSL_CTX **ret, char *err, size_t errlen);
/* A store and the subject names of a PEM CA bundle. */
int kla__tls_ca_store(const char *pem, X509_STORE **ret_store, STACK_OF(X509_NAME) * *ret_names,
                      char *err, size_t errlen);
/* A client context: trust `ca_pem` (NULL: the system's default paths), present cert/key when
 * given, ALPN http/1.1 only. */
int kla__tls_client_ctx(const unsigned char *ca_pem, size_t ca_len, const unsigned char *cert_pem,
                        size_t cert_len, const unsigned char *key_pem, size_t key_len,
                        SSL_CTX **ret, char *err, size_t errlen);
/* Verifies a client certificate (leaf and the chain it sent) against store for client
 * authentication, and extracts the user (CN) and groups (O). Returns 0, -EACCES (no or invalid
 * certificate; reason in err), -E2BIG (too many groups, a name too long). */
int kla__authenticate(X509_STORE *store, X509 *leaf, STACK_OF(X509) * chain, struct kla_user *u,
                      char *err, size_t errlen);

#endif
