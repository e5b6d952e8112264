#!/usr/bin/env bash
# Helpers of the peering group (tests/e2e/peering/): source after ../lib.sh. Two clusters: A = cluster-1
# (home, asks) and B = cluster-2 (foreign, provides). Both get cliqo installed without the in-cluster agent;
# each test runs the agents as local processes (logs in a temporary directory), peers, checks, unpeers and
# leaves both clusters with no peering objects. Agents are killed on exit; on failure their logs' tails are
# printed and the clusters are cleaned by force so the next test starts from nothing.
# Ports of cluster i: P = CLIQO_DEV_BASE_PORT + 10*(i-1); the agent's health/metrics on P+6, auth on P+7.
: "${CLIQO_AGENT:?CLIQO_AGENT must name the cliqo-agent binary}"
: "${CLIQO_DEV_BASE_PORT:?CLIQO_DEV_BASE_PORT must give the first port of the environment}"
A=cluster-1
B=cluster-2
PEER_TMP=$(mktemp -d)
declare -A AGENT_PID=()
PEER_DONE=0

kcfg() { echo "$E2E_STATE/$1/kubeconfig"; }
base_port() { echo $((CLIQO_DEV_BASE_PORT + 10 * (${1#cluster-} - 1))); }
http_port() { echo $(($(base_port "$1") + 6)); }
auth_port() { echo $(($(base_port "$1") + 7)); }
auth_url() { echo "https://127.0.0.1:$(auth_port "$1")"; }
agent_log() { echo "$PEER_TMP/agent-$1.log"; }
# current_log CLUSTER: the log of the agent's latest start.
current_log() { awk '/^--- start / { buf = "" } { buf = buf $0 "\n" } END { printf "%s", buf }' "$(agent_log "$1")"; }
cluster_id() { jpath "$1" '{.data.cluster-id}' configmap -n cliqo cluster-id; }
# cq CLUSTER args...: cliqoctl against one cluster.
cq() {
  local c=$1
  shift
  "$CLIQOCTL" "$@" --kubeconfig "$(kcfg "$c")"
}
contains() { # DESCRIPTION HAYSTACK NEEDLE
  grep -qF -- "$3" <<<"$2" || fail "$1: '$3' not in: $2"
}
# jget CLUSTER jsonpath args...: one field of an object, empty when absent.
jget() {
  local c=$1 p=$2
  shift 2
  jpath "$c" "$p" "$@" 2>/dev/null || true
}
# fc_condition CLUSTER FC TYPE: the status of one peering condition of a ForeignCluster.
fc_condition() { jget "$1" "{.status.peeringConditions[?(@.type==\"$3\")].status}" foreigncluster "$2"; }
fc_condition_is() { [ "$(fc_condition "$1" "$2" "$3")" = "$4" ]; }
# http_code URL: the HTTP status (000 when nothing answers).
http_code() { curl -sk -o /dev/null -w '%{http_code}' --max-time 5 "$1" || true; }
agent_ready() { [ "$(http_code "http://127.0.0.1:$(http_port "$1")/readyz")" = 200 ]; }

# ensure_installed: cliqo on both clusters, without the agent's Deployment (idempotent).
ensure_installed() {
  local c out
  for c in "$A" "$B"; do
    out=$(cq "$c" install --cluster-name "$c" --auth-address "127.0.0.1:$(auth_port "$c")" --skip-agent 2>&1) ||
      fail "install on $c failed: $out"
  done
  A_ID=$(cluster_id "$A")
  B_ID=$(cluster_id "$B")
  if [ -z "$A_ID" ] || [ -z "$B_ID" ]; then fail "no cluster IDs after install"; fi
}

# start_agent CLUSTER: starts the cluster's agent (log appended to agent_log) and waits until it is ready.
start_agent() {
  local c=$1 ap
  ap=$(auth_port "$c")
  if [ -n "${AGENT_PID[$c]:-}" ] && pid_running "${AGENT_PID[$c]}"; then fail "agent of $c already runs"; fi
  printf -- '--- start %s\n' "$(now_rfc3339)" >>"$(agent_log "$c")"
  "$CLIQO_AGENT" --kubeconfig "$(kcfg "$c")" --http-addr "127.0.0.1:$(http_port "$c")" --auth-addr "127.0.0.1:$ap" \
    --auth-url "https://127.0.0.1:$ap" --identity "agent-${c#cluster-}" --unpeer-timeout 8s --peer-check-interval 3s \
    --kubelet-addr "127.0.0.1:$(($(http_port "$c") + 2))" --webhook-addr "127.0.0.1:$(($(http_port "$c") + 3))" \
    --webhook-url "https://127.0.0.1:$(($(http_port "$c") + 3))" \
    --webhook-client-ca "$E2E_STATE/$c/pki/webhook-client-ca.crt" \
    >>"$(agent_log "$c")" 2>&1 &
  AGENT_PID[$c]=$!
}
wait_agent_ready() {
  local c=$1 deadline=$(($(date +%s) + 30))
  until agent_ready "$c"; do
    pid_running "${AGENT_PID[$c]}" || { tail -30 "$(agent_log "$c")" >&2; fail "agent of $c exited while starting"; }
    [ "$(date +%s)" -lt "$deadline" ] || { tail -30 "$(agent_log "$c")" >&2; fail "agent of $c not ready after 30s"; }
    sleep 0.2
  done
}
start_agents() {
  start_agent "$A"
  start_agent "$B"
  wait_agent_ready "$A"
  wait_agent_ready "$B"
}
# stop_agent CLUSTER [SIGNAL]: signals the agent and waits for its exit. A graceful stop (TERM, the
# default) must exit 0.
stop_agent() {
  local c=$1 sig=${2:-TERM} pid=${AGENT_PID[$1]:-} rc=0 deadline
  [ -n "$pid" ] || return 0
  # Not reported by bash as "Killed" (the exit status of a killed agent is not checked).
  if [ "$sig" = KILL ]; then disown "$pid" 2>/dev/null || true; fi
  kill -"$sig" "$pid" 2>/dev/null || true
  deadline=$(($(date +%s) + 20))
  while pid_running "$pid"; do
    [ "$(date +%s)" -lt "$deadline" ] || { tail -30 "$(agent_log "$c")" >&2; fail "agent of $c did not exit within 20s of SIG$sig"; }
    sleep 0.1
  done
  if [ "$sig" != KILL ]; then wait "$pid" 2>/dev/null || rc=$?; fi
  AGENT_PID[$c]=""
  if [ "$sig" = TERM ] && [ "$rc" -ne 0 ]; then
    log_report "$(agent_log "$c")"
    fail "agent of $c exited $rc after SIGTERM"
  fi
}
kill_agent() { stop_agent "$1" KILL; }
restart_agent() {
  stop_agent "$1" "${2:-TERM}"
  start_agent "$1"
  wait_agent_ready "$1"
}
# check_logs: no sanitizer report in any agent log.
check_logs() {
  local f
  for f in "$PEER_TMP"/agent-*.log; do
    [ -f "$f" ] || continue
    if grep -qE 'AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:' "$f"; then
      cat "$f" >&2
      fail "sanitizer report in $(basename "$f")"
    fi
  done
}
agent_is_asan() { grep -qa __asan_init "$CLIQO_AGENT"; }

# peering_objects CLUSTER: prints every peering object left on the cluster (nothing when clean).
peering_objects() {
  local c=$1 sas
  kc "$c" get foreignclusters -o name
  kc "$c" get peeringrequests --all-namespaces -o name
  kc "$c" get namespaces -l discovery.liqo.io/tenant-namespace=true -o name
  kc "$c" get secrets -n cliqo -o name | grep '^secret/remote-' || true
  # The ServiceAccounts as NAMESPACE/NAME (read with curl: kubectl's jsonpath with range is not kc_fast's).
  sas=$(kget "$c" serviceaccounts -A) || { echo "cannot list the ServiceAccounts of $c"; return 1; }
  jq -r '.items[] | "serviceaccount/\(.metadata.namespace)/\(.metadata.name)"' <<<"$sas" | grep '/remote-' || true
}
no_peering_objects() {
  local left
  left=$(peering_objects "$1" 2>&1) || return 1
  [ -z "$left" ]
}
# assert_no_peering_objects CLUSTER: no ForeignCluster, PeeringRequest, tenant namespace, Secret remote-* in
# cliqo, ServiceAccount remote-*: waits up to 60 s (namespaces take a few seconds to terminate).
assert_no_peering_objects() {
  local c=$1 deadline=$(($(date +%s) + 60))
  until no_peering_objects "$c"; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      fail "peering objects left on $c after 60s: $(peering_objects "$c" 2>&1 | tr '\n' ' ')"
    fi
    sleep 0.5
  done
}

# force_clean: removes every peering object from both clusters without the agents (finalizers dropped).
force_clean() {
  local c fc
  for c in "$A" "$B"; do
    for fc in $(kc "$c" get foreignclusters -o name 2>/dev/null); do
      kc "$c" patch "$fc" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1 || true
      kc "$c" delete "$fc" --wait=false >/dev/null 2>&1 || true
    done
    kc "$c" delete peeringrequests --all-namespaces --all --wait=false >/dev/null 2>&1 || true
    kc "$c" delete namespaces -l discovery.liqo.io/tenant-namespace=true --wait=false >/dev/null 2>&1 || true
    kc "$c" get secrets -n cliqo -o name 2>/dev/null | grep '^secret/remote-' |
      xargs -r "$KUBECTL" --kubeconfig "$(kcfg "$c")" delete -n cliqo --wait=false >/dev/null 2>&1 || true
  done
}

# cleanup_hook: a test's own cleanup, run first on exit (redefine it).
cleanup_hook() { :; }
peering_cleanup() {
  local rc=$? c
  cleanup_hook || true
  if [ "$PEER_DONE" != 1 ]; then
    for c in "$A" "$B"; do
      [ -f "$(agent_log "$c")" ] && { echo "--- last lines of the agent log of $c" >&2; tail -40 "$(agent_log "$c")" >&2; }
    done
  fi
  for c in "${!AGENT_PID[@]}"; do
    if [ -n "${AGENT_PID[$c]}" ] && pid_running "${AGENT_PID[$c]}"; then kill -KILL "${AGENT_PID[$c]}" 2>/dev/null || true; fi
  done
  [ "$PEER_DONE" = 1 ] || force_clean
  rm -rf "$PEER_TMP"
  exit "$rc"
}
trap peering_cleanup EXIT

# setup: installed clusters, no peering left over (cleaned by force, with a note, if a failed test left
# some), both agents ready. Sets A_ID and B_ID.
setup() {
  local c
  ensure_installed
  for c in "$A" "$B"; do
    if ! no_peering_objects "$c"; then
      say "note: $c holds peering objects from an earlier test; cleaning them"
      force_clean
    fi
  done
  assert_no_peering_objects "$A"
  assert_no_peering_objects "$B"
  start_agents
}

# add_command: B's add command, as words in ADD_CMD (the first word, cliqoctl, removed).
add_command() {
  local line
  line=$(cq "$B" generate-add-command) || fail "generate-add-command failed"
  read -r -a ADD_CMD <<<"$line"
  [ "${ADD_CMD[0]}" = cliqoctl ] || fail "the add command does not start with cliqoctl: $line"
  ADD_CMD=("${ADD_CMD[@]:1}")
}
# add_flag FLAG: the value of a flag of ADD_CMD.
add_flag() {
  local i
  for i in "${!ADD_CMD[@]}"; do
    if [ "${ADD_CMD[$i]}" = "$1" ]; then
      echo "${ADD_CMD[$((i + 1))]}"
      return 0
    fi
  done
  fail "no $1 in the add command"
}
# run_add OUT-FILE ERR-FILE args...: cliqoctl against A with args; exit status in ADD_RC.
run_add() {
  local out=$1 err=$2
  shift 2
  ADD_RC=0
  cq "$A" "$@" >"$out" 2>"$err" || ADD_RC=$?
}
# peer: runs B's printed add command on A and waits for it; ADD_SECONDS = the time it printed.
peer() {
  add_command
  run_add "$PEER_TMP/add.out" "$PEER_TMP/add.err" "${ADD_CMD[@]}" --timeout 60s
  [ "$ADD_RC" -eq 0 ] || fail "add failed ($ADD_RC): $(cat "$PEER_TMP/add.err")"
  ADD_SECONDS=$(sed -n 's/^peered with .* in \([0-9.]*\)s$/\1/p' "$PEER_TMP/add.out")
  [ -n "$ADD_SECONDS" ] || fail "no 'peered with' line: $(cat "$PEER_TMP/add.out")"
}
# unpeer_all: unpeers every ForeignCluster that is not only an incoming peering, on both clusters, then
# checks that both are clean.
unpeer_all() {
  local c fc out
  for c in "$A" "$B"; do
    for fc in $(jpath "$c" '{.items[*].metadata.name}' foreignclusters); do
      [ "$(jget "$c" '{.metadata.labels.discovery\.liqo\.io/discovery-type}' foreigncluster "$fc")" = IncomingPeering ] && continue
      out=$(cq "$c" unpeer "$fc" --timeout 60s 2>&1) || fail "unpeer $fc on $c failed: $out"
    done
  done
  assert_no_peering_objects "$A"
  assert_no_peering_objects "$B"
}
# finish: stops both agents gracefully, checks their logs, and marks the test as clean.
finish() {
  stop_agent "$A"
  stop_agent "$B"
  check_logs
  PEER_DONE=1
}
