/* virtualkubelet: the provider's NamespaceMap controller (an agent module) and the standalone
 * virtual kubelet process (`cliqo-agent virtual-kubelet`, Deployment mode). The virtual kubelet
 * itself is vk.h. */
#ifndef CLIQO_VIRTUALKUBELET_VIRTUALKUBELET_H
#define CLIQO_VIRTUALKUBELET_VIRTUALKUBELET_H

#include <stdbool.h>

#include "agent/agent.h"

/* True when a consumer may not have a namespace of this name created for it: not a DNS label,
 * default, kube-*, the agent's namespace, or a tenant namespace (cliqo-tenant-*). */
bool nsmap_reserved(const char *name, const char *agent_ns);

int nsmap_init(struct agent *a);
int nsmap_start(struct agent *a);
void nsmap_stop(struct agent *a);
void nsmap_fini(struct agent *a);
#define AGENT_MODULE_NAMESPACEMAP                                                                  \
    {                                                                                              \
        "namespacemap", nsmap_init, nsmap_start, nsmap_stop, nsmap_fini, NULL                      \
    }

/* `cliqo-agent virtual-kubelet ...` (argv[0] is "virtual-kubelet"): runs one virtual kubelet
 * until SIGTERM, or until its Advertisement is deleted and the teardown is over. Returns the exit
 * status (0, 1 runtime failure, 2 bad command line). */
int vk_standalone_main(int argc, char **argv);

#endif
