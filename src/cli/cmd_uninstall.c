/* cliqoctl uninstall: removes everything install created and everything the agent created:
 * ForeignClusters first (while the agent still runs, so that its finalizer unpeers), then the
 * tenant namespaces, cliqo's namespace, the other objects of the manifests (cluster-scoped, or in
 * kube-node-lease), the agent's labelled objects (webhook configurations, CSRs) and the CRDs.
 * Every wait has a deadline (--timeout); with --force, objects still held by finalizers at the
 * deadline have their finalizers removed, so nothing hangs, and when no agent runs (nobody holds
 * and renews its Lease) nothing waits for it: cliqo's finalizers go at once. */
#include "cli/cli.h"
#include "cli/kube.h"

#include "common/duration.h"
#include "common/xalloc.h"
#include "deploy/manifests.h"
#include "kube/yamljson.h"
#include "peering/resources.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define MAX_TRACKED  256
#define NAME_MAX_LEN 254

static const char usage_text[] =
    "Usage: cliqoctl uninstall [--force] [--timeout D]\n"
    "\n"
    "Removes cliqo from the cluster: ForeignClusters (the agent unpeers each first), tenant\n"
    "namespaces, the cliqo namespace, RBAC objects and CRDs. Refuses while a ForeignCluster has a\n"
    "peering, unless --force. Uninstalling when nothing is installed succeeds.\n"
    "\n"
    "Options:\n";

struct tracked {
    const struct kapi_resource *r;
    char ns[64];
    char name[NAME_MAX_LEN];
};

struct tracker {
    struct tracked items[MAX_TRACKED];
    size_t n;
};

static const struct kapi_resource *const cliqo_kinds[] = {
    &peer_res_foreignclusters, &peer_res_peeringrequests,      &peer_res_searchdomains,
    &peer_res_advertisements,  &peer_res_clusterconfigs,       &peer_res_networkconfigs,
    &peer_res_tunnelendpoints, &peer_res_namespaceoffloadings, &peer_res_namespacenattingtables,
};

static bool fc_peered(const json_t *fc)
{
    return strcmp(peer_fc_condition(fc, "OutgoingPeering"), "None") != 0 ||
           strcmp(peer_fc_condition(fc, "IncomingPeering"), "None") != 0 ||
           peer_has_finalizer(fc, PEER_FINALIZER);
}

/* Deletes an object and tracks it for the wait. Returns 1 deleted, 0 absent, <0 error. */
static int delete_tracked(struct cli_kube *k, struct tracker *t, const struct kapi_resource *r,
                          const char *ns, const char *name)
{
    int e = cli_delete(k, r, ns, name);
    char kind[32];

    if (e == -ENOENT)
        return 0;
    if (e < 0)
        return e;
    if (t->n < MAX_TRACKED) {
        struct tracked *it = &t->items[t->n++];

        it->r = r;
        snprintf(it->ns, sizeof(it->ns), "%s", r->namespaced && ns ? ns : "");
        snprintf(it->name, sizeof(it->name), "%s", name);
    }
    snprintf(kind, sizeof(kind), "%s", r->resource);
    printf("%s/%s deleted\n", kind, name);
    return 1;
}

/* Removes every finalizer of an object. */
static int strip_finalizers(struct cli_kube *k, const struct kapi_resource *r, const char *ns,
                            const char *name)
{
    int e = cli_merge_patch(k, r, ns, name, NULL, "{\"metadata\":{\"finalizers\":null}}", NULL);

    if (e == 0)
        cli_progress("uninstall", "removed the finalizers of %s %s%s%s", r->kind, ns ? ns : "",
                     ns ? "/" : "", name);
    return e == -ENOENT ? 0 : e;
}

/* Removes the finalizers of every object of cliqo's kinds that still has some (--force). */
static void strip_all(struct cli_kube *k)
{
    for (size_t i = 0; i < sizeof(cliqo_kinds) / sizeof(cliqo_kinds[0]); i++) {
        json_t *items = NULL, *obj;
        size_t j;

        if (cli_list(k, cliqo_kinds[i], NULL, NULL, &items) < 0)
            continue;
        json_array_foreach(items, j, obj)
        {
            json_t *fins = json_object_get(json_object_get(obj, "metadata"), "finalizers");

            if (json_array_size(fins) > 0)
                (void)strip_finalizers(k, cliqo_kinds[i], kapi_obj_namespace(obj),
                                       kapi_obj_name(obj));
        }
        json_decref(items);
    }
}

