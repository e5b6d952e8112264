#!/usr/bin/env bash
# Logs and exec of an offloaded pod (docs/offloading.md, "Kubelet API"): a pod of A running on B through the
# virtual node; kubectl on A reaches it through A's API server, the agent's kubelet API (its certificate from a
# kubelet-serving CSR, A's client CA) and the relay to B with the virtual kubelet's credential, and shows what
# kubectl on B shows for the remote pod: logs (whole, --tail, -f with lines arriving, --previous after a
# restart), exec (stdout, stderr, exit codes, an unknown command, -i binary-safe both ways, -t). The listener
# refuses an identity without nodes/proxy on the virtual node.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/vk-lib.sh"
TTYRUN=$(dirname "$0")/../nodesim/ttyrun.py
NS=e2e-logs-exec
POD=shell
work=$(mktemp -d)
cleanup() {
  rm -rf "$work"
  unoffload "$NS"
}
trap 'rc=$?; [ $rc = 0 ] || { kc "$A" get pods -n "$NS" -o wide 2>&1 | tail -3; }; cleanup >/dev/null 2>&1 || true; (exit $rc); off_on_exit' EXIT # the test's status, not cleanup's
ensure_agents
ids
wait_shared 60

say "offload $NS; pod $POD runs on $B"
offload "$NS"
wait_mapped "$NS"
RNS=$(remote_ns "$NS")
wait_default_sa "$A" "$NS"
kc "$A" apply -f - >/dev/null <<JSON || fail "cannot create pod $POD"
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"$POD","namespace":"$NS"},
 "spec":{$(by_hand_spec)"terminationGracePeriodSeconds":2,"containers":[{"name":"c","image":"busybox:1.36"}]}}
JSON
remote_ready() {
  [ "$(jget "$B" '{.status.containerStatuses[0].ready}' pod -n "$RNS" "$POD")" = true ] &&
    [ "$(home_running "$NS")" = 1 ]
}
wait_for 60 "$POD Running on $B and Ready on $A" remote_ready
a() { kc "$A" -n "$NS" "$@"; }
b() { kc "$B" -n "$RNS" "$@"; }

# ---- logs --------------------------------------------------------------------------------------------
lines_ge() { [ "$(b logs "$POD" | wc -l)" -ge "$1" ]; }
wait_for 20 "three lines in the log of $POD on $B" lines_ge 3
home=$(a logs "$POD") || fail "kubectl logs on A failed: $home"
remote=$(b logs "$POD")
[ "$(head -1 <<<"$home")" = "nodesim: container c of pod $RNS/$POD started (image busybox:1.36, restart 0)" ] ||
  fail "the log on A is not the remote pod's: $(head -1 <<<"$home")"
# Taken first, A's log is a prefix of B's (the container writes a line a second meanwhile).
[ "$home" = "$(head -n "$(wc -l <<<"$home")" <<<"$remote")" ] || fail "log on A differs from B's: $home // $remote"
tail2=$(a logs "$POD" --tail 2)
[ "$(wc -l <<<"$tail2")" = 2 ] || fail "--tail 2 gave: $tail2"
remote=$(b logs "$POD")
grep -qxF "$(head -1 <<<"$tail2")" <<<"$remote" && grep -qxF "$(tail -1 <<<"$tail2")" <<<"$remote" ||
  fail "--tail 2 on A ($tail2) is not in B's log"
limited=$(a logs "$POD" --limit-bytes 20)
[ "$limited" = "$(b logs "$POD" --limit-bytes 20)" ] && [ "${#limited}" = 20 ] || fail "--limit-bytes 20: '$limited'"
python3 - "$KUBECTL" "$E2E_STATE/$A/kubeconfig" "$NS" "$POD" <<'PY' >"$work/follow" || fail "logs -f on A did not stream: $(cat "$work/follow")"
import datetime, subprocess, sys, time
p = subprocess.Popen([sys.argv[1], "--kubeconfig", sys.argv[2], "-n", sys.argv[3], "logs", "-f", sys.argv[4],
                      "--tail", "1", "--timestamps"], stdout=subprocess.PIPE, text=True)
seen, t0 = [], time.monotonic()
while time.monotonic() - t0 < 4.5:
    line = p.stdout.readline()
    if not line:
        break
    seen.append((time.monotonic() - t0, time.time(), line.strip()))
p.kill()
ticks = [int(l.rsplit(" ", 1)[1]) for _, _, l in seen]
assert len(ticks) >= 4 and ticks == list(range(ticks[0], ticks[0] + len(ticks))), seen
assert seen[-1][0] - seen[0][0] >= 2.0, ("the lines did not arrive over time", seen)
# How long after the simulator stamped a line kubectl on A read it (lines after the first, which is old).
delays = []
for _, wall, l in seen[1:]:
    ts = datetime.datetime.fromisoformat(l.split(" ", 1)[0].replace("Z", "+00:00")).timestamp()
    delays.append(wall - ts)
