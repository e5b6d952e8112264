#!/usr/bin/env bash
# Helpers of the cliqo-agent e2e tests (source after ../lib.sh). Expects CLIQO_AGENT (the binary).
# Every agent started with start_agent is killed on exit, so the fixture's teardown check passes.
: "${CLIQO_AGENT:?CLIQO_AGENT must name the cliqo-agent binary}"
KUBECONFIG_1="$E2E_STATE/cluster-1/kubeconfig"
# The agents the tests start listen on P + 50 .. P + 59 (P: the environment's base port; its cluster takes P .. P + 9).
P=${CLIQO_DEV_BASE_PORT:?}
AGENT_TMP=$(mktemp -d)
declare -A AGENT_PID=()

cleanup_agents() {
  local rc=$? n
  for n in "${!AGENT_PID[@]}"; do
    # A failed test shows what its agents said (a sanitizer report in full).
    if [ "$rc" != 0 ] && [ -s "$AGENT_TMP/$n.log" ]; then
      echo "--- agent $n (last 150 lines of its log) ---" >&2
      tail -n 150 "$AGENT_TMP/$n.log" >&2
    fi
    if pid_running "${AGENT_PID[$n]}"; then kill -KILL "${AGENT_PID[$n]}" 2>/dev/null || true; fi
  done
  rm -rf "$AGENT_TMP"
}
trap cleanup_agents EXIT

# The agent's controllers watch cliqo's kinds: without the CRDs it is (rightly) never ready. Install
# them once (idempotent; the tests use namespaces of their own for the agent's objects).
"$CLIQOCTL" install --kubeconfig "$KUBECONFIG_1" --cluster-name agent-e2e --skip-agent >/dev/null

# start_agent NAME args...: runs cliqo-agent in the background with the admin kubeconfig; its log is
# agent_log NAME. Its admission webhooks listen on any free loopback port (several agents run at once and
# the group's fixed ports are taken), unless args say otherwise, and require the API server's webhook
# client certificate (its CA made by cliqo-devenv).
start_agent() {
  local n=$1
  shift
  "$CLIQO_AGENT" --kubeconfig "$KUBECONFIG_1" --webhook-addr 127.0.0.1:0 \
    --webhook-client-ca "$E2E_STATE/cluster-1/pki/webhook-client-ca.crt" "$@" >"$AGENT_TMP/$n.log" 2>&1 &
  AGENT_PID[$n]=$!
}
agent_log() { echo "$AGENT_TMP/$1.log"; }

# http_code URL: the HTTP status (000 when nothing answers).
http_code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$1" || true; }
http_is() { [ "$(http_code "$2")" = "$1" ]; }

# metric PORT NAME: the value of an unlabelled sample.
metric() { curl -s --max-time 5 "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n { print $2 }'; }

# stop_agent NAME [SIGNAL] [SECONDS]: signals the agent and waits for its exit; its status goes to
# AGENT_RC (not a subshell: only this shell can wait for its children).
stop_agent() {
  local n=$1 sig=${2:-TERM} t=${3:-15} pid=${AGENT_PID[$1]} rc=0 deadline
  kill -"$sig" "$pid" 2>/dev/null || true
  deadline=$(($(date +%s) + t))
  while pid_running "$pid"; do
    [ "$(date +%s)" -lt "$deadline" ] || { cat "$(agent_log "$n")" >&2; fail "agent $n did not exit within ${t}s of SIG$sig"; }
    sleep 0.1
  done
  wait "$pid" || rc=$?
  AGENT_RC=$rc
}

# wait_exit NAME SECONDS: waits for an agent to exit by itself; its status goes to AGENT_RC.
wait_exit() {
  local pid=${AGENT_PID[$1]} rc=0 deadline=$(($(date +%s) + $2))
  while pid_running "$pid"; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "agent $1 did not exit within $2s"
    sleep 0.2
  done
  wait "$pid" || rc=$?
  AGENT_RC=$rc
}

# check_log NAME: no sanitizer report in the agent's log.
check_log() {
  if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$(agent_log "$1")"; then
    cat "$(agent_log "$1")" >&2
    fail "sanitizer report in the log of agent $1"
  fi
}

lease_holder() { kc cluster-1 -n "$1" get lease "$2" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
