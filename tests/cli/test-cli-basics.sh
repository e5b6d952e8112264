#!/usr/bin/env bash
# cliqoctl behaviour that needs no cluster: help, misuse, version, dev argument checking.
set -uo pipefail
CLIQOCTL=$1
fails=0
check() { # description expected-rc command...
  local d=$1 want=$2 rc
  shift 2
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" -ne "$want" ]; then echo "FAIL: $d: exit $rc, want $want; output: $out"; fails=$((fails + 1)); else echo "ok: $d"; fi
}
contains() { # description needle
  case "$out" in *"$2"*) echo "ok: $1" ;; *) echo "FAIL: $1: '$2' not in: $out"; fails=$((fails + 1)) ;; esac
}
check "--help exits 0" 0 "$CLIQOCTL" --help; contains "help lists dev" "dev "
check "no arguments is misuse" 2 "$CLIQOCTL"
check "unknown command is misuse" 2 "$CLIQOCTL" frobnicate; contains "unknown command named" "unknown command 'frobnicate'"
check "version" 0 "$CLIQOCTL" version; contains "version text" "cliqoctl 0."
check "version -o json" 0 "$CLIQOCTL" version -o json
echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["version"]' && echo "ok: version json parses" ||
  { echo "FAIL: version json"; fails=$((fails + 1)); }
check "version bad arg" 1 "$CLIQOCTL" version --bogus
check "dev --help" 0 "$CLIQOCTL" dev --help; contains "dev help lists up" "up "
check "dev up --help" 0 "$CLIQOCTL" dev up --help
check "dev unknown verb" 1 "$CLIQOCTL" dev sideways; contains "dev unknown verb named" "unknown command 'sideways'"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check "dev up bad count" 1 "$CLIQOCTL" dev up --clusters 0 --state-dir "$tmp/s"; contains "bad count explained" "--clusters must be"
check "dev up bad port" 1 "$CLIQOCTL" dev up --base-port 80 --state-dir "$tmp/s"; contains "bad port explained" "--base-port must be"
check "dev status with no env" 1 "$CLIQOCTL" dev status --state-dir "$tmp/none"; contains "status says none" "no environment"
check "dev env with no env" 1 "$CLIQOCTL" dev env --state-dir "$tmp/none"
check "dev down with no env is fine" 0 "$CLIQOCTL" dev down --state-dir "$tmp/none"
check "dev unknown option" 1 "$CLIQOCTL" dev up --frob; contains "unknown option named" "unknown option '--frob'"
# The cluster verbs: help, and misuse caught before any cluster is contacted (exit 2, one line).
one_line() { # description
  local n
  n=$(printf '%s\n' "$out" | grep -c .)
  if [ "$n" -eq 1 ] && case "$out" in "cliqoctl "*": error: "*) true ;; *) false ;; esac; then echo "ok: $1"; else
    echo "FAIL: $1: not one 'cliqoctl <verb>: error:' line: $out"; fails=$((fails + 1)); fi
}
for v in install uninstall generate-add-command add unpeer status offload unoffload; do
  check "help lists $v" 0 "$CLIQOCTL" --help; contains "help lists $v" "  $v "
  check "$v --help" 0 "$CLIQOCTL" "$v" --help; contains "$v help has usage" "Usage: cliqoctl $v"
  contains "$v help has --kubeconfig" "--kubeconfig"
  check "$v unknown flag" 2 "$CLIQOCTL" "$v" --frobnicate; one_line "$v unknown flag is one line"
  check "$v --timeout without value" 2 "$CLIQOCTL" "$v" --timeout; one_line "$v missing value is one line"
