#!/usr/bin/env bash
# LAN discovery between three clusters on three test hosts: each agent announces its cluster over
# mDNS and finds the two others (ForeignClusters labelled LAN, status.discovery with the announced
# auth URL, TTL, trust NoCredentials), never itself; `cliqoctl discovered` and `cliqoctl status`
# list them. An agent stopped with SIGTERM sends goodbye packets: its ForeignClusters go at once;
# one killed with SIGKILL goes silent: its ForeignClusters go when the TTL runs out. A change of the
# configuration re-announces: the peers follow on the same ForeignCluster.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
setup
start_agents 1 2 3

declare -A ID=([1]=$ID1 [2]=$ID2 [3]=$ID3) CAH=()
for j in 1 2 3; do
  CAH[$j]=$(cqn "$j" generate-add-command -o json | sed -n 's/.*"caCertHash": "\(.*\)".*/\1/p')
  [ -n "${CAH[$j]}" ] || fail "no CA hash in cluster $j's add command"
done
for i in 1 2 3; do
  for j in 1 2 3; do
    [ "$i" = "$j" ] || wait_for 60 "cluster $i discovers cluster $j" fc_announced "$i" "${ID[$j]}"
  done
done
# Every field of every ForeignCluster from one read of each cluster's list (kubectl's start-up is the
# dearest part of a check on a busy machine, and these are six objects of ten fields).
for i in 1 2 3; do
  list=$(kcn "$i" get foreignclusters -o json) || fail "cannot list the ForeignClusters of cluster $i"
  n=$(jq '.items | length' <<<"$list")
  [ "$n" -eq 2 ] || fail "cluster $i has $n ForeignClusters, want 2"
  for j in 1 2 3; do
    fc=$(jq -c --arg n "${ID[$j]}" '.items[] | select(.metadata.name == $n)' <<<"$list")
    if [ "$i" = "$j" ]; then
      [ -z "$fc" ] || fail "cluster $i discovered itself"
      continue
    fi
    [ -n "$fc" ] || fail "cluster $i has no ForeignCluster ${ID[$j]}"
    # The seven fields in one jq run, split on the unit separator (not whitespace: a field may be empty).
    IFS=$'\x1f' read -r type url name ttl hash trust outgoing < <(jq -r '[.metadata.labels["discovery.liqo.io/discovery-type"],
      .spec.foreignAuthUrl, .spec.clusterIdentity.clusterName, .status.discovery.ttlSeconds,
      .status.discovery.caCertHash, .status.discovery.trust, .spec.outgoingPeeringEnabled]
      | map(. // "" | tostring) | join("\u001f")' <<<"$fc")
    [ "$type" = LAN ] || fail "ForeignCluster ${ID[$j]} on cluster $i is not labelled LAN"
    [ "$url" = "$(auth_url "$j")" ] ||
      fail "ForeignCluster ${ID[$j]} on cluster $i: foreignAuthUrl $url, want $(auth_url "$j")"
    [ "$name" = "cluster-$j" ] || fail "ForeignCluster ${ID[$j]} on cluster $i has not the announced name cluster-$j"
    [ "$ttl" = "$TTL" ] || fail "no TTL in status"
    [ "$hash" = "${CAH[$j]}" ] || fail "ForeignCluster ${ID[$j]} on cluster $i does not show the announced CA hash"
    [ "$trust" = NoCredentials ] || fail "a cluster without credentials is not NoCredentials"
    [ "$outgoing" = Auto ] || fail "discovery changed outgoingPeeringEnabled"
  done
done
say "every cluster discovered the two others"

out=$(cqn 1 discovered) || fail "cliqoctl discovered failed"
for j in 2 3; do
  grep -q "^${ID[$j]} .*cluster-$j .*LAN .*$(auth_url "$j") .*yes .*NoCredentials" <<<"$out" ||
    fail "cliqoctl discovered does not list cluster $j as found on the LAN: $out"
done
out=$(cqn 1 status) || fail "cliqoctl status failed"
grep -q '^discovered:' <<<"$out" && grep -q "${ID[2]} .*LAN" <<<"$out" || fail "cliqoctl status shows no discovered clusters: $out"
cqn 1 discovered -o json | grep_q "\"trust\": \"NoCredentials\"" || fail "cliqoctl discovered -o json lacks trust"

# Re-announcement on a configuration change: cluster 1 renames itself; cluster 2 follows the new
# instance and name on the same ForeignCluster (the new name is up before the old one says goodbye).
uid=$(fc_field 2 "$ID1" '{.metadata.uid}')
kcn 1 patch clusterconfig configuration --type merge -p '{"spec":{"discoveryConfig":{"clusterName":"renamed-1"}}}' >/dev/null ||
  fail "cannot rename cluster 1"
renamed() {
  [ "$(fc_field 2 "$ID1" '{.status.discovery.instance}')" = "renamed-1_$ID1" ] &&
    [ "$(fc_field 2 "$ID1" '{.spec.clusterIdentity.clusterName}')" = renamed-1 ]
}
wait_for 60 "cluster 2 follows cluster 1's new announcement" renamed
[ "$(fc_field 2 "$ID1" '{.metadata.uid}')" = "$uid" ] || fail "the rename recreated the ForeignCluster"
kcn 1 patch clusterconfig configuration --type merge -p '{"spec":{"discoveryConfig":{"clusterName":null}}}' >/dev/null

# Goodbye: SIGTERM on agent 3 withdraws its announcement; clusters 1 and 2 drop it.
stop_agent 3 TERM
for i in 1 2; do wait_for 60 "cluster $i removes cluster 3 after its goodbye" fc_gone "$i" "$ID3"; done
[ "$(metric 1 cliqo_discovery_events_total 'event="lan-removed"')" -ge 1 ] || fail "no lan-removed event counted"
# Silence: SIGKILL on agent 2 sends nothing; its records expire after the TTL.
stop_agent 2 KILL
wait_for 90 "cluster 1 removes cluster 2 when its TTL runs out" fc_gone 1 "$ID2"
fc_exists 1 "$ID3" && fail "cluster 3 came back"
[ "$(metric 1 cliqo_discovery_events_total 'event="fc-deleted"')" -ge 2 ] || fail "deletions not counted"
finish
pass "discovered on the LAN, goodbye and TTL expiry both remove"
