#!/usr/bin/env bash
# Offloading, after the method of Liqo's offloading benchmark: the time from creating a Deployment of N replicas
# until all its pods are Ready, for N in SIZES (default 100 1000 10000), offloaded through the virtual node (the
# Deployment on the consumer, in a namespace offloaded to the provider) versus created directly on the provider,
# in the same run, and their ratio. Both clusters' scheduler and controller-manager run at CONTROLLER_QPS
# requests/s (default 1000, printed), so that the direct case is not paced by client-go's default 20/s; the
# direct case's pace (pods Ready per second) is printed beside it. The direct case runs a second time while
# cluster-1 runs a Deployment of N pods of its own (not offloaded), so that both halves of the machine are busy, as
# they are in the offloaded case: its time, how much slower it was (machine_factor) and the offloaded case's ratio
# to it (contended-baseline). For each N, the requests cliqo sent per
# offloaded pod, each way (to the provider: the virtual kubelet's credential; home: the agent's own client),
# while the pods came up and while they went away. Then the added latency of a single pod: S times (default 15) a
# bare pod created and waited Ready, offloaded and direct; the median of each and their difference, from before the
# create request (curl, not kubectl: its start-up is a few ms, not hundreds) to the pod's first Ready event as one
# watch per cluster saw it; and beside it from the pod's ADDED event, which leaves out the request and its admission;
# and each step of an offloaded pod, from a third watch (the provider's namespace), beside the time each API server
# took for the requests of those steps (a step's time beyond them is the watches' and cliqo's own). A sample starts
# once the last one's pod is gone (its DELETED event), so that no deletion runs under it. Also the
# consumer agent's RSS after each N is Ready (build it with the release preset for that figure).
# Two local clusters of simulated nodes, as many as two Deployments of the largest N need (250 pods a node; each case
# now starts once the last one's pods are gone, and the count stays as it was so that runs compare) unless --nodes
# says; the provider shares 100 % of them. Prints figures and ratios, asserts
# nothing; the clusters are torn down on exit.
# Usage: bench/offloading.sh --cliqoctl C --agent A --nodesim S [--sizes "100 1000 10000"] [--samples S]
#        [--nodes N] [--base-port P] [--controller-qps Q] [--peer-qps Q] [--kube-api-qps Q] [--no-pin]
#        [--no-provider-admission] [--no-consumer-webhook] [--bare-pods]
# --peer-qps sets the consumer's per-peer client rate (ClusterConfig peerClient; default: the agent's default),
# --kube-api-qps the agents' own clients' (default: the agent's default). Each cluster runs on half of the CPUs
# (bench/peered-clusters.sh, BENCH_PIN), as two clusters on machines of their own would: on one shared machine the
# offloaded case runs two control planes where the direct case runs one. --no-pin shares all CPUs.
# --no-provider-admission is an experiment, not a way to run cliqo: once peered, the provider's agent is stopped
# and the offer's enforcement removed (the validating webhook, the ResourceQuota and LimitRange of the namespace
# the pods land in), to measure what they cost the offloaded case. The Advertisement (30 min TTL) outlives the run.
# --no-consumer-webhook, an experiment too: the consumer's pod webhook is not called for the benchmark's pods (an
# objectSelector on it that they do not match, label app; the agent does not set that field, so it stays). The
# offloaded pods carry the toleration and the affinity themselves, so they land on the virtual node as before; what
# the webhook costs the consumer's creations (and so the offloaded case) is the difference. Not with --bare-pods.
# --bare-pods: the offloaded pods carry neither the virtual-node toleration nor the node affinity, so the pod
# webhook adds both (a JSON patch on every creation), as for a user's pods written for no cluster in particular.
# By default they carry both, which the webhook then leaves as they are (an empty answer).
# With BENCH_PPROF_DIR set (and CLIQO_DEV_APISERVER_ARGS=--profiling=true), both API servers' CPU profiles are
# taken over the first BENCH_PPROF_SECONDS (12) of each case (the contended baseline's too: there cluster-1's is
# its own Deployment, the consumer's work in the offloaded case without cliqo's), into that directory (go tool
# pprof; over 50 s, the API servers' in pieces of 50 s, numbered), with their /metrics before and after the case
# (apiserver_request_total tells which requests each case cost); with CLIQO_DEV_CONTROLLERS_ARGS=--profiling=true
# too, the controller-managers' profiles beside them.
# With BENCH_SMAPS_DIR set, the consumer agent's /proc smaps when its RSS is read, there (consumer-agent-smaps-N.txt),
# and glibc's malloc_stats() written to its log then (gdb; with BENCH_LOG_DIR, the log is kept).
# Before the cases, each process's CPU per second with nothing deployed, over BENCH_IDLE_SECONDS (30; 0: not measured).
set -euo pipefail
source "$(dirname "$0")/../tests/ports.sh" # cliqo_port: the one port table

CLIQOCTL="" AGENT="" NODESIM="" SIZES="100 1000 10000" SAMPLES=15 NODES="" BASE_PORT=$(cliqo_port bench.offloading)
CQPS=1000 PEER_QPS="" KUBE_QPS="" BENCH_PIN=1 NO_ADMISSION=0 NO_CONSUMER_WEBHOOK=0 BARE_PODS=0
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
    --peer-qps) PEER_QPS=$2; shift 2 ;;
    --kube-api-qps) KUBE_QPS=$2; shift 2 ;;
    --no-pin) BENCH_PIN=0; shift ;;
    --no-provider-admission) NO_ADMISSION=1; shift ;;
    --no-consumer-webhook) NO_CONSUMER_WEBHOOK=1; shift ;;
    --bare-pods) BARE_PODS=1; shift ;;
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
done
for b in "$CLIQOCTL" "$AGENT" "$NODESIM"; do
  [ -x "$b" ] || { echo "need --cliqoctl, --agent and --nodesim executables" >&2; exit 2; }
