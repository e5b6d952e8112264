/* peers: per-peer units, the one home of everything that talks to a peer's API server
 * (docs/architecture.md, "Per-peer units").
 *
 * A registry holds one unit per peer cluster ID. A unit owns up to PU_ROLE_MAX clients to the
 * peer's API server (one per credential role), the informers that run against them, and work
 * queues for per-peer work. Modules acquire a unit under their name while they work with the peer
 * and release it after; the first acquisition creates the unit, the last release destroys it (from
 * a loop callback, never inside the caller's stack).
 *
 * Limits: a peer is input from someone who may be hostile. Its answers are bounded (16 MiB per
 * response), so are the collections its informers cache (100,000 objects), and so are the units
 * (PU_MAX_UNITS), their owners, informers and queues.
 *
 * Clients: pu_set_credential() installs a kubeconfig (YAML or JSON text) for a role, tagged with a
 * version (e.g. the Secret's resourceVersion): the same version again is a no-op; another one
 * replaces the client. A replaced or removed client is aborted (kapi_client_abort: every pending
 * request completes with -ECANCELED, its callback runs) and the role's informers are created again
 * on the new client. Each client has its own token bucket and reports every request to the
 * registry's metrics (cliqo_peer_requests_total{peer,role,verb,code},
 * cliqo_peer_request_duration_seconds{peer,role,verb}); the series of a unit are removed with it.
 *
 * Informers: pu_informer() registers handlers for (role, options): the informer runs on the role's
 * current client and is re-created on each new client (handlers then see on_add for the objects of
 * the new list; no on_delete is synthesised for the old client's objects). Without a client for the
 * role the registration waits. A handle gives the current inf_informer (or NULL).
 *
 * Teardown of a unit: its informers are freed, its clients aborted, its queues closed (keys being
 * processed are abandoned: wq_done is then a no-op), its metrics series removed, and it is freed.
 * Owners must not use a unit after releasing it, nor a handle after closing it.
 *
 * Ownership: strings are copied. Everything returned is borrowed from the registry.
 * Single-threaded: every call on the registry's loop. */
#ifndef CLIQO_AGENT_PEERS_H
#define CLIQO_AGENT_PEERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "metrics/metrics.h"
#include "kube/api.h"
#include "kube/informer.h"
#include "kube/workqueue.h"

enum pu_role {
    PU_PEERING,   /* our peering identity on the peer (Secret remote-identity-<id>) */
    PU_REQUESTER, /* the credential the peer handed us with its PeeringRequest (pr-<id>) */
    PU_VK,        /* the virtual kubelet's credential on the peer (vk-kubeconfig-secret-<id>) */
    PU_ROLE_MAX,
};

#define PU_MAX_UNITS  1024
#define PU_MAX_OWNERS 16
#define PU_MAX_INFS   8192 /* informer registrations per unit: a few per offloaded namespace */
#define PU_MAX_QUEUES 8
#define PU_ID_MAX     64 /* cluster IDs are at most 63 characters */
#define PU_CONFIG_MAX (256u << 10)

struct pu_registry;
struct pu_unit;
struct pu_inf;

/* Options of every client a registry makes (zero: the defaults, QPS 200, burst 400, 10 s;
 * docs/offloading.md, "Requests"). */
struct pu_client_options {
    double qps;
    int burst;
    long timeout_ms;
};

/* Creates a registry on loop. metrics may be NULL (no metrics). Returns 0, -EINVAL or -ENOMEM. */
int pu_registry_new(uv_loop_t *loop, struct metrics_registry *metrics,
                    const struct pu_client_options *o, struct pu_registry **ret);
/* Shutdown, first step: aborts every client of every unit (pending requests complete with
 * -ECANCELED while their owners still exist); units stay until released or freed. NULL-safe. */
void pu_registry_abort(struct pu_registry *reg);
/* Destroys every unit left at once (owners are gone: agent shutdown) and frees the registry.
 * NULL-safe. */
void pu_registry_free(struct pu_registry *reg);
size_t pu_registry_count(const struct pu_registry *reg);

