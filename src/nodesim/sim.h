/* sim: the running node simulator (cliqo-nodesim). One struct ns_sim per process, owned by the
 * loop's thread; node.c keeps the nodes registered, Ready and leased, pod.c runs the pods bound
 * to them, health.c serves /healthz. See docs/nodesim.md. */
#ifndef CLIQO_NODESIM_SIM_H
#define CLIQO_NODESIM_SIM_H

#include "nodesim/nodesim.h"

#include "kube/api.h"
#include "kube/informer.h"
#include "kube/workqueue.h"

#include <uv.h>

enum ns_node_mode {
    NS_NODE_READY,
    NS_NODE_NOT_READY, /* annotation ready=false: Ready=False posted, Lease not renewed */
    NS_NODE_DEAD,      /* annotation ready=unknown: nothing posted at all (a stopped kubelet) */
};

struct ns_node {
    struct ns_sim *sim;
    unsigned index;
    char name[NS_MAX_NAME + 1];
    char uid[64];
    char ip[NS_IP_LEN];
    char pod_cidr[NS_CIDR_LEN];
    char registered_at[NS_TIME_LEN];
    char ready_since[NS_TIME_LEN];
    struct ns_ipam ipam;
    enum ns_node_mode mode;
    bool registered;
    bool lease_busy;    /* a lease request is in flight */
    bool lease_created; /* the lease exists (patch, don't create) */
    bool deleting;
};

struct ns_health;
struct ns_kubelet;

/* The slot of one pod being processed (at most cfg.concurrency at once). */
struct ns_pod_op {
    struct ns_sim *sim;
    bool used;
    char key[WQ_MAX_KEY_LEN + 1];
    uint64_t next_ms;
    bool terminal; /* the status being written is a final one (Succeeded, Failed) */
    char uid[64];  /* the pod being deleted */
};

struct ns_sim {
    uv_loop_t *loop;
    const struct ns_config *cfg;
    struct kapi_client *c;
    struct ns_node *nodes;
    unsigned n_nodes;
    unsigned n_registered;
    json_t *node_index;  /* name -> index */
    struct wq_queue *nq; /* node keys: register, or post status */
    struct wq_queue *pq; /* pod keys "namespace/name" */
    struct ns_pod_op *ops;
    struct inf_informer *node_inf, *pod_inf;
    json_t *ip_owner; /* pod key -> {"n": node index, "ip": address, "uid": uid} */
    json_t *deleted;  /* pod key -> uid: deleted by us, until the informer no longer has it */
    uv_timer_t lease_timer, status_timer, stop_timer;
    uv_signal_t sigterm, sigint;
    struct ns_health *health;
    struct ns_kubelet *kubelet;
    bool pods_started, pods_synced, stopping, closed, lease_ns_busy;
    unsigned deletes_pending;
    void (*deleted_all)(struct ns_sim *sim); /* --delete-nodes-on-exit: all deletes answered */
    /* statistics, logged with the status heartbeat (pod_deletes_gone: DELETEs that found no pod) */
    uint64_t pod_writes, pod_deletes, pod_deletes_gone, pod_failures;
};

/* node.c */
int ns_nodes_init(struct ns_sim *sim);
int ns_nodes_start(struct ns_sim *sim);
void ns_nodes_done(struct ns_sim *sim);
struct ns_node *ns_node_find(struct ns_sim *sim, const char *name);
/* Deletes every node (for --delete-nodes-on-exit); calls done(sim) when all answered. */
void ns_nodes_delete_all(struct ns_sim *sim, void (*done)(struct ns_sim *sim));

/* pod.c */
int ns_pods_start(struct ns_sim *sim);
void ns_pods_requeue_node(struct ns_sim *sim, const char *node);
void ns_pods_done(struct ns_sim *sim);
size_t ns_pods_managed(struct ns_sim *sim);

/* health.c: GET /healthz on 127.0.0.1:port answers 200 "ok" once ready(sim) is true. */
int ns_health_start(struct ns_sim *sim, unsigned port, struct ns_health **ret);
void ns_health_close(struct ns_health *h);

/* kubelet.c: the kubelet API (logs, exec, /healthz) on --kubelet-addr for every node. */
int ns_kubelet_start(struct ns_sim *sim, struct ns_kubelet **ret);
/* Closes the listener and every stream and session; NULL-safe. */
void ns_kubelet_close(struct ns_kubelet *k);

/* main.c */
bool ns_sim_ready(const struct ns_sim *sim);
/* Called by node.c when every node is registered. */
void ns_sim_nodes_registered(struct ns_sim *sim);

#endif
