#!/usr/bin/env bash
# A virtual node deleted by hand while its Advertisement is Accepted is registered again; one whose labels or
# taint were edited away gets them back.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
trap adv_on_exit EXIT
ensure_agents
ids
wait_all_shared
NODE=$(vnode_of "$P2")
uid=$(jget "$A" '{.metadata.uid}' node "$NODE")

say "delete $NODE by hand"
kc "$A" delete node "$NODE" --wait=true >/dev/null
wait_for 30 "$NODE registered again" eval "[ -n \"\$(jget $A '{.metadata.uid}' node $NODE)\" ] && [ \"\$(jget $A '{.metadata.uid}' node $NODE)\" != $uid ]"
wait_for 30 "$NODE Ready again" node_is "$P2" True
[ -n "$(capacity "$P2" cpu)" ] || fail "the registered node has no capacity"

say "its labels and taint edited away come back"
kc "$A" label node "$NODE" liqo.io/type- >/dev/null
kc "$A" taint node "$NODE" virtual-node.liqo.io/not-allowed- >/dev/null
wait_for 30 "label liqo.io/type back" eval "[ \"\$(jget $A '{.metadata.labels.liqo\.io/type}' node $NODE)\" = virtual-node ]"
wait_for 30 "taint back" eval "[ \"\$(jget $A '{.spec.taints[?(@.key==\"virtual-node.liqo.io/not-allowed\")].effect}' node $NODE)\" = NoExecute ]"
pass "a deleted virtual node is registered again; its labels and taint are restored"
