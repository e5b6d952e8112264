/* admission/ledger: the offer enforcement's reservations (docs/offloading.md, "Admission";
 * docs/security.md, "The webhooks authenticate the API server").
 *
 * A pod the provider's webhook admits is counted in the offer only once the pod informer shows it;
 * until then a reservation holds its requests, so that a burst of creations cannot overshoot the
 * offer between admission and the watch event. A reservation is for one pod: its namespace, name
 * and UID (the validating webhook sees the UID the API server gave the pod; a review without one
 * reserves nothing). It ends:
 *   - when the informer shows that namespace/name, with this UID (the pod is counted from then on)
 *     or another (the reserved pod was never made: that name is someone else's);
 *   - at its expiry: 15 s after admission when the webhooks authenticate the API server
 *     (ADM_LEDGER_TTL_MS), and only ADM_LEDGER_CONFIRM_MS when they cannot (nothing then tells a
 *     review the API server sent from one anybody forged: a forged review's pod never appears, so
 *     its reservation must not outlive the time a real pod takes to reach the informer).
 * A review of the same pod again (same namespace, name and UID: the API server retrying) replaces
 * its reservation. One of another UID for the same name (a pod created again after a later
 * admission step refused the first) replaces it only when the caller trusts the reviews (`trusted`:
 * the API server is authenticated); otherwise both are held, so that a forged review never evicts
 * a real one. Each consumer holds
 * at most per_consumer reservations, whatever the others hold: one consumer's reviews (forged or
 * not) cannot take another's room. At most ADM_LEDGER_MAX in all (a bound on memory: with the
 * per-consumer bound, only reached with more than 64 consumers with full ledgers).
 *
 * Times are the caller's milliseconds (the loop's clock). Pure, no I/O. Strings are copied. */
#ifndef CLIQO_ADMISSION_LEDGER_H
#define CLIQO_ADMISSION_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "offer/share.h"

#define ADM_LEDGER_TTL_MS       15000u
#define ADM_LEDGER_CONFIRM_MS   3000u
#define ADM_LEDGER_PER_CONSUMER 256u
#define ADM_LEDGER_MAX          16384u
#define ADM_LEDGER_ORIGIN_MAX   63 /* bytes of a consumer ID (a label value) */
#define ADM_LEDGER_NS_MAX       63
#define ADM_LEDGER_NAME_MAX     253
#define ADM_LEDGER_UID_MAX      128

struct adm_ledger;

/* per_consumer 0: ADM_LEDGER_PER_CONSUMER; max 0: ADM_LEDGER_MAX. Returns 0 or -ENOMEM. */
int adm_ledger_new(size_t per_consumer, size_t max, struct adm_ledger **ret);
/* NULL-safe; returns NULL. */
struct adm_ledger *adm_ledger_free(struct adm_ledger *l);

/* Reserves amounts (copied) for pod ns/name with uid of consumer origin until expires_ms; trusted:
 * replacing any reservation of ns/name (see above). Returns 0, -EINVAL (an empty or oversized
 * string), -EDQUOT (origin holds per_consumer reservations still valid at now_ms), -ENOSPC (the
 * ledger's max) or -ENOMEM. Expired reservations are dropped first. */
int adm_ledger_reserve(struct adm_ledger *l, const char *origin, const char *ns, const char *name,
                       const char *uid, const struct shr_list *amounts, bool trusted,
                       uint64_t now_ms, uint64_t expires_ms);

/* The informer shows pod ns/name (any UID): every reservation of that namespace/name ends.
 * Returns how many ended. */
size_t adm_ledger_seen(struct adm_ledger *l, const char *ns, const char *name);

/* Drops the reservations whose expiry is at or before now_ms. Returns how many. */
size_t adm_ledger_purge(struct adm_ledger *l, uint64_t now_ms);

/* Whether the informer has ns/name now (a reservation of such a pod is not added: the pod is
 * counted already, or the name is taken). */
typedef bool (*adm_ledger_known_fn)(const char *ns, const char *name, void *data);

/* used += the requests reserved for consumer origin and valid at now_ms, leaving out the
 * reservations of skip_ns/skip_name (the pod under review: NULL for none) and those known()
 * (may be NULL) says the informer has. Returns 0 or -ENOSPC (too many resource names). */
int adm_ledger_sum(const struct adm_ledger *l, const char *origin, const char *skip_ns,
                   const char *skip_name, uint64_t now_ms, adm_ledger_known_fn known, void *data,
                   struct shr_list *used);

/* Reservations held (valid or not yet purged), by consumer (NULL: all). */
size_t adm_ledger_count(const struct adm_ledger *l, const char *origin);

#endif
