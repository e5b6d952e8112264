#!/usr/bin/env bash
# The data plane's shared state: cliqo installed on both clusters (the same pod CIDR), one agent each, cluster-1
# peered with cluster-2, each cluster's gateway running inside its gateway node's network and mount namespaces.
# Checked with independent tools: the TunnelEndpoints Up on both sides (the time from the gateways' start is the
# figure tunnel-up-seconds); the key Secret (in namespace cliqo-gateway) readable by the gateway's
# ServiceAccount by name and by nobody's wildcard, not by the agent's ServiceAccount; the public key of the Secret's key equal to the one the peer received; in each node (wg, ip, nft):
# one WireGuard peer with the peer's block as seen here as its only allowed IPs, the other gateway's endpoint and
# keepalive 2 s, the interface's MTU 80 below the link's, one route of protocol 146, the table cliqo. Then the
# status: cluster-1's virtual node of cluster-2 NetworkUnavailable False/TunnelUp, `cliqoctl status` shows the
# tunnel Up with a handshake age, the gateway's /metrics cliqo_tunnel_up 1 and a recent handshake time.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
trap net_on_exit EXIT

say "install cliqo on ${ALL[*]}"
install_clusters "${ALL[@]}"
ids --read
for c in "${ALL[@]}"; do
  patch_config "$c" "{\"spec\":{\"liqonetConfig\":{\"podCIDR\":\"$(cat "$E2E_STATE/$c/pod-cidr")\",\"serviceCIDR\":\"10.96.0.0/16\"}}}"
done
[ "$(cat "$E2E_STATE/$A/pod-cidr")" = "$(cat "$E2E_STATE/$B/pod-cidr")" ] || fail "the two clusters must have the same pod CIDR"
say "start the agents, peer $A with $B"
ensure_agents
peer_with "$B"
settled() { [ -n "$(seen "$A")" ] && [ -n "$(seen "$B")" ]; }
wait_for 60 "the pod-CIDR remapping settled on both sides" settled
for c in "${ALL[@]}"; do
  s=$(seen "$c")
  [ "$s" != "$(cat "$E2E_STATE/$c/pod-cidr")" ] || fail "$c sees the other's pods in its own pod CIDR $s: not remapped"
  echo "$s" >"$E2E_STATE/seen-$c"
done
say "remapped: $A sees $B's pods in $(seen "$A"), $B sees $A's in $(seen "$B")"

say "start the gateways in the gateway nodes' namespaces"
t0=${EPOCHREALTIME/./}
for c in "${ALL[@]}"; do gw_start "$c"; done
both_up() { tep_up "$A" && tep_up "$B"; }
wait_for 60 "both TunnelEndpoints Up" both_up
t1=${EPOCHREALTIME/./}
secs=$(((t1 - t0) / 1000000)).$(((t1 - t0) / 100000 % 10))
echo "FIGURE tunnel-up-seconds=$secs"
# The nodes' mount namespaces do not cover /var/run/wireguard: both sockets are in the host's directory, so
# the two gateways need two interface names (what --tunnel-interface is for).
for c in "${ALL[@]}"; do
  [ -S "/var/run/wireguard/$(gw_if "$c").sock" ] || fail "no socket /var/run/wireguard/$(gw_if "$c").sock seen from the host"
done
say "both tunnels Up ${secs}s after the gateways started; both sockets in the host's /var/run/wireguard"

