#!/usr/bin/env bash
# The advertisement protocol, live: two local clusters, the provider with N pods (default 10,000, created with
# bench-informer; its scheduler is stopped so that they stay unscheduled, which the broadcaster counts), the
# consumer peered with it. Then S times (default 10) a pod event on the provider (a pod asking for 400 cpu
# created, then deleted: each moves the offer by more than the 5 % threshold) and the delay until the
# consumer's virtual node shows the new capacity (a kubectl watch on the consumer, each line stamped on
# arrival; t0 is when `kubectl create/delete` returned). Also both agents' RSS with the provider's N pods
# cached. Prints figures; the clusters are torn down on exit.
# Usage: bench/advertisement-live.sh --cliqoctl C --agent A --bench-informer B [--pods N] [--samples S]
#        [--base-port P]
set -euo pipefail
source "$(dirname "$0")/../tests/ports.sh" # cliqo_port: the one port table

CLIQOCTL="" AGENT="" BENCH="" PODS=10000 SAMPLES=10 BASE_PORT=$(cliqo_port bench.advertisement-live)
while [ $# -gt 0 ]; do
  case "$1" in
    --cliqoctl) CLIQOCTL=$2; shift 2 ;;
    --agent) AGENT=$2; shift 2 ;;
    --bench-informer) BENCH=$2; shift 2 ;;
    --pods) PODS=$2; shift 2 ;;
    --samples) SAMPLES=$2; shift 2 ;;
    --base-port) BASE_PORT=$2; shift 2 ;;
    -h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
done
for b in "$CLIQOCTL" "$AGENT" "$BENCH"; do [ -x "$b" ] || { echo "need --cliqoctl, --agent and --bench-informer executables" >&2; exit 2; }; done

export CLIQO_DEV_NODES=1
# One big simulated node per cluster: room for the pods' requests (they stay unscheduled).
export CLIQO_DEV_NODESIM_ARGS="--cpu 4000 --memory 8Ti"
source "$(dirname "$0")/peered-clusters.sh"
bench_peer_setup 1
cap() { k 1 get node "$NODE" -o jsonpath='{.status.capacity.cpu}'; }
echo "virtual node $NODE Ready, cpu $(cap)"

echo "provider: scheduler stopped, $PODS pods created"
"$CLIQOCTL" dev stop --cluster cluster-2 --component kube-scheduler >/dev/null
t0=$(ms)
"$BENCH" create --kubeconfig "$(kcfg 2)" --pods "$PODS" --no-status | sed 's/^/  /'
# Settled: the virtual node's cpu unchanged for 3 s.
last="" same=0
while [ "$same" -lt 15 ]; do
  c=$(cap)
  if [ "$c" = "$last" ]; then same=$((same + 1)); else same=0; last=$c; fi
  sleep 0.2
done
echo "settled: cpu $last, $(($(ms) - t0)) ms after the creation started"
rss() { ps -o rss= -p "$1" | awk '{ printf "%.1f", $1 / 1024 }'; }
echo "FIGURE rss_mb consumer=$(rss "${PIDS[0]}") provider=$(rss "${PIDS[1]}") (provider caches $PODS pods)"

# The stamped watch of the virtual node's cpu.
k 1 get node "$NODE" -w -o jsonpath='{.status.capacity.cpu}{"\n"}' --request-timeout=0 2>/dev/null |
  while IFS= read -r l; do echo "$(ms) $l"; done >"$WORK/watch" &
PIDS+=($!)
sleep 1
delays=()
sample() { # ACTION...: runs it, then waits for a new cpu on the virtual node
  local before after t
  before=$(cap)
  "$@" >/dev/null
  t=$(ms)
  for _ in $(seq 200); do
    after=$(awk -v t="$t" -v b="$before" '$1 >= t && $2 != b { print $1; exit }' "$WORK/watch")
    [ -n "$after" ] && break
    sleep 0.05
  done
  [ -n "$after" ] || { echo "no change of the virtual node within 10 s" >&2; exit 1; }
  delays+=($((after - t)))
}
for i in $(seq "$SAMPLES"); do
  sample k 2 run "probe-$i" --image=busybox --restart=Never --overrides \
    '{"spec":{"nodeSelector":{"bench":"nowhere"},"containers":[{"name":"c","image":"busybox","resources":{"requests":{"cpu":"400"}}}]}}'
  sample k 2 delete pod "probe-$i" --wait=false
done
sorted=$(printf '%s\n' "${delays[@]}" | sort -n)
n=${#delays[@]}
echo "delays_ms: $(echo "$sorted" | tr '\n' ' ')"
echo "FIGURE pod-event-to-virtual-node-ms median=$(echo "$sorted" | sed -n "$(((n + 1) / 2))p")" \
  "p90=$(echo "$sorted" | sed -n "$(((n * 9 + 9) / 10))p") max=$(echo "$sorted" | tail -1) samples=$n pods=$PODS target_ms=1000"
