/* cliqoctl discovered: the clusters discovery found (docs/discovery.md), how, since when, and
 * whether they are trusted; plus the helpers `status` and `add` use for discovered clusters.
 *
 * A discovered cluster is a ForeignCluster with status.discovery (written by the agent's discovery
 * module): labelled discovery-type LAN or WAN when discovery created it, or any other
 * ForeignCluster that is also announced. Nothing shown here is trusted: the announced URL and CA
 * hash come from the network; "trust" says whether the operator supplied credentials that match. */
#include "cli/cli.h"
#include "cli/discovered.h"
#include "cli/kube.h"

#include "common/json.h"
#include "common/xalloc.h"
#include "peering/identity.h"
#include "peering/pki.h"
#include "peering/resources.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>

static const char usage_text[] =
    "Usage: cliqoctl discovered [-o json]\n"
    "\n"
    "Lists the clusters discovery found: on the LAN (mDNS) or through a SearchDomain (WAN\n"
    "DNS-SD). For each: its ForeignCluster, cluster ID and name, how it was found, the auth URL\n"
    "it announces, its age, whether it is announced now, and its trust:\n"
    "  Trusted        you supplied its token and expected CA hash, and its announcement agrees\n"
    "  Untrusted      you supplied a token but no expected CA hash\n"
    "  Mismatch       the announced (or served) CA hash differs from the expected one: no join\n"
    "  NoCredentials  nothing supplied: peer with 'cliqoctl add NAME --token T --ca-cert-hash H'\n"
    "  Conflict       several announcements claim this cluster ID and disagree: no join\n"
    "\n"
    "Options:\n";

static const char *or_dash(const char *s)
{
    return s && *s ? s : "-";
}

bool dcli_is_discovered(const json_t *fc)
{
    const char *t = jsn_str_at(fc, "metadata", "labels", PEER_LABEL_DISC_TYPE, NULL);

    return json_is_object(json_object_get(json_object_get(fc, "status"), "discovery")) ||
           (t && (strcmp(t, "LAN") == 0 || strcmp(t, "WAN") == 0));
}

/* "LAN", "WAN (sd)" */
static void found_how(const json_t *fc, char *buf, size_t size)
{
    const char *type = jsn_str_at(fc, "status", "discovery", "type", NULL);
    const char *sd = jsn_str_at(fc, "status", "discovery", "searchDomain", NULL);

    if (!type)
        type = jsn_str_at(fc, "metadata", "labels", PEER_LABEL_DISC_TYPE, NULL);
    if (sd)
        snprintf(buf, size, "%s(%s)", or_dash(type), sd);
    else
        snprintf(buf, size, "%s", or_dash(type));
}

static const char *peered(const json_t *fc)
{
    const char *o = peer_fc_condition(fc, "OutgoingPeering");
    const char *i = peer_fc_condition(fc, "IncomingPeering");

    if (strcmp(o, "None") != 0)
        return o;
    if (strcmp(i, "None") != 0)
        return i;
    return "No";
}

json_t *dcli_json(const json_t *fc)
{
    const json_t *d = json_object_get(json_object_get(fc, "status"), "discovery");

    return json_pack("{s:s*,s:s*,s:s*,s:s*,s:s*,s:s*,s:s*,s:b,s:s*,s:s*,s:s*,s:s*,s:s}", "name",
                     kapi_obj_name(fc), "clusterID",
                     jsn_str_at(fc, "spec", "clusterIdentity", "clusterID", NULL), "clusterName",
                     jsn_str_at(fc, "spec", "clusterIdentity", "clusterName", NULL), "type",
                     jsn_str_at(fc, "status", "discovery", "type", NULL), "searchDomain",
                     jsn_str_at(fc, "status", "discovery", "searchDomain", NULL), "authUrl",
                     jsn_str_at(fc, "status", "discovery", "authUrl", NULL), "caCertHash",
                     jsn_str_at(fc, "status", "discovery", "caCertHash", NULL), "announced",
                     json_is_true(json_object_get(d, "announced")), "trust",
                     jsn_str_at(fc, "status", "discovery", "trust", NULL), "message",
                     jsn_str_at(fc, "status", "discovery", "message", NULL), "firstSeen",
                     jsn_str_at(fc, "status", "discovery", "firstSeen", NULL), "creationTimestamp",
                     jsn_str_at(fc, "metadata", "creationTimestamp", NULL), "peering", peered(fc));
}

