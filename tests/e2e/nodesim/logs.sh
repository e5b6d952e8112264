#!/usr/bin/env bash
# `kubectl logs` of a simulated container through the real API server and the simulator's kubelet
# API: the deterministic lines, --tail, --timestamps, --limit-bytes, --since, -f showing lines as
# they come (and ending when the container stops), --previous after a restart, and the errors of a
# waiting container or an unknown one.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
ns=e2e-kla-logs
fresh_ns "$c" "$ns"
wait_sa "$ns"
kc "$c" -n "$ns" create -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: ticker}
spec:
  restartPolicy: Always
  containers: [{name: main, image: busybox:1.36}]
YAML
wait_for 30 "ticker Running" pod_phase_is "$ns" ticker Running
sleep 3 # a few lines

# The whole log: the start line, then one line per second, numbered.
kc "$c" -n "$ns" logs ticker >"$E2E_STATE/ticker.log" || fail "kubectl logs failed"
python3 - "$E2E_STATE/ticker.log" "$ns" <<'PY' || fail "the log is not the simulator's deterministic log"
import sys
lines = open(sys.argv[1]).read().split("\n")
assert lines[-1] == "", "no final newline"
lines = lines[:-1]
assert lines[0] == "nodesim: container main of pod %s/ticker started (image busybox:1.36, restart 0)" % sys.argv[2], lines[0]
assert len(lines) >= 3, lines
for k, l in enumerate(lines[1:], 1):
    assert l == "nodesim: main is running, tick %d" % k, (k, l)
PY
say "logs: $(wc -l <"$E2E_STATE/ticker.log") lines, numbered from the start"

# --tail, --timestamps (RFC 3339 with nanoseconds, the line's second = startedAt + tick).
started=$(jp pod/ticker '{.status.containerStatuses[0].state.running.startedAt}' -n "$ns")
out=$(kc "$c" -n "$ns" logs ticker --tail 2)
[ "$(wc -l <<<"$out")" = 2 ] || fail "--tail 2 gave: $out"
python3 - "$out" <<'PY' || fail "--tail 2 lines are not the last two ticks: $out"
import sys
a, b = sys.argv[1].split("\n")
ta, tb = int(a.rsplit(" ", 1)[1]), int(b.rsplit(" ", 1)[1])
assert tb == ta + 1 and tb >= 3, (ta, tb)
PY
out=$(kc "$c" -n "$ns" logs ticker --tail 1 --timestamps)
python3 - "$out" "$started" <<'PY' || fail "--timestamps line is wrong: $out (started $started)"
import datetime, re, sys
m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.000000000Z nodesim: main is running, tick (\d+)", sys.argv[1])
assert m, sys.argv[1]
t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")
s = datetime.datetime.strptime(sys.argv[2], "%Y-%m-%dT%H:%M:%SZ")
assert (t - s).total_seconds() == int(m.group(2)), (t, s, m.group(2))
PY
[ "$(kc "$c" -n "$ns" logs ticker --limit-bytes 10)" = "nodesim: c" ] || fail "--limit-bytes 10 is not the first 10 bytes"
out=$(kc "$c" -n "$ns" logs ticker --since 2s)
n=$(wc -l <<<"$out")
[ "$n" -ge 2 ] && [ "$n" -le 4 ] && ! grep -q started <<<"$out" || fail "--since 2s gave $n lines: $out"
say "--tail, --timestamps, --limit-bytes, --since"

# -f: the lines come as they are written (one a second), kubectl keeps reading.
python3 - "$KUBECTL" "$E2E_STATE/$c/kubeconfig" "$ns" <<'PY' || fail "logs -f did not stream"
import subprocess, sys, time
p = subprocess.Popen([sys.argv[1], "--kubeconfig", sys.argv[2], "-n", sys.argv[3], "logs", "-f", "ticker", "--tail", "1"],
                     stdout=subprocess.PIPE, text=True)
seen, t0 = [], time.monotonic()
while time.monotonic() - t0 < 4.5:
    line = p.stdout.readline()
    if not line:
        break
    seen.append((time.monotonic() - t0, line.strip()))
p.kill()
ticks = [int(l.rsplit(" ", 1)[1]) for _, l in seen]
assert len(ticks) >= 4 and ticks == list(range(ticks[0], ticks[0] + len(ticks))), seen
assert seen[-1][0] - seen[0][0] >= 2.0, ("lines did not arrive over time", seen)
PY
say "logs -f shows new lines as they come"

# --previous: none before a restart; after one, the log of the instance that exited.
out=$(kc "$c" -n "$ns" logs ticker --previous 2>&1) && fail "--previous succeeded without a restart"
grep -q 'previous terminated container "main" in pod "ticker" not found' <<<"$out" || fail "--previous error: $out"
# A follower sees the container stop: the exit line ends its stream.
kc "$c" -n "$ns" logs -f ticker --tail 0 >"$E2E_STATE/follow.log" 2>&1 &
follower=$!
sleep 1.5
kc "$c" -n "$ns" annotate pod ticker sim.cliqo.io/fail=3 >/dev/null
crashing() { [ "$(jp pod/ticker '{.status.containerStatuses[0].state.waiting.reason}' -n "$ns")" = CrashLoopBackOff ]; }
wait_for 30 "ticker crash-looping" crashing
for _ in $(seq 50); do pid_running "$follower" || break; sleep 0.2; done
pid_running "$follower" && { kill "$follower"; fail "logs -f kept running after the container stopped"; }
wait "$follower" || fail "logs -f ended with an error: $(cat "$E2E_STATE/follow.log")"
tail -1 "$E2E_STATE/follow.log" | grep_q -x 'nodesim: container main exited with code 3' ||
  fail "logs -f did not end with the exit line: $(tail -3 "$E2E_STATE/follow.log")"
out=$(kc "$c" -n "$ns" logs ticker 2>&1) && fail "logs of a waiting container succeeded: $out"
grep -q 'is waiting to start: CrashLoopBackOff' <<<"$out" || fail "waiting container error: $out"
prev=$(kc "$c" -n "$ns" logs ticker --previous) || fail "--previous after the restart failed"
head -1 <<<"$prev" | grep_q 'started (image busybox:1.36, restart 0)$' || fail "--previous first line: $(head -1 <<<"$prev")"
[ "$(tail -1 <<<"$prev")" = "nodesim: container main exited with code 3" ] || fail "--previous last line: $(tail -1 <<<"$prev")"
kc "$c" -n "$ns" annotate pod ticker sim.cliqo.io/fail- >/dev/null
wait_for 30 "ticker running again" bash -c "[ \"\$($KUBECTL --kubeconfig $E2E_STATE/$c/kubeconfig -n $ns get pod ticker -o jsonpath='{.status.containerStatuses[0].ready}')\" = true ]"
head -1 <(kc "$c" -n "$ns" logs ticker) | grep_q 'restart 1)$' || fail "the new instance's log does not start with restart 1"
[ "$(kc "$c" -n "$ns" logs ticker --previous | tail -1)" = "nodesim: container main exited with code 3" ] ||
  fail "--previous no longer shows the exited instance"
say "--previous after a restart; -f ends when the container stops"

out=$(kc "$c" -n "$ns" logs ticker -c nope 2>&1) && fail "logs of an unknown container succeeded"
grep -q 'container nope is not valid' <<<"$out" || fail "unknown container error: $out"
kc "$c" delete namespace "$ns" --wait=false >/dev/null
pass
