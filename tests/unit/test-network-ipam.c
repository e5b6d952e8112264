/* Unit tests of CIDRs and the pod-CIDR remapping of peers (src/network/ipam.c): parsing and
 * formatting tables, overlap, covering and translation tables, then remapping scenarios (kept and
 * remapped peers, idempotence, changes, release, restore, exhaustion, pool lists, conflicts,
 * IPv6), limits, allocation failures and searches whose cost a pool-sized scan could not meet. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/xalloc.h"
#include "network/ipam.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* A sentinel that no successful call produces, to check "written only on success". */
static const struct cidr poison = {.family = 77, .prefix = 77, .addr = {7, 7, 7, 7}};

static struct cidr C(const char *s) {
    struct cidr c = poison;
    int r = cidr_parse(s, &c);

    if (r != 0)
        print_error("cidr_parse(\"%s\") = %d\n", s, r);
    assert_int_equal(r, 0);
    return c;
}

/* A pointer to the parsed CIDR, valid in the enclosing block. */
#define P(s) ((struct cidr[1]){C(s)})

/* The text of c, in one of a few rotating static buffers (enough for one assertion's operands). */
static const char *
S(const struct cidr *c)
{
    static char bufs[4][CIDR_STR_MAX];
    static unsigned next;
    char *b = bufs[next++ % 4];

    if (cidr_format(c, b, CIDR_STR_MAX) < 0)
        snprintf(b, CIDR_STR_MAX, "<invalid>");
    return b;
}

static void assert_cidr(const struct cidr *c, const char *expect)
{
    if (strcmp(S(c), expect) != 0)
        print_error("got %s, want %s\n", S(c), expect);
    assert_string_equal(S(c), expect);
}

static void assert_poison(const struct cidr *c)
{
    assert_memory_equal(c, &poison, sizeof(*c));
}

/* Parsing and formatting. */

static const struct {
    const char *in;
    const char *canonical;
    uint8_t family;
    uint8_t prefix;
} parse_valid[] = {
    {"10.0.0.0/8", "10.0.0.0/8", 4, 8},
    {"0.0.0.0/0", "0.0.0.0/0", 4, 0},
    {"255.255.255.255/32", "255.255.255.255/32", 4, 32},
    {"1.2.3.4/32", "1.2.3.4/32", 4, 32},
    {"192.168.1.0/24", "192.168.1.0/24", 4, 24},
    {"10.244.0.0/16", "10.244.0.0/16", 4, 16},
    {"172.16.0.0/12", "172.16.0.0/12", 4, 12},
    {"100.64.0.0/10", "100.64.0.0/10", 4, 10},
    {"128.0.0.0/1", "128.0.0.0/1", 4, 1},
    {"::/0", "::/0", 6, 0},
    {"::1/128", "::1/128", 6, 128},
    {"2001:db8::/32", "2001:db8::/32", 6, 32},
    {"2001:DB8::/32", "2001:db8::/32", 6, 32},
    {"2001:0db8:0000:0000:0000:0000:0000:0000/32", "2001:db8::/32", 6, 32},
    {"fd00::/8", "fd00::/8", 6, 8},
    {"fe80::/10", "fe80::/10", 6, 10},
    {"8000::/1", "8000::/1", 6, 1},
    /* RFC 5952: the longest run of zero groups is compressed, the first one on a tie, and a single
     * zero group is not. */
    {"2001:db8:0:0:1:0:0:0/96", "2001:db8:0:0:1::/96", 6, 96},
    {"2001:db8:0:0:1:0:0:1/128", "2001:db8::1:0:0:1/128", 6, 128},
    {"2001:db8:0:1:1:1:1:1/128", "2001:db8:0:1:1:1:1:1/128", 6, 128},
    {"2001:db8:aaaa:bbbb:cccc:dddd:eeee:0/112", "2001:db8:aaaa:bbbb:cccc:dddd:eeee:0/112", 6, 112},
    {"::ffff:10.0.0.0/104", "::ffff:10.0.0.0/104", 6, 104},
    {"::ffff:a00:0/104", "::ffff:10.0.0.0/104", 6, 104},
    /* The longest accepted text: CIDR_STR_MAX - 1 bytes. */
    {"ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255/128",
     "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", 6, 128},
};

static void test_parse_valid(void **state)
{
    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(parse_valid); i++) {
        struct cidr c = C(parse_valid[i].in), back;
        char buf[CIDR_STR_MAX];
        int n;

        assert_int_equal(c.family, parse_valid[i].family);
        assert_int_equal(c.prefix, parse_valid[i].prefix);
        n = cidr_format(&c, buf, sizeof(buf));
        if (n < 0 || strcmp(buf, parse_valid[i].canonical) != 0)
            print_error("%s: got \"%s\" (%d), want \"%s\"\n", parse_valid[i].in, n < 0 ? "" : buf,
                        n, parse_valid[i].canonical);
        assert_string_equal(buf, parse_valid[i].canonical);
        assert_int_equal(n, (int)strlen(parse_valid[i].canonical));
        /* Round trip: the canonical text parses to an equal CIDR and is a fixpoint. */
        back = C(buf);
        assert_true(cidr_equal(&back, &c));
        assert_cidr(&back, parse_valid[i].canonical);
    }
}

static const struct {
    const char *in;
    int err;
} parse_invalid[] = {
    /* Host bits set. */
    {"10.0.0.1/8", -EINVAL},
    {"10.0.0.0/0", -EINVAL},
    {"192.168.1.1/24", -EINVAL},
    {"2001:db8::1/64", -EINVAL},
    {"::1/127", -EINVAL},
    /* Prefixes. */
    {"10.0.0.0/33", -ERANGE},
    {"10.0.0.0/99", -ERANGE},
    {"::/129", -ERANGE},
    {"10.0.0.0/4294967304", -ERANGE},
    {"10.0.0.0/99999999999999999999999", -ERANGE},
    {"10.0.0.0/-1", -EINVAL},
    {"10.0.0.0/+8", -EINVAL},
    {"10.0.0.0/08", -EINVAL},
    {"10.0.0.0/00", -EINVAL},
    {"::/0128", -EINVAL},
    {"10.0.0.0/", -EINVAL},
    {"10.0.0.0/8/8", -EINVAL},
    {"10.0.0.0/8x", -EINVAL},
    {"10.0.0.0/0x8", -EINVAL},
    {"10.0.0.0/8.0", -EINVAL},
    /* No prefix. */
    {"1.2.3.4", -EINVAL},
    {"10.0.0.0", -EINVAL},
    {"2001:db8::", -EINVAL},
    /* Spaces and control characters. */
    {" 10.0.0.0/8", -EINVAL},
    {"10.0.0.0/8 ", -EINVAL},
    {"10.0.0.0 /8", -EINVAL},
    {"10.0.0.0/ 8", -EINVAL},
    {"10.0.0.0/8\n", -EINVAL},
    {"10.0.0.0\t/8", -EINVAL},
    /* Leading zeros in the address. */
    {"010.0.0.0/8", -EINVAL},
    {"10.00.0.0/16", -EINVAL},
    {"10.0.0.00/32", -EINVAL},
    {"::ffff:010.0.0.0/104", -EINVAL},
    /* Junk. */
    {"", -EINVAL},
    {"/", -EINVAL},
    {"/8", -EINVAL},
    {"abc/8", -EINVAL},
    {"10.0.0/8", -EINVAL},
    {"10.0.0.0.0/8", -EINVAL},
    {"256.0.0.0/8", -EINVAL},
    {"0x0a.0.0.0/8", -EINVAL},
    {"10.0.0.-0/32", -EINVAL},
    {"1::2::3/64", -EINVAL},
    {"fe80::%eth0/64", -EINVAL},
    {"[2001:db8::]/32", -EINVAL},
    {"2001:db8:::/32", -EINVAL},
    {"00001::/16", -EINVAL},
    {"10.0.0.0\\8", -EINVAL},
    /* Too long: CIDR_STR_MAX bytes and more, even when a valid CIDR starts them. */
    {"ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255/1280", -EINVAL},
    {"10.0.0.0/8                                                                ", -EINVAL},
    {"0000:0000:0000:0000:0000:0000:0000:0000:0000:0000/0", -EINVAL},
};

static void test_parse_invalid(void **state)
{
    struct cidr c = poison;

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(parse_invalid); i++) {
        int r = cidr_parse(parse_invalid[i].in, &c);
        if (r != parse_invalid[i].err)
            print_error("cidr_parse(\"%s\") = %d, want %d\n", parse_invalid[i].in, r,
                        parse_invalid[i].err);
        assert_int_equal(r, parse_invalid[i].err);
        assert_poison(&c);
    }
    assert_int_equal(cidr_parse(NULL, &c), -EINVAL);
    assert_int_equal(cidr_parse("10.0.0.0/8", NULL), -EINVAL);
    assert_poison(&c);
}

