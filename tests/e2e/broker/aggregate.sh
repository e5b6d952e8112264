#!/usr/bin/env bash
# The aggregator (docs/broker.md, "Aggregator"): what K advertises to C equals the per-resource sum of the
# selected providers' offers to K (read back independently, tests/e2e/broker/qsum.py), follows a change of one
# provider's offer within a second of K receiving it, and drops a provider that is disabled.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
QSUM="$(dirname "$0")/qsum.py"
cleanup() {
  patch_config "$P1" '{"spec":{"advertisementConfig":{"outgoingConfig":{"resourceSharingPercentage":null}}}}'
  toggle "$P2_ID" true
}
trap 'rc=$?; cleanup >/dev/null 2>&1 || true; (exit $rc); brk_on_exit' EXIT
ensure_agents
ensure_broker
ids
wait_all_shared 60

sums_equal() { # PROVIDER...: C's Advertisement from K is the sum of K's Advertisements from them
  local want got args=()
  for p in "$@"; do args+=("$(adv_hard "$K" "$p")"); done
  want=$("$QSUM" "${args[@]}") || return 1
  got=$("$QSUM" "$(adv_hard "$C" "$K")") || return 1
  [ "$want" = "$got" ]
}
show() { echo "C has $("$QSUM" "$(adv_hard "$C" "$K")"); P1 $("$QSUM" "$(adv_hard "$K" "$P1")"), P2 $("$QSUM" "$(adv_hard "$K" "$P2")")"; }

say "C's offer from K is P1's plus P2's"
wait_for 30 "C's Advertisement from K = P1 + P2 ($(show))" sums_equal "$P1" "$P2"
cm=$(kget "$K" configmap -n cliqo "cliqo-broker-offer-$C_ID")
[ "$(jq -r '.metadata.labels["cliqo.io/broker-offer"]' <<<"$cm")" = true ] || fail "the offer ConfigMap lacks its label"
jq -e '.data.resources | fromjson | all(.[]; type == "string")' <<<"$cm" >/dev/null ||
  fail "the offer ConfigMap's quantities are not bare strings: $(jq -c .data <<<"$cm")"

say "P1 offers more (60 % instead of the default 30 %): C's offer follows; the lag is timed by watches"
# watch CLUSTER NS NAME FILE: each version of that Advertisement's amounts, with the time it arrived.
WATCHERS=()
watch_adv() {
  "$KUBECTL" --kubeconfig "$E2E_STATE/$1/kubeconfig" get advertisement -n "$2" "$3" -o json --watch |
    jq --unbuffered -c '.spec.resourceQuota.hard' |
    while read -r l; do echo "$(date +%s.%N) $l"; done >"$4" &
  WATCHERS+=($!)
}
wdir=$(mktemp -d)
watch_adv "$K" "$(jget "$K" '{.status.tenantNamespace.local}' foreigncluster "$P1")" "advertisement-$P1_ID" "$wdir/k"
watch_adv "$C" "$(jget "$C" '{.status.tenantNamespace.local}' foreigncluster "$K")" "advertisement-$K_ID" "$wdir/c"
wait_for 10 "the watches report the current versions" eval "[ -s $wdir/k ] && [ -s $wdir/c ]"
before=$(adv_hard "$K" "$P1")
patch_config "$P1" '{"spec":{"advertisementConfig":{"outgoingConfig":{"resourceSharingPercentage":60}}}}'
wait_for 30 "K receives P1's new offer" eval "[ \"\$(adv_hard $K $P1)\" != '$before' ]"
wait_for 10 "C's offer = P1 (60 %) + P2 ($(show))" sums_equal "$P1" "$P2"
want=$(adv_hard "$C" "$K")
wait_for 5 "the watch on C saw it" eval "grep -qF '$want' $wdir/c"
kill "${WATCHERS[@]}" 2>/dev/null || true
tk=$(grep -vF "$before" "$wdir/k" | head -1 | cut -d' ' -f1)
tc=$(grep -F "$want" "$wdir/c" | head -1 | cut -d' ' -f1)
lag=$(awk -v s="$tk" -v e="$tc" 'BEGIN { printf "%.3f", e - s }')
rm -rf "$wdir"
echo "FIGURE provider-offer-at-broker-to-consumer-seconds=$lag"
awk -v l="$lag" 'BEGIN { exit !(l < 5) }' || fail "the aggregated offer took ${lag}s to follow"

say "P2 disabled: C's offer is P1's alone"
toggle "$P2_ID" false
wait_for 20 "C's offer = P1 ($(show))" sums_equal "$P1"
pass "aggregated offer = sum of the selected providers' offers; followed a change in ${lag}s (K receiving it to C receiving the sum)"
