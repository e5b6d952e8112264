/* wgnl: WireGuard's generic netlink messages and the wireguard link's rtnetlink ones (wgnl.h). */
#include "network/wgnl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/wireguard.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/xalloc.h"
#include "network/routes.h"

#ifndef NETLINK_CAP_ACK
#define NETLINK_CAP_ACK 10
#endif

#define WGNL_TIMEOUT_S 2

/* ---- building ------------------------------------------------------------------------------ */

/* A message being built into a caller's buffer; once over, every later step is a no-op and the
 * end reports -ENOSPC (so the builders read as straight lines, like routes.c's). */
struct msg {
    uint8_t *buf;
    size_t size, len;
    bool over;
};

/* The netlink header and the family's fixed header (hdrlen bytes of hdr). */
static void msg_start(struct msg *m, uint16_t type, uint16_t flags, uint32_t seq, const void *hdr,
                      size_t hdrlen)
{
    struct nlmsghdr *h = (struct nlmsghdr *)m->buf;
    size_t n = NLMSG_HDRLEN + NLMSG_ALIGN(hdrlen);

    if (m->size < n) {
        m->over = true;
        return;
    }
    memset(m->buf, 0, n);
    h->nlmsg_type = type;
    h->nlmsg_flags = flags;
    h->nlmsg_seq = seq;
    memcpy(m->buf + NLMSG_HDRLEN, hdr, hdrlen);
    m->len = n;
}

/* An attribute (struct nlattr and struct rtattr have the same layout), its padding zeroed.
 * Returns its offset in the message (for a nest's length), or 0 once over. */
static size_t attr(struct msg *m, uint16_t type, const void *data, size_t n)
{
    struct nlattr *a;
    size_t at = m->len;

    if (m->over || n > UINT16_MAX - NLA_HDRLEN || m->len + NLA_HDRLEN + NLA_ALIGN(n) > m->size) {
        m->over = true;
        return 0;
    }
    a = (struct nlattr *)(m->buf + m->len);
    a->nla_type = type;
    a->nla_len = (uint16_t)(NLA_HDRLEN + n);
    if (n)
        memcpy(m->buf + m->len + NLA_HDRLEN, data, n);
    memset(m->buf + m->len + NLA_HDRLEN + n, 0, NLA_ALIGN(n) - n);
    m->len += NLA_HDRLEN + NLA_ALIGN(n);
    return at;
}

static size_t attr_u8(struct msg *m, uint16_t type, uint8_t v)
{
    return attr(m, type, &v, 1);
}

static size_t attr_u16(struct msg *m, uint16_t type, uint16_t v)
{
    return attr(m, type, &v, 2);
}

static size_t attr_u32(struct msg *m, uint16_t type, uint32_t v)
{
    return attr(m, type, &v, 4);
}

static size_t attr_str(struct msg *m, uint16_t type, const char *s)
{
    return attr(m, type, s, strlen(s) + 1);
}

/* A nest: started as an empty attribute with NLA_F_NESTED, its length set by nest_end. */
static size_t nest_start(struct msg *m, uint16_t type)
{
    return attr(m, (uint16_t)(type | NLA_F_NESTED), NULL, 0);
}

static void nest_end(struct msg *m, size_t at)
{
    if (!m->over && m->len - at > UINT16_MAX)
        m->over = true;
    if (!m->over)
        ((struct nlattr *)(m->buf + at))->nla_len = (uint16_t)(m->len - at);
}

static int msg_end(struct msg *m)
{
    if (m->over)
        return -ENOSPC;
    ((struct nlmsghdr *)m->buf)->nlmsg_len = (uint32_t)m->len;
    return (int)m->len;
}

static bool ifname_ok(const char *ifname)
{
    return ifname && ifname[0] && strnlen(ifname, WGNL_IFNAMSIZ) < WGNL_IFNAMSIZ;
}

