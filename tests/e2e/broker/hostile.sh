#!/usr/bin/env bash
# A hostile provider (docs/broker.md, "Providers"). P1 uses the credential it really holds on K (the kubeconfig K
# handed it to write its Advertisement, kept on P1 as Secret pr-<K-id>) to name Advertisements for other clusters
# in its own tenant namespace on K: one for P2 (a provider) and one for C (a consumer), each offering far more
# than they do. Nothing changes: K's operator refuses both (IdentityMismatch); the broker keeps P2 a provider
# with its own offer and its selection, does not make C a provider, and C's aggregated offer stays P1 + P2. The
# credential cannot write in P2's tenant namespace at all.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
QSUM="$(dirname "$0")/qsum.py"
T=$(mktemp -d)
pr() { "$KUBECTL" --kubeconfig "$T/pr" --request-timeout=20s "$@"; }
cleanup() {
  [ -s "$T/pr" ] && [ -n "${TNS1:-}" ] &&
    pr delete advertisement -n "$TNS1" "advertisement-$P2_ID" "advertisement-$C_ID" --ignore-not-found --wait=false
  rm -rf "$T"
}
trap 'rc=$?; cleanup >/dev/null 2>&1 || true; (exit $rc); brk_on_exit' EXIT
ensure_agents
ensure_broker
ids
wait_all_shared 60
TNS1=$(jget "$K" '{.status.tenantNamespace.local}' foreigncluster "$P1")
TNS2=$(jget "$K" '{.status.tenantNamespace.local}' foreigncluster "$P2")
RNS1=$(jget "$K" '{.status.tenantNamespace.remote}' foreigncluster "$P1")
[ -n "$TNS1" ] && [ -n "$TNS2" ] && [ -n "$RNS1" ] || fail "tenant namespaces unknown ($TNS1, $TNS2, $RNS1)"
jpath "$P1" '{.data.kubeconfig}' secret -n "$RNS1" "pr-$K_ID" | base64 -d >"$T/pr" || fail "no credential of $P1 on $K"
[ "$(pr auth can-i create advertisements -n "$TNS1")" = yes ] || fail "P1's credential cannot write its own Advertisement"

settled() { # P2 selected, C's offer from K the sum of P1's and P2's
  [ "$(cluster_field "$P2_ID" .broker.selected)" = true ] &&
    [ "$("$QSUM" "$(adv_hard "$C" "$K")")" = "$("$QSUM" "$(adv_hard "$K" "$P1")" "$(adv_hard "$K" "$P2")")" ]
}
wait_for 30 "P2 selected and C's offer = P1 + P2" settled
p2_offer=$(cluster_field "$P2_ID" '.broker.offer' | jq -cS .)
c_offer=$("$QSUM" "$(adv_hard "$C" "$K")")
log_lines=$(wc -l <"$BROKER_LOG")

# named ID TIMESTAMP: an Advertisement of P1's, in its namespace, named for ID and offering 1,000 cpus.
named() {
  jq -n --arg ns "$TNS1" --arg id "$1" --arg ts "$2" '{apiVersion: "sharing.liqo.io/v1alpha1", kind: "Advertisement",
    metadata: {name: ("advertisement-" + $id), namespace: $ns},
    spec: {clusterId: $id, timestamp: $ts, timeToLive: $ts,
      resourceQuota: {hard: {cpu: "1000", memory: "4000Gi", pods: "110000"}},
      kubeConfigRef: {name: "x", namespace: $ns}}}'
}
ts=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
say "P1 names Advertisements for P2 and C in its own tenant namespace on K"
for id in "$P2_ID" "$C_ID"; do
  out=$(named "$id" "$ts" | pr create -f - 2>&1) || fail "P1 could not create advertisement-$id in $TNS1: $out"
done
say "P1's credential cannot write in P2's tenant namespace"
out=$(named "$P1_ID" "$ts" | jq --arg ns "$TNS2" '.metadata.namespace = $ns' | pr create -f - 2>&1) &&
  fail "P1 created an Advertisement in P2's tenant namespace"
grep -qi forbidden <<<"$out" || fail "expected Forbidden, got: $out"

refused() { # ID: K's operator refused the Advertisement named for ID in P1's namespace
  local a
  a=$(kget "$K" advertisement -n "$TNS1" "advertisement-$1") || return 1
  [ "$(jq -r '.status.advertisementStatus + "/" + .status.reason' <<<"$a")" = Refused/IdentityMismatch ]
}
wait_for 20 "K's operator refuses advertisement-$P2_ID in P1's namespace" refused "$P2_ID"
wait_for 20 "K's operator refuses advertisement-$C_ID in P1's namespace" refused "$C_ID"

# The broker saw both (and the operator's status writes) by now; for 3 s more nothing it shows may move.
unchanged() {
  [ "$(cluster_field "$P2_ID" .broker.provider)" = true ] || { echo "P2 is no longer a provider"; return 1; }
  [ "$(cluster_field "$P2_ID" .broker.selected)" = true ] || { echo "P2 is no longer selected"; return 1; }
  [ "$(cluster_field "$P2_ID" '.broker.offer' | jq -cS .)" = "$p2_offer" ] || { echo "P2's offer changed"; return 1; }
  [ "$(cluster_field "$C_ID" .broker.provider)" = false ] || { echo "C became a provider"; return 1; }
  [ "$("$QSUM" "$(adv_hard "$C" "$K")")" = "$c_offer" ] || { echo "C's aggregated offer changed"; return 1; }
}
end=$((EPOCHSECONDS + 3))
while [ "$EPOCHSECONDS" -lt "$end" ]; do
  why=$(unchanged) || fail "after P1's forged Advertisements: $why"
  sleep 0.5
done
if tail -n +"$((log_lines + 1))" "$BROKER_LOG" | grep -E "provider ($P2_ID|$C_ID): (no longer advertises|advertises to this cluster)" >&2; then
  fail "the broker's provider table moved on P1's forged Advertisements (lines above)"
fi
pass "forged Advertisements refused by K's operator and ignored by the broker; P1 cannot write in P2's namespace"
