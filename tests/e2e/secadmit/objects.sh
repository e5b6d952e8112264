#!/usr/bin/env bash
# Services, EndpointSlices and token Secrets written by a consumer's credentials (issue 17 points 10 and
# 2, docs/security.md "Services and EndpointSlices"). As A's virtual kubelet in A's namespace on B
# (dry-run): Services with externalIPs, NodePort, LoadBalancer, ExternalName and EndpointSlices pointing at
# B's API server or naming another namespace are refused; so is a service-account-token Secret, there and,
# with A's peering credential (the kubeconfig A stores), in A's tenant namespace on B. A normal Service of
# A's is still reflected (a NodePort one as ClusterIP), and B's endpointslice controller still writes the
# slices of the copy.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
NS=sec-objects
RNS=
KCFG=
cleanup() {
  [ -z "$KCFG" ] || rm -f "$KCFG"
  unoffload_ns "$NS"
}
trap 'rc=$?; cleanup >/dev/null 2>&1 || true; (exit $rc); sec_on_exit' EXIT # keeps the test's exit status
ensure_agents
ids
wait_shared 60

say "offload $NS from $A"
offload_ns "$NS"
VK=$(vk_user "$A_ID")
TNS=$(tenant_on_b "$A_ID")

# refused AS WANT JSON: the dry-run creation in RNS as user AS (kubectl args) fails naming WANT.
refused() {
  local who=$1 want=$2 body=$3 out
  out=$(kc "$B" "$who" create --dry-run=server -f - 2>&1 <<<"$body") && fail "admitted: $body"
  grep -qF "$want" <<<"$out" || fail "refused without saying '$want': $out"
}
svc() { printf '{"apiVersion":"v1","kind":"Service","metadata":{"name":"sec-svc","namespace":"%s"},"spec":{%s"ports":[{"port":80}]}}' "$RNS" "$1"; }
slice() {
  printf '{"apiVersion":"discovery.k8s.io/v1beta1","kind":"EndpointSlice","metadata":{"name":"sec-slice","namespace":"%s","labels":{"kubernetes.io/service-name":"sec-svc"}},"addressType":"IPv4","ports":[{"port":443}],"endpoints":[{"addresses":["%s"]%s}]}' \
    "$RNS" "$1" "${2:-}"
}

say "Services as $A's virtual kubelet: externalIPs, NodePort, LoadBalancer, ExternalName refused"
out=$(svc '' | kc "$B" --as="$VK" create --dry-run=server -f - 2>&1) || fail "a ClusterIP Service was refused: $out"
refused --as="$VK" "spec.externalIPs" "$(svc '"externalIPs":["192.0.2.10"],')"
refused --as="$VK" "spec.type NodePort" "$(svc '"type":"NodePort",')"
refused --as="$VK" "spec.type LoadBalancer" "$(svc '"type":"LoadBalancer",')"
refused --as="$VK" "spec.type ExternalName" \
  "$(printf '{"apiVersion":"v1","kind":"Service","metadata":{"name":"sec-ext","namespace":"%s"},"spec":{"type":"ExternalName","externalName":"kubernetes.default.svc.cluster.local"}}' "$RNS")"

