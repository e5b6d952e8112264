#!/usr/bin/env bash
# `kubectl exec` in a simulated container through the real API server and the simulator's kubelet
# API (SPDY/3.1, remotecommand v4): stdout and stderr apart, exit codes, stdin with -i (binary-safe),
# a terminal with -t (line discipline, prompt, exit code), the WebSocket attempt of a current kubectl
# falling back to SPDY, and the errors of an unknown or stopped container.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
ns=e2e-kla-exec
TTYRUN=$(dirname "$0")/ttyrun.py
fresh_ns "$c" "$ns"
wait_sa "$ns"
kc "$c" -n "$ns" create -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: shell}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox:1.36
    env: [{name: GREETING, value: "hello there"}]
YAML
wait_for 30 "shell Running" pod_phase_is "$ns" shell Running
x() { kc "$c" -n "$ns" exec "$@"; }

# stdout, stderr, exit codes.
[ "$(x shell -- echo hello world)" = "hello world" ] || fail "echo"
x shell -- sh -c 'echo to-out; echo to-err >&2; exit 7' >"$E2E_STATE/out" 2>"$E2E_STATE/err" && fail "exit 7 reported success"
rc=0
x shell -- sh -c 'exit 7' 2>/dev/null || rc=$?
[ "$rc" = 7 ] || fail "sh -c 'exit 7' gave exit code $rc"
[ "$(cat "$E2E_STATE/out")" = to-out ] || fail "stdout: $(cat "$E2E_STATE/out")"
head -1 "$E2E_STATE/err" | grep_q -x to-err || fail "stderr: $(cat "$E2E_STATE/err")"
grep -q 'command terminated with exit code 7' "$E2E_STATE/err" || fail "kubectl did not report exit code 7"
rc=0
x shell -- false 2>/dev/null || rc=$?
[ "$rc" = 1 ] || fail "false gave $rc"
rc=0
out=$(x shell -- no-such-command 2>&1) || rc=$?
[ "$rc" = 127 ] && grep -q 'executable file not found' <<<"$out" || fail "unknown command: rc $rc, $out"
[ "$(x shell -- hostname)" = shell ] || fail "hostname"
[ "$(x shell -- printenv GREETING)" = "hello there" ] || fail "printenv GREETING"
x shell -- env | grep_q -x 'HOSTNAME=shell' || fail "env lacks HOSTNAME"
[ "$(x shell -- sh -c 'false || echo "or: $?"; true && echo and; echo "${GREETING}"')" = "$(printf 'or: 1\nand\nhello there')" ] ||
  fail "sh -c lists and expansions"
t0=$(date +%s%N)
x shell -- sleep 1.2
[ $((($(date +%s%N) - t0) / 1000000)) -ge 1200 ] || fail "sleep 1.2 returned early"
say "stdout, stderr, exit codes 0/1/7/127, env, sleep"

# stdin with -i: text, then 1 MiB of random bytes, byte for byte.
[ "$(printf 'one\ntwo\n' | x -i shell -- cat)" = "$(printf 'one\ntwo')" ] || fail "cat of stdin"
head -c 1048576 /dev/urandom >"$E2E_STATE/in.bin"
x -i shell -- cat <"$E2E_STATE/in.bin" >"$E2E_STATE/out.bin" || fail "binary cat failed"
cmp "$E2E_STATE/in.bin" "$E2E_STATE/out.bin" || fail "binary round trip differs"
[ "$(printf 'exit 4\n' | x -i shell -- sh 2>/dev/null; echo "rc=$?")" = "rc=4" ] || fail "sh reading commands from stdin"
say "stdin: text, 1 MiB binary round trip, a shell reading its commands"

# A terminal: prompt, echo, CR LF, the exit code; stderr goes to the terminal.
out=$("$TTYRUN" --expect '# ' --send 'echo hi $HOSTNAME\r' --expect 'hi shell' --send 'echo oops >&2\r' \
  --expect 'oops' --send 'exit 5\r' -- "$KUBECTL" --kubeconfig "$E2E_STATE/$c/kubeconfig" -n "$ns" exec -it shell -- sh)
python3 - "$out" <<'PY' || fail "terminal session: $out"
import ast, sys
raw, status = sys.argv[1].rsplit("\n", 1)
data = ast.literal_eval(raw)
assert status == "exit 5", status
assert data.startswith(b"# echo hi $HOSTNAME\r\nhi shell\r\n# echo oops >&2\r\noops\r\n# exit 5\r\n"), data
PY
# ^C interrupts.
out=$("$TTYRUN" --expect '# ' --send 'sleep 30\r' --send '\x03' -- "$KUBECTL" --kubeconfig "$E2E_STATE/$c/kubeconfig" -n "$ns" exec -it shell -- sh)
grep -q 'exit 130' <<<"$out" || fail "^C did not end with 130: $out"
say "terminal: prompt, echo, CR LF, stderr merged, exit code, ^C"

# Both transports of the client: the WebSocket attempt (refused, kubectl falls back) and SPDY directly.
[ "$(KUBECTL_REMOTE_COMMAND_WEBSOCKETS=true x shell -- echo ws)" = ws ] || fail "exec with the WebSocket attempt"
[ "$(KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false x shell -- echo spdy)" = spdy ] || fail "exec over SPDY directly"

# Errors: an unknown container, a container that is not running.
out=$(x shell -c nope -- true 2>&1) && fail "exec in an unknown container succeeded"
grep -q 'container nope is not valid' <<<"$out" || fail "unknown container: $out"
kc "$c" -n "$ns" annotate pod shell sim.cliqo.io/fail=0 >/dev/null
wait_for 30 "shell Succeeded" pod_phase_is "$ns" shell Succeeded
out=$(x shell -- true 2>&1) && fail "exec in a completed pod succeeded"
grep -qi 'completed pod\|not running' <<<"$out" || fail "completed pod: $out"
grep -qE 'AddressSanitizer|runtime error:' "$E2E_STATE/$c/logs/nodesim.log" && fail "sanitizer report in the nodesim log"
kc "$c" delete namespace "$ns" --wait=false >/dev/null
pass
