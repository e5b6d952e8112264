#!/usr/bin/env bash
# The credentials of the protocol, proven with kubectl (auth can-i and real requests):
#  - the virtual kubelet's credential on P1 (Secret vk-kubeconfig-secret-<P1> on A) has namespaced rights
#    only: its NamespaceMap in its tenant namespace, and pods & co only in namespaces P1 created for A
#    through that map; never cluster-wide, never namespaces;
#  - P1's NamespaceMap controller refuses reserved names (kube-system, default, tenant namespaces) and a
#    namespace that exists and is not A's, creates the others labelled with A's ID, binds the virtual
#    kubelet's role there, and deletes a namespace no longer asked for;
#  - the provider's credential on A (what A handed P1 with its PeeringRequest) may write the Advertisement but
#    not its status: a provider cannot accept its own Advertisement.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
T=$(mktemp -d)
SUFFIX=$(head -c4 /dev/urandom | od -An -tx1 | tr -d ' \n')
cleanup() {
  local rc=$?
  [ -n "${RNS:-}" ] && kc "$P1" patch namespacemap -n "$RNS" "$A_ID" --type=merge -p '{"spec":{"desiredMapping":null}}' >/dev/null 2>&1
  [ -n "${TAKEN:-}" ] && kc "$P1" delete namespace "$TAKEN" --wait=false >/dev/null 2>&1
  rm -rf "$T"
  ensure_agents >/dev/null 2>&1 || true
  (exit "$rc")
  adv_on_exit
}
trap cleanup EXIT
ensure_agents
ids
wait_all_shared
# Names of A's DefaultName shape (<namespace>-<...>-<hash of A's ID>): the only ones a provider lets a
# consumer claim by default (docs/security.md, "Namespaces").
HASH=$(printf %s "$A_ID" | sha256sum | cut -c1-6)
OFF=app-e2e$SUFFIX-$HASH
TAKEN=taken-e2e$SUFFIX-$HASH
TNS=$(tenant_of "$P1")
RNS=$(jget "$A" '{.status.tenantNamespace.remote}' foreigncluster "$P1")

jpath "$A" '{.data.kubeconfig}' secret -n "$TNS" "vk-kubeconfig-secret-$P1_ID" | base64 -d >"$T/vk" ||
  fail "no virtual kubelet credential on $A"
vk() { "$KUBECTL" --kubeconfig "$T/vk" --request-timeout=20s "$@"; }
can() { [ "$(vk auth can-i "$@" 2>/dev/null)" = yes ]; }
must() { can "$@" || fail "the virtual kubelet's credential cannot: $*"; }
mustnt() { if can "$@"; then fail "the virtual kubelet's credential can: $*"; fi; }

say "the virtual kubelet's identity on $P1: its NamespaceMap, nothing else"
[ "$(vk config view --minify -o jsonpath='{.contexts[0].context.namespace}')" = "$RNS" ] ||
  fail "the credential's namespace is not A's tenant namespace on $P1"
vk get namespacemap -n "$RNS" "$A_ID" >/dev/null || fail "it cannot read its NamespaceMap"
must update namespacemaps -n "$RNS"
mustnt update namespacemaps --subresource=status -n "$RNS"
mustnt create namespaces
mustnt list nodes
mustnt create clusterroles
mustnt create pods -n "$RNS"
mustnt create pods -n default
mustnt get secrets -n kube-system
mustnt list secrets -n cliqo
mustnt list peeringrequests -n "$RNS"
mustnt '*' '*' --all-namespaces
mustnt impersonate users

say "it asks for namespaces: reserved names and foreign namespaces refused"
# The test plays A's virtual kubelet with its credential: A's agent is stopped meanwhile, since its own
# virtual kubelet would take entries it did not ask for back out of the map.
stop_agent "$A"
kc "$P1" create namespace "$TAKEN" >/dev/null
vk patch namespacemap -n "$RNS" "$A_ID" --type=merge -p "{\"spec\":{\"desiredMapping\":{
  \"app\":\"$OFF\",\"sys\":\"kube-system\",\"def\":\"default\",\"ten\":\"cliqo-tenant-x-abcdef\",
  \"agent\":\"cliqo\",\"taken\":\"$TAKEN\"}}}" >/dev/null || fail "it cannot write its NamespaceMap"
