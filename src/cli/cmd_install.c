/* cliqoctl install: applies the embedded manifests (deploy/) by server-side apply, waits for the
 * CRDs, and creates the cluster's identity objects when they are missing (docs/peering.md). The
 * identity (ConfigMap cluster-id, Secrets auth-token and auth-tls) and the ClusterConfig are
 * created once and never changed afterwards, except ClusterConfig spec.peeringConfig.authUrl when
 * --auth-url or --auth-address asks for it. */
#include "cli/cli.h"
#include "cli/kube.h"

#include "common/json.h"
#include "common/strutil.h"
#include "common/xalloc.h"
#include "deploy/manifests.h"
#include "kube/yamljson.h"
#include "peering/identity.h"
#include "peering/pki.h"
#include "peering/resources.h"
#include "peering/token.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>

#define MAX_ADDRS     16
#define CA_YEARS      10
#define SERVER_DAYS   (CA_YEARS * 365)
#define AUTH_SERVICE  "cliqo-auth"
#define DEFAULT_NS    "cliqo"
#define URL_MAX       2048
#define PART_OF_LABEL "app.kubernetes.io/part-of"

struct install_opts {
    struct cli_common co;
    const char *cluster_name;
    const char *cluster_id;
    const char *addrs[MAX_ADDRS];
    size_t naddrs;
    const char *auth_url;
    const char *api_server_url;
    const char *agent_image;
    bool skip_agent;
    bool dry_run;
};

/* One object of the manifests, ready to apply. */
struct item {
    const char *file;
    const struct kapi_resource *r;
    json_t *obj;
};

struct plan {
    struct item *items;
    size_t n;
    size_t ncrds;
};

static const char usage_text[] =
    "Usage: cliqoctl install [options]\n"
    "\n"
    "Installs cliqo into the cluster: applies the CRDs and manifests (server-side apply, field\n"
    "manager cliqoctl), waits for the CRDs, and creates the cluster identity (ConfigMap\n"
    "cluster-id, Secrets auth-token and auth-tls) when missing. Existing identity objects are\n"
    "never changed, so running install again is safe.\n"
    "\n"
    "Options:\n";

static void plan_free(struct plan *p)
{
    for (size_t i = 0; i < p->n; i++)
        json_decref(p->items[i].obj);
    x_free(p->items);
    p->items = NULL;
    p->n = 0;
}

static bool is_agent_file(const char *name)
{
    return strcmp(name, "deployment.yaml") == 0 || strcmp(name, "service.yaml") == 0 ||
           strcmp(name, "node.yaml") == 0;
}

/* Adapts one manifest object to the options: the namespace (when not "cliqo"), the agent's image
 * and extra arguments. */
static int adapt(json_t *obj, const struct install_opts *o)
{
    json_t *meta = json_object_get(obj, "metadata");
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    bool other_ns = strcmp(o->co.ns, DEFAULT_NS) != 0;
    size_t i;
    json_t *v;

    if (other_ns && ns && strcmp(ns, DEFAULT_NS) == 0)
        json_object_set_new(meta, "namespace", json_string(o->co.ns));
    if (other_ns && kind && strcmp(kind, "Namespace") == 0 &&
        strcmp(kapi_obj_name(obj) ? kapi_obj_name(obj) : "", DEFAULT_NS) == 0)
        json_object_set_new(meta, "name", json_string(o->co.ns));
    json_array_foreach(json_object_get(obj, "subjects"), i, v)
    {
        const char *sns = json_string_value(json_object_get(v, "namespace"));

        if (other_ns && sns && strcmp(sns, DEFAULT_NS) == 0)
            json_object_set_new(v, "namespace", json_string(o->co.ns));
    }
    if (!kind || strcmp(kind, "Deployment") != 0)
        return 0;
    json_array_foreach(
        json_object_get(
            json_object_get(json_object_get(json_object_get(obj, "spec"), "template"), "spec"),
            "containers"),
        i, v)
    {
        json_t *args = json_object_get(v, "args");
        size_t j;
        json_t *a;
        char buf[URL_MAX + 32];

        if (o->agent_image)
            json_object_set_new(v, "image", json_string(o->agent_image));
        if (!json_is_array(args))
            continue;
        json_array_foreach(args, j, a)
        {
            if (other_ns && json_is_string(a) &&
                strcmp(json_string_value(a), "--namespace=" DEFAULT_NS) == 0) {
                snprintf(buf, sizeof(buf), "--namespace=%s", o->co.ns);
                json_array_set_new(args, j, json_string(buf));
            }
        }
        if (o->api_server_url) {
            snprintf(buf, sizeof(buf), "--api-server-url=%s", o->api_server_url);
            json_array_append_new(args, json_string(buf));
        }
    }
    return 0;
}

