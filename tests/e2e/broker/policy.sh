#!/usr/bin/env bash
# Selection by criteria (docs/broker.md, "Selection by criteria"): with a minimum uptime of 6 s and a hysteresis of
# 3 s, a provider whose agent restarts (its endpoint stops answering the broker's probes) leaves the selection,
# C's aggregated offer drops it, and it comes back only after 6 s of uptime plus 3 s inside the thresholds.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
QSUM="$(dirname "$0")/qsum.py"
cleanup() { start_agent "$P1"; put_policy "$BASE_POLICY"; }
trap 'rc=$?; cleanup >/dev/null 2>&1 || true; (exit $rc); brk_on_exit' EXIT
ensure_agents
ensure_broker
ids
wait_all_shared 60
offer_is() { # PROVIDER...: C's offer from K is their sum
  local want args=()
  for p in "$@"; do args+=("$(adv_hard "$K" "$p")"); done
  want=$("$QSUM" "${args[@]}") && [ "$want" = "$("$QSUM" "$(adv_hard "$C" "$K")")" ]
}

say "policy: minUptimeSeconds 6, hysteresisSeconds 3"
put_policy '{"minUptimeSeconds": 6, "hysteresisSeconds": 3}'
[ "$(api GET /api/policy | jq -cS .)" = '{"hysteresisSeconds":3,"minUptimeSeconds":6}' ] || fail "GET /api/policy: $API_BODY"
wait_for 20 "P1 and P2 selected (both up for long)" eval "selected $P1_ID && selected $P2_ID"

say "restart P1's agent: its probes fail, it leaves the selection and C's offer"
stop_agent "$P1"
wait_for 20 "P1 out of the selection" not_selected "$P1_ID"
why=$(cluster_field "$P1_ID" .broker.why)
grep_q -iE 'uptime|reachable' <<<"$why" || fail "P1 is out, but not for its probes: $why"
wait_for 20 "C's offer is P2's alone" offer_is "$P2"
start_agent "$P1"
wait_agent_ready "$P1"
up=$(date +%s.%N)
wait_for 20 "probes of P1 answered again" eval "[ \"\$(cluster_field $P1_ID .broker.kpi.uptimeSeconds)\" != null ]"
not_selected "$P1_ID" || fail "P1 is back in the selection at once, before 6 s of uptime and the hysteresis"
wait_for 40 "P1 back in the selection after the uptime and the hysteresis" selected "$P1_ID"
back=$(awk -v s="$up" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
echo "FIGURE restarted-provider-back-in-selection-seconds=$back"
# Lower bound only (a slow machine can only make it later): 6 s of uptime and 3 s of hysteresis, less one
# probe interval for where the first answered probe fell.
awk -v b="$back" 'BEGIN { exit !(b >= 8) }' || fail "P1 came back after ${back}s, before 6 s uptime + 3 s hysteresis"
wait_for 20 "C's offer is P1's plus P2's again" offer_is "$P1" "$P2"
pass "a restarted provider left the selection and C's offer, and came back after ${back}s (>= 6 s uptime + 3 s hysteresis)"
