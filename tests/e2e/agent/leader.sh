#!/usr/bin/env bash
# Two replicas: exactly one holds the Lease and reports cliqo_leader 1, both are ready (the other is
# a hot standby); SIGTERM to the leader: it exits 0 quickly and releases the Lease, and the standby
# takes over well before the Lease would have expired.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/agent-lib.sh"
ns=e2e-agent-leader
kc cluster-1 create namespace "$ns" >/dev/null
start_agent a --namespace "$ns" --http-addr "127.0.0.1:$((P + 52))" --auth-addr "127.0.0.1:$((P + 53))" --kubelet-addr "127.0.0.1:$((P + 58))" --identity replica-a
start_agent b --namespace "$ns" --http-addr "127.0.0.1:$((P + 54))" --auth-addr "127.0.0.1:$((P + 55))" --kubelet-addr "127.0.0.1:$((P + 59))" --identity replica-b
declare -A port=([a]=$((P + 52)) [b]=$((P + 54)))
wait_for 30 "a lease holder" bash -c "h=\$($KUBECTL --kubeconfig $KUBECONFIG_1 -n $ns get lease cliqo-agent -o jsonpath='{.spec.holderIdentity}'); [ \"\$h\" = replica-a ] || [ \"\$h\" = replica-b ]"
holder=$(lease_holder "$ns" cliqo-agent)
if [ "$holder" = replica-a ]; then leader=a standby=b; else leader=b standby=a; fi
wait_for 20 "leader gauge" bash -c "[ \"\$(curl -s http://127.0.0.1:${port[$leader]}/metrics | awk '\$1 == \"cliqo_leader\" {print \$2}')\" = 1 ]"
for n in a b; do wait_for 30 "readyz of $n" http_is 200 "http://127.0.0.1:${port[$n]}/readyz"; done
[ "$(metric "${port[$standby]}" cliqo_leader)" = 0 ] || fail "the standby reports cliqo_leader != 0"
sleep 3 # a few retry periods: still one leader
[ "$(lease_holder "$ns" cliqo-agent)" = "replica-$leader" ] || fail "the Lease changed hands without a reason"
[ "$(metric "${port[$standby]}" cliqo_leader)" = 0 ] || fail "two leaders"

t0=$(date +%s%N)
stop_agent "$leader" TERM 10
rc=$AGENT_RC
[ "$rc" = 0 ] || { cat "$(agent_log "$leader")" >&2; fail "leader exited with $rc after SIGTERM"; }
t1=$(date +%s%N)
wait_for 10 "takeover by the standby" bash -c "[ \"\$($KUBECTL --kubeconfig $KUBECONFIG_1 -n $ns get lease cliqo-agent -o jsonpath='{.spec.holderIdentity}')\" = replica-$standby ]"
t2=$(date +%s%N)
wait_for 10 "standby leader gauge" bash -c "[ \"\$(curl -s http://127.0.0.1:${port[$standby]}/metrics | awk '\$1 == \"cliqo_leader\" {print \$2}')\" = 1 ]"
takeover_ms=$(((t2 - t0) / 1000000))
# The Lease lasts 15 s: the standby must not have waited for it to expire.
[ "$takeover_ms" -lt 8000 ] || fail "takeover took ${takeover_ms} ms: the Lease was not released"
check_log "$leader"
stop_agent "$standby" TERM 10
rc=$AGENT_RC
[ "$rc" = 0 ] || fail "the new leader exited with $rc"
check_log "$standby"
kc cluster-1 delete namespace "$ns" --wait=false >/dev/null
pass "leader exit $(((t1 - t0) / 1000000)) ms, takeover ${takeover_ms} ms"
