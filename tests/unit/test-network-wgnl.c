/* Unit tests of src/network/wgnl.c: the generic netlink messages of the kernel's WireGuard and the
 * wireguard link's rtnetlink messages, byte by byte (headers, attribute types, lengths, nesting
 * flags, alignment and zeroed padding, the endpoints' sockaddrs), a device of many peers split
 * over messages, answers built here the way the kernel writes them read back (a peer continued
 * in the next message, the statistics), and a table of malformed answers, each refused without
 * leaving anything behind. The kernel of the CI machines has no WireGuard: these are the checks
 * of the kernel path; the last test only checks that the family does not resolve there, or that it
 * does and the id is plausible. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/wireguard.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "network/wgnl.h"

#define N(a)   (sizeof(a) / sizeof((a)[0]))
#define FAMILY 0x1b /* a family id as the controller could give it */

/* RFC 7748, section 6.1: Alice's private key and Bob's public key. */
#define ALICE_PRIV_B64 "dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo="
#define BOB_PUB_B64    "3p7bfXt9wbTTW2HC7OQ1Nz+DQ8hbeGdNrfx+FG+IK08="
#define ALICE_PUB_B64  "hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo="

/* ---- reading what was built -------------------------------------------------------------- */

/* An attribute as the test reads it back. */
struct at {
    uint16_t type; /* with its flags */
    const uint8_t *data;
    size_t len;
};

/* The attributes of [p, p+n) into out[0..max): checks each one's alignment (its offset from the
 * message start, base), that it stays within the run, and that its padding is zero. Returns how
 * many. */
static size_t attrs_of(const uint8_t *base, const uint8_t *p, size_t n, struct at *out, size_t max)
{
    size_t count = 0, off = 0;

    while (off < n) {
        struct nlattr a;

        assert_true(n - off >= NLA_HDRLEN);
        assert_int_equal((size_t)(p + off - base) % NLA_ALIGNTO, 0);
        memcpy(&a, p + off, sizeof(a));
        assert_true(a.nla_len >= NLA_HDRLEN && (size_t)a.nla_len <= n - off);
        for (size_t i = (size_t)a.nla_len; i < (size_t)NLA_ALIGN(a.nla_len) && off + i < n; i++)
            assert_int_equal(p[off + i], 0);
        assert_true(count < max);
        out[count].type = a.nla_type;
        out[count].data = p + off + NLA_HDRLEN;
        out[count].len = a.nla_len - NLA_HDRLEN;
        count++;
        off += NLA_ALIGN(a.nla_len);
    }
    assert_int_equal(off, n);
    return count;
}

static const struct at *find(const struct at *a, size_t n, uint16_t type)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].type == type)
            return &a[i];
    return NULL;
}

static uint32_t u32_of(const struct at *a)
{
    uint32_t v;

    assert_non_null(a);
    assert_int_equal(a->len, 4);
    memcpy(&v, a->data, 4);
    return v;
}

static uint16_t u16_of(const struct at *a)
{
    uint16_t v;

    assert_non_null(a);
    assert_int_equal(a->len, 2);
    memcpy(&v, a->data, 2);
    return v;
}

/* The header of a built message: its length, type, flags, sequence, and the attributes after a
 * fixed header of hdrlen bytes. */
static size_t msg_of(const uint8_t *buf, int len, uint16_t type, uint16_t flags, uint32_t seq,
                     size_t hdrlen, struct at *out, size_t max)
{
    struct nlmsghdr h;

    assert_true(len > 0);
    assert_int_equal(len % NLMSG_ALIGNTO, 0);
    memcpy(&h, buf, sizeof(h));
    assert_int_equal(h.nlmsg_len, (uint32_t)len);
    assert_int_equal(h.nlmsg_type, type);
    assert_int_equal(h.nlmsg_flags, flags);
    assert_int_equal(h.nlmsg_seq, seq);
    assert_int_equal(h.nlmsg_pid, 0);
    return attrs_of(buf, buf + NLMSG_HDRLEN + NLMSG_ALIGN(hdrlen),
                    (size_t)len - NLMSG_HDRLEN - NLMSG_ALIGN(hdrlen), out, max);
}

static struct wg_key key_of(const char *b64)
{
    struct wg_key k;

    assert_int_equal(wg_key_parse(b64, &k), 0);
    return k;
}

static struct cidr cidr_of(const char *s)
{
    struct cidr c;

    assert_int_equal(cidr_parse(s, &c), 0);
    return c;
}

/* ---- the requests ------------------------------------------------------------------------ */

static void test_family_request(void **state)
{
    static const uint8_t want[] = {
        36,
        0,
        0,
        0, /* nlmsg_len */
        GENL_ID_CTRL,
        0, /* nlmsg_type */
        NLM_F_REQUEST,
        0, /* nlmsg_flags */
        7,
        0,
        0,
        0, /* nlmsg_seq */
        0,
        0,
        0,
        0, /* nlmsg_pid */
        CTRL_CMD_GETFAMILY,
        1,
        0,
        0, /* genlmsghdr */
        14,
        0,
        CTRL_ATTR_FAMILY_NAME,
        0, /* "wireguard" and its NUL, padded to 12 */
        'w',
        'i',
        'r',
        'e',
        'g',
        'u',
        'a',
        'r',
        'd',
        0,
        0,
        0,
    };
    uint8_t buf[WGNL_MSG_MAX];

    (void)state;
    assert_int_equal(wgnl_msg_family(7, buf, sizeof(buf)), sizeof(want));
    assert_memory_equal(buf, want, sizeof(want));
    assert_int_equal(wgnl_msg_family(7, buf, sizeof(want) - 1), -ENOSPC);
    assert_int_equal(wgnl_msg_family(7, buf, 8), -ENOSPC);
}

static void test_get_request(void **state)
{
    uint8_t buf[WGNL_MSG_MAX];
    struct at a[4];
    struct genlmsghdr g;
    int len = wgnl_msg_get(FAMILY, 9, "cliqo0", buf, sizeof(buf));

    (void)state;
    assert_int_equal(len, 16 + 4 + 4 + 8);
    assert_int_equal(msg_of(buf, len, FAMILY, NLM_F_REQUEST | NLM_F_DUMP, 9, GENL_HDRLEN, a, 4), 1);
    memcpy(&g, buf + NLMSG_HDRLEN, sizeof(g));
    assert_int_equal(g.cmd, WG_CMD_GET_DEVICE);
    assert_int_equal(g.version, WG_GENL_VERSION);
    assert_int_equal(a[0].type, WGDEVICE_A_IFNAME);
    assert_int_equal(a[0].len, 7);
    assert_string_equal((const char *)a[0].data, "cliqo0");
    assert_int_equal(wgnl_msg_get(FAMILY, 9, "", buf, sizeof(buf)), -EINVAL);
    assert_int_equal(wgnl_msg_get(FAMILY, 9, NULL, buf, sizeof(buf)), -EINVAL);
    assert_int_equal(wgnl_msg_get(FAMILY, 9, "sixteen-chars-xx", buf, sizeof(buf)), -EINVAL);
    assert_int_equal(wgnl_msg_get(FAMILY, 9, "fifteen-chars-x", buf, sizeof(buf)), 40);
    assert_int_equal(wgnl_msg_get(FAMILY, 9, "cliqo0", buf, 31), -ENOSPC);
}

