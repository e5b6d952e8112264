#!/usr/bin/env bash
# acceptPolicy Manual with `cliqoctl accept|refuse`, then the allow and deny lists (new in cliqo): Manual keeps
# what was accepted and makes new arrivals wait for an operator; an operator's decision stands until changed;
# a non-empty allow list refuses everyone else; the deny list wins over everything. Lowering
# maxAcceptableAdvertisement below the number accepted keeps those accepted and refuses a new one until the
# count falls below the new maximum. A's ForeignCluster of each provider shows the decision received.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
cleanup() {
  local rc=$?
  patch_config "$A" '{"spec":{"advertisementConfig":{"ingoingConfig":{"acceptPolicy":"AutoAcceptMax","allowList":null,"denyList":null,"maxAcceptableAdvertisement":null}}}}'
  if [ "$rc" = 0 ] && ! adv_status_is "$P3" Accepted; then cq "$A" accept "$P3" >/dev/null 2>&1 || true; fi
  if [ "$rc" = 0 ] && ! adv_status_is "$P1" Accepted; then cq "$A" accept "$P1" >/dev/null 2>&1 || true; fi
  if [ "$rc" = 0 ]; then wait_all_shared 60; fi
  (exit "$rc")
  adv_on_exit
}
trap cleanup EXIT
ensure_agents
ids
wait_all_shared

say "Manual: the three accepted stay"
patch_config "$A" '{"spec":{"advertisementConfig":{"ingoingConfig":{"acceptPolicy":"Manual"}}}}'
sleep 3
all_shared || fail "switching to Manual dropped an accepted Advertisement"

say "cliqoctl refuse $P3: its virtual node goes, the peering stays"
out=$(cq "$A" refuse "$P3" 2>&1) || fail "refuse failed: $out"
wait_for 30 "$P3 refused by the operator" adv_status_is "$P3" Refused RefusedByOperator
wait_for 30 "$P3's virtual node gone" node_gone "$P3"
peered "$P3" || fail "refusing the Advertisement ended the peering"
[ "$(jget "$P3" '{.status.advertisementReason}' peeringrequest -n "$(jget "$A" '{.status.tenantNamespace.remote}' foreigncluster "$P3")" "$A_ID")" = RefusedByOperator ] ||
  fail "$P3's PeeringRequest does not show the refusal"
received() { jget "$A" '{.status.advertisement.received.status}/{.status.advertisement.received.reason}/{.status.advertisement.received.virtualNode}' foreigncluster "$1"; }
wait_for 10 "$A's ForeignCluster of $P3 shows the refusal received (now: $(received "$P3"))" \
  eval '[ "$(received "$P3")" = Refused/RefusedByOperator/ ]'

say "cliqoctl accept $P3 --wait"
out=$(cq "$A" accept "$P3" --wait --timeout 60s 2>&1) || fail "accept failed: $out"
adv_status_is "$P3" Accepted AcceptedByOperator || fail "$P3 is $(adv_status "$P3") ($(adv_reason "$P3"))"
[ "$(adv_field "$P3" '{.status.decidedBy}')" = Operator ] || fail "decidedBy is not Operator"

say "a new arrival under Manual waits for an operator"
kc "$A" delete advertisement -n "$(tenant_of "$P3")" "$(adv_of "$P3")" --wait=true >/dev/null
wait_for 60 "$P3's Advertisement back, waiting for an operator" adv_status_is "$P3" Refused ManualApprovalRequired
node_gone "$P3" || fail "a virtual node exists for an Advertisement waiting for an operator"
out=$(cq "$A" accept "$P3" --wait --timeout 60s 2>&1) || fail "accept failed: $out"

say "AutoAcceptMax with allowList [$P1]: $P2 refused; $P3, accepted by an operator, stays"
patch_config "$A" "{\"spec\":{\"advertisementConfig\":{\"ingoingConfig\":{\"acceptPolicy\":\"AutoAcceptMax\",\"allowList\":[\"$P1_ID\"]}}}}"
wait_for 30 "$P2 not in the allow list" adv_status_is "$P2" Refused NotInAllowList
wait_for 30 "$P2's virtual node gone" node_gone "$P2"
adv_status_is "$P1" Accepted || fail "$P1 (allowed) is $(adv_status "$P1")"
adv_status_is "$P3" Accepted AcceptedByOperator || fail "$P3 (operator's decision) is $(adv_status "$P3") ($(adv_reason "$P3"))"

say "denyList [$P1] wins over the allow list"
patch_config "$A" "{\"spec\":{\"advertisementConfig\":{\"ingoingConfig\":{\"denyList\":[\"$P1_ID\"]}}}}"
wait_for 30 "$P1 denied" adv_status_is "$P1" Refused DeniedByPolicy
wait_for 30 "$P1's virtual node gone" node_gone "$P1"

say "lists cleared: $P1 and $P2 accepted again"
patch_config "$A" '{"spec":{"advertisementConfig":{"ingoingConfig":{"allowList":null,"denyList":null}}}}'
wait_all_shared 60
wait_for 10 "$A's ForeignCluster of $P3 shows the acceptance received (now: $(received "$P3"))" \
  eval '[ "$(received "$P3")" = "Accepted/AcceptedByOperator/$(vnode_of "$P3")" ]'

say "maxAcceptableAdvertisement lowered to 2 with 3 accepted: the 3 stay"
patch_config "$A" '{"spec":{"advertisementConfig":{"ingoingConfig":{"maxAcceptableAdvertisement":2}}}}'
sleep 3
all_shared || fail "lowering the maximum dropped an accepted Advertisement"
say "$P2's Advertisement arrives again (deleted here): refused, 2 others are accepted"
kc "$A" delete advertisement -n "$(tenant_of "$P2")" "$(adv_of "$P2")" --wait=true >/dev/null
wait_for 60 "$P2's Advertisement back and refused, MaxAcceptableReached (now: $(adv_status "$P2")/$(adv_reason "$P2"))" \
  adv_status_is "$P2" Refused MaxAcceptableReached
node_gone "$P2" || fail "a virtual node exists for $P2 over the maximum"
say "cliqoctl refuse $P1: one accepted left, below the maximum: $P2 is accepted"
out=$(cq "$A" refuse "$P1" 2>&1) || fail "refuse $P1 failed: $out"
wait_for 30 "$P2 accepted once the count fell below 2 (now: $(adv_status "$P2")/$(adv_reason "$P2"))" \
  adv_status_is "$P2" Accepted AcceptedByPolicy
adv_status_is "$P1" Refused RefusedByOperator || fail "$P1 is $(adv_status "$P1") ($(adv_reason "$P1"))"
adv_status_is "$P3" Accepted || fail "$P3 is $(adv_status "$P3")"
say "the maximum back to its default; $P1 accepted again by the operator"
patch_config "$A" '{"spec":{"advertisementConfig":{"ingoingConfig":{"maxAcceptableAdvertisement":null}}}}'
out=$(cq "$A" accept "$P1" --wait --timeout 60s 2>&1) || fail "accept $P1 failed: $out"
wait_all_shared 60
pass "Manual with accept/refuse, allow list, deny list, a lowered maximum"
