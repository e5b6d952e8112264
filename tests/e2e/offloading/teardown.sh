#!/usr/bin/env bash
# The group's end: A unpeers from B; both sides are left with nothing of peering, sharing or offloading; the
# agents stop gracefully on SIGTERM and their logs hold no sanitizer report.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
trap off_on_exit EXIT
ensure_agents
ids
out=$(cq "$A" unpeer "$B" --timeout 60s 2>&1) || fail "unpeer $B failed: $out"
left_on_a() {
  kc "$A" get advertisements,networkconfigs,namespaceoffloadings -A -o name
  kc "$A" get nodes -l liqo.io/type=virtual-node -o name
  kc "$A" get namespaces -l discovery.liqo.io/tenant-namespace=true -o name
  kc "$A" get leases -n kube-node-lease -o name | grep '/liqo-' || true
}
left_on_b() {
  kc "$B" get peeringrequests,namespacemaps,networkconfigs -A -o name
  kc "$B" get namespaces -l virtualkubelet.liqo.io/origin -o name
  kc "$B" get namespaces -l discovery.liqo.io/tenant-namespace=true -o name
  kc "$B" get pods -A -l virtualkubelet.liqo.io/origin -o name
  kc "$B" get serviceaccounts -A -o name | grep '/vk-' || true
}
wait_for 90 "nothing left on $A ($(left_on_a 2>&1 | tr '\n' ' '))" eval '[ -z "$(left_on_a 2>&1)" ]'
wait_for 90 "nothing left on $B ($(left_on_b 2>&1 | tr '\n' ' '))" eval '[ -z "$(left_on_b 2>&1)" ]'
stop_agents "${ALL[@]}"
check_logs
pass "unpeered; both sides clean; agents stopped gracefully; no sanitizer report"
