#!/usr/bin/env bash
# The agent's and a peer's rights (deploy/rbac.yaml, deploy/README.md, docs/peering.md), proved with
# `kubectl auth can-i --as` and with real requests made as those identities: the agent manages cliqo's kinds
# and tenant namespaces, but reads Secrets only in "cliqo" and in tenant namespaces where it bound
# cliqo-agent-tenant to itself; it can bind only cliqo's own roles (peering, tenant, virtual kubelet), and
# cluster-wide only the virtual kubelet's node rights, through the one ClusterRoleBinding it may edit. A peer's
# identity acts only in its tenant namespace; a consumer's virtual kubelet only in its tenant namespace (its
# NamespaceMap) and in the namespaces made for it. The kubelet API of the virtual nodes (the agent's and a
# Deployment-mode virtual kubelet's): CSRs approved for the kubelet-serving signer only (a client-certificate request
# stays unapprovable), SubjectAccessReviews, the client CA's ConfigMap and no other.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
AGENT=system:serviceaccount:cliqo:cliqo-agent
ID_X=2f1c7a0e-1111-4a2b-9c3d-0000000000cc
T=cliqo-tenant-x-0a1b2c  # the tenant namespace of peer X
T2=cliqo-tenant-y-0d0e0f # another peer's
CSR_SERVING=e2e-rbac-kla-serving
CSR_CLIENT=e2e-rbac-kla-client
REMOTE=system:serviceaccount:$T:remote-x

cleanup() {
  kc "$C" delete csr "$CSR_SERVING" "$CSR_CLIENT" --ignore-not-found >/dev/null 2>&1 || true
  kc "$C" delete -f "$DEPLOY_DIR/rbac.yaml" -f "$DEPLOY_DIR/serviceaccount.yaml" --ignore-not-found --wait=false \
    >/dev/null 2>&1 || true
  ns_remove "$T" "$T2" cliqo cliqo-gateway
  crds_remove
}
trap cleanup EXIT
cleanup

crds_install
for f in namespace.yaml rbac.yaml serviceaccount.yaml; do kc "$C" apply -f "$DEPLOY_DIR/$f" >/dev/null; done

# can AS yes|no VERB RESOURCE [args...]: what `kubectl auth can-i --as=AS` answers, asked with one
# SubjectAccessReview (can_i, ../lib.sh): a curl request, not a kubectl process, for the 130 checks below.
can() {
  local as=$1 want=$2 got
  shift 2
  got=$(can_i "$C" "$as" "$@") || fail "can-i --as=$as $*: no answer"
  [ "$got" = "$want" ] || fail "can-i --as=$as $*: got '$got', want '$want'"
  # E2E_CANI_CROSSCHECK=1: kubectl must agree (but cannot name a signer, see signer below).
  if [ -n "${E2E_CANI_CROSSCHECK:-}" ] && [[ $2 != signers.* ]]; then
    got=$(kc "$C" auth can-i --as="$as" "$@" 2>/dev/null) || true
    [ "$got" = "$want" ] || fail "kubectl auth can-i --as=$as $*: got '$got', want '$want'"
  fi
}
# signer USER yes|no SIGNER: may USER approve requests for SIGNER (a review with the signer's name, which
# `kubectl auth can-i` cannot pass: the name has a '/')?
signer() { can "$1" "$2" approve "signers.certificates.k8s.io/$3"; }
wait_for 30 "agent RoleBinding in effect" kc "$C" auth can-i --as="$AGENT" get secrets -n cliqo

# 1. The agent.
for r in foreignclusters.discovery.liqo.io searchdomains.discovery.liqo.io clusterconfigs.config.liqo.io \
  namespacenattingtables.virtualkubelet.liqo.io; do
  can "$AGENT" yes create "$r"
  can "$AGENT" yes delete "$r"
done
can "$AGENT" yes update foreignclusters.discovery.liqo.io --subresource=status
for r in peeringrequests.discovery.liqo.io advertisements.sharing.liqo.io networkconfigs.net.liqo.io \
  tunnelendpoints.net.liqo.io namespaceoffloadings.offloading.liqo.io; do
  can "$AGENT" yes list "$r" --all-namespaces
  can "$AGENT" yes create "$r" -n "$T"
