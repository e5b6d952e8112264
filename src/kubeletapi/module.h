/* kubeletapi agent module (module.c): the kubelet API of the virtual nodes the agent runs, one
 * listener on --kubelet-addr for all of them (kla_service, service.h). It runs while this replica
 * leads (the virtual kubelets run there): start creates the service, stop closes it. The node
 * address (--node-address) is the serving certificate's SAN; its CN is system:node:<name>, the
 * name being "cliqo-<identity>" made a DNS label (kla_service_label).
 *
 * The relay's resolver maps a home pod to its virtual node, the provider's client, the remote
 * namespace and pod. The virtual kubelets give theirs (vk_kla_resolve, src/offloading/pods.h)
 * with kla_agent_set_resolver, from the advertisement operator's init; until then, or with NULL, no
 * pod is known. May be called before the module starts and at any time after; the module's fini
 * forgets it. */
#ifndef CLIQO_KUBELETAPI_MODULE_H
#define CLIQO_KUBELETAPI_MODULE_H

#include "agent/agent.h"
#include "kubeletapi/kubeletapi.h"

/* Metrics: cliqo_kubelet_api_{serving, certificate_expiry_seconds, requests_total,
 * denied_total{reason}, streams_total{kind}, open{kind}, upstream_errors_total}. */
int kla_module_init(struct agent *a);
int kla_module_start(struct agent *a);
void kla_module_stop(struct agent *a);
void kla_module_fini(struct agent *a);
void kla_agent_set_resolver(struct agent *a, kla_resolve_fn fn, void *data);
/* The listener serves (certificate, client CA and bind all done). */
bool kla_agent_serving(struct agent *a);

#define AGENT_MODULE_KUBELETAPI                                                                    \
    {                                                                                              \
        "kubeletapi", kla_module_init, kla_module_start, kla_module_stop, kla_module_fini, NULL    \
    }

#endif
