/* peering/kubeconfig_out: the credential handed to a peer, as a kubeconfig document.
 *
 * The document is JSON (kubectl reads JSON kubeconfigs, and so does kc_load_mem(), whose YAML
 * parser takes JSON as YAML flow style). It holds one cluster, one user and one context, all named
 * `cliqo-<cluster_name>`, and selects that context:
 *   {"apiVersion":"v1","kind":"Config",
 *    "clusters":[{"name":N,"cluster":{"server":S,"certificate-authority-data":base64(CA PEM)}}],
 *    "users":[{"name":N,"user":{"token":T}}],
 *    "contexts":[{"name":N,"context":{"cluster":N,"user":N,"namespace":NS}}],
 *    "current-context":N,"preferences":{}}
 * `certificate-authority-data` is left out when no CA is given (the system trust store is then
 * used); never is TLS verification switched off. Before returning, the document is loaded back with
 * kc_load_mem(NULL base directory), so what goes out is always something our own client accepts:
 * an https:// server (http:// only for loopback), a printable token without spaces, a valid
 * namespace. */
#ifndef CLIQO_PEERING_KUBECONFIG_OUT_H
#define CLIQO_PEERING_KUBECONFIG_OUT_H

#include <stddef.h>

#define PEER_KUBECONFIG_CA_MAX (256u << 10) /* CA bundle PEM */

struct peer_kubeconfig_params {
    const char *server;       /* the API server URL the peer uses */
    const char *ca_pem;       /* API server CA bundle (PEM), or NULL */
    size_t ca_pem_len;        /* bytes of ca_pem */
    const char *token;        /* the ServiceAccount token */
    const char *namespace;    /* the tenant namespace; the context's namespace */
    const char *cluster_name; /* name of the cluster the credential is for: names cliqo-<name> */
};

/* Builds the document into *ret_kubeconfig (x_malloc'd, NUL-terminated; it holds the token: wipe
 * with OPENSSL_cleanse before x_free). Returns 0, -EINVAL (bad parameter; `err` says which), -E2BIG
 * (CA over PEER_KUBECONFIG_CA_MAX) or -ENOMEM. `err` (may be NULL) is always left terminated. */
int peer_kubeconfig_build(const struct peer_kubeconfig_params *p, char **ret_kubeconfig, char *err,
                          size_t errlen);

#endif
