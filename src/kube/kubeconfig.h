/* kubeconfig: loads a Kubernetes client configuration (kubeconfig file, $KUBECONFIG list, or the
 * in-cluster service account) and resolves it into one flat struct kc_config for the REST layer.
 *
 * Supported kubeconfig fields (others are ignored, as client-go ignores unknown fields):
 *   apiVersion ("v1"), kind ("Config"), current-context,
 *   clusters[] {name, cluster{server, certificate-authority, certificate-authority-data,
 *               insecure-skip-tls-verify, tls-server-name}},
 *   users[] {name, user{client-certificate, client-certificate-data, client-key,
 *            client-key-data, token, tokenFile}},
 *   contexts[] {name, context{cluster, user, namespace}}.
 * Refused with a "not supported" error when the selected user or cluster uses them (silently
 * ignoring them would change who we talk to, or as whom): user exec, auth-provider,
 * username/password, impersonation (as, as-groups, as-uid, as-user-extra); cluster proxy-url.
 *
 * Rules, following client-go where it has one:
 *  - Whole-file checks apply to every entry (YAML types, base64 of *-data fields, duplicate names,
 *    duplicate keys); semantic checks (server URL, cert without key, insecure with a CA, ...)
 *    apply only to the selected context, its cluster and its user.
 *  - The server must be https://. Plain http:// is accepted only for a loopback host (localhost,
 *    127.0.0.0/8, [::1]) so that tests can use a plain-HTTP fake apiserver without ever sending
 *    credentials over a network in clear. User info, query and fragment are refused.
 *  - *-data fields are standard padded base64; CR and LF inside are skipped (as Go's decoder does).
 *  - A path field and its *-data twin must not both be set. Relative paths resolve against the
 *    directory of the kubeconfig file that defined the entry. Referenced files are at most
 *    KC_MAX_REF_FILE_SIZE bytes; a kubeconfig is at most KC_MAX_FILE_SIZE bytes.
 *  - token wins over tokenFile for the initial token, as in client-go; tokenFile is kept in
 *    token_file either way so callers can re-read a rotated token with kc_read_token(). Tokens are
 *    trimmed and must be printable ASCII without spaces (they go into an HTTP header).
 *  - A context without a user is anonymous (user_name NULL, no credentials).
 *  - The namespace defaults to "default" and must be an RFC 1123 label.
 *
 * Errors: functions return 0 or a negative errno: -ENOENT (a kubeconfig, referenced file or
 * in-cluster environment is missing), -EINVAL (bad content, including a context/cluster/user that
 * is not defined, or an unsupported feature), -E2BIG (a file over its size limit, too many
 * entries), -ENOMEM, or another -errno from reading a file. `err` (may be NULL; `errlen` bytes) is
 * always left NUL-terminated: empty on success, and on failure a message naming the file, the field
 * and what was expected, e.g.
 *   /x/config: users[1].user.client-key-data: invalid base64
 *   /x/config: contexts: context "prod" not found (have: dev, staging)
 * `*ret` is written on success only.
 *
 * Ownership: every pointer argument is borrowed. A returned struct kc_config belongs to the caller,
 * who frees it with kc_config_free() (which wipes key material and tokens). The functions keep no
 * state; kc_load_default() and kc_load_in_cluster*() read the environment. */
#ifndef CLIQO_KUBE_KUBECONFIG_H
#define CLIQO_KUBE_KUBECONFIG_H

#include <stdbool.h>
#include <stddef.h>

#define KC_MAX_FILE_SIZE     (4u << 20) /* one kubeconfig file */
#define KC_MAX_REF_FILE_SIZE (1u << 20) /* a certificate, key or token file it references */
#define KC_MAX_ENTRIES       10000      /* clusters, users or contexts in one file */
#define KC_MAX_FILES         64         /* files in $KUBECONFIG */
#define KC_ERR_LEN           512        /* a comfortable size for `err` buffers */
#define KC_IN_CLUSTER_DIR    "/var/run/secrets/kubernetes.io/serviceaccount"

/* The resolved client configuration. Strings are NUL-terminated; the *_pem buffers are also
 * followed by a NUL that is not counted in their length. Members the configuration does not set
 * are NULL (lengths 0). */
