#!/usr/bin/env bash
# The agent's start-up at scale: a provider cluster (cluster 1) with N Nodes (default 5,000) and M pods (default
# 150,000, bench-informer's realistic pods bound to the Nodes round-robin, Running), a consumer (cluster 2)
# peered with it. Each round restarts the provider's agent and measures, from the exec: every informer synced
# (its log), the broadcaster's state computed ("accounting for M pods on N nodes"), /readyz passing (polled
# every 20 ms), and the Advertisement computed and sent to the consumer ("Advertisement sent to"); then the
# longest event-loop iteration (cliqo_event_loop_busiest_iteration_seconds), RSS and CPU. In the same rotation,
# client-go's shared informer (bench/clientgo-informer, pods only) syncs the same pods with JSON and with
# protobuf, as bench/informer-vs-clientgo.sh runs it. Prints medians and the ratios.
# The Nodes have no kubelet: the controller-manager runs without its node lifecycle controller, which would
# mark them NotReady and evict their pods.
# Usage: bench/agent-startup.sh --cliqoctl C --agent A --bench-informer B [--clientgo P] [--nodes N]
#        [--pods M] [--rounds R] [--base-port P] [--state-dir DIR [--skip-create]] [--trace-ms MS] [--agent-json]
#        [--probe STALLPROBE]
# --trace-ms: the measured agent runs with --loop-trace-ms MS; the stacks of its iterations over MS of CPU are
# printed after each round (symbolised with addr2line when there is one).
# --agent-json: the agent also runs with --list-encoding json in the same rotation (its lists in JSON).
# --probe: bench/stallprobe runs beside each agent from its exec until its Advertisement is sent, a fixed piece
# of work repeated, as a control for busiest_iteration_ms (probe_max_ms: its longest piece, of a median
# probe_median_us; the same work every time, so what is over the median is the machine's); steal_ms is the
# time /proc/stat says the hypervisor held the virtual CPUs meanwhile. With --trace-ms too, the agent's traced
# iterations are told apart: machine_stalls had a sample while a probe's piece was stalled as well, own_stalls
# did not (the agent's own work).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../tests/ports.sh" # cliqo_port: the one port table

CLIQOCTL="" AGENT="" BENCH="" CLIENTGO="" NODES=5000 PODS=150000 ROUNDS=3 KEEP="" SKIP_CREATE=0 TRACE_MS=0 AGENT_JSON=0 PROBE=""
BASE_PORT=$(cliqo_port bench.agent-startup)
while [ $# -gt 0 ]; do
  case "$1" in
    --cliqoctl) CLIQOCTL=$2; shift 2 ;;
    --agent) AGENT=$2; shift 2 ;;
    --bench-informer) BENCH=$2; shift 2 ;;
    --clientgo) CLIENTGO=$2; shift 2 ;;
    --nodes) NODES=$2; shift 2 ;;
    --pods) PODS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --base-port) BASE_PORT=$2; shift 2 ;;
    --state-dir) KEEP=$2; shift 2 ;;
    --skip-create) SKIP_CREATE=1; shift ;;
    --trace-ms) TRACE_MS=$2; shift 2 ;;
    --agent-json) AGENT_JSON=1; shift ;;
    --probe) PROBE=$2; shift 2 ;;
    -h | --help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
done
for b in "$CLIQOCTL" "$AGENT" "$BENCH"; do
  [ -x "$b" ] || { echo "need --cliqoctl, --agent and --bench-informer executables" >&2; exit 2; }
done
if [ -z "$CLIENTGO" ]; then
  echo "== client-go program (scripts/build-kube.sh --informerbench; cached after the first build)"
  CLIENTGO=$(bash "$HERE/../scripts/build-kube.sh" --informerbench)/informerbench
fi
[ -x "$CLIENTGO" ] || { echo "no client-go program at $CLIENTGO" >&2; exit 2; }

