#!/usr/bin/env bash
# Peering A -> B with the command B prints, end to end: every object of docs/peering.md on both clusters
# (conditions, labels, names, the PeeringRequest's phase, tenant namespaces, credentials), cliqoctl status
# on both sides, the time from add to Established and the agents' idle memory; then unpeer and nothing is
# left on either cluster.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
setup

say "peer $A -> $B with the printed add command"
start=$(date +%s.%N)
peer
wall=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
say "add printed: $(grep '^peered with' "$PEER_TMP/add.out")"
contains "add names the peer" "$(cat "$PEER_TMP/add.out")" "peered with $B ($B_ID)"
echo "FIGURE add-to-established-seconds=$ADD_SECONDS"
say "wall time of the add command: ${wall}s"

tenant_name() { # PEER-NAME PEER-ID
  echo "cliqo-tenant-$1-$(printf '%s' "$2" | sha256sum | cut -c1-6)"
}
A_NS=$(tenant_name "$B" "$B_ID") # B's tenant namespace on A
B_NS=$(tenant_name "$A" "$A_ID") # A's tenant namespace on B

say "objects on $A"
kget "$A" foreigncluster "$B" >"$PEER_TMP/fc-a.json"
python3 - "$PEER_TMP/fc-a.json" "$B_ID" "$A_NS" "$B_NS" "$(auth_url "$B")" <<'PY' || fail "ForeignCluster $B on $A is wrong"
import json, sys
fc, bid, a_ns, b_ns, url = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
m, s, st = fc["metadata"], fc["spec"], fc["status"]
assert "cliqo.io/peering" in m.get("finalizers", []), m
assert m["labels"]["discovery.liqo.io/cluster-id"] == bid, m["labels"]
assert m["labels"]["discovery.liqo.io/discovery-type"] == "Manual", m["labels"]
assert s["clusterIdentity"]["clusterID"] == bid, s
assert s["outgoingPeeringEnabled"] == "Yes" and s["foreignAuthUrl"] == url, s
conds = {c["type"]: c for c in st["peeringConditions"]}
assert conds["AuthenticationStatus"]["status"] == "Established", conds
assert conds["OutgoingPeering"]["status"] == "Established", conds
for c in conds.values():
    assert c.get("lastTransitionTime"), c
assert st["tenantNamespace"] == {"local": a_ns, "remote": b_ns}, st["tenantNamespace"]
PY
kget "$A" secret -n cliqo "remote-auth-$B_ID" >"$PEER_TMP/auth.json" || fail "no remote-auth-$B_ID on $A"
kget "$A" secret -n cliqo "remote-identity-$B_ID" >"$PEER_TMP/ident.json" || fail "no remote-identity-$B_ID on $A"
python3 - "$PEER_TMP/auth.json" "$PEER_TMP/ident.json" "$B_ID" "$B_NS" "$(base_port "$B")" <<'PY' || fail "Secrets of $A are wrong"
import base64, json, sys
auth, ident, bid, b_ns, b_port = (json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3],
                                   sys.argv[4], sys.argv[5])
