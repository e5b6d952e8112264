#!/usr/bin/env bash
# NamespaceOffloading on A (docs/offloading.md, "Which namespaces go where"): `cliqoctl offload` creates and
# updates it, the agent labels the namespace, reports the remote name and the phase (from the virtual nodes the
# selector matches and the keys the virtual kubelets write), Invalid with the reason for an invalid selector or a
# wrong name, NoClusterSelected for a selector matching nothing; deletion waits (Terminating, finalizer) until
# every provider's key is gone, then the label goes. Providers other than B are played by a fake virtual node
# and keys written by hand, as a virtual kubelet would (its key of status.remoteNamespacesConditions).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
NS=e2e-nsof
NS2=e2e-nsof-wrong
NS3=e2e-nsof-label
FAKE=e2e-fake-provider
FAKE_NODE=liqo-$FAKE

cleanup() {
  kc "$B" patch clusterconfig configuration --type=merge \
    -p '{"spec":{"offloadingConfig":{"allowedRemoteNamespaces":null}}}'
  kc "$A" delete node "$FAKE_NODE" --ignore-not-found --wait=false
  for n in "$NS" "$NS2"; do
    kc "$A" patch namespaceoffloading -n "$n" offloading --subresource=status --type=merge \
      -p '{"status":{"remoteNamespacesConditions":null}}' || true
  done
  kc "$A" delete namespace "$NS" "$NS2" "$NS3" --ignore-not-found --wait=true --timeout=60s
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
cleanup >/dev/null 2>&1 || true
# EnforceSameName below asks B for a namespace named as A's own: B lets consumers claim only their
# DefaultName namespaces unless its operator allows more (docs/security.md, "Namespaces").
kc "$B" patch clusterconfig configuration --type=merge \
  -p "{\"spec\":{\"offloadingConfig\":{\"allowedRemoteNamespaces\":[\"$NS\"]}}}" >/dev/null ||
  fail "cannot allow $NS on $B"

nsof() { jget "$A" "$1" namespaceoffloading -n "${2:-$NS}" offloading; }
phase() { nsof '{.status.offloadingPhase}' "$@"; }
labelled() { [ "$(jget "$A" '{.metadata.labels.liqo\.io/scheduling-enabled}' namespace "$1")" = true ]; }
# key ID STATUS [REASON]: what a virtual kubelet writes for its provider; `key ID null` removes it.
key() {
  local v
  if [ "$2" = null ]; then v=null; else
    v="[{\"type\":\"OffloadingRequired\",\"status\":\"True\"},{\"type\":\"Ready\",\"status\":\"$2\"${3:+,\"reason\":\"$3\"}}]"
  fi
  kc "$A" patch namespaceoffloading -n "$NS" offloading --subresource=status --type=merge \
    -p "{\"status\":{\"remoteNamespacesConditions\":{\"$1\":$v}}}" >/dev/null || fail "cannot write key $1"
}
wait_phase() { wait_for "${2:-20}" "phase $1 (now: $(phase))" eval "[ \"\$(phase)\" = $1 ]"; }

say "offload $NS with the CLI: object, label, finalizer, remote name, phase"
kc "$A" create namespace "$NS" >/dev/null
out=$(cq "$A" offload namespace "$NS" --strategy Remote 2>&1) || fail "offload failed: $out"
[[ "$out" == "namespaceoffloading $NS/offloading created (strategy Remote, mapping DefaultName)" ]] ||
  fail "unexpected output: $out"
[ "$(nsof '{.spec.podOffloadingStrategy}/{.spec.namespaceMappingStrategy}')" = Remote/DefaultName ] ||
  fail "spec: $(nsof '{.spec}')"
wait_for 20 "$NS labelled liqo.io/scheduling-enabled=true" labelled "$NS"
[ "$(nsof '{.metadata.finalizers[*]}')" = offloading.cliqo.io/namespace ] || fail "finalizer: $(nsof '{.metadata.finalizers}')"
hash=$(printf %s "$A_ID" | sha256sum | cut -c1-6)
wait_for 20 "remote name" eval "[ \"\$(nsof '{.status.remoteNamespaceName}')\" = $NS-$A-$hash ]"
# B's virtual node is selected: InProgress until its virtual kubelet reports the namespace ready.
wait_for 20 "phase InProgress or Ready (now: $(phase))" eval '[[ "$(phase)" =~ ^(InProgress|Ready)$ ]]'
[ "$(nsof '{.status.observedGeneration}')" = "$(nsof '{.metadata.generation}')" ] || fail "observedGeneration"

say "EnforceSameName: the remote name is the namespace's own"
cq "$A" offload namespace "$NS" --mapping EnforceSameName >/dev/null || fail "offload --mapping failed"
wait_for 20 "remote name $NS" eval "[ \"\$(nsof '{.status.remoteNamespaceName}')\" = $NS ]"
[ "$(nsof '{.spec.podOffloadingStrategy}')" = Remote ] || fail "an update dropped the strategy"

say "a selector matching no virtual node: NoClusterSelected, and --wait says so"
rc=0
out=$(cq "$A" offload namespace "$NS" --selector 'liqo.io/remote-cluster-id=nobody' --wait --timeout 20s 2>&1) || rc=$?
[ "$rc" = 1 ] || fail "--wait with nothing selected: exit $rc: $out"
grep -q '^phase NoClusterSelected' <<<"$out" || fail "--wait did not print the phase: $out"
[ "$(phase)" = NoClusterSelected ] || fail "phase $(phase)"

say "providers: a fake virtual node, its key written by hand as a virtual kubelet does"
kc "$A" apply -f - >/dev/null <<EOF || fail "cannot create the fake virtual node"
apiVersion: v1
kind: Node
metadata:
  name: $FAKE_NODE
  labels: {liqo.io/type: virtual-node, type: virtual-node, liqo.io/remote-cluster-id: $FAKE}
spec:
  taints: [{key: virtual-node.liqo.io/not-allowed, value: "true", effect: NoExecute}]
EOF
cq "$A" offload namespace "$NS" --selector "liqo.io/remote-cluster-id=$FAKE" >/dev/null || fail "selector update"
wait_phase InProgress
key "$FAKE" True
wait_phase Ready
out=$(cq "$A" offload namespace "$NS" --wait --timeout 20s 2>&1) || fail "--wait on a Ready namespace: $out"
grep -q '^phase Ready, remote namespace e2e-nsof$' <<<"$out" || fail "--wait output: $out"
grep -q "provider $FAKE: OffloadingRequired=True Ready=True" <<<"$out" || fail "--wait conditions: $out"
key "$FAKE" False Pending
wait_phase InProgress
key "$FAKE" False AlreadyExists
wait_phase AllFailed
# Both B and the fake: the fake failed, B is still working on it (or ready): SomeFailed.
cq "$A" offload namespace "$NS" --selector '' >/dev/null || fail "selector removal"
[ -z "$(nsof '{.spec.clusterSelector}')" ] || fail "--selector '' left a selector"
wait_phase SomeFailed

say "an invalid selector: Invalid with the reason, the namespace stays labelled, nothing is hidden"
kc "$A" patch namespaceoffloading -n "$NS" offloading --type=merge \
  -p '{"spec":{"clusterSelector":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"region","operator":"In"}]}]}}}' \
  >/dev/null || fail "cannot write an invalid selector"
wait_phase Invalid
[ "$(nsof '{.status.message}')" = "term 0, expression 0: In and NotIn need at least one value" ] ||
  fail "message: $(nsof '{.status.message}')"
labelled "$NS" || fail "an invalid NamespaceOffloading must keep the label (it still exists)"
kc "$A" get namespaceoffloading -n "$NS" -o wide | grep_q 'In and NotIn need at least one value' ||
  fail "the Message column does not show the reason"
kc "$A" patch namespaceoffloading -n "$NS" offloading --type=json -p '[{"op":"remove","path":"/spec/clusterSelector"}]' \
  >/dev/null || fail "cannot fix the selector"
wait_phase SomeFailed
[ -z "$(nsof '{.status.message}')" ] || fail "the message stayed after the fix"

say "a NamespaceOffloading not named 'offloading' is Invalid and ignored"
kc "$A" create namespace "$NS2" >/dev/null
kc "$A" apply -n "$NS2" -f - >/dev/null <<EOF || fail "cannot create it"
apiVersion: offloading.liqo.io/v1alpha1
kind: NamespaceOffloading
metadata: {name: other}
spec: {podOffloadingStrategy: Remote}
EOF
other() { jget "$A" "$1" namespaceoffloading -n "$NS2" other; }
wait_for 20 "Invalid (now: $(other '{.status.offloadingPhase}'))" eval '[ "$(other "{.status.offloadingPhase}")" = Invalid ]'
[ "$(other '{.status.message}')" = "a NamespaceOffloading must be named 'offloading' (one per namespace)" ] ||
  fail "message: $(other '{.status.message}')"
sleep 1
labelled "$NS2" && fail "$NS2 was labelled for a NamespaceOffloading with another name"
[ -z "$(other '{.metadata.finalizers}')" ] || fail "finalizer on an ignored NamespaceOffloading"

say "a namespace labelled by hand without a NamespaceOffloading loses the label"
kc "$A" create namespace "$NS3" >/dev/null
kc "$A" label namespace "$NS3" liqo.io/scheduling-enabled=true >/dev/null
wait_for 20 "$NS3 unlabelled" eval "! labelled $NS3"

say "cliqoctl status shows the offloaded namespaces"
out=$(cq "$A" status 2>&1) || fail "status failed: $out"
grep -qE "^$NS +Remote +$NS +SomeFailed +.*$FAKE=False" <<<"$out" || fail "status: no line for $NS: $out"
out=$(cq "$A" status -o json 2>&1) || fail "status -o json failed: $out"
python3 - "$out" "$NS" "$FAKE" <<'PY' || fail "status json: $out"
import json, sys
d = json.loads(sys.argv[1])
[o] = [o for o in d["offloading"] if o["namespace"] == sys.argv[2]]
assert o["name"] == "offloading" and o["podOffloadingStrategy"] == "Remote" and o["phase"] == "SomeFailed"
assert o["remoteNamespaceName"] == sys.argv[2] and o["clusters"][sys.argv[3]]["ready"] == "False"
assert o["clusters"][sys.argv[3]]["reason"] == "AlreadyExists"
PY

say "unoffload: Terminating until every provider removed its key; a gone provider's key is removed by the agent"
key e2e-gone-provider True
[ -n "$(nsof '{.status.remoteNamespacesConditions.e2e-gone-provider}')" ] || fail "cannot read the key back"
cq "$A" unoffload namespace "$NS" >/dev/null || fail "unoffload failed"
wait_phase Terminating
wait_for 20 "the key of a provider without a virtual node removed" \
  eval "[ -z \"\$(nsof '{.status.remoteNamespacesConditions.e2e-gone-provider}')\" ]"
sleep 2
[ -n "$(nsof '{.metadata.deletionTimestamp}')" ] || fail "the NamespaceOffloading went while a provider holds it"
labelled "$NS" || fail "the label went while a provider holds the namespace"
rc=0
out=$(cq "$A" unoffload namespace "$NS" --wait --timeout 3s 2>&1) || rc=$?
[ "$rc" = 1 ] && grep -q "provider $FAKE:" <<<"$out" || fail "unoffload --wait while held: exit $rc: $out"
key "$FAKE" null
wait_for 30 "the NamespaceOffloading gone" eval "! kc $A get namespaceoffloading -n $NS offloading"
wait_for 20 "$NS unlabelled" eval "! labelled $NS"

say "unoffload --wait on a namespace nobody holds returns when it is gone"
cq "$A" offload namespace "$NS" >/dev/null || fail "offload again"
wait_for 20 "labelled again" labelled "$NS"
kc "$A" delete node "$FAKE_NODE" >/dev/null
out=$(cq "$A" unoffload namespace "$NS" --wait --timeout 60s 2>&1) || fail "unoffload --wait: $out"
grep -q "released by every provider" <<<"$out" || fail "unoffload --wait output: $out"
wait_for 20 "$NS unlabelled" eval "! labelled $NS"
rc=0
out=$(cq "$A" unoffload namespace "$NS" 2>&1) || rc=$?
[ "$rc" = 1 ] && grep -q "is not offloaded" <<<"$out" || fail "unoffload of a plain namespace: exit $rc: $out"
pass "offload/unoffload, label, remote name, phases (InProgress, Ready, AllFailed, SomeFailed, NoClusterSelected, Invalid, Terminating), finalizer"
