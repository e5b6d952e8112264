/* cliqoctl generate-add-command, add, unpeer: the operator's side of peering (docs/peering.md).
 *
 * generate-add-command (on the provider B) prints the `cliqoctl add` line that a consumer A runs.
 * add (on A) verifies B's auth endpoint before it trusts anything: GET /ca without verification,
 * the certificate must be exactly one and match --ca-cert-hash; then GET /ids with that CA as the
 * only trust anchor and host name checks, and the ID must be the one given. Only then does it write
 * the Secret remote-auth-<ID> and the ForeignCluster, and (by default) waits for the agent to
 * establish the outgoing peering. unpeer deletes the ForeignCluster (the agent's finalizer unpeers
 * first) or, with --keep, disables its outgoing peering. */
#include "cli/cli.h"
#include "cli/discovered.h"
#include "cli/kube.h"

#include "common/duration.h"
#include "common/json.h"
#include "common/rfc3339.h"
#include "common/strutil.h"
#include "common/xalloc.h"
#include "peering/identity.h"
#include "peering/objects.h"
#include "peering/pki.h"
#include "peering/resources.h"
#include "peering/token.h"
#include "peering/wire.h"

#include <curl/curl.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define URL_MAX             2048
#define CONNECT_TIMEOUT_MS  5000L
#define REQUEST_TIMEOUT_MS  15000L
#define REMOTE_AUTH_PREFIX  "remote-auth-"
#define DISCOVERY_TYPE_MAN  "Manual"
#define FC_API_VERSION      "discovery.liqo.io/v1alpha1"
#define DEFAULT_ADD_TIMEOUT 120000

/* ---- shared ------------------------------------------------------------------------------- */

static bool url_valid(const char *u)
{
    const char *host = u + 8;

    if (strncmp(u, "https://", 8) != 0 || strlen(u) > URL_MAX || strcspn(host, "/?#") == 0)
        return false;
    for (const char *p = u; *p; p++)
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
            return false;
    return true;
}

/* --auth-url */
static int url_opt(const struct opts_def *o, const char *v, char *err, size_t errlen)
{
    if (!url_valid(v))
        return opts_fail(o, err, errlen, "'%s' is not an https:// URL", v);
    *(const char **)o->dest = v;
    return 0;
}

/* Reads the local identity (ConfigMap cluster-id). */
static int read_identity(struct cli_kube *k, char id[PEER_NAME_MAX + 1],
                         char name[PEER_NAME_MAX + 1])
{
    json_t *cm = NULL;
    const char *i, *n;
    int e = cli_get(k, &kapi_configmaps, k->ns, PEER_CLUSTER_ID_CM, &cm);

    if (e == -ENOENT) {
        snprintf(k->err, sizeof(k->err),
                 "cliqo is not installed: no ConfigMap %s/%s (run 'cliqoctl install')", k->ns,
                 PEER_CLUSTER_ID_CM);
        return e;
    }
    if (e < 0)
        return e;
    i = jsn_str_at(cm, "data", "cluster-id", NULL);
    n = jsn_str_at(cm, "data", "cluster-name", NULL);
    if (!peer_cluster_id_valid(i)) {
        snprintf(k->err, sizeof(k->err), "ConfigMap %s/%s has no valid cluster-id", k->ns,
                 PEER_CLUSTER_ID_CM);
        json_decref(cm);
        return -EINVAL;
    }
    snprintf(id, PEER_NAME_MAX + 1, "%s", i);
    snprintf(name, PEER_NAME_MAX + 1, "%s", n && peer_cluster_name_valid(n) ? n : "");
    json_decref(cm);
    return 0;
}

/* ---- generate-add-command ----------------------------------------------------------------- */

static const char gen_usage[] =
    "Usage: cliqoctl generate-add-command [--auth-url URL] [--ttl DURATION] [--shared-token]\n"
    "                                     [--rotate-token] [-o json]\n"
    "\n"
    "Prints the 'cliqoctl add' command that another cluster runs to peer with this one: this\n"
    "cluster's name and ID, its auth URL, a token and the hash of its auth CA. The token is a\n"
    "new single-use one that expires (a Secret peering-token-* in cliqo's namespace keeps only\n"
    "its SHA-256 and expiry): the first cluster that uses it owns it.\n"
    "\n"
    "Options:\n";

static int rotate_token(struct cli_kube *k)
{
    char token[PEER_TOKEN_LEN + 1], *b64 = NULL;
    struct sbuf patch;
    int e;

    if (peer_token_generate(token) < 0) {
        snprintf(k->err, sizeof(k->err), "cannot generate a token (random generator failed)");
        return -EIO;
    }
    b64 = cli_b64_encode(token, strlen(token));
    sbuf_init(&patch, 4096);
    e = b64 ? sbuf_printf(&patch, "{\"data\":{\"token\":\"%s\"}}", b64) : -ENOMEM;
    if (e >= 0)
        e = cli_merge_patch(k, &kapi_secrets, k->ns, PEER_AUTH_TOKEN_SECRET, NULL, sbuf_str(&patch),
                            NULL);
    else
        snprintf(k->err, sizeof(k->err), "out of memory");
    OPENSSL_cleanse(token, sizeof(token));
    if (b64)
        OPENSSL_cleanse(b64, strlen(b64));
    if (patch.buf)
        OPENSSL_cleanse(patch.buf, patch.len);
    x_free(b64);
    sbuf_done(&patch);
    return e;
}

/* Deletes the single-use tokens no cluster has used yet (used ones go at their expiry). */
static int revoke_single_use(struct cli_kube *k, unsigned *ret_count)
{
    json_t *items = NULL, *it;
    unsigned n = 0;
    size_t i;
    int e = cli_list(k, &kapi_secrets, k->ns, PEER_LABEL_TOKEN "=single-use", &items);

    if (e < 0)
        return e;
    json_array_foreach(items, i, it)
    {
        if (jsn_str_at(it, "metadata", "annotations", PEER_ANN_TOKEN_CLUSTER, NULL))
            continue;
        e = cli_delete(k, &kapi_secrets, k->ns, kapi_obj_name(it));
        if (e < 0 && e != -ENOENT)
            break;
        e = 0;
        n++;
    }
    json_decref(items);
    *ret_count = n;
    return e;
}

