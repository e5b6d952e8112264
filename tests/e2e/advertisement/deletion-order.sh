#!/usr/bin/env bash
# Graceful deletion in the order the original design wanted and never achieved: when an Advertisement is
# deleted, its virtual node is cordoned, then drained (a pod bound to it goes), then the virtual kubelet removes
# what it created on the provider (its NamespaceMap, waiting until the provider has removed it), then the
# node is deleted, and only then does the
# Advertisement go (its finalizer held it). Watched with four kubectl watches on both clusters, each event
# stamped on arrival. Afterwards the provider sends its Advertisement again and the node comes back.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
NS=e2e-drain
W=$(mktemp -d)
WPIDS=()
cleanup() {
  local rc=$? p
  for p in "${WPIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  pkill -f "tail -n \+1 -F $W/" 2>/dev/null || true
  kc "$A" delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  rm -rf "$W"
  if [ "$rc" = 0 ]; then wait_all_shared 60; fi
  (exit "$rc")
  adv_on_exit
}
trap cleanup EXIT
ensure_agents
ids
wait_all_shared
NODE=$(vnode_of "$P3")
TNS=$(tenant_of "$P3")
RNS=$(jget "$A" '{.status.tenantNamespace.remote}' foreigncluster "$P3")
ADV=$(adv_of "$P3")

say "a pod bound to $NODE"
kc "$A" create namespace "$NS" >/dev/null
kc "$A" apply -n "$NS" -f - >/dev/null <<EOF || fail "cannot create the pod"
apiVersion: v1
kind: Pod
metadata: {name: on-virtual-node}
spec:
  nodeName: $NODE
  tolerations: [{key: virtual-node.liqo.io/not-allowed, operator: Exists, effect: NoExecute}]
  containers: [{name: c, image: busybox}]
EOF
kc "$P3" get namespacemap -n "$RNS" "$A_ID" >/dev/null || fail "no NamespaceMap of $A on $P3"

stamp() { while IFS= read -r l; do echo "$(date +%s.%N) $l"; done; }
watch() { # CLUSTER FILE args...
  local c=$1 f=$2
  shift 2
  kc "$c" get "$@" -w --output-watch-events --request-timeout=0 >"$W/$f.raw" 2>&1 &
  WPIDS+=($!)
}
jp='-o=jsonpath={.type} {.object.metadata.name} {.object.spec.unschedulable} {.object.metadata.deletionTimestamp}{"\n"}'
watch "$A" node node "$NODE" "$jp"
watch "$A" pod pods -n "$NS" "$jp"
watch "$P3" nm namespacemap -n "$RNS" "$jp"
watch "$A" adv advertisement -n "$TNS" "$ADV" "$jp"
# Stamp lines as they arrive (the watches above write raw lines; tail -F stamps them). The provider's
# step is watched on the provider's own API server: the virtual kubelet deletes the node only after the
# provider answered that the NamespaceMap is gone, so its DELETED event comes first by a round trip.
for f in node pod nm adv; do
  (tail -n +1 -F "$W/$f.raw" 2>/dev/null | stamp >"$W/$f") &
  WPIDS+=($!)
done
sleep 2

say "delete the Advertisement of $P3 on $A"
kc "$A" delete advertisement -n "$TNS" "$ADV" --wait=false >/dev/null
first() { # FILE AWK-CONDITION: the stamp of the first matching event
  awk "$2 { print \$1; exit }" "$W/$1"
}
# The provider sends it again at once: "gone" is an event, not a state to poll for.
wait_for 60 "the Advertisement's DELETED event" eval "[ -n \"\$(first adv '\$2 == \"DELETED\"')\" ]"
sleep 1
t_cordon=$(first node '$2 == "MODIFIED" && $4 == "true"')
t_drain=$(first pod '$2 == "DELETED" || ($2 == "MODIFIED" && $5 != "")')
t_remote=$(first nm '$2 == "DELETED"')
t_node=$(first node '$2 == "DELETED"')
t_adv=$(first adv '$2 == "DELETED"')
for v in t_cordon t_drain t_remote t_node t_adv; do
  [ -n "${!v}" ] || { for f in node pod nm adv; do echo "--- $f" >&2; cat "$W/$f" >&2; done; fail "no event for $v"; }
done
echo "FIGURE deletion cordon=0 drain=+$(awk -v a="$t_cordon" -v b="$t_drain" 'BEGIN{printf "%.3f", b-a}')s" \
  "provider=+$(awk -v a="$t_cordon" -v b="$t_remote" 'BEGIN{printf "%.3f", b-a}')s" \
  "node=+$(awk -v a="$t_cordon" -v b="$t_node" 'BEGIN{printf "%.3f", b-a}')s" \
  "advertisement=+$(awk -v a="$t_cordon" -v b="$t_adv" 'BEGIN{printf "%.3f", b-a}')s"
in_order() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
in_order "$t_cordon" "$t_drain" || fail "drained before it was cordoned"
in_order "$t_drain" "$t_remote" || fail "the provider was cleaned before the node was drained"
in_order "$t_remote" "$t_node" || fail "the node was deleted before the provider was cleaned"
in_order "$t_node" "$t_adv" || fail "the Advertisement went before the node"
if kc "$A" get pod -n "$NS" on-virtual-node >/dev/null 2>&1; then fail "the pod bound to the node is still there"; fi

say "$P3 sends its Advertisement again: accepted, node back"
wait_all_shared 60
pass "cordon <= drain <= provider cleaned <= node deleted <= Advertisement gone"
