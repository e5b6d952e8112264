/* dppeers: which peers the data plane serves and where it sees their pods, shared by the gateway
 * (gateway.c) and the node mode (nodeagent.c), so that a node routes to the gateway exactly the
 * blocks the gateway takes (docs/dataplane.md, sections 3 to 5). Reads informers' caches; no
 * request, no logging.
 *
 * Ownership: strings returned are borrowed from the object passed in. */
#ifndef CLIQO_NETWORK_DPPEERS_H
#define CLIQO_NETWORK_DPPEERS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "kube/informer.h"
#include "network/dpobj.h"

/* Whether the data plane serves the peer of ForeignCluster fc: peered in either direction
 * (OutgoingPeering or IncomingPeering Established), networking enabled (pnet_enabled), a valid
 * cluster ID and a tenant namespace; then *ret_id and *ret_tenant (borrowed from fc). */
bool dpp_fc_peer(const json_t *fc, const char **ret_id, const char **ret_tenant);

/* The peer's NetworkConfig here (net-config-<id> in namespace tenant, from the informer ncs) read
 * by dpo_nc_parse: 0 with *ret, -EAGAIN (none yet, or the remapping is not settled) or -EINVAL (a
 * malformed value), with the reason. */
int dpp_peer_net(const struct inf_informer *ncs, const char *tenant, const char *id,
                 struct dpo_peer_net *ret, char *reason, size_t len);

/* Whether peer b cannot be installed beside peer a (taken first): a local pod CIDR of the same
 * family that differs (the NAT table has one per family), or blocks that overlap. */
bool dpp_conflicts(const struct dpo_peer_net *a, const struct dpo_peer_net *b);

#endif