/* Makes a single-use token valid for ttl_ms: a Secret holding its SHA-256 and expiry only. */
static int make_single_use(struct cli_kube *k, uint64_t ttl_ms, char token[PEER_TOKEN_LEN + 1],
                           char expires[32])
{
    char digest[PEER_TOKEN_DIGEST_LEN + 1], name[96];
    json_t *o;
    int e;

    if (peer_token_generate(token) < 0 || peer_token_digest(token, digest) < 0) {
        snprintf(k->err, sizeof(k->err), "cannot generate a token (random generator failed)");
        return -EIO;
    }
    rfc3339_format((int64_t)time(NULL) + (int64_t)((ttl_ms + 999) / 1000), 0, 0, expires, 32);
    snprintf(name, sizeof(name), "%s%.*s", PEER_TOKEN_SECRET_PREFIX, PEER_TOKEN_NAME_HEX, digest);
    o = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s,s:s}},s:s,s:{s:s,s:s}}", "apiVersion", "v1", "kind",
                  "Secret", "metadata", "name", name, "namespace", k->ns, "labels",
                  PEER_LABEL_TOKEN, "single-use", "app.kubernetes.io/managed-by", "cliqoctl",
                  "type", "Opaque", "stringData", "sha256", digest, "expires", expires);
    if (!o) {
        snprintf(k->err, sizeof(k->err), "out of memory");
        return -ENOMEM;
    }
    e = cli_create(k, &kapi_secrets, k->ns, o, NULL);
    json_decref(o);
    return e;
}

int cmd_generate_add_command_main(int argc, char **argv)
{
    const char *verb = "generate-add-command";
    struct cli_common co;
    struct cli_kube k;
    const char *flag_url = NULL, *url;
    bool rotate = false, json = false, shared = false;
    uint64_t ttl_ms = 0; /* 0: not given (1h) */
    char single[PEER_TOKEN_LEN + 1] = "", expires[32] = "";
    unsigned revoked = 0;
    char id[PEER_NAME_MAX + 1], name[PEER_NAME_MAX + 1], hash[PEER_CA_HASH_LEN + 1];
    char err[512];
    json_t *tok = NULL, *tls = NULL, *cc = NULL;
    char *token = NULL, *ca = NULL;
    size_t token_len = 0, ca_len = 0;
    int e, rc = 1;
    /* clang-format off */
    const struct opts_def defs[] = {
        {.name = "auth-url", .kind = OPTS_CUSTOM, .arg = "URL", .dest = &flag_url, .fn = url_opt,
         .help = "the auth URL peers use (default: ClusterConfig spec.peeringConfig.authUrl)"},
        {.name = "ttl", .kind = OPTS_DURATION, .flags = OPTS_SECONDS, .arg = "DURATION",
         .dest = &ttl_ms, .min = 1000, .max = CLI_MAX_DURATION_MS,
         .help = "how long the single-use token is valid (default 1h, at most 24h)"},
        {.name = "shared-token", .kind = OPTS_FLAG, .dest = &shared,
         .help = "print the cluster-wide token instead (any number of peers may use it until it "
                 "is rotated)"},
        {.name = "rotate-token", .kind = OPTS_FLAG, .dest = &rotate,
         .help = "replace the cluster-wide token first and revoke every single-use token not "
                 "used yet (the old ones stop working)"},
        CLI_OPT_OUTPUT(&json, "print a JSON object instead of the command line"),
        CLI_OPTS_KUBE(&co),
        /* Accepted as by every cluster verb,
        not shown: each request has its own timeout. */ CLI_OPT_TIMEOUT(&co, OPTS_HIDDEN, NULL),
        {0},
    };
    /* clang-format on */
    const struct opts_spec opts = {.defs = defs, .usage = gen_usage};

    if ((e = cli_parse(&co, verb, 30000, &opts, argc, argv)) < 0)
        return cli_parsed_exit(e);
    if (shared && ttl_ms)
        return cli_misuse(verb, "--ttl applies to single-use tokens, not with --shared-token");
    if (!ttl_ms)
        ttl_ms = 3600000;
    if (cli_kube_open(&k, &co) < 0 || read_identity(&k, id, name) < 0)
        goto kerr;
    if (rotate) {
        if (rotate_token(&k) < 0 || revoke_single_use(&k, &revoked) < 0)
            goto kerr;
        cli_progress(verb,
                     "token rotated: the previous token no longer works (%u unused single-use "
                     "token(s) revoked)",
                     revoked);
    }
    if (cli_get(&k, &kapi_secrets, k.ns, PEER_AUTH_TOKEN_SECRET, &tok) < 0 ||
        cli_get(&k, &kapi_secrets, k.ns, PEER_AUTH_TLS_SECRET, &tls) < 0)
        goto kerr;
    e = cli_secret_value(tok, "token", 1024, &token, &token_len);
    if (e < 0 || !peer_token_valid(token)) {
        rc = cli_error(verb, "Secret %s/%s has no valid token (rotate it with --rotate-token)",
                       k.ns, PEER_AUTH_TOKEN_SECRET);
        goto out;
    }
    e = cli_secret_value(tls, "ca.crt", PEER_PKI_PEM_MAX, &ca, &ca_len);
    if (e < 0 || peer_pki_ca_hash(ca, ca_len, hash, err, sizeof(err)) < 0) {
        rc = cli_error(verb, "Secret %s/%s has no usable ca.crt%s%s", k.ns, PEER_AUTH_TLS_SECRET,
                       e < 0 ? "" : ": ", e < 0 ? "" : err);
        goto out;
    }
    url = flag_url;
    if (!url) {
        e = cli_get(&k, &peer_res_clusterconfigs, NULL, PEER_CLUSTER_CONFIG, &cc);
        if (e < 0 && e != -ENOENT)
            goto kerr;
        url = jsn_str_at(cc, "spec", "peeringConfig", "authUrl", NULL);
        if (!url || !*url) {
            rc = cli_error(verb,
                           "no auth URL: pass --auth-url, or set ClusterConfig %s "
                           "spec.peeringConfig.authUrl (cliqoctl install --auth-url)",
                           PEER_CLUSTER_CONFIG);
            goto out;
        }
    }
    if (!shared) {
        if (make_single_use(&k, ttl_ms, single, expires) < 0)
            goto kerr;
        OPENSSL_cleanse(token, token_len);
        x_free(token);
        token = x_strdup(single);
        OPENSSL_cleanse(single, sizeof(single));
        if (!token) {
            rc = cli_error(verb, "out of memory");
            goto out;
        }
        token_len = strlen(token);
        cli_progress(verb, "single-use token, valid until %s", expires);
    }
    if (json) {
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "clusterName", name, "clusterID", id,
                              "authUrl", url, "token", token, "caCertHash", hash);
        if (o && !shared)
            json_object_set_new(o, "expires", json_string(expires));
        char *s = o ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;

        printf("%s\n", s ? s : "{}");
        if (s)
            OPENSSL_cleanse(s, strlen(s));
        free(s);
        json_decref(o);
    } else {
        if (*name)
            printf("cliqoctl add --name %s --id %s --auth-url %s --token %s --ca-cert-hash %s\n",
                   name, id, url, token, hash);
        else
            printf("cliqoctl add --id %s --auth-url %s --token %s --ca-cert-hash %s\n", id, url,
                   token, hash);
    }
    rc = 0;
    goto out;