static void test_link_requests(void **state)
{
    uint8_t buf[WGNL_MSG_MAX];
    struct at a[4], k[2];
    struct ifinfomsg ifi;
    int len = wgnl_msg_newlink("wg-x", 3, buf, sizeof(buf));

    (void)state;
    assert_int_equal(msg_of(buf, len, RTM_NEWLINK,
                            NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, 3,
                            sizeof(struct ifinfomsg), a, 4),
                     2);
    memcpy(&ifi, buf + NLMSG_HDRLEN, sizeof(ifi));
    assert_int_equal(ifi.ifi_family, AF_UNSPEC);
    assert_int_equal(ifi.ifi_index, 0);
    assert_int_equal(a[0].type, IFLA_IFNAME);
    assert_string_equal((const char *)a[0].data, "wg-x");
    assert_int_equal(a[1].type, IFLA_LINKINFO | NLA_F_NESTED);
    assert_int_equal(attrs_of(buf, a[1].data, a[1].len, k, 2), 1);
    assert_int_equal(k[0].type, IFLA_INFO_KIND);
    assert_int_equal(k[0].len, 10);
    assert_string_equal((const char *)k[0].data, "wireguard");
    assert_int_equal(len, 16 + 16 + 12 + 4 + 16);

    len = wgnl_msg_dellink("wg-x", 4, buf, sizeof(buf));
    assert_int_equal(
        msg_of(buf, len, RTM_DELLINK, NLM_F_REQUEST | NLM_F_ACK, 4, sizeof(struct ifinfomsg), a, 4),
        1);
    assert_int_equal(a[0].type, IFLA_IFNAME);
    assert_int_equal(wgnl_msg_newlink("", 1, buf, sizeof(buf)), -EINVAL);
    assert_int_equal(wgnl_msg_dellink("0123456789abcdef", 1, buf, sizeof(buf)), -EINVAL);
    assert_int_equal(wgnl_msg_newlink("wg-x", 1, buf, 40), -ENOSPC);
}

/* The three peers of the set tests: one with an IPv4 endpoint and two allowed IPs, one with an
 * IPv6 endpoint, keepalive off and no allowed IP, and one removed. */
static void three_ops(struct wgnl_peer_op ops[3])
{
    memset(ops, 0, 3 * sizeof(ops[0]));
    ops[0].peer.pub = key_of(BOB_PUB_B64);
    assert_int_equal(wg_endpoint_parse("192.0.2.1:51820", &ops[0].peer.endpoint), 0);
    ops[0].peer.keepalive_s = 25;
    ops[0].peer.allowed[0] = cidr_of("10.71.0.0/16");
    ops[0].peer.allowed[1] = cidr_of("fd00:1::/64");
    ops[0].peer.nallowed = 2;
    ops[1].peer.pub = key_of(ALICE_PUB_B64);
    assert_int_equal(wg_endpoint_parse("[2001:db8::7]:443", &ops[1].peer.endpoint), 0);
    ops[2].peer.pub = key_of("AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=");
    ops[2].remove = true;
}

