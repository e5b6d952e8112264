/* cliqoctl status: the local identity and one line per ForeignCluster (or a JSON document). */
#include "cli/cli.h"
#include "cli/discovered.h"
#include "cli/kube.h"
#include "cli/offload.h"

#include "peering/resources.h"
#include "common/json.h"
#include "common/rfc3339.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* WireGuard's Reject-After-Time, as the gateway and the virtual node judge a handshake
 * (docs/dataplane.md, section 6). */
#define HANDSHAKE_MAX_S 180

static const char usage_text[] =
    "Usage: cliqoctl status [-o json]\n"
    "\n"
    "Shows this cluster's identity and its ForeignClusters: the state of the outgoing and\n"
    "incoming peerings and of the authentication, and the local tenant namespace; then the\n"
    "resource sharing with each: how the peer judged our Advertisement (and what it offers),\n"
    "how we judged the peer's, and the virtual node standing for it; then, when this cluster's\n"
    "gateway reports on tunnels, each peer's tunnel: state, age of the last WireGuard handshake,\n"
    "bytes received and sent, and the gateway's message (the error, when there is one); then the\n"
    "clusters discovery found (as 'cliqoctl discovered' shows them); then the offloaded\n"
    "namespaces: strategy, name on the providers, phase and each provider's readiness.\n"
    "\n"
    "Options:\n";

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

/* The virtual node of a peer (liqo-<id>) and the reason of its Ready condition: a new object
 * {"name","ready","reason"}, or null when there is none. */
static json_t *vnode_json(struct cli_kube *k, const json_t *fc)
{
    const char *id = jsn_str_at(fc, "spec", "clusterIdentity", "clusterID", NULL);
    char name[96];
    json_t *node = NULL, *c, *out = NULL;
    size_t i;

    if (!id)
        return json_null();
    snprintf(name, sizeof(name), PEER_VNODE_PREFIX "%s", id);
    if (cli_get(k, &kapi_nodes, NULL, name, &node) < 0)
        return json_null();
    json_array_foreach(json_object_get(json_object_get(node, "status"), "conditions"), i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));

        if (t && strcmp(t, "Ready") == 0)
            out = json_pack(
                "{s:s,s:b,s:s*}", "name", name, "ready",
                strcmp(or_dash(json_string_value(json_object_get(c, "status"))), "True") == 0,
                "reason", json_string_value(json_object_get(c, "reason")));
    }
    json_decref(node);
    return out ? out : json_pack("{s:s,s:b}", "name", name, "ready", 0);
}

/* The tunnel to a peer, from the status its TunnelEndpoint here (tep-<id> in the peer's tenant
 * namespace) has from this cluster's gateway: a new object {"state", "phase", "lastHandshake",
 * "handshakeAgeSeconds", "rxBytes", "txBytes", "message"}, or null when there is none. state is the
 * phase, except an Up whose handshake is 180 s old or more (the gateway stopped writing):
 * "NoHandshake". */
static json_t *tunnel_json(struct cli_kube *k, const json_t *fc)
{
    const char *id = jsn_str_at(fc, "spec", "clusterIdentity", "clusterID", NULL);
    const char *tns = jsn_str_at(fc, "status", "tenantNamespace", "local", NULL);
    const char *phase, *hs;
    char name[96];
    json_t *tep = NULL, *st, *out;
    int64_t t, age = -1;

    if (!id || !tns)
        return json_null();
    snprintf(name, sizeof(name), "tep-%s", id);
    if (cli_get(k, &peer_res_tunnelendpoints, tns, name, &tep) < 0)
        return json_null();
    st = json_object_get(tep, "status");
    phase = json_string_value(json_object_get(st, "phase"));
    hs = json_string_value(json_object_get(st, "lastHandshake"));
    if (rfc3339_parse(hs, RFC3339_OFFSET, &t) == 0 && t > 0) {
        age = (int64_t)time(NULL) - t;
        if (age < 0)
            age = 0;
    }
    out = json_pack("{s:s,s:s*,s:s*,s:o,s:O,s:O,s:O}", "state",
                    phase && strcmp(phase, "Up") == 0 && (age < 0 || age >= HANDSHAKE_MAX_S)
                        ? "NoHandshake"
                        : (phase ? phase : "Unknown"),
                    "phase", phase, "lastHandshake", hs, "handshakeAgeSeconds",
                    age >= 0 ? json_integer(age) : json_null(), "rxBytes",
                    json_is_integer(json_object_get(st, "rxBytes")) ? json_object_get(st, "rxBytes")
                                                                    : json_null(),
                    "txBytes",
                    json_is_integer(json_object_get(st, "txBytes")) ? json_object_get(st, "txBytes")
                                                                    : json_null(),
                    "message",
                    json_is_string(json_object_get(st, "message")) ? json_object_get(st, "message")
                                                                   : json_null());
    json_decref(tep);
    return out ? out : json_null();
}