delays.sort()
print("FIGURE logs-follow-delay-ms-median=%.0f" % (1000 * delays[len(delays) // 2]))
print("FIGURE logs-follow-delay-ms-max=%.0f" % (1000 * delays[-1]))
PY
cat "$work/follow"
say "logs: whole, --tail, --limit-bytes as on $B; -f shows new lines as they come"

# --previous: none before a restart; after one, the exited instance's log, exactly B's.
out=$(a logs "$POD" --previous 2>&1) && fail "--previous succeeded without a restart: $out"
grep -q "previous terminated container \"c\" in pod \"$POD\" not found" <<<"$out" || fail "--previous error: $out"
a annotate pod "$POD" sim.cliqo.io/fail=3 >/dev/null
crashed() { [ "$(jget "$B" '{.status.containerStatuses[0].restartCount}' pod -n "$RNS" "$POD")" = 1 ]; }
wait_for 30 "the container of $POD restarted on $B" crashed
prev=$(a logs "$POD" --previous) || fail "--previous on A failed: $prev"
[ "$prev" = "$(b logs "$POD" --previous)" ] || fail "--previous on A differs from B's"
[ "$(tail -1 <<<"$prev")" = "nodesim: container c exited with code 3" ] || fail "--previous last line: $(tail -1 <<<"$prev")"
a annotate pod "$POD" sim.cliqo.io/fail- >/dev/null
wait_for 30 "$POD running again on $B" remote_ready
say "logs --previous after a restart, as on $B"

# ---- exec --------------------------------------------------------------------------------------------
[ "$(a exec "$POD" -- hostname)" = "$POD" ] || fail "exec hostname on A"
[ "$(a exec "$POD" -- env)" = "$(b exec "$POD" -- env)" ] || fail "exec env on A differs from B's"
[ "$(a exec "$POD" -- echo hello   world)" = "hello world" ] || fail "exec echo"
run() { # SIDE: stdout, stderr and status of a script with both outputs and an exit code
  local rc=0
  "$1" exec "$POD" -- sh -c 'echo to-out; echo to-err >&2; exit 7' >"$work/$1.out" 2>"$work/$1.err" || rc=$?
  echo "$rc"
}
[ "$(run a)" = 7 ] && [ "$(run b)" = 7 ] || fail "exit code through the relay"
[ "$(cat "$work/a.out")" = to-out ] && cmp -s "$work/a.out" "$work/b.out" || fail "stdout: $(cat "$work/a.out")"
grep -qx to-err "$work/a.err" && grep -qx to-err "$work/b.err" || fail "stderr: $(cat "$work/a.err")"
rc=0
a exec "$POD" -- no-such-command 2>"$work/a.err" || rc=$?
[ "$rc" = 127 ] && grep -q 'no-such-command' "$work/a.err" || fail "unknown command: $rc $(cat "$work/a.err")"
a exec "$POD" -- false && fail "exec false succeeded"
head -c 1048576 /dev/urandom >"$work/in.bin"
a exec -i "$POD" -- cat <"$work/in.bin" >"$work/out.bin" || fail "exec -i cat failed"
cmp "$work/in.bin" "$work/out.bin" || fail "the 1 MiB binary round trip through A differs"
out=$("$TTYRUN" --expect '# ' --send 'echo at $HOSTNAME\r' --expect 'at shell' --send 'exit 6\r' -- \
  "$KUBECTL" --kubeconfig "$E2E_STATE/$A/kubeconfig" -n "$NS" exec -it "$POD" -- sh)
grep -q 'exit 6' <<<"$out" && grep -qF 'at shell\r\n' <<<"$out" || fail "terminal through A: $out"
# Round trips (kubectl included): A's relay against B directly.
rtt() { # SIDE: median milliseconds of 5 `exec true`
  local i t0 t1 all=()
  for i in 1 2 3 4 5; do
    t0=$(date +%s%N)
    "$1" exec "$POD" -- true || fail "exec true on $1"
    t1=$(date +%s%N)
    all+=($(((t1 - t0) / 1000000)))
  done
  printf '%s\n' "${all[@]}" | sort -n | sed -n 3p
}
ra=$(rtt a)
rb=$(rtt b)
echo "FIGURE exec-roundtrip-ms-through-A=$ra"
echo "FIGURE exec-roundtrip-ms-on-B=$rb"
say "exec: stdout, stderr, exit codes 7/127/1, 1 MiB binary stdin/stdout, a terminal with exit 6"

# ---- the listener's authorisation ----------------------------------------------------------------------
pki="$E2E_STATE/$A/pki"
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$work/nobody.key" \
  -subj "/CN=e2e-logs-exec-nobody" -out "$work/nobody.csr" 2>/dev/null
openssl x509 -req -in "$work/nobody.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -set_serial "0x$(openssl rand -hex 8)" \
  -days 1 -out "$work/nobody.crt" -extfile <(printf 'extendedKeyUsage=clientAuth\n') 2>/dev/null
url="https://127.0.0.1:$(kubelet_port "$A")/containerLogs/$NS/$POD/c?tailLines=1"
code() { curl -s -o "$work/body" -w '%{http_code}' --cacert "$pki/ca.crt" --cert "$1.crt" --key "$1.key" "$url"; }
[ "$(code "$work/nobody")" = 403 ] || fail "an identity without nodes/proxy: $(cat "$work/body")"
grep -qF "Forbidden (user=e2e-logs-exec-nobody, verb=get, resource=nodes, subresource=proxy)" "$work/body" ||
  fail "403 body: $(cat "$work/body")"
[ "$(code "$pki/kubelet-client")" = 200 ] && grep -q '^nodesim: ' "$work/body" ||
  fail "the API server's identity: $(cat "$work/body")"
say "the listener: 403 without nodes/proxy on $VNODE, 200 for the API server's client"

trap - EXIT
cleanup
check_logs
pass
