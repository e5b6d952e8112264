#!/usr/bin/env bash
# The demo (scripts/demo.sh, the README's main command) end to end with this build's binaries: its output and
# the clusters checked with kubectl (home pods Running on the virtual node, their copies Running in containers
# on cluster-2's real node, the ConfigMap and Service reflected, both tunnels Up), the page it fetched from
# cluster-1 through the Service answered by one of the copies on cluster-2 (its name, node and address in the
# demo's table, and fetched again here), an agent killed is started again by its supervisor, a second run
# changes nothing, --down removes every process, namespace, link and all state. Needs root (real nodes).
source "$(dirname "$0")/../lib.sh"
[ "$(id -u)" -eq 0 ] || fail "the demo needs root: its real nodes are network and mount namespaces with containerd and a kubelet"
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
DEMO=$ROOT/scripts/demo.sh
OUT=$(mktemp)
k() { local c=$1; shift; "$KUBECTL" --kubeconfig "$E2E_STATE/$c/kubeconfig" "$@"; }
PREFIX=""
on_exit() {
  local rc=$?
  if [ "$rc" != 0 ]; then
    tail -60 "$OUT" >&2
    for f in "$E2E_STATE"/cluster-*/logs/cliqo-agent.log "$E2E_STATE"/cluster-*/logs/cliqo-gateway.log; do
      [ -f "$f" ] && { echo "--- $f" >&2; tail -20 "$f" >&2; }
    done
  fi
  bash "$DEMO" --down >/dev/null 2>&1 || true
  rm -f "$OUT"
  exit "$rc"
}
trap on_exit EXIT
bash "$DEMO" --down >/dev/null 2>&1 || true

say "first run"
t0=${EPOCHREALTIME/./}
bash "$DEMO" >"$OUT" 2>&1 || fail "the demo failed"
t1=${EPOCHREALTIME/./}
say "first run took $(((t1 - t0) / 1000000)) s"
PREFIX=$(cat "$E2E_STATE/netns.conf")
ID2=$(k cluster-2 get configmap -n cliqo cluster-id -o jsonpath='{.data.cluster-id}')
NODE=liqo-$ID2
RNS=$(k cluster-1 get namespaceoffloading offloading -n demo -o jsonpath='{.status.remoteNamespaceName}')
[ -n "$RNS" ] || fail "no remote namespace in demo's NamespaceOffloading"
home=$(k cluster-1 get pods -n demo -l app=web -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName} {.status.phase}{"\n"}{end}')
[ "$(grep -c " $NODE Running$" <<<"$home")" = 2 ] || fail "home pods not all Running on $NODE: $home"
remote=$(k cluster-2 get pods -n "$RNS" -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName} {.status.phase} {.status.podIP} {.status.containerStatuses[0].containerID}{"\n"}{end}')
[ "$(grep -cE '^[^ ]+ cluster-2-real-1 Running [0-9.]+ containerd://' <<<"$remote")" = 2 ] ||
  fail "remote pods not all Running in containers on cluster-2-real-1: $remote"
for p in $(awk '{print $1}' <<<"$home"); do
  grep_q -E "^$p +$NODE +Running .*\| $p +cluster-2-real-1 +Running" "$OUT" || fail "no table row for $p"
done
for c in cluster-1 cluster-2; do
  [ "$(k "$c" get tunnelendpoints -A -o jsonpath='{.items[*].status.phase}')" = Up ] || fail "$c: the tunnel is not Up"
done
k cluster-2 get configmap web-config -n "$RNS" -o jsonpath='{.data.greeting}' | grep_q '^hello from cluster-1$' ||
  fail "the ConfigMap is not reflected"
k cluster-2 get service web -n "$RNS" >/dev/null || fail "the Service is not reflected"

# The fetch: the demo's table names a pod of cluster-2 that answered through the Service, on its node, at its
# address there; and the page comes through again from cluster-1's client.
VIP=$(k cluster-1 get service web -n demo -o jsonpath='{.spec.clusterIP}')
rows=$(grep -E "^default/demo-client +http://$VIP/ " "$OUT" || true)
[ "$(grep -c . <<<"$rows")" = 3 ] || fail "the demo's table has no three fetches of http://$VIP/: $rows"
while read -r _ _ apod acluster anode aip; do
  grep_q -x "$apod cluster-2-real-1 Running $aip containerd://.*" <<<"$remote" ||
    fail "the answer names pod $apod at $aip, which is no container of cluster-2: $remote"
  [ "$acluster $anode" = "cluster-2 cluster-2-real-1" ] || fail "the answer came from $acluster $anode"
