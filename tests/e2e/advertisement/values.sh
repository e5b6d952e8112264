#!/usr/bin/env bash
# The advertised values of a hand-built provider, exact: P1's node simulator is stopped and its nodes
# replaced by nodes created with kubectl (Ready, cordoned, NotReady, virtual), with pods whose requests,
# init containers, overhead (RuntimeClass), phases and placement cover every rule of the computation
# (docs/advertisement.md). At 37 % the Advertisement on A and A's virtual node must carry exactly the
# values computed by hand below; the provider's node labels are advertised only outside well-known
# domains and only when every counted node has them; the images of the counted nodes (first name, size) and
# the configured prices are copied exactly, and a malformed price is refused by the ClusterConfig's schema.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
NS=e2e-values
RENEW_PID=
cleanup() {
  local rc=$?
  [ -n "$RENEW_PID" ] && kill "$RENEW_PID" 2>/dev/null
  kc "$P1" delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  kc "$P1" delete nodes -l e2e-values=true --wait=false >/dev/null 2>&1 || true
  kc "$P1" delete runtimeclass e2e-overhead >/dev/null 2>&1 || true
  kc "$P1" delete leases -n kube-node-lease -l e2e-values=true >/dev/null 2>&1 || true
  patch_config "$P1" '{"spec":{"advertisementConfig":{"outgoingConfig":{"resourceSharingPercentage":30,"prices":null}}}}' || true
  "$CLIQOCTL" dev start --cluster "$P1" --component nodesim >/dev/null 2>&1 || true
  if [ "$rc" = 0 ]; then wait_all_shared 60; fi
  (exit "$rc")
  adv_on_exit
}
trap cleanup EXIT
ensure_agents
ids
wait_all_shared

say "replace $P1's simulated nodes by hand-built ones"
out=$("$CLIQOCTL" dev stop --cluster "$P1" --component nodesim 2>&1) || fail "stopping the node simulator failed: $out"
kc "$P1" delete nodes --all --wait=true >/dev/null
PRICES='{"cpu":"0.05","memory":"10m","nvidia.com/gpu":"2"}'
patch_config "$P1" "{\"spec\":{\"advertisementConfig\":{\"outgoingConfig\":{\"resourceSharingPercentage\":37,\"prices\":$PRICES}}}}"

node() { # NAME UNSCHEDULABLE READY LABELS(json) ALLOCATABLE(json) [IMAGES(json)]
  local now
  now=$(now_rfc3339)
  kc "$P1" apply -f - >/dev/null <<EOF || fail "cannot create node $1"
apiVersion: v1
kind: Node
metadata:
  name: $1
  labels: $4
spec:
  unschedulable: $2
EOF
  kc "$P1" patch node "$1" --subresource=status --type=merge -p "{\"status\":{\"capacity\":$5,\"allocatable\":$5,\"images\":${6:-[]},
    \"conditions\":[{\"type\":\"Ready\",\"status\":\"$3\",\"reason\":\"E2E\",\"message\":\"hand-built\",
    \"lastHeartbeatTime\":\"$now\",\"lastTransitionTime\":\"$now\"}]}}" >/dev/null || fail "cannot set the status of node $1"
}
node v-n1 false True '{"e2e-values":"true","zone-class":"gold","gpu":"true","topology.kubernetes.io/zone":"z1","node.kubernetes.io/instance-type":"big"}' \
  '{"cpu":"4","memory":"8Gi","pods":"20","ephemeral-storage":"50Gi","nvidia.com/gpu":"3"}' \
  '[{"names":["registry.example/app@sha256:0a1b","registry.example/app:1.0"],"sizeBytes":1000},{"names":["busybox:1.36"],"sizeBytes":500}]'
node v-n2 false True '{"e2e-values":"true","zone-class":"gold","gpu":"false","topology.kubernetes.io/zone":"z1"}' \
  '{"cpu":"2","memory":"4Gi","pods":"10","ephemeral-storage":"50Gi"}' \
  '[{"names":["busybox:1.36"],"sizeBytes":500},{"names":["registry.example/db:2"],"sizeBytes":2000}]'
node v-n3 true True '{"e2e-values":"true","zone-class":"gold"}' '{"cpu":"100","memory":"100Gi","pods":"100"}' \
  '[{"names":["registry.example/on-a-cordoned-node:1"],"sizeBytes":1}]'
