#!/usr/bin/env bash
# The data plane's throughput and round-trip time (issue 21): a "pod" network namespace behind gateway A
# reaches one behind gateway B, both pods in the same pod CIDR (10.199.64.0/27, so that cliqo's NAT is exercised),
# three ways in the same run, alternated round by round: through cliqo's tunnel (the real `cliqo-agent
# gateway` in each gateway namespace, against a local control plane, fed the objects the agent would write:
# ForeignCluster with its peering status, NetworkConfig with its remapping status, TunnelEndpoint), through a
# `wireguard-go` tunnel configured by hand with `wg` between the same namespaces (plain routes, no NAT, the same
# MTU), and over the same veths without a tunnel (plain routing). Per round: `iperf3` TCP for S seconds and
# `ping` N times (median RTT). Then 999 more peers for gateway A (distinct keys, endpoints and blocks, so that it
# installs their WireGuard peers, routes and nftables chains): the time from their objects' creation to a
# device, route table and table `cliqo` holding 1,000 peers, the same after a restart of gateway A, and the
# same rounds again with them installed: with the default keepalive (wireguard-go then initiates a handshake
# with each silent peer every 5 s), and after a restart with the longest keepalive (it gives up after 90 s).
# Prints medians and ratios against the targets (cliqo / hand-made: throughput >= 0.9, RTT <= 1.1; 1,000
# peers / 1 peer: throughput >= 0.9); asserts nothing. Everything is removed on exit.
#
# Topology (all in network namespaces of its own, nothing in this one): cqbench-1 and cqbench-2 hold cluster
# i's control plane (`cliqoctl dev up --netns-prefix`) and its gateway, joined by veth wan0 (10.199.0.0/24,
# MTU 1500); cqbench-p1 and cqbench-p2 are the pods, each on a veth to its gateway namespace, at 10.199.64.5
# (cliqo), 10.199.65.5 / 66.5 (hand-made tunnel), 10.199.67.5 / 68.5 (no tunnel). A sees B's pods in
# 10.199.128.0/27, B sees A's in 10.199.96.0/27. The extra peers' endpoints are behind a link of A to a sink
# namespace cqbench-x.
# Needs root, and Debian's iperf3, iputils-ping, wireguard-tools, wireguard-go, nftables, jq.
# Usage: bench/dataplane.sh --cliqoctl C --agent A [--rounds R] [--seconds S] [--pings N] [--peers N]
#        [--base-port P] [--keep-logs DIR] [--profile]
# --profile: after phases 1 and 4, one more iperf3 run per tunnel under `perf record -a` (Debian's
# linux-perf): the share of all samples in nftables' functions, in each wireguard-go and in iperf3.
set -euo pipefail
source "$(dirname "$0")/../tests/ports.sh" # cliqo_port: the one port table

CLIQOCTL="" AGENT="" ROUNDS=5 SECS=3 PINGS=20 PEERS=1000 BASE_PORT=$(cliqo_port bench.dataplane) KEEP_LOGS="" PROFILE=0
while [ $# -gt 0 ]; do
  case "$1" in
    --cliqoctl) CLIQOCTL=$2; shift 2 ;;
    --agent) AGENT=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --seconds) SECS=$2; shift 2 ;;
    --pings) PINGS=$2; shift 2 ;;
    --peers) PEERS=$2; shift 2 ;;
    --base-port) BASE_PORT=$2; shift 2 ;;
    --keep-logs) KEEP_LOGS=$2; shift 2 ;;
    --profile) PROFILE=1; shift ;;
    -h | --help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
done
die() { echo "dataplane: $*" >&2; exit 1; }
for b in "$CLIQOCTL" "$AGENT"; do [ -x "$b" ] || die "need --cliqoctl and --agent executables"; done
[ "$(id -u)" = 0 ] || die "needs root (network namespaces, nftables)"
[ "$PEERS" -ge 1 ] && [ "$PEERS" -le 1000 ] || die "--peers must be 1 to 1000"
missing=()
for t in iperf3:iperf3 ping:iputils-ping wg:wireguard-tools wireguard-go:wireguard-go nft:nftables jq:jq \
  kubectl:kubernetes-client nsenter:util-linux; do
  command -v "${t%%:*}" >/dev/null || missing+=("${t#*:}")
