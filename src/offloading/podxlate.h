/* podxlate: the pure part of the pods reflector (docs/offloading.md, "Pods"): what the remote pod
 * looks like, what the home pod's status becomes, which Event is forwarded, and what a reconcile
 * pass does next. No event loop, no I/O: pods.c feeds it the cached objects and performs the
 * action it returns; tests/unit/test-vk-pods.c checks it with tables.
 *
 * Everything that comes from the provider (remote pods, remote Events) is hostile input: every
 * function here bounds what it copies (counts, string lengths), checks types and values, and never
 * lets a remote object name a local one (the caller maps remote -> home through its own pairs;
 * these functions only take fields of the remote object that describe that object).
 *
 * Ownership: inputs are borrowed; returned json_t are new references the caller owns. */
#ifndef CLIQO_OFFLOADING_PODXLATE_H
#define CLIQO_OFFLOADING_PODXLATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bounds on what is copied from the provider. */
#define VKP_MAX_MESSAGE    1024 /* status.message, condition and Event messages */
#define VKP_MAX_REASON     128
#define VKP_MAX_CONDITIONS 16
#define VKP_MAX_CONTAINERS 64  /* per list (containers, init containers) */
#define VKP_MAX_STRING     512 /* image, imageID, containerID, other short strings */
#define VKP_EVENT_NAME_MAX 253

/* Our condition on home pods while the provider is unreachable (False) or after (True). */
#define VKP_COND_REACHABLE "cliqo.io/ProviderReachable"
/* The reason of PodScheduled=False when the provider refused the pod. */
#define VKP_REASON_REFUSED "ProviderRefused"
/* Remote annotation listing the home annotation keys propagated (comma-separated), so that a key
 * removed on the home pod is removed on the remote one while annotations the provider's own
 * controllers add are left alone. */
#define VKP_ANNOT_PROPAGATED "offloading.cliqo.io/propagated-annotations"
/* Prefix of the containerIDs shown on home pods. */
#define VKP_CONTAINER_ID_PREFIX "cliqo://"

struct vkp_ids {
    const char *home_id; /* this cluster: label origin */
    const char *peer_id; /* the provider: label destination */
};

/* An IP translation (struct vk_reflect_env's remote_to_home_ip): 0 and the address in out, or a
 * negative errno (the address is then shown as it is). */
typedef int (*vkp_ip_fn)(void *data, const char *ip, char *out, size_t size);

/* ---- home -> remote ----------------------------------------------------------------------------
 */

/* True for a pod whose controller is a DaemonSet (never offloaded). */
bool vkp_is_daemonset(const json_t *pod);
/* Pod phases that never change again. */
bool vkp_terminal(const json_t *pod);

/* The pod to create in remote_ns for a home pod: same name, remote_ns, home labels and annotations
 * plus ours, the spec without what only makes sense at home or would choose the provider's nodes,
 * priorities or runtimes (see docs/offloading.md: nodeName, nodeSelector, the node affinity, every
 * toleration, the service account and its token volumes and mounts, priority, priorityClassName,
 * runtimeClassName, scheduler, preemption, ephemeral containers, overhead) and with node affinity
 * liqo.io/type NotIn [virtual-node]: nothing the provider's placement check refuses
 * (admission/placement.h).
 * Returns 0, or -EINVAL with a reason in err (no name, UID, namespace or containers), -ENOMEM. */
int vkp_remote_pod(const json_t *home, const char *remote_ns, const struct vkp_ids *ids,
                   json_t **ret, char *err, size_t errlen);

/* How a remote pod of the same name relates to the home pod. */
enum vkp_match {
    VKP_OURS,    /* origin is us and home-uid is the home pod's UID */
    VKP_STALE,   /* origin is us, another UID (an earlier incarnation): delete, create again */
    VKP_FOREIGN, /* not created by us: never touched */
};
enum vkp_match vkp_classify(const json_t *home, const json_t *remote, const char *home_id);

/* The strategic-merge patch that brings the remote pod in line with the home pod (labels,
 * annotations, container images, activeDeadlineSeconds where the API allows the change), or NULL
 * when nothing differs. */
json_t *vkp_remote_update(const json_t *home, const json_t *remote, const struct vkp_ids *ids);

/* ---- remote -> home
 * ------------------------------------------------------------------------------ */

struct vkp_status_ctx {
    const char *node_address; /* hostIP of home pods: the virtual node's address */
    vkp_ip_fn remote_to_home; /* an address it does not translate is dropped; NULL: addresses
                                 shown as they are */
    void *ip_data;
    bool reachable;          /* the provider answers (keepalive) */
    const char *unreachable; /* why not, for the condition's message */
    const char *now;         /* RFC 3339, for lastTransitionTime of our own conditions */
};

/* The status the home pod should show for this remote pod (remote may be NULL: the home pod keeps
 * what it shows, with the reachability condition). Phase, conditions, message, reason, hostIP,
 * podIP(s) translated, startTime, container statuses (only for containers the home pod has,
 * containerID prefixed cliqo://), qosClass, and cliqo.io/ProviderReachable. */
