/* Unit tests of the data plane's objects (src/network/dpobj.c), as tables: a peer's TunnelEndpoint
 * checked as hostile input (bad keys, names instead of addresses, huge or odd fields, a range it
 * was not given), keys claimed twice or equal to ours, the gateway's record, and the peer's
 * NetworkConfig read into what the gateway installs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "network/dpobj.h"

#define KEY1 "OfB6iSxZRrA8yO1jesL2UuIINDoAlaRKQveyLxkx3WA="
#define KEY2 "K+BNOdWE72dqLWa5upxPQA1wYDH1DZAzLa5NSwpsdCE="
#define SELF "cluster-self"

static json_t *load(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);

    if (!j)
        fail_msg("bad test JSON: %s: %s", e.text, text);
    return j;
}

static void test_tep_parse(void **state)
{
    static char huge[70000];
    static const struct {
        const char *what;
        const char *spec; /* the spec's members, between braces */
        const char *want; /* NULL: accepted; else a piece of the reason */
        const char *endpoint;
        unsigned mtu;
    } cases[] = {
        {"valid IPv4",
         "\"clusterID\":\"" SELF "\",\"publicKey\":\"" KEY1
         "\",\"endpoint\":\"192.168.77.2:51820\",\"mtu\":1420",
         NULL, "192.168.77.2:51820", 1420},
        {"valid IPv6",
         "\"clusterID\":\"" SELF "\",\"publicKey\":\"" KEY1
         "\",\"endpoint\":\"[2001:db8::7]:4500\",\"mtu\":1280",
         NULL, "[2001:db8::7]:4500", 1280},
        {"mtu as a string",
         "\"clusterID\":\"" SELF "\",\"publicKey\":\"" KEY1
         "\",\"endpoint\":\"10.0.0.1:1\",\"mtu\":\"1420\"",
         NULL, "10.0.0.1:1", 1420},
        {"an extra field (a range it was not given) is not read",
         "\"clusterID\":\"" SELF "\",\"publicKey\":\"" KEY1
         "\",\"endpoint\":\"10.0.0.1:51820\",\"mtu\":1420,\"allowedIPs\":[\"0.0.0.0/0\"]",
         NULL, "10.0.0.1:51820", 1420},
        {"addressed to another cluster",
         "\"clusterID\":\"other\",\"publicKey\":\"" KEY1
         "\",\"endpoint\":\"10.0.0.1:51820\",\"mtu\":1420",
         "clusterID", NULL, 0},
        {"no clusterID", "\"publicKey\":\"" KEY1 "\",\"endpoint\":\"10.0.0.1:51820\",\"mtu\":1420",
         "clusterID", NULL, 0},
        {"no key", "\"clusterID\":\"" SELF "\",\"endpoint\":\"10.0.0.1:51820\",\"mtu\":1420",
         "publicKey", NULL, 0},
        {"a key one character short",
         "\"clusterID\":\"" SELF "\",\"publicKey\":\"fB6iSxZRrA8yO1jesL2UuIINDoAlaRKQveyLxkx3WA=\","
         "\"endpoint\":\"10.0.0.1:51820\",\"mtu\":1420",
         "publicKey", NULL, 0},
        {"a key without its padding",
         "\"clusterID\":\"" SELF
         "\",\"publicKey\":\"OfB6iSxZRrA8yO1jesL2UuIINDoAlaRKQveyLxkx3WAA\","
         "\"endpoint\":\"10.0.0.1:51820\",\"mtu\":1420",
         "publicKey", NULL, 0},
        {"a key in hex",
         "\"clusterID\":\"" SELF "\",\"publicKey\":\"39f07a892c5946b03cc8ed627ac2f"
         "652e2083683a02d1a4a42f7b22f2c71dd60\",\"endpoint\":\"10.0.0.1:51820\","
         "\"mtu\":1420",
         "publicKey", NULL, 0},
        {"a key with non-zero unused bits",
         "\"clusterID\":\"" SELF
         "\",\"publicKey\":\"OfB6iSxZRrA8yO1jesL2UuIINDoAlaRKQveyLxkx3WB=\","
         "\"endpoint\":\"10.0.0.1:51820\",\"mtu\":1420",
         "publicKey", NULL, 0},
        {"the all-zero key",
         "\"clusterID\":\"" SELF
         "\",\"publicKey\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\","
         "\"endpoint\":\"10.0.0.1:51820\",\"mtu\":1420",
         "publicKey", NULL, 0},
        {"a key that is a number",
         "\"clusterID\":\"" SELF "\",\"publicKey\":7,"
         "\"endpoint\":\"10.0.0.1:51820\",\"mtu\":1420",
         "publicKey", NULL, 0},
        {"a name instead of an address",
         "\"clusterID\":\"" SELF "\",\"publicKey\":\"" KEY1
         "\",\"endpoint\":\"gateway.example.org:51820\",\"mtu\":1420",
         "endpoint", NULL, 0},
        {"localhost",
         "\"clusterID\":\"" SELF "\",\"publicKey\":\"" KEY1
         "\",\"endpoint\":\"localhost:51820\",\"mtu\":1420",
         "endpoint", NULL, 0},
        {"no port",
         "\"clusterID\":\"" SELF "\",\"publicKey\":\"" KEY1
         "\",\"endpoint\":\"10.0.0.1\",\"mtu\":1420",
         "endpoint", NULL, 0},
        {"port 0",
         "\"clusterID\":\"" SELF "\",\"publicKey\":\"" KEY1
         "\",\"endpoint\":\"10.0.0.1:0\",\"mtu\":1420",
         "endpoint", NULL, 0},
        {"port too large",
         "\"clusterID\":\"" SELF "\",\"publicKey\":\"" KEY1
         "\",\"endpoint\":\"10.0.0.1:65536\",\"mtu\":1420",
         "endpoint", NULL, 0},
        {"an IPv6 zone",
         "\"clusterID\":\"" SELF "\",\"publicKey\":\"" KEY1
         "\",\"endpoint\":\"[fe80::1%eth0]:51820\",\"mtu\":1420",
         "endpoint", NULL, 0},
        {"IPv6 without brackets",
         "\"clusterID\":\"" SELF "\",\"publicKey\":\"" KEY1
         "\",\"endpoint\":\"2001:db8::7:51820\",\"mtu\":1420",
         "endpoint", NULL, 0},
        {"the unspecified address",
         "\"clusterID\":\"" SELF "\",\"publicKey\":\"" KEY1
         "\",\"endpoint\":\"0.0.0.0:51820\",\"mtu\":1420",
         "unicast", NULL, 0},
        {"broadcast",
         "\"clusterID\":\"" SELF "\",\"publicKey\":\"" KEY1
         "\",\"endpoint\":\"255.255.255.255:51820\",\"mtu\":1420",
         "unicast", NULL, 0},
        {"multicast",
         "\"clusterID\":\"" SELF "\",\"publicKey\":\"" KEY1
         "\",\"endpoint\":\"224.0.0.1:51820\",\"mtu\":1420",
         "unicast", NULL, 0},
        {"IPv6 multicast",
         "\"clusterID\":\"" SELF "\",\"publicKey\":\"" KEY1
         "\",\"endpoint\":\"[ff02::1]:51820\",\"mtu\":1420",
         "unicast", NULL, 0},
        {"mtu too small",
         "\"clusterID\":\"" SELF "\",\"publicKey\":\"" KEY1
         "\",\"endpoint\":\"10.0.0.1:51820\",\"mtu\":1279",
         "mtu", NULL, 0},
        {"mtu too large",
         "\"clusterID\":\"" SELF "\",\"publicKey\":\"" KEY1
         "\",\"endpoint\":\"10.0.0.1:51820\",\"mtu\":9001",
         "mtu", NULL, 0},
        {"mtu negative",
         "\"clusterID\":\"" SELF "\",\"publicKey\":\"" KEY1
         "\",\"endpoint\":\"10.0.0.1:51820\",\"mtu\":-1420",
         "mtu", NULL, 0},
        {"mtu huge",
         "\"clusterID\":\"" SELF "\",\"publicKey\":\"" KEY1
         "\",\"endpoint\":\"10.0.0.1:51820\",\"mtu\":99999999999999",
         "mtu", NULL, 0},
        {"mtu a float",
         "\"clusterID\":\"" SELF "\",\"publicKey\":\"" KEY1
         "\",\"endpoint\":\"10.0.0.1:51820\",\"mtu\":1420.5",
         "mtu", NULL, 0},
        {"mtu a string with a sign",
         "\"clusterID\":\"" SELF "\",\"publicKey\":\"" KEY1
         "\",\"endpoint\":\"10.0.0.1:51820\",\"mtu\":\"+1420\"",
         "mtu", NULL, 0},
        {"no mtu",
         "\"clusterID\":\"" SELF "\",\"publicKey\":\"" KEY1 "\",\"endpoint\":\"10.0.0.1:51820\"",
         "mtu", NULL, 0},
        {"a huge endpoint", NULL /* built below */, "endpoint", NULL, 0},
    };

    (void)state;
    memset(huge, 'a', sizeof(huge) - 1);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct dpo_tunnel t;
        char reason[DPO_REASON_MAX] = "", ep[WG_ENDPOINT_MAX];
        json_t *tep;
        int r;

        if (cases[i].spec) {
            char text[1024];

            snprintf(text, sizeof(text), "{\"spec\":{%s}}", cases[i].spec);
            tep = load(text);
        } else {
            tep = json_pack("{s:{s:s,s:s,s:s,s:i}}", "spec", "clusterID", SELF, "publicKey", KEY1,
                            "endpoint", huge, "mtu", 1420);
        }
        memset(&t, 0x5a, sizeof(t));
        r = dpo_tep_parse(tep, SELF, &t, reason, sizeof(reason));
        if (!cases[i].want) {
            if (r != 0)
                fail_msg("%s: refused (%s)", cases[i].what, reason);
            assert_int_equal(wg_endpoint_format(&t.endpoint, ep, sizeof(ep)) > 0, 1);
            if (strcmp(ep, cases[i].endpoint) != 0 || t.mtu != cases[i].mtu)
                fail_msg("%s: read %s mtu %u", cases[i].what, ep, t.mtu);
        } else if (r != -EINVAL || !strstr(reason, cases[i].want)) {
            fail_msg("%s: returned %d, reason '%s', want -EINVAL naming %s", cases[i].what, r,
                     reason, cases[i].want);
        }
        json_decref(tep);
    }
}

