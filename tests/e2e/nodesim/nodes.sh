#!/usr/bin/env bash
# Simulated nodes are registered and Ready with the configured capacity, labels, pod CIDRs and
# addresses; their Leases in kube-node-lease are renewed; `dev status` reports the simulator.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
for n in "${NODES[@]}"; do wait_for 60 "$n Ready" node_ready "$n"; done
# The admission plugin taints a new node not-ready; the node-lifecycle controller lifts the taint once
# it sees the node Ready (its period is 5 s).
untainted() { [ -z "$(jp "node/$1" '{.spec.taints[*].key}')" ]; }
for n in "${NODES[@]}"; do wait_for 30 "not-ready taint lifted from $n" untainted "$n"; done
[ "$(kc "$c" get nodes -o name | wc -l)" = 3 ] || fail "want exactly 3 nodes: $(kc "$c" get nodes -o name)"
nodes=$(kget "$c" nodes)
port=$(($(awk '$1 == "cluster-1" {print $2}' "$E2E_STATE/clusters") + 5))
python3 - "$nodes" "$port" <<'PY' || fail "node objects are wrong"
import json, sys
items = {n["metadata"]["name"]: n for n in json.loads(sys.argv[1])["items"]}
port = int(sys.argv[2])
for i in range(3):
    n = items["cluster-1-node-%d" % i]
    st, md = n["status"], n["metadata"]
    assert md["labels"]["e2e.cliqo.io/sim"] == "yes", md["labels"]
    assert md["labels"]["kubernetes.io/hostname"] == md["name"], md["labels"]
    assert md["labels"]["kubernetes.io/os"] == "linux", md["labels"]
    assert n["spec"]["podCIDR"] == "10.201.%d.0/24" % i, n["spec"]
    assert n["spec"]["podCIDRs"] == ["10.201.%d.0/24" % i], n["spec"]
    for k in ("capacity", "allocatable"):
        r = st[k]
        assert r["nvidia.com/gpu"] == "2" and r["cpu"] == "8" and r["memory"] == "32Gi" and r["pods"] == "110", r
    conds = {c["type"]: c for c in st["conditions"]}
    assert conds["Ready"]["status"] == "True" and conds["Ready"]["reason"] == "KubeletReady", conds
    for t in ("MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"):
        assert conds[t]["status"] == "False", conds[t]
    addrs = {a["type"]: a["address"] for a in st["addresses"]}
    # One kubelet API listener for all the simulator's nodes: its address and port.
    assert addrs["InternalIP"] == "127.0.0.1" and addrs["Hostname"] == md["name"], addrs
    assert st["daemonEndpoints"]["kubeletEndpoint"]["Port"] == port, st["daemonEndpoints"]
    assert st["nodeInfo"]["kubeletVersion"] == "v1.20.2", st["nodeInfo"]
    assert not [t for t in n["spec"].get("taints", []) if t["key"].startswith("node.kubernetes.io/not-ready")], n["spec"]
PY
say "3 nodes Ready with capacity (nvidia.com/gpu=2), labels, pod CIDRs and addresses"

# Leases: one per node, held by it, owned by the Node, renewed every heartbeat (2 s here).
for n in "${NODES[@]}"; do
  [ "$(kc "$c" -n kube-node-lease get lease "$n" -o jsonpath='{.spec.holderIdentity}')" = "$n" ] ||
    fail "lease $n is missing or held by someone else"
  [ "$(kc "$c" -n kube-node-lease get lease "$n" -o jsonpath='{.metadata.ownerReferences[0].kind}')" = Node ] ||
    fail "lease $n is not owned by its Node"
done
r0=$(kc "$c" -n kube-node-lease get lease "${NODES[0]}" -o jsonpath='{.spec.renewTime}')
renewed() { [ "$(kc "$c" -n kube-node-lease get lease "${NODES[0]}" -o jsonpath='{.spec.renewTime}')" != "$r0" ]; }
wait_for 15 "lease of ${NODES[0]} renewed after $r0" renewed
say "leases held, owned by their nodes and renewed"

# The environment supervises the simulator.
json=$("$CLIQOCTL" dev status -o json) || fail "dev status unhealthy"
python3 -c '
import json, sys
d = json.loads(sys.argv[1])
comps = {x["name"]: x for x in d["clusters"][0]["components"]}
assert comps["nodesim"]["healthy"] and comps["nodesim"]["pid"] > 0, comps' "$json" || fail "status does not report a healthy nodesim"
# /healthz on the kubelet API listener (HTTPS, the cluster CA signed its certificate).
[ "$(curl -sS -m 5 --cacert "$E2E_STATE/cluster-1/pki/ca.crt" "https://127.0.0.1:$port/healthz")" = ok ] ||
  fail "nodesim /healthz on port $port is not ok"
grep -q 'all 3 nodes registered' "$E2E_STATE/cluster-1/logs/nodesim.log" || fail "nodesim log lacks registration"
pass "nodes registered, Ready, leased and supervised"