for c in "${ALL[@]}"; do
  o=$(other "$c")
  # the key: in the Secret of the gateway's own namespace, readable by name by the gateway's ServiceAccount
  # only among cliqo's identities (the agent's reads every Secret of cliqo, none there)
  key=$(jget "$c" '{.data.privateKey}' secret cliqo-wg-key -n cliqo-gateway | base64 -d)
  [ "${#key}" = 44 ] || fail "$c: Secret cliqo-wg-key holds no WireGuard key"
  pub=$(wg pubkey <<<"$key")
  [ "$(in_node "$c" wg show "$(gw_if "$c")" public-key)" = "$pub" ] || fail "$c: the interface's key is not the Secret's"
  [ "$(tep_field "$o" '{.spec.publicKey}')" = "$pub" ] || fail "$o received another public key than $c's"
  [ "$(tep_field "$o" '{.spec.endpoint}')" = "$(gw_endpoint "$c")" ] || fail "$o received another endpoint than $c's"
  gsa=system:serviceaccount:cliqo-gateway:cliqo-gateway asa=system:serviceaccount:cliqo:cliqo-agent
  [ "$(can_i "$c" "$gsa" get secrets/cliqo-wg-key -n cliqo-gateway)" = yes ] ||
    fail "$c: the gateway's ServiceAccount cannot read its key"
  [ "$(can_i "$c" "$gsa" get secrets/auth-token -n cliqo)" = no ] &&
    [ "$(can_i "$c" "$gsa" list secrets -n cliqo-gateway)" = no ] ||
    fail "$c: the gateway's ServiceAccount reads other Secrets"
  # ... and the agent's ServiceAccount neither reads the key nor can run a pod as the gateway's
  for v in "get secrets/cliqo-wg-key" "list secrets" "watch secrets" "create pods" "create deployments.apps"; do
    # shellcheck disable=SC2086 # verb and resource
    [ "$(can_i "$c" "$asa" $v -n cliqo-gateway)" = no ] || fail "$c: the agent's ServiceAccount may $v in cliqo-gateway"
  done
  [ "$(can_i "$c" "system:serviceaccount:$(tenant "$c"):remote-$(id_of "$o")" patch tunnelendpoints.net.liqo.io \
    --subresource=status -n "$(tenant "$c")")" = no ] || fail "$c: the peer may write its TunnelEndpoint's status"
  # the device, the route and the table, read in the node
  s=$(cat "$E2E_STATE/seen-$c")
  [ "$(wg_peer_count "$c")" = 1 ] || fail "$c: $(wg_peer_count "$c") WireGuard peers, want 1"
  [ "$(in_node "$c" wg show "$(gw_if "$c")" allowed-ips | awk '{print $2}')" = "$s" ] ||
    fail "$c: allowed IPs '$(in_node "$c" wg show "$(gw_if "$c")" allowed-ips)', want $s only"
  [ "$(in_node "$c" wg show "$(gw_if "$c")" endpoints | awk '{print $2}')" = "$(gw_endpoint "$o")" ] || fail "$c: wrong endpoint"
  [ "$(in_node "$c" wg show "$(gw_if "$c")" persistent-keepalive | awk '{print $2}')" = 2 ] || fail "$c: keepalive not 2 s"
  wan=$(link_mtu "$c" wan0)
  mtu=$(link_mtu "$c" "$(gw_if "$c")")
  [ "$mtu" = $((wan - 80)) ] || fail "$c: tunnel MTU $mtu, want $((wan - 80))"
  rt=$(cliqo_routes "$c")
  [ "$(grep -c . <<<"$rt")" = 1 ] && grep_q "^$s dev $(gw_if "$c") .*mtu $mtu" <<<"$rt" ||
    fail "$c: routes of protocol 146: '$rt', want $s dev $(gw_if "$c") mtu $mtu"
  t=$(cliqo_table "$c")
  grep_q "chain to_${s//[.\/]/_}" <<<"$t" && grep_q "chain from_${s//[.\/]/_}" <<<"$t" ||
    fail "$c: table cliqo lacks the peer's chains: $t"
done

# Status and metrics (docs/dataplane.md, section 6): A's virtual node of B says the tunnel is up, `cliqoctl
# status` shows it Up with a handshake age, the gateway's /metrics has it up.
say "status: $A's virtual node, cliqoctl status, the gateway's /metrics"
wait_for 20 "$A's virtual node $(vnode) (the peering's Advertisement accepted)" eval '[ -n "$(jget "$A" "{.metadata.name}" node "$(vnode)")" ]'
wait_for 10 "NetworkUnavailable False/TunnelUp on $(vnode) (now: $(netcond))" eval '[ "$(netcond)" = False/TunnelUp ]'
row=$(cq "$A" status | awk -v n="$B" '$1 == n && $2 == "Up" { print }')
[[ "$row" =~ ^$B\ +Up\ +[0-9]+s\ ago\ +[0-9]+\ +[0-9]+\ +-$ ]] ||
  fail "cliqoctl status on $A: no tunnel line '$B Up <N>s ago <rx> <tx> -': '$row'"
tj=$(tunnel_json "$A")
[ "$(jq -r '.state' <<<"$tj")" = Up ] && [ "$(jq -r '.handshakeAgeSeconds' <<<"$tj")" -lt 180 ] ||
  fail "cliqoctl status -o json on $A: tunnel $tj"
wait_for 10 "cliqo_tunnel_up 1 for $B on $A's gateway" eval '[ "$(metric "$A" cliqo_tunnel_up "peer=\"$B_ID\"")" = 1 ]'
hs=$(metric "$A" cliqo_tunnel_last_handshake_seconds "peer=\"$B_ID\"")
[ -n "$hs" ] && awk -v h="$hs" -v n="$EPOCHSECONDS" 'BEGIN { exit !(h > 0 && h <= n && n - h < 180) }' ||
  fail "cliqo_tunnel_last_handshake_seconds of $B on $A: '$hs'"
say "$(vnode): $(netcond); cliqoctl status: $row; cliqo_tunnel_up 1"
pass "tunnel Up ${secs}s after start; key, device, route and table as wanted on both gateways; node condition, status and metrics say Up"
