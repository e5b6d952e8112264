# The set-up the peering benchmarks share (bench/offloading.sh, bench/kubelet-offloaded.sh,
# bench/advertisement-live.sh): source it after setting CLIQOCTL, AGENT, BASE_PORT and CLIQO_DEV_NODES (and,
# if wanted, CLIQO_DEV_NODESIM_ARGS and CLIQO_DEV_CONTROLLER_QPS). It defines WORK (removed on exit), PIDS
# (the agents: consumer, then provider), the helpers below, bench_peer_setup and bench_offload_setup.
# AGENT_ARGS (word-split), if set, is added to both agents' command lines. BENCH_LOG_DIR, if set, receives every log
# of the run (agents, control planes) at exit. With BENCH_PIN=1 (and at least 2
# CPUs) each cluster's processes (control plane, simulated nodes, its agent) run on half of the CPUs, cluster 1 on
# the first half: as two clusters on machines of their own, so that work on one does not take the other's CPU.
WORK=$(mktemp -d)
export CLIQO_DEV_DIR=$WORK/dev CLIQO_DEV_BASE_PORT=$BASE_PORT
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -n "${BENCH_LOG_DIR:-}" ]; then # the agents' and control planes' logs, kept for reading after the run
    mkdir -p "$BENCH_LOG_DIR" || true
    (cd "$WORK" && find . -name '*.log' -exec cp --parents {} "$BENCH_LOG_DIR" \;) || true
  fi
  "$CLIQOCTL" dev down >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
cpus_of() { # CLUSTER: the CPU list its processes are pinned to, or "" (no pinning)
  local n h
  n=$(nproc)
  [ "${BENCH_PIN:-0}" = 1 ] && [ "$n" -ge 2 ] || return 0
  h=$((n / 2))
  if [ "$1" = 1 ]; then echo "0-$((h - 1))"; else echo "$h-$((n - 1))"; fi
}
pin_cluster() { # CLUSTER: every process of its control plane and nodes (and their supervisors), all threads
  local c f
  c=$(cpus_of "$1")
  [ -n "$c" ] || return 0
  for f in "$CLIQO_DEV_DIR/cluster-$1"/*.pid; do
    taskset -a -p -c "$c" "$(cat "$f")" >/dev/null 2>&1 || true
  done
}
kcfg() { echo "$CLIQO_DEV_DIR/cluster-$1/kubeconfig"; }
k() { local c=$1; shift; kubectl --kubeconfig "$(kcfg "$c")" --request-timeout=60s "$@"; }
ms() { date +%s%3N; }
port() { echo $((BASE_PORT + 10 * ($1 - 1) + $2)); }
median() { sort -n | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "?" }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "?" }'; }
rss_kib() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status"; }
# A pod count as a quantity ("330", "2k").
count_of() { case "$1" in *k) echo $((${1%k} * 1000)) ;; '') echo 0 ;; *) echo "$1" ;; esac; }

# bench_peer_setup MIN_PODS [PERCENT]: two clusters of CLIQO_DEV_NODES simulated nodes, cliqo installed, one
# agent each (loopback, ports from BASE_PORT), the provider (cluster 2) sharing PERCENT % (default: its
# default), cluster 1 peered with it, its virtual node NODE Ready with room for MIN_PODS pods. Sets A_ID, B_ID
# and NODE.
bench_peer_setup() {
  local min=$1 pct=${2:-} i add
  echo "setup: 2 clusters of $CLIQO_DEV_NODES simulated nodes, cliqo installed, agents started, cluster-1 peered with cluster-2"
  "$CLIQOCTL" dev up --clusters 2 >/dev/null
  pin_cluster 1
  pin_cluster 2
  [ -z "$(cpus_of 1)" ] || echo "cluster-1 pinned to CPUs $(cpus_of 1), cluster-2 to CPUs $(cpus_of 2) (agents included)"
  for i in 1 2; do
    "$CLIQOCTL" install --kubeconfig "$(kcfg "$i")" --cluster-name "cluster-$i" \
      --auth-address "127.0.0.1:$(port "$i" 7)" --skip-agent >/dev/null
    # shellcheck disable=SC2046,SC2086 # taskset's words when pinned; AGENT_ARGS is word-split on purpose
    $([ -n "$(cpus_of "$i")" ] && echo taskset -c "$(cpus_of "$i")") "$AGENT" --kubeconfig "$(kcfg "$i")" --http-addr "127.0.0.1:$(port "$i" 6)" \
      --auth-addr "127.0.0.1:$(port "$i" 7)" --auth-url "https://127.0.0.1:$(port "$i" 7)" \
      --kubelet-addr "127.0.0.1:$(port "$i" 8)" --webhook-addr "127.0.0.1:$(port "$i" 9)" \
      --webhook-url "https://127.0.0.1:$(port "$i" 9)" --node-address 127.0.0.1 \
      --identity "bench-$i" ${AGENT_ARGS:-} >"$WORK/agent-$i.log" 2>&1 &
    PIDS+=($!)
  done
  for i in 1 2; do
    for _ in $(seq 300); do curl -fs "http://127.0.0.1:$(port "$i" 6)/readyz" >/dev/null && break; sleep 0.1; done
  done
  [ -z "$pct" ] || k 2 patch clusterconfig configuration --type=merge \
    -p "{\"spec\":{\"advertisementConfig\":{\"outgoingConfig\":{\"resourceSharingPercentage\":$pct}}}}" >/dev/null
  read -r -a add <<<"$("$CLIQOCTL" generate-add-command --kubeconfig "$(kcfg 2)")"
  "$CLIQOCTL" "${add[@]:1}" --kubeconfig "$(kcfg 1)" >/dev/null
  B_ID=$(k 2 get configmap -n cliqo cluster-id -o jsonpath='{.data.cluster-id}')
  A_ID=$(k 1 get configmap -n cliqo cluster-id -o jsonpath='{.data.cluster-id}')
  NODE=liqo-$B_ID
  for _ in $(seq 600); do
    [ "$(k 1 get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ] &&
      [ "$(count_of "$(k 1 get node "$NODE" -o jsonpath='{.status.allocatable.pods}' 2>/dev/null)")" -ge "$min" ] && break
    sleep 0.2
  done
  echo "virtual node $NODE Ready, pods $(k 1 get node "$NODE" -o jsonpath='{.status.allocatable.pods}')"
}

# bench_offload_setup MIN_PODS: bench_peer_setup with the provider sharing 100 %, and namespace bench
# offloaded (Remote). Also sets RNS (bench's name on the provider).
bench_offload_setup() {
  bench_peer_setup "$1" 100
  k 1 create namespace bench >/dev/null
  k 1 apply -f - >/dev/null <<JSON
{"apiVersion":"offloading.liqo.io/v1alpha1","kind":"NamespaceOffloading","metadata":{"name":"offloading","namespace":"bench"},
 "spec":{"podOffloadingStrategy":"Remote"}}
JSON
  for _ in $(seq 300); do
    [ "$(k 1 get namespaceoffloading -n bench offloading -o jsonpath='{.status.offloadingPhase}' 2>/dev/null)" = Ready ] &&
      k 2 get namespacemaps -A -o json | jq -e --arg a "$A_ID" \
        '.items[] | select(.metadata.name == $a) | .status.currentMapping.bench.phase == "Accepted"' >/dev/null 2>&1 && break
    sleep 0.2
  done
  RNS=$(k 1 get namespaceoffloading -n bench offloading -o jsonpath='{.status.remoteNamespaceName}')
  echo "namespace bench offloaded as $RNS"
}