static void test_set_bytes(void **state)
{
    uint8_t buf[WGNL_SET_MAX];
    struct wg_device dev = {.has_private = true, .listen_port = 51820};
    struct wgnl_peer_op ops[3];
    struct wgnl_set s = {
        .ifname = "cliqo0", .set_device = true, .replace_peers = true, .ops = ops, .nops = 3};
    struct at a[8], p[3], x[8], ips[4], ip[4];
    struct genlmsghdr g;
    size_t next = 0, n;
    int len;

    (void)state;
    dev.priv = key_of(ALICE_PRIV_B64);
    s.has_private = dev.has_private;
    s.priv = dev.priv;
    s.listen_port = dev.listen_port;
    three_ops(ops);
    len = wgnl_msg_set(FAMILY, 11, &s, &next, buf, sizeof(buf));
    assert_int_equal(next, 3);
    n = msg_of(buf, len, FAMILY, NLM_F_REQUEST | NLM_F_ACK, 11, GENL_HDRLEN, a, 8);
    memcpy(&g, buf + NLMSG_HDRLEN, sizeof(g));
    assert_int_equal(g.cmd, WG_CMD_SET_DEVICE);
    assert_int_equal(g.version, WG_GENL_VERSION);
    /* the device: in this order, each with its exact length */
    assert_int_equal(n, 5);
    assert_int_equal(a[0].type, WGDEVICE_A_IFNAME);
    assert_string_equal((const char *)a[0].data, "cliqo0");
    assert_int_equal(a[1].type, WGDEVICE_A_PRIVATE_KEY);
    assert_int_equal(a[1].len, WG_KEY_LEN);
    assert_memory_equal(a[1].data, dev.priv.b, WG_KEY_LEN);
    assert_int_equal(a[2].type, WGDEVICE_A_LISTEN_PORT);
    assert_int_equal(u16_of(&a[2]), 51820); /* host order, as the kernel wants it */
    assert_int_equal(a[3].type, WGDEVICE_A_FLAGS);
    assert_int_equal(u32_of(&a[3]), WGDEVICE_F_REPLACE_PEERS);
    assert_int_equal(a[4].type, WGDEVICE_A_PEERS | NLA_F_NESTED);
    assert_int_equal(attrs_of(buf, a[4].data, a[4].len, p, 3), 3);

    /* peer 0: IPv4 endpoint, keepalive, replace-allowed-IPs, two allowed IPs */
    assert_int_equal(p[0].type, 0 | NLA_F_NESTED);
    n = attrs_of(buf, p[0].data, p[0].len, x, 8);
    assert_int_equal(n, 5);
    assert_int_equal(x[0].type, WGPEER_A_PUBLIC_KEY);
    assert_int_equal(x[0].len, WG_KEY_LEN);
    assert_memory_equal(x[0].data, ops[0].peer.pub.b, WG_KEY_LEN);
    assert_int_equal(u32_of(find(x, n, WGPEER_A_FLAGS)), WGPEER_F_REPLACE_ALLOWEDIPS);
    {
        const struct at *e = find(x, n, WGPEER_A_ENDPOINT);
        static const uint8_t want[16] = {AF_INET, 0, 0xca, 0x6c, 192, 0, 2, 1};

        assert_non_null(e);
        assert_int_equal(e->len, sizeof(struct sockaddr_in));
        assert_memory_equal(e->data, want, sizeof(want)); /* family, port 51820 big-endian, zeros */
    }
    assert_int_equal(u16_of(find(x, n, WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL)), 25);
    assert_non_null(find(x, n, WGPEER_A_ALLOWEDIPS | NLA_F_NESTED));
    assert_int_equal(attrs_of(buf, find(x, n, WGPEER_A_ALLOWEDIPS | NLA_F_NESTED)->data,
                              find(x, n, WGPEER_A_ALLOWEDIPS | NLA_F_NESTED)->len, ips, 4),
                     2);
    assert_int_equal(ips[0].type, 0 | NLA_F_NESTED);
    assert_int_equal(attrs_of(buf, ips[0].data, ips[0].len, ip, 4), 3);
    assert_int_equal(ip[0].type, WGALLOWEDIP_A_FAMILY);
    assert_int_equal(u16_of(&ip[0]), AF_INET);
    assert_int_equal(ip[1].type, WGALLOWEDIP_A_IPADDR);
    assert_int_equal(ip[1].len, 4);
    assert_memory_equal(ip[1].data, ((uint8_t[]){10, 71, 0, 0}), 4);
    assert_int_equal(ip[2].type, WGALLOWEDIP_A_CIDR_MASK);
    assert_int_equal(ip[2].len, 1);
    assert_int_equal(ip[2].data[0], 16);
    assert_int_equal(attrs_of(buf, ips[1].data, ips[1].len, ip, 4), 3);
    assert_int_equal(u16_of(&ip[0]), AF_INET6);
    assert_int_equal(ip[1].len, 16);
    assert_memory_equal(ip[1].data, ((uint8_t[]){0xfd, 0, 0, 1}), 4);
    assert_int_equal(ip[2].data[0], 64);

    /* peer 1: IPv6 endpoint (sockaddr_in6, flow info and scope 0), keepalive 0, empty nest */
    n = attrs_of(buf, p[1].data, p[1].len, x, 8);
    {
        const struct at *e = find(x, n, WGPEER_A_ENDPOINT);
        struct sockaddr_in6 in6;
        uint8_t addr[16] = {0x20, 0x01, 0x0d, 0xb8};

        addr[15] = 7;
        assert_non_null(e);
        assert_int_equal(e->len, sizeof(struct sockaddr_in6));
        memcpy(&in6, e->data, sizeof(in6));
        assert_int_equal(in6.sin6_family, AF_INET6);
        assert_int_equal(ntohs(in6.sin6_port), 443);
        assert_int_equal(in6.sin6_flowinfo, 0);
        assert_int_equal(in6.sin6_scope_id, 0);
        assert_memory_equal(&in6.sin6_addr, addr, 16);
    }
    assert_int_equal(u16_of(find(x, n, WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL)), 0);
    assert_int_equal(find(x, n, WGPEER_A_ALLOWEDIPS | NLA_F_NESTED)->len, 0);

    /* peer 2: its key and the remove flag, nothing else */
    n = attrs_of(buf, p[2].data, p[2].len, x, 8);
    assert_int_equal(n, 2);
    assert_int_equal(x[0].type, WGPEER_A_PUBLIC_KEY);
    assert_int_equal(x[1].type, WGPEER_A_FLAGS);
    assert_int_equal(u32_of(&x[1]), WGPEER_F_REMOVE_ME);

    /* without the device's attributes and replace-peers, and without a private key */
    s.set_device = false;
    next = 0;
    len = wgnl_msg_set(FAMILY, 12, &s, &next, buf, sizeof(buf));
    n = msg_of(buf, len, FAMILY, NLM_F_REQUEST | NLM_F_ACK, 12, GENL_HDRLEN, a, 8);
    assert_int_equal(n, 2);
    assert_int_equal(a[1].type, WGDEVICE_A_PEERS | NLA_F_NESTED);
    s.set_device = true;
    s.replace_peers = false;
    dev.has_private = false;
    s.has_private = false;
    s.nops = 0;
    next = 0;
    len = wgnl_msg_set(FAMILY, 13, &s, &next, buf, sizeof(buf));
    n = msg_of(buf, len, FAMILY, NLM_F_REQUEST | NLM_F_ACK, 13, GENL_HDRLEN, a, 8);
    assert_int_equal(n, 2); /* ifname, listen port; no peers nest */
    assert_int_equal(a[1].type, WGDEVICE_A_LISTEN_PORT);
    assert_int_equal(next, 0);
    wg_key_wipe(&dev.priv);
    wg_key_wipe(&s.priv);
}

static void test_set_refused(void **state)
{
    uint8_t buf[WGNL_SET_MAX];
    struct wgnl_peer_op ops[3];
    struct wgnl_set s = {
        .ifname = "cliqo0", .has_private = true, .ops = ops, .nops = 3}; /* zero key */
    size_t next = 0;

    (void)state;
    three_ops(ops);
    s.set_device = true;
    assert_int_equal(wgnl_msg_set(FAMILY, 1, &s, &next, buf, sizeof(buf)), -EINVAL);
    s.set_device = false;
    s.ifname = "";
    assert_int_equal(wgnl_msg_set(FAMILY, 1, &s, &next, buf, sizeof(buf)), -EINVAL);
    s.ifname = "cliqo0";
    ops[0].peer.nallowed = WG_MAX_ALLOWED + 1;
    assert_int_equal(wgnl_msg_set(FAMILY, 1, &s, &next, buf, sizeof(buf)), -EINVAL);
    three_ops(ops);
    ops[1].peer.allowed[0] = cidr_of("10.0.0.0/8");
    ops[1].peer.allowed[0].addr[3] = 1; /* host bits */
    ops[1].peer.nallowed = 1;
    assert_int_equal(wgnl_msg_set(FAMILY, 1, &s, &next, buf, sizeof(buf)), -EINVAL);
    three_ops(ops);
    ops[1].peer.endpoint.ss_family = AF_UNIX;
    assert_int_equal(wgnl_msg_set(FAMILY, 1, &s, &next, buf, sizeof(buf)), -EINVAL);
    three_ops(ops);
    memset(&ops[2].peer.pub, 0, sizeof(ops[2].peer.pub));
    assert_int_equal(wgnl_msg_set(FAMILY, 1, &s, &next, buf, sizeof(buf)), -EINVAL);
    three_ops(ops);
    /* too small for the first peer: -ENOSPC, nothing consumed */
    assert_int_equal(wgnl_msg_set(FAMILY, 1, &s, &next, buf, 60), -ENOSPC);
    assert_int_equal(next, 0);
    assert_int_equal(wgnl_msg_set(FAMILY, 1, &s, &next, buf, 8), -ENOSPC);
    next = 4;
    assert_int_equal(wgnl_msg_set(FAMILY, 1, &s, &next, buf, sizeof(buf)), -EINVAL);
}

