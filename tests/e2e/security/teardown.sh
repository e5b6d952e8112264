#!/usr/bin/env bash
# The group's end: A and C unpeer from B; B is left with nothing of either; the agents stop gracefully on
# SIGTERM and their logs hold no sanitizer report.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
trap sec_on_exit EXIT
ensure_agents
ids
for c in "$A" "$C"; do
  out=$(cq "$c" unpeer "$B" --timeout 60s 2>&1) || fail "unpeer $B on $c failed: $out"
done
left_on_b() {
  kc "$B" get peeringrequests,namespacemaps,networkconfigs -A -o name
  kc "$B" get namespaces -l virtualkubelet.liqo.io/origin -o name
  kc "$B" get namespaces -l discovery.liqo.io/tenant-namespace=true -o name
  kc "$B" get pods -A -l virtualkubelet.liqo.io/origin -o name
}
wait_for 90 "nothing left on $B ($(left_on_b 2>&1 | tr '\n' ' '))" eval '[ -z "$(left_on_b 2>&1)" ]'
stop_agents "${ALL[@]}"
check_logs
pass "unpeered; B clean; agents stopped gracefully; no sanitizer report"