node v-n4 false False '{"e2e-values":"true","zone-class":"gold"}' '{"cpu":"100","memory":"100Gi","pods":"100"}'
node v-n5 false True '{"e2e-values":"true","liqo.io/type":"virtual-node"}' '{"cpu":"100","memory":"100Gi","pods":"100"}'
# Their heartbeats: the node-lifecycle controller would mark them Unknown after 40 s without a Lease.
renew_leases() {
  local n t
  while :; do
    t=$(date -u +%Y-%m-%dT%H:%M:%S.000000Z)
    for n in v-n1 v-n2 v-n3 v-n4 v-n5; do
      kc "$P1" apply -f - >/dev/null 2>&1 <<EOF
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: $n, namespace: kube-node-lease, labels: {e2e-values: "true"}}
spec: {holderIdentity: $n, leaseDurationSeconds: 40, renewTime: "$t"}
EOF
    done
    sleep 5
  done
}
renew_leases &
RENEW_PID=$!

say "pods: init containers, overhead, unscheduled, terminal, on excluded nodes, without requests"
kc "$P1" create namespace "$NS" >/dev/null
kc "$P1" apply -f - >/dev/null <<EOF || fail "cannot create the RuntimeClass"
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: e2e-overhead}
handler: runc
overhead: {podFixed: {cpu: 100m, memory: 64Mi}}
EOF
wait_default_sa "$P1" "$NS"
pod() { # NAME NODE(or -) SPEC-EXTRA(yaml lines, indented 2)
  local nn=""
  [ "$2" != - ] && nn="nodeName: $2"
  apply_pod "$P1" "$NS" "$1" "  $nn
$3"
}
# p1 on v-n1: containers 750m / 1280Mi / 1 GPU, init container 2 cpu / 512Mi -> effective 2 cpu, 1280Mi, 1 GPU.
pod p1 v-n1 '  initContainers:
  - {name: i1, image: busybox, resources: {requests: {cpu: "2", memory: 512Mi}}}
  containers:
  - {name: c1, image: busybox, resources: {requests: {cpu: 500m, memory: 1Gi, nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}}
  - {name: c2, image: busybox, resources: {requests: {cpu: 250m, memory: 256Mi}}}'
# p2 not scheduled (nothing matches its selector): 300m / 100Mi.
pod p2 - '  nodeSelector: {e2e-nowhere: "true"}
  containers:
  - {name: c, image: busybox, resources: {requests: {cpu: 300m, memory: 100Mi}}}'
# p3 on v-n2 with the RuntimeClass's overhead: 200m + 100m, 128Mi + 64Mi.
pod p3 v-n2 '  runtimeClassName: e2e-overhead
  containers:
  - {name: c, image: busybox, resources: {requests: {cpu: 200m, memory: 128Mi}}}'
# p4 on v-n2, Succeeded: not counted.
pod p4 v-n2 '  containers:
  - {name: c, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}'
kc "$P1" patch pod p4 -n "$NS" --subresource=status --type=merge -p '{"status":{"phase":"Succeeded"}}' >/dev/null ||
  fail "cannot mark p4 Succeeded"
# p5 on the cordoned node, p6 on the virtual node: not counted.
pod p5 v-n3 '  containers:
  - {name: c, image: busybox, resources: {requests: {cpu: "1"}}}'
pod p6 v-n5 '  containers:
  - {name: c, image: busybox, resources: {requests: {cpu: "1"}}}'
# p7 on v-n2 without requests: one pod slot.
pod p7 v-n2 '  containers:
  - {name: c, image: busybox}'
[ "$(jpath "$P1" '{.spec.overhead.cpu}' pod p3 -n "$NS")" = 100m ] || fail "the RuntimeClass overhead was not applied to p3"

# By hand: available (v-n1 + v-n2) cpu 6000m, memory 12Gi, pods 30, ephemeral-storage 100Gi, GPUs 3;
# used (p1, p2, p3, p7) cpu 2600m, memory 1572Mi, pods 4, GPUs 1;
# free cpu 3400m, memory 10716Mi = 11236540416, pods 26, ephemeral-storage 107374182400, GPUs 2;
# x 37 %, rounded down: cpu 1258m, memory 4157519953, pods 9, ephemeral-storage 37Gi, GPUs 0.
want='{"cpu":"1258m","ephemeral-storage":"37Gi","memory":"4157519953","nvidia.com/gpu":"0","pods":"9"}'
hard() { adv_field "$P1" '{.spec.resourceQuota.hard}' | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin), sort_keys=True, separators=(",",":")))' 2>/dev/null; }
say "the Advertisement on $A carries exactly $want"
wait_for 30 "the exact values in $P1's Advertisement (last: $(hard))" eval '[ "$(hard)" = "$want" ]'
vcap() {
  kc "$A" get node "$(vnode_of "$P1")" -o json | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["status"]["capacity"], sort_keys=True, separators=(",",":")))'
}
wait_for 10 "the same capacity on the virtual node (last: $(vcap))" eval '[ "$(vcap)" = "$want" ]'
[ "$(jget "$A" '{.status.allocatable.cpu}' node "$(vnode_of "$P1")")" = 1258m ] || fail "allocatable differs from capacity"