done
[ "${#missing[@]}" = 0 ] || die "missing programs: apt-get install ${missing[*]}"

P=cqbench-                  # namespaces P1, P2 (clusters and gateways), Pp1, Pp2 (pods), Px (a sink)
CIF=${P}c HIF=${P}h         # tunnel interfaces: cliqo's cqbench-c<i>, the hand-made cqbench-h<i>
WGDIR=/var/run/wireguard
for n in 1 2 p1 p2 x; do [ ! -e "/run/netns/$P$n" ] || die "network namespace $P$n exists: another run is up (or left over)"; done
for i in 1 2; do
  for s in "$WGDIR/$CIF$i.sock" "$WGDIR/$HIF$i.sock"; do [ ! -e "$s" ] || die "$s exists: another run is up"; done
done

WORK=$(mktemp -d)
export CLIQO_DEV_DIR=$WORK/dev CLIQO_DEV_BASE_PORT=$BASE_PORT CLIQO_DEV_NODES=0
GW_PIDS=() HAND_PIDS=() IPERF_PIDS=() DEV_UP=0
# wg_pids IFACE: the wireguard-go processes serving IFACE (their last argument), started by this run.
wg_pids() {
  local p a
  for p in /proc/[0-9]*; do
    a=()
    { mapfile -d '' -t a <"$p/cmdline"; } 2>/dev/null || continue
    [ "${a[0]:-}" = wireguard-go ] || [[ "${a[0]:-}" == */wireguard-go ]] || continue
    [ "${a[*]: -1}" = "$1" ] && echo "${p#/proc/}"
  done
  return 0
}
cleanup() {
  local rc=$? p i n
  trap - EXIT INT TERM
  # a TERMed gateway takes its tunnel down (routes, table, its wireguard-go)
  for p in "${GW_PIDS[@]}" "${HAND_PIDS[@]}" "${IPERF_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for _ in $(seq 100); do
    n=0
    for p in "${GW_PIDS[@]}" "${HAND_PIDS[@]}" "${IPERF_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && n=1; done
    [ "$n" = 0 ] && break
    sleep 0.1
  done
  for p in "${GW_PIDS[@]}" "${HAND_PIDS[@]}" "${IPERF_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  for i in 1 2; do
    for p in $(wg_pids "$CIF$i") $(wg_pids "$HIF$i"); do kill -KILL "$p" 2>/dev/null || true; done
    rm -f "$WGDIR/$CIF$i.sock" "$WGDIR/$HIF$i.sock"
  done
  [ "$DEV_UP" = 0 ] || "$CLIQOCTL" dev down >/dev/null 2>&1 || echo "dataplane: cliqoctl dev down failed" >&2
  for n in 1 2 p1 p2 x; do [ ! -e "/run/netns/$P$n" ] || ip netns del "$P$n" 2>/dev/null || true; done
  if [ -n "$KEEP_LOGS" ]; then
    mkdir -p "$KEEP_LOGS" && cp "$WORK"/*.log "$KEEP_LOGS/" 2>/dev/null || true
  elif [ "$rc" != 0 ]; then
    echo "dataplane: failed (status $rc); the gateways' logs:" >&2
    tail -n 20 "$WORK"/gateway-*.log >&2 2>/dev/null || true
  fi
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# in_ns N command...: in namespace PN (ip execs the command: started with &, $! is the command's PID).
in_ns() { local n=$1; shift; ip netns exec "$P$n" "$@"; }
kcfg() { echo "$CLIQO_DEV_DIR/cluster-$1/kubeconfig"; }
k() { local c=$1; shift; in_ns "$c" kubectl --kubeconfig "$(kcfg "$c")" --request-timeout=60s "$@"; }
ms() { date +%s%3N; }
port() { echo $((BASE_PORT + 10 * ($1 - 1) + $2)); }
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "?" }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "?" }'; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
wait_until() { # SECONDS WHAT command...: polls every 0.2 s
  local t=$1 what=$2 end
  shift 2
  end=$((SECONDS + t))
  until "$@"; do
    [ "$SECONDS" -lt "$end" ] || die "timed out after ${t}s waiting for $what"
    sleep 0.2
  done
}

# ---- the network ------------------------------------------------------------------------------------------
echo "load average at start: $(load); $(nproc) CPUs"
for n in 1 2 p1 p2 x; do
  ip netns add "$P$n"
  ip -n "$P$n" link set lo up
done
ip -n "${P}1" link add wan0 type veth peer name wan0 netns "${P}2"
for i in 1 2; do
  o=$((3 - i))
  ip -n "$P$i" addr add "10.199.0.$i/24" dev wan0
  ip -n "$P$i" link set wan0 up
  in_ns "$i" sysctl -qw net.ipv4.ip_forward=1
  ip -n "${P}p$i" link add eth0 type veth peer name pod0 netns "$P$i"
  for net in 64 $((64 + i)) $((66 + i)); do
    len=24
    [ "$net" = 64 ] && len=27
    ip -n "${P}p$i" addr add "10.199.$net.5/$len" dev eth0
    ip -n "$P$i" addr add "10.199.$net.1/$len" dev pod0
  done
  ip -n "${P}p$i" link set eth0 up
  ip -n "$P$i" link set pod0 up
  # cliqo's way: the pod's default route (the remapped blocks); the others from their own addresses
  ip -n "${P}p$i" route add default via 10.199.64.1
  ip -n "${P}p$i" route add "10.199.$((64 + o)).0/24" via "10.199.$((64 + i)).1" src "10.199.$((64 + i)).5"
  ip -n "${P}p$i" route add "10.199.$((66 + o)).0/24" via "10.199.$((66 + i)).1" src "10.199.$((66 + i)).5"
  # no tunnel: plain routing over wan0
  ip -n "$P$i" route add "10.199.$((66 + o)).0/24" via "10.199.0.$o"
done
# The extra peers' endpoints: a link of A, without ARP, to namespace Px, which has no address and does not
# forward: what the extra peers' handshakes send there is dropped without a word (and without an error that
# wireguard-go would log).
ip -n "${P}1" link add fake0 type veth peer name fake0 netns "${P}x"
ip -n "${P}1" link set fake0 arp off up
ip -n "${P}x" link set fake0 up
ip -n "${P}1" route add 10.199.4.0/22 dev fake0

# The hand-made tunnel: wireguard-go configured with wg, the same MTU as cliqo's (wan0's 1500 - 80).
declare -A HKEY HPUB
for i in 1 2; do
  HKEY[$i]=$(wg genkey)
  HPUB[$i]=$(wg pubkey <<<"${HKEY[$i]}")
done
for i in 1 2; do
  o=$((3 - i))
  ip netns exec "$P$i" wireguard-go -f "$HIF$i" >"$WORK/hand-$i.log" 2>&1 &
  HAND_PIDS+=($!)
  disown
  wait_until 10 "the hand-made $HIF$i" test -S "$WGDIR/$HIF$i.sock"
  in_ns "$i" wg set "$HIF$i" listen-port 51821 private-key <(echo "${HKEY[$i]}") \
    peer "${HPUB[$o]}" endpoint "10.199.0.$o:51821" allowed-ips "10.199.$((64 + o)).0/24" persistent-keepalive 25
  ip -n "$P$i" link set "$HIF$i" mtu 1420 up
  ip -n "$P$i" route add "10.199.$((64 + o)).0/24" dev "$HIF$i"
done

# ---- the control planes and the gateways ------------------------------------------------------------------
echo "setup: 2 lean clusters in $P{1,2} (no nodes), cliqo's CRDs and identity, one gateway each"
DEV_UP=1
"$CLIQOCTL" dev up --clusters 2 --nodes 0 --netns-prefix "$P" >"$WORK/devenv.log" 2>&1 || die "dev up failed: $(tail -5 "$WORK/devenv.log")"
declare -A ID
for i in 1 2; do
  in_ns "$i" "$CLIQOCTL" install --kubeconfig "$(kcfg "$i")" --cluster-name "bench-$i" \
    --auth-address "127.0.0.1:$(port "$i" 7)" --skip-agent >>"$WORK/devenv.log" 2>&1 || die "cliqoctl install failed on cluster $i"
  ID[$i]=$(k "$i" get configmap -n cliqo cluster-id -o jsonpath='{.data.cluster-id}')
done
gw_start() { # I [FLAG...]: cluster i's gateway, in its namespace, as the e2e group starts it (default keepalive)
  local i=$1
  shift
  printf -- '--- start %s\n' "$(date -u +%FT%T.%3NZ)" >>"$WORK/gateway-$i.log"
  ip netns exec "$P$i" "$AGENT" gateway --kubeconfig "$(kcfg "$i")" --leader-elect=false --http-addr "127.0.0.1:$(port "$i" 6)" \
    --identity "bench-gateway-$i" --gateway-endpoint "10.199.0.$i:51820" --tunnel-interface "$CIF$i" "$@" \
    >>"$WORK/gateway-$i.log" 2>&1 </dev/null &
  GW_PIDS[$i]=$!
  disown
}
gw_record() { k "$1" get configmap -n cliqo cliqo-gateway -o jsonpath='{.data.publicKey}' 2>/dev/null; }
has_record() { [ -n "$(gw_record "$1")" ]; }
for i in 1 2; do gw_start "$i"; done
for i in 1 2; do wait_until 60 "gateway $i's record (ConfigMap cliqo-gateway)" has_record "$i"; done

# peer_objects ID TENANT KEY ENDPOINT SEEN_HERE US_THERE SELF: the objects of one peer as the agent leaves them
# (JSON lines): the tenant namespace, the ForeignCluster, the NetworkConfig whose status holds the remapping
# (where we see the peer's pods, our pod CIDR, where the peer sees ours) and the peer's TunnelEndpoint; then
# (STATUS lines) the two statuses, written last, as the agent writes them after the objects.
peer_objects() {
  local id=$1 tns=$2 key=$3 ep=$4 seen=$5 there=$6 self=$7 now
  now=$(date -u +%FT%TZ)
  cat <<JSON
{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"$tns","labels":{"discovery.liqo.io/cluster-id":"$id"}}}
{"apiVersion":"net.liqo.io/v1alpha1","kind":"NetworkConfig","metadata":{"name":"net-config-$id","namespace":"$tns","labels":{"discovery.liqo.io/cluster-id":"$id"}},"spec":{"clusterID":"$id","podCIDR":"10.199.64.0/27"}}
{"apiVersion":"net.liqo.io/v1alpha1","kind":"TunnelEndpoint","metadata":{"name":"tep-$id","namespace":"$tns","labels":{"discovery.liqo.io/cluster-id":"$id"}},"spec":{"clusterID":"$self","publicKey":"$key","endpoint":"$ep","mtu":1420}}
{"apiVersion":"discovery.liqo.io/v1alpha1","kind":"ForeignCluster","metadata":{"name":"$id"},"spec":{"clusterIdentity":{"clusterID":"$id","clusterName":"$id"},"networkingEnabled":"Yes"}}
STATUS {"apiVersion":"net.liqo.io/v1alpha1","kind":"NetworkConfig","metadata":{"name":"net-config-$id","namespace":"$tns"},"status":{"podCIDRNAT":"$seen","localPodCIDR":"10.199.64.0/27","localPodCIDRNAT":"$there"}}
STATUS {"apiVersion":"discovery.liqo.io/v1alpha1","kind":"ForeignCluster","metadata":{"name":"$id"},"status":{"tenantNamespace":{"local":"$tns"},"peeringConditions":[{"type":"OutgoingPeering","status":"Established","lastTransitionTime":"$now"}]}}
JSON
}
# create I FILE...: the objects of the FILEs' plain lines, then their STATUS lines' statuses, on cluster I
# (server-side apply, one request per object; one kubectl per FILE, all at once).
create() {
  local c=$1 f p pids=()
  shift
  for f in "$@"; do
    grep -v '^STATUS ' "$f" | jq -s '{apiVersion: "v1", kind: "List", items: .}' >"$f.objects.json"
    sed -n 's/^STATUS //p' "$f" | jq -s '{apiVersion: "v1", kind: "List", items: .}' >"$f.status.json"
  done
  for f in "$@"; do
    k "$c" apply --server-side --field-manager cliqo-bench -f "$f.objects.json" >/dev/null &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || die "kubectl apply failed on cluster $c"; done
  pids=()
  for f in "$@"; do
    k "$c" apply --server-side --field-manager cliqo-bench --subresource status --validate=false \
      -f "$f.status.json" >/dev/null &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || die "kubectl apply --subresource status failed on cluster $c"; done
}
tep_phase() { k "$1" get tunnelendpoint -n "tenant-${ID[$2]}" "tep-${ID[$2]}" -o jsonpath='{.status.phase}' 2>/dev/null; }
# A sees B's pods in 10.199.128.0/27, B sees A's in 10.199.96.0/27.
peer_objects "${ID[2]}" "tenant-${ID[2]}" "$(gw_record 2)" 10.199.0.2:51820 10.199.128.0/27 10.199.96.0/27 "${ID[1]}" >"$WORK/peer-1"
peer_objects "${ID[1]}" "tenant-${ID[1]}" "$(gw_record 1)" 10.199.0.1:51820 10.199.96.0/27 10.199.128.0/27 "${ID[2]}" >"$WORK/peer-2"
t0=$(ms)
create 1 "$WORK/peer-1"
create 2 "$WORK/peer-2"
both_up() { [ "$(tep_phase 1 2)" = Up ] && [ "$(tep_phase 2 1)" = Up ]; }
wait_until 60 "both TunnelEndpoints Up" both_up
echo "FIGURE tunnel-up-ms $(($(ms) - t0)) (from the objects' creation to both TunnelEndpoints Up)"

# ---- the measurements -------------------------------------------------------------------------------------
# Each variant: the address of B's pod that A's pod uses (cliqo: B's pod as A sees it).
declare -A DST=([cliqo]=10.199.128.5 [hand]=10.199.66.5 [veth]=10.199.68.5)
ip netns exec "${P}p2" iperf3 -s -i 0 >"$WORK/iperf3-server.log" 2>&1 &
IPERF_PIDS+=($!)
disown
reach() { in_ns p1 ping -c 1 -W 1 "$1" >/dev/null 2>&1; }
for v in cliqo hand veth; do wait_until 30 "A's pod reaching B's at ${DST[$v]} ($v)" reach "${DST[$v]}"; done
gbps() { # VARIANT: one iperf3 run of SECS seconds, Gbit/s received
  local out
  out=$(in_ns p1 iperf3 -c "${DST[$1]}" -t "$SECS" -O 1 -J 2>/dev/null) || { echo 0; return 0; }
  jq -r '.end.sum_received.bits_per_second / 1e9 * 1000 | round / 1000' <<<"$out"
}
rtt_ms() { # VARIANT: the median of PINGS pings 20 ms apart, ms
  in_ns p1 ping -n -c "$PINGS" -i 0.02 -W 1 "${DST[$1]}" 2>/dev/null | sed -n 's/.*time=\([0-9.]*\) ms.*/\1/p' | median
}
declare -A TP RT
# rounds LABEL VARIANTS...: ROUNDS rounds, the variants' order rotating from round to round; TP[LABEL.v] and
# RT[LABEL.v] hold the space-separated figures.
rounds() {
  local label=$1 r j n v g t
  shift
  local vs=("$@")
  n=${#vs[@]}
  for ((r = 0; r < ROUNDS; r++)); do
    for ((j = 0; j < n; j++)); do
      v=${vs[$(((r + j) % n))]}
      g=$(gbps "$v")
      t=$(rtt_ms "$v")
      TP[$label.$v]+="$g "
      RT[$label.$v]+="$t "
      printf 'round %d %-5s %-5s %7.3f Gbit/s  rtt %s ms  (load %s)\n' "$((r + 1))" "$label" "$v" "$g" "$t" "$(load)"
    done
  done
}
med() { tr ' ' '\n' <<<"$1" | grep . | median; }
# cpu_s PID...: the processes' user + system time so far, seconds (0 for a process that is gone).
cpu_s() {
  local p t=0 f
  for p in "$@"; do
    f=$(cut -d' ' -f14,15 "/proc/$p/stat" 2>/dev/null) || continue
    t=$((t + ${f% *} + ${f#* }))
  done
  awk -v t="$t" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", t / hz }'
}
# cpu_during LABEL command...: runs the command and prints the CPU time gateway A and its wireguard-go took.
cpu_during() {
  local label=$1 g0 w0 t0 wp
  shift
  wp=$(wg_pids "${CIF}1" | head -1)
  g0=$(cpu_s "${GW_PIDS[1]}") w0=$(cpu_s "$wp") t0=$(ms)
  "$@"
  echo "FIGURE cpu $label gateway_A_s=$(awk -v a="$(cpu_s "${GW_PIDS[1]}")" -v b="$g0" 'BEGIN { printf "%.2f", a - b }') wireguard_go_A_s=$(awk -v a="$(cpu_s "$wp")" -v b="$w0" 'BEGIN { printf "%.2f", a - b }') wall_s=$(awk -v a="$(ms)" -v b="$t0" 'BEGIN { printf "%.1f", (a - b) / 1000 }')"
}
report() { # LABEL VARIANTS...
  local label=$1 v
  shift
  for v in "$@"; do
    echo "FIGURE $label.$v throughput_gbps=$(med "${TP[$label.$v]}") rtt_ms=$(med "${RT[$label.$v]}") rounds=$ROUNDS seconds=$SECS pings=$PINGS"
  done
}

# paired A B: the median over the rounds of A's figure over B's of the same round (space-separated lists).
paired() { awk -v a="$1" -v b="$2" 'BEGIN { n = split(a, x, " "); split(b, y, " "); for (i = 1; i <= n; i++) if (y[i] > 0) print x[i] / y[i] }' | median | awk '{ printf "%.3f", $1 }'; }
# phase LABEL TITLE: the rounds of the three variants, their medians, the CPU gateway A took, the ratios.
phase() {
  local label=$1 l0
  echo "$2; $ROUNDS rounds of iperf3 (${SECS}s, TCP) and $PINGS pings per variant, alternated"
  l0=$(load)
  cpu_during "$label" rounds "$label" cliqo hand veth
  report "$label" cliqo hand veth
  echo "FIGURE ratio $label cliqo/hand throughput=$(ratio "$(med "${TP[$label.cliqo]}")" "$(med "${TP[$label.hand]}")") (paired by round: $(paired "${TP[$label.cliqo]}" "${TP[$label.hand]}"); target >= 0.9) rtt=$(ratio "$(med "${RT[$label.cliqo]}")" "$(med "${RT[$label.hand]}")") (paired: $(paired "${RT[$label.cliqo]}" "${RT[$label.hand]}"); target <= 1.1)"
  echo "FIGURE ratio $label cliqo/veth throughput=$(ratio "$(med "${TP[$label.cliqo]}")" "$(med "${TP[$label.veth]}")") rtt=$(ratio "$(med "${RT[$label.cliqo]}")" "$(med "${RT[$label.veth]}")"); hand/veth throughput=$(ratio "$(med "${TP[$label.hand]}")" "$(med "${TP[$label.veth]}")") rtt=$(ratio "$(med "${RT[$label.hand]}")" "$(med "${RT[$label.veth]}")")"
  echo "load average during $label: $l0 -> $(load)"
}
# profile LABEL VARIANT: one iperf3 run under perf record -a, and where the samples went.
profile() {
  local f=$WORK/perf-$1-$2.data g
  g=$(perf record -a -F 999 -o "$f" -- bash -c "$(declare -f in_ns gbps); P=$P SECS=$SECS; declare -A DST=([$2]=${DST[$2]}); gbps $2" 2>/dev/null)
  perf report -i "$f" --stdio --no-children --sort comm,sym 2>/dev/null | awk -v l="$1" -v v="$2" -v g="$g" '
    /^ +[0-9.]+%/ { p = $1; sub(/%/, "", p); t += p
      if ($0 ~ /nft_|nf_tables|nf_hook_slow/) nft += p
      if ($2 == "wireguard-go") wg += p; else if ($2 == "iperf3") ip += p; else if ($2 ~ /^ksoftirqd/) ks += p }
    END { printf "FIGURE profile %s.%s throughput_gbps=%s samples: nftables=%.1f%% wireguard-go=%.1f%% iperf3=%.1f%% ksoftirqd=%.1f%% (of all CPUs, the machine'"'"'s other load included)\n", l, v, g, nft, wg, ip, ks }'
  rm -f "$f"
}
# against_one LABEL: LABEL's cliqo figures against phase one's, directly and each against its own phase's
# hand-made tunnel (which the extra peers do not touch: that ratio is blind to the load's drift between phases).
against_one() {
  local l=$1
  echo "FIGURE ratio cliqo-$PEERS/cliqo-1 ($l) throughput=$(ratio "$(med "${TP[$l.cliqo]}")" "$(med "${TP[one.cliqo]}")") rtt=$(ratio "$(med "${RT[$l.cliqo]}")" "$(med "${RT[one.cliqo]}")"); against each phase's hand-made tunnel (paired): throughput=$(ratio "$(paired "${TP[$l.cliqo]}" "${TP[$l.hand]}")" "$(paired "${TP[one.cliqo]}" "${TP[one.hand]}")") (target >= 0.9) rtt=$(ratio "$(paired "${RT[$l.cliqo]}" "${RT[$l.hand]}")" "$(paired "${RT[one.cliqo]}" "${RT[one.hand]}")")"
}
phase one "phase 1: one peer"
if [ "$PROFILE" = 1 ]; then profile one cliqo; profile one hand; fi

# ---- 1,000 peers ------------------------------------------------------------------------------------------
if [ "$PEERS" -gt 1 ]; then
  echo "phase 2: $((PEERS - 1)) more peers for gateway A (keys, endpoints behind fake0, blocks of 10.199.128.0/17)"
  for ((n = 1; n < PEERS; n++)); do
    peer_objects "$(printf 'bench-peer-%04d' "$n")" "$(printf 'tenant-bench-peer-%04d' "$n")" "$(wg genkey)" \
      "10.199.$((4 + n / 256)).$((n % 256)):51820" "10.199.$((128 + n / 8)).$((32 * (n % 8)))/27" 10.199.96.0/27 \
      "${ID[1]}" >>"$WORK/peers.$((n % 4))"
  done
  wg_count() { in_ns 1 wg show "${CIF}1" peers 2>/dev/null | grep -c . || true; }
  rt_count() { ip -n "${P}1" -4 route show proto 146 | grep -c . || true; }
  nft_count() { in_ns 1 nft list chains ip 2>/dev/null | grep -c 'chain to_' || true; }
  all_in() { [ "$(wg_count)" = "$PEERS" ] && [ "$(rt_count)" = "$PEERS" ] && [ "$(nft_count)" = "$PEERS" ]; }
  # table_at_ms T0: when the gateway's log (its last start) says it applied the table of PEERS peers, ms after T0.
  table_at_ms() {
    awk '/^--- start/ { n = NR } { l[NR] = $0 } END { for (i = n; i <= NR; i++) print l[i] }' "$WORK/gateway-1.log" |
      sed -n "s/^ts=\([^ ]*\) .*nftables: table cliqo (IPv4) .* for $PEERS peers.*/\1/p" | head -1 |
      while read -r ts; do echo $(($(date -d "$ts" +%s%3N) - $1)); done
  }
  l0=$(load)
  t0=$(ms)
  create 1 "$WORK"/peers.?
  t1=$(ms)
  wait_until 600 "gateway A holding $PEERS peers (device, routes, table)" all_in
  t2=$(ms)
  echo "FIGURE install-peers peers=$PEERS objects_created_ms=$((t1 - t0)) (4 kubectl at once) installed_ms=$((t2 - t0)) after_last_object_ms=$((t2 - t1)) gateway_log_table_ms=$(table_at_ms "$t0") table_transactions=$(grep -c 'nftables: table cliqo (IPv4)' "$WORK/gateway-1.log") (polled every 0.2 s; load $l0 -> $(load))"
  # gw_restart FLAG...: gateway A stopped (SIGTERM: it takes its tunnel down, wireguard-go included) and started
  # again with the PEERS peers' objects in place: the time until it holds them all (one pass).
  gw_restart() {
    kill -TERM "${GW_PIDS[1]}"
    wait_until 30 "gateway A stopped" eval '! kill -0 "${GW_PIDS[1]}" 2>/dev/null'
    gone() { [ "$(rt_count)" = 0 ] && [ -z "$(wg_pids "${CIF}1")" ]; }
    wait_until 30 "gateway A's tunnel down" gone
    l0=$(load)
    t0=$(ms)
    gw_start 1 "$@"
    wait_until 300 "gateway A holding $PEERS peers again" all_in
    t2=$(ms)
    echo "FIGURE install-peers-cold peers=$PEERS flags='$*' from_start_ms=$((t2 - t0)) gateway_log_table_ms=$(table_at_ms "$t0") (load $l0 -> $(load))"
    wait_until 60 "the tunnel to B Up again" both_up
  }
  gw_restart
  # The extra peers never answer: with the keepalive (25 s), wireguard-go initiates a handshake with each of them
  # every 5 s for ever (each initiation re-arms the keepalive): 200 a second, about 3 % of a core here.
  phase many "phase 3: $PEERS peers installed on A, wireguard-go initiating handshakes with the $((PEERS - 1)) silent ones"
  against_one many
  # With the longest keepalive (65535 s), wireguard-go gives up on a silent peer 90 s after its first try: the
  # rules without the handshakes. The tunnel to B is unchanged but for A's keepalive (B's stays 25 s).
  gw_restart --wg-keepalive 65535s
  tinst=$(ms)
  while [ $(($(ms) - tinst)) -lt 100000 ]; do sleep 1; done
  phase settled "phase 4: $PEERS peers installed on A (keepalive 65535 s), wireguard-go given up on the silent ones"
  against_one settled
  if [ "$PROFILE" = 1 ]; then profile settled cliqo; profile settled hand; fi
fi
# The cliqo path was NATed both ways: B's pod saw A's at 10.199.96.5 (where B sees A's pods), never 10.199.64.5.
grep -q 'Accepted connection from 10.199.96.5' "$WORK/iperf3-server.log" || die "iperf3's server never saw A's pod at 10.199.96.5"
! grep -q 'Accepted connection from 10.199.64.5' "$WORK/iperf3-server.log" || die "iperf3's server saw A's pod at its own address"
