#!/usr/bin/env bash
# The object reflectors between two real clusters, checked with kubectl on both sides
# (docs/offloading.md, "Objects"). reflect-driver plays the virtual kubelet of provider B = cluster-2 on
# home A = cluster-1: namespace web of A is mapped to web-remote of B (created here with the origin label, as
# B's NamespaceMap controller would), a Node liqo-<B> stands for the virtual node (a pod bound to it with a
# status written by hand is "offloaded"), and home pod addresses 10.210.x.y are 10.99.x.y for B.
source "$(dirname "$0")/../lib.sh"
: "${REFLECT_DRIVER:?REFLECT_DRIVER must name the reflect-driver binary}"
A=cluster-1
B=cluster-2
A_ID=home-0a1b2c
B_ID=peer-3d4e5f
VNODE=liqo-$B_ID
NS=web
RNS=web-remote
WORK="$E2E_STATE/reflect-driver"
EXTRA=(x1 x2 x3 x4 x5 x6 x7 x8) # more namespace pairs: every one costs informers on B's unit
LOG="$WORK/driver.log"
METRICS="$WORK/metrics.txt"
CAP=8
mkdir -p "$WORK"
rm -f "$LOG" "$METRICS"

DRIVER_PID=
cleanup() {
  local rc=$?
  if [ -n "$DRIVER_PID" ] && kill -0 "$DRIVER_PID" 2>/dev/null; then
    kill -TERM "$DRIVER_PID" 2>/dev/null || true
    wait "$DRIVER_PID" 2>/dev/null || true
  fi
  if [ "$rc" != 0 ] && [ -f "$LOG" ]; then
    echo "--- last lines of the driver's log" >&2
    tail -40 "$LOG" >&2
  fi
  # No kubelet finishes the deletion of the pod on the virtual node: force it.
  kc "$A" delete pod -n "$NS" api-offloaded --ignore-not-found --grace-period=0 --force >/dev/null 2>&1 || true
  kc "$A" delete namespace "$NS" many "${EXTRA[@]}" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  kc "$B" delete namespace "$RNS" many-remote elsewhere "${EXTRA[@]/%/-remote}" --ignore-not-found --wait=false \
    >/dev/null 2>&1 || true
  kc "$A" delete node "$VNODE" --ignore-not-found >/dev/null 2>&1 || true
  kc "$A" delete clusterconfig configuration --ignore-not-found >/dev/null 2>&1 || true
  exit "$rc"
}
trap cleanup EXIT

ours() { echo "virtualkubelet.liqo.io/origin=$A_ID"; }
get_b() { kc "$B" get -n "$RNS" "$@" 2>/dev/null; }
jb() { # jsonpath args...: a field of an object on B ("" when absent)
  local p=$1
  shift
  jpath "$B" "$p" -n "$RNS" "$@" 2>/dev/null || true
}
ja() {
  local p=$1
  shift
  jpath "$A" "$p" -n "$NS" "$@" 2>/dev/null || true
}
absent_b() { ! kc "$B" get -n "$RNS" "$@" >/dev/null 2>&1; }
metric() { # NAME LABELS-SUBSTRING: the sum of the matching series in the driver's metrics (0: none)
  kill -USR1 "$DRIVER_PID"
  sleep 0.3
  awk -v n="$1" -v l="$2" 'index($0, n "{") == 1 && index($0, l) { v += $NF } END { print v + 0 }' "$METRICS"
}
b64() { printf '%s' "$1" | base64 -w0; }

# ---- the two sides -------------------------------------------------------------------------------------
gone() { ! kc "$1" get namespace "$2" >/dev/null 2>&1; }
for n in "$NS" many "${EXTRA[@]}"; do wait_for 90 "namespace $n of an earlier run gone on A" gone "$A" "$n"; done
for n in "$RNS" many-remote elsewhere "${EXTRA[@]/%/-remote}"; do
  wait_for 90 "namespace $n of an earlier run gone on B" gone "$B" "$n"
done
say "namespaces: $NS and many on A; $RNS and many-remote on B (origin label, as the NamespaceMap makes them)"
kc "$A" create namespace "$NS" >/dev/null
kc "$A" create namespace many >/dev/null
for n in "$RNS" many-remote; do
  kc "$B" create namespace "$n" >/dev/null
  kc "$B" label namespace "$n" "$(ours)" >/dev/null