WORK=$(mktemp -d)
STATE=${KEEP:-$WORK/dev}
PROVIDER="" CONSUMER=""
PROBE_PID=""
cleanup() {
  [ -z "$PROBE_PID" ] || kill "$PROBE_PID" 2>/dev/null || true # else the wait below never ends
  [ -z "$PROVIDER" ] || kill "$PROVIDER" 2>/dev/null || true
  [ -z "$CONSUMER" ] || kill "$CONSUMER" 2>/dev/null || true
  wait 2>/dev/null || true
  [ -n "$KEEP" ] || "$CLIQOCTL" dev down --state-dir "$STATE" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
kcfg() { echo "$STATE/cluster-$1/kubeconfig"; }
k() { local c=$1; shift; kubectl --kubeconfig "$(kcfg "$c")" --request-timeout=120s "$@"; }
port() { echo $((BASE_PORT + 10 * ($1 - 1) + $2)); }
ms() { date +%s%3N; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "?" }'; }
# The epoch milliseconds of the first line of log FILE matching PATTERN (its ts=), or nothing.
log_ms() { local ts; ts=$(grep -m1 -e "$2" "$1" | sed -n 's/^ts=\([^ ]*\).*/\1/p'); [ -z "$ts" ] || date -d "$ts" +%s%3N; }
# The virtual CPUs' steal time so far (/proc/stat, all CPUs, in USER_HZ ticks of 10 ms).
steal_ms() { awk '$1 == "cpu" { print $9 * 10; exit }' /proc/stat; }
# stalls_split LOG PROBE_OUT: the agent's iterations traced (over --trace-ms of CPU) split into those
# with a sample inside a window where the probe's piece was stalled too (from its end minus its wall time
# to its end: the machine's) and the others (the agent's own): "machine_stalls=M own_stalls=O".
stalls_split() {
  awk '
    FILENAME == ARGV[1] { if ($1 == "stallprobe" && $2 == "stall") { sub(/wall_ms=/, "", $4); sub(/at_ms=/, "", $5); lo[++nw] = $5 - $4; hi[nw] = $5 } next }
    /^loop stall trace: iteration / {
      it = $5; seen[it] = 1
      for (i = 1; i <= nw; i++) if ($10 >= lo[i] && $10 <= hi[i]) machine[it] = 1
    }
    END { m = o = 0; for (it in seen) { if (it in machine) m++; else o++ } print "machine_stalls=" m " own_stalls=" o }
  ' "$2" "$1"
}
metric() { curl -fs "http://127.0.0.1:$(port 1 6)/metrics" | awk -v n="$1" '$1 == n { print $2; exit }'; }

echo "== clusters: provider (cluster 1) and consumer (cluster 2), base port $BASE_PORT"
# The API server holds the 150,000 pods in its watch cache (8-9 GiB resident here after a restart): a soft
# memory limit keeps its garbage from taking the rest of a 24 GiB machine when it answers big lists.
export GOMEMLIMIT=${GOMEMLIMIT:-12GiB}
export CLIQO_DEV_NODES=0 CLIQO_DEV_ETCD_QUOTA_BYTES=8589934592
# The lean set of controllers (cliqo-devenv) without nodelifecycle; resourcequota counts the tenant's quota.
export CLIQO_DEV_CONTROLLERS=namespace,garbagecollector,serviceaccount,serviceaccount-token,podgc,resourcequota,csrsigning,csrapproving,csrcleaner,clusterrole-aggregation
"$CLIQOCTL" dev up --clusters 2 --state-dir "$STATE" --base-port "$BASE_PORT" >/dev/null
if [ "$SKIP_CREATE" = 0 ]; then
  echo "== creating $NODES Nodes and $PODS pods on the provider"
  "$BENCH" create --kubeconfig "$(kcfg 1)" --pods "$PODS" --nodes "$NODES" --namespaces 4
fi

# The provider's scheduler and controller-manager are not needed once the pods exist and the clusters are
# peered (the pods are bound, nothing is left to reconcile), and each would cache every pod (5 GiB each at
# 150,000 here): the scheduler stops now, the controller-manager (which signs the peering's certificates)
# once the first Advertisement is out.
"$CLIQOCTL" dev stop --state-dir "$STATE" --cluster cluster-1 --component kube-scheduler >/dev/null
for i in 1 2; do
  "$CLIQOCTL" install --kubeconfig "$(kcfg "$i")" --cluster-name "cluster-$i" \
    --auth-address "127.0.0.1:$(port "$i" 7)" --skip-agent >/dev/null
done
start_agent() { # CLUSTER LOG [ARGS...]: starts its agent in the background; sets LAST_PID
  local c=$1 log=$2
  shift 2
  "$AGENT" --kubeconfig "$(kcfg "$c")" --http-addr "127.0.0.1:$(port "$c" 6)" \
    --auth-addr "127.0.0.1:$(port "$c" 7)" --auth-url "https://127.0.0.1:$(port "$c" 7)" \
    --kubelet-addr "127.0.0.1:$(port "$c" 8)" --webhook-addr "127.0.0.1:$(port "$c" 9)" \
    --webhook-url "https://127.0.0.1:$(port "$c" 9)" --node-address 127.0.0.1 \
    --identity "bench-$c" "$@" >"$log" 2>&1 &
  LAST_PID=$!
}
# The stacks --loop-trace-ms wrote in LOG, one line each (innermost first; the agent's own frames by name
# when addr2line is there).
print_traces() { # LOG T0: T0 the exec's epoch ms, to show when each sample was taken
  awk -v bin="$(basename "$AGENT")" -v t0="$2" '
    /^loop stall trace/ { if (s != "") print s; s = "  iteration " $5 " at " $7 " us, +" ($10 - t0) " ms:"; next }
    /\(\+0x[0-9a-f]+\)\[/ && index($0, bin) { match($0, /\(\+0x[0-9a-f]+\)/); s = s " " substr($0, RSTART + 2, RLENGTH - 3); next }
    /^\// { if (match($0, /\([A-Za-z_0-9]+\+/)) s = s " [" substr($0, RSTART + 1, RLENGTH - 2) "]"; next }
    END { if (s != "") print s }' "$1" |
    while read -r line; do
      out=""
      for w in $line; do
        case "$w" in
          0x*) if command -v addr2line >/dev/null; then w=$(addr2line -f -e "$AGENT" "$w" | head -1); fi ;;
        esac
        out="$out $w"
      done
      echo "$out"
    done | { grep -v -e ' teardown_modules ' -e ' finish_shutdown ' || true; } | head -20
}
wait_ready() { # CLUSTER: polls /readyz every 20 ms (10 minutes at most)
  local i
  for i in $(seq 30000); do
    curl -fs "http://127.0.0.1:$(port "$1" 6)/readyz" >/dev/null 2>&1 && return 0
    sleep 0.02
  done
  return 1
}
wait_log() { # FILE PATTERN: waits for a line (5 minutes at most)
  local i
  for i in $(seq 3000); do grep -q -e "$2" "$1" && return 0; sleep 0.1; done
  return 1
}

echo "== agents started, the consumer peered with the provider"
start_agent 2 "$WORK/consumer.log"
CONSUMER=$LAST_PID
start_agent 1 "$WORK/provider-0.log"
PROVIDER=$LAST_PID
wait_ready 2 || { tail -20 "$WORK/consumer.log" >&2; exit 1; }
wait_ready 1 || { tail -20 "$WORK/provider-0.log" >&2; exit 1; }
read -r -a add <<<"$("$CLIQOCTL" generate-add-command --kubeconfig "$(kcfg 1)")"
"$CLIQOCTL" "${add[@]:1}" --kubeconfig "$(kcfg 2)" >/dev/null
wait_log "$WORK/provider-0.log" "Advertisement sent to" || { tail -20 "$WORK/provider-0.log" >&2; exit 1; }
grep -m1 "accounting for" "$WORK/provider-0.log" | sed 's/^/  /'
"$CLIQOCTL" dev stop --state-dir "$STATE" --cluster cluster-1 --component kube-controller-manager >/dev/null

run_agent() { # ROUND [VARIANT]: restarts the provider's agent and measures its start-up (agent-json: with
  # --list-encoding json)
  local r=$1 v=${2:-agent} log="$WORK/provider-$1-${2:-agent}.log" t0 ready synced counted adv args=()
  [ "$v" = agent-json ] && args=(--list-encoding json)
  kill "$PROVIDER" 2>/dev/null || true
  wait "$PROVIDER" 2>/dev/null || true
  PROVIDER=""
  t0=$(ms)
  [ "$TRACE_MS" = 0 ] || args+=(--loop-trace-ms "$TRACE_MS")
  local probe_pid="" probe_line="" steal0
  steal0=$(steal_ms)
  if [ -n "$PROBE" ]; then
    "$PROBE" >"$WORK/probe.out" &
    probe_pid=$!
    PROBE_PID=$probe_pid
  fi
  start_agent 1 "$log" ${args[@]+"${args[@]}"}
  PROVIDER=$LAST_PID
  wait_ready 1 || { tail -20 "$log" >&2; exit 1; }
  ready=$(($(ms) - t0))
  wait_log "$log" "Advertisement sent to" || { tail -20 "$log" >&2; exit 1; }
  synced=$(($(log_ms "$log" "every informer has synced") - t0))
  counted=$(($(log_ms "$log" "accounting for") - t0))
  adv=$(($(log_ms "$log" "Advertisement sent to") - t0))
  if [ -n "$probe_pid" ]; then
    kill -TERM "$probe_pid"
    wait "$probe_pid" || true
    PROBE_PID=""
    probe_line=$(sed -n 's/^stallprobe units=[0-9]* median_us=\([0-9]*\) p99_us=[0-9]* max_ms=\([0-9.]*\) .* over_10ms=\([0-9]*\)$/probe_median_us=\1 probe_max_ms=\2 probe_over_10ms=\3/p' "$WORK/probe.out")
    [ "$TRACE_MS" = 0 ] || probe_line="$probe_line $(stalls_split "$log" "$WORK/probe.out")"
  fi
  echo "variant=$v round=$r informers_synced_ms=$synced counted_ms=$counted ready_ms=$ready advertisement_ms=$adv" \
    "busiest_iteration_ms=$(awk -v s="$(metric cliqo_event_loop_busiest_iteration_seconds)" 'BEGIN { printf "%.1f", s * 1000 }')" \
    "busiest_iteration_faults=$(metric cliqo_event_loop_busiest_iteration_page_faults)" \
    "busiest_iteration_io_ms=$(awk -v s="$(metric cliqo_event_loop_busiest_iteration_io_seconds)" 'BEGIN { printf "%.1f", s * 1000 }')" \
    "rss_MiB=$(awk -v b="$(metric process_resident_memory_bytes)" 'BEGIN { printf "%.1f", b / 1048576 }')" \
    "cpu_s=$(metric process_cpu_seconds_total)" "steal_ms=$(($(steal_ms) - steal0))" $probe_line | tee -a "$WORK/$v.txt"
  [ "$TRACE_MS" = 0 ] || print_traces "$log" "$t0"
  # The probe's pieces over 10 ms, when they ended (from the exec), to set beside the traces' times.
  [ -z "$probe_pid" ] || awk -v t0="$t0" '/^stallprobe stall / { sub(/at_ms=/, "", $5); print "  probe: a piece of " substr($3, 8) " ms (CPU), " substr($4, 9) " ms (wall), ended +" ($5 - t0) " ms" }' "$WORK/probe.out"
}
run_clientgo() { # ROUND json|protobuf
  local line t0
  t0=$(ms)
  # shellcheck disable=SC2046 # -protobuf or nothing
  line=$(BENCH_T0_MS=$t0 "$CLIENTGO" -kubeconfig "$(kcfg 1)" -expect "$PODS" -label "$2" \
    $([ "$2" = protobuf ] && echo -protobuf) 2>"$WORK/clientgo.err" | grep '^phase=sync') ||
    { cat "$WORK/clientgo.err" >&2; exit 1; }
  echo "variant=client-go-$2 round=$1 $(echo "$line" | tr ' ' '\n' | grep -E '^(since_exec_ms|sync_ms|rss|heap_per_pod)=' | tr '\n' ' ')" |
    tee -a "$WORK/client-go-$2.txt"
}

order=(agent protobuf json)
[ "$AGENT_JSON" = 0 ] || order+=(agent-json)
for r in $(seq 1 "$ROUNDS"); do
  echo "== round $r of $ROUNDS"
  for i in "${!order[@]}"; do
    v=${order[$(((i + r - 1) % ${#order[@]}))]}
    case "$v" in
      agent*) run_agent "$r" "$v" ;;
      *) run_clientgo "$r" "$v" ;;
    esac
  done
done

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" "$2" | median; }
A=$WORK/agent.txt
echo
echo "== results: $NODES Nodes, $PODS pods, $ROUNDS rounds, medians ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
fields=(informers_synced_ms counted_ms ready_ms advertisement_ms busiest_iteration_ms busiest_iteration_faults busiest_iteration_io_ms rss_MiB cpu_s steal_ms)
[ -z "$PROBE" ] || fields+=(probe_median_us probe_max_ms probe_over_10ms)
[ -z "$PROBE" ] || [ "$TRACE_MS" = 0 ] || fields+=(machine_stalls own_stalls)
for f in "${fields[@]}"; do
  printf '  agent %-22s %s\n' "$f" "$(field "$f" "$A")"
done
if [ "$AGENT_JSON" != 0 ]; then
  for f in ready_ms advertisement_ms busiest_iteration_ms busiest_iteration_faults cpu_s; do
    printf '  agent --list-encoding json %-22s %s\n' "$f" "$(field "$f" "$WORK/agent-json.txt")"
  done
fi
pj=$(field since_exec_ms "$WORK/client-go-protobuf.txt")
jj=$(field since_exec_ms "$WORK/client-go-json.txt")
echo "  client-go pods informer exec->synced: protobuf $pj ms, json $jj ms"
adv=$(field advertisement_ms "$A")
rd=$(field ready_ms "$A")
echo "ratio agent ready / client-go protobuf sync: $(ratio "$rd" "$pj")x; / json: $(ratio "$rd" "$jj")x"
echo "ratio agent Advertisement sent / client-go protobuf sync: $(ratio "$adv" "$pj")x; / json: $(ratio "$adv" "$jj")x"
echo "target: the longest loop iteration < 10 ms (busiest_iteration_ms): $(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^busiest_iteration_ms=/) { n++; if (substr($i, 22) + 0 < 10) ok++ } } END { printf "%d of %d rounds", ok, n }' "$A")"
if [ -n "$PROBE" ] && [ "$TRACE_MS" != 0 ]; then
  # Summed over the rounds: a median of counts would hide the one round that had some.
  echo "  iterations traced over $TRACE_MS ms, all rounds: $(awk '{ for (i = 1; i <= NF; i++) { if ($i ~ /^machine_stalls=/) m += substr($i, 16); if ($i ~ /^own_stalls=/) o += substr($i, 12) } } END { printf "%d during a stall of the probe too (the machine), %d not (the agent'"'"'s own)", m, o }' "$A")"
fi
