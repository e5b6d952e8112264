#!/usr/bin/env bash
# AutoAcceptMax with an exact count: maximum 1 then 2 across the three providers, and a slot freed by a
# deletion (a provider that stops sharing withdraws its Advertisement) taken by the one waiting. The
# original design never decremented its counter; here the count is recomputed from the Advertisements.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
FREED=
cleanup() {
  local rc=$?
  [ -n "$FREED" ] && patch_config "$FREED" '{"spec":{"advertisementConfig":{"outgoingConfig":{"enableBroadcaster":true}}}}'
  patch_config "$A" '{"spec":{"advertisementConfig":{"ingoingConfig":{"maxAcceptableAdvertisement":5,"denyList":null}}}}'
  if [ "$rc" = 0 ]; then wait_all_shared 60; fi
  (exit "$rc")
  adv_on_exit
}
trap cleanup EXIT
ensure_agents
ids
wait_all_shared

count() { # STATUS [REASON]: how many of the three are in that state
  local p n=0
  for p in "${PROVIDERS[@]}"; do adv_status_is "$p" "$1" "${2:-}" && n=$((n + 1)); done
  echo "$n"
}
ready_nodes() {
  local p n=0
  for p in "${PROVIDERS[@]}"; do node_is "$p" True && n=$((n + 1)); done
  echo "$n"
}
state() { echo "accepted=$(count Accepted) refused-max=$(count Refused MaxAcceptableReached) ready-nodes=$(ready_nodes)"; }

say "start from no acceptance: all three denied"
patch_config "$A" "{\"spec\":{\"advertisementConfig\":{\"ingoingConfig\":{\"denyList\":[\"$P1_ID\",\"$P2_ID\",\"$P3_ID\"]}}}}"
wait_for 60 "all three refused and their virtual nodes gone" eval \
  '[ "$(count Refused DeniedByPolicy)" = 3 ] && node_gone "$P1" && node_gone "$P2" && node_gone "$P3"'

say "maximum 1: exactly one accepted"
patch_config "$A" '{"spec":{"advertisementConfig":{"ingoingConfig":{"maxAcceptableAdvertisement":1,"denyList":null}}}}'
wait_for 60 "one accepted, two refused at the maximum ($(state))" eval \
  '[ "$(state)" = "accepted=1 refused-max=2 ready-nodes=1" ]'
sleep 2
[ "$(state)" = "accepted=1 refused-max=2 ready-nodes=1" ] || fail "not stable at maximum 1: $(state)"

say "maximum 2: one more"
patch_config "$A" '{"spec":{"advertisementConfig":{"ingoingConfig":{"maxAcceptableAdvertisement":2}}}}'
wait_for 60 "two accepted ($(state))" eval '[ "$(state)" = "accepted=2 refused-max=1 ready-nodes=2" ]'
for p in "${PROVIDERS[@]}"; do
  if adv_status_is "$p" Refused; then WAITING=$p; elif [ -z "$FREED" ]; then FREED=$p; fi
done
kc "$A" get events -n "$(tenant_of "$WAITING")" --field-selector reason=AdvertisementRefused -o name | grep_q . ||
  fail "no AdvertisementRefused Event for $WAITING"

say "a slot freed: $FREED stops sharing (its Advertisement is withdrawn); $WAITING takes the slot"
patch_config "$FREED" '{"spec":{"advertisementConfig":{"outgoingConfig":{"enableBroadcaster":false}}}}'
wait_for 60 "the Advertisement of $FREED withdrawn" eval '[ -z "$(adv_status "$FREED")" ] && node_gone "$FREED"'
wait_for 30 "$WAITING accepted in the freed slot" adv_status_is "$WAITING" Accepted AcceptedByPolicy
wait_for 30 "$WAITING's virtual node Ready" node_is "$WAITING" True
[ "$(jget "$FREED" '{.status.advertisement.sent.status}' foreigncluster "$A")" = Withdrawn ] ||
  fail "$FREED's ForeignCluster of $A does not say Withdrawn"
if kc "$FREED" get serviceaccount -n "$(jget "$A" '{.status.tenantNamespace.remote}' foreigncluster "$FREED")" "vk-$A_ID" >/dev/null 2>&1; then
  fail "$FREED did not revoke the virtual kubelet's credential"
fi

say "$FREED shares again: it arrives when two are accepted, and waits"
patch_config "$FREED" '{"spec":{"advertisementConfig":{"outgoingConfig":{"enableBroadcaster":true}}}}'
wait_for 60 "$FREED refused at the maximum" adv_status_is "$FREED" Refused MaxAcceptableReached
FREED=
[ "$(state)" = "accepted=2 refused-max=1 ready-nodes=2" ] || fail "after the return: $(state)"
pass "maximum 1, then 2, and a freed slot taken by the waiting Advertisement"
