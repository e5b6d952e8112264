#!/usr/bin/env bash
# cliqo's informer against client-go's shared informer, side by side on one local control plane with N
# realistic pods (default 10,000). Each round runs fresh processes, in an order that rotates from round to
# round: cliqo's `bench-informer sync` (and any extra cliqo variants given with --variant), client-go with
# JSON as shipped, client-go with protobuf (bench/clientgo-informer/main.go, built from Debian's kubernetes
# source by scripts/build-kube.sh --informerbench into its cache). Per run: exec -> synced, the client's CPU,
# the API server's CPU while the process ran and for a garbage collection forced after it (from /proc of
# kube-apiserver; one is forced before each run too, see api_gc), RSS after the sync, bytes per
# pod in the store (cliqo: what the store accounts; client-go: Go heap after GC), the longest loop stall
# (cliqo: a 1 ms timer's lateness, and the CPU time of the busiest loop iteration). Prints medians, the ratios of cliqo to client-go and the issue's targets.
# Usage: bench/informer-vs-clientgo.sh --bench path/to/bench-informer --cliqoctl path/to/cliqoctl
#        [--clientgo path/to/informerbench] [--pods N] [--rounds R] [--namespaces K] [--base-port P]
#        [--variant NAME='bench-informer sync options']... [--no-clientgo-protobuf]
#        (a variant's options may start with @PATH: that bench-informer binary instead of --bench's, e.g. a
#        build of main to compare a change with)
#        [--state-dir DIR [--skip-create]]   (keep the cluster in DIR for later runs; reuse it if it is up)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../tests/ports.sh" # cliqo_port: the one port table

BENCH="" CLIQOCTL="" CLIENTGO="" PODS=10000 ROUNDS=3 NAMESPACES=4 PROTO=1 KEEP="" SKIP_CREATE=0
BASE_PORT=$(cliqo_port bench.informer-clientgo)
variants=(cliqo)
declare -A vargs=([cliqo]="")
while [ $# -gt 0 ]; do
  case "$1" in
    --bench) BENCH=$2; shift 2 ;;
    --cliqoctl) CLIQOCTL=$2; shift 2 ;;
    --clientgo) CLIENTGO=$2; shift 2 ;;
    --pods) PODS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --namespaces) NAMESPACES=$2; shift 2 ;;
    --base-port) BASE_PORT=$2; shift 2 ;;
    --variant) variants+=("${2%%=*}"); vargs[${2%%=*}]=${2#*=}; shift 2 ;;
    --no-clientgo-protobuf) PROTO=0; shift ;;
    --state-dir) KEEP=$2; shift 2 ;;
    --skip-create) SKIP_CREATE=1; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
done
if [ ! -x "$BENCH" ] || [ ! -x "$CLIQOCTL" ]; then
  echo "need --bench and --cliqoctl executables" >&2
  exit 2
fi
if [ -z "$CLIENTGO" ]; then
  echo "== client-go program (scripts/build-kube.sh --informerbench; cached after the first build)"
  CLIENTGO=$(bash "$HERE/../scripts/build-kube.sh" --informerbench)/informerbench
fi
[ -x "$CLIENTGO" ] || { echo "no client-go program at $CLIENTGO" >&2; exit 2; }
TIME=()
[ -x /usr/bin/time ] && TIME=(/usr/bin/time -f "client_user_s=%U client_sys_s=%S client_maxrss_kb=%M")

