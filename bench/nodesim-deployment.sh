#!/usr/bin/env bash
# Node simulator benchmark: one local cluster with 10 simulated nodes, a Deployment of 1,000 pods;
# prints the time until all 1,000 pods are Running (checked with kubectl), how far the simulator
# lagged behind pod creation, and the simulator's resident memory (VmRSS and VmHWM from /proc).
# Usage: bench/nodesim-deployment.sh [path/to/cliqoctl [path/to/cliqo-nodesim]]
#   (needs CLIQO_KUBE_BIN_DIR or the build cache; use a build without sanitizers for memory figures)
# Environment: BENCH_REPLICAS (1000), BENCH_NODES (10), CLIQO_DEV_CONTROLLER_QPS (default: the
# control plane's own client limits, which pace pod creation and binding).
set -euo pipefail
source "$(dirname "$0")/../tests/ports.sh" # cliqo_port: the one port table
CLIQOCTL=${1:-cliqoctl}
export CLIQO_NODESIM=${2:-${CLIQO_NODESIM:-$(dirname "$(command -v "$CLIQOCTL")")/cliqo-nodesim}}
REPLICAS=${BENCH_REPLICAS:-1000}
NODES=${BENCH_NODES:-10}
work=$(mktemp -d)
export CLIQO_DEV_DIR=${CLIQO_DEV_DIR:-$work/bench-dev}
export CLIQO_DEV_BASE_PORT=${CLIQO_DEV_BASE_PORT:-$(cliqo_port bench.nodesim-deployment)}
trap '"$CLIQOCTL" dev down >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
ms() { date +%s%3N; }
kc() { kubectl --kubeconfig "$CLIQO_DEV_DIR/cluster-1/kubeconfig" --request-timeout=30s "$@"; }
rss_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
# counts: "<pods> <running>" from one list
counts() {
  kc -n bench get pods -o json | python3 -c '
import json, sys
items = json.load(sys.stdin)["items"]
print(len(items), sum(1 for p in items if p["status"].get("phase") == "Running"
      and all(s.get("ready") for s in p["status"].get("containerStatuses", []))))'
}

[ -x "$CLIQO_NODESIM" ] || { echo "cliqo-nodesim not found at $CLIQO_NODESIM" >&2; exit 1; }
max_pods=$(((REPLICAS + NODES - 1) / NODES + 10))
export CLIQO_DEV_NODESIM_ARGS="--pods $max_pods"
t0=$(ms)
"$CLIQOCTL" dev up --clusters 1 --nodes "$NODES" >/dev/null 2>&1 || { echo "dev up failed" >&2; exit 1; }
echo "environment: 1 cluster, $NODES simulated nodes, up in $(($(ms) - t0)) ms"
pid=$(cat "$CLIQO_DEV_DIR/cluster-1/nodesim.pid")
until kc -n default get serviceaccount default >/dev/null 2>&1; do sleep 0.5; done
untainted() { [ -z "$(kc get nodes -o jsonpath='{.items[*].spec.taints[*].key}')" ]; }
until untainted; do sleep 0.5; done
rss_idle=$(rss_kb "$pid" VmRSS)
kc create namespace bench >/dev/null
until kc -n bench get serviceaccount default >/dev/null 2>&1; do sleep 0.5; done

t0=$(ms)
kc -n bench create deployment bench --image=registry.invalid/pause:3 --replicas="$REPLICAS" >/dev/null
all_created_ms=
max_lag=0
while :; do
  read -r total running < <(counts)
  now=$(ms)
  lag=$((total - running))
  [ "$lag" -gt "$max_lag" ] && max_lag=$lag
  if [ -z "$all_created_ms" ] && [ "$total" -ge "$REPLICAS" ]; then all_created_ms=$((now - t0)); fi
  [ "$running" -ge "$REPLICAS" ] && break
  [ $((now - t0)) -lt 600000 ] || { echo "timed out: $running of $REPLICAS Running" >&2; exit 1; }
  sleep 1
done
t_all=$((now - t0))
rss=$(rss_kb "$pid" VmRSS)
hwm=$(rss_kb "$pid" VmHWM)
bound=$(kc -n bench get pods -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort | uniq -c | awk '{printf "%s%s", sep, $1; sep="/"}')
ips=$(kc -n bench get pods -o jsonpath='{range .items[*]}{.status.podIP}{"\n"}{end}' | sort -u | grep -c .)

echo "pods Running:            $REPLICAS of $REPLICAS in $t_all ms (all pods created after ${all_created_ms:-?} ms)"
echo "simulator lag:           at most $max_lag pods created but not yet Running (sampled each second)"
echo "pods per node:           $bound; distinct pod IPs: $ips"
echo "cliqo-nodesim RSS:       idle $((rss_idle / 1024)) MiB, with $REPLICAS pods $((rss / 1024)) MiB (peak $((hwm / 1024)) MiB)"
echo "cliqo-nodesim CPU:       $(awk '{printf "%.1f s user, %.1f s system", $14/100, $15/100}' "/proc/$pid/stat")"
{ grep 'heartbeat:' "$CLIQO_DEV_DIR/cluster-1/logs/nodesim.log" | tail -1 | sed 's/^.*msg=/last heartbeat log:      /'; } || true
echo "machine:                 $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
t0=$(ms)
kc -n bench delete deployment bench >/dev/null
until [ "$(counts | cut -d' ' -f1)" = 0 ]; do sleep 1; done
echo "deletion of $REPLICAS pods: $(($(ms) - t0)) ms"
