#!/usr/bin/env bash
# Graceful deletion in the order the original design wanted and never achieved: when an Advertisement is
# deleted, its virtual node is cordoned, then drained (a pod bound to it goes), then the virtual kubelet removes
# what it created on the provider (its NamespaceMap, waiting until the provider has removed it), then the
# node is deleted, and only then does the Advertisement go (its finalizer held it).
# Across clusters the order is shown causally: the test holds the pod and then the NamespaceMap with finalizers
# of its own and checks that the next step waits for each. Within A it is shown by resourceVersions (one etcd
# orders them), from kubectl watches; their arrival stamps give the figures.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
NS=e2e-drain
HOLD=e2e.cliqo.io/hold
W=$(mktemp -d)
WPIDS=()
cleanup() {
  local rc=$? p
  for p in "${WPIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  pkill -f "tail -n \+1 -F $W/" 2>/dev/null || true
  kc "$A" patch pod -n "$NS" on-virtual-node --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]' >/dev/null 2>&1 || true
  [ -n "${RNS:-}" ] && unhold_nm
  kc "$A" delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  rm -rf "$W"
  if [ "$rc" = 0 ]; then wait_all_shared 60; fi
  (exit "$rc")
  adv_on_exit
}
# unhold_nm: removes the test's finalizer from the NamespaceMap on P3, and only it (a JSON patch that tests the
# element it removes).
unhold_nm() {
  local i
  i=$(kget "$P3" namespacemap -n "$RNS" "$A_ID" 2>/dev/null |
    jq -r --arg h "$HOLD" '(.metadata.finalizers // []) | index($h) // empty')
  [ -n "$i" ] || return 0
  kc "$P3" patch namespacemap -n "$RNS" "$A_ID" --type=json \
    -p "[{\"op\":\"test\",\"path\":\"/metadata/finalizers/$i\",\"value\":\"$HOLD\"},{\"op\":\"remove\",\"path\":\"/metadata/finalizers/$i\"}]" >/dev/null
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
wait_default_sa "$A" "$NS"
kc "$A" apply -n "$NS" -f - >/dev/null <<EOF || fail "cannot create the pod"
apiVersion: v1
kind: Pod
metadata: {name: on-virtual-node, finalizers: [$HOLD]}
spec:
  nodeName: $NODE
  tolerations: [{key: virtual-node.liqo.io/not-allowed, operator: Exists, effect: NoExecute}]
  containers: [{name: c, image: busybox}]
EOF
kc "$P3" get namespacemap -n "$RNS" "$A_ID" >/dev/null || fail "no NamespaceMap of $A on $P3"
kc "$P3" patch namespacemap -n "$RNS" "$A_ID" --type=json \
  -p "[{\"op\":\"add\",\"path\":\"/metadata/finalizers/-\",\"value\":\"$HOLD\"}]" >/dev/null ||
  fail "cannot hold the NamespaceMap"

stamp() { while IFS= read -r l; do echo "$(date +%s.%N) $l"; done; }
watch() { # CLUSTER FILE args...
  local c=$1 f=$2
  shift 2
  kc "$c" get "$@" -w --output-watch-events --request-timeout=0 >"$W/$f.raw" 2>&1 &
  WPIDS+=($!)
}
# Fields: type, name, resourceVersion, unschedulable, deletionTimestamp (empty fields come out as nothing:
# the deletionTimestamp test looks at the field count).
jp='-o=jsonpath={.type} {.object.metadata.name} {.object.metadata.resourceVersion} {.object.spec.unschedulable} {.object.metadata.deletionTimestamp}{"\n"}'
watch "$A" node node "$NODE" "$jp"
watch "$A" pod pods -n "$NS" "$jp"
watch "$P3" nm namespacemap -n "$RNS" "$jp"
watch "$A" adv advertisement -n "$TNS" "$ADV" "$jp"
# Stamp lines as they arrive (the watches above write raw lines; tail -F stamps them).
for f in node pod nm adv; do
  (tail -n +1 -F "$W/$f.raw" 2>/dev/null | stamp >"$W/$f") &
  WPIDS+=($!)
done
# Each watched object exists, so each watch starts with its ADDED event: wait for all four before deleting
# (a fixed 2 s was not always enough for four kubectl processes to start on a busy machine, and a watch
# that began after the deletion missed the change it was there to see).
watching() { local f; for f in node pod nm adv; do [ -s "$W/$f" ] || return 1; done; }
wait_for 60 "the four watches' first events" watching

say "delete the Advertisement of $P3 on $A"
kc "$A" delete advertisement -n "$TNS" "$ADV" --wait=false >/dev/null
first() { # FILE AWK-CONDITION FIELD: the field (1: arrival stamp, 2: type, 4: resourceVersion) of the first match
  awk "$2 { print \$${3:-1}; exit }" "$W/$1"
}
deleting() { [ -n "$(jget "$1" '{.metadata.deletionTimestamp}' "${@:2}")" ]; }
wait_for 30 "the held pod to be deleted (drain)" deleting "$A" pod -n "$NS" on-virtual-node
sleep 2
deleting "$P3" namespacemap -n "$RNS" "$A_ID" && fail "the provider was cleaned while a pod of the node remained"
kc "$A" get node "$NODE" >/dev/null 2>&1 || fail "the node went while a pod of it remained"
say "release the pod: the provider is cleaned next, the node waits for it"
kc "$A" patch pod -n "$NS" on-virtual-node --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]' >/dev/null ||
  fail "cannot release the pod"