done
kc "$B" create namespace elsewhere >/dev/null
for n in "${EXTRA[@]}"; do
  kc "$A" create namespace "$n" >/dev/null
  kc "$A" create configmap -n "$n" hello --from-literal=ns="$n" >/dev/null
  kc "$B" create namespace "$n-remote" >/dev/null
  kc "$B" label namespace "$n-remote" "$(ours)" >/dev/null
done

say "the virtual node $VNODE on A (a Node object; pods bound to it get their status by hand)"
kc "$A" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata: {name: $VNODE, labels: {liqo.io/type: virtual-node}}
spec: {taints: [{key: virtual-node.liqo.io/not-allowed, value: "true", effect: NoSchedule}]}
EOF

say "home objects: Service api (LoadBalancer), NodePort np (nodePort 30080), pods on a node of A and on the virtual node, ConfigMaps, Secrets"
wait_default_sa "$A" "$NS"
kc "$A" apply -n "$NS" -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata: {name: api, labels: {app: api, tier: web}, annotations: {note: home}}
spec:
  type: LoadBalancer
  selector: {app: api}
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
---
apiVersion: v1
kind: Service
metadata: {name: np}
spec:
  type: NodePort
  selector: {app: none}
  ports: [{port: 81, targetPort: 81, nodePort: 30080}]
---
apiVersion: v1
kind: Pod
metadata: {name: api-local, labels: {app: api}}
spec: {containers: [{name: c, image: registry.invalid/api:1, ports: [{containerPort: 8080, name: http}]}]}
---
apiVersion: v1
kind: Pod
metadata: {name: api-offloaded, labels: {app: api}}
spec:
  nodeName: $VNODE
  tolerations: [{key: virtual-node.liqo.io/not-allowed, operator: Exists}]
  containers: [{name: c, image: registry.invalid/api:1, ports: [{containerPort: 8080, name: http}]}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, labels: {app: api}}
data: {mode: blue}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg-denied}
data: {mode: secret-ish}
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
EOF
# What an offloaded pod's status looks like at home (the pods reflector writes it in the real flow).
kc "$A" patch pod -n "$NS" api-offloaded --subresource=status --type=merge -p \
  '{"status":{"phase":"Running","podIP":"10.210.200.5","podIPs":[{"ip":"10.210.200.5"}],
    "conditions":[{"type":"Ready","status":"True"}]}}' >/dev/null
wait_for 60 "api-local running with an address" eval '[ -n "$(ja "{.status.podIP}" pod api-local)" ]'
LOCAL_IP=$(ja '{.status.podIP}' pod api-local)
case "$LOCAL_IP" in 10.210.*) ;; *) fail "api-local's address $LOCAL_IP is not in 10.210.0.0/16" ;; esac
WANT_IP="10.99.${LOCAL_IP#10.210.}"
slice_ips_a() { kc "$A" get endpointslices -n "$NS" -l kubernetes.io/service-name=api -o jsonpath='{.items[*].endpoints[*].addresses[0]}'; }
wait_for 60 "A's EndpointSlice of api lists both pods" eval '[[ "$(slice_ips_a)" == *"$LOCAL_IP"* && "$(slice_ips_a)" == *10.210.200.5* ]]'
wait_for 60 "the service-account token of $NS" eval \
  'kc "$A" get secrets -n "$NS" --field-selector type=kubernetes.io/service-account-token -o name | grep_q .'
