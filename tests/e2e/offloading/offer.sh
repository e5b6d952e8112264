#!/usr/bin/env bash
# The offer is enforced on B (docs/offloading.md, "Admission"): in a namespace B made for A through A's
# NamespaceMap (the test adds the entry itself, as A's virtual kubelet would: A's agent is stopped meanwhile,
# since its virtual kubelet would take the entry back and delete pods it did not make), pods created as A's
# virtual kubelet (kubectl --as its ServiceAccount) are admitted while the requests of A's pods on B stay within what
# B's Advertisement offered A, refused beyond with a one-line 403 naming the resource and amounts; containers without
# requests get B's default requests (LimitRange cliqo-defaults) and count with them; a burst cannot overshoot
# (reservations, generateName pods too); any other identity is refused; A raising its own virtual node's capacity
# changes nothing on B; and the ResourceQuota cliqo-offer, equal to the offer, refuses what the webhook would while
# the webhook is gone. B offers A fixed amounts for the test (ClusterConfig perCluster), so every number below is
# exact.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
HOME_NS=e2e-offer-home
REMOTE_NS= # of A's DefaultName shape, once A's ID is known (the only names B lets A claim by default)
T=$(mktemp -d)

cleanup() {
  [ -n "$REMOTE_NS" ] || return 0
  kc "$B" delete pods -n "$REMOTE_NS" --all --grace-period=0 --force >/dev/null 2>&1 || true
  [ -n "${T_B:-}" ] && kc "$B" patch namespacemap -n "$T_B" "$A_ID" --type=merge \
    -p "{\"spec\":{\"desiredMapping\":{\"$HOME_NS\":null}}}" >/dev/null 2>&1
  patch_config "$B" '{"spec":{"advertisementConfig":{"outgoingConfig":{"perCluster":null}}}}'
  wait_for 60 "$REMOTE_NS gone from $B" eval "! kc $B get namespace $REMOTE_NS"
  rm -rf "$T"
  ensure_agents
}
on_exit() {
  local rc=$?
  cleanup >/dev/null 2>&1 || true
  (exit "$rc")
  off_on_exit
}
trap on_exit EXIT
ensure_agents
ids
wait_shared 60
REMOTE_NS=$HOME_NS-b-$(printf %s "$A_ID" | sha256sum | cut -c1-6)

T_B=$(kget "$B" foreignclusters |
  jq -r --arg id "$A_ID" '.items[] | select(.spec.clusterIdentity.clusterID == $id) | .status.tenantNamespace.local')
[ -n "$T_B" ] && [ "$T_B" != null ] || fail "no tenant namespace of $A on $B"
VK_USER="system:serviceaccount:$T_B:vk-$A_ID"
# vkpod NAME [CPU] [AS]: a pod in REMOTE_NS created as A's virtual kubelet (or AS), labelled as its pods are; no CPU:
# the container requests nothing.
vkpod() {
  local req=""
  [ -n "${2:-}" ] && req="resources: {requests: {cpu: \"$2\"}}"
  kc "$B" --as="${3:-$VK_USER}" ${4:+--as-group=system:masters} create -n "$REMOTE_NS" -f - <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  labels: {virtualkubelet.liqo.io/origin: $A_ID}
spec:
  containers: [{name: c, image: busybox, $req}]
EOF
}
admitted() { vkpod "$@" >/dev/null 2>"$T/err" || fail "pod $1 refused: $(cat "$T/err")"; }
# refused NAME CPU MESSAGE: refused with exactly this message (and 403).
refused() {
  local err
  if err=$(vkpod "$1" "$2" 2>&1 >/dev/null); then fail "pod $1 admitted beyond the offer"; fi
  [ "$err" = "Error from server (Forbidden): error when creating \"STDIN\": admission webhook \"offer.admission.cliqo.io\" denied the request: $3" ] ||
    fail "pod $1: unexpected refusal: $err
  want: $3"
}
sent() { kget "$B" foreignclusters | jq -cS --arg id "$A_ID" \
  '.items[] | select(.spec.clusterIdentity.clusterID == $id) | .status.advertisement.sent.resources | {cpu, memory, pods}'; }

say "$B offers $A exactly cpu 2, memory 1Gi, pods 3"
patch_config "$B" "{\"spec\":{\"advertisementConfig\":{\"outgoingConfig\":{\"perCluster\":[{\"clusterID\":\"$A_ID\",
  \"resources\":{\"cpu\":\"2\",\"memory\":\"1Gi\",\"pods\":\"3\"}}]}}}}"
wait_for 30 "the fixed offer sent (now: $(sent))" eval '[ "$(sent)" = "{\"cpu\":\"2\",\"memory\":\"1Gi\",\"pods\":\"3\"}" ]'
wait_for 30 "$VNODE shows it" eval "[ \"\$(jget $A '{.status.allocatable.cpu}' node $VNODE)\" = 2 ]"