WORK=$(mktemp -d)
STATE=${KEEP:-$WORK/dev}
cleanup() {
  [ -n "$KEEP" ] || "$CLIQOCTL" dev down --state-dir "$STATE" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# The value of key=value in each input line (one line of output per input line that has it).
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
# CPU ticks (user + system) a process has used so far.
cpu_ticks() { sed -e 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
HZ=$(getconf CLK_TCK)

echo "== cluster: 1 control plane, base port $BASE_PORT"
# A kept state may hold more clusters (bench/agent-startup.sh's): the first one is measured.
CLUSTERS=1
[ -f "$STATE/clusters" ] && CLUSTERS=$(wc -l <"$STATE/clusters")
CLIQO_DEV_APISERVER_ARGS=${CLIQO_DEV_APISERVER_ARGS:---profiling=true} \
  CLIQO_DEV_NODES=${CLIQO_DEV_NODES:-0} "$CLIQOCTL" dev up --clusters "$CLUSTERS" --state-dir "$STATE" --base-port "$BASE_PORT" >/dev/null
KCFG=$STATE/cluster-1/kubeconfig
API_PID=$(cat "$STATE/cluster-1/kube-apiserver.pid")
[ -r "/proc/$API_PID/stat" ] || { echo "kube-apiserver (pid $API_PID) not found" >&2; exit 1; }
# Go's garbage collector runs when the API server allocates, so a run would pay for the garbage the run before
# it left (client-go's JSON list leaves gigabytes of it at 100,000 pods). With the API server's profiling on
# (the cluster made here has it), a collection is forced before and after each run (/debug/pprof/heap?gc=1):
# each run pays for its own garbage, and for one collection of the live heap, as every other run does.
api_gc() { [ "$GC" = 0 ] || kubectl --kubeconfig "$KCFG" get --raw '/debug/pprof/heap?gc=1' >/dev/null; }
GC=1
if ! api_gc 2>/dev/null; then
  GC=0
  echo "note: the API server's profiling is off (a cluster made before?): no collection forced between runs"
fi

if [ "$SKIP_CREATE" = 0 ]; then
  echo "== creating $PODS pods in $NAMESPACES namespaces"
  "$BENCH" create --kubeconfig "$KCFG" --pods "$PODS" --namespaces "$NAMESPACES"
fi
# Warm the API server (its watch cache, the connection's first costs) once, outside the measurements.
"$BENCH" sync --kubeconfig "$KCFG" --expect "$PODS" >/dev/null

all=("${variants[@]}" client-go-json)
[ "$PROTO" = 1 ] && all+=(client-go-protobuf)
for v in "${all[@]}"; do : >"$WORK/$v.txt"; done
run_one() { # variant -> one line of key=value pairs appended to $WORK/<variant>.txt
  local v=$1 cmd a0 a1 t0 line bin extra
  case "$v" in
    client-go-json) cmd=("$CLIENTGO" -kubeconfig "$KCFG" -expect "$PODS" -label json) ;;
    client-go-protobuf) cmd=("$CLIENTGO" -kubeconfig "$KCFG" -expect "$PODS" -label protobuf -protobuf) ;;
    *)
      read -r -a extra <<<"${vargs[$v]}"
      bin=$BENCH
      if [ ${#extra[@]} -gt 0 ] && [ "${extra[0]#@}" != "${extra[0]}" ]; then
        bin=${extra[0]#@}
        extra=("${extra[@]:1}")
      fi
      cmd=("$bin" sync --kubeconfig "$KCFG" --expect "$PODS" ${extra[@]+"${extra[@]}"})
      ;;
  esac
  api_gc
  a0=$(cpu_ticks "$API_PID")
  t0=$(date +%s%3N)
  line=$(BENCH_T0_MS=$t0 ${TIME[@]+"${TIME[@]}" -o "$WORK/time.txt"} "${cmd[@]}" 2>"$WORK/stderr.txt" | grep '^phase=sync') ||
    { cat "$WORK/stderr.txt" >&2; echo "$v failed" >&2; exit 1; }
  api_gc
  a1=$(cpu_ticks "$API_PID")
  [ ${#TIME[@]} -gt 0 ] && line="$line $(tail -1 "$WORK/time.txt")"
  line="$line apiserver_cpu_ms=$(((a1 - a0) * 1000 / HZ))"
  echo "variant=$v $line" | tee -a "$WORK/$v.txt" | cut -c1-200
}
n=${#all[@]}
for r in $(seq 1 "$ROUNDS"); do
  echo "== round $r of $ROUNDS"
  for i in $(seq 0 $((n - 1))); do run_one "${all[$(((i + r - 1) % n))]}"; done
done

# Medians, with the same names for both kinds of program.
declare -A exec_ms rss store cpu api stall itcpu
for v in "${all[@]}"; do
  f=$WORK/$v.txt
  exec_ms[$v]=$(field since_exec_ms <"$f" | median)
  rss[$v]=$(field rss_synced <"$f" | median)
  cpu[$v]=$(awk '{u=s=0; for (i=1;i<=NF;i++) {if ($i ~ /^client_user_s=/) u=substr($i,15); if ($i ~ /^client_sys_s=/) s=substr($i,14)} print u+s}' "$f" | median)
  api[$v]=$(field apiserver_cpu_ms <"$f" | median)
  case "$v" in
    client-go-*) store[$v]=$(field heap_per_pod <"$f" | median); stall[$v]=nan; itcpu[$v]=nan ;;
    *)
      store[$v]=$(field store_per_pod <"$f" | median)
      stall[$v]=$(field max_stall_ms <"$f" | median)
      itcpu[$v]=$(field max_iter_cpu_ms <"$f" | median)
      ;;
  esac
done
echo
echo "== results: $PODS pods, $ROUNDS rounds, medians ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-22s %12s %10s %12s %10s %10s %10s %12s\n' variant exec_synced_ms client_cpu_s apiserver_ms rss_MiB store_B/pod stall_ms iter_cpu_ms
for v in "${all[@]}"; do
  awk -v v="$v" -v e="${exec_ms[$v]}" -v c="${cpu[$v]}" -v a="${api[$v]}" -v m="${rss[$v]}" -v s="${store[$v]}" -v st="${stall[$v]}" \
    -v it="${itcpu[$v]:-nan}" 'BEGIN { printf "%-22s %12s %10s %12s %10.1f %10s %10s %12s\n", v, e, c, a, m / 1048576, s, st, (it == "" ? "nan" : it) }'
done
for v in "${variants[@]}"; do
  for g in client-go-json client-go-protobuf; do
    [ -n "${exec_ms[$g]:-}" ] || continue
    awk -v v="$v" -v g="$g" -v e="${exec_ms[$v]}" -v ge="${exec_ms[$g]}" -v m="${rss[$v]}" -v gm="${rss[$g]}" \
      -v a="${api[$v]}" -v ga="${api[$g]}" -v c="${cpu[$v]}" -v gc="${cpu[$g]}" 'BEGIN {
      printf "ratio %s/%s: exec->synced %.2fx, client CPU %.2fx, API server CPU %.2fx, RSS %.3fx\n", v, g,
        e / ge, (gc > 0 ? c / gc : 0), (ga > 0 ? a / ga : 0), m / gm }'
  done
done
echo "targets: exec->synced <= 0.5x client-go-json and <= 1.0x client-go-protobuf; RSS <= 0.1x;" \
  "store <= 500 B/pod; API server CPU <= client-go's; stall < 10 ms"