static void test_format(void **state)
{
    struct cidr c = C("192.168.100.0/24"), bad, same;
    char buf[CIDR_STR_MAX];

    (void)state;
    /* Exactly enough room, then one byte short (buf untouched). */
    assert_int_equal(cidr_format(&c, buf, 17), 16);
    assert_string_equal(buf, "192.168.100.0/24");
    memset(buf, 'x', sizeof(buf));
    assert_int_equal(cidr_format(&c, buf, 16), -ENOSPC);
    assert_int_equal(buf[0], 'x');
    assert_int_equal(cidr_format(&c, buf, 0), -ENOSPC);
    /* The bytes an IPv4 CIDR does not use play no part. */
    c.addr[7] = 0x55;
    assert_int_equal(cidr_format(&c, buf, sizeof(buf)), 16);
    same = (struct cidr){.family = 4, .prefix = 24, .addr = {192, 168, 100}};
    assert_true(cidr_equal(&c, &same));
    /* Invalid structures. */
    bad = c;
    bad.family = 5;
    assert_int_equal(cidr_format(&bad, buf, sizeof(buf)), -EINVAL);
    bad = c;
    bad.prefix = 33;
    assert_int_equal(cidr_format(&bad, buf, sizeof(buf)), -EINVAL);
    bad = c;
    bad.addr[3] = 1; /* host bit */
    assert_int_equal(cidr_format(&bad, buf, sizeof(buf)), -EINVAL);
    bad = C("2001:db8::/32");
    bad.prefix = 129;
    assert_int_equal(cidr_format(&bad, buf, sizeof(buf)), -EINVAL);
    assert_int_equal(cidr_format(NULL, buf, sizeof(buf)), -EINVAL);
    assert_int_equal(cidr_format(&c, NULL, 10), -EINVAL);
    /* Every prefix length of both families round-trips, all-ones networks included. */
    for (unsigned fam = 4; fam <= 6; fam += 2) {
        unsigned bits = fam == 4 ? 32 : 128;
        for (unsigned len = 0; len <= bits; len++) {
            struct cidr x = {.family = (uint8_t)fam, .prefix = (uint8_t)len}, back;
            for (unsigned b = 0; b < len; b++)
                x.addr[b / 8] |= (uint8_t)(0x80 >> (b % 8));
            assert_true(cidr_format(&x, buf, sizeof(buf)) > 0);
            back = C(buf);
            assert_true(cidr_equal(&back, &x));
        }
    }
}

/* Overlap and containment. */

static const struct {
    const char *a, *b;
    bool overlaps, a_contains_b, b_contains_a;
} overlap_table[] = {
    {"10.0.0.0/8", "10.200.0.0/16", true, true, false},
    {"10.0.0.0/16", "10.1.0.0/16", false, false, false},
    {"10.0.0.0/24", "10.0.1.0/24", false, false, false},
    {"10.0.0.0/16", "10.0.0.0/16", true, true, true},
    {"0.0.0.0/0", "192.168.0.0/24", true, true, false},
    {"255.255.255.0/24", "255.255.255.255/32", true, true, false},
    {"10.200.16.0/20", "10.200.0.0/16", true, false, true},
    {"2001:db8::/32", "2001:db8:1::/48", true, true, false},
    {"2001:db8::/32", "2001:db9::/32", false, false, false},
    {"::/0", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", true, true, false},
    {"::/1", "8000::/1", false, false, false},
    /* Mixed families never overlap, whatever the bytes. */
    {"::/0", "10.0.0.0/8", false, false, false},
    {"0.0.0.0/0", "::/0", false, false, false},
    {"::ffff:10.0.0.0/104", "10.0.0.0/8", false, false, false},
    {"a00::/8", "10.0.0.0/8", false, false, false},
};

static void test_overlaps_contains(void **state)
{
    struct cidr bad;

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(overlap_table); i++) {
        struct cidr a = C(overlap_table[i].a), b = C(overlap_table[i].b);
        if (cidr_overlaps(&a, &b) != overlap_table[i].overlaps)
            print_error("%s %s\n", overlap_table[i].a, overlap_table[i].b);
        assert_int_equal(cidr_overlaps(&a, &b), overlap_table[i].overlaps);
        assert_int_equal(cidr_overlaps(&b, &a), overlap_table[i].overlaps);
        assert_int_equal(cidr_contains(&a, &b), overlap_table[i].a_contains_b);
        assert_int_equal(cidr_contains(&b, &a), overlap_table[i].b_contains_a);
        assert_int_equal(cidr_equal(&a, &b),
                         overlap_table[i].a_contains_b && overlap_table[i].b_contains_a);
        assert_true(cidr_overlaps(&a, &a) && cidr_contains(&a, &a) && cidr_equal(&a, &a));
    }
    bad = C("10.0.0.0/8");
    bad.addr[3] = 1;
    assert_false(cidr_overlaps(&bad, &bad));
    assert_false(cidr_contains(&bad, &bad));
    assert_false(cidr_overlaps(NULL, &bad));
    assert_false(cidr_contains(&bad, NULL));
    assert_false(cidr_equal(NULL, NULL));
}

/* Covering. */

static const struct {
    const char *in[4];
    const char *out;
} covering_table[] = {
    {{"10.0.0.0/24", "10.0.1.0/24", "10.0.2.0/24"}, "10.0.0.0/22"},
    {{"10.0.2.0/24", "10.0.0.0/24", "10.0.1.0/24"}, "10.0.0.0/22"},
    {{"10.0.0.0/24", "10.0.3.0/24"}, "10.0.0.0/22"},
    {{"10.0.0.0/24", "10.0.4.0/24"}, "10.0.0.0/21"},
    {{"10.0.1.0/24", "10.0.2.0/24"}, "10.0.0.0/22"},
    {{"10.244.0.0/24"}, "10.244.0.0/24"},
    {{"1.2.3.4/32"}, "1.2.3.4/32"},
    {{"1.2.3.4/32", "1.2.3.5/32"}, "1.2.3.4/31"},
    {{"10.0.0.0/8", "11.0.0.0/8"}, "10.0.0.0/7"},
    {{"10.1.0.0/16", "10.0.0.0/8", "10.255.255.0/24"}, "10.0.0.0/8"},
    {{"0.0.0.0/32", "255.255.255.255/32"}, "0.0.0.0/0"},
    {{"2001:db8::/64", "2001:db8:0:1::/64"}, "2001:db8::/63"},
    {{"2001:db8::/48", "2001:db8:ff::/48", "2001:db8:7::/48"}, "2001:db8::/40"},
    {{"::/128", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"}, "::/0"},
    {{"::1/128"}, "::1/128"},
};

/* A peer's pod CIDR no larger than the operator allows (issue 17, point 12). */
static void test_size_allowed(void **state)
{
    static const struct {
        const char *cidr;
        unsigned min4, min6;
        bool allowed;
    } cases[] = {
        {"10.0.0.0/16", 16, 64, true}, {"10.0.0.0/8", 16, 64, false},
        {"10.0.0.0/24", 16, 64, true}, {"0.0.0.0/0", 16, 64, false},
        {"0.0.0.0/0", 0, 64, true},    {"10.1.0.0/17", 17, 64, true},
        {"10.0.0.0/15", 16, 0, false}, {"fd00::/64", 32, 64, true},
        {"fd00::/48", 16, 64, false},  {"fd00::/48", 16, 48, true},
        {"::/0", 0, 1, false},         {"10.0.0.0/32", 32, 128, true},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cidr c;

        assert_int_equal(cidr_parse(cases[i].cidr, &c), 0);
        if (cidr_size_allowed(&c, cases[i].min4, cases[i].min6) != cases[i].allowed)
            fail_msg("%s with /%u, /%u: expected %s", cases[i].cidr, cases[i].min4, cases[i].min6,
                     cases[i].allowed ? "allowed" : "refused");
    }
    {
        struct cidr bad = {.family = 5, .prefix = 8};

        assert_false(cidr_size_allowed(&bad, 0, 0));
    }
}

static void test_covering(void **state)
{
    struct cidr list[4], got = poison;

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(covering_table); i++) {
        size_t n = 0;
        for (; n < 4 && covering_table[i].in[n]; n++)
            list[n] = C(covering_table[i].in[n]);
        assert_int_equal(cidr_covering(list, n, &got), 0);
        assert_cidr(&got, covering_table[i].out);
        for (size_t k = 0; k < n; k++)
            assert_true(cidr_contains(&got, &list[k]));
    }
    got = poison;
    list[0] = C("10.0.0.0/8");
    list[1] = C("::/0");
    assert_int_equal(cidr_covering(list, 2, &got), -EINVAL); /* mixed families */
    assert_int_equal(cidr_covering(list, 0, &got), -EINVAL);
    assert_int_equal(cidr_covering(NULL, 1, &got), -EINVAL);
    assert_int_equal(cidr_covering(list, 1, NULL), -EINVAL);
    list[1] = list[0];
    list[1].addr[3] = 1; /* host bits */
    assert_int_equal(cidr_covering(list, 2, &got), -EINVAL);
    assert_poison(&got);
}

/* Translation. */

static const struct {
    const char *ip, *from, *to;
    const char *out; /* NULL: -EINVAL */
} translate_table[] = {
    {"10.1.2.3", "10.1.0.0/16", "10.9.0.0/16", "10.9.2.3"},
    {"10.1.0.0", "10.1.0.0/16", "10.9.0.0/16", "10.9.0.0"},
    {"10.1.255.255", "10.1.0.0/16", "10.9.0.0/16", "10.9.255.255"},
    {"192.168.1.77", "192.168.1.0/24", "10.0.5.0/24", "10.0.5.77"},
    {"10.200.31.7", "10.200.16.0/20", "10.2.0.0/20", "10.2.15.7"},
    {"1.2.3.4", "1.2.3.4/32", "5.6.7.8/32", "5.6.7.8"},
    {"1.2.3.4", "0.0.0.0/0", "0.0.0.0/0", "1.2.3.4"},
    {"2001:db8:1::5", "2001:db8:1::/48", "fd00:7::/48", "fd00:7::5"},
    {"fd00:1:2:3:a:b:c:d", "fd00:1:2:3::/64", "fd00:9:9:9::/64", "fd00:9:9:9:a:b:c:d"},
    {"FD00:1:2:3::1", "fd00:1:2:3::/64", "fd00::/64", "fd00::1"},
    {"::ffff:10.1.2.3", "::ffff:10.1.0.0/112", "::ffff:10.9.0.0/112", "::ffff:10.9.2.3"},
    /* Not in `from`. */
    {"10.2.0.1", "10.1.0.0/16", "10.9.0.0/16", NULL},
    {"2001:db8:2::5", "2001:db8:1::/48", "fd00:7::/48", NULL},
    /* Prefix lengths or families differ. */
    {"10.1.2.3", "10.1.0.0/16", "10.9.0.0/24", NULL},
    {"10.1.2.3", "10.1.0.0/16", "fd00::/16", NULL},
    {"::1", "10.1.0.0/16", "10.9.0.0/16", NULL},
    {"10.1.2.3", "::/0", "::/0", NULL},
    /* Not an address. */
    {"10.1.2.3/32", "10.1.0.0/16", "10.9.0.0/16", NULL},
    {"010.1.2.3", "0.0.0.0/0", "0.0.0.0/0", NULL},
    {" 10.1.2.3", "10.1.0.0/16", "10.9.0.0/16", NULL},
    {"10.1.2.3 ", "10.1.0.0/16", "10.9.0.0/16", NULL},
    {"", "10.1.0.0/16", "10.9.0.0/16", NULL},
    {"10.1.2", "10.1.0.0/16", "10.9.0.0/16", NULL},
    {"fe80::1%eth0", "fe80::/64", "fe80::/64", NULL},
    {"0000:0000:0000:0000:0000:0000:0000:0000:0000", "::/0", "::/0", NULL},
};

static void test_translate(void **state)
{
    char buf[64];

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(translate_table); i++) {
        struct cidr from = C(translate_table[i].from), to = C(translate_table[i].to);
        int r;

        memset(buf, 'x', sizeof(buf));
        r = cidr_translate(translate_table[i].ip, &from, &to, buf, sizeof(buf));
        if (translate_table[i].out == NULL) {
            if (r != -EINVAL)
                print_error("%s: %d\n", translate_table[i].ip, r);
            assert_int_equal(r, -EINVAL);
            assert_int_equal(buf[0], 'x');
            continue;
        }
        if (r < 0 || strcmp(buf, translate_table[i].out) != 0)
            print_error("%s: got %s (%d), want %s\n", translate_table[i].ip, r < 0 ? "" : buf, r,
                        translate_table[i].out);
        assert_int_equal(r, (int)strlen(translate_table[i].out));
        assert_string_equal(buf, translate_table[i].out);
    }
}

