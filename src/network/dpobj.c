/* dpobj: the data plane's objects as data; see dpobj.h. */
#include "network/dpobj.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "common/errbuf.h"
#include "common/strutil.h"
#include "peering/resources.h"

bool dpo_endpoint_usable(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
        uint32_t a = ntohl(s4->sin_addr.s_addr);

        return s4->sin_port != 0 && a != 0 && a != 0xffffffffu && (a >> 28) != 0xe;
    }
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;

        return s6->sin6_port != 0 && !IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr) &&
               !IN6_IS_ADDR_MULTICAST(&s6->sin6_addr);
    }
    return false;
}

/* The three fields of a tunnel, from key, endpoint and MTU values (obj names what holds them). */
static int tunnel_parse(const json_t *key, const json_t *endpoint, const json_t *mtu,
                        const char *obj, struct dpo_tunnel *ret, char *reason, size_t len)
{
    struct dpo_tunnel t;
    json_int_t m;
    uint64_t u;

    memset(&t, 0, sizeof(t));
    if (!json_is_string(key) || wg_key_parse(json_string_value(key), &t.pub) < 0 ||
        wg_key_is_zero(&t.pub))
        return errbuf_fmt(reason, len, -EINVAL,
                          "%s: publicKey is not a WireGuard key (44 characters of base64)", obj);
    if (!json_is_string(endpoint) ||
        wg_endpoint_parse(json_string_value(endpoint), &t.endpoint) < 0)
        return errbuf_fmt(
            reason, len, -EINVAL,
            "%s: endpoint is not a numeric address and port (a.b.c.d:port or [v6]:port; "
            "names are not resolved)",
            obj);
    if (!dpo_endpoint_usable(&t.endpoint))
        return errbuf_fmt(
            reason, len, -EINVAL,
            "%s: endpoint is not a unicast address (unspecified, multicast or broadcast)", obj);
    if (json_is_integer(mtu))
        m = json_integer_value(mtu);
    else if (json_is_string(mtu) && parse_u64(json_string_value(mtu), DPO_MTU_MAX, &u) == 0)
        m = (json_int_t)u;
    else
        m = -1;
    if (m < DPO_MTU_MIN || m > DPO_MTU_MAX)
        return errbuf_fmt(reason, len, -EINVAL, "%s: mtu must be a number from %d to %d", obj,
                          DPO_MTU_MIN, DPO_MTU_MAX);
    t.mtu = (uint32_t)m;
    *ret = t;
    return 0;
}

int dpo_gateway_parse(const json_t *cm, struct dpo_tunnel *ret, char *reason, size_t len)
{
    const json_t *d = json_object_get(cm, "data");

    return tunnel_parse(json_object_get(d, "publicKey"), json_object_get(d, "endpoint"),
                        json_object_get(d, "mtu"), "ConfigMap " DPO_GW_CONFIGMAP, ret, reason, len);
}

json_t *dpo_gateway_build(const char *ns, const struct dpo_tunnel *t)
{
    char key[WG_KEY_B64_LEN + 1], ep[WG_ENDPOINT_MAX], mtu[16];

    if (!ns || wg_key_is_zero(&t->pub) || wg_endpoint_format(&t->endpoint, ep, sizeof(ep)) < 0)
        return NULL;
    wg_key_format(&t->pub, key);
    snprintf(mtu, sizeof(mtu), "%u", t->mtu);
    return json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s,s:s,s:s}}", "apiVersion", "v1", "kind",
                     "ConfigMap", "metadata", "name", DPO_GW_CONFIGMAP, "namespace", ns, "labels",
                     "app.kubernetes.io/part-of", "cliqo", "data", "publicKey", key, "endpoint", ep,
                     "mtu", mtu);
}

int dpo_tep_parse(const json_t *tep, const char *self, struct dpo_tunnel *ret, char *reason,
                  size_t len)
{
    const json_t *spec = json_object_get(tep, "spec");
    const char *to = json_string_value(json_object_get(spec, "clusterID"));

    if (!json_is_object(spec))
        return errbuf_fmt(reason, len, -EINVAL, "TunnelEndpoint: no spec");
    if (!to || !self || strcmp(to, self) != 0)
        return errbuf_fmt(reason, len, -EINVAL,
                          "TunnelEndpoint: spec.clusterID is not this cluster's ID");
    return tunnel_parse(json_object_get(spec, "publicKey"), json_object_get(spec, "endpoint"),
                        json_object_get(spec, "mtu"), "TunnelEndpoint", ret, reason, len);
}

