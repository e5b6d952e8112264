#!/usr/bin/env bash
# B unreachable (docs/offloading.md, "Provider unreachable"): B's whole control plane (etcd, API server, scheduler,
# controller-manager and its simulated nodes) stopped for 20 s, longer than its agent's Lease (15 s). The virtual
# node turns NotReady with reason ProviderUnreachable and keeps it throughout; the home pods are kept (not deleted,
# not failed) and show cliqo.io/ProviderReachable=False. B's agent loses its Lease, makes its modules again and
# leads again once its API server is back, in the same process (docs/agent.md, "Leadership"). When B is back the
# node is Ready, the pods reachable again, B holds the same pods (same UIDs: no duplicate, nothing re-created), a
# new namespace offloads and a deleted one goes away, with no process restarted by anyone.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/vk-lib.sh"
NS=e2e-down
NS2=e2e-down-new
OUTAGE=20
DOWN=0
cleanup() {
  if [ "$DOWN" = 1 ]; then "$CLIQOCTL" dev start --cluster "$B" >/dev/null 2>&1 || true; fi
  ensure_agents
  unoffload "$NS" "$NS2"
}
b_leads() { [ "$(curl -s --max-time 5 "http://127.0.0.1:$(http_port "$B")/metrics" | awk '$1 == "cliqo_leader" { print $2 }')" = 1 ]; }
restarts() { curl -s --max-time 5 "http://127.0.0.1:$(http_port "$B")/metrics" | awk '$1 == "cliqo_module_restarts_total" { print $2 }'; }
trap 'rc=$?; cleanup >/dev/null 2>&1 || true; (exit $rc); off_on_exit' EXIT # the test's status, not cleanup's
ensure_agents
ids
wait_shared 60

offload "$NS"
wait_mapped "$NS"
RNS=$(remote_ns "$NS")
deployment "$NS" web 10
wait_for 90 "10 pods Running on both sides" all_running "$NS" 10
before=$(kget "$B" pods -n "$RNS" | jq -c '[.items[] | {n: .metadata.name, u: .metadata.uid}] | sort')
homes=$(kget "$A" pods -n "$NS" | jq -c '[.items[] | .metadata.uid] | sort')

bpid=$(agent_pid "$B")
restarts0=$(restarts)
[ -n "$bpid" ] && [ -n "$restarts0" ] || fail "B's agent is not running"
say "stop $B's control plane"
start=$(date +%s)
DOWN=1
CLIQO_DEV_STOP_TIMEOUT=2 "$CLIQOCTL" dev stop --cluster "$B" >/dev/null || fail "cannot stop $B's control plane"
ready_cond() { jget "$A" '{.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].reason}' node "$VNODE"; }
not_ready() { [ "$(ready_cond)" = False/ProviderUnreachable ]; }
wait_for 20 "virtual node NotReady (ProviderUnreachable)" not_ready
echo "FIGURE provider-down-to-node-notready-seconds=$(($(date +%s) - start))"
unreachable_pods() {
  kget "$A" pods -n "$NS" | jq '[.items[] | select([.status.conditions[]? | select(.type == "cliqo.io/ProviderReachable" and .status == "False" and .reason == "ProviderUnreachable")] | length == 1)] | length'
}
wait_for 20 "every home pod with cliqo.io/ProviderReachable=False" eval '[ "$(unreachable_pods)" = 10 ]'
kept() {
  kget "$A" pods -n "$NS" | jq -e --argjson h "$homes" '[.items[] | select(.metadata.deletionTimestamp == null
    and .status.phase == "Running") | .metadata.uid] | sort == $h' >/dev/null
}
while [ $(($(date +%s) - start)) -lt "$OUTAGE" ]; do
  kept || fail "home pods changed while $B was unreachable: $(kc "$A" get pods -n "$NS" --no-headers | head -3)"
  c=$(ready_cond)
  [ "$c" = False/ProviderUnreachable ] || fail "the virtual node's Ready condition is $c during the outage, want False/ProviderUnreachable"
  sleep 1
done
kept || fail "home pods not kept"
wait_for 20 "B's agent makes its modules again after losing its Lease" eval '[ "$(restarts)" -gt "$restarts0" ]'

say "start $B's control plane again after $(($(date +%s) - start)) s"
"$CLIQOCTL" dev start --cluster "$B" >/dev/null || fail "cannot start $B's control plane"
DOWN=0
back=$(date +%s)
while ! vnode_ready; do
  c=$(ready_cond)
  [ "$c" = False/ProviderUnreachable ] || [ "$c" = True/ProviderReady ] ||
    fail "the virtual node's Ready condition is $c while $B comes back, want False/ProviderUnreachable until Ready"
  [ $(($(date +%s) - back)) -lt 90 ] || fail "virtual node not Ready 90 s after $B came back"
  sleep 1
done
echo "FIGURE provider-back-to-node-ready-seconds=$(($(date +%s) - back))"
same_agent() { [ "$(agent_pid "$B")" = "$bpid" ] && agent_alive "$B"; }
same_agent || fail "B's agent is not the process it was before the outage"
wait_agent_ready "$B"
wait_for 60 "B's agent leads again" b_leads
wait_for 60 "every home pod reachable again" eval '[ "$(kget "$A" pods -n "$NS" | jq "[.items[] | select([.status.conditions[]? | select(.type == \"cliqo.io/ProviderReachable\" and .status == \"True\")] | length == 1)] | length")" = 10 ]'
echo "FIGURE provider-back-to-pods-reachable-seconds=$(($(date +%s) - back))"
after=$(kget "$B" pods -n "$RNS" | jq -c '[.items[] | {n: .metadata.name, u: .metadata.uid}] | sort')
[ "$before" = "$after" ] || fail "pods on $B changed across the outage: before $before, after $after"
kept || fail "home pods not kept after the outage"
out=$(pairs_ok "$NS") || fail "pairs after the outage: $out"
[ "$(home_running "$NS")" = 10 ] || fail "home pods not all Running and Ready after the outage"

say "after the outage: a new namespace offloads, a deleted one goes away"
offload "$NS2"
wait_mapped "$NS2" 90
deployment "$NS2" new 2
wait_for 90 "2 pods of the new namespace Running on both sides" all_running "$NS2" 2
unoffload "$NS"
same_agent || fail "B's agent is not the process it was before the outage"
[ "$(restarts)" -gt "$restarts0" ] || fail "B's agent never lost its Lease: the outage was too short to test it"

cleanup
trap off_on_exit EXIT
check_logs
pass "node NotReady (ProviderUnreachable) throughout, pods kept, B's agent recovered in the same process; the same 10 remote pods after, a new namespace offloaded and a deleted one removed"
