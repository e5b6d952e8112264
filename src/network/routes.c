/* routes: rtnetlink messages for the data plane's routes (routes.h). */
#include "network/routes.h"

#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int af_of(int family)
{
    return family == 4 ? AF_INET : family == 6 ? AF_INET6 : -1;
}

static size_t alen(int family)
{
    return family == 4 ? 4 : 16;
}

struct msg {
    uint8_t *buf;
    size_t size, len;
    bool over;
};

static struct nlmsghdr *msg_start(struct msg *m, uint16_t type, uint16_t flags, uint32_t seq)
{
    struct nlmsghdr *h = (struct nlmsghdr *)m->buf;

    if (m->size < NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct rtmsg))) {
        m->over = true;
        return NULL;
    }
    memset(m->buf, 0, NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct rtmsg)));
    h->nlmsg_type = type;
    h->nlmsg_flags = flags;
    h->nlmsg_seq = seq;
    m->len = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct rtmsg));
    return h;
}

static struct rtattr *attr(struct msg *m, uint16_t type, const void *data, size_t n)
{
    struct rtattr *a;

    if (m->over || m->len + RTA_SPACE(n) > m->size) {
        m->over = true;
        return NULL;
    }
    a = (struct rtattr *)(m->buf + m->len);
    a->rta_type = type;
    a->rta_len = (unsigned short)RTA_LENGTH(n);
    if (n)
        memcpy(RTA_DATA(a), data, n);
    memset((uint8_t *)RTA_DATA(a) + n, 0, RTA_SPACE(n) - RTA_LENGTH(n));
    m->len += RTA_SPACE(n);
    return a;
}

static int msg_end(struct msg *m)
{
    if (m->over)
        return -ENOSPC;
    ((struct nlmsghdr *)m->buf)->nlmsg_len = (uint32_t)m->len;
    return (int)m->len;
}

static int route_msg(const struct rt_route *r, uint16_t type, uint16_t flags, uint32_t seq,
                     uint8_t *buf, size_t size)
{
    struct msg m = {.buf = buf, .size = size};
    struct nlmsghdr *h;
    struct rtmsg *rt;
    char text[CIDR_STR_MAX];
    uint32_t table = r->table ? r->table : RT_TABLE_MAIN;

    if (cidr_format(&r->dst, text, sizeof(text)) < 0 || (!r->oif && !r->has_via))
        return -EINVAL;
    h = msg_start(&m, type, flags, seq);
    if (!h)
        return -ENOSPC;
    rt = NLMSG_DATA(h);
    rt->rtm_family = (unsigned char)af_of(r->dst.family);
    rt->rtm_dst_len = r->dst.prefix;
    rt->rtm_table = table < 256 ? (unsigned char)table : RT_TABLE_UNSPEC;
    rt->rtm_protocol = RT_PROTO_CLIQO;
    rt->rtm_type = RTN_UNICAST;
    if (type == RTM_DELROUTE)
        rt->rtm_scope = RT_SCOPE_NOWHERE;
    else
        rt->rtm_scope = r->has_via ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK;
    attr(&m, RTA_TABLE, &table, sizeof(table));
    if (r->dst.prefix)
        attr(&m, RTA_DST, r->dst.addr, alen(r->dst.family));
    if (r->oif)
        attr(&m, RTA_OIF, &r->oif, sizeof(r->oif));
    if (r->has_via)
        attr(&m, RTA_GATEWAY, r->via, alen(r->dst.family));
    if (r->mtu && type == RTM_NEWROUTE) {
        struct rtattr *metrics = attr(&m, RTA_METRICS, NULL, 0);

        if (metrics) {
            attr(&m, RTAX_MTU, &r->mtu, sizeof(r->mtu));
            if (!m.over)
                metrics->rta_len = (unsigned short)(m.buf + m.len - (uint8_t *)metrics);
        }
    }
    return msg_end(&m);
}

int rt_msg_new(const struct rt_route *r, uint32_t seq, uint8_t *buf, size_t size)
{
    return route_msg(r, RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE, seq,
                     buf, size);
}

int rt_msg_del(const struct rt_route *r, uint32_t seq, uint8_t *buf, size_t size)
{
    return route_msg(r, RTM_DELROUTE, NLM_F_REQUEST | NLM_F_ACK, seq, buf, size);
}