/* Counts the tracked objects that still exist; names one of them in `left`. */
static int count_left(struct cli_kube *k, struct tracker *t, char *left, size_t size)
{
    int n = 0;

    for (size_t i = 0; i < t->n; i++) {
        struct tracked *it = &t->items[i];
        json_t *obj = NULL;
        int e;

        if (!it->r)
            continue;
        e = cli_get(k, it->r, it->ns[0] ? it->ns : NULL, it->name, &obj);
        if (e == -ENOENT) {
            it->r = NULL; /* gone */
            continue;
        }
        if (e < 0)
            return e;
        if (n == 0) {
            json_t *fins = json_object_get(json_object_get(obj, "metadata"), "finalizers");
            char *f = json_array_size(fins) ? json_dumps(fins, JSON_COMPACT) : NULL;

            snprintf(left, size, "%s %s%s%s%s%s", it->r->kind, it->ns, it->ns[0] ? "/" : "",
                     it->name, f ? " (finalizers " : "", f ? f : "");
            if (f)
                snprintf(left + strlen(left), size - strlen(left), ")");
            free(f);
        }
        json_decref(obj);
        n++;
    }
    return n;
}

/* Whether an agent runs: it holds its leader-election Lease (AGENT_LEASE in the CLI's namespace)
 * and renews it. Only cliqo's finalizers need the agent, so --force waits for it only while it
 * runs. The holder's clock is never compared with ours: a Lease counts as renewed when its
 * resourceVersion changed, and as abandoned when it did not change for its leaseDurationSeconds
 * as this process observes them (as the elector itself judges, src/kube/leader.c). */
#define AGENT_LEASE "cliqo-agent"

struct agent_probe {
    char rv[64];      /* the Lease's resourceVersion when last seen changed */
    uint64_t seen_ms; /* when */
    bool gone;        /* decided: no agent runs */
    char why[160];
};

/* Returns true while an agent may be running; false (and p->why) once it is known not to. An
 * error reading the Lease counts as running: the caller then waits as it would anyway. */
static bool agent_running(struct cli_kube *k, struct agent_probe *p)
{
    json_t *lease = NULL, *spec;
    const char *holder, *rv;
    json_int_t dur;
    int e;

    if (p->gone)
        return false;
    e = cli_get(k, &kapi_leases, k->ns, AGENT_LEASE, &lease);
    if (e == -ENOENT) {
        snprintf(p->why, sizeof(p->why), "no Lease %s/%s: no agent campaigns", k->ns, AGENT_LEASE);
        p->gone = true;
        return false;
    }
    if (e < 0)
        return true;
    spec = json_object_get(lease, "spec");
    holder = json_string_value(json_object_get(spec, "holderIdentity"));
    rv = json_string_value(json_object_get(json_object_get(lease, "metadata"), "resourceVersion"));
    dur = json_integer_value(json_object_get(spec, "leaseDurationSeconds"));
    if (!holder || !*holder) {
        snprintf(p->why, sizeof(p->why), "Lease %s/%s is held by nobody", k->ns, AGENT_LEASE);
        p->gone = true;
    } else if (!rv || strcmp(rv, p->rv) != 0) {
        snprintf(p->rv, sizeof(p->rv), "%s", rv ? rv : "");
        p->seen_ms = cli_now_ms();
    } else if (cli_now_ms() - p->seen_ms > (uint64_t)(dur > 0 && dur < 3600 ? dur : 15) * 1000) {
        snprintf(p->why, sizeof(p->why), "Lease %s/%s of %s not renewed for %llds", k->ns,
                 AGENT_LEASE, holder, (long long)(dur > 0 ? dur : 15));
        p->gone = true;
    }
    json_decref(lease);
    return !p->gone;
}

/* Waits until every tracked object is gone or the deadline passes, or, with a probe, until no
 * agent runs. Returns the number left. */
static int wait_gone(struct cli_kube *k, struct tracker *t, uint64_t deadline, const char *what,
                     struct agent_probe *probe, char *left, size_t size)
{
    uint64_t start = cli_now_ms(), last = start;

    for (;;) {
        int n = count_left(k, t, left, size);

        if (n <= 0)
            return n;
        if (cli_now_ms() >= deadline)
            return n;
        if (probe && !agent_running(k, probe)) {
            cli_progress("uninstall", "%s: not waiting for the agent", probe->why);
            return n;
        }
        if (cli_now_ms() - last >= 5000) {
            last = cli_now_ms();
            cli_progress("uninstall", "waiting for %d %s to go away (%s) ... %llus", n, what, left,
                         (unsigned long long)((last - start) / 1000));
        }
        cli_sleep_ms(250);
    }
}

/* The cluster-scoped objects of the manifests, in reverse order, CRDs last, and their namespaced
 * objects outside cliqo's namespace (the Role and RoleBinding in kube-node-lease); those inside it
 * go with the namespace. */
