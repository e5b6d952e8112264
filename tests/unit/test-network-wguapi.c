/* Unit tests of src/network/wguapi.c: WireGuard keys (base64 tables, RFC 7748's X25519 vector,
 * generation and clamping), endpoints (tables both ways), the lines of set requests, the answer to
 * a set, and the answer to a get (a full answer read back, then a table of malformed and
 * oversized answers, each refused with its status and without leaving anything behind). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "network/wguapi.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* RFC 7748, section 6.1: Alice's private key and its public key. */
#define ALICE_PRIV_B64 "dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo="
#define ALICE_PUB_B64  "hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo="
#define ALICE_PUB_HEX  "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"

static void test_key_text(void **state)
{
    static const struct {
        const char *in;
        int want;
    } cases[] = {
        {ALICE_PRIV_B64, 0},
        {ALICE_PUB_B64, 0},
        {"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", 0},
        {"", -EINVAL},
        {"hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo", -EINVAL},   /* no padding */
        {"hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo==", -EINVAL}, /* 45 characters */
        {"hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTm==", -EINVAL},  /* 31 bytes */
        {"hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmp=", -EINVAL}, /* low bits set: not canonical */
        {"hSDwCYkwp1R0i33ctD73Wg2_Og0mOBr066SpjqqbTmo=", -EINVAL}, /* URL alphabet */
        {"hSDwCYkwp1R0i33ctD73Wg2 Og0mOBr066SpjqqbTmo=", -EINVAL},
        {"hSDwCYkwp1R0i33ctD73=g2/Og0mOBr066SpjqqbTmo=", -EINVAL},
    };
    (void)state;
    for (size_t i = 0; i < N(cases); i++) {
        struct wg_key k;
        char out[WG_KEY_B64_LEN + 1];
        int r = wg_key_parse(cases[i].in, &k);

        if (r != cases[i].want)
            fail_msg("case %zu '%s': %d, want %d", i, cases[i].in, r, cases[i].want);
        if (r == 0) {
            wg_key_format(&k, out);
            assert_string_equal(out, cases[i].in);
        }
    }
    assert_int_equal(wg_key_parse(NULL, &(struct wg_key){{0}}), -EINVAL);
}

static void test_key_x25519(void **state)
{
    struct wg_key priv, pub, want, again, gen, gpub;
    char hex[WG_KEY_HEX_LEN + 1];

    (void)state;
    assert_int_equal(wg_key_parse(ALICE_PRIV_B64, &priv), 0);
    assert_int_equal(wg_key_parse(ALICE_PUB_B64, &want), 0);
    assert_int_equal(wg_key_public(&priv, &pub), 0);
    assert_true(wg_key_equal(&pub, &want));
    str_hex(pub.b, WG_KEY_LEN, hex);
    assert_string_equal(hex, ALICE_PUB_HEX);
    /* Generated keys are clamped, differ, and have a public key. */
    assert_int_equal(wg_key_generate(&gen), 0);
    assert_int_equal(gen.b[0] & 7, 0);
    assert_int_equal(gen.b[31] & 0xc0, 0x40);
    assert_int_equal(wg_key_generate(&again), 0);
    assert_false(wg_key_equal(&gen, &again));
    assert_int_equal(wg_key_public(&gen, &gpub), 0);
    assert_false(wg_key_is_zero(&gpub));
    wg_key_wipe(&gen);
    assert_true(wg_key_is_zero(&gen));
}

