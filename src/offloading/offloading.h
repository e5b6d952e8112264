/* offloading: the agent module `offloading`, the home side of NamespaceOffloading
 * (docs/offloading.md, "Which namespaces go where" and "Admission").
 *
 * For each NamespaceOffloading (key "<namespace>/<name>", level-triggered, one write per pass):
 *   - a name other than `offloading`: status Invalid with the reason, nothing else;
 *   - finalizer offloading.cliqo.io/namespace, the namespace labelled
 *     liqo.io/scheduling-enabled=true while it exists;
 *   - status.remoteNamespaceName (nsof_remote_namespace with this cluster's name and ID),
 *     status.offloadingPhase (nsof_phase_of over the virtual nodes the selector matches and the
 *     keys the virtual kubelets write in status.remoteNamespacesConditions), status.message (the
 *     reason of Invalid);
 *   - deletion: Terminating until every key of remoteNamespacesConditions is gone (a key whose
 *     provider has no virtual node here any more is removed by this module: nobody else would),
 *     then the label is removed, then the finalizer.
 * A labelled namespace without a NamespaceOffloading loses the label.
 *
 * The pod webhook (POST /mutate-pods on the admission module's server, every replica): pods
 * created in a namespace with a valid NamespaceOffloading `offloading` that is not being deleted
 * get nsof_pod_patch for its strategy and selector, with the grace period of ClusterConfig
 * spec.offloadingConfig.unreachableGraceSeconds (default 300). No NamespaceOffloading, an invalid
 * or terminating one: the pod is admitted unchanged (Local). A pod the patch cannot be built for
 * (too many affinity terms) is refused with the reason.
 *
 * Metrics: cliqo_offloading_namespaces{phase}. */
#ifndef CLIQO_OFFLOADING_OFFLOADING_H
#define CLIQO_OFFLOADING_OFFLOADING_H

#include "agent/agent.h"

#define OFFL_GRACE_DEFAULT 300
#define OFFL_GRACE_MAX     2592000 /* 30 days, as the CRD's maximum */

int offl_init(struct agent *a);
/* start, stop, fini: the controller skeleton's (agent_module.ctl) */
#define AGENT_MODULE_OFFLOADING                                                                    \
    {                                                                                              \
        .name = "offloading", .init = offl_init, .ctl = true                                       \
    }

#endif
