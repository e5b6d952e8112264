#!/usr/bin/env bash
# The kubelet API relay (src/kubeletapi, what virtual kubelets serve): kla-relay-test registers a node
# on cluster-1 whose address and port are its listener and relays the home pod bound to it to a
# simulated pod of cluster-2. Through cluster-1's API server, `kubectl logs` (-f, --tail, the
# provider's errors) and `kubectl exec` (-i binary-safe both ways, exit codes, stderr, -t) reach the
# pod on cluster-2; an unmapped pod on that node is 404; both credential forms (a kapi client, the
# kubeconfig data) work.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
: "${KLA_RELAY_TEST:?KLA_RELAY_TEST must name the kla-relay-test binary}"
TTYRUN=$(dirname "$0")/ttyrun.py
home_ns=e2e-kla-home
remote_ns=e2e-kla-remote
node=e2e-kla-relay
pki="$E2E_STATE/cluster-1/pki"
# cluster-1's slot 8 (the agents' kubelet API; no agent runs in this group).
port=$(($(awk '$1 == "cluster-1" {print $2}' "$E2E_STATE/clusters") + 8))
work=$(mktemp -d)
relay_pid=
cleanup() {
  local rc=$?
  if [ -n "$relay_pid" ] && pid_running "$relay_pid"; then kill -TERM "$relay_pid"; wait "$relay_pid" || true; fi
  if [ "$rc" != 0 ]; then # leave nothing that would hold a rerun on these clusters
    kc "$c" delete node "$node" >/dev/null 2>&1 || true
    kc "$c" -n "$home_ns" delete pods --all --grace-period=0 --force >/dev/null 2>&1 || true
    kc "$c" delete namespace "$home_ns" --wait=false >/dev/null 2>&1 || true
    kc cluster-2 delete namespace "$remote_ns" --wait=false >/dev/null 2>&1 || true
  fi
  [ "$rc" = 0 ] || { echo "--- relay log" >&2; tail -30 "$work/relay.log" >&2 || true; }
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT

# The relay's serving certificate, signed by cluster-1's CA (its API server verifies kubelets with it).
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$work/relay.key" \
  -subj "/O=system:nodes/CN=system:node:$node" -out "$work/relay.csr" 2>/dev/null
openssl x509 -req -in "$work/relay.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -set_serial "0x$(openssl rand -hex 8)" \
  -days 1 -out "$work/relay.crt" -extfile <(printf 'extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1\n') 2>/dev/null

# The pod on the provider (cluster-2) and its home twin bound to the relay's node on cluster-1.
fresh_ns cluster-2 "$remote_ns"
fresh_ns "$c" "$home_ns"
wait_default_sa cluster-2 "$remote_ns"
wait_sa "$home_ns"
kc cluster-2 -n "$remote_ns" run target --image=busybox:1.36 --restart=Never >/dev/null
wait_for 30 "target Running on cluster-2" bash -c "[ \"\$($KUBECTL --kubeconfig $E2E_STATE/cluster-2/kubeconfig -n $remote_ns get pod target -o jsonpath='{.status.phase}')\" = Running ]"

start_relay() {
  # Emptied here, not only by the redirection below: that one happens in the background child, maybe after
  # the wait has read the last relay's "relay ready" (CI: exec went to a relay not yet listening).
  : >"$work/relay.log"
  "$KLA_RELAY_TEST" --listen "127.0.0.1:$port" --cert "$work/relay.crt" --key "$work/relay.key" \
    --client-ca "$pki/ca.crt" --kubeconfig "$E2E_STATE/cluster-1/kubeconfig" \
    --remote-kubeconfig "${remote_kcfg:-$E2E_STATE/cluster-2/kubeconfig}" --node "$node" \
    --map "$home_ns/home=$remote_ns/target" "$@" >"$work/relay.log" 2>&1 &
  relay_pid=$!
  wait_for 20 "relay ready" grep -q 'relay ready' "$work/relay.log"
}
stop_relay() {
  kill -TERM "$relay_pid"
  wait "$relay_pid" || fail "kla-relay-test exited with an error: $(tail -5 "$work/relay.log")"
  relay_pid=
  grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$work/relay.log" && fail "sanitizer report in the relay log"
  return 0
}
# --keep-node: the node stays between the relays below; deleted at one relay's stop and created again by the
# next, it was not yet there for the API server's exec once in a full run (NotFound). The test deletes it at
# the end.
start_relay --keep-node
[ "$(jp "node/$node" '{.status.addresses[?(@.type=="InternalIP")].address}')" = 127.0.0.1 ] || fail "node address"
[ "$(jp "node/$node" '{.status.daemonEndpoints.kubeletEndpoint.Port}')" = "$port" ] || fail "node kubelet port"
for p in home stray; do
  kc "$c" -n "$home_ns" create -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $p}
spec:
  nodeName: $node
  tolerations: [{key: kla.cliqo.io/relay-test, operator: Exists}]
  containers: [{name: target, image: busybox:1.36}]
YAML
done
h() { kc "$c" -n "$home_ns" "$@"; }

