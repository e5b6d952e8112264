/* nodesim: the pure parts of the node simulator (cliqo-nodesim), built as cliqo_nodesim_core so
 * that unit tests reach them without a cluster: command-line configuration, IPv4 helpers, the
 * per-node pod IP allocator, and the builders of Node, Lease and pod status objects.
 *
 * Nothing here talks to an API server or a loop. Builders return new JSON references (caller
 * json_decrefs) or NULL on OOM; every pointer argument is borrowed. Times are whole seconds since
 * the epoch, written as RFC 3339 UTC ("2024-01-02T03:04:05Z"), as the API does for metav1.Time.
 *
 * The simulator's behaviour, flags and failure-injection annotations are described in
 * docs/nodesim.md. */
#ifndef CLIQO_NODESIM_H
#define CLIQO_NODESIM_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "common/log.h"
#include "kube/quantity.h"

#define NS_MAX_NODES     2000
#define NS_MAX_EXTENDED  16
#define NS_MAX_LABELS    32
#define NS_MAX_NAME      253 /* a DNS subdomain (node names, resource and label keys) */
#define NS_MAX_LABEL_VAL 63
#define NS_ERR_LEN       256
#define NS_TIME_LEN      32 /* an RFC 3339 timestamp with microseconds and its NUL */
#define NS_IP_LEN        16 /* dotted quad and NUL */
#define NS_CIDR_LEN      20 /* dotted quad, "/NN" and NUL */
#define NS_KUBELET_VER   "v1.20.2"
#define NS_FIELD_MANAGER "cliqo-nodesim"
#define NS_LEASE_NS      "kube-node-lease"
#define NS_LABEL_MANAGED "sim.cliqo.io/nodesim"       /* "true" on every simulated node */
#define NS_ANN_READY     "sim.cliqo.io/ready"         /* node: "false" or "unknown" */
#define NS_ANN_FAIL      "sim.cliqo.io/fail"          /* pod: exit code 0..255 */
#define NS_ANN_STEP      "sim.cliqo.io/startup-delay" /* pod: duration of each start-up step */

/* ---- configuration (config.c) ---------------------------------------------------------------- */

struct ns_resource {
    char *name; /* e.g. "nvidia.com/gpu" */
    struct kq qty;
};

struct ns_label {
    char *key;
    char *value;
};

struct ns_config {
    char *kubeconfig; /* NULL: $KUBECONFIG, ~/.kube/config, in-cluster */
    char *context;    /* NULL: current context */
    unsigned nodes;
    char *node_prefix; /* node i is "<prefix>-<i>", i from 0 */
    struct kq cpu, memory, pods, storage;
    struct ns_resource ext[NS_MAX_EXTENDED];
    size_t n_ext;
    struct ns_label labels[NS_MAX_LABELS];
    size_t n_labels;
    uint32_t pod_cidr_base; /* network address of --pod-cidr-base */
    unsigned pod_cidr_prefix;
    unsigned node_cidr_mask; /* each node's pod CIDR: /node_cidr_mask, 24 by default */
    uint32_t node_ip_base;   /* InternalIP of node 0; node i gets base + i */
    uint64_t lease_ms;       /* lease renewal (the kubelet's 10 s) */
    uint64_t status_ms;      /* node status heartbeat when nothing changed (1 min) */
    uint64_t lease_duration_s;
    double qps;
    int burst;
    unsigned concurrency;  /* pods processed at once */
    unsigned healthz_port; /* 0: no health endpoint */
    /* The kubelet API (kubelet.c): one HTTPS listener for every node, whose nodes then publish
     * InternalIP = kubelet_ip and kubeletEndpoint.Port = kubelet_port. NULL: none (nodes publish
     * --node-ip-base + i and port 10250, and nothing listens). */
    char *kubelet_addr;
    uint32_t kubelet_ip;
    unsigned kubelet_port;
    char *tls_cert_file, *tls_key_file, *client_ca_file;
    bool delete_nodes_on_exit;
    enum log_level log_level;
};

/* Result of ns_config_parse besides 0 and negative errnos: --help was asked for. */
#define NS_CONFIG_HELP 1

/* Parses argv (common/opts.h; argv[0] is the program name) into cfg, which it initialises with the
 * defaults first. Returns 0, NS_CONFIG_HELP, or -EINVAL with a one-line message in err. cfg must
 * be released with ns_config_done() whatever the result. */
int ns_config_parse(int argc, char **argv, struct ns_config *cfg, char *err, size_t errlen);
void ns_config_done(struct ns_config *cfg);
void ns_usage(FILE *f);

/* Durations: "250ms", "10s", "2m", "1h", or a bare number of seconds. At most one day. */
int ns_parse_duration_ms(const char *s, uint64_t *ret);
/* Dotted-quad IPv4 (no leading zeros beyond "0", four parts) into host byte order. */
int ns_parse_ipv4(const char *s, uint32_t *ret);
/* "a.b.c.d/n": the address must be the network address of the prefix. */
int ns_parse_cidr(const char *s, uint32_t *ret_addr, unsigned *ret_prefix);
void ns_format_ipv4(uint32_t ip, char buf[NS_IP_LEN]);
/* Pod CIDR of node `index`: the index-th /node_cidr_mask block of --pod-cidr-base. */
int ns_node_cidr(const struct ns_config *cfg, unsigned index, uint32_t *ret_addr);
/* A valid node name: DNS subdomain (lower-case alphanumerics, '-', '.'). */
bool ns_valid_dns_subdomain(const char *s);

/* ---- pod IP allocation (ipam.c) -------------------------------------------------------------- */

/* One node's pod CIDR. Usable addresses are network+2 .. broadcast-1 (network+1 is the node's
 * bridge, as with the host-local plugin). Allocation goes round-robin from the last address handed
 * out, so a freed address is not reused at once. */