static void test_endpoints(void **state)
{
    static const struct {
        const char *in;
        int want;
        const char *canon; /* NULL: the input */
    } cases[] = {
        {"192.0.2.1:51820", 0, NULL},
        {"10.0.0.1:1", 0, NULL},
        {"10.0.0.1:65535", 0, NULL},
        {"[2001:db8::1]:51820", 0, NULL},
        {"[2001:DB8:0:0:0:0:0:1]:7", 0, "[2001:db8::1]:7"},
        {"[::ffff:10.0.0.1]:9", 0, NULL},
        {"10.0.0.1:0", -EINVAL, NULL},
        {"10.0.0.1:65536", -EINVAL, NULL},
        {"10.0.0.1:051820", -EINVAL, NULL},
        {"10.0.0.1:+5", -EINVAL, NULL},
        {"10.0.0.1:", -EINVAL, NULL},
        {"10.0.0.1", -EINVAL, NULL},
        {":51820", -EINVAL, NULL},
        {"gateway.example:51820", -EINVAL, NULL}, /* no name is resolved */
        {"2001:db8::1:51820", -EINVAL, NULL},     /* IPv6 needs brackets */
        {"[2001:db8::1]51820", -EINVAL, NULL},
        {"[]:1", -EINVAL, NULL},
        {"[fe80::1%eth0]:1", -EINVAL, NULL},
        {"010.0.0.1:5", -EINVAL, NULL},
        {"[0000:0000:0000:0000:0000:0000:0000:0000:0000]:51820", -EINVAL, NULL},
    };
    (void)state;
    for (size_t i = 0; i < N(cases); i++) {
        struct sockaddr_storage ss = {.ss_family = 99};
        char out[WG_ENDPOINT_MAX];
        int r = wg_endpoint_parse(cases[i].in, &ss);

        if (r != cases[i].want)
            fail_msg("case %zu '%s': %d, want %d", i, cases[i].in, r, cases[i].want);
        if (r < 0) {
            assert_int_equal(ss.ss_family, 99); /* untouched */
            continue;
        }
        assert_true(wg_endpoint_format(&ss, out, sizeof(out)) > 0);
        assert_string_equal(out, cases[i].canon ? cases[i].canon : cases[i].in);
        assert_int_equal(wg_endpoint_format(&ss, out, 5), -ENOSPC);
    }
    assert_int_equal(wg_endpoint_format(&(struct sockaddr_storage){0}, (char[8]){0}, 8), -EINVAL);
}

static struct wg_peer peer_of(const char *pub_b64, const char *endpoint, uint16_t keepalive,
                              const char *cidr1, const char *cidr2)
{
    struct wg_peer p;

    memset(&p, 0, sizeof(p));
    assert_int_equal(wg_key_parse(pub_b64, &p.pub), 0);
    if (endpoint)
        assert_int_equal(wg_endpoint_parse(endpoint, &p.endpoint), 0);
    p.keepalive_s = keepalive;
    if (cidr1)
        assert_int_equal(cidr_parse(cidr1, &p.allowed[p.nallowed++]), 0);
    if (cidr2)
        assert_int_equal(cidr_parse(cidr2, &p.allowed[p.nallowed++]), 0);
    return p;
}