wait_for 30 "the NamespaceMap's deletion on $P3" deleting "$P3" namespacemap -n "$RNS" "$A_ID"
sleep 2
kc "$A" get node "$NODE" >/dev/null 2>&1 || fail "the node went before the provider was cleaned"
say "release the NamespaceMap: the node goes, then the Advertisement"
unhold_nm || fail "cannot release the NamespaceMap"
# The provider sends it again at once: "gone" is an event, not a state to poll for.
wait_for 60 "the Advertisement's DELETED event" eval "[ -n \"\$(first adv '\$2 == \"DELETED\"')\" ]"
sleep 1
c_cordon='$2 == "MODIFIED" && $5 == "true"'
c_drain='$2 == "MODIFIED" && NF >= 5'
c_deleted='$2 == "DELETED"'
t_cordon=$(first node "$c_cordon")
t_drain=$(first pod "$c_drain")
t_remote=$(first nm "$c_deleted")
t_node=$(first node "$c_deleted")
t_adv=$(first adv "$c_deleted")
for v in t_cordon t_drain t_remote t_node t_adv; do
  [ -n "${!v}" ] || { for f in node pod nm adv; do echo "--- $f" >&2; cat "$W/$f" >&2; done; fail "no event for $v"; }
done
r_cordon=$(first node "$c_cordon" 4)
r_drain=$(first pod "$c_drain" 4)
r_node=$(first node "$c_deleted" 4)
r_adv=$(first adv "$c_deleted" 4)
echo "FIGURE deletion (with holds) cordon=0 drain=+$(awk -v a="$t_cordon" -v b="$t_drain" 'BEGIN{printf "%.3f", b-a}')s" \
  "provider=+$(awk -v a="$t_cordon" -v b="$t_remote" 'BEGIN{printf "%.3f", b-a}')s" \
  "node=+$(awk -v a="$t_cordon" -v b="$t_node" 'BEGIN{printf "%.3f", b-a}')s" \
  "advertisement=+$(awk -v a="$t_cordon" -v b="$t_adv" 'BEGIN{printf "%.3f", b-a}')s"
echo "FIGURE deletion release-to-node-deleted=$(awk -v a="$t_remote" -v b="$t_node" 'BEGIN{printf "%.3f", b-a}')s"
rv_before() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 < b + 0) }'; }
rv_before "$r_cordon" "$r_drain" || fail "drained before it was cordoned (rv $r_cordon, $r_drain)"
rv_before "$r_drain" "$r_node" || fail "the node was deleted before the drain (rv $r_drain, $r_node)"
rv_before "$r_node" "$r_adv" || fail "the Advertisement went before the node (rv $r_node, $r_adv)"
if kc "$A" get pod -n "$NS" on-virtual-node >/dev/null 2>&1; then fail "the pod bound to the node is still there"; fi

say "$P3 sends its Advertisement again: accepted, node back"
wait_all_shared 60
pass "cordon < drain < provider cleaned < node deleted < Advertisement gone"
