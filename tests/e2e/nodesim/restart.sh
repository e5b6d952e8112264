#!/usr/bin/env bash
# A restarted simulator adopts its nodes and pods: no new or duplicate node, running pods keep their
# addresses, and new pods never get an address already in use.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
ns=e2e-nodesim-restart
kc "$c" create namespace "$ns" >/dev/null
wait_sa "$ns"
kc "$c" -n "$ns" create deployment web --image=nginx:1.25 --replicas=20 >/dev/null
all_running() { [ "$(running_count "$ns")" = "$1" ]; }
wait_for 60 "20 pods Running" all_running 20
uids_before=$(jpath "$c" '{.items[*].metadata.uid}' nodes)
ips_before=$(kc "$c" -n "$ns" get pods -o jsonpath='{range .items[*]}{.metadata.name}={.status.podIP}{"\n"}{end}' | sort)
pid_before=$(cat "$E2E_STATE/cluster-1/nodesim.pid")

"$CLIQOCTL" dev stop --cluster cluster-1 --component nodesim >/dev/null || fail "stop nodesim failed"
pid_running "$pid_before" && fail "nodesim $pid_before still runs after stop"
# It stopped cleanly on SIGTERM (in sanitizer builds: no leak or error report).
grep -q 'msg="stopped"' "$E2E_STATE/cluster-1/logs/nodesim.log" || fail "nodesim did not log a clean stop"
grep -q 'Sanitizer' "$E2E_STATE/cluster-1/logs/nodesim.log" && fail "sanitizer report in the nodesim log"
# Pods created while no kubelet runs stay Pending.
kc "$c" -n "$ns" scale deployment web --replicas=40 >/dev/null
sleep 2
[ "$(running_count "$ns")" = 20 ] || fail "pods progressed without a simulator"
"$CLIQOCTL" dev start --cluster cluster-1 --component nodesim >/dev/null || fail "start nodesim failed"
grep -q 'adopted' "$E2E_STATE/cluster-1/logs/nodesim.log" || fail "the new simulator did not adopt the nodes"
wait_for 60 "40 pods Running after the restart" all_running 40

[ "$(jpath "$c" '{.items[*].metadata.uid}' nodes)" = "$uids_before" ] || fail "nodes were recreated"
[ "$(kc "$c" get nodes -o name | wc -l)" = 3 ] || fail "node count changed"
ips_after=$(kc "$c" -n "$ns" get pods -o jsonpath='{range .items[*]}{.metadata.name}={.status.podIP}{"\n"}{end}' | sort)
missing=$(comm -23 <(echo "$ips_before") <(echo "$ips_after"))
[ -z "$missing" ] || fail "running pods changed address across the restart: $missing"
n=$(check_ips "$ns") || fail "address check failed"
[ "$n" = 40 ] || fail "checked $n pods, want 40"
kc "$c" delete namespace "$ns" --wait=false >/dev/null
pass "restart adopted 3 nodes and 20 pods; 20 more pods got distinct addresses"