static int delete_manifest_objects(struct cli_kube *k, struct tracker *t, bool crds, int *deleted)
{
    char err[512];

    for (size_t f = cliqo_manifests_count; f-- > 0;) {
        const struct cliqo_manifest *m = &cliqo_manifests[f];
        json_t *docs = NULL, *doc;
        size_t i;
        int e = yj_load_all(m->yaml, strlen(m->yaml), m->name, &docs, err, sizeof(err));

        if (e < 0) {
            snprintf(k->err, sizeof(k->err), "%s", err);
            return e;
        }
        json_array_foreach(docs, i, doc)
        {
            const struct kapi_resource *r =
                peer_res_by_kind(json_string_value(json_object_get(doc, "apiVersion")),
                                 json_string_value(json_object_get(doc, "kind")));
            const char *name = kapi_obj_name(doc), *ns = kapi_obj_namespace(doc);

            if (!r || !name || (r == &kapi_crds) != crds)
                continue;
            if (r->namespaced && (!ns || !*ns || strcmp(ns, "cliqo") == 0))
                continue;
            if (r == &kapi_namespaces && strcmp(name, "cliqo") == 0)
                name = k->ns;
            e = delete_tracked(k, t, r, r->namespaced ? ns : NULL, name);
            if (e < 0) {
                json_decref(docs);
                return e;
            }
            *deleted += e;
        }
        json_decref(docs);
    }
    return 0;
}

/* The admission webhooks' configurations the agent creates (docs/offloading.md, "Admission"). */
static const struct kapi_resource res_mutating_webhooks = {"admissionregistration.k8s.io", "v1",
                                                           "mutatingwebhookconfigurations",
                                                           "MutatingWebhookConfiguration", false};
static const struct kapi_resource res_validating_webhooks = {
    "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration", false};

/* ClusterRoles and ClusterRoleBindings labelled part-of=cliqo that the manifests do not list, the
 * webhook configurations of the agent (failurePolicy Fail: left behind, they would refuse pods in
 * namespaces still labelled for them) and the agent's CertificateSigningRequests. */
static int delete_labelled(struct cli_kube *k, struct tracker *t, int *deleted)
{
    const struct kapi_resource *rs[] = {&peer_res_clusterrolebindings, &peer_res_clusterroles,
                                        &res_mutating_webhooks, &res_validating_webhooks,
                                        &kapi_csrs};

    for (size_t i = 0; i < sizeof(rs) / sizeof(rs[0]); i++) {
        json_t *items = NULL, *obj;
        size_t j;
        int e = cli_list(k, rs[i], NULL, "app.kubernetes.io/part-of=cliqo", &items);

        if (e < 0)
            return e;
        json_array_foreach(items, j, obj)
        {
            e = delete_tracked(k, t, rs[i], NULL, kapi_obj_name(obj));
            if (e < 0) {
                json_decref(items);
                return e;
            }
            *deleted += e;
        }
        json_decref(items);
    }
    return 0;
}

struct uninstall_args {
    struct cli_common co;
    bool force;
};

/* The command line of uninstall into a: cli_parse's result. */
static int uninstall_parse(int argc, char **argv, struct uninstall_args *a)
{
    /* clang-format off */
    const struct opts_def defs[] = {
        {.name = "force", .kind = OPTS_FLAG, .dest = &a->force,
         .help = "uninstall even with peerings; after the timeout remove finalizers that still "
                 "hold objects, at once when no agent runs"},
        CLI_OPT_TIMEOUT(&a->co, 0, "how long to wait for objects to go away (default 2m)"),
        CLI_OPTS_KUBE(&a->co),
        {0},
    };
    /* clang-format on */
    const struct opts_spec opts = {.defs = defs, .usage = usage_text};

    a->force = false;
    return cli_parse(&a->co, "uninstall", 120000, &opts, argc, argv);
}

