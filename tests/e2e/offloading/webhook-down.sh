#!/usr/bin/env bash
# The pod webhook when A's agent is down, and its certificates' rotation (docs/offloading.md, "Admission"):
# with the agent stopped, a pod in a namespace that is not offloaded is admitted (the namespaceSelector keeps it
# away from the webhook) and one in an offloaded namespace is refused with the webhook's error (failurePolicy
# Fail: admitted unmutated it would silently run locally); with the agent back it is admitted and mutated. Then
# a forced CA rotation and a forced serving-certificate renewal (annotation admission.cliqo.io/rotate on Secret
# cliqo-webhook-certs) while pods are admitted continuously (server-side dry runs, which go through the
# webhooks): not one refused, both CAs in every caBundle until the old one expires, the new certificate served.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
OFF=e2e-down-off
PLAIN=e2e-down-plain
T=$(mktemp -d)
LOOP_PID=

cleanup() {
  [ -n "$LOOP_PID" ] && kill "$LOOP_PID" 2>/dev/null
  ensure_agents
  for n in "$OFF" "$PLAIN"; do kc "$A" delete pods -n "$n" --all --grace-period=0 --force >/dev/null 2>&1 || true; done
  cq "$A" unoffload namespace "$OFF" >/dev/null 2>&1 || true
  kc "$A" delete namespace "$OFF" "$PLAIN" --ignore-not-found --wait=true --timeout=60s
  rm -rf "$T"
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

labelled() { [ "$(jget "$A" '{.metadata.labels.liqo\.io/scheduling-enabled}' namespace "$1")" = true ]; }
secret() { jpath "$A" "{.data.${1//./\\.}}" secret -n cliqo cliqo-webhook-certs | base64 -d; }
bundle() { jpath "$A" '{.webhooks[0].clientConfig.caBundle}' "$1" "$2" | base64 -d; }
vk_tolerated() {
  [ "$(jpath "$A" '{.spec.tolerations[?(@.key=="virtual-node.liqo.io/not-allowed")].effect}' pod -n "$OFF" "$1")" = NoExecute ]
}

kc "$A" create namespace "$OFF" >/dev/null
kc "$A" create namespace "$PLAIN" >/dev/null
cq "$A" offload namespace "$OFF" --strategy Remote >/dev/null || fail "offload $OFF"
wait_for 20 "$OFF labelled" labelled "$OFF"
for n in "$OFF" "$PLAIN"; do wait_default_sa "$A" "$n"; done
kc "$A" run warm -n "$OFF" --image=busybox --restart=Never >/dev/null || fail "the webhook refused a pod while up"
vk_tolerated warm || fail "the pod was not mutated while the webhook is up"

say "agent of $A stopped: a plain namespace is not affected, an offloaded one refuses with the webhook's error"
stop_agent "$A"
kc "$A" run p1 -n "$PLAIN" --image=busybox --restart=Never >/dev/null 2>&1 ||
  fail "a pod in a namespace that is not offloaded was refused with the agent stopped"
rc=0
err=$(kc "$A" run p1 -n "$OFF" --image=busybox --restart=Never 2>&1) || rc=$?
[ "$rc" != 0 ] || fail "a pod in an offloaded namespace was admitted (unmutated) with the agent stopped"
grep -q 'failed calling webhook "pods.offloading.cliqo.io"' <<<"$err" || fail "not the webhook's error: $err"
kc "$A" get pod -n "$OFF" p1 >/dev/null 2>&1 && fail "the refused pod exists"

say "agent back: admitted and mutated"
ensure_agents
wait_for 30 "a pod admitted again" kc "$A" run p1 -n "$OFF" --image=busybox --restart=Never
vk_tolerated p1 || fail "the pod admitted after the restart was not mutated"

say "forced CA rotation and serving renewal while pods are admitted continuously"
ca0=$(secret ca.crt)
tls0=$(secret tls.crt)
[ -n "$ca0" ] && [ -n "$tls0" ] || fail "no certificates in Secret cliqo-webhook-certs"
# Server-side dry runs go through both webhooks (sideEffects None) without leaving pods behind.
(
  i=0
  while [ ! -e "$T/stop" ]; do
    i=$((i + 1))
    if out=$(kc "$A" run "rot-$i" -n "$OFF" --image=busybox --restart=Never --dry-run=server -o \
      jsonpath='{.spec.tolerations[?(@.key=="virtual-node.liqo.io/not-allowed")].effect}' 2>&1) &&
      [ "$out" = NoExecute ]; then
      echo ok >>"$T/results"
    else
      echo "refused: $out" >>"$T/results"
    fi
    sleep 0.2
  done
) &
LOOP_PID=$!
sleep 2
# Bundles hold the CA, and a previous one until it expires when the group's clusters are reused: one more each.
nm=$(($(bundle mutatingwebhookconfiguration cliqo-pod-offloading | grep -c 'BEGIN CERTIFICATE') + 1))
nv=$(($(bundle validatingwebhookconfiguration cliqo-offer-enforcement | grep -c 'BEGIN CERTIFICATE') + 1))
kc "$A" annotate secret -n cliqo cliqo-webhook-certs admission.cliqo.io/rotate=ca >/dev/null || fail "annotate"
wait_for 20 "the next CA published in both configurations" eval \
  "[ \$(bundle mutatingwebhookconfiguration cliqo-pod-offloading | grep -c 'BEGIN CERTIFICATE') = $nm ] &&
   [ \$(bundle validatingwebhookconfiguration cliqo-offer-enforcement | grep -c 'BEGIN CERTIFICATE') = $nv ]"
[ "$(secret ca.crt)" = "$ca0" ] || fail "the CA signed with the new key before the bundles trusted it"
wait_for 60 "the next CA promoted" eval "[ \"\$(secret ca.crt)\" != \"\$ca0\" ]"
ca1=$(secret ca.crt)
[ "$(secret ca-previous.crt)" = "$ca0" ] || fail "the old CA is not kept as previous"
[ -z "$(secret ca-next.crt)" ] || fail "ca-next.crt left after the promotion"
[ -z "$(jpath "$A" '{.metadata.annotations.admission\.cliqo\.io/rotate}' secret -n cliqo cliqo-webhook-certs)" ] ||
  fail "the rotate annotation was not removed"
for cfg in "mutatingwebhookconfiguration cliqo-pod-offloading" "validatingwebhookconfiguration cliqo-offer-enforcement"; do
  b=$(bundle $cfg)
  grep -qF "$(sed -n 2p <<<"$ca0")" <<<"$b" && grep -qF "$(sed -n 2p <<<"$ca1")" <<<"$b" ||
    fail "$cfg does not trust both CAs"
done
printf '%s\n' "$ca1" >"$T/ca1.crt"
verified() {
  openssl s_client -connect "127.0.0.1:$(webhook_port "$A")" -CAfile "$T/ca1.crt" -verify_return_error \
    -cert "$(webhook_client_cert "$A")" -key "$(webhook_client_key "$A")" \
    </dev/null 2>&1 | grep_q 'Verify return code: 0 (ok)'
}
wait_for 20 "the agent serves a certificate of the new CA" verified
kc "$A" annotate secret -n cliqo cliqo-webhook-certs admission.cliqo.io/rotate=serving >/dev/null || fail "annotate"
wait_for 30 "the serving certificate renewed" eval "[ \"\$(secret tls.crt)\" != \"\$tls0\" ] && [ \"\$(secret ca.crt)\" = \"\$ca1\" ]"
tls1=$(secret tls.crt)
wait_for 20 "the renewed certificate served" eval \
  "[ \"\$(openssl s_client -connect 127.0.0.1:$(webhook_port "$A") -cert $(webhook_client_cert "$A") \
      -key $(webhook_client_key "$A") </dev/null 2>/dev/null | openssl x509 -noout -fingerprint)\" = \
     \"\$(openssl x509 -noout -fingerprint <<<\"\$tls1\")\" ]"
sleep 2
touch "$T/stop"
wait "$LOOP_PID" 2>/dev/null || true
LOOP_PID=
n=$(grep -c '^ok$' "$T/results" || true)
bad=$(grep -c '^refused' "$T/results" || true)
[ "$bad" = 0 ] || fail "$bad of $((n + bad)) requests refused during the rotation: $(grep -m3 refused "$T/results")"
[ "$n" -ge 10 ] || fail "only $n requests made during the rotation"
echo "FIGURE admitted-during-rotation=$n"
pass "agent down: plain admitted, offloaded refused; back: admitted; CA and serving rotation with $n requests, none refused"
