/* cliqoctl offload|unoffload namespace: the NamespaceOffloading `offloading` of a namespace
 * (docs/offloading.md, "Which namespaces go where"), and the OFFLOADING section of `cliqoctl
 * status` (offload_status_*).
 *
 * offload creates the object, or merge-patches the spec fields given on the command line into an
 * existing one (the others stay); --selector '' removes the selector. The selector syntax is the
 * label-selector syntax, turned into one NodeSelector term (src/offloading/nsof_text.c); it is
 * checked before the cluster is contacted. --wait polls until the agent reports a phase for the
 * current spec (status.observedGeneration) that is final: Ready (exit 0) or Invalid,
 * NoClusterSelected, SomeFailed, AllFailed (exit 1); then the phase and the providers' conditions
 * are printed. unoffload deletes it; --wait waits until it is gone (every provider released the
 * namespace). Reserved namespaces (the agent's, default, kube-*, tenant namespaces: nsof_reserved)
 * are refused before anything is written. */
#include "cli/cli.h"
#include "cli/kube.h"
#include "cli/offload.h"

#include "kube/names.h"
#include "offloading/nsof.h"
#include "peering/resources.h"
#include "common/duration.h"
#include "common/json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POLL_MS 500

static const char offload_usage[] =
    "Usage: cliqoctl offload namespace NAME [options]\n"
    "\n"
    "Offloads namespace NAME to peer clusters: creates its NamespaceOffloading 'offloading', or\n"
    "updates the fields given here (the others stay). The agent labels the namespace\n"
    "liqo.io/scheduling-enabled=true, and its pod webhook gives new pods of NAME the tolerations\n"
    "and node affinity the strategy implies. Pods already running are not moved.\n"
    "\n"
    "Options:\n";

static const char unoffload_usage[] =
    "Usage: cliqoctl unoffload namespace NAME [options]\n"
    "\n"
    "Stops offloading namespace NAME: deletes its NamespaceOffloading. The virtual kubelets "
    "remove\n"
    "the namespace (and its pods) from the providers; then the agent removes the label.\n"
    "\n"
    "Options:\n";

/* "Ready=True (Accepted: message)" parts of one provider's conditions. */
static void print_conditions(FILE *f, const json_t *status)
{
    const char *id;
    json_t *conds;

    json_object_foreach(json_object_get(status, "remoteNamespacesConditions"), id, conds)
    {
        size_t i;
        json_t *c;

        fprintf(f, "  provider %s:", id);
        json_array_foreach(conds, i, c)
        {
            const char *reason = json_string_value(json_object_get(c, "reason"));
            const char *msg = json_string_value(json_object_get(c, "message"));

            fprintf(f, " %s=%s", jsn_str_at(c, "type", NULL) ? jsn_str_at(c, "type", NULL) : "?",
                    jsn_str_at(c, "status", NULL) ? jsn_str_at(c, "status", NULL) : "?");
            if ((reason && *reason) || (msg && *msg))
                fprintf(f, " (%s%s%s)", reason ? reason : "", reason && msg && *msg ? ": " : "",
                        msg ? msg : "");
        }
        fprintf(f, "\n");
    }
}

static const char *phase_of(const json_t *o)
{
    return jsn_str_at(o, "status", "offloadingPhase", NULL);
}

/* Is the status about the current spec? */
static bool current(const json_t *o)
{
    const json_t *g = json_object_get(json_object_get(o, "metadata"), "generation");
    const json_t *og = json_object_get(json_object_get(o, "status"), "observedGeneration");

    return json_is_integer(g) && json_is_integer(og) &&
           json_integer_value(og) >= json_integer_value(g);
}

/* The operands "namespace NAME" (or "ns NAME"), NAME a namespace name: 0 (*ns set), or 2 after a
 * usage error. */
static int ns_operands(const char *verb, const char *const *args, int n, const char **ns)
{
    if (n > 0 && strcmp(args[0], "namespace") != 0 && strcmp(args[0], "ns") != 0)
        return cli_misuse(verb, "what to %s? only 'namespace NAME' (not '%s')", verb, args[0]);
    if (n < 2)
        return cli_misuse(verb, "which namespace? (cliqoctl %s namespace NAME)", verb);
    if (!kname_dns_label(args[1]))
        return cli_misuse(verb, "'%s' is not a valid namespace name", args[1]);
    *ns = args[1];
    return 0;
}

