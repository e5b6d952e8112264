/* cli/kube: what the cluster-facing cliqoctl verbs share.
 *
 *  - Options: every verb takes --kubeconfig, --context, --namespace (default "cliqo") and most take
 *    --timeout. Values are given as `--flag VALUE` or `--flag=VALUE`. Misuse prints one line
 *    ("cliqoctl <verb>: error: ...") and the verb exits 2; a failure prints one line and exits 1.
 *  - struct cli_kube: one API client on a private libuv loop, used synchronously (each call runs
 *    the loop until its answer arrived). Every call returns 0 or a negative errno and, on failure,
 *    leaves a one-line reason in k->err (the operation, the object and the server's message).
 *    Returned JSON objects are new references (caller json_decref).
 *  - Waits are polls with a deadline: nothing waits without bound. Progress goes to stderr, results
 *    to stdout.
 *  - Server-side apply uses the field manager "cliqoctl". */
#ifndef CLIQO_CLI_KUBE_H
#define CLIQO_CLI_KUBE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/opts.h"
#include "kube/api.h"
#include "peering/objects.h"
#include "kube/kubeconfig.h"

#define CLI_FIELD_MANAGER "cliqoctl"
#define CLI_ERR_LEN       1024

/* Options shared by the cluster-facing verbs. */
struct cli_common {
    const char *verb; /* "install", "add", ... (for messages) */
    const char *kubeconfig;
    const char *context;
    const char *ns;
    uint64_t timeout_ms;
};

/* ---- option tables (common/opts.h) -------------------------------------------------------- */

#define CLI_MAX_DURATION_MS (24ull * 3600 * 1000)

/* clang-format off */
/* The entries of the shared options, writing into the struct cli_common *co: --kubeconfig,
 * --context and -n/--namespace (checked: a namespace name). */
#define CLI_OPTS_KUBE(co)                                                                          \
    {.name = "kubeconfig", .kind = OPTS_STRING, .arg = "FILE", .dest = &(co)->kubeconfig,          \
     .help = "kubeconfig (default: $KUBECONFIG, ~/.kube/config)"},                                 \
    {.name = "context", .kind = OPTS_STRING, .arg = "NAME", .dest = &(co)->context,                \
     .help = "kubeconfig context (default: the current context)"},                                 \
    {.name = "namespace", .short_name = 'n', .kind = OPTS_CUSTOM, .arg = "NS", .dest = &(co)->ns,  \
     .fn = cli_namespace_opt, .help = "cliqo's namespace (default cliqo)"}
/* --timeout D (30s, 2m, 500ms or a number of seconds; at most 24 h) into co->timeout_ms; more:
 * further flags (OPTS_HIDDEN) or 0. */
#define CLI_OPT_TIMEOUT(co, more, text)                                                            \
    {.name = "timeout", .kind = OPTS_DURATION, .flags = OPTS_SECONDS | (more), .arg = "D",         \
     .dest = &(co)->timeout_ms, .min = 1, .max = CLI_MAX_DURATION_MS, .help = (text)}
/* -o json / --output json: *json set (bool *json). */
#define CLI_OPT_OUTPUT(json, text)                                                                 \
    {.name = "output", .short_name = 'o', .kind = OPTS_CUSTOM, .arg = "json", .dest = (json),      \
     .fn = cli_output_json_opt, .help = (text)}
/* clang-format on */

/* OPTS_CUSTOM callbacks of the macros above. */
int cli_namespace_opt(const struct opts_def *o, const char *value, char *err, size_t errlen);
int cli_output_json_opt(const struct opts_def *o, const char *value, char *err, size_t errlen);

/* The command line of verb, whose table writes the shared options into co: initialises co with
 * the defaults (namespace "cliqo", the given timeout), then prints the help when argv asks for it
 * (-h or --help wins wherever it stands: cli_wants_help) and returns CLI_PARSED_HELP, or prints a
 * misuse ("cliqoctl <verb>: error: ...") and returns CLI_PARSED_MISUSE; else opts_parse() and the
 * number of positional arguments. */
