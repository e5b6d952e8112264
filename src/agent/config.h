/* config: the command line of cliqo-agent.
 *
 * Flags take their value as `--flag VALUE` or `--flag=VALUE`; booleans accept `--flag`,
 * `--flag=true` and `--flag=false`. Durations are a whole number with a unit: "500ms", "15s",
 * "2m". Every value is checked here, so that a bad command line fails before anything starts with
 * one line naming the flag and the reason. */
#ifndef CLIQO_AGENT_CONFIG_H
#define CLIQO_AGENT_CONFIG_H

#define AGENT_METRICS_ADDR "127.0.0.1:9090" /* /metrics stays on loopback unless configured */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/log.h"

/* The modules' rate to their own API server (--kube-api-qps; docs/offloading.md, "Requests"). */
#define AGENT_KUBE_QPS   200
#define AGENT_KUBE_QPS_S "200"
/* Informers up to this many objects are replayed at once to modules that start (--replay-at-once).
 */
#define AGENT_REPLAY_AT_ONCE   1000
#define AGENT_REPLAY_AT_ONCE_S "1000"
#define AGENT_MAX_IDENTITY     128
#define AGENT_MAX_WEBHOOK_CNS  16 /* --webhook-client-cn names (httpd's HTTPD_MAX_CLIENT_CNS) */
#define AGENT_CN_MAX           64 /* bytes of one (httpd's HTTPD_CN_MAX) */

struct agent_config {
    const char *kubeconfig; /* NULL: $KUBECONFIG, ~/.kube/config, in-cluster */
    const char *namespace_;
    const char *http_addr;
    const char
        *metrics_addr; /* NULL: http_addr when it is a loopback address, else AGENT_METRICS_ADDR */
    const char *auth_addr;
    char identity[AGENT_MAX_IDENTITY + 1];
    bool leader_elect;
    const char *lease_name;
    uint64_t lease_duration_ms, renew_deadline_ms, retry_period_ms;
    uint64_t shutdown_timeout_ms;
    const char *api_server_url; /* peering: URL peers use for our apiserver (NULL: kubeconfig's) */
    const char *auth_url;       /* peering: our auth URL sent to peers (NULL: ClusterConfig's) */
    uint64_t unpeer_timeout_ms; /* peering: 0 = default */
    enum log_level log_level;
    uint64_t peer_check_ms; /* peering: re-check period of established peerings; 0 = default */
    /* The modules' client of this cluster's API server: requests per second and burst. */
    unsigned kube_api_qps, kube_api_burst;
    /* Cached objects an informer may hold to be replayed in one loop iteration (larger: in slices).
     */
    unsigned replay_at_once;
    unsigned loop_trace_ms;    /* --loop-trace-ms: stacks of long loop iterations (0: off) */
    unsigned vk_pod_creations; /* --vk-pod-creations: per virtual kubelet (0: the default) */
    const char *list_encoding; /* --list-encoding: "protobuf" (default) or "json" */
    /* Offloading (docs/offloading.md). */
    const char *kubelet_addr; /* the kubelet API listener of the virtual nodes (default :10250) */
    unsigned kubelet_port;    /* its port, published in the virtual nodes' daemonEndpoints */
    const char *node_address; /* the virtual nodes' InternalIP (default $POD_IP, else 127.0.0.1) */
    const char *webhook_addr; /* the admission webhooks' HTTPS listener (default :9443) */
    const char *webhook_url;  /* the URL the API server calls them at (NULL: the Service) */
    /* The CA bundle (file) of the API server's webhook client certificate: the webhooks then
     * require that certificate (NULL: unauthenticated, docs/security.md). */
    const char *webhook_client_ca;
    /* The common names accepted in it (none: any certificate of the bundle). */
    char webhook_client_cn[AGENT_MAX_WEBHOOK_CNS][AGENT_CN_MAX + 1];
    size_t nwebhook_client_cn;
    /* The gateway mode (`cliqo-agent gateway`, docs/dataplane.md): only the gateway module runs. */
    bool gateway;
    const char *tunnel_interface; /* the WireGuard interface (default cliqo0) */
    const char *gateway_endpoint; /* numeric HOST:PORT peers reach (default $POD_IP:51820) */
    unsigned underlay_mtu;        /* 0: the MTU of the interface holding the endpoint's address */
    uint64_t wg_keepalive_ms;     /* persistent keepalive (default 25 s) */
    const char *wireguard_go;     /* the userspace WireGuard program (default wireguard-go) */
    /* The per-node mode (`cliqo-agent node`, docs/dataplane.md section 5): only the node module. */
    bool node;
    const char *node_name; /* the Node it runs on (default $NODE_NAME; required) */
    bool help, version;
    /* The settings of a program that embeds the agent's skeleton (cliqo-broker's struct
     * brk_config); NULL for cliqo-agent. */
    const void *app;
};

/* Parses argv (strings are borrowed from it). Returns 0 or -EINVAL with the reason in err. The
 * identity defaults to $POD_NAME, else "<hostname>_<pid>". argv[1] "gateway" selects the gateway
 * mode (cfg->gateway; its Lease defaults to cliqo-gateway), "node" the per-node mode (cfg->node,
 * node_name from --node-name or $NODE_NAME; no leader election unless asked). */
int agent_config_parse(int argc, char **argv, struct agent_config *cfg, char *err, size_t errlen);
/* "<n>ms", "<n>s", "<n>m", "<n>h" → milliseconds. Returns 0, -EINVAL or -ERANGE. */
int agent_parse_duration(const char *s, uint64_t *ret_ms);
/* Writes the --help text to f. */
void agent_usage(FILE *f);

#endif
