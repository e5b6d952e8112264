#!/usr/bin/env bash
# Pod-CIDR remapping (control plane): A's pod CIDR is 10.200.0.0/16; P2's is the same /16 and P3's a /20 inside
# it, so both are remapped on A to free blocks of their own size from the pool (10.0.0.0/8), avoiding A's pod
# and service CIDRs and each other; P1's (10.202.0.0/16) overlaps nothing and is kept. Each provider remaps A
# the same way on its side. Shown in the NetworkConfigs' and the Advertisements' statuses; unchanged after an
# agent restart (restored from the statuses). While a remapping is not settled (held here: P3's agent stopped
# and A's NetworkConfig on P3 deleted, so that A publishes it again and nobody maps it) P3's virtual node is
# Ready=False and NetworkUnavailable=True, both with reason RemappingPending, and a pod bound to it is not
# sent to P3 until the remapping settles (a pod sent before stays).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
NS=e2e-remap
cleanup() {
  local rc=$?
  cq "$A" unoffload namespace "$NS" >/dev/null 2>&1 || true
  kc "$A" delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  ensure_agents || true
  (exit "$rc")
  adv_on_exit
}
trap cleanup EXIT
ensure_agents
ids
wait_all_shared

nc_nat() { jget "$A" '{.status.podCIDRNAT}' networkconfig -n "$(tenant_of "$1")" "net-config-$(id_of "$1")"; }
net() { adv_field "$1" "{.status.network.$2}"; }
in_pool_not_local() { # CIDR: inside 10.0.0.0/8, overlapping none of 10.200.0.0/16, 10.96.0.0/16, 10.202.0.0/16
  python3 - "$1" <<'EOF'
import ipaddress, sys
c = ipaddress.ip_network(sys.argv[1])
assert c.subnet_of(ipaddress.ip_network("10.0.0.0/8")), "not in the pool"
for used in ("10.200.0.0/16", "10.96.0.0/16", "10.202.0.0/16"):
    assert not c.overlaps(ipaddress.ip_network(used)), "overlaps " + used
EOF
}

say "P1 kept, P2 and P3 remapped on $A"
[ "$(nc_nat "$P1")" = None ] || fail "P1's CIDR was remapped to $(nc_nat "$P1")"
P2_MAP=$(nc_nat "$P2")
P3_MAP=$(nc_nat "$P3")
[ "${P2_MAP##*/}" = 16 ] || fail "P2 (a /16) was mapped to '$P2_MAP'"
[ "${P3_MAP##*/}" = 20 ] || fail "P3 (a /20) was mapped to '$P3_MAP'"
in_pool_not_local "$P2_MAP" || fail "P2's block $P2_MAP is not free"
in_pool_not_local "$P3_MAP" || fail "P3's block $P3_MAP is not free"
python3 -c "import ipaddress,sys; sys.exit(ipaddress.ip_network('$P2_MAP').overlaps(ipaddress.ip_network('$P3_MAP')))" ||
  fail "P2's $P2_MAP and P3's $P3_MAP overlap"
[ "$(jget "$A" '{.status.natEnabled}' networkconfig -n "$(tenant_of "$P2")" "net-config-$P2_ID")" = true ] ||
  fail "natEnabled is not true for P2"

say "the Advertisements' status shows it, settled"
[ "$(net "$P2" remotePodCIDR)" = 10.200.0.0/16 ] || fail "P2 remotePodCIDR: $(net "$P2" remotePodCIDR)"
[ "$(net "$P2" remoteRemappedPodCIDR)" = "$P2_MAP" ] || fail "P2 remoteRemappedPodCIDR: $(net "$P2" remoteRemappedPodCIDR)"
[ "$(net "$P3" remoteRemappedPodCIDR)" = "$P3_MAP" ] || fail "P3 remoteRemappedPodCIDR: $(net "$P3" remoteRemappedPodCIDR)"
[ "$(net "$P1" remoteRemappedPodCIDR)" = 10.202.0.0/16 ] || fail "P1 remoteRemappedPodCIDR: $(net "$P1" remoteRemappedPodCIDR)"
for p in "${PROVIDERS[@]}"; do [ "$(net "$p" settled)" = true ] || fail "$p not settled"; done

say "each provider's view of $A: P2 and P3 remap A's /16, P1 does not"
for p in "$P2" "$P3"; do
  rns=$(jget "$A" '{.status.tenantNamespace.remote}' foreigncluster "$p")
  seen=$(jget "$p" '{.status.podCIDRNAT}' networkconfig -n "$rns" "net-config-$A_ID")
  [ "${seen##*/}" = 16 ] && [ "$seen" != 10.200.0.0/16 ] || fail "$p maps A's 10.200.0.0/16 to '$seen'"
  [ "$(net "$p" localRemappedPodCIDR)" = "$seen" ] || fail "$p: localRemappedPodCIDR $(net "$p" localRemappedPodCIDR) != $seen"
