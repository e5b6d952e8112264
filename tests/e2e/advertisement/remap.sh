#!/usr/bin/env bash
# Pod-CIDR remapping (control plane): A's pod CIDR is 10.200.0.0/16; P2's is the same /16 and P3's a /20 inside
# it, so both are remapped on A to free blocks of their own size from the pool (10.0.0.0/8), avoiding A's pod
# and service CIDRs and each other; P1's (10.202.0.0/16) overlaps nothing and is kept. Each provider remaps A
# the same way on its side. Shown in the NetworkConfigs' and the Advertisements' statuses; unchanged after an
# agent restart (restored from the statuses).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
trap adv_on_exit EXIT
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
pass "P2 $P2_MAP, P3 $P3_MAP (remapped), P1 kept; stable across a restart"
