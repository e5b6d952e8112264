#!/usr/bin/env bash
# The deployment manifests of deploy/ against the real apiserver: kustomization.yaml lists every manifest in
# the embedded order, `kubectl apply --dry-run=server -k deploy/` and a per-file dry run succeed, a real apply
# is idempotent (a second apply changes nothing), and broken copies are rejected (the check can fail).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
TMP=$(mktemp -d)

cleanup() {
  kc "$C" delete -f "$DEPLOY_DIR/node.yaml" -f "$DEPLOY_DIR/deployment.yaml" -f "$DEPLOY_DIR/service.yaml" -f "$DEPLOY_DIR/serviceaccount.yaml" \
    -f "$DEPLOY_DIR/rbac.yaml" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  ns_remove cliqo
  crds_remove
  rm -rf "$TMP"
}
trap cleanup EXIT
cleanup
TMP=$(mktemp -d)

# 1. kustomization.yaml lists exactly the manifests, in the order deploy/deploy.cmake embeds them.
order=()
for f in "$DEPLOY_DIR"/crds/*.yaml; do order+=("crds/$(basename "$f")"); done
order+=(namespace.yaml rbac.yaml serviceaccount.yaml clusterconfig.yaml service.yaml deployment.yaml node.yaml)
listed=$(sed -n -e 's/^- //p' "$DEPLOY_DIR/kustomization.yaml")
[ "$listed" = "$(printf '%s\n' "${order[@]}")" ] || fail "kustomization.yaml resources differ from the embedded order"
# deploy/broker/ is cliqo-broker's, with its own kustomization (checked by e2e.broker.deploy).
all=$(cd "$DEPLOY_DIR" && find . -name '*.yaml' ! -name kustomization.yaml ! -path './broker/*' | sed -e 's|^\./||' | sort)
[ "$all" = "$(printf '%s\n' "${order[@]}" | sort)" ] || fail "a YAML file under deploy/ is not listed: $all"
kc "$C" kustomize "$DEPLOY_DIR" >"$TMP/all.yaml" || fail "kubectl kustomize deploy/ failed"
n=$(grep -c '^kind: ' "$TMP/all.yaml")
say "kustomization lists the ${#order[@]} manifests in the embedded order ($n objects)"

# 2. Server-side dry run. A dry-run Namespace or CRD is not persisted, so the objects that live in them need
#    the real ones: CRDs and the namespace are applied for real first (cliqoctl install does the same, in order).
crds_install
kc "$C" apply -f "$DEPLOY_DIR/namespace.yaml" >/dev/null
kc "$C" apply --dry-run=server -k "$DEPLOY_DIR" >"$TMP/dry.out" 2>&1 || fail "dry run of -k deploy/: $(cat "$TMP/dry.out")"
m=$(grep -c 'server dry run' "$TMP/dry.out")
[ "$m" -eq "$n" ] || fail "dry run covered $m of $n objects: $(cat "$TMP/dry.out")"
for f in "${order[@]}"; do
  kc "$C" apply --dry-run=server -f "$DEPLOY_DIR/$f" >"$TMP/dry.out" 2>&1 || fail "dry run of $f: $(cat "$TMP/dry.out")"
done
say "server-side dry run: $n objects valid (kustomize and file by file)"

# 3. A real apply in the embedded order, then a second one changes nothing (install is idempotent).
for f in "${order[@]}"; do kc "$C" apply -f "$DEPLOY_DIR/$f" >/dev/null || fail "apply $f"; done
kc "$C" apply -k "$DEPLOY_DIR" >"$TMP/again.out" 2>&1 || fail "second apply: $(cat "$TMP/again.out")"
if grep -v ' unchanged$' "$TMP/again.out" | grep_q .; then fail "second apply changed objects: $(cat "$TMP/again.out")"; fi
[ "$(kc "$C" -n cliqo get deployment cliqo-agent -o jsonpath='{.spec.template.spec.containers[0].securityContext.readOnlyRootFilesystem}')" = true ] ||
  fail "deployment securityContext not stored"
[ "$(kc "$C" -n cliqo get service cliqo-auth -o jsonpath='{.spec.ports[0].port}/{.spec.ports[0].targetPort}')" = 443/auth ] ||
  fail "cliqo-auth port"
[ "$(jpath "$C" '{.spec.discoveryConfig.autojoinUntrusted}' clusterconfig configuration)" = false ] ||
  fail "clusterconfig defaults not applied"
say "a real apply succeeds and a second apply leaves all $n objects unchanged"

# 4. The check can fail: broken copies are rejected by the server.
broken() { # broken DESCRIPTION MESSAGE FILE SED-EXPRESSION
  sed -e "$4" "$DEPLOY_DIR/$3" >"$TMP/broken.yaml"
  cmp -s "$DEPLOY_DIR/$3" "$TMP/broken.yaml" && fail "$1: the edit changed nothing"
  expect_reject "$1" "$2" kc "$C" apply --dry-run=server --validate=false -f "$TMP/broken.yaml"
}
broken "negative replicas" "spec.replicas: Invalid value: -1" deployment.yaml 's/replicas: 1$/replicas: -1/'
broken "service port out of range" "Invalid value: 70000" service.yaml 's/port: 443$/port: 70000/'
broken "sharing percentage 101" "should be less than or equal to 100" clusterconfig.yaml \
  's/resourceSharingPercentage: 30$/resourceSharingPercentage: 101/'
broken "CRD with an unknown column type" "must be one of boolean,date,integer,number,string" \
  crds/discovery.liqo.io_foreignclusters.yaml \
  '0,/type: string$/s//type: strin/'
broken "RoleBinding to an unknown kind of role" "roleRef.kind: Unsupported value: \"Rol\"" rbac.yaml \
  '0,/^  kind: Role$/s//  kind: Rol/'
say "broken copies are rejected"

trap - EXIT
cleanup
pass
