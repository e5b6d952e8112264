#!/usr/bin/env bash
# What makes a provider send its Advertisement at once, not at the next refresh: P2's refresh is set to 600 s
# for this test, so whatever arrives within 30 s was pushed (the push itself takes well under a second on a quiet
# machine, which the FIGURE lines report; the bound is wide so that a busy CI machine does not fail it by
# chance). A change of the free capacity by more than updateThresholdPercentage (5 %) is pushed, one below it is
# not sent at all; a change of the sharing percentage is pushed, and reaches the virtual node; so is a per-cluster
# override (perCluster: a percentage, then fixed amounts independent of the free capacity), and a second consumer
# of P2 (P1 peers with P2 for this test) keeps its Advertisement exactly as it was, resourceVersion included.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
NS=e2e-percentage
P1_PEERED=0
cleanup() {
  local rc=$? out
  kc "$P2" delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  if [ "$P1_PEERED" = 1 ]; then
    out=$(cq "$P1" unpeer "$P2" --timeout 60s 2>&1) || { echo "unpeer $P1 from $P2: $out" >&2; [ "$rc" != 0 ] || rc=1; }
  fi
  patch_config "$P2" '{"spec":{"advertisementConfig":{"outgoingConfig":{"resourceSharingPercentage":30,"perCluster":null,"refreshSeconds":15}}}}' || true
  if [ "$rc" = 0 ]; then wait_for 30 "P2 back at 30 %" eval '[ "$(capacity "$P2" cpu)" = "$base" ]'; fi
  (exit "$rc")
  adv_on_exit
}
trap cleanup EXIT
ensure_agents
ids
wait_all_shared
TNS=$(tenant_of "$P2")
ADV=$(adv_of "$P2")
# P2 has 2 simulated nodes of 8 cpu each (no pods): 16 cpu shared at P %.
base=$(capacity "$P2" cpu)
[ "$base" = 4800m ] || fail "P2 should offer 30 % of 16 cpu = 4800m, the virtual node says $base"

adv_cpu() { jget "$A" '{.spec.resourceQuota.hard.cpu}' advertisement -n "$TNS" "$ADV"; }
adv_rv() { jget "$A" '{.metadata.resourceVersion}' advertisement -n "$TNS" "$ADV"; }
# pushed SINCE-US CPU DESCRIPTION NAME: the Advertisement on A offers CPU within 30 s of SINCE-US (polled every
# 0.1 s), and the virtual node follows; prints the figures.
pushed() {
  local since=$1 el
  while [ "$(adv_cpu)" != "$2" ]; do
    el=$((${EPOCHREALTIME/./} - since))
    ((el < 30000000)) || fail "$3: the Advertisement on $A did not offer cpu $2 within 30 s (it offers $(adv_cpu))"
    sleep 0.1
  done
  el=$((${EPOCHREALTIME/./} - since))
  echo "FIGURE $4-to-advertisement-seconds=$((el / 1000000)).$(printf '%03d' $((el / 1000 % 1000)))"
  wait_for 10 "$3: cpu $2 on the virtual node" eval "[ \"\$(capacity \"$P2\" cpu)\" = $2 ]"
  el=$((${EPOCHREALTIME/./} - since))
  echo "FIGURE $4-to-virtual-node-seconds=$((el / 1000000)).$(printf '%03d' $((el / 1000 % 1000)))"
}
timed_change() { # JSON EXPECTED-CPU DESCRIPTION NAME
  local t0=${EPOCHREALTIME/./}
  patch_config "$P2" "$1"
  pushed "$t0" "$2" "$3" "$4"
}

say "P2's refresh set to 600 s: from here on, nothing is re-sent by the clock"
patch_config "$P2" '{"spec":{"advertisementConfig":{"outgoingConfig":{"refreshSeconds":600}}}}'
sleep 2 # the configuration change itself re-sends once
NODE2=$(kc "$P2" get nodes -o jsonpath='{.items[0].metadata.name}')
kc "$P2" create namespace "$NS" >/dev/null
wait_default_sa "$P2" "$NS"
pod() { # NAME CPU
  kc "$P2" apply -n "$NS" -f - >/dev/null <<EOF || fail "cannot create pod $1 on $P2"
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  nodeName: $NODE2
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "$2"}}}]
EOF
}

