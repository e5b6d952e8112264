#!/usr/bin/env bash
# A node added after the peering (docs/dataplane.md, section 5). `cliqoctl dev add-node` gives cluster-1 a second
# real node, cluster-1-real-2 (no gateway label), and `cliqo-agent node` runs on it and on the gateway node, each
# in its node's network and mount namespaces, with the token of ServiceAccount cliqo-node (read-only: checked).
# On the new node: exactly one route of protocol 146, where cluster-1 sees cluster-2's pods via the gateway node's
# InternalIP (the figure node-route-seconds: from the node agent's start), and a pod there fetches cluster-2's
# page at the web server's remapped address, the server logging the client at its own remapped address. On the
# gateway node the node agent adds nothing and leaves the gateway's route alone. A SIGTERM leaves the route; a
# restart neither duplicates it nor drops it; a route deleted by hand comes back.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
trap net_on_exit EXIT
ids
J=$JOIN_NODE
N2=$A-real-$J
S=$(cat "$E2E_STATE/seen-$A")
GW_IP=$(jget "$A" '{.status.addresses[?(@.type=="InternalIP")].address}' node "$A-real-1")
[ -n "$GW_IP" ] || fail "no InternalIP of $A-real-1"
[ "$(jget "$A" '{.metadata.labels.net\.liqo\.io/gateway}' node "$A-real-1")" = true ] ||
  fail "$A-real-1 is not labelled net.liqo.io/gateway=true"

# 1. The node joins.
t0=${EPOCHREALTIME/./}
if ! node_exists "$A" "$J"; then
  out=$("$CLIQOCTL" dev add-node --cluster "$A" 2>&1) || fail "cliqoctl dev add-node --cluster $A: $out"
fi
node_ready() { [ "$(jget "$A" '{.status.conditions[?(@.type=="Ready")].status}' node "$N2")" = True ]; }
wait_for 60 "$N2 Ready" node_ready
[ -z "$(jget "$A" '{.metadata.labels.net\.liqo\.io/gateway}' node "$N2")" ] || fail "$N2 is labelled as a gateway"
t1=${EPOCHREALTIME/./}
say "$N2 joined and Ready in $(((t1 - t0) / 1000)) ms (pod CIDR $(jget "$A" '{.spec.podCIDR}' node "$N2"))"

# 2. The node agents, with ServiceAccount cliqo-node's token: its rights read only.
NA=system:serviceaccount:cliqo:cliqo-node
for v in "list nodes" "watch nodes" "list networkconfigs.net.liqo.io" "list foreignclusters.discovery.liqo.io"; do
  # shellcheck disable=SC2086 # verb and resource
  [ "$(can_i "$A" "$NA" $v)" = yes ] || fail "cliqo-node cannot $v"
done
for v in "patch nodes" "get secrets" "list tunnelendpoints.net.liqo.io" "update networkconfigs.net.liqo.io" \
  "create leases.coordination.k8s.io"; do
  # shellcheck disable=SC2086
  [ "$(can_i "$A" "$NA" $v -n cliqo)" = no ] || fail "cliqo-node may $v"
done
token_ready() { [ -n "$(jget "$A" '{.secrets[0].name}' serviceaccount cliqo-node -n cliqo)" ]; }
wait_for 30 "the token of ServiceAccount cliqo-node" token_ready
secret=$(jget "$A" '{.secrets[0].name}' serviceaccount cliqo-node -n cliqo)
token=$(jget "$A" '{.data.token}' secret "$secret" -n cliqo | base64 -d)
server=$(awk '$1 == "server:" {print $2; exit}' "$(kcfg "$A")")
[ -n "$token" ] && [ -n "$server" ] || fail "no token or server for cliqo-node"
cat >"$(na_kubeconfig "$A")" <<EOT
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "$server", certificate-authority: "$E2E_STATE/$A/pki/ca.crt"}
users:
- name: cliqo-node
  user: {token: "$token"}
contexts:
- name: c
  context: {cluster: c, user: cliqo-node}