static void test_set_lines(void **state)
{
    struct wg_device dev = {.has_private = true, .listen_port = 51820};
    struct wg_peer p = peer_of(ALICE_PUB_B64, "192.0.2.7:51820", 25, "10.70.0.0/16", "fd00::/64");
    struct sbuf b;
    char buf[256];

    (void)state;
    assert_int_equal(wg_key_parse(ALICE_PRIV_B64, &dev.priv), 0);
    assert_int_equal(wg_uapi_device_lines(&dev, true, buf, sizeof(buf)),
                     (int)strlen("private_key=") + 64 + 1 + 18 + 19);
    assert_string_equal(buf, "private_key=77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba5"
                             "1db92c2a\nlisten_port=51820\nreplace_peers=true\n");
    assert_int_equal(wg_uapi_device_lines(&dev, true, buf, 40), -ENOSPC);
    dev.has_private = false;
    dev.listen_port = 0;
    assert_int_equal(wg_uapi_device_lines(&dev, false, buf, sizeof(buf)), 14);
    assert_string_equal(buf, "listen_port=0\n");
    dev.has_private = true;
    memset(&dev.priv, 0, sizeof(dev.priv));
    assert_int_equal(wg_uapi_device_lines(&dev, false, buf, sizeof(buf)), -EINVAL);

    sbuf_init(&b, 4096);
    assert_int_equal(wg_uapi_peer_lines(&p, &b), 0);
    assert_string_equal(sbuf_str(&b), "public_key=" ALICE_PUB_HEX "\nendpoint=192.0.2.7:51820\n"
                                      "persistent_keepalive_interval=25\nreplace_allowed_ips=true\n"
                                      "allowed_ip=10.70.0.0/16\nallowed_ip=fd00::/64\n");
    sbuf_done(&b);
    /* No endpoint (the peer's is not known yet) and no allowed IP: the peer has none left. */
    p = peer_of(ALICE_PUB_B64, NULL, 0, NULL, NULL);
    sbuf_init(&b, 4096);
    assert_int_equal(wg_uapi_peer_lines(&p, &b), 0);
    assert_string_equal(sbuf_str(&b),
                        "public_key=" ALICE_PUB_HEX "\npersistent_keepalive_interval=0\n"
                        "replace_allowed_ips=true\n");
    assert_int_equal(wg_uapi_remove_lines(&p.pub, &b), 0);
    assert_non_null(strstr(sbuf_str(&b), "public_key=" ALICE_PUB_HEX "\nremove=true\n"));
    sbuf_done(&b);
    /* Refused: a zero key, too many allowed IPs, a buffer too small. */
    sbuf_init(&b, 4096);
    memset(&p.pub, 0, sizeof(p.pub));
    assert_int_equal(wg_uapi_peer_lines(&p, &b), -EINVAL);
    assert_int_equal(wg_uapi_remove_lines(&p.pub, &b), -EINVAL);
    p = peer_of(ALICE_PUB_B64, NULL, 0, NULL, NULL);
    p.nallowed = WG_MAX_ALLOWED + 1;
    assert_int_equal(wg_uapi_peer_lines(&p, &b), -EINVAL);
    sbuf_done(&b);
    p.nallowed = 0;
    sbuf_init(&b, 16);
    assert_true(wg_uapi_peer_lines(&p, &b) < 0);
    sbuf_done(&b);
}

static void test_set_result(void **state)
{
    static const struct {
        const char *in;
        int want;
    } cases[] = {
        {"errno=0\n\n", 0},        {"errno=22\n\n", -22},
        {"errno=4095\n\n", -4095}, {"errno=4096\n\n", -EPROTO},
        {"errno=0\n", -EPROTO},    {"errno=\n\n", -EPROTO},
        {"errno=01\n\n", -EPROTO}, {"errno=-1\n\n", -EPROTO},
        {"errno=0 \n\n", -EPROTO}, {"", -EPROTO},
        {"ok\n\n", -EPROTO},       {"errno=0\n\nerrno=0\n\n", -EPROTO},
    };
    (void)state;
    for (size_t i = 0; i < N(cases); i++) {
        int r = wg_uapi_set_result(cases[i].in, strlen(cases[i].in));

        if (r != cases[i].want)
            fail_msg("case %zu: %d, want %d", i, r, cases[i].want);
    }
}

#define PEER1 "public_key=" ALICE_PUB_HEX "\n"
#define PEER2 "public_key=0101010101010101010101010101010101010101010101010101010101010101\n"

static void test_get_full(void **state)
{
    const char *answer =
        "private_key=77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a\n"
        "listen_port=51820\nfwmark=0\n" PEER1 "preshared_key="
        "0000000000000000000000000000000000000000000000000000000000000000\n"
        "protocol_version=1\nendpoint=192.0.2.7:51820\nlast_handshake_time_sec=1700000000\n"
        "last_handshake_time_nsec=5\ntx_bytes=1234\nrx_bytes=5678\n"
        "persistent_keepalive_interval=25\nallowed_ip=10.70.0.0/16\nallowed_ip=fd00::/64\n"
        "some_future_key=whatever\n" PEER2 "allowed_ip=10.71.0.0/24\nerrno=0\n\n";
    struct wg_device d = {0};
    struct wg_key priv;
    char err[128] = "", text[CIDR_STR_MAX], ep[WG_ENDPOINT_MAX];

    (void)state;
    assert_int_equal(wg_uapi_get_parse(answer, strlen(answer), &d, err, sizeof(err)), 0);
    assert_true(d.has_private);
    assert_int_equal(wg_key_parse(ALICE_PRIV_B64, &priv), 0);
    assert_true(wg_key_equal(&d.priv, &priv));
    assert_int_equal(d.listen_port, 51820);
    assert_int_equal(d.npeers, 2);
    assert_int_equal(d.peers[0].last_handshake_s, 1700000000);
    assert_int_equal(d.peers[0].tx_bytes, 1234);
    assert_int_equal(d.peers[0].rx_bytes, 5678);
    assert_int_equal(d.peers[0].keepalive_s, 25);
    assert_int_equal(d.peers[0].nallowed, 2);
    assert_true(cidr_format(&d.peers[0].allowed[1], text, sizeof(text)) > 0);
    assert_string_equal(text, "fd00::/64");
    assert_true(wg_endpoint_format(&d.peers[0].endpoint, ep, sizeof(ep)) > 0);
    assert_string_equal(ep, "192.0.2.7:51820");
    assert_int_equal(d.peers[1].nallowed, 1);
    assert_int_equal(d.peers[1].endpoint.ss_family, AF_UNSPEC);
    assert_int_equal(d.peers[1].keepalive_s, 0);
    assert_int_equal(d.peers[1].last_handshake_s, 0);
    wg_device_clear(&d);
    assert_int_equal(d.npeers, 0);
    assert_null(d.peers);
}

