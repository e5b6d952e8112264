#!/usr/bin/env bash
# Helpers of the discovery tests (tests/e2e/discovery/): source after ../lib.sh. Cluster i runs in
# test host cqd-i (198.18.77.i); its agent runs there as a local process with health on P+6 and
# the auth endpoint on P+7 (P = CLIQO_DEV_BASE_PORT + 10*(i-1)), announcing and browsing on the
# host's eth0. Test host cqd-4 has no cluster: spoofers and injectors run there. Every test starts
# its agents and tools itself and, on exit (trap), kills them, removes every ForeignCluster and
# credential the test made, and prints the agents' log tails when it failed.
: "${CLIQO_AGENT:?CLIQO_AGENT must name the cliqo-agent binary}"
: "${MDNS_TOOL:?MDNS_TOOL must name the cliqo-mdns-tool binary}"
: "${CLIQO_DEV_BASE_PORT:?CLIQO_DEV_BASE_PORT must give the first port of the environment}"
source "$(dirname "${BASH_SOURCE[0]}")/net.sh"
net_require || fail "see above"
DTMP=$(mktemp -d)
declare -A AGENT_PID=()
TOOL_PIDS=()
DISC_DONE=0
TTL=${DISC_TTL:-4}

base_port() { echo $((CLIQO_DEV_BASE_PORT + 10 * ($1 - 1))); }
http_port() { echo $(($(base_port "$1") + 6)); }
auth_port() { echo $(($(base_port "$1") + 7)); }
auth_url() { echo "https://$(net_addr "$1"):$(auth_port "$1")"; }
webhook_port() { echo $(($(base_port "$1") + 9)); }
# nsx I command...: runs a command on test host I.
nsx() {
  local i=$1
  shift
  nsenter --net="/run/netns/$(net_ns "$i")" "$@"
}
kcfg() { echo "$E2E_STATE/cluster-$1/kubeconfig"; }
# kcn I args...: kubectl against cluster I (from inside its host): kc, so that its commonest forms are curl's.
kcn() {
  local i=$1
  shift
  # shellcheck disable=SC2034 # read by kc_slow and kcurl, which this call reaches (bash's dynamic scope)
  local KC_PREFIX=(nsenter --net="/run/netns/$(net_ns "$i")")
  kc "cluster-$i" "$@"
}
# cqn I args...: cliqoctl against cluster I.
cqn() {
  local i=$1
  shift
  nsx "$i" "$CLIQOCTL" "$@" --kubeconfig "$(kcfg "$i")"
}
jgetn() { # I jsonpath args...
  local i=$1 p=$2
  shift 2
  kcn "$i" get "$@" -o "jsonpath=$p" 2>/dev/null || true
}
cluster_id() { jgetn "$1" '{.data.cluster-id}' configmap -n cliqo cluster-id; }
agent_log() { echo "$DTMP/agent-$1.log"; }
http_code() { nsx "$1" curl -sk -o /dev/null -w '%{http_code}' --max-time 5 "$2" || true; }
agent_ready() { [ "$(http_code "$1" "http://$(net_addr "$1"):$(http_port "$1")/readyz")" = 200 ]; }
# metric I NAME [LABEL-FILTER]: the sum of the samples of a metric of agent I (0 when absent).
metric() {
  local i=$1 name=$2 filter=${3:-}
  nsx "$i" curl -s --max-time 5 "http://$(net_addr "$i"):$(http_port "$i")/metrics" 2>/dev/null |
    awk -v n="$name" -v f="$filter" '
      $1 ~ "^"n"({|$)" && (f == "" || index($1, f) > 0) { s += $NF }
      END { printf "%d\n", s }'
}

# install_all: cliqo on clusters 1..3 without the in-cluster agent (idempotent), and the
# discovery test settings: records of TTL seconds, so that a vanished cluster goes in seconds.
install_all() {
  local i out
  for i in 1 2 3; do
    out=$(cqn "$i" install --cluster-name "cluster-$i" --auth-address "$(net_addr "$i"):$(auth_port "$i")" \
      --skip-agent 2>&1) || fail "install on cluster $i failed: $out"
    kcn "$i" patch clusterconfig configuration --type merge \
      -p "{\"spec\":{\"discoveryConfig\":{\"enableDiscovery\":true,\"enableAdvertisement\":true,\"ttl\":$TTL,\"autojoin\":true,\"autojoinUntrusted\":false}}}" \
      >/dev/null || fail "cannot set the discovery settings of cluster $i"
  done
  ID1=$(cluster_id 1)
  ID2=$(cluster_id 2)
  ID3=$(cluster_id 3)
  [ -n "$ID1" ] && [ -n "$ID2" ] && [ -n "$ID3" ] || fail "no cluster IDs after install"
}

start_agent() {
  local i=$1
  if [ -n "${AGENT_PID[$i]:-}" ] && pid_running "${AGENT_PID[$i]}"; then fail "agent $i already runs"; fi
  printf -- '--- start %s\n' "$(now_rfc3339)" >>"$(agent_log "$i")"
  # nsenter itself, not the nsx function: $! must be the agent's PID (nsenter execs it).
  nsenter --net="/run/netns/$(net_ns "$i")" "$CLIQO_AGENT" --kubeconfig "$(kcfg "$i")" --http-addr "$(net_addr "$i"):$(http_port "$i")" \
    --metrics-addr "$(net_addr "$i"):$(http_port "$i")" --auth-addr "$(net_addr "$i"):$(auth_port "$i")" --auth-url "$(auth_url "$i")" \
    --api-server-url "https://$(net_addr "$i"):$(base_port "$i")" --identity "agent-$i" \
    --webhook-addr "$(net_addr "$i"):$(webhook_port "$i")" --webhook-url "https://$(net_addr "$i"):$(webhook_port "$i")" \
    --webhook-client-ca "$E2E_STATE/cluster-$i/pki/webhook-client-ca.crt" \
    --unpeer-timeout 8s --peer-check-interval 3s --log-level "${AGENT_LOG_LEVEL:-debug}" \
    >>"$(agent_log "$i")" 2>&1 &
  AGENT_PID[$i]=$!
}
wait_agent_ready() {
  local i=$1 deadline=$(($(date +%s) + 60))
  until agent_ready "$i"; do
    pid_running "${AGENT_PID[$i]}" || { tail -30 "$(agent_log "$i")" >&2; fail "agent $i exited while starting"; }
    [ "$(date +%s)" -lt "$deadline" ] || { tail -30 "$(agent_log "$i")" >&2; fail "agent $i not ready after 60s"; }
    sleep 0.2
  done
}
start_agents() {
  local i
  for i in "$@"; do start_agent "$i"; done
  for i in "$@"; do wait_agent_ready "$i"; done
}
# stop_agent I [SIGNAL]: TERM (goodbye packets; must exit 0) or KILL (silence).
stop_agent() {
  local i=$1 sig=${2:-TERM} pid=${AGENT_PID[$1]:-} rc=0 deadline
  [ -n "$pid" ] || return 0
  if [ "$sig" = KILL ]; then disown "$pid" 2>/dev/null || true; fi
  kill -"$sig" "$pid" 2>/dev/null || true
  deadline=$(($(date +%s) + 30))
  while pid_running "$pid"; do
    [ "$(date +%s)" -lt "$deadline" ] || { tail -30 "$(agent_log "$i")" >&2; fail "agent $i did not exit within 30s of SIG$sig"; }
    sleep 0.1
  done
  if [ "$sig" != KILL ]; then wait "$pid" 2>/dev/null || rc=$?; fi
  AGENT_PID[$i]=""
  if [ "$sig" = TERM ] && [ "$rc" -ne 0 ]; then
    tail -30 "$(agent_log "$i")" >&2
    fail "agent $i exited $rc after SIGTERM"
  fi
}

# tool I args...: runs cliqo-mdns-tool on test host I in the background (output in $DTMP/tool-N).
tool() {
  local i=$1
  shift
  nsenter --net="/run/netns/$(net_ns "$i")" "$MDNS_TOOL" "$@" >"$DTMP/tool-${#TOOL_PIDS[@]}.out" 2>&1 &
  TOOL_PIDS+=($!)
  LAST_TOOL=$!
  LAST_TOOL_OUT="$DTMP/tool-$((${#TOOL_PIDS[@]} - 1)).out"
}
stop_tool() { # PID [SIGNAL]
  local pid=$1 sig=${2:-TERM}
  kill -"$sig" "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do pid_running "$pid" || break; sleep 0.1; done
  wait "$pid" 2>/dev/null || true
}

# fc_field I FC-NAME JSONPATH: a field of a ForeignCluster ("" when absent).
fc_field() { jgetn "$1" "$3" foreigncluster "$2"; }
fc_exists() { kcn "$1" get foreigncluster "$2" >/dev/null 2>&1; }
fc_gone() { ! fc_exists "$1" "$2"; }
fc_announced() { [ "$(fc_field "$1" "$2" '{.status.discovery.announced}')" = true ]; }
fc_trust_is() { [ "$(fc_field "$1" "$2" '{.status.discovery.trust}')" = "$3" ]; }

# clean_cluster I: no ForeignCluster, remote Secret, tenant namespace or PeeringRequest left
# (finalizers dropped: the agents are stopped by then).
clean_cluster() {
  local i=$1 fc
  for fc in $(kcn "$i" get foreignclusters -o name 2>/dev/null); do
    kcn "$i" patch "$fc" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1 || true
    kcn "$i" delete "$fc" --wait=false >/dev/null 2>&1 || true
  done
  kcn "$i" delete searchdomains --all --wait=false >/dev/null 2>&1 || true
  kcn "$i" delete peeringrequests --all-namespaces --all --wait=false >/dev/null 2>&1 || true
  kcn "$i" delete namespaces -l discovery.liqo.io/tenant-namespace=true --wait=false >/dev/null 2>&1 || true
  for s in $(kcn "$i" get secrets -n cliqo -o name 2>/dev/null | grep '^secret/remote-' || true); do
    kcn "$i" delete -n cliqo "$s" --wait=false >/dev/null 2>&1 || true
  done
}
no_leftovers() {
  local i=$1
  [ -z "$(kcn "$i" get foreignclusters -o name 2>/dev/null)" ] &&
    [ -z "$(kcn "$i" get secrets -n cliqo -o name 2>/dev/null | grep '^secret/remote-' || true)" ]
}

check_logs() {
  local f
  for f in "$DTMP"/agent-*.log; do
    [ -f "$f" ] || continue
    if grep -qE 'AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:' "$f"; then
      cat "$f" >&2
      fail "sanitizer report in $(basename "$f")"
    fi
  done
}

cleanup_hook() { :; }
disc_cleanup() {
  local rc=$? i pid
  cleanup_hook || true
  for pid in "${TOOL_PIDS[@]}"; do
    pid_running "$pid" && kill -KILL "$pid" 2>/dev/null || true
  done
  if [ "$DISC_DONE" != 1 ]; then
    for i in "${!AGENT_PID[@]}"; do
      [ -f "$(agent_log "$i")" ] && { echo "--- last lines of the agent log of cluster $i" >&2; tail -40 "$(agent_log "$i")" >&2; }
    done
    for f in "$DTMP"/tool-*.out; do [ -f "$f" ] && { echo "--- $f" >&2; tail -5 "$f" >&2; }; done
  fi
  for i in "${!AGENT_PID[@]}"; do
    if [ -n "${AGENT_PID[$i]}" ] && pid_running "${AGENT_PID[$i]}"; then kill -KILL "${AGENT_PID[$i]}" 2>/dev/null || true; fi
  done
  for i in 1 2 3; do clean_cluster "$i"; done
  rm -rf "$DTMP"
  exit "$rc"
}
trap disc_cleanup EXIT

# setup: installed clusters with nothing left from an earlier test.
setup() {
  local i
  install_all
  for i in 1 2 3; do
    no_leftovers "$i" || { say "note: cluster $i holds objects of an earlier test; cleaning them"; clean_cluster "$i"; }
  done
  for i in 1 2 3; do wait_for 60 "cluster $i clean" no_leftovers "$i"; done
}

# finish: stops the agents gracefully, checks their logs, marks the test clean.
finish() {
  local i
  for i in "${!AGENT_PID[@]}"; do stop_agent "$i"; done
  check_logs
  DISC_DONE=1
}
