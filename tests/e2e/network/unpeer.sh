#!/usr/bin/env bash
# The peering ends: cluster-1 unpeers from cluster-2. Both gateways, still running, take the peer off: no
# WireGuard peer, no route of protocol 146, no table cliqo is left in either node, and no TunnelEndpoint in
# either cluster; the node agent of the node `join` added removes its route too. Then the gateways stop on SIGTERM and take their interface and wireguard-go with them; the
# agents stop; no log holds a sanitizer report.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
trap net_on_exit EXIT
ensure_agents
ids
for c in "${ALL[@]}"; do gw_start "$c"; done
# the node agents `join` started (cluster-1's added node and its gateway node): their routes go too
JOINED=
if node_exists "$A" "$JOIN_NODE" && [ -s "$(na_kubeconfig "$A")" ]; then
  JOINED=1
  na_start "$A" "$JOIN_NODE"
  na_start "$A" 1
  [ -n "$(node_routes "$A" "$JOIN_NODE")" ] || fail "$A's node $JOIN_NODE has no route of protocol 146 before unpeering"
fi
t0=${EPOCHREALTIME/./}
out=$(cq "$A" unpeer "$B" --timeout 60s 2>&1) || fail "unpeer $B failed: $out"
left() {
  local c=$1
  [ "$(wg_peer_count "$c")" = 0 ] || echo "$c: $(wg_peer_count "$c") WireGuard peers"
  [ -z "$(cliqo_routes "$c")" ] || echo "$c: routes $(cliqo_routes "$c" | tr '\n' ' ')"
  [ -z "$(cliqo_table "$c")" ] || echo "$c: table cliqo"
  [ "$c" != "$A" ] || [ -z "$JOINED" ] || [ -z "$(node_routes "$A" "$JOIN_NODE")" ] ||
    echo "$c: node $JOIN_NODE's routes $(node_routes "$A" "$JOIN_NODE" | tr '\n' ' ')"
  kc "$c" get tunnelendpoints -A -o name 2>&1
}
nothing_left() { [ -z "$(left "$A")$(left "$B")" ]; }
wait_for 90 "nothing of the peering left ($(left "$A" 2>&1 | tr '\n' ' ')$(left "$B" 2>&1 | tr '\n' ' '))" nothing_left
t1=${EPOCHREALTIME/./}
say "unpeered: no peer, route (gateways${JOINED:+ and the joined node}), table or TunnelEndpoint left on either side after $(((t1 - t0) / 1000)) ms"
for c in "${ALL[@]}"; do
  pids=$(wg_pids "$c")
  [ -n "$pids" ] || fail "$c: no wireguard-go before the gateway's stop"
  gw_stop "$c" TERM
  gone() { [ -z "$(wg_pids "$1")" ] && ! in_node "$1" ip link show "$(gw_if "$1")" >/dev/null 2>&1; }
  wait_for 10 "$c: wireguard-go and $(gw_if "$c") gone" gone "$c"
  [ ! -e "/var/run/wireguard/$(gw_if "$c").sock" ] || fail "$c: the socket is left"
done
if [ -n "$JOINED" ]; then
  na_stop "$A" "$JOIN_NODE"
  na_stop "$A" 1
fi
for c in "${ALL[@]}"; do stop_agent "$c"; done
check_logs
pass "unpeering left nothing on either gateway; the gateways and agents stopped cleanly"
