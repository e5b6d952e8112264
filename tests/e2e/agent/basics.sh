#!/usr/bin/env bash
# One agent against cluster-1: /healthz, /readyz (verbose checks), /metrics (valid exposition with
# the leader gauge, process metrics and the cluster identity), 404 JSON errors, then SIGTERM: exit 0
# quickly, Lease released, no sanitizer report.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/agent-lib.sh"
ns=e2e-agent-basics
port=$((P + 50))
kc cluster-1 create namespace "$ns" >/dev/null
kc cluster-1 -n "$ns" create configmap cluster-id --from-literal=cluster-id=7f1c0d6e-1111-4c3b-9a57-0e2f5a1b2c3d \
  --from-literal=cluster-name='cluster "one"' >/dev/null

start_agent a --namespace "$ns" --http-addr "127.0.0.1:$port" --auth-addr "127.0.0.1:$((P + 51))" --kubelet-addr "127.0.0.1:$((P + 58))" --identity basics-a
wait_for 30 "agent healthz" http_is 200 "http://127.0.0.1:$port/healthz"
[ "$(curl -s "http://127.0.0.1:$port/healthz")" = ok ] || fail "/healthz body is not ok"
wait_for 30 "agent readyz" http_is 200 "http://127.0.0.1:$port/readyz"
ready=$(curl -s "http://127.0.0.1:$port/readyz")
for c in ping kube-apiserver informers-synced leader-election module-identity; do
  grep -qx "\[+\]$c ok" <<<"$ready" || fail "/readyz does not list check $c: $ready"
done
wait_for 30 "leadership" bash -c "[ \"\$(curl -s http://127.0.0.1:$port/metrics | awk '\$1 == \"cliqo_leader\" {print \$2}')\" = 1 ]"
[ "$(lease_holder "$ns" cliqo-agent)" = basics-a ] || fail "the Lease is not held by basics-a"

m="$AGENT_TMP/metrics.txt"
curl -s -D "$AGENT_TMP/headers" "http://127.0.0.1:$port/metrics" >"$m"
grep -qi '^content-type: text/plain; version=0.0.4' "$AGENT_TMP/headers" || fail "/metrics content type"
promtool check metrics <"$m" || fail "promtool rejects /metrics"
grep -qF 'cliqo_cluster_info{cluster_id="7f1c0d6e-1111-4c3b-9a57-0e2f5a1b2c3d",cluster_name="cluster \"one\""} 1' "$m" ||
  fail "cliqo_cluster_info missing or wrong"
for n in process_resident_memory_bytes process_open_fds process_start_time_seconds process_cpu_seconds_total \
  cliqo_kube_apiserver_reachable; do
  grep -q "^$n " "$m" || fail "metric $n missing"
done
grep -q '^cliqo_http_requests_total{path="/readyz",code="200"} [1-9]' "$m" || fail "request counter"
rss=$(awk '$1 == "process_resident_memory_bytes" {print $2}' "$m")
[ "${rss%.*}" -gt 1000000 ] || fail "implausible RSS $rss"

[ "$(http_code "http://127.0.0.1:$port/nope")" = 404 ] || fail "unknown path is not 404"
curl -s "http://127.0.0.1:$port/nope" | grep_q '"error":"not-found"' || fail "404 body is not a JSON error"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$port/healthz")" = 405 ] || fail "POST /healthz is not 405"

# Changing the identity ConfigMap shows up in the metric.
kc cluster-1 -n "$ns" patch configmap cluster-id -p '{"data":{"cluster-name":"renamed"}}' >/dev/null
wait_for 20 "renamed cluster" bash -c "curl -s http://127.0.0.1:$port/metrics | grep_q 'cluster_name=\"renamed\"'"

t0=$(date +%s%N)
stop_agent a TERM 10
rc=$AGENT_RC
t1=$(date +%s%N)
[ "$rc" = 0 ] || { cat "$(agent_log a)" >&2; fail "agent exited with $rc after SIGTERM"; }
check_log a
[ -z "$(lease_holder "$ns" cliqo-agent)" ] || fail "the Lease is still held after shutdown"
grep -q 'msg="received Terminated: shutting down gracefully"' "$(agent_log a)" || fail "no shutdown log line"
grep -q 'msg="stopped (exit status 0)"' "$(agent_log a)" || fail "no final log line"
kc cluster-1 delete namespace "$ns" --wait=false >/dev/null
pass "shutdown took $(((t1 - t0) / 1000000)) ms"
