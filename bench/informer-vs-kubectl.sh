#!/usr/bin/env bash
# Informer benchmark: one local cluster with N realistic pods (default 10,000); in alternating rounds,
# the wall time of `kubectl get pods -A -o json` versus cliqo's informer (inf_start to on_synced, a fresh
# process per round) with the compact store and, for comparison, the tree store; the informer's memory
# per cached pod; then M label patches (default 1,000) and the time until the informer saw them all.
# Prints medians and ratios. The cluster is torn down on exit.
# Usage: bench/informer-vs-kubectl.sh --bench path/to/bench-informer --cliqoctl path/to/cliqoctl
#        [--pods N] [--rounds R] [--updates M] [--namespaces K] [--no-tree] [--base-port P]
set -euo pipefail
source "$(dirname "$0")/../tests/ports.sh" # cliqo_port: the one port table

BENCH="" CLIQOCTL="" PODS=10000 ROUNDS=3 UPDATES=1000 NAMESPACES=4 TREE=1 BASE_PORT=$(cliqo_port bench.informer)
while [ $# -gt 0 ]; do
  case "$1" in
    --bench) BENCH=$2; shift 2 ;;
    --cliqoctl) CLIQOCTL=$2; shift 2 ;;
    --pods) PODS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --updates) UPDATES=$2; shift 2 ;;
    --namespaces) NAMESPACES=$2; shift 2 ;;
    --base-port) BASE_PORT=$2; shift 2 ;;
    --no-tree) TREE=0; shift ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
done
if [ ! -x "$BENCH" ] || [ ! -x "$CLIQOCTL" ]; then
  echo "need --bench and --cliqoctl executables" >&2
  exit 2
fi
command -v kubectl >/dev/null || { echo "kubectl not found" >&2; exit 2; }

WORK=$(mktemp -d)
STATE=$WORK/dev
cleanup() {
  "$CLIQOCTL" dev down --state-dir "$STATE" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

ms() { date +%s%3N; }
# The value of key=value in each input line (one line of output per input line that has it).
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

echo "== cluster: 1 control plane, base port $BASE_PORT"
"$CLIQOCTL" dev up --clusters 1 --state-dir "$STATE" --base-port "$BASE_PORT" >/dev/null
KCFG=$STATE/cluster-1/kubeconfig
KUBECTL=(kubectl --kubeconfig "$KCFG" --cache-dir "$WORK/kube-cache")

echo "== creating $PODS pods in $NAMESPACES namespaces"
"$BENCH" create --kubeconfig "$KCFG" --pods "$PODS" --namespaces "$NAMESPACES" | tee "$WORK/create.txt"
"${KUBECTL[@]}" get pods -A -o json >/dev/null # discovery cache, warm apiserver

stores=(compact)
[ "$TREE" = 1 ] && stores+=(tree)
: >"$WORK/kubectl.txt"
for s in "${stores[@]}"; do : >"$WORK/$s.txt"; done
for r in $(seq 1 "$ROUNDS"); do
  # Alternate the order from round to round so that neither side always runs first.
  if [ $((r % 2)) = 1 ]; then order=(kubectl "${stores[@]}"); else order=("${stores[@]}" kubectl); fi
  for what in "${order[@]}"; do
    if [ "$what" = kubectl ]; then
      t0=$(ms); "${KUBECTL[@]}" get pods -A -o json >/dev/null; t1=$(ms)
      echo "kubectl_ms=$((t1 - t0))" | tee -a "$WORK/kubectl.txt"
    else
      t0=$(ms)
      line=$("$BENCH" sync --kubeconfig "$KCFG" --store "$what" --expect "$PODS" | grep '^phase=sync')
      t1=$(ms)
      echo "$line process_ms=$((t1 - t0))" | tee -a "$WORK/$what.txt"
    fi
  done
done

echo "== codec: per-object costs of both layouts"
"$BENCH" codec --kubeconfig "$KCFG" --max "$PODS" | tee "$WORK/codec.txt"

echo "== $UPDATES label patches while the informer watches"
upd=""
for s in "${stores[@]}"; do
  line=$("$BENCH" sync --kubeconfig "$KCFG" --store "$s" --updates "$UPDATES" | grep '^phase=updates')
  echo "$line"
  [ "$s" = compact ] && upd=$line
done

k_ms=$(sed 's/kubectl_ms=//' "$WORK/kubectl.txt" | median)
echo
echo "== results: $PODS pods, $ROUNDS rounds, medians ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-40s %10s\n' "kubectl get pods -A -o json (ms)" "$k_ms"
for s in "${stores[@]}"; do
  f="$WORK/$s.txt"
  m_sync_ms=$(field sync_ms <"$f" | median)
  m_process_ms=$(sed 's/$/ /' "$f" | field process_ms | median)
  m_rss_per_pod=$(field rss_per_pod <"$f" | median)
  m_heap_per_pod=$(field heap_per_pod <"$f" | median)
  m_store_per_pod=$(field store_per_pod <"$f" | median)
  printf '%-40s %10s   (whole process %s ms)\n' "informer/$s: start to synced (ms)" "$m_sync_ms" "$m_process_ms"
  printf '%-40s %10s\n' "informer/$s: RSS per pod (B)" "$m_rss_per_pod"
  printf '%-40s %10s\n' "informer/$s: live heap per pod (B)" "$m_heap_per_pod"
  printf '%-40s %10s\n' "informer/$s: store accounts (B)" "$m_store_per_pod"
  awk -v k="$k_ms" -v i="$m_sync_ms" -v p="$m_process_ms" -v b="$m_rss_per_pod" -v s="$s" 'BEGIN {
    printf "  ratio kubectl/informer(%s): %.2fx (whole process: %.2fx); RSS per pod / 2 KiB target: %.2f\n",
      s, k / i, k / p, b / 2048 }'
done
if [ "$TREE" = 1 ]; then
  c=$(field rss_per_pod <"$WORK/compact.txt" | median); t=$(field rss_per_pod <"$WORK/tree.txt" | median)
  awk -v c="$c" -v t="$t" 'BEGIN { printf "  tree/compact RSS per pod: %.1fx\n", t / c }'
fi
echo "updates (compact): $(field seen <<<"$upd") of $(field sent <<<"$upd") seen in $(field all_seen_ms <<<"$upd") ms"
