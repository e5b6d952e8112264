# Helpers of the broker group (tests/e2e/broker/): source after ../lib.sh.
#
# Four clusters: C = cluster-1 (a consumer of the broker), K = cluster-2 (the broker's cluster: cliqo agent and
# cliqo-broker), P1 = cluster-3 and P2 = cluster-4 (providers of K). Peerings: K consumes P1 and P2, C consumes
# K. K's ClusterConfig says offerSource: Broker, so what K advertises to C is the aggregator's sum. The broker
# runs with test settings: probes every second, its API on K's base port + 5 with a bearer token required.
C=cluster-1
K=cluster-2
P1=cluster-3
P2=cluster-4
ALL=("$C" "$K" "$P1" "$P2")
AGENT_ID_PREFIX=brk-agent
: "${CLIQO_BROKER:?CLIQO_BROKER must name the cliqo-broker binary}"
source "$(dirname "${BASH_SOURCE[0]}")/../agents.sh"

declare -A CLUSTER_IDS=()
ids() {
  local c
  for c in "${ALL[@]}"; do
    CLUSTER_IDS[$c]=$(cluster_id "$c")
    [ -n "${CLUSTER_IDS[$c]}" ] || fail "cluster ID of $c unknown"
  done
  C_ID=${CLUSTER_IDS[$C]} K_ID=${CLUSTER_IDS[$K]} P1_ID=${CLUSTER_IDS[$P1]} P2_ID=${CLUSTER_IDS[$P2]}
}
id_of() { echo "${CLUSTER_IDS[$1]}"; }

# ---- the broker -------------------------------------------------------------------------------------------
BROKER_PORT=$((CLIQO_DEV_BASE_PORT + 40))
API="http://127.0.0.1:$BROKER_PORT"
BROKER_LOG="$AGENTS_DIR/broker.log"
BROKER_PID="$AGENTS_DIR/broker.pid"
TOKEN_FILE="$AGENTS_DIR/broker-token"
token() { cat "$TOKEN_FILE"; }
broker_pid() { cat "$BROKER_PID" 2>/dev/null || true; }
broker_alive() { local p; p=$(broker_pid); [ -n "$p" ] && pid_running "$p"; }
start_broker() {
  broker_alive && return 0
  printf -- '--- start %s\n' "$(now_rfc3339)" >>"$BROKER_LOG"
  setsid "$CLIQO_BROKER" --with-catalog --with-orchestrator --with-aggregator --kubeconfig "$(kcfg "$K")" \
    --api-addr "127.0.0.1:$BROKER_PORT" --require-token --probe-interval 1s --probe-timeout 1s \
    --rate-limit 50 --identity brk-broker --lease-duration 3s --renew-deadline 2s --retry-period 500ms \
    >>"$BROKER_LOG" 2>&1 </dev/null &
  echo $! >"$BROKER_PID"
}
wait_broker_ready() {
  local deadline=$(($(date +%s) + 40))
  until [ "$(http_code "$API/readyz")" = 200 ] && [ "$(http_code "$API/api/policy")" = 200 ]; do
    broker_alive || { tail -30 "$BROKER_LOG" >&2; fail "cliqo-broker exited while starting"; }
    [ "$(date +%s)" -lt "$deadline" ] || { tail -30 "$BROKER_LOG" >&2; fail "cliqo-broker not ready after 40s"; }
    sleep 0.2
  done
}
ensure_broker() { start_broker; wait_broker_ready; }
stop_broker() {
  local p deadline
  p=$(broker_pid)
  [ -n "$p" ] && pid_running "$p" || return 0
  kill -TERM "$p" 2>/dev/null || true
  deadline=$(($(date +%s) + 20))
  while pid_running "$p"; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "cliqo-broker did not exit within 20s of SIGTERM"
    sleep 0.1
  done
  rm -f "$BROKER_PID"
  tail -3 "$BROKER_LOG" | grep_q 'stopped (exit status 0)' || { tail -20 "$BROKER_LOG" >&2; fail "cliqo-broker did not stop cleanly"; }
}
brk_on_exit() {
  local rc=$?
  if [ "$rc" != 0 ] && [ -f "$BROKER_LOG" ]; then
    echo "--- last lines of the broker log" >&2
    tail -30 "$BROKER_LOG" >&2
  fi
  (exit "$rc")
  agents_on_exit
}

