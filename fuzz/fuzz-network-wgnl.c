/* libFuzzer harness for the kernel WireGuard answers' parsers (src/network/wgnl.c).
 *
 * The input is a page read from a generic netlink socket, as a broken or hostile kernel (or a
 * test) could write it. The family and sequence expected are those of its first message, so that
 * the fuzzer reaches the attributes. Invariants (a violation aborts, which libFuzzer reports):
 *   - wgnl_parse_get either fails leaving the device empty (no peer, no private key), or
 *     succeeds within the bounds (WG_MAX_PEERS peers, WG_MAX_ALLOWED allowed IPs each), every
 *     endpoint formatting to a text that parses back, every allowed IP a valid CIDR;
 *   - and then the device, written back as set messages (each at most WGNL_SET_MAX bytes) and
 *     read as answers, is the same device: keys, listen port, endpoints, keepalives, allowed IPs;
 *   - wgnl_parse_family is 0 with an id of a dynamic family, or negative.
 *
 * The unit is included (see fuzz-network-cidr.c) so that its branches guide the fuzzer. */
#include "../src/network/wgnl.c"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok)
        abort();
}

static bool endpoint_same(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    char x[WG_ENDPOINT_MAX], y[WG_ENDPOINT_MAX];

    if (a->ss_family == AF_UNSPEC || b->ss_family == AF_UNSPEC)
        return a->ss_family == b->ss_family;
    return wg_endpoint_format(a, x, sizeof(x)) > 0 && wg_endpoint_format(b, y, sizeof(y)) > 0 &&
           strcmp(x, y) == 0;
}

static void check_device(const struct wg_device *d)
{
    check(d->npeers <= WG_MAX_PEERS);
    for (size_t i = 0; i < d->npeers; i++) {
        const struct wg_peer *p = &d->peers[i];
        char t[WG_ENDPOINT_MAX], text[CIDR_STR_MAX];
        struct sockaddr_storage again;

        check(p->nallowed <= WG_MAX_ALLOWED);
        for (size_t j = 0; j < p->nallowed; j++)
            check(cidr_format(&p->allowed[j], text, sizeof(text)) > 0);
        if (p->endpoint.ss_family != AF_UNSPEC) {
            check(wg_endpoint_format(&p->endpoint, t, sizeof(t)) > 0);
            check(wg_endpoint_parse(t, &again) == 0);
        }
    }
}

/* The device written as set messages and read back as answers. */
static void round_trip(const struct wg_device *d)
{
    struct wgnl_peer_op *ops = d->npeers ? calloc(d->npeers, sizeof(*ops)) : NULL;
    struct wgnl_set s = {.ifname = "cliqo0",
                         .set_device = true,
                         .has_private = d->has_private,
                         .priv = d->priv,
                         .listen_port = d->listen_port,
                         .nops = d->npeers};
    struct wg_device back = {0};
    uint8_t buf[WGNL_SET_MAX + NLMSG_LENGTH(4)];
    size_t next = 0;
    bool done = false;

    check(!d->npeers || ops);
    for (size_t i = 0; i < d->npeers; i++) {
        if (wg_key_is_zero(&d->peers[i].pub))
            goto out; /* refused by the writer: never a peer of ours */
        ops[i].peer = d->peers[i];
    }
    s.ops = ops;
    do {
        int len = wgnl_msg_set(0x20, 1, &s, &next, buf, WGNL_SET_MAX);

        check(len > 0 && len <= WGNL_SET_MAX);
        ((struct genlmsghdr *)(buf + NLMSG_HDRLEN))->cmd = WG_CMD_GET_DEVICE;
        if (next == s.nops) {
            struct nlmsghdr h = {
                .nlmsg_len = NLMSG_LENGTH(4), .nlmsg_type = NLMSG_DONE, .nlmsg_seq = 1};

            memset(buf + len, 0, NLMSG_LENGTH(4));
            memcpy(buf + len, &h, sizeof(h));
            len += (int)NLMSG_LENGTH(4);
        }
        check(wgnl_parse_get(buf, (size_t)len, 0x20, 1, &back, &done, NULL, 0) == 0);
    } while (next < s.nops);
    check(done);
    check(back.has_private == d->has_private);
    check(!d->has_private || wg_key_equal(&back.priv, &d->priv));
    check(back.listen_port == d->listen_port);
    check(back.npeers == d->npeers);
    for (size_t i = 0; i < d->npeers; i++) {
        const struct wg_peer *a = &d->peers[i], *b = &back.peers[i];

        check(wg_key_equal(&a->pub, &b->pub));
        check(a->keepalive_s == b->keepalive_s);
        check(endpoint_same(&a->endpoint, &b->endpoint));
        check(a->nallowed == b->nallowed);
        for (size_t j = 0; j < a->nallowed; j++)
            check(cidr_equal(&a->allowed[j], &b->allowed[j]));
    }
out:
    wg_key_wipe(&s.priv);
    wg_device_clear(&back);
    OPENSSL_cleanse(buf, sizeof(buf));
    free(ops);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct wg_device d = {0};
    struct nlmsghdr h = {0};
    uint16_t id = 0;
    bool done = false;
    char err[160];
    int r;

    if (size >= sizeof(h))
        memcpy(&h, data, sizeof(h));
    r = wgnl_parse_get(data, size, h.nlmsg_type, h.nlmsg_seq, &d, &done, err, sizeof(err));
    if (r < 0) {
        check(d.npeers == 0 && !d.peers && !d.has_private && wg_key_is_zero(&d.priv));
    } else {
        check_device(&d);
        round_trip(&d);
    }
    wg_device_clear(&d);

    r = wgnl_parse_family(data, size, h.nlmsg_seq, &id);
    check(r < 0 ? r >= -4095 : id >= GENL_MIN_ID);
    return 0;
}
