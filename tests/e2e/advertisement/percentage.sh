#!/usr/bin/env bash
# A change of the sharing percentage on a provider reaches the consumer's virtual node at once (the
# broadcaster re-sends within 1 s of a percentage change, the virtual kubelet updates the node within
# 2 s of the Advertisement), and so does a per-cluster override (perCluster: a percentage, then fixed
# amounts independent of the free capacity), which other consumers would not see.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
cleanup() {
  local rc=$?
  patch_config "$P2" '{"spec":{"advertisementConfig":{"outgoingConfig":{"resourceSharingPercentage":30,"perCluster":null}}}}' || true
  if [ "$rc" = 0 ]; then wait_for 30 "P2 back at 30 %" eval '[ "$(capacity "$P2" cpu)" = "$base" ]'; fi
  (exit "$rc")
  adv_on_exit
}
trap cleanup EXIT
ensure_agents
ids
wait_all_shared
# P2 has 2 simulated nodes of 8 cpu each (no pods): 16 cpu shared at P %.
base=$(capacity "$P2" cpu)
[ "$base" = 4800m ] || fail "P2 should offer 30 % of 16 cpu = 4800m, the virtual node says $base"

timed_change() { # JSON EXPECTED-CPU DESCRIPTION
  local start secs
  start=$(date +%s.%N)
  patch_config "$P2" "$1"
  wait_for 15 "$3: cpu $2 on the virtual node" eval "[ \"\$(capacity \"$P2\" cpu)\" = $2 ]"
  secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }')
  echo "FIGURE $4-to-virtual-node-seconds=$secs"
}
say "50 %"
timed_change '{"spec":{"advertisementConfig":{"outgoingConfig":{"resourceSharingPercentage":50}}}}' 8 "50 %" percentage
[ "$(capacity "$P2" pods)" = 110 ] || fail "pods at 50 % of 220: $(capacity "$P2" pods)"
say "perCluster: 25 % for $A"
timed_change "{\"spec\":{\"advertisementConfig\":{\"outgoingConfig\":{\"perCluster\":[{\"clusterID\":\"$A_ID\",\"percentage\":25}]}}}}" 4 "per-cluster 25 %" per-cluster
say "perCluster: fixed amounts for $A (more than the cluster has free: liqo#1478)"
timed_change "{\"spec\":{\"advertisementConfig\":{\"outgoingConfig\":{\"perCluster\":[{\"clusterID\":\"$A_ID\",\"resources\":{\"cpu\":\"40\",\"memory\":\"100Gi\",\"pods\":\"500\"}}]}}}}" 40 "fixed amounts" fixed
[ "$(capacity "$P2" memory)" = 100Gi ] || fail "fixed memory: $(capacity "$P2" memory)"
[ -z "$(capacity "$P2" ephemeral-storage)" ] || fail "fixed amounts offer exactly what is listed (ephemeral-storage appeared)"
say "an invalid perCluster entry is refused by the CRD's schema"
if kc "$P2" patch clusterconfig configuration --type=merge -p "{\"spec\":{\"advertisementConfig\":{\"outgoingConfig\":{\"perCluster\":[{\"clusterID\":\"$A_ID\",\"percentage\":130}]}}}}" 2>/dev/null; then
  fail "a percentage of 130 was accepted"
fi
pass "percentage, per-cluster percentage and fixed amounts reach the virtual node"
