#!/usr/bin/env bash
# ForeignCluster spec.networkingEnabled: "No" on A for P1: no NetworkConfig exchange with P1 (A's own on P1 is
# deleted, P1's on A is not mapped), which the Advertisement's status.network and the virtual node's
# NetworkUnavailable condition (reason NetworkingDisabled) state; the node stays Ready and pods bound to it are
# sent (nothing waits for a remapping that will not come). Back to "Yes", the exchange resumes and settles.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
NS=e2e-networking
cleanup() {
  local rc=$?
  kc "$A" patch foreigncluster "$P1" --type=merge -p '{"spec":{"networkingEnabled":"Yes"}}' >/dev/null 2>&1 || true
  cq "$A" unoffload namespace "$NS" >/dev/null 2>&1 || true
  kc "$A" delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  if [ "$rc" = 0 ]; then wait_all_shared 60; fi
  (exit "$rc")
  adv_on_exit
}
trap cleanup EXIT
ensure_agents
ids
wait_all_shared
RNS=$(jget "$A" '{.status.tenantNamespace.remote}' foreigncluster "$P1")
TNS=$(tenant_of "$P1")
ours_on_p1() { [ -n "$(jget "$P1" '{.metadata.name}' networkconfig -n "$RNS" "net-config-$A_ID")" ]; }
p1_mapped_here() { [ -n "$(jget "$A" '{.status.podCIDRNAT}' networkconfig -n "$TNS" "net-config-$P1_ID")" ]; }
netcond() { jget "$A" '{.status.conditions[?(@.type=="NetworkUnavailable")].status}/{.status.conditions[?(@.type=="NetworkUnavailable")].reason}' node "$(vnode_of "$P1")"; }
ours_on_p1 || fail "$A's NetworkConfig is not on $P1 to begin with"

say "networkingEnabled: No for $P1"
kc "$A" patch foreigncluster "$P1" --type=merge -p '{"spec":{"networkingEnabled":"No"}}' >/dev/null ||
  fail "cannot patch the ForeignCluster"
wait_for 20 "NetworkUnavailable True/NetworkingDisabled on $P1's virtual node (now: $(netcond))" \
  eval '[ "$(netcond)" = True/NetworkingDisabled ]'
node_is "$P1" True ProviderReady || fail "the virtual node is not Ready: $(node_reason "$P1")"
wait_for 20 "$A's NetworkConfig deleted from $P1" eval '! ours_on_p1'
[ "$(adv_field "$P1" '{.status.network.enabled}')" = false ] ||
  fail "the Advertisement's status.network.enabled is '$(adv_field "$P1" '{.status.network.enabled}')'"
grep -q networkingEnabled <<<"$(adv_field "$P1" '{.status.network.message}')" ||
  fail "the Advertisement's status.network.message does not say why: $(adv_field "$P1" '{.status.network.message}')"
grep -q "peer $P1_ID: networking disabled" "$(agent_log "$A")" || fail "$A's log does not say networking was disabled"
sleep 2
! ours_on_p1 || fail "$A published its NetworkConfig on $P1 again"

say "a pod bound to $P1's virtual node is sent all the same"
kc "$A" create namespace "$NS" >/dev/null
out=$(cq "$A" offload namespace "$NS" --strategy Remote --wait --timeout 60s 2>&1) || fail "offload $NS failed: $out"
wait_default_sa "$A" "$NS"
bind_pod "$NS" sent "$P1"
wait_for 30 "pod 'sent' on $P1" eval \
  "kc $P1 get pods -A -l offloading.cliqo.io/home-namespace=$NS -o name | grep_q sent"

say "networkingEnabled: Yes again: the exchange resumes and settles"
kc "$A" patch foreigncluster "$P1" --type=merge -p '{"spec":{"networkingEnabled":"Yes"}}' >/dev/null ||
  fail "cannot patch the ForeignCluster"
wait_for 30 "$A's NetworkConfig back on $P1" ours_on_p1
wait_for 30 "NetworkUnavailable False/RemappingSettled (now: $(netcond))" eval '[ "$(netcond)" = False/RemappingSettled ]'
p1_mapped_here || fail "$P1's NetworkConfig is not mapped on $A"
[ "$(adv_field "$P1" '{.status.network.enabled}')" = true ] || fail "status.network.enabled is not true again"
pass "networking disabled: no exchange, node Ready, pods sent; enabled again: settled"