TOKEN=$(kc "$A" get secrets -n "$NS" --field-selector type=kubernetes.io/service-account-token -o name | head -1)
TOKEN=${TOKEN#secret/}

say "B: a NodePort Service already holds port 30080 (a copied nodePort would collide, were it copied); a ConfigMap 'clash' not ours; an orphan copy of ours"
kc "$B" apply -n elsewhere -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata: {name: blocker}
spec: {type: NodePort, ports: [{port: 1, nodePort: 30080}]}
EOF
kc "$B" create configmap -n "$RNS" clash --from-literal=owner=b >/dev/null
kc "$B" create configmap -n "$RNS" orphan --from-literal=x=y >/dev/null
kc "$B" label configmap -n "$RNS" orphan "$(ours)" liqo.io/reflected=true >/dev/null
kc "$A" create configmap -n "$NS" clash --from-literal=owner=a >/dev/null
for i in $(seq 1 $((CAP + 2))); do kc "$A" create configmap -n many "m$i" --from-literal=i="$i" >/dev/null; done

# ---- the driver ------------------------------------------------------------------------------------------
{
  printf '%s %s\nmany many-remote\n' "$NS" "$RNS"
  for n in "${EXTRA[@]}"; do printf '%s %s-remote\n' "$n" "$n"; done
} >"$WORK/pairs"
say "the filters come from A's ClusterConfig (CRD of deploy/crds/): its schema checks the patterns"
kc "$A" apply -f "$(dirname "$0")/../../../deploy/crds/config.liqo.io_clusterconfigs.yaml" >/dev/null
wait_for 30 "the ClusterConfig CRD Established" eval \
  '[ "$(kc "$A" get crd clusterconfigs.config.liqo.io -o jsonpath="{.status.conditions[?(@.type==\"Established\")].status}")" = True ]'
cc() { # REFLECTION-JSON: applies the ClusterConfig with these filters and writes it for the driver
  kc "$A" apply -f - >/dev/null <<EOF
{"apiVersion": "config.liqo.io/v1alpha1", "kind": "ClusterConfig", "metadata": {"name": "configuration"},
 "spec": {"offloadingConfig": {"reflection": $1}}}
EOF
  kget "$A" clusterconfig configuration >"$WORK/filters.json"
}
refused() { # REFLECTION-JSON MESSAGE-PIECE: the API server refuses it
  local out
  out=$(kc "$A" apply --dry-run=server -f - 2>&1 <<EOF
{"apiVersion": "config.liqo.io/v1alpha1", "kind": "ClusterConfig", "metadata": {"name": "configuration"},
 "spec": {"offloadingConfig": {"reflection": $1}}}
EOF
  ) && fail "the API server accepted reflection $1"
  [[ "$out" == *"$2"* ]] || fail "refusal of $1 does not say '$2': $out"
}
kc "$A" apply -f - >/dev/null <<EOF
{"apiVersion": "config.liqo.io/v1alpha1", "kind": "ClusterConfig", "metadata": {"name": "configuration"}, "spec": {}}
EOF
[ "$(jpath "$A" '{.spec.offloadingConfig.reflection}' clusterconfig configuration)" = '{}' ] ||
  fail "offloadingConfig.reflection does not default to {}"
refused '{"secrets": {"deny": ["Web/x"]}}' 'should match'
refused '{"secrets": {"deny": ["web"]}}' 'should match'
refused '{"secrets": {"deny": ["a/b/c"]}}' 'should match'
refused "{\"services\": {\"allow\": [\"w/$(head -c 320 /dev/zero | tr '\0' a)\"]}}" 'at most 320'
refused "{\"configmaps\": {\"allow\": [$(for i in $(seq 65); do printf '"n/x%d",' "$i"; done | sed 's/,$//')]}}" 'at most 64'
cc '{"configmaps": {"deny": ["*/cfg-denied"]}, "secrets": {"allow": ["web/*", "many/*"], "deny": ["web/denied-*"]}}'

say "start reflect-driver (cap $CAP objects per namespace and kind)"
"$REFLECT_DRIVER" --help | grep_q -- '--pairs FILE' || fail "reflect-driver --help"
"$REFLECT_DRIVER" --home-kubeconfig "$E2E_STATE/$A/kubeconfig" --provider-kubeconfig "$E2E_STATE/$B/kubeconfig" \
  --home-id "$A_ID" --peer-id "$B_ID" --pairs "$WORK/pairs" --filters "$WORK/filters.json" \
  --remap 10.210.=10.99. --max-objects "$CAP" --metrics "$METRICS" >"$LOG" 2>&1 &
DRIVER_PID=$!

# ---- copies ----------------------------------------------------------------------------------------------
say "Service api: copied, labelled, LoadBalancer -> ClusterIP, B's own cluster IP, ports and selector kept"
wait_for 30 "Service api on B" get_b service api
[ "$(jb '{.metadata.labels.virtualkubelet\.liqo\.io/origin}/{.metadata.labels.virtualkubelet\.liqo\.io/destination}/{.metadata.labels.liqo\.io/reflected}' service api)" = "$A_ID/$B_ID/true" ] ||
  fail "labels of the Service's copy: $(jb '{.metadata.labels}' service api)"
[ "$(jb '{.metadata.labels.app}/{.metadata.labels.tier}/{.metadata.annotations.note}' service api)" = api/web/home ] ||
  fail "the home labels and annotations are not on the copy"
[ "$(jb '{.spec.type}' service api)" = ClusterIP ] || fail "type on B: $(jb '{.spec.type}' service api)"
[ "$(jb '{.spec.ports[0].port}/{.spec.ports[0].targetPort}/{.spec.selector.app}' service api)" = 80/8080/api ] ||
  fail "ports/selector on B: $(jb '{.spec}' service api)"
[ -n "$(jb '{.spec.clusterIP}' service api)" ] || fail "B allocated no cluster IP"
wait_for 30 "Service np on B" get_b service np
NP=$(jb '{.spec.ports[0].nodePort}' service np)
[ "$(jb '{.spec.type}' service np)" = ClusterIP ] && [ -z "$NP" ] ||
  fail "NodePort copy: type $(jb '{.spec.type}' service np), nodePort '$NP' (a consumer's copy is ClusterIP: docs/security.md)"

say "EndpointSlice of api: in B's version, managed by reflection, owned by the Service's copy, A's pod address remapped, the offloaded pod left out"
slice_b() { kc "$B" get endpointslices -n "$RNS" -l "endpointslice.kubernetes.io/managed-by=endpointslice.reflection.cliqo.io,kubernetes.io/service-name=api" "$@"; }
slice_ips_b() { slice_b -o jsonpath='{.items[*].endpoints[*].addresses[*]}' 2>/dev/null; }
wait_for 30 "a reflected EndpointSlice with $WANT_IP on B" eval '[[ " $(slice_ips_b) " == *" $WANT_IP "* ]]'
[[ " $(slice_ips_b) " != *" 10.99.200.5 "* && " $(slice_ips_b) " != *" 10.210.200.5 "* ]] ||
  fail "the pod on the virtual node was reflected: $(slice_ips_b)"
[[ " $(slice_ips_b) " != *" $LOCAL_IP "* ]] || fail "an untranslated address on B: $(slice_ips_b)"
SVC_UID=$(jb '{.metadata.uid}' service api)
[ "$(slice_b -o jsonpath='{.items[0].metadata.ownerReferences[0].kind}/{.items[0].metadata.ownerReferences[0].uid}')" = "Service/$SVC_UID" ] ||
  fail "owner of the reflected slice: $(slice_b -o jsonpath='{.items[0].metadata.ownerReferences}')"
[ "$(slice_b -o jsonpath='{.items[0].metadata.labels.virtualkubelet\.liqo\.io/origin}')" = "$A_ID" ] || fail "slice labels"
kc "$B" get --raw "/apis/discovery.k8s.io/v1beta1/namespaces/$RNS/endpointslices" | grep_q "\"$WANT_IP\"" ||
  fail "the slice is not served as discovery.k8s.io/v1beta1"
# B's own controller keeps a slice for the copy's selector (no pod of B matches: empty); it is not ours to touch.
own_slice_b() { kc "$B" get endpointslices -n "$RNS" -l endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io,kubernetes.io/service-name=api -o name | grep_q .; }
wait_for 30 "B's own EndpointSlice for the copy" own_slice_b

say "ConfigMaps and Secrets: copied with their data; denied ones, kube-root-ca.crt and the service-account token are not"
wait_for 30 "ConfigMap cfg on B" eval '[ "$(jb "{.data.mode}" configmap cfg)" = blue ]'
wait_for 30 "Secret pw on B" eval '[ "$(jb "{.data.password}" secret pw)" = "$(b64 hunter2)" ]'
[ "$(jb '{.type}' secret pw)" = Opaque ] || fail "Secret type on B"
wait_for 30 "the orphan copy deleted on B" absent_b configmap orphan
absent_b configmap cfg-denied || fail "cfg-denied (deny list) was reflected"
absent_b secret denied-pw || fail "denied-pw (deny list) was reflected"
absent_b secret "$TOKEN" || fail "the service-account token $TOKEN was reflected"
[ -z "$(kc "$B" get secrets -n "$RNS" -l "$(ours)" --field-selector type=kubernetes.io/service-account-token -o name)" ] ||
  fail "a token Secret with our label on B"
if get_b configmap kube-root-ca.crt >/dev/null; then
  [ -z "$(jb '{.metadata.labels.virtualkubelet\.liqo\.io/origin}' configmap kube-root-ca.crt)" ] ||
    fail "kube-root-ca.crt on B carries our label"
fi
[ "$(jb '{.data.owner}' configmap clash)" = b ] && [ -z "$(jb '{.metadata.labels}' configmap clash)" ] ||
  fail "the name clash was overwritten: $(jb '{.data}/{.metadata.labels}' configmap clash)"
wait_for 20 "the clash counted" eval '[ "$(metric cliqo_vk_reflect_clashes_total "kind=\"configmaps\"")" -ge 1 ]'
grep -q 'name is taken on the provider' "$LOG" || fail "no log line for the clash"

say "${#EXTRA[@]} more namespace pairs: each has its copy"
for n in "${EXTRA[@]}"; do
  wait_for 30 "hello copied into $n-remote" eval '[ "$(jpath "$B" "{.data.ns}" configmap -n "$n-remote" hello 2>/dev/null)" = "$n" ]'
done

say "cap: many has $((CAP + 2)) ConfigMaps (> $CAP): none reflected, counted"
sleep 2
[ -z "$(kc "$B" get configmaps -n many-remote -l "$(ours)" -o name)" ] || fail "ConfigMaps of 'many' reflected beyond the cap"
wait_for 20 "the cap counted" eval '[ "$(metric cliqo_vk_reflect_refused_total "reason=\"cap\"")" -ge 1 ]'
kc "$A" create secret generic -n many s1 --from-literal=a=b >/dev/null
wait_for 30 "Secrets of 'many' (below the cap) reflected" kc "$B" get -n many-remote secret s1
[ "$(metric cliqo_vk_reflect_namespaces "kind=\"secrets\"")" = $((2 + ${#EXTRA[@]})) ] || fail "namespaces metric"

# ---- updates -----------------------------------------------------------------------------------------------
say "updates at home propagate"
kc "$A" patch configmap -n "$NS" cfg --type=merge -p '{"data":{"mode":"green","extra":"1"}}' >/dev/null
wait_for 30 "cfg updated on B" eval '[ "$(jb "{.data.mode}/{.data.extra}" configmap cfg)" = green/1 ]'
kc "$A" patch secret -n "$NS" pw --type=merge -p "{\"data\":{\"password\":\"$(b64 correct-horse)\"}}" >/dev/null
wait_for 30 "pw updated on B" eval '[ "$(jb "{.data.password}" secret pw)" = "$(b64 correct-horse)" ]'
kc "$A" patch service -n "$NS" api --type=json -p '[{"op":"add","path":"/spec/ports/-","value":{"name":"metrics","port":9090,"targetPort":9090}}]' >/dev/null
wait_for 30 "the new port on B" eval '[ "$(jb "{.spec.ports[1].port}" service api)" = 9090 ]'
[ "$(jb '{.metadata.uid}' service api)" = "$SVC_UID" ] || fail "the Service was re-created instead of updated"
kc "$A" run -n "$NS" api-local-2 --image=registry.invalid/api:1 --labels=app=api >/dev/null
wait_for 60 "api-local-2 running with an address" eval '[ -n "$(ja "{.status.podIP}" pod api-local-2)" ]'
WANT_IP2="10.99.$(ja '{.status.podIP}' pod api-local-2 | cut -d. -f3-)"
wait_for 30 "the new pod's address $WANT_IP2 on B" eval '[[ " $(slice_ips_b) " == *" $WANT_IP2 "* ]]'

# ---- edits on B are put back ---------------------------------------------------------------------------------
say "edits and deletions on B are put back"
kc "$B" patch configmap -n "$RNS" cfg --type=merge -p '{"data":{"mode":"evil"},"metadata":{"labels":{"added":"on-b"}}}' >/dev/null
wait_for 30 "cfg put back on B" eval '[ "$(jb "{.data.mode}/{.metadata.labels.added}" configmap cfg)" = green/ ]'
kc "$B" patch service -n "$RNS" api --type=merge -p '{"spec":{"selector":{"app":"evil"}}}' >/dev/null
wait_for 30 "the selector put back" eval '[ "$(jb "{.spec.selector.app}" service api)" = api ]'
kc "$B" delete secret -n "$RNS" pw >/dev/null
wait_for 30 "pw re-created on B" eval '[ "$(jb "{.data.password}" secret pw)" = "$(b64 correct-horse)" ]'
SLICE=$(slice_b -o jsonpath='{.items[0].metadata.name}')
kc "$B" patch endpointslice -n "$RNS" "$SLICE" --type=json -p '[{"op":"replace","path":"/endpoints/0/addresses/0","value":"6.6.6.6"}]' >/dev/null
wait_for 30 "the slice put back" eval '[[ " $(slice_ips_b) " != *" 6.6.6.6 "* && " $(slice_ips_b) " == *" $WANT_IP "* ]]'
[ "$(metric cliqo_vk_reflect_writes_total "verb=\"update\"")" -ge 4 ] || fail "updates not counted"
own_slice_b || fail "B's own EndpointSlice was touched"

say "a put-back B can only take by re-creation: our copy made immutable on B"
CFG_UID=$(jb '{.metadata.uid}' configmap cfg)
kc "$B" patch configmap -n "$RNS" cfg --type=merge -p '{"immutable":true}' >/dev/null
wait_for 30 "cfg re-created (mutable, same data)" eval \
  '[ "$(jb "{.metadata.uid}" configmap cfg)" != "$CFG_UID" ] && [ -z "$(jb "{.immutable}" configmap cfg)" ] && [ "$(jb "{.data.mode}" configmap cfg)" = green ]'
grep -q 'refused the update' "$LOG" || fail "no log line for the re-creation"

say "the provider's API server stops and comes back: what changed at home meanwhile arrives"
"$CLIQOCTL" dev stop --cluster "$B" --component kube-apiserver >/dev/null
kc "$A" patch configmap -n "$NS" cfg --type=merge -p '{"data":{"mode":"while-away"}}' >/dev/null
kc "$A" create secret generic -n "$NS" made-while-away --from-literal=k=v >/dev/null
sleep 2
"$CLIQOCTL" dev start --cluster "$B" --component kube-apiserver >/dev/null
wait_for 90 "cfg updated after B came back" eval '[ "$(jb "{.data.mode}" configmap cfg)" = while-away ]'
wait_for 30 "made-while-away copied after B came back" get_b secret made-while-away
kill -0 "$DRIVER_PID" || fail "the driver died while B was away"

# ---- filters ---------------------------------------------------------------------------------------------------
say "filters change at run time (SIGHUP here, a ClusterConfig change and a kick in the agent)"
cc '{"configmaps": {"deny": ["*/cfg"]}, "secrets": {"allow": ["web/*", "many/*"]}}'
kill -HUP "$DRIVER_PID"
wait_for 30 "cfg (now denied) deleted on B" absent_b configmap cfg
wait_for 30 "cfg-denied (now allowed) copied" get_b configmap cfg-denied
wait_for 30 "denied-pw (now allowed) copied" get_b secret denied-pw

# ---- deletions at home -------------------------------------------------------------------------------------------
say "deleting at home deletes the copy"
kc "$A" delete secret -n "$NS" pw >/dev/null
wait_for 30 "pw deleted on B" absent_b secret pw
kc "$A" delete service -n "$NS" api >/dev/null
wait_for 30 "Service api deleted on B" absent_b service api
wait_for 30 "its reflected slices gone on B" eval '[ -z "$(slice_b -o name 2>/dev/null)" ]'
[ "$(jb '{.data.owner}' configmap clash)" = b ] || fail "the clash was touched"

# ---- a namespace removed ---------------------------------------------------------------------------------------------
say "removing the pair stops reflection (copies stay: B deletes the namespace in the real flow)"
printf 'many many-remote\n' >"$WORK/pairs"
kill -HUP "$DRIVER_PID"
wait_for 20 "the namespaces gone from the metrics" eval '[ "$(metric cliqo_vk_reflect_namespaces "kind=\"configmaps\"")" = 1 ]'
kc "$A" patch configmap -n "$NS" cfg-denied --type=merge -p '{"data":{"mode":"changed"}}' >/dev/null
sleep 3
[ "$(jb '{.data.mode}' configmap cfg-denied)" = secret-ish ] || fail "a removed namespace is still reflected"
get_b secret denied-pw >/dev/null || fail "a copy was deleted when its namespace was removed"

say "stop the driver"
kill -TERM "$DRIVER_PID"
wait "$DRIVER_PID" || fail "reflect-driver exited with status $?"
DRIVER_PID=
grep -q 'stopped (exit status 0)' "$LOG" || fail "the driver did not stop cleanly"
if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$LOG"; then
  grep -nE -A30 'AddressSanitizer|LeakSanitizer|runtime error:' "$LOG" | head -60 >&2
  fail "sanitizer report in the driver's log"
fi
pass "Services, EndpointSlices, ConfigMaps and Secrets reflected, updated, put back, filtered and deleted"
