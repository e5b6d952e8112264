#!/usr/bin/env bash
# The scheduler binds pods to a Ready, untainted node and never to a node that is not Ready.
# No kubelet runs: this test plays the kubelet's part for status, as the node simulator will.
source "$(dirname "$0")/../lib.sh"
c=cluster-1
mk_node() { # name
  kc "$c" create -f - >/dev/null <<YAML
apiVersion: v1
kind: Node
metadata:
  name: $1
  labels: {kubernetes.io/hostname: $1, e2e.cliqo.io/test: scheduler}
YAML
}
node_status() { # name True|False
  local t
  t=$(now_rfc3339)
  kc "$c" patch node "$1" --subresource=status --type=merge -p "$(cat <<JSON
{"status": {
  "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
  "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
  "conditions": [{"type": "Ready", "status": "$2", "reason": "E2E", "message": "set by the e2e test",
                  "lastHeartbeatTime": "$t", "lastTransitionTime": "$t"}],
  "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}]}}
JSON
)" >/dev/null
}
taints_of() { jpath "$c" '{.spec.taints[*].key}' node "$1"; }
untainted() { [ -z "$(taints_of "$1")" ]; }
bound() { [ -n "$(kc "$c" -n default get pod "$1" -o jsonpath='{.spec.nodeName}')" ]; }
mk_node e2e-ready
mk_node e2e-notready
node_status e2e-ready True
node_status e2e-notready False
# The node-lifecycle controller lifts the not-ready taint from the Ready node and keeps it on the other.
wait_for 60 "not-ready taint removed from e2e-ready" untainted e2e-ready
sleep 2
taints_of e2e-notready | grep_q node.kubernetes.io/not-ready || fail "e2e-notready has no not-ready taint"
wait_default_sa "$c" default
for i in 1 2 3 4 5; do
  kc "$c" -n default run "e2e-sched-$i" --image=registry.invalid/pause:3 --restart=Never >/dev/null
done
for i in 1 2 3 4 5; do
  wait_for 60 "pod e2e-sched-$i bound" bound "e2e-sched-$i"
  node=$(kc "$c" -n default get pod "e2e-sched-$i" -o jsonpath='{.spec.nodeName}')
  [ "$node" = e2e-ready ] || fail "pod e2e-sched-$i bound to '$node', want e2e-ready"
done
# The scheduled event comes from the real scheduler.
# (v1.20's scheduler writes events.k8s.io events: the reporter is in reportingComponent.)
scheduled_event() {
  kc "$c" -n default get events --field-selector reason=Scheduled \
    -o jsonpath='{.items[*].reportingComponent} {.items[*].source.component}' | grep_q default-scheduler
}
wait_for 30 "Scheduled event from default-scheduler" scheduled_event
kc "$c" -n default delete pod -l run --grace-period=0 --force >/dev/null 2>&1 || true
kc "$c" delete node e2e-ready e2e-notready >/dev/null
pass "5 pods bound to the Ready node, none to the NotReady one"
