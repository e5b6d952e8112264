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
  kcurl "$1" "$3" -X "$2" -H 'Content-Type: application/json' ${4:+--data-binary "$4"}
}
# kcurl CLUSTER PATH curl-args...: curl to a cluster's API server as its admin (kapi, kget).
kcurl() {
  local c=$1 p=$2 pki=$E2E_STATE/$1/pki server
  shift 2
  server=$(awk '$1 == "server:" { print $2; exit }' "$E2E_STATE/$c/kubeconfig")
  curl -sS --max-time 20 --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "$@" "$server$p"
}

# ---- fast reads: the API server through curl, jsonpath through jq ----------------------------------------
# kubectl costs about 0.2 s of CPU per call (its start-up), and the tests poll by the hundred: 41 % of the
# offloading group's CPU went to kubectl. kget and jpath read objects with curl (kapi) and jq instead, for
# the kinds below; anything else falls back to kubectl. With E2E_KGET_CROSSCHECK=1 every jpath answer is
# compared with kubectl's and a difference fails the test (and is appended to E2E_KGET_CROSSCHECK_LOG).
declare -A KGET_RES=(
  [pod]="api/v1 pods 1" [pods]="api/v1 pods 1" [po]="api/v1 pods 1"
  [namespace]="api/v1 namespaces 0" [namespaces]="api/v1 namespaces 0" [ns]="api/v1 namespaces 0"
  [node]="api/v1 nodes 0" [nodes]="api/v1 nodes 0" [no]="api/v1 nodes 0"
  [configmap]="api/v1 configmaps 1" [configmaps]="api/v1 configmaps 1" [cm]="api/v1 configmaps 1"
  [secret]="api/v1 secrets 1" [secrets]="api/v1 secrets 1"
  [service]="api/v1 services 1" [services]="api/v1 services 1" [svc]="api/v1 services 1"
  [serviceaccount]="api/v1 serviceaccounts 1" [serviceaccounts]="api/v1 serviceaccounts 1" [sa]="api/v1 serviceaccounts 1"
  [resourcequota]="api/v1 resourcequotas 1" [resourcequotas]="api/v1 resourcequotas 1" [quota]="api/v1 resourcequotas 1"
  [limitrange]="api/v1 limitranges 1" [limitranges]="api/v1 limitranges 1"
  [deployment]="apis/apps/v1 deployments 1" [deployments]="apis/apps/v1 deployments 1" [deploy]="apis/apps/v1 deployments 1"
  [lease]="apis/coordination.k8s.io/v1 leases 1" [leases]="apis/coordination.k8s.io/v1 leases 1"
  [endpointslice]="apis/discovery.k8s.io/v1beta1 endpointslices 1" [endpointslices]="apis/discovery.k8s.io/v1beta1 endpointslices 1"
  [role]="apis/rbac.authorization.k8s.io/v1 roles 1" [roles]="apis/rbac.authorization.k8s.io/v1 roles 1"
  [rolebinding]="apis/rbac.authorization.k8s.io/v1 rolebindings 1" [rolebindings]="apis/rbac.authorization.k8s.io/v1 rolebindings 1"
  [foreigncluster]="apis/discovery.liqo.io/v1alpha1 foreignclusters 0" [foreignclusters]="apis/discovery.liqo.io/v1alpha1 foreignclusters 0"
  [peeringrequest]="apis/discovery.liqo.io/v1alpha1 peeringrequests 1" [peeringrequests]="apis/discovery.liqo.io/v1alpha1 peeringrequests 1"
  [advertisement]="apis/sharing.liqo.io/v1alpha1 advertisements 1" [advertisements]="apis/sharing.liqo.io/v1alpha1 advertisements 1"
  [clusterconfig]="apis/config.liqo.io/v1alpha1 clusterconfigs 0" [clusterconfigs]="apis/config.liqo.io/v1alpha1 clusterconfigs 0"
  [namespaceoffloading]="apis/offloading.liqo.io/v1alpha1 namespaceoffloadings 1" [namespaceoffloadings]="apis/offloading.liqo.io/v1alpha1 namespaceoffloadings 1"
  [namespacemap]="apis/virtualkubelet.liqo.io/v1alpha1 namespacemaps 1" [namespacemaps]="apis/virtualkubelet.liqo.io/v1alpha1 namespacemaps 1"
  [networkconfig]="apis/net.liqo.io/v1alpha1 networkconfigs 1" [networkconfigs]="apis/net.liqo.io/v1alpha1 networkconfigs 1"
)

# kget_path RESOURCE [NAME] [-n NS | -A]...: the API path of `kubectl get` with these arguments (a name, one
# namespace or all); status 2 when kget cannot serve them (an unknown kind, another flag, two names).
kget_path() {
  local res="" name="" ns="default" all=0 prefix plural namespaced
  while [ $# -gt 0 ]; do
    case "$1" in
      -n | --namespace) [ $# -ge 2 ] || return 2; ns=$2; shift 2 ;;
      --namespace=*) ns=${1#*=}; shift ;;
      -A | --all-namespaces) all=1; shift ;;
      -*) return 2 ;;
      *)
        if [ -z "$res" ]; then res=$1; elif [ -z "$name" ]; then name=$1; else return 2; fi
        shift ;;
    esac
  done
  [ -n "$res" ] && [ -n "${KGET_RES[$res]:-}" ] || return 2
  read -r prefix plural namespaced <<<"${KGET_RES[$res]}"
  [[ $name =~ ^[a-z0-9.-]*$ ]] && [[ $ns =~ ^[a-z0-9-]+$ ]] || return 2
  if [ "$namespaced" = 1 ] && [ "$all" = 0 ]; then
    printf '/%s/namespaces/%s/%s%s' "$prefix" "$ns" "$plural" "${name:+/$name}"
  else
    [ "$all" = 0 ] || [ -z "$name" ] || return 2
    printf '/%s/%s%s' "$prefix" "$plural" "${name:+/$name}"
  fi
}