done
export CLIQO_NODESIM=$NODESIM
MAX=0
for n in $SIZES; do [ "$n" -gt "$MAX" ] && MAX=$n; done

# Room for two Deployments of the largest N (the provider held both at once before each case started on clusters
# emptied of the last one's pods), 250 pods a node, with cpu and memory to spare (offloaded pods get the tenant
# namespace's default requests there).
[ -n "$NODES" ] || NODES=$(((MAX * 22 / 10 + 249) / 250))
[ "$NODES" -ge 4 ] || NODES=4
export CLIQO_DEV_NODES=$NODES CLIQO_DEV_NODESIM_ARGS="--pods 250 --cpu 2k --memory 8Ti"
export CLIQO_DEV_CONTROLLER_QPS=$CQPS BENCH_PIN
[ -z "$KUBE_QPS" ] || AGENT_ARGS="--kube-api-qps $KUBE_QPS"
source "$(dirname "$0")/peered-clusters.sh"
dflt="the agent's default"
echo "per-peer client: ${PEER_QPS:-$dflt} requests/s; agents' own clients: ${KUBE_QPS:-$dflt} requests/s"
echo "controllers (kube-scheduler, kube-controller-manager) of both clusters at $CQPS requests/s, burst $((CQPS * 2)); $NODES simulated nodes a cluster, 250 pods each"
bench_offload_setup "$MAX"
if [ "$NO_ADMISSION" = 1 ]; then
  kill "${PIDS[1]}"
  wait "${PIDS[1]}" 2>/dev/null || true
  k 2 delete validatingwebhookconfiguration cliqo-offer-enforcement --ignore-not-found >/dev/null
  k 2 delete resourcequota,limitrange -n "$RNS" --all >/dev/null
  echo "EXPERIMENT: the provider's agent stopped, its offer enforcement removed (webhook, ResourceQuota, LimitRange of $RNS)"
fi
if [ "$NO_CONSUMER_WEBHOOK" = 1 ]; then
  [ "$BARE_PODS" = 0 ] || { echo "--no-consumer-webhook: the bare pods need the webhook" >&2; exit 2; }
  k 1 patch mutatingwebhookconfiguration cliqo-pod-offloading --type=json \
    -p '[{"op":"add","path":"/webhooks/0/objectSelector","value":{"matchExpressions":[{"key":"app","operator":"DoesNotExist"}]}}]' >/dev/null
  echo "EXPERIMENT: the consumer's pod webhook is not called for the benchmark's pods (objectSelector: no label app)"
fi
if [ -n "$PEER_QPS" ]; then
  k 1 patch clusterconfig configuration --type=merge \
    -p "{\"spec\":{\"peeringConfig\":{\"peerClient\":{\"qps\":$PEER_QPS,\"burst\":$((PEER_QPS * 2))}}}}" >/dev/null