say "free capacity moves by less than 5 % (a 100m pod: cpu -0.6 %, pods -1.5 %): nothing is sent"
rv=$(adv_rv)
pod small 100m
sleep 4
[ "$(adv_rv)" = "$rv" ] || fail "a change below the threshold re-sent the Advertisement (cpu now $(adv_cpu))"
[ "$(adv_cpu)" = 4800m ] || fail "cpu moved to $(adv_cpu) below the threshold"

say "free capacity moves by more than 5 % (a 2-cpu pod: 16 - 2.1 = 13.9 cpu, x 30 % = 4170m): pushed"
t0=${EPOCHREALTIME/./}
pod big 2
pushed "$t0" 4170m "a 13 % drop of free cpu" capacity
grep -q "sending the Advertisement to $A_ID: amounts moved" "$(agent_log "$P2")" ||
  fail "$P2's log does not say the amounts moved"
kc "$P2" delete pod -n "$NS" small --wait=false >/dev/null
kc "$P2" delete pod -n "$NS" big --wait=false >/dev/null
wait_for 30 "the offer back at 4800m once the pods are gone" eval '[ "$(capacity "$P2" cpu)" = 4800m ]'

say "50 %"
timed_change '{"spec":{"advertisementConfig":{"outgoingConfig":{"resourceSharingPercentage":50}}}}' 8 "50 %" percentage
[ "$(capacity "$P2" pods)" = 110 ] || fail "pods at 50 % of 220: $(capacity "$P2" pods)"

say "a second consumer of $P2: $P1 peers with it"
line=$(cq "$P2" generate-add-command) || fail "generate-add-command on $P2 failed"
read -r -a add <<<"$line"
P1_PEERED=1
out=$(cq "$P1" "${add[@]:1}" --name "$P2" --timeout 60s 2>&1) || fail "$P1 cannot add $P2: $out"
P1_TNS=
p1_adv_accepted() {
  P1_TNS=$(jget "$P1" '{.status.tenantNamespace.local}' foreigncluster "$P2")
  [ -n "$P1_TNS" ] && [ "$(jget "$P1" '{.status.advertisementStatus}' advertisement -n "$P1_TNS" "$ADV")" = Accepted ]
}
wait_for 60 "$P2's Advertisement accepted on $P1" p1_adv_accepted
p1_copy() { jget "$P1" '{.metadata.resourceVersion} {.spec.resourceQuota.hard}' advertisement -n "$P1_TNS" "$ADV"; }
p1_before=$(p1_copy)
[ "$(jget "$P1" '{.spec.resourceQuota.hard.cpu}' advertisement -n "$P1_TNS" "$ADV")" = 8 ] ||
  fail "$P1 is offered $(jget "$P1" '{.spec.resourceQuota.hard.cpu}' advertisement -n "$P1_TNS" "$ADV") cpu, not 50 % of 16"

say "perCluster: 25 % for $A"
timed_change "{\"spec\":{\"advertisementConfig\":{\"outgoingConfig\":{\"perCluster\":[{\"clusterID\":\"$A_ID\",\"percentage\":25}]}}}}" 4 "per-cluster 25 %" per-cluster
say "perCluster: fixed amounts for $A (more than the cluster has free: liqo#1478)"
timed_change "{\"spec\":{\"advertisementConfig\":{\"outgoingConfig\":{\"perCluster\":[{\"clusterID\":\"$A_ID\",\"resources\":{\"cpu\":\"40\",\"memory\":\"100Gi\",\"pods\":\"500\"}}]}}}}" 40 "fixed amounts" fixed
[ "$(capacity "$P2" memory)" = 100Gi ] || fail "fixed memory: $(capacity "$P2" memory)"
[ -z "$(capacity "$P2" ephemeral-storage)" ] || fail "fixed amounts offer exactly what is listed (ephemeral-storage appeared)"
say "$P1's Advertisement from $P2 is exactly as it was"
[ "$(p1_copy)" = "$p1_before" ] || fail "$P1's copy changed: '$p1_before' -> '$(p1_copy)'"

say "an invalid perCluster entry is refused by the CRD's schema"
if kc "$P2" patch clusterconfig configuration --type=merge -p "{\"spec\":{\"advertisementConfig\":{\"outgoingConfig\":{\"perCluster\":[{\"clusterID\":\"$A_ID\",\"percentage\":130}]}}}}" 2>/dev/null; then
  fail "a percentage of 130 was accepted"
fi
pass "threshold pushes (and silence below it), percentage, per-cluster percentage and fixed amounts; the other consumer untouched"