# kget CLUSTER RESOURCE [NAME] [-n NS | -A]: what `kc CLUSTER get ... -o json` prints, read with curl (a
# list's items lack apiVersion and kind); status 1 when the object is absent or the read fails.
kget() {
  local c=$1 path
  shift
  if path=$(kget_path "$@"); then
    kcurl "$c" "$path" -f 2>/dev/null || return 1
  else
    kc "$c" get "$@" -o json
  fi
}

json_str() { # TEXT: as a JSON string
  local s=${1//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\n'/\\n}
  s=${s//$'\t'/\\t}
  printf '"%s"' "$s"
}

# jp2jq JSONPATH: the jq program that prints what kubectl's -o jsonpath prints (several values joined by
# spaces, a missing field as nothing, maps and lists as JSON), for the subset the tests use: literal text,
# {.a.b} (with \. inside names), [N], [*] and [?(@.x.y=="v")]; status 2 for anything else.
jp2jq() {
  local s=$1 out="" lit expr path tok field val
  while [ -n "$s" ]; do
    if [ "${s:0:1}" != "{" ]; then
      lit=${s%%\{*}
      s=${s:${#lit}}
      out+="$(json_str "$lit") + "
      continue
    fi
    expr=${s:1}
    expr=${expr%%\}*}
    [ "${s:$((${#expr} + 1)):1}" = "}" ] || return 2
    s=${s:$((${#expr} + 2))}
    [ "${expr:0:1}" = . ] || return 2
    [[ $expr != *range* && $expr != *'$'* ]] || return 2
    path=""
    while [ -n "$expr" ]; do
      if [ "${expr:0:1}" = . ]; then
        expr=${expr:1}
        tok=""
        while [ -n "$expr" ] && [ "${expr:0:1}" != . ] && [ "${expr:0:1}" != "[" ]; do
          if [ "${expr:0:2}" = '\.' ]; then tok+=.; expr=${expr:2}; else tok+=${expr:0:1}; expr=${expr:1}; fi
        done
        [[ $tok =~ ^[A-Za-z0-9_./-]+$ ]] || return 2
        path+="[\"$tok\"]?"
      elif [[ $expr =~ ^\[([0-9]+)\] ]]; then
        path+="[${BASH_REMATCH[1]}]?"
        expr=${expr:${#BASH_REMATCH[0]}}
      elif [ "${expr:0:3}" = "[*]" ]; then
        path+="[]?"
        expr=${expr:3}
      elif [[ $expr =~ ^\[\?\(@\.([A-Za-z0-9_.]+)==\"([^\"]*)\"\)\] ]]; then
        field=${BASH_REMATCH[1]} val=${BASH_REMATCH[2]}
        path+="[]? | select(.$field == $(json_str "$val"))"
        expr=${expr:${#BASH_REMATCH[0]}}
      else
        return 2
      fi
    done
    out+="([.$path | select(. != null) | if type == \"string\" then . else tojson end] | join(\" \")) + "
  done
  printf '%s""' "$out"
}

# jpath CLUSTER JSONPATH RESOURCE [NAME] [-n NS | -A]: `kc CLUSTER get ... -o jsonpath=JSONPATH`, through
# kget and jq when both can; nothing (and status 1) when the object is absent.
jpath() {
  local c=$1 p=$2 prog json out want try
  shift 2
  if prog=$(jp2jq "$p") && kget_path "$@" >/dev/null; then
    # With the cross-check, a difference counts only if it stays over three reads of each: the object may
    # change between kubectl's read and ours, a translation error does not go away.
    for try in 1 2 3; do
      json=$(kget "$c" "$@") || json=""
      if [ -n "$json" ]; then out=$(jq -rj "$prog" <<<"$json") || return 1; else out=""; fi
      [ "${E2E_KGET_CROSSCHECK:-0}" = 1 ] || break
      want=$(kc "$c" get "$@" -o "jsonpath=$p" 2>/dev/null) || want=""
      [ "$out" != "$want" ] || break
      if [ "$try" = 3 ]; then
        # Also to a file: a caller in $(...) or behind `|| true` would hide the failure.
        [ -z "${E2E_KGET_CROSSCHECK_LOG:-}" ] ||
          printf '%s: jpath %s %q %s: %q, kubectl says %q\n' "$TEST_NAME" "$c" "$p" "$*" "$out" "$want" >>"$E2E_KGET_CROSSCHECK_LOG"
        fail "jpath $c '$p' $*: '$out', kubectl says '$want'"
      fi
      sleep 0.2
    done
    printf '%s' "$out"
    [ -n "$json" ]
  else
    kc "$c" get "$@" -o "jsonpath=$p"
  fi
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