entry() { vk get namespacemap -n "$RNS" "$A_ID" -o "jsonpath={.status.currentMapping.$1.phase}/{.status.currentMapping.$1.reason}"; }
remote_of() { vk get namespacemap -n "$RNS" "$A_ID" -o "jsonpath={.status.currentMapping.$1.remoteNamespace}"; }
wait_for 30 "the entry for $OFF Accepted (now: $(entry app) $(remote_of app))" eval '[ "$(entry app)" = Accepted/ ] && [ "$(remote_of app)" = "$OFF" ]'
for e in sys def ten agent; do
  wait_for 10 "entry $e refused as reserved (now: $(entry $e))" eval "[ \"\$(entry $e)\" = Refused/ReservedName ]"
done
wait_for 10 "entry taken refused as AlreadyExists (now: $(entry taken))" eval '[ "$(entry taken)" = Refused/AlreadyExists ]'
[ "$(jget "$P1" '{.metadata.labels.virtualkubelet\.liqo\.io/origin}' namespace "$OFF")" = "$A_ID" ] ||
  fail "$OFF is not labelled with A's ID"
[ "$(jget "$P1" '{.roleRef.name}' rolebinding -n "$OFF" cliqo-virtual-kubelet)" = cliqo-virtual-kubelet-remote ] ||
  fail "the virtual kubelet's role is not bound in $OFF"
[ -z "$(jget "$P1" '{.metadata.labels.virtualkubelet\.liqo\.io/origin}' namespace "$TAKEN")" ] ||
  fail "the existing namespace $TAKEN was taken over"

say "namespaced rights in $OFF only"
for v in create get list watch delete; do must "$v" pods -n "$OFF"; done
must get pods --subresource=log -n "$OFF"
must create pods --subresource=exec -n "$OFF"
must create services -n "$OFF"
must create configmaps -n "$OFF"
must create secrets -n "$OFF"
must create endpointslices.discovery.k8s.io -n "$OFF"
mustnt delete namespaces "$OFF"
mustnt create pods -n "$TAKEN"
mustnt create pods -n kube-system
wait_default_sa "$P1" "$OFF" # (made by $P1's NamespaceMap controller a moment ago)
vk run -n "$OFF" probe --image=busybox --restart=Never >/dev/null || fail "it cannot create a pod in $OFF"
if vk run -n "$TAKEN" probe --image=busybox --restart=Never >/dev/null 2>&1; then fail "it created a pod in $TAKEN"; fi

say "an entry removed: its namespace is deleted"
vk patch namespacemap -n "$RNS" "$A_ID" --type=merge -p '{"spec":{"desiredMapping":{"app":null}}}' >/dev/null
# Its deletion asked for is what the controller does; the controller-manager then takes 10-15 s to empty it.
gone_or_going() { ! kc "$P1" get namespace "$OFF" >/dev/null 2>&1 || [ -n "$(jget "$P1" '{.metadata.deletionTimestamp}' namespace "$OFF")" ]; }
wait_for 60 "$OFF deleted" gone_or_going
wait_for 20 "the removed entry out of the status (now: $(entry app))" eval '[ -z "$(entry app | tr -d /)" ]'
vk patch namespacemap -n "$RNS" "$A_ID" --type=merge -p '{"spec":{"desiredMapping":null}}' >/dev/null
ensure_agents

say "the provider's credential on $A cannot accept its own Advertisement"
jpath "$P1" '{.data.kubeconfig}' secret -n "$RNS" "pr-$A_ID" | base64 -d >"$T/pr" ||
  fail "no credential of $P1 on $A"
pr() { "$KUBECTL" --kubeconfig "$T/pr" --request-timeout=20s "$@"; }
[ "$(pr auth can-i patch advertisements -n "$TNS")" = yes ] || fail "the provider cannot write its Advertisement"
[ "$(pr auth can-i patch advertisements --subresource=status -n "$TNS" 2>/dev/null)" = no ] ||
  fail "the provider may write its Advertisement's status"
[ "$(pr auth can-i patch networkconfigs --subresource=status -n "$TNS" 2>/dev/null)" = no ] ||
  fail "the provider may write its NetworkConfig's status (the remapping is A's decision)"
out=$(pr patch advertisement -n "$TNS" "$(adv_of "$P1")" --subresource=status --type=merge \
  -p '{"status":{"advertisementStatus":"Accepted"}}' 2>&1) && fail "the provider wrote its Advertisement's status"
grep -qi forbidden <<<"$out" || fail "expected Forbidden, got: $out"
pass "virtual kubelet confined to its NamespaceMap and the namespaces made for it; provider cannot accept itself"