int rt_msg_dump(int family, uint32_t seq, uint8_t *buf, size_t size)
{
    struct msg m = {.buf = buf, .size = size};
    struct nlmsghdr *h;

    if (af_of(family) < 0)
        return -EINVAL;
    h = msg_start(&m, RTM_GETROUTE, NLM_F_REQUEST | NLM_F_DUMP, seq);
    if (!h)
        return -ENOSPC;
    ((struct rtmsg *)NLMSG_DATA(h))->rtm_family = (unsigned char)af_of(family);
    return msg_end(&m);
}

/* One RTM_NEWROUTE of a dump into *r: 1 when it is ours (protocol, unicast, table), 0 when it is
 * not, -EPROTO when malformed. */
static int parse_route(const struct nlmsghdr *h, uint32_t want_table, struct rt_route *r)
{
    const struct rtmsg *rt;
    const struct rtattr *a;
    int family, rem;
    uint32_t table;

    if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*rt)))
        return -EPROTO;
    rt = NLMSG_DATA(h);
    family = rt->rtm_family == AF_INET ? 4 : rt->rtm_family == AF_INET6 ? 6 : 0;
    if (!family || rt->rtm_dst_len > (family == 4 ? 32 : 128))
        return -EPROTO;
    memset(r, 0, sizeof(*r));
    r->dst.family = (uint8_t)family;
    r->dst.prefix = rt->rtm_dst_len;
    table = rt->rtm_table;
    rem = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*rt)));
    for (a = (const struct rtattr *)((const uint8_t *)rt + NLMSG_ALIGN(sizeof(*rt)));
         RTA_OK(a, rem); a = RTA_NEXT(a, rem)) {
        size_t n = RTA_PAYLOAD(a);

        switch (a->rta_type) {
        case RTA_TABLE:
            if (n != 4)
                return -EPROTO;
            memcpy(&table, RTA_DATA(a), 4);
            break;
        case RTA_DST:
            if (n != alen(family))
                return -EPROTO;
            memcpy(r->dst.addr, RTA_DATA(a), n);
            break;
        case RTA_OIF:
            if (n != 4)
                return -EPROTO;
            memcpy(&r->oif, RTA_DATA(a), 4);
            break;
        case RTA_GATEWAY:
            if (n != alen(family))
                return -EPROTO;
            memcpy(r->via, RTA_DATA(a), n);
            r->has_via = true;
            break;
        case RTA_METRICS: {
            const struct rtattr *x;
            int xrem = (int)n;

            for (x = RTA_DATA(a); RTA_OK(x, xrem); x = RTA_NEXT(x, xrem))
                if (x->rta_type == RTAX_MTU) {
                    if (RTA_PAYLOAD(x) != 4)
                        return -EPROTO;
                    memcpy(&r->mtu, RTA_DATA(x), 4);
                }
            break;
        }
        default:
            break;
        }
    }
    if (rt->rtm_protocol != RT_PROTO_CLIQO || rt->rtm_type != RTN_UNICAST ||
        table != (want_table ? want_table : RT_TABLE_MAIN))
        return 0;
    r->table = want_table;
    /* A route whose destination has host bits is none of ours (we never make one). */
    {
        char text[CIDR_STR_MAX];

        if (cidr_format(&r->dst, text, sizeof(text)) < 0)
            return 0;
    }
    return 1;
}

/* The netlink message at the head of rem bytes is whole (NLMSG_OK, without its signed length). */
static bool nl_ok(const struct nlmsghdr *h, size_t rem)
{
    return rem >= sizeof(*h) && h->nlmsg_len >= sizeof(*h) && h->nlmsg_len <= rem;
}

/* The next message and what is left after it (NLMSG_NEXT). */
static const struct nlmsghdr *nl_next(const struct nlmsghdr *h, size_t *rem)
{
    size_t step = NLMSG_ALIGN(h->nlmsg_len);

    *rem = step >= *rem ? 0 : *rem - step;
    return (const struct nlmsghdr *)((const uint8_t *)h + step);
}

static int nl_error(const struct nlmsghdr *h)
{
    const struct nlmsgerr *e;

    if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
        return -EPROTO;
    e = NLMSG_DATA(h);
    return e->error > 0 || e->error < -4095 ? -EPROTO : e->error;
}

int rt_parse_dump(const uint8_t *buf, size_t len, uint32_t seq, uint32_t table,
                  struct rt_route *out, size_t max, size_t *n, bool *done)
{
    const struct nlmsghdr *h = (const struct nlmsghdr *)buf;
    size_t rem = len;

