#!/usr/bin/env bash
# A peer that publishes a hostile TunnelEndpoint, written with the peer's own identity (its ServiceAccount in
# its tenant namespace, as its agent writes it): a key that is not one, a name instead of an address, our own
# key, a huge endpoint, an address range it was not given. Each is refused: the API server refuses what the
# CRD's schema excludes and prunes what it does not name; the gateway refuses the rest with the reason in the
# status (phase Error) and takes the peer off the device, its route and its table entries; the virtual node's
# NetworkUnavailable turns True/TunnelError with that reason, cliqo_tunnel_up 0 and cliqo_tunnel_errors_total
# counts it. Given back its own spec, the tunnel comes back Up (TunnelUp, cliqo_tunnel_up 1) and the page
# crosses again.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
trap 'rc=$?; [ -n "${ORIG:-}" ] && restore; (exit $rc) || net_on_exit' EXIT
ids
c=$A
o=$B
tns=$(tenant "$c")
tep=tep-$B_ID
as=system:serviceaccount:$tns:remote-$B_ID
s=$(cat "$E2E_STATE/seen-$c")
there=$(xlate "$(pod_ip "$o" web)" "$s")
ORIG=$(jget "$c" '{.spec}' tunnelendpoint "$tep" -n "$tns")
[ -n "$ORIG" ] || fail "no TunnelEndpoint $tep in $tns on $c"
as_peer() { kc_slow "$c" "$@" --as "$as"; }
spec_patch() { as_peer patch tunnelendpoint "$tep" -n "$tns" --type=merge -p "{\"spec\":$1}" >/dev/null; }
restore() { as_peer patch tunnelendpoint "$tep" -n "$tns" --type=merge -p "{\"spec\":$ORIG}" >/dev/null 2>&1 || true; }
page() { [ "$(fetch "$c" "http://$there:8080/")" = "hello-from-$o" ]; }
refused() { # WORDS: status Error naming them, and nothing of the peer installed
  [ "$(tep_field "$c" '{.status.phase}')" = Error ] && grep_q -F "$1" <<<"$(tep_field "$c" '{.status.message}')" &&
    [ "$(wg_peer_count "$c")" = 0 ] && [ -z "$(cliqo_routes "$c")" ] && [ -z "$(cliqo_table "$c")" ]
}
back_up() { tep_up "$c" && [ "$(wg_peer_count "$c")" = 1 ] && [ -n "$(cliqo_routes "$c")" ]; }
ourkey=$(jget "$c" '{.data.publicKey}' configmap cliqo-gateway -n cliqo)
[ -n "$ourkey" ] || fail "no public key in $c's ConfigMap cliqo-gateway"

# One after the other, each patch on top of the last: the status names the first field that is wrong
# (key, then endpoint), so each case's own reason shows; the last gives back a valid endpoint with our key.
goodep=$(jget "$c" '{.spec.endpoint}' tunnelendpoint "$tep" -n "$tns")
declare -a CASES=(
  "the unspecified address|{\"endpoint\":\"0.0.0.0:51820\"}|not a unicast address"
  "a name instead of an address|{\"endpoint\":\"gateway.example.org:51820\"}|names are not resolved"
  "a key with non-zero unused bits|{\"publicKey\":\"OfB6iSxZRrA8yO1jesL2UuIINDoAlaRKQveyLxkx3WB=\"}|publicKey is not a WireGuard key"
  "our own key|{\"publicKey\":\"$ourkey\",\"endpoint\":\"$goodep\"}|this cluster's own key"
)
for kase in "${CASES[@]}"; do
  IFS='|' read -r what patch reason <<<"$kase"
  spec_patch "$patch" || fail "the peer's identity cannot write its TunnelEndpoint ($what)"
  wait_for 20 "$what refused (status Error: $reason; peer, route and table removed)" refused "$reason"
  say "refused: $what ($(tep_field "$c" '{.status.message}'))"
  if [ -z "${status_checked:-}" ]; then # the first refusal as the status and metrics tell it
    status_checked=1
    wait_for 10 "NetworkUnavailable True/TunnelError on $(vnode) (now: $(netcond))" eval '[ "$(netcond)" = True/TunnelError ]'
    grep_q -F "$reason" <<<"$(netmsg)" || fail "the condition's message does not say why: $(netmsg)"
    [ "$(metric "$c" cliqo_tunnel_up "peer=\"$B_ID\"")" = 0 ] || fail "cliqo_tunnel_up is not 0 for a refused peer"
    n=$(metric "$c" cliqo_tunnel_errors_total "peer=\"$B_ID\",reason=\"refused\"")
    [ "${n:-0}" -ge 1 ] 2>/dev/null || fail "cliqo_tunnel_errors_total{reason=refused} is '$n'"
    [ "$(tunnel_json "$c" | jq -r .state)" = Error ] || fail "cliqoctl status: tunnel $(tunnel_json "$c")"
    say "status: $(vnode) $(netcond) ($(netmsg)); cliqo_tunnel_up 0, errors (refused) $n"
  fi
done
restore
wait_for 30 "the tunnel Up again with the peer's own spec" back_up
wait_for 10 "NetworkUnavailable False/TunnelUp again (now: $(netcond))" eval '[ "$(netcond)" = False/TunnelUp ]'
[ "$(metric "$c" cliqo_tunnel_up "peer=\"$B_ID\"")" = 1 ] || fail "cliqo_tunnel_up is not 1 again"
wait_for 20 "$c fetches $o's page after the hostile specs" page

# What the schema stops: a huge endpoint (refused by the API server), a range the peer was not given (pruned).
huge=$(head -c 70000 /dev/zero | tr '\0' 1)
expect_fail "a 70,000-character endpoint accepted" spec_patch "{\"endpoint\":\"$huge:1\"}"
spec_patch '{"allowedIPs":["0.0.0.0/0"],"podCIDR":"0.0.0.0/0"}' || fail "the peer's patch with unknown fields failed"
[ -z "$(jget "$c" '{.spec.allowedIPs}{.spec.podCIDR}' tunnelendpoint "$tep" -n "$tns")" ] || fail "unknown fields were kept"
sleep 3 # two passes of the gateway
[ "$(in_node "$c" wg show "$(gw_if "$c")" allowed-ips | awk '{print $2}')" = "$s" ] ||
  fail "allowed IPs changed: $(in_node "$c" wg show "$(gw_if "$c")" allowed-ips)"
tep_up "$c" || fail "the tunnel is not Up after a pruned patch"
# And the status is not the peer's to write.
expect_fail "the peer wrote its TunnelEndpoint's status" \
  as_peer patch tunnelendpoint "$tep" -n "$tns" --subresource=status --type=merge -p '{"status":{"phase":"Up"}}'
pass "hostile TunnelEndpoints refused with their reasons, nothing of them installed; the tunnel back Up"
