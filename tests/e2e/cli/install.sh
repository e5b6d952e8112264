#!/usr/bin/env bash
# cliqoctl install: dry run touches nothing; install creates every object and waits for the CRDs; a second
# install changes nothing (the identity's resourceVersions stay); bad flags fail with one line.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"

cq uninstall --force --timeout 60s >/dev/null 2>&1 || fail "cleanup uninstall failed"

say "bad flags"
run_cq rc out err install --cluster-name Bad_Name --dry-run
[ "$rc" -eq 2 ] || fail "bad --cluster-name: exit $rc"
one_error_line "$err"
run_cq rc out err install --cluster-id 'x y' --dry-run
[ "$rc" -eq 2 ] || fail "bad --cluster-id: exit $rc"
one_error_line "$err"
run_cq rc out err install --auth-url http://insecure.example --dry-run
[ "$rc" -eq 2 ] || fail "http --auth-url: exit $rc"
one_error_line "$err"
run_cq rc out err install --timeout forever
[ "$rc" -eq 2 ] || fail "bad --timeout: exit $rc"
one_error_line "$err"

say "--dry-run prints the manifests and the identity, with secrets redacted, and creates nothing"
run_cq rc out err install --dry-run --skip-agent --auth-address 127.0.0.1:$SRV
[ "$rc" -eq 0 ] || fail "dry run: exit $rc: $err"
contains "dry run shows a CRD" "$out" "# Source: crds/discovery.liqo.io_foreignclusters.yaml"
contains "dry run shows RBAC" "$out" "# Source: rbac.yaml"
contains "dry run shows the ConfigMap" "$out" '"name": "cluster-id"'
contains "dry run redacts the token" "$out" "<redacted"
contains "dry run shows the authUrl" "$out" "https://127.0.0.1:$SRV"
grep -q 'deployment.yaml' <<<"$out" && fail "--skip-agent dry run lists deployment.yaml"
kc "$C" get namespace cliqo >/dev/null 2>&1 && fail "dry run created namespace cliqo"
kc "$C" get crd foreignclusters.discovery.liqo.io >/dev/null 2>&1 && fail "dry run created a CRD"

say "install"
run_cq rc out err install --skip-agent --cluster-name e2e-one --auth-address 127.0.0.1:$SRV --auth-address cliqo.example.org:443
[ "$rc" -eq 0 ] || fail "install: exit $rc: $err"
contains "install prints the name" "$out" "cluster name: e2e-one"
id=$(jpath "$C" '{.data.cluster-id}' configmap -n cliqo cluster-id)
[[ "$id" =~ ^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$ ]] || fail "cluster-id is not a UUID v4: $id"
contains "install prints the ID" "$out" "cluster ID:   $id"
[ "$(jpath "$C" '{.data.cluster-name}' configmap -n cliqo cluster-id)" = e2e-one ] || fail "cluster-name"
[ "$(jpath "$C" '{.metadata.labels.app\.kubernetes\.io/name}' configmap -n cliqo cluster-id)" = clusterid-configmap ] ||
  fail "cluster-id label"
for b in $(kc "$C" get crd -o name | grep -E 'liqo\.io$'); do
  kc "$C" wait --for condition=Established "$b" --timeout=5s >/dev/null || fail "$b not Established"
done
[ "$(kc "$C" get crd -o name | grep -cE 'liqo\.io$')" -eq "$(find "$(dirname "$0")/../../../deploy/crds" -name '*.yaml' | wc -l)" ] ||
  fail "not every CRD installed"
for o in clusterrole/cliqo-agent clusterrole/cliqo-agent-tenant clusterrole/cliqo-remote-peering clusterrolebinding/cliqo-agent; do
  kc "$C" get "$o" >/dev/null || fail "$o missing"
done
kc "$C" get -n cliqo serviceaccount/cliqo-agent role/cliqo-agent rolebinding/cliqo-agent >/dev/null || fail "namespaced RBAC missing"
kc "$C" get -n cliqo deployment cliqo-agent >/dev/null 2>&1 && fail "--skip-agent created the Deployment"
kc "$C" get -n cliqo service cliqo-auth >/dev/null 2>&1 && fail "--skip-agent created the Service"
token=$(jpath "$C" '{.data.token}' secret -n cliqo auth-token | base64 -d)
[[ "$token" =~ ^[0-9a-f]{64}$ ]] || fail "auth-token is not 64 hex digits"
[ "$(jpath "$C" '{.spec.peeringConfig.authUrl}' clusterconfig configuration)" = https://127.0.0.1:$SRV ] ||
  fail "authUrl not set from the first --auth-address"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for k in ca.crt tls.crt tls.key; do
  jpath "$C" "{.data.${k//./\\.}}" secret -n cliqo auth-tls | base64 -d >"$tmp/$k"
  [ -s "$tmp/$k" ] || fail "auth-tls has no $k"
done
openssl verify -CAfile "$tmp/ca.crt" "$tmp/tls.crt" >/dev/null || fail "tls.crt is not signed by ca.crt"
sans=$(openssl x509 -in "$tmp/tls.crt" -noout -ext subjectAltName)
for s in "IP Address:127.0.0.1" "DNS:localhost" "DNS:cliqo-auth.cliqo.svc" "DNS:cliqo.example.org"; do
  contains "server certificate SAN" "$sans" "$s"
done
openssl x509 -in "$tmp/ca.crt" -noout -text | grep_q 'ASN1 OID: prime256v1' || fail "CA is not EC P-256"

say "a second install changes nothing"
rv() { jpath "$C" '{.metadata.resourceVersion}' "$@"; }
before="$(rv -n cliqo configmap cluster-id) $(rv -n cliqo secret auth-token) $(rv -n cliqo secret auth-tls) $(rv clusterconfig configuration)"
run_cq rc out err install --skip-agent --cluster-name other-name --cluster-id 11111111-2222-4333-8444-555555555555 --auth-address 127.0.0.1:$SRV
[ "$rc" -eq 0 ] || fail "second install: exit $rc: $err"
contains "second install says nothing changed" "$out" "nothing changed"
contains "second install keeps the ID" "$out" "cluster ID:   $id"
contains "second install keeps the name" "$out" "cluster name: e2e-one"
contains "second install warns about --cluster-id" "$err" "11111111-2222-4333-8444-555555555555 ignored"
after="$(rv -n cliqo configmap cluster-id) $(rv -n cliqo secret auth-token) $(rv -n cliqo secret auth-tls) $(rv clusterconfig configuration)"
[ "$before" = "$after" ] || fail "resourceVersions changed: $before -> $after"
grep -E ' (created|configured)$' <<<"$out" && fail "second install changed objects"

say "--auth-url changes only the ClusterConfig's authUrl"
run_cq rc out err install --skip-agent --auth-url https://auth.example.org:8443
[ "$rc" -eq 0 ] || fail "install --auth-url: exit $rc: $err"
[ "$(jpath "$C" '{.spec.peeringConfig.authUrl}' clusterconfig configuration)" = https://auth.example.org:8443 ] ||
  fail "authUrl not updated"
[ "$(rv -n cliqo secret auth-token)" = "$(cut -d' ' -f2 <<<"$before")" ] || fail "auth-token changed"
pass
