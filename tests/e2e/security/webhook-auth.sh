#!/usr/bin/env bash
# Issue 17 point 4 (docs/security.md, "The webhooks authenticate the API server"), against B's webhooks:
#  (a) B's agent runs as every e2e agent does, with --webhook-client-ca (the CA of the client certificate
#      B's API server presents, made by cliqo-devenv). A forged AdmissionReview (A's pod, as A's virtual
#      kubelet) POSTed to B's webhook port fails in the TLS handshake, over TLS 1.2 and 1.3, without a client
#      certificate and with one of another CA that bears the right name, and B's webhook decides nothing;
#      the API server's own certificate is answered; A's offloaded pod is admitted on B (B's API server
#      authenticates).
#  (b) B's agent restarted without it (the fallback, which its log warns about). A loop of forged reviews
#      for pods that take A's whole offer (random names and UIDs) is answered: the refusals show no figures
#      nor the identity to claim, and each forged reservation ends 3 s after it was made (its pod never
#      appears): a pod of A is admitted within seconds of the last one (before, 15 s), and A's real pod,
#      created right after the loop, runs on B. B's agent is then restarted in the normal mode.
# B offers A fixed amounts meanwhile (cpu 2, pods 10), so every decision above is exact. Everything is
# restored on exit, B's agent authenticated again whatever happened.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
NS=e2e-webhook-auth
T=$(mktemp -d)
RNS=
B_UNAUTH=
cleanup() {
  kc "$A" delete pods -n "$NS" --all --grace-period=0 --force >/dev/null 2>&1 || true
  if [ -n "$B_UNAUTH" ]; then
    (stop_agent "$B") || true
    WEBHOOKS_UNAUTHENTICATED=
    B_UNAUTH=
  fi
  (ensure_agents) || true
  (unoffload_ns "$NS") || true
  (patch_config "$B" '{"spec":{"advertisementConfig":{"outgoingConfig":{"perCluster":null}}}}') || true
  rm -rf "$T"
}
sec_cleanup_on_exit cleanup
ids
wait_shared 60
VK=$(vk_user "$A_ID")
HOOK="https://127.0.0.1:$(webhook_port "$B")/validate-pods"
uuid() { cat /proc/sys/kernel/random/uuid; }
# The log of B's agent since its last start.
b_log() { awk '/^--- start / { buf = "" } { buf = buf $0 "\n" } END { printf "%s", buf }' "$(agent_log "$B")"; }
# Reviews B's offer enforcement has answered (any result).
offer_reviews() {
  curl -s --max-time 5 "http://127.0.0.1:$(http_port "$B")/metrics" |
    awk '/^cliqo_admission_requests_total\{webhook="offer-enforcement"/ { s += $2 } END { print s + 0 }'
}
# review NAME CPU [DRY-RUN [USER]]: the AdmissionReview B's API server would send for pod NAME in RNS
# created as A's virtual kubelet (or USER), requesting CPU, with fresh UIDs (the review's and the pod's).
review() {
  jq -nc --arg ns "$RNS" --arg name "$1" --arg cpu "$2" --argjson dry "${3:-false}" --arg user "${4:-$VK}" \
    --arg ruid "$(uuid)" --arg puid "$(uuid)" --arg origin "$A_ID" \
    '{apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: {uid: $ruid,
      kind: {group: "", version: "v1", kind: "Pod"}, resource: {group: "", version: "v1", resource: "pods"},
      requestKind: {group: "", version: "v1", kind: "Pod"}, namespace: $ns, name: $name, operation: "CREATE",
      userInfo: {username: $user}, dryRun: $dry,
      object: {apiVersion: "v1", kind: "Pod", metadata: {name: $name, namespace: $ns, uid: $puid,
        labels: {"virtualkubelet.liqo.io/origin": $origin}},
        spec: {containers: [{name: "c", image: "busybox", resources: {requests: {cpu: $cpu}}}]}}}}'
}
# post FILE [CURL-ARGS...]: POSTs the review in FILE to B's webhook; sets CODE (000: no HTTP answer) and RC
# (curl's exit status), the answer in $T/out.
post() {
  local f=$1
  shift
  RC=0
  CODE=$(curl -sS -o "$T/out" -w '%{http_code}' --max-time 10 --cacert "$T/ca.crt" "$@" \
    -H 'Content-Type: application/json' --data-binary @"$f" "$HOOK" 2>"$T/curl-err") || RC=$?
}
home_pod() { # NAME CPU: a pod of A in NS (offloaded: it runs on B)
  kc "$A" create -n "$NS" -f - >/dev/null <<EOF || fail "cannot create pod $1 on $A"
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "$2"}}}]
EOF
}
sent_cpu() { fc_field "$B" "$A_ID" '.status.advertisement.sent.resources.cpu // empty'; }