done
can "$AGENT" yes create namespaces
can "$AGENT" yes delete namespaces
can "$AGENT" yes patch namespaces
can "$AGENT" yes create rolebindings -n "$T"
can "$AGENT" yes bind clusterroles/cliqo-remote-peering
can "$AGENT" yes bind clusterroles/cliqo-agent-tenant
can "$AGENT" yes get secrets -n cliqo
can "$AGENT" yes create configmaps -n cliqo
can "$AGENT" yes update leases.coordination.k8s.io -n cliqo
can "$AGENT" yes create events -n default
# ... and what it cannot do.
can "$AGENT" no list secrets --all-namespaces
can "$AGENT" no get secrets -n default
can "$AGENT" no get secrets -n kube-system
can "$AGENT" no get secrets -n "$T" # not before it binds cliqo-agent-tenant there
# The gateway's WireGuard key (docs/dataplane.md, section 2): in the gateway's namespace, where the agent can
# neither read a Secret nor start a pod (which could run as the gateway's ServiceAccount); the gateway reads
# that one Secret by name and no Secret of cliqo.
GW=system:serviceaccount:cliqo-gateway:cliqo-gateway
for v in "get secrets/cliqo-wg-key" "list secrets" "create pods" "create deployments.apps" "create serviceaccounts"; do
  # shellcheck disable=SC2086 # verb and resource
  can "$AGENT" no $v -n cliqo-gateway
done
can "$GW" yes get secrets/cliqo-wg-key -n cliqo-gateway
can "$GW" no list secrets -n cliqo-gateway
can "$GW" no get secrets/auth-token -n cliqo
can "$GW" yes patch tunnelendpoints.net.liqo.io --subresource=status -n "$T"
# The broadcaster sums nodes and pods; the virtual kubelets register nodes and drain them (issue 9).
can "$AGENT" yes get nodes
can "$AGENT" yes patch nodes --subresource=status
can "$AGENT" yes list pods --all-namespaces
can "$AGENT" yes delete pods -n default
can "$AGENT" yes patch pods --subresource=status -n default
can "$AGENT" yes update leases.coordination.k8s.io -n kube-node-lease
can "$AGENT" yes bind clusterroles/cliqo-virtual-kubelet-remote
can "$AGENT" yes bind clusterroles/cliqo-virtual-kubelet-tenant
# Deployment mode: only the subjects of the one ClusterRoleBinding cliqo-virtual-kubelet-local.
can "$AGENT" yes update clusterrolebindings/cliqo-virtual-kubelet-local
can "$AGENT" no update clusterrolebindings/cluster-admin
can "$AGENT" no create pods -n cliqo
can "$AGENT" no update pods -n default
can "$AGENT" no create clusterrolebindings
can "$AGENT" no create clusterroles
can "$AGENT" no escalate clusterroles
can "$AGENT" no bind clusterroles/cluster-admin
can "$AGENT" no bind clusterroles/admin
can "$AGENT" no update rolebindings -n "$T"
can "$AGENT" no create roles -n "$T"
can "$AGENT" no create leases.coordination.k8s.io -n default
can "$AGENT" no create serviceaccounts -n default
# (serviceaccounts/token would name a ServiceAccount "token": the TokenRequest API is the subresource)
can "$AGENT" no create serviceaccounts --subresource=token -n cliqo
can "$AGENT" no create serviceaccounts --subresource=token -n "$T"
can "$AGENT" yes create serviceaccounts -n cliqo
can "$AGENT" no impersonate users
# The kubelet API: its serving certificate (kubelet-serving only), reviews, the client CA's ConfigMap and no other.
can "$AGENT" yes create certificatesigningrequests.certificates.k8s.io
can "$AGENT" yes get certificatesigningrequests.certificates.k8s.io
can "$AGENT" yes update certificatesigningrequests.certificates.k8s.io --subresource=approval
signer "$AGENT" yes kubernetes.io/kubelet-serving
signer "$AGENT" no kubernetes.io/kube-apiserver-client
signer "$AGENT" no kubernetes.io/kube-apiserver-client-kubelet
signer "$AGENT" no "kubernetes.io/*"
can "$AGENT" no list certificatesigningrequests.certificates.k8s.io
can "$AGENT" no delete certificatesigningrequests.certificates.k8s.io
can "$AGENT" no update certificatesigningrequests.certificates.k8s.io --subresource=status
can "$AGENT" yes create subjectaccessreviews.authorization.k8s.io
can "$AGENT" yes get configmaps/extension-apiserver-authentication -n kube-system
can "$AGENT" yes watch configmaps/extension-apiserver-authentication -n kube-system
can "$AGENT" no get configmaps/kube-root-ca.crt -n kube-system
can "$AGENT" no list configmaps -n kube-system
can "$AGENT" no update configmaps/extension-apiserver-authentication -n kube-system
can "$AGENT" no update customresourcedefinitions.apiextensions.k8s.io
say "agent: manages cliqo's kinds, tenant namespaces, virtual nodes; no cluster-wide Secrets, no pod writes, no escalation"