static void genl_start(struct msg *m, uint16_t family, uint8_t cmd, uint8_t version, uint16_t flags,
                       uint32_t seq)
{
    struct genlmsghdr g = {.cmd = cmd, .version = version};

    msg_start(m, family, flags, seq, &g, sizeof(g));
}

int wgnl_msg_family(uint32_t seq, uint8_t *buf, size_t size)
{
    struct msg m = {.buf = buf, .size = size};

    genl_start(&m, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1, NLM_F_REQUEST, seq);
    attr_str(&m, CTRL_ATTR_FAMILY_NAME, WG_GENL_NAME);
    return msg_end(&m);
}

int wgnl_msg_get(uint16_t family, uint32_t seq, const char *ifname, uint8_t *buf, size_t size)
{
    struct msg m = {.buf = buf, .size = size};

    if (!ifname_ok(ifname))
        return -EINVAL;
    genl_start(&m, family, WG_CMD_GET_DEVICE, WG_GENL_VERSION, NLM_F_REQUEST | NLM_F_DUMP, seq);
    attr_str(&m, WGDEVICE_A_IFNAME, ifname);
    return msg_end(&m);
}

/* The endpoint as the kernel takes it: a struct sockaddr_in or sockaddr_in6, only the family, port
 * and address copied (the rest zero). Returns -EINVAL for another family. */
static int put_endpoint(struct msg *m, const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *from = (const struct sockaddr_in *)ss;
        struct sockaddr_in in;

        memset(&in, 0, sizeof(in));
        in.sin_family = AF_INET;
        in.sin_port = from->sin_port;
        in.sin_addr = from->sin_addr;
        attr(m, WGPEER_A_ENDPOINT, &in, sizeof(in));
        return 0;
    }
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *from = (const struct sockaddr_in6 *)ss;
        struct sockaddr_in6 in6;

        memset(&in6, 0, sizeof(in6));
        in6.sin6_family = AF_INET6;
        in6.sin6_port = from->sin6_port;
        in6.sin6_addr = from->sin6_addr;
        attr(m, WGPEER_A_ENDPOINT, &in6, sizeof(in6));
        return 0;
    }
    return -EINVAL;
}

/* One peer, nested (type 0, as `wg` numbers them). Returns 0 or -EINVAL. */
static int put_peer(struct msg *m, const struct wgnl_peer_op *op)
{
    const struct wg_peer *p = &op->peer;
    char text[CIDR_STR_MAX];
    size_t peer, ips;

    if (wg_key_is_zero(&p->pub) || p->nallowed > WG_MAX_ALLOWED)
        return -EINVAL;
    peer = nest_start(m, 0);
    attr(m, WGPEER_A_PUBLIC_KEY, p->pub.b, WG_KEY_LEN);
    if (op->remove) {
        attr_u32(m, WGPEER_A_FLAGS, WGPEER_F_REMOVE_ME);
        nest_end(m, peer);
        return 0;
    }
    attr_u32(m, WGPEER_A_FLAGS, WGPEER_F_REPLACE_ALLOWEDIPS);
    if (p->endpoint.ss_family != AF_UNSPEC && put_endpoint(m, &p->endpoint) < 0)
        return -EINVAL;
    attr_u16(m, WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL, p->keepalive_s);
    ips = nest_start(m, WGPEER_A_ALLOWEDIPS);
    for (size_t i = 0; i < p->nallowed; i++) {
        const struct cidr *c = &p->allowed[i];
        size_t ip;

        if (cidr_format(c, text, sizeof(text)) < 0)
            return -EINVAL;
        ip = nest_start(m, 0);
        attr_u16(m, WGALLOWEDIP_A_FAMILY, c->family == 4 ? AF_INET : AF_INET6);
        attr(m, WGALLOWEDIP_A_IPADDR, c->addr, c->family == 4 ? 4 : 16);
        attr_u8(m, WGALLOWEDIP_A_CIDR_MASK, c->prefix);
        nest_end(m, ip);
    }
    nest_end(m, ips);
    nest_end(m, peer);
    return 0;
}

