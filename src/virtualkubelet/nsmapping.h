/* nsmapping: a virtual kubelet's namespace mapping (docs/offloading.md, "Each virtual kubelet",
 * steps 1 and 2).
 *
 * Inputs: every NamespaceOffloading of the home cluster (its own informer), the virtual node's
 * labels (from the caller), and the NamespaceMap <home ID> on the provider (an informer of the
 * unit's PU_VK client, in the tenant namespace the credential names, field selector on its name).
 * One pass at a time, level-triggered, at most one write per pass:
 *   - spec.desiredMapping of the NamespaceMap = the namespaces whose NamespaceOffloading selects
 *     this node (local -> remote name, nsof_remote_namespace), plus those no longer selected whose
 *     home pods on the node are not gone yet (they are deleted first: their controllers re-create
 *     them where the webhook now sends them);
 *   - status.currentMapping's Accepted entries, believed only for the remote name asked for, start
 *     the reflectors of that namespace (ns_add); entries gone or no longer Accepted stop them;
 *   - each NamespaceOffloading's status.remoteNamespacesConditions[<provider>] mirrors the entry
 *     (server-side apply, field manager cliqo-vk-<provider>); the key is removed once nothing of
 *     the namespace is left on the provider.
 * Release (teardown): no more writes to the map; every key of this provider is removed from the
 * NamespaceOffloadings; then done.
 *
 * Ownership: strings copied; loop, client and unit borrowed (they outlive it). Single-threaded. */
#ifndef CLIQO_VIRTUALKUBELET_NSMAPPING_H
#define CLIQO_VIRTUALKUBELET_NSMAPPING_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "agent/peers.h"
#include "kube/api.h"

struct vkns;

struct vkns_params {
    uv_loop_t *loop;
    struct kapi_client *local;
    struct pu_unit *unit;
    const char *home_id, *home_name, *peer_id, *node_name;
    /* The virtual node (a new reference) or NULL. */
    json_t *(*node)(void *data);
    /* Start and stop the reflectors of a pair. */
    void (*ns_add)(void *data, const char *local, const char *remote);
    void (*ns_remove)(void *data, const char *local);
    /* Home pods of a local namespace still on the node, and their deletion. */
    size_t (*pods_left)(void *data, const char *local);
    void (*evict)(void *data, const char *local);
    /* Both sides were read once (called once). */
    void (*synced)(void *data);
    void *data;
};

/* Creates and starts it. Returns 0, -EINVAL or -ENOMEM. */
int vkns_new(const struct vkns_params *p, struct vkns **ret);
/* Something it reads changed (the node's labels, pods of a namespace being emptied): look again. */
void vkns_kick(struct vkns *m);
/* The pairs currently given to the reflectors. */
size_t vkns_active(const struct vkns *m);
/* Starts the release; done(data) runs once when every key of this provider is gone from the
 * NamespaceOffloadings (or after timeout_ms). */
void vkns_release(struct vkns *m, uint64_t timeout_ms, void (*done)(void *data), void *data);
/* Stops at once (requests in flight are ignored) and frees. NULL-safe. */
void vkns_free(struct vkns *m);

#endif