done <<<"$rows"
grep_q -E '^--- the page: hello from cluster-1; answered by pod [^ ]+ on node cluster-2-real-1 at ' "$OUT" ||
  fail "the demo did not print the page: $(grep -- '--- the page' "$OUT")"
page=$(k cluster-1 exec -n default demo-client -- timeout 5 wget -qO- "http://$VIP/")
apod=$(sed -n 's/.*answered by pod \([^ ]*\) on node.*/\1/p' <<<"$page")
grep_q "^$apod cluster-2-real-1 Running " <<<"$remote" || fail "fetched again, the page came from '$page'"
say "the page through Service web ($VIP) on cluster-1: '$page'"
# kubectl exec on a home pod: the API server in cluster-1's namespace reaches the virtual node's kubelet API on
# the host's end of its link, which relays to cluster-2's real kubelet.
hp=$(awk 'NR == 1 {print $1}' <<<"$home")
out=$(k cluster-1 exec -n demo "$hp" -- cat /www/index.html 2>&1) || fail "kubectl exec on home pod $hp: $out"
grep_q "answered by pod $hp on node cluster-2-real-1" <<<"$out" || fail "kubectl exec on home pod $hp said '$out'"
for f in "$E2E_STATE"/cluster-*/logs/cliqo-agent.log "$E2E_STATE"/cluster-*/logs/cliqo-gateway.log; do
  ! grep_q -E 'AddressSanitizer|LeakSanitizer|runtime error:' "$f" || fail "sanitizer report in $f"
done

say "an agent that dies is started again by its supervisor"
crashed=$(cat "$E2E_STATE/cluster-2/agent.pid")
kill -KILL "$crashed"
agent2_back() {
  [ "$(cat "$E2E_STATE/cluster-2/agent.pid" 2>/dev/null)" != "$crashed" ] &&
    curl -fs "http://127.0.0.1:$((${CLIQO_DEV_BASE_PORT:?} + 16))/readyz" >/dev/null
}
wait_for 60 "cluster-2's agent started again" agent2_back
grep_q 'cliqo-agent exited with status 137; starting it again in 1 s' "$E2E_STATE/cluster-2/logs/cliqo-agent.log" ||
  fail "the supervisor did not log the agent's restart"

say "second run: idempotent (same pods, same peering, same gateways)"
gw_before=$(cat "$E2E_STATE"/cluster-*/gateway.pid)
t0=${EPOCHREALTIME/./}
bash "$DEMO" >"$OUT" 2>&1 || fail "the second run failed"
t1=${EPOCHREALTIME/./}
say "second run took $(((t1 - t0) / 1000000)) s"
home2=$(k cluster-1 get pods -n demo -l app=web -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName} {.status.phase}{"\n"}{end}')
[ "$home2" = "$home" ] || fail "the second run changed the pods: $home2"
[ "$(k cluster-1 get foreignclusters -o name | wc -l)" = 1 ] || fail "more than one ForeignCluster on cluster-1"
[ "$(cat "$E2E_STATE"/cluster-*/gateway.pid)" = "$gw_before" ] || fail "the second run started other gateways"
grep_q -E "^default/demo-client +http://$VIP/ +[^ ]+ +cluster-2 +cluster-2-real-1 " "$OUT" ||
  fail "the second run's fetch was not answered on cluster-2"

say "--down: no process, namespace, link or state"
bash "$DEMO" --down >"$OUT" 2>&1 || fail "--down failed"
[ ! -e "$E2E_STATE" ] || fail "state left in $E2E_STATE"
! pgrep -f "$E2E_STATE" >/dev/null || fail "processes left: $(pgrep -fa "$E2E_STATE")"
! pgrep -f "wireguard-go .*${PREFIX}g[0-9]" >/dev/null || fail "wireguard-go left: $(pgrep -fa "${PREFIX}g[0-9]")"
left=$(ip netns list 2>/dev/null | awk '{print $1}' | grep -F -- "$PREFIX" || true)
[ -z "$left" ] || fail "network namespaces left: $left"
left=$(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -F -- "$PREFIX" || true)
[ -z "$left" ] || fail "links left: $left"
pass "the demo runs, its page crosses the tunnel from cluster-2, it is idempotent, and --down removes everything"