/* A device of 300 peers of WG_MAX_ALLOWED allowed IPs each: messages of at most WGNL_SET_MAX bytes
 * (even from a larger buffer), the device's attributes in the first only, every peer once and in
 * order, and a peer of the largest kind fits in WGNL_SET_MIN. */
static void test_set_split(void **state)
{
    enum { NPEERS = 300 };
    uint8_t *buf = malloc(4 * WGNL_SET_MAX);
    struct wg_device dev = {.has_private = true, .listen_port = 7};
    struct wgnl_peer_op *ops = calloc(NPEERS, sizeof(*ops));
    struct wgnl_set s = {
        .ifname = "cliqo0", .set_device = true, .replace_peers = true, .ops = ops, .nops = NPEERS};
    size_t next = 0, seen = 0, msgs = 0;

    (void)state;
    assert_non_null(buf);
    assert_non_null(ops);
    dev.priv = key_of(ALICE_PRIV_B64);
    s.has_private = dev.has_private;
    s.priv = dev.priv;
    s.listen_port = dev.listen_port;
    for (size_t i = 0; i < NPEERS; i++) {
        memset(ops[i].peer.pub.b, 0xa5, WG_KEY_LEN);
        ops[i].peer.pub.b[0] = (uint8_t)i;
        ops[i].peer.pub.b[1] = (uint8_t)(i >> 8);
        assert_int_equal(wg_endpoint_parse("[2001:db8::1]:51820", &ops[i].peer.endpoint), 0);
        ops[i].peer.keepalive_s = 25;
        for (size_t j = 0; j < WG_MAX_ALLOWED; j++) {
            ops[i].peer.allowed[j] = cidr_of("fd00::/64");
            ops[i].peer.allowed[j].addr[2] = (uint8_t)j;
        }
        ops[i].peer.nallowed = WG_MAX_ALLOWED;
    }
    while (next < NPEERS) {
        struct at a[8], p[64];
        size_t before = next, n, np;
        int len = wgnl_msg_set(FAMILY, (uint32_t)(100 + msgs), &s, &next, buf, 4 * WGNL_SET_MAX);

        assert_true(len > 0 && len <= WGNL_SET_MAX);
        assert_true(next > before);
        n = msg_of(buf, len, FAMILY, NLM_F_REQUEST | NLM_F_ACK, (uint32_t)(100 + msgs), GENL_HDRLEN,
                   a, 8);
        assert_int_equal(find(a, n, WGDEVICE_A_PRIVATE_KEY) != NULL, msgs == 0);
        assert_int_equal(find(a, n, WGDEVICE_A_FLAGS) != NULL, msgs == 0);
        assert_int_equal(find(a, n, WGDEVICE_A_LISTEN_PORT) != NULL, msgs == 0);
        assert_non_null(find(a, n, WGDEVICE_A_IFNAME));
        np = attrs_of(buf, find(a, n, WGDEVICE_A_PEERS | NLA_F_NESTED)->data,
                      find(a, n, WGDEVICE_A_PEERS | NLA_F_NESTED)->len, p, 64);
        assert_int_equal(np, next - before);
        for (size_t i = 0; i < np; i++) {
            struct at x[8];
            size_t nx = attrs_of(buf, p[i].data, p[i].len, x, 8);

            assert_memory_equal(find(x, nx, WGPEER_A_PUBLIC_KEY)->data, ops[seen].peer.pub.b,
                                WG_KEY_LEN);
            seen++;
        }
        /* a message is not closed while the next peer would still have fitted */
        if (next < NPEERS)
            assert_true((size_t)len + 600 > WGNL_SET_MAX);
        msgs++;
    }
    assert_int_equal(seen, NPEERS);
    assert_true(msgs > 10);
    {
        size_t one = 0;
        struct wgnl_set s1 = s;

        s1.nops = 1;
        assert_true(wgnl_msg_set(FAMILY, 1, &s1, &one, buf, WGNL_SET_MIN) > 0);
        assert_int_equal(one, 1);
    }
    wg_key_wipe(&dev.priv);
    wg_key_wipe(&s.priv);
    free(ops);
    free(buf);
}

/* ---- answers, built as the kernel writes them -------------------------------------------- */

struct ans {
    uint8_t buf[16384];
    size_t len, msg;
};

static void a_msg(struct ans *b, uint16_t type, uint32_t seq, uint8_t cmd)
{
    struct nlmsghdr h = {.nlmsg_type = type, .nlmsg_flags = NLM_F_MULTI, .nlmsg_seq = seq};
    struct genlmsghdr g = {.cmd = cmd, .version = 1};

    b->msg = b->len;
    memcpy(b->buf + b->len, &h, sizeof(h));
    memcpy(b->buf + b->len + NLMSG_HDRLEN, &g, sizeof(g));
    b->len += NLMSG_HDRLEN + GENL_HDRLEN;
}

static void a_end(struct ans *b)
{
    uint32_t n = (uint32_t)(b->len - b->msg);

    memcpy(b->buf + b->msg, &n, 4);
}

static size_t a_attr(struct ans *b, uint16_t type, const void *data, size_t n)
{
    size_t at = b->len;
    struct nlattr a = {.nla_len = (uint16_t)(NLA_HDRLEN + n), .nla_type = type};

    assert_true(b->len + NLA_HDRLEN + NLA_ALIGN(n) <= sizeof(b->buf));
    memcpy(b->buf + b->len, &a, sizeof(a));
    if (n)
        memcpy(b->buf + b->len + NLA_HDRLEN, data, n);
    memset(b->buf + b->len + NLA_HDRLEN + n, 0, NLA_ALIGN(n) - n);
    b->len += NLA_HDRLEN + NLA_ALIGN(n);
    return at;
}

static size_t a_nest(struct ans *b, uint16_t type)
{
    return a_attr(b, (uint16_t)(type | NLA_F_NESTED), NULL, 0);
}

