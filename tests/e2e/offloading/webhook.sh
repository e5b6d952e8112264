#!/usr/bin/env bash
# The pod webhook on A (docs/offloading.md, "Admission"): pods created with kubectl in offloaded namespaces get
# exactly the documented tolerations and node affinity for each strategy, merged with their own (kept); A's own
# scheduler then puts a Remote pod on B's virtual node and a Local one never there; LocalAndRemote may go either
# way; a selector matching nothing leaves a Remote pod unschedulable; DaemonSet pods and pods of namespaces that
# are not offloaded are untouched; the grace period follows the ClusterConfig. Also: a malformed review gets a
# clear 400, and the webhook's metrics count what it did.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
R=e2e-wh-remote
L=e2e-wh-local
LR=e2e-wh-both
NONE=e2e-wh-none
PLAIN=e2e-wh-plain
ALL_NS=("$R" "$L" "$LR" "$NONE" "$PLAIN")
T=$(mktemp -d)

cleanup() {
  patch_config "$A" '{"spec":{"offloadingConfig":{"unreachableGraceSeconds":null}}}' || true
  for n in "${ALL_NS[@]}"; do
    # Pods bound to the virtual node have no kubelet to finish their deletion unless a virtual kubelet runs.
    kc "$A" delete pods -n "$n" --all --grace-period=0 --force >/dev/null 2>&1 || true
    cq "$A" unoffload namespace "$n" >/dev/null 2>&1 || true
  done
  kc "$A" delete namespace "${ALL_NS[@]}" --ignore-not-found --wait=true --timeout=90s
  rm -rf "$T"
}
on_exit() {
  local rc=$?
  cleanup >/dev/null 2>&1 || true
  (exit "$rc")
  off_on_exit
}
trap on_exit EXIT
ensure_agents
ids
wait_shared 60

labelled() { [ "$(jget "$A" '{.metadata.labels.liqo\.io/scheduling-enabled}' namespace "$1")" = true ]; }
# pod NS NAME [SPEC-LINES]: a pod with kubectl (its spec lines indented 2, after containers).
pod() {
  apply_pod "$A" "$1" "$2" "  containers: [{name: c, image: busybox, resources: {requests: {cpu: 10m}}}]${3:+
$3}"
}
# json NS NAME PATH: a field of a pod, as compact JSON with sorted keys.
json() { kget "$A" pod -n "$1" "$2" | jq -cS "$3"; }
same() { # DESCRIPTION GOT WANT (JSON)
  local want
  want=$(jq -cS . <<<"$3")
  [ "$2" = "$want" ] || fail "$1:
   got $2
  want $want"
}
node_of() { jget "$A" '{.spec.nodeName}' pod -n "$1" "$2"; }

VT='{"key":"virtual-node.liqo.io/not-allowed","operator":"Exists","effect":"NoExecute"}'
UN='{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}'
NR='{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}'
IN='{"key":"liqo.io/type","operator":"In","values":["virtual-node"]}'
OWN_TOL='{"key":"e2e/own","operator":"Exists","effect":"NoSchedule"}'
DISK='{"key":"disk","operator":"NotIn","values":["hdd"]}'
ZONE='{"key":"zone","operator":"DoesNotExist"}'
PREF='[{"weight":5,"preference":{"matchExpressions":[{"key":"e2e/preferred","operator":"Exists"}]}}]'
OWN_SPEC="  nodeSelector: {kubernetes.io/os: linux}
  tolerations: [$OWN_TOL]
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{matchExpressions: [$DISK]}, {matchExpressions: [$ZONE]}]
      preferredDuringSchedulingIgnoredDuringExecution: $PREF"

say "offload: $R Remote, $L Local, $LR LocalAndRemote, $NONE Remote with a selector matching nothing"
for n in "${ALL_NS[@]}"; do kc "$A" create namespace "$n" >/dev/null; done
cq "$A" offload namespace "$R" --strategy Remote >/dev/null || fail "offload $R"
cq "$A" offload namespace "$L" --strategy Local >/dev/null || fail "offload $L"
cq "$A" offload namespace "$LR" --strategy LocalAndRemote >/dev/null || fail "offload $LR"
cq "$A" offload namespace "$NONE" --strategy Remote --selector 'region in (mars)' >/dev/null || fail "offload $NONE"
for n in "$R" "$L" "$LR" "$NONE"; do wait_for 20 "$n labelled" labelled "$n"; done
for n in "${ALL_NS[@]}"; do wait_default_sa "$A" "$n"; done

