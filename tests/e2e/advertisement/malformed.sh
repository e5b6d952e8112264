#!/usr/bin/env bash
# Invalid Advertisements are refused with a reason, in their status and in an Event, and never get a virtual
# node: a name or cluster ID that does not match the tenant namespace's peer, a negative quantity or price, a missing
# credential Secret; one whose timeToLive has passed is deleted. They are written here with the admin
# credential into a tenant namespace of a made-up peer; the three real providers are not disturbed.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
FAKE=e2e-fake-peer
NS=cliqo-tenant-e2e-fake
cleanup() {
  local rc=$?
  kc "$A" delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  (exit "$rc")
  adv_on_exit
}
trap cleanup EXIT
ensure_agents
ids
wait_all_shared
kc "$A" apply -f - >/dev/null <<EOF || fail "cannot create the fake tenant namespace"
apiVersion: v1
kind: Namespace
metadata:
  name: $NS
  labels: {discovery.liqo.io/cluster-id: $FAKE, discovery.liqo.io/tenant-namespace: "true"}
EOF
kc "$A" create secret generic -n "$NS" "vk-kubeconfig-secret-$FAKE" --from-literal=kubeconfig=none >/dev/null
now=$(date -u +%s)
ts=$(date -u -d "@$now" +%Y-%m-%dT%H:%M:%SZ)
ttl=$(date -u -d "@$((now + 600))" +%Y-%m-%dT%H:%M:%SZ)
past=$(date -u -d "@$((now - 60))" +%Y-%m-%dT%H:%M:%SZ)
adv() { # NAME CLUSTERID CPU SECRET TTL [PRICES(json)]
  kc "$A" apply -f - >/dev/null <<EOF
apiVersion: sharing.liqo.io/v1alpha1
kind: Advertisement
metadata: {name: $1, namespace: $NS}
spec:
  clusterId: $2
  resourceQuota: {hard: {cpu: "$3", memory: 1Gi, pods: "10"}}
  kubeConfigRef: {name: $4, namespace: $NS}
  timestamp: "$ts"
  timeToLive: "$5"
  ${6:+prices: $6}
EOF
}
reason_of() { jget "$A" '{.status.advertisementStatus}/{.status.reason}' advertisement -n "$NS" "$1"; }
expect_refused() { # NAME REASON
  wait_for 20 "$1 refused with reason $2 (now: $(reason_of "$1"))" eval "[ \"\$(reason_of $1)\" = Refused/$2 ]"
  wait_for 10 "an AdvertisementRefused Event for $1 saying $2" eval \
    "kc $A get events -n $NS --field-selector involvedObject.name=$1,reason=AdvertisementRefused -o jsonpath='{.items[*].message}' | grep_q ."
}
name=advertisement-$FAKE

say "a name that is not advertisement-<peer ID>"
adv advertisement-somebody-else "$FAKE" 1 "vk-kubeconfig-secret-$FAKE" "$ttl" || fail "cannot write the Advertisement"
expect_refused advertisement-somebody-else IdentityMismatch
say "a cluster ID that is not the tenant namespace's peer"
adv "$name" "$P1_ID" 1 "vk-kubeconfig-secret-$FAKE" "$ttl" || fail "cannot write the Advertisement"
expect_refused "$name" IdentityMismatch
say "a negative quantity"
adv "$name" "$FAKE" -2 "vk-kubeconfig-secret-$FAKE" "$ttl" || fail "cannot write the Advertisement"
expect_refused "$name" InvalidQuantity
msg=$(jget "$A" '{.status.message}' advertisement -n "$NS" "$name")
grep -q 'cpu' <<<"$msg" || fail "the message does not name the field: $msg"
say "a negative price"
adv "$name" "$FAKE" 1 "vk-kubeconfig-secret-$FAKE" "$ttl" '{"cpu": "-0.5", "memory": "1m"}' || fail "cannot write the Advertisement"
expect_refused "$name" InvalidPrice
msg=$(jget "$A" '{.status.message}' advertisement -n "$NS" "$name")
grep -q 'spec.prices\[cpu\] is negative' <<<"$msg" || fail "the message does not name the price: $msg"
kc "$A" delete advertisement -n "$NS" "$name" --wait=true >/dev/null # the next ones carry no prices
say "a credential Secret that does not exist"
adv "$name" "$FAKE" 1 vk-kubeconfig-secret-missing "$ttl" || fail "cannot write the Advertisement"
expect_refused "$name" NoCredential
say "none of them got a virtual node"
if kc "$A" get node "liqo-$FAKE" >/dev/null 2>&1; then fail "a virtual node exists for the made-up peer"; fi
say "a timeToLive in the past: the Advertisement is removed"
adv "$name" "$FAKE" 1 "vk-kubeconfig-secret-$FAKE" "$past" || fail "cannot write the Advertisement"
wait_for 20 "the expired Advertisement deleted" eval "! kc $A get advertisement -n $NS $name"
wait_for 10 "an AdvertisementExpired Event" eval \
  "kc $A get events -n $NS --field-selector reason=AdvertisementExpired -o name | grep_q ."
say "the CRD refuses a quantity that is not one"
if adv "$name" "$FAKE" lots "vk-kubeconfig-secret-$FAKE" "$ttl" 2>/dev/null; then fail "cpu 'lots' was accepted by the schema"; fi
all_shared || fail "the real providers were disturbed"
pass "identity mismatch, negative quantity, negative price, missing credential refused with their reasons; expired removed"
