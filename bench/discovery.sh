#!/usr/bin/env bash
# Discovery benchmark (docs/discovery.md, "Figures"): prints figures and ratios, asserts nothing.
#
#   discovery.sh --cliqoctl PATH --agent PATH --mdns-tool PATH [--rounds N] [--announced N] [--ttl S]
#                [--wan-refresh S]
#
# Needs root (network namespaces). One cluster runs inside test host cqb-1 (198.18.78.1, base port
# from tests/ports.tsv, its own state directory), its agent announces and browses on the host's eth0; announcers
# (cliqo-mdns-tool: the same Avahi responder code the agent uses) run on test host cqb-2. A
# `kubectl get foreignclusters --watch` stamps each event with the wall clock (ms).
#   - LAN discovery latency: announcer started -> ForeignCluster ADDED (target <= 2 s);
#   - vanish with goodbye: announcer SIGTERM -> DELETED; without: SIGKILL -> DELETED (vs the TTL);
#   - WAN refresh latency: dnsmasq (on cqb-1's loopback) restarted with a changed SRV record ->
#     ForeignCluster URL updated, with spec.refreshSeconds as given;
#   - memory: the agent's RSS (process_resident_memory_bytes) before and with N announced clusters
#     (all N ForeignClusters present), and the time until all N are there.
# Everything it starts is stopped and removed on exit.
set -euo pipefail
source "$(dirname "$0")/../tests/ports.sh" # cliqo_port: the one port table
HERE=$(cd "$(dirname "$0")" && pwd)
ROUNDS=5 ANNOUNCED=100 TTL=4 WAN_REFRESH=2
CLIQOCTL= AGENT= TOOL= DNSMASQ=${DNSMASQ:-/usr/sbin/dnsmasq}
while [ $# -gt 0 ]; do
  case "$1" in
    --cliqoctl) CLIQOCTL=$2; shift 2 ;;
    --agent) AGENT=$2; shift 2 ;;
    --mdns-tool) TOOL=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --announced) ANNOUNCED=$2; shift 2 ;;
    --ttl) TTL=$2; shift 2 ;;
    --wan-refresh) WAN_REFRESH=$2; shift 2 ;;
    -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "discovery.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[ -x "$CLIQOCTL" ] && [ -x "$AGENT" ] && [ -x "$TOOL" ] || { echo "discovery.sh: --cliqoctl, --agent and --mdns-tool are required" >&2; exit 2; }
export NET_PREFIX=cqb NET_SUBNET=198.18.78 NET_HOSTS=2
# shellcheck source=../tests/e2e/discovery/net.sh
source "$HERE/../tests/e2e/discovery/net.sh"
net_require || exit 1
WORK=$(mktemp -d)
export CLIQO_DEV_DIR=$WORK/state CLIQO_DEV_BASE_PORT=$(cliqo_port bench.discovery) CLIQO_DEV_NODES=0
DNS_PORT=$((CLIQO_DEV_BASE_PORT + 38)) HTTP_PORT=$((CLIQO_DEV_BASE_PORT + 6)) AUTH_PORT=$((CLIQO_DEV_BASE_PORT + 7))
KCFG=$CLIQO_DEV_DIR/cluster-1/kubeconfig
PIDS=()
say() { printf '[bench-discovery] %s\n' "$*" >&2; }
now_ms() { date +%s%3N; }
n1() { nsenter --net=/run/netns/cqb-1 "$@"; }
kc() { n1 kubectl --kubeconfig "$KCFG" --request-timeout=20s "$@"; }
cleanup() {
  local p
  disown -a 2>/dev/null || true
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  "$CLIQOCTL" dev down >/dev/null 2>&1 || true
  net_down
  rm -rf "$WORK"
}
trap cleanup EXIT