/* Parses the embedded manifests into p, in order. When `print` is set, writes each file as it
 * will be applied: the embedded YAML when the options change nothing in it, else its documents as
 * JSON. */
static int plan_build(const struct install_opts *o, struct plan *p, bool print, char *err,
                      size_t errlen)
{
    int r = 0;

    memset(p, 0, sizeof(*p));
    p->items = x_calloc(cliqo_manifests_count * 8 + 1, sizeof(*p->items));
    if (!p->items)
        return -ENOMEM;
    for (size_t f = 0; f < cliqo_manifests_count; f++) {
        const struct cliqo_manifest *m = &cliqo_manifests[f];
        json_t *docs = NULL, *doc;
        bool changed = false;
        size_t i;

        if (o->skip_agent && is_agent_file(m->name))
            continue;
        r = yj_load_all(m->yaml, strlen(m->yaml), m->name, &docs, err, errlen);
        if (r < 0)
            return r;
        json_array_foreach(docs, i, doc)
        {
            const char *apiv = json_string_value(json_object_get(doc, "apiVersion"));
            const char *kind = json_string_value(json_object_get(doc, "kind"));
            const struct kapi_resource *res = peer_res_by_kind(apiv, kind);
            json_t *orig = json_deep_copy(doc);

            if (!res || !kapi_obj_name(doc) || p->n >= cliqo_manifests_count * 8) {
                snprintf(err, errlen, "%s: document %zu: unknown kind %s/%s or no name", m->name,
                         i + 1, apiv ? apiv : "?", kind ? kind : "?");
                json_decref(orig);
                json_decref(docs);
                return -EINVAL;
            }
            adapt(doc, o);
            if (!json_equal(orig, doc))
                changed = true;
            json_decref(orig);
            p->items[p->n].file = m->name;
            p->items[p->n].r = res;
            p->items[p->n].obj = json_incref(doc);
            if (res == &kapi_crds)
                p->ncrds++;
            p->n++;
        }
        if (print) {
            printf("---\n# Source: %s\n", m->name);
            if (!changed) {
                fputs(m->yaml, stdout);
            } else {
                json_array_foreach(docs, i, doc)
                {
                    char *s = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

                    if (i > 0)
                        printf("---\n");
                    printf("%s\n", s ? s : "{}");
                    free(s);
                }
            }
        }
        json_decref(docs);
    }
    return 0;
}

/* The default cluster name: the kubeconfig's cluster name as an RFC 1123 label. */
static void derive_name(const char *from, char ret[PEER_NAME_MAX + 1])
{
    size_t n = 0;

    for (const char *s = from ? from : ""; *s && n < PEER_NAME_MAX; s++) {
        char c = *s;

        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
            c = '-';
        if (c == '-' && (n == 0 || ret[n - 1] == '-'))
            continue;
        ret[n++] = c;
    }
    while (n > 0 && ret[n - 1] == '-')
        n--;
    ret[n] = '\0';
    if (n == 0)
        snprintf(ret, PEER_NAME_MAX + 1, "cluster");
}

