/* admission/podsec: the Pod Security Standards (privileged, baseline, restricted; the "latest"
 * version of each) checked on a pod, for the provider's webhook (docs/security.md, "Pod Security
 * on the provider"): every pod a consumer's virtual kubelet creates on the provider is checked at
 * the level the provider's ClusterConfig gives that consumer (spec.offloadingConfig.podSecurity),
 * because the test clusters' API servers (v1.20) have no PodSecurity admission of their own.
 *
 * Controls, in the order Kubernetes' PodSecurity admission reports them (by check ID):
 *   restricted  allowPrivilegeEscalation != false
 *   baseline    forbidden AppArmor profile (annotation container.apparmor.security.beta.
 *               kubernetes.io/<c> other than runtime/default or localhost/<p>; a securityContext
 *               appArmorProfile.type other than RuntimeDefault or Localhost)
 *   baseline    non-default capabilities (add beyond Docker's default set), replaced at
 *               restricted by
 *   restricted  unrestricted capabilities (drop must hold ALL; add at most NET_BIND_SERVICE)
 *   baseline    host namespaces (hostNetwork, hostPID, hostIPC)
 *   baseline    hostPath volumes
 *   baseline    hostPort (any non-zero)
 *   baseline    privileged
 *   baseline    procMount (other than Default)
 *   restricted  restricted volume types (other than configMap, csi, downwardAPI, emptyDir,
 *               ephemeral, persistentVolumeClaim, projected, secret)
 *   restricted  runAsNonRoot != true (pod-level true, or every container true; false anywhere)
 *   restricted  runAsUser=0
 *   baseline    seLinuxOptions (type other than container_t, container_init_t, container_kvm_t,
 *               container_engine_t; any user or role)
 *   baseline    seccompProfile (a type other than RuntimeDefault or Localhost), replaced at
 *               restricted by one that requires either on the pod or on every container
 *   baseline    forbidden sysctls (outside the namespaced safe set)
 *   baseline    hostProcess (windowsOptions.hostProcess=true)
 * Containers are initContainers, containers and ephemeralContainers, in that order. The seccomp
 * annotations of the v1.19-era API (seccomp.security.alpha.kubernetes.io/pod and
 * container.seccomp.security.alpha.kubernetes.io/<name>) count as the field when the field is
 * unset (runtime/default and docker/default are RuntimeDefault, localhost/<p> Localhost,
 * unconfined Unconfined).
 *
 * The refusal is one line, shaped like Kubernetes' own:
 *     violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true), privileged
 *     (container "c" must not set securityContext.privileged=true)
 * Names and values from the pod are made printable and cut; lists stop at ADM_PODSEC_LIST_MAX
 * entries ("..."), and the whole message is cut to the caller's buffer, ending in "...".
 *
 * Pure functions, no state, no allocation. The pod is borrowed; the sizes of its arrays are only
 * bounded by the review's (ADM_REVIEW_MAX), so every loop is linear in the pod's size. */
#ifndef CLIQO_ADMISSION_PODSEC_H
#define CLIQO_ADMISSION_PODSEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define ADM_PODSEC_LIST_MAX      16 /* distinct names or values shown per list */
#define ADM_PODSEC_LABEL         "pod-security.kubernetes.io/enforce"
#define ADM_PODSEC_VERSION_LABEL "pod-security.kubernetes.io/enforce-version"

enum adm_podsec_level {
    ADM_PODSEC_PRIVILEGED,
    ADM_PODSEC_BASELINE,
    ADM_PODSEC_RESTRICTED,
};

/* "privileged", "baseline" or "restricted" (exactly). Returns 0 or -EINVAL. */
int adm_podsec_parse_level(const char *name, enum adm_podsec_level *ret);
const char *adm_podsec_level_name(enum adm_podsec_level level);

/* The level of consumer id in a ClusterConfig (NULL: none): the entry of
 * spec.offloadingConfig.podSecurity.perCluster whose clusterID is id, else podSecurity.level, else
 * baseline. A level that is present but not one of the three (the CRD's enum forbids it) gives
 * restricted, the safe side, and *ret_bad (may be NULL) is set true. */
enum adm_podsec_level adm_podsec_level_for(const json_t *clusterconfig, const char *id,
                                           bool *ret_bad);

/* Checks pod (a v1 Pod) at level. Returns 0 when it is allowed, -EACCES when it violates a control
 * (every violated control in msg, one line), -EINVAL when pod is not an object. msg may be NULL. */
int adm_podsec_check(enum adm_podsec_level level, const json_t *pod, char *msg, size_t len);

#endif
