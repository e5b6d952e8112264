#!/usr/bin/env bash
# The provider's API server turns the consumer away (issue 22): a priority level of about 3 seats that rejects
# instead of queueing, and a flow schema sending every service account of A's tenant namespace on B (the
# identities A's agent and virtual kubelet use there) to it. A Deployment of 30 replicas offloaded meanwhile runs
# on B exactly once per home pod: the 429 answers are sent again, not lost and not doubled, and A's agent
# counts them (cliqo_peer_requests_total{code="429"}). The flow schema gone, the next 15 replicas come at the
# usual pace (API priority and fairness is on in the local clusters, lean or not). The group allows 8
# creations in flight (--vk-pod-creations): the other pods wait their turn out of the queue. The 30 pods are
# held Pending at home by a node selector until all exist; then B's API server is frozen (SIGSTOP) and the
# virtual node gets the label, so A's scheduler binds them while no creation can end: 8 go in flight and the
# next waits, whatever the machine's pace (the scheduler binds about 10 pods a second, and an unhindered
# creation ends in tens of milliseconds, so without the freeze nothing may wait; it happened on CI). B is
# thawed as soon as A's agent counts a wait, long before A's keepalive would call B unreachable, and the 8
# creations then reach the tiny priority level at once. Last, a rate of
# B's own in A's ClusterConfig (spec.peeringConfig.peerClient.perCluster) reaches A's clients to B at once.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/vk-lib.sh"
NS=e2e-throttled
LABEL=e2e.cliqo.io/throttled
FROZEN=""
cleanup() {
  [ -z "$FROZEN" ] || kill -CONT "$FROZEN" 2>/dev/null || true
  [ -z "${VNODE:-}" ] || kc "$A" label node "$VNODE" "$LABEL-" >/dev/null 2>&1 || true
  kc "$B" delete flowschema e2e-tiny --ignore-not-found >/dev/null 2>&1 || true
  kc "$B" delete prioritylevelconfiguration e2e-tiny --ignore-not-found >/dev/null 2>&1 || true
  kc "$A" patch clusterconfig configuration --type=json \
    -p '[{"op":"remove","path":"/spec/peeringConfig/peerClient"}]' >/dev/null 2>&1 || true
  unoffload "$NS"
}
trap 'rc=$?; cleanup >/dev/null 2>&1 || true; (exit $rc); off_on_exit' EXIT # the test's status, not cleanup's
ensure_agents
ids
wait_shared 60
throttled() { # A's agent's 429 answers from B, all roles and verbs
  curl -s --max-time 5 "http://127.0.0.1:$(http_port "$A")/metrics" |
    awk '$1 ~ /^cliqo_peer_requests_total\{/ && $1 ~ /code="429"/ { n += $2 } END { print n + 0 }'
}
waited() { # pods that waited for a creation slot (the group runs A's agent with --vk-pod-creations 8)
  curl -s --max-time 5 "http://127.0.0.1:$(http_port "$A")/metrics" |
    awk '$1 ~ /^cliqo_vk_pod_creations_waited_total\{/ { n += $2 } END { print n + 0 }'
}