say "Remote: the virtual-node toleration, the grace period, the affinity to virtual nodes; on $VNODE"
pod "$R" bare
same "Remote tolerations" "$(json "$R" bare '.spec.tolerations')" "[$NR,$UN,$VT]"
same "Remote affinity" "$(json "$R" bare '.spec.affinity')" \
  "{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[$IN]}]}}}"
wait_for 30 "the Remote pod bound to $VNODE (now: $(node_of "$R" bare))" eval "[ \"\$(node_of $R bare)\" = $VNODE ]"

say "Remote, merged with the pod's own tolerations, two required terms, preferred terms and nodeSelector"
pod "$R" own "$OWN_SPEC"
same "merged tolerations" "$(json "$R" own '.spec.tolerations')" "[$OWN_TOL,$NR,$UN,$VT]"
same "crossed terms" "$(json "$R" own '.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution')" \
  "{\"nodeSelectorTerms\":[{\"matchExpressions\":[$DISK,$IN]},{\"matchExpressions\":[$ZONE,$IN]}]}"
same "preferred untouched" "$(json "$R" own '.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution')" "$PREF"
same "nodeSelector untouched" "$(json "$R" own '.spec.nodeSelector')" '{"kubernetes.io/os":"linux"}'
wait_for 30 "the merged Remote pod bound to $VNODE" eval "[ \"\$(node_of $R own)\" = $VNODE ]"

say "Local: nothing changed; never on the virtual node"
pod "$L" bare
same "Local tolerations" "$(json "$L" bare '.spec.tolerations')" "[$NR,$UN]"
same "Local affinity" "$(json "$L" bare '.spec.affinity')" null
wait_for 30 "the Local pod scheduled" eval "[ -n \"\$(node_of $L bare)\" ]"
[ "$(node_of "$L" bare)" != "$VNODE" ] || fail "a Local pod went to the virtual node"

say "LocalAndRemote, no selector: all virtual nodes or local nodes, so any node: the toleration only, the pod's own terms alone"
pod "$LR" bare
same "LocalAndRemote tolerations" "$(json "$LR" bare '.spec.tolerations')" "[$NR,$UN,$VT]"
same "LocalAndRemote affinity" "$(json "$LR" bare '.spec.affinity')" null
wait_for 30 "the LocalAndRemote pod scheduled (either way)" eval "[ -n \"\$(node_of $LR bare)\" ]"
pod "$LR" own "$OWN_SPEC"
same "LocalAndRemote terms, the pod's own" "$(json "$LR" own '.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms')" \
  "[{\"matchExpressions\":[$DISK]},{\"matchExpressions\":[$ZONE]}]"

say "Remote with a selector matching nothing: constrained to what does not exist, never scheduled"
pod "$NONE" bare
same "terms" "$(json "$NONE" bare '.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms')" \
  "[{\"matchExpressions\":[{\"key\":\"region\",\"operator\":\"In\",\"values\":[\"mars\"]},$IN]}]"
wait_for 30 "PodScheduled=False (Unschedulable)" eval \
  "[ \"\$(jget $A '{.status.conditions[?(@.type==\"PodScheduled\")].reason}' pod -n $NONE bare)\" = Unschedulable ]"
[ -z "$(node_of "$NONE" bare)" ] || fail "a pod with a selector matching nothing was scheduled"

say "DaemonSet pods and pods of namespaces that are not offloaded are untouched"
kc "$A" apply -n "$R" -f - >/dev/null <<EOF || fail "cannot create the DaemonSet"
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds}
spec:
  selector: {matchLabels: {app: ds}}
  template:
    metadata: {labels: {app: ds}}
    spec: {containers: [{name: c, image: busybox}]}
EOF
wait_for 30 "DaemonSet pods" eval "[ -n \"\$(kc $A get pods -n $R -l app=ds -o name)\" ]"
for p in $(kc "$A" get pods -n "$R" -l app=ds -o jsonpath='{.items[*].metadata.name}'); do
  t=$(json "$R" "$p" '[.spec.tolerations[] | select(.key == "virtual-node.liqo.io/not-allowed")] | length')
  a=$(json "$R" "$p" '[.. | objects | select(.key? == "liqo.io/type")] | length')
  [ "$t" = 0 ] && [ "$a" = 0 ] || fail "DaemonSet pod $p was changed: $(json "$R" "$p" .spec)"
  [ "$(node_of "$R" "$p")" != "$VNODE" ] || fail "a DaemonSet pod went to the virtual node"