static void test_tep_build_roundtrip(void **state)
{
    struct dpo_tunnel t, back;
    char reason[DPO_REASON_MAX];
    json_t *tep, *cm;

    (void)state;
    memset(&t, 0, sizeof(t));
    assert_int_equal(wg_key_parse(KEY2, &t.pub), 0);
    assert_int_equal(wg_endpoint_parse("192.168.77.1:51820", &t.endpoint), 0);
    t.mtu = 1420;
    tep = dpo_tep_build("cluster-a", SELF, "tenant-ns", &t);
    assert_non_null(tep);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(tep, "metadata"), "name")),
        "tep-cluster-a");
    assert_int_equal(dpo_tep_parse(tep, SELF, &back, reason, sizeof(reason)), 0);
    assert_true(wg_key_equal(&back.pub, &t.pub));
    assert_int_equal(back.mtu, 1420);
    /* read by another cluster: not addressed to it */
    assert_int_equal(dpo_tep_parse(tep, "cluster-b", &back, reason, sizeof(reason)), -EINVAL);
    json_decref(tep);

    cm = dpo_gateway_build("cliqo", &t);
    assert_non_null(cm);
    assert_int_equal(dpo_gateway_parse(cm, &back, reason, sizeof(reason)), 0);
    assert_true(wg_key_equal(&back.pub, &t.pub));
    assert_int_equal(back.mtu, 1420);
    json_decref(cm);
    cm = load("{\"data\":{\"publicKey\":\"" KEY2
              "\",\"endpoint\":\"h.example:1\",\"mtu\":\"1420\"}}");
    assert_int_equal(dpo_gateway_parse(cm, &back, reason, sizeof(reason)), -EINVAL);
    json_decref(cm);
    memset(&t.pub, 0, sizeof(t.pub));
    assert_null(dpo_gateway_build("cliqo", &t));
    assert_null(dpo_tep_build("a", "b", "ns", &t));
}