done
check "install bad name" 2 "$CLIQOCTL" install --cluster-name Not_Valid; one_line "install bad name one line"
check "install bad id" 2 "$CLIQOCTL" install --cluster-id -bad-; one_line "install bad id one line"
check "install bad timeout" 2 "$CLIQOCTL" install --timeout 5parsecs; one_line "install bad timeout one line"
check "install http auth url" 2 "$CLIQOCTL" install --auth-url http://x; one_line "install http url one line"
check "add needs flags" 2 "$CLIQOCTL" add; one_line "add needs flags one line"
tok=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
check "add needs a hash" 2 "$CLIQOCTL" add --auth-url https://x --id abc --token $tok
contains "add hash explained" "--ca-cert-hash is required"
check "add bad token" 2 "$CLIQOCTL" add --auth-url https://x --id abc --token short --insecure-skip-tls-verify
one_line "add bad token one line"
check "add bad hash" 2 "$CLIQOCTL" add --auth-url https://x --id abc --token $tok --ca-cert-hash md5:00
one_line "add bad hash one line"
check "add hash and insecure" 2 "$CLIQOCTL" add --auth-url https://x --id abc --token $tok --ca-cert-hash sha256:$tok --insecure-skip-tls-verify
check "add bad id" 2 "$CLIQOCTL" add --auth-url https://x --id ABC --token $tok --insecure-skip-tls-verify
check "add http url" 2 "$CLIQOCTL" add --auth-url http://x --id abc --token $tok --insecure-skip-tls-verify
check "unpeer needs a name" 2 "$CLIQOCTL" unpeer; one_line "unpeer no name one line"
check "unpeer two names" 2 "$CLIQOCTL" unpeer a b
check "status -o yaml" 2 "$CLIQOCTL" status -o yaml; one_line "status -o yaml one line"
check "generate -o yaml" 2 "$CLIQOCTL" generate-add-command -o yaml
# offload / unoffload: the namespace and the selector are checked before any cluster is contacted.
check "offload needs a namespace" 2 "$CLIQOCTL" offload namespace; one_line "offload no name one line"
check "offload only namespaces" 2 "$CLIQOCTL" offload deployment web; one_line "offload kind one line"
check "offload bad name" 2 "$CLIQOCTL" offload namespace Web; one_line "offload bad name one line"
check "offload bad strategy" 2 "$CLIQOCTL" offload namespace web --strategy Everywhere
contains "strategy choices named" "is not Local, Remote or LocalAndRemote"
check "offload bad mapping" 2 "$CLIQOCTL" offload namespace web --mapping Same; one_line "offload mapping one line"
check "offload bad selector" 2 "$CLIQOCTL" offload namespace web --selector 'region in eu'
contains "selector error placed" "--selector: at character 11: expected '(' after in/notin"
check "offload invalid selector key" 2 "$CLIQOCTL" offload namespace web --selector 'a=b,-x=y'
contains "selector requirement named" "requirement 2: matchExpressions key '-x' is not a valid label key"
check "offload without a kubeconfig" 1 env -u KUBECONFIG HOME="$tmp" "$CLIQOCTL" offload namespace web --selector 'a=b' --kubeconfig "$tmp/none"
one_line "offload no kubeconfig one line"
check "unoffload needs a namespace" 2 "$CLIQOCTL" unoffload namespace; one_line "unoffload no name one line"
check "unoffload two names" 2 "$CLIQOCTL" unoffload namespace a b
check "install dry run without a cluster" 0 "$CLIQOCTL" install --dry-run --cluster-name x --kubeconfig "$tmp/none"
contains "dry run prints CRDs" "# Source: crds/"
check "install dry run with the gateway's endpoint" 0 "$CLIQOCTL" install --dry-run --cluster-name x --kubeconfig "$tmp/none" \
  --gateway-endpoint 192.0.2.7:51820 --api-server-url https://192.0.2.1:6443 --agent-image cliqo/agent:t
contains "the gateway gets its endpoint" '"--gateway-endpoint=192.0.2.7:51820"'
contains "both Deployments get the image" '"image": "cliqo/agent:t"'
check "install bad gateway endpoint" 2 "$CLIQOCTL" install --dry-run --gateway-endpoint gw.example:51820
check "status without a kubeconfig" 1 env -u KUBECONFIG HOME="$tmp" "$CLIQOCTL" status --kubeconfig "$tmp/none"
one_line "no kubeconfig one line"
echo "cli basics: $fails failed"
[ "$fails" -eq 0 ]