net_up
"$CLIQOCTL" dev up --clusters 1 --netns-prefix cqb- >/dev/null 2>&1 || { echo "dev up failed" >&2; exit 1; }
n1 "$CLIQOCTL" install --kubeconfig "$KCFG" --cluster-name bench --auth-address 198.18.78.1:$AUTH_PORT --skip-agent >/dev/null
kc patch clusterconfig configuration --type merge -p "{\"spec\":{\"discoveryConfig\":{\"enableDiscovery\":true,\"enableAdvertisement\":true,\"ttl\":$TTL,\"maxClusters\":$((ANNOUNCED + 16))}}}" >/dev/null
nsenter --net=/run/netns/cqb-1 "$AGENT" --kubeconfig "$KCFG" --http-addr "0.0.0.0:$HTTP_PORT" --auth-addr "0.0.0.0:$AUTH_PORT" \
  --auth-url https://198.18.78.1:$AUTH_PORT --identity bench-agent --log-level info >"$WORK/agent.log" 2>&1 &
PIDS+=($!)
until [ "$(n1 curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$HTTP_PORT/readyz)" = 200 ]; do sleep 0.2; done

# Every ForeignCluster event, stamped.
n1 kubectl --kubeconfig "$KCFG" --request-timeout=0 get foreignclusters --watch --output-watch-events \
  -o 'jsonpath={.type} {.object.metadata.name} {.object.spec.foreignAuthUrl}{"\n"}' 2>/dev/null |
  while read -r line; do echo "$(now_ms) $line"; done >"$WORK/events" &
PIDS+=($!)
sleep 1

# wait_event TYPE NAME [URL]: the stamp of the first such event (waits up to 120 s).
wait_event() {
  local deadline=$(($(date +%s) + 120)) t
  while :; do
    t=$(awk -v ty="$1" -v n="$2" -v u="${3:-}" '$2 == ty && $3 == n && (u == "" || $4 == u) { print $1; exit }' "$WORK/events")
    [ -n "$t" ] && { echo "$t"; return 0; }
    [ "$(date +%s)" -lt "$deadline" ] || {
      echo "timeout waiting for $1 $2; events:" >&2
      tail -5 "$WORK/events" >&2
      echo "agent log:" >&2
      tail -20 "$WORK/agent.log" >&2
      return 1
    }
    sleep 0.05
  done
}
announce() { # ID [count]
  nsenter --net=/run/netns/cqb-2 "$TOOL" announce --id "$1" --name bench --url https://198.18.78.2:8443 \
    --ttl "$TTL" --iface eth0 --host "h-$1" --count "${2:-1}" >/dev/null 2>&1 &
  TPID=$!
  PIDS+=("$TPID")
}
stats() { # NAME values... (ms)
  local name=$1
  shift
  printf '%s\n' "$@" | sort -n | awk -v n="$name" '{ v[NR] = $1; s += $1 } END {
    printf "%-34s n=%d  min %6.3f s  median %6.3f s  max %6.3f s  mean %6.3f s\n", n, NR, v[1] / 1000,
      v[int((NR + 1) / 2)] / 1000, v[NR] / 1000, s / NR / 1000 }'
}

lat=() bye=() silent=()
for ((r = 1; r <= ROUNDS; r++)); do
  t0=$(now_ms)
  announce "lat-$r"
  t1=$(wait_event ADDED "lat-$r")
  lat+=($((t1 - t0)))
  t2=$(now_ms)
  kill -TERM "$TPID"
  t3=$(wait_event DELETED "lat-$r")
  bye+=($((t3 - t2)))
  wait "$TPID" 2>/dev/null || true
  announce "kill-$r"
  wait_event ADDED "kill-$r" >/dev/null
  sleep 1 # past the announcement's probing, so the kill really silences an established service
  t2=$(now_ms)
  kill -KILL "$TPID"
  wait "$TPID" 2>/dev/null || true
  t3=$(wait_event DELETED "kill-$r")
  silent+=($((t3 - t2)))
done

