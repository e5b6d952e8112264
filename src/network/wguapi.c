/* wguapi: WireGuard keys, endpoints and the userspace API's text protocol (wguapi.h). */
#include "network/wguapi.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

/* ---- keys ---------------------------------------------------------------------------------- */

int wg_key_parse(const char *b64, struct wg_key *ret)
{
    unsigned char out[WG_KEY_LEN + 3];
    char again[WG_KEY_B64_LEN + 1];
    struct wg_key k;

    if (!b64 || strlen(b64) != WG_KEY_B64_LEN || b64[WG_KEY_B64_LEN - 1] != '=' ||
        b64[WG_KEY_B64_LEN - 2] == '=')
        return -EINVAL;
    for (size_t i = 0; i < WG_KEY_B64_LEN - 1; i++) {
        char c = b64[i];

        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '+' || c == '/'))
            return -EINVAL;
    }
    if (EVP_DecodeBlock(out, (const unsigned char *)b64, WG_KEY_B64_LEN) != WG_KEY_LEN + 1)
        return -EINVAL;
    memcpy(k.b, out, WG_KEY_LEN);
    OPENSSL_cleanse(out, sizeof(out));
    /* One text per key: the unused low bits of the last digit must be zero. */
    wg_key_format(&k, again);
    if (strcmp(again, b64) != 0) {
        wg_key_wipe(&k);
        return -EINVAL;
    }
    *ret = k;
    wg_key_wipe(&k);
    OPENSSL_cleanse(again, sizeof(again));
    return 0;
}

void wg_key_format(const struct wg_key *k, char *out)
{
    EVP_EncodeBlock((unsigned char *)out, k->b, WG_KEY_LEN);
    out[WG_KEY_B64_LEN] = '\0';
}

bool wg_key_equal(const struct wg_key *a, const struct wg_key *b)
{
    return CRYPTO_memcmp(a->b, b->b, WG_KEY_LEN) == 0;
}

bool wg_key_is_zero(const struct wg_key *k)
{
    uint8_t acc = 0;

    for (size_t i = 0; i < WG_KEY_LEN; i++)
        acc |= k->b[i];
    return acc == 0;
}

void wg_key_wipe(struct wg_key *k)
{
    OPENSSL_cleanse(k->b, WG_KEY_LEN);
}

int wg_key_generate(struct wg_key *priv)
{
    if (RAND_bytes(priv->b, WG_KEY_LEN) != 1)
        return -EIO;
    priv->b[0] &= 248;
    priv->b[31] &= 127;
    priv->b[31] |= 64;
    return 0;
}

int wg_key_public(const struct wg_key *priv, struct wg_key *pub)
{
    EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, priv->b, WG_KEY_LEN);
    size_t n = WG_KEY_LEN;
    int r = -EIO;

    if (k && EVP_PKEY_get_raw_public_key(k, pub->b, &n) == 1 && n == WG_KEY_LEN)
        r = 0;
    EVP_PKEY_free(k);
    return r;
}

/* ---- endpoints ----------------------------------------------------------------------------- */

int wg_endpoint_parse(const char *s, struct sockaddr_storage *ret)
{
    char host[INET6_ADDRSTRLEN];
    const char *port;
    size_t hl;
    uint64_t p;
    struct sockaddr_storage ss;

    if (!s || strlen(s) >= WG_ENDPOINT_MAX)
        return -EINVAL;
    memset(&ss, 0, sizeof(ss));
    if (s[0] == '[') {
        const char *end = strstr(s, "]:");

        if (!end)
            return -EINVAL;
        hl = (size_t)(end - s - 1);
        port = end + 2;
        if (hl == 0 || hl >= sizeof(host))
            return -EINVAL;
        memcpy(host, s + 1, hl);
        host[hl] = '\0';
        if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)&ss)->sin6_addr) != 1)
            return -EINVAL;
        ss.ss_family = AF_INET6;
    } else {
        const char *colon = strrchr(s, ':');

        if (!colon)
            return -EINVAL;
        hl = (size_t)(colon - s);
        port = colon + 1;
        if (hl == 0 || hl >= sizeof(host))
            return -EINVAL;
        memcpy(host, s, hl);
        host[hl] = '\0';
        if (inet_pton(AF_INET, host, &((struct sockaddr_in *)&ss)->sin_addr) != 1)
            return -EINVAL;
        ss.ss_family = AF_INET;
    }
    /* parse_u64 takes no sign or leading space; a leading zero is refused here too. */
    if (port[0] == '0' || parse_u64(port, 65535, &p) < 0 || p == 0)
        return -EINVAL;
    if (ss.ss_family == AF_INET6)
        ((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)p);
    else
        ((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)p);
    *ret = ss;
    return 0;
}