int wgnl_msg_set(uint16_t family, uint32_t seq, const struct wgnl_set *s, size_t *next,
                 uint8_t *buf, size_t size)
{
    /* never more than the kernel takes in one message, whatever the buffer */
    struct msg m = {.buf = buf, .size = size < WGNL_SET_MAX ? size : WGNL_SET_MAX};
    size_t i = *next, peers = 0;
    int r;

    if (!ifname_ok(s->ifname) || i > s->nops)
        return -EINVAL;
    if (i == 0 && s->set_device && s->has_private && wg_key_is_zero(&s->priv))
        return -EINVAL;
    genl_start(&m, family, WG_CMD_SET_DEVICE, WG_GENL_VERSION, NLM_F_REQUEST | NLM_F_ACK, seq);
    attr_str(&m, WGDEVICE_A_IFNAME, s->ifname);
    if (i == 0 && s->set_device) {
        if (s->has_private)
            attr(&m, WGDEVICE_A_PRIVATE_KEY, s->priv.b, WG_KEY_LEN);
        attr_u16(&m, WGDEVICE_A_LISTEN_PORT, s->listen_port);
        if (s->replace_peers)
            attr_u32(&m, WGDEVICE_A_FLAGS, WGDEVICE_F_REPLACE_PEERS);
    }
    if (m.over)
        return -ENOSPC;
    if (i < s->nops)
        peers = nest_start(&m, WGDEVICE_A_PEERS);
    for (; i < s->nops && !m.over; i++) {
        size_t mark = m.len;

        r = put_peer(&m, &s->ops[i]);
        if (r < 0)
            return r;
        if (m.over) {
            /* this peer goes in the next message; the first one of a message must fit */
            if (i == *next)
                return -ENOSPC;
            m.over = false;
            m.len = mark;
            break;
        }
    }
    if (peers)
        nest_end(&m, peers);
    r = msg_end(&m);
    if (r >= 0)
        *next = i;
    return r;
}

static void link_start(struct msg *m, uint16_t type, uint16_t flags, uint32_t seq)
{
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};

    msg_start(m, type, flags, seq, &ifi, sizeof(ifi));
}

int wgnl_msg_newlink(const char *ifname, uint32_t seq, uint8_t *buf, size_t size)
{
    struct msg m = {.buf = buf, .size = size};
    size_t info;

    if (!ifname_ok(ifname))
        return -EINVAL;
    link_start(&m, RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, seq);
    attr_str(&m, IFLA_IFNAME, ifname);
    info = nest_start(&m, IFLA_LINKINFO);
    attr_str(&m, IFLA_INFO_KIND, WG_GENL_NAME);
    nest_end(&m, info);
    return msg_end(&m);
}

int wgnl_msg_dellink(const char *ifname, uint32_t seq, uint8_t *buf, size_t size)
{
    struct msg m = {.buf = buf, .size = size};

    if (!ifname_ok(ifname))
        return -EINVAL;
    link_start(&m, RTM_DELLINK, NLM_F_REQUEST | NLM_F_ACK, seq);
    attr_str(&m, IFLA_IFNAME, ifname);
    return msg_end(&m);
}

/* ---- reading ------------------------------------------------------------------------------- */

/* A run of attributes [p, end). */
struct attrs {
    const uint8_t *p, *end;
};

/* The next attribute of *it into *a (its type without the flags, its payload and length). Returns
 * 1, 0 at the end, or -EPROTO: a header cut short, a length below the header or beyond the run. */