json_t *dcli_json_array(const json_t *fcs)
{
    json_t *arr = json_array();
    const json_t *fc;
    size_t i;

    json_array_foreach(fcs, i, fc)
    {
        if (arr && dcli_is_discovered(fc))
            json_array_append_new(arr, dcli_json(fc));
    }
    return arr;
}

void dcli_print_table(const json_t *fcs, FILE *f)
{
    const json_t *fc;
    size_t i, n = 0;

    json_array_foreach(fcs, i, fc) n += dcli_is_discovered(fc);
    if (n == 0) {
        fprintf(f, "no discovered clusters (LAN discovery follows ClusterConfig discoveryConfig; "
                   "WAN discovery follows SearchDomains)\n");
        return;
    }
    fprintf(f, "%-38s %-16s %-12s %-32s %-5s %-9s %-13s %s\n", "NAME", "CLUSTER-NAME", "FOUND",
            "AUTH-URL", "AGE", "ANNOUNCED", "TRUST", "PEERING");
    json_array_foreach(fcs, i, fc)
    {
        char how[300], age[32];
        const json_t *d = json_object_get(json_object_get(fc, "status"), "discovery");

        if (!dcli_is_discovered(fc))
            continue;
        found_how(fc, how, sizeof(how));
        cli_age(jsn_str_at(fc, "metadata", "creationTimestamp", NULL), age, sizeof(age));
        fprintf(f, "%-38s %-16s %-12s %-32s %-5s %-9s %-13s %s\n", or_dash(kapi_obj_name(fc)),
                or_dash(jsn_str_at(fc, "spec", "clusterIdentity", "clusterName", NULL)), how,
                or_dash(jsn_str_at(fc, "status", "discovery", "authUrl", NULL)), age,
                !json_is_object(d)                              ? "-"
                : json_is_true(json_object_get(d, "announced")) ? "yes"
                                                                : "no",
                or_dash(jsn_str_at(fc, "status", "discovery", "trust", NULL)), peered(fc));
    }
}

