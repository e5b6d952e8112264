/* Unit tests of src/network/routes.c: requests built and read back as a dump would show them (a
 * table), rt_plan's differences (a table), malformed and foreign answers refused, then the real
 * kernel in a network namespace of the test's own (root, as CI runs): routes added twice (one
 * copy), read back equal, changed, deleted, and a route of other software left alone. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "network/routes.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static struct rt_route R(const char *dst, uint32_t oif, const char *via, uint32_t mtu,
                         uint32_t table) {
    struct rt_route r = {.oif = oif, .mtu = mtu, .table = table};

    if (cidr_parse(dst, &r.dst) < 0)
        fail_msg("bad test CIDR %s", dst);
    if (via) {
        r.has_via = true;
        if (inet_pton(r.dst.family == 4 ? AF_INET : AF_INET6, via, r.via) != 1)
            fail_msg("bad test address %s", via);
    }
    return r;
}

/* The message, then an NLMSG_DONE of the same sequence: what a dump page looks like. */
static size_t
as_dump(uint8_t *buf, int len, uint32_t seq)
{
    struct nlmsghdr *done = (struct nlmsghdr *)(buf + len);

    memset(done, 0, NLMSG_HDRLEN + 4);
    done->nlmsg_len = NLMSG_LENGTH(4);
    done->nlmsg_type = NLMSG_DONE;
    done->nlmsg_seq = seq;
    return (size_t)len + NLMSG_ALIGN(done->nlmsg_len);
}