say "$A's agent stopped: the test plays $A's virtual kubelet on $B"
stop_agent "$A"
say "a namespace for $A through its NamespaceMap"
kc "$B" patch namespacemap -n "$T_B" "$A_ID" --type=merge -p "{\"spec\":{\"desiredMapping\":{\"$HOME_NS\":\"$REMOTE_NS\"}}}" \
  >/dev/null || fail "cannot add the NamespaceMap entry"
wait_for 30 "the entry Accepted" eval \
  "[ \"\$(jget $B '{.status.currentMapping.$HOME_NS.phase}' namespacemap -n $T_B $A_ID)\" = Accepted ]"
wait_for 20 "the virtual kubelet's role bound in $REMOTE_NS" eval \
  "[ \"\$(kc $B auth can-i create pods -n $REMOTE_NS --as=$VK_USER)\" = yes ]"
wait_default_sa "$B" "$REMOTE_NS"

say "within the offer: admitted; beyond: refused with the resource and amounts"
admitted p1 1500m
refused p2 1 "offer exceeded: cpu 1500m requested + 1 > 2 offered to $A"
refused p2 600m "offer exceeded: cpu 1500m requested + 600m > 2 offered to $A"
admitted p2 400m
refused p3 101m "offer exceeded: cpu 1900m requested + 101m > 2 offered to $A"

say "the namespace has B's LimitRange of default requests and a ResourceQuota equal to the offer"
[ "$(jget "$B" '{.spec.limits[0].defaultRequest.cpu} {.spec.limits[0].defaultRequest.memory}' limitrange -n "$REMOTE_NS" cliqo-defaults)" = "100m 128Mi" ] ||
  fail "no LimitRange cliqo-defaults with 100m/128Mi in $REMOTE_NS: $(kget "$B" limitrange -n "$REMOTE_NS")"
quota_hard() { jget "$B" '{.spec.hard.requests\.cpu} {.spec.hard.requests\.memory} {.spec.hard.pods}' resourcequota -n "$REMOTE_NS" cliqo-offer; }
[ "$(quota_hard)" = "2 1Gi 3" ] || fail "ResourceQuota cliqo-offer is not the offer: $(quota_hard)"

say "a container without requests gets the defaults, and counts with them"
admitted p3
[ "$(jget "$B" '{.spec.containers[0].resources.requests.cpu} {.spec.containers[0].resources.requests.memory}' pod -n "$REMOTE_NS" p3)" = "100m 128Mi" ] ||
  fail "p3 did not get the default requests: $(jpath "$B" '{.spec.containers[0].resources}' pod -n "$REMOTE_NS" p3)"
refused p4 "" "offer exceeded: cpu 2 requested + 100m > 2 offered to $A"
refused p4 0 "offer exceeded: pods 3 requested + 1 > 3 offered to $A"

say "a finished pod frees its share; a burst of three for one free slot admits exactly one"
kc "$B" delete pod -n "$REMOTE_NS" p3 --wait=true --timeout=30s >/dev/null || fail "cannot delete p3"
sleep 2 # the agent's pod informer sees the deletion (a watch event)
# Three creations sent at once (curl --parallel, impersonating the virtual kubelet as kubectl --as does), so that
# the webhook sees them before its pod informer can have seen any: only the reservations keep the count right.
kc "$B" config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$T/ca"
kc "$B" config view --raw --minify -o jsonpath='{.users[0].user.client-certificate-data}' | base64 -d >"$T/crt"
kc "$B" config view --raw --minify -o jsonpath='{.users[0].user.client-key-data}' | base64 -d >"$T/key"
server=$(kc "$B" config view --minify -o jsonpath='{.clusters[0].cluster.server}')
# burst PREFIX JQ: three pods created at once, their bodies the base pod (named PREFIX-i) through jq filter
# JQ; HTTP codes in $T/codes, answers in $T/PREFIX-i.out.
burst() {
  local args=() i
  for i in 1 2 3; do
    jq -n --arg n "$1-$i" --arg o "$A_ID" \
      '{apiVersion:"v1",kind:"Pod",metadata:{name:$n,labels:{"virtualkubelet.liqo.io/origin":$o}},
        spec:{containers:[{name:"c",image:"busybox"}]}}' | jq "$2" >"$T/$1-$i.json"
    [ "$i" = 1 ] || args+=(--next)
    args+=(-s -o "$T/$1-$i.out" -w '%{http_code}\n' --cacert "$T/ca" --cert "$T/crt" --key "$T/key"
      -H "Impersonate-User: $VK_USER" -H 'Content-Type: application/json' --data-binary "@$T/$1-$i.json"
      "$server/api/v1/namespaces/$REMOTE_NS/pods")
  done
  curl --parallel --parallel-immediate "${args[@]}" >"$T/codes" || true
}
burst burst .
[ "$(sort "$T/codes" | tr '\n' ' ')" = "201 403 403 " ] ||
  fail "three concurrent pods for one free slot: HTTP $(tr '\n' ' ' <"$T/codes"): $(cat "$T"/burst-*.out)"