int cli_parse(struct cli_common *co, const char *verb, uint64_t default_timeout_ms,
              const struct opts_spec *spec, int argc, char **argv);
#define CLI_PARSED_HELP   (-1)
#define CLI_PARSED_MISUSE (-2)
/* The verb's exit status after CLI_PARSED_HELP (0) or CLI_PARSED_MISUSE (2). */
int cli_parsed_exit(int parsed);

/* "cliqoctl <verb>: error: <message>" on stderr. cli_misuse returns 2, cli_error returns 1. */
__attribute__((format(printf, 2, 3))) int cli_misuse(const char *verb, const char *fmt, ...);
__attribute__((format(printf, 2, 3))) int cli_error(const char *verb, const char *fmt, ...);
/* A progress line "<verb>: <message>" on stderr. */
__attribute__((format(printf, 2, 3))) void cli_progress(const char *verb, const char *fmt, ...);

/* Monotonic clock in milliseconds, and a bounded sleep. */
uint64_t cli_now_ms(void);
void cli_sleep_ms(uint64_t ms);

struct cli_kube {
    uv_loop_t loop;
    bool loop_ready;
    struct kc_config *cfg;
    struct kapi_client *api;
    const char *ns;
    long http_status; /* of the last call */
    char err[CLI_ERR_LEN];
};

/* Loads the kubeconfig (--kubeconfig, else $KUBECONFIG / ~/.kube/config / in-cluster) and the
 * context, and creates the client. On failure k->err says why; cli_kube_close is still needed. */
int cli_kube_open(struct cli_kube *k, const struct cli_common *co);
void cli_kube_close(struct cli_kube *k);

/* ns is ignored for cluster-scoped resources. A missing object is -ENOENT. */
int cli_get(struct cli_kube *k, const struct kapi_resource *r, const char *ns, const char *name,
            json_t **ret);
/* The items array of a list (label_selector may be NULL). A missing resource type (CRD not
 * installed) is -ENOENT. */
int cli_list(struct cli_kube *k, const struct kapi_resource *r, const char *ns,
             const char *label_selector, json_t **ret_items);
int cli_create(struct cli_kube *k, const struct kapi_resource *r, const char *ns, json_t *obj,
               json_t **ret);
/* Server-side apply of obj (name from its metadata) with CLI_FIELD_MANAGER. */
int cli_apply(struct cli_kube *k, const struct kapi_resource *r, const char *ns, json_t *obj,
              bool force, json_t **ret);
/* JSON merge patch (RFC 7386); sub may be NULL. ret may be NULL. */
int cli_merge_patch(struct cli_kube *k, const struct kapi_resource *r, const char *ns,
                    const char *name, const char *sub, const char *patch, json_t **ret);
/* Deletes with background propagation. A missing object is -ENOENT. */
int cli_delete(struct cli_kube *k, const struct kapi_resource *r, const char *ns, const char *name);

/* ---- JSON helpers ------------------------------------------------------------------------- */

/* Conditions, finalizers and base64 Secret data: peer_fc_condition_obj, peer_fc_condition,
 * peer_has_finalizer and peer_base64_decode (src/peering/objects.h), shared with the agent; strings
 * at a path of keys: jsn_str_at (src/common/json.h). */
/* "3m", "2d" from an RFC 3339 creationTimestamp; "<unknown>" when it does not parse. */
void cli_age(const char *timestamp, char *buf, size_t size);

/* Standard base64 of len bytes (x_malloc'd, NUL-terminated), or NULL on OOM. */
char *cli_b64_encode(const void *data, size_t len);
/* The decoded value of data[key] of a Secret. */
int cli_secret_value(const json_t *secret, const char *key, size_t max, char **ret,
                     size_t *ret_len);

#endif
