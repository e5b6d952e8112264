/* agent: the skeleton of cliqo-agent, the daemon of one cluster, and the interface of its modules.
 *
 * One process, one libuv loop. The agent owns the Kubernetes client, the HTTP server of health and
 * metrics (--http-addr), the auth HTTPS server (--auth-addr, created by the module that serves it),
 * the metrics registry, shared informers, work queues and leader election; controllers are modules
 * listed in a static table (modules.c) and plugged in through struct agent_module.
 *
 * Life cycle of a module (all calls on the loop):
 *   init(a)   once per generation, in table order, before anything runs: register HTTP
 *             routes, informers (agent_informer), queues (agent_queue), metrics, collectors.
 *             Failure: the agent exits 1 (fini runs for the modules already initialised).
 *   start(a)  when this replica becomes the leader (or at once with --leader-elect=false), in
 *             table order; at most once per generation. Start acting: informer handlers registered
 *             as leader-only receive events from now on (the objects already cached are replayed
 *             as on_add right after every start() has run). Failure: the agent gives up leadership
 *             and exits 1.
 *   stop(a)   on losing leadership or at shutdown, in reverse order, also for a module whose start
 *             was never called: must be idempotent and must stop acting at once (no new writes).
 *             The agent shuts the module's queues down right after.
 *   fini(a)   at shutdown and at the end of a generation, in reverse order, after the HTTP
 *             servers have closed (pending requests were aborted): free everything, cancel
 *             requests in flight.
 *   ready(a)  asked by /readyz on every replica, leader or not (standbys are ready when they could
 *             take over): NULL means always ready.
 * Any of them may be NULL. A replica that loses leadership stops its modules, then tears down
 * everything they hold (fini, peer units, informers, queues, their client and metrics registry) and
 * makes them again (init in table order, on zeroed state) in the same process while it campaigns
 * on: a new generation. Within a generation modules never see start() after stop().
 *
 * Ownership: everything returned by the accessors is borrowed and valid until fini. */
#ifndef CLIQO_AGENT_H
#define CLIQO_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "metrics/metrics.h"
#include "httpd/httpd.h"
#include "kube/api.h"
#include "kube/informer.h"
#include "kube/workqueue.h"

struct agent;
struct agent_config;
struct pu_registry;

struct agent_module {
    const char *name;
    int (*init)(struct agent *a);
    int (*start)(struct agent *a); /* when leading */
    void (*stop)(struct agent *a); /* on losing leadership or shutdown; idempotent */
    void (*fini)(struct agent *a);
    bool (*ready)(struct agent *a);
    /* A module whose state begins with struct ctl_module (agent/ctl.h): a NULL start, stop or
     * fini is the skeleton's ctl_module_start, ctl_module_stop or ctl_module_fini. */
    bool ctl;
};

/* The module table (modules.c), terminated by an entry with a NULL name; at most AGENT_MAX_MODULES.
 */
#define AGENT_MAX_MODULES 32
extern const struct agent_module agent_modules[];

uv_loop_t *agent_loop(struct agent *a);
struct kapi_client *agent_kube(struct agent *a);
const struct kc_config *agent_kubeconfig(struct agent *a);
/* The command line (listen addresses, offloading settings). */
const struct agent_config *agent_config(struct agent *a);
const char *agent_namespace(struct agent *a);
const char *agent_identity(struct agent *a);
bool agent_is_leader(struct agent *a);
bool agent_shutting_down(struct agent *a);
struct metrics_registry *agent_metrics(struct agent *a);
/* The registry of per-peer units (agent/peers.h): every client, informer and queue that talks to a
 * peer's API server lives in the unit of that peer. */
struct pu_registry *agent_peers(struct agent *a);

/* A module's own state, kept by the agent from the module's init (where it is set) to its fini
 * (after which it is forgotten), so that no module keeps it in a file-scope variable. name is the
 * module's name in the table. Setting fails with -ENOENT for a name not in the table. */
int agent_set_module_data(struct agent *a, const char *name, void *data);
void *agent_module_data(struct agent *a, const char *name);

/* Services one module offers the others through the agent, so that no feature includes another's
 * header for them. A provider registers in its init (it is cleared when the module generation
 * ends); a caller gets -ENOENT while none is registered. */
struct shr_list;
/* The amounts this process last advertised to consumer `id` (the broadcaster's record), and the
 * name it used for the consumer; the provider gets the agent asked, to find its own state. */
typedef int (*agent_last_offer_fn)(struct agent *a, const char *id, struct shr_list *ret,
                                   char *name, size_t namelen);
