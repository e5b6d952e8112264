/* routes: the data plane's routes through rtnetlink (docs/dataplane.md, "Routes and NAT", "Nodes").
 *
 * Every route cliqo installs carries the routing protocol number RT_PROTO_CLIQO, so that the
 * gateway and the node mode find theirs in a dump (and `ip route show proto 146` shows them) and
 * never touch a route of other software. The messages are built and parsed by pure functions
 * (table-tested); rt_sock_* are thin blocking calls on a NETLINK_ROUTE socket (each one round trip
 * of a few microseconds to the kernel, done from the loop) and rt_plan is the pure difference
 * between the routes wanted and the routes found.
 *
 * Bounds: a dump is read in pages of RT_PAGE bytes and keeps at most RT_MAX_ROUTES routes of ours.
 */
#ifndef CLIQO_NETWORK_ROUTES_H
#define CLIQO_NETWORK_ROUTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "network/ipam.h"

#define RT_PROTO_CLIQO 146 /* unused by iproute2's rt_protos */
#define RT_MAX_ROUTES  8192
#define RT_PAGE        32768
#define RT_MSG_MAX     256

struct rt_route {
    struct cidr dst;
    uint32_t oif;    /* interface index; 0: none (then via is required) */
    bool has_via;    /* a gateway of dst's family */
    uint8_t via[16]; /* big-endian, IPv4 in the first 4 bytes */
    uint32_t mtu;    /* 0: the interface's */
    uint32_t table;  /* 0: main */
};

/* An RTM_NEWROUTE (create or replace) or RTM_DELROUTE request for r, protocol RT_PROTO_CLIQO, with
 * NLM_F_ACK. Returns its length, -EINVAL (no oif and no via, invalid dst) or -ENOSPC. */
int rt_msg_new(const struct rt_route *r, uint32_t seq, uint8_t *buf, size_t size);
int rt_msg_del(const struct rt_route *r, uint32_t seq, uint8_t *buf, size_t size);
/* An RTM_GETROUTE dump request of a family (4 or 6). Returns its length, -EINVAL or -ENOSPC. */
int rt_msg_dump(int family, uint32_t seq, uint8_t *buf, size_t size);

/* Reads one page of a dump's answer: appends the routes of protocol RT_PROTO_CLIQO (unicast, in
 * table `table`, 0 meaning main) to out[*n..max), sets *done at NLMSG_DONE. Returns 0, -EPROTO (a
 * truncated or malformed message, an answer to another sequence), -E2BIG (more than max of ours) or
 * the negative errno of an NLMSG_ERROR. */
int rt_parse_dump(const uint8_t *buf, size_t len, uint32_t seq, uint32_t table,
                  struct rt_route *out, size_t max, size_t *n, bool *done);
/* Reads the acknowledgement of a request: 0, the kernel's negative errno, or -EPROTO. */
int rt_parse_ack(const uint8_t *buf, size_t len, uint32_t seq);

/* Equal as routes go: destination, gateway, MTU, table, and interface when both name one (a route
 * through a gateway given without an interface is read back with the one the kernel chose). */
bool rt_equal(const struct rt_route *a, const struct rt_route *b);

/* The changes that turn `have` into `want`: each route of want not in have (equal) goes to add,
 * each route of have whose destination is not wanted, or wanted differently, goes to del (a changed
 * route is deleted and added, since its key may differ). add and del have room for nwant and nhave.
 * No allocation. */
void rt_plan(const struct rt_route *want, size_t nwant, const struct rt_route *have, size_t nhave,
             const struct rt_route **add, size_t *nadd, const struct rt_route **del, size_t *ndel);

/* A blocking NETLINK_ROUTE socket of the caller's network namespace. Returns the fd or -errno. */
int rt_sock_open(void);
/* Sends a request built above and reads its acknowledgement. Returns 0 or -errno. */
int rt_sock_apply(int fd, const uint8_t *msg, size_t len, uint32_t seq);
/* Dumps the routes of ours of a family in table (0: main) into out[0..max), with request number seq
 * (the caller's counter: one per request on the socket). Returns how many, or -errno (-E2BIG past
 * max). */
int rt_sock_dump(int fd, uint32_t seq, int family, uint32_t table, struct rt_route *out,
                 size_t max);

#endif
