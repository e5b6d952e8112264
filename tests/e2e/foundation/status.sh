#!/usr/bin/env bash
# `dev status` and `dev env` describe the running environment truthfully.
source "$(dirname "$0")/../lib.sh"
"$CLIQOCTL" dev status >/dev/null || fail "dev status reports an unhealthy environment"
json=$("$CLIQOCTL" dev status -o json) || fail "dev status -o json failed"
python3 - "$json" <<'PY' || fail "status json is wrong"
import json, sys
d = json.loads(sys.argv[1])
assert d["healthy"] is True, d
assert [c["name"] for c in d["clusters"]] == ["cluster-1", "cluster-2"], d
for c in d["clusters"]:
    names = [x["name"] for x in c["components"]]
    assert names == ["etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager"], names
    assert all(x["healthy"] and x["pid"] > 0 for x in c["components"]), c
PY
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["clusters"]) == 2' "$E2E_STATE/clusters.json" ||
  fail "clusters.json summary is wrong"
eval "$("$CLIQOCTL" dev env --cluster cluster-2)"
[ "$KUBECONFIG" = "$E2E_STATE/cluster-2/kubeconfig" ] || fail "dev env printed KUBECONFIG=$KUBECONFIG"
"$KUBECTL" get --raw /readyz >/dev/null || fail "kubectl with the printed KUBECONFIG cannot reach cluster-2"
expect_fail "dev env for an unknown cluster" "$CLIQOCTL" dev env --cluster cluster-9
# Kubeconfigs hold private keys: owner-only.
[ "$(stat -c %a "$E2E_STATE/cluster-1/kubeconfig")" = 600 ] || fail "kubeconfig is not mode 600"
# A component that dies is reported as unhealthy, naming it.
pid=$(cat "$E2E_STATE/cluster-2/kube-scheduler.pid")
kill -STOP "$pid"
out=$("$CLIQOCTL" dev status 2>&1) && { kill -CONT "$pid"; fail "status stayed healthy with a stopped scheduler"; }
kill -CONT "$pid"
grep -q 'kube-scheduler.*health check failed' <<<"$out" || fail "status did not name the stalled scheduler: $out"
wait_for 30 "status healthy again" "$CLIQOCTL" dev status
pass