[ "$(cat "$T"/burst-*.out | jq -r 'select(.code == 403) | .message' | sort -u)" = \
  "admission webhook \"offer.admission.cliqo.io\" denied the request: offer exceeded: cpu 2 requested + 100m > 2 offered to $A" ] ||
  fail "the two others were not refused for cpu: $(cat "$T"/burst-*.out)"

say "the same burst with generateName (no name in the review's request): exactly one admitted"
winner=$(kc "$B" get pods -n "$REMOTE_NS" -o name | grep '/burst-') || fail "no burst pod admitted"
kc "$B" delete -n "$REMOTE_NS" "$winner" --wait=true --timeout=30s >/dev/null || fail "cannot delete $winner"
# The freed slot is seen once a server-side dry run (checked, never reserved) is admitted.
wait_for 20 "the freed slot seen by $B's agent" eval \
  "kc $B --as=$VK_USER create -n $REMOTE_NS --dry-run=server -f $T/burst-1.json"
burst gen '.metadata += {generateName: "gen-"} | del(.metadata.name)'
[ "$(sort "$T/codes" | tr '\n' ' ')" = "201 403 403 " ] ||
  fail "three concurrent generateName pods for one free slot: HTTP $(tr '\n' ' ' <"$T/codes"): $(cat "$T"/gen-*.out)"
[ "$(kc "$B" get pods -n "$REMOTE_NS" -o name | grep -c '/gen-')" = 1 ] || fail "not exactly one gen- pod on $B"

say "only A's virtual kubelet may create pods in $A's namespaces, even with every RBAC right"
kc "$B" delete pods -n "$REMOTE_NS" -l virtualkubelet.liqo.io/origin --field-selector metadata.name!=p1 \
  --wait=true --timeout=30s >/dev/null || fail "cannot delete the pods"
for who in cliqo-dev-admin "system:serviceaccount:$T_B:remote-$A_ID" "system:serviceaccount:$T_B:vk-someone-else"; do
  if err=$(vkpod intruder "" "$who" masters 2>&1 >/dev/null); then fail "$who created a pod in $REMOTE_NS"; fi
  grep_q "denied the request: only the virtual kubelet of $A ($VK_USER) may create pods in $REMOTE_NS, not $who" <<<"$err" ||
    fail "$who: unexpected refusal: $err"
done

say "$A raises its own virtual node's capacity: $B still holds to its offer"
kc "$A" patch node "$VNODE" --subresource=status --type=merge \
  -p '{"status":{"capacity":{"cpu":"64","pods":"500"},"allocatable":{"cpu":"64","pods":"500"}}}' >/dev/null ||
  fail "cannot patch the virtual node's status on $A"
refused p5 1 "offer exceeded: cpu 1500m requested + 1 > 2 offered to $A"
admitted p5 500m
m=$(curl -s "http://127.0.0.1:$(http_port "$B")/metrics")
grep_q -E '^cliqo_admission_requests_total\{webhook="offer-enforcement",result="denied"\} [1-9]' <<<"$m" ||
  fail "no denied count on $B: $(grep cliqo_admission <<<"$m")"

say "$B's webhook gone (agent stopped, its configuration deleted): the ResourceQuota still holds the offer"
stop_agent "$B"
vwc=$(kc "$B" get validatingwebhookconfigurations -l app.kubernetes.io/managed-by=cliqo-agent -o name)
[ -n "$vwc" ] || fail "no validating webhook configuration of cliqo on $B"
kc "$B" delete $vwc >/dev/null || fail "cannot delete $vwc"
if err=$(vkpod p6 1 2>&1 >/dev/null); then fail "p6 admitted beyond the offer without the webhook"; fi
grep_q 'exceeded quota: cliqo-offer' <<<"$err" || fail "p6: not refused by the quota: $err"
admitted p6 0 # within the quota: the quota refuses what exceeds, nothing else
start_agent "$B"
wait_agent_ready "$B"
wait_for 30 "$B's agent configured its webhooks again" kc "$B" get $vwc
pass "admitted within the offer, refused beyond (cpu, pods) with the amounts, default requests counted, bursts held (named and generateName), other identities refused, the consumer's node capacity ignored, the quota holding without the webhook"