static void test_translate_args(void **state)
{
    struct cidr from = C("10.1.0.0/16"), to = C("10.9.0.0/16"), bad = from;
    char buf[16];

    (void)state;
    memset(buf, 'x', sizeof(buf));
    assert_int_equal(cidr_translate("10.1.2.3", &from, &to, buf, 8), -ENOSPC); /* "10.9.2.3" */
    assert_int_equal(buf[0], 'x');
    assert_int_equal(cidr_translate("10.1.2.3", &from, &to, buf, 9), 8);
    assert_string_equal(buf, "10.9.2.3");
    bad.addr[3] = 1;
    assert_int_equal(cidr_translate("10.1.2.3", &bad, &to, buf, sizeof(buf)), -EINVAL);
    assert_int_equal(cidr_translate(NULL, &from, &to, buf, sizeof(buf)), -EINVAL);
    assert_int_equal(cidr_translate("10.1.2.3", NULL, &to, buf, sizeof(buf)), -EINVAL);
    assert_int_equal(cidr_translate("10.1.2.3", &from, NULL, buf, sizeof(buf)), -EINVAL);
    assert_int_equal(cidr_translate("10.1.2.3", &from, &to, NULL, 0), -EINVAL);
}

/* IPAM. */

/* The cluster of most scenarios: pod CIDR 10.200.0.0/16, service CIDR 10.96.0.0/16 and two
 * reservedSubnets, 10.0.0.0/15 and 10.3.0.0/16. The first free /16 of 10.0.0.0/8 is then
 * 10.2.0.0/16 and the second 10.4.0.0/16. */
static struct ipam *cluster(void)
{
    struct ipam *p = NULL;

    assert_int_equal(ipam_new(&p), 0);
    assert_int_equal(ipam_reserve(p, &(struct cidr){0}, "x"), -EINVAL); /* family 0 */
    assert_int_equal(ipam_reserve(p, P("10.200.0.0/16"), "pod CIDR"), 0);
    assert_int_equal(ipam_reserve(p, P("10.96.0.0/16"), "service CIDR"), 0);
    assert_int_equal(ipam_reserve(p, P("10.0.0.0/15"), "reservedSubnets[0]"), 0);
    assert_int_equal(ipam_reserve(p, P("10.3.0.0/16"), "reservedSubnets[1]"), 0);
    return p;
}

static const struct cidr *reserved_of_cluster(size_t *n)
{
    static struct cidr r[4];

    r[0] = C("10.200.0.0/16");
    r[1] = C("10.96.0.0/16");
    r[2] = C("10.0.0.0/15");
    r[3] = C("10.3.0.0/16");
    *n = 4;
    return r;
}

/* Maps and checks the result. */
static void map(struct ipam *p, const char *id, const char *remote, const char *expect,
                bool remapped)
{
    struct cidr got = poison, back_remote, back_mapped;
    bool re = !remapped;
    int r = ipam_map_peer(p, id, P(remote), &got, &re);

    if (r != 0 || strcmp(S(&got), expect) != 0)
        print_error("map %s %s: %d %s, want %s\n", id, remote, r, S(&got), expect);
    assert_int_equal(r, 0);
    assert_cidr(&got, expect);
    assert_int_equal(re, remapped);
    assert_int_equal(ipam_lookup(p, id, &back_remote, &back_mapped), 0);
    assert_cidr(&back_remote, remote);
    assert_cidr(&back_mapped, expect);
}

static void map_fails(struct ipam *p, const char *id, const char *remote, int err)
{
    struct cidr got = poison;
    bool re = true;

    assert_int_equal(ipam_map_peer(p, id, P(remote), &got, &re), err);
    assert_poison(&got);
    assert_true(re);
}

/* A text dump of everything observable about peers `ids` (and the counts), to compare states. */
static void dump(const struct ipam *p, const char *const *ids, size_t n, char *buf, size_t size)
{
    const char *conf[8];
    size_t used = 0, nc = ipam_conflicts(p, conf, ARRAY_SIZE(conf));

    used += (size_t)snprintf(buf + used, size - used,
                             "peers=%zu conflicts=%zu:", ipam_peer_count(p), nc);
    for (size_t i = 0; i < nc && i < ARRAY_SIZE(conf); i++)
        used += (size_t)snprintf(buf + used, size - used, " %s", conf[i]);
    for (size_t i = 0; i < n && used < size; i++) {
        struct cidr r, m;
        if (ipam_lookup(p, ids[i], &r, &m) == 0)
            used += (size_t)snprintf(buf + used, size - used, "; %s %s->%s", ids[i], S(&r), S(&m));
        else
            used += (size_t)snprintf(buf + used, size - used, "; %s -", ids[i]);
    }
    assert_true(used < size);
}

static void test_keep_own(void **state)
{
    struct ipam *p = cluster();

    (void)state;
    map(p, "a", "192.168.0.0/16", "192.168.0.0/16", false);
    assert_int_equal(ipam_peer_count(p), 1);
    /* a's CIDR is now taken: a later peer overlapping it is remapped. */
    map(p, "b", "192.168.10.0/24", "10.2.0.0/24", true);
    map(p, "c", "192.168.0.0/16", "10.4.0.0/16", true);
    /* A peer inside 10.0.0.0/8 that overlaps nothing keeps its CIDR, and the pool then skips it. */
    map(p, "d", "10.5.0.0/16", "10.5.0.0/16", false);
    map(p, "e", "10.200.0.0/16", "10.6.0.0/16", true);
    assert_int_equal(ipam_peer_count(p), 5);
    assert_int_equal(ipam_conflicts(p, NULL, 0), 0);
    p = ipam_free(p);
    assert_null(p);
    assert_null(ipam_free(NULL));
}