/* The host of an --auth-address (port and IPv6 brackets stripped) into ret. */
static int addr_host(const char *a, char *ret, size_t size)
{
    const char *colon = strchr(a, ':');
    size_t n;

    if (a[0] == '[') {
        const char *end = strchr(a, ']');

        if (!end || (end[1] != '\0' && end[1] != ':'))
            return -EINVAL;
        n = (size_t)(end - a - 1);
        a++;
    } else if (colon && strchr(colon + 1, ':')) {
        n = strlen(a); /* a bare IPv6 address */
    } else {
        n = colon ? (size_t)(colon - a) : strlen(a);
    }
    if (n == 0 || n >= size)
        return -EINVAL;
    memcpy(ret, a, n);
    ret[n] = '\0';
    return 0;
}

static bool auth_url_valid(const char *u)
{
    const char *host = u + strlen("https://");
    size_t hl;

    if (strncmp(u, "https://", 8) != 0 || strlen(u) > URL_MAX)
        return false;
    hl = strcspn(host, "/?#");
    if (hl == 0)
        return false;
    for (const char *p = u; *p; p++)
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
            return false;
    return true;
}

/* The command line into o: 0, 1 after the help, or -1 after a misuse. */
static int parse_args(int argc, char **argv, struct install_opts *o)
{
    struct opts_list addrs = {.items = o->addrs, .max = MAX_ADDRS};
    /* clang-format off */
    const struct opts_def defs[] = {
        {.name = "cluster-name", .kind = OPTS_STRING, .arg = "NAME", .dest = &o->cluster_name,
         .help = "cluster name (default: from the kubeconfig's cluster name)"},
        {.name = "cluster-id", .kind = OPTS_STRING, .arg = "ID", .dest = &o->cluster_id,
         .help = "cluster ID (default: a random UUID v4)"},
        {.name = "auth-address", .kind = OPTS_LIST, .arg = "ADDR", .dest = &addrs,
         .help = "host or IP (port allowed) where peers reach the auth endpoint; repeatable; "
                 "added to the auth certificate's SANs"},
        {.name = "auth-url", .kind = OPTS_STRING, .arg = "URL", .dest = &o->auth_url,
         .help = "ClusterConfig spec.peeringConfig.authUrl (default: https://<first "
                 "--auth-address>)"},
        {.name = "api-server-url", .kind = OPTS_STRING, .arg = "URL", .dest = &o->api_server_url,
         .help = "the API URL peers use, passed to the agent's Deployment"},
        {.name = "skip-agent", .kind = OPTS_FLAG, .dest = &o->skip_agent,
         .help = "leave out the agent's Deployment and Services and the per-node DaemonSet (run "
                 "them locally)"},
        {.name = "agent-image", .kind = OPTS_STRING, .arg = "IMG", .dest = &o->agent_image,
         .help = "the agent's container image"},
        {.name = "dry-run", .kind = OPTS_FLAG, .dest = &o->dry_run,
         .help = "print what would be applied (secret values redacted); change nothing"},
        CLI_OPT_TIMEOUT(&o->co, 0, "how long to wait for the CRDs (default 2m)"),
        CLI_OPTS_KUBE(&o->co),
        {0},
    };
    /* clang-format on */
    const struct opts_spec opts = {.defs = defs, .usage = usage_text};
    int n = cli_parse(&o->co, "install", 120000, &opts, argc, argv);

    if (n < 0)
        return n == CLI_PARSED_HELP ? 1 : -1;
    o->naddrs = addrs.n;
    if (o->cluster_name && !peer_cluster_name_valid(o->cluster_name))
        return cli_misuse("install",
                          "--cluster-name '%s' is not an RFC 1123 label (lower case letters, "
                          "digits and '-', at most 63)",
                          o->cluster_name),
               -1;
    if (o->cluster_id && !peer_cluster_id_valid(o->cluster_id))
        return cli_misuse("install",
                          "--cluster-id '%s' is not valid (lower case letters, digits and '-', at "
                          "most 63)",
                          o->cluster_id),
               -1;
    for (size_t i = 0; i < o->naddrs; i++) {
        char host[256];

        if (addr_host(o->addrs[i], host, sizeof(host)) < 0)
            return cli_misuse("install", "--auth-address '%s' is not a host[:port]", o->addrs[i]),
                   -1;
    }
    if (o->auth_url && !auth_url_valid(o->auth_url))
        return cli_misuse("install", "--auth-url '%s' is not an https:// URL", o->auth_url), -1;
    if (o->api_server_url &&
        (strncmp(o->api_server_url, "https://", 8) != 0 || strlen(o->api_server_url) > URL_MAX))
        return cli_misuse("install", "--api-server-url '%s' is not an https:// URL",
                          o->api_server_url),
               -1;
    if (o->agent_image && (!*o->agent_image || strpbrk(o->agent_image, " \t\n")))
        return cli_misuse("install", "--agent-image '%s' is not an image reference",
                          o->agent_image),
               -1;
    return 0;
}