# api METHOD PATH [curl args...]: the answer's body; API_STATUS and API_TYPE say the status and Content-Type.
api() {
  local m=$1 p=$2 out
  shift 2
  out=$(curl -s -X "$m" -w '\n%{http_code} %{content_type}' --max-time 10 "$@" "$API$p") || true
  API_BODY=$(sed '$d' <<<"$out")
  read -r API_STATUS API_TYPE <<<"$(tail -1 <<<"$out")"
  printf '%s' "$API_BODY"
}
auth() { echo "Authorization: Bearer $(token)"; }
# expect METHOD PATH STATUS [curl args...]: the answer has that status, a JSON error body when >= 400, and the
# OpenAPI description documents it with that content type.
expect() {
  local m=$1 p=$2 want=$3
  shift 3
  api "$m" "$p" "$@" >/dev/null
  [ "$API_STATUS" = "$want" ] || fail "$m $p: status $API_STATUS, expected $want ($API_BODY)"
  if [ "$want" -ge 400 ]; then
    jq -e '.error | type == "string"' <<<"$API_BODY" >/dev/null || fail "$m $p: $want without a JSON error: $API_BODY"
  fi
  "$CLIQO_OPENAPI_CHECK" --check "$m" "${p%%\?*}" "$API_STATUS" "${API_TYPE:--}" ||
    fail "$m $p: the answer ($API_STATUS ${API_TYPE:--}) is not what docs/broker-openapi.yaml describes"
}
# The group's policy between tests: no criteria, no hysteresis (a provider a test took out comes back at once).
BASE_POLICY='{"hysteresisSeconds": 0}'
toggle() { # ID true|false
  api POST "/api/toggle?id=$1&enable=$2" -H "$(auth)" >/dev/null
  [ "$API_STATUS" = 200 ] || fail "toggle $1=$2: $API_STATUS $API_BODY"
}
put_policy() { # JSON
  api PUT /api/policy -H "$(auth)" -H 'Content-Type: application/json' -d "$1" >/dev/null
  [ "$API_STATUS" = 200 ] || fail "PUT /api/policy $1: $API_STATUS $API_BODY"
}
clusters() { api GET /api/clusters; }
# cluster_field ID JQ: a field of that cluster's catalog entry.
cluster_field() { clusters | jq -r --arg id "$1" ".[] | select(.spec.clusterIdentity.clusterID == \$id) | $2"; }
selected() { [ "$(cluster_field "$1" .broker.selected)" = true ]; }
not_selected() { [ "$(cluster_field "$1" .broker.selected)" = false ]; }

# ---- peerings ----------------------------------------------------------------------------------------------
# peer CONSUMER PROVIDER: the provider's printed add command, run on the consumer.
peer() {
  local line out
  line=$(cq "$2" generate-add-command) || fail "generate-add-command on $2 failed"
  read -r -a ADD_CMD <<<"$line"
  out=$(cq "$1" "${ADD_CMD[@]:1}" --name "$2" --timeout 60s 2>&1) || fail "add $2 on $1 failed: $out"
}
vnode_ready_on() { # CLUSTER PROVIDER
  [ "$(jget "$1" '{.status.conditions[?(@.type=="Ready")].status}' node "liqo-$(id_of "$2")")" = True ]
}
all_shared() { vnode_ready_on "$K" "$P1" && vnode_ready_on "$K" "$P2" && vnode_ready_on "$C" "$K"; }
wait_all_shared() { wait_for "${1:-90}" "virtual nodes of P1 and P2 Ready on K, of K on C" all_shared; }
# The Advertisement a provider sent to a consumer, as the consumer has it: .spec.resourceQuota.hard.
adv_hard() { # CONSUMER PROVIDER
  local tenant
  tenant=$(jget "$1" '{.status.tenantNamespace.local}' foreigncluster "$2")
  kget "$1" advertisement -n "$tenant" "advertisement-$(id_of "$2")" 2>/dev/null | jq -c '.spec.resourceQuota.hard // {}'
}
