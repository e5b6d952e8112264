/* noderoutes: what the node mode (`cliqo-agent node`, nodeagent.c) decides, as pure functions
 * (docs/dataplane.md, section 5). No I/O, no logging.
 *
 * - The gateway node: the Node labelled NRT_GATEWAY_LABEL=true, reached at its InternalIP
 *   (nrt_gateway_node). When several are labelled the first by name is the gateway (a warning for
 *   the caller to log); none, or one without a usable InternalIP: no gateway, so no route.
 * - The routes of a node that is not the gateway: one per remote pod block R_P (where this cluster
 *   sees the peer's pods, the gateway's allowed IPs), `R_P via <gateway's InternalIP>`, protocol
 *   RT_PROTO_CLIQO, in the main table. A block of another family than the gateway's address gets
 *   none. The gateway node itself gets none: its pods reach the tunnel's interface directly.
 *   nrt_want builds them; routes.c's rt_plan turns what a dump found (nrt_owned: the routes with
 *   a via) into what is wanted.
 *
 * Ownership: inputs are borrowed; nothing is kept. */
#ifndef CLIQO_NETWORK_NODEROUTES_H
#define CLIQO_NETWORK_NODEROUTES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "network/ipam.h"
#include "network/routes.h"

#define NRT_GATEWAY_LABEL "net.liqo.io/gateway"

/* A gateway node as the node mode sees it. */
struct nrt_gateway {
    char name[254]; /* the Node's name */
    int family;     /* 4 or 6 */
    uint8_t ip[16]; /* its InternalIP, big-endian (IPv4 in the first 4 bytes) */
};

/* Whether node is labelled NRT_GATEWAY_LABEL=true: 1 with *ret filled from its first InternalIP, 0
 * when it is not labelled, -EINVAL when it is but has no usable InternalIP (none, a name, the
 * unspecified, loopback or a multicast address). */
int nrt_gateway_node(const json_t *node, struct nrt_gateway *ret);

/* The routes of a dump that are the node mode's: those through a gateway address (via). The
 * gateway's own routes of the same protocol go through its tunnel's interface (no via) and are
 * never the node mode's to change, so that running both on one node is harmless. Compacts
 * routes[0..n) in place; returns how many are left. */
size_t nrt_owned(struct rt_route *routes, size_t n);

/* The routes node `self` keeps: none when gw is NULL (no gateway known) or gw names self; else one
 * per block of blocks[0..n) of gw's family, `block via gw->ip`, each block once (a repeated one is
 * skipped). Writes at most max into out; returns how many, or -E2BIG when they do not fit. */
int nrt_want(const char *self, const struct nrt_gateway *gw, const struct cidr *blocks, size_t n,
             struct rt_route *out, size_t max);

#endif
