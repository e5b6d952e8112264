/* provider_namespacemap: the provider's NamespaceMap controller (the agent module `namespacemap`,
 * docs/advertisement.md, "Namespace maps"): offloading's provider half, which creates the
 * namespaces a consumer's virtual kubelet asks for (provider_namespacemap.c). */
#ifndef CLIQO_OFFLOADING_PROVIDER_NAMESPACEMAP_H
#define CLIQO_OFFLOADING_PROVIDER_NAMESPACEMAP_H

#include <stdbool.h>

#include "agent/agent.h"

/* True when a consumer may not have a namespace of this name created for it: not a DNS label,
 * default, kube-*, the agent's namespace, or a tenant namespace (cliqo-tenant-*). */
bool nsmap_reserved(const char *name, const char *agent_ns);

int nsmap_init(struct agent *a);
/* start, stop, fini: the controller skeleton's (agent_module.ctl) */
#define AGENT_MODULE_NAMESPACEMAP                                                                  \
    {                                                                                              \
        .name = "namespacemap", .init = nsmap_init, .ctl = true                                    \
    }

#endif
