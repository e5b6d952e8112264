#!/usr/bin/env bash
# Readiness follows the API server: /readyz turns 503 when kube-apiserver stops and 200 when it is
# back (the leader survives with a lease longer than the outage). With a short lease the leader that
# cannot renew stops its modules, makes them again in the same process and leads again afterwards.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/agent-lib.sh"
ns=e2e-agent-apiserver
port=$((P + 56))
kc cluster-1 create namespace "$ns" >/dev/null
start_agent a --namespace "$ns" --http-addr "127.0.0.1:$port" --auth-addr "127.0.0.1:$((P + 57))" --kubelet-addr "127.0.0.1:$((P + 58))" --identity api-a \
  --lease-duration 120s --renew-deadline 90s --retry-period 2s
wait_for 30 "agent readyz" http_is 200 "http://127.0.0.1:$port/readyz"
wait_for 30 "leadership" bash -c "[ \"\$(curl -s http://127.0.0.1:$port/metrics | awk '\$1 == \"cliqo_leader\" {print \$2}')\" = 1 ]"

"$CLIQOCTL" dev stop --cluster cluster-1 --component kube-apiserver >/dev/null
wait_for 30 "readyz 503 with the apiserver stopped" http_is 503 "http://127.0.0.1:$port/readyz"
curl -s "http://127.0.0.1:$port/readyz" | grep_q '^\[-\]kube-apiserver failed' || fail "/readyz does not blame the apiserver"
http_is 200 "http://127.0.0.1:$port/healthz" || fail "/healthz must stay 200 while the apiserver is down"
"$CLIQOCTL" dev start --cluster cluster-1 --component kube-apiserver >/dev/null
wait_for 60 "readyz 200 with the apiserver back" http_is 200 "http://127.0.0.1:$port/readyz"
pid_running "${AGENT_PID[a]}" || fail "the agent died during the outage"
[ "$(metric "$port" cliqo_leader)" = 1 ] || fail "the agent lost leadership during a short outage"
stop_agent a TERM 10
rc=$AGENT_RC
[ "$rc" = 0 ] || { cat "$(agent_log a)" >&2; fail "agent exited with $rc after SIGTERM"; }
check_log a

# A short lease: the leader cannot renew while the apiserver is away, so it stops its modules and
# makes them again in the same process; once the apiserver is back it leads again and runs them.
start_agent b --namespace "$ns" --http-addr "127.0.0.1:$port" --auth-addr "127.0.0.1:$((P + 57))" --kubelet-addr "127.0.0.1:$((P + 58))" --identity api-b \
  --lease-name short --lease-duration 4s --renew-deadline 3s --retry-period 1s
wait_for 30 "leadership of b" bash -c "[ \"\$(curl -s http://127.0.0.1:$port/metrics | awk '\$1 == \"cliqo_leader\" {print \$2}')\" = 1 ]"
"$CLIQOCTL" dev stop --cluster cluster-1 --component kube-apiserver >/dev/null
wait_for 40 "b loses leadership" grep -q 'lost leadership of lease' "$(agent_log b)"
wait_for 20 "b makes its modules again" grep -q 'modules made again (generation 1)' "$(agent_log b)"
[ "$(metric "$port" cliqo_leader)" = 0 ] || fail "b reports leadership while the apiserver is down"
"$CLIQOCTL" dev start --cluster cluster-1 --component kube-apiserver >/dev/null
wait_for 60 "b leads again" bash -c "[ \"\$(curl -s http://127.0.0.1:$port/metrics | awk '\$1 == \"cliqo_leader\" {print \$2}')\" = 1 ]"
wait_for 60 "b ready again" http_is 200 "http://127.0.0.1:$port/readyz"
pid_running "${AGENT_PID[b]}" || fail "agent b exited after losing leadership"
[ "$(metric "$port" cliqo_module_restarts_total)" = 1 ] || fail "cliqo_module_restarts_total is not 1"
[ "$(lease_holder "$ns" short)" = api-b ] || fail "the lease is not held by b again"
[ "$(grep -c 'module auth started' "$(agent_log b)")" = 2 ] || fail "the modules did not start twice"
[ "$(grep -c 'module identity initialised' "$(agent_log b)")" = 2 ] || fail "the modules were not initialised twice"
stop_agent b TERM 10
rc=$AGENT_RC
[ "$rc" = 0 ] || { cat "$(agent_log b)" >&2; fail "agent b exited with $rc after SIGTERM"; }
check_log b
kc cluster-1 delete namespace "$ns" --wait=false >/dev/null
pass