kerr:
    rc = cli_error(verb, "%s", k.err);
out:
    if (token)
        OPENSSL_cleanse(token, token_len);
    x_free(token);
    x_free(ca);
    json_decref(tok);
    json_decref(tls);
    json_decref(cc);
    cli_kube_close(&k);
    return rc;
}

/* ---- add: the HTTPS client of the auth endpoint -------------------------------------------- */

/* GET <base><path>. ca_pem NULL: no verification at all (only for /ca, whose answer is then checked
 * against the pin). Otherwise ca_pem is the only trust anchor, with host name verification.
 * Returns 0 with the body (caller frees) and status, or -errno with a message in err. */
static int https_get(const char *base, const char *path, const char *ca_pem, size_t max,
                     char **ret_body, size_t *ret_len, long *ret_status, char *err, size_t errlen)
{
    char url[URL_MAX + 16], cerr[CURL_ERROR_SIZE] = "";
    struct cli_body f = {0};
    size_t bl = strlen(base);
    CURL *c = NULL;
    CURLcode cc;
    long status = 0;
    int r = -EIO;

    while (bl > 0 && base[bl - 1] == '/')
        bl--;
    snprintf(url, sizeof(url), "%.*s%s", (int)bl, base, path);
    sbuf_init(&f.body, max);
    c = curl_easy_init();
    if (!c) {
        snprintf(err, errlen, "cannot create an HTTP client");
        goto out;
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, REQUEST_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)max);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, cli_body_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &f);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "cliqoctl/" CLIQO_VERSION);
    /* No system trust store, ever: either nothing is trusted (and nothing verified) or only the
     * pinned CA is. */
    curl_easy_setopt(c, CURLOPT_CAINFO, NULL);
    curl_easy_setopt(c, CURLOPT_CAPATH, NULL);
    if (!ca_pem) {
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    } else {
        struct curl_blob blob = {
            .data = (void *)ca_pem, .len = strlen(ca_pem), .flags = CURL_BLOB_COPY};

        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
        curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &blob);
    }
    cc = curl_easy_perform(c);
    if (cc != CURLE_OK) {
        if (f.too_big || cc == CURLE_FILESIZE_EXCEEDED) {
            snprintf(err, errlen, "GET %.200s: the answer is larger than %zu bytes", url, max);
            r = -E2BIG;
        } else {
            snprintf(err, errlen, "GET %.200s: %s", url, cerr[0] ? cerr : curl_easy_strerror(cc));
            r = cc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -EIO;
        }
        goto out;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    *ret_len = sbuf_len(&f.body);
    *ret_body = sbuf_steal(&f.body);
    if (!*ret_body) {
        *ret_body = x_strdup("");
        if (!*ret_body) {
            r = -ENOMEM;
            goto out;
        }
    }
    *ret_status = status;
    r = 0;
out:
    sbuf_done(&f.body);
    if (c)
        curl_easy_cleanup(c);
    return r;
}

/* Describes a non-200 answer of the endpoint (its JSON error body when it has one). */
static void http_error(const char *url, const char *path, long status, const char *body, size_t len,
                       char *err, size_t errlen)
{
    struct peer_wire_error we, werr;

    if (peer_wire_error_decode(body, len, &we, &werr) == 0)
        snprintf(err, errlen, "GET %s%s: HTTP %ld: %s: %s", url, path, status, we.reason,
                 we.message);
    else
        snprintf(err, errlen, "GET %s%s: HTTP %ld", url, path, status);
}

/* ---- add ---------------------------------------------------------------------------------- */

static const char add_usage[] =
    "Usage: cliqoctl add --auth-url URL --id ID --token TOKEN\n"
    "                    (--ca-cert-hash sha256:HEX | --insecure-skip-tls-verify)\n"
    "                    [--name NAME] [--wait | --no-wait] [--timeout D]\n"
    "       cliqoctl add DISCOVERED-CLUSTER --token TOKEN --ca-cert-hash sha256:HEX [...]\n"
    "       cliqoctl add --id ID --token TOKEN --ca-cert-hash sha256:HEX --when-discovered\n"
    "\n"
    "Peers this cluster with a foreign cluster (run 'cliqoctl generate-add-command' there).\n"
    "Checks the foreign auth endpoint's CA against --ca-cert-hash and its ID against --id, then\n"
    "creates the Secret remote-auth-<ID> and the ForeignCluster, and waits until the agent has\n"
    "established the outgoing peering.\n"
    "\n"
    "Options:\n";

static const char add_footer[] =
    "\n"
    "A cluster found by discovery (see 'cliqoctl discovered') is named by its ForeignCluster,\n"
    "cluster ID or announced name: its URL and ID come from discovery, and its announced CA\n"
    "hash must equal --ca-cert-hash (the announcement is never trusted by itself).\n"
    "--when-discovered only stores the token and the expected CA hash (Secret\n"
    "remote-auth-<ID>): the agent joins the cluster when discovery finds it, if autojoin says\n"
    "so (ClusterConfig discoveryConfig.autojoin on the LAN, the SearchDomain's autojoin).\n";

