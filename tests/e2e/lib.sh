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

# kc CLUSTER args...: kubectl against one cluster of the environment, with its admin kubeconfig. The
# commonest forms (kc_fast, below) are served with curl instead, as kubectl would serve them; everything
# else, and everything with E2E_KC_FAST=0, is kubectl's (kc_slow).
kc() {
  local rc=0
  kc_fast "$@" || rc=$?
  [ "$rc" = 3 ] || return "$rc"
  kc_slow "$@"
}
kc_slow() {
  local c=$1
  shift
  # E2E_KC_SLOW_LOG=FILE: one line per kubectl call (test, cluster, arguments), to see which forms the fast
  # path could serve.
  [ -z "${E2E_KC_SLOW_LOG:-}" ] || printf '%s\t%s\t%s\n' "$TEST_NAME" "$c" "$*" >>"$E2E_KC_SLOW_LOG" 2>/dev/null || true
  "${KC_PREFIX[@]}" "$KUBECTL" --kubeconfig "$E2E_STATE/$c/kubeconfig" --request-timeout=20s "$@"
}
# KC_PREFIX: words put before every kubectl and curl that kc, kget and kapi run (empty: none). A group whose
# API servers listen inside network namespaces sets it for the call (local KC_PREFIX=(nsenter --net=...)).
KC_PREFIX=()

# kapi CLUSTER METHOD PATH [BODY]: one request to a cluster's API server with curl, as its admin (the
# certificates of the environment's pki/). A tenth of a kubectl call's CPU: for checks made by the hundred.
kapi() {
  kcurl "$1" "$3" -X "$2" -H 'Content-Type: application/json' ${4:+--data-binary "$4"}
}
# kcurl CLUSTER PATH curl-args...: curl to a cluster's API server as its admin (kapi, kget), or with E2E_HTTPS
# set (the tests' environments: tests/e2e/e2e.cmake) the client of tests/e2e/lib/https.c, which takes the same
# arguments and costs half of curl's CPU (curl loads 33 libraries at every start). Its answers are compact JSON
# where curl's are indented (the API server indents for a user agent that starts with "curl").
kcurl() {
  local c=$1 p=$2 pki=$E2E_STATE/$1/pki server
  shift 2
  # (read by the shell itself: an awk per request was a fork and an exec, thousands of them a run)
  local k v
  while read -r k v _; do [ "$k" != server: ] || { server=$v; break; }; done <"$E2E_STATE/$c/kubeconfig"
  "${KC_PREFIX[@]}" "${E2E_HTTPS:-curl}" -sS --max-time 20 --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "$@" "$server$p"
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
  [tunnelendpoint]="apis/net.liqo.io/v1alpha1 tunnelendpoints 1" [tunnelendpoints]="apis/net.liqo.io/v1alpha1 tunnelendpoints 1"
  [searchdomain]="apis/discovery.liqo.io/v1alpha1 searchdomains 0" [searchdomains]="apis/discovery.liqo.io/v1alpha1 searchdomains 0"
  [fc]="apis/discovery.liqo.io/v1alpha1 foreignclusters 0" [pr]="apis/discovery.liqo.io/v1alpha1 peeringrequests 1"
  [adv]="apis/sharing.liqo.io/v1alpha1 advertisements 1" [nsof]="apis/offloading.liqo.io/v1alpha1 namespaceoffloadings 1"
  [nm]="apis/virtualkubelet.liqo.io/v1alpha1 namespacemaps 1"
)

# kget_path [-v VAR] RESOURCE [NAME] [-n NS | -A]...: the API path of `kubectl get` with these arguments (a name,
# one namespace or all), printed or with -v put in VAR (no subshell: the tests' polls call this by the thousand);
# status 2 when kget cannot serve them (an unknown kind, another flag, two names).
kget_path() {
  local res="" name="" ns="default" all=0 prefix plural namespaced _v="" _r
  [ "${1:-}" != -v ] || { _v=$2; shift 2; }
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
    _r=/$prefix/namespaces/$ns/$plural${name:+/$name}
  else
    [ "$all" = 0 ] || [ -z "$name" ] || return 2
    _r=/$prefix/$plural${name:+/$name}
  fi
  if [ -n "$_v" ]; then printf -v "$_v" '%s' "$_r"; else printf '%s' "$_r"; fi
}

# kget CLUSTER RESOURCE [NAME] [-n NS | -A]: what `kc CLUSTER get ... -o json` prints, read with curl (a
# list's items lack apiVersion and kind); status 1 when the object is absent or the read fails.
kget() {
  local c=$1 path
  shift
  if kget_path -v path "$@"; then
    kcurl "$c" "$path" -f 2>/dev/null || return 1
  else
    kc_slow "$c" get "$@" -o json
  fi
}