/* The authUrl to set: --auth-url, else https://<first --auth-address>, else NULL. */
static int wanted_auth_url(const struct install_opts *o, char *buf, size_t size)
{
    if (o->auth_url) {
        snprintf(buf, size, "%s", o->auth_url);
        return 1;
    }
    if (o->naddrs == 0)
        return 0;
    if (strchr(o->addrs[0], ':') && strchr(strchr(o->addrs[0], ':') + 1, ':') &&
        o->addrs[0][0] != '[')
        snprintf(buf, size, "https://[%s]", o->addrs[0]);
    else
        snprintf(buf, size, "https://%s", o->addrs[0]);
    return auth_url_valid(buf) ? 1 : -EINVAL;
}

static json_t *labels_part_of(void)
{
    return json_pack("{s:s}", PART_OF_LABEL, "cliqo");
}

static json_t *make_cluster_id_cm(const char *ns, const char *id, const char *name)
{
    json_t *labels = labels_part_of();

    json_object_set_new(labels, "app.kubernetes.io/name", json_string("clusterid-configmap"));
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:o}, s:{s:s, s:s}}", "apiVersion", "v1", "kind",
                     "ConfigMap", "metadata", "name", PEER_CLUSTER_ID_CM, "namespace", ns, "labels",
                     labels, "data", "cluster-id", id, "cluster-name", name);
}

static json_t *make_secret(const char *ns, const char *name, const char *type)
{
    return json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:o}, s:{}}", "apiVersion", "v1", "kind",
                     "Secret", "type", type, "metadata", "name", name, "namespace", ns, "labels",
                     labels_part_of(), "data");
}

static int secret_put(json_t *secret, const char *key, const char *value)
{
    char *b = cli_b64_encode(value, strlen(value));

    if (!b)
        return -ENOMEM;
    json_object_set_new(json_object_get(secret, "data"), key, json_string(b));
    OPENSSL_cleanse(b, strlen(b));
    x_free(b);
    return 0;
}

/* The SANs of the auth endpoint's certificate; the strings live in `store`. */
static size_t auth_sans(const struct install_opts *o, char store[][256], const char **sans,
                        size_t max)
{
    size_t n = 0;

    for (size_t i = 0; i < o->naddrs && n < max; i++)
        if (addr_host(o->addrs[i], store[n], 256) == 0)
            n++;
    for (size_t i = 0; i < 4 && n < max; i++) {
        if (i == 0)
            snprintf(store[n], 256, "%s", AUTH_SERVICE);
        else if (i == 1)
            snprintf(store[n], 256, "%s.%s", AUTH_SERVICE, o->co.ns);
        else if (i == 2)
            snprintf(store[n], 256, "%s.%s.svc", AUTH_SERVICE, o->co.ns);
        else
            snprintf(store[n], 256, "%s.%s.svc.cluster.local", AUTH_SERVICE, o->co.ns);
        n++;
    }
    if (n < max)
        snprintf(store[n++], 256, "127.0.0.1");
    if (n < max)
        snprintf(store[n++], 256, "localhost");
    /* Drop duplicates (an --auth-address of 127.0.0.1, say). */
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        bool dup = false;

        for (size_t j = 0; j < out; j++)
            if (strcmp(sans[j], store[i]) == 0)
                dup = true;
        if (!dup)
            sans[out++] = store[i];
    }
    return out;
}