static int next_attr(struct attrs *it, uint16_t *type, const uint8_t **data, size_t *n)
{
    size_t rem = (size_t)(it->end - it->p), step;
    struct nlattr a;

    if (rem == 0)
        return 0;
    if (rem < NLA_HDRLEN)
        return -EPROTO;
    memcpy(&a, it->p, sizeof(a));
    if (a.nla_len < NLA_HDRLEN || a.nla_len > rem)
        return -EPROTO;
    *type = a.nla_type & NLA_TYPE_MASK;
    *data = it->p + NLA_HDRLEN;
    *n = a.nla_len - NLA_HDRLEN;
    step = NLA_ALIGN(a.nla_len);
    it->p += step < rem ? step : rem;
    return 1;
}

static struct attrs sub(const uint8_t *data, size_t n)
{
    return (struct attrs){data, data + n};
}

struct rd {
    char *err;
    size_t errlen;
};

static int bad(struct rd *rd, int r, const char *what)
{
    if (rd->err && rd->errlen && !rd->err[0])
        snprintf(rd->err, rd->errlen, "%s", what);
    return r;
}

static int get_u16(const uint8_t *d, size_t n, uint16_t *v)
{
    if (n != 2)
        return -EPROTO;
    memcpy(v, d, 2);
    return 0;
}

static int parse_allowed(struct rd *rd, const uint8_t *d, size_t n, struct cidr *c)
{
    struct attrs it = sub(d, n);
    const uint8_t *x;
    size_t xn;
    uint16_t t, fam = 0;
    bool has_addr = false, has_mask = false;
    uint8_t addr[16] = {0}, mask = 0;
    size_t alen = 0;
    char text[CIDR_STR_MAX];
    int r;

    while ((r = next_attr(&it, &t, &x, &xn)) > 0) {
        if (t == WGALLOWEDIP_A_FAMILY) {
            if (get_u16(x, xn, &fam) < 0)
                return bad(rd, -EPROTO, "allowed IP: family of a wrong length");
        } else if (t == WGALLOWEDIP_A_IPADDR) {
            if (xn != 4 && xn != 16)
                return bad(rd, -EPROTO, "allowed IP: address of a wrong length");
            memcpy(addr, x, xn);
            alen = xn;
            has_addr = true;
        } else if (t == WGALLOWEDIP_A_CIDR_MASK) {
            if (xn != 1)
                return bad(rd, -EPROTO, "allowed IP: mask of a wrong length");
            mask = x[0];
            has_mask = true;
        }
    }
    if (r < 0)
        return bad(rd, r, "allowed IP: malformed attribute");
    if (!has_addr || !has_mask ||
        !((fam == AF_INET && alen == 4) || (fam == AF_INET6 && alen == 16)))
        return bad(rd, -EPROTO, "allowed IP: family, address and mask do not agree");
    memset(c, 0, sizeof(*c));
    c->family = fam == AF_INET ? 4 : 6;
    c->prefix = mask;
    memcpy(c->addr, addr, alen);
    if (cidr_format(c, text, sizeof(text)) < 0)
        return bad(rd, -EPROTO, "allowed IP: not a network (prefix or host bits)");
    return 0;
}

static int parse_endpoint(const uint8_t *d, size_t n, struct sockaddr_storage *ss)
{
    sa_family_t fam;

    if (n < sizeof(fam))
        return -EPROTO;
    memcpy(&fam, d, sizeof(fam));
    memset(ss, 0, sizeof(*ss));
    if (fam == AF_INET && n == sizeof(struct sockaddr_in)) {
        struct sockaddr_in in, *out = (struct sockaddr_in *)ss;

        memcpy(&in, d, n);
        out->sin_family = AF_INET;
        out->sin_port = in.sin_port;
        out->sin_addr = in.sin_addr;
        return in.sin_port ? 0 : -EPROTO;
    }
    if (fam == AF_INET6 && n == sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 in6, *out = (struct sockaddr_in6 *)ss;

        memcpy(&in6, d, n);
        out->sin6_family = AF_INET6;
        out->sin6_port = in6.sin6_port;
        out->sin6_addr = in6.sin6_addr;
        return in6.sin6_port ? 0 : -EPROTO;
    }
    return -EPROTO;
}

