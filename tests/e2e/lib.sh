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

# kapi CLUSTER METHOD PATH [BODY]: one request to a cluster's API server with curl, as its admin (the
# certificates of the environment's pki/). A tenth of a kubectl call's CPU: for checks made by the hundred.
kapi() {
  local c=$1 m=$2 p=$3 pki=$E2E_STATE/$1/pki server
  server=$(awk '$1 == "server:" { print $2; exit }' "$E2E_STATE/$c/kubeconfig")
  curl -sS --max-time 20 --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" -X "$m" \
    -H 'Content-Type: application/json' ${4:+--data-binary "$4"} "$server$p"
}

# can_i CLUSTER USER VERB RESOURCE[/NAME] [--subresource=S] [-n NS | --all-namespaces]: "yes" or "no", the
# API server's own authorizer asked through a SubjectAccessReview: what `kubectl auth can-i --as=USER` asks
# (a ServiceAccount's user gets its groups, as impersonation gives them). RESOURCE is PLURAL.GROUP, or a core
# or RBAC plural from the list below; any other name is refused, so that a typo cannot become a "no".
can_i() {
  local c=$1 user=$2 verb=$3 res=${4%%/*} name= sub= ns= prev= group groups='"system:authenticated"' out a
  [[ $4 == */* ]] && name=${4#*/}
  shift 4
  for a in "$@"; do
    case "$a" in
      --subresource=*) sub=${a#*=} ;;
      --all-namespaces) ns= ;;
      -n) ;;
      *) [ "${prev:-}" = -n ] && ns=$a || { echo "can_i: unknown argument $a" >&2; return 2; } ;;
    esac
    prev=$a
  done
  case "$res" in
    *.*) group=${res#*.} res=${res%%.*} ;;
    clusterroles | clusterrolebindings | roles | rolebindings) group=rbac.authorization.k8s.io ;;
    namespaces | nodes | pods | secrets | configmaps | events | services | serviceaccounts | users | endpoints | \
      persistentvolumeclaims | resourcequotas | limitranges) group= ;;
    *) echo "can_i: name $res with its group (PLURAL.GROUP)" >&2; return 2 ;;
  esac
  if [[ $user == system:serviceaccount:*:* ]]; then
    a=${user#system:serviceaccount:}
    groups+=',"system:serviceaccounts","system:serviceaccounts:'${a%%:*}'"'
  fi
  out=$(kapi "$c" POST /apis/authorization.k8s.io/v1/subjectaccessreviews "$(printf \
    '{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"%s","groups":[%s],"resourceAttributes":{"verb":"%s","group":"%s","resource":"%s","subresource":"%s","name":"%s","namespace":"%s"}}}' \
    "$user" "$groups" "$verb" "$group" "$res" "$sub" "$name" "$ns")") || return 2
  case "$(jq -r '.status.allowed' <<<"$out")" in
    true) echo yes ;;
    false) echo no ;;
    *) echo "can_i: no answer: $out" >&2; return 2 ;;
  esac
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
