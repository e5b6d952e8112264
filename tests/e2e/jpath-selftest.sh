#!/usr/bin/env bash
# The e2e helpers' jsonpath (jp2jq in lib.sh): a table of kubectl -o jsonpath expressions over one object and
# what kubectl prints for them (several values joined by spaces, a missing field as nothing, maps as JSON), and
# the expressions that must fall back to kubectl. No cluster: the e2e groups cross-check the same helper with
# kubectl itself when E2E_KGET_CROSSCHECK=1.
CLIQOCTL=${CLIQOCTL:-unused} E2E_STATE=${E2E_STATE:-/nonexistent}
source "$(dirname "$0")/lib.sh"
obj='{"metadata":{"name":"n1","uid":"u","labels":{"app.kubernetes.io/name":"x","a":"b"}},
 "spec":{"taints":[{"key":"k1"},{"key":"k2"}],"replicas":3,"paused":false,"n":null},
 "status":{"conditions":[{"type":"Ready","status":"True","reason":"R"},{"type":"Other","status":"False"}],
  "capacity":{"nvidia.com/gpu":"4","cpu":"2"},"containerStatuses":[{"image":"i0"},{"image":"i1"}]},
 "items":[{"metadata":{"uid":"u1"}},{"metadata":{"uid":"u2"}},{"metadata":{}}]}'
n=0
check() { # JSONPATH WANT
  local prog got
  prog=$(jp2jq "$1") || fail "jp2jq refused '$1'"
  got=$(jq -rj "$prog" <<<"$obj") || fail "jq failed on the program of '$1': $prog"
  [ "$got" = "$2" ] || fail "'$1': got '$got', want '$2'"
  n=$((n + 1))
}
check '{.metadata.name}' n1
check '{.status.conditions[?(@.type=="Ready")].status}' True
check '{.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].reason}' True/R
check '{.status.conditions[?(@.type=="Missing")].status}' ''
check '{.status.conditions[*].type}' 'Ready Other'
check '{.status.capacity.nvidia\.com/gpu}' 4
check '{.metadata.labels.app\.kubernetes\.io/name}' x
check '{.items[*].metadata.uid}' 'u1 u2'
check '{.status.containerStatuses[1].image}' i1
check '{.status.containerStatuses[5].image}' ''
check '{.spec.taints[*].key}' 'k1 k2'
check '{.spec.replicas}' 3
check '{.spec.paused}' false
check '{.spec.n}' ''
check '{.missing.deeper}' ''
check '{.metadata.name.x}' ''
check '{.status.capacity}' '{"nvidia.com/gpu":"4","cpu":"2"}'
check 'name={.metadata.name} "q"' 'name=n1 "q"'
for p in '{range .items[*]}{.metadata.uid}{end}' '{$.metadata.name}' '{.status.conditions[?(@.status!="x")].type}' \
  'plain' '{.a' '{.items[-1:]}'; do
  if [ "$p" = plain ]; then continue; fi
  if jp2jq "$p" >/dev/null 2>&1; then fail "'$p' should fall back to kubectl"; fi
  n=$((n + 1))
done
check 'plain text' 'plain text'
# kget_path: the API path of each form of `kubectl get`, or a fallback.
path_is() { local got; got=$(kget_path "${@:2}") || got="(fallback)"; [ "$got" = "$1" ] || fail "kget_path ${*:2}: '$got', want '$1'"; n=$((n + 1)); }
path_is /api/v1/namespaces/default/pods pods
path_is /api/v1/namespaces/x/pods/p pod -n x p
path_is /api/v1/namespaces/x/pods/p -n x pod p
path_is /api/v1/pods pods -A
path_is /api/v1/nodes/n1 node n1
path_is /apis/discovery.liqo.io/v1alpha1/foreignclusters/f foreigncluster f
path_is /apis/virtualkubelet.liqo.io/v1alpha1/namespacemaps namespacemaps --all-namespaces
path_is '(fallback)' pods -l app=x
path_is '(fallback)' csr c1
path_is '(fallback)' crd/foo
path_is '(fallback)' pod a b
path_is '(fallback)' pod -n 'x;y' p
pass "$n cases"
