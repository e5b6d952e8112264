#!/usr/bin/env bash
# What a provider sends back is held to its range (issue 17, point 12; docs/security.md): B, as the admin of
# its own cluster, writes an address outside its pod CIDR into the status of the copy of A's pod; A's home pod
# never shows it (only addresses of B's pod CIDR, remapped, are copied), and so A's EndpointSlices never hold it.
# B's simulated kubelet is paused meanwhile (node annotation sim.cliqo.io/ready=unknown), so that only B's forged
# status is there to be reflected.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
NS=e2e-sec-ips
HOSTILE=192.168.77.7
cleanup() {
  [ -n "${BNODE:-}" ] && kc "$B" annotate node "$BNODE" sim.cliqo.io/ready-
  cq "$A" unoffload namespace "$NS"
  kc "$A" delete namespace "$NS" --wait=false
}
sec_cleanup_on_exit cleanup
ensure_agents
ids
wait_shared 60
REMOTE_NS=$NS-$A-$(printf %s "$A_ID" | sha256sum | cut -c1-6)

say "A offloads $NS; a pod and a Service there run on B"
kc "$A" create namespace "$NS" >/dev/null
cq "$A" offload namespace "$NS" --strategy Remote >/dev/null || fail "cannot offload $NS"
wait_for 60 "B made namespace $REMOTE_NS" kc "$B" get namespace "$REMOTE_NS"
wait_default_sa "$A" "$NS"
kc "$A" run -n "$NS" web --image=busybox --labels=app=web --restart=Never >/dev/null
kc "$A" expose pod -n "$NS" web --port 80 >/dev/null
home_ip() { jget "$A" '{.status.podIP}' pod -n "$NS" web; }
wait_for 90 "the home pod Running with an address" eval \
  '[ "$(jget $A "{.status.phase}" pod -n $NS web)" = Running ] && [ -n "$(home_ip)" ]'
good=$(home_ip)
BNODE=$(jget "$B" '{.spec.nodeName}' pod -n "$REMOTE_NS" web)
[ -n "$BNODE" ] || fail "the copy of web on B is not bound to a node"

say "B pauses its kubelet and forges its pod's address: $HOSTILE, with restartCount 7 as a marker"
kc "$B" annotate node "$BNODE" sim.cliqo.io/ready=unknown --overwrite >/dev/null
kget "$B" pod -n "$REMOTE_NS" web |
  jq --arg ip "$HOSTILE" '.status.podIP = $ip | .status.podIPs = [{ip: $ip}] |
    .status.containerStatuses[0].restartCount = 7' >"$E2E_STATE/forged.json"
kc "$B" replace --subresource=status -f "$E2E_STATE/forged.json" >/dev/null || fail "B cannot write its pod's status"
wait_for 30 "A reflects B's forged status (restartCount 7)" eval \
  '[ "$(jget $A "{.status.containerStatuses[0].restartCount}" pod -n $NS web)" = 7 ]'
[ "$(jget "$A" '{.status.podIPs[*].ip} {.status.podIP}' pod -n "$NS" web | grep -c "$HOSTILE")" = 0 ] ||
  fail "A's home pod shows B's forged address: $(jget "$A" '{.status.podIPs}' pod -n "$NS" web)"
[ -z "$(jpath "$A" '{.items[*].endpoints[*].addresses[*]}' endpointslices -n "$NS" | grep "$HOSTILE")" ] ||
  fail "an EndpointSlice of A holds B's forged address"
say "home pod address now: '$(home_ip)' (was $good)"
pass "B's forged address never reached A's pod or EndpointSlices"