/* Request rates of the clients to peers (ClusterConfig spec.peeringConfig.peerClient). */
#define PU_MAX_RATES 1024
struct pu_rate {
    char id[PU_ID_MAX]; /* the peer's cluster ID */
    double qps;
    int burst;
};
/* Replaces the rates: qps and burst for every peer (0: the registry's options), and the overrides
 * of some peers. Applied at once to the clients that exist (requests already waiting included) and
 * to those made later. Returns 1 (changed), 0 (the same as before), -EINVAL (a rate or burst not
 * above 0 in an override, an empty ID) or -E2BIG (more than PU_MAX_RATES overrides); nothing
 * changes on error. */
int pu_set_rates(struct pu_registry *reg, double qps, int burst, const struct pu_rate *per,
                 size_t n);
/* The rate and burst a unit's clients are given. */
void pu_rate_of(const struct pu_unit *u, double *ret_qps, int *ret_burst);

/* The unit of peer `id` (a valid cluster ID), created if needed, with one more reference for
 * `owner` (a short static name, e.g. "broadcaster"; acquiring twice under the same owner is one
 * reference). Returns 0, -EINVAL, -ENOSPC (too many units or owners) or -ENOMEM. */
int pu_acquire(struct pu_registry *reg, const char *id, const char *owner, struct pu_unit **ret);
/* Drops owner's reference; the last one schedules the unit's destruction. A no-op when owner holds
 * none. */
void pu_release(struct pu_unit *u, const char *owner);
/* The unit of peer id, or NULL; no reference is taken. */
struct pu_unit *pu_find(struct pu_registry *reg, const char *id);
bool pu_holds(const struct pu_unit *u, const char *owner);
const char *pu_id(const struct pu_unit *u);
struct pu_registry *pu_registry(const struct pu_unit *u);

/* Installs the credential of a role: a kubeconfig (YAML or JSON, at most PU_CONFIG_MAX bytes; it
 * may not refer to local files) and its version. Returns 1 when the client was (re)made, 0 when the
 * version was already installed, or a negative errno with a one-line reason in err (the previous
 * client, if any, is kept). */
int pu_set_credential(struct pu_unit *u, enum pu_role role, const char *kubeconfig, size_t len,
                      const char *version, char *err, size_t errlen);
/* Removes a role's client (aborting its requests); its informer registrations wait for a new one.
 */
void pu_drop_credential(struct pu_unit *u, enum pu_role role);
/* The client of a role, or NULL. */
struct kapi_client *pu_client(const struct pu_unit *u, enum pu_role role);
/* The namespace of the role's kubeconfig context (our tenant namespace on the peer), or NULL; a
 * valid namespace name (the kubeconfig loader checks it). Borrowed from the credential: valid
 * until the role's credential is replaced or removed (pu_set_credential, pu_drop_credential, the
 * unit's teardown), so copy it to keep it across a call that may run callbacks. */
const char *pu_namespace(const struct pu_unit *u, enum pu_role role);
/* The version installed for a role, or NULL. */
const char *pu_credential_version(const struct pu_unit *u, enum pu_role role);
/* Reachability of the role's API server as seen by its requests: *ret_ok is true when the last
 * finished request got an HTTP answer (any code); *ret_since_ms is when that state began (loop
 * time). -ENOENT without a client or before any request finished. */
int pu_reachable(const struct pu_unit *u, enum pu_role role, bool *ret_ok, uint64_t *ret_since_ms);

/* Registers handlers on an informer of the role's client, built from o (o->resource must stay
 * valid: use the static kapi_resource tables; strings are copied). The informer starts at once if
 * the role has a client. Returns 0, -EINVAL, -ENOSPC or -ENOMEM. */
int pu_informer(struct pu_unit *u, enum pu_role role, const struct inf_options *o,
                const struct inf_handlers *h, void *data, struct pu_inf **ret);
/* The running informer of a registration, or NULL (no client yet). */
struct inf_informer *pu_inf_get(const struct pu_inf *pi);
/* Stops and frees a registration (its informer); NULL-safe. Not from inside its own handlers. */
void pu_informer_close(struct pu_inf *pi);

/* A work queue on the registry's loop, owned by the unit (closed with it). Returns 0, -EINVAL,
 * -ENOSPC or -ENOMEM. */
int pu_queue(struct pu_unit *u, const struct wq_options *o, wq_process_fn fn, void *data,
             struct wq_queue **ret);

/* Role names for logs and metrics: "peering", "requester", "vk". */
const char *pu_role_name(enum pu_role role);

#endif
