#!/usr/bin/env bash
# A provider that stops answering: its API server is frozen (SIGSTOP), so connections open and requests hang,
# as behind a partition. After keepaliveThreshold (3) probes, keepaliveRetryTime (1 s) apart, each waiting
# at most max(keepaliveRetryTime, 2 s), the virtual node turns NotReady with reason ProviderUnreachable, and
# nothing is deleted (the Advertisement stays). The API server thawed, the node is Ready again. (A refused
# connection fails a probe at once: the frozen server is the slower case.)
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
FROZEN=""
cleanup() {
  local rc=$?
  [ -z "$FROZEN" ] || kill -CONT "$FROZEN" 2>/dev/null || true
  (exit "$rc")
  adv_on_exit
}
trap cleanup EXIT
ensure_agents
ids
wait_all_shared
NODE=$(vnode_of "$P1")
TNS=$(tenant_of "$P1")
ADV=$(adv_of "$P1")
ready_is() { # STATUS REASON
  [ "$(jget "$A" '{.status.conditions[?(@.type=="Ready")].status}' node "$NODE")" = "$1" ] &&
    [ "$(jget "$A" '{.status.conditions[?(@.type=="Ready")].reason}' node "$NODE")" = "$2" ]
}
APISERVER=$(cat "$E2E_STATE/$P1/kube-apiserver.pid") && pid_running "$APISERVER" ||
  fail "no running API server for $P1"

say "freeze $P1's API server"
FROZEN=$APISERVER
kill -STOP "$APISERVER"
start=$(date +%s.%N)
# 3 probes of at most 2 s each, 1 s apart, plus the status write: about 9 s; the 30 s client default would
# take over 90 s.
wait_for 25 "$P1's virtual node NotReady (ProviderUnreachable)" ready_is False ProviderUnreachable
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
echo "FIGURE provider-frozen-to-node-notready-seconds=$secs (keepalive 1s x 3, probe timeout 2s)"
msg=$(jget "$A" '{.status.conditions[?(@.type=="Ready")].message}' node "$NODE")
grep -q 'probes of provider' <<<"$msg" || fail "the condition's message does not say why: $msg"
kc "$A" get advertisement -n "$TNS" "$ADV" >/dev/null || fail "the Advertisement of the unreachable provider was deleted"
node_is "$P2" True && node_is "$P3" True || fail "other providers' nodes changed"
sleep 2
ready_is False ProviderUnreachable || fail "the node did not stay NotReady"

say "thaw it"
start=$(date +%s.%N)
kill -CONT "$APISERVER"
FROZEN=""
wait_for 60 "$P1's virtual node Ready again" ready_is True ProviderReady
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
echo "FIGURE provider-thawed-to-node-ready-seconds=$secs"
ensure_agents
wait_all_shared 60
pass "NotReady with ProviderUnreachable while frozen, Ready again after"