# wait_default_sa CLUSTER NS: waits until namespace NS of CLUSTER takes pods: its default ServiceAccount is
# there with its token Secret (Kubernetes 1.20's token controller makes the Secret, then names it in the
# account's .secrets). A new namespace has neither for a moment (longer on a busy machine), and meanwhile the API
# server's ServiceAccount admission refuses every pod created there: 403 "error looking up service account
# NS/default" without the account (even a pod with automountServiceAccountToken: false, even a dry run), 500 "no
# API token found" without the token. A controller's pods (a Deployment's) are retried; a test's own are not:
# call this between making a namespace and creating the first pod there.
default_sa_ready() {
  local s
  s=$(jpath "$1" '{.secrets[0].name}' serviceaccount default -n "$2" 2>/dev/null) && [ -n "$s" ] &&
    kc "$1" get secret "$s" -n "$2" >/dev/null 2>&1
}
wait_default_sa() { wait_for 60 "the default service account of $2 on $1, with its token" default_sa_ready "$1" "$2"; }

# apply_pod CLUSTER NS NAME [SPEC-LINES]: a pod applied with kubectl; its spec is the lines given (indented 2),
# one busybox container without them.
apply_pod() {
  local spec=${4:-"  containers: [{name: c, image: busybox}]"}
  kc "$1" apply -n "$2" -f - >/dev/null <<EOF || fail "cannot create pod $2/$3 on $1"
apiVersion: v1
kind: Pod
metadata: {name: $3}
spec:
$spec
EOF
}