# 2. The agent sets up a tenant namespace as peering does, acting as itself.
ag() { kc "$C" --as="$AGENT" "$@"; }
ag create namespace "$T" >/dev/null
ag label namespace "$T" "discovery.liqo.io/cluster-id=$ID_X" discovery.liqo.io/tenant-namespace=true >/dev/null
ag -n "$T" create rolebinding cliqo-agent-tenant --clusterrole=cliqo-agent-tenant \
  --serviceaccount=cliqo:cliqo-agent >/dev/null
wait_for 30 "agent's tenant binding in effect" ag -n "$T" get secrets
can "$AGENT" yes get secrets -n "$T"
can "$AGENT" yes create serviceaccounts -n "$T"
ag -n "$T" create serviceaccount remote-x >/dev/null
ag -n "$T" create rolebinding cliqo-remote-peering --clusterrole=cliqo-remote-peering \
  --serviceaccount="$T:remote-x" >/dev/null
expect_reject "agent binds cluster-admin" "forbidden" \
  ag -n "$T" create rolebinding escalate --clusterrole=cluster-admin --serviceaccount="$T:remote-x"
expect_reject "agent binds edit" "forbidden" \
  ag -n "$T" create rolebinding escalate --clusterrole=edit --serviceaccount="$T:remote-x"
expect_reject "agent creates a ClusterRoleBinding" "forbidden" \
  ag create clusterrolebinding escalate --clusterrole=cliqo-remote-peering --serviceaccount="$T:remote-x"
expect_reject "agent reads Secrets in kube-system" "forbidden" ag -n kube-system get secrets
expect_reject "agent points the shared ClusterRoleBinding at cluster-admin" "" \
  ag patch clusterrolebinding cliqo-virtual-kubelet-local --type=merge -p '{"roleRef":{"name":"cluster-admin"}}'
ag patch clusterrolebinding cliqo-virtual-kubelet-local --type=merge \
  -p "{\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"virtual-kubelet-x\",\"namespace\":\"$T\"}]}" >/dev/null ||
  fail "the agent cannot add a virtual kubelet to the shared ClusterRoleBinding"
can "system:serviceaccount:$T:virtual-kubelet-x" yes patch nodes
can "system:serviceaccount:$T:virtual-kubelet-x" yes patch pods --subresource=status -n default
can "system:serviceaccount:$T:virtual-kubelet-x" yes delete pods -n default
can "system:serviceaccount:$T:virtual-kubelet-x" yes create events -n default
can "system:serviceaccount:$T:virtual-kubelet-x" yes list namespaceoffloadings.offloading.liqo.io --all-namespaces
can "system:serviceaccount:$T:virtual-kubelet-x" yes patch namespaceoffloadings.offloading.liqo.io --subresource=status -n default
can "system:serviceaccount:$T:virtual-kubelet-x" no patch namespaceoffloadings.offloading.liqo.io -n default
can "system:serviceaccount:$T:virtual-kubelet-x" no get secrets -n "$T"
can "system:serviceaccount:$T:virtual-kubelet-x" no create pods -n default
can "system:serviceaccount:$T:virtual-kubelet-x" no update pods -n default
# its node's kubelet API, as the agent's
can "system:serviceaccount:$T:virtual-kubelet-x" yes create certificatesigningrequests.certificates.k8s.io
signer "system:serviceaccount:$T:virtual-kubelet-x" yes kubernetes.io/kubelet-serving
signer "system:serviceaccount:$T:virtual-kubelet-x" no kubernetes.io/kube-apiserver-client
can "system:serviceaccount:$T:virtual-kubelet-x" yes create subjectaccessreviews.authorization.k8s.io
can "system:serviceaccount:$T:virtual-kubelet-x" yes get configmaps/extension-apiserver-authentication -n kube-system
can "system:serviceaccount:$T:virtual-kubelet-x" no get configmaps/kube-root-ca.crt -n kube-system
ag patch clusterrolebinding cliqo-virtual-kubelet-local --type=merge -p '{"subjects":null}' >/dev/null
say "agent: binds cliqo-agent-tenant and cliqo-remote-peering in a tenant namespace; cluster-admin and edit refused"

