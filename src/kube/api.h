/* kapi: event-driven Kubernetes REST client on libuv + libcurl multi + jansson.
 *
 * One struct kapi_client per API server. Every request runs on the caller's libuv loop: it waits
 * for a token of the client-side rate limiter (QPS and burst, as client-go), is then handed to a
 * libcurl multi handle driven by curl_multi_socket_action from the loop (HTTP/2 when the server
 * offers it, so many watches share one connection), and its callback runs on the loop when the
 * response is complete.
 *
 * TLS is always verified against the kubeconfig's CA (or the system store when none is given)
 * unless the kubeconfig says insecure-skip-tls-verify. Response bodies are bounded per kind: a list
 * by options.max_body (default 32 MiB: a page of 500 pods), one object (get, create, update,
 * patch, delete) by KAPI_MAX_OBJECT_BODY or less (etcd stores at most 1.5 MiB per object); a larger
 * body fails the request with -E2BIG, never grows memory without bound. Bodies are decoded with
 * jsonb_load() (common/jsonb.h): a body whose decoding would take more than 32 times its size in
 * heap fails with -E2BIG too.
 *
 * Errors: a request's result carries `err`, 0 for a 2xx answer, otherwise a negative errno that
 * names the class of failure (see kapi_err_from_status) and, for API errors, the decoded Status
 * object (code, reason, message). Optimistic-concurrency conflicts are -ESTALE: the caller re-reads
 * and retries.
 *
 * Ownership: the client borrows the loop and copies what it needs from the kc_config. Results are
 * borrowed for the duration of the callback; keep the JSON body with json_incref. */
#ifndef CLIQO_KUBE_API_H
#define CLIQO_KUBE_API_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <uv.h>

#include "common/strutil.h"
#include "kube/kubeconfig.h"

struct kapi_client;
struct kapi_call;

/* What a finished request looked like, for metrics (kapi_client_options.observe). */
struct kapi_observation {
    const char *method; /* "GET", ...; borrowed */
    bool streaming;     /* a watch (the duration is the stream's life) */
    long http_status;   /* 0 when no response arrived */
    int err;            /* as kapi_result.err */
    double seconds;     /* from the start of the transfer (after the rate limiter) to its end */
};
typedef void (*kapi_observe_fn)(struct kapi_client *c, const struct kapi_observation *o,
                                void *data);
/* What metrics count an observation under, its verb and code: "WATCH" for a watch, else its method;
 * its HTTP status, or "error" when no answer arrived. False for a request this client aborted
 * itself (it says nothing about the server): not to be counted. */
bool kapi_observation_labels(const struct kapi_observation *o, const char **ret_verb, char *code,
                             size_t codelen);

struct kapi_client_options {
    double qps;             /* client-side rate limit (the most; 429s lower it); default 50 */
    int burst;              /* default 100 */
    size_t max_body;        /* largest response body accepted (lists); default 32 MiB */
    long timeout_ms;        /* per request (not watches); default 30 s */
    const char *user_agent; /* default "cliqo/<version>" */
    /* After a 429 without Retry-After, the first wait before sending again (doubling each time, at
     * most 10 s); default 100 ms. Tests make it short. */
    long retry_base_ms;
    /* Called on the loop for every request that ends (also failed and cancelled-by-abort ones),
     * just before its callback. NULL: none. */
    kapi_observe_fn observe;
    void *observe_data;
};

/* A decoded metav1.Status (or a synthesised one for transport errors). Strings are borrowed. */
struct kapi_status {
    long code;           /* HTTP status code, 0 when no response was received */
    const char *reason;  /* e.g. "NotFound", "Conflict", "AlreadyExists", "Expired"; "" if none */
    const char *message; /* human-readable; never NULL */
};

struct kapi_result {
    int err;          /* 0, or a negative errno (see kapi_err_from_status) */
    long http_status; /* 0 when no HTTP response arrived */
    json_t *body;     /* parsed JSON body or NULL; borrowed */
    const char *raw;  /* raw body bytes (NUL-terminated) or ""; borrowed */
    size_t raw_len;
    struct kapi_status status;
};

typedef void (*kapi_cb)(struct kapi_client *c, const struct kapi_result *res, void *data);
/* Streaming: called for each chunk of a 2xx body as it arrives. Return 0 to continue or a negative
 * errno to abort the request (its kapi_cb then reports that error), or KAPI_CHUNK_PAUSE to leave
 * the chunk unread and pause the transfer until kapi_call_resume() (the same chunk comes again
 * then: a receiver that has worked long enough in this loop iteration yields to the loop). Never
 * call kapi_call_cancel on the same call from inside it. */
typedef int (*kapi_chunk_cb)(struct kapi_client *c, const char *chunk, size_t len, void *data);
#define KAPI_CHUNK_PAUSE 1