int cmd_uninstall_main(int argc, char **argv)
{
    struct uninstall_args a;
    struct cli_kube k;
    struct tracker *t = NULL;
    json_t *fcs = NULL, *fc, *tenants = NULL, *ns;
    char left[1024] = "", tbuf[32];
    struct agent_probe probe = {0};
    uint64_t deadline, fc_deadline;
    int e, rc = 1, deleted = 0, n;
    size_t i;

    if ((e = uninstall_parse(argc, argv, &a)) < 0)
        return cli_parsed_exit(e);
    dur_format(a.co.timeout_ms, tbuf, sizeof(tbuf));
    deadline = cli_now_ms() + a.co.timeout_ms;
    fc_deadline = a.force ? cli_now_ms() + a.co.timeout_ms / 2 : deadline;
    if (cli_kube_open(&k, &a.co) < 0)
        goto kerr;
    t = x_calloc(1, sizeof(*t));
    if (!t) {
        rc = cli_error("uninstall", "out of memory");
        goto out;
    }

    /* 1. ForeignClusters, while the agent still runs. */
    e = cli_list(&k, &peer_res_foreignclusters, NULL, NULL, &fcs);
    if (e == -ENOENT)
        fcs = json_array();
    else if (e < 0)
        goto kerr;
    if (!a.force) {
        char names[512] = "";
        size_t peered = 0;

        json_array_foreach(fcs, i, fc)
        {
            if (!fc_peered(fc))
                continue;
            if (peered++ < 8)
                snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
                         peered > 1 ? ", " : "", kapi_obj_name(fc));
        }
        if (peered > 0) {
            rc = cli_error("uninstall",
                           "%zu ForeignCluster(s) still have a peering (%s): run 'cliqoctl "
                           "unpeer NAME' first, or uninstall --force",
                           peered, names);
            goto out;
        }
    }
    /* With --force, only an agent that runs is waited for (agent_running). */
    if (a.force && !agent_running(&k, &probe))
        cli_progress("uninstall", "%s: removing finalizers without waiting", probe.why);
    json_array_foreach(fcs, i, fc)
    {
        e = delete_tracked(&k, t, &peer_res_foreignclusters, NULL, kapi_obj_name(fc));
        if (e < 0)
            goto kerr;
        deleted += e;
    }
    if (t->n > 0) {
        cli_progress("uninstall", "waiting for %zu ForeignCluster(s) to be unpeered and deleted",
                     t->n);
        n = wait_gone(&k, t, fc_deadline, "ForeignCluster(s)", a.force ? &probe : NULL, left,
                      sizeof(left));
        if (n < 0)
            goto kerr;
        if (n > 0 && !a.force) {
            rc = cli_error("uninstall",
                           "%d ForeignCluster(s) not deleted after %s, e.g. %s: is the agent "
                           "running? (uninstall --force removes the finalizers)",
                           n, tbuf, left);
            goto out;
        }
        if (n > 0) {
            cli_progress("uninstall", "%d ForeignCluster(s) still present: removing finalizers", n);
            for (i = 0; i < t->n; i++)
                if (t->items[i].r &&
                    strip_finalizers(&k, t->items[i].r, NULL, t->items[i].name) < 0)
                    goto kerr;
        }
    }

    /* 2. Tenant namespaces, cliqo's namespace, cluster-scoped objects, CRDs: all at once. */
    e = cli_list(&k, &kapi_namespaces, NULL, PEER_LABEL_TENANT "=true", &tenants);
    if (e < 0)
        goto kerr;
    json_array_foreach(tenants, i, ns)
    {
        e = delete_tracked(&k, t, &kapi_namespaces, NULL, kapi_obj_name(ns));
        if (e < 0)
            goto kerr;
        deleted += e;
    }
    if (delete_manifest_objects(&k, t, false, &deleted) < 0 ||
        delete_labelled(&k, t, &deleted) < 0 || delete_manifest_objects(&k, t, true, &deleted) < 0)
        goto kerr;
    if (deleted == 0) {
        printf("cliqo is not installed: nothing to uninstall\n");
        rc = 0;
        goto out;
    }
    /* The Lease goes with cliqo's namespace, so the probe's verdict is the one from before. Without
     * an agent nobody else removes cliqo's finalizers: --force removes them at once and gives the
     * namespaces the whole timeout; with one, the agent gets half of what is left first. */
    if (a.force && probe.gone) {
        strip_all(&k);
        n = wait_gone(&k, t, deadline, "object(s)", NULL, left, sizeof(left));
    } else {
        n = wait_gone(&k, t, a.force ? cli_now_ms() + (deadline - cli_now_ms()) / 2 : deadline,
                      "object(s)", NULL, left, sizeof(left));
    }
    if (n > 0 && a.force) {
        cli_progress("uninstall", "%d object(s) still present (%s): removing finalizers", n, left);
        strip_all(&k);
        n = wait_gone(&k, t, deadline, "object(s)", NULL, left, sizeof(left));
    }
    if (n < 0)
        goto kerr;
    if (n > 0) {
        rc = cli_error("uninstall", "%d object(s) still present after %s, e.g. %s%s", n, tbuf, left,
                       a.force ? "" : " (uninstall --force removes finalizers)");
        goto out;
    }
    printf("cliqo uninstalled\n");
    rc = 0;
    goto out;
kerr:
    rc = cli_error("uninstall", "%s", k.err);
out:
    json_decref(fcs);
    json_decref(tenants);
    x_free(t);
    cli_kube_close(&k);
    return rc;
}