/* One peer's nest into *p (zeroed first). */
static int parse_peer(struct rd *rd, const uint8_t *d, size_t n, struct wg_peer *p)
{
    struct attrs it = sub(d, n);
    const uint8_t *x;
    size_t xn;
    uint16_t t;
    bool has_key = false;
    int r;

    memset(p, 0, sizeof(*p));
    while ((r = next_attr(&it, &t, &x, &xn)) > 0) {
        switch (t) {
        case WGPEER_A_PUBLIC_KEY:
            if (xn != WG_KEY_LEN)
                return bad(rd, -EPROTO, "peer: public key of a wrong length");
            memcpy(p->pub.b, x, WG_KEY_LEN);
            has_key = true;
            break;
        case WGPEER_A_PRESHARED_KEY:
            if (xn != WG_KEY_LEN)
                return bad(rd, -EPROTO, "peer: preshared key of a wrong length");
            break;
        case WGPEER_A_ENDPOINT:
            if (parse_endpoint(x, xn, &p->endpoint) < 0)
                return bad(rd, -EPROTO, "peer: malformed endpoint");
            break;
        case WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL:
            if (get_u16(x, xn, &p->keepalive_s) < 0)
                return bad(rd, -EPROTO, "peer: keepalive of a wrong length");
            break;
        case WGPEER_A_LAST_HANDSHAKE_TIME: {
            int64_t ts[2];

            if (xn != sizeof(ts))
                return bad(rd, -EPROTO, "peer: handshake time of a wrong length");
            memcpy(ts, x, sizeof(ts));
            if (ts[0] < 0)
                return bad(rd, -EPROTO, "peer: negative handshake time");
            p->last_handshake_s = ts[0];
            break;
        }
        case WGPEER_A_RX_BYTES:
        case WGPEER_A_TX_BYTES:
            if (xn != 8)
                return bad(rd, -EPROTO, "peer: byte count of a wrong length");
            memcpy(t == WGPEER_A_RX_BYTES ? &p->rx_bytes : &p->tx_bytes, x, 8);
            break;
        case WGPEER_A_ALLOWEDIPS: {
            struct attrs ips = sub(x, xn);
            const uint8_t *y;
            size_t yn;
            uint16_t yt;

            while ((r = next_attr(&ips, &yt, &y, &yn)) > 0) {
                if (p->nallowed >= WG_MAX_ALLOWED)
                    return bad(rd, -E2BIG, "peer: too many allowed IPs");
                r = parse_allowed(rd, y, yn, &p->allowed[p->nallowed]);
                if (r < 0)
                    return r;
                p->nallowed++;
            }
            if (r < 0)
                return bad(rd, r, "peer: malformed allowed IPs");
            break;
        }
        default:
            break;
        }
    }
    if (r < 0)
        return bad(rd, r, "peer: malformed attribute");
    if (!has_key)
        return bad(rd, -EPROTO, "peer: no public key");
    return 0;
}

/* Adds p to dev, or merges it into the last peer when it continues it (the same key: the kernel
 * splits a peer's allowed IPs over messages). */
static int add_peer(struct rd *rd, struct wg_device *dev, const struct wg_peer *p)
{
    size_t n = dev->npeers;

    if (n && wg_key_equal(&dev->peers[n - 1].pub, &p->pub)) {
        struct wg_peer *last = &dev->peers[n - 1];

        if (last->nallowed + p->nallowed > WG_MAX_ALLOWED)
            return bad(rd, -E2BIG, "peer: too many allowed IPs");
        memcpy(&last->allowed[last->nallowed], p->allowed, p->nallowed * sizeof(p->allowed[0]));
        last->nallowed += p->nallowed;
        return 0;
    }
    if (n >= WG_MAX_PEERS)
        return bad(rd, -E2BIG, "too many peers");
    /* capacity: 8, then doubled at each power of two */
    if (n == 0 || (n >= 8 && (n & (n - 1)) == 0)) {
        struct wg_peer *np = x_reallocarray(dev->peers, n ? 2 * n : 8, sizeof(*np));

        if (!np)
            return bad(rd, -ENOMEM, "out of memory");
        dev->peers = np;
    }
    dev->peers[n] = *p;
    dev->npeers = n + 1;
    return 0;
}

