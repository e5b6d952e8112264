#!/usr/bin/env bash
# cliqoctl uninstall: refuses while a ForeignCluster has a peering; a finalizer nobody removes makes it fail
# within its timeout; --force finishes within its timeout even then and leaves no cliqo object (CRDs,
# namespaces, RBAC); uninstalling nothing succeeds; status then says cliqo is not installed.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
ensure_installed
trap 'kc "$C" patch foreigncluster held --type=merge -p "{\"metadata\":{\"finalizers\":null}}" >/dev/null 2>&1 || true' EXIT

say "refuses with a peered ForeignCluster"
make_fc peered 9a9a9a9a-0000-4000-8000-000000000001 Established
run_cq rc out err uninstall --timeout 20s
[ "$rc" -eq 1 ] || fail "exit $rc, want 1"
one_error_line "$err"
contains "peering named" "$err" "peered"
kc "$C" get namespace cliqo >/dev/null || fail "refused uninstall removed the namespace"
kc "$C" get foreigncluster peered >/dev/null || fail "refused uninstall removed the ForeignCluster"
set_condition peered OutgoingPeering None
kc "$C" patch foreigncluster peered --type=merge -p '{"metadata":{"finalizers":["cliqo.io/peering"]}}' >/dev/null
run_cq rc out err uninstall --timeout 20s
[ "$rc" -eq 1 ] || fail "the agent's finalizer should count as a peering: exit $rc"
kc "$C" patch foreigncluster peered --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null

say "a foreign finalizer without --force: fails within the timeout"
make_fc held 9a9a9a9a-0000-4000-8000-000000000002
kc "$C" patch foreigncluster held --type=merge -p '{"metadata":{"finalizers":["example.com/hold"]}}' >/dev/null
start=$(date +%s)
run_cq rc out err uninstall --timeout 3s
[ "$rc" -eq 1 ] || fail "held: exit $rc: $err"
[ $(($(date +%s) - start)) -le 15 ] || fail "uninstall did not respect its timeout"
contains "held FC named" "$err" "example.com/hold"

say "--force with a peering and a foreign finalizer: bounded, and nothing left"
make_fc peered 9a9a9a9a-0000-4000-8000-000000000001 Established
kc "$C" patch foreigncluster peered --type=merge -p '{"metadata":{"finalizers":["cliqo.io/peering"]}}' >/dev/null
kc "$C" create namespace cliqo-tenant-e2e-abcdef >/dev/null
kc "$C" label namespace cliqo-tenant-e2e-abcdef discovery.liqo.io/tenant-namespace=true discovery.liqo.io/cluster-id=9a9a9a9a-0000-4000-8000-000000000001 >/dev/null
# The agent's webhook configurations (docs/offloading.md) go too: left behind, with failurePolicy Fail, they would
# refuse pods in namespaces still labelled for them.
for kind in MutatingWebhookConfiguration:cliqo-pod-offloading ValidatingWebhookConfiguration:cliqo-offer-enforcement; do
  kc "$C" apply -f - >/dev/null <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: ${kind%%:*}
metadata: {name: ${kind#*:}, labels: {app.kubernetes.io/part-of: cliqo}}
webhooks: []
YAML
done
# Every object with the install's label, of every kind the API server lists, in every namespace: what
# uninstall must take away (issue 18: the Role and RoleBinding in kube-node-lease too).
labelled() {
  local kinds
  kinds=$(kc "$C" api-resources --verbs=list -o name | paste -sd, -)
  kc "$C" get "$kinds" -A -l app.kubernetes.io/part-of=cliqo --no-headers \
    -o custom-columns='KIND:.kind,NS:.metadata.namespace,NAME:.metadata.name' 2>/dev/null | sort
}
before=$(labelled)
for want in 'Namespace +<none> +cliqo$' 'Role +kube-node-lease +cliqo-agent$' 'RoleBinding +kube-node-lease +cliqo-agent$' \
  'ClusterRole +<none> +cliqo-agent$' 'CustomResourceDefinition +<none> +foreignclusters.discovery.liqo.io$' \
  'ServiceAccount +cliqo +cliqo-agent$' 'MutatingWebhookConfiguration +<none> +cliqo-pod-offloading$'; do
  grep_q -E "^$want" <<<"$before" || fail "the install has no object like '$want': $before"
done
# No agent runs here (no Lease cliqo/cliqo-agent), so --force does not wait for one to unpeer: it removes
# cliqo's finalizers at once and gives the namespaces the whole timeout (kube-controller-manager takes 5 s at
# least to delete a namespace, more on a busy machine; with an agent running, half of it went to the
# ForeignClusters first, and 20 s then 40 s each failed once on a loaded two-core machine).
start=$(date +%s)
run_cq rc out err uninstall --force --timeout 40s
elapsed=$(($(date +%s) - start))
[ "$rc" -eq 0 ] || fail "--force: exit $rc: $err"
[ "$elapsed" -le 45 ] || fail "--force took ${elapsed}s with --timeout 40s"
contains "finalizers removed" "$err" "removed the finalizers"
contains "no agent to wait for" "$err" "no Lease cliqo/cliqo-agent: no agent campaigns: removing finalizers without waiting"
left=$(kc "$C" get crd -o name | grep -E 'liqo\.io$' || true)
[ -z "$left" ] || fail "CRDs left: $left"
left=$(kc "$C" get namespaces -o name | grep -E 'namespace/cliqo' || true)
[ -z "$left" ] || fail "namespaces left: $left"
left=$(kc "$C" get clusterroles,clusterrolebindings -o name | grep cliqo || true)
[ -z "$left" ] || fail "RBAC left: $left"
left=$(kc "$C" get clusterroles,clusterrolebindings,mutatingwebhookconfigurations,validatingwebhookconfigurations \
  -l app.kubernetes.io/part-of=cliqo -o name)
[ -z "$left" ] || fail "labelled objects left: $left"
after=$(labelled)
[ -z "$after" ] || fail "objects with the install's label left after uninstall: $after"
say "uninstall removed all $(wc -l <<<"$before") objects with the install's label, of every kind, in every namespace"

say "uninstall of nothing succeeds; status says not installed"
run_cq rc out err uninstall
[ "$rc" -eq 0 ] || fail "second uninstall: exit $rc: $err"
contains "nothing to do" "$out" "nothing to uninstall"
run_cq rc out err status
[ "$rc" -eq 0 ] || fail "status: exit $rc: $err"
contains "status hint" "$out" "not installed"
run_cq rc out err status -o json
[ "$out" = '{"installed": false}' ] || fail "status json: $out"
run_cq rc out err uninstall --frobnicate
[ "$rc" -eq 2 ] || fail "bad flag: exit $rc"
one_error_line "$err"
pass