struct kapi_request {
    const char *method; /* "GET", "POST", "PUT", "PATCH", "DELETE" */
    const char *path;   /* absolute path with query string, e.g. "/api/v1/pods?limit=500" */
    const char *body;   /* request body or NULL; copied */
    size_t body_len;
    const char *content_type; /* default application/json when a body is given */
    kapi_chunk_cb on_chunk;   /* streaming body (watches); NULL buffers the whole body */
    long timeout_ms;          /* 0: the client default; -1: none (watches) */
    long low_speed_secs;      /* abort when nothing arrives for this long (watches); 0: off */
    size_t max_body;          /* 0: the client's max_body; else the smaller of the two */
    bool protobuf; /* accept Kubernetes' protobuf encoding first, then JSON (kube/kpb.h): the
                      body is then either; an error's Status is turned into JSON either way */
    /* A 2xx JSON body is decoded only down to the object's metadata, without managedFields:
     * res.body is {"metadata": {...}} (res.raw still has the whole text). For writers that read
     * only what the server made of the version they wrote (resourceVersion, uid): a pod's answer
     * is decoded in a fraction of the time. A body whose metadata cannot be found this way is
     * decoded whole. Errors are decoded whole. */
    bool metadata_only;
};

#define KAPI_MAX_OBJECT_BODY ((size_t)3 << 20) /* a response of one object */

int kapi_client_new(uv_loop_t *loop, const struct kc_config *cfg,
                    const struct kapi_client_options *opts, struct kapi_client **ret);
/* Cancels every request (their callbacks are not called) and frees the client once its libuv
 * handles have closed. NULL-safe. Must not be called from inside one of its callbacks' curl context
 * (the callbacks of this API are fine). */
void kapi_client_close(struct kapi_client *c);
/* Like kapi_client_close, but first completes every request still queued or in flight with
 * err -ECANCELED (reason "Cancelled"), running its callback, so that owners free what they keep
 * per request. New requests sent from those callbacks fail with -ECANCELED. NULL-safe. */
void kapi_client_abort(struct kapi_client *c);
uv_loop_t *kapi_client_loop(struct kapi_client *c);
const char *kapi_client_server(struct kapi_client *c);
/* Number of requests queued or in flight (also those waiting to be sent again after a 429). */
size_t kapi_client_pending(struct kapi_client *c);
/* The request rate in force: the configured qps, or less after 429 answers (it grows back as the
 * server answers again). */
double kapi_client_qps(const struct kapi_client *c);
/* Sets the most requests per second and the burst (both > 0; else -EINVAL): the rate in force
 * becomes qps, also for requests already waiting. Returns 0. */
int kapi_client_set_rate(struct kapi_client *c, double qps, int burst);
/* 429 answers seen by this client (each one was sent again, up to 10 times a request). */
uint64_t kapi_client_throttled(const struct kapi_client *c);
/* The server's version as noted from its GET /version (kapi_client_note_version, given that
 * document: "major" and "minor", of which the leading digits count, "20+" being 20): 0 with *major
 * and *minor, or -EAGAIN when none was noted. kapi_client_note_version returns 0 or -EBADMSG. */
int kapi_client_version(const struct kapi_client *c, int *major, int *minor);
int kapi_client_note_version(struct kapi_client *c, const json_t *version);

/* How the client reaches its server, for code that must open a connection of its own to the same
 * server with the same credential (the kubelet API relay upgrades a connection to SPDY, which
 * libcurl cannot do). All borrowed: valid while the client lives and until the next request (a
 * re-read token file replaces the token). */
struct kapi_conn_info {
    const char *server;                   /* as in the kubeconfig: scheme://host[:port][/path] */
    const char *tls_server_name;          /* NULL: the server's host */
    const unsigned char *ca, *cert, *key; /* PEM, NULL when absent */
    size_t ca_len, cert_len, key_len;
    const char *token; /* bearer token, NULL when none */
    bool insecure;
};
void kapi_client_conn_info(struct kapi_client *c, struct kapi_conn_info *ret);

/* Sends a request. On success returns 0 and, if ret_call is non-NULL, a handle valid until the
 * callback has run or the call is cancelled. */
int kapi_send(struct kapi_client *c, const struct kapi_request *req, kapi_cb cb, void *data,
              struct kapi_call **ret_call);
/* Resumes a transfer its chunk callback paused (KAPI_CHUNK_PAUSE): the chunk it left is delivered
 * again from inside this call. Not from inside that callback; NULL-safe, a no-op when not paused.
 */
void kapi_call_resume(struct kapi_call *call);
/* Cancels a call: its callback is not called. NULL-safe; a no-op for a call whose callback is
 * running. */
void kapi_call_cancel(struct kapi_call *call);

/* Maps an HTTP status and Status reason to a negative errno: 400/422 -EINVAL, 401 -EACCES, 403
 * -EPERM, 404 -ENOENT, 409 AlreadyExists -EEXIST, 409 otherwise -ESTALE (conflict: retry), 410
 * -EIDRM (gone: relist), 413 -E2BIG, 429 -EAGAIN, 5xx -EIO, other non-2xx -EPROTO. */
int kapi_err_from_status(long http_status, const char *reason);

/* ---- resources and paths ----------------------------------------------------------------------
 */

struct kapi_resource {
    const char *group;    /* "" for the core group */
    const char *version;  /* "v1" */
    const char *resource; /* plural, e.g. "pods" */
    const char *kind;     /* e.g. "Pod" */
    bool namespaced;
};

