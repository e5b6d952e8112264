#!/usr/bin/env bash
# Pods through the virtual node (docs/offloading.md, "Pods"), checked with kubectl on both clusters: a
# Deployment of 50 replicas in an offloaded namespace runs on B with every home pod Running, addresses remapped,
# container statuses back; labels, annotations and images propagate; a remote pod deleted on B comes back; a
# failing container shows on the home pod; B's Events appear on the home pods; a deletion honours its grace period;
# a refused pod says so and runs once B accepts it; a DaemonSet pod is not offloaded; scale to 0 removes every
# remote pod.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/vk-lib.sh"
NS=e2e-pods
SIM_NODE=
cleanup() {
  [ -z "$SIM_NODE" ] || kc "$B" annotate node "$SIM_NODE" sim.cliqo.io/ready- >/dev/null 2>&1 || true
  kc "$A" delete daemonset -n "$NS" ds --ignore-not-found >/dev/null 2>&1 || true
  unoffload "$NS"
}
trap 'rc=$?; [ $rc = 0 ] || { kc "$A" get pods -n "$NS" -o wide 2>&1 | tail -5; }; cleanup >/dev/null 2>&1 || true; (exit $rc); off_on_exit' EXIT # the test's status, not cleanup's
ensure_agents
ids
wait_shared 60

say "offload $NS; a Deployment of 50 replicas"
offload "$NS"
wait_mapped "$NS"
RNS=$(remote_ns "$NS")
[ "$(jpath "$B" '{.metadata.labels.virtualkubelet\.liqo\.io/origin}' namespace "$RNS")" = "$A_ID" ] ||
  fail "remote namespace $RNS is not labelled with A's ID"
start=$(date +%s.%N)
deployment "$NS" web 50
wait_for 120 "50 home pods Running and Ready, 50 pods on $B ($(home_running "$NS") running, $(remote_count "$NS") remote)" \
  all_running "$NS" 50
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
echo "FIGURE offload-50-pods-ready-seconds=$secs"
out=$(pairs_ok "$NS") || fail "home and remote pods do not pair one to one: $out"
# Every remote pod is placed by B's scheduler on one of B's nodes, never on a virtual node.
kget "$B" pods -n "$RNS" | jq -e '[.items[] | select((.spec.nodeName // "") | startswith("cluster-2-node-") | not)] | length == 0' >/dev/null ||
  fail "a remote pod is not on one of $B's nodes"
kget "$B" pods -n "$RNS" | jq -e '[.items[] | select(.spec.serviceAccountName != null and .spec.serviceAccountName != "default")] | length == 0' >/dev/null ||
  fail "a remote pod carries A's service account"

say "status back: phase, addresses through the remapping, hostIP, container statuses"
net=$(kc "$A" get advertisement -n "$(tenant_of "$B")" "advertisement-$B_ID" -o json | jq -c .status.network)
from=$(jq -r .remotePodCIDR <<<"$net")
to=$(jq -r .remoteRemappedPodCIDR <<<"$net")
[ -n "$from" ] && [ "$from" != null ] && [ -n "$to" ] && [ "$to" != null ] || fail "no remapping in the Advertisement: $net"
ip2int() { local IFS=.; read -r a b c d <<<"$1"; echo $(((a << 24) | (b << 16) | (c << 8) | d)); }
int2ip() { echo "$((($1 >> 24) & 255)).$((($1 >> 16) & 255)).$((($1 >> 8) & 255)).$(($1 & 255))"; }
bits=${from#*/}
mask=$(((0xffffffff << (32 - bits)) & 0xffffffff))
translate() { int2ip $((($(ip2int "${to%/*}") & mask) | ($(ip2int "$1") & ~mask & 0xffffffff))); }
home=$(kget "$A" pods -n "$NS")
remote=$(kget "$B" pods -n "$RNS")
checked=0
while read -r name hip rip; do
  want=$(translate "$rip")
  [ "$hip" = "$want" ] || fail "pod $name: home IP $hip, want $want (remote $rip, $from -> $to)"
  checked=$((checked + 1))
done < <(jq -r --argjson r "$(jq -c '[.items[] | {(.metadata.name): .status.podIP}] | add' <<<"$remote")" \
  '.items[] | [.metadata.name, .status.podIP, $r[.metadata.name]] | @tsv' <<<"$home")
[ "$checked" = 50 ] || fail "checked $checked addresses, want 50"
jq -e '[.items[] | select(.status.hostIP != "127.0.0.1")] | length == 0' <<<"$home" >/dev/null ||
  fail "a home pod's hostIP is not the virtual node's address"
jq -e '[.items[] | .status.containerStatuses[0] | select((.containerID | startswith("cliqo://") | not) or .ready != true
  or .image != "nginx:1" or .restartCount != 0 or (.state.running == null))] | length == 0' <<<"$home" >/dev/null ||
  fail "container statuses not shown on the home pods: $(jq -c '.items[0].status.containerStatuses' <<<"$home")"
