/* Unit tests of src/network/natrules.c: the exact text for one IPv4 peer, two IPv6 peers and none;
 * a table of refused inputs; then the text given to the kernel through libnftables in a network
 * namespace of the test's own (root, as CI runs): accepted, applied twice with one copy left,
 * 4,096 peers in one transaction (the time is printed), removed, removed again. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <nftables/libnftables.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "network/natrules.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static struct cidr C(const char *s) {
    struct cidr c;

    if (cidr_parse(s, &c) < 0)
        fail_msg("bad test CIDR %s", s);
    return c;
}

static struct natr_peer
P(const char *seen, const char *there) {
    return (struct natr_peer){.seen_here = C(seen), .us_there = C(there)};
}

static void
test_text_v4(void **state)
{
    struct cidr local = C("10.244.0.0/16");
    struct natr_peer peers[] = {P("10.70.0.0/16", "10.80.0.0/16")};
    struct sbuf b;

    (void)state;
    sbuf_init(&b, 1 << 20);
    assert_int_equal(natr_ruleset(4, "cliqo0", &local, peers, 1, &b, NULL, 0), 0);
    assert_string_equal(sbuf_str(&b),
                        "table ip cliqo\ndelete table ip cliqo\ntable ip cliqo {\n"
                        "\tmap to_peer {\n\t\ttype ipv4_addr : verdict\n\t\tflags interval\n"
                        "\t\telements = { 10.70.0.0/16 : jump to_10_70_0_0_16 }\n\t}\n"
                        "\tmap from_peer {\n\t\ttype ipv4_addr : verdict\n\t\tflags interval\n"
                        "\t\telements = { 10.70.0.0/16 : jump from_10_70_0_0_16 }\n\t}\n"
                        "\tchain to_10_70_0_0_16 {\n"
                        "\t\tip saddr 10.244.0.0/16 ip saddr set ip saddr & 0.0.255.255 | "
                        "10.80.0.0\n\t}\n"
                        "\tchain from_10_70_0_0_16 {\n"
                        "\t\tip daddr 10.80.0.0/16 ip daddr set ip daddr & 0.0.255.255 | "
                        "10.244.0.0\n\t}\n"
                        "\tchain egress {\n"
                        "\t\ttype filter hook postrouting priority srcnat - 10; policy accept;\n"
                        "\t\toifname \"cliqo0\" tcp flags & syn == syn tcp option maxseg size set "
                        "rt mtu\n"
                        "\t\toifname \"cliqo0\" ip daddr vmap @to_peer\n\t}\n"
                        "\tchain ingress {\n"
                        "\t\ttype filter hook prerouting priority raw; policy accept;\n"
                        "\t\tiifname \"cliqo0\" ip saddr vmap @from_peer\n\t}\n}\n");
    sbuf_done(&b);
    sbuf_init(&b, 1 << 20);
    assert_int_equal(natr_remove(4, &b), 0);
    assert_string_equal(sbuf_str(&b), "table ip cliqo\ndelete table ip cliqo\n");
    assert_int_equal(natr_remove(5, &b), -EINVAL);
    sbuf_done(&b);
}

/* Two IPv6 peers given out of order come out sorted; lengths other than /16 and /64 work. */
static void test_text_v6_and_none(void **state)
{
    struct cidr local = C("fd00:244::/56");
    struct natr_peer peers[] = {
        P("fd00:72::/60", "fd00:90::/56"),
        P("fd00:71::/62", "fd00:91::/56"),
    };
    struct cidr local4 = C("10.1.0.0/20");
    struct sbuf b;
    const char *s;

    (void)state;
    sbuf_init(&b, 1 << 20);
    assert_int_equal(natr_ruleset(6, "wg-a.b_1", &local, peers, 2, &b, NULL, 0), 0);
    s = sbuf_str(&b);
    assert_non_null(strstr(s, "table ip6 cliqo {\n"));
    assert_non_null(strstr(s, "type ipv6_addr : verdict"));
    assert_non_null(strstr(s, "elements = { fd00:71::/62 : jump to_fd00_71___62, fd00:72::/60 : "
                              "jump to_fd00_72___60 }"));
    assert_non_null(strstr(s, "\tchain to_fd00_71___62 {\n"
                              "\t\tip6 saddr fd00:244::/56 ip6 saddr set ip6 saddr & "
                              "::ff:ffff:ffff:ffff:ffff | fd00:91::\n\t}\n"));
    assert_non_null(strstr(s, "\tchain from_fd00_71___62 {\n"
                              "\t\tip6 daddr fd00:91::/56 ip6 daddr set ip6 daddr & "
                              "::ff:ffff:ffff:ffff:ffff | fd00:244::\n\t}\n"));
    assert_non_null(strstr(s, "iifname \"wg-a.b_1\" ip6 saddr vmap @from_peer"));
    assert_true(strstr(s, "to_fd00_71___62 {") < strstr(s, "to_fd00_72___60 {"));
    assert_non_null(strstr(s, "oifname \"wg-a.b_1\" ip6 daddr vmap @to_peer"));
    sbuf_done(&b);

    sbuf_init(&b, 1 << 20);
    assert_int_equal(natr_ruleset(4, "cliqo0", &local4, NULL, 0, &b, NULL, 0), 0);
    s = sbuf_str(&b);
    assert_null(strstr(s, "elements"));
    assert_non_null(strstr(s, "\t\tflags interval\n\t}\n\tchain egress {\n"));
    assert_non_null(
        strstr(s, "map from_peer {\n\t\ttype ipv4_addr : verdict\n\t\tflags interval\n\t}\n"));
    sbuf_done(&b);
}