# logs: the remote pod's log, its tail, its errors; -f keeps streaming.
first=$(h logs home) # whole: `| head -1` could end kubectl with SIGPIPE (pipefail)
first=${first%%$'\n'*}
[ "$first" = "nodesim: container target of pod $remote_ns/target started (image busybox:1.36, restart 0)" ] ||
  fail "logs did not come from cluster-2's pod: $first"
remote_tail=$(kc cluster-2 -n "$remote_ns" logs target --tail 1 --timestamps)
home_tail=$(h logs home --tail 2 --timestamps)
grep -qxF "$remote_tail" <<<"$home_tail" || [ "$(tail -1 <<<"$home_tail" | cut -c1-19)" \> "$(cut -c1-19 <<<"$remote_tail")" ] ||
  fail "--tail through the relay ($home_tail) does not match the provider ($remote_tail)"
out=$(h logs home --previous 2>&1) && fail "--previous succeeded"
grep -q 'previous terminated container "target" in pod "target" not found' <<<"$out" || fail "provider's error: $out"
python3 - "$KUBECTL" "$E2E_STATE/$c/kubeconfig" "$home_ns" <<'PY' || fail "logs -f through the relay did not stream"
import subprocess, sys, time
p = subprocess.Popen([sys.argv[1], "--kubeconfig", sys.argv[2], "-n", sys.argv[3], "logs", "-f", "home", "--tail", "1"],
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
assert seen[-1][0] - seen[0][0] >= 2.0, seen
PY
say "logs, --tail, the provider's errors and -f reach cluster-2's pod"

# exec: identity, exit codes and stderr, binary stdin/stdout byte for byte, a terminal.
[ "$(h exec home -- hostname)" = target ] || fail "exec did not reach cluster-2's pod"
rc=0
h exec home -- sh -c 'echo to-err >&2; exit 9' 2>"$work/err" || rc=$?
[ "$rc" = 9 ] && head -1 "$work/err" | grep_q -x to-err || fail "exit code $rc, stderr $(cat "$work/err")"
head -c 2097152 /dev/urandom >"$work/in.bin"
h exec -i home -- cat <"$work/in.bin" >"$work/out.bin" || fail "binary exec failed"
cmp "$work/in.bin" "$work/out.bin" || fail "the 2 MiB binary round trip through the relay differs"
out=$("$TTYRUN" --expect '# ' --send 'echo at $HOSTNAME\r' --expect 'at target' --send 'exit 6\r' -- \
  "$KUBECTL" --kubeconfig "$E2E_STATE/$c/kubeconfig" -n "$home_ns" exec -it home -- sh)
grep -q 'exit 6' <<<"$out" && grep -qF 'at target\r\n' <<<"$out" || fail "terminal through the relay: $out"
say "exec: identity, exit code 9 and stderr, 2 MiB binary round trip, terminal with exit code 6"

# A pod on the relay's node that it cannot resolve, and a relay that cannot reach the provider.
out=$(h logs stray 2>&1) && fail "logs of an unmapped pod succeeded"
grep -q 'NotFound' <<<"$out" || fail "unmapped pod: $out"
stop_relay
# One TLS context for the provider's credential, shared by every log and exec stream above (eight of them:
# made once, reused by at least five).
tls=$(grep -o 'tls contexts: made [0-9]*, reused [0-9]*' "$work/relay.log" | tail -1)
[[ "$tls" =~ made\ 1,\ reused\ ([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -ge 5 ] ||
  fail "the streams did not share one TLS context: ${tls:-no stats line}"
say "$tls: one TLS context for the provider's credential"

# The same with the kubeconfig data instead of a client.
start_relay --by-config --keep-node
[ "$(h exec home -- hostname)" = target ] || fail "exec with --by-config"
h exec -i home -- cat <"$work/in.bin" | cmp - "$work/in.bin" || fail "binary round trip with --by-config"
stop_relay

# A provider whose certificate does not chain to the CA of the credential: refused, never used.
sed "s|certificate-authority-data: .*|certificate-authority-data: $(base64 -w0 "$pki/ca.crt")|" \
  "$E2E_STATE/cluster-2/kubeconfig" >"$work/wrong-ca.kubeconfig"
remote_kcfg="$work/wrong-ca.kubeconfig" start_relay --keep-node
out=$(h logs home 2>&1) && fail "logs through a provider with an unverifiable certificate succeeded"
grep -q 'TLS with the provider failed' <<<"$out" && grep -qi 'certificate verify failed' <<<"$out" ||
  fail "provider TLS failure: $out"
out=$(h exec home -- hostname 2>&1) && fail "exec through a provider with an unverifiable certificate succeeded"
stop_relay
say "the kubeconfig data as the credential; a provider that fails TLS verification is refused (502)"
kc "$c" delete node "$node" >/dev/null
out=$(h logs home 2>&1) && fail "logs with the node gone succeeded"
# No kubelet finishes the deletion of the home pods: force it (the namespace would hang).
h delete pod --all --grace-period=0 --force >/dev/null 2>&1
kc "$c" delete namespace "$home_ns" --wait=false >/dev/null
kc cluster-2 delete namespace "$remote_ns" --wait=false >/dev/null
pass
