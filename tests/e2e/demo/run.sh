#!/usr/bin/env bash
# The demo (scripts/demo.sh, the README's main command) end to end with this build's binaries: its output and
# the clusters checked with kubectl (home pods Running on the virtual node, their copies Running on cluster-2,
# the ConfigMap and Service reflected), an agent killed is started again by its supervisor, a second run changes
# nothing, --down removes every process and all state.
source "$(dirname "$0")/../lib.sh"
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
DEMO=$ROOT/scripts/demo.sh
OUT=$(mktemp)
k() { local c=$1; shift; "$KUBECTL" --kubeconfig "$E2E_STATE/$c/kubeconfig" "$@"; }
on_exit() {
  local rc=$?
  if [ "$rc" != 0 ]; then
    tail -40 "$OUT" >&2
    for f in "$E2E_STATE"/cluster-*/logs/cliqo-agent.log; do
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
bash "$DEMO" >"$OUT" 2>&1 || fail "the demo failed"
ID2=$(k cluster-2 get configmap -n cliqo cluster-id -o jsonpath='{.data.cluster-id}')
NODE=liqo-$ID2
RNS=$(k cluster-1 get namespaceoffloading offloading -n demo -o jsonpath='{.status.remoteNamespaceName}')
[ -n "$RNS" ] || fail "no remote namespace in demo's NamespaceOffloading"
home=$(k cluster-1 get pods -n demo -l app=web -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName} {.status.phase}{"\n"}{end}')
[ "$(grep -c " $NODE Running$" <<<"$home")" = 4 ] || fail "home pods not all Running on $NODE: $home"
remote=$(k cluster-2 get pods -n "$RNS" -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName} {.status.phase}{"\n"}{end}')
[ "$(grep -cE ' cluster-2-node-[0-9]+ Running$' <<<"$remote")" = 4 ] || fail "remote pods not all Running on cluster-2: $remote"
for p in $(awk '{print $1}' <<<"$home"); do
  grep_q -E "^$p +$NODE +Running .*\| $p +cluster-2-node-[0-9]+ +Running" "$OUT" || fail "no table row for $p"
done
k cluster-2 get configmap web-config -n "$RNS" -o jsonpath='{.data.greeting}' | grep_q '^hello from cluster-1$' ||
  fail "the ConfigMap is not reflected"
k cluster-2 get service web -n "$RNS" >/dev/null || fail "the Service is not reflected"
for f in "$E2E_STATE"/cluster-*/logs/cliqo-agent.log; do
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

say "second run: idempotent (same pods, same peering)"
bash "$DEMO" >"$OUT" 2>&1 || fail "the second run failed"
home2=$(k cluster-1 get pods -n demo -l app=web -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName} {.status.phase}{"\n"}{end}')
[ "$home2" = "$home" ] || fail "the second run changed the pods: $home2"
[ "$(k cluster-1 get foreignclusters -o name | wc -l)" = 1 ] || fail "more than one ForeignCluster on cluster-1"

say "--down: no process, no state"
bash "$DEMO" --down >"$OUT" 2>&1 || fail "--down failed"
[ ! -e "$E2E_STATE" ] || fail "state left in $E2E_STATE"
! pgrep -f "$E2E_STATE" >/dev/null || fail "processes left: $(pgrep -fa "$E2E_STATE")"
pass "the demo runs, is idempotent, and --down removes everything"
