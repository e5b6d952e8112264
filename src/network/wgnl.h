/* wgnl: WireGuard through the kernel, over generic netlink (docs/dataplane.md, "The gateway").
 *
 * The same desired state the gateway sends to wireguard-go through wguapi.h, as the messages the
 * kernel's WireGuard (linux/wireguard.h) takes, and its answers read back into the same struct
 * wg_device that wg_uapi_get_parse fills, so the gateway's planning is one whatever the transport.
 *
 * Pure builders and parsers, table-tested (tests/unit/test-network-wgnl.c) since the kernel of the
 * CI machines has no WireGuard; wgnl_sock_* are thin blocking calls like routes.h's rt_sock_*.
 *
 *   - The family: wgnl_msg_family asks the generic netlink controller for "wireguard";
 *     wgnl_parse_family reads its id. No id (ENOENT): the kernel has no WireGuard.
 *   - Set: WG_CMD_SET_DEVICE, split over several messages of at most `size` bytes each when the
 *     peers do not fit in one, as `wg` does: the device's attributes (private key, listen port,
 *     replace-peers) go in the first message only, and each peer whole in one of them (a peer has
 *     at most WG_MAX_ALLOWED allowed IPs, so it always fits in WGNL_SET_MIN bytes).
 *   - Get: WG_CMD_GET_DEVICE as a dump of one interface; its answer is one or more messages, a peer
 *     possibly continued in the next one (the same public key again), read by wgnl_parse_get page
 *     by page.
 *   - The link: RTM_NEWLINK / RTM_DELLINK of kind "wireguard" on a NETLINK_ROUTE socket (routes.h's
 *     rt_sock_apply sends them and reads their acknowledgement).
 *
 * Bounds on what is read: pages of at most WGNL_PAGE bytes, at most WG_MAX_PEERS peers and
 * WG_MAX_ALLOWED allowed IPs a peer (-E2BIG past them), every attribute within its parent, keys
 * exactly WG_KEY_LEN bytes. A page of the answer holds the private key: wgnl_sock_get wipes it. */
#ifndef CLIQO_NETWORK_WGNL_H
#define CLIQO_NETWORK_WGNL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "network/wguapi.h"

#define WGNL_PAGE     32768 /* a dump's page: the most the kernel puts in one read */
#define WGNL_SET_MAX  4096  /* a set message: the page size, as `wg` sends them */
#define WGNL_SET_MIN  1024  /* room for the device's attributes and one peer of WG_MAX_ALLOWED */
#define WGNL_MSG_MAX  256   /* the other requests */
#define WGNL_IFNAMSIZ 16

/* One peer of a set request: created or updated (its endpoint when it has one, its keepalive, its
 * allowed IPs replaced by peer.allowed), or removed. */
struct wgnl_peer_op {
    struct wg_peer peer; /* pub, endpoint, keepalive_s, allowed, nallowed */
    bool remove;
};

/* A set request: the interface, the device's attributes when set_device (private key when
 * has_private, listen port, replace_peers), then the peers. priv is the caller's to wipe. */
struct wgnl_set {
    const char *ifname;
    bool set_device;
    bool has_private;
    struct wg_key priv;
    uint16_t listen_port;
    bool replace_peers;
    const struct wgnl_peer_op *ops;
    size_t nops;
};

/* CTRL_CMD_GETFAMILY for "wireguard". Returns the length or -ENOSPC. */
int wgnl_msg_family(uint32_t seq, uint8_t *buf, size_t size);
/* Its answer: 0 with *id, the kernel's negative errno (-ENOENT: no WireGuard), or -EPROTO. */
int wgnl_parse_family(const uint8_t *buf, size_t len, uint32_t seq, uint16_t *id);

/* One WG_CMD_SET_DEVICE message with NLM_F_ACK, from the peer *next on: the device's attributes
 * when *next is 0, then as many whole peers as fit in size bytes (at most WGNL_SET_MAX); *next is
 * moved past them. The caller sends messages until *next == s->nops (at least one, even with no
 * peer). Returns the length, -EINVAL (no or a too long interface name, a zero private or public
 * key, nallowed too large, an invalid CIDR or endpoint) or -ENOSPC (size below what the device and
 * one peer need). */
int wgnl_msg_set(uint16_t family, uint32_t seq, const struct wgnl_set *s, size_t *next,
                 uint8_t *buf, size_t size);
/* WG_CMD_GET_DEVICE, a dump of the interface ifname. Returns the length, -EINVAL or -ENOSPC. */
int wgnl_msg_get(uint16_t family, uint32_t seq, const char *ifname, uint8_t *buf, size_t size);
/* Reads one page of the answer to a get into *dev (empty before the first page): appends the
 * peers, merges a peer continued from the previous message, sets *done at NLMSG_DONE. Returns 0,
 * -EPROTO (a malformed or truncated message or attribute, a key of another length, an answer to
 * another sequence or family), -E2BIG past the bounds, -ENOMEM, or the negative errno of an
 * NLMSG_ERROR (-ENODEV: no such interface). On failure *dev is cleared (wg_device_clear). err (may
 * be NULL) says what was wrong. */
int wgnl_parse_get(const uint8_t *buf, size_t len, uint16_t family, uint32_t seq,
                   struct wg_device *dev, bool *done, char *err, size_t errlen);

/* RTM_NEWLINK of kind "wireguard" named ifname (NLM_F_CREATE | NLM_F_EXCL, so an existing link is
 * -EEXIST), and RTM_DELLINK of ifname, both with NLM_F_ACK. Return the length, -EINVAL or -ENOSPC.
 */
int wgnl_msg_newlink(const char *ifname, uint32_t seq, uint8_t *buf, size_t size);
int wgnl_msg_dellink(const char *ifname, uint32_t seq, uint8_t *buf, size_t size);

/* A blocking NETLINK_GENERIC socket of the caller's network namespace, with a receive timeout of
 * 2 s. Returns the fd or -errno. */
int wgnl_sock_open(void);
/* Resolves the family. Returns its id (> 0) or -errno (-ENOENT: the kernel has no WireGuard). */
int wgnl_sock_family(int fd, uint32_t seq);
/* The device ifname into *ret (cleared first; wg_device_clear). Returns 0 or -errno. */
int wgnl_sock_get(int fd, uint16_t family, uint32_t seq, const char *ifname, struct wg_device *ret,
                  char *err, size_t errlen);
/* Sends s in as many messages as it takes, each acknowledged; *seq is advanced by one a message.
 * Returns 0 or -errno. The messages' buffer is wiped. */
int wgnl_sock_set(int fd, uint16_t family, uint32_t *seq, const struct wgnl_set *s);

#endif
