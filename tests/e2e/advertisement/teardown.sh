#!/usr/bin/env bash
# The group's end: A unpeers from the three providers; both sides are left with nothing of the protocol (no
# Advertisement, virtual node, NetworkConfig, NamespaceMap, namespace made for A, virtual kubelet identity);
# the agents stop gracefully on SIGTERM and their logs hold no sanitizer report.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
trap adv_on_exit EXIT
ensure_agents
ids
# The three at once, as an operator leaving several peers would (each unpeer waits for its own end).
declare -A UNPEER=()
for p in "${PROVIDERS[@]}"; do
  cq "$A" unpeer "$p" --timeout 60s >"$E2E_STATE/unpeer-$p.out" 2>&1 &
  UNPEER[$p]=$!
done
for p in "${PROVIDERS[@]}"; do
  wait "${UNPEER[$p]}" || fail "unpeer $p failed: $(cat "$E2E_STATE/unpeer-$p.out")"
  rm -f "$E2E_STATE/unpeer-$p.out"
done
left_on_a() {
  kc "$A" get advertisements,networkconfigs -A -o name
  kc "$A" get nodes -l liqo.io/type=virtual-node -o name
  kc "$A" get namespaces -l discovery.liqo.io/tenant-namespace=true -o name
  kc "$A" get leases -n kube-node-lease -o name | grep '/liqo-' || true
}
left_on_p() {
  kc "$1" get peeringrequests,namespacemaps,networkconfigs -A -o name
  kc "$1" get namespaces -l virtualkubelet.liqo.io/origin -o name
  kc "$1" get namespaces -l discovery.liqo.io/tenant-namespace=true -o name
  kc "$1" get serviceaccounts -A -o name | grep '/vk-' || true
}
wait_for 90 "nothing left on $A ($(left_on_a 2>&1 | tr '\n' ' '))" eval '[ -z "$(left_on_a 2>&1)" ]'
for p in "${PROVIDERS[@]}"; do
  wait_for 90 "nothing left on $p ($(left_on_p "$p" 2>&1 | tr '\n' ' '))" eval "[ -z \"\$(left_on_p $p 2>&1)\" ]"
done
stop_agents "${ALL[@]}"
check_logs
pass "unpeered; both sides clean; agents stopped gracefully; no sanitizer report"