    *done = false;
    if (len > RT_PAGE * 4)
        return -EPROTO;
    for (; nl_ok(h, rem); h = nl_next(h, &rem)) {
        int r;

        if (h->nlmsg_seq != seq)
            return -EPROTO;
        if (h->nlmsg_type == NLMSG_DONE) {
            *done = true;
            return 0;
        }
        if (h->nlmsg_type == NLMSG_ERROR)
            return nl_error(h);
        if (h->nlmsg_type != RTM_NEWROUTE)
            continue;
        if (*n >= max)
            return -E2BIG;
        r = parse_route(h, table, &out[*n]);
        if (r < 0)
            return r;
        *n += (size_t)r;
    }
    return rem == 0 ? 0 : -EPROTO;
}

int rt_parse_ack(const uint8_t *buf, size_t len, uint32_t seq)
{
    const struct nlmsghdr *h = (const struct nlmsghdr *)buf;

    if (len > RT_PAGE || !nl_ok(h, len) || h->nlmsg_seq != seq || h->nlmsg_type != NLMSG_ERROR)
        return -EPROTO;
    return nl_error(h);
}

bool rt_equal(const struct rt_route *a, const struct rt_route *b)
{
    return cidr_equal(&a->dst, &b->dst) && (!a->oif || !b->oif || a->oif == b->oif) &&
           a->has_via == b->has_via &&
           (!a->has_via || memcmp(a->via, b->via, alen(a->dst.family)) == 0) && a->mtu == b->mtu &&
           (a->table ? a->table : RT_TABLE_MAIN) == (b->table ? b->table : RT_TABLE_MAIN);
}

static bool has_route(const struct rt_route *list, size_t n, const struct rt_route *r)
{
    for (size_t i = 0; i < n; i++)
        if (rt_equal(&list[i], r))
            return true;
    return false;
}

void rt_plan(const struct rt_route *want, size_t nwant, const struct rt_route *have, size_t nhave,
             const struct rt_route **add, size_t *nadd, const struct rt_route **del, size_t *ndel)
{
    *nadd = *ndel = 0;
    for (size_t i = 0; i < nhave; i++)
        if (!has_route(want, nwant, &have[i]))
            del[(*ndel)++] = &have[i];
    for (size_t j = 0; j < nwant; j++)
        if (!has_route(have, nhave, &want[j]))
            add[(*nadd)++] = &want[j];
}

/* ---- the socket ---------------------------------------------------------------------------- */

int rt_sock_open(void)
{
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);

    if (fd < 0)
        return -errno;
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int e = -errno;

        close(fd);
        return e;
    }
    return fd;
}

static int send_all(int fd, const uint8_t *msg, size_t len)
{
    struct sockaddr_nl to = {.nl_family = AF_NETLINK};
    ssize_t n = sendto(fd, msg, len, 0, (struct sockaddr *)&to, sizeof(to));

    if (n < 0)
        return -errno;
    return (size_t)n == len ? 0 : -EIO;
}

int rt_sock_apply(int fd, const uint8_t *msg, size_t len, uint32_t seq)
{
    uint8_t buf[RT_PAGE];
    int r = send_all(fd, msg, len);

    if (r < 0)
        return r;
    for (;;) {
        ssize_t n = recv(fd, buf, sizeof(buf), 0);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        /* An answer to an earlier request left in the socket: read on. */
        if ((size_t)n >= NLMSG_HDRLEN && ((const struct nlmsghdr *)buf)->nlmsg_seq != seq)
            continue;
        return rt_parse_ack(buf, (size_t)n, seq);
    }
}

int rt_sock_dump(int fd, uint32_t seq, int family, uint32_t table, struct rt_route *out, size_t max)
{
    uint8_t req[RT_MSG_MAX], buf[RT_PAGE];
    size_t count = 0;
    bool done = false;
    int r;

    if (max > RT_MAX_ROUTES)
        max = RT_MAX_ROUTES;
    r = rt_msg_dump(family, seq, req, sizeof(req));
    if (r < 0)
        return r;
    r = send_all(fd, req, (size_t)r);
    while (r == 0 && !done) {
        ssize_t n = recv(fd, buf, sizeof(buf), 0);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        r = rt_parse_dump(buf, (size_t)n, seq, table, out, max, &count, &done);
    }
    return r < 0 ? r : (int)count;
}
