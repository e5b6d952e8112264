#!/usr/bin/env bash
# Namespaces (issue 17 point 11, docs/security.md "Namespaces"). On B: A's NamespaceMap asking for
# `monitoring` (A offloads its namespace monitoring with EnforceSameName) is refused NotAllowed, B gets no such
# namespace; once B's ClusterConfig lists it in allowedRemoteNamespaces it is created for A; reserved
# names are refused whatever the list says. At home: `cliqoctl offload` refuses kube-system and cliqo (exit
# non-zero, nothing written), and a NamespaceOffloading written by hand in kube-system is Invalid and the
# namespace never labelled for the pod webhook.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
NS=monitoring
cleanup() {
  kc "$A" delete namespaceoffloading offloading -n kube-system --ignore-not-found --wait=false >/dev/null
  cq "$A" unoffload namespace "$NS" >/dev/null 2>&1
  kc "$A" delete namespace "$NS" --ignore-not-found --wait=false >/dev/null
  wait_for 90 "namespace $NS gone from $B" eval "! kc \"$B\" get namespace \"$NS\""
  patch_config "$B" '{"spec":{"offloadingConfig":{"allowedRemoteNamespaces":null}}}'
}
trap 'rc=$?; cleanup >/dev/null 2>&1 || true; (exit $rc); sec_on_exit' EXIT # keeps the test's exit status
ensure_agents
ids
wait_shared 60
# The conditions B's answer leaves in A's NamespaceOffloading of NS (Ready's reason and message).
ready_field() {
  kget "$A" namespaceoffloading offloading -n "$1" 2>/dev/null |
    jq -r --arg b "$B_ID" --arg f "$2" '.status.remoteNamespacesConditions[$b][]? | select(.type == "Ready") | .[$f]'
}

say "$A offloads $NS as $NS on $B: refused NotAllowed, no namespace made"
kc "$B" get namespace "$NS" >/dev/null 2>&1 && fail "$B already has a namespace $NS"
kc "$A" create namespace "$NS" >/dev/null || fail "cannot create $NS on $A"
cq "$A" offload namespace "$NS" --mapping EnforceSameName --strategy Remote >/dev/null || fail "offload $NS failed"
wait_for 60 "Ready=False NotAllowed for $NS" eval '[ "$(ready_field "$NS" reason)" = NotAllowed ]'
case "$(ready_field "$NS" message)" in *allowedRemoteNamespaces*) ;; *) fail "the condition does not say why: $(ready_field "$NS" message)" ;; esac
kc "$B" get namespace "$NS" >/dev/null 2>&1 && fail "$B made namespace $NS though it is not allowed"

say "$B allows it: created for $A"
patch_config "$B" '{"spec":{"offloadingConfig":{"allowedRemoteNamespaces":["monitor*"]}}}'
wait_for 60 "Ready=True for $NS" eval '[ "$(ready_field "$NS" status)" = True ]'
[ "$(jget "$B" '{.metadata.labels.virtualkubelet\.liqo\.io/origin}' namespace "$NS")" = "$A_ID" ] ||
  fail "namespace $NS on $B is not labelled for $A"

say "reserved names stay refused whatever the list says: kube-system at home, then on $B"
rc=0
out=$(cq "$A" offload namespace kube-system 2>&1) || rc=$?
[ "$rc" != 0 ] || fail "cliqoctl offload kube-system succeeded: $out"
grep -q "reserved" <<<"$out" || fail "cliqoctl offload kube-system does not say why: $out"
rc=0
out=$(cq "$A" offload namespace cliqo 2>&1) || rc=$?
[ "$rc" != 0 ] || fail "cliqoctl offload cliqo succeeded: $out"
grep -q "reserved" <<<"$out" || fail "cliqoctl offload cliqo does not say why: $out"
[ -z "$(kc "$A" get namespaceoffloadings -n kube-system -o name)" ] || fail "cliqoctl wrote a NamespaceOffloading in kube-system"
[ -z "$(kc "$A" get namespaceoffloadings -n cliqo -o name)" ] || fail "cliqoctl wrote a NamespaceOffloading in cliqo"

say "a NamespaceOffloading written by hand in kube-system: Invalid, never labelled, not asked of $B"
patch_config "$B" '{"spec":{"offloadingConfig":{"allowedRemoteNamespaces":["*"]}}}'
kc "$A" apply -f - >/dev/null <<EOF || fail "cannot write the NamespaceOffloading"
{"apiVersion":"offloading.liqo.io/v1alpha1","kind":"NamespaceOffloading","metadata":{"name":"offloading","namespace":"kube-system"},
 "spec":{"namespaceMappingStrategy":"EnforceSameName","podOffloadingStrategy":"Remote"}}
EOF
wait_for 30 "kube-system's NamespaceOffloading Invalid" eval '[ "$(jget "$A" "{.status.offloadingPhase}" namespaceoffloading -n kube-system offloading)" = Invalid ]'
case "$(jget "$A" '{.status.message}' namespaceoffloading -n kube-system offloading)" in *reserved*) ;; *) fail "Invalid without a reason" ;; esac
[ -z "$(jget "$A" '{.metadata.labels.liqo\.io/scheduling-enabled}' namespace kube-system)" ] || fail "kube-system labelled for the pod webhook"
nsmap_has() { kget "$B" namespacemaps -A | jq -e --arg a "$A_ID" '.items[] | select(.metadata.name == $a) | .spec.desiredMapping["kube-system"]' >/dev/null; }
! nsmap_has || fail "A's virtual kubelet asked $B for kube-system"
kc "$A" delete namespaceoffloading offloading -n kube-system --wait=true --timeout=30s >/dev/null || fail "cannot delete it"
pass "remote namespaces limited to DefaultName and $B's allow list; reserved namespaces refused at home and on $B"
