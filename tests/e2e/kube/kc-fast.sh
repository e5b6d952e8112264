#!/usr/bin/env bash
# The tests' fast kubectl (kc_fast in ../lib.sh) against kubectl itself, on a real API server: every form kc_fast
# serves is run both ways, on twin namespaces, and must print the same, exit the same and leave the same
# objects; kc_fast must really have served it (no kubectl call), and kubectl must serve what kc_fast leaves to
# it (applying an object that exists: the three-way merge against the annotation kc_fast recorded).
source "$(dirname "$0")/../lib.sh"
C=cluster-1
T=$(mktemp -d)
REAL_KUBECTL=$(command -v "$KUBECTL")
cat >"$T/kubectl" <<SH
#!/bin/sh
echo x >>"$T/calls"
exec "$REAL_KUBECTL" "\$@"
SH
chmod +x "$T/kubectl"
export KUBECTL=$T/kubectl
cleanup() {
  E2E_KC_FAST=0 kc "$C" delete namespace kcf-slow kcf-fast --ignore-not-found --wait=false >/dev/null 2>&1 || true
  rm -rf "$T"
}
trap 'rc=$?; cleanup; exit $rc' EXIT
calls() { [ -f "$T/calls" ] && wc -l <"$T/calls" || echo 0; }

# pair [-q] KUBECTL-CALLS STDIN ARGS...: `kc $C ARGS` with @ standing for the namespace, once through kubectl (in
# kcf-slow) and once through kc_fast (in kcf-fast, where kubectl must be called KUBECTL-CALLS times: 0, or 1
# for what kc_fast leaves to it); stdout (with -q: /dev/null, as kc_fast wants for some forms), stderr (with the
# namespace's name put back) and status must agree.
pair() {
  local q=0 want in s f n0 a args_s=() args_f=() so=$T/s.out fo=$T/f.out
  [ "$1" != -q ] || { q=1 so=/dev/null fo=/dev/null; shift; }
  want=$1 in=$2
  shift 2
  for a in "$@"; do args_s+=("${a//@/kcf-slow}") args_f+=("${a//@/kcf-fast}"); done
  s=0 f=0
  : >"$T/s.out"
  : >"$T/f.out"
  E2E_KC_FAST=0 kc "$C" "${args_s[@]}" <<<"${in//@/kcf-slow}" >"$so" 2>"$T/s.err" || s=$?
  n0=$(calls)
  kc "$C" "${args_f[@]}" <<<"${in//@/kcf-fast}" >"$fo" 2>"$T/f.err" || f=$?
  sed -i 's/kcf-fast/kcf-slow/g' "$T/f.out" "$T/f.err"
  [ "$s" = "$f" ] || fail "kc $*: status $f, kubectl's $s ($(cat "$T/f.err") / $(cat "$T/s.err"))"
  cmp -s "$T/s.out" "$T/f.out" || fail "kc $*: printed '$(cat "$T/f.out")', kubectl '$(cat "$T/s.out")'"
  cmp -s "$T/s.err" "$T/f.err" || fail "kc $*: said '$(cat "$T/f.err")', kubectl '$(cat "$T/s.err")'"
  [ "$(($(calls) - n0))" = "$want" ] || fail "kc $*: kubectl called $(($(calls) - n0)) times, not $want"
}
# same KIND NAME JQ: the object in both namespaces agrees on JQ.
same() {
  local a b
  a=$(kget "$C" "$1" "$2" -n kcf-slow | jq -cS "$3") || fail "no $1 $2 in kcf-slow"
  b=$(kget "$C" "$1" "$2" -n kcf-fast | jq -cS "$3" | sed 's/kcf-fast/kcf-slow/g') || fail "no $1 $2 in kcf-fast"
  [ "$a" = "$b" ] || fail "$1 $2 differs: kc_fast made $b, kubectl $a"
}

say "create namespace, apply and create from stdin (JSON), get"
pair 0 "" create namespace @
CM='{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","labels":{"l":"1"}},"data":{"a":"1","gone":"x"}}'
pair 0 "$CM" apply -n @ -f -
same configmap cm '{data, labels: .metadata.labels}'
SECRET='{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"@"},"stringData":{"k":"v"}}'
pair 0 "$SECRET" create -f -
pair 0 "$SECRET" create -f -
same secret s '{data, type}'
pair 0 "" get configmap cm -n @ -o 'jsonpath={.data.a}'
pair 0 "" get namespace @ -o 'jsonpath={.metadata.name}'
[ "$(kc "$C" get configmap cm -n kcf-fast -o json | jq -r .data.a)" = 1 ] || fail "get -o json"
kc "$C" get configmap cm -n kcf-fast >/dev/null || fail "get: cm exists"
expect_fail "get of an absent object" kc "$C" get configmap nothing -n kcf-fast

# Several objects in one input are kubectl's.
TWO='{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"two-a"}}{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"two-b"}}'
pair 1 "$TWO" apply -n @ -f -
same configmap two-b '{data}'

say "lists by name (-o name): objects, an alias, an empty list"
pair 0 "" get configmaps -n @ -o name
pair 0 "" get cm -n @ -o name
pair 0 "" get limitranges -n @ -o name
pair 0 "" get resourcequotas -n @ -o name

