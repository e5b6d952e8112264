#!/usr/bin/env bash
# The group's shared state: cliqo on four clusters with test settings, one agent each, A peered with the three
# providers, three Advertisements Accepted and three virtual nodes Ready (docs/advertisement.md).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
trap adv_on_exit EXIT

say "install cliqo on ${ALL[*]}"
install_clusters "${ALL[@]}"
ids --read
say "test settings: keepalive 1 s x 3, refresh 15 s, TTL 180 s; pod and service CIDRs"
for c in "${ALL[@]}"; do
  cidr=$(cat "$E2E_STATE/$c/pod-cidr")
  patch_config "$c" "{\"spec\":{\"advertisementConfig\":{\"keepaliveRetryTime\":1,\"keepaliveThreshold\":3,
    \"outgoingConfig\":{\"refreshSeconds\":15,\"ttlSeconds\":180}},
    \"liqonetConfig\":{\"podCIDR\":\"$cidr\",\"serviceCIDR\":\"10.96.0.0/16\"}}}"
done
[ "$(cat "$E2E_STATE/$P2/pod-cidr")" = "$(cat "$E2E_STATE/$A/pod-cidr")" ] || fail "P2's pod CIDR must equal A's"

say "start the agents"
ensure_agents

say "peer $A with ${PROVIDERS[*]}"
start=$(date +%s.%N)
for p in "${PROVIDERS[@]}"; do peer_with "$p"; done
wait_all_shared 90
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
echo "FIGURE peer-three-providers-to-three-ready-virtual-nodes-seconds=$secs"
for p in "${PROVIDERS[@]}"; do
  [ "$(jget "$A" '{.spec.taints[?(@.key=="virtual-node.liqo.io/not-allowed")].effect}' node "$(vnode_of "$p")")" = NoExecute ] ||
    fail "virtual node of $p lacks its NoExecute taint"
done
pass "three providers shared, three virtual nodes Ready in ${secs}s"