static int parse_device(struct rd *rd, const uint8_t *d, size_t n, struct wg_device *dev)
{
    struct attrs it = sub(d, n);
    const uint8_t *x;
    size_t xn;
    uint16_t t;
    int r;

    while ((r = next_attr(&it, &t, &x, &xn)) > 0) {
        switch (t) {
        case WGDEVICE_A_IFINDEX:
        case WGDEVICE_A_FWMARK:
            if (xn != 4)
                return bad(rd, -EPROTO, "device: attribute of a wrong length");
            break;
        case WGDEVICE_A_IFNAME:
            if (xn == 0 || xn > WGNL_IFNAMSIZ || !memchr(x, '\0', xn))
                return bad(rd, -EPROTO, "device: malformed interface name");
            break;
        case WGDEVICE_A_PRIVATE_KEY:
            if (xn != WG_KEY_LEN)
                return bad(rd, -EPROTO, "device: private key of a wrong length");
            memcpy(dev->priv.b, x, WG_KEY_LEN);
            dev->has_private = !wg_key_is_zero(&dev->priv);
            break;
        case WGDEVICE_A_PUBLIC_KEY:
            if (xn != WG_KEY_LEN)
                return bad(rd, -EPROTO, "device: public key of a wrong length");
            break;
        case WGDEVICE_A_LISTEN_PORT:
            if (get_u16(x, xn, &dev->listen_port) < 0)
                return bad(rd, -EPROTO, "device: listen port of a wrong length");
            break;
        case WGDEVICE_A_PEERS: {
            struct attrs peers = sub(x, xn);
            const uint8_t *y;
            size_t yn;
            uint16_t yt;

            while ((r = next_attr(&peers, &yt, &y, &yn)) > 0) {
                struct wg_peer p;

                r = parse_peer(rd, y, yn, &p);
                if (r == 0)
                    r = add_peer(rd, dev, &p);
                if (r < 0)
                    return r;
            }
            if (r < 0)
                return bad(rd, r, "device: malformed peers");
            break;
        }
        default:
            break;
        }
    }
    return r < 0 ? bad(rd, r, "device: malformed attribute") : 0;
}

/* The netlink message at the head of rem bytes is whole. */
static bool nl_ok(const uint8_t *p, size_t rem, struct nlmsghdr *h)
{
    if (rem < sizeof(*h))
        return false;
    memcpy(h, p, sizeof(*h));
    return h->nlmsg_len >= sizeof(*h) && h->nlmsg_len <= rem;
}

/* An NLMSG_ERROR's status: 0 (an acknowledgement), the kernel's negative errno, or -EPROTO. */
static int nl_error(const uint8_t *p, const struct nlmsghdr *h)
{
    int32_t e;

    if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr)))
        return -EPROTO;
    memcpy(&e, p + NLMSG_HDRLEN, sizeof(e));
    return e > 0 || e < -4095 ? -EPROTO : e;
}

int wgnl_parse_get(const uint8_t *buf, size_t len, uint16_t family, uint32_t seq,
                   struct wg_device *dev, bool *done, char *err, size_t errlen)
{
    struct rd rd = {err, errlen};
    const uint8_t *p = buf;
    size_t rem = len;
    struct nlmsghdr h;
    int r = 0;