static void a_nest_end(struct ans *b, size_t at)
{
    uint16_t n = (uint16_t)(b->len - at);

    memcpy(b->buf + at, &n, 2);
}

static void a_done(struct ans *b, uint32_t seq, int32_t err)
{
    struct nlmsghdr h = {.nlmsg_len = NLMSG_LENGTH(4),
                         .nlmsg_type = NLMSG_DONE,
                         .nlmsg_flags = NLM_F_MULTI,
                         .nlmsg_seq = seq};

    memcpy(b->buf + b->len, &h, sizeof(h));
    memcpy(b->buf + b->len + NLMSG_HDRLEN, &err, 4);
    b->len += NLMSG_LENGTH(4);
}

static void a_allowed(struct ans *b, int family, const void *addr, uint8_t mask)
{
    size_t ip = a_nest(b, 0);
    uint16_t fam = (uint16_t)(family == 4 ? AF_INET : AF_INET6);

    a_attr(b, WGALLOWEDIP_A_FAMILY, &fam, 2);
    a_attr(b, WGALLOWEDIP_A_IPADDR, addr, family == 4 ? 4 : 16);
    a_attr(b, WGALLOWEDIP_A_CIDR_MASK, &mask, 1);
    a_nest_end(b, ip);
}

static void a_device(struct ans *b, const struct wg_key *priv, uint16_t port)
{
    uint32_t ifindex = 5, fwmark = 0;

    a_attr(b, WGDEVICE_A_IFINDEX, &ifindex, 4);
    a_attr(b, WGDEVICE_A_IFNAME, "cliqo0", 7);
    a_attr(b, WGDEVICE_A_PRIVATE_KEY, priv->b, WG_KEY_LEN);
    a_attr(b, WGDEVICE_A_PUBLIC_KEY, priv->b, WG_KEY_LEN); /* any 32 bytes */
    a_attr(b, WGDEVICE_A_LISTEN_PORT, &port, 2);
    a_attr(b, WGDEVICE_A_FWMARK, &fwmark, 4);
}

/* The kernel's answer for a device with two peers, the first one's allowed IPs continued in a
 * second message (as the kernel splits a peer that does not fit), then NLMSG_DONE. */
static void full_answer(struct ans *b, uint32_t seq, struct wg_key *priv)
{
    struct wg_key bob = key_of(BOB_PUB_B64), alice = key_of(ALICE_PUB_B64);
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons(51820)};
    struct sockaddr_in6 in6 = {.sin6_family = AF_INET6, .sin6_port = htons(443)};
    int64_t hs[2] = {1700000000, 5};
    uint64_t rx = 1234567, tx = 89;
    uint16_t ka = 25;
    uint32_t ver = 1;
    size_t peers, peer, ips;

    *priv = key_of(ALICE_PRIV_B64);
    inet_pton(AF_INET, "192.0.2.1", &in.sin_addr);
    inet_pton(AF_INET6, "2001:db8::7", &in6.sin6_addr);
    memset(b, 0, sizeof(*b));
    a_msg(b, FAMILY, seq, WG_CMD_GET_DEVICE);
    a_device(b, priv, 51820);
    peers = a_nest(b, WGDEVICE_A_PEERS);
    peer = a_nest(b, 0);
    a_attr(b, WGPEER_A_PUBLIC_KEY, bob.b, WG_KEY_LEN);
    a_attr(b, WGPEER_A_PRESHARED_KEY, (uint8_t[WG_KEY_LEN]){0}, WG_KEY_LEN);
    a_attr(b, WGPEER_A_LAST_HANDSHAKE_TIME, hs, sizeof(hs));
    a_attr(b, WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL, &ka, 2);
    a_attr(b, WGPEER_A_TX_BYTES, &tx, 8);
    a_attr(b, WGPEER_A_RX_BYTES, &rx, 8);
    a_attr(b, WGPEER_A_PROTOCOL_VERSION, &ver, 4);
    a_attr(b, WGPEER_A_ENDPOINT, &in, sizeof(in));
    ips = a_nest(b, WGPEER_A_ALLOWEDIPS);
    a_allowed(b, 4, (uint8_t[]){10, 71, 0, 0}, 16);
    a_nest_end(b, ips);
    a_nest_end(b, peer);
    a_nest_end(b, peers);
    a_end(b);
    /* the next message: the same peer, its other allowed IP, then the second peer */
    a_msg(b, FAMILY, seq, WG_CMD_GET_DEVICE);
    a_device(b, priv, 51820);
    peers = a_nest(b, WGDEVICE_A_PEERS);
    peer = a_nest(b, 0);
    a_attr(b, WGPEER_A_PUBLIC_KEY, bob.b, WG_KEY_LEN);
    ips = a_nest(b, WGPEER_A_ALLOWEDIPS);
    a_allowed(b, 6, (uint8_t[16]){0xfd, 0, 0, 1}, 64);
    a_nest_end(b, ips);
    a_nest_end(b, peer);
    peer = a_nest(b, 0);
    a_attr(b, WGPEER_A_PUBLIC_KEY, alice.b, WG_KEY_LEN);
    a_attr(b, WGPEER_A_ENDPOINT, &in6, sizeof(in6));
    a_nest_end(b, peer);
    a_nest_end(b, peers);
    a_end(b);
    a_done(b, seq, 0);
}