struct add_opts {
    struct cli_common co;
    const char *url, *id, *token_arg, *hash, *name, *target;
    bool insecure, wait, when_discovered;
    char disc_type[32];
    char disc_url[2049], disc_id[PEER_NAME_MAX + 1];
    char token[PEER_TOKEN_LEN + 1];
};

/* Trims and lowercases a token as typed by a user. */
static int normalize_token(const char *in, char out[PEER_TOKEN_LEN + 1])
{
    size_t n;

    while (*in == ' ' || *in == '\t' || *in == '\n' || *in == '\r')
        in++;
    n = strlen(in);
    while (n > 0 &&
           (in[n - 1] == ' ' || in[n - 1] == '\t' || in[n - 1] == '\n' || in[n - 1] == '\r'))
        n--;
    if (n != PEER_TOKEN_LEN)
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        out[i] = (char)((in[i] >= 'A' && in[i] <= 'F') ? in[i] - 'A' + 'a' : in[i]);
    out[n] = '\0';
    return peer_token_valid(out) ? 0 : -EINVAL;
}

/* The forms of add that use discovery: a discovered cluster (URL and ID come later, from its
 * ForeignCluster: placeholders let the usual checks run) or --when-discovered. */
static int add_parse_discovery(struct add_opts *o)
{
    const char *verb = "add";

    if (o->target && (o->url || o->id))
        return cli_misuse(verb,
                          "a discovered cluster (%s) takes its URL and ID from discovery: "
                          "leave out --auth-url and --id",
                          o->target),
               -1;
    if ((o->target || o->when_discovered) && (!o->hash || o->insecure))
        return cli_misuse(verb, "--ca-cert-hash is required with a discovered cluster: the CA "
                                "hash it announces is only compared with yours"),
               -1;
    if (o->when_discovered && (o->target || o->url || !o->id))
        return cli_misuse(verb, "--when-discovered takes --id (and --token, --ca-cert-hash), no "
                                "URL and no cluster name"),
               -1;
    if (o->target || o->when_discovered) {
        if (!o->url)
            o->url = "https://discovered.invalid"; /* replaced in cmd_add_main */
        if (!o->id)
            o->id = "discovered";
    }
    return 0;
}

/* The command line into o: 0, 1 after the help, or -1 after a misuse. */
static int add_parse(int argc, char **argv, struct add_opts *o)
{
    const char *verb = "add";
    int n;
    /* clang-format off */
    const struct opts_def defs[] = {
        {.name = "auth-url", .kind = OPTS_STRING, .arg = "URL", .dest = &o->url,
         .help = "the foreign cluster's auth endpoint (https://)"},
        {.name = "id", .kind = OPTS_STRING, .arg = "ID", .dest = &o->id,
         .help = "the foreign cluster's ID"},
        {.name = "token", .kind = OPTS_STRING, .arg = "TOKEN", .dest = &o->token_arg,
         .help = "the foreign cluster's peering token"},
        {.name = "ca-cert-hash", .kind = OPTS_STRING, .arg = "sha256:HEX", .dest = &o->hash,
         .help = "the hash of the foreign auth CA's public key"},
        {.name = "insecure-skip-tls-verify", .kind = OPTS_FLAG, .dest = &o->insecure,
         .help = "trust the endpoint without checking it (not recommended)"},
        {.name = "name", .kind = OPTS_STRING, .arg = "NAME", .dest = &o->name,
         .help = "the ForeignCluster's name (default: the foreign cluster's name)"},
        {.name = "wait", .kind = OPTS_FLAG, .dest = &o->wait,
         .help = "wait for the outgoing peering (the default)"},
        {.name = "no-wait", .kind = OPTS_FLAG, .flags = OPTS_CLEAR, .dest = &o->wait,
         .help = "do not wait for it"},
        {.name = "when-discovered", .kind = OPTS_FLAG, .dest = &o->when_discovered,
         .help = "store the token and the expected CA hash for when discovery finds the cluster "
                 "(see below)"},
        CLI_OPT_TIMEOUT(&o->co, 0, "how long to wait (default 2m)"),
        CLI_OPTS_KUBE(&o->co),
        {0},
    };
    /* clang-format on */
    const struct opts_spec opts = {.defs = defs,
                                   .usage = add_usage,
                                   .footer = add_footer,
                                   .args = &o->target, /* a discovered cluster */
                                   .max_args = 1};

    if ((n = cli_parse(&o->co, verb, DEFAULT_ADD_TIMEOUT, &opts, argc, argv)) < 0)
        return n == CLI_PARSED_HELP ? 1 : -1;
    if (add_parse_discovery(o) < 0)
        return -1;
    if (!o->url || !o->id || !o->token_arg)
        return cli_misuse(verb, "--auth-url, --id and --token are required (try --help)"), -1;
    if (!url_valid(o->url))
        return cli_misuse(verb, "--auth-url '%s' is not an https:// URL", o->url), -1;
    if (!peer_cluster_id_valid(o->id))
        return cli_misuse(verb,
                          "--id '%s' is not a cluster ID (lower case letters, digits and '-', "
                          "at most 63)",
                          o->id),
               -1;
    if (normalize_token(o->token_arg, o->token) < 0)
        return cli_misuse(verb, "--token is not a peering token (64 hex digits)"), -1;
    if (o->name && !peer_cluster_name_valid(o->name))
        return cli_misuse(verb, "--name '%s' is not an RFC 1123 label", o->name), -1;
    if (o->hash && o->insecure)
        return cli_misuse(verb, "--ca-cert-hash and --insecure-skip-tls-verify exclude each other"),
               -1;
    if (!o->hash && !o->insecure)
        return cli_misuse(verb, "--ca-cert-hash is required (or, not recommended, "
                                "--insecure-skip-tls-verify)"),
               -1;
    if (o->hash) {
        unsigned char digest[32];
        char err[256];

        if (peer_pki_hash_parse(o->hash, digest, err, sizeof(err)) < 0)
            return cli_misuse(verb, "--ca-cert-hash: %s", err), -1;
    }
    return 0;
}

/* Fetches and checks the foreign endpoint: the CA (pinned), then the IDs. *ret_ca is the PEM (NULL
 * with --insecure-skip-tls-verify). Returns 0 or -errno with the reason in err. */