jpath "$B" '{.data.ca\.crt}' secret -n cliqo cliqo-webhook-certs | base64 -d >"$T/ca.crt"
b_log | grep_q 'the admission webhooks authenticate the API server' ||
  fail "B's agent does not say its webhooks authenticate the API server: $(b_log | grep -m1 'mod=admission')"

say "$B offers $A exactly cpu 2, memory 1Gi, pods 10; a namespace of $A offloaded to $B"
patch_config "$B" "{\"spec\":{\"advertisementConfig\":{\"outgoingConfig\":{\"perCluster\":[{\"clusterID\":\"$A_ID\",
  \"resources\":{\"cpu\":\"2\",\"memory\":\"1Gi\",\"pods\":\"10\"}}]}}}}"
wait_for 30 "the fixed offer sent (now cpu $(sent_cpu))" eval '[ "$(sent_cpu)" = 2 ]'
offload_ns "$NS"
[ "$(kc "$B" get pods -n "$RNS" -o name | grep -c .)" = 0 ] || fail "$RNS on $B already has pods"

say "(a) forged reviews without a client certificate, or with one of another CA, fail in the handshake"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=other-ca \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
  -keyout "$T/other-ca.key" -out "$T/other-ca.crt" 2>/dev/null || fail "openssl: other CA"
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=kube-apiserver-webhook-client \
  -keyout "$T/other.key" -out "$T/other.csr" 2>/dev/null &&
  openssl x509 -req -in "$T/other.csr" -CA "$T/other-ca.crt" -CAkey "$T/other-ca.key" -set_serial 7 -days 1 \
    -extfile <(printf 'extendedKeyUsage=clientAuth\n') -out "$T/other.crt" 2>/dev/null || fail "openssl: other certificate"
review forged-a 500m >"$T/forged.json"
before=$(offer_reviews)
for version in "--tlsv1.2 --tls-max 1.2" "--tlsv1.3"; do
  for who in none other-ca; do
    client=()
    [ "$who" = other-ca ] && client=(--cert "$T/other.crt" --key "$T/other.key")
    # shellcheck disable=SC2086 # the TLS version flags
    post "$T/forged.json" $version "${client[@]}"
    [ "$CODE" = 000 ] && [ "$RC" != 0 ] ||
      fail "a forged review ($who, $version) was answered HTTP $CODE: $(head -c 200 "$T/out")"
    say "  $who, $version: curl exit $RC ($(head -c 120 "$T/curl-err"))"
  done
done
[ "$(offer_reviews)" = "$before" ] || fail "B's offer enforcement decided on a forged review ($before -> $(offer_reviews))"
review api-server-probe 500m true >"$T/probe.json"
post "$T/probe.json" --cert "$(webhook_client_cert "$B")" --key "$(webhook_client_key "$B")"
[ "$CODE" = 200 ] && [ "$(jq -r .response.allowed "$T/out")" = true ] ||
  fail "the API server's certificate was not answered: HTTP $CODE rc $RC $(head -c 300 "$T/out")"
[ "$(offer_reviews)" = $((before + 1)) ] || fail "B's offer enforcement did not count the API server's review"

say "(a) $A's offloaded pod is admitted on $B"
home_pod real-a 100m
wait_for 60 "real-a running on $B" eval '[ "$(jget "$B" "{.status.phase}" pod -n "$RNS" real-a)" = Running ]'

say "(b) $B's agent restarted without --webhook-client-ca"
stop_agent "$B"
B_UNAUTH=1
WEBHOOKS_UNAUTHENTICATED=$B
ensure_agents
b_log | grep_q 'level=warn mod=admission msg="the admission webhooks are NOT authenticated' ||
  fail "B's agent does not warn that its webhooks are unauthenticated"
# real-a holds 100m: a forged pod of 1900m takes what is left of the offer.
review probe 1900m true >"$T/probe.json"
wait_for 30 "B's webhook decides again (offer known)" eval \
  'post "$T/probe.json"; [ "$CODE" = 200 ] && [ "$(jq -r .response.allowed "$T/out")" = true ]'

