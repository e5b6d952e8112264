#!/usr/bin/env bash
# Undoes setup: the broker stops cleanly, every peering is removed, the agents stop; no sanitizer report in any
# log.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
trap brk_on_exit EXIT
ids 2>/dev/null || true

say "stop the broker"
stop_broker
if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$BROKER_LOG" 2>/dev/null; then
  grep -nE -A30 'AddressSanitizer|LeakSanitizer|runtime error:' "$BROKER_LOG" | head -60 >&2
  fail "sanitizer report in the broker's log"
fi
say "unpeer C from K, K from P1 and P2"
ensure_agents
for pair in "$C:$K" "$K:$P1" "$K:$P2"; do
  cq "${pair%%:*}" unpeer "${pair#*:}" --timeout 60s >/dev/null 2>&1 || true
done
for c in "${ALL[@]}"; do
  wait_for 60 "no ForeignCluster left on $c" eval "[ \"\$(kget \"$c\" foreignclusters | jq '.items | length')\" = 0 ]"
done
say "stop the agents"
stop_agents "${ALL[@]}"
check_logs
pass "broker stopped cleanly, peerings removed, agents stopped"