/* An answer of wireguard-go 0.0.20220316 (Debian bookworm), as it sent it (the private key replaced
 * by RFC 7748's). */
static void test_get_wireguard_go(void **state)
{
    const char *answer =
        "private_key=77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a\n"
        "listen_port=51820\n"
        "public_key=6f3765250411f6c21c9c102f39d7c5f66b0884d2ba7e86b905c5e5c07e2b8656\n"
        "preshared_key=0000000000000000000000000000000000000000000000000000000000000000\n"
        "protocol_version=1\nendpoint=192.168.77.2:51820\nlast_handshake_time_sec=0\n"
        "last_handshake_time_nsec=0\ntx_bytes=148\nrx_bytes=0\npersistent_keepalive_interval=2\n"
        "allowed_ip=10.70.0.0/16\nallowed_ip=fd00::/64\nerrno=0\n\n";
    struct wg_device d = {0};
    char err[128] = "";

    (void)state;
    assert_int_equal(wg_uapi_get_parse(answer, strlen(answer), &d, err, sizeof(err)), 0);
    assert_int_equal(d.npeers, 1);
    assert_int_equal(d.peers[0].tx_bytes, 148);
    assert_int_equal(d.peers[0].keepalive_s, 2);
    assert_int_equal(d.peers[0].nallowed, 2);
    assert_int_equal(d.peers[0].last_handshake_s, 0);
    wg_device_clear(&d);
}

static void test_get_refused(void **state)
{
    static const struct {
        const char *in;
        int want;
        const char *says;
    } cases[] = {
        {"errno=0\n\n", 0, ""},
        {"listen_port=1\nerrno=0\n\n", 0, ""},
        {"errno=19\n\n", -19, "errno=19"},
        {"listen_port=1\nerrno=0\n", -EPROTO, "without an empty line"},
        {"listen_port=1\n\n", -EPROTO, "no errno line"},
        {"errno=0\n\nx", -EPROTO, "after the empty line"},
        {"errno=0\nlisten_port=1\n\n", -EPROTO, "after the errno line"},
        {"listen_port\nerrno=0\n\n", -EPROTO, "line 1 is not key=value"},
        {"=1\nerrno=0\n\n", -EPROTO, "not key=value"},
        {"listen_port=65536\nerrno=0\n\n", -EPROTO, "bad listen_port"},
        {"private_key=12\nerrno=0\n\n", -EPROTO, "private_key"},
        {PEER1 "listen_port=1\nerrno=0\n\n", -EPROTO, "after a peer"},
        {"public_key=" ALICE_PUB_B64 "\nerrno=0\n\n", -EPROTO, "public_key"},
        {"public_key=8520F0098930A754748B7DDCB43EF75A0DBF3A0D26381AF4EBA4A98EAA9B4E6A\nerrno=0\n\n",
         -EPROTO, "public_key"},
        {PEER1 "endpoint=host:1\nerrno=0\n\n", -EPROTO, "bad endpoint"},
        {PEER1 "allowed_ip=10.0.0.1/8\nerrno=0\n\n", -EPROTO, "bad allowed_ip"},
        {PEER1 "rx_bytes=-1\nerrno=0\n\n", -EPROTO, "bad rx_bytes"},
        {PEER1 "tx_bytes=18446744073709551616\nerrno=0\n\n", -EPROTO, "bad tx_bytes"},
        {PEER1 "last_handshake_time_sec=9223372036854775808\nerrno=0\n\n", -EPROTO, "last_hand"},
        {PEER1 "persistent_keepalive_interval=70000\nerrno=0\n\n", -EPROTO, "keepalive"},
        {"errno=x\n\n", -EPROTO, "bad errno"},
    };
    (void)state;
    for (size_t i = 0; i < N(cases); i++) {
        struct wg_device d = {.npeers = 7};
        char err[160] = "";
        int r = wg_uapi_get_parse(cases[i].in, strlen(cases[i].in), &d, err, sizeof(err));

        if (r != cases[i].want || !strstr(err, cases[i].says))
            fail_msg("case %zu: %d '%s', want %d '%s'", i, r, err, cases[i].want, cases[i].says);
        if (r < 0) {
            assert_int_equal(d.npeers, 0);
            assert_null(d.peers);
            assert_false(d.has_private);
        }
        wg_device_clear(&d);
    }
}

