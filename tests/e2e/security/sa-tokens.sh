#!/usr/bin/env bash
# No peer credential can obtain a token of a ServiceAccount (issue 17, point 2; docs/security.md): with each
# credential a peer really holds (A's and C's peering identities on B, the credential A handed B, A's virtual
# kubelet's credential on B), in every namespace where that credential may write Secrets, a
# `kubernetes.io/service-account-token` Secret for any ServiceAccount there is refused, and so is a TokenRequest
# for any ServiceAccount of those namespaces, of kube-system and of cliqo. Nothing is created.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
T=$(mktemp -d)
HOME_NS=e2e-sec-tokens
cleanup() {
  cq "$A" unoffload namespace "$HOME_NS"
  kc "$A" delete namespace "$HOME_NS" --wait=false
  rm -rf "$T"
}
sec_cleanup_on_exit cleanup
ensure_agents
ids
wait_shared 60
# A namespace B made for A, where A's virtual kubelet writes Secrets (reflection).
kc "$A" create namespace "$HOME_NS" >/dev/null
cq "$A" offload namespace "$HOME_NS" --strategy Remote >/dev/null || fail "cannot offload $HOME_NS"
REMOTE_NS=$HOME_NS-$A-$(printf %s "$A_ID" | sha256sum | cut -c1-6)
wait_for 60 "B made namespace $REMOTE_NS" kc "$B" get namespace "$REMOTE_NS"
wait_for 30 "A's virtual kubelet may write Secrets in $REMOTE_NS" eval \
  "[ \"\$(kc $B auth can-i create secrets -n $REMOTE_NS --as=$(vk_user "$A_ID"))\" = yes ]"

# secret_kubeconfig CLUSTER NS NAME FILE: the kubeconfig key of a Secret, as its holder keeps it.
secret_kubeconfig() {
  jpath "$1" '{.data.kubeconfig}' secret -n "$2" "$3" | base64 -d >"$4"
  [ -s "$4" ] || fail "no kubeconfig in Secret $2/$3 of $1"
}
secret_kubeconfig "$A" cliqo "remote-identity-$B_ID" "$T/a-identity"
secret_kubeconfig "$C" cliqo "remote-identity-$B_ID" "$T/c-identity"
secret_kubeconfig "$A" "$(tenant_of "$B")" "vk-kubeconfig-secret-$B_ID" "$T/a-vk"
secret_kubeconfig "$B" "$(tenant_on_b "$A_ID")" "pr-$A_ID" "$T/b-on-a"

tried=0
# attack CREDENTIAL_FILE TARGET_CLUSTER LABEL: every request with the credential goes through curl (cred_api in
# lib.sh: a tenth of a kubectl call); the answer must be a refusal whose message says forbidden or denied.
attack() {
  local cred=$1 target=$2 label=$3 ns sa out code dir
  local -a writable=()
  dir=$T/cred-$((++ncred))
  cred_init "$cred" "$dir" || fail "$label: cannot read the credential in $cred"
  for ns in $(jpath "$target" '{.items[*].metadata.name}' namespaces); do
    [ "$(cred_can_i "$dir" create secrets "$ns")" = yes ] && writable+=("$ns")
  done
  [ "${#writable[@]}" -gt 0 ] || fail "$label: may write Secrets nowhere (the test would prove nothing)"
  say "$label writes Secrets in: ${writable[*]}"
  # refused WHAT: the last answer (body, then its status on the last line) is a refusal, nothing was made.
  refused() {
    code=$(tail -1 <<<"$out")
    case "$code" in
      2??) return 1 ;;
    esac
    grep_q -i 'forbidden\|denied' <<<"$out" || fail "$label, $1: unexpected answer $code: $out"
  }
  for ns in "${writable[@]}"; do
    for sa in $(jpath "$target" '{.items[*].metadata.name}' serviceaccounts -n "$ns"); do
      tried=$((tried + 1))
      out=$(cred_api "$dir" POST "/api/v1/namespaces/$ns/secrets" "$(printf \
        '{"apiVersion":"v1","kind":"Secret","type":"kubernetes.io/service-account-token","metadata":{"name":"e2e-stolen-%s","annotations":{"kubernetes.io/service-account.name":"%s"}}}' \
        "$sa" "$sa")") || fail "$label: no answer to a token Secret for $ns/$sa"
      if ! refused "token Secret for $ns/$sa"; then
        kc "$target" delete secret -n "$ns" "e2e-stolen-$sa" >/dev/null 2>&1
        fail "$label created a token Secret for ServiceAccount $ns/$sa"
      fi
    done
  done
  for ns in "${writable[@]}" kube-system cliqo; do
    for sa in $(jpath "$target" '{.items[*].metadata.name}' serviceaccounts -n "$ns"); do
      tried=$((tried + 1))
      out=$(cred_api "$dir" POST "/api/v1/namespaces/$ns/serviceaccounts/$sa/token" \
        '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}') ||
        fail "$label: no answer to a TokenRequest for $ns/$sa"
      refused "TokenRequest for $ns/$sa" ||
        fail "$label obtained a token of ServiceAccount $ns/$sa through the TokenRequest API"
      [ "$code" = 403 ] || fail "$label, TokenRequest for $ns/$sa: $code instead of 403: $out"
    done
  done
}
ncred=0
attack "$T/a-identity" "$B" "A's peering identity on B"
attack "$T/c-identity" "$B" "C's peering identity on B"
attack "$T/a-vk" "$B" "A's virtual kubelet on B"
attack "$T/b-on-a" "$A" "B's credential on A"
# The virtual kubelet must have been able to write in the namespace made for A (else the attack was not tried there).
cred_init "$T/a-vk" "$T/cred-vk" && [ "$(cred_can_i "$T/cred-vk" create secrets "$REMOTE_NS")" = yes ] ||
  fail "A's virtual kubelet cannot write Secrets in $REMOTE_NS: the test did not reach that namespace"
cq "$A" unoffload namespace "$HOME_NS" >/dev/null || fail "cannot unoffload $HOME_NS"
kc "$A" delete namespace "$HOME_NS" --wait=false >/dev/null
wait_for 60 "$REMOTE_NS gone from $B" eval "! kc $B get namespace $REMOTE_NS"
pass "$tried attempts to obtain a ServiceAccount token with a peer's credential, all refused"