static void test_remap_local_cidr(void **state)
{
    struct ipam *p = cluster();
    const struct cidr *res;
    struct cidr got;
    size_t nres;
    bool re;

    (void)state;
    /* A /16 equal to the local pod CIDR: a free /16 of 10.0.0.0/8 outside every reservation. */
    map(p, "a", "10.200.0.0/16", "10.2.0.0/16", true);
    /* The service CIDR and a reservedSubnet are taken too. */
    map(p, "b", "10.96.0.0/16", "10.4.0.0/16", true);
    map(p, "c", "10.0.0.0/16", "10.5.0.0/16", true);
    res = reserved_of_cluster(&nres);
    for (const char *const *id = (const char *const[]){"a", "b", "c", NULL}; *id; id++) {
        assert_int_equal(ipam_lookup(p, *id, NULL, &got), 0);
        for (size_t i = 0; i < nres; i++)
            assert_false(cidr_overlaps(&got, &res[i]));
        assert_true(cidr_contains(P("10.0.0.0/8"), &got));
    }
    /* A /20 overlapping the local /16 gets a /20, the first free one. */
    map(p, "d", "10.200.16.0/20", "10.6.0.0/20", true);
    map(p, "e", "10.200.0.0/20", "10.6.16.0/20", true);
    /* Outputs are optional. */
    assert_int_equal(ipam_map_peer(p, "f", P("10.200.0.0/24"), NULL, NULL), 0);
    assert_int_equal(ipam_lookup(p, "f", NULL, &got), 0);
    assert_cidr(&got, "10.6.32.0/24");
    assert_int_equal(ipam_map_peer(p, "f", P("10.200.0.0/24"), &got, &re), 0);
    assert_true(re);
    ipam_free(p);
}

static void test_same_cidr_distinct(void **state)
{
    struct ipam *p = cluster();
    char id[16];
    /* The free /12 blocks of 10.0.0.0/8, in order (10.0/12, 10.96/12 and 10.192/12 hold
     * reservations). */
    static const char *blocks[] = {
        "10.16.0.0/12",  "10.32.0.0/12",  "10.48.0.0/12",  "10.64.0.0/12",  "10.80.0.0/12",
        "10.112.0.0/12", "10.128.0.0/12", "10.144.0.0/12", "10.160.0.0/12", "10.176.0.0/12",
        "10.208.0.0/12", "10.224.0.0/12", "10.240.0.0/12",
    };

    (void)state;
    map(p, "first", "172.16.0.0/12", "172.16.0.0/12", false);
    for (size_t i = 0; i < ARRAY_SIZE(blocks); i++) {
        snprintf(id, sizeof(id), "peer-%zu", i);
        map(p, id, "172.16.0.0/12", blocks[i], true);
    }
    map_fails(p, "last", "172.16.0.0/12", -ENOSPC);
    assert_int_equal(ipam_lookup(p, "last", NULL, NULL), -ENOENT);
    assert_int_equal(ipam_peer_count(p), ARRAY_SIZE(blocks) + 1);
    /* Smaller blocks still fit in the reservations' /12s. */
    map(p, "small", "172.16.0.0/16", "10.2.0.0/16", true);
    ipam_free(p);
}

static void test_idempotent(void **state)
{
    struct ipam *p = cluster();
    const char *ids[] = {"a", "b", "c", "d"};
    char before[1024], after[1024];

    (void)state;
    map(p, "a", "10.200.0.0/16", "10.2.0.0/16", true);
    map(p, "b", "192.168.0.0/16", "192.168.0.0/16", false);
    map(p, "c", "10.200.0.0/24", "10.4.0.0/24", true);
    map(p, "d", "192.168.0.0/20", "10.4.16.0/20", true);
    dump(p, ids, ARRAY_SIZE(ids), before, sizeof(before));
    for (int round = 0; round < 3; round++) {
        map(p, "d", "192.168.0.0/20", "10.4.16.0/20", true);
        map(p, "c", "10.200.0.0/24", "10.4.0.0/24", true);
        map(p, "b", "192.168.0.0/16", "192.168.0.0/16", false);
        map(p, "a", "10.200.0.0/16", "10.2.0.0/16", true);
    }
    dump(p, ids, ARRAY_SIZE(ids), after, sizeof(after));
    assert_string_equal(before, after);
    /* Re-reserving an equal CIDR changes nothing either. */
    assert_int_equal(ipam_reserve(p, P("10.200.0.0/16"), "again"), 0);
    assert_string_equal(ipam_reserved_name(p, P("10.200.1.0/24")), "pod CIDR");
    map(p, "a", "10.200.0.0/16", "10.2.0.0/16", true);
    ipam_free(p);
}

static void test_cidr_change(void **state)
{
    struct ipam *p = cluster();

    (void)state;
    map(p, "a", "10.200.0.0/16", "10.2.0.0/16", true);
    /* A new remote: the old block is freed first, so the first free /20 is inside it. */
    map(p, "a", "10.200.0.0/20", "10.2.0.0/20", true);
    map(p, "b", "10.200.0.0/16", "10.4.0.0/16", true);
    /* A remote that overlaps nothing: kept, and 10.2.0.0/20 is free again. */
    map(p, "a", "192.168.0.0/16", "192.168.0.0/16", false);
    map(p, "c", "10.96.0.0/16", "10.2.0.0/16", true);
    /* A peer whose remote moves onto its own current mapping keeps it (its old one is released
     * before the overlap test). */
    map(p, "c", "10.2.0.0/16", "10.2.0.0/16", false);
    assert_int_equal(ipam_peer_count(p), 3);
    ipam_free(p);
}

static void test_release(void **state)
{
    struct ipam *p = cluster();

    (void)state;
    map(p, "a", "10.200.0.0/16", "10.2.0.0/16", true);
    map(p, "b", "10.200.0.0/16", "10.4.0.0/16", true);
    ipam_release_peer(p, "a");
    assert_int_equal(ipam_lookup(p, "a", NULL, NULL), -ENOENT);
    assert_int_equal(ipam_peer_count(p), 1);
    map(p, "c", "10.200.0.0/16", "10.2.0.0/16", true);
    ipam_release_peer(p, "a");
    ipam_release_peer(p, "unknown");
    ipam_release_peer(p, NULL);
    ipam_release_peer(NULL, "a");
    assert_int_equal(ipam_peer_count(p), 2);
    ipam_release_peer(p, "b");
    ipam_release_peer(p, "c");
    assert_int_equal(ipam_peer_count(p), 0);
    map(p, "d", "10.200.0.0/16", "10.2.0.0/16", true);
    ipam_free(p);
}

