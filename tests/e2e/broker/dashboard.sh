#!/usr/bin/env bash
# The dashboard (docs/broker.md, "Dashboard") in a real headless Chromium (tests/e2e/lib/cdp.py): the page lists
# K's clusters; a click on P2's toggle disables it (seen in the API and in K's ConfigMap); a policy saved in the
# editor takes P1 and P2 out of the selection; the page shows no error. A screenshot goes to the test's state.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
cleanup() { toggle "$P2_ID" true; put_policy "$BASE_POLICY"; }
trap 'rc=$?; cleanup >/dev/null 2>&1 || true; (exit $rc); brk_on_exit' EXIT
ensure_agents
ensure_broker
ids
wait_for 20 "P1 and P2 selected" eval "selected $P1_ID && selected $P2_ID"
row() { echo "tr[data-cluster-id=\"$1\"]"; } # a CSS selector; the JavaScript below quotes it with '...'
shot="$E2E_STATE/dashboard.png"
cdplog="$E2E_STATE/cdp.log"
# cdp STEPS...: the driver, verbose into cdplog; on failure the page's side of the story is printed.
cdp() {
  python3 "$CLIQO_CDP" -v --timeout 30 --url "$API/" "$@" 2>"$cdplog" && return 0
  grep -v -e dbus -e '^  \[' "$cdplog" | tail -25 >&2
  return 1
}

say "load the page, enter the token, toggle P2 off"
cdp set '#token' "$(token)" \
  wait 'document.querySelectorAll("tr[data-cluster-id]").length === 3' \
  wait "document.querySelector('$(row "$P2_ID")').dataset.enabled === 'true'" \
  click "$(row "$P2_ID") .toggle" \
  wait "document.querySelector('$(row "$P2_ID")').dataset.enabled === 'false'" \
  errors >/dev/null || fail "the dashboard's toggle did not work"
[ "$(cluster_field "$P2_ID" .broker.enabled)" = false ] || fail "the API still says P2 is enabled"
kget "$K" configmap -n cliqo cliqo-broker-state | jq -e --arg id "$P2_ID" '.data.toggles | fromjson | .[$id] == false' >/dev/null ||
  fail "K's ConfigMap cliqo-broker-state does not say P2 is disabled"

say "edit the policy: a minimum free cpu no provider has takes P1 out of the selection"
cdp set '#token' "$(token)" \
  wait 'document.querySelectorAll("tr[data-cluster-id]").length === 3' \
  set '#policy' '{"minFree": {"cpu": "1000"}, "hysteresisSeconds": 0}' \
  click '#policy-save' \
  wait "document.querySelector('$(row "$P1_ID")').dataset.selected === 'false'" 20 \
  wait "document.querySelector('$(row "$P1_ID") .c-selected').textContent.includes('cpu')" 20 \
  errors shot "$shot" >/dev/null || fail "the dashboard's policy editor did not take P1 out"
not_selected "$P1_ID" || fail "the API still selects P1"
[ -n "$(api GET /api/policy | jq -r '.minFree.cpu // empty')" ] || fail "the policy saved is not the one typed: $API_BODY"
[ -s "$shot" ] || fail "no screenshot"
pass "the dashboard toggled P2 and saved a policy that took P1 out (screenshot $shot)"
