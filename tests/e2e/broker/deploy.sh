#!/usr/bin/env bash
# The broker's manifests (deploy/broker/): every object passes a server-side dry run on K, and the RBAC, applied
# for real, grants exactly what docs/broker.md says the broker needs (kubectl auth can-i as its ServiceAccount):
# nothing on Secrets, no namespace writes, no NamespaceOffloading deletes.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
DEPLOY="$(cd "$(dirname "$0")/../../../deploy/broker" && pwd)"
cleanup() { kc "$K" delete -f "$DEPLOY/rbac.yaml" --ignore-not-found >/dev/null 2>&1 || true; }
trap 'rc=$?; cleanup; (exit $rc); brk_on_exit' EXIT
ensure_agents

say "server-side dry run of deploy/broker/"
for f in rbac.yaml deployment.yaml; do
  out=$(kc "$K" apply --dry-run=server -f "$DEPLOY/$f" 2>&1) || fail "$f refused: $out"
done
say "the RBAC, applied, grants what the broker needs and nothing more"
kc "$K" apply -f "$DEPLOY/rbac.yaml" >/dev/null || fail "cannot apply rbac.yaml"
SA=system:serviceaccount:cliqo:cliqo-broker
can() { # yes|no VERB RESOURCE [-n NS]
  local want=$1 got
  shift
  got=$(kc "$K" auth can-i --as "$SA" "$@" 2>/dev/null || true)
  [ "$got" = "$want" ] || fail "can-i $*: $got, expected $want"
}
can yes list foreignclusters.discovery.liqo.io
can yes watch advertisements.sharing.liqo.io --all-namespaces
can yes watch namespaces
can yes patch namespaceoffloadings.offloading.liqo.io -n some-namespace
can yes update configmaps -n cliqo
can yes update leases.coordination.k8s.io -n cliqo
can no get secrets -n cliqo
can no list secrets --all-namespaces
can no delete namespaces
can no delete namespaceoffloadings.offloading.liqo.io -n some-namespace
can no update configmaps -n default
can no patch foreignclusters.discovery.liqo.io
can no create pods -n cliqo
pass "deploy/broker/ passes a server-side dry run; the broker's RBAC grants its needs and no Secret"