static void test_restore(void **state)
{
    static const struct {
        const char *id, *remote;
    } peers[] = {
        {"a", "10.200.0.0/16"}, {"b", "192.168.0.0/16"}, {"c", "192.168.0.0/16"},
        {"d", "10.200.0.0/20"}, {"e", "172.16.0.0/12"},  {"f", "10.96.0.0/24"},
    };
    const char *ids[] = {"a", "b", "c", "d", "e", "f", "g", "x"};
    struct ipam *p1 = cluster(), *p2 = cluster();
    char d1[2048], d2[2048];
    struct cidr r, m, m1, m2;

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(peers); i++)
        assert_int_equal(ipam_map_peer(p1, peers[i].id, P(peers[i].remote), NULL, NULL), 0);
    /* The restart: the recorded mappings come back in another order. */
    for (size_t i = ARRAY_SIZE(peers); i-- > 0;) {
        assert_int_equal(ipam_lookup(p1, peers[i].id, &r, &m), 0);
        assert_int_equal(ipam_restore(p2, peers[i].id, &r, &m), 0);
        assert_int_equal(ipam_restore(p2, peers[i].id, &r, &m), 0); /* again: a no-op */
    }
    dump(p1, ids, ARRAY_SIZE(ids), d1, sizeof(d1));
    dump(p2, ids, ARRAY_SIZE(ids), d2, sizeof(d2));
    assert_string_equal(d1, d2);
    /* Mapping the peers again finds their restored mappings; a new peer gets the same block in
     * both. */
    for (size_t i = 0; i < ARRAY_SIZE(peers); i++) {
        assert_int_equal(ipam_map_peer(p2, peers[i].id, P(peers[i].remote), &m2, NULL), 0);
        assert_int_equal(ipam_lookup(p1, peers[i].id, NULL, &m1), 0);
        assert_true(cidr_equal(&m1, &m2));
    }
    assert_int_equal(ipam_map_peer(p1, "g", P("10.200.0.0/16"), &m1, NULL), 0);
    assert_int_equal(ipam_map_peer(p2, "g", P("10.200.0.0/16"), &m2, NULL), 0);
    assert_true(cidr_equal(&m1, &m2));
    dump(p1, ids, ARRAY_SIZE(ids), d1, sizeof(d1));
    dump(p2, ids, ARRAY_SIZE(ids), d2, sizeof(d2));
    assert_string_equal(d1, d2);

    /* Conflicting restores record nothing: onto a reservation, onto another peer's mapping. */
    assert_int_equal(ipam_restore(p2, "x", P("10.200.0.0/16"), P("10.96.0.0/16")), -EEXIST);
    assert_int_equal(ipam_restore(p2, "x", P("10.200.0.0/24"), P("10.96.7.0/24")), -EEXIST);
    assert_int_equal(ipam_lookup(p1, "a", NULL, &m1), 0);
    assert_int_equal(ipam_restore(p2, "x", P("10.200.0.0/16"), &m1), -EEXIST);
    assert_int_equal(ipam_restore(p2, "x", P("192.168.0.0/16"), P("192.168.0.0/16")), -EEXIST);
    /* A peer restored onto another's block keeps its own mapping. */
    assert_int_equal(ipam_lookup(p2, "b", NULL, &m2), 0);
    assert_int_equal(ipam_restore(p2, "c", P("192.168.0.0/16"), &m2), -EEXIST);
    dump(p2, ids, ARRAY_SIZE(ids), d2, sizeof(d2));
    assert_string_equal(d1, d2);
    /* Families or prefix lengths that differ are not a mapping. */
    assert_int_equal(ipam_restore(p2, "x", P("10.200.0.0/16"), P("10.50.0.0/24")), -EINVAL);
    assert_int_equal(ipam_restore(p2, "x", P("10.200.0.0/16"), P("fd00::/16")), -EINVAL);
    assert_int_equal(ipam_restore(p2, "", P("10.200.0.0/16"), P("10.50.0.0/16")), -EINVAL);
    assert_int_equal(ipam_lookup(p2, "x", NULL, NULL), -ENOENT);
    /* A mapping outside the pool is accepted (the pool may have changed since). */
    assert_int_equal(ipam_restore(p2, "x", P("10.200.0.0/16"), P("100.64.0.0/16")), 0);
    /* Restoring a known peer with another mapping replaces it. */
    assert_int_equal(ipam_restore(p2, "x", P("10.200.0.0/16"), P("100.65.0.0/16")), 0);
    assert_int_equal(ipam_lookup(p2, "x", NULL, &m2), 0);
    assert_cidr(&m2, "100.65.0.0/16");
    assert_int_equal(ipam_peer_count(p2), 8);

    /* After a restart with a new reservation, the restore of a peer it covers fails, and the
     * caller maps the peer again. */
    ipam_free(p2);
    p2 = cluster();
    assert_int_equal(ipam_reserve(p2, P("10.2.0.0/16"), "reservedSubnets[2]"), 0);
    assert_int_equal(ipam_lookup(p1, "a", &r, &m1), 0);
    assert_cidr(&m1, "10.2.0.0/16");
    assert_int_equal(ipam_restore(p2, "a", &r, &m1), -EEXIST);
    map(p2, "a", "10.200.0.0/16", "10.4.0.0/16", true);
    ipam_free(p1);
    ipam_free(p2);
}

static void test_exhaustion(void **state)
{
    const char *ids[] = {"p0", "p1", "p2", "p3", "p4", "big"};
    struct ipam *p = NULL;
    char before[1024], after[1024];

    (void)state;
    assert_int_equal(ipam_new(&p), 0);
    assert_int_equal(ipam_reserve(p, P("10.200.0.0/16"), "pod CIDR"), 0);
    assert_int_equal(ipam_set_pool(p, P("10.0.0.0/22"), 1), 0);
    map(p, "p0", "10.200.0.0/24", "10.0.0.0/24", true);
    map(p, "p1", "10.200.0.0/24", "10.0.1.0/24", true);
    map(p, "p2", "10.200.0.0/24", "10.0.2.0/24", true);
    map(p, "p3", "10.200.0.0/24", "10.0.3.0/24", true);
    dump(p, ids, ARRAY_SIZE(ids), before, sizeof(before));
    map_fails(p, "p4", "10.200.0.0/24", -ENOSPC);
    map_fails(p, "big", "10.200.0.0/21", -ENOSPC); /* larger than the pool */
    /* p0 asks for a /23: its own /24 does not count, but the others leave no /23. Its mapping
     * stays. */
    map_fails(p, "p0", "10.200.0.0/23", -ENOSPC);
    map_fails(p, "p0", "10.200.0.0/22", -ENOSPC);
    dump(p, ids, ARRAY_SIZE(ids), after, sizeof(after));
    assert_string_equal(before, after);
    /* A peer that needs no remapping still fits. */
    map(p, "p4", "192.168.0.0/24", "192.168.0.0/24", false);
    /* Release one: the hole is found. */
    ipam_release_peer(p, "p2");
    map(p, "big", "10.200.0.0/24", "10.0.2.0/24", true);
    ipam_free(p);
}

static void test_many_peers(void **state)
{
    struct ipam *p = NULL;
    char id[32], want[CIDR_STR_MAX];
    const size_t n = 1000;

    (void)state;
    assert_int_equal(ipam_new(&p), 0);
    assert_int_equal(ipam_reserve(p, P("10.200.0.0/16"), "pod CIDR"), 0);
    for (size_t i = 0; i < n; i++) {
        snprintf(id, sizeof(id), "cluster-%04zu", i);
        snprintf(want, sizeof(want), "10.%zu.%zu.0/24", i / 256, i % 256);
        map(p, id, "10.200.0.0/24", want, true);
    }
    assert_int_equal(ipam_peer_count(p), n);
    /* Release every other peer: the next ones fill the holes in address order. */
    for (size_t i = 0; i < n; i += 2) {
        snprintf(id, sizeof(id), "cluster-%04zu", i);
        ipam_release_peer(p, id);
    }
    for (size_t i = 0; i < n; i += 2) {
        snprintf(id, sizeof(id), "again-%04zu", i);
        snprintf(want, sizeof(want), "10.%zu.%zu.0/24", i / 256, i % 256);
        map(p, id, "10.200.0.0/24", want, true);
    }
    /* Then a /16 goes after the last /24 and a peer that overlaps nothing keeps its CIDR. */
    map(p, "wide", "10.200.0.0/16", "10.4.0.0/16", true);
    map(p, "own", "10.5.0.0/16", "10.5.0.0/16", false);
    map(p, "wide2", "10.200.0.0/16", "10.6.0.0/16", true);
    assert_int_equal(ipam_peer_count(p), n + 3);
    ipam_free(p);
}

/* The CIDR of the k-th half-space below the top: prefix k, the k - 1 first bits set. Reserving
 * k = 1 .. bits takes every address but the last one. */
static struct cidr half(uint8_t family, unsigned k)
{
    struct cidr c = {.family = family, .prefix = (uint8_t)k};

    for (unsigned b = 0; b + 1 < k; b++)
        c.addr[b / 8] |= (uint8_t)(0x80 >> (b % 8));
    return c;
}

/* Searches that a scan block by block could not finish (2^31 blocks and more): the walk jumps over
 * each taken range, so its cost does not depend on the pool's size. No timing is asserted: a
 * pool-sized search would simply never end (and the test would time out). */
