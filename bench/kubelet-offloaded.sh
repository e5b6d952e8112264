#!/usr/bin/env bash
# Logs and exec of an offloaded pod (docs/offloading.md, "Kubelet API"): kubectl on the consumer goes through
# its API server, the agent's kubelet API and the relay to the provider's API server and simulated pod;
# kubectl on the provider goes straight to its API server and the pod. In the same run, for both paths:
#   exec round trip      median of SAMPLES `kubectl exec POD -- true` (kubectl's own start included)
#   exec throughput      MIB MiB through `kubectl exec -i POD -- cat` (stdin to stdout and back), MB/s
#   logs round trip      median of SAMPLES `kubectl logs POD --tail 1`
# and their ratios (consumer / provider); the delay of `logs -f` lines on the consumer (from the simulator's
# timestamp to kubectl reading the line); the consumer agent's RSS per open `logs -f` stream (STREAMS curl
# followers on its listener, with the API server's kubelet client certificate). Two local clusters with one
# simulated node each; prints figures, asserts nothing; the clusters are torn down on exit. Use the release
# preset for the RSS figure.
# Usage: bench/kubelet-offloaded.sh --cliqoctl C --agent A --nodesim S [--samples N] [--mib M]
#        [--streams K] [--base-port P]
set -euo pipefail
source "$(dirname "$0")/../tests/ports.sh" # cliqo_port: the one port table

CLIQOCTL="" AGENT="" NODESIM="" SAMPLES=15 MIB=32 STREAMS=50 BASE_PORT=$(cliqo_port bench.kubelet-offloaded)
while [ $# -gt 0 ]; do
  case "$1" in
    --cliqoctl) CLIQOCTL=$2; shift 2 ;;
    --agent) AGENT=$2; shift 2 ;;
    --nodesim) NODESIM=$2; shift 2 ;;
    --samples) SAMPLES=$2; shift 2 ;;
    --mib) MIB=$2; shift 2 ;;
    --streams) STREAMS=$2; shift 2 ;;
    --base-port) BASE_PORT=$2; shift 2 ;;
    -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
done
for b in "$CLIQOCTL" "$AGENT" "$NODESIM"; do
  [ -x "$b" ] || { echo "need --cliqoctl, --agent and --nodesim executables" >&2; exit 2; }
done
export CLIQO_NODESIM=$NODESIM
export CLIQO_DEV_NODES=1
source "$(dirname "$0")/peered-clusters.sh"
bench_offload_setup 1
AGENT_A=${PIDS[0]}
# The webhook sends the pod to the virtual node (Remote); it runs on the provider under the same name.
k 1 apply -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"shell","namespace":"bench"},
 "spec":{"terminationGracePeriodSeconds":1,"containers":[{"name":"c","image":"busybox:1.36"}]}}
JSON
for _ in $(seq 600); do
  [ "$(k 2 get pod -n "$RNS" shell -o jsonpath='{.status.containerStatuses[0].ready}' 2>/dev/null)" = true ] && break
  sleep 0.2
done
k 1 wait -n bench pod/shell --for=condition=Ready --timeout=120s >/dev/null
echo "pod bench/shell runs on cluster-2 as $RNS/shell"
a() { k 1 -n bench "$@"; }
b() { k 2 -n "$RNS" "$@"; }

times() { # SIDE args...: SAMPLES durations in ms
  local side=$1 t0 i
  shift
  for i in $(seq "$SAMPLES"); do
    t0=$(ms)
    "$side" "$@" >/dev/null
    echo $(($(ms) - t0))
  done
}
ea=$(times a exec shell -- true | median)
eb=$(times b exec shell -- true | median)
echo "exec round trip (ms, median of $SAMPLES): consumer $ea, provider $eb, ratio $(ratio "$ea" "$eb")"
la=$(times a logs shell --tail 1 | median)
lb=$(times b logs shell --tail 1 | median)
echo "logs --tail 1 (ms, median of $SAMPLES): consumer $la, provider $lb, ratio $(ratio "$la" "$lb")"

head -c $((MIB * 1048576)) /dev/urandom >"$WORK/in.bin"
through() { # SIDE: MB/s of MIB MiB through exec -i cat (checked byte for byte)
  local t0 t1
  t0=$(ms)
  "$1" exec -i shell -- cat <"$WORK/in.bin" >"$WORK/out.bin"
  t1=$(ms)
  cmp -s "$WORK/in.bin" "$WORK/out.bin" || { echo "the round trip through $1 differs" >&2; exit 1; }
  awk -v b=$((MIB * 1048576)) -v t=$((t1 - t0)) 'BEGIN { printf "%.1f", b / 1e6 / (t / 1000) }'
}
ta=$(through a)
tb=$(through b)
echo "exec -i cat of $MIB MiB (MB/s): consumer $ta, provider $tb, ratio $(ratio "$ta" "$tb")"

python3 - "$(kcfg 1)" <<'PY'
import datetime, subprocess, sys, time
p = subprocess.Popen(["kubectl", "--kubeconfig", sys.argv[1], "-n", "bench", "logs", "-f", "shell", "--tail", "1",
                      "--timestamps"], stdout=subprocess.PIPE, text=True)
seen, t0 = [], time.monotonic()
while time.monotonic() - t0 < 10.5:
    line = p.stdout.readline()
    if not line:
        break
    seen.append((time.time(), line.split(" ", 1)[0]))
p.kill()
d = sorted(w - datetime.datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() for w, ts in seen[1:])
if d:
    print("logs -f on the consumer: %d lines, delay median %.0f ms, max %.0f ms" % (len(d), 1000 * d[len(d) // 2], 1000 * d[-1]))
PY

pki=$CLIQO_DEV_DIR/cluster-1/pki
url="https://127.0.0.1:$(port 1 8)/containerLogs/bench/shell/c?follow=true&tailLines=0"
sleep 1
r0=$(rss_kib "$AGENT_A")
for _ in $(seq "$STREAMS"); do
  curl -sN --cacert "$pki/ca.crt" --cert "$pki/kubelet-client.crt" --key "$pki/kubelet-client.key" "$url" \
    >/dev/null 2>&1 &
  PIDS+=($!)
done
for _ in $(seq 300); do
  open=$(curl -s "http://127.0.0.1:$(port 1 6)/metrics" | awk '$1 == "cliqo_kubelet_api_open{kind=\"connections\"}" { print $2 }')
  [ "${open:-0}" -ge "$STREAMS" ] && break
  sleep 0.1
done
sleep 2
r1=$(rss_kib "$AGENT_A")
echo "consumer agent RSS: $r0 KiB idle, $r1 KiB with $open open logs -f streams:" \
  "$(awk -v a="$r0" -v b="$r1" -v n="$STREAMS" 'BEGIN { printf "%.1f", (b - a) / n }') KiB per stream"
