#!/usr/bin/env bash
# The objects an offloaded namespace's pods use, reflected to the provider (docs/offloading.md, "Objects"),
# through the whole flow: `cliqoctl offload namespace` on A, the NamespaceOffloading, B's NamespaceMap entry
# Accepted, the virtual kubelet's reflectors. Checked with kubectl on both clusters: copies with our labels,
# B's own allocations, the Service's EndpointSlice (a pod on A translated, the offloaded pod left to B's own
# controller), ConfigMap and Secret, exclusions (service-account token, kube-root-ca.crt, deny lists), updates,
# edits and deletions on B put back, filters changed in the ClusterConfig, deletions at home. Leaves the group's
# state as it found it (namespace unoffloaded and gone on B, reflection filters reset).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
NS=e2e-objects
cleanup() {
  local rc=$?
  cq "$A" unoffload namespace "$NS" >/dev/null 2>&1 || true
  kc "$A" delete namespace "$NS" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  kc "$A" patch clusterconfig configuration --type=merge -p '{"spec":{"offloadingConfig":{"reflection":null}}}' \
    >/dev/null 2>&1 || true
  (exit "$rc")
  off_on_exit
}
trap cleanup EXIT
ensure_agents
ids
wait_shared
b64() { printf '%s' "$1" | base64 -w0; }
jb() { # jsonpath args...: a field of an object in the remote namespace ("" when absent)
  local p=$1
  shift
  jpath "$B" "$p" -n "$RNS" "$@" 2>/dev/null || true
}
ja() {
  local p=$1
  shift
  jpath "$A" "$p" -n "$NS" "$@" 2>/dev/null || true
}
on_b() { kc "$B" get -n "$RNS" "$@" >/dev/null 2>&1; }
absent_b() { ! on_b "$@"; }
LABELS_OK="$A_ID/$B_ID/true"
labels_b() { jb '{.metadata.labels.virtualkubelet\.liqo\.io/origin}/{.metadata.labels.virtualkubelet\.liqo\.io/destination}/{.metadata.labels.liqo\.io/reflected}' "$@"; }

say "namespace $NS on A, with a pod that stays on A (created before offloading)"
kc "$A" create namespace "$NS" >/dev/null
wait_default_sa "$A" "$NS"
kc "$A" run -n "$NS" api-home --image=registry.invalid/api:1 --labels=app=api --port=8080 >/dev/null
wait_for 60 "api-home running on A" eval '[ -n "$(ja "{.status.podIP}" pod api-home)" ]'
HOME_IP=$(ja '{.status.podIP}' pod api-home)
[ "$(ja '{.spec.nodeName}' pod api-home)" != "$VNODE" ] || fail "api-home went to the virtual node"

say "offload $NS (strategy Remote): new pods go to $VNODE"
cq "$A" offload namespace "$NS" --strategy Remote --wait >/dev/null || fail "offload namespace $NS failed"
wait_for 60 "NamespaceOffloading Ready" eval \
  '[ "$(ja "{.status.offloadingPhase}" namespaceoffloading offloading)" = Ready ]'
RNS=$(ja '{.status.remoteNamespaceName}' namespaceoffloading offloading)
[ -n "$RNS" ] && kc "$B" get namespace "$RNS" >/dev/null || fail "no remote namespace on B ($RNS)"

say "deny lists in A's ClusterConfig, then home objects: Service api (LoadBalancer), a Deployment offloaded to B, ConfigMaps, Secrets, a token Secret"
patch_config "$A" '{"spec":{"offloadingConfig":{"reflection":{"configmaps":{"deny":["*/cfg-denied"]},"secrets":{"deny":["*/denied-*"]}}}}}'
kc "$A" apply -n "$NS" -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata: {name: api, labels: {app: api}}
spec:
  type: LoadBalancer
  selector: {app: api}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api-remote}
