#!/usr/bin/env bash
# cliqoctl unpeer: deletes a ForeignCluster (by name or by cluster ID) and waits until it is gone; --keep
# disables the outgoing peering and waits for OutgoingPeering None; unknown names are a clear error.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
ensure_installed
trap 'kc "$C" delete foreigncluster up-one up-two up-three --ignore-not-found >/dev/null 2>&1 || true' EXIT

say "by name"
make_fc up-one 1a1a1a1a-0000-4000-8000-000000000001
run_cq rc out err unpeer up-one --timeout 30s
[ "$rc" -eq 0 ] || fail "exit $rc: $err"
fc_absent up-one || fail "up-one still exists"
contains "result on stdout" "$out" "deleted"

say "by cluster ID"
make_fc up-two 1a1a1a1a-0000-4000-8000-000000000002
run_cq rc out err unpeer 1a1a1a1a-0000-4000-8000-000000000002
[ "$rc" -eq 0 ] || fail "by ID: exit $rc: $err"
fc_absent up-two || fail "up-two still exists"

say "unknown name"
run_cq rc out err unpeer no-such-cluster
[ "$rc" -eq 1 ] || fail "unknown: exit $rc"
one_error_line "$err"
contains "unknown explained" "$err" "no ForeignCluster named 'no-such-cluster'"
run_cq rc out err unpeer
[ "$rc" -eq 2 ] || fail "no name: exit $rc"
one_error_line "$err"

say "--keep waits for OutgoingPeering None"
make_fc up-three 1a1a1a1a-0000-4000-8000-000000000003 Established
run_cq rc out err unpeer up-three --keep --timeout 2s
[ "$rc" -eq 1 ] || fail "--keep with no agent should time out: exit $rc"
one_error_line "$err"
contains "timeout says where it is stuck" "$err" "Established"
[ "$(jpath "$C" '{.spec.outgoingPeeringEnabled}' foreigncluster up-three)" = "No" ] || fail "not disabled"
cq unpeer up-three --keep --timeout 30s >"$E2E_STATE/unpeer-keep.out" 2>&1 &
pid=$!
sleep 1
set_condition up-three OutgoingPeering None
wait "$pid" || fail "--keep did not finish once None: $(cat "$E2E_STATE/unpeer-keep.out")"
kc "$C" get foreigncluster up-three >/dev/null || fail "--keep deleted the ForeignCluster"

say "a finalizer that nobody removes: bounded wait"
kc "$C" patch foreigncluster up-three --type=merge -p '{"metadata":{"finalizers":["example.com/hold"]}}' >/dev/null
start=$(date +%s)
run_cq rc out err unpeer up-three --timeout 2s
[ "$rc" -eq 1 ] || fail "held FC: exit $rc"
[ $(($(date +%s) - start)) -le 10 ] || fail "unpeer did not respect its timeout"
contains "finalizer named" "$err" "example.com/hold"
kc "$C" patch foreigncluster up-three --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
wait_for 30 "up-three deleted" fc_absent up-three
pass