fi
store_kb() { # AGENT_PORT: cliqo_informer_store_bytes in KB, per resource
  { curl -s "http://127.0.0.1:$1/metrics" || true; } | awk '/^cliqo_informer_store_bytes\{/ {
      match($0, /resource="[^"]*"/); r = substr($0, RSTART + 10, RLENGTH - 11)
      match($0, /part="[^"]*"/); p = substr($0, RSTART + 6, RLENGTH - 7)
      if (p == "fixed") f[r] += $NF; else if (p != "table") { v[r] += $NF; if (p == "slack") sl[r] += $NF } }
    END { for (r in v) if (v[r] + f[r] >= 10240) printf "%s=%.0f(slack %.0f; fixed %.0f) ", r, v[r] / 1024, sl[r] / 1024, f[r] / 1024 }'
}
metric_sums() { # AGENT_PORT: "to_provider VERB=n ... home VERB=n ...", watches left out
  curl -s "http://127.0.0.1:$1/metrics" | awk '
    /^cliqo_peer_requests_total\{/ && /role="vk"/ && !/verb="WATCH"/ { match($0, /verb="[A-Z]+"/); p[substr($0, RSTART + 6, RLENGTH - 7)] += $NF }
    /^cliqo_kube_requests_total\{/ && !/verb="WATCH"/ { match($0, /verb="[A-Z]+"/); h[substr($0, RSTART + 6, RLENGTH - 7)] += $NF }
    END { printf "to_provider"; for (v in p) printf " %s=%d", v, p[v]; printf " home"; for (v in h) printf " %s=%d", v, h[v]; print "" }'
}
webhook_conns() { # AGENT_PORT: "HANDSHAKES ABANDONED" of its webhook server so far ("0 0": no agent there)
  { curl -s "http://127.0.0.1:$1/metrics" || true; } | awk '/^cliqo_webhook_connections_total\{/ { if ($0 ~ /"handshake"/) h = $NF; else a = $NF }
    END { printf "%d %d\n", h, a }'
}
per_pod() { # BEFORE AFTER N: per offloaded pod, each way, by verb
  awk -v n="$3" -v a="$1" -v b="$2" 'BEGIN {
    nx = split(a, x, " "); ny = split(b, y, " ")
    for (i = 1; i <= nx; i++) { if (split(x[i], kv, "=") == 2) before[w, kv[1]] = kv[2]; else w = x[i] }
    for (i = 1; i <= ny; i++) { if (split(y[i], kv, "=") == 2) { after[w, kv[1]] = kv[2]; verbs[w, kv[1]] = 1 } else w = y[i] }
    split("to_provider home", ways, " ")
    for (j = 1; j <= 2; j++) {
      t = 0; d = ""
      for (k in verbs) { split(k, kk, SUBSEP); if (kk[1] != ways[j]) continue
        c = after[k] - before[k]; if (c <= 0) continue; t += c; d = d sprintf(" %s=%.2f", kk[2], c / n) }
      printf "%s%s=%.2f (%s)", (j > 1 ? " " : ""), ways[j], t / n, substr(d, 2)
    }
    print "" }'
}
# When the offloaded pods passed each step (API timestamps, whole seconds, from the first home pod's creation):
# the second by which 50 %, 90 % and all of them had. Says which part of the path sets the pace. With
# BENCH_LOG_DIR, each pod's steps are kept there (steps-APP.txt: "STEP SECONDS" lines) for a timeline.
cpu_ticks() { # "c1_kube-apiserver=T ... c1_agent=T c2_..." CPU clock ticks (user + system) so far
  local i f
  for i in 1 2; do
    for f in "$CLIQO_DEV_DIR/cluster-$i"/*.pid; do
      case "$f" in *.supervisor.pid) continue ;; esac
      printf 'c%s_%s=%s ' "$i" "$(basename "$f" .pid)" "$(awk '{ print $14 + $15 }' "/proc/$(cat "$f")/stat" 2>/dev/null || echo 0)"
    done
    printf 'c%s_agent=%s ' "$i" "$(awk '{ print $14 + $15 }' "/proc/${PIDS[$((i - 1))]}/stat")"
  done
}
cpu_used() { # BEFORE AFTER [SECONDS]: seconds of CPU per process between two cpu_ticks, and per cluster; with
  # SECONDS, per second of them instead
  awk -v a="$1" -v b="$2" -v hz="$(getconf CLK_TCK)" -v per="${3:-}" 'BEGIN {
    f = per ? "%.3f" : "%.1f"; per = per ? per : 1
    nx = split(a, x, " "); ny = split(b, y, " ")
    for (i = 1; i <= nx; i++) { split(x[i], kv, "="); before[kv[1]] = kv[2] }
    for (i = 1; i <= ny; i++) { split(y[i], kv, "="); d = (kv[2] - before[kv[1]]) / hz / per; c = substr(kv[1], 1, 2)
      tot[c] += d; out = out sprintf(" %s=" f, kv[1], d) }
    printf "cluster-1=" f " cluster-2=" f ":%s\n", tot["c1"], tot["c2"], out }'
}
steps_of() { # CLUSTER NS APP PREFIX T0: "PREFIX_created SECONDS" ... per pod, from T0
  k "$1" get pods -n "$2" -l "app=$3" --show-managed-fields -o json | jq -r --arg p "$4" --argjson t0 "$5" '
    def cond(t): [.status.conditions[]? | select(.type == t and .status == "True") | .lastTransitionTime | fromdateiso8601 - $t0][0];
    .items[] | "\($p)_created \(.metadata.creationTimestamp | fromdateiso8601 - $t0)", "\($p)_scheduled \(cond("PodScheduled"))", "\($p)_ready \(cond("Ready"))",
      "\($p)_written \([.metadata.managedFields[]?.time | select(. != null) | fromdateiso8601] | if length > 0 then max - $t0 else null end)"'
}
stages() { # CLUSTER NS APP [REMOTE_NS]: p50/p90/all of each step
  local t0
  t0=$(k "$1" get pods -n "$2" -l "app=$3" -o json | jq '[.items[].metadata.creationTimestamp | fromdateiso8601] | min')
  # An offloaded pod's PodScheduled shows the provider's once its status is written home: when the home
  # scheduler bound it is the time of its Scheduled Event (events.k8s.io: eventTime). The Events of an earlier
  # Deployment of the same name (--sizes "1000 1000"; they are kept an hour) are older than T0 and left out.
  { steps_of "$1" "$2" "$3" home "$t0"
    if [ -n "${4:-}" ]; then
      steps_of 2 "$4" "$3" remote "$t0"
      k "$1" get events -n "$2" --field-selector reason=Scheduled -o json | jq -r --arg a "$3-" --argjson t0 "$t0" '
        .items[] | select(.involvedObject.name | startswith($a)) | (.firstTimestamp // .eventTime) |
        select(. != null) | sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601 - $t0 | select(. >= 0) | "home_bound \(.)"'
    fi
  } | awk '$2 != "null"' | sort -k1,1 -k2,2n | { if [ -n "${BENCH_LOG_DIR:-}" ]; then tee "$BENCH_LOG_DIR/steps-$3.txt"; else cat; fi; } |
    awk -v off="${4:+1}" '{ v[$1, ++n[$1]] = $2 }
      END { steps = off ? "home_created home_bound remote_created remote_scheduled remote_ready home_ready home_written" : "home_created home_scheduled home_ready home_written"
        split(steps, o, " ")
        for (i = 1; o[i] != ""; i++) { s = o[i]; m = n[s]; if (!m) continue
          printf "%s%s=%s/%s/%s", (i > 1 ? " " : ""), s, v[s, int((m + 1) / 2)], v[s, int((m * 9 + 9) / 10)], v[s, m] }
        print "" }'
}
k 2 create namespace bench-direct >/dev/null
k 1 create namespace bench-twin >/dev/null
# The offloaded pods carry the toleration and the node affinity the pod webhook would give them (namespace bench is
# offloaded with Remote), so its answer is empty; with --bare-pods they carry nothing and the webhook adds both.
TO_VNODE='"tolerations":[{"key":"virtual-node.liqo.io/not-allowed","operator":"Exists","effect":"NoExecute"}],
 "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
 {"matchExpressions":[{"key":"liqo.io/type","operator":"In","values":["virtual-node"]}]}]}}},'
if [ "$BARE_PODS" = 1 ]; then
  TO_VNODE=""
  echo "offloaded pods: bare (the pod webhook adds the toleration and the node affinity to each)"
else
  echo "offloaded pods: with the toleration and the node affinity (the pod webhook has nothing to add)"
fi
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
rss_detail() { awk '/^(Rss(Anon|File)|VmHWM):/ { k = $1 ~ /^Rss/ ? tolower(substr($1, 4, length($1) - 4)) : "peak"; printf "%s%s=%.1f", sep, k, $2 / 1024; sep = " " }' "/proc/$1/status"; }

# The API servers' own latencies, from their /metrics: sums, counts and histogram buckets of the pod
# creations (apiserver_request_duration_seconds) and of the consumer's pod webhook calls
# (apiserver_admission_webhook_admission_duration_seconds), as lines "create_sum S", "webhook_count C",
# "create_le=0.5 B"... to diff.
# HIST_OUT: awk's out(PREFIX, NAME) prints a histogram's line of /metrics as "PREFIXsum S", "PREFIXcount C" or
# "PREFIXle=B C", for latency_of.
# shellcheck disable=SC2016 # awk's $NF, not the shell's
HIST_OUT='function out(p, n) { if (n ~ /_bucket\{/) { sub(/.*le="/, "le=", n); sub(/".*/, "", n) } else { sub(/\{.*/, "", n); sub(/.*_/, "", n) }
  print p n, $NF }'