struct offload_args {
    struct cli_common co;
    const char *ns, *strategy, *mapping, *selector;
    bool wait;
};

/* The command line of offload into a: 0, or cli_parse's CLI_PARSED_HELP or CLI_PARSED_MISUSE. */
static int offload_parse(int argc, char **argv, struct offload_args *a)
{
    static const char *const strategies[] = {"Local", "Remote", "LocalAndRemote", NULL};
    static const char *const mappings[] = {"DefaultName", "EnforceSameName", NULL};
    const char *args[2];
    int n;
    /* clang-format off */
    const struct opts_def defs[] = {
        {.name = "strategy", .kind = OPTS_CHOICE, .arg = "S", .dest = &a->strategy,
         .choices = strategies,
         .help = "where its pods may run: Local, Remote or LocalAndRemote (default on creation: "
                 "LocalAndRemote)"},
        {.name = "mapping", .kind = OPTS_CHOICE, .arg = "M", .dest = &a->mapping,
         .choices = mappings,
         .help = "the namespace's name on the providers: DefaultName (NAME-<cluster "
                 "name>-<hash>) or EnforceSameName (NAME) (default on creation: DefaultName)"},
        {.name = "selector", .kind = OPTS_STRING, .arg = "SEL", .dest = &a->selector,
         .help = "which providers (virtual nodes) by their labels, label-selector syntax: "
                 "'k=v,k!=v,k in (a,b),k notin (a),k,!k' (all must hold); '' removes it (every "
                 "provider)"},
        {.name = "wait", .kind = OPTS_FLAG, .dest = &a->wait,
         .help = "wait until the agent reports Ready (exit 0) or a failure: Invalid, "
                 "NoClusterSelected, SomeFailed, AllFailed (exit 1); print the phase and each "
                 "provider's conditions"},
        CLI_OPT_TIMEOUT(&a->co, 0, "how long --wait waits (default 60s)"),
        CLI_OPTS_KUBE(&a->co),
        {0},
    };
    /* clang-format on */
    const struct opts_spec opts = {
        .defs = defs, .usage = offload_usage, .args = args, .max_args = 2};

    memset(a, 0, sizeof(*a));
    if ((n = cli_parse(&a->co, "offload", 60000, &opts, argc, argv)) < 0)
        return n;
    return ns_operands("offload", args, n, &a->ns) != 0 ? CLI_PARSED_MISUSE : 0;
}

