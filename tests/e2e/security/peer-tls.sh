#!/usr/bin/env bash
# Issue 17 point 3: a peer's credential cannot weaken TLS. C, with the credential it really holds on B
# (Secret remote-identity-<B> in C's cliqo namespace), rewrites the kubeconfig Secret its PeeringRequest
# on B names (the credential B uses towards C) to one with insecure-skip-tls-verify: true, then one
# without a CA, then one with an http:// server, each pointing at a local listener. B's agent refuses
# each: the PeeringRequest's status says Pending/InvalidKubeconfig with the reason, B's log has it, and
# nothing connects to the listener. C's original Secret is restored and the request is Accepted again.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
ids

WORK="$E2E_STATE/peer-tls"
LPORT=$((CLIQO_DEV_BASE_PORT + 40))
LPID=""
RESTORE=""
rm -rf "$WORK"
mkdir -p "$WORK"
ckc() { "$KUBECTL" --kubeconfig "$WORK/c-on-b" --request-timeout=20s "$@"; }
restore() {
  [ -n "$RESTORE" ] || return 0
  ckc -n "$CNS" patch secret "$SECRET" --type=merge -p "{\"data\":{\"kubeconfig\":\"$RESTORE\"}}" >/dev/null
}
on_exit() {
  local rc=$?
  restore || rc=1
  [ -n "$LPID" ] && kill "$LPID" 2>/dev/null
  (exit "$rc")
  sec_on_exit
}
trap on_exit EXIT

say "C's credential on B, from C's Secret remote-identity-$B_ID"
jpath "$C" '{.data.kubeconfig}' secret -n cliqo "remote-identity-$B_ID" | base64 -d >"$WORK/c-on-b"
[ -s "$WORK/c-on-b" ] || fail "C holds no credential on B"
CNS=$(tenant_on_b "$C_ID")
[ -n "$CNS" ] && [ "$CNS" != null ] || fail "C's tenant namespace on B is unknown"
SECRET=$(ckc -n "$CNS" get peeringrequest "$C_ID" -o jsonpath='{.spec.kubeConfigRef.name}')
[ -n "$SECRET" ] || fail "C's PeeringRequest on B names no kubeconfig Secret"
RESTORE=$(ckc -n "$CNS" get secret "$SECRET" -o jsonpath='{.data.kubeconfig}')
[ -n "$RESTORE" ] || fail "cannot read Secret $CNS/$SECRET with C's credential"
pr_field() { jget "$B" "$1" peeringrequest -n "$CNS" "$C_ID"; }
[ "$(pr_field '{.status.phase}')" = Accepted ] || fail "C's PeeringRequest on B is not Accepted to begin with"

say "a listener on 127.0.0.1:$LPORT that records every connection"
python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16)
open(sys.argv[2], "w").close()
while True:
    c, a = s.accept()
    with open(sys.argv[2], "a") as f: f.write("connection from %s:%d\n" % a)
    c.close()
' "$LPORT" "$WORK/connections" &
LPID=$!
wait_for 10 "the listener" test -e "$WORK/connections"

# variant NAME JQ REASON: C writes its kubeconfig changed by JQ; B must refuse it with REASON.
variant() {
  local name=$1 filter=$2 reason=$3 b64
  b64=$(base64 -d <<<"$RESTORE" | jq -c "$filter" | base64 -w0) || fail "cannot build the $name kubeconfig"
  say "$name: C rewrites Secret $CNS/$SECRET on B"
  ckc -n "$CNS" patch secret "$SECRET" --type=merge -p "{\"data\":{\"kubeconfig\":\"$b64\"}}" >/dev/null ||
    fail "C cannot rewrite its Secret on B"
  wait_for 30 "B to refuse the $name kubeconfig in the PeeringRequest's status" \
    eval '[ "$(pr_field "{.status.reason}")" = InvalidKubeconfig ] && pr_field "{.status.message}" | grep_q -F -- "$reason"'
  [ "$(pr_field '{.status.phase}')" = Pending ] || fail "$name: the PeeringRequest is not Pending"
  grep_q -F -- "$reason" "$(agent_log "$B")" || fail "$name: B's log does not say why"
  say "  refused: $(pr_field '{.status.message}')"
}
SRV=".clusters[].cluster.server"
variant insecure "$SRV = \"https://127.0.0.1:$LPORT\" | .clusters[].cluster |= (del(.\"certificate-authority-data\") | .\"insecure-skip-tls-verify\" = true)" \
  "insecure-skip-tls-verify: true is refused"
variant "without a CA" "$SRV = \"https://127.0.0.1:$LPORT\" | .clusters[].cluster |= del(.\"certificate-authority-data\")" \
  "certificate-authority-data is missing"
variant "http://" "$SRV = \"http://127.0.0.1:$LPORT\"" "a peer's kubeconfig must use https://"
[ ! -s "$WORK/connections" ] || fail "B connected to the peer's server: $(cat "$WORK/connections")"

say "restore C's Secret; B accepts the request again"
restore || fail "cannot restore C's Secret on B"
RESTORE=""
wait_for 30 "C's PeeringRequest Accepted again" eval '[ "$(pr_field "{.status.phase}")" = Accepted ]'
[ ! -s "$WORK/connections" ] || fail "B connected to the peer's server: $(cat "$WORK/connections")"
pass "insecure, CA-less and http:// credentials refused with their reasons; no connection; restored"
