#!/usr/bin/env bash
# Offloading, after the method of Liqo's offloading benchmark: the time from creating a Deployment of N replicas
# until all its pods are Ready, for N in SIZES (default 10 100 1000), offloaded through the virtual node (the
# Deployment on the consumer, in a namespace offloaded to the provider) versus created directly on the provider,
# in the same run, and their ratio. Then the added latency of a single pod: S times (default 15) a bare pod
# created and waited Ready, offloaded and direct; the median of each and their difference. Also the consumer
# agent's RSS while the largest Deployment is offloaded (build it with the release preset for that figure).
# Two local clusters with NODES simulated nodes each (default 10, room for 200 pods each); the provider shares
# 100 % of them. Prints figures and ratios, asserts nothing; the clusters are torn down on exit.
# Usage: bench/offloading.sh --cliqoctl C --agent A --nodesim S [--sizes "10 100 1000"] [--samples S]
#        [--nodes N] [--base-port P] [--controller-qps Q]
set -euo pipefail
source "$(dirname "$0")/../tests/ports.sh" # cliqo_port: the one port table

CLIQOCTL="" AGENT="" NODESIM="" SIZES="10 100 1000" SAMPLES=15 NODES=10 BASE_PORT=$(cliqo_port bench.offloading) CQPS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --cliqoctl) CLIQOCTL=$2; shift 2 ;;
    --agent) AGENT=$2; shift 2 ;;
    --nodesim) NODESIM=$2; shift 2 ;;
    --sizes) SIZES=$2; shift 2 ;;
    --samples) SAMPLES=$2; shift 2 ;;
    --nodes) NODES=$2; shift 2 ;;
    --base-port) BASE_PORT=$2; shift 2 ;;
    --controller-qps) CQPS=$2; shift 2 ;;
    -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
done
for b in "$CLIQOCTL" "$AGENT" "$NODESIM"; do
  [ -x "$b" ] || { echo "need --cliqoctl, --agent and --nodesim executables" >&2; exit 2; }
done
export CLIQO_NODESIM=$NODESIM
MAX=0
for n in $SIZES; do [ "$n" -gt "$MAX" ] && MAX=$n; done

export CLIQO_DEV_NODES=$NODES CLIQO_DEV_NODESIM_ARGS="--pods 200"
[ -z "$CQPS" ] || export CLIQO_DEV_CONTROLLER_QPS=$CQPS
source "$(dirname "$0")/peered-clusters.sh"
bench_offload_setup "$MAX"
k 2 create namespace bench-direct >/dev/null
# Until the pod webhook sets them, the offloaded pods carry the toleration and the node affinity themselves.
TO_VNODE='"tolerations":[{"key":"virtual-node.liqo.io/not-allowed","operator":"Exists","effect":"NoExecute"}],
 "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
 {"matchExpressions":[{"key":"liqo.io/type","operator":"In","values":["virtual-node"]}]}]}}},'