# WAN: dnsmasq on cqb-1's loopback, a SearchDomain refreshed every WAN_REFRESH s.
SVC=_liqo_auth._tcp DOM=bench.test
dns() { # PORT
  nsenter --net=/run/netns/cqb-1 "$DNSMASQ" --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts \
    --pid-file= --listen-address=127.0.0.1 --bind-interfaces "--port=$DNS_PORT" --user=root "--local=/$DOM/" \
    "--ptr-record=$SVC.$DOM,w_wanbench.$SVC.$DOM" "--srv-host=w_wanbench.$SVC.$DOM,auth.$DOM,$1" \
    "--txt-record=w_wanbench.$SVC.$DOM,id=wanbench" >/dev/null 2>&1 &
  DPID=$!
  PIDS+=("$DPID")
  until n1 ss -Huln "sport = :$DNS_PORT" | grep . >/dev/null; do sleep 0.05; done
}
dns 20000
kc apply -f - >/dev/null <<EOF
apiVersion: discovery.liqo.io/v1alpha1
kind: SearchDomain
metadata: {name: bench}
spec: {domain: $DOM, dnsServer: "127.0.0.1:$DNS_PORT", refreshSeconds: $WAN_REFRESH}
EOF
wait_event ADDED wanbench >/dev/null
wan=()
for ((r = 1; r <= ROUNDS; r++)); do
  kill -TERM "$DPID"
  wait "$DPID" 2>/dev/null || true
  t0=$(now_ms)
  dns $((20000 + r))
  t1=$(wait_event MODIFIED wanbench "https://auth.$DOM:$((20000 + r))")
  wan+=($((t1 - t0)))
done
kc delete searchdomain bench >/dev/null
kill -TERM "$DPID" 2>/dev/null || true

# Memory with ANNOUNCED clusters.
metric() { n1 curl -s http://127.0.0.1:$HTTP_PORT/metrics | awk -v n="$1" '$1 == n { print $2 }'; }
rss0=$(metric process_resident_memory_bytes)
t0=$(now_ms)
announce mem "$ANNOUNCED"
until [ "$(kc get foreignclusters -o name | grep -c '/mem-')" -ge "$ANNOUNCED" ]; do
  [ $(($(now_ms) - t0)) -lt 300000 ] || { echo "not all $ANNOUNCED clusters discovered in 300 s" >&2; exit 1; }
  sleep 0.2
done
t1=$(now_ms)
sleep 2
rss1=$(metric process_resident_memory_bytes)
followed=$(n1 curl -s http://127.0.0.1:$HTTP_PORT/metrics | awk '$1 == "cliqo_discovery_clusters{source=\"lan\"}" { print $2 }')
kill -TERM "$TPID"
wait "$TPID" 2>/dev/null || true

echo "discovery benchmark: agent $(basename "$AGENT") ($(grep -qa __asan_init "$AGENT" && echo ASan build || echo plain build)), TTL ${TTL} s, $(nproc) cores"
stats "LAN discovery latency" "${lat[@]}"
awk -v m="$(printf '%s\n' "${lat[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')" \
  'BEGIN { printf "%-34s median / 2 s target = %.2f\n", "", m / 2000 }'
stats "vanish with goodbye" "${bye[@]}"
stats "vanish without goodbye (SIGKILL)" "${silent[@]}"
awk -v m="$(printf '%s\n' "${silent[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')" -v t="$TTL" \
  'BEGIN { printf "%-34s median / TTL = %.2f\n", "", m / 1000 / t }'
stats "WAN refresh latency (refresh ${WAN_REFRESH} s)" "${wan[@]}"
printf '%-34s %d announced, %d followed, all ForeignClusters in %.1f s\n' "memory with announced clusters" \
  "$ANNOUNCED" "${followed%.*}" "$(echo "$t0 $t1" | awk '{ print ($2 - $1) / 1000 }')"
printf '%-34s RSS %.1f MiB before, %.1f MiB with them: %.1f KiB per cluster\n' "" \
  "$(awk -v v="$rss0" 'BEGIN { print v / 1048576 }')" "$(awk -v v="$rss1" 'BEGIN { print v / 1048576 }')" \
  "$(awk -v a="$rss0" -v b="$rss1" -v n="$ANNOUNCED" 'BEGIN { print (b - a) / 1024 / n }')"
