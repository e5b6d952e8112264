/* admission/mod_podsec: the agent's side of the Pod Security enforcement on a provider
 * (docs/security.md, "Pod Security on the provider"): the level of each consumer, read from the
 * ClusterConfig (spec.offloadingConfig.podSecurity) through the shared informer, applied by the
 * pod webhook (offer_check, mod_admission.c) with admission/podsec.h. */
#ifndef CLIQO_ADMISSION_MOD_PODSEC_H
#define CLIQO_ADMISSION_MOD_PODSEC_H

#include "admission/admission.h"
#include "admission/podsec.h"

/* Its state, in the admission module's. */
struct adm_podsec {
    struct inf_informer *config;
};

/* Registers the ClusterConfig informer into ps. Returns 0 or a negative errno. */
int adm_podsec_init(struct agent *a, struct adm_podsec *ps);

/* The level of consumer id now (baseline while nothing says otherwise). */
enum adm_podsec_level adm_podsec_level_now(const struct adm_podsec *ps, const char *id);

/* Checks the pod of req, created for consumer origin, at that consumer's level. Returns 0 when
 * allowed; otherwise ret is a refusal (403, the violated controls, or "try again" while the
 * ClusterConfig is not known yet) and the return is negative. */
int adm_podsec_enforce(const struct adm_podsec *ps, const struct adm_request *req,
                       const char *origin, struct adm_verdict *ret);

#endif
