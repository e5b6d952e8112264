#!/usr/bin/env bash
# The group's shared state: cliqo on C, K, P1 and P2 with test settings, one agent each, cliqo-broker beside K's
# agent, K peered with P1 and P2 and C peered with K, P1 and P2 enabled in the broker (toggles), every virtual node
# Ready (docs/broker.md).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
trap brk_on_exit EXIT

say "install cliqo on ${ALL[*]}"
install_clusters "${ALL[@]}"
ids
say "test settings: keepalive 1 s x 3, refresh 15 s; K advertises what the broker aggregates (offerSource: Broker)"
for c in "${ALL[@]}"; do
  src=Cluster
  [ "$c" = "$K" ] && src=Broker
  # The orchestrator keeps the names of the namespaces consumers offload to K (EnforceSameName): the providers
  # allow the consumer's names (<namespace>-<C's name>-<hash>), which are not K's DefaultName shape.
  patch_config "$c" "{\"spec\":{\"advertisementConfig\":{\"keepaliveRetryTime\":1,\"keepaliveThreshold\":3,
    \"outgoingConfig\":{\"refreshSeconds\":15,\"ttlSeconds\":180,\"offerSource\":\"$src\"}},
    \"offloadingConfig\":{\"allowedRemoteNamespaces\":[\"brk-*-$C-*\"]}}}"
done
say "the broker's bearer token (Secret cliqo/cliqo-broker-token, key token)"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$TOKEN_FILE"
kc "$K" -n cliqo create secret generic cliqo-broker-token --from-file=token="$TOKEN_FILE" --dry-run=client -o yaml |
  kc "$K" apply -f - >/dev/null || fail "cannot create the token Secret"

say "start the agents and the broker"
ensure_agents
ensure_broker

say "peer K with P1 and P2, C with K"
start=$(date +%s.%N)
peer "$K" "$P1"
peer "$K" "$P2"
peer "$C" "$K"
wait_for 90 "the broker sees P1 and P2 as providers" eval \
  "[ \"\$(cluster_field $P1_ID .broker.provider)\" = true ] && [ \"\$(cluster_field $P2_ID .broker.provider)\" = true ]"
# Nobody is enabled yet (no --default-enabled): K offers C nothing, and C's virtual node says so.
wait_for 60 "C's virtual node of K NotReady for want of resources" eval \
  "[ \"\$(jget $C '{.status.conditions[?(@.type==\"Ready\")].reason}' node liqo-$K_ID)\" = NoResources ]"
say "enable P1 and P2: K offers C their sum, C's virtual node becomes Ready"
put_policy "$BASE_POLICY"
toggle "$P1_ID" true
toggle "$P2_ID" true
wait_all_shared 120
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
echo "FIGURE peerings-to-ready-virtual-nodes-seconds=$secs"
pass "K peered with P1 and P2, C with K; virtual nodes Ready in ${secs}s; the broker runs"