static void test_get_full(void **state)
{
    struct ans *b = malloc(sizeof(*b));
    struct wg_device dev = {0};
    struct wg_key priv;
    char err[128], text[CIDR_STR_MAX], ep[WG_ENDPOINT_MAX];
    bool done = false;

    (void)state;
    full_answer(b, 21, &priv);
    assert_int_equal(wgnl_parse_get(b->buf, b->len, FAMILY, 21, &dev, &done, err, sizeof(err)), 0);
    assert_true(done);
    assert_true(dev.has_private);
    assert_true(wg_key_equal(&dev.priv, &priv));
    assert_int_equal(dev.listen_port, 51820);
    assert_int_equal(dev.npeers, 2);
    assert_true(wg_key_equal(&dev.peers[0].pub, &(struct wg_key){0}) == false);
    assert_int_equal(dev.peers[0].keepalive_s, 25);
    assert_int_equal(dev.peers[0].last_handshake_s, 1700000000);
    assert_int_equal(dev.peers[0].rx_bytes, 1234567);
    assert_int_equal(dev.peers[0].tx_bytes, 89);
    assert_int_equal(dev.peers[0].nallowed, 2);
    cidr_format(&dev.peers[0].allowed[0], text, sizeof(text));
    assert_string_equal(text, "10.71.0.0/16");
    cidr_format(&dev.peers[0].allowed[1], text, sizeof(text));
    assert_string_equal(text, "fd00:1::/64");
    assert_true(wg_endpoint_format(&dev.peers[0].endpoint, ep, sizeof(ep)) > 0);
    assert_string_equal(ep, "192.0.2.1:51820");
    assert_true(wg_endpoint_format(&dev.peers[1].endpoint, ep, sizeof(ep)) > 0);
    assert_string_equal(ep, "[2001:db8::7]:443");
    assert_int_equal(dev.peers[1].nallowed, 0);
    assert_int_equal(dev.peers[1].last_handshake_s, 0);
    wg_device_clear(&dev);

    /* the same answer over two pages (the DONE in the second) */
    {
        size_t cut = b->len - NLMSG_LENGTH(4);

        assert_int_equal(wgnl_parse_get(b->buf, cut, FAMILY, 21, &dev, &done, err, sizeof(err)), 0);
        assert_false(done);
        assert_int_equal(dev.npeers, 2);
        assert_int_equal(
            wgnl_parse_get(b->buf + cut, b->len - cut, FAMILY, 21, &dev, &done, err, sizeof(err)),
            0);
        assert_true(done);
        assert_int_equal(dev.npeers, 2);
        wg_device_clear(&dev);
    }
    wg_key_wipe(&priv);
    free(b);
}

/* Round trip: what wgnl_msg_set writes, given back in the shape of an answer (the type of
 * message and command of a get, NLMSG_DONE after it), reads back as the same device. */
static void test_round_trip(void **state)
{
    uint8_t *buf = calloc(1, WGNL_PAGE);
    struct wg_device dev = {.has_private = true, .listen_port = 51820}, got = {0};
    struct wgnl_peer_op ops[3];
    struct wgnl_set s = {.ifname = "cliqo0", .set_device = true, .ops = ops, .nops = 2};
    size_t next = 0, len = 0;
    bool done = false;
    char err[128];

    (void)state;
    dev.priv = key_of(ALICE_PRIV_B64);
    s.has_private = dev.has_private;
    s.priv = dev.priv;
    s.listen_port = dev.listen_port;
    three_ops(ops);
    while (next < s.nops) {
        int r = wgnl_msg_set(FAMILY, 5, &s, &next, buf + len, 250); /* one peer a message */

        assert_true(r > 0);
        ((struct genlmsghdr *)(buf + len + NLMSG_HDRLEN))->cmd = WG_CMD_GET_DEVICE;
        len += (size_t)r;
    }
    assert_true(len > 0);
    {
        struct nlmsghdr h = {
            .nlmsg_len = NLMSG_LENGTH(4), .nlmsg_type = NLMSG_DONE, .nlmsg_seq = 5};

        memcpy(buf + len, &h, sizeof(h));
        len += NLMSG_LENGTH(4);
    }
    assert_int_equal(wgnl_parse_get(buf, len, FAMILY, 5, &got, &done, err, sizeof(err)), 0);
    assert_true(done);
    assert_true(got.has_private && wg_key_equal(&got.priv, &dev.priv));
    assert_int_equal(got.listen_port, 51820);
    assert_int_equal(got.npeers, 2);
    for (size_t i = 0; i < 2; i++) {
        const struct wg_peer *w = &ops[i].peer, *g = &got.peers[i];
        char x[WG_ENDPOINT_MAX], y[WG_ENDPOINT_MAX];

        assert_true(wg_key_equal(&w->pub, &g->pub));
        assert_int_equal(w->keepalive_s, g->keepalive_s);
        assert_int_equal(w->nallowed, g->nallowed);
        for (size_t j = 0; j < w->nallowed; j++)
            assert_true(cidr_equal(&w->allowed[j], &g->allowed[j]));
        assert_true(wg_endpoint_format(&w->endpoint, x, sizeof(x)) > 0);
        assert_true(wg_endpoint_format(&g->endpoint, y, sizeof(y)) > 0);
        assert_string_equal(x, y);
    }
    wg_device_clear(&got);
    wg_key_wipe(&dev.priv);
    wg_key_wipe(&s.priv);
    free(buf);
}

/* ---- malformed answers ------------------------------------------------------------------- */

/* Offsets into full_answer's first message. */
#define OFF_FIRST_ATTR (NLMSG_HDRLEN + GENL_HDRLEN)

static size_t offset_of_type(const struct ans *b, size_t from, uint16_t type, size_t len)
{
    for (size_t i = from; i + 4 <= b->len; i += 4) {
        struct nlattr a;

        memcpy(&a, b->buf + i, sizeof(a));
        if ((a.nla_type & NLA_TYPE_MASK) == type && a.nla_len == len)
            return i;
    }
    fail_msg("attribute %u of length %zu not found", type, len);
    return 0;
}

static void set16(struct ans *b, size_t at, uint16_t v)
{
    memcpy(b->buf + at, &v, 2);
}