extern const struct kapi_resource kapi_pods, kapi_nodes, kapi_namespaces, kapi_configmaps,
    kapi_secrets, kapi_services, kapi_events, kapi_leases, kapi_deployments, kapi_crds,
    kapi_serviceaccounts, kapi_resourcequotas, kapi_limitranges, kapi_csrs, kapi_daemonsets;

/* Appends "/api/v1/namespaces/<ns>/pods/<name>/<sub>" (or the /apis/<group>/ form) to b. ns is
 * ignored for cluster-scoped resources and may be NULL for "all namespaces"; name and sub may be
 * NULL. Path segments are validated (no '/', no "..", not empty): -EINVAL otherwise. */
int kapi_path(struct sbuf *b, const struct kapi_resource *r, const char *ns, const char *name,
              const char *sub);
/* Appends "key=value" to a query, with "?" or "&" and URL encoding of the value. */
int kapi_query_add(struct sbuf *b, const char *key, const char *value);

/* ---- typed operations (thin wrappers over kapi_send) -------------------------------------------
 */

struct kapi_list_opts {
    const char *label_selector;
    const char *field_selector;
    long limit; /* 0: no limit */
    const char *continue_token;
    const char *resource_version; /* e.g. "0" for any cached version */
};

enum kapi_patch_type {
    KAPI_PATCH_MERGE,     /* application/merge-patch+json */
    KAPI_PATCH_JSON,      /* application/json-patch+json */
    KAPI_PATCH_STRATEGIC, /* application/strategic-merge-patch+json (built-in kinds only) */
};

struct kapi_delete_opts {
    const char *propagation; /* "Foreground", "Background", "Orphan" or NULL */
    const char *precondition_uid;
    const char *precondition_resource_version;
    long grace_period_seconds; /* -1: the server default */
};

/* Appends the path and query of a list request (kapi_list's) to b. */
int kapi_list_path(struct sbuf *b, const struct kapi_resource *r, const char *ns,
                   const struct kapi_list_opts *o);

int kapi_get(struct kapi_client *c, const struct kapi_resource *r, const char *ns, const char *name,
             kapi_cb cb, void *data);
int kapi_list(struct kapi_client *c, const struct kapi_resource *r, const char *ns,
              const struct kapi_list_opts *o, kapi_cb cb, void *data);
int kapi_create(struct kapi_client *c, const struct kapi_resource *r, const char *ns, json_t *obj,
                kapi_cb cb, void *data);
/* PUT; sub is NULL or "status". The object's metadata.resourceVersion makes it conditional. */
int kapi_update(struct kapi_client *c, const struct kapi_resource *r, const char *ns,
                const char *name, const char *sub, json_t *obj, kapi_cb cb, void *data);
int kapi_patch(struct kapi_client *c, const struct kapi_resource *r, const char *ns,
               const char *name, const char *sub, enum kapi_patch_type type, const char *patch,
               kapi_cb cb, void *data);
/* kapi_create and kapi_patch with res.body decoded down to the metadata (kapi_request's
 * metadata_only). */
int kapi_create_meta(struct kapi_client *c, const struct kapi_resource *r, const char *ns,
                     json_t *obj, kapi_cb cb, void *data);
int kapi_patch_meta(struct kapi_client *c, const struct kapi_resource *r, const char *ns,
                    const char *name, const char *sub, enum kapi_patch_type type, const char *patch,
                    kapi_cb cb, void *data);
/* Server-side apply with the given field manager. */
int kapi_apply(struct kapi_client *c, const struct kapi_resource *r, const char *ns,
               const char *name, const char *sub, json_t *obj, const char *field_manager,
               bool force, kapi_cb cb, void *data);
int kapi_delete(struct kapi_client *c, const struct kapi_resource *r, const char *ns,
                const char *name, const struct kapi_delete_opts *o, kapi_cb cb, void *data);

/* ---- synchronous use (CLI tools) ---------------------------------------------------------------
 */

/* Collects one result: pass kapi_sync_cb and &s as the callback, then kapi_sync_wait runs the loop
 * until it arrived. Not for use from inside a running loop. kapi_sync_done releases the body. */
struct kapi_sync {
    bool done;
    int err;
    long http_status;
    json_t *body;
    char reason[64];
    char message[512];
    bool keep_raw; /* set before the call: raw gets a copy of the body as it came (protobuf) */
    char *raw;
    size_t raw_len;
};
void kapi_sync_cb(struct kapi_client *c, const struct kapi_result *res, void *data);
int kapi_sync_wait(struct kapi_client *c, struct kapi_sync *s);
void kapi_sync_done(struct kapi_sync *s);

/* ---- small JSON helpers -----------------------------------------------------------------------
 */

/* Borrowed strings from an object's metadata, or NULL. */
const char *kapi_obj_name(const json_t *obj);
const char *kapi_obj_namespace(const json_t *obj);
const char *kapi_obj_rv(const json_t *obj);
const char *kapi_obj_uid(const json_t *obj);

#endif
