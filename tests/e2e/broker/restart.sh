#!/usr/bin/env bash
# The broker's state outlives it (docs/broker.md, "Objects the broker owns"): toggles and policy are in the
# ConfigMap cliqo-broker-state, so a restarted broker shows and applies the same ones; a ConfigMap edited into
# nonsense is refused and the last good state stays.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
cleanup() { ensure_broker; toggle "$P2_ID" true; put_policy "$BASE_POLICY"; }
trap 'rc=$?; cleanup >/dev/null 2>&1 || true; (exit $rc); brk_on_exit' EXIT
ensure_agents
ensure_broker
ids

say "P2 disabled, a latency policy"
toggle "$P2_ID" false
put_policy '{"maxLatencyMs": 5000, "requiredLabels": {"discovery.liqo.io/discovery-type": "Manual"}, "hysteresisSeconds": 2}'
want=$(api GET /api/policy | jq -cS .)
say "restart the broker"
stop_broker
start_broker
wait_broker_ready
[ "$(api GET /api/policy | jq -cS .)" = "$want" ] || fail "the policy after the restart: $API_BODY, expected $want"
[ "$(cluster_field "$P2_ID" .broker.enabled)" = false ] || fail "P2 is enabled again after the restart"
[ "$(cluster_field "$P1_ID" .broker.enabled)" = true ] || fail "P1 is disabled after the restart"
wait_for 20 "P1 selected, P2 not, after the restart" eval "selected $P1_ID && not_selected $P2_ID"

say "a ConfigMap edited into nonsense is refused; the last good state stays"
kc "$K" -n cliqo patch configmap cliqo-broker-state --type=merge -p '{"data":{"policy":"{\"maxLatencyMs\":\"fast\"}"}}' >/dev/null
wait_for 10 "the broker logs the refusal" eval "grep -q 'cliqo-broker-state is refused' '$BROKER_LOG'"
[ "$(api GET /api/policy | jq -cS .)" = "$want" ] || fail "the policy changed to: $API_BODY"
say "a write after the bad edit starts from the last good state: P1's toggle is kept"
toggle "$P2_ID" true
[ "$(cluster_field "$P1_ID" .broker.enabled)" = true ] || fail "P1's toggle was lost when the broken ConfigMap was rewritten"
kget "$K" configmap -n cliqo cliqo-broker-state | jq -e '.data.policy | fromjson | .maxLatencyMs == 5000' >/dev/null ||
  fail "the rewritten ConfigMap lost the last good policy"
pass "toggles and policy survived a broker restart; a bad edit of the state was refused"
