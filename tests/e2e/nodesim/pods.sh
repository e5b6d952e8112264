#!/usr/bin/env bash
# A pod bound to a simulated node runs its init containers in order, then its containers, gets an
# address from its node's pod CIDR and the kubelet's conditions; its deletion is finished.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
ns=e2e-nodesim-pods
kc "$c" create namespace "$ns" >/dev/null
wait_sa "$ns"
# A pod bound to a node the simulator does not run (a real node's, a virtual node's) is not its to run: it stays
# as it was written, while the simulated node's pod below runs.
kc "$c" create -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Node
metadata: {name: e2e-nodesim-foreign}
YAML
kc "$c" -n "$ns" create -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: elsewhere}
spec:
  nodeName: e2e-nodesim-foreign
  containers:
  - {name: app, image: nginx:1.25}
YAML
# Each start-up step (init container) lasts 2 s, so the stages are observable.
kc "$c" -n "$ns" create -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: web
  annotations: {sim.cliqo.io/startup-delay: 2s}
spec:
  initContainers:
  - {name: setup, image: busybox:1.36}
  - {name: migrate, image: busybox:1.36}
  containers:
  - {name: app, image: nginx:1.25}
  - {name: sidecar, image: envoy:1.28}
YAML
# One snapshot of the pod while an init container runs: its phase and its containers' state are read from that
# same object. Reads made one after the other could straddle the end of the 2 s steps on a busy machine (the
# containers were found running by the second read once).
during_init() {
  snap=$(kget "$c" pod web -n "$ns") || return 1
  jq -e '[.status.initContainerStatuses[]?.state.running.startedAt // empty] | length == 1' <<<"$snap" >/dev/null
}
wait_for 30 "web: an init container running" during_init
[ "$(jq -r .status.phase <<<"$snap")" = Pending ] || fail "phase is not Pending during init: $(jq -c .status <<<"$snap")"
[ "$(jq -r '[.status.containerStatuses[].state.waiting.reason] | unique | join(",")' <<<"$snap")" = PodInitializing ] ||
  fail "containers are not waiting in PodInitializing during init: $(jq -c .status.containerStatuses <<<"$snap")"
wait_for 30 "web Running" pod_phase_is "$ns" web Running
pod=$(kc "$c" -n "$ns" get pod web -o json)
node=$(jp pod/web '{.spec.nodeName}' -n "$ns")
cidr=$(jp "node/$node" '{.spec.podCIDR}')
hostip=$(jp "node/$node" '{.status.addresses[?(@.type=="InternalIP")].address}')
python3 - "$pod" "$cidr" "$hostip" <<'PY' || fail "pod status is wrong"
import ipaddress, json, sys
p, cidr, hostip = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
st = p["status"]
assert ipaddress.ip_address(st["podIP"]) in ipaddress.ip_network(cidr), (st["podIP"], cidr)
assert st["podIPs"] == [{"ip": st["podIP"]}], st["podIPs"]
assert st["hostIP"] == hostip, st["hostIP"]
conds = {c["type"]: c["status"] for c in st["conditions"]}
assert conds == {"Initialized": "True", "Ready": "True", "ContainersReady": "True", "PodScheduled": "True"}, conds
inits = st["initContainerStatuses"]
assert [c["name"] for c in inits] == ["setup", "migrate"], inits
for c in inits:
    t = c["state"]["terminated"]
    assert t["reason"] == "Completed" and t["exitCode"] == 0 and c["ready"], c
# In order: the second starts when the first has finished, the containers after both.
assert inits[0]["state"]["terminated"]["finishedAt"] <= inits[1]["state"]["terminated"]["startedAt"], inits
assert inits[0]["state"]["terminated"]["startedAt"] < inits[1]["state"]["terminated"]["finishedAt"], inits
for c in st["containerStatuses"]:
    assert c["ready"] and c["started"] and c["restartCount"] == 0, c
    assert c["state"]["running"]["startedAt"] >= inits[1]["state"]["terminated"]["finishedAt"], c
    assert c["containerID"].startswith("containerd://") and len(c["containerID"]) == 13 + 64, c
    assert c["imageID"].endswith("@sha256:" + c["imageID"].split("@sha256:")[1]) and len(c["imageID"].split("@sha256:")[1]) == 64, c
assert st["startTime"] <= inits[0]["state"]["terminated"]["startedAt"], st
PY
say "web: init containers in order, Running with $(jp pod/web '{.status.podIP}' -n "$ns") in $cidr"
other=$(kget "$c" pod elsewhere -n "$ns")
jq -e '.status.phase == "Pending" and (.status.podIP == null) and (.status.containerStatuses == null)' <<<"$other" >/dev/null ||
  fail "the pod of a node the simulator does not run was changed: $(jq -c .status <<<"$other")"
kc "$c" -n "$ns" delete pod elsewhere --grace-period=0 --force >/dev/null 2>&1
kc "$c" delete node e2e-nodesim-foreign >/dev/null
say "elsewhere: bound to a node the simulator does not run, left Pending"

# Deletion with the default grace period is finished by the simulated kubelet.
t0=$(date +%s)
kc "$c" -n "$ns" delete pod web --wait=false >/dev/null
gone() { ! kc "$c" -n "$ns" get pod web >/dev/null 2>&1; }
wait_for 20 "web deleted" gone
say "deletion finished in $(($(date +%s) - t0)) s"
kc "$c" delete namespace "$ns" --wait=false >/dev/null
pass