# 3. The peer's identity, confined to its tenant namespace.
wait_for 30 "peer binding in effect" kc "$C" auth can-i --as="$REMOTE" create peeringrequests.discovery.liqo.io -n "$T"
for v in create get list watch update patch delete; do
  can "$REMOTE" yes "$v" peeringrequests.discovery.liqo.io -n "$T"
  can "$REMOTE" yes "$v" secrets -n "$T"
  can "$REMOTE" yes "$v" advertisements.sharing.liqo.io -n "$T"
  can "$REMOTE" yes "$v" networkconfigs.net.liqo.io -n "$T"
done
# The consumer decides on an Advertisement and a NetworkConfig's receiver remaps: read-only for the peer.
can "$REMOTE" yes get advertisements.sharing.liqo.io --subresource=status -n "$T"
can "$REMOTE" no update advertisements.sharing.liqo.io --subresource=status -n "$T"
can "$REMOTE" no patch advertisements.sharing.liqo.io --subresource=status -n "$T"
can "$REMOTE" no update networkconfigs.net.liqo.io --subresource=status -n "$T"
can "$REMOTE" no create namespacemaps.virtualkubelet.liqo.io -n "$T"
can "$REMOTE" yes get peeringrequests.discovery.liqo.io --subresource=status -n "$T"
can "$REMOTE" no update peeringrequests.discovery.liqo.io --subresource=status -n "$T" # cannot accept itself
can "$REMOTE" no get secrets -n cliqo
can "$REMOTE" no get secrets -n default
can "$REMOTE" no list secrets --all-namespaces
can "$REMOTE" no list nodes
can "$REMOTE" no create namespaces
can "$REMOTE" no create foreignclusters.discovery.liqo.io
can "$REMOTE" no create clusterconfigs.config.liqo.io
can "$REMOTE" no create namespacenattingtables.virtualkubelet.liqo.io
can "$REMOTE" no create clusterroles
can "$REMOTE" no create peeringrequests.discovery.liqo.io -n "$T2"
can "$REMOTE" no create peeringrequests.discovery.liqo.io -n default
can "$REMOTE" no create pods -n "$T"
can "$REMOTE" no create rolebindings -n "$T"
can "$REMOTE" no get serviceaccounts -n "$T"
# Real requests as the peer.
peer() { kc "$C" --as="$REMOTE" "$@"; }
peer -n "$T" create secret generic "pr-$ID_X" --from-literal=kubeconfig=e30= >/dev/null
peer -n "$T" create -f - >/dev/null <<YAML
apiVersion: discovery.liqo.io/v1alpha1
kind: PeeringRequest
metadata: {name: $ID_X}
spec:
  clusterIdentity: {clusterID: $ID_X, clusterName: x}
  namespace: cliqo-tenant-home-0f0f0f
  kubeConfigRef: {name: pr-$ID_X, namespace: $T}
YAML
[ "$(peer -n "$T" get peeringrequest "$ID_X" -o jsonpath='{.spec.clusterIdentity.clusterID}')" = "$ID_X" ] ||
  fail "peer cannot read its PeeringRequest"
expect_reject "peer accepts its own PeeringRequest" "forbidden" \
  peer -n "$T" patch peeringrequest "$ID_X" --subresource=status --type=merge -p '{"status":{"phase":"Accepted"}}'
kc "$C" create namespace "$T2" >/dev/null
expect_reject "peer writes into another tenant namespace" "forbidden" \
  peer -n "$T2" create secret generic sneaky --from-literal=a=b
expect_reject "peer reads the agent's Secrets" "forbidden" peer -n cliqo get secrets
expect_reject "peer lists nodes" "forbidden" peer get nodes
expect_reject "peer creates a ForeignCluster" "forbidden" peer create -f - <<YAML
apiVersion: discovery.liqo.io/v1alpha1
kind: ForeignCluster
metadata: {name: sneaky}
spec: {clusterIdentity: {clusterID: $ID_X}}
YAML
peer -n "$T" delete peeringrequest "$ID_X" >/dev/null
say "peer: PeeringRequests, Secrets, Advertisements (not their status) and NetworkConfigs in its tenant namespace only"

