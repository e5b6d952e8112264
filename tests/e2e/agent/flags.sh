#!/usr/bin/env bash
# cliqo-agent's command line: --help, --version, and one-line errors with exit status 2.
set -euo pipefail
: "${CLIQO_AGENT:?CLIQO_AGENT must name the cliqo-agent binary}"
TEST_NAME=${TEST_NAME:-agent.flags}
fail() { printf '[%s] FAIL: %s\n' "$TEST_NAME" "$*" >&2; exit 1; }
grep_q() { grep "$@" >/dev/null; }

out=$("$CLIQO_AGENT" --help) || fail "--help failed"
for f in --kubeconfig --namespace --http-addr --auth-addr --identity --leader-elect --lease-name \
  --lease-duration --renew-deadline --retry-period --shutdown-timeout --log-level --version; do
  grep -q -- "$f" <<<"$out" || fail "--help does not mention $f"
done
"$CLIQO_AGENT" --version | grep_q -E '^cliqo-agent [0-9]+\.[0-9]+\.[0-9]+$' || fail "--version"

check_bad() {
  local want=$1 rc=0 err
  shift
  err=$("$CLIQO_AGENT" "$@" 2>&1 >/dev/null) || rc=$?
  [ "$rc" = 2 ] || fail "'$*': exit status $rc, want 2"
  [ "$(wc -l <<<"$err")" = 1 ] || fail "'$*': error is not one line: $err"
  grep -qF -- "$want" <<<"$err" || fail "'$*': error '$err' does not say '$want'"
}
check_bad "unknown flag '--frobnicate'" --frobnicate
check_bad "--http-addr: invalid address 'nope'" --http-addr nope
check_bad "--namespace: missing value" --namespace
check_bad "--lease-duration: invalid duration '10'" --lease-duration 10
check_bad "--renew-deadline must be shorter than --lease-duration" --lease-duration 5s
check_bad "--leader-elect: expected true or false" --leader-elect=maybe
check_bad "--log-level" --log-level verbose
check_bad "unexpected argument 'run'" run
# A kubeconfig that does not exist is a runtime failure (1), with the file named.
rc=0
err=$("$CLIQO_AGENT" --kubeconfig /nonexistent/kubeconfig --http-addr 127.0.0.1:0 2>&1) || rc=$?
[ "$rc" = 1 ] || fail "missing kubeconfig: exit status $rc, want 1"
grep -q '/nonexistent/kubeconfig' <<<"$err" || fail "missing kubeconfig: error does not name the file: $err"
printf '[%s] PASS\n' "$TEST_NAME"
