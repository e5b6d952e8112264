#!/usr/bin/env bash
# Failure injection through annotations: a node made NotReady (and its lease left to expire), then
# Ready again; pods whose containers fail, with restartPolicy Never and Always.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
n=${NODES[2]}
lease() { kc "$c" -n kube-node-lease get lease "$n" -o jsonpath='{.spec.renewTime}'; }
kc "$c" annotate node "$n" sim.cliqo.io/ready=false >/dev/null
wait_for 15 "$n NotReady" node_ready "$n" False
[ "$(jp "node/$n" '{.status.conditions[?(@.type=="Ready")].reason}')" = KubeletNotReady ] || fail "reason is not KubeletNotReady"
node_ready "${NODES[0]}" || fail "${NODES[0]} affected"
l0=$(lease)
sleep 5 # more than two heartbeats
[ "$(lease)" = "$l0" ] || fail "lease of $n still renewed while NotReady"
tainted() { jp "node/$n" '{.spec.taints[*].key}' | grep_q node.kubernetes.io/not-ready; }
wait_for 30 "not-ready taint on $n" tainted
kc "$c" annotate node "$n" sim.cliqo.io/ready- >/dev/null
wait_for 15 "$n Ready again" node_ready "$n"
renewed() { [ "$(lease)" != "$l0" ]; }
wait_for 15 "lease of $n renewed again" renewed
wait_for 30 "not-ready taint lifted" eval '! tainted'
say "NotReady injection and recovery"

ns=e2e-nodesim-inject
kc "$c" create namespace "$ns" >/dev/null
wait_sa "$ns"
kc "$c" -n "$ns" run once --image=busybox:1.36 --restart=Never >/dev/null
kc "$c" -n "$ns" run daemon --image=busybox:1.36 --restart=Always >/dev/null
wait_for 30 "once Running" pod_phase_is "$ns" once Running
wait_for 30 "daemon Running" pod_phase_is "$ns" daemon Running
kc "$c" -n "$ns" annotate pod once sim.cliqo.io/fail=3 >/dev/null
kc "$c" -n "$ns" annotate pod daemon sim.cliqo.io/fail=2 >/dev/null
wait_for 15 "once Failed" pod_phase_is "$ns" once Failed
[ "$(jp pod/once '{.status.containerStatuses[0].state.terminated.exitCode}' -n "$ns")" = 3 ] || fail "once: exit code is not 3"
[ "$(jp pod/once '{.status.containerStatuses[0].state.terminated.reason}' -n "$ns")" = Error ] || fail "once: reason is not Error"
crashing() { [ "$(jp pod/daemon '{.status.containerStatuses[0].state.waiting.reason}' -n "$ns")" = CrashLoopBackOff ]; }
wait_for 15 "daemon in CrashLoopBackOff" crashing
[ "$(jp pod/daemon '{.status.containerStatuses[0].lastState.terminated.exitCode}' -n "$ns")" = 2 ] || fail "daemon: last exit code is not 2"
[ "$(jp pod/daemon '{.status.containerStatuses[0].restartCount}' -n "$ns")" = 1 ] || fail "daemon: restartCount is not 1"
[ "$(jp pod/daemon '{.status.conditions[?(@.type=="Ready")].status}' -n "$ns")" = False ] || fail "daemon: still Ready"
[ "$(jp pod/daemon '{.status.phase}' -n "$ns")" = Running ] || fail "daemon: phase is not Running"
kc "$c" -n "$ns" annotate pod daemon sim.cliqo.io/fail- >/dev/null
ready_again() { [ "$(jp pod/daemon '{.status.conditions[?(@.type=="Ready")].status}' -n "$ns")" = True ]; }
wait_for 15 "daemon Ready again" ready_again
[ "$(jp pod/daemon '{.status.containerStatuses[0].restartCount}' -n "$ns")" = 1 ] || fail "daemon: restartCount changed"
# A failed pod stays failed: removing the annotation does not bring it back.
kc "$c" -n "$ns" annotate pod once sim.cliqo.io/fail- >/dev/null
sleep 2
[ "$(jp pod/once '{.status.phase}' -n "$ns")" = Failed ] || fail "once left phase Failed"
kc "$c" delete namespace "$ns" --wait=false >/dev/null
pass "node NotReady/Ready, pod Failed (Never) and CrashLoopBackOff (Always)"