say "offload $NS, then throttle A's identities on $B"
offload "$NS"
wait_mapped "$NS"
TEN=$(jget "$A" '{.status.tenantNamespace.remote}' foreigncluster "$B")
[ -n "$TEN" ] || fail "no tenant namespace of A on $B"
kc "$B" apply -f - >/dev/null <<YAML || fail "cannot create the flow schema"
apiVersion: flowcontrol.apiserver.k8s.io/v1beta1
kind: PriorityLevelConfiguration
metadata: {name: e2e-tiny}
spec: {type: Limited, limited: {assuredConcurrencyShares: 1, limitResponse: {type: Reject}}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1beta1
kind: FlowSchema
metadata: {name: e2e-tiny}
spec:
  matchingPrecedence: 300
  priorityLevelConfiguration: {name: e2e-tiny}
  rules:
  - subjects: [{kind: Group, group: {name: "system:serviceaccounts:$TEN"}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"]}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
YAML
wait_for 20 "the flow schema in force" eval \
  "[ \"\$(jget $B '{.status.conditions[?(@.type==\"Dangling\")].status}' flowschema e2e-tiny)\" = False ]"
before=$(throttled)
waited_before=$(waited)

deployment "$NS" web 30 nginx:1 "\"nodeSelector\":{\"$LABEL\":\"go\"},"
wait_for 60 "30 home pods, all Pending ($(home_count "$NS") pods)" eval "[ \"\$(home_count $NS)\" = 30 ]"
[ "$(remote_count "$NS")" = 0 ] || fail "pods reached $B before the virtual node had the label"
APISERVER=$(cat "$E2E_STATE/$B/kube-apiserver.pid") && pid_running "$APISERVER" ||
  fail "no running API server for $B"
start=$(date +%s.%N)
FROZEN=$APISERVER
kill -STOP "$APISERVER"
kc "$A" label node "$VNODE" "$LABEL=go" >/dev/null || fail "cannot label $VNODE"
wait_for 30 "a creation waiting for a slot while $B is frozen" \
  eval "[ \"\$((\$(waited) - waited_before))\" -gt 0 ]"
kill -CONT "$APISERVER"
FROZEN=""
wait_for 180 "30 home pods Running and Ready, 30 pods on $B ($(home_running "$NS") running, $(remote_count "$NS") remote)" \
  all_running "$NS" 30
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
got=$(($(throttled) - before))
waits=$(($(waited) - waited_before))
echo "FIGURE throttled-30-pods-ready-seconds=$secs answers-429=$got waited-for-a-creation-slot=$waits"
[ "$got" -gt 0 ] || fail "$B never answered 429: the test throttled nothing"
# 30 pods bound while no creation could end, 8 in flight: the others waited out of the queue, and came
# when a slot freed (all 30 below, each once). The figure's seconds include the freeze.
[ "$waits" -gt 0 ] || fail "no creation waited for a slot: the cap of 8 in flight did not act"
out=$(pairs_ok "$NS") || fail "home and remote pods do not pair one to one: $out"
sleep 2
[ "$(remote_count "$NS")" = 30 ] || fail "$(remote_count "$NS") pods on $B, not 30"

say "the flow schema gone: 15 more at the usual pace"
kc "$B" delete flowschema e2e-tiny >/dev/null
before=$(throttled)
start=$(date +%s.%N)
kc "$A" scale deployment -n "$NS" web --replicas=45 >/dev/null
wait_for 120 "45 home pods Running and Ready, 45 pods on $B ($(home_running "$NS") running, $(remote_count "$NS") remote)" \
  all_running "$NS" 45
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
echo "FIGURE unthrottled-15-more-pods-ready-seconds=$secs answers-429=$(($(throttled) - before))"
out=$(pairs_ok "$NS") || fail "home and remote pods do not pair one to one: $out"
say "a rate of $B's own in A's ClusterConfig reaches the clients to $B at once"
kc "$A" patch clusterconfig configuration --type=merge \
  -p "{\"spec\":{\"peeringConfig\":{\"peerClient\":{\"perCluster\":[{\"clusterID\":\"$B_ID\",\"qps\":7}]}}}}" >/dev/null ||
  fail "cannot set peerClient.perCluster"
wait_for 20 "A's agent says its clients to $B run at 7 requests/s" \
  grep_q "peer $B_ID: [a-z]* client at 7 requests/s, burst 14" "$(agent_log "$A")"
kc "$A" patch clusterconfig configuration --type=json -p '[{"op":"remove","path":"/spec/peeringConfig/peerClient"}]' >/dev/null
wait_for 20 "A's agent says its clients to $B are back at 200 requests/s" \
  grep_q "peer $B_ID: [a-z]* client at 200 requests/s, burst 400" "$(agent_log "$A")"
pass "429s from the provider slowed the offloading down and lost or doubled no pod; the pace came back; the rate is configurable per peer"