done
[ "$(net "$P1" localRemappedPodCIDR)" = 10.200.0.0/16 ] || fail "P1 sees A as $(net "$P1" localRemappedPodCIDR)"

say "a restart of $A's agent keeps every mapping"
stop_agent "$A"
ensure_agents
sleep 3
[ "$(nc_nat "$P2")" = "$P2_MAP" ] && [ "$(nc_nat "$P3")" = "$P3_MAP" ] && [ "$(nc_nat "$P1")" = None ] ||
  fail "mappings moved after a restart: P1 $(nc_nat "$P1"), P2 $(nc_nat "$P2"), P3 $(nc_nat "$P3")"
grep -q 'restored 3 pod-CIDR mappings' "$(agent_log "$A")" || fail "the agent did not restore 3 mappings"
wait_all_shared 60

say "a pod bound to $P3's virtual node while the remapping is settled is sent"
on_p3() { kc "$P3" get pods -A -l "offloading.cliqo.io/home-namespace=$NS" -o jsonpath='{.items[*].metadata.name}' | tr ' ' '\n' | grep_q -x "$1"; }
kc "$A" create namespace "$NS" >/dev/null
out=$(cq "$A" offload namespace "$NS" --strategy Remote --wait --timeout 60s 2>&1) || fail "offload $NS failed: $out"
wait_default_sa "$A" "$NS"
bind_pod "$NS" before "$P3"
wait_for 30 "pod 'before' on $P3" on_p3 before

say "hold the remapping: $P3's agent stopped (and its pod webhook, which nothing would answer), $A's NetworkConfig on $P3 deleted"
stop_agent "$P3"
kc "$P3" delete validatingwebhookconfiguration cliqo-offer-enforcement --ignore-not-found >/dev/null
RNS=$(jget "$A" '{.status.tenantNamespace.remote}' foreigncluster "$P3")
kc "$P3" delete networkconfig -n "$RNS" "net-config-$A_ID" --wait=true >/dev/null || fail "cannot delete $A's NetworkConfig on $P3"
wait_for 20 "$P3's virtual node Ready=False, RemappingPending (now: $(node_reason "$P3"))" node_is "$P3" False RemappingPending
netcond() { jget "$A" '{.status.conditions[?(@.type=="NetworkUnavailable")].status}/{.status.conditions[?(@.type=="NetworkUnavailable")].reason}' node "$(vnode_of "$P3")"; }
[ "$(netcond)" = True/RemappingPending ] || fail "NetworkUnavailable is $(netcond)"
[ "$(adv_field "$P3" '{.status.network.settled}')" = false ] || fail "the Advertisement's status does not say unsettled"
[ -n "$(jget "$P3" '{.metadata.name}' networkconfig -n "$RNS" "net-config-$A_ID")" ] &&
  [ -z "$(jget "$P3" '{.status.podCIDRNAT}' networkconfig -n "$RNS" "net-config-$A_ID")" ] ||
  fail "$A's NetworkConfig on $P3 should be published again, unmapped"

say "a pod bound now is not sent while the remapping is pending"
bind_pod "$NS" during "$P3"
sleep 5
! on_p3 during || fail "pod 'during' was sent to $P3 while the remapping was pending"
on_p3 before || fail "pod 'before' left $P3"
[ "$(jget "$A" '{.status.phase}' pod -n "$NS" during)" = Pending ] || fail "pod 'during' is $(jget "$A" '{.status.phase}' pod -n "$NS" during)"

say "$P3's agent back: it maps $A's NetworkConfig, the remapping settles, the held pod is sent"
t0=${EPOCHREALTIME/./}
ensure_agents
wait_for 30 "$P3's virtual node Ready again" node_is "$P3" True
wait_for 30 "pod 'during' on $P3" on_p3 during
el=$((${EPOCHREALTIME/./} - t0))
echo "FIGURE agent-restart-to-held-pod-sent-seconds=$((el / 1000000)).$(printf '%03d' $((el / 1000 % 1000)))"
[ "$(netcond)" = False/RemappingSettled ] || fail "NetworkUnavailable is $(netcond) once settled"
wait_for 30 "$P3's agent restores its pod webhook" kc "$P3" get validatingwebhookconfiguration cliqo-offer-enforcement
pass "P2 $P2_MAP, P3 $P3_MAP (remapped), P1 kept; stable across a restart; pods held while pending"
