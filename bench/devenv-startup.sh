#!/usr/bin/env bash
# Local-cluster benchmark: time for `cliqoctl dev up` with 1, 2 and 3 clusters (binaries cached), the
# resident memory of every control-plane process, and the time `down` takes. Prints a table and ratios.
# Usage: bench/devenv-startup.sh [path/to/cliqoctl]   (needs CLIQO_KUBE_BIN_DIR or the build cache)
set -euo pipefail
source "$(dirname "$0")/../tests/ports.sh" # cliqo_port: the one port table
CLIQOCTL=${1:-cliqoctl}
export CLIQO_DEV_DIR=${CLIQO_DEV_DIR:-$(mktemp -d)/bench-dev}
export CLIQO_DEV_BASE_PORT=${CLIQO_DEV_BASE_PORT:-$(cliqo_port bench.devenv-startup)}
trap '"$CLIQOCTL" dev down >/dev/null 2>&1 || true' EXIT
ms() { date +%s%3N; }
rss_kb() { awk '/^VmRSS/{print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

declare -A up_ms
printf '%-9s %9s %9s\n' clusters up_ms down_ms
for n in 1 2 3; do
  t0=$(ms); "$CLIQOCTL" dev up --clusters "$n" >/dev/null 2>&1; t1=$(ms)
  up_ms[$n]=$((t1 - t0))
  if [ "$n" = 3 ]; then
    printf '\nper-process RSS with 3 clusters (MiB):\n'
    total=0
    for c in cluster-1 cluster-2 cluster-3; do
      line="$c:"; ctotal=0
      for comp in etcd kube-apiserver kube-scheduler kube-controller-manager; do
        kb=$(rss_kb "$(cat "$CLIQO_DEV_DIR/$c/$comp.pid")")
        line="$line $comp=$((kb / 1024))"
        ctotal=$((ctotal + kb))
      done
      total=$((total + ctotal))
      echo "  $line total=$((ctotal / 1024))"
    done
    echo "  all clusters: $((total / 1024)) MiB; machine total: $(awk '/MemTotal/{print int($2/1024)}' /proc/meminfo) MiB"
    echo
  fi
  t0=$(ms); "$CLIQOCTL" dev down >/dev/null 2>&1; t1=$(ms)
  printf '%-9s %9s %9s\n' "$n" "${up_ms[$n]}" "$((t1 - t0))"
done
printf 'ratio up(3)/up(1): %s\n' "$(awk -v a="${up_ms[3]}" -v b="${up_ms[1]}" 'BEGIN{printf "%.2f", a/b}')"