d = lambda s, k: base64.b64decode(s["data"][k]).decode()
assert len(d(auth, "token")) == 64 and "BEGIN CERTIFICATE" in d(auth, "ca.crt"), auth["data"].keys()
assert auth["metadata"]["labels"]["discovery.liqo.io/cluster-id"] == bid
assert auth["metadata"]["labels"]["discovery.liqo.io/auth-token"] == "true"
assert ident["metadata"]["labels"]["discovery.liqo.io/remote-identity"] == "true", ident["metadata"]
assert d(ident, "namespace") == b_ns, d(ident, "namespace")
kc = json.loads(d(ident, "kubeconfig"))
assert kc["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:" + b_port, kc["clusters"]
assert kc["users"][0]["user"]["token"], "no token in the credential"
PY

check_tenant() { # CLUSTER NS PEER-ID: the tenant namespace, its ServiceAccount, RoleBindings and token
  local c=$1 ns=$2 id=$3
  [ "$(jget "$c" '{.metadata.labels.discovery\.liqo\.io/cluster-id}' namespace "$ns")" = "$id" ] ||
    fail "tenant namespace $ns on $c: no cluster-id label $id"
  [ "$(jget "$c" '{.metadata.labels.discovery\.liqo\.io/tenant-namespace}' namespace "$ns")" = true ] ||
    fail "tenant namespace $ns on $c: no tenant-namespace label"
  [ "$(kc "$c" get namespaces -l discovery.liqo.io/tenant-namespace=true -o name)" = "namespace/$ns" ] ||
    fail "$c: tenant namespaces are not exactly $ns"
  kc "$c" get serviceaccount -n "$ns" "remote-$id" >/dev/null || fail "no ServiceAccount remote-$id in $ns on $c"
  [ "$(jget "$c" '{.roleRef.name}' rolebinding -n "$ns" cliqo-remote-peering)" = cliqo-remote-peering ] ||
    fail "no RoleBinding cliqo-remote-peering in $ns on $c"
  [ "$(jget "$c" '{.subjects[0].name}' rolebinding -n "$ns" cliqo-remote-peering)" = "remote-$id" ] ||
    fail "RoleBinding cliqo-remote-peering in $ns on $c is not for remote-$id"
  kc "$c" get rolebinding -n "$ns" cliqo-agent >/dev/null || fail "no RoleBinding cliqo-agent in $ns on $c"
  [ "$(jget "$c" '{.type}' secret -n "$ns" "remote-$id-token")" = kubernetes.io/service-account-token ] ||
    fail "no token Secret remote-$id-token in $ns on $c"
}
check_tenant "$A" "$A_NS" "$B_ID"

say "objects on $B"
check_tenant "$B" "$B_NS" "$A_ID"
jpath "$B" '{.data.kubeconfig}' secret -n "$B_NS" "pr-$A_ID" | base64 -d >"$PEER_TMP/pr.kubeconfig" ||
  fail "no Secret pr-$A_ID in $B_NS on $B"
[ "$(jq -r '.clusters[0].cluster.server' "$PEER_TMP/pr.kubeconfig")" = "https://127.0.0.1:$(base_port "$A")" ] ||
  fail "the credential in pr-$A_ID does not point at $A"
kget "$B" peeringrequests --all-namespaces >"$PEER_TMP/prs.json"
python3 - "$PEER_TMP/prs.json" "$A_ID" "$B_NS" "$A_NS" "$(auth_url "$A")" <<'PY' || fail "PeeringRequest on $B is wrong"
import json, sys
items, aid, b_ns, a_ns, url = json.load(open(sys.argv[1]))["items"], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
assert len(items) == 1, [i["metadata"]["name"] for i in items]
pr = items[0]
assert pr["metadata"]["name"] == aid and pr["metadata"]["namespace"] == b_ns, pr["metadata"]
s = pr["spec"]
assert s["clusterIdentity"]["clusterID"] == aid and s["clusterIdentity"]["clusterName"] == "cluster-1", s
assert s["namespace"] == a_ns and s["authUrl"] == url, s
assert s["kubeConfigRef"] == {"name": "pr-" + aid, "namespace": b_ns}, s
assert pr["status"]["phase"] == "Accepted", pr["status"]
PY
kget "$B" foreigncluster "$A" >"$PEER_TMP/fc-b.json" || fail "no ForeignCluster $A on $B"
python3 - "$PEER_TMP/fc-b.json" "$A_ID" "$B_NS" <<'PY' || fail "ForeignCluster $A on $B is wrong"
import json, sys
fc, aid, b_ns = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
l = fc["metadata"]["labels"]
assert l["discovery.liqo.io/cluster-id"] == aid and l["discovery.liqo.io/discovery-type"] == "IncomingPeering", l
conds = {c["type"]: c["status"] for c in fc["status"]["peeringConditions"]}
assert conds["IncomingPeering"] == "Established", conds
assert conds.get("OutgoingPeering", "None") == "None", conds
assert fc["status"]["tenantNamespace"]["local"] == b_ns, fc["status"]
PY

say "cliqoctl status on both sides"
sa=$(cq "$A" status -o json) || fail "status on $A failed"
sb=$(cq "$B" status -o json) || fail "status on $B failed"
python3 - "$sa" "$sb" "$A_NS" "$B_NS" <<'PY' || fail "status is wrong"
import json, sys
a, b, a_ns, b_ns = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
[fa] = a["foreignClusters"]
assert fa["name"] == "cluster-2" and fa["outgoing"] == "Established" and fa["authentication"] == "Established", fa
assert fa["incoming"] == "None" and fa["tenantNamespace"] == a_ns, fa
[fb] = b["foreignClusters"]
assert fb["name"] == "cluster-1" and fb["incoming"] == "Established" and fb["outgoing"] == "None", fb
assert fb["tenantNamespace"] == b_ns, fb
PY
row=$(cq "$A" status | awk -v n="$B" '$1 == n { print; exit }') # the peers' table (a sharing table follows)
[ "$(awk '{ print $3, $4, $5 }' <<<"$row")" = "Established None Established" ] || fail "status table on $A: $row"
row=$(cq "$B" status | awk -v n="$A" '$1 == n { print; exit }')
[ "$(awk '{ print $3, $4 }' <<<"$row")" = "None Established" ] || fail "status table on $B: $row"

say "idle memory of the agents"
sleep 2
build=release
agent_is_asan && build=asan
for c in "$A" "$B"; do
  rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/${AGENT_PID[$c]}/status")
  echo "FIGURE agent-rss-kib=$rss cluster=$c build=$build (idle, peered; ASan inflates RSS)"
done

say "unpeer"
start=$(date +%s.%N)
out=$(cq "$A" unpeer "$B" --timeout 60s 2>&1) || fail "unpeer failed: $out"
contains "unpeer result" "$out" "ForeignCluster $B deleted"
say "unpeer took $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')s"
assert_no_peering_objects "$A"
start=$(date +%s.%N)
assert_no_peering_objects "$B"
say "$B clean $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')s after the unpeer"
grep -q 'withdrawn' "$(agent_log "$B")" || fail "$B's agent did not log the withdrawal"
finish
pass "peered in ${ADD_SECONDS}s and unpeered cleanly"