json_t *vkp_home_status(const json_t *home, const json_t *remote, const struct vkp_status_ctx *ctx);
/* The home pod's status with PodScheduled=False and `reason` (e.g. ProviderRefused,
 * DaemonSetNotOffloaded, NamespaceNotOffloaded) and message, and the reachability condition. */
json_t *vkp_unscheduled_status(const json_t *home, const char *reason, const char *message,
                               const struct vkp_status_ctx *ctx);
/* Whether a Pending status (vkp_home_status) would show the home pod's user nothing that Pending
 * alone does not: no container or init container status (kubectl's ContainerCreating, Init:0/1,
 * ErrImagePull), no PodScheduled=False (the provider cannot place it), no reason. The provider's
 * scheduler having placed the pod, or not yet, is quiet: the home pod is already scheduled, on the
 * virtual node. */
bool vkp_status_quiet(const json_t *status);
/* Whether a provider's refusal of a create (err, the Status message) is one that passes by itself
 * in a moment, not a decision about the pod: in a namespace just made for the consumer, the API
 * server's ServiceAccount admission refuses every pod (403 "error looking up service account
 * NS/default: serviceaccount \"default\" not found") until the service account controller has
 * made the namespace's default account. */
bool vkp_refusal_transient(int err, const char *message);
/* The merge patch (status part) that turns the home pod's status into `want`, or NULL when it
 * already shows it. Keys we manage that `want` lacks are set to null. */
json_t *vkp_status_patch(const json_t *home, const json_t *want);

/* ---- Events -------------------------------------------------------------------------------------
 */

/* The reason of the provider's scheduler placing a pod on one of its nodes: not forwarded (the home
 * pod has its own from the home scheduler, and which of B's nodes runs it is B's business); the
 * events informer asks B not to send them (VKP_EVENT_SELECTOR). One write less per pod at home. */
#define VKP_EVENT_REASON_SCHEDULED "Scheduled"
#define VKP_EVENT_SELECTOR         "involvedObject.kind=Pod,reason!=" VKP_EVENT_REASON_SCHEDULED

/* The Event to create in the home namespace for a remote Event about the remote pod of `home`, or
 * NULL when it is not to be forwarded (malformed, not about a Pod, reason Scheduled, not about this
 * incarnation of the remote pod: remote_uid is the cached remote pod's UID). Its name is derived
 * from the remote Event's UID (ret_name, VKP_EVENT_NAME_MAX + 1 bytes), so forwarding the same
 * Event twice names the same object. Source component "cliqo-vk/<peer>". */
json_t *vkp_home_event(const json_t *remote_ev, const json_t *home, const char *remote_uid,
                       const char *peer_id, char *ret_name);

/* ---- what a reconcile pass does
 * -------------------------------------------------------------------- */

enum vkp_action {
    VKP_NOTHING,
    VKP_WAIT,          /* something is in progress or not known yet: an event will requeue */
    VKP_CREATE,        /* create the remote pod */
    VKP_DELETE_REMOTE, /* delete the remote pod (stale, orphan, or the home pod is deleting) */
    VKP_DELETE_HOME,   /* the remote pod is gone and the home pod is deleting: grace 0 */
    VKP_UPDATE_REMOTE, /* vkp_remote_update's patch */
    VKP_STATUS,        /* write the home pod's status (vkp_status_patch) */
};

struct vkp_situation {
    const json_t *home;   /* the home pod, NULL when gone */
    const json_t *remote; /* the remote pod of this name (origin us), NULL when absent */
    const char *home_id;
    bool home_synced, remote_synced; /* the informers' first lists are in */
    bool mapped;                     /* the namespace has an Accepted pair */
    bool reachable;                  /* the provider answers */
    bool refused;                    /* the last create was refused (backoff pending) */
    bool status_differs;             /* the wanted home status is not what it shows */
    bool update_remote;              /* vkp_remote_update has a patch */
    bool network_pending;            /* the pod-CIDR remapping is pending: no new remote pod */
    bool home_deleted; /* we deleted this home pod (grace 0): the informer has not shown it gone */
};

enum vkp_action vkp_decide(const struct vkp_situation *s);
const char *vkp_action_name(enum vkp_action a);

/* ---- informer transforms
 * ------------------------------------------------------------------------- */

/* Drops from a home pod what the reflector never reads (it keeps what it copies to the remote pod).
 */
void vkp_home_transform(json_t *pod);
/* Keeps of a remote pod only what the reflector reads: metadata (name, namespace, uid,
 * resourceVersion, labels, annotations, deletion), container names and images,
 * activeDeadlineSeconds, and a bounded status. */
void vkp_remote_transform(json_t *pod);
/* Keeps of a remote Event only what is forwarded. */
void vkp_event_transform(json_t *ev);

/* RFC 3339 check and normalisation to whole seconds ("2024-01-02T03:04:05Z"); false when s is not
 * of that form (UTC, optional fraction). out has at least 21 bytes. */
bool vkp_rfc3339_seconds(const char *s, char *out, size_t size);

#endif