static int verify_remote(const struct add_opts *o, char **ret_ca, struct peer_ids *ret_ids,
                         char *err, size_t errlen)
{
    char *ca = NULL, *body = NULL, herr[256], have[PEER_CA_HASH_LEN + 1];
    size_t ca_len = 0, len = 0;
    long status = 0;
    struct peer_wire_error werr;
    int r;

    if (!o->insecure) {
        r = https_get(o->url, "/ca", NULL, PEER_PKI_PEM_MAX, &ca, &ca_len, &status, err, errlen);
        if (r < 0)
            goto out;
        if (status != 200) {
            http_error(o->url, "/ca", status, ca, ca_len, err, errlen);
            r = -EPROTO;
            goto out;
        }
        r = peer_pki_ca_hash(ca, ca_len, have, herr, sizeof(herr));
        if (r < 0) {
            snprintf(err, errlen, "%s/ca is not a single CA certificate: %s", o->url, herr);
            goto out;
        }
        r = peer_pki_ca_match(ca, ca_len, o->hash, herr, sizeof(herr));
        if (r == -EACCES) {
            snprintf(err, errlen,
                     "the CA of %s does not match --ca-cert-hash: expected %s, the endpoint has "
                     "%s",
                     o->url, o->hash, have);
            goto out;
        }
        if (r < 0) {
            snprintf(err, errlen, "%s/ca: %s", o->url, herr);
            goto out;
        }
    }
    r = https_get(o->url, "/ids", ca, PEER_WIRE_RESPONSE_MAX, &body, &len, &status, err, errlen);
    if (r < 0)
        goto out;
    if (status != 200) {
        http_error(o->url, "/ids", status, body, len, err, errlen);
        r = -EPROTO;
        goto out;
    }
    r = peer_wire_ids_decode(body, len, ret_ids, &werr);
    if (r < 0) {
        snprintf(err, errlen, "%s/ids: %s: %s", o->url, werr.reason, werr.message);
        goto out;
    }
    if (strcmp(ret_ids->cluster_id, o->id) != 0) {
        snprintf(err, errlen,
                 "%s belongs to cluster %s (%s), not to --id %s: check the URL and the ID", o->url,
                 ret_ids->cluster_id, ret_ids->cluster_name, o->id);
        r = -EACCES;
        goto out;
    }
    *ret_ca = ca;
    ca = NULL;
out:
    x_free(ca);
    x_free(body);
    return r;
}

/* Finds the ForeignCluster for `id`: by label, else NULL. -EEXIST when --name names a
 * ForeignCluster of another cluster, or the cluster is known under another name. */
static int find_fc(struct cli_kube *k, const char *id, const char *name, json_t **ret)
{
    char sel[128];
    json_t *items = NULL, *fc = NULL;
    int e;

    *ret = NULL;
    snprintf(sel, sizeof(sel), "%s=%s", PEER_LABEL_CLUSTER_ID, id);
    e = cli_list(k, &peer_res_foreignclusters, NULL, sel, &items);
    if (e == -ENOENT)
        snprintf(k->err, sizeof(k->err),
                 "the ForeignCluster CRD is not installed (run 'cliqoctl install')");
    if (e < 0)
        return e;
    if (json_array_size(items) > 0) {
        const char *have = kapi_obj_name(json_array_get(items, 0));

        if (have && strcmp(have, name) != 0) {
            snprintf(k->err, sizeof(k->err),
                     "cluster %s is already known as ForeignCluster %s: use --name %s", id, have,
                     have);
            json_decref(items);
            return -EEXIST;
        }
    }
    json_decref(items);
    e = cli_get(k, &peer_res_foreignclusters, NULL, name, &fc);
    if (e == -ENOENT)
        return 0;
    if (e < 0)
        return e;
    if (!jsn_str_at(fc, "spec", "clusterIdentity", "clusterID", NULL) ||
        strcmp(jsn_str_at(fc, "spec", "clusterIdentity", "clusterID", NULL), id) != 0) {
        snprintf(k->err, sizeof(k->err), "ForeignCluster %s exists for another cluster (%s)", name,
                 jsn_str_at(fc, "spec", "clusterIdentity", "clusterID", NULL));
        json_decref(fc);
        return -EEXIST;
    }
    *ret = fc;
    return 0;
}

static json_t *make_remote_secret(const char *ns, const char *id, const char *token, const char *ca,
                                  const json_t *owner)
{
    char name[PEER_NAME_MAX + 32], *bt = cli_b64_encode(token, strlen(token));
    char *bc = ca ? cli_b64_encode(ca, strlen(ca)) : NULL;
    json_t *s = NULL, *data;

    snprintf(name, sizeof(name), REMOTE_AUTH_PREFIX "%s", id);
    if (!bt || (ca && !bc))
        goto out;
    data = json_pack("{s:s}", "token", bt);
    if (bc)
        json_object_set_new(data, "ca.crt", json_string(bc));
    s = json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}}, s:o}", "apiVersion", "v1", "kind",
                  "Secret", "type", "Opaque", "metadata", "name", name, "namespace", ns, "labels",
                  PEER_LABEL_CLUSTER_ID, id, PEER_LABEL_AUTH_TOKEN, "true", "data", data);
    if (s && owner)
        json_object_set_new(json_object_get(s, "metadata"), "ownerReferences",
                            json_pack("[{s:s, s:s, s:s, s:s}]", "apiVersion", FC_API_VERSION,
                                      "kind", "ForeignCluster", "name", kapi_obj_name(owner), "uid",
                                      kapi_obj_uid(owner)));
out:
    if (bt)
        OPENSSL_cleanse(bt, strlen(bt));
    x_free(bt);
    x_free(bc);
    return s;
}

static json_t *make_fc(const char *name, const struct peer_ids *ids, const char *url, bool insecure,
                       const char *type)
{
    return json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s}}, s:{s:{s:s, s:s}, s:s, s:s, s:b}}",
                     "apiVersion", FC_API_VERSION, "kind", "ForeignCluster", "metadata", "name",
                     name, "labels", PEER_LABEL_CLUSTER_ID, ids->cluster_id, PEER_LABEL_DISC_TYPE,
                     type, "spec", "clusterIdentity", "clusterID", ids->cluster_id, "clusterName",
                     ids->cluster_name, "outgoingPeeringEnabled", "Yes", "foreignAuthUrl", url,
                     "insecureSkipTLSVerify", insecure);
}

