/* admission/certs: the webhooks' certificates (docs/offloading.md, "Admission").
 *
 * A self-signed CA (EC P-256, ADM_CA_YEARS) signs a serving certificate (EC P-256,
 * ADM_SERVING_DAYS, SANs: the Service's DNS names and the host of --webhook-url). Both live in the
 * Secret cliqo-webhook-certs of the agent's namespace; the API server trusts the caBundle of the
 * webhook configurations. Rotation never leaves a moment where the serving certificate is not
 * trusted:
 *
 *   1. A CA past 2/3 of its life (or a forced rotation) gets a successor, the "next" CA, which is
 *      added to caBundle while the current CA keeps signing.
 *   2. Once every webhook configuration carries the next CA, and ADM_SETTLE_S seconds later (the
 *      API server reloads configurations within a second or two), the next CA is promoted: it
 *      becomes current, the old one becomes "previous" (it stays in caBundle until it expires), and
 *      a new serving certificate is issued by the new CA.
 *   3. A serving certificate past 2/3 of its life, not signed by the current CA, with other SANs,
 *      or not matching its key is issued again. A missing or expired CA starts everything afresh
 *      (no overlap is possible then).
 * adm_cert_plan decides which of these steps is due, from facts the caller gathers with
 * adm_cert_parse / adm_cert_serving_ok; it is a pure function of them and of `now`.
 *
 * Secret keys: ca.crt, ca.key (current CA), ca-next.crt, ca-next.key (during a rotation),
 * ca-previous.crt (older CAs still valid, at most ADM_MAX_PREVIOUS), tls.crt, tls.key (serving).
 * Annotation admission.cliqo.io/rotate = "ca" or "serving" forces a rotation (tests, operators);
 * the writer drops it once done.
 *
 * Parsing is strict and bounded (PEER_PKI_PEM_MAX per value). Times are Unix seconds. */
#ifndef CLIQO_ADMISSION_CERTS_H
#define CLIQO_ADMISSION_CERTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ADM_CERTS_SECRET      "cliqo-webhook-certs"
#define ADM_SERVICE           "cliqo-agent-webhook"
#define ADM_ROTATE_ANNOTATION "admission.cliqo.io/rotate"
#define ADM_CA_YEARS          1
#define ADM_SERVING_DAYS      30
#define ADM_SETTLE_S          10
#define ADM_MAX_PREVIOUS      4
#define ADM_MAX_SANS          8

struct adm_cert_info {
    int64_t not_before, not_after;
};

/* The validity of the first certificate of a PEM text (bounded). Returns 0, -EINVAL or -E2BIG. */
int adm_cert_parse(const char *pem, size_t len, struct adm_cert_info *ret);
/* Is this a usable CA: the certificate parses, is a CA, matches the key, and is valid at now?
 * Returns 0 with *ret its validity, or -EINVAL. */
int adm_cert_ca_ok(const char *cert, size_t cert_len, const char *key, size_t key_len, int64_t now,
                   struct adm_cert_info *ret);
/* Counts the certificates of a PEM list and gives each one's notAfter and, when ret_pems is not
 * NULL, its own PEM text (x_malloc'd, the caller frees them) (at most max). Returns the count, or
 * -EINVAL (anything but well-formed CERTIFICATE blocks), -E2BIG (more than max), -ENOMEM; nothing
 * is left allocated on failure. */
int adm_cert_list(const char *pem, size_t len, int64_t *not_after, char **ret_pems, size_t max);
/* Is the serving certificate usable: parses, is signed by the CA, matches the key, is valid at
 * now, and has exactly the SANs wanted (order ignored)? On success *ret has its validity. Returns
 * 0 (usable) or -EINVAL with a reason in err. */
int adm_cert_serving_ok(const char *cert, size_t cert_len, const char *key, size_t key_len,
                        const char *ca, size_t ca_len, const char *const *sans, size_t nsans,
                        int64_t now, struct adm_cert_info *ret, char *err, size_t errlen);

/* The facts adm_cert_plan decides on. */
struct adm_cert_facts {
    int64_t now;
    bool ca_ok; /* ca.crt and ca.key parse and belong together, and the CA is valid at now */
    struct adm_cert_info ca;
    bool next_ok; /* the same for ca-next.* (false when there is none) */
    struct adm_cert_info next;
    int64_t next_published_s; /* how long every configuration has trusted the next CA; <0: not */
    bool serving_ok;          /* adm_cert_serving_ok with the current CA */
    struct adm_cert_info serving;
    size_t nprevious;
    int64_t previous_not_after[ADM_MAX_PREVIOUS];
    bool force_ca, force_serving;
};

enum {
    ADM_CERT_NEW_CA = 1u << 0, /* a fresh CA (and serving certificate); drops next and previous */
    ADM_CERT_START_ROTATION = 1u << 1, /* make the next CA */
    ADM_CERT_PROMOTE = 1u << 2,        /* next -> current, current -> previous */
    ADM_CERT_NEW_SERVING = 1u << 3,    /* issue the serving certificate again (by the current CA) */
    ADM_CERT_PRUNE = 1u << 4,          /* drop previous CAs that expired */
};

/* The steps due now (a set of ADM_CERT_*), and in *ret_next (may be NULL) when something will be
 * due next if nothing changes (Unix seconds; INT64_MAX when never). */
unsigned adm_cert_plan(const struct adm_cert_facts *f, int64_t *ret_next);

#endif