static void test_get_refused(void **state)
{
    enum {
        M_NONE,
        M_CUT,          /* the page cut inside an attribute */
        M_ATTR_BEYOND,  /* the first attribute's length beyond the message */
        M_ATTR_SHORT,   /* an attribute length below its header */
        M_NEST_BEYOND,  /* the peers' nest longer than the message */
        M_PEER_BEYOND,  /* a peer's nest longer than the peers' nest */
        M_PRIV_31,      /* a private key of 31 bytes */
        M_PUB_33,       /* a peer's key of 33 bytes */
        M_SEQ,          /* an answer to another request */
        M_FAMILY,       /* a message of another family */
        M_CMD,          /* another command */
        M_MSG_BEYOND,   /* nlmsg_len beyond the page */
        M_ENODEV,       /* NLMSG_ERROR -ENODEV */
        M_DONE_ERR,     /* NLMSG_DONE with -EINTR */
        M_ENDPOINT_LEN, /* an endpoint of 20 bytes */
        M_MASK,         /* a prefix of 33 on an IPv4 address */
        M_TRAILING,     /* 3 bytes after the messages */
        M_KEEPALIVE_4,  /* a keepalive of 4 bytes */
    };
    static const struct {
        int mut, want;
    } cases[] = {
        {M_CUT, -EPROTO},         {M_ATTR_BEYOND, -EPROTO},  {M_ATTR_SHORT, -EPROTO},
        {M_NEST_BEYOND, -EPROTO}, {M_PEER_BEYOND, -EPROTO},  {M_PRIV_31, -EPROTO},
        {M_PUB_33, -EPROTO},      {M_SEQ, -EPROTO},          {M_FAMILY, -EPROTO},
        {M_CMD, -EPROTO},         {M_MSG_BEYOND, -EPROTO},   {M_ENODEV, -ENODEV},
        {M_DONE_ERR, -EINTR},     {M_ENDPOINT_LEN, -EPROTO}, {M_MASK, -EPROTO},
        {M_TRAILING, -EPROTO},    {M_KEEPALIVE_4, -EPROTO},
    };
    struct ans *b = malloc(sizeof(*b));

    (void)state;
    for (size_t i = 0; i < N(cases); i++) {
        struct wg_device dev = {0};
        struct wg_key priv;
        struct nlmsghdr h;
        char err[128] = "";
        bool done = false;
        size_t len, at;
        int r;

        full_answer(b, 3, &priv);
        wg_key_wipe(&priv);
        len = b->len;
        memcpy(&h, b->buf, sizeof(h));
        switch (cases[i].mut) {
        case M_CUT:
            len = h.nlmsg_len + 30;
            break;
        case M_ATTR_BEYOND:
            set16(b, OFF_FIRST_ATTR, 2000);
            break;
        case M_ATTR_SHORT:
            set16(b, OFF_FIRST_ATTR, 3);
            break;
        case M_NEST_BEYOND:
        case M_PEER_BEYOND:
            break; /* below */
        case M_PRIV_31:
            at = offset_of_type(b, OFF_FIRST_ATTR, WGDEVICE_A_PRIVATE_KEY, 36);
            set16(b, at, 35);
            break;
        case M_PUB_33:
            at = offset_of_type(b, OFF_FIRST_ATTR + 80, WGPEER_A_PUBLIC_KEY, 36);
            set16(b, at, 37);
            break;
        case M_SEQ:
            h.nlmsg_seq = 4;
            memcpy(b->buf, &h, sizeof(h));
            break;
        case M_FAMILY:
            h.nlmsg_type = FAMILY + 1;
            memcpy(b->buf, &h, sizeof(h));
            break;
        case M_CMD:
            b->buf[NLMSG_HDRLEN] = WG_CMD_SET_DEVICE;
            break;
        case M_MSG_BEYOND:
            h.nlmsg_len = (uint32_t)len + 4;
            memcpy(b->buf, &h, sizeof(h));
            break;
        case M_ENODEV: {
            struct nlmsghdr e = {.nlmsg_len = NLMSG_LENGTH(sizeof(struct nlmsgerr)),
                                 .nlmsg_type = NLMSG_ERROR,
                                 .nlmsg_seq = 3};
            struct nlmsgerr ne = {.error = -ENODEV};

            memcpy(b->buf, &e, sizeof(e));
            memcpy(b->buf + NLMSG_HDRLEN, &ne, sizeof(ne));
            len = e.nlmsg_len;
            break;
        }
        case M_DONE_ERR: {
            int32_t e = -EINTR;

            memcpy(b->buf + b->len - 4, &e, 4);
            break;
        }
        case M_ENDPOINT_LEN:
            at = offset_of_type(b, OFF_FIRST_ATTR, WGPEER_A_ENDPOINT, 4 + 16);
            set16(b, at, 4 + 12); /* a sockaddr_in cut short: 12 bytes */
            break;
        case M_MASK:
            at = offset_of_type(b, OFF_FIRST_ATTR, WGALLOWEDIP_A_CIDR_MASK, 5);
            b->buf[at + 4] = 33;
            break;
        case M_TRAILING:
            len += 3;
            break;
        case M_KEEPALIVE_4:
            at = offset_of_type(b, OFF_FIRST_ATTR, WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL, 6);
            set16(b, at, 8);
            break;
        default:
            break;
        }
        if (cases[i].mut == M_NEST_BEYOND || cases[i].mut == M_PEER_BEYOND) {
            /* lengthen the peers' nest (or the first peer) by 64: past its parent */
            size_t peers = 0;

            for (size_t o = OFF_FIRST_ATTR; o + 4 <= h.nlmsg_len; o += 4) {
                struct nlattr a;

                memcpy(&a, b->buf + o, sizeof(a));
                if (a.nla_type == (WGDEVICE_A_PEERS | NLA_F_NESTED)) {
                    peers = o;
                    break;
                }
            }
            assert_true(peers > 0);
            at = cases[i].mut == M_NEST_BEYOND ? peers : peers + NLA_HDRLEN;
            {
                uint16_t n;

                memcpy(&n, b->buf + at, 2);
                set16(b, at, (uint16_t)(n + 64));
            }
        }
        r = wgnl_parse_get(b->buf, len, FAMILY, 3, &dev, &done, err, sizeof(err));
        if (r != cases[i].want)
            fail_msg("case %zu: %d, want %d (%s)", i, r, cases[i].want, err);
        assert_int_equal(dev.npeers, 0);
        assert_null(dev.peers);
        assert_false(dev.has_private);
        assert_true(wg_key_is_zero(&dev.priv));
        assert_true(err[0] != '\0');
    }
    free(b);
}

/* More than WG_MAX_ALLOWED allowed IPs for a peer (in one message, or over two) is -E2BIG; a peer
 * without a public key is -EPROTO. */