say "labels: e2e-values=true and zone-class=gold (on every counted node), no well-known ones"
labels=$(adv_field "$P1" '{.spec.labels}')
[ "$labels" = '{"e2e-values":"true","zone-class":"gold"}' ] || fail "advertised labels: $labels"
[ "$(jget "$A" '{.metadata.labels.zone-class}' node "$(vnode_of "$P1")")" = gold ] || fail "the virtual node lacks zone-class=gold"
[ -z "$(jget "$A" '{.metadata.labels.topology\.kubernetes\.io/zone}' node "$(vnode_of "$P1")")" ] ||
  fail "a well-known label of the provider reached the virtual node"
max_cpu=$(adv_field "$P1" '{.spec.limitRange.limits[0].max.cpu}')
[ "$max_cpu" = 1258m ] || fail "limitRange max cpu is $max_cpu (the offer caps the largest node, 4)"

say "images of the counted nodes (first name, size; once each) and the prices, exactly"
sorted() { python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin), sort_keys=True, separators=(",",":")))' 2>/dev/null; }
images() { adv_field "$P1" '{.spec.images}' | python3 -c 'import json,sys; print(json.dumps(sorted(json.load(sys.stdin), key=lambda i: i["names"][0]), sort_keys=True, separators=(",",":")))' 2>/dev/null; }
want_images='[{"names":["busybox:1.36"],"sizeBytes":500},{"names":["registry.example/app@sha256:0a1b"],"sizeBytes":1000},{"names":["registry.example/db:2"],"sizeBytes":2000}]'
[ "$(images)" = "$want_images" ] || fail "advertised images: $(images), want $want_images"
[ "$(adv_field "$P1" '{.spec.prices}' | sorted)" = "$PRICES" ] || fail "advertised prices: $(adv_field "$P1" '{.spec.prices}'), want $PRICES"
say "a malformed price is refused by the ClusterConfig's schema, with the field named"
for bad in '"cheap"' '"-1"'; do
  if out=$(kc_slow "$P1" patch clusterconfig configuration --type=merge \
    -p "{\"spec\":{\"advertisementConfig\":{\"outgoingConfig\":{\"prices\":{\"cpu\":$bad}}}}}" 2>&1); then
    fail "the price $bad was accepted"
  fi
  grep -q 'prices' <<<"$out" || fail "the refusal of price $bad does not name the field: $out"
done
[ "$(adv_field "$P1" '{.spec.prices}' | sorted)" = "$PRICES" ] || fail "a refused price reached the Advertisement"

say "an update moves the offer: p2 deleted frees 300m"
kc "$P1" delete pod p2 -n "$NS" --wait=true >/dev/null
# free cpu 3700m x 37 % = 1369m; memory 10816Mi = 11341398016 x 37 % = 4196317265.92 -> 4196317265; pods 27 -> 9.
wait_for 20 "cpu 1369m after the deletion" eval '[ "$(capacity "$P1" cpu)" = 1369m ]'
[ "$(capacity "$P1" memory)" = 4196317265 ] || fail "memory after the deletion: $(capacity "$P1" memory)"
pass "exact values for a hand-built provider; labels filtered; updates follow"
