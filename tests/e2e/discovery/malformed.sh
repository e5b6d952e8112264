#!/usr/bin/env bash
# Hostile input on the LAN changes nothing. From test host 4: malformed mDNS packets (bad DNS wire
# format: short, lying counts, label overrun, compression loop, bad rdata length, random bytes),
# then well-formed announcements with malformed cliqo records (missing id, bad URL, bad CA hash,
# an instance name that disagrees with its TXT id, an unknown txtvers). The agents count them
# (packets rejected, records ignored by reason) and their ForeignClusters stay exactly as they
# were (same objects, same resourceVersions). Then a flood of distinct announcers beyond
# discoveryConfig.maxClusters: at most that many are followed, the rest is counted.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
cleanup_hook() { kcn 1 patch clusterconfig configuration --type merge -p '{"spec":{"discoveryConfig":{"maxClusters":256}}}' >/dev/null 2>&1; }
setup
start_agents 1 2
wait_for 60 "cluster 1 discovers cluster 2" fc_announced 1 "$ID2"
wait_for 60 "cluster 2 discovers cluster 1" fc_announced 2 "$ID1"
snapshot() { kcn "$1" get foreignclusters -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.resourceVersion} {end}'; }
S1=$(snapshot 1)
S2=$(snapshot 2)
R0=$(metric 1 cliqo_discovery_mdns_packets_rejected_total)

out=$(nsx 4 "$MDNS_TOOL" inject --iface eth0 --kind all --count 20) || fail "inject failed: $out"
rejected() { [ "$(metric 1 cliqo_discovery_mdns_packets_rejected_total)" -gt "$R0" ] &&
  [ "$(metric 2 cliqo_discovery_mdns_packets_rejected_total)" -gt 0 ]; }
wait_for 60 "the agents reject the malformed packets" rejected
say "$(($(metric 1 cliqo_discovery_mdns_packets_rejected_total) - R0)) malformed packets rejected by agent 1"

U=https://$(net_addr 4):19999
tool 4 announce --id badurl --host m1 --ttl 60 --iface eth0 --txt txtvers=1 --txt id=badurl --txt url=http://198.18.77.4:1
tool 4 announce --id noid --host m2 --ttl 60 --iface eth0 --txt txtvers=1 --txt name=noid --txt "url=$U"
tool 4 announce --id badhash --host m3 --ttl 60 --iface eth0 --txt id=badhash --txt "url=$U" --txt cahash=sha256:zz
tool 4 announce --prefix x --id claimed --host m4 --ttl 60 --iface eth0 --txt id=other --txt "url=$U"
tool 4 announce --id v2 --host m5 --ttl 60 --iface eth0 --txt txtvers=2 --txt id=v2 --txt "url=$U"
ignored() { [ "$(metric 1 cliqo_discovery_records_ignored_total "reason=\"$1\"")" -ge 1 ]; }
for reason in bad-url missing-id bad-hash id-mismatch bad-version; do
  wait_for 60 "agent 1 ignores a record: $reason" ignored "$reason"
done
[ "$(snapshot 1)" = "$S1" ] || fail "cluster 1's ForeignClusters changed: before '$S1', after '$(snapshot 1)'"
[ "$(snapshot 2)" = "$S2" ] || fail "cluster 2's ForeignClusters changed: before '$S2', after '$(snapshot 2)'"
agent_ready 1 && agent_ready 2 || fail "an agent is not ready after the hostile input"
for p in "${TOOL_PIDS[@]}"; do stop_tool "$p" TERM; done
say "malformed packets and records changed nothing"

# A flood of distinct announcers: cluster 1 follows at most maxClusters (3, counting cluster 2).
kcn 1 patch clusterconfig configuration --type merge -p '{"spec":{"discoveryConfig":{"maxClusters":3}}}' >/dev/null
tool 4 announce --id flood --name flood --count 8 --url "$U" --ttl 60 --iface eth0 --host flood
FLOOD=$LAST_TOOL
dropped() { [ "$(metric 1 cliqo_discovery_dropped_total)" -ge 1 ]; }
wait_for 90 "agent 1 counts the announcers beyond its limit" dropped
n=$(kcn 1 get foreignclusters -o name | wc -l)
[ "$n" -le 3 ] || fail "cluster 1 follows $n clusters, more than maxClusters=3"
stop_tool "$FLOOD" TERM
kcn 1 patch clusterconfig configuration --type merge -p '{"spec":{"discoveryConfig":{"maxClusters":256}}}' >/dev/null
only_cluster2() { [ "$(kcn 1 get foreignclusters -o name | wc -l)" -eq 1 ] && fc_exists 1 "$ID2"; }
wait_for 90 "the flood's ForeignClusters go with its goodbyes" only_cluster2
finish
pass "rejected, ignored and capped, all counted; nothing changed"