json_t *dpo_tep_build(const char *self, const char *peer, const char *ns,
                      const struct dpo_tunnel *t)
{
    char key[WG_KEY_B64_LEN + 1], ep[WG_ENDPOINT_MAX], name[96];

    if (!self || !peer || !ns || wg_key_is_zero(&t->pub) ||
        wg_endpoint_format(&t->endpoint, ep, sizeof(ep)) < 0 ||
        (size_t)snprintf(name, sizeof(name), DPO_TEP_PREFIX "%s", self) >= sizeof(name))
        return NULL;
    wg_key_format(&t->pub, key);
    return json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s,s:s,s:s,s:I}}", "apiVersion",
                     "net.liqo.io/v1alpha1", "kind", "TunnelEndpoint", "metadata", "name", name,
                     "namespace", ns, "labels", PEER_LABEL_CLUSTER_ID, self, "spec", "clusterID",
                     peer, "publicKey", key, "endpoint", ep, "mtu", (json_int_t)t->mtu);
}

/* Claim a came before claim b. */
static bool earlier(const struct dpo_claim *a, const struct dpo_claim *b)
{
    int d;

    if (a->created && !b->created)
        return true;
    if (!a->created && b->created)
        return false;
    d = a->created ? strcmp(a->created, b->created) : 0;
    if (d)
        return d < 0;
    return strcmp(a->peer ? a->peer : "", b->peer ? b->peer : "") < 0;
}

void dpo_tep_resolve(const struct dpo_claim *claims, size_t n, const struct wg_key *ours,
                     bool *refused, char (*reasons)[DPO_REASON_MAX])
{
    for (size_t i = 0; i < n; i++) {
        refused[i] = false;
        reasons[i][0] = '\0';
        if (ours && wg_key_equal(&claims[i].key, ours)) {
            refused[i] = true;
            snprintf(reasons[i], DPO_REASON_MAX,
                     "TunnelEndpoint: publicKey is this cluster's own key");
            continue;
        }
        for (size_t j = 0; j < n; j++) {
            if (j == i || !wg_key_equal(&claims[i].key, &claims[j].key) ||
                !earlier(&claims[j], &claims[i]))
                continue;
            refused[i] = true;
            snprintf(reasons[i], DPO_REASON_MAX,
                     "TunnelEndpoint: publicKey is already the key of peer %.64s",
                     claims[j].peer ? claims[j].peer : "?");
            break;
        }
    }
}

/* A CIDR of the status (or "None": then *none is set and ret left alone). */
static int status_cidr(const json_t *st, const char *key, struct cidr *ret, bool *none)
{
    const char *v = json_string_value(json_object_get(st, key));

    *none = false;
    if (!v || !*v)
        return -EAGAIN;
    if (strcmp(v, "None") == 0) {
        *none = true;
        return 0;
    }
    return cidr_parse(v, ret) < 0 ? -EINVAL : 0;
}

int dpo_nc_parse(const json_t *nc, struct dpo_peer_net *ret, char *reason, size_t len)
{
    const json_t *st = json_object_get(nc, "status");
    const char *pc = json_string_value(json_object_get(json_object_get(nc, "spec"), "podCIDR"));
    struct dpo_peer_net p;
    bool none;
    int r;

    memset(&p, 0, sizeof(p));
    if (!pc || cidr_parse(pc, &p.real) < 0)
        return errbuf_fmt(reason, len, -EINVAL, "NetworkConfig: spec.podCIDR is not a CIDR");
    r = status_cidr(st, "podCIDRNAT", &p.nat.seen_here, &none);
    if (r == 0 && none)
        p.nat.seen_here = p.real;
    if (r == 0)
        r = status_cidr(st, "localPodCIDR", &p.local, &none);
    if (r == 0 && none)
        r = -EINVAL;
    if (r == 0)
        r = status_cidr(st, "localPodCIDRNAT", &p.nat.us_there, &none);
    if (r == 0 && none)
        p.nat.us_there = p.local;
    if (r == -EAGAIN)
        return errbuf_fmt(reason, len, r, "the pod-CIDR remapping is not settled yet");
    if (r < 0)
        return errbuf_fmt(reason, len, r, "NetworkConfig: a malformed CIDR in its status");
    if (p.real.family != p.nat.seen_here.family || p.real.prefix != p.nat.seen_here.prefix ||
        p.local.family != p.nat.us_there.family || p.local.prefix != p.nat.us_there.prefix ||
        p.local.family != p.real.family)
        return errbuf_fmt(reason, len, -EINVAL,
                          "NetworkConfig: the blocks of a pair differ in family or length");
    *ret = p;
    return 0;
}
