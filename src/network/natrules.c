/* natrules: the nftables text of the stateless prefix NAT (natrules.h). */
#include "network/natrules.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

struct fam {
    const char *table; /* "ip" or "ip6" */
    const char *addr;  /* the address type of the map */
    const char *match; /* the payload keyword */
};

static const struct fam *fam_of(int family)
{
    static const struct fam v4 = {"ip", "ipv4_addr", "ip"}, v6 = {"ip6", "ipv6_addr", "ip6"};

    return family == 4 ? &v4 : family == 6 ? &v6 : NULL;
}

__attribute__((format(printf, 3, 4))) static int bad(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err && errlen) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

static bool ifname_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;

    if (n == 0 || n >= NATR_IFNAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '.' || s[i] == '-'))
            return false;
    return true;
}

/* The address whose bits are the host part of a /prefix of the family, as text. */
static void hostmask(int family, unsigned prefix, char *buf, size_t size)
{
    uint8_t b[16];
    size_t len = family == 4 ? 4 : 16;

    for (size_t i = 0; i < len; i++) {
        unsigned bits = i * 8 >= prefix ? 0 : prefix - i * 8 >= 8 ? 8 : prefix - i * 8;

        b[i] = (uint8_t)(0xffu >> bits);
    }
    inet_ntop(family == 4 ? AF_INET : AF_INET6, b, buf, (socklen_t)size);
}

/* The network address of c without its length. */
static void network(const struct cidr *c, char *buf, size_t size)
{
    inet_ntop(c->family == 4 ? AF_INET : AF_INET6, c->addr, buf, (socklen_t)size);
}

/* <dir>_<the CIDR's text, every '.', ':' and '/' turned into '_'>. */
static void chain_name(const char *dir, const struct cidr *c, char *buf, size_t size)
{
    char t[CIDR_STR_MAX];

    cidr_format(c, t, sizeof(t));
    snprintf(buf, size, "%s_%s", dir, t);
    for (char *p = buf; *p; p++)
        if (*p == '.' || *p == ':' || *p == '/')
            *p = '_';
}

static int cmp_seen(const void *a, const void *b)
{
    const struct natr_peer *x = *(const struct natr_peer *const *)a;
    const struct natr_peer *y = *(const struct natr_peer *const *)b;
    int d = memcmp(x->seen_here.addr, y->seen_here.addr, sizeof(x->seen_here.addr));

    return d ? d : (int)x->seen_here.prefix - (int)y->seen_here.prefix;
}

static int check(int family, const char *ifname, const struct cidr *local,
                 const struct natr_peer *peers, size_t n, const struct natr_peer **sorted,
                 char *err, size_t errlen)
{
    char t[CIDR_STR_MAX], u[CIDR_STR_MAX];

    if (!fam_of(family))
        return bad(err, errlen, "family %d is neither 4 nor 6", family);
    if (!ifname_ok(ifname))
        return bad(err, errlen, "'%s' is not an interface name", ifname ? ifname : "");
    if (cidr_format(local, t, sizeof(t)) < 0 || local->family != family)
        return bad(err, errlen, "the local pod CIDR is not an IPv%d CIDR", family);
    for (size_t i = 0; i < n; i++) {
        const struct natr_peer *p = &peers[i];

        if (cidr_format(&p->seen_here, t, sizeof(t)) < 0 ||
            cidr_format(&p->us_there, t, sizeof(t)) < 0 || p->seen_here.family != family ||
            p->us_there.family != family)
            return bad(err, errlen, "peer %zu: a CIDR that is not IPv%d", i, family);
        if (p->us_there.prefix != local->prefix)
            return bad(err, errlen,
                       "peer %zu: where it sees this cluster and the local pod CIDR differ in "
                       "length",
                       i);
        sorted[i] = p;
    }
    qsort(sorted, n, sizeof(*sorted), cmp_seen);
    for (size_t i = 1; i < n; i++)
        if (cidr_overlaps(&sorted[i - 1]->seen_here, &sorted[i]->seen_here)) {
            cidr_format(&sorted[i - 1]->seen_here, t, sizeof(t));
            cidr_format(&sorted[i]->seen_here, u, sizeof(u));
            return bad(err, errlen, "two peers are seen in overlapping blocks (%s, %s)", t, u);
        }
    return 0;
}