static int offload(int argc, char **argv)
{
    const char *verb = "offload";
    struct offload_args a;
    struct cli_kube k = {0};
    const char *phase;
    json_t *sel = NULL, *obj = NULL, *spec = NULL, *nsobj = NULL, *patch = NULL;
    char err[512], *body = NULL;
    bool created = false;
    uint64_t deadline;
    int e, rc = 1;

    if ((e = offload_parse(argc, argv, &a)) < 0)
        return cli_parsed_exit(e);
    if (a.selector && nsof_selector_from_text(a.selector, &sel, err, sizeof(err)) < 0)
        return cli_misuse(
            verb, "--selector: %s",
            err + (strncmp(err, "selector: ", 10) == 0 || strncmp(err, "selector, ", 10) == 0 ? 10
                                                                                              : 0));
    if (nsof_home_offloadable(a.ns, a.co.ns, false, err, sizeof(err)) < 0)
        return cli_error(verb, "%s", err);
    if (cli_kube_open(&k, &a.co) < 0)
        goto kerr;
    e = cli_get(&k, &kapi_namespaces, NULL, a.ns, &nsobj);
    if (e == -ENOENT) {
        rc = cli_error(verb, "namespace %s does not exist", a.ns);
        goto out;
    }
    if (e < 0)
        goto kerr;
    if (nsof_home_offloadable(
            a.ns, a.co.ns, jsn_str_at(nsobj, "metadata", "labels", PEER_LABEL_TENANT, NULL) != NULL,
            err, sizeof(err)) < 0) {
        rc = cli_error(verb, "%s", err);
        goto out;
    }
    e = cli_get(&k, &peer_res_namespaceoffloadings, a.ns, NSOF_NAME, &obj);
    if (e < 0 && e != -ENOENT)
        goto kerr;
    if (obj && json_object_get(json_object_get(obj, "metadata"), "deletionTimestamp")) {
        rc =
            cli_error(verb,
                      "the NamespaceOffloading of %s is being deleted (providers are releasing the "
                      "namespace): try again when it is gone",
                      a.ns);
        goto out;
    }
    spec = json_object();
    if (!spec)
        goto oom;
    if (a.strategy)
        json_object_set_new(spec, "podOffloadingStrategy", json_string(a.strategy));
    if (a.mapping)
        json_object_set_new(spec, "namespaceMappingStrategy", json_string(a.mapping));
    if (a.selector)
        json_object_set(spec, "clusterSelector", sel ? sel : json_null());
    if (!obj) {
        json_t *o;

        if (a.selector && !sel)
            json_object_del(spec, "clusterSelector");
        o = json_pack("{s:s,s:s,s:{s:s,s:s},s:O}", "apiVersion", NSOF_GROUP_VERSION, "kind",
                      NSOF_KIND, "metadata", "name", NSOF_NAME, "namespace", a.ns, "spec", spec);
        if (!o)
            goto oom;
        e = cli_create(&k, &peer_res_namespaceoffloadings, a.ns, o, &obj);
        json_decref(o);
        if (e < 0)
            goto kerr;
        created = true;
    } else if (json_object_size(spec) > 0) {
        json_t *upd = NULL;

        patch = json_pack("{s:O}", "spec", spec);
        body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
        if (!body)
            goto oom;
        e = cli_merge_patch(&k, &peer_res_namespaceoffloadings, a.ns, NSOF_NAME, NULL, body, &upd);
        if (e < 0)
            goto kerr;
        json_decref(obj);
        obj = upd;
    }
    printf("namespaceoffloading %s/%s %s (strategy %s, mapping %s%s)\n", a.ns, NSOF_NAME,
           created ? "created" : "configured",
           jsn_str_at(obj, "spec", "podOffloadingStrategy", NULL)
               ? jsn_str_at(obj, "spec", "podOffloadingStrategy", NULL)
               : "LocalAndRemote",
           jsn_str_at(obj, "spec", "namespaceMappingStrategy", NULL)
               ? jsn_str_at(obj, "spec", "namespaceMappingStrategy", NULL)
               : "DefaultName",
           json_object_get(json_object_get(obj, "spec"), "clusterSelector") ? ", with a selector"
                                                                            : "");
    fflush(stdout);
    if (!a.wait) {
        rc = 0;
        goto out;
    }
    deadline = cli_now_ms() + a.co.timeout_ms;
    for (;;) {
        json_decref(obj);
        obj = NULL;
        e = cli_get(&k, &peer_res_namespaceoffloadings, a.ns, NSOF_NAME, &obj);
        if (e < 0)
            goto kerr;
        phase = phase_of(obj);
        if (current(obj) && phase &&
            (strcmp(phase, "Ready") == 0 || strcmp(phase, "Invalid") == 0 ||
             strcmp(phase, "NoClusterSelected") == 0 || strcmp(phase, "SomeFailed") == 0 ||
             strcmp(phase, "AllFailed") == 0))
            break;
        if (cli_now_ms() >= deadline) {
            char d[32];

            dur_format(a.co.timeout_ms, d, sizeof(d));
            print_conditions(stderr, json_object_get(obj, "status"));
            if (phase && current(obj))
                rc = cli_error(verb,
                               "namespace %s is not Ready after %s (phase %s): the providers above "
                               "have not all reported it ready",
                               a.ns, d, phase);
            else
                rc = cli_error(verb,
                               "no phase reported for namespace %s after %s: is the agent "
                               "running?",
                               a.ns, d);
            goto out;
        }
        cli_sleep_ms(POLL_MS);
    }
    printf("phase %s%s%s", phase,
           jsn_str_at(obj, "status", "remoteNamespaceName", NULL) ? ", remote namespace " : "",
           jsn_str_at(obj, "status", "remoteNamespaceName", NULL)
               ? jsn_str_at(obj, "status", "remoteNamespaceName", NULL)
               : "");
    if (jsn_str_at(obj, "status", "message", NULL))
        printf(": %s", jsn_str_at(obj, "status", "message", NULL));
    printf("\n");
    print_conditions(stdout, json_object_get(obj, "status"));
    rc = strcmp(phase, "Ready") == 0 ? 0 : 1;
    if (rc)
        cli_error(verb, "namespace %s: phase %s", a.ns, phase);
    goto out;
oom:
    rc = cli_error(verb, "out of memory");
    goto out;
kerr:
    rc = cli_error(verb, "%s", k.err);
out:
    free(body);
    json_decref(patch);
    json_decref(spec);
    json_decref(sel);
    json_decref(obj);
    json_decref(nsobj);
    cli_kube_close(&k);
    return rc;
}

