/* libFuzzer harness for the CIDR functions of src/network/ipam.c.
 *
 * The input is text. Every CIDR that parses must satisfy:
 *   - it is valid (family, prefix range, host bits zero), and the input was shorter than
 *     CIDR_STR_MAX;
 *   - its canonical text fits CIDR_STR_MAX, parses back to an equal CIDR and formats the same
 *     again (a fixpoint); one byte too few gives -ENOSPC and leaves the buffer untouched;
 *   - it overlaps, contains and covers itself, and never overlaps a CIDR of the other family;
 *   - an address of the block (host part taken from the input's bytes) translated into another
 *     block of the same length (network part also from the input's bytes) lands in that block
 *     with the same host part, and translating it back gives the address again; an address
 *     outside the block is refused.
 * Any input is also given to cidr_translate as an address, in both families: when it is accepted,
 * the result is inet_ntop's text of what inet_pton reads from the input.
 * A violated invariant aborts, which libFuzzer reports as a crash.
 *
 * The unit is included rather than only linked (as wireguard-tools' harnesses do) so that it is
 * compiled here with -fsanitize=fuzzer,address,undefined and its branches guide the fuzzer; the
 * library's own copy of these symbols is then never pulled from the archive. */
#include "../src/network/ipam.c"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok)
        abort();
}

/* 128 bits mixed from the input, so that host and network parts vary with it. */
static ipam_u128 input_bits(const uint8_t *data, size_t size, unsigned salt)
{
    ipam_u128 v = salt;

    for (size_t i = 0; i < size; i++)
        v = (v << 5) ^ (v >> 123) ^ data[i] ^ ((ipam_u128)salt << 64);
    return v;
}

static void check_text(const struct cidr *c)
{
    char s1[CIDR_STR_MAX], s2[CIDR_STR_MAX], small[CIDR_STR_MAX];
    struct cidr back;
    int n = cidr_format(c, s1, sizeof(s1)), m;

    check(n > 0 && n < CIDR_STR_MAX && (size_t)n == strlen(s1));
    check(cidr_parse(s1, &back) == 0 && cidr_equal(&back, c));
    m = cidr_format(&back, s2, sizeof(s2));
    check(m == n && strcmp(s1, s2) == 0);
    memset(small, 'x', sizeof(small));
    check(cidr_format(c, small, (size_t)n) == -ENOSPC && small[0] == 'x');
}

static void check_relations(const struct cidr *c)
{
    struct cidr cover, other = {.family = c->family == 4 ? 6 : 4, .prefix = 0};

    check(cidr_overlaps(c, c) && cidr_contains(c, c) && cidr_equal(c, c));
    check(cidr_covering(c, 1, &cover) == 0 && cidr_equal(&cover, c));
    check(!cidr_overlaps(c, &other) && !cidr_contains(&other, c) && !cidr_contains(c, &other));
}

/* The text of address v of the family. */
static void addr_text(ipam_u128 v, uint8_t family, char out[INET6_ADDRSTRLEN])
{
    uint8_t a[16];

    value_bytes(v, family, a);
    check(inet_ntop(family_af(family), a, out, INET6_ADDRSTRLEN) != NULL);
}

static void check_translate(const struct cidr *from, const uint8_t *data, size_t size)
{
    unsigned bits = family_bits(from->family);
    ipam_u128 mask = host_mask(bits, from->prefix), space = host_mask(bits, 0);
    ipam_u128 host = input_bits(data, size, 1) & mask;
    ipam_u128 net = input_bits(data, size, 2) & space & ~mask;
    ipam_u128 from_first = bytes_value(from->addr, from->family);
    struct cidr to = make_cidr(from->family, from->prefix, net);
    char ip[INET6_ADDRSTRLEN], out[INET6_ADDRSTRLEN], back[INET6_ADDRSTRLEN],
        want[INET6_ADDRSTRLEN];
    int n;

    addr_text(from_first | host, from->family, ip);
    n = cidr_translate(ip, from, &to, out, sizeof(out));
    addr_text(net | host, from->family, want);
    check(n > 0 && (size_t)n == strlen(out) && strcmp(out, want) == 0);
    n = cidr_translate(out, &to, from, back, sizeof(back));
    check(n > 0 && strcmp(back, ip) == 0);
    /* An address just outside the block (when the block is not the whole space). */
    if (from->prefix > 0) {
        ipam_u128 outside = (from_first | host) ^ (mask + 1); /* the last network bit flipped */
        addr_text(outside, from->family, ip);
        check(cidr_translate(ip, from, &to, out, sizeof(out)) == -EINVAL);
    }
}

/* The input as an address: accepted exactly when inet_pton accepts it (and it has no leading
 * zero in a dotted quad), and then written in inet_ntop's form. */
static void check_raw_address(const char *in)
{
    static const struct cidr all4 = {.family = 4}, all6 = {.family = 6};
    const struct cidr *all[2] = {&all4, &all6};
    char out[INET6_ADDRSTRLEN], want[INET6_ADDRSTRLEN];
    uint8_t a[16];

    for (int i = 0; i < 2; i++) {
        int n = cidr_translate(in, all[i], all[i], out, sizeof(out));
        bool pton =
            strlen(in) < INET6_ADDRSTRLEN && inet_pton(family_af(all[i]->family), in, a) == 1;
        check(n == -EINVAL || n > 0);
        check(n < 0 || pton);
        if (n > 0) {
            check(inet_ntop(family_af(all[i]->family), a, want, sizeof(want)) != NULL);
            check(strcmp(out, want) == 0);
        }
        if (pton && dotted_ok(in))
            check(n > 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A few bytes more than cidr_parse accepts, so that the length limit is exercised too. */
    char in[CIDR_STR_MAX + 8];
    size_t n = size < sizeof(in) - 1 ? size : sizeof(in) - 1;
    struct cidr c;

    memcpy(in, data, n);
    in[n] = '\0';
    check_raw_address(in);
    if (cidr_parse(in, &c) != 0)
        return 0;
    check(strlen(in) < CIDR_STR_MAX && cidr_valid(&c));
    check_text(&c);
    check_relations(&c);
    check_translate(&c, data, size);
    return 0;
}
