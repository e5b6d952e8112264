/* cliqoctl status: the local identity and one line per ForeignCluster (or a JSON document). */
#include "cli/cli.h"
#include "cli/discovered.h"
#include "cli/kube.h"

#include "peering/resources.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char usage_text[] =
    "Usage: cliqoctl status [-o json]\n"
    "\n"
    "Shows this cluster's identity and its ForeignClusters: the state of the outgoing and\n"
    "incoming peerings and of the authentication, and the local tenant namespace; then the\n"
    "clusters discovery found (as 'cliqoctl discovered' shows them).\n"
    "\n"
    "Options:\n"
    "  -o json                 print a JSON document (with the full conditions)\n"
    "  --kubeconfig FILE       kubeconfig (default: $KUBECONFIG, ~/.kube/config)\n"
    "  --context NAME          kubeconfig context (default: the current context)\n"
    "  -n, --namespace NS      cliqo's namespace (default cliqo)\n";

static const char *or_dash(const char *s)
{
    return s && *s ? s : "-";
}

static void print_json(json_t *doc)
{
    char *s = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

    printf("%s\n", s ? s : "{}");
    free(s);
}

int cmd_status_main(int argc, char **argv)
{
    const char *verb = "status";
    struct cli_common co;
    struct cli_kube k = {0};
    bool json = false;
    json_t *cm = NULL, *fcs = NULL, *fc, *doc = NULL, *peers;
    const char *id = NULL, *name = NULL;
    size_t i;
    int e, rc = 1;

    if (cli_wants_help(argc, argv)) {
        fputs(usage_text, stdout);
        return 0;
    }
    cli_common_init(&co, verb, 30000);
    for (int a = 1; a < argc; a++) {
        const char *v;
        int m;

        if ((m = cli_common_opt(&co, argc, argv, &a)) != 0) {
            if (m < 0)
                return 2;
        } else if ((m = cli_opt(verb, "-o", argc, argv, &a, &v)) != 0 ||
                   (m = cli_opt(verb, "--output", argc, argv, &a, &v)) != 0) {
            if (m < 0)
                return 2;
            if (strcmp(v, "json") != 0)
                return cli_misuse(verb, "unknown output format '%s' (only json)", v);
            json = true;
        } else {
            return cli_misuse(verb, "unknown option '%s' (try --help)", argv[a]);
        }
    }
    if (cli_kube_open(&k, &co) < 0)
        goto kerr;
    e = cli_get(&k, &kapi_configmaps, k.ns, PEER_CLUSTER_ID_CM, &cm);
    if (e < 0 && e != -ENOENT)
        goto kerr;
    e = cli_list(&k, &peer_res_foreignclusters, NULL, NULL, &fcs);
    if (e < 0 && e != -ENOENT)
        goto kerr;
    if (!cm && !fcs) {
        if (json)
            printf("{\"installed\": false}\n");
        else
            printf("cliqo is not installed in this cluster (no ConfigMap %s/%s, no ForeignCluster "
                   "CRD): run 'cliqoctl install'\n",
                   k.ns, PEER_CLUSTER_ID_CM);
        rc = 0;
        goto out;
    }
    if (!fcs)
        fcs = json_array();
    id = cli_json_str(cm, "data", "cluster-id", NULL);
    name = cli_json_str(cm, "data", "cluster-name", NULL);
    if (json) {
        doc = json_pack("{s:b, s:s, s:s*, s:s*, s:[]}", "installed", 1, "namespace", k.ns,
                        "clusterID", id, "clusterName", name, "foreignClusters");
        peers = json_object_get(doc, "foreignClusters");
        json_array_foreach(fcs, i, fc)
        {
            json_t *conds = json_object_get(json_object_get(fc, "status"), "peeringConditions");
            json_t *p = json_pack(
                "{s:s*, s:s*, s:s*, s:s, s:s, s:s, s:s*, s:s*, s:s*, s:o}", "name",
                kapi_obj_name(fc), "clusterID",
                cli_json_str(fc, "spec", "clusterIdentity", "clusterID", NULL), "clusterName",
                cli_json_str(fc, "spec", "clusterIdentity", "clusterName", NULL), "outgoing",
                peer_fc_condition(fc, "OutgoingPeering"), "incoming",
                peer_fc_condition(fc, "IncomingPeering"), "authentication",
                peer_fc_condition(fc, "AuthenticationStatus"), "tenantNamespace",
                cli_json_str(fc, "status", "tenantNamespace", "local", NULL),
                "remoteTenantNamespace",
                cli_json_str(fc, "status", "tenantNamespace", "remote", NULL), "creationTimestamp",
                cli_json_str(fc, "metadata", "creationTimestamp", NULL), "conditions",
                json_is_array(conds) ? json_incref(conds) : json_array());

            json_array_append_new(peers, p);
        }
        json_object_set_new(doc, "discovered", dcli_json_array(fcs));
        print_json(doc);
        rc = 0;
        goto out;
    }
    if (!cm)
        printf("cluster: (no identity: ConfigMap %s/%s is missing; run 'cliqoctl install')\n", k.ns,
               PEER_CLUSTER_ID_CM);
    else
        printf("cluster ID:   %s\ncluster name: %s\n", or_dash(id), or_dash(name));
    printf("\n");
    if (json_array_size(fcs) == 0) {
        printf("no foreign clusters (peer with 'cliqoctl add')\n");
        rc = 0;
        goto out;
    }
    printf("%-20s %-36s %-12s %-12s %-12s %-34s %s\n", "NAME", "CLUSTER-ID", "OUTGOING", "INCOMING",
           "AUTH", "TENANT", "AGE");
    json_array_foreach(fcs, i, fc)
    {
        char age[32];

        cli_age(cli_json_str(fc, "metadata", "creationTimestamp", NULL), age, sizeof(age));
        printf("%-20s %-36s %-12s %-12s %-12s %-34s %s\n", or_dash(kapi_obj_name(fc)),
               or_dash(cli_json_str(fc, "spec", "clusterIdentity", "clusterID", NULL)),
               peer_fc_condition(fc, "OutgoingPeering"), peer_fc_condition(fc, "IncomingPeering"),
               peer_fc_condition(fc, "AuthenticationStatus"),
               or_dash(cli_json_str(fc, "status", "tenantNamespace", "local", NULL)), age);
    }
    printf("\ndiscovered:\n");
    dcli_print_table(fcs, stdout);
    rc = 0;
    goto out;
kerr:
    rc = cli_error(verb, "%s", k.err);
out:
    json_decref(doc);
    json_decref(cm);
    json_decref(fcs);
    cli_kube_close(&k);
    return rc;
}