# 4. A consumer's virtual kubelet (docs/advertisement.md): its NamespaceMap in its tenant namespace, and pods &
# co only in a namespace made for it (where the agent binds cliqo-virtual-kubelet-remote).
VK=system:serviceaccount:$T:vk-x
OFF=e2e-rbac-offload
ag -n "$T" create serviceaccount vk-x >/dev/null
ag -n "$T" create rolebinding cliqo-virtual-kubelet-tenant --clusterrole=cliqo-virtual-kubelet-tenant \
  --serviceaccount="$T:vk-x" >/dev/null
ag create namespace "$OFF" >/dev/null
ag -n "$OFF" create rolebinding cliqo-virtual-kubelet --clusterrole=cliqo-virtual-kubelet-remote \
  --serviceaccount="$T:vk-x" >/dev/null
wait_for 30 "virtual kubelet bindings in effect" kc "$C" auth can-i --as="$VK" create pods -n "$OFF"
for v in create get list watch update patch delete; do
  can "$VK" yes "$v" namespacemaps.virtualkubelet.liqo.io -n "$T"
  can "$VK" yes "$v" pods -n "$OFF"
  can "$VK" yes "$v" services -n "$OFF"
  can "$VK" yes "$v" configmaps -n "$OFF"
  can "$VK" yes "$v" secrets -n "$OFF"
  can "$VK" yes "$v" endpointslices.discovery.k8s.io -n "$OFF"
done
can "$VK" yes update pods --subresource=status -n "$OFF"
can "$VK" yes get pods --subresource=log -n "$OFF"
can "$VK" yes create pods --subresource=exec -n "$OFF"
can "$VK" no update namespacemaps.virtualkubelet.liqo.io --subresource=status -n "$T"
can "$VK" no create pods -n "$T"
can "$VK" no create pods -n default
can "$VK" no create namespaces
can "$VK" no delete namespaces
can "$VK" no list nodes
can "$VK" no get secrets -n "$T"
can "$VK" no create rolebindings -n "$OFF"
ns_remove "$OFF"
say "virtual kubelet: its NamespaceMap, and namespaced rights only where a namespace was made for it"

# 5. Admission (docs/offloading.md): the agent keeps its two webhook configurations, by name; creating is the one
# right RBAC cannot restrict by name (deploy/README.md).
can "$AGENT" yes get mutatingwebhookconfigurations.admissionregistration.k8s.io/cliqo-pod-offloading
can "$AGENT" yes patch mutatingwebhookconfigurations.admissionregistration.k8s.io/cliqo-pod-offloading
can "$AGENT" yes watch mutatingwebhookconfigurations.admissionregistration.k8s.io/cliqo-pod-offloading
can "$AGENT" yes update validatingwebhookconfigurations.admissionregistration.k8s.io/cliqo-offer-enforcement
can "$AGENT" no patch mutatingwebhookconfigurations.admissionregistration.k8s.io/other
can "$AGENT" no delete validatingwebhookconfigurations.admissionregistration.k8s.io/other
can "$AGENT" no list mutatingwebhookconfigurations.admissionregistration.k8s.io
can "$AGENT" yes create mutatingwebhookconfigurations.admissionregistration.k8s.io
can "$AGENT" yes update namespaceoffloadings.offloading.liqo.io --subresource=finalizers -n "$T"
can "$AGENT" yes patch namespaceoffloadings.offloading.liqo.io --subresource=status -n "$T"
# Real requests, as the agent makes them: a list/watch restricted to the name, server-side apply (which creates).
webhook_config() { # KIND NAME
  cat <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: $1
metadata: {name: $2, labels: {app.kubernetes.io/part-of: cliqo}}
webhooks: []
YAML
}
ag get mutatingwebhookconfigurations --field-selector metadata.name=cliqo-pod-offloading >/dev/null ||
  fail "the agent cannot list its MutatingWebhookConfiguration by name"
expect_reject "agent lists every MutatingWebhookConfiguration" "forbidden" ag get mutatingwebhookconfigurations
webhook_config MutatingWebhookConfiguration cliqo-pod-offloading |
  ag apply --server-side --field-manager=cliqo-agent-admission -f - >/dev/null || fail "the agent cannot apply its configuration"
webhook_config ValidatingWebhookConfiguration cliqo-offer-enforcement |
  ag apply --server-side --field-manager=cliqo-agent-admission -f - >/dev/null || fail "the agent cannot apply its configuration"
