#!/usr/bin/env bash
# Unpeering from a peer that is gone: B's agent and control plane are stopped, and `cliqoctl unpeer` on A
# still finishes, after the agent's --unpeer-timeout (8 s here), well under 30 s, leaving nothing on A.
# B, started again, still holds A's request (A could not reach it); B's agent finds that the credential A
# gave it is refused (A deleted it when unpeering) and withdraws the peering itself (the request, the
# tenant namespace and the incoming ForeignCluster go).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
B_STOPPED=0
# The fixture's teardown needs B's control plane running again, whatever happens here.
cleanup_hook() { [ "$B_STOPPED" = 0 ] || "$CLIQOCTL" dev start --cluster "$B" >/dev/null 2>&1 || true; }
setup

say "peer"
peer
B_NS=$(jget "$A" '{.status.tenantNamespace.remote}' foreigncluster "$B")
[ -n "$B_NS" ] || fail "no remote tenant namespace in the ForeignCluster's status"

say "stop $B's agent and control plane"
stop_agent "$B"
B_STOPPED=1
out=$("$CLIQOCTL" dev stop --cluster "$B" 2>&1) || fail "dev stop failed: $out"
if kc "$B" get namespaces --request-timeout=3s >/dev/null 2>&1; then fail "$B's API server still answers"; fi

say "unpeer while $B is down"
start=$(date +%s.%N)
out=$(cq "$A" unpeer "$B" --timeout 60s 2>&1) || fail "unpeer failed: $out"
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
echo "FIGURE unpeer-peer-down-seconds=$secs"
awk -v s="$secs" 'BEGIN { exit !(s < 30) }' || fail "unpeer with the peer down took ${secs}s (>= 30s)"
awk -v s="$secs" 'BEGIN { exit !(s >= 7) }' || fail "unpeer took ${secs}s: it cannot have waited for the unreachable peer (8s)"
assert_no_peering_objects "$A"
grep -q 'PeerUnreachable' "$(agent_log "$A")" || fail "$A's agent did not log PeerUnreachable"

say "start $B again: it still holds the request A could not delete"
out=$("$CLIQOCTL" dev start --cluster "$B" 2>&1) || fail "dev start failed: $out"
B_STOPPED=0
[ "$(kc "$B" get peeringrequests -n "$B_NS" -o name)" = "peeringrequest.discovery.liqo.io/$A_ID" ] ||
  fail "$B does not hold the stale request of $A"
kc "$B" get foreigncluster "$A" >/dev/null || fail "$B lost its incoming ForeignCluster without a withdrawal"
start_agent "$B"
wait_agent_ready "$B"

say "$B's agent finds that $A revoked the credential (401) and withdraws the request itself"
wait_for 60 "$B cleans up after the revoked credential" no_peering_objects "$B"
assert_no_peering_objects "$B"
current_log "$B" | grep_q "no longer accepts the credential it gave us" || fail "$B's agent did not log the revocation"
current_log "$B" | grep_q "withdrawn: deleting tenant namespace $B_NS" || fail "$B's agent did not log the withdrawal"
assert_no_peering_objects "$A"
finish
pass "unpeer finished in ${secs}s with the peer down; the peer cleaned up by itself once back"