static void test_tep_resolve(void **state)
{
    struct wg_key k1, k2;
    bool refused[4];
    char reasons[4][DPO_REASON_MAX];

    (void)state;
    assert_int_equal(wg_key_parse(KEY1, &k1), 0);
    assert_int_equal(wg_key_parse(KEY2, &k2), 0);
    {
        /* b copies a's key later: b is refused, a keeps it; c has our own key; d is alone */
        struct dpo_claim c[4] = {
            {"peer-b", "2026-01-02T00:00:00Z", k1},
            {"peer-a", "2026-01-01T00:00:00Z", k1},
            {"peer-c", "2025-01-01T00:00:00Z", k2},
            {"peer-d", NULL, k2},
        };

        dpo_tep_resolve(c, 4, &k2, refused, reasons);
        assert_true(refused[0]);
        assert_non_null(strstr(reasons[0], "peer-a"));
        assert_false(refused[1]);
        assert_string_equal(reasons[1], "");
        assert_true(refused[2]);
        assert_non_null(strstr(reasons[2], "own key"));
        assert_true(refused[3]);
    }
    {
        /* the same time: the smaller ID wins; no key of ours known yet */
        struct dpo_claim c[2] = {
            {"peer-z", "2026-01-01T00:00:00Z", k1},
            {"peer-y", "2026-01-01T00:00:00Z", k1},
        };

        dpo_tep_resolve(c, 2, NULL, refused, reasons);
        assert_true(refused[0]);
        assert_false(refused[1]);
    }
    {
        /* a missing creation time sorts last */
        struct dpo_claim c[2] = {
            {"peer-a", NULL, k1},
            {"peer-b", "2026-01-01T00:00:00Z", k1},
        };

        dpo_tep_resolve(c, 2, NULL, refused, reasons);
        assert_true(refused[0]);
        assert_false(refused[1]);
    }
}