/* The tunnels table: one line per peer whose TunnelEndpoint is here; nothing when none is. */
static void print_tunnels(struct cli_kube *k, json_t *fcs)
{
    json_t *fc;
    size_t i;
    bool any = false;

    json_array_foreach(fcs, i, fc)
    {
        json_t *t = tunnel_json(k, fc), *age, *rx, *tx;
        char hs[32], rxs[24], txs[24];

        if (!json_is_object(t)) {
            json_decref(t);
            continue;
        }
        if (!any) {
            printf("\n%-20s %-12s %-10s %-14s %-14s %s\n", "TUNNEL", "STATE", "HANDSHAKE",
                   "RX-BYTES", "TX-BYTES", "MESSAGE");
            any = true;
        }
        age = json_object_get(t, "handshakeAgeSeconds");
        rx = json_object_get(t, "rxBytes");
        tx = json_object_get(t, "txBytes");
        if (json_is_integer(age))
            snprintf(hs, sizeof(hs), "%" PRId64 "s ago", (int64_t)json_integer_value(age));
        else
            snprintf(hs, sizeof(hs), "never");
        snprintf(rxs, sizeof(rxs), "%" PRId64,
                 json_is_integer(rx) ? (int64_t)json_integer_value(rx) : 0);
        snprintf(txs, sizeof(txs), "%" PRId64,
                 json_is_integer(tx) ? (int64_t)json_integer_value(tx) : 0);
        printf("%-20s %-12s %-10s %-14s %-14s %s\n", or_dash(kapi_obj_name(fc)),
               json_string_value(json_object_get(t, "state")), hs, rxs, txs,
               or_dash(json_string_value(json_object_get(t, "message"))));
        json_decref(t);
    }
}

static void decision(char *buf, size_t size, const json_t *d)
{
    const char *st = json_string_value(json_object_get(d, "status"));
    const char *reason = json_string_value(json_object_get(d, "reason"));

    if (!st || !*st)
        snprintf(buf, size, "%s", d ? "pending" : "-");
    else
        snprintf(buf, size, "%s%s%s%s", st, reason && *reason ? " (" : "", reason ? reason : "",
                 reason && *reason ? ")" : "");
}

/* The sharing table: ours on them (their decision, what we offer), theirs here (our decision),
 * and the virtual node. */
static void print_sharing(struct cli_kube *k, json_t *fcs)
{
    json_t *fc;
    size_t i;
    bool any = false;

    json_array_foreach(fcs, i, fc)
    {
        const json_t *adv = json_object_get(json_object_get(fc, "status"), "advertisement");
        const json_t *sent = json_object_get(adv, "sent"), *recv = json_object_get(adv, "received");
        json_t *vn = (recv || sent) ? vnode_json(k, fc) : json_null();
        char ours[96], theirs[96], node[160];
        const char *rk;
        json_t *rv;

        if (!sent && !recv && json_is_null(vn)) {
            json_decref(vn);
            continue;
        }
        if (!any) {
            printf("\n%-20s %-36s %-36s %s\n", "SHARING", "OUR-ADVERTISEMENT (THEIR DECISION)",
                   "THEIR-ADVERTISEMENT (OUR DECISION)", "VIRTUAL-NODE");
            any = true;
        }
        decision(ours, sizeof(ours), sent);
        decision(theirs, sizeof(theirs), recv);
        if (json_is_object(vn))
            snprintf(node, sizeof(node), "%s %s%s%s%s",
                     json_string_value(json_object_get(vn, "name")),
                     json_is_true(json_object_get(vn, "ready")) ? "Ready" : "NotReady",
                     json_string_value(json_object_get(vn, "reason")) ? " (" : "",
                     json_string_value(json_object_get(vn, "reason"))
                         ? json_string_value(json_object_get(vn, "reason"))
                         : "",
                     json_string_value(json_object_get(vn, "reason")) ? ")" : "");
        else
            snprintf(node, sizeof(node), "-");
        printf("%-20s %-36s %-36s %s\n", or_dash(kapi_obj_name(fc)), ours, theirs, node);
        if (json_object_size(json_object_get(sent, "resources")) > 0) {
            printf("%-20s offered:", "");
            json_object_foreach(json_object_get(sent, "resources"), rk, rv)
                printf(" %s=%s", rk, or_dash(json_string_value(rv)));
            printf("\n");
        }
        json_decref(vn);
    }
}

struct status_args {
    struct cli_common co;
    bool json;
};

/* The command line of status into a: cli_parse's result. */
static int status_parse(int argc, char **argv, struct status_args *a)
{
    /* clang-format off */
    const struct opts_def defs[] = {
        CLI_OPT_OUTPUT(&a->json, "print a JSON document (with the full conditions)"),
        CLI_OPTS_KUBE(&a->co),
        /* Accepted as by every cluster verb, not shown: each request has its own timeout. */
        CLI_OPT_TIMEOUT(&a->co, OPTS_HIDDEN, NULL),
        {0},
    };
    /* clang-format on */
    const struct opts_spec opts = {.defs = defs, .usage = usage_text};

    a->json = false;
    return cli_parse(&a->co, "status", 30000, &opts, argc, argv);
}