json_str() { # [-v VAR] TEXT: as a JSON string (printed, or put in VAR)
  local _v=""
  [ "${1:-}" != -v ] || { _v=$2; shift 2; }
  local s=${1//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\n'/\\n}
  s=${s//$'\t'/\\t}
  if [ -n "$_v" ]; then printf -v "$_v" '"%s"' "$s"; else printf '"%s"' "$s"; fi
}

# jp2jq JSONPATH: the jq program that prints what kubectl's -o jsonpath prints (several values joined by
# spaces, a missing field as nothing, maps and lists as JSON), for the subset the tests use: literal text,
# {.a.b} (with \. inside names), [N], [*] and [?(@.x.y=="v")]; status 2 for anything else. With -v VAR the
# program is put in VAR instead (no subshell).
jp2jq() {
  local _v=""
  [ "${1:-}" != -v ] || { _v=$2; shift 2; }
  local s=$1 out="" lit expr path tok field val _js
  while [ -n "$s" ]; do
    if [ "${s:0:1}" != "{" ]; then
      lit=${s%%\{*}
      s=${s:${#lit}}
      json_str -v _js "$lit"
      out+="$_js + "
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
        json_str -v _js "$val"
        path+="[]? | select(.$field == $_js)"
        expr=${expr:${#BASH_REMATCH[0]}}
      else
        return 2
      fi
    done
    out+="([.$path | select(. != null) | if type == \"string\" then . else tojson end] | join(\" \")) + "
  done
  if [ -n "$_v" ]; then printf -v "$_v" '%s""' "$out"; else printf '%s""' "$out"; fi
}

# jpath CLUSTER JSONPATH RESOURCE [NAME] [-n NS | -A]: `kc CLUSTER get ... -o jsonpath=JSONPATH`, through
# kget and jq when both can; nothing (and status 1) when the object is absent.
jpath() {
  local c=$1 p=$2 prog json out want try
  shift 2
  if jp2jq -v prog "$p" && kget_path "$@" >/dev/null; then
    # With the cross-check, a difference counts only if it stays over three reads of each: the object may
    # change between kubectl's read and ours, a translation error does not go away.
    for try in 1 2 3; do
      json=$(kget "$c" "$@") || json=""
      if [ -n "$json" ]; then out=$(jq -rj "$prog" <<<"$json") || return 1; else out=""; fi
      [ "${E2E_KGET_CROSSCHECK:-0}" = 1 ] || break
      want=$(kc_slow "$c" get "$@" -o "jsonpath=$p" 2>/dev/null) || want=""
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
    # (a list by label is kc_fast's; anything it cannot serve goes on to kubectl)
    kc "$c" get "$@" -o "jsonpath=$p"
  fi
}

# ---- kc_fast: kubectl's commonest forms through curl ----------------------------------------------------
# kubectl's start-up costs about 0.2 s of CPU a call and the tests make hundreds per group (481 in the
# offloading group before this: a quarter of its CPU, more than either API server's share). kc_fast serves
# these forms with curl as kubectl serves them; any other form or flag gets status 3 with nothing done, and kc
# asks kubectl:
#   get RES NAME [-n NS] [-o json | -o jsonpath=...]  (no -o only when stdout is /dev/null: a check for existence)
#   get RES[,RES...] [-n NS | -A] [-l SELECTOR] -o name | -o jsonpath=...  (lists: kc_fast_list)
#   create namespace NAME
#   delete RES NAME... [-n NS] [--ignore-not-found] [--wait=false] [--timeout=Ns]
#   delete RES (--all | -l SELECTOR) [-n NS | -A] [--wait=false] [--timeout=Ns]  (each object listed, deleted)
#   patch RES NAME [-n NS] [--subresource=S] [--type=merge|json|strategic] -p JSON  (stdout /dev/null)
#   annotate|label RES NAME [-n NS] [--overwrite] KEY=VALUE|KEY-...  (stdout /dev/null; a key set only with
#                                                                      --overwrite)
#   apply|create [-n NS] -f -  (one JSON object on stdin; applying an object that exists is left to kubectl;
#                               create also with --as=USER, --dry-run=server and --validate=false)
# RES is a kind of KGET_RES; RES NAME may be written RES/NAME (with RES as kubectl prints it: kind.group).
# Messages are kubectl's ("namespace/x created" on stdout, "Error from server
# (REASON): MESSAGE" on stderr), and so are field managers (kubectl-create, kubectl-patch, ...); what kubectl
# prints only after reading the object first (patch's "(no change)") is left to it. Identities other than an
# impersonated user on create (--as-group, other kubeconfigs) and anything the tests read as a table stay
# kubectl's. tests/e2e/kube/kc-fast.sh compares both on every form.

# kreq CLUSTER METHOD PATH [CONTENT-TYPE BODY]: one request (with the curl arguments of KREQ_HDRS, such as an
# impersonation header); the answer in KREQ_CODE and KREQ_BODY. Status 1 only when no answer came.
KREQ_HDRS=()
kreq() {
  local out
  out=$(kcurl "$1" "$3" -X "$2" "${KREQ_HDRS[@]}" ${4:+-H "Content-Type: $4"} ${5+--data-binary "$5"} -w '\n%{http_code}') || {
    KREQ_CODE=000 KREQ_BODY=""
    echo "kc: no answer from $1 to $2 $3" >&2
    return 1
  }
  KREQ_CODE=${out##*$'\n'}
  KREQ_BODY=${out%$'\n'*}
}
# kreq_err [PREFIX]: kubectl's message for the failed answer in KREQ_*, on stderr: "Error from server (REASON):
# PREFIX MESSAGE", or for Invalid its causes ("The KIND "NAME" is invalid: FIELD: MESSAGE", each once, one per
# line when there are several).
kreq_err() {
  local reason msg
  reason=$(jq -r '.reason // empty' <<<"$KREQ_BODY" 2>/dev/null) || reason=""
  if [ "$reason" = Invalid ]; then
    jq -r '(.details // {}) as $d | (if ($d.kind // "") != "" or ($d.name // "") != ""
        then "The \($d.kind // "") \"\($d.name // "")\" is invalid" else "The request is invalid" end) as $s
      | (reduce (($d.causes // [])[] | "\(.field // ""): \(.message // "")") as $x ([];
          if any(.[]; . == $x) then . else . + [$x] end)) as $c
      | if ($c | length) == 0 then (if $s == "The request is invalid" and (.message // "") != ""
          then "\($s): \(.message)" else $s end) elif ($c | length) == 1 then "\($s): \($c[0])"
        else "\($s): \n" + ($c | map("* " + .) | join("\n")) end' <<<"$KREQ_BODY" >&2
    return 0
  fi
  msg=$(jq -r '.message // empty' <<<"$KREQ_BODY" 2>/dev/null) || msg=""
  [ -n "$msg" ] || msg="the server answered $KREQ_CODE: $KREQ_BODY"
  printf 'Error from server%s: %s%s\n' "${reason:+ ($reason)}" "${1:-}" "$msg" >&2
}
# kres_name RES: how kubectl names the kind in its messages (plural less its s, with the group: namespace,
# deployment.apps, namespaceoffloading.offloading.liqo.io).
kres_name() {
  local prefix plural namespaced group
  read -r prefix plural namespaced <<<"${KGET_RES[$1]}"
  group=${prefix#apis/}
  [ "$group" != "$prefix" ] && group=.${group%/*} || group=""
  printf '%s%s' "${plural%s}" "$group"
}
kc_fast() {
  local c=$1 a verb path p name ns=default nsset=0 out="" ign=0 wait=1 timeout=120 type=strategic patch="" sub=""
  local overwrite=0 file="" flags="" w=() orig sel="" all=0 as="" dry=0 delall=0
  shift
  orig=("$@")
  [ "${E2E_KC_FAST:-1}" = 1 ] || return 3
  while [ $# -gt 0 ]; do
    a=$1
    case "$a" in
      -n | --namespace | -o | --output | --type | -p | --patch | -f | --filename)
        [ $# -ge 2 ] || return 3
        case "$a" in
          -n | --namespace) ns=$2 nsset=1 flags+=" n" ;;
          -o | --output) out=$2 flags+=" o" ;;
          --type) type=$2 flags+=" type" ;;
          -p | --patch) patch=$2 flags+=" p" ;;
          *) file=$2 flags+=" f" ;;
        esac
        shift 2
        continue ;;
      --namespace=*) ns=${a#*=} nsset=1 flags+=" n" ;;
      --output=* | -o=*) out=${a#*=} flags+=" o" ;;
      --type=*) type=${a#*=} flags+=" type" ;;
      --patch=* | -p=*) patch=${a#*=} flags+=" p" ;;
      --filename=* | -f=*) file=${a#*=} flags+=" f" ;;
      -l | --selector)
        [ $# -ge 2 ] || return 3
        sel=$2 flags+=" l"
        shift 2
        continue ;;
      --selector=* | -l=*) sel=${a#*=} flags+=" l" ;;
      -A | --all-namespaces | --all-namespaces=true) all=1 flags+=" A" ;;
      --as=*)
        as=${a#*=} flags+=" as"
        [[ $as =~ ^[A-Za-z0-9:._@-]+$ ]] || return 3 ;;
      --dry-run=server) dry=1 flags+=" dry" ;;
      --validate=false) flags+=" val" ;; # kc_fast never validates on the client
      --ignore-not-found | --ignore-not-found=true) ign=1 flags+=" ign" ;;
      --all | --all=true) delall=1 flags+=" all" ;;
      --wait=false) wait=0 flags+=" wait" ;;
      --wait | --wait=true) wait=1 flags+=" wait" ;;
      --timeout=*s)
        timeout=${a#*=} timeout=${timeout%s} flags+=" wait"
        [[ $timeout =~ ^[0-9]+$ ]] || return 3 ;;
      --subresource=*) sub=${a#*=} flags+=" sub" ;;
      --overwrite | --overwrite=true) overwrite=1 flags+=" overwrite" ;;
      -*) return 3 ;;
      *) w+=("$a") ;;
    esac
    shift
  done
  [ ${#w[@]} -ge 1 ] || return 3
  verb=${w[0]}
  # RES/NAME (pod/x, foreigncluster.discovery.liqo.io/x, as kubectl prints names) as RES NAME, when it is the
  # only object named.
  if [ ${#w[@]} -ge 2 ] && [[ ${w[1]} == */* ]]; then
    [[ $verb =~ ^(get|delete|patch|annotate|label)$ && ${w[1]} =~ ^[a-z0-9.-]+/[a-z0-9.-]+$ ]] || return 3
    [[ " ${w[*]:2} " != */* ]] && kres_of "${w[1]%%/*}" || return 3
    w=("$verb" "$KRES" "${w[1]#*/}" "${w[@]:2}")
  fi
  # Only the flags each form knows.
  local allowed
  case "$verb" in
    get) allowed=" n o l A" ;;
    create) allowed=" n f as dry val" ;;
    delete) allowed=" n ign wait all l A" ;;
    patch) allowed=" n type p sub" ;;
    annotate | label) allowed=" n overwrite" ;;
    apply) allowed=" n f" ;;
    *) return 3 ;;
  esac
  for a in $flags; do [[ $allowed == *" $a"* ]] || return 3; done
  # -A with -n is kubectl's.
  [ "$all" = 0 ] || [ "$nsset" = 0 ] || return 3
  [[ $ns =~ ^[a-z0-9-]+$ ]] || return 3
  case "$verb" in
    get)
      if [ ${#w[@]} = 2 ]; then
        kc_fast_list "$c" "${w[1]}" "$ns" "$all" "$sel" "$out"
        return
      fi
      [ "$all" = 0 ] && [ -z "$sel" ] && [ ${#w[@]} = 3 ] && kget_path -v path "${w[1]}" "${w[2]}" -n "$ns" || return 3
      case "$out" in
        "")
          [ /dev/stdout -ef /dev/null ] || return 3
          kreq "$c" GET "$path" || return 1
          [ "$KREQ_CODE" = 200 ] || { kreq_err; return 1; } ;;
        json)
          kreq "$c" GET "$path" || return 1
          [ "$KREQ_CODE" = 200 ] || { kreq_err; return 1; }
          printf '%s\n' "$KREQ_BODY" ;;
        jsonpath=*)
          p=${out#jsonpath=}
          jp2jq "$p" >/dev/null || return 3
          jpath "$c" "$p" "${w[1]}" "${w[2]}" -n "$ns" ;;
        *) return 3 ;;
      esac ;;
    create)
      if [ "${w[1]:-}" = namespace ] || [ "${w[1]:-}" = ns ]; then
        [ ${#w[@]} = 3 ] && [ -z "$file$as" ] && [ "$nsset$dry" = 00 ] && [[ ${w[2]} =~ ^[a-z0-9-]+$ ]] || return 3
        kreq "$c" POST "/api/v1/namespaces?fieldManager=kubectl-create" application/json \
          "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"${w[2]}\"}}" || return 1
        [ "$KREQ_CODE" = 201 ] || { kreq_err; return 1; }
        echo "namespace/${w[2]} created"
      else
        [ ${#w[@]} = 1 ] && [ "$file" = - ] || return 3
        # --as: the same impersonation header as kubectl's; --dry-run=server: the server's dry run.
        local KREQ_HDRS=()
        [ -z "$as" ] || KREQ_HDRS=(-H "Impersonate-User: $as")
        kc_fast_create "$c" create "$ns" "$nsset" "$dry" "${orig[@]}"
      fi ;;
    apply)
      [ ${#w[@]} = 1 ] && [ "$file" = - ] || return 3
      kc_fast_create "$c" apply "$ns" "$nsset" 0 "${orig[@]}" ;;
    delete)
      local paths=() dnames=() names=() uids=() rc=0 uid deadline i item_ns
      if [ "$delall" = 1 ] || [ -n "$sel" ]; then
        # --all or -l: the objects listed (in NS, or every namespace with -A), then deleted one by one, as
        # kubectl does.
        [ ${#w[@]} = 2 ] && kc_list_path "${w[1]}" "$ns" "$all" "$sel" || return 3
        kreq "$c" GET "$KLIST_PATH" || return 1
        [ "$KREQ_CODE" != 404 ] || return 3
        [ "$KREQ_CODE" = 200 ] || { kreq_err; return 1; }
        # (a cluster-scoped object's namespace is "-": read would drop an empty first field)
        while read -r item_ns name; do
          [ -n "$name" ] || continue
          [ "$item_ns" != - ] || item_ns=$ns
          kget_path -v path "${w[1]}" "$name" -n "$item_ns" || return 3
          paths+=("$path") dnames+=("$name")
        done < <(jq -r '.items[] | "\(.metadata.namespace // "-") \(.metadata.name)"' <<<"$KREQ_BODY")
        if [ ${#paths[@]} = 0 ]; then
          echo "No resources found"
          return 0
        fi
      else
        [ "$all" = 0 ] && [ ${#w[@]} -ge 3 ] || return 3
        for name in "${w[@]:2}"; do
          kget_path -v path "${w[1]}" "$name" -n "$ns" || return 3
          paths+=("$path") dnames+=("$name")
        done
      fi
      for i in "${!paths[@]}"; do
        name=${dnames[$i]}
        kreq "$c" DELETE "${paths[$i]}" || return 1
        case "$KREQ_CODE" in
          200 | 202)
            echo "$(kres_name "${w[1]}") \"$name\" deleted"
            uid=$(jq -r '.metadata.uid // .details.uid // empty' <<<"$KREQ_BODY" 2>/dev/null) || uid=""
            names+=("$i") uids+=("$uid") ;;
          404) [ "$ign" = 1 ] || { kreq_err; rc=1; } ;;
          *) kreq_err; rc=1 ;;
        esac
      done
      # As kubectl: wait until each deleted object (by UID) is gone.
      if [ "$wait" = 1 ]; then
        deadline=$((EPOCHSECONDS + timeout))
        for i in "${!names[@]}"; do
          path=${paths[${names[$i]}]}
          while :; do
            kreq "$c" GET "$path" || return 1
            [ "$KREQ_CODE" = 404 ] && break
            if [ "$KREQ_CODE" = 200 ] && [ -n "${uids[$i]}" ] &&
              [ "$(jq -r '.metadata.uid' <<<"$KREQ_BODY")" != "${uids[$i]}" ]; then break; fi
            if [ "$EPOCHSECONDS" -ge "$deadline" ]; then
              echo "error: timed out waiting for the condition on $(kres_name "${w[1]}")/${dnames[${names[$i]}]}" >&2
              return 1
            fi
            sleep 0.25
          done
        done
      fi
      return "$rc" ;;
    patch)
      [ /dev/stdout -ef /dev/null ] && [ ${#w[@]} = 3 ] && [[ $patch == [\{\[]* ]] && kget_path -v path "${w[1]}" "${w[2]}" -n "$ns" || return 3
      local ct
      case "$type" in
        merge) ct=application/merge-patch+json ;;
        json) ct=application/json-patch+json ;;
        strategic) ct=application/strategic-merge-patch+json ;;
        *) return 3 ;;
      esac
      if [ -n "$sub" ]; then
        [[ $sub =~ ^[a-z]+$ ]] || return 3
        path+=/$sub
      fi
      kreq "$c" PATCH "$path?fieldManager=kubectl-patch" "$ct" "$patch" || return 1
      [ "$KREQ_CODE" = 200 ] || { kreq_err; return 1; }
      echo "$(kres_name "${w[1]}")/${w[2]} patched" ;;
    annotate | label)
      [ /dev/stdout -ef /dev/null ] && [ ${#w[@]} -ge 4 ] && kget_path -v path "${w[1]}" "${w[2]}" -n "$ns" || return 3
      local kv k entries=""
      for kv in "${w[@]:3}"; do
        if [[ $kv == *=* ]]; then
          [ "$overwrite" = 1 ] || return 3
          k=${kv%%=*}
          entries+=",$(json_str "$k"):$(json_str "${kv#*=}")"
        elif [[ $kv == *- ]]; then
          k=${kv%-}
          entries+=",$(json_str "$k"):null"
        else
          return 3
        fi
        # What kubectl refuses itself (a key or label value that is not valid) is left to it.
        [[ $k =~ ^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$ ]] && [ ${#k} -le 253 ] ||
          return 3
        [ "$verb" = annotate ] || [[ $kv == *- ]] ||
          { [[ ${kv#*=} =~ ^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$ ]] && [ ${#kv} -le $((${#k} + 64)) ]; } ||
          return 3
      done
      [ "$verb" = label ] && a=labels || a=annotations
      kreq "$c" PATCH "$path?fieldManager=kubectl-$verb" application/merge-patch+json \
        "{\"metadata\":{\"$a\":{${entries#,}}}}" || return 1
      [ "$KREQ_CODE" = 200 ] || { kreq_err; return 1; }
      [ "$verb" = label ] && a=labeled || a=annotated
      echo "$(kres_name "${w[1]}")/${w[2]} $a" ;;
  esac
}
# kc_list_path RES NS ALL SELECTOR: the path of the list of RES (in NS, in every namespace with ALL=1; with the
# labels of SELECTOR when it is not empty) in KLIST_PATH. Status 1 for what kc_fast leaves to kubectl: a kind
# not in KGET_RES, a selector other than plain terms (key, !key, key=v, key==v, key!=v, joined by commas; they go
# to the server as given, where set-based ones would need more quoting than this does).
kc_list_path() {
  local q=""
  if [ -n "$4" ]; then
    [[ $4 =~ ^[A-Za-z0-9./_=!,-]+$ ]] || return 1
    q=${4//\//%2F} q=${q//=/%3D} q=${q//,/%2C} q=${q//!/%21}
    q="?labelSelector=$q"
  fi
  if [ "$3" = 1 ]; then kget_path -v KLIST_PATH "$1" -A || return 1; else kget_path -v KLIST_PATH "$1" -n "$2" || return 1; fi
  KLIST_PATH+=$q
}
# kres_of NAME: the KGET_RES kind that NAME is (a kind of KGET_RES, or one as kubectl prints it with its group:
# foreigncluster.discovery.liqo.io) in KRES; status 1 for any other.
kres_of() {
  local base=${1%%.*} group prefix
  KRES=""
  [ -n "$1" ] && [ -n "$base" ] || return 1
  if [ -n "${KGET_RES[$1]:-}" ]; then
    KRES=$1
  elif [ "$base" != "$1" ] && [ -n "${KGET_RES[$base]:-}" ]; then
    read -r prefix _ <<<"${KGET_RES[$base]}"
    group=${prefix#apis/} group=${group%/*}
    [ "$prefix" != "apis/$group/${prefix##*/}" ] || [ "${1#*.}" != "$group" ] || KRES=$base
  fi
  [ -n "$KRES" ]
}
# kc_fast_list CLUSTER RES[,RES...] NS ALL SELECTOR OUTPUT: `get` of lists (in NS, or in all namespaces
# with ALL=1; those with the labels of SELECTOR when it is not empty), as kubectl prints them:
#   -o name: one line per object, kind.group/name, each kind's in the server's order, the kinds in the order given
#     (each once);
#   -o jsonpath=P: P on the list (one kind; P names no kind or apiVersion, which kubectl adds to each item, and
#     indexes only .items[N], as kubectl fails on an index past the end: an empty list with one is kubectl's).
# Status 3 (nothing done but reads) for any other form.
kc_fast_list() {
  local c=$1 ns=$3 all=$4 sel=$5 out=$6 res list=() paths=() kinds=() path prog p n rest len text=""
  IFS=, read -r -a list <<<"$2"
  [ ${#list[@]} -ge 1 ] && [ "${2: -1}" != , ] || return 3
  for res in "${list[@]}"; do
    kc_list_path "$res" "$ns" "$all" "$sel" || return 3
    # The same kind twice (configmaps,cm) is listed once, as kubectl does.
    [[ " ${paths[*]} " != *" $KLIST_PATH "* ]] || continue
    paths+=("$KLIST_PATH") kinds+=("$res")
  done
  case "$out" in
    name) ;;
    jsonpath=*)
      p=${out#jsonpath=}
      [ ${#list[@]} = 1 ] && [[ $p != *kind* && $p != *piVersion* ]] && jp2jq -v prog "$p" || return 3
      # n: the highest N of .items[N] (-1: none); an index anywhere else is kubectl's.
      n=-1 rest=$p
      while [[ $rest =~ \.items\[([0-9]+)\] ]]; do
        [ "${BASH_REMATCH[1]}" -le "$n" ] || n=${BASH_REMATCH[1]}
        rest=${rest/"${BASH_REMATCH[0]}"/}
      done
      [[ $rest != *\[[0-9]* ]] || return 3 ;;
    *) return 3 ;;
  esac
  # Printed once every list is read: what kubectl says of a kind the server does not have (404) is its own.
  for path in "${!paths[@]}"; do
    kreq "$c" GET "${paths[$path]}" || return 1
    [ "$KREQ_CODE" != 404 ] || return 3
    [ "$KREQ_CODE" = 200 ] || { kreq_err; return 1; }
    if [ "$out" = name ]; then
      p=$(jq -r --arg k "$(kres_name "${kinds[$path]}")" '.items[] | "\($k)/\(.metadata.name)"' <<<"$KREQ_BODY")
      [ -z "$p" ] || text+=$p$'\n'
    else
      # kubectl fails on .items[N] past the end. Its message shows the list; for an empty one (a poll for an
      # object not there yet) that is always the same, and said here; any other is left to kubectl.
      [ "$n" -lt 0 ] || len=$(jq '.items | length' <<<"$KREQ_BODY")
      if [ "$n" -ge 0 ] && [ "$len" -le "$n" ]; then
        [ "$len" = 0 ] || return 3
        printf 'error: error executing jsonpath %s: Error executing template: array index out of bounds: index %s, length 0. Printing more information for debugging the template:\n\ttemplate was:\n\t\t%s\n\tobject given to jsonpath engine was:\n\t\t%s\n\n\n' \
          "$(json_str "$p")" "$n" "$p" 'map[string]interface {}{"apiVersion":"v1", "items":[]interface {}{}, "kind":"List", "metadata":map[string]interface {}{"resourceVersion":""}}' >&2
        return 1
      fi
      text=$(jq -rj "$prog" <<<"$KREQ_BODY"; echo x) text=${text%x}
    fi
  done
  printf '%s' "$text"
}
# kc_fast_create CLUSTER apply|create NS NS-GIVEN DRY-RUN ARGS...: `kc CLUSTER ARGS...` (apply or create -f -, with
# DRY-RUN=1 the server's dry run of create) for one JSON object on stdin; kubectl's (with the same input) for
# anything else, and for applying an object that exists.
kc_fast_create() {
  local c=$1 verb=$2 ns=$3 nsset=$4 dry=$5 in body path res name
  shift 5
  in=$(cat)
  if ! path=$(kc_create_path "$ns" "$nsset" <<<"$in"); then
    kc_slow "$c" "$@" <<<"$in"
    return
  fi
  read -r path res name <<<"$path"
  body=$in
  # apply records what was applied, as kubectl does, so that a later `kubectl apply` merges against it.
  if [ "$verb" = create ]; then
    path+="?fieldManager=kubectl-create"
  else
    path+="?fieldManager=kubectl-client-side-apply"
    body=$(jq -c '.metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"] = (tojson + "\n")' <<<"$in")
  fi
  [ "$dry" = 0 ] || path+="&dryRun=All"
  kreq "$c" POST "$path" application/json "$body" || return 1
  case "$KREQ_CODE" in
    201)
      [ "$dry" = 0 ] && echo "$(kres_name "$res")/$name created" || echo "$(kres_name "$res")/$name created (server dry run)" ;;
    409)
      if [ "$verb" = apply ] && [ "$(jq -r '.reason // empty' <<<"$KREQ_BODY")" = AlreadyExists ]; then
        kc_slow "$c" "$@" <<<"$in"
        return
      fi
      kreq_err 'error when creating "STDIN": '
      return 1 ;;
    *) kreq_err 'error when creating "STDIN": '; return 1 ;;
  esac
}
# kc_create_path NS NS-GIVEN <JSON: "PATH RES NAME" for POSTing the one object on stdin (its collection, its
# KGET_RES kind, its name); status 1 when kc_fast cannot: not exactly one JSON object with the fields a path needs
# (several, or YAML, are kubectl's), a kind not in KGET_RES or of another apiVersion (api/v1 is v1, apis/G/V is
# G/V), or a namespace in the object that is not the one given with -n (kubectl refuses the difference).
kc_create_path() {
  local ns=$1 nsset=$2 info api kind name objns res prefix plural namespaced
  info=$(jq -rs 'if length == 1 and (.[0] | type == "object" and (.apiVersion | type) == "string"
      and (.kind | type) == "string" and (.metadata.name | type) == "string")
      then .[0] | [.apiVersion, .kind, .metadata.name, .metadata.namespace // "-"] | @tsv else empty end' 2>/dev/null) &&
    [ -n "$info" ] || return 1
  IFS=$'\t' read -r api kind name objns <<<"$info"
  res=${kind,,}
  [ -n "$res" ] && [ -n "${KGET_RES[$res]:-}" ] && [[ $name =~ ^[a-z0-9.-]+$ ]] || return 1
  read -r prefix plural namespaced <<<"${KGET_RES[$res]}"
  [ "$api" = "${prefix#api/}" ] || [ "$api" = "${prefix#apis/}" ] || return 1
  if [ "$objns" != - ]; then
    [ "$nsset" = 0 ] || [ "$objns" = "$ns" ] || return 1
    ns=$objns
  fi
  [[ $ns =~ ^[a-z0-9-]+$ ]] || return 1
  if [ "$namespaced" = 1 ]; then
    echo "/$prefix/namespaces/$ns/$plural $res $name"
  else
    echo "/$prefix/$plural $res $name"
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
  local t=$1 d=$2 deadline w0=${EPOCHREALTIME/./} p0 p us
  shift 2
  deadline=$((EPOCHSECONDS + t))
  while p0=${EPOCHREALTIME/./} && ! "$@" >/dev/null 2>&1; do
    [ "$EPOCHSECONDS" -lt "$deadline" ] || fail "timed out after ${t}s waiting for: $d"
    p=$((${EPOCHREALTIME/./} - p0))
    ((p >= 500000)) || p=500000
    ((p <= 2000000)) || p=2000000
    printf -v us '%06d' $((p % 1000000)) # (not $(...): a fork per try)
    sleep "$((p / 1000000)).$us"
  done
  E2E_WAIT_US=$((E2E_WAIT_US + ${EPOCHREALTIME/./} - w0)) E2E_WAITS=$((E2E_WAITS + 1))
  # E2E_WAIT_LOG=FILE: one line per wait (test, seconds since its start, seconds waited, what), to see
  # where a group's time goes (tests/e2e/waits.sh summarises it).
  if [ -n "${E2E_WAIT_LOG:-}" ]; then
    w0=$((${EPOCHREALTIME/./} - w0))
    printf '%s\t%s\t%d.%02d\t%s\n' "$TEST_NAME" "$(e2e_elapsed)" $((w0 / 1000000)) $((w0 / 10000 % 100)) "$d" \
      >>"$E2E_WAIT_LOG" 2>/dev/null || true
  fi
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

# ---- requests with a credential someone else holds -------------------------------------------------------
# cred_init KUBECONFIG DIR: writes the server, CA, and the client certificate and key or the bearer token of
# the kubeconfig's current context into DIR (one kubectl call), for cred_api. The security tests attack with
# the credentials peers really hold, by the hundred: with curl each request costs a tenth of a kubectl call.
cred_init() {
  local cfg=$1 dir=$2 j
  mkdir -p "$dir"
  j=$("$KUBECTL" --kubeconfig "$cfg" config view --raw --minify -o json) || return 1
  jq -r '.clusters[0].cluster.server' <<<"$j" >"$dir/server"
  jq -r '.clusters[0].cluster["certificate-authority-data"] // empty' <<<"$j" | base64 -d >"$dir/ca.crt"
  jq -r '.users[0].user["client-certificate-data"] // empty' <<<"$j" | base64 -d >"$dir/tls.crt"
  jq -r '.users[0].user["client-key-data"] // empty' <<<"$j" | base64 -d >"$dir/tls.key"
  jq -r '.users[0].user.token // empty' <<<"$j" >"$dir/token"
  chmod 600 "$dir/tls.key" "$dir/token"
  [ -s "$dir/server" ] && [ -s "$dir/ca.crt" ] && { [ -s "$dir/token" ] || [ -s "$dir/tls.key" ]; }
}
# cred_api DIR METHOD PATH [BODY]: one request with that credential; prints the body, then a last line with the
# HTTP status.
cred_api() {
  local dir=$1 m=$2 p=$3 body=${4:-}
  local -a auth=()
  if [ -s "$dir/token" ]; then
    auth=(-H "Authorization: Bearer $(cat "$dir/token")")
  else
    auth=(--cert "$dir/tls.crt" --key "$dir/tls.key")
  fi
  curl -sS --max-time 20 --cacert "$dir/ca.crt" "${auth[@]}" -X "$m" -H 'Content-Type: application/json' \
    ${body:+--data-binary "$body"} -w '\n%{http_code}\n' "$(cat "$dir/server")$p"
}
# cred_can_i DIR VERB RESOURCE NAMESPACE: yes or no, as the API server answers that credential's
# SelfSubjectAccessReview (what `kubectl auth can-i` asks). RESOURCE is a core plural.
cred_can_i() {
  local out
  out=$(cred_api "$1" POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews "$(printf \
    '{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"%s","resource":"%s","namespace":"%s"}}}' \
    "$2" "$3" "$4")") || return 2
  case "$(sed '$d' <<<"$out" | jq -r '.status.allowed')" in
    true) echo yes ;;
    false) echo no ;;
    *) echo "cred_can_i: no answer: $out" >&2; return 2 ;;
  esac
}
