#!/usr/bin/env bash
# The object reflectors' cost and delay: two local clusters (no nodes), reflect-driver between them mapping
# namespace bench of A to bench-remote of B (tests/e2e/reflect/reflect-driver.c: the four reflectors, as a
# virtual kubelet runs them). Figures:
#   - the driver's RSS per reflected ConfigMap and per Secret: (RSS after N objects are copied - RSS before) / N,
#     N objects of B bytes of data each (both caches count: the home object and its copy on B);
#   - the time from a merge patch of a ConfigMap at home to an informer on B seeing the copy with the new
#     value, over U sequential updates (median, p90, max), back to back and with 250 ms between updates.
# Objects hold random base64 data (the least compressible: the pessimistic memory figure).
# Prints figures; the clusters are torn down on exit.
# Usage: bench/reflect.sh --cliqoctl C --driver D --bench B [--objects N] [--bytes B] [--updates U]
#        [--base-port P]
set -euo pipefail
source "$(dirname "$0")/../tests/ports.sh" # cliqo_port: the one port table

CLIQOCTL="" DRIVER="" BENCH="" OBJECTS=2000 BYTES=1024 UPDATES=200 BASE_PORT=$(cliqo_port bench.reflect)
while [ $# -gt 0 ]; do
  case "$1" in
    --cliqoctl) CLIQOCTL=$2; shift 2 ;;
    --driver) DRIVER=$2; shift 2 ;;
    --bench) BENCH=$2; shift 2 ;;
    --objects) OBJECTS=$2; shift 2 ;;
    --bytes) BYTES=$2; shift 2 ;;
    --updates) UPDATES=$2; shift 2 ;;
    --base-port) BASE_PORT=$2; shift 2 ;;
    -h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
done
for b in "$CLIQOCTL" "$DRIVER" "$BENCH"; do [ -x "$b" ] || { echo "need --cliqoctl, --driver and --bench executables" >&2; exit 2; }; done

WORK=$(mktemp -d)
export CLIQO_DEV_DIR=$WORK/dev CLIQO_DEV_BASE_PORT=$BASE_PORT CLIQO_DEV_NODES=0
DRIVER_PID=
cleanup() {
  [ -n "$DRIVER_PID" ] && kill "$DRIVER_PID" 2>/dev/null || true
  "$CLIQOCTL" dev down >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
A=$CLIQO_DEV_DIR/cluster-1/kubeconfig
B=$CLIQO_DEV_DIR/cluster-2/kubeconfig
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$DRIVER_PID/status"; }

echo "bringing up two clusters (base port $BASE_PORT)"
"$CLIQOCTL" dev up --clusters 2 >/dev/null
kubectl --kubeconfig "$A" create namespace bench >/dev/null
kubectl --kubeconfig "$B" create namespace bench-remote >/dev/null
echo "bench bench-remote" >"$WORK/pairs"
"$DRIVER" --home-kubeconfig "$A" --provider-kubeconfig "$B" --home-id home-bench --peer-id peer-bench \
  --pairs "$WORK/pairs" --max-objects $((OBJECTS + 100)) --log-level warn >"$WORK/driver.log" 2>&1 &
DRIVER_PID=$!
sel=virtualkubelet.liqo.io/origin=home-bench

# The copy of kube-root-ca.crt never exists; the token Secret of bench is not copied: start from an empty B.
sleep 3
base=$(rss_kib)
echo "driver RSS with the namespace pair and nothing to copy: ${base} KiB"
for kind in configmaps secrets; do
  before=$(rss_kib)
  "$BENCH" fill --kubeconfig "$A" --namespace bench --kind "$kind" --count "$OBJECTS" --bytes "$BYTES"
  "$BENCH" wait --kubeconfig "$B" --namespace bench-remote --kind "$kind" --count "$OBJECTS" --selector "$sel" \
    --timeout-ms 900000
  sleep 3 # the informers' malloc_trim after their lists
  after=$(rss_kib)
  awk -v k="$kind" -v b="$before" -v a="$after" -v n="$OBJECTS" -v s="$BYTES" \
    'BEGIN { printf "FIGURE reflect-rss-per-%s=%.0f bytes (%d objects of %d data bytes; RSS %d -> %d KiB)\n", k, (a - b) * 1024 / n, n, s, b, a }'
done
# Back to back, the per-peer client's rate limit (20 requests/s, burst 40) paces the copies; with a pause
# between updates its bucket refills and the figure is the delay of one change.
for gap in 0 250; do
  "$BENCH" latency --home-kubeconfig "$A" --provider-kubeconfig "$B" --namespace bench \
    --remote-namespace bench-remote --updates "$UPDATES" --gap-ms "$gap" | sed 's/^/FIGURE reflect-update-to-copy /'
done
echo "driver RSS at the end: $(rss_kib) KiB"
if grep -qE 'level=error|AddressSanitizer|runtime error' "$WORK/driver.log"; then
  tail -20 "$WORK/driver.log" >&2
  exit 1
fi
