/* libFuzzer harness for the rtnetlink answers read by src/network/routes.c (a dump page, an
 * acknowledgement). Invariants (a violation aborts):
 *   - rt_parse_dump never reads past the input (AddressSanitizer), never returns more routes than
 *     room was given, and every route it returns is a valid CIDR that can be written back as a
 *     request (when it has an interface or a gateway) and read back equal;
 *   - rt_parse_ack returns 0, -EPROTO or a negative errno of at most 4095.
 * The unit is included (see fuzz-network-cidr.c) so that its branches guide the fuzzer. */
#include "../src/network/routes.c"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy, aligned as the kernel's pages are. */
    uint8_t *buf = malloc(size ? size : 1);
    struct rt_route out[4];
    size_t n = 0;
    bool done = false;
    uint32_t seq = size >= 12 ? *(const uint32_t *)(const void *)(data + 8) : 0;
    int r;

    check(buf != NULL);
    memcpy(buf, data, size);
    r = rt_parse_dump(buf, size, seq, data[0] & 1 ? 0 : 1000, out, 4, &n, &done);
    check(n <= 4);
    check(r <= 0);
    for (size_t i = 0; i < n; i++) {
        char t[CIDR_STR_MAX];
        uint8_t msg[RT_MSG_MAX + 32];
        struct rt_route back[1];
        size_t m = 0;
        bool d2;
        int len;

        check(cidr_format(&out[i].dst, t, sizeof(t)) > 0);
        if (!out[i].oif && !out[i].has_via)
            continue;
        len = rt_msg_new(&out[i], 7, msg, RT_MSG_MAX);
        check(len > 0);
        check(rt_parse_dump(msg, (size_t)len, 7, out[i].table, back, 1, &m, &d2) == 0);
        check(m == 1 && rt_equal(&back[0], &out[i]));
    }
    r = rt_parse_ack(buf, size, seq);
    check(r == 0 || r == -EPROTO || (r < 0 && r >= -4095));
    free(buf);
    return 0;
}
