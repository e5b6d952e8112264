#!/usr/bin/env bash
# A peer cannot drain the remapping pool (issue 17, point 12; docs/security.md): C, with its identity on B,
# announces a pod CIDR of 0.0.0.0/4 in its NetworkConfig on B; B refuses to map anything larger than
# liqonetConfig.peerPodCIDRMinPrefixV4 (default /16) and says why. C's agent is stopped meanwhile (it would put
# its real CIDR back); the real CIDR and the agent are restored at the end.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
T=$(mktemp -d)
restore() {
  [ -n "${orig:-}" ] && "$KUBECTL" --kubeconfig "$T/c-identity" -n "$TNS" patch networkconfig "net-config-$C_ID" \
    --type=merge -p "{\"spec\":{\"podCIDR\":\"$orig\"}}" >/dev/null 2>&1
  start_agent "$C"
}
cleanup() {
  restore
  rm -rf "$T"
}
sec_cleanup_on_exit cleanup
ensure_agents
ids
jpath "$C" '{.data.kubeconfig}' secret -n cliqo "remote-identity-$B_ID" | base64 -d >"$T/c-identity"
TNS=$(tenant_on_b "$C_ID")
nc_b() { jget "$B" "$1" networkconfig -n "$TNS" "net-config-$C_ID"; }
wait_for 60 "C's NetworkConfig on B mapped" eval '[ -n "$(nc_b "{.status.natEnabled}")" ]'
orig=$(nc_b '{.spec.podCIDR}')
[ -n "$orig" ] || fail "C's NetworkConfig on B has no podCIDR"

say "C (agent stopped) announces 0.0.0.0/4 with its own credential"
stop_agent "$C"
"$KUBECTL" --kubeconfig "$T/c-identity" -n "$TNS" patch networkconfig "net-config-$C_ID" --type=merge \
  -p '{"spec":{"podCIDR":"0.0.0.0/4"}}' >/dev/null || fail "C cannot write its NetworkConfig on B"
wait_for 30 "B refuses it with the reason" grep_q \
  "peer $C_ID: the peer's pod CIDR 0.0.0.0/4 is larger than this cluster accepts (prefix at least /16" \
  "$(agent_log "$B")"
case "$(nc_b '{.status.podCIDRNAT}')" in */4 | 0.0.0.0/4) fail "B mapped C's /4: $(nc_b '{.status}')" ;; esac

restore
wait_agent_ready "$C"
pass "a /4 pod CIDR refused with its reason"
