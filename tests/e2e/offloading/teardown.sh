#!/usr/bin/env bash
# The group's end: A unpeers from B; both sides are left with nothing of peering, sharing or offloading; the
# agents stop gracefully on SIGTERM and their logs hold no sanitizer report.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
trap off_on_exit EXIT
ensure_agents
ids
# After the group's tests, with nothing changing, A's agent writes the Advertisement's status at most on a
# resync (30 s): a status it finds different after every write of it (a member a merge patch did not
# remove) was written again at once, tens of times a second, for the rest of the group.
adv_status_patches() {
  kc "$A" get --raw /metrics | awk '/^apiserver_request_total\{/ && /resource="advertisements"/ &&
    /subresource="status"/ && /verb="PATCH"/ { s += $NF } END { print s + 0 }'
}
p0=$(adv_status_patches)
sleep 6
p1=$(adv_status_patches)
[ $((p1 - p0)) -le 3 ] || fail "A's agent wrote the Advertisement's status $((p1 - p0)) times in 6 s with nothing changing"
say "the Advertisement's status written $((p1 - p0)) times in 6 s with nothing changing"
out=$(cq "$A" unpeer "$B" --timeout 60s 2>&1) || fail "unpeer $B failed: $out"
left_on_a() {
  kc "$A" get advertisements,networkconfigs,namespaceoffloadings -A -o name
  kc "$A" get nodes -l liqo.io/type=virtual-node -o name
  kc "$A" get namespaces -l discovery.liqo.io/tenant-namespace=true -o name
  kc "$A" get leases -n kube-node-lease -o name | grep '/liqo-' || true
}
left_on_b() {
  kc "$B" get peeringrequests,namespacemaps,networkconfigs -A -o name
  kc "$B" get namespaces -l virtualkubelet.liqo.io/origin -o name
  kc "$B" get namespaces -l discovery.liqo.io/tenant-namespace=true -o name
  kc "$B" get pods -A -l virtualkubelet.liqo.io/origin -o name
  kc "$B" get serviceaccounts -A -o name | grep '/vk-' || true
}
wait_for 90 "nothing left on $A ($(left_on_a 2>&1 | tr '\n' ' '))" eval '[ -z "$(left_on_a 2>&1)" ]'
wait_for 90 "nothing left on $B ($(left_on_b 2>&1 | tr '\n' ' '))" eval '[ -z "$(left_on_b 2>&1)" ]'
stop_agents "${ALL[@]}"
check_logs
pass "unpeered; both sides clean; agents stopped gracefully; no sanitizer report"