/* The bounds: a line of WG_UAPI_LINE_MAX bytes, one allowed IP too many, one peer too many, a NUL.
 */
static void test_get_bounds(void **state)
{
    struct sbuf b;
    struct wg_device d = {0};
    char err[160];
    char nul[] = "listen_port=1\0\nerrno=0\n\n";

    (void)state;
    sbuf_init(&b, WG_UAPI_MAX + 1);
    assert_int_equal(sbuf_adds(&b, "x="), 0);
    for (int i = 0; i < WG_UAPI_LINE_MAX; i++)
        assert_int_equal(sbuf_adds(&b, "a"), 0);
    assert_int_equal(sbuf_adds(&b, "\nerrno=0\n\n"), 0);
    assert_int_equal(wg_uapi_get_parse(sbuf_str(&b), sbuf_len(&b), &d, err, sizeof(err)), -E2BIG);
    sbuf_done(&b);

    sbuf_init(&b, 65536);
    assert_int_equal(sbuf_adds(&b, PEER1), 0);
    for (int i = 0; i <= WG_MAX_ALLOWED; i++)
        assert_int_equal(sbuf_printf(&b, "allowed_ip=10.%d.0.0/16\n", i), 0);
    assert_int_equal(sbuf_adds(&b, "errno=0\n\n"), 0);
    assert_int_equal(wg_uapi_get_parse(sbuf_str(&b), sbuf_len(&b), &d, err, sizeof(err)), -E2BIG);
    assert_non_null(strstr(err, "allowed IPs"));
    sbuf_done(&b);

    sbuf_init(&b, WG_UAPI_MAX);
    for (int i = 0; i <= WG_MAX_PEERS; i++)
        assert_int_equal(sbuf_printf(&b, "public_key=%064x\n", i + 1), 0);
    assert_int_equal(sbuf_adds(&b, "errno=0\n\n"), 0);
    assert_int_equal(wg_uapi_get_parse(sbuf_str(&b), sbuf_len(&b), &d, err, sizeof(err)), -E2BIG);
    assert_non_null(strstr(err, "peers"));
    assert_null(d.peers);
    sbuf_done(&b);

    assert_int_equal(wg_uapi_get_parse(nul, sizeof(nul) - 1, &d, err, sizeof(err)), -EPROTO);
    assert_int_equal(wg_uapi_get_parse("errno=0\n\n", WG_UAPI_MAX + 1, &d, NULL, 0), -E2BIG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_text),         cmocka_unit_test(test_key_x25519),
        cmocka_unit_test(test_endpoints),        cmocka_unit_test(test_set_lines),
        cmocka_unit_test(test_set_result),       cmocka_unit_test(test_get_full),
        cmocka_unit_test(test_get_wireguard_go), cmocka_unit_test(test_get_refused),
        cmocka_unit_test(test_get_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
