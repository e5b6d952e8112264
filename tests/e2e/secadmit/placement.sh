#!/usr/bin/env bash
# Placement stays within the offer (issue 17 point 8, docs/security.md "Placement"): A's virtual kubelet
# creates pods on B (dry-run, as the virtual kubelet's ServiceAccount, which is what A holds) that name one
# of B's nodes, tolerate B's control-plane taint, use one of B's PriorityClasses or RuntimeClasses, or have
# a node affinity on B's node names: B's pod webhook refuses each, naming the field. Once B's ClusterConfig
# allows them (spec.offloadingConfig.placement) the same pods are admitted; restored, refused again.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
NS=sec-placement
PC=sec-placement-high
RC=sec-placement-rc
RNS=
cleanup() {
  patch_config "$B" '{"spec":{"offloadingConfig":{"placement":null}}}'
  kc "$B" delete priorityclass "$PC" --ignore-not-found >/dev/null
  kc "$B" delete runtimeclass "$RC" --ignore-not-found >/dev/null
  unoffload_ns "$NS"
}
trap 'rc=$?; cleanup >/dev/null 2>&1 || true; (exit $rc); sec_on_exit' EXIT # keeps the test's exit status
ensure_agents
ids
wait_shared 60

say "offload $NS from $A; B's PriorityClass $PC and RuntimeClass $RC"
offload_ns "$NS"
kc "$B" apply -f - >/dev/null <<EOF || fail "cannot create B's classes"
{"apiVersion":"v1","kind":"List","items":[
 {"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"$PC"},"value":100000},
 {"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"$RC"},"handler":"runc"}]}
EOF
NODE=$(jpath "$B" '{.items[0].metadata.name}' nodes)
VK=$(vk_user "$A_ID")

# pod NAME SPEC_FRAGMENT: a pod with one small container and the fragment's fields.
pod() {
  printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","namespace":"%s"},"spec":{%s"containers":[{"name":"c","image":"busybox","resources":{"requests":{"cpu":"10m","memory":"16Mi"}}}]}}' \
    "$1" "$RNS" "$2"
}
# as_vk NAME SPEC_FRAGMENT: the dry-run creation as A's virtual kubelet; its output.
as_vk() { pod "$1" "$2" | kc "$B" --as="$VK" create --dry-run=server -f - 2>&1; }
# CASES[name]="FIELD the refusal names|SPEC FRAGMENT"
declare -A CASES=(
  [node-name]="spec.nodeName \"$NODE\"|\"nodeName\":\"$NODE\","
  [toleration]='spec.tolerations[0].key "node-role.kubernetes.io/master"|"tolerations":[{"key":"node-role.kubernetes.io/master","operator":"Exists","effect":"NoSchedule"}],'
  [priority]="spec.priorityClassName \"$PC\"|\"priorityClassName\":\"$PC\","
  [runtime]="spec.runtimeClassName \"$RC\"|\"runtimeClassName\":\"$RC\","
  [affinity]="nodeSelectorTerms[0].matchExpressions[0]|\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":[\"$NODE\"]}]}]}}},"
)
field() { echo "${CASES[$1]%%|*}"; }
fragment() { echo "${CASES[$1]#*|}"; }
refused() { # CASE: refused by B's webhook, naming the field
  local out
  out=$(as_vk "sec-$1" "$(fragment "$1")") && return 1
  grep -qF "$(field "$1")" <<<"$out"
}

say "a plain pod is admitted (the check is not a blanket refusal)"
out=$(as_vk sec-plain "") || fail "a plain pod was refused: $out"

say "each placement field is refused, naming the field"
for c in "${!CASES[@]}"; do
  out=$(as_vk "sec-$c" "$(fragment "$c")") && fail "$c: admitted: $out"
  grep -qF "$(field "$c")" <<<"$out" || fail "$c: refused without naming $(field "$c"): $out"
done

say "B's ClusterConfig allows them: admitted"
patch_config "$B" "{\"spec\":{\"offloadingConfig\":{\"placement\":{\"allowNodeNames\":true,
  \"allowedTolerations\":[\"node-role.kubernetes.io/master\"],\"allowedPriorityClasses\":[\"$PC\"],
  \"allowedRuntimeClasses\":[\"$RC\"]}}}}"
for c in "${!CASES[@]}"; do
  wait_for 20 "$c admitted once allowed" eval "as_vk sec-$c \"\$(fragment $c)\""
done

say "restored: refused again"
patch_config "$B" '{"spec":{"offloadingConfig":{"placement":null}}}'
for c in "${!CASES[@]}"; do
  wait_for 20 "$c refused again" refused "$c"
done
[ "$(kc "$B" get pods -n "$RNS" -o name | wc -l)" = 0 ] || fail "a dry run left a pod on $B"
pass "placement fields refused on $B unless its ClusterConfig allows them"