struct kc_config {
    char *server;       /* scheme://host[:port][/path], never a trailing slash */
    char *context_name; /* "in-cluster" for the in-cluster configuration */
    char *cluster_name; /* "in-cluster" for the in-cluster configuration */
    char *user_name;    /* NULL for an anonymous context; "in-cluster" in-cluster */
    char *namespace;    /* never NULL; "default" unless the context (or the pod) says otherwise */
    unsigned char *ca_pem; /* NULL: use the system trust store */
    size_t ca_pem_len;
    unsigned char *cert_pem; /* client certificate; set if and only if key_pem is */
    size_t cert_pem_len;
    unsigned char *key_pem;
    size_t key_pem_len;
    char *token; /* bearer token */
    bool insecure_skip_tls_verify;
    char *tls_server_name;
    char *token_file; /* resolved path; kept so callers can re-read rotated tokens */
};

/* Loads the kubeconfig file at `path` and resolves `context` (NULL or "": current-context). */
int kc_load_file(const char *path, const char *context, struct kc_config **ret, char *err,
                 size_t errlen);

/* Same for a kubeconfig held in memory (`data` need not be NUL-terminated). `origin_name` names it
 * in error messages (NULL: "<memory>"). `base_dir` resolves relative paths; when it is NULL, the
 * kubeconfig must be self-contained: every file reference (certificate-authority,
 * client-certificate, client-key, tokenFile, relative or absolute) is refused, so that a kubeconfig
 * received from elsewhere (a Secret, a peer) cannot make us read, and send, local files such as our
 * own service-account token. */
int kc_load_mem(const char *data, size_t len, const char *origin_name, const char *base_dir,
                const char *context, struct kc_config **ret, char *err, size_t errlen);

/* A peer's kubeconfig (a credential received from another cluster) must not weaken TLS:
 * kc_check_peer() refuses, with -EPERM and a message naming the field, a server that is not
 * https://, insecure-skip-tls-verify: true, a missing CA (the system trust store is never used for
 * a peer: its kubeconfig pins the CA of its server) and a tokenFile; kc_load_mem() without a
 * base directory, as kc_load_peer() calls it, has already refused every other file reference,
 * exec plugins and auth providers. `origin` (NULL: "<memory>") prefixes the message.
 * kc_check_peer_conn() is the same check on the parts of a connection (for a client built
 * elsewhere). kc_load_peer() is kc_load_mem(data, len, origin, NULL, NULL, ...) followed by
 * kc_check_peer(). */
int kc_check_peer(const struct kc_config *c, const char *origin, char *err, size_t errlen);
int kc_check_peer_conn(const char *origin, const char *server, size_t ca_len, bool insecure,
                       char *err, size_t errlen);
int kc_load_peer(const char *data, size_t len, const char *origin_name, struct kc_config **ret,
                 char *err, size_t errlen);

/* Unit tests only (never called by the programs): lets the checks above accept plain http:// to
 * the loopback host the loader allows, for tests whose fake API server speaks plain HTTP. */
void kc_peer_allow_loopback_http(bool allow);

/* What kubectl does: the files listed in $KUBECONFIG (colon-separated; empty, repeated and missing
 * entries are skipped; a file that exists but is broken is an error; merged first-wins per
 * cluster/user/context name, current-context from the first file that sets it), else
 * ~/.kube/config, and when no kubeconfig exists at all, the in-cluster configuration. An error
 * about the merged set as a whole names it as the loaded files joined with ':'. When no kubeconfig
 * exists and `context` is non-empty, the result is -ENOENT rather than the in-cluster configuration
 * (which has no contexts to choose from). */
int kc_load_default(const char *context, struct kc_config **ret, char *err, size_t errlen);

/* The pod's service account: server from $KUBERNETES_SERVICE_HOST and $KUBERNETES_SERVICE_PORT
 * (an IPv6 host gets brackets), token (required, kept in token_file), ca.crt (optional: without it
 * the system trust store is used) and namespace (optional, default "default") read from
 * KC_IN_CLUSTER_DIR, or from `dir` with kc_load_in_cluster_from(). */
int kc_load_in_cluster(struct kc_config **ret, char *err, size_t errlen);
int kc_load_in_cluster_from(const char *dir, struct kc_config **ret, char *err, size_t errlen);

/* Reads a token file (bounded, trimmed, checked as above) into *ret_token (caller frees with
 * x_free; wipe it first). For re-reading config->token_file after rotation. */
int kc_read_token(const char *path, char **ret_token, char *err, size_t errlen);

/* Wipes tokens and key material, frees everything. NULL-safe; returns NULL. */
struct kc_config *kc_config_free(struct kc_config *c);

#endif
