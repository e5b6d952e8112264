#!/usr/bin/env bash
# The simulator's kubelet API authenticates and authorises callers as a kubelet does: a client
# certificate the cluster CA did not sign (or none) gets 401, a signed one for an identity without
# nodes/proxy rights 403 (SubjectAccessReview), and the verb follows the method (GET: get, POST:
# create). Malformed and oversized requests are refused; /healthz needs no certificate.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
ns=e2e-kla-auth
pki="$E2E_STATE/$c/pki"
port=$(($(awk '$1 == "cluster-1" {print $2}' "$E2E_STATE/clusters") + 5))
base="https://127.0.0.1:$port"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fresh_ns "$c" "$ns"
wait_sa "$ns"
kc "$c" -n "$ns" run target --image=busybox:1.36 --restart=Never >/dev/null
wait_for 30 "target Running" pod_phase_is "$ns" target Running
logs="$base/containerLogs/$ns/target/target?tailLines=1"
exec_url="$base/exec/$ns/target/target?command=true&output=1"

# client CN [O] [CA-dir]: a client certificate signed by the given CA (default: the cluster's).
client() {
  local cn=$1 o=${2:-} ca=${3:-$pki}
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$work/$cn.key" \
    -subj "${o:+/O=$o}/CN=$cn" -out "$work/$cn.csr" 2>/dev/null
  openssl x509 -req -in "$work/$cn.csr" -CA "$ca/ca.crt" -CAkey "$ca/ca.key" -set_serial "0x$(openssl rand -hex 8)" \
    -days 1 -out "$work/$cn.crt" -extfile <(printf 'extendedKeyUsage=clientAuth\n') 2>/dev/null
}
# code USER URL [curl args]: the HTTP status for that user's certificate ("-": none).
code() {
  local u=$1 url=$2
  shift 2
  if [ "$u" = - ]; then curl -s -o "$work/body" -w '%{http_code}' --cacert "$pki/ca.crt" "$@" "$url"; else
    curl -s -o "$work/body" -w '%{http_code}' --cacert "$pki/ca.crt" --cert "$work/$u.crt" --key "$work/$u.key" "$@" "$url"; fi
}

[ "$(code - "$base/healthz")" = 200 ] && [ "$(cat "$work/body")" = ok ] || fail "/healthz without a certificate"
[ "$(code - "$logs")" = 401 ] || fail "no client certificate: $(cat "$work/body")"
client e2e-stranger system:masters "$E2E_STATE/cluster-2/pki"
# Another CA's certificate (even system:masters) ends the TLS handshake: no HTTP answer at all.
[ "$(code e2e-stranger "$logs")" = 000 ] || fail "a certificate of another CA (even system:masters) was not refused in the handshake"
client e2e-nobody
[ "$(code e2e-nobody "$logs")" = 403 ] || fail "an identity without rights was not refused: $(cat "$work/body")"
grep -q 'Forbidden (user=e2e-nobody, verb=get, resource=nodes, subresource=proxy)' "$work/body" ||
  fail "403 body: $(cat "$work/body")"
say "401 without a certificate, the handshake refused with another CA's, 403 without nodes/proxy"

# Rights through RBAC: get only (logs yes, exec no), then get and create.
kc "$c" apply -f - >/dev/null <<'YAML'
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: e2e-kla-proxy-get}
rules: [{apiGroups: [""], resources: [nodes/proxy], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: e2e-kla-proxy-get}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: e2e-kla-proxy-get}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: e2e-reader}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: e2e-kla-proxy-all}
rules: [{apiGroups: [""], resources: [nodes/proxy], verbs: [get, create]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: e2e-kla-proxy-all}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: e2e-kla-proxy-all}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: e2e-kla-operators}]
YAML
client e2e-reader
client e2e-operator e2e-kla-operators
wait_for 20 "RBAC for e2e-reader" bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' --cacert $pki/ca.crt --cert $work/e2e-reader.crt --key $work/e2e-reader.key '$logs')\" = 200 ]"
[ "$(code e2e-reader "$logs")" = 200 ] && grep -q '^nodesim: ' "$work/body" || fail "reader logs: $(cat "$work/body")"
# exec is a POST (verb create): the reader may not; without the upgrade headers an allowed caller
# gets 400, which shows the request was authorised first.
[ "$(code e2e-reader "$exec_url" -X POST)" = 403 ] || fail "POST exec allowed with get only: $(cat "$work/body")"
grep -q 'verb=create' "$work/body" || fail "403 for POST does not name verb create: $(cat "$work/body")"
[ "$(code e2e-operator "$exec_url" -X POST)" = 400 ] || fail "group member with create: $(cat "$work/body")"
grep -q 'missing upgrade headers' "$work/body" || fail "400 body: $(cat "$work/body")"
[ "$(code e2e-operator "$base/containerLogs/$ns/absent/target")" = 404 ] || fail "unknown pod is not 404"
[ "$(code e2e-nobody "$base/containerLogs/$ns/absent/target")" = 403 ] || fail "unknown pod leaks to an unauthorised caller"
say "verb from the method (GET get, POST create), groups from O, 404 only for allowed callers"

# Requests the listener refuses outright.
[ "$(code e2e-operator "$base/containerLogs/$ns/target/target?tailLines=-1")" = 400 ] || fail "tailLines=-1"
[ "$(code e2e-operator "$base/containerLogs/$ns/target/target?sinceSeconds=5&sinceTime=2024-01-01T00:00:00Z")" = 400 ] ||
  fail "sinceSeconds with sinceTime"
[ "$(code e2e-operator "$base/containerLogs/NOT_A_NS/target/target")" = 400 ] || fail "invalid namespace in the path"
[ "$(code e2e-operator "$base/nope")" = 404 ] || fail "unknown path"
[ "$(code e2e-operator "$logs" -X DELETE)" = 405 ] || fail "DELETE on logs"
[ "$(code e2e-operator "$logs" -H "X-Big: $(head -c 20000 /dev/zero | tr '\0' a)")" = 431 ] || fail "oversized head"
say "bad options 400, unknown path 404, wrong method 405, oversized head 431"
kc "$c" delete clusterrolebinding e2e-kla-proxy-get e2e-kla-proxy-all >/dev/null
kc "$c" delete clusterrole e2e-kla-proxy-get e2e-kla-proxy-all >/dev/null
kc "$c" delete namespace "$ns" --wait=false >/dev/null
pass