static void test_refused(void **state)
{
    static const struct {
        int family;
        const char *ifname, *local, *real, *seen, *there;
        const char *says;
    } cases[] = {
        {5, "cliqo0", "10.0.0.0/16", NULL, NULL, NULL, "family 5"},
        {4, "", "10.0.0.0/16", NULL, NULL, NULL, "interface name"},
        {4, "0123456789abcdef", "10.0.0.0/16", NULL, NULL, NULL, "interface name"},
        {4, "cliqo\"0", "10.0.0.0/16", NULL, NULL, NULL, "interface name"},
        {4, "cliqo 0", "10.0.0.0/16", NULL, NULL, NULL, "interface name"},
        {4, "cliqo0", "fd00::/64", NULL, NULL, NULL, "local pod CIDR"},
        {6, "cliqo0", "fd00::/64", "10.0.0.0/16", "10.1.0.0/16", "fd01::/64", "not IPv6"},
        {4, "cliqo0", "10.0.0.0/16", "10.0.0.0/16", "10.1.0.0/16", "10.2.0.0/24", "differ"},
    };
    (void)state;
    for (size_t i = 0; i < N(cases); i++) {
        struct cidr local = C(cases[i].local);
        struct natr_peer p = {0};
        struct sbuf b;
        char err[160] = "";
        int r;

        if (cases[i].real)
            p = P(cases[i].seen, cases[i].there);
        sbuf_init(&b, 1 << 20);
        r = natr_ruleset(cases[i].family, cases[i].ifname, &local, &p, cases[i].real ? 1 : 0, &b,
                         err, sizeof(err));
        if (r != -EINVAL || !strstr(err, cases[i].says))
            fail_msg("case %zu: %d '%s', want -EINVAL '%s'", i, r, err, cases[i].says);
        sbuf_done(&b);
    }
    {
        struct cidr local = C("10.244.0.0/16");
        struct natr_peer two[] = {P("10.70.0.0/16", "10.80.0.0/16"),
                                  P("10.70.3.0/24", "10.81.0.0/16")};
        struct sbuf b;
        char err[160] = "";

        sbuf_init(&b, 1 << 20);
        assert_int_equal(natr_ruleset(4, "cliqo0", &local, two, 2, &b, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "overlapping blocks (10.70.0.0/16, 10.70.3.0/24)"));
        assert_int_equal(
            natr_ruleset(4, "cliqo0", &local, two, NATR_MAX_PEERS + 1, &b, err, sizeof(err)),
            -E2BIG);
        assert_int_equal(natr_ruleset(4, NULL, &local, two, 0, &b, NULL, 0), -EINVAL);
        sbuf_done(&b);
    }
}

/* ---- through the kernel --------------------------------------------------------------------- */

static struct nft_ctx *nft;

static int run(const char *cmd)
{
    int r = nft_run_cmd_from_buffer(nft, cmd);

    if (r != 0)
        print_message("nft: %s\n", nft_ctx_get_error_buffer(nft));
    return r;
}