static int make_auth_tls(const struct install_opts *o, json_t **ret, char *err, size_t errlen)
{
    char store[MAX_ADDRS + 8][256];
    const char *sans[MAX_ADDRS + 8];
    size_t nsans = auth_sans(o, store, sans, MAX_ADDRS + 8);
    char *ca = NULL, *ca_key = NULL, *crt = NULL, *key = NULL;
    json_t *s = NULL;
    int r;

    r = peer_pki_ca_create("cliqo auth CA", CA_YEARS, &ca, &ca_key, err, errlen);
    if (r < 0)
        goto out;
    r = peer_pki_server_issue(ca, strlen(ca), ca_key, strlen(ca_key), AUTH_SERVICE, sans, nsans,
                              SERVER_DAYS, &crt, &key, err, errlen);
    if (r < 0)
        goto out;
    s = make_secret(o->co.ns, PEER_AUTH_TLS_SECRET, "kubernetes.io/tls");
    r = -ENOMEM;
    if (!s || secret_put(s, "ca.crt", ca) < 0 || secret_put(s, "tls.crt", crt) < 0 ||
        secret_put(s, "tls.key", key) < 0)
        goto out;
    *ret = s;
    s = NULL;
    r = 0;
out:
    if (ca_key)
        OPENSSL_cleanse(ca_key, strlen(ca_key));
    if (key)
        OPENSSL_cleanse(key, strlen(key));
    x_free(ca);
    x_free(ca_key);
    x_free(crt);
    x_free(key);
    json_decref(s);
    return r;
}