static int unoffload(int argc, char **argv)
{
    const char *verb = "unoffload";
    struct cli_common co;
    struct cli_kube k = {0};
    const char *ns = NULL, *args[2];
    bool wait = false;
    json_t *obj = NULL;
    uint64_t deadline;
    int e, n, rc = 1;
    /* clang-format off */
    const struct opts_def defs[] = {
        {.name = "wait", .kind = OPTS_FLAG, .dest = &wait,
         .help = "wait until every provider released the namespace and the NamespaceOffloading "
                 "is gone"},
        CLI_OPT_TIMEOUT(&co, 0, "how long --wait waits (default 60s)"),
        CLI_OPTS_KUBE(&co),
        {0},
    };
    /* clang-format on */
    const struct opts_spec opts = {
        .defs = defs, .usage = unoffload_usage, .args = args, .max_args = 2};

    if ((n = cli_parse(&co, verb, 60000, &opts, argc, argv)) < 0)
        return cli_parsed_exit(n);
    if (ns_operands(verb, args, n, &ns) != 0)
        return 2;
    if (cli_kube_open(&k, &co) < 0)
        goto kerr;
    e = cli_delete(&k, &peer_res_namespaceoffloadings, ns, NSOF_NAME);
    if (e == -ENOENT) {
        rc = cli_error(verb, "namespace %s is not offloaded (no NamespaceOffloading)", ns);
        goto out;
    }
    if (e < 0)
        goto kerr;
    printf("namespaceoffloading %s/%s deleted\n", ns, NSOF_NAME);
    fflush(stdout);
    if (!wait) {
        rc = 0;
        goto out;
    }
    deadline = cli_now_ms() + co.timeout_ms;
    for (;;) {
        json_decref(obj);
        obj = NULL;
        e = cli_get(&k, &peer_res_namespaceoffloadings, ns, NSOF_NAME, &obj);
        if (e == -ENOENT)
            break;
        if (e < 0)
            goto kerr;
        if (cli_now_ms() >= deadline) {
            char d[32];

            dur_format(co.timeout_ms, d, sizeof(d));
            print_conditions(stderr, json_object_get(obj, "status"));
            rc = cli_error(verb,
                           "the NamespaceOffloading of %s is still there after %s: providers above "
                           "still hold the namespace (is the agent running?)",
                           ns, d);
            goto out;
        }
        cli_sleep_ms(POLL_MS);
    }
    printf("namespace %s released by every provider\n", ns);
    rc = 0;
    goto out;
kerr:
    rc = cli_error(verb, "%s", k.err);
out:
    json_decref(obj);
    cli_kube_close(&k);
    return rc;
}

int cmd_offload_main(int argc, char **argv)
{
    return offload(argc, argv);
}

int cmd_unoffload_main(int argc, char **argv)
{
    return unoffload(argc, argv);
}

/* ---- cliqoctl status ---------------------------------------------------------------------------
 */

