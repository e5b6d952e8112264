/* libFuzzer harness for the kubelet API's HTTP and remotecommand parsers (src/kubeletapi/http.c):
 * what a client (the API server, or anyone reaching the port) or a provider's API server sends. The
 * first byte chooses the parser:
 *   'q': request head, then its target (routes, log and exec options);
 *   'r': response head (the relay's upstream);
 *   'c': chunked body, whole and byte by byte (the same output and verdict);
 *   's': remotecommand status (v4 JSON) decoding;
 *   'z': resize messages, whole and in pieces (the same sizes);
 *   'a': listen addresses and RFC 3339 times.
 * The unit is included so that it is built with coverage instrumentation. */
#include "../src/kubeletapi/http.c"

#include "common/netaddr.h"
#include "kube/names.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int sink(void *data, const char *p, size_t n)
{
    struct sbuf *b = data;

    return sbuf_add(b, p, n);
}

static unsigned seen[64][2], nseen;

static void on_size(void *data, unsigned w, unsigned h)
{
    (void)data;
    if (w > 65535 || h > 65535)
        __builtin_trap();
    if (nseen < 64) {
        seen[nseen][0] = w;
        seen[nseen][1] = h;
    }
    nseen++;
}

static void fuzz_request(const char *p, size_t n)
{
    struct kla_http_head h;
    const char *path, *query;
    size_t plen, qlen;
    enum kla_route route;
    struct kla_pod_ref ref;
    struct kla_logs_opts lo;
    struct kla_exec_opts xo;
    char err[256], buf[512];
    uint64_t cl;
    int r = kla_http_parse_request(p, n, &h);

    if (r != 0 && r != -EAGAIN && r != -EINVAL && r != -E2BIG)
        __builtin_trap();
    if (r != 0)
        return;
    if (h.head_len > n || h.head_len > KLA_HTTP_MAX_HEAD || h.n > KLA_HTTP_MAX_HEADERS ||
        h.target_len > KLA_HTTP_MAX_TARGET)
        __builtin_trap();
    (void)kla_http_content_length(&h, &cl);
    (void)kla_http_has_token(&h, "Connection", "upgrade");
    if (kla_http_join(&h, "X-Stream-Protocol-Version", buf, sizeof(buf)) >= 0)
        (void)kla_rc_negotiate(buf);
    kla_target_split(h.target, h.target_len, &path, &plen, &query, &qlen);
    r = kla_route_parse(path, plen, &route, &ref);
    if (r == 0 && route != KLA_ROUTE_HEALTHZ &&
        (!kname_dns_label(ref.ns) || !kname_dns_subdomain(ref.pod) ||
         !kname_dns_label(ref.container)))
        __builtin_trap();
    if (kla_logs_opts_parse(query, qlen, &lo, err, sizeof(err)) == 0 &&
        (lo.tail_lines < -1 || lo.limit_bytes == 0 || lo.since_seconds == 0 ||
         (lo.since_seconds >= 0 && lo.since_time >= 0)))
        __builtin_trap();
    if (kla_exec_opts_parse(query, qlen, &xo, err, sizeof(err)) == 0) {
        if (xo.ncommand == 0 || xo.ncommand > KLA_MAX_ARGS || (xo.tty && xo.err) ||
            !(xo.in || xo.out || xo.err))
            __builtin_trap();
        kla_exec_opts_done(&xo);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data + 1;
    size_t n = size ? size - 1 : 0;
    char *z;

    if (size == 0)
        return 0;
    switch (data[0]) {
    case 'q':
        fuzz_request(p, n);
        break;
    case 'r': {
        struct kla_http_head h;
        int r = kla_http_parse_response(p, n, &h);

        if (r == 0 && (h.status < 100 || h.status > 999 || h.head_len > n))
            __builtin_trap();
        break;
    }
    case 'c': {
        struct kla_chunked a = {0}, b = {0};
        struct sbuf oa, ob;
        ssize_t ra, rb = 0;
        bool fail_b = false;

        sbuf_init(&oa, 1 << 20);
        sbuf_init(&ob, 1 << 20);
        ra = kla_chunked_feed(&a, p, n, sink, &oa);
        for (size_t i = 0; i < n && !b.done; i++) {
            ssize_t r = kla_chunked_feed(&b, p + i, 1, sink, &ob);

            if (r < 0) {
                fail_b = true;
                rb = r;
                break;
            }
            rb += r;
        }
        if ((ra < 0) != fail_b || (ra >= 0 && (ra != rb || a.done != b.done)))
            __builtin_trap();
        if (ra >= 0 && (sbuf_len(&oa) != sbuf_len(&ob) ||
                        memcmp(sbuf_str(&oa), sbuf_str(&ob), sbuf_len(&oa)) != 0))
            __builtin_trap();
        sbuf_done(&oa);
        sbuf_done(&ob);
        break;
    }
    case 's': {
        int code = -1;
        char msg[128];
        int r = kla_rc_status_decode(p, n, &code, msg, sizeof(msg));

        if (r == 0 && (code < 0 || code > 255))
            __builtin_trap();
        break;
    }
    case 'z': {
        struct kla_rc_resize a = {.len = 0}, b = {.len = 0};
        unsigned first[64][2], nfirst;
        int ra, rb = 0;

        nseen = 0;
        ra = kla_rc_resize_feed(&a, p, n, on_size, NULL);
        nfirst = nseen;
        memcpy(first, seen, sizeof(first));
        nseen = 0;
        for (size_t i = 0; i < n && rb == 0; i += 3)
            rb = kla_rc_resize_feed(&b, p + i, n - i < 3 ? n - i : 3, on_size, NULL);
        if (ra != rb ||
            (ra == 0 &&
             (nfirst != nseen || memcmp(first, seen, sizeof(seen[0]) * (nseen < 64 ? nseen : 64)))))
            __builtin_trap();
        break;
    }
    case 'a':
        z = malloc(n + 1);
        if (z) {
            struct sockaddr_storage ss;
            socklen_t sl;
            int64_t t;

            memcpy(z, p, n);
            z[n] = '\0';
            (void)netaddr_parse(z, &ss, &sl);
            (void)rfc3339_parse(z, RFC3339_OFFSET, &t);
            free(z);
        }
        break;
    default:
        break;
    }
    return 0;
}