spec:
  replicas: 1
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec: {containers: [{name: c, image: registry.invalid/api:1, ports: [{containerPort: 8080}]}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {mode: blue}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg-denied}
data: {mode: x}
---
apiVersion: v1
kind: Secret
metadata: {name: pw}
type: Opaque
data: {password: $(b64 hunter2)}
---
apiVersion: v1
kind: Secret
metadata: {name: denied-pw}
type: Opaque
data: {password: $(b64 nope)}
---
apiVersion: v1
kind: Secret
metadata: {name: explicit-token, annotations: {kubernetes.io/service-account.name: default}}
type: kubernetes.io/service-account-token
EOF
wait_for 60 "the token Secret filled by A's controller" eval '[ -n "$(ja "{.data.token}" secret explicit-token)" ]'
wait_for 90 "the Deployment's pod on $VNODE, running on B" eval \
  '[ "$(kc "$A" get pods -n "$NS" -l app=api --field-selector spec.nodeName="$VNODE" -o jsonpath="{.items[0].status.phase}")" = Running ]'
REMOTE_POD=$(kc "$A" get pods -n "$NS" -l app=api --field-selector spec.nodeName="$VNODE" -o jsonpath='{.items[0].metadata.name}')
B_POD_IP=$(jb '{.status.podIP}' pod "$REMOTE_POD")
[ -n "$B_POD_IP" ] || fail "the offloaded pod has no address on B"

say "Service: copied with our labels, LoadBalancer -> ClusterIP with B's own cluster IP"
wait_for 30 "Service api on B" on_b service api
[ "$(labels_b service api)" = "$LABELS_OK" ] || fail "labels of the Service's copy: $(jb '{.metadata.labels}' service api)"
[ "$(jb '{.spec.type}/{.spec.ports[0].port}/{.spec.ports[0].targetPort}/{.spec.selector.app}' service api)" = ClusterIP/80/8080/api ] ||
  fail "the Service's copy: $(jb '{.spec}' service api)"
[ -n "$(jb '{.spec.clusterIP}' service api)" ] || fail "B allocated no cluster IP"

say "EndpointSlices: A's pod in a reflected slice (address translated), the offloaded pod only in B's own slice"
refl_ips() {
  kc "$B" get endpointslices -n "$RNS" -l "endpointslice.kubernetes.io/managed-by=endpointslice.reflection.cliqo.io,kubernetes.io/service-name=api" \
    -o jsonpath='{.items[*].endpoints[*].addresses[*]}' 2>/dev/null
}
own_ips() {
  kc "$B" get endpointslices -n "$RNS" -l "endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io,kubernetes.io/service-name=api" \
    -o jsonpath='{.items[*].endpoints[*].addresses[*]}' 2>/dev/null
}
wait_for 60 "one reflected endpoint on B" eval '[ "$(refl_ips | wc -w)" = 1 ]'
IP=$(refl_ips)
[ "$IP" != "$HOME_IP" ] && [ "${IP#*.*.}" = "${HOME_IP#*.*.}" ] ||
  fail "the home pod $HOME_IP is $IP on B (same pod CIDR on both sides: the peering remaps it)"
[[ " $(refl_ips) " != *" $B_POD_IP "* ]] || fail "the offloaded pod was reflected back"
wait_for 60 "B's own slice lists the offloaded pod $B_POD_IP" eval '[[ " $(own_ips) " == *" $B_POD_IP "* ]]'
[ "$(kc "$B" get endpointslices -n "$RNS" -l endpointslice.kubernetes.io/managed-by=endpointslice.reflection.cliqo.io -o jsonpath='{.items[0].metadata.ownerReferences[0].uid}')" = \
  "$(jb '{.metadata.uid}' service api)" ] || fail "the reflected slice is not owned by the Service's copy"
[ -z "$(kc "$A" get endpointslices -n "$NS" -l endpointslice.kubernetes.io/managed-by=endpointslice.reflection.cliqo.io -o name)" ] ||
  fail "a reflected slice came back to A"

say "ConfigMap and Secret copied; the token, kube-root-ca.crt and denied objects are not"
wait_for 30 "cfg on B" eval '[ "$(jb "{.data.mode}" configmap cfg)" = blue ]'
wait_for 30 "pw on B" eval '[ "$(jb "{.data.password}" secret pw)" = "$(b64 hunter2)" ]'
[ "$(labels_b configmap cfg)" = "$LABELS_OK" ] && [ "$(labels_b secret pw)" = "$LABELS_OK" ] || fail "labels of the copies"
sleep 2
absent_b secret explicit-token || fail "the service-account token was reflected"
[ -z "$(kc "$B" get secrets -n "$RNS" -l virtualkubelet.liqo.io/origin="$A_ID" --field-selector type=kubernetes.io/service-account-token -o name)" ] ||
  fail "a token Secret of ours on B"
if on_b configmap kube-root-ca.crt; then
  [ -z "$(jb '{.metadata.labels}' configmap kube-root-ca.crt)" ] || fail "B's kube-root-ca.crt was overwritten"
fi
absent_b configmap cfg-denied || fail "cfg-denied reflected despite the deny list"
absent_b secret denied-pw || fail "denied-pw reflected despite the deny list"

say "updates at home propagate"
kc "$A" patch configmap -n "$NS" cfg --type=merge -p '{"data":{"mode":"green"}}' >/dev/null
wait_for 30 "cfg updated on B" eval '[ "$(jb "{.data.mode}" configmap cfg)" = green ]'
kc "$A" patch secret -n "$NS" pw --type=merge -p "{\"data\":{\"password\":\"$(b64 correct-horse)\"}}" >/dev/null
wait_for 30 "pw updated on B" eval '[ "$(jb "{.data.password}" secret pw)" = "$(b64 correct-horse)" ]'
kc "$A" patch service -n "$NS" api --type=json -p '[{"op":"add","path":"/spec/ports/-","value":{"name":"m","port":9090,"targetPort":9090}}]' >/dev/null
wait_for 30 "the Service's new port on B" eval '[ "$(jb "{.spec.ports[1].port}" service api)" = 9090 ]'

say "edits and deletions on B are put back"
kc "$B" patch configmap -n "$RNS" cfg --type=merge -p '{"data":{"mode":"evil"},"metadata":{"labels":{"added":"b"}}}' >/dev/null
wait_for 30 "cfg put back" eval '[ "$(jb "{.data.mode}/{.metadata.labels.added}" configmap cfg)" = green/ ]'
kc "$B" delete secret -n "$RNS" pw >/dev/null
wait_for 30 "pw re-created" eval '[ "$(jb "{.data.password}" secret pw)" = "$(b64 correct-horse)" ]'
kc "$B" patch service -n "$RNS" api --type=merge -p '{"spec":{"selector":{"app":"evil"}}}' >/dev/null
wait_for 30 "the selector put back" eval '[ "$(jb "{.spec.selector.app}" service api)" = api ]'

say "filters changed in A's ClusterConfig apply at once"
patch_config "$A" '{"spec":{"offloadingConfig":{"reflection":{"configmaps":{"deny":["*/cfg"]},"secrets":{"deny":null}}}}}'
wait_for 30 "cfg (now denied) deleted on B" absent_b configmap cfg
wait_for 30 "cfg-denied (now allowed) copied" on_b configmap cfg-denied
wait_for 30 "denied-pw (now allowed) copied" on_b secret denied-pw

say "deleting at home deletes the copy"
kc "$A" delete secret -n "$NS" pw >/dev/null
wait_for 30 "pw deleted on B" absent_b secret pw
kc "$A" delete service -n "$NS" api >/dev/null
wait_for 30 "Service api deleted on B" absent_b service api
wait_for 30 "the reflected slices gone" eval '[ -z "$(refl_ips)" ]'

say "unoffload: B's namespace and its copies go"
cq "$A" unoffload namespace "$NS" --wait >/dev/null || fail "unoffload namespace $NS failed"
wait_for 90 "namespace $RNS gone on B" eval '! kc "$B" get namespace "$RNS" >/dev/null 2>&1'
kc "$A" delete namespace "$NS" --wait=false >/dev/null
patch_config "$A" '{"spec":{"offloadingConfig":{"reflection":null}}}'
wait_for 90 "namespace $NS gone on A" eval '! kc "$A" get namespace "$NS" >/dev/null 2>&1'
check_logs
pass "Services, EndpointSlices, ConfigMaps and Secrets of an offloaded namespace reflected, kept in sync, filtered, put back and deleted"