int wg_endpoint_format(const struct sockaddr_storage *ss, char *buf, size_t size)
{
    char host[INET6_ADDRSTRLEN];
    int n;

    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)ss;

        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        n = snprintf(buf, size, "%s:%u", host, ntohs(in->sin_port));
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;

        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        n = snprintf(buf, size, "[%s]:%u", host, ntohs(in6->sin6_port));
    } else {
        return -EINVAL;
    }
    return n < 0 || (size_t)n >= size ? -ENOSPC : n;
}

/* ---- requests ------------------------------------------------------------------------------ */

int wg_uapi_device_lines(const struct wg_device *dev, bool replace_peers, char *buf, size_t size)
{
    char hex[WG_KEY_HEX_LEN + 1] = "";
    int n;

    if (dev->has_private) {
        if (wg_key_is_zero(&dev->priv))
            return -EINVAL;
        str_hex(dev->priv.b, WG_KEY_LEN, hex);
    }
    n = snprintf(buf, size, "%s%s%slisten_port=%u\n%s", dev->has_private ? "private_key=" : "", hex,
                 dev->has_private ? "\n" : "", dev->listen_port,
                 replace_peers ? "replace_peers=true\n" : "");
    OPENSSL_cleanse(hex, sizeof(hex));
    if (n < 0 || (size_t)n >= size) {
        if (size)
            OPENSSL_cleanse(buf, size);
        return -ENOSPC;
    }
    return n;
}

int wg_uapi_peer_lines(const struct wg_peer *p, struct sbuf *out)
{
    char hex[WG_KEY_HEX_LEN + 1], ep[WG_ENDPOINT_MAX], cidr[CIDR_STR_MAX];
    int r;

    if (wg_key_is_zero(&p->pub) || p->nallowed > WG_MAX_ALLOWED)
        return -EINVAL;
    str_hex(p->pub.b, WG_KEY_LEN, hex);
    r = sbuf_printf(out, "public_key=%s\n", hex);
    if (r < 0)
        return r;
    if (p->endpoint.ss_family != AF_UNSPEC) {
        if (wg_endpoint_format(&p->endpoint, ep, sizeof(ep)) < 0)
            return -EINVAL;
        r = sbuf_printf(out, "endpoint=%s\n", ep);
        if (r < 0)
            return r;
    }
    r = sbuf_printf(out, "persistent_keepalive_interval=%u\nreplace_allowed_ips=true\n",
                    p->keepalive_s);
    for (size_t i = 0; r >= 0 && i < p->nallowed; i++) {
        if (cidr_format(&p->allowed[i], cidr, sizeof(cidr)) < 0)
            return -EINVAL;
        r = sbuf_printf(out, "allowed_ip=%s\n", cidr);
    }
    return r < 0 ? r : 0;
}

int wg_uapi_remove_lines(const struct wg_key *pub, struct sbuf *out)
{
    char hex[WG_KEY_HEX_LEN + 1];
    int r;

    if (wg_key_is_zero(pub))
        return -EINVAL;
    str_hex(pub->b, WG_KEY_LEN, hex);
    r = sbuf_printf(out, "public_key=%s\nremove=true\n", hex);
    return r < 0 ? r : 0;
}

/* ---- answers ------------------------------------------------------------------------------- */

/* "errno=N" with N a decimal in 0..4095: N, else -1. */
static long errno_value(const char *v)
{
    uint64_t n;

    if ((v[0] == '0' && v[1] != '\0') || parse_u64(v, 4095, &n) < 0)
        return -1;
    return (long)n;
}

