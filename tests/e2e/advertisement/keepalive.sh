#!/usr/bin/env bash
# A provider that stops answering: its control plane is stopped; after keepaliveThreshold (3) failed probes,
# keepaliveRetryTime (1 s) apart, the virtual node turns NotReady with reason ProviderUnreachable, and
# nothing is deleted (the Advertisement stays). The provider back, the node is Ready again.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
STOPPED=0
cleanup() {
  local rc=$?
  [ "$STOPPED" = 0 ] || "$CLIQOCTL" dev start --cluster "$P1" >/dev/null 2>&1 || true
  (exit "$rc")
  adv_on_exit
}
trap cleanup EXIT
ensure_agents
ids
wait_all_shared
# Everything about P1 is looked up before its API server goes.
NODE=$(vnode_of "$P1")
TNS=$(tenant_of "$P1")
ADV=$(adv_of "$P1")
ready_is() { # STATUS REASON
  [ "$(jget "$A" '{.status.conditions[?(@.type=="Ready")].status}' node "$NODE")" = "$1" ] &&
    [ "$(jget "$A" '{.status.conditions[?(@.type=="Ready")].reason}' node "$NODE")" = "$2" ]
}

say "stop $P1's control plane"
STOPPED=1
out=$("$CLIQOCTL" dev stop --cluster "$P1" --component kube-apiserver 2>&1) || fail "dev stop failed: $out"
start=$(date +%s.%N)
wait_for 30 "$P1's virtual node NotReady (ProviderUnreachable)" ready_is False ProviderUnreachable
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
echo "FIGURE provider-stopped-to-node-notready-seconds=$secs (keepalive 1s x 3)"
msg=$(jget "$A" '{.status.conditions[?(@.type=="Ready")].message}' node "$NODE")
grep -q 'probes of provider' <<<"$msg" || fail "the condition's message does not say why: $msg"
kc "$A" get advertisement -n "$TNS" "$ADV" >/dev/null || fail "the Advertisement of the unreachable provider was deleted"
node_is "$P2" True && node_is "$P3" True || fail "other providers' nodes changed"
sleep 3
ready_is False ProviderUnreachable || fail "the node did not stay NotReady"

say "start it again"
start=$(date +%s.%N)
out=$("$CLIQOCTL" dev start --cluster "$P1" --component kube-apiserver 2>&1) || fail "dev start failed: $out"
STOPPED=0
ensure_agents
wait_for 60 "$P1's virtual node Ready again" ready_is True ProviderReady
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
echo "FIGURE provider-back-to-node-ready-seconds=$secs (apiserver start included)"
wait_all_shared 60
pass "NotReady with ProviderUnreachable while down, Ready again after"
