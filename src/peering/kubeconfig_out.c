#include "peering/kubeconfig_out.h"
#include "peering/identity.h"
#include "peering/internal.h"
#include "common/errbuf.h"
#include "common/xalloc.h"
#include "kube/kubeconfig.h"
#include "kube/names.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

static int kco_base64(const char *data, size_t len, char **ret)
{
    size_t n = 4 * ((len + 2) / 3);
    char *s = x_malloc(n + 1);

    if (!s)
        return -ENOMEM;
    if (EVP_EncodeBlock((unsigned char *)s, (const unsigned char *)data, (int)len) != (int)n) {
        x_free(s);
        return -EIO;
    }
    s[n] = '\0';
    *ret = s;
    return 0;
}

int peer_kubeconfig_build(const struct peer_kubeconfig_params *p, char **ret_kubeconfig, char *err,
                          size_t errlen)
{
    char name[sizeof "cliqo-" + PEER_NAME_MAX];
    char kerr[KC_ERR_LEN];
    char *ca64 = NULL, *doc = NULL;
    json_t *root = NULL, *cluster = NULL;
    struct kc_config *c = NULL;
    int r;

    errbuf_clear(err, errlen);
    if (!p || !p->server || !*p->server)
        return errbuf_fmt(err, errlen, -EINVAL, "kubeconfig: the server URL is required");
    if (!p->token || !*p->token)
        return errbuf_fmt(err, errlen, -EINVAL, "kubeconfig: the token is required");
    if (!kname_dns_label(p->namespace))
        return errbuf_fmt(err, errlen, -EINVAL, "kubeconfig: invalid namespace");
    if (!peer_cluster_name_valid(p->cluster_name))
        return errbuf_fmt(err, errlen, -EINVAL, "kubeconfig: invalid cluster name");
    if (p->ca_pem && p->ca_pem_len > PEER_KUBECONFIG_CA_MAX) {
        errbuf_fmt(err, errlen, -EINVAL, "kubeconfig: CA over %u bytes", PEER_KUBECONFIG_CA_MAX);
        return -E2BIG;
    }
    snprintf(name, sizeof name, "cliqo-%s", p->cluster_name);

    if (p->ca_pem && p->ca_pem_len > 0) {
        r = kco_base64(p->ca_pem, p->ca_pem_len, &ca64);
        if (r < 0)
            goto out;
    }
    r = -ENOMEM;
    cluster = json_pack("{s:s}", "server", p->server);
    if (!cluster) {
        r = errbuf_fmt(err, errlen, -EINVAL, "kubeconfig: the server URL is not valid UTF-8");
        goto out;
    }
    if (ca64 && json_object_set_new(cluster, "certificate-authority-data", json_string(ca64)) < 0)
        goto out;
    root = json_pack("{s:s, s:s, s:[{s:s, s:O}], s:[{s:s, s:{s:s}}], s:[{s:s, s:{s:s, s:s, s:s}}],"
                     " s:s, s:{}}",
                     "apiVersion", "v1", "kind", "Config", "clusters", "name", name, "cluster",
                     cluster, "users", "name", name, "user", "token", p->token, "contexts", "name",
                     name, "context", "cluster", name, "user", name, "namespace", p->namespace,
                     "current-context", name, "preferences");
    if (!root) {
        r = errbuf_fmt(err, errlen, -EINVAL, "kubeconfig: the token is not valid UTF-8");
        goto out;
    }
    r = peer__json_dump(root, &doc);
    if (r < 0)
        goto out;

    /* What we hand out must be what we accept. */
    r = kc_load_mem(doc, strlen(doc), "kubeconfig", NULL, NULL, &c, kerr, sizeof kerr);
    if (r < 0) {
        if (r != -ENOMEM)
            r = errbuf_fmt(err, errlen, -EINVAL, "%s", kerr);
        goto out;
    }
    *ret_kubeconfig = doc;
    doc = NULL;
    r = 0;
out:
    kc_config_free(c);
    if (doc) {
        OPENSSL_cleanse(doc, strlen(doc));
        x_free(doc);
    }
    x_free(ca64);
    json_decref(cluster);
    json_decref(root); /* jansson's copy of the token is not wiped: it cannot be reached */
    return r;
}
