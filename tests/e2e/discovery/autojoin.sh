#!/usr/bin/env bash
# Trust and join policy with real peerings between test hosts.
#   - Cluster 1's operator supplies cluster 2's token and expected CA hash ahead of time
#     (cliqoctl add --id --when-discovered); when cluster 2 is discovered, cluster 1 pins its CA to
#     that hash and peers by itself (autojoin): OutgoingPeering Established, trust Trusted, and
#     cluster 2 records the incoming peering on the ForeignCluster it discovered.
#   - Cluster 3 is only discovered (no credentials): `cliqoctl add <cluster> --token --ca-cert-hash`
#     takes URL and ID from discovery; a hash that differs from the announced one is refused
#     before anything is written.
#   - A peered cluster that vanishes is kept (announced false): the peering decides.
#   - Unpeering removes the credentials with the ForeignCluster: no automatic re-join.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
setup
start_agents 1 2
creds() { # I -> TOKEN and HASH of cluster I
  local json
  json=$(cqn "$1" generate-add-command -o json) || fail "generate-add-command on cluster $1 failed"
  TOKEN=$(sed -n 's/.*"token": "\(.*\)".*/\1/p' <<<"$json")
  HASH=$(sed -n 's/.*"caCertHash": "\(.*\)".*/\1/p' <<<"$json")
}
cond() { jgetn "$1" "{.status.peeringConditions[?(@.type==\"$3\")].status}" foreigncluster "$2"; }
cond_is() { [ "$(cond "$1" "$2" "$3")" = "$4" ]; }

creds 2
out=$(cqn 1 add --id "$ID2" --token "$TOKEN" --ca-cert-hash "$HASH" --when-discovered 2>&1) || fail "add --when-discovered: $out"
wait_for 120 "cluster 1 joins the discovered cluster 2 by itself" cond_is 1 "$ID2" OutgoingPeering Established
fc_trust_is 1 "$ID2" Trusted || fail "the autojoined cluster is not Trusted"
[ "$(fc_field 1 "$ID2" '{.metadata.labels.discovery\.liqo\.io/discovery-type}')" = LAN ] || fail "the label changed"
[ -n "$(jgetn 1 '{.data.ca\.crt}' secret -n cliqo "remote-auth-$ID2")" ] || fail "the pinned CA was not stored"
wait_for 60 "cluster 2 records the incoming peering on its discovered ForeignCluster" cond_is 2 "$ID1" IncomingPeering Established
grep -q "joining cluster $ID2" "$(agent_log 1)" || fail "the agent did not log the autojoin"
say "autojoin with operator-supplied credentials: peered"

start_agents 3
wait_for 60 "cluster 1 discovers cluster 3" fc_announced 1 "$ID3"
creds 3
BAD=sha256:$(printf '%064d' 1)
out=$(cqn 1 add "$ID3" --token "$TOKEN" --ca-cert-hash "$BAD" --timeout 30s 2>&1) && fail "add with a hash that differs from the announced one succeeded"
grep -q "announces CA hash $HASH, not --ca-cert-hash" <<<"$out" || fail "unexpected refusal: $out"
[ -z "$(kcn 1 get secret -n cliqo "remote-auth-$ID3" -o name 2>/dev/null)" ] || fail "a refused add wrote credentials"
out=$(cqn 1 add "$ID3" --token "$TOKEN" --ca-cert-hash "$HASH" --timeout 90s 2>&1) || fail "add of the discovered cluster 3 failed: $out"
grep -q "^peered with $ID3" <<<"$out" || fail "no 'peered with' line: $out"
[ "$(fc_field 1 "$ID3" '{.metadata.labels.discovery\.liqo\.io/discovery-type}')" = LAN ] || fail "add relabelled the discovered cluster"
say "add of a discovered cluster: URL and ID from discovery, hash checked"

stop_agent 3 KILL
not_announced() { [ "$(fc_field 1 "$ID3" '{.status.discovery.announced}')" = false ]; }
wait_for 90 "the vanished, peered cluster 3 is kept and shown as not announced" not_announced
fc_exists 1 "$ID3" || fail "a peered cluster was deleted when its announcements stopped"

out=$(cqn 1 unpeer "$ID3" --timeout 90s 2>&1) || fail "unpeer of cluster 3 failed: $out"
out=$(cqn 1 unpeer "$ID2" --timeout 90s 2>&1) || fail "unpeer of cluster 2 failed: $out"
# Cluster 2 is still announced: it comes back as a discovered cluster, without credentials.
wait_for 60 "cluster 2 is rediscovered" fc_announced 1 "$ID2"
wait_for 60 "without credentials after the unpeer" fc_trust_is 1 "$ID2" NoCredentials
[ "$(fc_field 1 "$ID2" '{.spec.outgoingPeeringEnabled}')" = Auto ] || fail "the unpeered cluster was joined again"
finish
pass "autojoin needs the operator's credentials; add takes discovered clusters; peered ones are kept"
