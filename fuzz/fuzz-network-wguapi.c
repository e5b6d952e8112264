/* libFuzzer harness for WireGuard's userspace API parsers (src/network/wguapi.c).
 *
 * The input is an answer from wireguard-go's socket, as a hostile or broken process could send it.
 * Invariants (a violation aborts, which libFuzzer reports as a crash):
 *   - wg_uapi_get_parse either fails leaving the device empty, or succeeds within the bounds
 *     (WG_MAX_PEERS peers, WG_MAX_ALLOWED allowed IPs each), and then every peer's lines can be
 *     written back as a set request, each endpoint formatted and parsed back to the same text;
 *   - wg_uapi_set_result is 0, -EPROTO or -N for N in 1..4095;
 *   - the input's first line, read as a key, formats back to itself; read as an endpoint, formats
 *     to a text that parses back to the same endpoint.
 *
 * The unit is included (see fuzz-network-cidr.c) so that its branches guide the fuzzer. */
#include "../src/network/wguapi.c"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok)
        abort();
}

static void check_peers(const struct wg_device *d)
{
    struct sbuf b;

    check(d->npeers <= WG_MAX_PEERS);
    for (size_t i = 0; i < d->npeers; i++) {
        const struct wg_peer *p = &d->peers[i];

        check(p->nallowed <= WG_MAX_ALLOWED);
        if (p->endpoint.ss_family != AF_UNSPEC) {
            char t[WG_ENDPOINT_MAX], u[WG_ENDPOINT_MAX];
            struct sockaddr_storage again;

            check(wg_endpoint_format(&p->endpoint, t, sizeof(t)) > 0);
            check(wg_endpoint_parse(t, &again) == 0);
            check(wg_endpoint_format(&again, u, sizeof(u)) > 0 && strcmp(t, u) == 0);
        }
        sbuf_init(&b, 4096);
        /* A key of all zeroes is refused by the writer (never a peer of ours); anything else
         * goes back out. */
        check(wg_uapi_peer_lines(p, &b) == (wg_key_is_zero(&p->pub) ? -EINVAL : 0));
        sbuf_done(&b);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct wg_device d = {0};
    char err[160];
    char first[WG_ENDPOINT_MAX + WG_KEY_B64_LEN + 8];
    size_t n = 0;
    int r;

    r = wg_uapi_get_parse((const char *)data, size, &d, err, sizeof(err));
    if (r < 0)
        check(d.npeers == 0 && !d.peers && !d.has_private);
    else
        check_peers(&d);
    wg_device_clear(&d);

    r = wg_uapi_set_result((const char *)data, size);
    check(r == 0 || r == -EPROTO || (r < 0 && r >= -4095));

    while (n < size && n < sizeof(first) - 1 && data[n] != '\n') {
        first[n] = (char)data[n];
        n++;
    }
    first[n] = '\0';
    if (strlen(first) == n) {
        struct wg_key k;
        struct sockaddr_storage ss, again;
        char t[WG_KEY_B64_LEN + 1], e[WG_ENDPOINT_MAX], f[WG_ENDPOINT_MAX];

        if (wg_key_parse(first, &k) == 0) {
            wg_key_format(&k, t);
            check(strcmp(t, first) == 0);
        }
        if (wg_endpoint_parse(first, &ss) == 0) {
            check(wg_endpoint_format(&ss, e, sizeof(e)) > 0);
            check(wg_endpoint_parse(e, &again) == 0);
            check(wg_endpoint_format(&again, f, sizeof(f)) > 0 && strcmp(e, f) == 0);
        }
    }
    return 0;
}