int offload_status_list(struct cli_kube *k, json_t **ret)
{
    json_t *items = NULL, *o, *out;
    size_t i;
    int e = cli_list(k, &peer_res_namespaceoffloadings, NULL, NULL, &items);

    if (e == -ENOENT) {
        *ret = json_array();
        return *ret ? 0 : -ENOMEM;
    }
    if (e < 0)
        return e;
    out = json_array();
    if (!out) {
        json_decref(items);
        return -ENOMEM;
    }
    json_array_foreach(items, i, o)
    {
        const json_t *conds =
            json_object_get(json_object_get(o, "status"), "remoteNamespacesConditions");
        json_t *clusters = json_object(), *c;
        const char *id;

        json_object_foreach((json_t *)conds, id, c)
        {
            size_t j;
            json_t *cond;
            const char *ready = "Unknown", *reason = NULL;

            json_array_foreach(c, j, cond)
            {
                if (jsn_str_at(cond, "type", NULL) &&
                    strcmp(jsn_str_at(cond, "type", NULL), "Ready") == 0) {
                    ready = jsn_str_at(cond, "status", NULL) ? jsn_str_at(cond, "status", NULL)
                                                             : "Unknown";
                    reason = jsn_str_at(cond, "reason", NULL);
                }
            }
            json_object_set_new(clusters, id,
                                json_pack("{s:s,s:s*}", "ready", ready, "reason", reason));
        }
        json_array_append_new(
            out,
            json_pack("{s:s*,s:s*,s:s,s:s,s:s*,s:s*,s:s*,s:o}", "namespace", kapi_obj_namespace(o),
                      "name", kapi_obj_name(o), "podOffloadingStrategy",
                      jsn_str_at(o, "spec", "podOffloadingStrategy", NULL)
                          ? jsn_str_at(o, "spec", "podOffloadingStrategy", NULL)
                          : "LocalAndRemote",
                      "namespaceMappingStrategy",
                      jsn_str_at(o, "spec", "namespaceMappingStrategy", NULL)
                          ? jsn_str_at(o, "spec", "namespaceMappingStrategy", NULL)
                          : "DefaultName",
                      "remoteNamespaceName", jsn_str_at(o, "status", "remoteNamespaceName", NULL),
                      "phase", phase_of(o), "message", jsn_str_at(o, "status", "message", NULL),
                      "clusters", clusters ? clusters : json_object()));
    }
    json_decref(items);
    *ret = out;
    return 0;
}

void offload_status_print(const json_t *list, FILE *f)
{
    const json_t *o;
    size_t i;

    fprintf(f, "\n%-24s %-15s %-34s %-18s %s\n", "OFFLOADING", "STRATEGY", "REMOTE-NAMESPACE",
            "PHASE", "PROVIDERS (READY)");
    if (json_array_size(list) == 0) {
        fprintf(f, "no offloaded namespaces (cliqoctl offload namespace NAME)\n");
        return;
    }
    json_array_foreach(list, i, o)
    {
        const char *ns = jsn_str_at(o, "namespace", NULL), *name = jsn_str_at(o, "name", NULL);
        const char *id;
        json_t *c;
        char shown[96];
        bool any = false;

        if (name && strcmp(name, NSOF_NAME) == 0)
            snprintf(shown, sizeof(shown), "%s", ns ? ns : "-");
        else
            snprintf(shown, sizeof(shown), "%s/%s", ns ? ns : "-", name ? name : "-");
        fprintf(f, "%-24s %-15s %-34s %-18s", shown, jsn_str_at(o, "podOffloadingStrategy", NULL),
                jsn_str_at(o, "remoteNamespaceName", NULL)
                    ? jsn_str_at(o, "remoteNamespaceName", NULL)
                    : "-",
                jsn_str_at(o, "phase", NULL) ? jsn_str_at(o, "phase", NULL) : "-");
        json_object_foreach(json_object_get(o, "clusters"), id, c)
        {
            fprintf(f, "%s%s=%s", any ? " " : " ", id, jsn_str_at(c, "ready", NULL));
            any = true;
        }
        if (!any)
            fprintf(f, " -");
        fprintf(f, "\n");
        if (jsn_str_at(o, "message", NULL))
            fprintf(f, "%-24s %s\n", "", jsn_str_at(o, "message", NULL));
    }
}
