# Shared helpers of the e2e tests. Source it; it expects CLIQOCTL and E2E_STATE in the environment
# (set by tests/e2e/e2e.cmake). kubectl is the independent client that checks results.
set -euo pipefail

: "${CLIQOCTL:?CLIQOCTL must name the cliqoctl binary}"
: "${E2E_STATE:?E2E_STATE must name the environment state directory}"
KUBECTL=${KUBECTL:-kubectl}
TEST_NAME=${TEST_NAME:-$(basename "$0" .sh)}

# grep_q ARGS...: grep -q without the early exit, which under pipefail makes the writer's SIGPIPE fail the
# whole pipeline (a false "no match" when the writer is still writing).
grep_q() { grep "$@" >/dev/null; }
export -f grep_q # also inside "bash -c" (wait_for)
# log_report FILE: a sanitizer's report whole when the log has one (its stack is what tells the bug),
# else the log's last 30 lines; on stderr.
log_report() {
  if grep_q -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$1"; then
    grep -E -B5 -A70 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$1" | head -120 >&2
  else
    tail -30 "$1" >&2
  fi
}
# Each line says how long the test has run (seconds), to show where the time goes.
E2E_T0=${EPOCHREALTIME/./}
e2e_elapsed() { local n=${EPOCHREALTIME/./}; printf '%d.%d' $(((n - E2E_T0) / 1000000)) $(((n - E2E_T0) / 100000 % 10)); }
say() { printf '[%s +%ss] %s\n' "$TEST_NAME" "$(e2e_elapsed)" "$*"; }
fail() { printf '[%s +%ss] FAIL: %s\n' "$TEST_NAME" "$(e2e_elapsed)" "$*" >&2; exit 1; }
# The PASS line also says how much of the test went to wait_for (waiting on the system, not working).
pass() {
  printf '[%s +%ss] PASS%s (wait_for: %d.%ds in %d waits)\n' "$TEST_NAME" "$(e2e_elapsed)" "${1:+: $1}" \
    $((E2E_WAIT_US / 1000000)) $((E2E_WAIT_US / 100000 % 10)) "$E2E_WAITS"
}
E2E_WAIT_US=0 E2E_WAITS=0

# kc CLUSTER args...: kubectl against one cluster of the environment, with its admin kubeconfig.
kc() {
  local c=$1
  shift
  "$KUBECTL" --kubeconfig "$E2E_STATE/$c/kubeconfig" --request-timeout=20s "$@"
}

# wait_for SECONDS DESCRIPTION command...: retries the command until it succeeds. Between two tries it
# sleeps as long as the last try took (at least 0.5 s, at most 2 s): a check of several kubectl calls
# (about 0.13 s of CPU each) retried back to back would keep one of CI's two cores busy and slow the very
# control planes and agents it waits for.
wait_for() {
  local t=$1 d=$2 deadline w0=${EPOCHREALTIME/./} p0 p
  shift 2
  deadline=$((EPOCHSECONDS + t))
  while p0=${EPOCHREALTIME/./} && ! "$@" >/dev/null 2>&1; do
    [ "$EPOCHSECONDS" -lt "$deadline" ] || fail "timed out after ${t}s waiting for: $d"
    p=$((${EPOCHREALTIME/./} - p0))
    ((p >= 500000)) || p=500000
    ((p <= 2000000)) || p=2000000
    sleep "$((p / 1000000)).$(printf '%06d' $((p % 1000000)))"
  done
  E2E_WAIT_US=$((E2E_WAIT_US + ${EPOCHREALTIME/./} - w0)) E2E_WAITS=$((E2E_WAITS + 1))
}

# expect_fail DESCRIPTION command...: the command must fail.
expect_fail() {
  local d=$1
  shift
  if "$@" >/dev/null 2>&1; then fail "expected failure: $d"; fi
}

now_rfc3339() { date -u +%Y-%m-%dT%H:%M:%SZ; }

# pid_running PID: alive and not a zombie.
pid_running() {
  local st
  [ -r "/proc/$1/stat" ] || return 1
  st=$(sed -e 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [ "$st" != Z ] && [ "$st" != X ]
}

# identity_body KEY-PEM PROVIDER-ID CLUSTER-ID CLUSTER-NAME TOKEN [TIMESTAMP]: a POST /identity body signed with
# openssl as docs/peering.md ("Identity keys") says, on stdout (for requests made by hand to an auth endpoint).
identity_body() {
  local key=$1 prov=$2 id=$3 name=$4 tok=$5 ts=${6:-$(date +%s)} kid pub sig
  kid=$(openssl pkey -in "$key" -pubout -outform der | sha256sum | cut -d' ' -f1)
  pub=$(openssl pkey -in "$key" -pubout -outform der | base64 -w0)
  sig=$(printf 'cliqo-identity-v1\n%s\n%s\n%s\n%s\n%s\n' "$prov" "$id" "$name" "$ts" "$kid" |
    openssl dgst -sha256 -sign "$key" | base64 -w0)
  jq -nc --arg id "$id" --arg n "$name" --arg t "$tok" --arg p "$pub" --argjson ts "$ts" --arg s "$sig" \
    '{clusterID:$id, clusterName:$n, token:$t, publicKey:$p, timestamp:$ts, signature:$s}'
}