done
pod "$PLAIN" bare
same "plain namespace tolerations" "$(json "$PLAIN" bare '.spec.tolerations')" "[$NR,$UN]"
same "plain namespace affinity" "$(json "$PLAIN" bare '.spec.affinity')" null

say "the grace period follows ClusterConfig offloadingConfig.unreachableGraceSeconds"
patch_config "$A" '{"spec":{"offloadingConfig":{"unreachableGraceSeconds":120}}}'
[ "$(jget "$A" '{.spec.offloadingConfig.unreachableGraceSeconds}' clusterconfig configuration)" = 120 ] || fail "not set"
expect_fail "a negative grace period is refused by the CRD" \
  kc "$A" patch clusterconfig configuration --type=merge -p '{"spec":{"offloadingConfig":{"unreachableGraceSeconds":-1}}}'
g120() {
  kc "$A" delete pod -n "$R" grace --grace-period=0 --force >/dev/null 2>&1 || true
  pod "$R" grace
  [ "$(json "$R" grace '[.spec.tolerations[] | select(.key | startswith("node.kubernetes.io/")) | .tolerationSeconds]')" = "[120,120]" ]
}
wait_for 20 "a new Remote pod tolerates unreachable/not-ready for 120 s (now: $(json "$R" grace '.spec.tolerations' 2>/dev/null))" g120
# The pod's own longer toleration is kept; an unbounded one too (nothing added for that key).
pod "$R" longer '  tolerations:
  - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 900}
  - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute}'
same "own longer and unbounded tolerations kept" "$(json "$R" longer '.spec.tolerations')" \
  '[{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":900},{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute"},'"$VT"']'
patch_config "$A" '{"spec":{"offloadingConfig":{"unreachableGraceSeconds":null}}}'

say "a malformed review (with the API server's client certificate) gets a clear 400; the webhook's metrics count what it did"
jpath "$A" '{.data.ca\.crt}' secret -n cliqo cliqo-webhook-certs | base64 -d >"$T/ca.crt"
client=(--cert "$(webhook_client_cert "$A")" --key "$(webhook_client_key "$A")")
code=$(curl -s -o "$T/body" -w '%{http_code}' --cacert "$T/ca.crt" "${client[@]}" -H 'Content-Type: application/json' \
  --data-binary '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":7}}' \
  "https://127.0.0.1:$(webhook_port "$A")/mutate-pods") || true
[ "$code" = 400 ] || fail "malformed review: HTTP $code"
[ "$(jq -r .message "$T/body")" = "request.uid is not a string" ] || fail "400 body: $(cat "$T/body")"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$T/ca.crt" "${client[@]}" --data-binary 'not json' \
  "https://127.0.0.1:$(webhook_port "$A")/validate-pods") || true
[ "$code" = 400 ] || fail "not JSON: HTTP $code"
m=$(curl -s "http://127.0.0.1:$(http_port "$A")/metrics")
grep -qE '^cliqo_admission_requests_total\{webhook="pod-offloading",result="patched"\} [1-9]' <<<"$m" ||
  fail "no patched count: $(grep cliqo_admission <<<"$m")"
grep -qE '^cliqo_admission_requests_total\{webhook="pod-offloading",result="invalid"\} [1-9]' <<<"$m" ||
  fail "no invalid count"
grep -qE '^cliqo_admission_request_duration_seconds_count\{webhook="pod-offloading"\} [1-9]' <<<"$m" ||
  fail "no latency histogram"
grep -qE '^cliqo_offloading_namespaces\{phase="NoClusterSelected"\} [1-9]' <<<"$m" || fail "no phase gauge"
# The API server's connections to the webhooks (and the curl calls above) went through the TLS layer.
grep -qE '^cliqo_webhook_connections_total\{outcome="handshake"\} [1-9]' <<<"$m" ||
  fail "no webhook connection count: $(grep cliqo_webhook <<<"$m")"
pass "Remote, Local, LocalAndRemote, selector matching nothing, merges, DaemonSet, plain namespace, grace period, 400, metrics"
