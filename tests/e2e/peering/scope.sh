#!/usr/bin/env bash
# The credentials peering issues are confined to the peer's tenant namespace: A's credential on B (Secret
# remote-identity-<B-id> on A) and B's credential on A (Secret pr-<A-id> on B), checked with
# `kubectl auth can-i` as that identity and with real requests made with it (kubectl, and curl with the bare
# token). After the unpeer the credentials no longer work (401 or 403): the ServiceAccounts are gone.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
setup

say "peer"
peer
B_NS=$(jget "$A" '{.status.tenantNamespace.remote}' foreigncluster "$B") # A's tenant namespace on B
A_NS=$(jget "$A" '{.status.tenantNamespace.local}' foreigncluster "$B")  # B's tenant namespace on A
if [ -z "$A_NS" ] || [ -z "$B_NS" ]; then fail "tenant namespaces not in the ForeignCluster's status"; fi
CRED_A_ON_B="$PEER_TMP/a-on-b.kubeconfig"
CRED_B_ON_A="$PEER_TMP/b-on-a.kubeconfig"
jpath "$A" '{.data.kubeconfig}' secret -n cliqo "remote-identity-$B_ID" | base64 -d >"$CRED_A_ON_B"
jpath "$B" '{.data.kubeconfig}' secret -n "$B_NS" "pr-$A_ID" | base64 -d >"$CRED_B_ON_A"
if [ ! -s "$CRED_A_ON_B" ] || [ ! -s "$CRED_B_ON_A" ]; then fail "credentials not found"; fi

# as CRED args...: kubectl with a peer's credential.
as() {
  local f=$1
  shift
  "$KUBECTL" --kubeconfig "$f" --request-timeout=20s "$@"
}
# can CRED yes|no VERB RESOURCE [flags]: kubectl auth can-i as the credential gives the expected answer.
can() {
  local f=$1 want=$2 got
  shift 2
  got=$(as "$f" auth can-i "$@" 2>/dev/null || true)
  [ "$got" = "$want" ] || fail "$(basename "$f" .kubeconfig): can-i $* = '$got', want '$want'"
}
# allowed CRED DESCRIPTION kubectl-args...: the request succeeds.
allowed() {
  local f=$1 d=$2 err
  shift 2
  err=$(as "$f" "$@" 2>&1 >/dev/null) || fail "$(basename "$f" .kubeconfig): $d should be allowed: $err"
}
# denied CRED DESCRIPTION kubectl-args...: the request is refused by the API server as forbidden.
denied() {
  local f=$1 d=$2 err
  shift 2
  if err=$(as "$f" "$@" 2>&1 >/dev/null); then fail "$(basename "$f" .kubeconfig): $d was allowed"; fi
  grep -qi forbidden <<<"$err" || fail "$(basename "$f" .kubeconfig): $d failed, but not as forbidden: $err"
}
# api_code CRED PATH: the HTTP status of a GET with the credential's bare token, checking the server's CA.
api_code() {
  local f=$1 server ca
  server=$(jq -r '.clusters[0].cluster.server' "$f")
  ca="$PEER_TMP/$(basename "$f").ca"
  jq -r '.clusters[0].cluster."certificate-authority-data"' "$f" | base64 -d >"$ca"
  curl -s -o /dev/null -w '%{http_code}' --max-time 10 --cacert "$ca" \
    -H "Authorization: Bearer $(jq -r '.users[0].user.token' "$f")" "$server$2" || true
}
probe_secret() { # NAME NAMESPACE: a Secret manifest
  printf '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"%s","namespace":"%s"},"stringData":{"k":"v"}}' "$1" "$2"
}
probe_pr() { # NAME NAMESPACE: a PeeringRequest manifest
  printf '{"apiVersion":"discovery.liqo.io/v1alpha1","kind":"PeeringRequest","metadata":{"name":"%s","namespace":"%s"},"spec":{"clusterIdentity":{"clusterID":"%s","clusterName":"probe"},"namespace":"x","kubeConfigRef":{"name":"x","namespace":"%s"},"authUrl":"https://127.0.0.1:1"}}' \
    "$1" "$2" "$1" "$2"
}

