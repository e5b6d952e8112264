/* admission/review: the wire format of admission webhooks (admission.k8s.io/v1 AdmissionReview)
 * and the JSON patches a mutating webhook answers with (RFC 6902).
 *
 * Decoding is strict and bounded: the body is at most ADM_REVIEW_MAX bytes of JSON (duplicate keys
 * refused), apiVersion and kind must be exactly admission.k8s.io/v1 AdmissionReview, and every
 * field the webhooks read is type- and length-checked. A review that fails any check is refused
 * with a one-line reason (the server answers it 400), never half-read. Strings from the review are
 * copied into fixed buffers, so nothing in struct adm_request grows with the input, except the
 * object, which stays a borrowed part of the decoded review.
 *
 * Encoding gives the AdmissionReview answer: the request's uid, allowed, and either a status (code
 * and one-line message) for a refusal, or a base64 JSONPatch for a mutation.
 *
 * The patches themselves are built with common/jsonpatch.h.
 *
 * Ownership: adm_review_decode keeps the parsed review in ret->review (adm_request_done frees it);
 * ret->object is borrowed from it. Returned strings are x_malloc'd (caller x_free). Pure: no I/O.
 */
#ifndef CLIQO_ADMISSION_REVIEW_H
#define CLIQO_ADMISSION_REVIEW_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/jsonpatch.h"

#define ADM_REVIEW_API  "admission.k8s.io/v1"
#define ADM_REVIEW_KIND "AdmissionReview"
#define ADM_REVIEW_MAX  (3u << 20) /* bytes of a review (the API server's own request limit) */
#define ADM_UID_MAX     128
#define ADM_USER_MAX    512
#define ADM_NAME_MAX    253
#define ADM_MESSAGE_MAX 512
#define ADM_PATCH_MAX   (1u << 20) /* bytes of an encoded patch */

struct adm_request {
    char uid[ADM_UID_MAX + 1];
    char operation[16];           /* CREATE, UPDATE, DELETE, CONNECT */
    char group[ADM_NAME_MAX + 1]; /* request.kind: "" for core */
    char version[64];
    char kind[64];
    char resource[64];           /* request.resource.resource, e.g. "pods" */
    char subresource[64];        /* "" when none */
    char ns[64];                 /* "" for cluster-scoped objects */
    char name[ADM_NAME_MAX + 1]; /* "" when the name is still to be generated */
    char username[ADM_USER_MAX + 1];
    bool dry_run;
    const json_t *object; /* request.object (borrowed from review), NULL when absent */
    json_t *review;       /* owned */
};

/* Decodes and validates a review. Returns 0, -EINVAL (malformed: the reason is in err), -E2BIG
 * (over ADM_REVIEW_MAX) or -ENOMEM. ret is written on success only. */
int adm_review_decode(const char *body, size_t len, struct adm_request *ret, char *err,
                      size_t errlen);
void adm_request_done(struct adm_request *r);

/* The AdmissionReview answer for uid. allowed false: status {code, reason, message} (code 403
 * unless given a 4xx or 5xx, its reason (Forbidden, BadRequest, TooManyRequests, InternalError),
 * message made one line and cut at ADM_MESSAGE_MAX). allowed true with a non-empty patch
 * array: patchType JSONPatch and the patch in base64. Returns the compact JSON text (x_malloc'd) or
 * NULL on OOM or an oversized patch (> ADM_PATCH_MAX). */
char *adm_review_response(const char *uid, bool allowed, int code, const char *message,
                          const json_t *patch);

/* s made fit for a one-line message into buf: control characters and non-ASCII as '?', cut at
 * size - 1 bytes. Returns buf. */
const char *adm_printable(const char *s, char *buf, size_t size);

#endif
