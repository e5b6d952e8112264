#!/usr/bin/env bash
# Token rotation and unpeering by policy: B rotates its shared peering token (generate-add-command
# --rotate-token --shared-token), which also revokes the unused single-use token of the old printed command:
# that command is then refused and changes nothing, the new one peers.
# Then `cliqoctl unpeer --keep` sets outgoingPeeringEnabled to "No": the peering is undone on both
# sides while A keeps its ForeignCluster; setting it back to "Yes" peers again.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
setup

add_command
old_cmd=("${ADD_CMD[@]}")
old_token=$(add_flag --token)

say "rotate B's token"
line=$(cq "$B" generate-add-command --rotate-token --shared-token) || fail "generate-add-command --rotate-token failed"
read -r -a ADD_CMD <<<"$line"
ADD_CMD=("${ADD_CMD[@]:1}")
new_token=$(add_flag --token)
[ "$new_token" != "$old_token" ] || fail "the token did not change"
stored=$(kc "$B" -n cliqo get secret auth-token -o jsonpath='{.data.token}' | base64 -d)
[ "$stored" = "$new_token" ] || fail "the auth-token Secret does not hold the new token"
wait_for 30 "B's agent notices the rotation" grep -q "peering token rotated" "$(agent_log "$B")"

say "the old command is refused and leaves nothing behind"
run_add "$PEER_TMP/old.out" "$PEER_TMP/old.err" "${old_cmd[@]}" --timeout 60s
[ "$ADD_RC" -ne 0 ] || fail "add with the rotated-out token succeeded"
contains "the refusal names the token" "$(cat "$PEER_TMP/old.err")" "token is not valid"
assert_no_peering_objects "$A"
assert_no_peering_objects "$B"

say "the new command peers"
peer
wait_for 30 "B admits A" fc_condition_is "$B" "$A" IncomingPeering Established

say "unpeer --keep: outgoingPeeringEnabled No undoes the peering, the ForeignCluster stays"
out=$(cq "$A" unpeer "$B" --keep --timeout 60s 2>&1) || fail "unpeer --keep failed: $out"
[ "$(jget "$A" '{.spec.outgoingPeeringEnabled}' foreigncluster "$B")" = No ] || fail "outgoingPeeringEnabled is not No"
fc_condition_is "$A" "$B" OutgoingPeering None || fail "OutgoingPeering is not None after unpeer --keep"
wait_for 60 "B forgets A" no_peering_objects "$B"
[ -z "$(jpath "$A" '{.metadata.finalizers}' foreigncluster "$B")" ] ||
  fail "the finalizer is still on the kept ForeignCluster"
[ -z "$(kc "$A" -n cliqo get secret -o name | grep remote-identity || true)" ] ||
  fail "the remote identity is still on A"

say "outgoingPeeringEnabled Yes again peers again"
kc "$A" patch foreigncluster "$B" --type merge -p '{"spec":{"outgoingPeeringEnabled":"Yes"}}' >/dev/null
wait_for 60 "peered again" fc_condition_is "$A" "$B" OutgoingPeering Established
wait_for 30 "B admits A again" fc_condition_is "$B" "$A" IncomingPeering Established

unpeer_all
finish
pass "rotation refuses the old token; unpeer --keep undoes and Yes redoes the peering"