static void test_roundtrip(void **state)
{
    const struct rt_route cases[] = {
        R("10.70.0.0/16", 7, NULL, 0, 0),
        R("10.70.0.0/16", 7, NULL, 1420, 0),
        R("10.71.3.0/24", 0, "192.168.1.1", 0, 0),
        R("0.0.0.0/0", 3, "10.0.0.1", 0, 0),
        R("10.72.0.0/20", 2, "10.0.0.1", 1380, 1000),
        R("fd00:70::/64", 9, NULL, 1400, 0),
        R("fd00:71::/56", 0, "fe80::1", 0, 254),
    };
    (void)state;
    for (size_t i = 0; i < N(cases); i++) {
        uint8_t buf[RT_MSG_MAX * 2];
        struct rt_route out[2];
        size_t n = 0;
        bool done = false;
        int len = rt_msg_new(&cases[i], 42, buf, RT_MSG_MAX);
        const struct nlmsghdr *h = (const struct nlmsghdr *)buf;

        if (len <= 0)
            fail_msg("case %zu: %d", i, len);
        assert_int_equal(h->nlmsg_len, len);
        assert_int_equal(h->nlmsg_type, RTM_NEWROUTE);
        assert_int_equal(h->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE);
        assert_int_equal(((const struct rtmsg *)NLMSG_DATA(h))->rtm_protocol, RT_PROTO_CLIQO);
        assert_int_equal(
            rt_parse_dump(buf, as_dump(buf, len, 42), 42, cases[i].table, out, 2, &n, &done), 0);
        assert_true(done);
        if (n != 1 || !rt_equal(&out[0], &cases[i]))
            fail_msg("case %zu: read back %zu routes, not the same", i, n);
        /* A dump of another table does not count it. */
        n = 0;
        assert_int_equal(rt_parse_dump(buf, as_dump(buf, len, 42), 42, 77, out, 2, &n, &done), 0);
        assert_int_equal(n, 0);
        /* Its delete request is the same route, not a creation. */
        len = rt_msg_del(&cases[i], 43, buf, RT_MSG_MAX);
        assert_true(len > 0);
        assert_int_equal(h->nlmsg_type, RTM_DELROUTE);
        assert_int_equal(h->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
        assert_int_equal(rt_msg_new(&cases[i], 1, buf, 40), -ENOSPC);
    }
    {
        struct rt_route bad = R("10.0.0.0/8", 0, NULL, 0, 0);
        uint8_t buf[RT_MSG_MAX];

        assert_int_equal(rt_msg_new(&bad, 1, buf, sizeof(buf)), -EINVAL); /* nowhere to go */
        bad.oif = 1;
        bad.dst.addr[3] = 1; /* host bits */
        assert_int_equal(rt_msg_new(&bad, 1, buf, sizeof(buf)), -EINVAL);
        assert_int_equal(rt_msg_dump(5, 1, buf, sizeof(buf)), -EINVAL);
        assert_true(rt_msg_dump(4, 1, buf, sizeof(buf)) > 0);
        assert_int_equal(rt_msg_dump(4, 1, buf, 8), -ENOSPC);
    }
}

static void test_refused_answers(void **state)
{
    struct rt_route r = R("10.70.0.0/16", 7, NULL, 0, 0), out[1];
    uint8_t buf[RT_MSG_MAX * 2];
    size_t n = 0, len;
    bool done;
    int l = rt_msg_new(&r, 5, buf, RT_MSG_MAX);
    struct nlmsghdr *h = (struct nlmsghdr *)buf;
    struct nlmsgerr *e;

    (void)state;
    len = as_dump(buf, l, 5);
    assert_int_equal(rt_parse_dump(buf, len, 6, 0, out, 1, &n, &done), -EPROTO); /* not ours */
    assert_int_equal(rt_parse_dump(buf, (size_t)l - 3, 5, 0, out, 1, &n, &done), -EPROTO);
    assert_int_equal(rt_parse_dump(buf, len, 5, 0, out, 0, &n, &done), -E2BIG);
    /* Another protocol's route (ip route add ... proto static) is skipped. */
    ((struct rtmsg *)NLMSG_DATA(h))->rtm_protocol = RTPROT_STATIC;
    n = 0;
    assert_int_equal(rt_parse_dump(buf, len, 5, 0, out, 1, &n, &done), 0);
    assert_int_equal(n, 0);
    /* A destination longer than the family allows. */
    ((struct rtmsg *)NLMSG_DATA(h))->rtm_protocol = RT_PROTO_CLIQO;
    ((struct rtmsg *)NLMSG_DATA(h))->rtm_dst_len = 33;
    assert_int_equal(rt_parse_dump(buf, len, 5, 0, out, 1, &n, &done), -EPROTO);
    /* Errors and acknowledgements. */
    memset(buf, 0, sizeof(buf));
    h->nlmsg_len = NLMSG_LENGTH(sizeof(*e));
    h->nlmsg_type = NLMSG_ERROR;
    h->nlmsg_seq = 9;
    e = NLMSG_DATA(h);
    e->error = -EEXIST;
    assert_int_equal(rt_parse_ack(buf, h->nlmsg_len, 9), -EEXIST);
    assert_int_equal(rt_parse_dump(buf, h->nlmsg_len, 9, 0, out, 1, &n, &done), -EEXIST);
    e->error = 0;
    assert_int_equal(rt_parse_ack(buf, h->nlmsg_len, 9), 0);
    assert_int_equal(rt_parse_ack(buf, h->nlmsg_len, 8), -EPROTO);
    e->error = 5; /* positive: nonsense */
    assert_int_equal(rt_parse_ack(buf, h->nlmsg_len, 9), -EPROTO);
    assert_int_equal(rt_parse_ack(buf, 4, 9), -EPROTO);
}

static void test_plan(void **state)
{
    const struct rt_route a = R("10.70.0.0/16", 7, NULL, 0, 0),
                          b = R("10.71.0.0/16", 7, NULL, 0, 0);
    const struct rt_route a_mtu = R("10.70.0.0/16", 7, NULL, 1420, 0),
                          c = R("10.72.0.0/16", 8, NULL, 0, 0);
    static const struct {
        int want[3], have[3]; /* indexes in all[], -1 ends */
        size_t nadd, ndel;
    } cases[] = {
        {{0, 1, -1}, {-1}, 2, 0},       {{-1}, {0, 1, -1}, 0, 2},
        {{0, 1, -1}, {1, 0, -1}, 0, 0}, {{2, 1, -1}, {0, 1, -1}, 1, 1}, /* MTU changed */
        {{3, -1}, {0, 1, 3}, 0, 2},     {{-1}, {-1}, 0, 0},
    };
    const struct rt_route *all[] = {&a, &b, &a_mtu, &c};
    (void)state;
    for (size_t i = 0; i < N(cases); i++) {
        struct rt_route want[3], have[3];
        const struct rt_route *add[3], *del[3];
        size_t nw = 0, nh = 0, nadd, ndel;

        for (size_t j = 0; j < 3 && cases[i].want[j] >= 0; j++)
            want[nw++] = *all[cases[i].want[j]];
        for (size_t j = 0; j < 3 && cases[i].have[j] >= 0; j++)
            have[nh++] = *all[cases[i].have[j]];
        rt_plan(want, nw, have, nh, add, &nadd, del, &ndel);
        if (nadd != cases[i].nadd || ndel != cases[i].ndel)
            fail_msg("case %zu: %zu to add, %zu to delete; want %zu, %zu", i, nadd, ndel,
                     cases[i].nadd, cases[i].ndel);
    }
}

/* ---- the kernel ----------------------------------------------------------------------------- */

static int in_own_netns(void **state)
{
    (void)state;
    if (unshare(CLONE_NEWNET) < 0) {
        print_message("unshare(CLONE_NEWNET): %s: this test runs as root, as CI does\n",
                      strerror(errno));
        return -1;
    }
    if (system("ip link add d0 type veth peer name d1 && ip link set d1 up && ip link set d0 up && "
               "ip link set lo up && "
               "ip addr add 192.168.50.1/24 dev d0") != 0)
        return -1;
    return 0;
}

static void test_kernel(void **state)
{
    uint32_t oif = if_nametoindex("d0"), seq = 100;
    struct rt_route want[] = {
        R("10.70.0.0/16", oif, NULL, 1420, 0),
        R("10.71.0.0/24", 0, "192.168.50.2", 0, 0),
    };
    struct rt_route got[8];
    uint8_t msg[RT_MSG_MAX];
    int fd = rt_sock_open(), n;
    char out[256];
    FILE *p;

    (void)state;
    assert_true(oif > 0);
    assert_true(fd >= 0);
    assert_int_equal(system("ip route add 10.99.0.0/16 dev d0 proto static"), 0);
    for (int round = 0; round < 2; round++) /* twice: one copy */
        for (size_t i = 0; i < N(want); i++) {
            int len = rt_msg_new(&want[i], ++seq, msg, sizeof(msg));

            assert_true(len > 0);
            assert_int_equal(rt_sock_apply(fd, msg, (size_t)len, seq), 0);
        }
    n = rt_sock_dump(fd, ++seq, 4, 0, got, N(got));
    assert_int_equal(n, 2);
    for (size_t i = 0; i < N(want); i++) {
        bool found = false;

        for (int j = 0; j < n; j++)
            found = found || rt_equal(&got[j], &want[i]);
        if (!found)
            fail_msg("route %zu not read back", i);
    }
    /* What ip(8) shows: ours under protocol 146, the other one untouched. */
    p = popen("ip route show proto 146 | wc -l; ip route show proto static", "r");
    assert_non_null(p);
    assert_non_null(fgets(out, sizeof(out), p));
    assert_int_equal(atoi(out), 2);
    assert_non_null(fgets(out, sizeof(out), p));
    assert_non_null(strstr(out, "10.99.0.0/16 dev d0"));
    pclose(p);
    /* Change the MTU of the first: replaced in place. */
    want[0].mtu = 1380;
    {
        int len = rt_msg_new(&want[0], ++seq, msg, sizeof(msg));

        assert_int_equal(rt_sock_apply(fd, msg, (size_t)len, seq), 0);
    }
    n = rt_sock_dump(fd, ++seq, 4, 0, got, N(got));
    assert_int_equal(n, 2);
    assert_true(rt_equal(&got[0], &want[0]) || rt_equal(&got[1], &want[0]));
    /* Delete both; deleting again is the kernel's ESRCH; the static route stays. */
    for (size_t i = 0; i < N(want); i++) {
        int len = rt_msg_del(&want[i], ++seq, msg, sizeof(msg));

        assert_int_equal(rt_sock_apply(fd, msg, (size_t)len, seq), 0);
        len = rt_msg_del(&want[i], ++seq, msg, sizeof(msg));
        assert_int_equal(rt_sock_apply(fd, msg, (size_t)len, seq), -ESRCH);
    }
    assert_int_equal(rt_sock_dump(fd, ++seq, 4, 0, got, N(got)), 0);
    assert_int_equal(system("ip route show 10.99.0.0/16 | grep -q 'dev d0'"), 0);
    /* Our delete names our protocol: it cannot remove the static route. */
    {
        struct rt_route other = R("10.99.0.0/16", oif, NULL, 0, 0);
        int len = rt_msg_del(&other, ++seq, msg, sizeof(msg));

        assert_int_equal(rt_sock_apply(fd, msg, (size_t)len, seq), -ESRCH);
    }
    close(fd);
}

int main(void)
{
    const struct CMUnitTest pure[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_refused_answers),
        cmocka_unit_test(test_plan),
    };
    const struct CMUnitTest kernel[] = {cmocka_unit_test(test_kernel)};
    int r = cmocka_run_group_tests(pure, NULL, NULL);

    return r | cmocka_run_group_tests(kernel, in_own_netns, NULL);
}
