/* advpol: the advertisement operator's decision for one Advertisement, a pure function of the
 * configuration and of counts the operator takes from its informer (docs/advertisement.md,
 * "Advertisement operator", step 3).
 *
 * Order of the rules: an invalid Advertisement is refused (its validation reason); the deny list
 * refuses (DeniedByPolicy); an operator's decision (cliqoctl accept|refuse) stands; a non-empty
 * allow list refuses everyone else (NotInAllowList); Manual refuses until an operator accepts
 * (ManualApprovalRequired), keeping those accepted before the switch; AutoAcceptMax keeps an
 * Advertisement it accepted (a lower maximum does not evict anyone) and accepts another only while
 * the accepted ones plus those waiting before it (in creation order) leave a slot, else refuses
 * (MaxAcceptableReached). */
#ifndef CLIQO_ADVERTISEMENT_POLICY_H
#define CLIQO_ADVERTISEMENT_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "advertisement/config.h"

#define ADVPOL_ACCEPTED_BY_POLICY   "AcceptedByPolicy"
#define ADVPOL_ACCEPTED_BY_OPERATOR "AcceptedByOperator"
#define ADVPOL_REFUSED_BY_OPERATOR  "RefusedByOperator"
#define ADVPOL_DENIED               "DeniedByPolicy"
#define ADVPOL_NOT_ALLOWED          "NotInAllowList"
#define ADVPOL_MANUAL               "ManualApprovalRequired"
#define ADVPOL_MAX                  "MaxAcceptableReached"

struct advpol_input {
    const char *peer;
    const struct adv_config *cfg;
    const char *invalid_reason; /* NULL: the Advertisement is valid */
    const char *invalid_message;
    const char *cur_status; /* "Accepted", "Refused", "" or NULL */
    const char *cur_reason;
    bool by_operator;       /* status.decidedBy == Operator */
    size_t accepted_others; /* other Accepted Advertisements not being deleted */
    size_t waiting_before;  /* valid ones created earlier that wait for a slot */
};

struct advpol_result {
    bool accept;
    bool by_operator;
    const char *reason; /* static string, or in->invalid_reason / in->cur_reason */
    char message[256];
};

void advpol_decide(const struct advpol_input *in, struct advpol_result *ret);

/* Validation of an Advertisement found in the tenant namespace of peer `peer` at Unix time `now`:
 * returns NULL when valid, else a reason (IdentityMismatch, MissingField, InvalidQuantity,
 * InvalidPrice: spec.prices not a map of at most ADVPOL_MAX_PRICES non-negative quantities,
 * Expired, InvalidField) with details in msg. The credential Secret's existence (NoCredential) is
 * checked by the operator. */
#define ADVPOL_MAX_PRICES 64
const char *advpol_validate(const json_t *adv, const char *peer, int64_t now, char *msg,
                            size_t msglen);

/* Whether an Advertisement with this status waits for a slot of AutoAcceptMax (no decision yet,
 * or refused only for the maximum). */
bool advpol_waiting(const char *status, const char *reason, bool by_operator);

#endif