static void print_json(const json_t *obj)
{
    char *s = json_dumps(obj, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

    printf("%s\n", s ? s : "{}");
    free(s);
}

static int dry_run(const struct install_opts *o, const char *id, const char *name,
                   const char *auth_url)
{
    struct plan p;
    char err[512];
    json_t *obj;
    int r;

    r = plan_build(o, &p, true, err, sizeof(err));
    plan_free(&p);
    if (r < 0)
        return cli_error("install", "%s", err);
    printf("---\n# Created only if missing (an existing identity is never changed):\n");
    obj = make_cluster_id_cm(o->co.ns, id, name);
    print_json(obj);
    json_decref(obj);
    printf("---\n");
    obj = make_secret(o->co.ns, PEER_AUTH_TOKEN_SECRET, "Opaque");
    json_object_set_new(json_object_get(obj, "data"), "token",
                        json_string("<redacted: 32 random bytes as 64 hex digits>"));
    print_json(obj);
    json_decref(obj);
    printf("---\n");
    obj = make_secret(o->co.ns, PEER_AUTH_TLS_SECRET, "kubernetes.io/tls");
    {
        char store[MAX_ADDRS + 8][256], line[4096];
        const char *sans[MAX_ADDRS + 8];
        size_t nsans = auth_sans(o, store, sans, MAX_ADDRS + 8);
        struct sbuf b;

        sbuf_init(&b, sizeof(line));
        sbuf_adds(&b, "<redacted: server certificate for");
        for (size_t i = 0; i < nsans; i++)
            sbuf_printf(&b, "%s%s", i ? ", " : " ", sans[i]);
        sbuf_adds(&b, ">");
        json_object_set_new(json_object_get(obj, "data"), "ca.crt",
                            json_string("<redacted: self-signed EC P-256 CA>"));
        json_object_set_new(json_object_get(obj, "data"), "tls.crt", json_string(sbuf_str(&b)));
        json_object_set_new(json_object_get(obj, "data"), "tls.key",
                            json_string("<redacted: EC P-256 private key>"));
        sbuf_done(&b);
    }
    print_json(obj);
    json_decref(obj);
    if (auth_url) {
        printf("---\n# ClusterConfig %s, merged:\n", PEER_CLUSTER_CONFIG);
        obj = json_pack("{s:{s:{s:s}}}", "spec", "peeringConfig", "authUrl", auth_url);
        print_json(obj);
        json_decref(obj);
    }
    fprintf(stderr, "install: dry run: nothing was changed\n");
    return 0;
}

static void lower_kind(const char *kind, char *buf, size_t size)
{
    size_t i;

    for (i = 0; kind[i] && i + 1 < size; i++)
        buf[i] = (char)((kind[i] >= 'A' && kind[i] <= 'Z') ? kind[i] - 'A' + 'a' : kind[i]);
    buf[i] = '\0';
}

/* Applies one manifest object, retrying while its type is not served yet (a CRD just became
 * Established). Prints "<kind>/<name> created|configured|unchanged". */
static int apply_item(struct cli_kube *k, const struct item *it, uint64_t deadline, bool *changed)
{
    const char *name = kapi_obj_name(it->obj);
    const char *ns = it->r->namespaced ? kapi_obj_namespace(it->obj) : NULL;
    json_t *before = NULL, *after = NULL;
    char kind[64];
    const char *what;
    int r;

    if (it->r->namespaced && !ns)
        ns = k->ns;
    lower_kind(it->r->kind, kind, sizeof(kind));
    for (;;) {
        r = cli_get(k, it->r, ns, name, &before);
        if (r < 0 && r != -ENOENT)
            return r;
        if (r == 0 && it->r == &peer_res_clusterconfigs) {
            /* The ClusterConfig is the operator's configuration once created: never re-applied. */
            printf("%s/%s unchanged (exists; install does not change it)\n", kind, name);
            json_decref(before);
            return 0;
        }
        r = cli_apply(k, it->r, ns, it->obj, true, &after);
        if (r == -ENOENT && cli_now_ms() < deadline) {
            json_decref(before);
            before = NULL;
            cli_sleep_ms(250); /* the type is not served yet */
            continue;
        }
        break;
    }
    if (r < 0) {
        json_decref(before);
        return r;
    }
    if (!before)
        what = "created";
    else if (kapi_obj_rv(before) && kapi_obj_rv(after) &&
             strcmp(kapi_obj_rv(before), kapi_obj_rv(after)) == 0)
        what = "unchanged";
    else
        what = "configured";
    if (strcmp(what, "unchanged") != 0)
        *changed = true;
    printf("%s/%s %s\n", kind, name, what);
    json_decref(before);
    json_decref(after);
    return 0;
}

static bool crd_established(const json_t *crd)
{
    size_t i;
    json_t *c;

    json_array_foreach(json_object_get(json_object_get(crd, "status"), "conditions"), i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *s = json_string_value(json_object_get(c, "status"));

        if (t && s && strcmp(t, "Established") == 0 && strcmp(s, "True") == 0)
            return true;
    }
    return false;
}

static int wait_crds(struct cli_kube *k, const struct plan *p, uint64_t deadline,
                     const char **ret_stuck)
{
    uint64_t start = cli_now_ms(), last = start;

    cli_progress("install", "waiting for %zu CRDs to be Established", p->ncrds);
    for (;;) {
        const char *pending = NULL;
        size_t left = 0;

        for (size_t i = 0; i < p->n; i++) {
            json_t *crd = NULL;
            int r;

            if (p->items[i].r != &kapi_crds)
                continue;
            r = cli_get(k, &kapi_crds, NULL, kapi_obj_name(p->items[i].obj), &crd);
            if (r < 0 && r != -ENOENT)
                return r;
            if (r < 0 || !crd_established(crd)) {
                left++;
                pending = kapi_obj_name(p->items[i].obj);
            }
            json_decref(crd);
        }
        if (left == 0)
            return 0;
        if (cli_now_ms() >= deadline) {
            *ret_stuck = pending;
            return -ETIMEDOUT;
        }
        if (cli_now_ms() - last >= 5000) {
            last = cli_now_ms();
            cli_progress("install", "still waiting for %zu CRDs (%s, ...) after %llus", left,
                         pending, (unsigned long long)((last - start) / 1000));
        }
        cli_sleep_ms(200);
    }
}

/* Creates obj unless an object of that name exists. Returns 1 created, 0 existed. *ret_existing
 * (may be NULL) receives the existing or created object. */
static int create_if_missing(struct cli_kube *k, const struct kapi_resource *r, json_t *obj,
                             json_t **ret)
{
    json_t *got = NULL;
    int e = cli_get(k, r, k->ns, kapi_obj_name(obj), &got);

    if (e == 0) {
        *ret = got;
        return 0;
    }
    if (e != -ENOENT)
        return e;
    e = cli_create(k, r, k->ns, obj, &got);
    if (e == -EEXIST)
        return create_if_missing(k, r, obj, ret); /* created concurrently: read it */
    if (e < 0)
        return e;
    *ret = got;
    return 1;
}

static int ensure_auth_url(struct cli_kube *k, const char *url, bool *changed)
{
    json_t *cc = NULL, *patch = NULL;
    char *body = NULL;
    const char *cur;
    int r;

    r = cli_get(k, &peer_res_clusterconfigs, NULL, PEER_CLUSTER_CONFIG, &cc);
    if (r < 0)
        return r;
    cur = jsn_str_at(cc, "spec", "peeringConfig", "authUrl", NULL);
    if (cur && strcmp(cur, url) == 0) {
        printf("clusterconfig/%s authUrl %s unchanged\n", PEER_CLUSTER_CONFIG, url);
        goto out;
    }
    patch = json_pack("{s:{s:{s:s}}}", "spec", "peeringConfig", "authUrl", url);
    body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    r = body ? cli_merge_patch(k, &peer_res_clusterconfigs, NULL, PEER_CLUSTER_CONFIG, NULL, body,
                               NULL)
             : -ENOMEM;
    if (r == 0) {
        *changed = true;
        printf("clusterconfig/%s authUrl set to %s\n", PEER_CLUSTER_CONFIG, url);
    }
out:
    free(body);
    json_decref(patch);
    json_decref(cc);
    return r;
}

static int do_install(struct cli_kube *k, const struct install_opts *o, const char *id,
                      const char *name, const char *auth_url)
{
    uint64_t deadline = cli_now_ms() + o->co.timeout_ms;
    json_t *cm = NULL, *tok = NULL, *tls = NULL, *got = NULL;
    char err[512] = "", token[PEER_TOKEN_LEN + 1] = "";
    const char *stuck = NULL;
    bool changed = false;
    struct plan p;
    int r, rc = 1;

    r = plan_build(o, &p, false, err, sizeof(err));
    if (r < 0) {
        rc = cli_error("install", "%s", err);
        goto out;
    }
    for (size_t i = 0; i < p.n && p.items[i].r == &kapi_crds; i++)
        if ((r = apply_item(k, &p.items[i], deadline, &changed)) < 0)
            goto kerr;
    r = wait_crds(k, &p, deadline, &stuck);
    if (r == -ETIMEDOUT) {
        rc = cli_error("install", "CRD %s not Established after %llus", stuck,
                       (unsigned long long)(o->co.timeout_ms / 1000));
        goto out;
    }
    if (r < 0)
        goto kerr;
    for (size_t i = 0; i < p.n; i++)
        if (p.items[i].r != &kapi_crds && (r = apply_item(k, &p.items[i], deadline, &changed)) < 0)
            goto kerr;

    /* The identity: created once, never changed. */
    cm = make_cluster_id_cm(k->ns, id, name);
    r = create_if_missing(k, &kapi_configmaps, cm, &got);
    if (r < 0)
        goto kerr;
    if (r == 1) {
        changed = true;
        printf("configmap/%s created\n", PEER_CLUSTER_ID_CM);
    } else {
        const char *have = jsn_str_at(got, "data", "cluster-id", NULL);

        printf("configmap/%s unchanged (exists; install never changes the identity)\n",
               PEER_CLUSTER_ID_CM);
        if (o->cluster_id && have && strcmp(have, o->cluster_id) != 0)
            cli_progress("install", "warning: the cluster ID stays %s (--cluster-id %s ignored)",
                         have, o->cluster_id);
    }
    id = jsn_str_at(got, "data", "cluster-id", NULL);
    name = jsn_str_at(got, "data", "cluster-name", NULL);

    tok = make_secret(k->ns, PEER_AUTH_TOKEN_SECRET, "Opaque");
    r = peer_token_generate(token);
    if (r < 0 || secret_put(tok, "token", token) < 0) {
        rc = cli_error("install", "cannot generate the token");
        goto out;
    }
    json_decref(cm);
    cm = got;
    got = NULL;
    r = create_if_missing(k, &kapi_secrets, tok, &got);
    if (r < 0)
        goto kerr;
    changed |= r == 1;
    printf("secret/%s %s\n", PEER_AUTH_TOKEN_SECRET,
           r == 1 ? "created"
                  : "unchanged (exists; rotate with generate-add-command "
                    "--rotate-token)");
    json_decref(got);
    got = NULL;

    r = cli_get(k, &kapi_secrets, k->ns, PEER_AUTH_TLS_SECRET, &got);
    if (r == -ENOENT) {
        r = make_auth_tls(o, &tls, err, sizeof(err));
        if (r < 0) {
            rc = cli_error("install", "cannot create the auth certificates: %s", err);
            goto out;
        }
        r = create_if_missing(k, &kapi_secrets, tls, &got);
    }
    if (r < 0)
        goto kerr;
    changed |= r == 1;
    printf("secret/%s %s\n", PEER_AUTH_TLS_SECRET, r == 1 ? "created" : "unchanged (exists)");
    if (r == 0 && o->naddrs > 0)
        cli_progress("install",
                     "note: secret %s exists and was kept; to reissue its certificate for new "
                     "--auth-address values, delete it and run install again",
                     PEER_AUTH_TLS_SECRET);

    if (auth_url && (r = ensure_auth_url(k, auth_url, &changed)) < 0)
        goto kerr;

    if (!changed)
        printf("nothing changed: cliqo is already installed\n");
    printf("cluster ID:   %s\ncluster name: %s\n", id ? id : "?", name ? name : "?");
    rc = 0;
    goto out;
kerr:
    rc = cli_error("install", "%s", k->err);
out:
    OPENSSL_cleanse(token, sizeof(token));
    plan_free(&p);
    json_decref(cm);
    json_decref(tok);
    json_decref(tls);
    json_decref(got);
    return rc;
}

int cmd_install_main(int argc, char **argv)
{
    struct install_opts o = {0};
    char id[PEER_UUID_LEN + 1 > PEER_NAME_MAX + 1 ? PEER_UUID_LEN + 1 : PEER_NAME_MAX + 1];
    char name[PEER_NAME_MAX + 1], url[URL_MAX + 16];
    struct cli_kube k;
    int r, has_url;

    r = parse_args(argc, argv, &o);
    if (r != 0)
        return r < 0 ? 2 : 0;
    has_url = wanted_auth_url(&o, url, sizeof(url));
    if (has_url < 0)
        return cli_misuse("install", "cannot make an https:// URL of --auth-address '%s'",
                          o.addrs[0]);
    if (o.cluster_id)
        snprintf(id, sizeof(id), "%s", o.cluster_id);
    else if (peer_uuid_v4(id) < 0)
        return cli_error("install", "cannot generate a cluster ID (random generator failed)");

    r = cli_kube_open(&k, &o.co);
    if (o.cluster_name)
        snprintf(name, sizeof(name), "%s", o.cluster_name);
    else if (k.cfg)
        derive_name(k.cfg->cluster_name, name);
    if (r < 0 && (!o.dry_run || !o.cluster_name)) {
        r = cli_error("install", "%s", k.err);
        cli_kube_close(&k);
        return r;
    }
    if (o.dry_run)
        r = dry_run(&o, id, name, has_url ? url : NULL);
    else
        r = do_install(&k, &o, id, name, has_url ? url : NULL);
    cli_kube_close(&k);
    return r;
}