ag delete mutatingwebhookconfiguration cliqo-pod-offloading >/dev/null || fail "the agent cannot delete its configuration"
ag delete validatingwebhookconfiguration cliqo-offer-enforcement >/dev/null || fail "the agent cannot delete its configuration"
webhook_config MutatingWebhookConfiguration e2e-other | kc "$C" create -f - >/dev/null
expect_reject "agent changes another webhook configuration" "forbidden" \
  ag patch mutatingwebhookconfiguration e2e-other --type=merge -p '{"metadata":{"labels":{"x":"y"}}}'
expect_reject "agent deletes another webhook configuration" "forbidden" ag delete mutatingwebhookconfiguration e2e-other
kc "$C" delete mutatingwebhookconfiguration e2e-other >/dev/null
say "admission: its two webhook configurations by name (list, watch, apply, delete), no other one changed"

# 6. The kubelet API's rights, used for real by the agent's identity.
csr() { # NAME SIGNER USAGE... (a request for a new key, subject as a node's)
  local name=$1 signer=$2 req
  shift 2
  req=$(openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout /dev/null \
    -subj "/O=system:nodes/CN=system:node:cliqo-e2e" -addext "subjectAltName=IP:127.0.0.1" 2>/dev/null | base64 -w0)
  printf 'apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata: {name: %s}\n' "$name"
  printf 'spec:\n  request: %s\n  signerName: %s\n  usages: [%s]\n' "$req" "$signer" "$(IFS=,; echo "$*")"
}
csr "$CSR_SERVING" kubernetes.io/kubelet-serving "digital signature" "key encipherment" "server auth" | ag create -f - >/dev/null ||
  fail "the agent cannot create a kubelet-serving CertificateSigningRequest"
ag certificate approve "$CSR_SERVING" >/dev/null || fail "the agent cannot approve its kubelet-serving request"
[ "$(ag get csr "$CSR_SERVING" -o jsonpath='{.status.conditions[0].type}')" = Approved ] || fail "not approved"
csr "$CSR_CLIENT" kubernetes.io/kube-apiserver-client "digital signature" "key encipherment" "client auth" | ag create -f - >/dev/null ||
  fail "the agent cannot create a CertificateSigningRequest"
expect_reject "agent approves a client certificate" "forbidden" ag certificate approve "$CSR_CLIENT"
[ -z "$(jpath "$C" '{.status.conditions}' csr "$CSR_CLIENT")" ] || fail "the client request has a condition"
expect_reject "agent lists CertificateSigningRequests" "forbidden" ag get csr
ca=$(ag -n kube-system get configmap extension-apiserver-authentication -o jsonpath='{.data.client-ca-file}')
grep_q 'BEGIN CERTIFICATE' <<<"$ca" || fail "the agent cannot read the client CA"
# as the kubelet API follows it: a list and a watch with the name as field selector
[ "$(ag -n kube-system get configmaps --field-selector metadata.name=extension-apiserver-authentication -o name)" = \
  configmap/extension-apiserver-authentication ] || fail "the agent cannot list the client CA's ConfigMap by name"
timeout 5 "$KUBECTL" --kubeconfig "$E2E_STATE/$C/kubeconfig" --as="$AGENT" -n kube-system get configmaps -w \
  --field-selector metadata.name=extension-apiserver-authentication -o name >"$E2E_STATE/rbac-watch.out" 2>&1 || true
grep_q '^configmap/extension-apiserver-authentication$' <"$E2E_STATE/rbac-watch.out" ||
  fail "the agent cannot watch the client CA's ConfigMap: $(cat "$E2E_STATE/rbac-watch.out")"
rm -f "$E2E_STATE/rbac-watch.out"
expect_reject "agent lists kube-system's ConfigMaps" "forbidden" ag -n kube-system get configmaps
expect_reject "agent reads another ConfigMap of kube-system" "forbidden" ag -n kube-system get configmap kube-root-ca.crt
review=$(ag create -o jsonpath='{.status.allowed}' -f - <<'YAML'
apiVersion: authorization.k8s.io/v1
kind: SubjectAccessReview
spec:
  user: e2e-nobody
  resourceAttributes: {resource: nodes, subresource: proxy, verb: get, name: liqo-x}
YAML
) || fail "the agent cannot create a SubjectAccessReview"
[ "$review" = false ] || fail "SubjectAccessReview for e2e-nobody: allowed=$review"
say "kubelet API: kubelet-serving requests approved, client ones not; reviews; the client CA's ConfigMap only"

trap - EXIT
cleanup
pass