static void test_nc_parse(void **state)
{
    static const struct {
        const char *what;
        const char *nc;
        int want;
        const char *real, *seen, *there, *local;
    } cases[] = {
        {"remapped both ways",
         "{\"spec\":{\"podCIDR\":\"10.244.0.0/16\"},\"status\":{\"podCIDRNAT\":\"10.0.0.0/16\","
         "\"localPodCIDR\":\"10.244.0.0/16\",\"localPodCIDRNAT\":\"10.1.0.0/16\"}}",
         0, "10.244.0.0/16", "10.0.0.0/16", "10.1.0.0/16", "10.244.0.0/16"},
        {"not remapped either way",
         "{\"spec\":{\"podCIDR\":\"10.245.0.0/16\"},\"status\":{\"podCIDRNAT\":\"None\","
         "\"localPodCIDR\":\"10.244.0.0/16\",\"localPodCIDRNAT\":\"None\"}}",
         0, "10.245.0.0/16", "10.245.0.0/16", "10.244.0.0/16", "10.244.0.0/16"},
        {"a /24 pair",
         "{\"spec\":{\"podCIDR\":\"10.244.1.0/24\"},\"status\":{\"podCIDRNAT\":"
         "\"10.9.9.0/24\",\"localPodCIDR\":\"10.244.1.0/24\",\"localPodCIDRNAT\":"
         "\"10.8.8.0/24\"}}",
         0, "10.244.1.0/24", "10.9.9.0/24", "10.8.8.0/24", "10.244.1.0/24"},
        {"no status yet", "{\"spec\":{\"podCIDR\":\"10.244.0.0/16\"}}", -EAGAIN, NULL, NULL, NULL,
         NULL},
        {"where the peer sees us not known yet",
         "{\"spec\":{\"podCIDR\":\"10.244.0.0/16\"},\"status\":{\"podCIDRNAT\":\"None\","
         "\"localPodCIDR\":\"10.244.0.0/16\"}}",
         -EAGAIN, NULL, NULL, NULL, NULL},
        {"a bad spec", "{\"spec\":{\"podCIDR\":\"10.244.0.1/16\"}}", -EINVAL, NULL, NULL, NULL,
         NULL},
        {"lengths differ",
         "{\"spec\":{\"podCIDR\":\"10.244.0.0/16\"},\"status\":{\"podCIDRNAT\":\"10.0.0.0/8\","
         "\"localPodCIDR\":\"10.244.0.0/16\",\"localPodCIDRNAT\":\"None\"}}",
         -EINVAL, NULL, NULL, NULL, NULL},
        {"local None",
         "{\"spec\":{\"podCIDR\":\"10.244.0.0/16\"},\"status\":{\"podCIDRNAT\":\"None\","
         "\"localPodCIDR\":\"None\",\"localPodCIDRNAT\":\"None\"}}",
         -EINVAL, NULL, NULL, NULL, NULL},
        {"families differ",
         "{\"spec\":{\"podCIDR\":\"fd00::/64\"},\"status\":{\"podCIDRNAT\":\"None\","
         "\"localPodCIDR\":\"10.244.0.0/16\",\"localPodCIDRNAT\":\"None\"}}",
         -EINVAL, NULL, NULL, NULL, NULL},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *nc = load(cases[i].nc);
        struct dpo_peer_net p;
        char reason[DPO_REASON_MAX] = "", t[CIDR_STR_MAX];
        int r = dpo_nc_parse(nc, &p, reason, sizeof(reason));

        if (r != cases[i].want)
            fail_msg("%s: returned %d (%s), want %d", cases[i].what, r, reason, cases[i].want);
        if (r == 0) {
            cidr_format(&p.real, t, sizeof(t));
            assert_string_equal(t, cases[i].real);
            cidr_format(&p.nat.seen_here, t, sizeof(t));
            assert_string_equal(t, cases[i].seen);
            cidr_format(&p.nat.us_there, t, sizeof(t));
            assert_string_equal(t, cases[i].there);
            cidr_format(&p.local, t, sizeof(t));
            assert_string_equal(t, cases[i].local);
        } else {
            assert_true(reason[0] != '\0');
        }
        json_decref(nc);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tep_parse),
        cmocka_unit_test(test_tep_build_roundtrip),
        cmocka_unit_test(test_tep_resolve),
        cmocka_unit_test(test_nc_parse),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