void agent_set_last_offer(struct agent *a, agent_last_offer_fn fn);
int agent_last_offer(struct agent *a, const char *id, struct shr_list *ret, char *name,
                     size_t namelen);

/* What the module `network` knows of peer `id`'s pod-CIDR remapping (strings empty when unknown).
 */
#define AGENT_CIDR_STR_MAX 50 /* a CIDR's text and its NUL (network/ipam.h's CIDR_STR_MAX) */
struct agent_peer_network {
    char remote_cidr[AGENT_CIDR_STR_MAX];   /* the peer's pod CIDR, as it announced it */
    char remote_mapped[AGENT_CIDR_STR_MAX]; /* where this cluster sees the peer's pods */
    char local_mapped[AGENT_CIDR_STR_MAX];  /* where the peer sees this cluster's pods */
    bool settled;                           /* both directions known */
    /* The peer's ForeignCluster says spec.networkingEnabled: No: no NetworkConfig is exchanged,
     * nothing is remapped (the CIDRs are empty, settled is false) and nothing waits for it. */
    bool disabled;
    char message[256]; /* why not settled (or disabled), or a refusal */
};
typedef int (*agent_peer_network_fn)(struct agent *a, const char *id,
                                     struct agent_peer_network *ret);
void agent_set_peer_network(struct agent *a, agent_peer_network_fn fn);
/* Returns 0 and the state, or -ENOENT for a peer the provider does not know. */
int agent_peer_network(struct agent *a, const char *id, struct agent_peer_network *ret);
/* Called (on the loop) whenever the state of a peer changes: the provider says so with
 * agent_peer_network_changed. A module subscribes from its init, before or after the provider's;
 * subscriptions are cleared with the module generation. One subscriber per module; returns 0 or
 * -ENOSPC. */
typedef void (*agent_peer_network_changed_fn)(const char *id, void *data);
int agent_subscribe_peer_network(struct agent *a, agent_peer_network_changed_fn fn, void *data);
void agent_peer_network_changed(struct agent *a, const char *id);

/* The health and metrics server (plain HTTP on --http-addr). Modules may add routes in init. */
struct httpd_server *agent_http_server(struct agent *a);
/* The auth endpoint's HTTPS server on --auth-addr, created by the first call with the PEM
 * certificate and key (the module reads them from the auth-tls Secret). The caller adds routes and
 * calls httpd_start; the agent closes it at shutdown. Later calls return the same server (the
 * certificate arguments are then ignored). Returns 0, -EINVAL, -ENOTSUP (no TLS in MHD), -ENOMEM,
 * or -ESHUTDOWN. */
int agent_auth_server(struct agent *a, const char *cert_pem, const char *key_pem,
                      struct httpd_server **ret);

/* Informer handlers of a module receive events only while this replica leads, unless registered
 * with AGENT_INF_ALWAYS (data every replica needs, e.g. the token the auth endpoint checks). */
#define AGENT_INF_ALWAYS 0x1u

/* Registers handlers on the shared informer of (resource, namespace, label selector): the first
 * registration creates it, later ones (from any module) share its list, watch and store. ns NULL:
 * all namespaces; label_selector NULL: everything. Informers start after every module's init (or
 * at once when registered later; such late handlers get no replay of cached objects). h may be
 * NULL (store access only). *ret (may be NULL) is the informer, for inf_get / inf_foreach /
 * inf_synced; the agent frees it. Returns 0, -EINVAL, -ENOSPC or -ENOMEM. */
int agent_informer(struct agent *a, const struct kapi_resource *resource, const char *ns,
                   const char *label_selector, unsigned flags, const struct inf_handlers *h,
                   void *data, struct inf_informer **ret);

/* agent_informer with full informer options (field selector, transform, page size, resync, store
 * layout). Registrations share an informer only when resource, namespace, both selectors and the
 * transform function are equal; the transform of a shared informer receives NULL data. */
int agent_informer_ex(struct agent *a, const struct inf_options *o, unsigned flags,
                      const struct inf_handlers *h, void *data, struct inf_informer **ret);

/* Creates a work queue on the agent's loop (wq_new) that the agent tracks: its depth is exported as
 * cliqo_workqueue_depth{queue=name}, it is shut down after the modules' stop() and closed after
 * their fini(). Returns 0, -EINVAL, -ENOSPC or -ENOMEM. */
int agent_queue(struct agent *a, const char *name, const struct wq_options *o, wq_process_fn fn,
                void *data, struct wq_queue **ret);

/* Asks the agent to shut down (as SIGTERM does), with this exit status. */
void agent_shutdown(struct agent *a, int exit_code);

#endif
