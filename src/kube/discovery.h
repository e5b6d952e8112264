/* kdisc: API discovery — which version of a group serves a resource on this server.
 *
 * cliqo must work against servers of different ages (EndpointSlice is discovery.k8s.io/v1beta1
 * on 1.20 and v1 from 1.21), so resource versions are looked up, never hard-coded. kdisc_resolve
 * asks /api or /apis/<group> for the versions the server offers, then the version documents in the
 * caller's order of preference, and reports the first version that serves the resource, with its
 * kind and scope. */
#ifndef CLIQO_KUBE_DISCOVERY_H
#define CLIQO_KUBE_DISCOVERY_H

#include "kube/api.h"

/* err is 0, -ENOENT (no preferred version serves it), or a request error. Strings are borrowed. */
typedef void (*kdisc_cb)(struct kapi_client *c, int err, const char *version, const char *kind,
                         bool namespaced, void *data);

/* group "" is the core group. prefer is a NULL-terminated list of versions, best first; NULL means
 * the server's preferred version first, then the others in the server's order. */
int kdisc_resolve(struct kapi_client *c, const char *group, const char *resource,
                  const char *const *prefer, kdisc_cb cb, void *data);

#endif