say "EndpointSlices as $A's virtual kubelet: B's API server, B's own pods, another namespace refused"
SVCIP=$(jpath "$B" '{.spec.clusterIP}' service kubernetes -n default)
B_POD=$(jget "$B" '{.spec.liqonetConfig.podCIDR}' clusterconfig configuration)
B_POD=${B_POD%/*}
B_POD=${B_POD%.*}.$((${B_POD##*.} + 7)) # an address of B's own pod CIDR
[ -n "$SVCIP" ] && [ "$B_POD" != .7 ] || fail "B's service IP or pod CIDR unknown"
refused --as="$VK" "addresses[0] $SVCIP is neither" "$(slice "$SVCIP")"
refused --as="$VK" "addresses[0] $B_POD is neither" "$(slice "$B_POD")"
MAPPED=$(jget "$B" '{.status.podCIDRNAT}' networkconfig -n "$TNS" "net-config-$A_ID")
OWN=$(jget "$B" '{.spec.podCIDR}' networkconfig -n "$TNS" "net-config-$A_ID")
[ -n "$MAPPED" ] && [ "$MAPPED" != None ] || MAPPED=$OWN
[ -n "$MAPPED" ] || fail "no pod CIDR of $A known on $B"
INSIDE=${MAPPED%/*}
INSIDE=${INSIDE%.*}.$((${INSIDE##*.} + 5)) # the 5th address of the (IPv4) block
out=$(slice "$INSIDE" | kc "$B" --as="$VK" create --dry-run=server -f - 2>&1) ||
  fail "a slice inside $A's pod CIDR as $B sees it ($MAPPED) was refused: $out"
refused --as="$VK" 'targetRef.namespace "kube-system"' \
  "$(slice "$INSIDE" ',"targetRef":{"kind":"Pod","namespace":"kube-system","name":"x"}')"

say "service-account-token Secrets: refused as $A's virtual kubelet and with $A's peering credential"
token() { printf '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"sec-token","namespace":"%s","annotations":{"kubernetes.io/service-account.name":"%s"}},"type":"kubernetes.io/service-account-token"}' "$1" "$2"; }
refused --as="$VK" "kubernetes.io/service-account-token" "$(token "$RNS" default)"
KCFG=$(mktemp)
jpath "$A" '{.data.kubeconfig}' secret -n cliqo "remote-identity-$B_ID" | base64 -d >"$KCFG"
[ -s "$KCFG" ] || fail "no peering kubeconfig of $A for $B"
peer() { "$KUBECTL" --kubeconfig "$KCFG" --request-timeout=20s "$@"; }
for sa in "vk-$A_ID" default; do
  out=$(token "$TNS" "$sa" | peer create --dry-run=server -f - 2>&1) && fail "token Secret for $sa admitted"
  grep -qF "kubernetes.io/service-account-token: a peer's credential" <<<"$out" ||
    fail "token Secret for $sa refused without our reason: $out"
done
out=$(printf '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"sec-opaque","namespace":"%s"},"type":"Opaque"}' "$TNS" |
  peer create --dry-run=server -f - 2>&1) || fail "an Opaque Secret of the peering credential was refused: $out"

say "a normal Service of $A is reflected (NodePort as ClusterIP); B's endpointslice controller writes its slices"
kc "$A" apply -f - >/dev/null <<EOF || fail "cannot create the Services on $A"
{"apiVersion":"v1","kind":"List","items":[
 {"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"$NS"},
  "spec":{"selector":{"app":"web"},"ports":[{"port":80}]}},
 {"apiVersion":"v1","kind":"Service","metadata":{"name":"web-np","namespace":"$NS"},
  "spec":{"type":"NodePort","selector":{"app":"web"},"ports":[{"port":80}]}}]}
EOF
wait_for 60 "copy of web on $B" kc "$B" get service -n "$RNS" web
wait_for 60 "copy of web-np on $B" kc "$B" get service -n "$RNS" web-np
[ "$(jget "$B" '{.spec.type}' service -n "$RNS" web-np)" = ClusterIP ] || fail "the NodePort Service was copied as $(jget "$B" '{.spec.type}' service -n "$RNS" web-np)"
wait_for 60 "B's own slice of web" eval "[ -n \"\$(kc \"$B\" get endpointslices -n \"$RNS\" -l kubernetes.io/service-name=web,endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io -o name)\" ]"
[ -z "$(jpath "$B" '{.items[*].spec.externalIPs}' services -n "$RNS")" ] || fail "a Service with externalIPs exists on $B"
pass "peer-written Services, EndpointSlices and token Secrets checked on $B; reflection unaffected"
