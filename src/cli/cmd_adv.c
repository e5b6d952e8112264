/* cliqoctl accept|refuse: an operator's decision on a provider's Advertisement
 * (docs/advertisement.md, "Advertisement operator"). The decision is written to the
 * Advertisement's status with decidedBy: Operator, which the acceptance policy never overrides
 * (only the deny list and an invalid Advertisement do). The provider cannot write that status. */
#include "cli/cli.h"
#include "cli/kube.h"
#include "common/json.h"
#include "common/rfc3339.h"

#include "peering/identity.h"
#include "peering/resources.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char accept_usage[] =
    "Usage: cliqoctl accept CLUSTER [options]\n"
    "\n"
    "Accepts the Advertisement of a provider cluster (its ForeignCluster's name or cluster ID), "
    "as\n"
    "acceptPolicy Manual requires. The virtual node of the provider then appears. The decision\n"
    "stands until 'cliqoctl refuse' (only the deny list and an invalid Advertisement win over "
    "it).\n"
    "\n"
    "Options:\n";

static const char refuse_usage[] =
    "Usage: cliqoctl refuse CLUSTER [options]\n"
    "\n"
    "Refuses the Advertisement of a provider cluster (its ForeignCluster's name or cluster ID).\n"
    "A virtual node already running for it is drained and removed; the peering itself stays.\n"
    "The decision stands until 'cliqoctl accept'.\n"
    "\n"
    "Options:\n";

/* The ForeignCluster named `which`, or whose cluster ID is `which` (a new reference). */
static int find_fc(struct cli_kube *k, const char *which, json_t **ret)
{
    json_t *items = NULL, *fc;
    size_t i;
    int e;

    e = cli_get(k, &peer_res_foreignclusters, NULL, which, ret);
    if (e != -ENOENT)
        return e;
    e = cli_list(k, &peer_res_foreignclusters, NULL, NULL, &items);
    if (e < 0)
        return e;
    json_array_foreach(items, i, fc)
    {
        const char *id = jsn_str_at(fc, "spec", "clusterIdentity", "clusterID", NULL);

        if (id && strcmp(id, which) == 0) {
            *ret = json_incref(fc);
            json_decref(items);
            return 0;
        }
    }
    json_decref(items);
    return -ENOENT;
}

static int decide(int argc, char **argv, bool accept)
{
    const char *verb = accept ? "accept" : "refuse";
    struct cli_common co;
    struct cli_kube k = {0};
    const char *which = NULL, *id, *ns;
    json_t *fc = NULL, *adv = NULL;
    char name[128], now[32], patch[1024];
    bool wait = false;
    int e, rc = 1;
    /* refuse takes no --wait: its table starts after it. */
    /* clang-format off */
    const struct opts_def defs[] = {
        {.name = "wait", .kind = OPTS_FLAG, .dest = &wait,
         .help = "wait until the virtual node is Ready (up to --timeout)"},
        CLI_OPT_TIMEOUT(&co, accept ? 0 : OPTS_HIDDEN, "how long --wait waits (default 60s)"),
        CLI_OPTS_KUBE(&co),
        {0},
    };
    /* clang-format on */
    const struct opts_spec opts = {.defs = accept ? defs : defs + 1,
                                   .usage = accept ? accept_usage : refuse_usage,
                                   .args = &which,
                                   .max_args = 1};

    if ((e = cli_parse(&co, verb, 60000, &opts, argc, argv)) < 0)
        return cli_parsed_exit(e);
    if (!which)
        return cli_misuse(verb, "which cluster? (a ForeignCluster's name or cluster ID)");
    if (cli_kube_open(&k, &co) < 0)
        goto kerr;
    e = find_fc(&k, which, &fc);
    if (e == -ENOENT) {
        rc = cli_error(verb, "no ForeignCluster named '%s' or with that cluster ID", which);
        goto out;
    }
    if (e < 0)
        goto kerr;
    id = jsn_str_at(fc, "spec", "clusterIdentity", "clusterID", NULL);
    ns = jsn_str_at(fc, "status", "tenantNamespace", "local", NULL);
    if (!id || !peer_cluster_id_valid(id) || !ns) {
        rc = cli_error(verb, "ForeignCluster %s has no tenant namespace yet: is it peered?",
                       kapi_obj_name(fc));
        goto out;
    }
    snprintf(name, sizeof(name), PEER_ADV_PREFIX "%s", id);
    e = cli_get(&k, &peer_res_advertisements, ns, name, &adv);
    if (e == -ENOENT) {
        rc = cli_error(verb,
                       "cluster %s has sent no Advertisement (Advertisement %s/%s does not exist): "
                       "is it sharing with us?",
                       which, ns, name);
        goto out;
    }
    if (e < 0)
        goto kerr;
    rfc3339_now(0, now, sizeof(now));
    snprintf(patch, sizeof(patch),
             "{\"status\":{\"advertisementStatus\":\"%s\",\"reason\":\"%s\",\"message\":\"%s by an "
             "operator (cliqoctl %s)\",\"decidedBy\":\"Operator\",\"lastTransitionTime\":\"%s\"}}",
             accept ? "Accepted" : "Refused", accept ? "AcceptedByOperator" : "RefusedByOperator",
             accept ? "accepted" : "refused", verb, now);
    e = cli_merge_patch(&k, &peer_res_advertisements, ns, name, "status", patch, NULL);
    if (e < 0)
        goto kerr;
    printf("Advertisement of %s %s\n", kapi_obj_name(fc), accept ? "accepted" : "refused");
    if (wait) {
        uint64_t deadline = cli_now_ms() + co.timeout_ms;
        char node[96];

        snprintf(node, sizeof(node), PEER_VNODE_PREFIX "%s", id);
        for (;;) {
            json_t *n = NULL, *c;
            size_t i;
            bool ready = false;

            if (cli_get(&k, &kapi_nodes, NULL, node, &n) == 0) {
                json_array_foreach(json_object_get(json_object_get(n, "status"), "conditions"), i,
                                   c)
                {
                    const char *t = json_string_value(json_object_get(c, "type"));
                    const char *s = json_string_value(json_object_get(c, "status"));

                    if (t && s && strcmp(t, "Ready") == 0 && strcmp(s, "True") == 0)
                        ready = true;
                }
            }
            json_decref(n);
            if (ready) {
                printf("virtual node %s is Ready\n", node);
                break;
            }
            if (cli_now_ms() >= deadline) {
                rc = cli_error(verb, "virtual node %s is not Ready after the timeout", node);
                goto out;
            }
            cli_sleep_ms(500);
        }
    }
    rc = 0;
    goto out;
kerr:
    rc = cli_error(verb, "%s", k.err);
out:
    json_decref(fc);
    json_decref(adv);
    cli_kube_close(&k);
    return rc;
}

int cmd_accept_main(int argc, char **argv)
{
    return decide(argc, argv, true);
}

int cmd_refuse_main(int argc, char **argv)
{
    return decide(argc, argv, false);
}