api_latency() { # CLUSTER
  k "$1" get --raw /metrics | awk "$HIST_OUT"'
    /^apiserver_request_duration_seconds_(sum|count|bucket)\{/ && /resource="pods"/ && /subresource=""/ && /verb="POST"/ { out("create_", $1) }
    /^apiserver_admission_webhook_admission_duration_seconds_(sum|count|bucket)\{/ && /name="pods.offloading.cliqo.io"/ { out("webhook_", $1) }
    # API Priority and Fairness: the time requests queued for a seat, and the ones refused (429), by flow schema
    /^apiserver_flowcontrol_request_wait_duration_seconds_(sum|count)\{/ && /execute="true"/ {
      match($0, /flow_schema="[^"]*"/); f = substr($0, RSTART + 13, RLENGTH - 14); k = $1 ~ /_sum\{/ ? "sum" : "count"
      print "apf_" k "_" f, $NF }
    /^apiserver_flowcontrol_rejected_requests_total\{/ {
      match($0, /flow_schema="[^"]*"/); r[substr($0, RSTART + 13, RLENGTH - 14)] += $NF }
    END { for (f in r) print "apf_rejected_" f, r[f] }'
}
apf_of() { # BEFORE AFTER: "FLOW_SCHEMA=requests/mean queueing ms/refused ..." over the case, the busiest first
  awk 'FILENAME == ARGV[1] { b[$1] = $2; next } /^apf_/ { d[$1] = $2 - b[$1] }
    END { for (k in d) if (k ~ /^apf_count_/) { f = substr(k, 11); c = d[k]; if (c <= 0) continue
        printf "%d %s=%d/%.0fms/%d\n", c, f, c, 1000 * d["apf_sum_" f] / c, d["apf_rejected_" f] }
      for (k in d) if (k ~ /^apf_rejected_/ && d[k] > 0 && !(("apf_count_" substr(k, 14)) in d)) printf "0 %s=0/0ms/%d\n", substr(k, 14), d[k] }' "$1" "$2" |
    sort -rn | cut -d' ' -f2 | paste -sd' '
}
# The consumer agent's own side of those calls, from its /metrics: the time its pod webhook took to decide
# (decode, decide, encode: cliqo_admission_request_duration_seconds) and the CPU time of each iteration of its
# event loop (cliqo_event_loop_iteration_seconds: what a review arriving meanwhile waited for, on a free core).
# Against the API server's call time above, it tells the agent's own work from the wait for a busy core.
agent_latency() { # AGENT_PORT
  { curl -s "http://127.0.0.1:$1/metrics" || true; } | awk "$HIST_OUT"'
    /^cliqo_admission_request_duration_seconds_(sum|count|bucket)\{/ && /webhook="pod-offloading"/ { out("decide_", $1) }
    /^cliqo_event_loop_iteration_seconds_(sum|count|bucket)/ { out("loop_", $1) }'
}
latency_of() { # PREFIX BEFORE AFTER: "mean_ms=M p50_ms<=B p90_ms<=B" of PREFIX's histogram over the case
  awk -v p="$1" 'FILENAME == ARGV[1] { b[$1] = $2; next } { d[$1] = $2 - b[$1] }
    END { c = d[p "count"]; s = d[p "sum"]
      if (c <= 0) { print "none"; exit }
      for (k in d) if (index(k, p "le=") == 1) { le = substr(k, length(p "le=") + 1)
        if (le != "+Inf") { bl[++nb] = le + 0; bc[le + 0] = d[k] } }
      for (i = 2; i <= nb; i++) for (j = i; j > 1 && bl[j - 1] > bl[j]; j--) { t = bl[j]; bl[j] = bl[j - 1]; bl[j - 1] = t }
      for (i = 1; i <= nb; i++) { if (!m50 && bc[bl[i]] >= c * 0.5) m50 = bl[i]; if (!m90 && bc[bl[i]] >= c * 0.9) m90 = bl[i] }
      printf "n=%d mean_ms=%.0f p50_ms<=%g p90_ms<=%g", c, 1000 * s / c, 1000 * m50, 1000 * m90 }' "$2" "$3"
}

PROF=() PROF_CASE=""
profile_start() { # CASE N: with BENCH_PPROF_DIR, both API servers' CPU profiles in the background
  local i
  PROF=()
  [ -n "${BENCH_PPROF_DIR:-}" ] || return 0
  PROF_CASE="$1-$2"
  for i in 1 2; do
    k "$i" get --raw /metrics >"$BENCH_PPROF_DIR/$PROF_CASE-cluster-$i-metrics-before.txt"
    # The API server cuts a request at its timeout (60 s): longer profiles are taken in pieces of at most
    # 50 s, one file each (go tool pprof merges them).
    ( left=${BENCH_PPROF_SECONDS:-12} j=1 suffix=""
      while [ "$left" -gt 0 ]; do
        s=$((left > 50 ? 50 : left))
        [ "${BENCH_PPROF_SECONDS:-12}" -le 50 ] || suffix="-$j"
        k "$i" get --raw "/debug/pprof/profile?seconds=$s" >"$BENCH_PPROF_DIR/$PROF_CASE-cluster-$i-apiserver$suffix.pprof" || exit 1
        left=$((left - s)) j=$((j + 1))
      done ) &
    PROF+=($!)
    case "${CLIQO_DEV_CONTROLLERS_ARGS:-}" in *--profiling=true*)
      # Its secure port (the state's cluster table, sixth column), as the admin.
      curl -sk --cert "$CLIQO_DEV_DIR/cluster-$i/pki/admin.crt" --key "$CLIQO_DEV_DIR/cluster-$i/pki/admin.key" \
        "https://127.0.0.1:$(awk -v n="cluster-$i" '$1 == n { print $6 }' "$CLIQO_DEV_DIR/clusters")/debug/pprof/profile?seconds=${BENCH_PPROF_SECONDS:-12}" \
        -o "$BENCH_PPROF_DIR/$PROF_CASE-cluster-$i-controller-manager.pprof" &
      PROF+=($!) ;;
    esac
  done
}
profile_wait() {
  local p i
  for p in ${PROF[@]+"${PROF[@]}"}; do wait "$p" || echo "an API server's profile failed (is its profiling on?)" >&2; done
  [ -z "${BENCH_PPROF_DIR:-}" ] || for i in 1 2; do
    k "$i" get --raw /metrics >"$BENCH_PPROF_DIR/$PROF_CASE-cluster-$i-metrics-after.txt"
  done
}

LAT=$WORK/latency
mkdir -p "$LAT"
# The clusters' own load with nothing deployed (node leases and heartbeats, controllers' resyncs): it runs through
# every case too, for as long as the case lasts, so a longer case pays more of it.
IDLE_S=${BENCH_IDLE_SECONDS:-30}
if [ "$IDLE_S" -gt 0 ]; then
  i0=$(cpu_ticks)
  sleep "$IDLE_S"
  echo "FIGURE cpu-s idle (per second, over $IDLE_S s with nothing deployed): $(cpu_used "$i0" "$(cpu_ticks)" "$IDLE_S")"
fi
RATIOS=() # "N RATIO RATIO_TO_CONTENDED" per case, for the summary after the last
for n in $SIZES; do
  c0=$(cpu_ticks)
  api_latency 2 >"$LAT/d0"
  profile_start direct "$n"
  dir=$(run_deploy 2 bench-direct "dir-$n" "$n" "")
  profile_wait
  api_latency 2 >"$LAT/d1"
  cd1=$(cpu_ticks)
  dsteps=$(stages 2 bench-direct "dir-$n")
  # Each case starts from clusters without the last one's pods: the provider holding N pods of the direct case
  # through the offloaded one would make it the slower of the two for that alone.
  k 2 delete deployment -n bench-direct "dir-$n" --wait=false >/dev/null
  gone 2 bench-direct "app=dir-$n"
  sleep 2
  # The direct case again, while the consumer's core is as busy as in the offloaded case: cluster-1 runs a
  # Deployment of N pods of its own (its simulated nodes; namespace bench-twin is not offloaded) at the same time.
  # The two halves of a small machine slow each other when both are busy (shared caches, memory and host); the
  # offloaded case always keeps both busy, so this baseline leaves that out of its ratio (bench/README.md).
  cc0=$(cpu_ticks)
  profile_start contended "$n" # cluster-1's profile: a Deployment of its own, to set beside the offloaded case's
  run_deploy 1 bench-twin "twin-$n" "$n" "" >"$WORK/twin-ms" &
  twin_pid=$!
  dirc=$(run_deploy 2 bench-direct "dirc-$n" "$n" "")
  wait "$twin_pid"
  cc1=$(cpu_ticks)
  profile_wait
  k 2 delete deployment -n bench-direct "dirc-$n" --wait=false >/dev/null
  k 1 delete deployment -n bench-twin "twin-$n" --wait=false >/dev/null
  gone 2 bench-direct "app=dirc-$n"
  gone 1 bench-twin "app=twin-$n"
  sleep 2
  api_latency 1 >"$LAT/o0"
  api_latency 2 >"$LAT/p0"
  agent_latency "$(port 1 6)" >"$LAT/a0"
  c1=$(cpu_ticks)
  m0=$(metric_sums "$(port 1 6)")
  w0=$(webhook_conns "$(port 1 6)")
  v0=$(webhook_conns "$(port 2 6)")
  profile_start offloaded "$n"
  off=$(run_deploy 1 bench "off-$n" "$n" "$TO_VNODE")
  profile_wait
  c2=$(cpu_ticks)
  api_latency 1 >"$LAT/o1"
  api_latency 2 >"$LAT/p1"
  agent_latency "$(port 1 6)" >"$LAT/a1"
  remote=$(k 2 get pods -n "$RNS" -l "app=off-$n" -o name | wc -l)
  r_dir=$(ratio "$off" "$dir") r_dirc=$(ratio "$off" "$dirc")
  echo "FIGURE deployment-ready-ms n=$n offloaded=$off direct=$dir ratio=$r_dir remote_pods=$remote direct_pods_per_s=$(awk -v n="$n" -v d="$dir" 'BEGIN { printf "%.0f", n * 1000 / d }')"
  echo "FIGURE contended-baseline n=$n direct_while_consumer_busy=$dirc (cluster-1's own Deployment of $n at the same time: $(cat "$WORK/twin-ms") ms) machine_factor=$(ratio "$dirc" "$dir") ratio_to_contended=$r_dirc"
  RATIOS+=("$n $r_dir $r_dirc")
  echo "FIGURE cpu-s n=$n direct: $(cpu_used "$c0" "$cd1")"
  echo "FIGURE cpu-s n=$n direct_while_consumer_busy: $(cpu_used "$cc0" "$cc1")"
  echo "FIGURE cpu-s n=$n offloaded: $(cpu_used "$c1" "$c2")"
  read -r h0 a0 <<<"$w0"
  read -r h1 a1 <<<"$(webhook_conns "$(port 1 6)")"
  read -r g0 b0 <<<"$v0"
  read -r g1 b1 <<<"$(webhook_conns "$(port 2 6)")"
  echo "FIGURE webhook-connections n=$n (during the offloaded case) the consumer's pod webhook: handshakes=$((h1 - h0)) abandoned_while_held=$((a1 - a0)); the provider's offer webhook: handshakes=$((g1 - g0)) abandoned_while_held=$((b1 - b0))"
  echo "FIGURE api-latency n=$n (the API servers' own) pod creations: direct $(latency_of create_ "$LAT/d0" "$LAT/d1") offloaded (consumer) $(latency_of create_ "$LAT/o0" "$LAT/o1"); the consumer's pod webhook calls: $(latency_of webhook_ "$LAT/o0" "$LAT/o1"); of which the consumer agent's decisions: $(latency_of decide_ "$LAT/a0" "$LAT/a1"); its event loop's iterations (CPU): $(latency_of loop_ "$LAT/a0" "$LAT/a1")"
  echo "FIGURE apf n=$n (requests/mean queueing for a seat/refused with 429, by flow schema, as each API server's Priority and Fairness counted them) direct, the provider: $(apf_of "$LAT/d0" "$LAT/d1"); offloaded, the consumer: $(apf_of "$LAT/o0" "$LAT/o1"); offloaded, the provider: $(apf_of "$LAT/p0" "$LAT/p1")"
  echo "FIGURE steps-s n=$n (p50/p90/all, whole seconds) direct: $dsteps offloaded: $(stages 1 bench "off-$n" "$RNS")"
  sleep 5
  echo "FIGURE requests-per-offloaded-pod n=$n up: $(per_pod "$m0" "$(metric_sums "$(port 1 6)")" "$n")"
  echo "FIGURE agent-store-kb n=$n (the consumer agent's informer caches, by resource: values+slack+entries+indexes+records; fixed) $(store_kb "$(port 1 6)")"
  echo "FIGURE agent-rss-mb n=$n consumer=$(rss_mb "${PIDS[0]}") provider=$(rss_mb "${PIDS[1]}") offloaded_pods=$n target=$([ "$n" -le 1000 ] && echo 25 || echo 60) consumer_detail: $(rss_detail "${PIDS[0]}")"
  if [ -n "${BENCH_SMAPS_DIR:-}" ]; then
    cp "/proc/${PIDS[0]}/smaps" "$BENCH_SMAPS_DIR/consumer-agent-smaps-$n.txt"
    # glibc's own account of the heap (in use against held), written to the agent's log (BENCH_LOG_DIR)
    ! command -v gdb >/dev/null || gdb -p "${PIDS[0]}" -batch -ex 'call (void) malloc_stats()' >/dev/null 2>&1 || true
  fi
  m1=$(metric_sums "$(port 1 6)")
  k 1 delete deployment -n bench "off-$n" --wait=false >/dev/null
  gone 1 bench "app=off-$n"
  gone 2 "$RNS" "app=off-$n"
  sleep 2
  echo "FIGURE requests-per-offloaded-pod n=$n down: $(per_pod "$m1" "$(metric_sums "$(port 1 6)")" "$n")"
done

# With a size given more than once (--sizes "1000 1000 1000"), the median of its ratios: this machine's pace
# changes from minute to minute, so one pair of cases says little (bench/README.md).
summary_of() { # ROWS FIELD: "MEDIAN (all: SORTED...)" of that field of the rows
  printf '%s (all: %s)' "$(cut -d' ' -f"$2" <<<"$1" | median)" "$(cut -d' ' -f"$2" <<<"$1" | sort -n | paste -sd' ')"
}
for n in $(tr ' ' '\n' <<<"$SIZES" | grep . | sort -nu); do
  rs=$(printf '%s\n' "${RATIOS[@]}" | awk -v n="$n" '$1 == n')
  cases=$(grep -c . <<<"$rs")
  [ "$cases" -gt 1 ] || continue
  echo "FIGURE ratio-summary n=$n cases=$cases median_ratio=$(summary_of "$rs" 2) median_ratio_to_contended=$(summary_of "$rs" 3)"
done

echo "single pods: $SAMPLES samples each, offloaded and direct"
pod_json() { # NAME NS EXTRA
  echo "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"$1\",\"namespace\":\"$2\"},
  \"spec\":{$3\"terminationGracePeriodSeconds\":1,\"containers\":[{\"name\":\"c\",\"image\":\"nginx\"}]}}"
}
# kcurl CLUSTER PATH curl-args...: the cluster's API server as its admin, with curl (no kubectl start-up).
kcurl() {
  local c=$1 p=$2 d=$CLIQO_DEV_DIR/cluster-$1/pki server
  shift 2
  server=$(awk '$1 == "server:" { print $2; exit }' "$(kcfg "$c")")
  curl -sS --cacert "$d/ca.crt" --cert "$d/admin.crt" --key "$d/admin.key" "$@" "$server$p"
}
# A watch of a namespace's pods, in the background for the whole of the samples: one line per event in FILE,
# "<epoch µs when it arrived> <TYPE> <name> <1 when Ready> <node or ->". A pod's time is from the event that it
# exists (ADDED) to the first event in which it is Ready, both as the same watcher saw them: what the API server,
# the scheduler, the node (simulated) and, offloaded, cliqo took, and none of a client's start-up.
pod_watch() { # CLUSTER NS FILE
  kcurl "$1" "/api/v1/namespaces/$2/pods?watch=1" -N --max-time 3600 |
    jq --unbuffered -r '"\(.type) \(.object.metadata.name) \([.object.status.conditions[]? | select(.type == "Ready" and .status == "True")] | length) \(.object.spec.nodeName // "-")"' |
    while read -r l; do echo "${EPOCHREALTIME/./} $l"; done >>"$3"
}
# one_pod CLUSTER NS NAME EXTRA WATCHFILE: prints "WATCH_MS CLIENT_MS": from ADDED to Ready as the watch saw
# them, and from before the create request (curl, whose start-up is the same in both cases; the consumer's
# pod webhook is in it) to that Ready event.
one_pod() {
  local t0 line ready added deadline=$((SECONDS + 120))
  t0=${EPOCHREALTIME/./}
  pod_json "$3" "$2" "$4" | kcurl "$1" "/api/v1/namespaces/$2/pods" -f -o /dev/null -X POST \
    -H 'Content-Type: application/json' --data-binary @-
  until line=$(grep -m1 " $3 1 " "$5"); do
    [ "$SECONDS" -lt "$deadline" ] || { echo "pod $2/$3 on cluster-$1 was not Ready within 120 s" >&2; exit 1; }
    sleep 0.05
  done
  ready=${line%% *}
  added=$(grep -m1 " ADDED $3 " "$5")
  added=${added%% *}
  echo "$(((ready - added) / 1000)) $(((ready - t0) / 1000))"
  kcurl "$1" "/api/v1/namespaces/$2/pods/$3" -f -o /dev/null -X DELETE
  # The next sample starts once this pod is gone from every watched namespace (offloaded: the home pod is
  # deleted last): a deletion still under way would slow the next sample's clusters.
  until grep -q " DELETED $3 " "$5"; do
    [ "$SECONDS" -lt "$deadline" ] || { echo "pod $2/$3 on cluster-$1 was not deleted within 120 s" >&2; exit 1; }
    sleep 0.05
  done
  sleep 0.2
}
# steps FILE...: one line per single pod that every watch saw through each step, the ms each step took. One
# file (direct): bound, then Ready. Two (home, then the provider's namespace): bound at home, created on the
# provider, bound there, Ready there, Ready at home.
steps() {
  awk '$3 ~ /^single-/ {
      f = FILENAME == ARGV[1] ? "h" : "r"; k = $3; t = $1 / 1000; seen[k] = 1
      if ($2 == "ADDED" && !((f, k) in a)) a[f, k] = t
      if ($5 != "-" && !((f, k) in b)) b[f, k] = t
      if ($4 == 1 && !((f, k) in r)) r[f, k] = t
    }
    function has(f, k) { return ((f, k) in a) && ((f, k) in b) && ((f, k) in r) }
    END {
      for (k in seen) {
        if (!has("h", k)) continue
        if (ARGC == 2) printf "%.1f %.1f\n", b["h", k] - a["h", k], r["h", k] - b["h", k]
        else if (has("r", k))
          printf "%.1f %.1f %.1f %.1f %.1f\n", b["h", k] - a["h", k], a["r", k] - b["h", k], b["r", k] - a["r", k],
            r["r", k] - b["r", k], r["h", k] - r["r", k]
      }
    }' "$@"
}
# step_medians NAME... <ROWS: NAME=the median of its column, for each column of steps' rows, and how many rows.
step_medians() {
  local rows i=1 n
  rows=$(cat)
  for n in "$@"; do
    printf '%s=%s ' "$n" "$(cut -d' ' -f"$i" <<<"$rows" | grep "[0-9]" | median)"
    i=$((i + 1))
  done
  printf 'samples=%s' "$(grep -c . <<<"$rows" || true)"
}
: >"$WORK/watch-1"
: >"$WORK/watch-2"
: >"$WORK/watch-r"
pod_watch 1 bench "$WORK/watch-1" &
watch1=$!
pod_watch 2 bench-direct "$WORK/watch-2" &
watch2=$!
pod_watch 2 "$RNS" "$WORK/watch-r" &
watchr=$!
sleep 1
# agent_vk_sums: the consumer agent's time of its virtual kubelet's requests to the provider so far
# (cliqo_peer_request_duration_seconds), as "agent_VERB_sum S" and "agent_VERB_count C" lines.
agent_vk_sums() {
  { curl -s "http://127.0.0.1:$(port 1 6)/metrics" || true; } |
    awk '/^cliqo_peer_request_duration_seconds_(sum|count)\{/ && /role="vk"/ {
      match($0, /verb="[A-Z]+"/); v = substr($0, RSTART + 6, RLENGTH - 7)
      t = $1 ~ /_sum\{/ ? "_sum" : "_count"
      k["agent_" v t] += $NF }
      END { for (i in k) printf "%s %.6f\n", i, k[i] }'
}
# req_snap FILE: the API servers' own time of the pod requests each sample makes (apiserver_request_duration_seconds,
# sum and count by cluster, verb and subresource), and the consumer agent's time of its requests to the provider
# (cliqo_peer_request_duration_seconds of the virtual kubelet, by verb), as "KEY VALUE" lines to diff. Taken
# between samples (each takes one sample's requests alone), then a pause so that the scrape is not in the next one.
# Each sample's row is printed too (single_requests_ms).
req_snap() {
  local c
  for c in 1 2; do
    kcurl "$c" /metrics | awk -v c="c$c" '/^apiserver_request_duration_seconds_(sum|count)\{/ && /resource="pods"/ {
        match($0, /verb="[A-Z]+"/); v = substr($0, RSTART + 6, RLENGTH - 7)
        match($0, /subresource="[a-z]*"/); r = substr($0, RSTART + 13, RLENGTH - 14)
        if (r != "") r = "_" r
        t = $1 ~ /_sum\{/ ? "_sum" : "_count"
        k[c "_" v r t] += $NF }
      # the admission plugins and webhooks on pod creations: what part of a create they took
      /^apiserver_admission_(controller|webhook)_admission_duration_seconds_(sum|count)\{/ && /operation="CREATE"/ {
        match($0, /name="[^"]*"/); n = substr($0, RSTART + 6, RLENGTH - 7)
        if ($1 ~ /webhook/) n = "webhooks"
        t = $1 ~ /_sum\{/ ? "_sum" : "_count"
        k[c "_adm_" n t] += $NF }
      END { for (i in k) printf "%s %.6f\n", i, k[i] }'
  done
  agent_vk_sums
  sleep 1 # the scrape's own work (and the garbage it leaves to collect) done before the next sample
}
# req_ms BEFORE AFTER KEY...: each KEY's mean ms over the sample between the two snapshots ("-": none made); a
# KEY written +KEY, its total ms instead (an admission plugin's metric counts every creation in the sample, the
# binding's and the Events' too, and the pod's is the one that costs).
req_ms() {
  local b=$1 a=$2
  shift 2
  awk -v keys="$*" 'FILENAME == ARGV[1] { b[$1] = $2; next } { d[$1] = $2 - b[$1] }
    END { n = split(keys, ks, " ")
      for (i = 1; i <= n; i++) {
        k = ks[i]; total = sub(/^\+/, "", k)
        c = d[k "_count"]; v = "-"
        if (c > 0) v = sprintf("%.1f", 1000 * d[k "_sum"] / (total ? 1 : c))
        line = (i == 1) ? v : line " " v }
      print line }' "$b" "$a"
}
offs=() dirs=() offc=() dirc=()
: >"$WORK/req-off" && : >"$WORK/req-dir"
req_snap >"$WORK/snap-0"
for i in $(seq "$SAMPLES"); do
  out=$(one_pod 2 bench-direct "single-$i" "" "$WORK/watch-2")
  read -r sv cl <<<"$out"
  dirs+=("$sv") dirc+=("$cl")
  req_snap >"$WORK/snap-1"
  req_ms "$WORK/snap-0" "$WORK/snap-1" c2_POST c2_POST_binding c2_PATCH_status >>"$WORK/req-dir"
  out=$(one_pod 1 bench "single-$i" "$TO_VNODE" "$WORK/watch-1")
  read -r sv cl <<<"$out"
  offs+=("$sv") offc+=("$cl")
  req_snap >"$WORK/snap-0"
  req_ms "$WORK/snap-1" "$WORK/snap-0" c1_POST c1_POST_binding c2_POST agent_POST c2_POST_binding c2_PATCH_status \
    c1_PATCH_status +c1_adm_webhooks +c2_adm_webhooks +c2_adm_ResourceQuota +c2_adm_LimitRanger >>"$WORK/req-off"
done
pkill -P "$watch1" 2>/dev/null || true # the watches' curl, jq and reader, then their shells
pkill -P "$watch2" 2>/dev/null || true
pkill -P "$watchr" 2>/dev/null || true
kill "$watch1" "$watch2" "$watchr" 2>/dev/null || true
mo=$(printf '%s\n' "${offc[@]}" | median)
md=$(printf '%s\n' "${dirc[@]}" | median)
echo "single_ms offloaded: $(printf '%s\n' "${offc[@]}" | sort -n | tr '\n' ' ')"
echo "single_ms direct: $(printf '%s\n' "${dirc[@]}" | sort -n | tr '\n' ' ')"
echo "FIGURE single-pod-ready-ms (from before the create request, curl, to the Ready event) median_offloaded=$mo median_direct=$md added_median=$((mo - md)) samples=$SAMPLES"
so=$(printf '%s\n' "${offs[@]}" | median)
sd=$(printf '%s\n' "${dirs[@]}" | median)
echo "FIGURE single-pod-watch-ms (ADDED to Ready, as the watch saw them: without the create request and its admission webhooks) median_offloaded=$so median_direct=$sd added_median=$((so - sd))"
echo "FIGURE single-pod-steps-ms (medians, as the watches saw them) offloaded: $(steps "$WORK/watch-1" "$WORK/watch-r" |
  step_medians home_bind to_remote_added remote_bind remote_ready to_home_ready) direct: $(steps "$WORK/watch-2" |
  step_medians bind ready)"
# The requests in those steps, each as its API server timed it (and the create on the provider as the agent did
# too): a step's time beyond its request's is the watches' and, offloaded, cliqo's own (informers, queue, encoding).
sed 's/^/single_requests_ms offloaded: /' "$WORK/req-off"
sed 's/^/single_requests_ms direct: /' "$WORK/req-dir"
echo "FIGURE single-pod-requests-ms (medians, each request as its API server timed it) offloaded: $(step_medians \
  home_create home_bind remote_create remote_create_by_agent remote_bind remote_status home_status \
  of_home_create_webhooks of_remote_create_webhooks of_remote_create_quota of_remote_create_limitrange <"$WORK/req-off") direct: $(
  step_medians create bind status <"$WORK/req-dir")"
echo "FIGURE request-mean-ms to_provider: $(agent_vk_sums | awk '{ split($1, f, "_"); if (f[3] == "sum") s[f[2]] = $2; else c[f[2]] = $2 }
  END { for (v in c) if (c[v]) printf "%s=%.1f ", v, 1000 * s[v] / c[v] }')"
echo "FIGURE agent-requests $(curl -s "http://127.0.0.1:$(port 1 6)/metrics" | awk '/^cliqo_(kube|peer)_requests_total/ && !/WATCH/ { sub(/peer="[^"]*",/, ""); printf "%s ", $0 }')"
# The watches of pods registered with cluster $1's API server.
pod_watchers() {
  k "$1" get --raw /metrics | awk '/^apiserver_registered_watchers\{/ && /kind="Pod"/ { n += $NF } END { print n + 0 }'
}
echo "FIGURE pod-watchers (each API server's registered watches of pods: its scheduler's, controllers', simulator's and the agents') consumer=$(pod_watchers 1) provider=$(pod_watchers 2)"
echo "FIGURE vk-metrics $(curl -s "http://127.0.0.1:$(port 1 6)/metrics" | awk '/^cliqo_vk_pod_(creations|status_updates|events_forwarded|events_dropped|refusals)/ { sub(/\{.*\}/, "", $1); printf "%s=%s ", $1, $2 }')"
