#!/usr/bin/env bash
# Agents killed (SIGKILL) in the middle of the peering flow converge on exactly one of each object: the
# controllers read their state back from the objects. A restart while Established changes nothing.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
setup

say "add --no-wait, then kill -9 and restart $A's agent, then $B's"
add_command
run_add "$PEER_TMP/add.out" "$PEER_TMP/add.err" "${ADD_CMD[@]}" --no-wait
[ "$ADD_RC" -eq 0 ] || fail "add --no-wait failed: $(cat "$PEER_TMP/add.err")"
sleep 0.3
kill_agent "$A"
say "$A killed: OutgoingPeering=$(fc_condition "$A" "$B" OutgoingPeering) AuthenticationStatus=$(fc_condition "$A" "$B" AuthenticationStatus)"
start_agent "$A"
sleep 0.5
kill_agent "$B"
say "$B killed: PeeringRequests on $B: $(kc "$B" get peeringrequests --all-namespaces -o name | wc -l)"
start_agent "$B"
wait_agent_ready "$A"
wait_agent_ready "$B"

pr_accepted() { [ "$(jget "$B" '{.items[*].status.phase}' peeringrequests --all-namespaces)" = Accepted ]; }
start=$(date +%s)
wait_for 60 "OutgoingPeering Established on $A" fc_condition_is "$A" "$B" OutgoingPeering Established
wait_for 60 "the PeeringRequest Accepted on $B" pr_accepted
say "established $(($(date +%s) - start))s after the restarts"

count() { # CLUSTER DESCRIPTION WANT kubectl-get-args... | optional filter via GREP
  local c=$1 d=$2 want=$3 n
  shift 3
  n=$(kc "$c" get "$@" -o name | grep -c "${GREP:-.}" || true)
  [ "$n" -eq "$want" ] || fail "$c: $n $d, want $want: $(kc "$c" get "$@" -o name | tr '\n' ' ')"
}
say "exactly one of each"
count "$B" "PeeringRequests" 1 peeringrequests --all-namespaces
GREP='^secret/pr-' count "$B" "Secrets pr-*" 1 secrets --all-namespaces
GREP='^secret/remote-identity-' count "$A" "Secrets remote-identity-*" 1 secrets -n cliqo
GREP='^secret/remote-auth-' count "$A" "Secrets remote-auth-*" 1 secrets -n cliqo
for c in "$A" "$B"; do
  count "$c" "tenant namespaces" 1 namespaces -l discovery.liqo.io/tenant-namespace=true
  GREP='^serviceaccount/remote-' count "$c" "ServiceAccounts remote-*" 1 serviceaccounts --all-namespaces
  count "$c" "ForeignClusters" 1 foreignclusters
done
fc_condition_is "$B" "$A" IncomingPeering Established || fail "IncomingPeering not Established on $B"

say "restart $A's agent while Established: nothing changes"
snapshot() {
  local ns
  ns=$(jget "$B" '{.items[0].metadata.namespace}' peeringrequests --all-namespaces)
  jget "$B" '{.items[0].metadata.resourceVersion}' peeringrequests --all-namespaces
  echo
  jget "$A" '{range .status.peeringConditions[*]}{.type}={.status}@{.lastTransitionTime} {end}' foreigncluster "$B"
  echo
  jget "$B" '{range .status.peeringConditions[*]}{.type}={.status}@{.lastTransitionTime} {end}' foreigncluster "$A"
  echo
  jget "$A" '{.metadata.resourceVersion}' secret -n cliqo "remote-identity-$B_ID"
  echo
  jget "$B" '{.metadata.resourceVersion}' secret -n "$ns" "pr-$A_ID"
  echo
}
before=$(snapshot)
kill_agent "$A"
start_agent "$A"
wait_agent_ready "$A"
sleep 5
after=$(snapshot)
[ "$before" = "$after" ] || fail "the restart changed the peering: before: $before; after: $after"
say "unchanged: $(tr '\n' ' ' <<<"$after")"

say "unpeer"
out=$(cq "$A" unpeer "$B" --timeout 60s 2>&1) || fail "unpeer failed: $out"
assert_no_peering_objects "$A"
assert_no_peering_objects "$B"
finish
pass "converged to one of each after SIGKILLs; a restart while Established changed nothing"
