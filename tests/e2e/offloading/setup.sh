#!/usr/bin/env bash
# The group's shared state: cliqo on A and B with test settings, one agent each, A peered with B, B's
# Advertisement Accepted and its virtual node Ready on A (docs/offloading.md).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
trap off_on_exit EXIT

say "install cliqo on ${ALL[*]}"
install_clusters "${ALL[@]}"
ids
say "test settings: keepalive 1 s x 3, refresh 15 s, TTL 180 s; pod and service CIDRs"
for c in "${ALL[@]}"; do
  cidr=$(cat "$E2E_STATE/$c/pod-cidr")
  patch_config "$c" "{\"spec\":{\"advertisementConfig\":{\"keepaliveRetryTime\":1,\"keepaliveThreshold\":3,
    \"outgoingConfig\":{\"refreshSeconds\":15,\"ttlSeconds\":180}},
    \"liqonetConfig\":{\"podCIDR\":\"$cidr\",\"serviceCIDR\":\"10.96.0.0/16\"}}}"
done

say "start the agents"
ensure_agents

say "peer $A with $B"
start=$(date +%s.%N)
peer_with "$B"
wait_shared 90
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
echo "FIGURE peer-to-ready-virtual-node-seconds=$secs"
pass "A peered with B; virtual node $VNODE Ready in ${secs}s"
