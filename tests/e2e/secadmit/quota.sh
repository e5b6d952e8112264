#!/usr/bin/env bash
# What Kubernetes itself holds a peer to behind the webhooks (issue 17 points 9 and 12, docs/security.md):
#  - the namespace B makes for A has the LimitRange cliqo-defaults and the ResourceQuota cliqo-offer (B's offer to A,
#    object counts, no NodePort or LoadBalancer Service), and a pod A offloads without requests runs on B with the
#    default requests;
#  - A's tenant namespace on B has the ResourceQuota cliqo-tenant-objects: Secrets created with A's peering
#    credential (the kubeconfig A keeps) beyond its count are refused by the API server;
#  - NamespaceMaps created as A's virtual kubelet beyond the count the webhook allows in a tenant namespace are
#    refused, one by one and in a burst;
#  - B's re-issuing of A's virtual-kubelet credential at every refresh (15 s here) does not charge the quota: its
#    ServiceAccount count stays the real one (a blind create of an existing name is charged before it fails as
#    AlreadyExists, and kube-controller-manager takes the charge back only at its next full resync).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
NS=sec-quota
RNS=
TNS=
T=$(mktemp -d)
cleanup() {
  if [ -n "$TNS" ]; then
    kc "$B" delete secrets,namespacemaps -n "$TNS" -l e2e-quota=1 --wait=false >/dev/null 2>&1
  fi
  unoffload_ns "$NS"
  rm -rf "$T"
}
trap 'rc=$?; cleanup >/dev/null 2>&1 || true; (exit $rc); sec_on_exit' EXIT # keeps the test's exit status
ensure_agents
ids
wait_shared 60
TNS=$(tenant_on_b "$A_ID")
[ -n "$TNS" ] || fail "no tenant namespace of $A on $B"
t0=$(date +%s)

say "offload $NS from $A: B's namespace has the default requests and the offer as a quota"
offload_ns "$NS"
wait_for 30 "LimitRange cliqo-defaults in $RNS" kc "$B" get limitrange -n "$RNS" cliqo-defaults
[ "$(jget "$B" '{.spec.limits[0].type} {.spec.limits[0].defaultRequest.cpu} {.spec.limits[0].defaultRequest.memory}' \
  limitrange -n "$RNS" cliqo-defaults)" = "Container 100m 128Mi" ] ||
  fail "LimitRange cliqo-defaults: $(kget "$B" limitrange -n "$RNS" cliqo-defaults)"
offer=$(kget "$B" foreignclusters | jq -cS --arg id "$A_ID" \
  '.items[] | select(.spec.clusterIdentity.clusterID == $id) | .status.advertisement.sent.resources')
[ -n "$offer" ] && [ "$offer" != null ] || fail "no offer of $B to $A recorded"
hard() { kget "$B" resourcequota -n "$RNS" cliqo-offer | jq -cS .spec.hard; }
wait_for 30 "ResourceQuota cliqo-offer in $RNS" kc "$B" get resourcequota -n "$RNS" cliqo-offer
# Same amounts, compared by value (the offer as sent, the quota as the API server keeps it).
to_bytes() { numfmt --from=iec-i --suffix= "$1" 2>/dev/null || numfmt --from=si "$1"; }
cpu_m() { case $1 in *m) echo "${1%m}" ;; *) echo "$(($1 * 1000))" ;; esac; }
h=$(hard)
[ "$(cpu_m "$(jq -r '."requests.cpu"' <<<"$h")")" = "$(cpu_m "$(jq -r .cpu <<<"$offer")")" ] ||
  fail "quota cpu $(jq -r '."requests.cpu"' <<<"$h") is not the offer's $(jq -r .cpu <<<"$offer")"
[ "$(to_bytes "$(jq -r '."requests.memory"' <<<"$h")")" = "$(to_bytes "$(jq -r .memory <<<"$offer")")" ] ||
  fail "quota memory $(jq -r '."requests.memory"' <<<"$h") is not the offer's $(jq -r .memory <<<"$offer")"
[ "$(jq -r .pods <<<"$h")" = "$(jq -r .pods <<<"$offer")" ] || fail "quota pods: $h, offer $offer"
[ "$(jq -r '."services.nodeports" + " " + ."services.loadbalancers"' <<<"$h")" = "0 0" ] ||
  fail "the quota lets NodePort or LoadBalancer Services through: $h"
[ "$(jq -r '."count/configmaps"' <<<"$h")" != null ] || fail "no object counts in the quota: $h"

say "a pod offloaded without requests runs on B with the default requests"
kc "$A" run -n "$NS" bare --image=busybox --restart=Never >/dev/null || fail "cannot create the pod on $A"
wait_for 60 "pod bare on $B" kc "$B" get pod -n "$RNS" bare
[ "$(jget "$B" '{.spec.containers[0].resources.requests.cpu} {.spec.containers[0].resources.requests.memory}' pod -n "$RNS" bare)" = \
  "100m 128Mi" ] || fail "pod bare on B: $(jpath "$B" '{.spec.containers[0].resources}' pod -n "$RNS" bare)"
wait_for 30 "the quota counts it" eval \
  "[ \"\$(jget $B '{.status.used.pods}' resourcequota -n $RNS cliqo-offer)\" -ge 1 ]"