static void test_get_bounds(void **state)
{
    struct ans *b = malloc(sizeof(*b));
    struct wg_key bob = key_of(BOB_PUB_B64), priv = key_of(ALICE_PRIV_B64);
    struct wg_device dev = {0};
    bool done;
    size_t peers, peer, ips;

    (void)state;
    for (int split = 0; split <= 1; split++) {
        memset(b, 0, sizeof(*b));
        a_msg(b, FAMILY, 1, WG_CMD_GET_DEVICE);
        a_device(b, &priv, 1);
        peers = a_nest(b, WGDEVICE_A_PEERS);
        peer = a_nest(b, 0);
        a_attr(b, WGPEER_A_PUBLIC_KEY, bob.b, WG_KEY_LEN);
        ips = a_nest(b, WGPEER_A_ALLOWEDIPS);
        for (int i = 0; i < (split ? WG_MAX_ALLOWED : WG_MAX_ALLOWED + 1); i++)
            a_allowed(b, 4, (uint8_t[]){10, (uint8_t)i, 0, 0}, 16);
        a_nest_end(b, ips);
        a_nest_end(b, peer);
        a_nest_end(b, peers);
        a_end(b);
        if (split) {
            a_msg(b, FAMILY, 1, WG_CMD_GET_DEVICE);
            peers = a_nest(b, WGDEVICE_A_PEERS);
            peer = a_nest(b, 0);
            a_attr(b, WGPEER_A_PUBLIC_KEY, bob.b, WG_KEY_LEN);
            ips = a_nest(b, WGPEER_A_ALLOWEDIPS);
            a_allowed(b, 4, (uint8_t[]){10, 99, 0, 0}, 16);
            a_nest_end(b, ips);
            a_nest_end(b, peer);
            a_nest_end(b, peers);
            a_end(b);
        }
        a_done(b, 1, 0);
        assert_int_equal(wgnl_parse_get(b->buf, b->len, FAMILY, 1, &dev, &done, NULL, 0), -E2BIG);
        assert_int_equal(dev.npeers, 0);
        assert_null(dev.peers);
    }
    memset(b, 0, sizeof(*b));
    a_msg(b, FAMILY, 1, WG_CMD_GET_DEVICE);
    peers = a_nest(b, WGDEVICE_A_PEERS);
    peer = a_nest(b, 0);
    a_nest_end(b, peer);
    a_nest_end(b, peers);
    a_end(b);
    assert_int_equal(wgnl_parse_get(b->buf, b->len, FAMILY, 1, &dev, &done, NULL, 0), -EPROTO);
    /* a page longer than WGNL_PAGE */
    assert_int_equal(wgnl_parse_get(b->buf, WGNL_PAGE + 1, FAMILY, 1, &dev, &done, NULL, 0),
                     -EPROTO);
    wg_key_wipe(&priv);
    free(b);
}

/* Many peers over many messages: all kept, in order, grown past several capacities. */
static void test_get_many(void **state)
{
    enum { NPEERS = 1000 };
    struct ans *b = malloc(sizeof(*b));
    struct wg_device dev = {0};
    bool done = false;
    size_t k = 0;

    (void)state;
    while (k < NPEERS) {
        size_t peers;

        memset(b, 0, sizeof(*b));
        a_msg(b, FAMILY, 2, WG_CMD_GET_DEVICE);
        peers = a_nest(b, WGDEVICE_A_PEERS);
        for (int i = 0; i < 100 && k < NPEERS; i++, k++) {
            size_t peer = a_nest(b, 0);
            uint8_t key[WG_KEY_LEN];

            memset(key, 0x11, sizeof(key));
            memcpy(key, &k, sizeof(k));
            a_attr(b, WGPEER_A_PUBLIC_KEY, key, WG_KEY_LEN);
            a_nest_end(b, peer);
        }
        a_nest_end(b, peers);
        a_end(b);
        if (k == NPEERS)
            a_done(b, 2, 0);
        assert_int_equal(wgnl_parse_get(b->buf, b->len, FAMILY, 2, &dev, &done, NULL, 0), 0);
    }
    assert_true(done);
    assert_int_equal(dev.npeers, NPEERS);
    for (size_t i = 0; i < NPEERS; i++) {
        size_t v;

        memcpy(&v, dev.peers[i].pub.b, sizeof(v));
        assert_int_equal(v, i);
    }
    wg_device_clear(&dev);
    free(b);
}

static void test_family_answer(void **state)
{
    struct ans *b = malloc(sizeof(*b));
    uint16_t id = 0, fid = FAMILY;

    (void)state;
    memset(b, 0, sizeof(*b));
    a_msg(b, GENL_ID_CTRL, 8, CTRL_CMD_NEWFAMILY);
    a_attr(b, CTRL_ATTR_FAMILY_NAME, "wireguard", 10);
    a_attr(b, CTRL_ATTR_FAMILY_ID, &fid, 2);
    a_end(b);
    assert_int_equal(wgnl_parse_family(b->buf, b->len, 8, &id), 0);
    assert_int_equal(id, FAMILY);
    assert_int_equal(wgnl_parse_family(b->buf, b->len, 9, &id), -EPROTO);
    assert_int_equal(wgnl_parse_family(b->buf, b->len - 2, 8, &id), -EPROTO);
    b->buf[NLMSG_HDRLEN] = CTRL_CMD_GETFAMILY;
    assert_int_equal(wgnl_parse_family(b->buf, b->len, 8, &id), -EPROTO);
    {
        struct nlmsghdr e = {.nlmsg_len = NLMSG_LENGTH(sizeof(struct nlmsgerr)),
                             .nlmsg_type = NLMSG_ERROR,
                             .nlmsg_seq = 8};
        struct nlmsgerr ne = {.error = -ENOENT};

        memcpy(b->buf, &e, sizeof(e));
        memcpy(b->buf + NLMSG_HDRLEN, &ne, sizeof(ne));
        assert_int_equal(wgnl_parse_family(b->buf, e.nlmsg_len, 8, &id), -ENOENT);
        ne.error = 0;
        memcpy(b->buf + NLMSG_HDRLEN, &ne, sizeof(ne));
        assert_int_equal(wgnl_parse_family(b->buf, e.nlmsg_len, 8, &id), -EPROTO);
    }
    /* no id at all, an id below GENL_MIN_ID */
    memset(b, 0, sizeof(*b));
    a_msg(b, GENL_ID_CTRL, 8, CTRL_CMD_NEWFAMILY);
    a_attr(b, CTRL_ATTR_FAMILY_NAME, "wireguard", 10);
    a_end(b);
    assert_int_equal(wgnl_parse_family(b->buf, b->len, 8, &id), -EPROTO);
    fid = 3;
    a_attr(b, CTRL_ATTR_FAMILY_ID, &fid, 2);
    a_end(b);
    assert_int_equal(wgnl_parse_family(b->buf, b->len, 8, &id), -EPROTO);
    assert_int_equal(wgnl_parse_family(b->buf, 0, 8, &id), -EPROTO);
    free(b);
}

/* This machine's kernel: the family does not resolve (no WireGuard module), or it does with an id
 * of a dynamic family. Either way the call returns within its timeout. */
static void test_kernel_family(void **state)
{
    int fd = wgnl_sock_open(), r;

    (void)state;
    if (fd < 0)
        skip();
    r = wgnl_sock_family(fd, 1);
    assert_true(r == -ENOENT || r >= GENL_MIN_ID);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_family_request), cmocka_unit_test(test_get_request),
        cmocka_unit_test(test_link_requests),  cmocka_unit_test(test_set_bytes),
        cmocka_unit_test(test_set_refused),    cmocka_unit_test(test_set_split),
        cmocka_unit_test(test_get_full),       cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_get_refused),    cmocka_unit_test(test_get_bounds),
        cmocka_unit_test(test_get_many),       cmocka_unit_test(test_family_answer),
        cmocka_unit_test(test_kernel_family),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
