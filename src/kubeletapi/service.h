/* kla_service: the kubelet API of cliqo's virtual nodes as a running service, shared by the agent
 * (module kubeletapi, every virtual node of the agent) and the standalone virtual kubelet (its one
 * node): the server (kubeletapi.h) with the relay backend and the SubjectAccessReview authoriser,
 * plus the TLS material a kubelet gets from its cluster:
 *  - the client CA: ConfigMap kube-system/extension-apiserver-authentication, key client-ca-file
 *    (the API server's own client CA bundle), followed with an informer: a change applies to the
 *    next connection;
 *  - the serving certificate: a new EC P-256 key and a CertificateSigningRequest
 *    (certificates.k8s.io/v1, signerName kubernetes.io/kubelet-serving, usages digital signature,
 *    key encipherment, server auth; subject O=system:nodes, CN=system:node:<name>; SAN the node
 *    address the API server dials), which the service approves itself (the approval subresource)
 *    and waits for (GET until status.certificate, at most two minutes); the certificate must carry
 *    our key. It is renewed at two thirds of its life; a failure keeps the current certificate and
 *    retries with backoff (1 s to 5 min).
 * The listener starts once both are there; a bind failure is retried with the same backoff (the
 * agent keeps running). The relay's resolver can be set at any time.
 *
 * Logs at info and warning: it is a controller of the agent, not a library function.
 * Ownership: the loop and the client are borrowed and must outlive the service; strings copied. */
#ifndef CLIQO_KUBELETAPI_SERVICE_H
#define CLIQO_KUBELETAPI_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "kubeletapi/kubeletapi.h"

struct kapi_client;
struct kla_service;

struct kla_service_options {
    const char *listen_addr;  /* HOST:PORT */
    const char *node_address; /* the address nodes publish (an IP or a DNS name): the SAN */
    const char *name;         /* the certificate's CN is system:node:<name>; a DNS label */
    /* Optional: serve with these PEMs instead of a CSR (both or neither), e.g. from files. */
    const char *cert_pem, *key_pem;
};

struct kla_service_stats {
    bool listening, have_cert, have_ca;
    uint16_t port;        /* the bound port while listening */
    uint64_t csrs;        /* CertificateSigningRequests created */
    int64_t cert_expires; /* seconds since the epoch, 0 when none */
    struct kla_server_stats server;
    uint64_t relay_logs, relay_execs, relay_upstream_errors;
    size_t relay_open;
};

/* Returns 0, -EINVAL (bad options) or -ENOMEM. Starts at once (from the loop). */
int kla_service_new(uv_loop_t *loop, struct kapi_client *local, const struct kla_service_options *o,
                    struct kla_service **ret);
void kla_service_set_resolver(struct kla_service *s, kla_resolve_fn fn, void *data);
void kla_service_stats(const struct kla_service *s, struct kla_service_stats *ret);
/* Stops: the listener and every connection close, requests in flight are cancelled; done(data)
 * runs once everything is freed (may be NULL). NULL-safe. */
void kla_service_close(struct kla_service *s, void (*done)(void *data), void *data);

/* The checks kla_service_new makes on its options: the listen address parses, the node address is
 * an IP address or a DNS name, the name a DNS label (at most 63 characters), a given certificate
 * comes with its key (and neither is larger than 256 KiB). Returns 0 or -EINVAL with a message. */
int kla_service_check(const struct kla_service_options *o, char *err, size_t errlen);

/* When to renew a certificate valid from not_before to not_after (seconds since the epoch), at
 * now: the milliseconds until two thirds of its life, at least a minute (also for a certificate
 * already past that point, expired or with a nonsensical validity), at most 400 days. */
uint64_t kla_service_renew_ms(int64_t not_before, int64_t not_after, int64_t now);

/* A DNS label made of arbitrary text (an identity such as "host_123"): lower case, other
 * characters as '-', no leading, trailing or doubled '-', at most `size - 1` (and 63) characters,
 * never empty ("cliqo", cut to fit: size must be at least 6 for all of it). */
void kla_service_label(const char *text, char *buf, size_t size);

#endif