say "A's tenant namespace on B: Secrets beyond cliqo-tenant-objects refused with A's peering credential"
jpath "$A" '{.data.kubeconfig}' secret -n cliqo "remote-identity-$B_ID" | base64 -d >"$T/a-identity"
[ -s "$T/a-identity" ] || fail "no peering credential of $A for $B"
max=$(kget "$B" resourcequota -n "$TNS" cliqo-tenant-objects | jq -r '.spec.hard."count/secrets"')
[ -n "$max" ] && [ "$max" != null ] || fail "no count/secrets in the tenant namespace's quota"
# The quota's count can start one short: kube-controller-manager counts a new quota from its informers' cache,
# which can lag the Secrets Kubernetes itself makes in a new namespace in the same second (the default
# ServiceAccount's token), and it counts again only when something it covers is deleted or at its full resync
# (5 min). Kubernetes' own race, not the peer's (docs/security.md): the test makes it count again (a deletion
# here) and starts from a settled count, the quota's used equal to the Secrets there twice in a row.
secrets_now() { kc "$B" get secrets -n "$TNS" -o name | wc -l; }
kc "$B" create secret generic e2e-quota-recount -n "$TNS" --from-literal=x=y >/dev/null
kc "$B" delete secret -n "$TNS" e2e-quota-recount >/dev/null
quota_settled() {
  local used
  used=$(kget "$B" resourcequota -n "$TNS" cliqo-tenant-objects | jq -r '.status.used."count/secrets"')
  [ "$used" = "$(secrets_now)" ] && [ "$used" = "${SETTLED_AT:-}" ] && return 0
  SETTLED_AT=$used
  return 1
}
SETTLED_AT=
wait_for 30 "cliqo-tenant-objects' Secret count settled" quota_settled
have=$(secrets_now)
want=$((max - have + 3)) # three beyond the count
for i in $(seq 1 "$want"); do
  printf -- '---\napiVersion: v1\nkind: Secret\nmetadata: {name: e2e-quota-%s, labels: {e2e-quota: "1"}}\nstringData: {x: \"v\"}\n' "$i"
done >"$T/secrets.yaml"
if "$KUBECTL" --kubeconfig "$T/a-identity" --request-timeout=60s create -n "$TNS" -f "$T/secrets.yaml" >"$T/out" 2>&1; then
  fail "$want Secrets created with $max allowed ($have there before)"
fi
grep_q 'exceeded quota: cliqo-tenant-objects' "$T/out" || fail "not refused by the quota: $(tail -3 "$T/out")"
now=$(secrets_now)
if [ "$now" -gt "$max" ]; then
  kc "$B" get secrets -n "$TNS" --sort-by=.metadata.creationTimestamp \
    -o custom-columns=NAME:.metadata.name,TYPE:.type,CREATED:.metadata.creationTimestamp >&2
  jpath "$B" '{.status}' resourcequota -n "$TNS" cliqo-tenant-objects >&2
  fail "$now Secrets in $TNS, more than $max ($have before the test's $want)"
fi
kc "$B" delete secrets -n "$TNS" -l e2e-quota=1 >/dev/null || fail "cannot delete the test's Secrets"

say "NamespaceMaps as A's virtual kubelet beyond the webhook's count: refused, in a burst too"
VK=$(vk_user "$A_ID")
nsmap() {
  printf '{"apiVersion":"virtualkubelet.liqo.io/v1alpha1","kind":"NamespaceMap","metadata":{"name":"%s","labels":{"e2e-quota":"1"}},"spec":{"desiredMapping":{}}}' "$1"
}
have=$(kc "$B" get namespacemaps -n "$TNS" -o name | wc -l)
limit=4
[ "$have" -lt "$limit" ] || fail "$have NamespaceMaps in $TNS already"
for i in $(seq $((have + 1)) "$limit"); do
  nsmap "e2e-map-$i" | kc "$B" --as="$VK" create -n "$TNS" -f - >/dev/null 2>"$T/err" ||
    fail "NamespaceMap $i of $limit refused: $(cat "$T/err")"
done
out=$(nsmap e2e-map-over | kc "$B" --as="$VK" create -n "$TNS" -f - 2>&1) && fail "NamespaceMap $((limit + 1)) admitted"
grep_q "at most $limit namespacemaps.virtualkubelet.liqo.io in a tenant namespace" <<<"$out" ||
  fail "unexpected refusal: $out"
kc "$B" delete namespacemaps -n "$TNS" -l e2e-quota=1 --wait=true --timeout=30s >/dev/null ||
  fail "cannot delete the test's NamespaceMaps"
# A burst: as many creations at once as there are free places, and three more; at most the free places admitted.
free=$((limit - have))
pids=()
for i in $(seq 1 $((free + 3))); do
  (nsmap "e2e-burst-$i" | kc "$B" --as="$VK" create -n "$TNS" -f - >/dev/null 2>&1) &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || true; done
n=$(kc "$B" get namespacemaps -n "$TNS" -l e2e-quota=1 -o name | wc -l)
[ "$n" -le "$free" ] || fail "a burst of $((free + 3)) NamespaceMaps admitted $n with $free free places"
[ "$n" -ge 1 ] || fail "the burst admitted none of $free free places"

say "two refreshes later, the ServiceAccounts charged to cliqo-tenant-objects are those in $TNS"
left=$((t0 + 32 - $(date +%s)))
[ "$left" -le 0 ] || sleep "$left"
sa_used=$(kget "$B" resourcequota -n "$TNS" cliqo-tenant-objects | jq -r '.status.used."count/serviceaccounts"')
sa_real=$(kc "$B" get serviceaccounts -n "$TNS" -o name | wc -l)
[ "$sa_used" = "$sa_real" ] || fail "cliqo-tenant-objects charges $sa_used ServiceAccounts, $TNS has $sa_real"
pass "default requests and the offer's quota in $RNS; the tenant namespace's counts hold (Secrets by quota, NamespaceMaps by the webhook, bursts included)"