int cmd_discovered_main(int argc, char **argv)
{
    const char *verb = "discovered";
    struct cli_common co;
    struct cli_kube k = {0};
    bool json = false;
    json_t *fcs = NULL, *arr = NULL;
    int e, rc = 1;
    /* clang-format off */
    const struct opts_def defs[] = {
        CLI_OPT_OUTPUT(&json, "print a JSON array"),
        CLI_OPTS_KUBE(&co),
        /* Accepted as by every cluster verb,
        not shown: each request has its own timeout. */ CLI_OPT_TIMEOUT(&co, OPTS_HIDDEN, NULL),
        {0},
    };
    /* clang-format on */
    const struct opts_spec opts = {.defs = defs, .usage = usage_text};

    if ((e = cli_parse(&co, verb, 30000, &opts, argc, argv)) < 0)
        return cli_parsed_exit(e);
    if (cli_kube_open(&k, &co) < 0)
        goto kerr;
    e = cli_list(&k, &peer_res_foreignclusters, NULL, NULL, &fcs);
    if (e == -ENOENT) {
        rc = cli_error(verb, "cliqo is not installed (no ForeignCluster CRD): run 'cliqoctl "
                             "install'");
        goto out;
    }
    if (e < 0)
        goto kerr;
    if (json) {
        char *s;

        arr = dcli_json_array(fcs);
        s = json_dumps(arr, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", s ? s : "[]");
        free(s);
    } else {
        dcli_print_table(fcs, stdout);
    }
    rc = 0;
    goto out;
kerr:
    rc = cli_error(verb, "%s", k.err);
out:
    json_decref(arr);
    json_decref(fcs);
    cli_kube_close(&k);
    return rc;
}

/* ---- add from a discovered cluster -------------------------------------------------------- */

int dcli_resolve(struct cli_kube *k, const char *arg, struct dcli_target *ret)
{
    json_t *fc = NULL, *items = NULL, *it;
    const char *url, *id, *type;
    size_t i, matches = 0;
    int e;

    memset(ret, 0, sizeof(*ret));
    e = cli_get(k, &peer_res_foreignclusters, NULL, arg, &fc);
    if (e < 0 && e != -ENOENT)
        return e;
    if (!fc) {
        /* By cluster ID, else by the (unique) cluster name a discovered cluster announces. */
        e = cli_list(k, &peer_res_foreignclusters, NULL, NULL, &items);
        if (e < 0)
            return e;
        json_array_foreach(items, i, it)
        {
            const char *iid = jsn_str_at(it, "spec", "clusterIdentity", "clusterID", NULL);
            const char *iname = jsn_str_at(it, "spec", "clusterIdentity", "clusterName", NULL);

            if (iid && strcmp(iid, arg) == 0) {
                json_decref(fc);
                fc = json_incref(it);
                matches = 1;
                break;
            }
            if (dcli_is_discovered(it) && iname && strcmp(iname, arg) == 0) {
                matches++;
                json_decref(fc);
                fc = json_incref(it);
            }
        }
        json_decref(items);
        if (matches > 1) {
            json_decref(fc);
            snprintf(k->err, sizeof(k->err),
                     "several discovered clusters announce the name '%s': use the ForeignCluster "
                     "name or cluster ID (see 'cliqoctl discovered')",
                     arg);
            return -EEXIST;
        }
    }
    if (!fc) {
        snprintf(k->err, sizeof(k->err),
                 "no discovered cluster named '%s' (see 'cliqoctl discovered'; without discovery "
                 "pass --auth-url and --id)",
                 arg);
        return -ENOENT;
    }
    if (!dcli_is_discovered(fc)) {
        snprintf(k->err, sizeof(k->err),
                 "ForeignCluster %s was not found by discovery: pass --auth-url and --id",
                 kapi_obj_name(fc));
        json_decref(fc);
        return -EINVAL;
    }
    url = jsn_str_at(fc, "status", "discovery", "authUrl", NULL);
    if (!url)
        url = jsn_str_at(fc, "spec", "foreignAuthUrl", NULL);
    id = jsn_str_at(fc, "spec", "clusterIdentity", "clusterID", NULL);
    type = jsn_str_at(fc, "metadata", "labels", PEER_LABEL_DISC_TYPE, NULL);
    if (!url || !id || !peer_cluster_id_valid(id)) {
        snprintf(k->err, sizeof(k->err),
                 "discovered cluster %s announces no usable auth URL or cluster ID",
                 kapi_obj_name(fc));
        json_decref(fc);
        return -EINVAL;
    }
    snprintf(ret->fc_name, sizeof(ret->fc_name), "%s", kapi_obj_name(fc));
    snprintf(ret->id, sizeof(ret->id), "%s", id);
    snprintf(ret->url, sizeof(ret->url), "%s", url);
    snprintf(ret->type, sizeof(ret->type), "%s", type ? type : "Manual");
    snprintf(ret->announced_hash, sizeof(ret->announced_hash), "%s",
             jsn_str_at(fc, "status", "discovery", "caCertHash", NULL)
                 ? jsn_str_at(fc, "status", "discovery", "caCertHash", NULL)
                 : "");
    snprintf(ret->trust, sizeof(ret->trust), "%s",
             jsn_str_at(fc, "status", "discovery", "trust", NULL)
                 ? jsn_str_at(fc, "status", "discovery", "trust", NULL)
                 : "");
    json_decref(fc);
    return 0;
}

int dcli_hash_equal(const char *a, const char *b)
{
    unsigned char da[32], db[32];

    if (peer_pki_hash_parse(a, da, NULL, 0) < 0 || peer_pki_hash_parse(b, db, NULL, 0) < 0)
        return 0;
    return CRYPTO_memcmp(da, db, sizeof(da)) == 0;
}

int dcli_stage(struct cli_kube *k, const char *id, const char *token, const char *hash)
{
    char name[PEER_NAME_MAX + 32], *bt = cli_b64_encode(token, strlen(token));
    char *bh = cli_b64_encode(hash, strlen(hash));
    json_t *s = NULL;
    int e = -ENOMEM;

    snprintf(name, sizeof(name), "remote-auth-%s", id);
    if (bt && bh)
        s = json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}}, s:{s:s, s:s}}", "apiVersion",
                      "v1", "kind", "Secret", "type", "Opaque", "metadata", "name", name,
                      "namespace", k->ns, "labels", PEER_LABEL_CLUSTER_ID, id,
                      PEER_LABEL_AUTH_TOKEN, "true", "data", "token", bt, "ca-cert-hash", bh);
    if (s)
        e = cli_apply(k, &kapi_secrets, k->ns, s, true, NULL);
    else
        snprintf(k->err, sizeof(k->err), "out of memory");
    if (bt)
        OPENSSL_cleanse(bt, strlen(bt));
    x_free(bt);
    x_free(bh);
    if (s) {
        json_t *d = json_object_get(json_object_get(s, "data"), "token");

        if (json_string_value(d))
            OPENSSL_cleanse((char *)json_string_value(d), json_string_length(d));
    }
    json_decref(s);
    return e;
}
