/* libFuzzer harness for the data plane's objects (src/network/dpobj.c): what a peer publishes (its
 * TunnelEndpoint) and what the gateway reads (the peer's NetworkConfig, the gateway's record).
 *
 * The input is JSON, read as all three. Whatever is accepted must hold:
 *   - a TunnelEndpoint: a non-zero key, a usable (unicast, numeric) endpoint, an MTU in range, and
 *     the object built from it (dpo_tep_build) is accepted again with the same values;
 *   - the gateway's record: the same, through dpo_gateway_build;
 *   - a NetworkConfig: blocks of one family, each pair of one length, and the nftables text of that
 *     one peer (natr_ruleset) is written without error.
 * A refusal must say why (a non-empty reason). A violated invariant aborts.
 *
 * The unit is included, not only linked, so that it is built with the fuzzer's coverage (see
 * fuzz-network-cidr.c). */
#include "../src/network/dpobj.c"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok)
        abort();
}

static bool same_tunnel(const struct dpo_tunnel *a, const struct dpo_tunnel *b)
{
    char x[WG_ENDPOINT_MAX], y[WG_ENDPOINT_MAX];

    return wg_key_equal(&a->pub, &b->pub) && a->mtu == b->mtu &&
           wg_endpoint_format(&a->endpoint, x, sizeof(x)) > 0 &&
           wg_endpoint_format(&b->endpoint, y, sizeof(y)) > 0 && strcmp(x, y) == 0;
}

static void tunnel_ok(const struct dpo_tunnel *t)
{
    check(!wg_key_is_zero(&t->pub));
    check(dpo_endpoint_usable(&t->endpoint));
    check(t->mtu >= DPO_MTU_MIN && t->mtu <= DPO_MTU_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    char reason[DPO_REASON_MAX];
    struct dpo_tunnel t, back;
    struct dpo_peer_net p;
    json_t *built;
    int r;

    if (!j)
        return 0;
    reason[0] = '\0';
    r = dpo_tep_parse(j, "cluster-self", &t, reason, sizeof(reason));
    check(r == 0 || (r == -EINVAL && reason[0]));
    if (r == 0) {
        tunnel_ok(&t);
        built = dpo_tep_build("cluster-peer", "cluster-self", "tenant", &t);
        check(built != NULL);
        check(dpo_tep_parse(built, "cluster-self", &back, reason, sizeof(reason)) == 0);
        check(same_tunnel(&t, &back));
        json_decref(built);
    }
    reason[0] = '\0';
    r = dpo_gateway_parse(j, &t, reason, sizeof(reason));
    check(r == 0 || (r == -EINVAL && reason[0]));
    if (r == 0) {
        tunnel_ok(&t);
        built = dpo_gateway_build("cliqo", &t);
        check(built != NULL);
        check(dpo_gateway_parse(built, &back, reason, sizeof(reason)) == 0);
        check(same_tunnel(&t, &back));
        json_decref(built);
    }
    reason[0] = '\0';
    r = dpo_nc_parse(j, &p, reason, sizeof(reason));
    check(r == 0 || ((r == -EINVAL || r == -EAGAIN) && reason[0]));
    if (r == 0) {
        struct sbuf b;

        check(p.real.family == p.nat.seen_here.family && p.real.prefix == p.nat.seen_here.prefix);
        check(p.local.family == p.real.family && p.local.family == p.nat.us_there.family &&
              p.local.prefix == p.nat.us_there.prefix);
        sbuf_init(&b, 1 << 16);
        check(natr_ruleset(p.local.family, "cliqo0", &p.local, &p.nat, 1, &b, NULL, 0) == 0);
        sbuf_done(&b);
    }
    json_decref(j);
    return 0;
}