/* Writes the Secret and the ForeignCluster. On failure, removes a Secret it created. */
static int add_write(struct cli_kube *k, const struct add_opts *o, const struct peer_ids *ids,
                     const char *ca, const char *fc_name, bool fc_exists)
{
    char sname[PEER_NAME_MAX + 32];
    json_t *sec = NULL, *fc = NULL, *got = NULL;
    bool sec_existed;
    int e;

    snprintf(sname, sizeof(sname), REMOTE_AUTH_PREFIX "%s", ids->cluster_id);
    e = cli_get(k, &kapi_secrets, k->ns, sname, &got);
    if (e < 0 && e != -ENOENT)
        return e;
    sec_existed = e == 0;
    json_decref(got);
    got = NULL;
    sec = make_remote_secret(k->ns, ids->cluster_id, o->token, ca, NULL);
    fc = make_fc(fc_name, ids, o->url, o->insecure,
                 o->disc_type[0] ? o->disc_type : DISCOVERY_TYPE_MAN);
    if (!sec || !fc) {
        snprintf(k->err, sizeof(k->err), "out of memory");
        e = -ENOMEM;
        goto out;
    }
    e = cli_apply(k, &kapi_secrets, k->ns, sec, true, NULL);
    if (e < 0)
        goto out;
    printf("secret/%s %s\n", sname, sec_existed ? "configured" : "created");
    e = cli_apply(k, &peer_res_foreignclusters, NULL, fc, true, &got);
    if (e < 0) {
        char keep[CLI_ERR_LEN];

        if (!sec_existed) {
            snprintf(keep, sizeof(keep), "%s", k->err);
            (void)cli_delete(k, &kapi_secrets, k->ns, sname);
            snprintf(k->err, sizeof(k->err), "%s", keep);
        }
        goto out;
    }
    printf("foreigncluster/%s %s\n", fc_name, fc_exists ? "configured" : "created");
    /* The Secret goes with the ForeignCluster. */
    json_decref(sec);
    sec = make_remote_secret(k->ns, ids->cluster_id, o->token, ca, got);
    e = sec ? cli_apply(k, &kapi_secrets, k->ns, sec, true, NULL) : -ENOMEM;
out:
    if (sec) {
        json_t *d = json_object_get(json_object_get(sec, "data"), "token");

        if (d && json_string_value(d))
            OPENSSL_cleanse((char *)json_string_value(d), json_string_length(d));
    }
    json_decref(sec);
    json_decref(fc);
    json_decref(got);
    return e;
}

/* Waits for OutgoingPeering Established (0), Denied/Error (-EACCES, message in k->err; -EPERM when
 * the peer refused the token), or the
 * deadline (-ETIMEDOUT). Progress on stderr when the conditions change. */
static int wait_established(struct cli_kube *k, const char *name, uint64_t timeout_ms)
{
    uint64_t start = cli_now_ms(), last = start;
    char seen[512] = "", tbuf[32];

    dur_format(timeout_ms, tbuf, sizeof(tbuf));
    for (;;) {
        json_t *fc = NULL, *oc, *ac;
        char now[512];
        const char *out_st, *auth_st;
        int e = cli_get(k, &peer_res_foreignclusters, NULL, name, &fc);

        if (e < 0)
            return e;
        oc = peer_fc_condition_obj(fc, "OutgoingPeering");
        ac = peer_fc_condition_obj(fc, "AuthenticationStatus");
        out_st = peer_fc_condition(fc, "OutgoingPeering");
        auth_st = peer_fc_condition(fc, "AuthenticationStatus");
        snprintf(now, sizeof(now), "authentication %s%s%s, outgoing peering %s%s%s", auth_st,
                 jsn_str_at(ac, "reason", NULL) ? " " : "",
                 jsn_str_at(ac, "reason", NULL) ? jsn_str_at(ac, "reason", NULL) : "", out_st,
                 jsn_str_at(oc, "reason", NULL) ? " " : "",
                 jsn_str_at(oc, "reason", NULL) ? jsn_str_at(oc, "reason", NULL) : "");
        if (strcmp(out_st, "Established") == 0) {
            json_decref(fc);
            return 0;
        }
        if (strcmp(out_st, "Denied") == 0 || strcmp(out_st, "Error") == 0 ||
            strcmp(auth_st, "Denied") == 0) {
            json_t *c = strcmp(auth_st, "Denied") == 0 ? ac : oc;
            const char *msg = jsn_str_at(c, "message", NULL);

            snprintf(k->err, sizeof(k->err), "%s %s: %s",
                     c == ac ? "authentication" : "outgoing peering", c == ac ? auth_st : out_st,
                     msg && *msg ? msg : "(no message)");
            json_decref(fc);
            return c == ac ? -EPERM : -EACCES;
        }
        if (strcmp(now, seen) != 0 || cli_now_ms() - last >= 10000) {
            snprintf(seen, sizeof(seen), "%s", now);
            last = cli_now_ms();
            cli_progress("add", "%s (%llus)", now, (unsigned long long)((last - start) / 1000));
        }
        if (cli_now_ms() - start >= timeout_ms) {
            snprintf(k->err, sizeof(k->err),
                     "the outgoing peering is not established after %s: %s%s%s", tbuf, now,
                     jsn_str_at(ac, "message", NULL) && strcmp(auth_st, "Established") != 0
                         ? "; authentication: "
                         : "",
                     jsn_str_at(ac, "message", NULL) && strcmp(auth_st, "Established") != 0
                         ? jsn_str_at(ac, "message", NULL)
                         : "");
            json_decref(fc);
            return -ETIMEDOUT;
        }
        json_decref(fc);
        cli_sleep_ms(200);
    }
}

/* The discovery forms of add: --when-discovered stores the credentials and ends (0, or 1 on
 * failure); a discovered cluster fills URL, ID and the ForeignCluster's name and type from
 * discovery and goes on with the usual checks (returns 1 to go on). */
