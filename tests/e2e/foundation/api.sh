#!/usr/bin/env bash
# Each cluster serves the Kubernetes API: readiness, core and grouped APIs, CRDs, create/read/delete.
source "$(dirname "$0")/../lib.sh"
for c in cluster-1 cluster-2; do
  [ "$(kc "$c" get --raw /readyz)" = ok ] || fail "$c: /readyz is not ok"
  ver=$(kc "$c" version -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])')
  [ "$ver" = v1.20.2 ] || fail "$c: server version is '$ver', want v1.20.2"
  groups=$(kc "$c" api-versions)
  for g in v1 apps/v1 rbac.authorization.k8s.io/v1 coordination.k8s.io/v1 apiextensions.k8s.io/v1 \
    discovery.k8s.io/v1beta1 certificates.k8s.io/v1; do
    grep -qx "$g" <<<"$groups" || fail "$c: API group version $g not served"
  done
  kc "$c" create namespace e2e-api >/dev/null
  kc "$c" -n e2e-api create configmap probe --from-literal=k=v >/dev/null
  [ "$(kc "$c" -n e2e-api get configmap probe -o jsonpath='{.data.k}')" = v ] || fail "$c: configmap round trip"
  # A CRD becomes servable (the foundation of every cliqo kind).
  kc "$c" apply -f - >/dev/null <<YAML
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: probes.e2e.cliqo.io}
spec:
  group: e2e.cliqo.io
  scope: Namespaced
  names: {plural: probes, singular: probe, kind: Probe}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer, minimum: 1}}}
YAML
  wait_for 30 "$c: CRD established" kc "$c" wait --for condition=Established crd/probes.e2e.cliqo.io --timeout=2s
  wait_for 30 "$c: CRD served" kc "$c" get probes.e2e.cliqo.io -n e2e-api
  printf 'apiVersion: e2e.cliqo.io/v1\nkind: Probe\nmetadata: {name: p1, namespace: e2e-api}\nspec: {size: 3}\n' |
    kc "$c" create -f - >/dev/null
  printf 'apiVersion: e2e.cliqo.io/v1\nkind: Probe\nmetadata: {name: p2, namespace: e2e-api}\nspec: {size: 0}\n' |
    expect_fail "$c: schema validation rejects size 0" kc "$c" create -f -
  kc "$c" delete namespace e2e-api --wait=false >/dev/null
  kc "$c" delete crd probes.e2e.cliqo.io >/dev/null
  say "$c serves the API ($ver)"
done
pass