struct ns_ipam {
    uint32_t base; /* network address */
    unsigned mask;
    uint32_t size; /* addresses in the block */
    uint8_t *used; /* one byte per address of the block */
    uint32_t n_used;
    uint32_t next; /* offset where the next search starts */
};

/* mask from 16 to 28. Returns 0, -EINVAL or -ENOMEM. */
int ns_ipam_init(struct ns_ipam *a, uint32_t base, unsigned mask);
void ns_ipam_done(struct ns_ipam *a);
/* Number of addresses pods can get. */
uint32_t ns_ipam_capacity(const struct ns_ipam *a);
bool ns_ipam_usable(const struct ns_ipam *a, uint32_t ip);
/* Takes a free address: 0 or -ENOSPC. */
int ns_ipam_alloc(struct ns_ipam *a, uint32_t *ret);
/* Takes this address: 0, -ERANGE (not usable in this block) or -EEXIST (taken). */
int ns_ipam_reserve(struct ns_ipam *a, uint32_t ip);
/* Frees it: 0 or -ENOENT when it was not taken (or not usable). */
int ns_ipam_release(struct ns_ipam *a, uint32_t ip);

/* ---- object builders (build.c) --------------------------------------------------------------- */

/* What a node's status says. */
struct ns_node_view {
    const char *name;
    const char *internal_ip;
    const char *pod_cidr;
    bool ready;
    const char *ready_since;   /* lastTransitionTime of Ready */
    const char *registered_at; /* lastTransitionTime of the other conditions */
    const char *now;           /* lastHeartbeatTime */
};

/* The node's status (capacity = allocatable, conditions, addresses, nodeInfo, daemonEndpoints).
 * old_status (may be NULL): capacity and allocatable keys it has and we do not are set to null,
 * so that a merge patch removes resources no longer configured. */
json_t *ns_build_node_status(const struct ns_config *cfg, const struct ns_node_view *v,
                             const json_t *old_status);
/* A whole Node object for registration: labels (kubernetes.io/hostname, os, arch, the
 * NS_LABEL_MANAGED label, then --label values), spec.podCIDR(s), and its status. */
json_t *ns_build_node(const struct ns_config *cfg, const struct ns_node_view *v);
/* The labels the simulator sets on a node (a merge-patch fragment). */
json_t *ns_build_node_labels(const struct ns_config *cfg, const char *name);
/* The node's Lease in kube-node-lease, owned by the node (uid may be NULL: no owner). */
json_t *ns_build_lease(const char *node, const char *node_uid, uint64_t duration_s,
                       const char *renew_time);

/* Inputs of a pod's desired status beyond the pod itself. */
struct ns_pod_view {
    const char *host_ip;
    const char *pod_ip; /* NULL: not assigned (no address left) */
    time_t now;
};

/* Builds the status the simulated kubelet wants the pod to have, from the pod (spec, annotations
 * and current status, which keeps timestamps and restart counts stable) and v. Returns 0 with
 * *ret_status (new reference) and *ret_next_ms: 0 when the pod has reached its final state for
 * now, else the delay until the next start-up step. -EINVAL for a pod without containers, -ENOMEM.
 * The status is deterministic: building it again from the pod it produced gives the same object,
 * so a reconcile that finds nothing to change writes nothing. */
int ns_build_pod_status(const json_t *pod, const struct ns_pod_view *v, json_t **ret_status,
                        uint64_t *ret_next_ms);
/* True when status sets some field to a value different from current's (fields of current that
 * status does not mention are ignored). */
bool ns_status_differs(const json_t *status, const json_t *current);
/* The value of NS_ANN_FAIL: 0..255 into *ret_code; -ENOENT without the annotation, -EINVAL when
 * it is not a number in range. */
int ns_pod_fail_code(const json_t *pod, int *ret_code);
/* The pod's phase is Succeeded or Failed. */
bool ns_pod_terminal(const json_t *pod);

/* ---- logs of simulated containers (logs.c) -------------------------------------------------- */

/* One instance of a container (the current one, or the one before its last restart). Its log is
 * deterministic: line 0 at `started` says it started, then line k at started + k seconds while it
 * runs (before `finished`), and a last line at `finished` with the exit code. */
struct ns_log_src {
    const char *ns, *pod, *container, *image;
    int64_t started;  /* seconds since the epoch */
    int64_t finished; /* -1 while it runs */
    int exit_code;
    int restart; /* the restart count of this instance */
};

/* Lines that exist at `now` (for a running instance: up to now; a finished one: all). */
int64_t ns_log_count(const struct ns_log_src *s, int64_t now);
/* The time of line k. */
int64_t ns_log_time(const struct ns_log_src *s, int64_t k);
/* Line k, LF-terminated, prefixed with an RFC 3339 timestamp with nanoseconds when timestamps
 * (as the kubelet: "2024-01-02T03:04:05.000000000Z "). Returns its length or -ENOSPC. */
int ns_log_line(const struct ns_log_src *s, int64_t k, bool timestamps, char *buf, size_t size);
/* The first line to send: since (seconds since the epoch, -1: none) drops older lines, then tail
 * (-1: all) keeps the last lines among those that exist at now. */
int64_t ns_log_first(const struct ns_log_src *s, int64_t now, int64_t since, int64_t tail);
/* The instance of a container from a pod: previous = the terminated instance before the last
 * restart (lastState.terminated). Strings point into pod. Returns 0, -ENOENT (no such container,
 * or no previous instance), -EAGAIN (the container is waiting: *ret_reason says why). */
int ns_log_source(const json_t *pod, const char *container, bool previous, struct ns_log_src *ret,
                  const char **ret_reason);

#endif