    if (err && errlen)
        err[0] = '\0';
    *done = false;
    if (len > WGNL_PAGE) {
        r = bad(&rd, -EPROTO, "page too long");
        goto out;
    }
    while (nl_ok(p, rem, &h)) {
        size_t step = NLMSG_ALIGN(h.nlmsg_len);

        if (h.nlmsg_seq != seq) {
            r = bad(&rd, -EPROTO, "answer to another request");
            goto out;
        }
        if (h.nlmsg_type == NLMSG_DONE) {
            int32_t e = 0;

            if (h.nlmsg_len >= NLMSG_LENGTH(sizeof(e)))
                memcpy(&e, p + NLMSG_HDRLEN, sizeof(e));
            if (e < 0) {
                r = e < -4095 ? -EPROTO : e;
                bad(&rd, r, "the dump failed");
                goto out;
            }
            if (rem > step) {
                r = bad(&rd, -EPROTO, "data after the end of the dump");
                goto out;
            }
            *done = true;
            return 0;
        }
        if (h.nlmsg_type == NLMSG_ERROR) {
            r = nl_error(p, &h);
            if (r == 0)
                r = -EPROTO;
            bad(&rd, r, "error from the kernel");
            goto out;
        }
        if (h.nlmsg_type != family) {
            r = bad(&rd, -EPROTO, "message of another family");
            goto out;
        }
        if (h.nlmsg_len < NLMSG_LENGTH(GENL_HDRLEN) ||
            ((const struct genlmsghdr *)(p + NLMSG_HDRLEN))->cmd != WG_CMD_GET_DEVICE) {
            r = bad(&rd, -EPROTO, "not an answer to WG_CMD_GET_DEVICE");
            goto out;
        }
        r = parse_device(&rd, p + NLMSG_LENGTH(GENL_HDRLEN),
                         h.nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN), dev);
        if (r < 0)
            goto out;
        p += step < rem ? step : rem;
        rem -= step < rem ? step : rem;
    }
    if (rem != 0)
        r = bad(&rd, -EPROTO, "truncated message");
out:
    if (r < 0)
        wg_device_clear(dev);
    return r;
}

int wgnl_parse_family(const uint8_t *buf, size_t len, uint32_t seq, uint16_t *id)
{
    const uint8_t *p = buf;
    size_t rem = len;
    struct nlmsghdr h;
    bool found = false;

    if (len > WGNL_PAGE)
        return -EPROTO;
    while (nl_ok(p, rem, &h)) {
        size_t step = NLMSG_ALIGN(h.nlmsg_len);

        if (h.nlmsg_seq != seq)
            return -EPROTO;
        if (h.nlmsg_type == NLMSG_ERROR) {
            int r = nl_error(p, &h);

            /* -ENOENT: no such family */
            return r < 0 ? r : -EPROTO;
        }
        if (h.nlmsg_type == GENL_ID_CTRL && h.nlmsg_len >= NLMSG_LENGTH(GENL_HDRLEN)) {
            struct attrs it =
                sub(p + NLMSG_LENGTH(GENL_HDRLEN), h.nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN));
            const uint8_t *x;
            size_t xn;
            uint16_t t;
            int r;

            if (((const struct genlmsghdr *)(p + NLMSG_HDRLEN))->cmd != CTRL_CMD_NEWFAMILY)
                return -EPROTO;
            while ((r = next_attr(&it, &t, &x, &xn)) > 0)
                if (t == CTRL_ATTR_FAMILY_ID) {
                    if (get_u16(x, xn, id) < 0 || *id < GENL_MIN_ID)
                        return -EPROTO;
                    found = true;
                }
            if (r < 0)
                return r;
        } else {
            return -EPROTO;
        }
        p += step < rem ? step : rem;
        rem -= step < rem ? step : rem;
    }
    return rem == 0 && found ? 0 : -EPROTO;
}

/* ---- the socket ---------------------------------------------------------------------------- */

int wgnl_sock_open(void)
{
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
    struct timeval tv = {WGNL_TIMEOUT_S, 0};
    int one = 1;
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);

    if (fd < 0)
        return -errno;
    /* NETLINK_CAP_ACK: an error does not echo the request back (a set holds the private key). */
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
        setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one)) < 0 ||
        bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int e = -errno;

        close(fd);
        return e;
    }
    return fd;
}