static const char *listing(void)
{
    if (nft_run_cmd_from_buffer(nft, "list table ip cliqo") != 0)
        return NULL;
    return nft_ctx_get_output_buffer(nft);
}

static size_t count(const char *s, const char *what)
{
    size_t n = 0;

    for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

static int in_own_netns(void **state)
{
    (void)state;
    if (unshare(CLONE_NEWNET) < 0) {
        print_message("unshare(CLONE_NEWNET): %s: this test runs as root, as CI does\n",
                      strerror(errno));
        return -1;
    }
    nft = nft_ctx_new(NFT_CTX_DEFAULT);
    if (!nft)
        return -1;
    nft_ctx_buffer_output(nft);
    nft_ctx_buffer_error(nft);
    return 0;
}

static int done_netns(void **state)
{
    (void)state;
    nft_ctx_free(nft);
    return 0;
}

static void test_kernel(void **state)
{
    struct cidr local = C("10.244.0.0/16");
    struct natr_peer two[] = {P("10.70.0.0/16", "10.80.0.0/16"), P("10.71.0.0/16", "10.80.0.0/16")};
    struct natr_peer *many = calloc(NATR_MAX_PEERS, sizeof(*many));
    struct sbuf b;
    const char *l;
    struct timespec t0, t1;

    (void)state;
    assert_non_null(many);
    sbuf_init(&b, 16 << 20);
    assert_int_equal(natr_ruleset(4, "cliqo0", &local, two, 2, &b, NULL, 0), 0);
    assert_int_equal(run(sbuf_str(&b)), 0);
    assert_int_equal(run(sbuf_str(&b)), 0); /* again: one copy */
    l = listing();
    assert_non_null(l);
    assert_int_equal(count(l, "chain egress"), 1);
    assert_int_equal(count(l, "chain to_10_71_0_0_16"), 1);
    assert_int_equal(count(l, "chain ingress"), 1);
    assert_int_equal(count(l, "chain from_10_71_0_0_16"), 1);
    /* The kernel keeps a rewrite as mask and value: & 10.80.255.255 | 10.80.0.0. */
    assert_non_null(strstr(l, "ip saddr set ip saddr & 10.80.255.255 | 10.80.0.0"));
    assert_non_null(strstr(l, "ip daddr set ip daddr & 10.244.255.255 | 10.244.0.0"));
    sbuf_done(&b);

    /* 4,096 peers, each a /24 seen in 10.<i/256 + 64>.<i%256>.0, in one transaction. */
    for (size_t i = 0; i < NATR_MAX_PEERS; i++) {
        char seen[32];

        snprintf(seen, sizeof(seen), "10.%zu.%zu.0/24", 64 + i / 256, i % 256);
        many[i] = P(seen, "10.80.0.0/16");
    }
    sbuf_init(&b, 16 << 20);
    assert_int_equal(natr_ruleset(4, "cliqo0", &local, many, NATR_MAX_PEERS, &b, NULL, 0), 0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(run(sbuf_str(&b)), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    print_message("FIGURE natrules-4096-peers-apply-ms=%.1f (%zu bytes of rules)\n",
                  (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
                  sbuf_len(&b));
    l = listing();
    assert_non_null(l);
    assert_int_equal(count(l, "\tchain to_"), NATR_MAX_PEERS);
    assert_int_equal(count(l, "\tchain from_"), NATR_MAX_PEERS);
    sbuf_done(&b);

    sbuf_init(&b, 4096);
    assert_int_equal(natr_remove(4, &b), 0);
    assert_int_equal(run(sbuf_str(&b)), 0);
    assert_null(listing());
    assert_int_equal(run(sbuf_str(&b)), 0); /* removing what is gone: a no-op */
    sbuf_done(&b);
    free(many);
}

int main(void)
{
    const struct CMUnitTest pure[] = {
        cmocka_unit_test(test_text_v4),
        cmocka_unit_test(test_text_v6_and_none),
        cmocka_unit_test(test_refused),
    };
    const struct CMUnitTest kernel[] = {cmocka_unit_test(test_kernel)};
    int r = cmocka_run_group_tests(pure, NULL, NULL);

    return r | cmocka_run_group_tests(kernel, in_own_netns, done_netns);
}
