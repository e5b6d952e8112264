/* vk: the virtual kubelet of one provider, on the consumer (docs/advertisement.md, "Virtual
 * kubelet and virtual node").
 *
 * It registers and keeps the virtual node liqo-<provider> (labels, taint, capacity = allocatable =
 * the advertised amounts, conditions, a Lease in kube-node-lease), probes the provider with its
 * own credential (keepalive: the node turns NotReady with reason ProviderUnreachable after
 * `threshold` failures in a row, and Ready again at the first success), keeps its NamespaceMap on
 * the provider, runs the namespace mapping (nsmapping.h) and the reflectors
 * (offloading/reflector.h: offloading/pods.h and the object reflectors of reflect.h) with the
 * peering's address translations, and on teardown goes in the order the original design wanted:
 * cordon, drain, wait for the remote pods to go, remove what it created on the provider (bounded by
 * a timeout), release the NamespaceOffloadings' conditions, stop, delete the node.
 *
 * The same code runs embedded in the agent (one per accepted Advertisement) and standalone
 * (`cliqo-agent virtual-kubelet`, Deployment mode): its inputs come through struct vk_source, so
 * the caller decides where the Advertisement and the node are cached. Inputs changed -> vk_kick().
 *
 * Reads from the Advertisement: spec.resourceQuota.hard (capacity), spec.labels (checked again:
 * only keys shr_label_shareable accepts, valid values), status.network.settled and .enabled
 * (nodecond.h: the node's conditions, and whether the pods reflector holds new pods); from the
 * provider's TunnelEndpoint, when the caller gives it, its status (NetworkUnavailable). Nothing
 * from the provider is trusted to name local objects: the node name and its fixed labels come from
 * the peer ID the caller gives.
 *
 * Ownership: strings are copied; the loop, the local client and the unit are borrowed and must
 * outlive the vk (the caller holds the unit). Single-threaded. */
#ifndef CLIQO_VIRTUALKUBELET_VK_H
#define CLIQO_VIRTUALKUBELET_VK_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "agent/peers.h"
#include "kube/api.h"

struct vk;
struct vk_pods_shared;

struct vk_source {
    /* The Advertisement (a new reference), or NULL when it is not known (yet). */
    json_t *(*advertisement)(void *data);
    /* The cached virtual node (a new reference) or NULL; *ret_known is false while the cache
     * cannot tell (not synced), so that a missing node is only recreated when it is really gone. */
    json_t *(*node)(void *data, bool *ret_known);
    /* The provider's TunnelEndpoint here (a new reference) or NULL, and in *ret_dataplane whether
     * this cluster runs a data plane (its gateway's record exists). May be NULL itself: the node's
     * NetworkUnavailable then ignores tunnels, as without a data plane (nodecond.h). */
    json_t *(*tunnel)(void *data, bool *ret_dataplane);
    void *data;
};

struct vk_params {
    uv_loop_t *loop;
    struct kapi_client *local; /* the home cluster */
    struct pu_unit *unit;      /* the provider's unit: role PU_VK is the credential used */
    const char *peer_id;       /* the provider */
    const char *home_id;       /* this cluster (names the NamespaceMap on the provider) */
    const char *home_name;     /* this cluster's name (remote namespace names); may be NULL */
    const char *node_address;  /* status.addresses InternalIP */
    unsigned kubelet_port;     /* status.daemonEndpoints.kubeletEndpoint.Port */
    struct vk_source src;
    /* What the pods reflectors of the caller's virtual kubelets share (offloading/pods.h:
     * vk_pods_shared_new): their metrics and the kubelet API's lookup. Borrowed: it must outlive
     * the vk. NULL: this one's pods are counted nowhere and found by no lookup. */
    struct vk_pods_shared *pods;
    uint64_t lease_ms;          /* Lease renewal period; default 10 s */
    uint64_t status_ms;         /* node status refresh period; default 60 s */
    uint64_t remote_timeout_ms; /* teardown: how long the provider may not answer; default 30 s */
};

/* Teardown finished (err 0), or gave up (a negative errno: the node could not be deleted; the
 * caller may call vk_teardown again). */
typedef void (*vk_done_cb)(struct vk *v, int err, void *data);

/* Creates and starts it (the first pass runs from the loop). Returns 0, -EINVAL or -ENOMEM. */
int vk_new(const struct vk_params *p, struct vk **ret);
/* Something it reads changed (the Advertisement, the node, the configuration): reconcile soon. */
void vk_kick(struct vk *v);
/* The ClusterConfig (borrowed; NULL: none): spec.liqonetConfig.podCIDR (this cluster's pod CIDR,
 * for the home -> provider address translation) and spec.offloadingConfig.reflection (the object
 * reflectors' filters). */
void vk_set_config(struct vk *v, const json_t *cluster_config);
/* The keepalive settings (ClusterConfig keepaliveRetryTime and keepaliveThreshold). */
void vk_set_keepalive(struct vk *v, unsigned retry_s, unsigned threshold);
void vk_set_remote_timeout(struct vk *v, uint64_t ms);
/* Starts the graceful teardown; done runs once when it is over. A second call only replaces the
 * callback. */
void vk_teardown(struct vk *v, vk_done_cb done, void *data);
bool vk_tearing_down(const struct vk *v);
/* Stops at once, making no more requests (requests in flight are left to complete), and frees.
 * NULL-safe. For shutdown: the node stays (its Lease expires, as when a kubelet stops). */
void vk_free(struct vk *v);

const char *vk_node_name(const struct vk *v);
/* Current state for status and logs: Ready, and the reason of the Ready condition. */
bool vk_ready(const struct vk *v, const char **ret_reason);

/* The node name of a provider: liqo-<id>. Returns 0 or -ENAMETOOLONG. */
int vk_node_name_for(const char *peer_id, char *buf, size_t size);

#endif