jq -e --arg b "$B_ID" '[.items[] | select([.status.conditions[] | select(.type == "cliqo.io/ProviderReachable" and .status == "True")] | length != 1)] | length == 0' \
  <<<"$home" >/dev/null || fail "home pods lack cliqo.io/ProviderReachable=True"

say "B's Events appear on the home pods (not B's Scheduled: the home scheduler has said it)"
P=$(jq -r '.items[0].metadata.name' <<<"$home")
PUID=$(kget "$B" pod -n "$RNS" "$P" | jq -r .metadata.uid)
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
kc "$B" create -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"Event","metadata":{"name":"$P.e2e","namespace":"$RNS"},
 "involvedObject":{"kind":"Pod","name":"$P","namespace":"$RNS","uid":"$PUID"},
 "reason":"E2EProbe","message":"an Event of B's about the pod","type":"Warning","count":1,
 "firstTimestamp":"$now","lastTimestamp":"$now","source":{"component":"e2e"}}
JSON
fwd() { kc "$A" get events -n "$NS" -o json | jq -c --arg p "$P" --arg c "cliqo-vk/$B_ID" '[.items[] | select(.involvedObject.name == $p and .source.component == $c) | .reason]'; }
wait_for 30 "B's E2EProbe Event on pod $P, from cliqo-vk/$B_ID" eval '[ "$(fwd | jq -r "index(\"E2EProbe\") != null")" = true ]'
# B's Scheduled Event came long before E2EProbe: forwarded, it would be there by now.
[ "$(fwd | jq -r 'index("Scheduled")')" = null ] || fail "B's Scheduled Event was forwarded: $(fwd)"

say "labels, annotations and images propagate"
kc "$A" label pod -n "$NS" "$P" e2e.cliqo.io/extra=yes >/dev/null
kc "$A" annotate pod -n "$NS" "$P" e2e.cliqo.io/note- e2e.cliqo.io/added=x >/dev/null
kc "$A" set image -n "$NS" "pod/$P" c=nginx:2 >/dev/null
rpod() { kget "$B" pod -n "$RNS" "$P" 2>/dev/null; }
wait_for 30 "label, annotations and image of $P on $B" eval '[ "$(rpod | jq -r "[.metadata.labels[\"e2e.cliqo.io/extra\"], .metadata.annotations[\"e2e.cliqo.io/added\"], (.metadata.annotations[\"e2e.cliqo.io/note\"] // \"gone\"), .spec.containers[0].image] | join(\" \")")" = "yes x gone nginx:2" ]'
wait_for 30 "the new image in $P's container status" eval '[ "$(jget "$A" "{.status.containerStatuses[0].image}" pod -n "$NS" "$P")" = nginx:2 ]'

say "a remote pod deleted on B comes back"
uid=$(rpod | jq -r .metadata.uid)
kc "$B" delete pod -n "$RNS" "$P" --wait=false >/dev/null
wait_for 30 "pod $P created again on $B" eval '[ -n "$(rpod | jq -r "select(.metadata.uid != \"$uid\" and .status.phase == \"Running\") | .metadata.name")" ]'
out=$(pairs_ok "$NS") || fail "pairs after the re-creation: $out"

say "a failing container shows on the home pod"
Q=$(jq -r '.items[1].metadata.name' <<<"$home")
kc "$A" annotate pod -n "$NS" "$Q" sim.cliqo.io/fail=3 >/dev/null
failing() {
  kget "$A" pod -n "$NS" "$Q" | jq -e '.status.containerStatuses[0] | .state.waiting.reason == "CrashLoopBackOff"
    and .restartCount >= 1 and .lastState.terminated.exitCode == 3 and .ready == false' >/dev/null
}
wait_for 30 "CrashLoopBackOff, restart count and exit code 3 on home pod $Q" failing

