#!/usr/bin/env bash
# A gateway SIGKILLed leaves its tunnel running (its wireguard-go outlives it); while it is down the test
# damages what it installed (its route deleted, a stale route of protocol 146 and a stale WireGuard peer
# added) and adds a route of other software. Restarted, the gateway adopts the running wireguard-go (still one
# process, no second interface), puts back its route, removes the stale route and peer, leaves the other
# software's route and kube-proxy's tables as they were (no duplicate, no leftover), and the page crosses again.
# Then its wireguard-go is SIGKILLed under it: the gateway starts another and configures it again.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
trap net_on_exit EXIT
ids
c=$A
ifc=$(gw_if "$c")
s=$(cat "$E2E_STATE/seen-$c")
there=$(xlate "$(pod_ip "$B" web)" "$s")
page() { [ "$(fetch "$c" "http://$there:8080/")" = "hello-from-$B" ]; }
wait_for 20 "$c fetches $B's page before the kill" page

# every table but cliqo (kube-proxy's, through iptables-nft), without the counters traffic moves
others() {
  in_node "$c" nft list ruleset | awk '/^table / { skip = ($0 ~ /^table ip cliqo /) } !skip' |
    sed -e 's/counter packets [0-9]* bytes [0-9]*//' | md5sum
}
before_others=$(others)
wg_before=$(wg_pids "$c")
[ "$(grep -c . <<<"$wg_before")" = 1 ] || fail "wireguard-go processes of $ifc before the kill: '$wg_before'"

gw_stop "$c" KILL
say "gateway of $c SIGKILLed; wireguard-go $wg_before still runs"
in_node "$c" ip route del "$s" dev "$ifc" proto 146 || fail "cannot delete the route $s by hand"
in_node "$c" ip route add 10.123.0.0/16 dev "$ifc" proto 146 || fail "cannot add a stale route of protocol 146"
in_node "$c" ip route add 10.124.0.0/16 dev "$ifc" proto static || fail "cannot add another software's route"
stale=$(wg genkey | wg pubkey)
in_node "$c" wg set "$ifc" peer "$stale" allowed-ips 10.125.0.0/16 || fail "cannot add a stale WireGuard peer"
[ "$(wg_peer_count "$c")" = 2 ] || fail "the stale peer was not added"

t0=${EPOCHREALTIME/./}
gw_start "$c"
repaired() {
  [ "$(cliqo_routes "$c")" = "$(cliqo_routes "$c" | grep "^$s dev $ifc ")" ] && [ "$(cliqo_routes "$c" | grep -c .)" = 1 ] &&
    [ "$(wg_peer_count "$c")" = 1 ]
}
wait_for 30 "$c's gateway repaired its route and peer" repaired
wait_for 20 "$c fetches $B's page after the restart" page
t1=${EPOCHREALTIME/./}
[ "$(wg_pids "$c")" = "$wg_before" ] || fail "wireguard-go of $ifc is now '$(wg_pids "$c")', was $wg_before"
grep_q "^10.124.0.0/16 dev $ifc proto static" <<<"$(in_node "$c" ip -4 route show)" || fail "another software's route was removed"
in_node "$c" ip route del 10.124.0.0/16 dev "$ifc" proto static
[ "$(in_node "$c" wg show "$ifc" allowed-ips | awk '{print $2}')" = "$s" ] || fail "allowed IPs after the restart: $(in_node "$c" wg show "$ifc" allowed-ips)"
[ "$(others)" = "$before_others" ] || fail "nftables rules outside table cliqo changed"
[ "$(cliqo_table "$c" | grep -c 'chain to_')" = 1 ] || fail "table cliqo has $(cliqo_table "$c" | grep -c 'chain to_') peer chains, want 1"
say "restarted: repaired in $(((t1 - t0) / 1000)) ms; one wireguard-go ($wg_before), one peer, one route, one chain pair"

# The other way round: wireguard-go SIGKILLed under the running gateway (its interface, and the route through
# it, go with it). The gateway starts a new one and configures it again.
kill -KILL "$wg_before"
t0=${EPOCHREALTIME/./}
replaced() {
  local p
  p=$(wg_pids "$c")
  [ -n "$p" ] && [ "$p" != "$wg_before" ] && [ "$(grep -c . <<<"$p")" = 1 ] && [ "$(wg_peer_count "$c")" = 1 ] &&
    [ "$(cliqo_routes "$c" | grep -c "^$s dev $ifc ")" = 1 ]
}
wait_for 30 "a new wireguard-go of $ifc, configured, with its route" replaced
wait_for 30 "$c fetches $B's page through the new wireguard-go" page
t1=${EPOCHREALTIME/./}
say "wireguard-go SIGKILLed: replaced by $(wg_pids "$c") and the page crossed again in $(((t1 - t0) / 1000)) ms"
pass "SIGKILL and restart: the tunnel kept, repaired, no duplicate, no leftover, other rules untouched; wireguard-go replaced"
