#!/usr/bin/env bash
# A spoofed announcement never peers. The operator of cluster 1 supplied cluster 2's token and
# expected CA hash for autojoin (cliqoctl add --when-discovered). Cluster 2 is down; a spoofer on
# test host 4 announces cluster 2's ID:
#   1. with a wrong CA hash: shown as a Mismatch at once, no join;
#   2. with the right hash copied from a real announcement, but the URL of another cliqo endpoint
#      (cluster 3's): the CA served there does not hash to the expected value: Mismatch, no join,
#      and nothing is stored as a trust anchor.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
setup
start_agents 1 3
json=$(cqn 2 generate-add-command -o json) || fail "generate-add-command on cluster 2 failed"
T2=$(sed -n 's/.*"token": "\(.*\)".*/\1/p' <<<"$json")
H2=$(sed -n 's/.*"caCertHash": "\(.*\)".*/\1/p' <<<"$json")
[ -n "$T2" ] && [ -n "$H2" ] || fail "no token or hash from cluster 2: $json"
out=$(cqn 1 add --id "$ID2" --token "$T2" --ca-cert-hash "$H2" --when-discovered 2>&1) || fail "add --when-discovered failed: $out"
contains() { grep -qF -- "$2" <<<"$1" || fail "'$2' not in: $1"; }
no_ca() { [ -z "$(jgetn 1 '{.data.ca\.crt}' secret -n cliqo "remote-auth-$ID2")" ]; }
not_joined() {
  [ "$(fc_field 1 "$ID2" '{.spec.outgoingPeeringEnabled}')" = Auto ] || fail "the spoofed cluster was joined"
  [ -z "$(fc_field 1 "$ID2" '{.status.peeringConditions}')" ] || fail "the peering with the spoofed cluster started"
  no_ca || fail "a CA from the spoofed announcement was stored"
}

WRONG=sha256:$(printf '%064d' 0)
tool 4 announce --prefix cluster-2 --name cluster-2 --id "$ID2" --url "$(auth_url 3)" --cahash "$WRONG" \
  --ttl "$TTL" --iface eth0 --host spoofer
SPOOF=$LAST_TOOL
wait_for 60 "cluster 1 shows the announced hash as a mismatch" fc_trust_is 1 "$ID2" Mismatch
contains "$(fc_field 1 "$ID2" '{.status.discovery.message}')" "announces $WRONG"
not_joined
stop_tool "$SPOOF" TERM
wait_for 60 "the spoofed ForeignCluster goes with the spoofer's goodbye" fc_gone 1 "$ID2"
say "a wrong announced hash blocks the join"

tool 4 announce --prefix cluster-2 --name cluster-2 --id "$ID2" --url "$(auth_url 3)" --cahash "$H2" \
  --ttl "$TTL" --iface eth0 --host spoofer2
SPOOF=$LAST_TOOL
served_mismatch() { fc_trust_is 1 "$ID2" Mismatch && grep -qF "served at" <<<"$(fc_field 1 "$ID2" '{.status.discovery.message}')"; }
wait_for 60 "cluster 1 finds that the CA served at the announced URL is not the expected one" served_mismatch
not_joined
[ "$(metric 1 cliqo_discovery_events_total 'event="ca-hash-mismatch"')" -ge 2 ] || fail "mismatches not counted"
grep -q 'CA hash mismatch' "$(agent_log 1)" || fail "the agent did not log the mismatch"
stop_tool "$SPOOF" TERM
wait_for 60 "the spoofed ForeignCluster goes" fc_gone 1 "$ID2"
finish
pass "neither a wrong nor a copied CA hash got the spoofer peered"
