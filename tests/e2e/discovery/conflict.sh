#!/usr/bin/env bash
# Name conflicts. A squatter on test host 4 announces the very instance name cluster 2 will use
# (same name and ID, another URL) before cluster 2's agent starts: the agent loses the probe,
# renames its instance "<name>_<id> #2" (the ID kept whole) and announces it. Cluster 1 then sees
# two announcements of one cluster ID that disagree: trust Conflict, no change of the
# ForeignCluster's URL, no join. When the squatter leaves (goodbye), cluster 1 follows the real
# announcement under its new name.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
setup
start_agents 1

tool 4 announce --prefix cluster-2 --name cluster-2 --id "$ID2" --url "https://$(net_addr 4):19999" \
  --ttl "$TTL" --iface eth0 --host squatter
SQUATTER=$LAST_TOOL
SQUATTER_OUT=$LAST_TOOL_OUT
wait_for 60 "the squatter announces cluster-2_$ID2" grep -q "^established cluster-2_$ID2\$" "$SQUATTER_OUT"

start_agents 2
wait_for 60 "agent 2 renames its instance after losing the probe" \
  grep -q "renamed to 'cluster-2_$ID2 #2'" "$(agent_log 2)"
announced2() { [ "$(metric 2 cliqo_discovery_announcement 'state="established"')" = 1 ]; }
wait_for 60 "agent 2 announces under the new name" announced2

wait_for 60 "cluster 1 sees the conflicting announcements" fc_trust_is 1 "$ID2" Conflict
contains() { grep -qF -- "$2" <<<"$1" || fail "'$2' not in: $1"; }
contains "$(fc_field 1 "$ID2" '{.status.discovery.message}')" "several announcements claim cluster ID"
[ "$(fc_field 1 "$ID2" '{.spec.outgoingPeeringEnabled}')" = Auto ] || fail "a conflict changed the join"

stop_tool "$SQUATTER" TERM
follows_real() {
  [ "$(fc_field 1 "$ID2" '{.spec.foreignAuthUrl}')" = "$(auth_url 2)" ] &&
    [ "$(fc_field 1 "$ID2" '{.status.discovery.instance}')" = "cluster-2_$ID2 #2" ] &&
    fc_trust_is 1 "$ID2" NoCredentials
}
wait_for 60 "cluster 1 follows the real cluster 2 once the squatter left" follows_real
finish
pass "the agent renamed itself, and the conflict blocked trust until it was resolved"
