#!/usr/bin/env bash
# cliqoctl status: the identity, no peers, then a hand-made ForeignCluster with conditions in the table and
# in -o json.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
ensure_installed
kc "$C" delete foreignclusters --all --wait=true >/dev/null
id=$(jpath "$C" '{.data.cluster-id}' configmap -n cliqo cluster-id)

say "no peers"
run_cq rc out err status
[ "$rc" -eq 0 ] || fail "exit $rc: $err"
contains "identity shown" "$out" "cluster ID:   $id"
contains "no peers said" "$out" "no foreign clusters"

say "a ForeignCluster with conditions"
make_fc status-peer 0f1e2d3c-aaaa-4bbb-8ccc-123456789abc Established Pending
trap 'kc "$C" delete foreigncluster status-peer --ignore-not-found >/dev/null 2>&1 || true' EXIT
run_cq rc out err status
[ "$rc" -eq 0 ] || fail "exit $rc: $err"
contains "table header" "$out" "NAME"
line=$(grep '^status-peer ' <<<"$out") || fail "no line for status-peer: $out"
read -r n cid outgoing incoming auth tenant age <<<"$line"
[ "$n $cid $outgoing $incoming $auth $tenant" = "status-peer 0f1e2d3c-aaaa-4bbb-8ccc-123456789abc Established Pending None cliqo-tenant-status-peer-abcdef" ] ||
  fail "wrong line: $line"
[[ "$age" =~ ^[0-9]+[smhd]$ ]] || fail "age: $age"

run_cq rc out err status -o json
[ "$rc" -eq 0 ] || fail "json: exit $rc: $err"
python3 - "$out" "$id" <<'PY' || fail "json wrong: $out"
import json, sys
d = json.loads(sys.argv[1])
assert d["installed"] is True and d["clusterID"] == sys.argv[2]
[p] = [p for p in d["foreignClusters"] if p["name"] == "status-peer"]
assert p["outgoing"] == "Established" and p["incoming"] == "Pending" and p["authentication"] == "None"
assert p["tenantNamespace"] == "cliqo-tenant-status-peer-abcdef"
assert any(c["type"] == "OutgoingPeering" and c["message"] == "set by the test" for c in p["conditions"])
PY

say "another namespace has no identity"
run_cq rc out err status --namespace nowhere
[ "$rc" -eq 0 ] || fail "other namespace: exit $rc: $err"
contains "missing identity explained" "$out" "no identity"
run_cq rc out err status -o yaml
[ "$rc" -eq 2 ] || fail "-o yaml: exit $rc"
one_error_line "$err"
pass