int natr_ruleset(int family, const char *ifname, const struct cidr *local,
                 const struct natr_peer *peers, size_t n, struct sbuf *out, char *err,
                 size_t errlen)
{
    const struct fam *f = fam_of(family);
    const struct natr_peer **sorted = NULL;
    char chain[CIDR_STR_MAX + 8], seen[CIDR_STR_MAX], loc[CIDR_STR_MAX], lnet[INET6_ADDRSTRLEN];
    char lmask[INET6_ADDRSTRLEN], there[INET6_ADDRSTRLEN];
    int r;

    if (n > NATR_MAX_PEERS) {
        if (err && errlen)
            snprintf(err, errlen, "more than %d peers", NATR_MAX_PEERS);
        return -E2BIG;
    }
    sorted = x_calloc(n ? n : 1, sizeof(*sorted));
    if (!sorted)
        return -ENOMEM;
    r = check(family, ifname, local, peers, n, sorted, err, errlen);
    if (r < 0)
        goto out;
    cidr_format(local, loc, sizeof(loc));
    network(local, lnet, sizeof(lnet));
    hostmask(family, local->prefix, lmask, sizeof(lmask));
    r = sbuf_printf(out, "table %s cliqo\ndelete table %s cliqo\ntable %s cliqo {\n", f->table,
                    f->table, f->table);
    for (int dir = 0; r >= 0 && dir < 2; dir++) {
        r = sbuf_printf(out, "\tmap %s_peer {\n\t\ttype %s : verdict\n\t\tflags interval\n",
                        dir ? "from" : "to", f->addr);
        for (size_t i = 0; r >= 0 && i < n; i++) {
            cidr_format(&sorted[i]->seen_here, seen, sizeof(seen));
            chain_name(dir ? "from" : "to", &sorted[i]->seen_here, chain, sizeof(chain));
            r = sbuf_printf(out, "%s%s : jump %s%s", i ? ", " : "\t\telements = { ", seen, chain,
                            i + 1 == n ? " }\n" : "");
        }
        if (r >= 0)
            r = sbuf_adds(out, "\t}\n");
    }
    for (size_t i = 0; r >= 0 && i < n; i++) {
        const struct natr_peer *p = sorted[i];
        char there_cidr[CIDR_STR_MAX];

        cidr_format(&p->us_there, there_cidr, sizeof(there_cidr));
        network(&p->us_there, there, sizeof(there));
        chain_name("to", &p->seen_here, chain, sizeof(chain));
        r = sbuf_printf(out, "\tchain %s {\n\t\t%s saddr %s %s saddr set %s saddr & %s | %s\n\t}\n",
                        chain, f->match, loc, f->match, f->match, lmask, there);
        chain_name("from", &p->seen_here, chain, sizeof(chain));
        if (r >= 0)
            r = sbuf_printf(out,
                            "\tchain %s {\n\t\t%s daddr %s %s daddr set %s daddr & %s | %s\n\t}\n",
                            chain, f->match, there_cidr, f->match, f->match, lmask, lnet);
    }
    if (r >= 0)
        r = sbuf_printf(out,
                        "\tchain egress {\n"
                        "\t\ttype filter hook postrouting priority srcnat - 10; policy accept;\n"
                        "\t\toifname \"%s\" tcp flags & syn == syn tcp option maxseg size set rt "
                        "mtu\n"
                        "\t\toifname \"%s\" %s daddr vmap @to_peer\n\t}\n"
                        "\tchain ingress {\n"
                        "\t\ttype filter hook prerouting priority raw; policy accept;\n"
                        "\t\tiifname \"%s\" %s saddr vmap @from_peer\n\t}\n}\n",
                        ifname, ifname, f->match, ifname, f->match);
    if (r > 0)
        r = 0;
out:
    x_free(sorted);
    return r;
}

int natr_remove(int family, struct sbuf *out)
{
    const struct fam *f = fam_of(family);
    int r;

    if (!f)
        return -EINVAL;
    r = sbuf_printf(out, "table %s cliqo\ndelete table %s cliqo\n", f->table, f->table);
    return r < 0 ? r : 0;
}
