#!/usr/bin/env bash
# The agent's kubelet API (module kubeletapi, src/kubeletapi/service.c): an agent started by the e2e
# helpers (../agents.sh) on cluster-2 serves it on its --kubelet-addr (slot 8) with a certificate
# signed by the cluster's CA, obtained through a CertificateSigningRequest it approved itself (signer
# kubernetes.io/kubelet-serving, CN system:node:cliqo-<identity>, O system:nodes, SAN the
# --node-address); it authenticates callers with the cluster's client CA (another CA's certificate:
# refused in the TLS handshake) and authorises them with SubjectAccessReviews (no nodes/proxy: 403). The API server itself
# reaches it: `kubectl logs` of a pod bound to a node that publishes the listener gets the agent's
# answer (404: no virtual kubelet relays that pod), not a TLS error.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
ALL=(cluster-2)
AGENT_ID_PREFIX=nodesim-e2e
source "$(dirname "$0")/../agents.sh"
ac=cluster-2
pki="$E2E_STATE/$ac/pki"
kp=$(kubelet_port "$ac")
ns=e2e-kla-agent
node=e2e-kla-agent-node
work=$(mktemp -d)
# The pod is bound to a node without a kubelet: only a forced deletion removes it (and so its namespace).
remove_objects() {
  kc "$ac" -n "$ns" delete pods --all --grace-period=0 --force >/dev/null 2>&1 || true
  kc "$ac" delete node "$node" --ignore-not-found >/dev/null 2>&1 || true
  kc "$ac" delete namespace "$ns" --ignore-not-found --wait=false >/dev/null 2>&1 || true
}
cleanup() {
  local rc=$?
  stop_agent "$ac" || rc=1
  remove_objects
  if [ "$rc" != 0 ]; then
    echo "--- last lines of the agent log" >&2
    tail -30 "$(agent_log "$ac")" >&2 || true
  fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT

# The agent's controllers need cliqo's CRDs and cluster identity to be ready.
"$CLIQOCTL" install --kubeconfig "$(kcfg "$ac")" --cluster-name nodesim-2 --skip-agent >/dev/null ||
  fail "cliqoctl install failed"
start_agent "$ac"
wait_agent_ready "$ac"
identity="$AGENT_ID_PREFIX-${ac#cluster-}"
cn="system:node:cliqo-$identity"

# served: the certificate the listener presents, verified by openssl against the cluster CA for 127.0.0.1.
served() {
  openssl s_client -connect "127.0.0.1:$kp" -CAfile "$pki/ca.crt" -verify_return_error -verify_ip 127.0.0.1 \
    </dev/null 2>/dev/null | openssl x509 >"$work/served.crt" 2>/dev/null
}
wait_for 60 "the kubelet API on 127.0.0.1:$kp with a certificate of the cluster CA" served
openssl verify -CAfile "$pki/ca.crt" -purpose sslserver "$work/served.crt" >/dev/null ||
  fail "the served certificate does not verify for a TLS server: $(openssl x509 -noout -text <"$work/served.crt")"
subject=$(openssl x509 -noout -subject -nameopt RFC2253 <"$work/served.crt")
[ "$subject" = "subject=CN=$cn,O=system:nodes" ] || fail "subject: $subject"
san=$(openssl x509 -noout -ext subjectAltName <"$work/served.crt" | tail -n +2 | tr -d ' ')
[ "$san" = "IPAddress:127.0.0.1" ] || fail "SAN: $san"
[ "$(openssl x509 -noout -issuer <"$work/served.crt")" = "$(openssl x509 -noout -subject <"$pki/ca.crt" | sed 's/^subject/issuer/')" ] ||
  fail "issuer: $(openssl x509 -noout -issuer <"$work/served.crt")"
say "listener on :$kp serves $cn (SAN 127.0.0.1), signed by the cluster CA"

# The request behind it: kubelet-serving, approved by the agent, its certificate the one served.
kget "$ac" csr >"$work/csrs.json"
python3 - "$work/csrs.json" "cliqo-kubelet-cliqo-$identity-" "$work/served.crt" <<'EOF' || fail "no matching CertificateSigningRequest"
import base64, json, sys
items = [c for c in json.load(open(sys.argv[1]))["items"] if c["metadata"]["name"].startswith(sys.argv[2])]
served = open(sys.argv[3]).read().strip()
issued = [c for c in items if base64.b64decode(c["status"].get("certificate", "")).decode().strip() == served]
if not issued: sys.exit("none of %s carries the served certificate" % [c["metadata"]["name"] for c in items])
c = issued[0]
assert c["spec"]["signerName"] == "kubernetes.io/kubelet-serving", c["spec"]
assert sorted(c["spec"]["usages"]) == ["digital signature", "key encipherment", "server auth"], c["spec"]
conds = {x["type"]: x for x in c["status"]["conditions"]}
assert conds["Approved"]["reason"] == "CliqoKubeletServing", conds
assert "Denied" not in conds and "Failed" not in conds, conds
EOF
say "CertificateSigningRequest for kubelet-serving, approved by the agent (reason CliqoKubeletServing)"

# Callers: /healthz needs no certificate; the cluster's client CA, as the API server's own is.
client() { # CN [O] [PKI-dir]
  local cn=$1 o=${2:-} ca=${3:-$pki}
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$work/$cn.key" \
    -subj "${o:+/O=$o}/CN=$cn" -out "$work/$cn.csr" 2>/dev/null
  openssl x509 -req -in "$work/$cn.csr" -CA "$ca/ca.crt" -CAkey "$ca/ca.key" -set_serial "0x$(openssl rand -hex 8)" \
    -days 1 -out "$work/$cn.crt" -extfile <(printf 'extendedKeyUsage=clientAuth\n') 2>/dev/null
}
code() { # CERT-BASENAME|- URL
  if [ "$1" = - ]; then curl -s -o "$work/body" -w '%{http_code}' --cacert "$pki/ca.crt" "$2"; else
    curl -s -o "$work/body" -w '%{http_code}' --cacert "$pki/ca.crt" --cert "$1.crt" --key "$1.key" "$2"; fi
}
base="https://127.0.0.1:$kp"
logs="$base/containerLogs/$ns/target/target"
[ "$(code - "$base/healthz")" = 200 ] && [ "$(cat "$work/body")" = ok ] || fail "/healthz: $(cat "$work/body")"
[ "$(code - "$logs")" = 401 ] || fail "no client certificate: $(cat "$work/body")"
client e2e-kla-stranger system:masters "$E2E_STATE/cluster-1/pki"
[ "$(code "$work/e2e-kla-stranger" "$logs")" = 000 ] || fail "another cluster's CA (system:masters) was not refused in the TLS handshake"
client e2e-kla-nobody
[ "$(code "$work/e2e-kla-nobody" "$logs")" = 403 ] || fail "an identity without nodes/proxy: $(cat "$work/body")"
grep -q 'Forbidden (user=e2e-kla-nobody, verb=get, resource=nodes, subresource=proxy)' "$work/body" ||
  fail "403 body: $(cat "$work/body")"
[ "$(code "$pki/kubelet-client" "$logs")" = 404 ] || fail "the API server's kubelet client: $(cat "$work/body")"
grep -q "pod \"$ns/target\" not found" "$work/body" || fail "404 body: $(cat "$work/body")"
say "401 without a certificate, the handshake refused with another CA's, 403 without nodes/proxy, 404 for the API server's client"

# Through the API server: a node publishing the listener, a pod bound to it.
remove_objects # of an earlier run that failed
kc "$ac" create -f - >/dev/null <<YAML || fail "cannot create node $node"
apiVersion: v1
kind: Node
metadata: {name: $node, labels: {e2e.cliqo.io/kla: agent}}
spec:
  taints: [{key: e2e.cliqo.io/kla, effect: NoSchedule}]
YAML
kc "$ac" patch node "$node" --subresource=status --type=merge -p \
  "{\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"127.0.0.1\"}],\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":$kp}}}}" \
  >/dev/null || fail "cannot publish the listener in the node's status"
