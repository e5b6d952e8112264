#!/usr/bin/env bash
# A Deployment of 100 pods on the simulated nodes: every pod Running with a distinct address from its
# node's CIDR; deleting the Deployment removes every pod.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
ns=e2e-nodesim-deploy
kc "$c" create namespace "$ns" >/dev/null
wait_sa "$ns"
t0=$(date +%s%3N)
kc "$c" -n "$ns" create deployment big --image=nginx:1.25 --replicas=100 >/dev/null
all_running() { [ "$(running_count "$ns")" = 100 ]; }
wait_for 90 "100 pods Running" all_running
t1=$(date +%s%3N)
n=$(check_ips "$ns") || fail "address check failed"
[ "$n" = 100 ] || fail "checked $n pods, want 100"
# gone: how many DELETEs of the simulator have found no pod (a pod deleted twice), from its log.
gone() { grep -c 'already gone when deleted' "$E2E_STATE/$c/logs/nodesim.log" || true; }
g0=$(gone)
kc "$c" -n "$ns" delete deployment big >/dev/null
no_pods() { [ -z "$(kc "$c" -n "$ns" get pods -o name)" ]; }
wait_for 90 "every pod deleted" no_pods
sleep 1 # a second DELETE would follow the first within milliseconds
# Each pod deleted once: an event that comes while its DELETE is in flight (the grace period set to 0) does
# not make the simulator delete it again while the informer still shows it.
[ "$(gone)" = "$g0" ] || fail "the simulator sent $(($(gone) - g0)) DELETEs for pods already gone"
kc "$c" delete namespace "$ns" --wait=false >/dev/null
pass "100 pods Running in $((t1 - t0)) ms, addresses distinct and in their nodes' CIDRs; all deleted, each once"