say "lists by label (-l) and in every namespace (-A), by name and by jsonpath; several kinds"
LAB='{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"lab","labels":{"kcf":"@","e2e.cliqo.io/k":"v"}}}'
pair 0 "$LAB" create -n @ -f -
pair 0 "" get configmaps -n @ -l l=1 -o name
pair 0 "" get configmaps -n @ -l 'l!=1,e2e.cliqo.io/k' -o name
pair 0 "" get configmaps -n @ --selector=nothing=here -o name
pair 0 "" get configmaps -A -l kcf=@ -o name
pair 0 "" get configmaps,limitranges,cm -n @ -o name
pair 0 "" get configmaps -n @ -l kcf -o 'jsonpath={.items[*].metadata.name}'
pair 0 "" get configmaps --all-namespaces -l kcf=@ -o 'jsonpath={.items[0].metadata.namespace}/{.items[0].metadata.labels.kcf}'
pair -q 0 "" label namespace @ e2e.cliqo.io/kcf=@ --overwrite
pair 0 "" get namespaces -l e2e.cliqo.io/kcf=@ -o 'jsonpath={.items[*].metadata.name}'
# kubectl fails on an index past the end of a list: kc_fast says the same for an empty list (a poll for an object
# not there yet) and leaves any other to kubectl.
pair 0 "" get configmaps -n @ -l nothing=here -o 'jsonpath={.items[0].metadata.name}'
pair 0 "" get configmaps -A -l nothing=here -o 'jsonpath={.items[2].metadata.name}{.items[0].data}'
# (kubectl's message shows the object, uid and times included: the two namespaces' can never agree)
n0=$(calls)
expect_fail "an index past the end of a list" kc "$C" get configmaps -n kcf-fast -l kcf -o 'jsonpath={.items[1].metadata.name}'
[ "$(calls)" = $((n0 + 1)) ] || fail "an index past the end of a list that is not empty is not left to kubectl"
pair 1 "" get configmaps -n @ -l kcf -o 'jsonpath={.items[*].kind}'

say "create as another user (--as), the server's dry run (--dry-run=server), --validate=false"
DRY='{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dry"},"data":{"a":"1"}}'
pair 0 "$DRY" create --dry-run=server -n @ -f -
expect_fail "a dry run leaves no object" kc "$C" get configmap dry -n kcf-fast
pair 0 "$DRY" --as=system:serviceaccount:@:default create --dry-run=server -n @ -f -
pair 0 "$DRY" --as=system:serviceaccount:@:default create -n @ -f -
pair 0 "$DRY" create --validate=false -n @ -f -
same configmap dry '{data}'

say "apply of an object that exists: kubectl's, merged against what kc_fast recorded (a removed key goes)"
CM2='{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"a":"2"}}'
pair 1 "$CM2" apply -n @ -f -
same configmap cm '{data, labels: .metadata.labels}'

say "patch (merge, json, strategic), annotate and label"
pair -q 0 "" patch configmap cm -n @ --type=merge -p '{"data":{"b":"3"}}'
pair -q 0 "" patch configmap cm -n @ --type=json -p '[{"op":"add","path":"/data/c","value":"4"}]'
pair -q 0 "" patch configmap cm -n @ -p '{"data":{"d":"5"}}'
pair -q 0 "" annotate configmap cm -n @ e2e.cliqo.io/x=1 --overwrite
pair -q 0 "" label configmap cm -n @ e2e.cliqo.io/y=2 l- --overwrite
pair -q 0 "" annotate configmap cm -n @ e2e.cliqo.io/x-
same configmap cm '{data, labels: .metadata.labels, notes: (.metadata.annotations | del(."kubectl.kubernetes.io/last-applied-configuration")), managers: [.metadata.managedFields[].manager] | sort}'
# With stdout shown, patch is kubectl's (it reads the object first to say "(no change)").
pair 1 "" patch configmap cm -n @ --type=merge -p '{"data":{"b":"3"}}'

say "refusals: Invalid (one cause, several), a bad patch, a subresource"
pair -q 0 "" patch namespace @ --type=merge -p '{"metadata":{"labels":{"e2e.cliqo.io/z":"a b"}}}'
pair -q 1 "" label namespace @ 'e2e.cliqo.io/z=a b' --overwrite
pair -q 0 "" patch configmap cm -n @ --type=json -p '[{"op":"remove","path":"/data/none"}]'
pair -q 0 "" patch namespace @ --subresource=status --type=merge -p '{"status":{"phase":"Active"}}'
# Two causes, in an order that does not depend on a map's (labels first, then data keys).
BAD='{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad","labels":{"x":"a b"}},"data":{"a b":"1"}}'
pair 0 "$BAD" create -n @ -f -
pair 0 "$BAD" apply -n @ -f -

say "delete: the message, an absent object, --ignore-not-found, waiting for a namespace (by label) to go"
pair 0 "" delete configmap cm -n @
pair 0 "" delete configmap cm -n @
pair 0 "" delete secret s nothing -n @ --ignore-not-found
say "RES/NAME, kind.group/NAME; delete by label and --all (each listed, then deleted; none left)"
pair 0 "" get configmap/two-a -n @ -o 'jsonpath={.metadata.name}'
pair -q 0 "" patch configmap/two-a -n @ --type=merge -p '{"data":{"x":"1"}}'
pair 0 "" delete deployment.apps/nothing -n @
pair 0 "" delete deployment.apps/nothing -n @ --ignore-not-found
pair 0 "" delete configmaps -n @ -l kcf
pair 0 "" delete configmaps -n @ -l kcf
pair 0 "" delete cm --all -n @ --wait=false
left=$(kc "$C" get configmaps -n kcf-fast -o name)
[ -z "$left" ] || fail "delete --all left $left"
pair 0 "" delete namespace -l e2e.cliqo.io/kcf=@ --timeout=60s
expect_fail "kcf-fast is gone after delete" kc "$C" get namespace kcf-fast
pass "create (also as another user, as a dry run), apply, get (objects; lists by name or jsonpath, by label, in every namespace), patch, annotate, label and delete print, fail and leave objects as kubectl does"