fresh_ns "$ac" "$ns"
wait_default_sa "$ac" "$ns"
kc "$ac" -n "$ns" create -f - >/dev/null <<YAML || fail "cannot create the pod"
apiVersion: v1
kind: Pod
metadata: {name: target}
spec:
  nodeName: $node
  tolerations: [{operator: Exists}]
  containers: [{name: target, image: busybox:1.36}]
YAML
# metric NAME: the agent's sample (labels included in NAME, as rendered), 0 when absent.
metric() {
  curl -s --max-time 5 "http://127.0.0.1:$(http_port "$ac")/metrics" >"$work/metrics" || true
  awk -v n="$1" '$1 == n { v = $2 } END { print v + 0 }' "$work/metrics"
}
[ "$(metric cliqo_kubelet_api_serving)" = 1 ] || fail "cliqo_kubelet_api_serving is not 1"
# through_agent WHAT MESSAGE command...: the command fails with MESSAGE (the agent's 404: no virtual kubelet
# relays this pod), not a TLS error, and the agent counted more authorised requests (kubectl exec tries
# a WebSocket, then SPDY).
through_agent() { # WHAT MESSAGE command...
  local what=$1 want=$2 n0 d0 out
  shift 2
  n0=$(metric cliqo_kubelet_api_requests_total)
  d0=$(metric 'cliqo_kubelet_api_denied_total{reason="forbidden"}')
  out=$("$@" 2>&1) && fail "$what succeeded: $out"
  grep -qiE 'x509|certificate|tls' <<<"$out" && fail "$what: a TLS error: $out"
  grep -qF -- "$want" <<<"$out" || fail "$what: $out"
  [ "$(metric cliqo_kubelet_api_requests_total)" -gt "$n0" ] &&
    [ "$(metric 'cliqo_kubelet_api_denied_total{reason="forbidden"}')" = "$d0" ] ||
    fail "$what did not reach the agent's kubelet API ($out): $(grep '^cliqo_kubelet_api' "$work/metrics")"
}
through_agent "kubectl logs" "(NotFound)" kc "$ac" -n "$ns" logs target
through_agent "kubectl exec" "pod \"$ns/target\" not found" kc "$ac" -n "$ns" exec target -- true
say "kubectl logs and exec through the API server reach the agent (TLS verified with the cluster CA, authorised, 404)"

stop_agent "$ac" || fail "the agent did not stop cleanly"
check_logs
trap - EXIT
remove_objects
rm -rf "$work"
pass
