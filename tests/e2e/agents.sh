# Agents as local processes for e2e groups that peer clusters (tests/e2e/<group>/common.sh sources it after
# ../lib.sh). The group sets ALL (its clusters) and may set AGENT_ID_PREFIX and define agent_extra_flags CLUSTER
# (more flags for that cluster's agent). Agents outlive a single test: pid files and logs under the group's state.
# Every informer is replayed to the modules in slices, held meanwhile (--replay-at-once 0; the agent's default
# does that above 1,000 objects only), so that the groups exercise that path on their small clusters.
: "${CLIQO_AGENT:?CLIQO_AGENT must name the cliqo-agent binary}"
: "${CLIQO_DEV_BASE_PORT:?CLIQO_DEV_BASE_PORT must give the first port of the environment}"
declare -F agent_extra_flags >/dev/null || agent_extra_flags() { :; }
AGENTS_DIR="$E2E_STATE/agents"
mkdir -p "$AGENTS_DIR"

kcfg() { echo "$E2E_STATE/$1/kubeconfig"; }
base_port() { echo $((CLIQO_DEV_BASE_PORT + 10 * (${1#cluster-} - 1))); }
http_port() { echo $(($(base_port "$1") + 6)); }
auth_port() { echo $(($(base_port "$1") + 7)); }
kubelet_port() { echo $(($(base_port "$1") + 8)); }
webhook_port() { echo $(($(base_port "$1") + 9)); }
# The CA of the client certificate each cluster's API server presents to admission webhooks (cliqo-devenv
# makes it): every agent's webhooks require that certificate (docs/security.md), unless the cluster is
# listed in WEBHOOKS_UNAUTHENTICATED (space-separated; a test of the fallback mode sets it).
webhook_client_ca() { echo "$E2E_STATE/$1/pki/webhook-client-ca.crt"; }
# The API server's own certificate and key, for a test that talks to the webhooks directly as it would.
webhook_client_cert() { echo "$E2E_STATE/$1/pki/webhook-client.crt"; }
webhook_client_key() { echo "$E2E_STATE/$1/pki/webhook-client.key"; }
webhook_auth_flags() {
  case " ${WEBHOOKS_UNAUTHENTICATED:-} " in *" $1 "*) return 0 ;; esac
  echo --webhook-client-ca "$(webhook_client_ca "$1")" --webhook-client-cn kube-apiserver-webhook-client
}

agent_log() { echo "$AGENTS_DIR/$1.log"; }
agent_pidfile() { echo "$AGENTS_DIR/$1.pid"; }
cq() {
  local c=$1
  shift
  "$CLIQOCTL" "$@" --kubeconfig "$(kcfg "$c")"
}
cluster_id() { jpath "$1" '{.data.cluster-id}' configmap -n cliqo cluster-id; }
# install_clusters CLUSTER...: `cliqoctl install --skip-agent` on each cluster, each with its auth address,
# all at once (little faster than one after the other on two cores: an install is mostly CPU, about 3.5 s);
# fails with every failed install's output.
install_clusters() {
  local c pids=() bad=""
  for c in "$@"; do
    cq "$c" install --cluster-name "$c" --auth-address "127.0.0.1:$(auth_port "$c")" --skip-agent \
      >"$AGENTS_DIR/install-$c.out" 2>&1 &
    pids+=($!)
  done
  for c in "$@"; do
    wait "${pids[0]}" || bad+=" $c: $(tr '\n' ' ' <"$AGENTS_DIR/install-$c.out")"
    pids=("${pids[@]:1}")
  done
  [ -z "$bad" ] || fail "install failed on$bad"
}
jget() { # CLUSTER jsonpath args...: kubectl's -o jsonpath, read with curl and jq (jpath in lib.sh)
  local c=$1 p=$2
  shift 2
  jpath "$c" "$p" "$@" 2>/dev/null || true
}
http_code() { curl -sk -o /dev/null -w '%{http_code}' --max-time 5 "$1" || true; }

# ---- agents (they outlive a single test: pid files under the group's state) ------------------------

agent_pid() { cat "$(agent_pidfile "$1")" 2>/dev/null || true; }
agent_alive() {
  local pid
  pid=$(agent_pid "$1")
  [ -n "$pid" ] && pid_running "$pid"
}
start_agent() {
  local c=$1
  agent_alive "$c" && return 0
  printf -- '--- start %s\n' "$(now_rfc3339)" >>"$(agent_log "$c")"
  setsid "$CLIQO_AGENT" --kubeconfig "$(kcfg "$c")" --http-addr "127.0.0.1:$(http_port "$c")" \
    --auth-addr "127.0.0.1:$(auth_port "$c")" --auth-url "https://127.0.0.1:$(auth_port "$c")" \
    --identity "${AGENT_ID_PREFIX:-agent}-${c#cluster-}" --unpeer-timeout 8s --peer-check-interval 3s \
    --replay-at-once "${E2E_REPLAY_AT_ONCE:-0}" \
    --kubelet-addr "127.0.0.1:$(kubelet_port "$c")" --node-address 127.0.0.1 \
    --webhook-addr "127.0.0.1:$(webhook_port "$c")" --webhook-url "https://127.0.0.1:$(webhook_port "$c")" \
    $(webhook_auth_flags "$c") $(agent_extra_flags "$c") \
    >>"$(agent_log "$c")" 2>&1 </dev/null &
  echo $! >"$(agent_pidfile "$c")"
}
wait_agent_ready() {
  local c=$1 deadline=$(($(date +%s) + 40))
  until [ "$(http_code "http://127.0.0.1:$(http_port "$1")/readyz")" = 200 ]; do
    agent_alive "$c" || { tail -30 "$(agent_log "$c")" >&2; fail "agent of $c exited while starting"; }
    [ "$(date +%s)" -lt "$deadline" ] || { tail -30 "$(agent_log "$c")" >&2; fail "agent of $c not ready after 40s"; }
    sleep 0.2
  done
}
# ensure_agents: every agent runs (an agent outlives its API server's outage; a test may have stopped one).
ensure_agents() {
  local c
  for c in "${ALL[@]}"; do start_agent "$c"; done
  for c in "${ALL[@]}"; do wait_agent_ready "$c"; done
}
stop_agent() { # CLUSTER [SIGNAL]: waits for the exit; a TERM must exit 0
  stop_agents_sig "${2:-TERM}" "$1"
}
# stop_agents CLUSTER...: stop_agent of each, the signals sent at once and the exits awaited after (one
# agent's graceful shutdown does not wait for the other's). A second signal makes an agent exit at once
# with status 1, so each gets exactly one.
stop_agents() { stop_agents_sig TERM "$@"; }
stop_agents_sig() { # SIGNAL CLUSTER...
  local sig=$1 c pid deadline
  local -A pids=()
  shift
  for c in "$@"; do
    pid=$(agent_pid "$c")
    if [ -n "$pid" ] && pid_running "$pid"; then
      pids[$c]=$pid
      kill -"$sig" "$pid" 2>/dev/null || true
    fi
  done
  deadline=$(($(date +%s) + 20))
  for c in "${!pids[@]}"; do
    while pid_running "${pids[$c]}"; do
      [ "$(date +%s)" -lt "$deadline" ] || fail "agent of $c did not exit within 20s of SIG$sig"
      sleep 0.1
    done
    rm -f "$(agent_pidfile "$c")"
    # The exit status of a setsid'd process is not ours to wait for: its log says how it ended.
    if [ "$sig" = TERM ] && ! tail -3 "$(agent_log "$c")" | grep_q 'stopped (exit status 0)'; then
      log_report "$(agent_log "$c")"
      fail "agent of $c did not stop cleanly after SIGTERM"
    fi
  done
}
check_logs() {
  local f
  for f in "$AGENTS_DIR"/*.log; do
    [ -f "$f" ] || continue
    if grep -qE 'AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:' "$f"; then
      grep -nE -A40 'AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:' "$f" | head -80 >&2
      fail "sanitizer report in $(basename "$f")"
    fi
  done
}
# On failure: the tails of the agents' logs.
agents_on_exit() {
  local rc=$? c
  if [ "$rc" != 0 ]; then
    for c in "${ALL[@]}"; do
      [ -f "$(agent_log "$c")" ] && { echo "--- last lines of the agent log of $c" >&2; tail -25 "$(agent_log "$c")" >&2; }
    done
  fi
  exit "$rc"
}

peered() { [ "$(jget "$A" '{.status.peeringConditions[?(@.type=="OutgoingPeering")].status}' foreigncluster "$1")" = Established ]; }
peer_with() { # PROVIDER: runs the provider's printed add command on A
  local line
  line=$(cq "$1" generate-add-command) || fail "generate-add-command on $1 failed"
  read -r -a ADD_CMD <<<"$line"
  out=$(cq "$A" "${ADD_CMD[@]:1}" --name "$1" --timeout 60s 2>&1) || fail "add $1 failed: $out"
}
patch_config() { kc "$1" patch clusterconfig configuration --type=merge -p "$2" >/dev/null || fail "cannot patch the ClusterConfig of $1"; }