static void test_search_independent_of_pool_size(void **state)
{
    struct ipam *p = NULL;
    struct cidr pool[2], w;
    char id[32], want[CIDR_STR_MAX];

    (void)state;
    assert_int_equal(ipam_new(&p), 0);
    pool[0] = C("0.0.0.0/0");
    pool[1] = C("::/0");
    assert_int_equal(ipam_set_pool(p, pool, 2), 0);
    assert_int_equal(ipam_reserve(p, P("0.0.0.0/1"), "low half"), 0);
    assert_int_equal(ipam_reserve(p, P("128.0.0.0/2"), "third quarter"), 0);
    assert_int_equal(ipam_reserve(p, P("192.0.0.0/32"), "one address"), 0);
    assert_int_equal(ipam_reserve(p, P("::/1"), "low half"), 0);
    assert_int_equal(ipam_reserve(p, P("8000::/2"), "third quarter"), 0);
    map(p, "v4", "0.0.0.0/32", "192.0.0.1/32", true);
    map(p, "v4b", "0.0.0.0/32", "192.0.0.2/32", true);
    map(p, "v6", "::/128", "c000::/128", true);
    map(p, "v6b", "::/128", "c000::1/128", true);
    map(p, "v6c", "::/64", "c000:0:0:1::/64", true);
    ipam_free(p);

    /* Everything but the very last address taken: the last block is found, and after it the walk
     * ends at the top of the address space without wrapping around. */
    for (uint8_t fam = 4; fam <= 6; fam += 2) {
        unsigned bits = fam == 4 ? 32 : 128;
        assert_int_equal(ipam_new(&p), 0);
        pool[0] = half(fam, 0);
        assert_int_equal(ipam_set_pool(p, pool, 1), 0);
        for (unsigned k = 1; k <= bits; k++) {
            w = half(fam, k);
            assert_int_equal(ipam_reserve(p, &w, "half"), 0);
        }
        w = half(fam, 0);
        w.prefix = (uint8_t)bits; /* 0.0.0.0/32 or ::/128, inside the first reservation */
        assert_int_equal(cidr_format(&w, want, sizeof(want)), fam == 4 ? 10 : 6);
        map(p, "last", want,
            fam == 4 ? "255.255.255.255/32" : "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", true);
        map_fails(p, "none", want, -ENOSPC);
        ipam_release_peer(p, "last");
        map(p, "none", want,
            fam == 4 ? "255.255.255.255/32" : "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", true);
        ipam_free(p);
    }

    /* 3,000 /64 peers in a /16 (2^48 blocks) with reservations sprinkled: each lands on the next
     * free block. */
    assert_int_equal(ipam_new(&p), 0);
    pool[0] = C("fd00::/16");
    assert_int_equal(ipam_set_pool(p, pool, 1), 0);
    assert_int_equal(ipam_reserve(p, P("fd00:0:0:10::/60"), "r1"), 0);
    assert_int_equal(ipam_reserve(p, P("fd00:0:0:100::/56"), "r2"), 0);
    for (unsigned i = 0, block = 0; i < 3000; i++, block++) {
        if (block == 0x10)
            block = 0x20;
        if (block == 0x100)
            block = 0x200;
        snprintf(id, sizeof(id), "peer-%u", i);
        snprintf(want, sizeof(want), "fd00:0:0:%x::/64", block);
        w = C(want);
        assert_true(cidr_format(&w, want, sizeof(want)) > 0); /* canonical: "fd00::/64" first */
        map(p, id, "fd00:0:0:10::/64", want, true);
    }
    assert_int_equal(ipam_peer_count(p), 3000);
    ipam_free(p);
}

static void test_pool_list(void **state)
{
    struct ipam *p = NULL;
    struct cidr pools[4], bad[2];

    (void)state;
    assert_int_equal(ipam_new(&p), 0);
    assert_int_equal(ipam_reserve(p, P("10.200.0.0/16"), "pod CIDR"), 0);
    /* A pool too small for a /24, an IPv6 pool, then two that fit. */
    pools[0] = C("10.0.0.0/25");
    pools[1] = C("fd00::/16");
    pools[2] = C("10.1.0.0/23");
    pools[3] = C("172.16.0.0/24");
    assert_int_equal(ipam_set_pool(p, pools, 4), 0);
    map(p, "a", "10.200.0.0/24", "10.1.0.0/24", true);
    map(p, "b", "10.200.0.0/24", "10.1.1.0/24", true);
    map(p, "c", "10.200.0.0/24", "172.16.0.0/24", true); /* first pool full: the next */
    map_fails(p, "d", "10.200.0.0/24", -ENOSPC);
    map(p, "e", "10.200.0.0/25", "10.0.0.0/25", true); /* the first pool fits a /25 */
    map(p, "f", "fd00::/64", "fd00::/64", false);
    map(p, "g", "fd00::/64", "fd00:0:0:1::/64", true);
    /* Invalid pools change nothing. */
    bad[0] = C("192.168.0.0/24");
    bad[1] = C("192.168.1.0/24");
    bad[1].addr[3] = 9;
    assert_int_equal(ipam_set_pool(p, bad, 2), -EINVAL);
    assert_int_equal(ipam_set_pool(p, bad, 0), -EINVAL);
    assert_int_equal(ipam_set_pool(p, NULL, 1), -EINVAL);
    assert_int_equal(ipam_set_pool(NULL, bad, 1), -EINVAL);
    map_fails(p, "d", "10.200.0.0/24", -ENOSPC);
    /* A new pool: existing mappings stay, even outside it. */
    assert_int_equal(ipam_set_pool(p, bad, 1), 0);
    map(p, "d", "10.200.0.0/24", "192.168.0.0/24", true);
    map(p, "a", "10.200.0.0/24", "10.1.0.0/24", true);
    ipam_free(p);
}

static void test_conflicts(void **state)
{
    struct ipam *p = cluster();
    const char *ids[4] = {NULL};

    (void)state;
    map(p, "a", "192.168.0.0/16", "192.168.0.0/16", false);
    map(p, "b", "10.200.0.0/16", "10.2.0.0/16", true);
    map(p, "c", "172.16.0.0/16", "172.16.0.0/16", false);
    assert_int_equal(ipam_conflicts(p, ids, 4), 0);
    assert_null(ids[0]);
    /* The configuration changes: the caller re-reserves everything. */
    ipam_clear_reserved(p);
    assert_int_equal(ipam_peer_count(p), 3);
    assert_null(ipam_reserved_name(p, P("10.200.0.0/16")));
    assert_int_equal(ipam_reserve(p, P("10.200.0.0/16"), "pod CIDR"), 0);
    assert_int_equal(ipam_reserve(p, P("10.96.0.0/16"), "service CIDR"), 0);
    assert_int_equal(ipam_reserve(p, P("10.2.0.0/24"), "reservedSubnets[0]"), 0);
    assert_int_equal(ipam_reserve(p, P("192.168.0.0/17"), "reservedSubnets[1]"), 0);
    assert_int_equal(ipam_conflicts(p, ids, 4), 2);
    assert_string_equal(ids[0], "b"); /* address order */
    assert_string_equal(ids[1], "a");
    assert_int_equal(ipam_conflicts(p, ids, 1), 2);
    assert_int_equal(ipam_conflicts(p, NULL, 0), 2);
    assert_string_equal(ipam_reserved_name(p, P("192.168.0.0/16")), "reservedSubnets[1]");
    assert_string_equal(ipam_reserved_name(p, P("10.2.0.0/16")), "reservedSubnets[0]");
    assert_null(ipam_reserved_name(p, P("172.16.0.0/16")));
    /* Mapping the same remote again re-maps a conflicting peer; the others keep theirs. */
    map(p, "a", "192.168.0.0/16", "10.0.0.0/16", true);
    map(p, "b", "10.200.0.0/16", "10.1.0.0/16", true);
    map(p, "c", "172.16.0.0/16", "172.16.0.0/16", false);
    assert_int_equal(ipam_conflicts(p, ids, 4), 0);
    /* Without reservations, a remote equal to the old pod CIDR is kept. */
    ipam_clear_reserved(p);
    ipam_clear_reserved(NULL);
    map(p, "d", "10.200.0.0/16", "10.200.0.0/16", false);
    assert_int_equal(ipam_conflicts(NULL, ids, 4), 0);
    ipam_free(p);
}

static void test_ipv6(void **state)
{
    struct ipam *p = NULL;
    struct cidr pools[2];

    (void)state;
    assert_int_equal(ipam_new(&p), 0);
    assert_int_equal(ipam_reserve(p, P("fd00:10::/48"), "pod CIDR"), 0);
    assert_int_equal(ipam_reserve(p, P("fd00:96::/108"), "service CIDR"), 0);
    /* IPv4 reservations do not block IPv6 peers, and the reverse. */
    assert_int_equal(ipam_reserve(p, P("0.0.0.0/0"), "everything v4"), 0);
    /* The default pool is IPv4 only: an IPv6 peer that must move has nowhere to go. */
    map_fails(p, "a", "fd00:10::/48", -ENOSPC);
    map(p, "own", "2001:db8::/32", "2001:db8::/32", false);
    pools[0] = C("10.0.0.0/8");
    pools[1] = C("fd00::/16");
    assert_int_equal(ipam_set_pool(p, pools, 2), 0);
    map(p, "a", "fd00:10::/48", "fd00::/48", true);
    map(p, "b", "fd00:10::/48", "fd00:0:1::/48", true);
    map(p, "c", "fd00:96::/64", "fd00:0:2::/64", true);    /* covers the service CIDR */
    map(p, "d", "2001:db8:5::/48", "fd00:0:3::/48", true); /* overlaps "own" */
    map(p, "a", "fd00:10::/48", "fd00::/48", true);
    /* A changed remote, a release, a restore. */
    map(p, "b", "fd00:10::/56", "fd00:0:1::/56", true);
    ipam_release_peer(p, "a");
    map(p, "e", "fd00:10::/48", "fd00::/48", true);
    assert_int_equal(ipam_restore(p, "f", P("fd00:10::/48"), P("fd00:0:1::/48")), -EEXIST);
    assert_int_equal(ipam_restore(p, "f", P("fd00:10::/48"), P("fd00:96::/48")), -EEXIST);
    assert_int_equal(ipam_restore(p, "f", P("fd00:10::/48"), P("fd00:7::/48")), 0);
    map(p, "g", "fd00:10::/48", "fd00:0:4::/48", true);
    /* IPv4 reservations still bind IPv4 peers: 0.0.0.0/0 leaves no room in 10.0.0.0/8. */
    map_fails(p, "v4", "10.0.0.0/8", -ENOSPC);
    /* Exhaustion of a tiny IPv6 pool. */
    pools[0] = C("fd01::/126");
    assert_int_equal(ipam_set_pool(p, pools, 1), 0);
    map(p, "t1", "fd00:10::/127", "fd01::/127", true);
    map(p, "t2", "fd00:10::/127", "fd01::2/127", true);
    map_fails(p, "t3", "fd00:10::/127", -ENOSPC);
    /* ipam_conflicts across families. */
    assert_int_equal(ipam_reserve(p, P("fd01::/127"), "new"), 0);
    {
        const char *ids[2];
        assert_int_equal(ipam_conflicts(p, ids, 2), 1);
        assert_string_equal(ids[0], "t1");
    }
    ipam_free(p);
}

