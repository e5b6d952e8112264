#!/usr/bin/env bash
# The virtual kubelet's namespace mapping (docs/offloading.md, "Each virtual kubelet"): an offloaded namespace
# gets its NamespaceMap entry and its namespace on B, and B's answer in the NamespaceOffloading's conditions;
# removing the offloading removes the namespace's pods first, then the entry, then B's namespace; an
# EnforceSameName clash with a namespace B already has is reported, B's namespace untouched; a selector that does
# not match asks nothing of B.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/vk-lib.sh"
NS=e2e-map
SAME=e2e-same
NOSEL=e2e-nosel
SIM_NODE=
cleanup() {
  [ -z "$SIM_NODE" ] || kc "$B" annotate node "$SIM_NODE" sim.cliqo.io/ready- >/dev/null 2>&1 || true
  unoffload "$NS" "$NOSEL" "$SAME"
  kc "$B" delete namespace "$SAME" --ignore-not-found >/dev/null 2>&1 || true
}
trap 'rc=$?; cleanup >/dev/null 2>&1 || true; (exit $rc); off_on_exit' EXIT # the test's status, not cleanup's
ensure_agents
ids
wait_shared 60

say "offload $NS: NamespaceMap entry, namespace on $B, conditions"
offload "$NS"
wait_mapped "$NS"
RNS=$(remote_ns "$NS")
case "$RNS" in "$NS-$A"-??????) ;; *) fail "remote name $RNS is not $NS-$A-<6 hex> (DefaultName)" ;; esac
[ "$(jpath "$B" '{.metadata.labels.virtualkubelet\.liqo\.io/origin}' namespace "$RNS")" = "$A_ID" ] ||
  fail "namespace $RNS on $B is not labelled with A's ID"
[ "$(nsmap_json | jq -r --arg n "$NS" '.status.currentMapping[$n].phase')" = Accepted ] ||
  fail "entry $NS not Accepted in B's NamespaceMap"
[ "$(cond "$NS" OffloadingRequired)" = True ] || fail "OffloadingRequired is not True"
[ "$(cond_reason "$NS" Ready)" = Accepted ] || fail "Ready's reason is not Accepted"
# The conditions belong to the virtual kubelet's field manager (server-side apply).
kget "$A" namespaceoffloading offloading -n "$NS" --show-managed-fields |
  jq -e --arg m "cliqo-vk-$B_ID" --arg b "f:$B_ID" '[.metadata.managedFields[] | select(.manager == $m and .operation == "Apply"
    and .fieldsV1["f:status"]["f:remoteNamespacesConditions"][$b] != null)] | length == 1' >/dev/null ||
  fail "no status fields owned by field manager cliqo-vk-$B_ID"

say "a pod there runs on $B; removing the offloading removes it first, then the entry, then the namespace"
wait_default_sa "$A" "$NS"
bare_pod "$NS" solo
wait_for 60 "pod solo Running on both sides" all_running "$NS" 1
# B's node holding the pod does not finish deletions until released: the order can be seen.
SIM_NODE=$(jpath "$B" '{.spec.nodeName}' pod -n "$RNS" solo)
kc "$B" annotate node "$SIM_NODE" sim.cliqo.io/ready=unknown --overwrite >/dev/null
kc "$A" delete namespaceoffloading offloading -n "$NS" --wait=false >/dev/null
wait_for 30 "pod solo deleted on A, then on $B" eval '[ -n "$(jget "$B" "{.metadata.deletionTimestamp}" pod -n "$RNS" solo)" ]'
sleep 2
[ -n "$(remote_ns "$NS")" ] || fail "the entry was removed while pod solo was still there"
[ -z "$(jget "$B" '{.metadata.deletionTimestamp}' namespace "$RNS")" ] ||
  fail "namespace $RNS deleted on $B before its pod"
kc "$B" annotate node "$SIM_NODE" sim.cliqo.io/ready- >/dev/null
SIM_NODE=
wait_for 30 "pod solo gone on A" eval "! kc \"$A\" get pod -n \"$NS\" solo >/dev/null 2>&1"
wait_for 30 "entry $NS gone from the NamespaceMap" eval '[ -z "$(remote_ns "$NS")" ]'
wait_for 60 "namespace $RNS gone from $B" eval "! kc \"$B\" get namespace \"$RNS\" >/dev/null 2>&1"

say "EnforceSameName clashing with a namespace $B has: reported, B's namespace untouched"
kc "$B" create namespace "$SAME" >/dev/null
offload "$SAME" EnforceSameName
wait_for 30 "Ready=False AlreadyExists for $SAME" eval '[ "$(cond "$SAME" Ready)" = False ] && [ "$(cond_reason "$SAME" Ready)" = AlreadyExists ]'
msg=$(cond_field "$SAME" Ready message)
case "$msg" in *"exists on the provider"*) ;; *) fail "the condition does not say why: $msg" ;; esac
[ -z "$(jpath "$B" '{.metadata.labels.virtualkubelet\.liqo\.io/origin}' namespace "$SAME")" ] ||
  fail "B's own namespace $SAME was taken over"
kc "$A" delete namespaceoffloading offloading -n "$SAME" >/dev/null
wait_for 30 "entry $SAME gone from the NamespaceMap" eval '[ -z "$(remote_ns "$SAME")" ]'
kc "$B" get namespace "$SAME" >/dev/null 2>&1 || fail "B's own namespace $SAME was deleted"
kc "$B" delete namespace "$SAME" --wait=false >/dev/null

say "a clusterSelector that does not match this provider asks nothing of it"
kc "$A" create namespace "$NOSEL" >/dev/null
kc "$A" apply -f - >/dev/null <<JSON
{"apiVersion":"offloading.liqo.io/v1alpha1","kind":"NamespaceOffloading",
 "metadata":{"name":"offloading","namespace":"$NOSEL"},
 "spec":{"clusterSelector":{"nodeSelectorTerms":[{"matchExpressions":[
   {"key":"liqo.io/remote-cluster-id","operator":"In","values":["someone-else"]}]}]}}}
JSON
sleep 3
[ -z "$(remote_ns "$NOSEL")" ] || fail "an entry for $NOSEL though its selector does not match"
! has_key "$NOSEL" || fail "conditions for $NOSEL though its selector does not match"
# Changing the selector to match makes it offloaded.
kc "$A" patch namespaceoffloading offloading -n "$NOSEL" --type=merge -p \
  "{\"spec\":{\"clusterSelector\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"liqo.io/remote-cluster-id\",\"operator\":\"In\",\"values\":[\"$B_ID\"]}]}]}}}" >/dev/null
wait_mapped "$NOSEL"

cleanup
trap off_on_exit EXIT
check_logs
pass "entry, namespace and conditions; pods, then entry, then namespace on removal; clash reported; selectors followed"