# scope CRED NS OTHER-CLUSTER-ADMIN: what the credential may and may not do on its cluster.
scope() {
  local f=$1 ns=$2 c=$3 probe
  probe=scope-probe-$RANDOM
  say "$(basename "$f" .kubeconfig): kubectl auth can-i"
  can "$f" yes create peeringrequests.discovery.liqo.io -n "$ns"
  can "$f" yes get peeringrequests.discovery.liqo.io -n "$ns"
  can "$f" yes delete peeringrequests.discovery.liqo.io -n "$ns"
  can "$f" yes get secrets -n "$ns"
  can "$f" yes create secrets -n "$ns"
  can "$f" no get secrets -n cliqo
  can "$f" no get secrets -n default
  can "$f" no get secrets -n kube-system
  can "$f" no list secrets --all-namespaces
  can "$f" no list nodes
  can "$f" no create namespaces
  can "$f" no create clusterroles.rbac.authorization.k8s.io
  can "$f" no create clusterrolebindings.rbac.authorization.k8s.io
  can "$f" no create rolebindings.rbac.authorization.k8s.io -n "$ns"
  can "$f" no create peeringrequests.discovery.liqo.io -n default
  can "$f" no create secrets -n default
  can "$f" no get foreignclusters.discovery.liqo.io
  can "$f" no impersonate users
  can "$f" no impersonate serviceaccounts -n "$ns"
  can "$f" no '*' '*'

  say "$(basename "$f" .kubeconfig): real requests"
  allowed "$f" "list secrets in $ns" get secrets -n "$ns"
  allowed "$f" "list peeringrequests in $ns" get peeringrequests.discovery.liqo.io -n "$ns"
  allowed "$f" "create a secret in $ns" create -f - <<<"$(probe_secret "$probe" "$ns")"
  allowed "$f" "get the secret it created" get secret -n "$ns" "$probe"
  allowed "$f" "delete the secret it created" delete secret -n "$ns" "$probe"
  allowed "$f" "create a peeringrequest in $ns (server dry run)" create --dry-run=server -f - \
    <<<"$(probe_pr 7e57c0de-0000-4000-8000-000000000001 "$ns")"
  denied "$f" "get secret auth-token in cliqo" get secret -n cliqo auth-token
  denied "$f" "list secrets in cliqo" get secrets -n cliqo
  denied "$f" "list secrets in default" get secrets -n default
  denied "$f" "list secrets in kube-system" get secrets -n kube-system
  denied "$f" "list secrets in all namespaces" get secrets --all-namespaces
  denied "$f" "list nodes" get nodes
  denied "$f" "list namespaces" get namespaces
  denied "$f" "create a namespace" create namespace "$probe" --dry-run=server
  denied "$f" "create a clusterrole" create clusterrole "$probe" --verb=get --resource=pods --dry-run=server
  denied "$f" "create a clusterrolebinding" create clusterrolebinding "$probe" --clusterrole=cluster-admin \
    --user=x --dry-run=server
  denied "$f" "create a rolebinding in its namespace" create rolebinding "$probe" -n "$ns" --clusterrole=admin \
    --user=x --dry-run=server
  denied "$f" "create a peeringrequest in default" create --dry-run=server -f - \
    <<<"$(probe_pr 7e57c0de-0000-4000-8000-000000000002 default)"
  denied "$f" "create a secret in default" create --dry-run=server -f - <<<"$(probe_secret "$probe" default)"
  denied "$f" "list foreignclusters" get foreignclusters.discovery.liqo.io
  denied "$f" "impersonate an administrator" --as=admin --as-group=system:masters get secrets -n "$ns"
  # Nothing the probes tried exists on the cluster.
  [ -z "$(kc "$c" get secrets --all-namespaces --field-selector "metadata.name=$probe" -o name)" ] ||
    fail "a probe Secret was left on $c"
  kc "$c" get namespace "$probe" >/dev/null 2>&1 && fail "a probe namespace exists on $c"

  say "$(basename "$f" .kubeconfig): the bare token"
  [ "$(api_code "$f" "/api/v1/namespaces/$ns/secrets")" = 200 ] || fail "token: list secrets in $ns not 200"
  [ "$(api_code "$f" /api/v1/namespaces/kube-system/secrets)" = 403 ] || fail "token: kube-system secrets not 403"
  [ "$(api_code "$f" /api/v1/secrets)" = 403 ] || fail "token: all secrets not 403"
  return 0
}

scope "$CRED_A_ON_B" "$B_NS" "$B"
allowed "$CRED_A_ON_B" "get its PeeringRequest" get peeringrequests.discovery.liqo.io -n "$B_NS" "$A_ID"
allowed "$CRED_A_ON_B" "get its kubeconfig Secret" get secret -n "$B_NS" "pr-$A_ID"
scope "$CRED_B_ON_A" "$A_NS" "$A"

say "unpeer: the credentials stop working"
out=$(cq "$A" unpeer "$B" --timeout 60s 2>&1) || fail "unpeer failed: $out"
assert_no_peering_objects "$A"
assert_no_peering_objects "$B"
refused() { # CRED NS
  local code
  code=$(api_code "$1" "/api/v1/namespaces/$2/secrets")
  [ "$code" = 401 ] || [ "$code" = 403 ]
}
wait_for 60 "A's credential on B refused" refused "$CRED_A_ON_B" "$B_NS"
wait_for 60 "B's credential on A refused" refused "$CRED_B_ON_A" "$A_NS"
say "after the unpeer: A's credential on B gets $(api_code "$CRED_A_ON_B" "/api/v1/namespaces/$B_NS/secrets"), B's on A gets $(api_code "$CRED_B_ON_A" "/api/v1/namespaces/$A_NS/secrets")"
finish
pass "both credentials confined to their tenant namespace, revoked by the unpeer"