static void test_limits(void **state)
{
    struct ipam *p = NULL;
    struct cidr pools[IPAM_MAX_POOLS + 1], got;
    char id[IPAM_ID_MAX + 1], want[CIDR_STR_MAX];

    (void)state;
    assert_int_equal(ipam_new(NULL), -EINVAL);
    assert_int_equal(ipam_new(&p), 0);
    /* IDs: IPAM_ID_MAX - 1 bytes at most, not empty. */
    memset(id, 'a', sizeof(id));
    id[IPAM_ID_MAX - 1] = '\0';
    map(p, id, "192.168.0.0/24", "192.168.0.0/24", false);
    id[IPAM_ID_MAX - 1] = 'a';
    id[IPAM_ID_MAX] = '\0';
    map_fails(p, id, "192.168.1.0/24", -EINVAL);
    assert_int_equal(ipam_lookup(p, id, NULL, NULL), -ENOENT);
    assert_int_equal(ipam_restore(p, id, P("1.0.0.0/8"), P("1.0.0.0/8")), -EINVAL);
    ipam_release_peer(p, id); /* too long: a no-op, the 63-byte one stays */
    map_fails(p, "", "192.168.1.0/24", -EINVAL);
    map_fails(p, NULL, "192.168.1.0/24", -EINVAL);
    assert_int_equal(ipam_map_peer(NULL, "x", P("1.0.0.0/8"), NULL, NULL), -EINVAL);
    assert_int_equal(ipam_map_peer(p, "x", NULL, NULL, NULL), -EINVAL);
    assert_int_equal(ipam_lookup(NULL, "x", NULL, NULL), -ENOENT);
    assert_int_equal(ipam_lookup(p, NULL, NULL, NULL), -ENOENT);
    assert_int_equal(ipam_peer_count(p), 1);
    assert_int_equal(ipam_peer_count(NULL), 0);
    /* Names of reservations: the same bound; NULL is an empty name. */
    assert_int_equal(ipam_reserve(p, P("1.0.0.0/8"), id), -EINVAL);
    id[IPAM_ID_MAX - 1] = '\0';
    assert_int_equal(ipam_reserve(p, P("1.0.0.0/8"), id), 0);
    assert_int_equal(ipam_reserve(p, P("2.0.0.0/8"), NULL), 0);
    assert_string_equal(ipam_reserved_name(p, P("2.0.0.0/16")), "");
    assert_int_equal(ipam_reserve(NULL, P("3.0.0.0/8"), "x"), -EINVAL);
    assert_int_equal(ipam_reserve(p, NULL, "x"), -EINVAL);
    assert_null(ipam_reserved_name(NULL, P("2.0.0.0/16")));
    assert_null(ipam_reserved_name(p, NULL));

    /* Pools: IPAM_MAX_POOLS entries. */
    for (size_t i = 0; i <= IPAM_MAX_POOLS; i++) {
        snprintf(want, sizeof(want), "100.%zu.0.0/16", i);
        pools[i] = C(want);
    }
    assert_int_equal(ipam_set_pool(p, pools, IPAM_MAX_POOLS + 1), -ENOSPC);
    assert_int_equal(ipam_set_pool(p, pools, IPAM_MAX_POOLS), 0);
    map(p, "in-pool", "192.168.0.0/16", "100.0.0.0/16", true);
    ipam_release_peer(p, "in-pool");

    /* Ranges: IPAM_MAX_RANGES reservations and peers together. 3 are used (2 reservations, one
     * peer): fill with /24 peers of the 64 /16 pools. */
    for (size_t i = 3; i < IPAM_MAX_RANGES; i++) {
        size_t k = i - 3;
        snprintf(id, sizeof(id), "p%zu", k);
        snprintf(want, sizeof(want), "100.%zu.%zu.0/24", k / 256, k % 256);
        map(p, id, "192.168.0.0/24", want, true);
    }
    assert_int_equal(ipam_peer_count(p), IPAM_MAX_RANGES - 2);
    map_fails(p, "one-more", "172.16.0.0/24", -ENOSPC);
    assert_int_equal(ipam_reserve(p, P("3.0.0.0/8"), "x"), -ENOSPC);
    assert_int_equal(ipam_restore(p, "one-more", P("3.0.0.0/8"), P("3.0.0.0/8")), -ENOSPC);
    /* A known peer still changes (its slot is reused), a re-reservation is still a no-op. */
    map(p, "p0", "172.16.0.0/24", "172.16.0.0/24", false);
    assert_int_equal(ipam_reserve(p, P("2.0.0.0/8"), "x"), 0);
    ipam_release_peer(p, "p1");
    assert_int_equal(ipam_reserve(p, P("3.0.0.0/8"), "x"), 0);
    map_fails(p, "one-more", "172.16.0.0/24", -ENOSPC);
    assert_int_equal(ipam_lookup(p, "p2", NULL, &got), 0);
    assert_cidr(&got, "100.0.2.0/24");
    ipam_free(p);
}

/* A differential test: random reservations, maps, changes, releases and restores on small pools,
 * each result compared with a brute-force model that tries every block of every pool in order. */
struct model_range {
    uint32_t first, last;
};

struct model {
    struct model_range reserved[64];
    size_t n_reserved;
    bool known[16];
    struct model_range remote[16], mapped[16];
};

static const struct model_range model_pools[] = {
    {0x0a000000, 0x0a0007ff}, /* 10.0.0.0/21 */
    {0x0a000800, 0x0a000bff}, /* 10.0.8.0/22 */
    {0xc0a80000, 0xc0a801ff}, /* 192.168.0.0/23 */
};

static uint32_t rng_next(uint64_t *st)
{
    /* xorshift64*: deterministic, so that a failure can be replayed. */
    *st ^= *st >> 12;
    *st ^= *st << 25;
    *st ^= *st >> 27;
    return (uint32_t)((*st * 2685821657736338717ULL) >> 32);
}

static bool mr_overlap(struct model_range a, struct model_range b)
{
    return a.first <= b.last && b.first <= a.last;
}

static struct cidr mr_cidr(struct model_range r)
{
    struct cidr c = {.family = 4, .prefix = (uint8_t)(32 - __builtin_ctz(r.last - r.first + 1))};

    c.addr[0] = (uint8_t)(r.first >> 24);
    c.addr[1] = (uint8_t)(r.first >> 16);
    c.addr[2] = (uint8_t)(r.first >> 8);
    c.addr[3] = (uint8_t)r.first;
    return c;
}

/* A random aligned block of prefix 21..28 near the pools. */
static struct model_range random_block(uint64_t *st)
{
    unsigned prefix = 21 + rng_next(st) % 8;
    uint32_t size = 1u << (32 - prefix);
    uint32_t base = (rng_next(st) % 4 == 0 ? 0xc0a80000u : 0x0a000000u) + rng_next(st) % 0x1000;
    struct model_range r = {base & ~(size - 1), 0};

    r.last = r.first + size - 1;
    return r;
}

static bool model_taken(const struct model *m, struct model_range r, int skip, bool reserved_only)
{
    for (size_t i = 0; i < m->n_reserved; i++)
        if (mr_overlap(m->reserved[i], r))
            return true;
    for (int i = 0; !reserved_only && i < 16; i++)
        if (i != skip && m->known[i] && mr_overlap(m->mapped[i], r))
            return true;
    return false;
}

/* The mapping the contract asks for, or false for -ENOSPC. */
static bool model_map(const struct model *m, int id, struct model_range remote,
                      struct model_range *ret)
{
    uint32_t size = remote.last - remote.first + 1;

    if (m->known[id] && m->remote[id].first == remote.first && m->remote[id].last == remote.last &&
        !model_taken(m, m->mapped[id], id, true)) {
        *ret = m->mapped[id];
        return true;
    }
    if (!model_taken(m, remote, id, false)) {
        *ret = remote;
        return true;
    }
    for (size_t k = 0; k < ARRAY_SIZE(model_pools); k++) {
        for (uint64_t b = model_pools[k].first; b + size - 1 <= model_pools[k].last; b += size) {
            struct model_range cand = {(uint32_t)b, (uint32_t)(b + size - 1)};
            if (!model_taken(m, cand, id, false)) {
                *ret = cand;
                return true;
            }
        }
    }
    return false;
}

