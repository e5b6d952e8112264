#!/usr/bin/env bash
# A namespace B has just made for A takes no pods until B's service account controller has made its default
# ServiceAccount: meanwhile B's API server refuses every pod there (403 "error looking up service account").
# That is not B refusing A's pod, and A's virtual kubelet does not report it as one: it sends the pod again
# every 250 ms (NOT_READY_MS, src/offloading/pods.c) with no ProviderRefused status or Event on the home pod,
# and the pod runs on B as soon as the account is there. To hold the namespace in that state, B's
# kube-controller-manager (which makes the account) is stopped while A offloads the namespace.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
NS=e2e-sec-notready
CM_DOWN=0
cleanup() {
  [ "$CM_DOWN" = 1 ] && "$CLIQOCTL" dev start --cluster "$B" --component kube-controller-manager
  cq "$A" unoffload namespace "$NS"
  kc "$A" delete namespace "$NS" --wait=false
}
sec_cleanup_on_exit cleanup
ensure_agents
ids
wait_shared 60

say "B's kube-controller-manager stopped; A offloads $NS and runs a pod there"
CM_DOWN=1
"$CLIQOCTL" dev stop --cluster "$B" --component kube-controller-manager >/dev/null ||
  fail "cannot stop B's kube-controller-manager"
kc "$A" create namespace "$NS" >/dev/null
cq "$A" offload namespace "$NS" --strategy Remote >/dev/null || fail "cannot offload $NS"
# (offload_ns in common.sh would wait for B's account, which cannot come now)
wait_for 30 "the remote name of $NS" has_remote_name "$NS"
REMOTE_NS=$(remote_name_of "$NS")
wait_for 60 "B made namespace $REMOTE_NS" kc "$B" get namespace "$REMOTE_NS"
kc "$B" get serviceaccount default -n "$REMOTE_NS" >/dev/null 2>&1 &&
  fail "$REMOTE_NS on B has its default ServiceAccount with B's controller-manager stopped"
wait_default_sa "$A" "$NS"
kc "$A" run -n "$NS" web --image=busybox --restart=Never >/dev/null
wait_for 60 "A's virtual kubelet told that $REMOTE_NS takes no pods yet" \
  grep -q "pod $NS/web: its namespace takes no pods yet" "$(agent_log "$A")"
# The checks below come within the virtual kubelet's 10 s of patience (NOT_READY_TRIES): after it, a
# namespace still without its account is reported as a refusal, as it should be with B's controllers down.
sleep 1 # about four more attempts
refused_status() { jget "$A" '{.status.conditions[?(@.type=="PodScheduled")].reason}' pod -n "$NS" web; }
[ "$(refused_status)" != ProviderRefused ] || fail "the home pod shows a refusal: $(jget "$A" '{.status}' pod -n "$NS" web)"
refusals() { kc "$A" get events -n "$NS" --field-selector reason=ProviderRefused -o name; }
[ -z "$(refusals)" ] || fail "a ProviderRefused Event on A: $(refusals)"
[ "$(jget "$B" '{.items[*].metadata.name}' pods -n "$REMOTE_NS")" = "" ] || fail "a pod on B without its namespace's account"
say "the home pod Pending, with neither a refusal status nor a refusal Event"

say "B's kube-controller-manager started again: the account comes, and the pod runs on B"
"$CLIQOCTL" dev start --cluster "$B" --component kube-controller-manager >/dev/null ||
  fail "cannot start B's kube-controller-manager"
CM_DOWN=0
wait_for 90 "the home pod Running" eval '[ "$(jget $A "{.status.phase}" pod -n $NS web)" = Running ]'
[ "$(jget "$B" '{.items[*].metadata.name}' pods -n "$REMOTE_NS")" = web ] || fail "not exactly one copy of web on B"
pass "a namespace without its service account yet held the pod back, without a refusal, until it had one"