static int add_discovered(struct cli_kube *k, struct add_opts *o)
{
    struct dcli_target t;

    if (o->when_discovered) {
        if (dcli_stage(k, o->id, o->token, o->hash) < 0)
            return -cli_error("add", "%s", k->err);
        printf("secret/%s%s configured: cluster %s will be joined when discovery finds it and "
               "autojoin allows it (LAN: ClusterConfig discoveryConfig.autojoin; WAN: the "
               "SearchDomain's autojoin)\n",
               REMOTE_AUTH_PREFIX, o->id, o->id);
        return 0;
    }
    if (dcli_resolve(k, o->target, &t) < 0)
        return -cli_error("add", "%s", k->err);
    if (t.announced_hash[0] && !dcli_hash_equal(t.announced_hash, o->hash))
        return -cli_error("add",
                          "cluster %s announces CA hash %s, not --ca-cert-hash %s: not peering "
                          "(the announcement may be spoofed; check the hash with the cluster's "
                          "administrator)",
                          t.fc_name, t.announced_hash, o->hash);
    snprintf(o->disc_url, sizeof(o->disc_url), "%s", t.url);
    snprintf(o->disc_id, sizeof(o->disc_id), "%s", t.id);
    snprintf(o->disc_type, sizeof(o->disc_type), "%s", t.type);
    o->url = o->disc_url;
    o->id = o->disc_id;
    if (!o->name)
        o->name = o->target && strcmp(o->target, t.fc_name) == 0 ? o->target : NULL;
    if (!o->name) {
        static char fc_name[256];

        snprintf(fc_name, sizeof(fc_name), "%s", t.fc_name);
        o->name = fc_name;
    }
    cli_progress("add", "discovered cluster %s (%s) at %s", t.fc_name, t.id, t.url);
    return 1;
}

int cmd_add_main(int argc, char **argv)
{
    struct add_opts o = {.wait = true};
    struct cli_kube k = {0};
    struct peer_ids ids;
    char err[1024], own_id[PEER_NAME_MAX + 1], own_name[PEER_NAME_MAX + 1];
    const char *fc_name;
    char *ca = NULL;
    json_t *fc = NULL;
    uint64_t start;
    int e, rc = 1;
    bool curl_ready = false;

    e = add_parse(argc, argv, &o);
    if (e != 0) {
        OPENSSL_cleanse(o.token, sizeof(o.token));
        return e < 0 ? 2 : 0;
    }
    start = cli_now_ms();
    if (o.insecure)
        fprintf(stderr,
                "add: WARNING: --insecure-skip-tls-verify: the foreign auth endpoint is "
                "not authenticated; anyone between here and %s can impersonate it\n",
                o.url);
    if (cli_kube_open(&k, &o.co) < 0 || read_identity(&k, own_id, own_name) < 0)
        goto kerr;
    if ((o.target || o.when_discovered) && (e = add_discovered(&k, &o)) != 1) {
        rc = e == 0 ? 0 : 1;
        goto out;
    }
    if (strcmp(o.id, own_id) == 0) {
        rc = cli_error("add", "--id %s is this cluster's own ID", o.id);
        goto out;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        rc = cli_error("add", "cannot initialise libcurl");
        goto out;
    }
    curl_ready = true;
    cli_progress("add", "checking %s", o.url);
    e = verify_remote(&o, &ca, &ids, err, sizeof(err));
    if (e < 0) {
        rc = cli_error("add", "%s", err);
        goto out;
    }
    if (strcmp(ids.cluster_id, own_id) == 0) {
        rc = cli_error("add", "%s is this cluster's own auth endpoint", o.url);
        goto out;
    }
    cli_progress("add", "%s is cluster %s (%s)%s", o.url, ids.cluster_id, ids.cluster_name,
                 o.insecure ? " (NOT verified)" : ", CA verified");
    fc_name = o.name ? o.name : ids.cluster_name;
    if (!peer_cluster_name_valid(fc_name)) {
        rc =
            cli_error("add", "the foreign cluster's name '%s' is not usable: pass --name", fc_name);
        goto out;
    }
    if (find_fc(&k, ids.cluster_id, fc_name, &fc) < 0 ||
        add_write(&k, &o, &ids, ca, fc_name, fc != NULL) < 0)
        goto kerr;
    if (!o.wait) {
        printf("ForeignCluster %s added (not waiting: follow it with 'cliqoctl status')\n",
               fc_name);
        rc = 0;
        goto out;
    }
    cli_progress("add", "waiting for the outgoing peering with %s", fc_name);
    e = wait_established(&k, fc_name, o.co.timeout_ms);
    if (e == -EPERM && !fc) {
        /* The peer refused the token: undo what this command wrote (the Secret goes with the
         * ForeignCluster), so that a refused add changes nothing. */
        char why[sizeof(k.err)];
        uint64_t until = cli_now_ms() + 20000;
        json_t *left = NULL;

        snprintf(why, sizeof(why), "%s", k.err);
        cli_delete(&k, &peer_res_foreignclusters, NULL, fc_name);
        while (cli_get(&k, &peer_res_foreignclusters, NULL, fc_name, &left) == 0 &&
               cli_now_ms() < until) {
            json_decref(left);
            left = NULL;
            cli_sleep_ms(250);
        }
        json_decref(left);
        rc = cli_error("add", "%s (ForeignCluster %s removed again)", why, fc_name);
        goto out;
    }
    if (e < 0)
        goto kerr;
    printf("peered with %s (%s) in %.1fs\n", fc_name, ids.cluster_id,
           (double)(cli_now_ms() - start) / 1000.0);
    rc = 0;
    goto out;
kerr:
    rc = cli_error("add", "%s", k.err);
out:
    OPENSSL_cleanse(o.token, sizeof(o.token));
    x_free(ca);
    json_decref(fc);
    cli_kube_close(&k);
    if (curl_ready)
        curl_global_cleanup();
    return rc;
}

/* ---- unpeer ------------------------------------------------------------------------------- */

static const char unpeer_usage[] =
    "Usage: cliqoctl unpeer NAME|CLUSTER-ID [--keep] [--timeout D]\n"
    "\n"
    "Ends the peering with a foreign cluster: deletes its ForeignCluster (the agent unpeers\n"
    "first) and waits until it is gone. With --keep, keeps the ForeignCluster and only disables\n"
    "the outgoing peering (outgoingPeeringEnabled: No), waiting until it is None.\n"
    "\n"
    "Options:\n";