current-context: c
EOT
chmod 600 "$(na_kubeconfig "$A")"
gw_route=$(cliqo_routes "$A")
t0=${EPOCHREALTIME/./}
na_start "$A" "$J"
na_start "$A" 1
want="$S via $GW_IP dev eth0"
routed() { # exactly one route of protocol 146 on the new node: the one wanted
  local out
  out=$(node_routes "$A" "$J")
  [ "$(grep -c . <<<"$out")" = 1 ] && grep_q -E "^$S via $GW_IP dev eth0( |\$)" <<<"$out"
}
wait_for 30 "$N2: the route '$want' (routes of protocol 146: $(node_routes "$A" "$J" | tr '\n' ';'))" routed
t1=${EPOCHREALTIME/./}
secs=$(((t1 - t0) / 1000000)).$(((t1 - t0) / 100000 % 10))
echo "FIGURE node-route-seconds=$secs"
say "$N2: exactly the route '$want' ${secs}s after the node agent's start"

# 3. A pod on the new node reaches cluster-2's web server at its remapped address, and back.
kc "$A" delete pod client2 -n "$NS" --ignore-not-found --wait=true >/dev/null 2>&1 || true
pod_json client2 "$N2" sleep 3600 | kc "$A" apply -f - >/dev/null || fail "cannot create pod client2 on $N2"
wait_for 60 "$A: pod client2 Running on $N2" pod_running "$A" client2
c2=$(pod_ip "$A" client2)
[[ $c2 == 10.244.$J.* ]] || fail "client2 has $c2, not an address of $N2's block 10.244.$J.0/24"
web=$(pod_ip "$B" web)
there=$(xlate "$web" "$S")
page() { [ "$(kc "$A" exec -n "$NS" client2 -- timeout 5 wget -qO- "http://$there:8080/" 2>/dev/null)" = "hello-from-$B" ]; }
wait_for 20 "client2 on $N2 fetches $B's page at http://$there:8080/" page
as=$(xlate "$c2" "$(cat "$E2E_STATE/seen-$B")")
grep_q -F "$as" <<<"$(kc "$B" logs -n "$NS" web 2>&1)" ||
  fail "$B's web server did not log client2 at $as (where $B sees $c2)"
say "client2 ($c2 on $N2) fetched $B's page at $there; $B's server saw it as $as"

# 4. The gateway node: the node agent added nothing and left the gateway's route as it was.
[ "$(cliqo_routes "$A")" = "$gw_route" ] || fail "$A-real-1's routes changed: '$(cliqo_routes "$A")', were '$gw_route'"
grep_q "this node ($A-real-1) is the gateway node" "$(agent_log "$(na_name "$A" 1)")" ||
  fail "the node agent of $A-real-1 did not see itself as the gateway node"

# 5. Stop and restart: the route stays, once; a route deleted by hand comes back.
nlog=$(agent_log "$(na_name "$A" "$J")")
adds() { grep -c 'route .* proto 146: added' "$nlog" || true; }
na_stop "$A" "$J" TERM
routed || fail "$N2: the route went with the node agent's SIGTERM: $(node_routes "$A" "$J")"
na_start "$A" "$J"
# its first pass logs the gateway node it found
passed() { [ "$(grep -c "gateway node $A-real-1 at $GW_IP" "$nlog")" -ge 2 ]; }
wait_for 20 "the node agent of $N2 restarted and through its first pass" passed
routed || fail "$N2: routes after the restart: $(node_routes "$A" "$J")"
[ "$(adds)" = 1 ] || fail "the restarted node agent added the route again ($(adds) additions in its log)"
in_node_j "$A" "$J" ip route del "$S" proto 146
wait_for 20 "$N2: the route deleted by hand back" routed
[ "$(adds)" = 2 ] || fail "$(adds) additions of the route in the node agent's log, want 2 (its start, after the deletion)"
check_logs
pass "$N2 joined after the peering: one route via the gateway node ${secs}s after its agent's start, HTTP to $B at remapped addresses; nothing added on the gateway node; route kept on SIGTERM, not duplicated on restart, restored when deleted"
