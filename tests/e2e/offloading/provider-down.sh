#!/usr/bin/env bash
# B unreachable (docs/offloading.md, "Provider unreachable"): B's API server stopped for 15 s. The virtual node
# turns NotReady, the home pods are kept (not deleted, not failed) and show cliqo.io/ProviderReachable=False;
# when B is back the node is Ready, the pods reachable again, and B holds the same pods (same UIDs: no duplicate,
# nothing re-created).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/vk-lib.sh"
NS=e2e-down
DOWN=0
cleanup() {
  if [ "$DOWN" = 1 ]; then "$CLIQOCTL" dev start --cluster "$B" --component kube-apiserver >/dev/null 2>&1 || true; fi
  ensure_agents
  unoffload "$NS"
}
trap 'rc=$?; cleanup >/dev/null 2>&1 || true; (exit $rc); off_on_exit' EXIT # the test's status, not cleanup's
ensure_agents
ids
wait_shared 60

offload "$NS"
wait_mapped "$NS"
RNS=$(remote_ns "$NS")
deployment "$NS" web 10
wait_for 90 "10 pods Running on both sides" all_running "$NS" 10
before=$(kc "$B" get pods -n "$RNS" -o json | jq -c '[.items[] | {n: .metadata.name, u: .metadata.uid}] | sort')
homes=$(kc "$A" get pods -n "$NS" -o json | jq -c '[.items[] | .metadata.uid] | sort')

say "stop $B's API server"
start=$(date +%s)
DOWN=1
CLIQO_DEV_STOP_TIMEOUT=2 "$CLIQOCTL" dev stop --cluster "$B" --component kube-apiserver >/dev/null ||
  fail "cannot stop $B's API server"
not_ready() {
  [ "$(jget "$A" '{.status.conditions[?(@.type=="Ready")].status}' node "$VNODE")" = False ] &&
    [ "$(jget "$A" '{.status.conditions[?(@.type=="Ready")].reason}' node "$VNODE")" = ProviderUnreachable ]
}
wait_for 20 "virtual node NotReady (ProviderUnreachable)" not_ready
echo "FIGURE provider-down-to-node-notready-seconds=$(($(date +%s) - start))"
unreachable_pods() {
  kc "$A" get pods -n "$NS" -o json | jq '[.items[] | select([.status.conditions[]? | select(.type == "cliqo.io/ProviderReachable" and .status == "False" and .reason == "ProviderUnreachable")] | length == 1)] | length'
}
wait_for 20 "every home pod with cliqo.io/ProviderReachable=False" eval '[ "$(unreachable_pods)" = 10 ]'
kept() {
  kc "$A" get pods -n "$NS" -o json | jq -e --argjson h "$homes" '[.items[] | select(.metadata.deletionTimestamp == null
    and .status.phase == "Running") | .metadata.uid] | sort == $h' >/dev/null
}
while [ $(($(date +%s) - start)) -lt 15 ]; do
  kept || fail "home pods changed while $B was unreachable: $(kc "$A" get pods -n "$NS" --no-headers | head -3)"
  sleep 1
done
kept || fail "home pods not kept"

say "start $B's API server again after $(($(date +%s) - start)) s"
"$CLIQOCTL" dev start --cluster "$B" --component kube-apiserver >/dev/null || fail "cannot start $B's API server"
DOWN=0
back=$(date +%s)
wait_for 60 "virtual node Ready again" vnode_ready
wait_for 60 "every home pod reachable again" eval '[ "$(kc "$A" get pods -n "$NS" -o json | jq "[.items[] | select([.status.conditions[]? | select(.type == \"cliqo.io/ProviderReachable\" and .status == \"True\")] | length == 1)] | length")" = 10 ]'
echo "FIGURE provider-back-to-pods-reachable-seconds=$(($(date +%s) - back))"
ensure_agents
after=$(kc "$B" get pods -n "$RNS" -o json | jq -c '[.items[] | {n: .metadata.name, u: .metadata.uid}] | sort')
[ "$before" = "$after" ] || fail "pods on $B changed across the outage: before $before, after $after"
kept || fail "home pods not kept after the outage"
out=$(pairs_ok "$NS") || fail "pairs after the outage: $out"
[ "$(home_running "$NS")" = 10 ] || fail "home pods not all Running and Ready after the outage"

cleanup
trap off_on_exit EXIT
check_logs
pass "node NotReady, pods kept with ProviderReachable=False, then recovered with the same 10 remote pods"
