#!/usr/bin/env bash
# The orchestrator and the toggles (docs/broker.md, "Orchestrator"): a namespace C offloads to K gets a
# NamespaceOffloading on K that selects the enabled providers only, never C, keeping the namespace's name; C's
# pods run on the selected provider through two hops (C -> K -> P), checked with kubectl on every cluster; a
# toggle moves them to the other provider, and none is left behind.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
NS=brk-apps
cleanup() {
  kc "$C" delete namespace "$NS" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  toggle "$P1_ID" true
  toggle "$P2_ID" true
  wait_for 120 "namespace $NS gone from C and its copies from K, P1 and P2" eval \
    "! kc $C get namespace $NS >/dev/null 2>&1 && [ -z \"\$(k_ns)\" ] && ! kc $P1 get namespace \"\$RNS\" >/dev/null 2>&1 &&
     ! kc $P2 get namespace \"\$RNS\" >/dev/null 2>&1"
}
trap 'rc=$?; [ $rc = 0 ] || { for c in "$C" "$K" "$P1" "$P2"; do echo "--- pods on $c" >&2; kc "$c" get pods -A -o wide 2>&1 | grep -v kube-system | tail -6 >&2; done; }; [ -n "${E2E_KEEP:-}" ] || cleanup >/dev/null 2>&1 || true; (exit $rc); brk_on_exit' EXIT
ensure_agents
ensure_broker
ids
RNS=

# k_ns: the namespace K made for C's offloading of NS (label virtualkubelet.liqo.io/origin=C).
k_ns() { kget "$K" namespaces -l "virtualkubelet.liqo.io/origin=$C_ID" 2>/dev/null | jq -r '.items[0].metadata.name // empty'; }
k_selected() { # the providers K's NamespaceOffloading selects, sorted, comma-separated
  kget "$K" namespaceoffloading offloading -n "$RNS" 2>/dev/null | jq -r \
    '[.spec.clusterSelector.nodeSelectorTerms[0].matchExpressions[] | select(.key == "liqo.io/remote-cluster-id" and .operator == "In") | .values[]] | sort | join(",")'
}
running_on() { # CLUSTER: pods of the offloaded namespace Running there
  local ns=$RNS
  [ "$1" = "$C" ] && ns=$NS
  kget "$1" pods -n "$ns" 2>/dev/null | jq '[.items[] | select(.status.phase == "Running")] | length'
}
count_on() { local n; n=$(kget "$1" pods -n "$RNS" 2>/dev/null | jq '.items | length' 2>/dev/null); echo "${n:-0}"; }
on_node_of() { kget "$K" pods -n "$RNS" | jq -r --arg n "liqo-$(id_of "$1")" '[.items[] | select(.spec.nodeName == $n)] | length'; }
placed_on() { # PROVIDER OTHER: both replicas run on PROVIDER (through K), none on OTHER
  [ "$(running_on "$C")" = 2 ] && [ "$(on_node_of "$1")" = 2 ] && [ "$(running_on "$1")" = 2 ] && [ "$(count_on "$2")" = 0 ]
}

say "only P1 enabled"
toggle "$P2_ID" false
wait_for 20 "P1 selected, P2 not" eval "selected $P1_ID && not_selected $P2_ID"
[ "$(cluster_field "$P2_ID" .broker.why)" != "" ] || fail "P2's entry does not say why it is out"

say "C offloads $NS to K"
kc "$C" create namespace "$NS" >/dev/null
kc "$C" apply -f - >/dev/null <<JSON || fail "cannot offload $NS on C"
{"apiVersion":"offloading.liqo.io/v1alpha1","kind":"NamespaceOffloading","metadata":{"name":"offloading","namespace":"$NS"},
 "spec":{"namespaceMappingStrategy":"DefaultName","podOffloadingStrategy":"Remote"}}
JSON
wait_for 60 "K made a namespace for C's $NS" eval '[ -n "$(k_ns)" ]'
RNS=$(k_ns)
wait_for 30 "K's NamespaceOffloading of $RNS selects P1 only" eval '[ "$(k_selected)" = "$P1_ID" ]'
nsof=$(kget "$K" namespaceoffloading offloading -n "$RNS")
jq -e '.spec.namespaceMappingStrategy == "EnforceSameName" and .spec.podOffloadingStrategy == "Remote"' <<<"$nsof" >/dev/null ||
  fail "K's NamespaceOffloading: $(jq -c .spec <<<"$nsof")"
jq -e --arg c "$C_ID" '[.spec.clusterSelector.nodeSelectorTerms[0].matchExpressions[] | select(.operator == "NotIn" and .values == [$c])] | length == 1' \
  <<<"$nsof" >/dev/null || fail "K's NamespaceOffloading does not exclude C: $(jq -c .spec <<<"$nsof")"
wait_for 60 "namespace $RNS on P1 (same name), none on P2" eval \
  "kc $P1 get namespace $RNS >/dev/null 2>&1 && ! kc $P2 get namespace $RNS >/dev/null 2>&1"

say "a Deployment of 2 on C runs on P1 through K"
kc "$C" apply -f - >/dev/null <<JSON || fail "cannot create the Deployment"
{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"$NS"},
 "spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},
  "template":{"metadata":{"labels":{"app":"web"}},
   "spec":{"terminationGracePeriodSeconds":2,"containers":[{"name":"c","image":"nginx:1"}]}}}}
JSON
start=$(date +%s.%N)
wait_for 120 "2 pods Running on C, on K bound to P1's virtual node, Running on P1; none on P2" placed_on "$P1" "$P2"
echo "FIGURE two-hop-2-pods-running-seconds=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')"

say "toggle: P1 off, P2 on; the pods move to P2, none is left on P1"
toggle "$P2_ID" true
toggle "$P1_ID" false
wait_for 20 "K's NamespaceOffloading selects P2 only" eval '[ "$(k_selected)" = "$P2_ID" ]'
start=$(date +%s.%N)
wait_for 180 "2 pods Running on C, on K bound to P2's virtual node, Running on P2; none on P1" placed_on "$P2" "$P1"
echo "FIGURE toggle-move-2-pods-seconds=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')"
wait_for 60 "namespace $RNS gone from P1" eval "! kc $P1 get namespace $RNS >/dev/null 2>&1"
pass "toggles choose the provider: C's pods ran on P1 through K, then moved to P2, nothing left on P1"
