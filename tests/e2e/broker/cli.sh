#!/usr/bin/env bash
# cliqoctl broker (a thin client of the API): status lists the clusters with their selection, toggle needs the
# token and changes what the API says, policy prints and replaces the policy and reports the API's refusal.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
cleanup() { toggle "$P2_ID" true; put_policy "$BASE_POLICY"; }
trap 'rc=$?; cleanup >/dev/null 2>&1 || true; (exit $rc); brk_on_exit' EXIT
ensure_agents
ensure_broker
ids
b() { "$CLIQOCTL" broker --url "$API" "$@"; }

say "status"
out=$(b status) || fail "cliqoctl broker status failed"
grep -q "^$P1 .*$P1_ID *yes" <<<"$out" || fail "status does not list P1 as a provider: $out"
[ "$(b status -o json | jq 'length')" = 3 ] || fail "status -o json is not the 3 clusters"

say "toggle: refused without the token, done with it"
if err=$(b toggle "$P2_ID" off 2>&1); then fail "toggle without a token succeeded: $err"; fi
grep_q 401 <<<"$err" || fail "toggle without a token did not report the 401: $err"
[ "$(b toggle "$P2_ID" off --token-file "$TOKEN_FILE")" = "provider $P2_ID disabled" ] || fail "toggle off failed"
[ "$(cluster_field "$P2_ID" .broker.enabled)" = false ] || fail "the API still says P2 is enabled"

say "policy: replaced from standard input, printed, a bad one refused with the field named"
echo '{"maxLatencyMs": 5000, "hysteresisSeconds": 0}' | b policy - --token-file "$TOKEN_FILE" >/dev/null ||
  fail "policy - failed"
[ "$(b policy | jq -c '.maxLatencyMs')" = 5000 ] || fail "policy does not print the new policy"
if err=$(echo '{"bogus": 1}' | b policy - --token-file "$TOKEN_FILE" 2>&1); then fail "a bad policy was accepted"; fi
grep_q bogus <<<"$err" || fail "the refusal does not name the field: $err"
pass "cliqoctl broker status, toggle and policy against the API"
