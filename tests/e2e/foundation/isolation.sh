#!/usr/bin/env bash
# Two clusters share nothing: objects, certificate authorities and credentials are all separate.
source "$(dirname "$0")/../lib.sh"
kc cluster-1 create namespace e2e-only-in-1 >/dev/null
kc cluster-2 create namespace e2e-only-in-2 >/dev/null
expect_fail "cluster-2 must not see cluster-1's namespace" kc cluster-2 get namespace e2e-only-in-1
expect_fail "cluster-1 must not see cluster-2's namespace" kc cluster-1 get namespace e2e-only-in-2
uid1=$(jpath cluster-1 '{.metadata.uid}' namespace default)
uid2=$(jpath cluster-2 '{.metadata.uid}' namespace default)
[ "$uid1" != "$uid2" ] || fail "both clusters report the same default namespace uid (shared etcd?)"

s1="$E2E_STATE/cluster-1"
s2="$E2E_STATE/cluster-2"
url2=$(awk '$1 == "cluster-2" {print "https://127.0.0.1:" $2}' "$E2E_STATE/clusters")
# cluster-2's serving certificate does not verify against cluster-1's CA.
out=$(curl -sS -m 5 --cacert "$s1/pki/ca.crt" "$url2/readyz" 2>&1) && fail "cluster-2 trusted with cluster-1's CA"
grep -qi 'certificate' <<<"$out" || fail "expected a certificate error, got: $out"
# cluster-1's admin certificate is not accepted by cluster-2.
code=$(curl -s -o /dev/null -w '%{http_code}' -m 5 --cacert "$s2/pki/ca.crt" \
  --cert "$s1/pki/admin.crt" --key "$s1/pki/admin.key" "$url2/api/v1/namespaces")
[ "$code" = 401 ] || fail "cluster-2 answered $code to cluster-1's admin certificate, want 401"
# Distinct etcd data directories and ports.
[ "$(awk '$1=="cluster-1"{print $3}' "$E2E_STATE/clusters")" != "$(awk '$1=="cluster-2"{print $3}' "$E2E_STATE/clusters")" ] ||
  fail "clusters share an etcd port"
kc cluster-1 delete namespace e2e-only-in-1 --wait=false >/dev/null
kc cluster-2 delete namespace e2e-only-in-2 --wait=false >/dev/null
pass "objects, CAs and credentials are isolated"
