#!/usr/bin/env bash
# A's agent killed with SIGKILL in the middle of a 200-pod rollout (docs/offloading.md, "Restart"): nothing is
# persisted, so after the restart the virtual kubelet rebuilds everything from the objects on both sides and
# converges: 200 home pods Running, exactly their 200 pods on B (no duplicate), and the remote pods of home pods
# forced away while it was dead are deleted (no orphan).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/vk-lib.sh"
NS=e2e-restart
N=200
old_share=
cleanup() {
  ensure_agents
  kc "$A" scale deployment -n "$NS" web --replicas=0 >/dev/null 2>&1 || true
  unoffload "$NS"
  [ -z "$old_share" ] || share_percent "$old_share"
}
trap 'rc=$?; cleanup >/dev/null 2>&1 || true; (exit $rc); off_on_exit' EXIT # the test's status, not cleanup's
ensure_agents
ids
wait_shared 60

# B offers 30 % of 330 pods by default: room for 200 needs more.
old_share=$(jget "$B" '{.spec.advertisementConfig.outgoingConfig.resourceSharingPercentage}' clusterconfig configuration)
old_share=${old_share:-30}
share_percent 100
if ! (wait_vnode_pods "$N" 60); then # what B sent and what A shows, to tell a stuck sender from a slow receiver
  kget "$B" foreignclusters | jq -c '.items[] | [.spec.clusterIdentity.clusterID, .status.advertisement]'
  kget "$A" foreignclusters | jq -c '.items[] | [.spec.clusterIdentity.clusterID, .status.advertisement]'
  kc "$A" get nodes -o custom-columns=N:.metadata.name,P:.status.allocatable.pods,C:.status.allocatable.cpu
  fail "virtual node without room for $N pods"
fi

offload "$NS"
wait_mapped "$NS"
RNS=$(remote_ns "$NS")
say "a Deployment of $N replicas; SIGKILL A's agent in the middle of the rollout"
deployment "$NS" web "$N"
wait_for 60 "the rollout under way on $B" eval '[ "$(remote_count "$NS")" -ge 30 ]'
stop_agent "$A" KILL
at_kill=$(remote_count "$NS")
[ "$at_kill" -lt "$N" ] || fail "the rollout was over before the kill ($at_kill pods on $B)"
# While it is dead, 10 home pods whose remote pods exist are forced away: their remote pods are orphans now
# (their controller makes 10 new pods under new names).
gone=$(kget "$B" pods -n "$RNS" | jq -r '.items[:10][] | .metadata.name')
# shellcheck disable=SC2086
kc "$A" delete pods -n "$NS" --grace-period=0 --force $gone >/dev/null 2>&1
say "killed with $at_kill of $N pods on $B, 10 of them orphaned; restarting it"
start=$(date +%s.%N)
ensure_agents
wait_for 180 "$N home pods Running and Ready, $N pods on $B" all_running "$NS" "$N"
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
echo "FIGURE restart-to-converged-seconds=$secs (killed at $at_kill/$N)"
out=$(pairs_ok "$NS") || fail "home and remote pods do not pair one to one: $out"
for p in $gone; do
  ! kc "$B" get pod -n "$RNS" "$p" >/dev/null 2>&1 || fail "orphan $p still on $B"
done

cleanup
trap off_on_exit EXIT
check_logs
pass "converged after SIGKILL mid-rollout ($at_kill/$N) with no duplicate and no orphan"