int cmd_status_main(int argc, char **argv)
{
    const char *verb = "status";
    struct status_args a;
    struct cli_kube k = {0};
    json_t *cm = NULL, *fcs = NULL, *fc, *doc = NULL, *peers, *offl = NULL;
    const char *id = NULL, *name = NULL;
    size_t i;
    int e, rc = 1;

    if ((e = status_parse(argc, argv, &a)) < 0)
        return cli_parsed_exit(e);
    if (cli_kube_open(&k, &a.co) < 0)
        goto kerr;
    e = cli_get(&k, &kapi_configmaps, k.ns, PEER_CLUSTER_ID_CM, &cm);
    if (e < 0 && e != -ENOENT)
        goto kerr;
    e = cli_list(&k, &peer_res_foreignclusters, NULL, NULL, &fcs);
    if (e < 0 && e != -ENOENT)
        goto kerr;
    if (!cm && !fcs) {
        if (a.json)
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
    if (offload_status_list(&k, &offl) < 0)
        goto kerr;
    id = jsn_str_at(cm, "data", "cluster-id", NULL);
    name = jsn_str_at(cm, "data", "cluster-name", NULL);
    if (a.json) {
        doc = json_pack("{s:b, s:s, s:s*, s:s*, s:[]}", "installed", 1, "namespace", k.ns,
                        "clusterID", id, "clusterName", name, "foreignClusters");
        peers = json_object_get(doc, "foreignClusters");
        json_array_foreach(fcs, i, fc)
        {
            json_t *conds = json_object_get(json_object_get(fc, "status"), "peeringConditions");
            json_t *p = json_pack(
                "{s:s*, s:s*, s:s*, s:s, s:s, s:s, s:s*, s:s*, s:s*, s:o}", "name",
                kapi_obj_name(fc), "clusterID",
                jsn_str_at(fc, "spec", "clusterIdentity", "clusterID", NULL), "clusterName",
                jsn_str_at(fc, "spec", "clusterIdentity", "clusterName", NULL), "outgoing",
                peer_fc_condition(fc, "OutgoingPeering"), "incoming",
                peer_fc_condition(fc, "IncomingPeering"), "authentication",
                peer_fc_condition(fc, "AuthenticationStatus"), "tenantNamespace",
                jsn_str_at(fc, "status", "tenantNamespace", "local", NULL), "remoteTenantNamespace",
                jsn_str_at(fc, "status", "tenantNamespace", "remote", NULL), "creationTimestamp",
                jsn_str_at(fc, "metadata", "creationTimestamp", NULL), "conditions",
                json_is_array(conds) ? json_incref(conds) : json_array());

            if (p) {
                json_t *adv = json_object_get(json_object_get(fc, "status"), "advertisement");

                json_object_set_new(p, "advertisement",
                                    json_is_object(adv) ? json_incref(adv) : json_object());
                json_object_set_new(p, "virtualNode", vnode_json(&k, fc));
                json_object_set_new(p, "tunnel", tunnel_json(&k, fc));
            }
            json_array_append_new(peers, p);
        }
        json_object_set_new(doc, "discovered", dcli_json_array(fcs));
        json_object_set(doc, "offloading", offl);
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
        if (json_array_size(offl) > 0)
            offload_status_print(offl, stdout);
        rc = 0;
        goto out;
    }
    printf("%-20s %-36s %-12s %-12s %-12s %-34s %s\n", "NAME", "CLUSTER-ID", "OUTGOING", "INCOMING",
           "AUTH", "TENANT", "AGE");
    json_array_foreach(fcs, i, fc)
    {
        char age[32];

        cli_age(jsn_str_at(fc, "metadata", "creationTimestamp", NULL), age, sizeof(age));
        printf("%-20s %-36s %-12s %-12s %-12s %-34s %s\n", or_dash(kapi_obj_name(fc)),
               or_dash(jsn_str_at(fc, "spec", "clusterIdentity", "clusterID", NULL)),
               peer_fc_condition(fc, "OutgoingPeering"), peer_fc_condition(fc, "IncomingPeering"),
               peer_fc_condition(fc, "AuthenticationStatus"),
               or_dash(jsn_str_at(fc, "status", "tenantNamespace", "local", NULL)), age);
    }
    print_sharing(&k, fcs);
    print_tunnels(&k, fcs);
    printf("\ndiscovered:\n");
    dcli_print_table(fcs, stdout);
    offload_status_print(offl, stdout);
    rc = 0;
    goto out;
kerr:
    rc = cli_error(verb, "%s", k.err);
out:
    json_decref(doc);
    json_decref(offl);
    json_decref(cm);
    json_decref(fcs);
    cli_kube_close(&k);
    return rc;
}