say "a deletion honours its grace period (B's node holding the pod does not finish it until released)"
G=$(jq -r '.items[2].metadata.name' <<<"$home")
SIM_NODE=$(jpath "$B" '{.spec.nodeName}' pod -n "$RNS" "$G")
kc "$B" annotate node "$SIM_NODE" sim.cliqo.io/ready=unknown --overwrite >/dev/null
kc "$A" delete pod -n "$NS" "$G" --grace-period=40 --wait=false >/dev/null
wait_for 30 "remote pod $G deleted with grace 40" eval '[ "$(jget "$B" "{.metadata.deletionGracePeriodSeconds}" pod -n "$RNS" "$G")" = 40 ]'
sleep 1
[ -n "$(jget "$A" '{.metadata.deletionTimestamp}' pod -n "$NS" "$G")" ] ||
  fail "home pod $G finished before its remote pod"
kc "$B" annotate node "$SIM_NODE" sim.cliqo.io/ready- >/dev/null
SIM_NODE=
wait_for 30 "home pod $G gone once its remote pod is" eval "! kc \"$A\" get pod -n \"$NS\" \"$G\" >/dev/null 2>&1"
wait_for 60 "50 pods again" eval '[ "$(home_count "$NS")" = 50 ] && [ "$(remote_count "$NS")" = 50 ]'

say "a refused pod is reported and runs once B accepts it"
kc "$B" create quota e2e-full -n "$RNS" --hard=pods=50 >/dev/null
wait_for 30 "the quota's usage computed" eval '[ "$(jget "$B" "{.status.used.pods}" resourcequota -n "$RNS" e2e-full)" = 50 ]'
kc "$A" scale deployment -n "$NS" web --replicas=51 >/dev/null
refused_pod() {
  kget "$A" pods -n "$NS" | jq -r '.items[] | select([.status.conditions[]? | select(.type == "PodScheduled"
    and .status == "False" and .reason == "ProviderRefused" and (.message | contains("exceeded quota")))] | length == 1) | .metadata.name'
}
wait_for 30 "a home pod with PodScheduled=False ProviderRefused" eval '[ -n "$(refused_pod)" ]'
R=$(refused_pod | head -1)
wait_for 30 "a ProviderRefused Event on $R" eval "kc \"$A\" get events -n \"$NS\" -o json | jq -e --arg p \"$R\" '[.items[] | select(.involvedObject.name == \$p and .reason == \"ProviderRefused\" and .type == \"Warning\")] | length >= 1' >/dev/null"
kc "$B" delete quota e2e-full -n "$RNS" >/dev/null
wait_for 60 "the refused pod $R Running once the quota is gone" eval '[ "$(jget "$A" "{.status.phase}" pod -n "$NS" "$R")" = Running ]'

say "a DaemonSet's pod on the virtual node is not offloaded"
kc "$A" apply -f - >/dev/null <<JSON
{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"ds","namespace":"$NS"},
 "spec":{"selector":{"matchLabels":{"app":"ds"}},"template":{"metadata":{"labels":{"app":"ds"}},
  "spec":{"tolerations":[{"key":"virtual-node.liqo.io/not-allowed","operator":"Exists","effect":"NoExecute"}],
   "containers":[{"name":"c","image":"busybox"}]}}}}
JSON
ds_pod() { kc "$A" get pods -n "$NS" -l app=ds --field-selector "spec.nodeName=$VNODE" -o json | jq -c '.items[0] // empty'; }
wait_for 30 "the DaemonSet pod on $VNODE says it is not offloaded" eval '[ "$(ds_pod | jq -r "[.status.conditions[]? | select(.type == \"PodScheduled\") | .reason] | first")" = DaemonSetNotOffloaded ]'
[ "$(kc "$B" get pods -n "$RNS" -l app=ds -o name | wc -l)" = 0 ] || fail "a DaemonSet pod was offloaded"
kc "$A" delete daemonset -n "$NS" ds --wait=false >/dev/null

say "scale to 0 removes every remote pod"
kc "$A" scale deployment -n "$NS" web --replicas=0 >/dev/null
start=$(date +%s.%N)
wait_for 90 "no pod left in $RNS on $B, none at home" eval '[ "$(remote_count "$NS")" = 0 ] && [ "$(kc "$A" get pods -n "$NS" -l app=web -o name | wc -l)" = 0 ]'
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
echo "FIGURE scale-50-to-0-seconds=$secs"

cleanup
trap off_on_exit EXIT
check_logs
pass "50 offloaded pods Running with remapped addresses; updates, re-creation, failures, Events, grace, refusals, DaemonSets, scale to 0"