int wg_uapi_set_result(const char *buf, size_t len)
{
    char line[32];
    long n;

    /* exactly "errno=N\n\n" */
    if (len < 9 || len >= sizeof(line) || memchr(buf, '\0', len) || buf[len - 1] != '\n' ||
        buf[len - 2] != '\n' || strncmp(buf, "errno=", 6) != 0)
        return -EPROTO;
    memcpy(line, buf + 6, len - 8);
    line[len - 8] = '\0';
    n = errno_value(line);
    if (n < 0)
        return -EPROTO;
    return n ? -(int)n : 0;
}

static int hex_nibble(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* 64 lowercase hex digits into a key. */
static int key_from_hex(const char *v, struct wg_key *k)
{
    if (strlen(v) != WG_KEY_HEX_LEN)
        return -EINVAL;
    for (size_t i = 0; i < WG_KEY_LEN; i++) {
        int hi = hex_nibble(v[2 * i]), lo = hex_nibble(v[2 * i + 1]);

        if (hi < 0 || lo < 0)
            return -EINVAL;
        k->b[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

__attribute__((format(printf, 4, 5))) static int fail(char *err, size_t errlen, int r,
                                                      const char *fmt, ...)
{
    va_list ap;

    if (err && errlen) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return r;
}

void wg_device_clear(struct wg_device *dev)
{
    if (!dev)
        return;
    x_free(dev->peers);
    wg_key_wipe(&dev->priv);
    memset(dev, 0, sizeof(*dev));
}

/* One "key=value" line of a get answer (value NUL-terminated). */
static int get_line(struct wg_device *d, size_t *cap, const char *key, const char *val,
                    unsigned lineno, char *err, size_t errlen)
{
    struct wg_peer *p = d->npeers ? &d->peers[d->npeers - 1] : NULL;
    uint64_t n;

    if (strcmp(key, "public_key") == 0) {
        struct wg_key k;

        if (key_from_hex(val, &k) < 0)
            return fail(err, errlen, -EPROTO, "line %u: public_key is not 64 hex digits", lineno);
        if (d->npeers == WG_MAX_PEERS)
            return fail(err, errlen, -E2BIG, "more than %d peers", WG_MAX_PEERS);
        if (d->npeers == *cap) {
            size_t nc = *cap ? *cap * 2 : 8;
            struct wg_peer *np = x_reallocarray(d->peers, nc, sizeof(*np));

            if (!np)
                return -ENOMEM;
            d->peers = np;
            *cap = nc;
        }
        p = &d->peers[d->npeers++];
        memset(p, 0, sizeof(*p));
        p->pub = k;
        return 0;
    }
    if (strcmp(key, "private_key") == 0 || strcmp(key, "listen_port") == 0 ||
        strcmp(key, "fwmark") == 0) {
        if (p)
            return fail(err, errlen, -EPROTO, "line %u: %s after a peer", lineno, key);
        if (strcmp(key, "private_key") == 0) {
            if (key_from_hex(val, &d->priv) < 0)
                return fail(err, errlen, -EPROTO, "line %u: private_key is not 64 hex digits",
                            lineno);
            d->has_private = true;
        } else if (strcmp(key, "listen_port") == 0) {
            if (parse_u64(val, 65535, &n) < 0)
                return fail(err, errlen, -EPROTO, "line %u: bad listen_port", lineno);
            d->listen_port = (uint16_t)n;
        } else if (parse_u64(val, UINT32_MAX, &n) < 0) {
            return fail(err, errlen, -EPROTO, "line %u: bad fwmark", lineno);
        }
        return 0;
    }
    if (!p) {
        /* Keys this version does not know are skipped (a newer peer of the protocol). */
        return 0;
    }
    if (strcmp(key, "endpoint") == 0) {
        if (wg_endpoint_parse(val, &p->endpoint) < 0)
            return fail(err, errlen, -EPROTO, "line %u: bad endpoint", lineno);
    } else if (strcmp(key, "allowed_ip") == 0) {
        if (p->nallowed == WG_MAX_ALLOWED)
            return fail(err, errlen, -E2BIG, "line %u: more than %d allowed IPs for a peer", lineno,
                        WG_MAX_ALLOWED);
        if (cidr_parse(val, &p->allowed[p->nallowed]) < 0)
            return fail(err, errlen, -EPROTO, "line %u: bad allowed_ip", lineno);
        p->nallowed++;
    } else if (strcmp(key, "last_handshake_time_sec") == 0) {
        if (parse_u64(val, INT64_MAX, &n) < 0)
            return fail(err, errlen, -EPROTO, "line %u: bad last_handshake_time_sec", lineno);
        p->last_handshake_s = (int64_t)n;
    } else if (strcmp(key, "rx_bytes") == 0 || strcmp(key, "tx_bytes") == 0) {
        if (parse_u64(val, UINT64_MAX, &n) < 0)
            return fail(err, errlen, -EPROTO, "line %u: bad %s", lineno, key);
        *(key[0] == 'r' ? &p->rx_bytes : &p->tx_bytes) = n;
    } else if (strcmp(key, "persistent_keepalive_interval") == 0) {
        if (parse_u64(val, 65535, &n) < 0)
            return fail(err, errlen, -EPROTO, "line %u: bad persistent_keepalive_interval", lineno);
        p->keepalive_s = (uint16_t)n;
    }
    return 0;
}

int wg_uapi_get_parse(const char *buf, size_t len, struct wg_device *ret, char *err, size_t errlen)
{
    struct wg_device d = {0};
    char line[WG_UAPI_LINE_MAX];
    size_t cap = 0, off = 0;
    unsigned lineno = 0;
    long errnum = -1;
    int r;

    wg_device_clear(ret);
    if (len > WG_UAPI_MAX) {
        r = fail(err, errlen, -E2BIG, "the answer is larger than %u bytes", WG_UAPI_MAX);
        goto out;
    }
    for (;;) {
        const char *nl = off < len ? memchr(buf + off, '\n', len - off) : NULL;
        size_t n;
        char *eq;

        if (!nl) {
            r = fail(err, errlen, -EPROTO, "line %u: the answer ends without an empty line",
                     lineno + 1);
            goto out;
        }
        n = (size_t)(nl - (buf + off));
        lineno++;
        if (n >= sizeof(line)) {
            r = fail(err, errlen, -E2BIG, "line %u is longer than %d bytes", lineno,
                     WG_UAPI_LINE_MAX - 1);
            goto out;
        }
        memcpy(line, buf + off, n);
        line[n] = '\0';
        off += n + 1;
        if (n == 0)
            break;
        if (memchr(line, '\0', n)) {
            r = fail(err, errlen, -EPROTO, "line %u holds a NUL byte", lineno);
            goto out;
        }
        if (errnum >= 0) {
            r = fail(err, errlen, -EPROTO, "line %u: text after the errno line", lineno);
            goto out;
        }
        eq = strchr(line, '=');
        if (!eq || eq == line) {
            r = fail(err, errlen, -EPROTO, "line %u is not key=value", lineno);
            goto out;
        }
        *eq = '\0';
        if (strcmp(line, "errno") == 0) {
            errnum = errno_value(eq + 1);
            if (errnum < 0) {
                r = fail(err, errlen, -EPROTO, "line %u: bad errno", lineno);
                goto out;
            }
            continue;
        }
        r = get_line(&d, &cap, line, eq + 1, lineno, err, errlen);
        if (r < 0)
            goto out;
    }
    if (off != len) {
        r = fail(err, errlen, -EPROTO, "text after the empty line that ends the answer");
        goto out;
    }
    if (errnum < 0) {
        r = fail(err, errlen, -EPROTO, "the answer has no errno line");
        goto out;
    }
    if (errnum > 0) {
        r = fail(err, errlen, -(int)errnum, "the device answered errno=%ld", errnum);
        goto out;
    }
    *ret = d;
    memset(&d, 0, sizeof(d));
    r = 0;
out:
    OPENSSL_cleanse(line, sizeof(line));
    wg_device_clear(&d);
    return r;
}
