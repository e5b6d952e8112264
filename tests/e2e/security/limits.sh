#!/usr/bin/env bash
# Issue 17 point 5, end to end, over the network against B's agent:
#  - a review of almost 3 MiB made of small values (under the webhook's size limit), sent with the API
#    server's webhook client certificate (since point 4 nothing else gets a request read by the webhooks:
#    webhook-auth.sh), is refused at once with the reason, and the agent's peak RSS does not jump (jansson
#    would have taken ~230 MiB);
#  - a client with no credential that sends a request head to the auth endpoint one byte per second
#    (never idle long enough for the idle timeout) is cut off at the request deadline (10 s), while
#    another request is served meanwhile.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
trap sec_on_exit EXIT

WORK="$E2E_STATE/limits"
rm -rf "$WORK"
mkdir -p "$WORK"
PID=$(agent_pid "$B")
[ -n "$PID" ] && pid_running "$PID" || fail "B's agent is not running"
hwm_kib() { awk '/^VmHWM:/ {print $2}' "/proc/$PID/status"; }

say "a 3 MiB review of small values to B's webhook"
jpath "$B" '{.data.ca\.crt}' secret -n cliqo cliqo-webhook-certs | base64 -d >"$WORK/ca.crt"
python3 -c 'import sys; n = 3 * 1024 * 1024 - 64; sys.stdout.write("[" + "{},"* ((n - 2) // 3) + "{}]")' \
  >"$WORK/big.json"
before=$(hwm_kib)
start=$(date +%s%N)
code=$(curl -s -o "$WORK/body" -w '%{http_code}' --max-time 20 --cacert "$WORK/ca.crt" \
  --cert "$(webhook_client_cert "$B")" --key "$(webhook_client_key "$B")" \
  -H 'Content-Type: application/json' --data-binary "@$WORK/big.json" \
  "https://127.0.0.1:$(webhook_port "$B")/validate-pods") || true
ms=$((($(date +%s%N) - start) / 1000000))
after=$(hwm_kib)
[ "$code" = 400 ] || fail "the review was answered HTTP $code: $(head -c 300 "$WORK/body")"
grep_q -F 'would take more than' "$WORK/body" || fail "the 400 does not say why: $(head -c 300 "$WORK/body")"
[ "$ms" -lt 10000 ] || fail "the refusal took ${ms} ms"
grow=$(((after - before) / 1024))
[ "$grow" -lt 48 ] || fail "B's agent's peak RSS grew by ${grow} MiB for a 3 MiB body"
say "  refused in ${ms} ms; peak RSS +${grow} MiB ($(jq -r .message "$WORK/body"))"

say "a request head one byte per second to B's auth endpoint"
python3 - "$(auth_port "$B")" >"$WORK/slow" 2>&1 <<'PY' &
import socket, ssl, sys, time
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
t0 = time.monotonic()
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))), server_hostname="x")
print("connected", flush=True)
head = b"GET /ids HTTP/1.1\r\nHost: x\r\n" + b"X-Slow: " + b"a" * 60
try:
    for b in head:
        s.send(bytes([b]))
        time.sleep(1)
        s.settimeout(0.01)
        try:
            if s.recv(1) == b"":
                break
        except (socket.timeout, ssl.SSLWantReadError):
            pass
        s.settimeout(None)
except (OSError, ssl.SSLError):
    pass
print("closed after %.1f" % (time.monotonic() - t0))
PY
SLOW=$!
wait_for 10 "the slow client to connect" grep_q -x connected "$WORK/slow"
code=$(curl -sk -o /dev/null -w '%{http_code}' --max-time 5 "https://127.0.0.1:$(auth_port "$B")/ids") || true
[ "$code" = 200 ] || fail "another client was answered HTTP $code while the slow one held a connection"
wait "$SLOW" || true
secs=$(sed -n 's/^closed after //p' "$WORK/slow")
[ -n "$secs" ] || fail "the slow client: $(cat "$WORK/slow")"
awk -v s="$secs" 'BEGIN { exit !(s >= 8 && s <= 16) }' || fail "the slow client was cut off after ${secs} s (deadline 10 s)"
pass "a 3 MiB review of small values refused in ${ms} ms (+${grow} MiB peak); a slowloris cut off after ${secs} s"
