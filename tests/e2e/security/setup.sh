#!/usr/bin/env bash
# The group's shared state: cliqo on A, B and C with test settings, one agent each, A peered with B (B's
# Advertisement Accepted, its virtual node Ready on A) and C peered with B.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
trap sec_on_exit EXIT

say "install cliqo on ${ALL[*]}"
install_clusters "${ALL[@]}"
ids
say "test settings: keepalive 1 s x 3, refresh 15 s, TTL 180 s; pod and service CIDRs"
for c in "${ALL[@]}"; do
  cidr=$(cat "$E2E_STATE/$c/pod-cidr")
  patch_config "$c" "{\"spec\":{\"advertisementConfig\":{\"keepaliveRetryTime\":1,\"keepaliveThreshold\":3,
    \"outgoingConfig\":{\"refreshSeconds\":15,\"ttlSeconds\":180}},
    \"liqonetConfig\":{\"podCIDR\":\"$cidr\",\"serviceCIDR\":\"10.96.0.0/16\"}}}"
done

say "start the agents"
ensure_agents

say "peer $A and $C with $B"
peer_with "$B"
# C peers as A did: peer_with runs the add command on A, so run it on C by hand.
line=$(cq "$B" generate-add-command) || fail "generate-add-command on $B failed"
read -r -a ADD_CMD <<<"$line"
out=$(cq "$C" "${ADD_CMD[@]:1}" --name "$B" --timeout 60s 2>&1) || fail "add $B on $C failed: $out"
wait_shared 90
wait_for 60 "$C's tenant namespace on $B" eval '[ -n "$(tenant_on_b "$C_ID")" ] && [ "$(tenant_on_b "$C_ID")" != null ]'
pass "A and C peered with B; virtual node $VNODE Ready on A"