/* The ForeignCluster named `arg`, else the one whose cluster ID is `arg`. */
static int lookup_fc(struct cli_kube *k, const char *arg, json_t **ret)
{
    char sel[128];
    json_t *items = NULL;
    int e = cli_get(k, &peer_res_foreignclusters, NULL, arg, ret);

    if (e != -ENOENT)
        return e;
    if (!peer_cluster_id_valid(arg)) {
        snprintf(k->err, sizeof(k->err), "no ForeignCluster named '%s'", arg);
        return -ENOENT;
    }
    snprintf(sel, sizeof(sel), "%s=%s", PEER_LABEL_CLUSTER_ID, arg);
    e = cli_list(k, &peer_res_foreignclusters, NULL, sel, &items);
    if (e == -ENOENT)
        snprintf(k->err, sizeof(k->err), "no ForeignCluster named '%s' (cliqo is not installed)",
                 arg);
    if (e < 0)
        return e;
    if (json_array_size(items) == 0) {
        snprintf(k->err, sizeof(k->err), "no ForeignCluster named '%s' or with that cluster ID",
                 arg);
        json_decref(items);
        return -ENOENT;
    }
    *ret = json_incref(json_array_get(items, 0));
    json_decref(items);
    return 0;
}

int cmd_unpeer_main(int argc, char **argv)
{
    const char *verb = "unpeer";
    struct cli_common co;
    struct cli_kube k = {0};
    const char *arg = NULL, *args[2];
    bool keep = false;
    json_t *fc = NULL;
    char name[256], uid[64], tbuf[32], seen[256] = "";
    uint64_t start, last;
    int e, n, rc = 1;
    /* clang-format off */
    const struct opts_def defs[] = {
        {.name = "keep", .kind = OPTS_FLAG, .dest = &keep,
         .help = "keep the ForeignCluster, disable outgoing peering"},
        CLI_OPT_TIMEOUT(&co, 0, "how long to wait (default 2m)"),
        CLI_OPTS_KUBE(&co),
        {0},
    };
    /* clang-format on */
    const struct opts_spec opts = {
        .defs = defs, .usage = unpeer_usage, .args = args, .max_args = 2};

    if ((n = cli_parse(&co, verb, 120000, &opts, argc, argv)) < 0)
        return cli_parsed_exit(n);
    if (n > 1)
        return cli_misuse(verb, "one ForeignCluster at a time ('%s' and '%s')", args[0], args[1]);
    if (n == 1)
        arg = args[0];
    if (!arg)
        return cli_misuse(verb,
                          "which ForeignCluster? (cliqoctl unpeer NAME; see cliqoctl status)");
    if (strlen(arg) > 253)
        return cli_misuse(verb, "'%.40s...' is too long for a name", arg);
    dur_format(co.timeout_ms, tbuf, sizeof(tbuf));
    start = last = cli_now_ms();
    if (cli_kube_open(&k, &co) < 0 || lookup_fc(&k, arg, &fc) < 0)
        goto kerr;
    snprintf(name, sizeof(name), "%s", kapi_obj_name(fc));
    /* Discovery may create a new ForeignCluster of the same name at once (the cluster is still
     * announced): the one we delete is gone when its uid is. */
    snprintf(uid, sizeof(uid), "%s", kapi_obj_uid(fc) ? kapi_obj_uid(fc) : "");
    if (keep)
        e = cli_merge_patch(&k, &peer_res_foreignclusters, NULL, name, NULL,
                            "{\"spec\":{\"outgoingPeeringEnabled\":\"No\"}}", NULL);
    else
        e = cli_delete(&k, &peer_res_foreignclusters, NULL, name);
    if (e < 0 && !(e == -ENOENT && !keep))
        goto kerr;
    cli_progress(verb,
                 keep ? "outgoing peering of %s disabled; waiting for it to end"
                      : "ForeignCluster %s deleted; waiting for the agent to unpeer",
                 name);
    for (;;) {
        const char *st;
        char now[256];

        json_decref(fc);
        fc = NULL;
        e = cli_get(&k, &peer_res_foreignclusters, NULL, name, &fc);
        if (e == 0 && !keep && uid[0] && kapi_obj_uid(fc) && strcmp(kapi_obj_uid(fc), uid) != 0)
            e = -ENOENT; /* a new one (rediscovered): ours is gone */
        if (e == -ENOENT) {
            if (keep) {
                snprintf(k.err, sizeof(k.err), "ForeignCluster %s was deleted meanwhile", name);
                goto kerr;
            }
            printf("ForeignCluster %s deleted: unpeered\n", name);
            break;
        }
        if (e < 0)
            goto kerr;
        st = peer_fc_condition(fc, "OutgoingPeering");
        if (keep && strcmp(st, "None") == 0) {
            printf("ForeignCluster %s: outgoing peering ended (kept)\n", name);
            break;
        }
        snprintf(now, sizeof(now), "outgoing peering %s%s%s", st,
                 jsn_str_at(peer_fc_condition_obj(fc, "OutgoingPeering"), "reason", NULL) ? " "
                                                                                          : "",
                 jsn_str_at(peer_fc_condition_obj(fc, "OutgoingPeering"), "reason", NULL)
                     ? jsn_str_at(peer_fc_condition_obj(fc, "OutgoingPeering"), "reason", NULL)
                     : "");
        if (strcmp(now, seen) != 0 || cli_now_ms() - last >= 10000) {
            snprintf(seen, sizeof(seen), "%s", now);
            last = cli_now_ms();
            cli_progress(verb, "%s: %s (%llus)", name, now,
                         (unsigned long long)((last - start) / 1000));
        }
        if (cli_now_ms() - start >= co.timeout_ms) {
            json_t *fins = json_object_get(json_object_get(fc, "metadata"), "finalizers");
            char *f = json_array_size(fins) ? json_dumps(fins, JSON_COMPACT) : NULL;

            snprintf(k.err, sizeof(k.err), "ForeignCluster %s: still %s after %s%s%s%s", name, now,
                     tbuf, f ? ", finalizers " : "", f ? f : "",
                     f ? " (is the agent running?)" : "");
            free(f);
            goto kerr;
        }
        cli_sleep_ms(500);
    }
    rc = 0;
    goto out;
kerr:
    rc = cli_error(verb, "%s", k.err);
out:
    json_decref(fc);
    cli_kube_close(&k);
    return rc;
}