say "(b) a loop of forged reviews that fill $A's offer, for 4 s (longer, up to 30 s, until one is refused)"
# A forged reservation lasts 3 s: on a machine so busy that no two reviews go out within 3 s of each other,
# every one is admitted, so the loop goes on until one is refused (it was 2 admitted in 4 s at a load of 16).
: >"$T/loop"
end=$(($(date +%s%N) + 4000000000))
hard_end=$(($(date +%s%N) + 30000000000))
i=0
nrefused=0
while [ "$(date +%s%N)" -lt "$end" ] || { [ "$nrefused" = 0 ] && [ "$(date +%s%N)" -lt "$hard_end" ]; }; do
  i=$((i + 1))
  review "forged-$i-$RANDOM" 1900m >"$T/f.json"
  post "$T/f.json"
  [ "$CODE" = 200 ] || fail "forged review $i: HTTP $CODE $(head -c 200 "$T/out")"
  allowed=$(jq -r .response.allowed "$T/out")
  [ "$allowed" = false ] && nrefused=$((nrefused + 1))
  printf '%s\t%s\t%s\n' "$(date +%s%N)" "$allowed" "$(jq -r '.response.status.message // ""' "$T/out")" >>"$T/loop"
done
loop_end=$(date +%s%N)
home_pod real-b 100m # A's real pod, right after the loop
admitted=$(awk -F'\t' '$2 == "true"' "$T/loop" | wc -l)
refused=$(awk -F'\t' '$2 == "false"' "$T/loop" | wc -l)
last_admitted=$(awk -F'\t' '$2 == "true" { t = $1 } END { print t }' "$T/loop")
[ "$admitted" -ge 1 ] && [ "$refused" -ge 1 ] || fail "forged reviews: $admitted admitted, $refused refused"
bad=$(awk -F'\t' -v a="$A" '$2 == "false" && $3 != "offer exceeded: cpu does not fit the offer to " a' "$T/loop" | head -3)
[ -z "$bad" ] || fail "refusals of forged reviews other than the bare one (no figures): $bad"
say "  $i forged reviews: $admitted admitted (each reserving the rest of the offer), $refused refused with \"$(
  awk -F'\t' '$2 == "false" { print $3; exit }' "$T/loop")\""
# A refusal for the wrong identity does not say which one to claim.
review forged-who 100m false "system:serviceaccount:$(tenant_on_b "$A_ID"):default" >"$T/who.json"
post "$T/who.json"
msg=$(jq -r '.response.status.message // ""' "$T/out")
[ "$(jq -r .response.allowed "$T/out")" = false ] && [[ "$msg" == "only the virtual kubelet of $A may create pods in $RNS, not "* ]] ||
  fail "refusal for another identity: $msg"
grep_q -F "vk-$A_ID" <<<"$msg" && fail "the refusal names the identity to claim: $msg"

say "(b) the forged reservations end 3 s after they were made: a pod of $A is admitted again"
dry_ok() {
  kc "$B" --as="$VK" create --dry-run=server -n "$RNS" -f - >/dev/null 2>"$T/dry-err" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: dry-probe, labels: {virtualkubelet.liqo.io/origin: $A_ID}}
spec:
  containers: [{name: c, image: busybox, resources: {requests: {cpu: 500m}}}]
EOF
}
# Each probe's start is taken: a probe that starts more than 6 s after the last forged reservation must be
# admitted (the window is 3 s). How late the first probe starts depends on how busy the machine is (the steps
# above), not on the agent, so the time since the last forged review is no measure by itself.
while :; do
  started=$(date +%s%N)
  dry_ok && break
  late_ms=$(((started - last_admitted) / 1000000))
  grep_q -F "offer exceeded: cpu does not fit the offer to $A" "$T/dry-err" || fail "unexpected refusal: $(cat "$T/dry-err")"
  [ "$late_ms" -le 6000 ] ||
    fail "a pod of $A was refused $late_ms ms after the last forged reservation (the confirmation window is 3 s)"
  sleep 0.2
done
free_ms=$(((started - last_admitted) / 1000000))
echo "FIGURE forged-reservation-held-ms=$free_ms (the start of the first admitted probe: an upper bound)"
wait_for 30 "real-b (created right after the loop) running on $B" eval \
  '[ "$(jget "$B" "{.status.phase}" pod -n "$RNS" real-b)" = Running ]'
real_ms=$((($(date +%s%N) - loop_end) / 1000000))
echo "FIGURE real-pod-after-forged-loop-ms=$real_ms"
say "  admitted again $free_ms ms after the last forged reservation; real-b on $B $real_ms ms after the loop"

say "$B's agent restarted in the normal mode"
stop_agent "$B"
WEBHOOKS_UNAUTHENTICATED=
B_UNAUTH=
ensure_agents
b_log | grep_q 'the admission webhooks authenticate the API server' || fail "B's agent is not authenticated again"
post "$T/forged.json"
[ "$CODE" = 000 ] || fail "a forged review was answered HTTP $CODE after the restart"
kc "$A" delete pods -n "$NS" --all --wait=false >/dev/null
wait_shared 90
check_logs
pass "forged reviews refused in the handshake (TLS 1.2 and 1.3, no certificate or another CA); unauthenticated, forged reservations held ${free_ms} ms at most and no figures shown; A's pods admitted"