deploy_json() { # NAME NS REPLICAS EXTRA
  echo "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"$1\",\"namespace\":\"$2\"},
  \"spec\":{\"replicas\":$3,\"selector\":{\"matchLabels\":{\"app\":\"$1\"}},\"template\":{\"metadata\":{\"labels\":
  {\"app\":\"$1\"}},\"spec\":{$4\"terminationGracePeriodSeconds\":1,\"containers\":[{\"name\":\"c\",\"image\":\"nginx\"}]}}}}"
}
run_deploy() { # CLUSTER NS NAME N EXTRA: prints ms until N Ready
  local c=$1 ns=$2 name=$3 n=$4 extra=$5 t0
  t0=$(ms)
  deploy_json "$name" "$ns" "$n" "$extra" | k "$c" apply -f - >/dev/null
  k "$c" wait -n "$ns" "deployment/$name" --for=jsonpath='{.status.readyReplicas}'="$n" --timeout=900s >/dev/null
  echo $(($(ms) - t0))
}
gone() { # CLUSTER NS SELECTOR
  for _ in $(seq 1200); do
    [ "$(k "$1" get pods -n "$2" -l "$3" -o name 2>/dev/null | wc -l)" = 0 ] && return 0
    sleep 0.5
  done
  echo "pods $3 of $2 on cluster-$1 still there" >&2
  return 1
}
rss_mb() { awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
rss_detail() { awk '/^Rss(Anon|File):/ { printf "%s%s=%.1f", sep, tolower(substr($1, 4, length($1) - 4)), $2 / 1024; sep = " " }' "/proc/$1/status"; }

for n in $SIZES; do
  dir=$(run_deploy 2 bench-direct "dir-$n" "$n" "")
  off=$(run_deploy 1 bench "off-$n" "$n" "$TO_VNODE")
  remote=$(k 2 get pods -n "$RNS" -l "app=off-$n" -o name | wc -l)
  echo "FIGURE deployment-ready-ms n=$n offloaded=$off direct=$dir ratio=$(awk -v a="$off" -v b="$dir" 'BEGIN { printf "%.2f", a / b }') remote_pods=$remote"
  if [ "$n" = "$MAX" ]; then
    sleep 5
    echo "FIGURE agent-rss-mb consumer=$(rss_mb "${PIDS[0]}") provider=$(rss_mb "${PIDS[1]}") offloaded_pods=$n target=25 ratio=$(awk -v a="$(rss_mb "${PIDS[0]}")" 'BEGIN { printf "%.2f", a / 25 }')"
    echo "FIGURE agent-rss-detail-mb consumer: $(rss_detail "${PIDS[0]}"); provider: $(rss_detail "${PIDS[1]}")"
  fi
  k 1 delete deployment -n bench "off-$n" --wait=false >/dev/null
  k 2 delete deployment -n bench-direct "dir-$n" --wait=false >/dev/null
  gone 1 bench "app=off-$n"
  gone 2 "$RNS" "app=off-$n"
  gone 2 bench-direct "app=dir-$n"
done

echo "single pods: $SAMPLES samples each, offloaded and direct"
pod_json() { # NAME NS EXTRA
  echo "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"$1\",\"namespace\":\"$2\"},
  \"spec\":{$3\"terminationGracePeriodSeconds\":1,\"containers\":[{\"name\":\"c\",\"image\":\"nginx\"}]}}"
}
one_pod() { # CLUSTER NS NAME EXTRA: prints ms until Ready
  local t0
  t0=$(ms)
  pod_json "$3" "$2" "$4" | k "$1" create -f - >/dev/null
  k "$1" wait -n "$2" "pod/$3" --for=condition=Ready --timeout=120s >/dev/null
  echo $(($(ms) - t0))
  k "$1" delete pod -n "$2" "$3" --wait=false >/dev/null
}
offs=() dirs=()
for i in $(seq "$SAMPLES"); do
  dirs+=("$(one_pod 2 bench-direct "single-$i" "")")
  offs+=("$(one_pod 1 bench "single-$i" "$TO_VNODE")")
done
mo=$(printf '%s\n' "${offs[@]}" | median)
md=$(printf '%s\n' "${dirs[@]}" | median)
echo "single_ms offloaded: $(printf '%s\n' "${offs[@]}" | sort -n | tr '\n' ' ')"
echo "single_ms direct: $(printf '%s\n' "${dirs[@]}" | sort -n | tr '\n' ' ')"
echo "FIGURE single-pod-ready-ms median_offloaded=$mo median_direct=$md added_median=$((mo - md)) samples=$SAMPLES"
echo "FIGURE vk-metrics $(curl -s "http://127.0.0.1:$(port 1 6)/metrics" | awk '/^cliqo_vk_pod_(creations|status_updates|events_forwarded|events_dropped|refusals)/ { sub(/\{.*\}/, "", $1); printf "%s=%s ", $1, $2 }')"