static void test_differential(void **state)
{
    struct cidr pools[ARRAY_SIZE(model_pools)], got, want;
    struct model m = {0};
    struct ipam *p = NULL;
    uint64_t st = 0x9e3779b97f4a7c15ULL;
    char id[8];
    size_t peers = 0, remapped = 0, full = 0, conflicts, seen_conflicts = 0;

    (void)state;
    assert_int_equal(ipam_new(&p), 0);
    for (size_t k = 0; k < ARRAY_SIZE(model_pools); k++)
        pools[k] = mr_cidr(model_pools[k]);
    assert_int_equal(ipam_set_pool(p, pools, ARRAY_SIZE(pools)), 0);
    for (int step = 0; step < 20000; step++) {
        unsigned op = rng_next(&st) % 100;
        int who = (int)(rng_next(&st) % 16);
        struct model_range r = random_block(&st), mapped;

        snprintf(id, sizeof(id), "p%d", who);
        if (op < 3 && m.n_reserved < ARRAY_SIZE(m.reserved)) {
            bool dup = false;
            for (size_t i = 0; i < m.n_reserved; i++)
                dup |= m.reserved[i].first == r.first && m.reserved[i].last == r.last;
            if (!dup)
                m.reserved[m.n_reserved++] = r;
            assert_int_equal(ipam_reserve(p, P(S(&(struct cidr[1]){mr_cidr(r)}[0])), "r"), 0);
        } else if (op < 4) {
            m.n_reserved = 0;
            ipam_clear_reserved(p);
        } else if (op < 14) {
            m.known[who] = false;
            ipam_release_peer(p, id);
        } else if (op < 20) {
            /* A restore of the peer's own remote (as if it had not been remapped). */
            bool ok = !model_taken(&m, r, who, false);
            got = mr_cidr(r);
            assert_int_equal(ipam_restore(p, id, &got, &got), ok ? 0 : -EEXIST);
            if (ok) {
                m.known[who] = true;
                m.remote[who] = m.mapped[who] = r;
            }
        } else {
            /* Half the maps repeat the peer's current remote (idempotence, conflicts). */
            if (m.known[who] && op < 60)
                r = m.remote[who];
            got = poison;
            if (model_map(&m, who, r, &mapped)) {
                bool re;
                assert_int_equal(
                    ipam_map_peer(p, id, P(S(&(struct cidr[1]){mr_cidr(r)}[0])), &got, &re), 0);
                want = mr_cidr(mapped);
                if (!cidr_equal(&got, &want))
                    print_error("step %d: %s got %s want %s\n", step, id, S(&got), S(&want));
                assert_true(cidr_equal(&got, &want));
                m.known[who] = true;
                m.remote[who] = r;
                m.mapped[who] = mapped;
                remapped += re;
            } else {
                assert_int_equal(
                    ipam_map_peer(p, id, P(S(&(struct cidr[1]){mr_cidr(r)}[0])), &got, NULL),
                    -ENOSPC);
                assert_poison(&got);
                full++;
            }
        }
        /* The whole table agrees with the model. */
        peers = 0;
        for (int i = 0; i < 16; i++) {
            snprintf(id, sizeof(id), "p%d", i);
            if (!m.known[i]) {
                assert_int_equal(ipam_lookup(p, id, NULL, NULL), -ENOENT);
                continue;
            }
            peers++;
            assert_int_equal(ipam_lookup(p, id, NULL, &got), 0);
            want = mr_cidr(m.mapped[i]);
            assert_true(cidr_equal(&got, &want));
        }
        assert_int_equal(ipam_peer_count(p), peers);
        conflicts = 0;
        for (int i = 0; i < 16; i++)
            conflicts += m.known[i] && model_taken(&m, m.mapped[i], i, true);
        assert_int_equal(ipam_conflicts(p, NULL, 0), conflicts);
        seen_conflicts += conflicts > 0;
    }
    /* The random walk did reach the interesting cases. */
    assert_true(remapped > 1000);
    assert_true(full > 100);
    assert_true(seen_conflicts > 100);
    ipam_free(p);
}

/* Every allocation of a sequence of changes from an empty table fails in turn (the table grows
 * four times): each call succeeds or fails with -ENOMEM leaving the state as it was, nothing
 * leaks (ASan/LSan), and repeating the failed call without the failure reaches the same final
 * state as a run without failures. */
#define FAIL_PEERS 60
#define FAIL_STEPS (4 + FAIL_PEERS + 5)

static const char *fail_id(int i)
{
    static char ids[FAIL_PEERS + 3][16];

    if (i < FAIL_PEERS)
        snprintf(ids[i], sizeof(ids[i]), "n%d", i);
    else
        snprintf(ids[i], sizeof(ids[i]), "%s",
                 i == FAIL_PEERS       ? "s0"
                 : i == FAIL_PEERS + 1 ? "s1"
                                       : "x0");
    return ids[i];
}

static void fail_dump(const struct ipam *p, char *buf, size_t size)
{
    const char *ids[FAIL_PEERS + 3];

    for (int i = 0; i < FAIL_PEERS + 3; i++)
        ids[i] = fail_id(i);
    dump(p, ids, ARRAY_SIZE(ids), buf, size);
}

static int fail_step(struct ipam *p, int step)
{
    static const char *const reserved[] = {"10.200.0.0/16", "10.96.0.0/16", "10.0.0.0/15",
                                           "10.3.0.0/16"};

    if (step < 4)
        return ipam_reserve(p, P(reserved[step]), "reserved");
    step -= 4;
    if (step < FAIL_PEERS)
        return ipam_map_peer(p, fail_id(step), P("10.200.0.0/24"), NULL, NULL);
    step -= FAIL_PEERS;
    switch (step) {
    case 0:
        return ipam_restore(p, "s0", P("10.200.0.0/20"), P("10.50.0.0/20"));
    case 1:
        return ipam_restore(p, "s1", P("10.200.0.0/20"), P("10.51.0.0/20"));
    case 2:
        return ipam_reserve(p, P("10.0.0.0/24"), "late");
    case 3:
        return ipam_map_peer(p, "n0", P("10.200.0.0/16"), NULL, NULL); /* a change: no new slot */
    default:
        return ipam_map_peer(p, "x0", P("192.168.0.0/16"), NULL, NULL);
    }
}

static void test_alloc_failures(void **state)
{
    static char sentinel;
    char reference[8192], before[8192], after[8192];
    struct ipam *p = NULL;
    int failures = 0;

    (void)state;
    assert_int_equal(ipam_new(&p), 0);
    for (int s = 0; s < FAIL_STEPS; s++)
        assert_int_equal(fail_step(p, s), 0);
    fail_dump(p, reference, sizeof(reference));
    ipam_free(p);

    for (long fail = 0; fail < 8; fail++) {
        struct ipam *q = (struct ipam *)(void *)&sentinel;

        xalloc_fail_after(fail);
        if (ipam_new(&q) == 0) {
            ipam_free(q);
        } else {
            assert_ptr_equal(q, &sentinel);
            failures++;
        }
        xalloc_fail_after(-1);

        assert_int_equal(ipam_new(&p), 0);
        xalloc_fail_after(fail);
        for (int s = 0; s < FAIL_STEPS; s++) {
            int r;
            fail_dump(p, before, sizeof(before));
            r = fail_step(p, s);
            if (r == -ENOMEM) {
                failures++;
                fail_dump(p, after, sizeof(after));
                assert_string_equal(before, after);
                xalloc_fail_after(-1);
                r = fail_step(p, s);
            }
            assert_int_equal(r, 0);
        }
        xalloc_fail_after(-1);
        fail_dump(p, after, sizeof(after));
        assert_string_equal(reference, after);
        ipam_free(p);
    }
    /* ipam_new once, and each of the four growths (16, 32, 64, 128 entries) once. */
    assert_int_equal(failures, 1 + 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_valid),
        cmocka_unit_test(test_parse_invalid),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_overlaps_contains),
        cmocka_unit_test(test_covering),
        cmocka_unit_test(test_size_allowed),
        cmocka_unit_test(test_translate),
        cmocka_unit_test(test_translate_args),
        cmocka_unit_test(test_keep_own),
        cmocka_unit_test(test_remap_local_cidr),
        cmocka_unit_test(test_same_cidr_distinct),
        cmocka_unit_test(test_idempotent),
        cmocka_unit_test(test_cidr_change),
        cmocka_unit_test(test_release),
        cmocka_unit_test(test_restore),
        cmocka_unit_test(test_exhaustion),
        cmocka_unit_test(test_many_peers),
        cmocka_unit_test(test_search_independent_of_pool_size),
        cmocka_unit_test(test_pool_list),
        cmocka_unit_test(test_conflicts),
        cmocka_unit_test(test_ipv6),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_differential),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
