#!/usr/bin/env bash
# Broker catalog benchmark (issue 20): GET /api/clusters with 1,000 ForeignClusters, served by cliqo-broker and,
# in the same run, the same bytes served as a static file by nginx; both measured with wrk (same threads,
# connections and duration). Prints requests per second, the ratio broker/nginx, and the broker's RSS.
# The broker runs with its rate limits off (--rate-limit 0 --global-rate-limit 0: they exist to stop a client,
# not to be measured) and the catalog open on loopback. Needs wrk and nginx (Debian: wrk, nginx-light).
# Usage: bench/broker-catalog.sh --cliqoctl PATH --broker PATH [--clusters N] [--seconds S] [--connections C]
set -euo pipefail
source "$(dirname "$0")/../tests/ports.sh"
CLIQOCTL=cliqoctl BROKER=cliqo-broker N=1000 SECS=10 CONNS=32
while [ $# -gt 0 ]; do
  case "$1" in
    --cliqoctl) CLIQOCTL=$2; shift ;;
    --broker) BROKER=$2; shift ;;
    --clusters) N=$2; shift ;;
    --seconds) SECS=$2; shift ;;
    --connections) CONNS=$2; shift ;;
    -h | --help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "broker-catalog: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
command -v wrk >/dev/null && command -v nginx >/dev/null || { echo "broker-catalog: needs wrk and nginx" >&2; exit 2; }
base=$(cliqo_port bench.broker-catalog)
work=$(mktemp -d)
export CLIQO_DEV_DIR=$work/dev CLIQO_DEV_BASE_PORT=$base CLIQO_DEV_NODES=0
bpid= npid=
cleanup() {
  [ -z "$bpid" ] || kill "$bpid" 2>/dev/null || true
  [ -z "$npid" ] || kill "$npid" 2>/dev/null || true
  "$CLIQOCTL" dev down >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
kcfg=$work/dev/cluster-1/kubeconfig
echo "one cluster, cliqo installed, $N ForeignClusters"
"$CLIQOCTL" dev up --clusters 1 >/dev/null
"$CLIQOCTL" install --skip-agent --kubeconfig "$kcfg" >/dev/null
for ((i = 0; i < N; i++)); do
  printf '{"apiVersion":"discovery.liqo.io/v1alpha1","kind":"ForeignCluster","metadata":{"name":"fc-%04d","labels":{"bench":"yes"}},"spec":{"clusterIdentity":{"clusterID":"id-%04d","clusterName":"fc-%04d"},"foreignAuthUrl":"https://192.0.2.1:443","outgoingPeeringEnabled":"No","incomingPeeringEnabled":"No"}}\n' "$i" "$i" "$i"
done | jq -s '{apiVersion: "v1", kind: "List", items: .}' | kubectl --kubeconfig "$kcfg" apply -f - >/dev/null
api_port=$((base + 6)) nginx_port=$((base + 7))
"$BROKER" --with-catalog --kubeconfig "$kcfg" --api-addr "127.0.0.1:$api_port" --leader-elect=false \
  --rate-limit 0 --global-rate-limit 0 --log-level warn >"$work/broker.log" 2>&1 &
bpid=$!
for _ in $(seq 300); do
  [ "$(curl -s "http://127.0.0.1:$api_port/api/clusters" | jq 'length' 2>/dev/null)" = "$N" ] && break
  sleep 0.1
done
mkdir -p "$work/www/api"
curl -s "http://127.0.0.1:$api_port/api/clusters" >"$work/www/api/clusters"
bytes=$(stat -c %s "$work/www/api/clusters")
chmod 755 "$work" "$work/www" "$work/www/api" && chmod 644 "$work/www/api/clusters" # nginx's workers are not root
[ "$(jq 'length' "$work/www/api/clusters")" = "$N" ] || { echo "the broker does not list $N clusters" >&2; exit 1; }
cat >"$work/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 1024; }
http {
  access_log off;
  types { application/json clusters; }
  default_type application/json;
  sendfile on;
  server { listen 127.0.0.1:$nginx_port; root $work/www; }
}
CONF
nginx -c "$work/nginx.conf" -p "$work" &
npid=$!
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$nginx_port/api/clusters" && break; sleep 0.1; done
# rps URL: requests per second; fails when any answer was not a 2xx or its size not the body's (wrk's
# Transfer/sec over Requests/sec).
rps() {
  local out r t
  out=$(wrk -t1 -c"$CONNS" -d"${SECS}s" "$1")
  if grep -q 'Non-2xx' <<<"$out"; then echo "wrk: errors from $1: $out" >&2; return 1; fi
  r=$(awk '/^Requests\/sec/ { print $2 }' <<<"$out")
  t=$(awk '/^Transfer\/sec/ { v = $2; u = substr(v, length(v) - 1); n = substr(v, 1, length(v) - 2) + 0
    m = (u == "GB") ? 2^30 : (u == "MB") ? 2^20 : (u == "KB") ? 2^10 : 1; print n * m }' <<<"$out")
  awk -v r="$r" -v t="$t" -v b="$bytes" 'BEGIN { if (r > 0 && (t / r < b * 0.95 || t / r > b * 1.1)) exit 1 }' ||
    { echo "wrk: $1 answered $(awk -v r="$r" -v t="$t" 'BEGIN { printf "%d", t / r }') bytes a request, not $bytes" >&2; return 1; }
  echo "$r"
}
echo "body: $bytes bytes; wrk: 1 thread, $CONNS connections, ${SECS}s each; broker: one loop; nginx: 1 worker"
b=$(rps "http://127.0.0.1:$api_port/api/clusters")
n=$(rps "http://127.0.0.1:$nginx_port/api/clusters")
rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$bpid/status")
hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$bpid/status")
printf '%-10s %12s\n' server "requests/s" broker "$b" nginx "$n"
echo "ratio broker/nginx: $(awk -v a="$b" -v c="$n" 'BEGIN { printf "%.2f", a / c }') (target >= 0.5)"
echo "broker RSS: $((rss / 1024)) MiB now, $((hwm / 1024)) MiB peak (target < 20 MB)"