static int send_msg(int fd, const uint8_t *msg, size_t len)
{
    struct sockaddr_nl to = {.nl_family = AF_NETLINK};
    ssize_t n = sendto(fd, msg, len, 0, (struct sockaddr *)&to, sizeof(to));

    if (n < 0)
        return -errno;
    return (size_t)n == len ? 0 : -EIO;
}

/* One datagram into buf: its length, or -errno (-EMSGSIZE when it did not fit, -ETIMEDOUT). */
static ssize_t recv_page(int fd, uint8_t *buf, size_t size)
{
    for (;;) {
        ssize_t n = recv(fd, buf, size, MSG_TRUNC);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno == EAGAIN ? -ETIMEDOUT : -errno;
        return (size_t)n > size ? -EMSGSIZE : n;
    }
}

/* Whether a page answers request seq (an answer to an earlier request may be left in the
 * socket after a timeout: it is read past). */
static bool page_of(const uint8_t *buf, size_t n, uint32_t seq)
{
    struct nlmsghdr h;

    if (n < sizeof(h))
        return true;
    memcpy(&h, buf, sizeof(h));
    return h.nlmsg_seq == seq;
}

int wgnl_sock_family(int fd, uint32_t seq)
{
    uint8_t req[WGNL_MSG_MAX], buf[WGNL_PAGE];
    uint16_t id = 0;
    ssize_t n;
    int r = wgnl_msg_family(seq, req, sizeof(req));

    if (r < 0)
        return r;
    r = send_msg(fd, req, (size_t)r);
    if (r < 0)
        return r;
    do
        n = recv_page(fd, buf, sizeof(buf));
    while (n >= 0 && !page_of(buf, (size_t)n, seq));
    if (n < 0)
        return (int)n;
    r = wgnl_parse_family(buf, (size_t)n, seq, &id);
    return r < 0 ? r : id;
}

int wgnl_sock_get(int fd, uint16_t family, uint32_t seq, const char *ifname, struct wg_device *ret,
                  char *err, size_t errlen)
{
    uint8_t req[WGNL_MSG_MAX], *buf = x_malloc(WGNL_PAGE);
    bool done = false;
    int r;

    memset(ret, 0, sizeof(*ret));
    if (err && errlen)
        err[0] = '\0';
    if (!buf)
        return -ENOMEM;
    r = wgnl_msg_get(family, seq, ifname, req, sizeof(req));
    if (r >= 0)
        r = send_msg(fd, req, (size_t)r);
    while (r >= 0 && !done) {
        ssize_t n = recv_page(fd, buf, WGNL_PAGE);

        if (n < 0) {
            r = (int)n;
            break;
        }
        if (!page_of(buf, (size_t)n, seq))
            continue;
        r = wgnl_parse_get(buf, (size_t)n, family, seq, ret, &done, err, errlen);
        /* the page held the private key */
        OPENSSL_cleanse(buf, (size_t)n);
    }
    if (r < 0) {
        wg_device_clear(ret);
        if (err && errlen && !err[0])
            snprintf(err, errlen, "%s", strerror(-r));
    }
    OPENSSL_cleanse(buf, WGNL_PAGE);
    x_free(buf);
    return r < 0 ? r : 0;
}

int wgnl_sock_set(int fd, uint16_t family, uint32_t *seq, const struct wgnl_set *s)
{
    uint8_t buf[WGNL_SET_MAX];
    size_t next = 0;
    int r;

    do {
        uint32_t q = ++*seq;

        r = wgnl_msg_set(family, q, s, &next, buf, sizeof(buf));
        if (r >= 0)
            r = rt_sock_apply(fd, buf, (size_t)r, q);
    } while (r >= 0 && next < s->nops);
    OPENSSL_cleanse(buf, sizeof(buf));
    return r < 0 ? r : 0;
}
