# Helpers of the network group's data-plane tests (tests/e2e/network/): source after ../lib.sh.
#
# Two clusters with one real node each and the same pod CIDR (10.244.0.0/16, the nodes' block
# 10.244.1.0/24). `peer` installs cliqo on both, starts one agent per cluster as a local process (as the
# other groups do: tests/e2e/agents.sh), peers cluster-1 with cluster-2 and starts each cluster's gateway
# (`cliqo-agent gateway`) inside its gateway node's network and mount namespaces with nsenter; the tests
# after it share that state; `unpeer` ends it and checks that nothing is left.
A=cluster-1
B=cluster-2
ALL=("$A" "$B")
AGENT_ID_PREFIX=net-agent
NS=nettest-dp
# The API servers live in network namespaces of their own (docs/dataplane.md, section 1): they call the
# agents' admission webhooks at the root namespace's end of their link, 10.255.<i>.1, not at 127.0.0.1.
agent_extra_flags() {
  local i=${1#cluster-}
  local h
  h="$(awk '$1 == "link" {print $2}' "$E2E_STATE/realnodes.conf").$i.1"
  echo --webhook-addr "$h:$(webhook_port "$1")" --webhook-url "https://$h:$(webhook_port "$1")"
}
source "$(dirname "${BASH_SOURCE[0]}")/../agents.sh"

idx() { echo "${1#cluster-}"; }
node_netns() { echo "$(cat "$E2E_STATE/netns.conf")$(idx "$1")n1"; }
node_mntns() { echo "$E2E_STATE/mnt/$1-real-1"; }
wan_bridge() { echo "$(cat "$E2E_STATE/netns.conf")wan"; }
# in_node CLUSTER command...: in the gateway node's network and mount namespaces.
in_node() {
  local c=$1
  shift
  nsenter --net="/run/netns/$(node_netns "$c")" --mount="$(node_mntns "$c")" "$@"
}
# The gateways' settings: one interface name per cluster and environment, <netns prefix>g<i> (their
# userspace API sockets share /var/run/wireguard, which the nodes' mount namespaces do not cover: checked in
# `peer`), the endpoint on the node's link to the other cluster, a short keepalive.
gw_if() { echo "$(cat "$E2E_STATE/netns.conf")g$(idx "$1")"; }
gw_endpoint() { echo "192.168.77.$(idx "$1"):51820"; }
# A gateway's pid file and log are an agent's (agents.sh) named gateway-CLUSTER.
gw_log() { agent_log "gateway-$1"; }
gw_pid() { agent_pid "gateway-$1"; }
gw_start() {
  local c=$1
  agent_alive "gateway-$c" && return 0
  printf -- '--- start %s\n' "$(now_rfc3339)" >>"$(gw_log "$c")"
  # nsenter execs the agent: the recorded PID is the gateway's.
  setsid nsenter --net="/run/netns/$(node_netns "$c")" --mount="$(node_mntns "$c")" \
    "$CLIQO_AGENT" gateway --kubeconfig "$(kcfg "$c")" --leader-elect=false --http-addr 127.0.0.1:18095 \
    --identity "gateway-$(idx "$c")" --gateway-endpoint "$(gw_endpoint "$c")" --tunnel-interface "$(gw_if "$c")" \
    --wg-keepalive 2s >>"$(gw_log "$c")" 2>&1 </dev/null &
  echo $! >"$(agent_pidfile "gateway-$c")"
}
gw_stop() { stop_agent "gateway-$1" "${2:-TERM}"; } # CLUSTER [SIGNAL]; a TERM must stop it cleanly
# wg_pids CLUSTER: the wireguard-go processes of the cluster's interface (their command line names it).
wg_pids() {
  local p a
  for p in /proc/[0-9]*; do
    a=()
    { mapfile -d '' -t a <"$p/cmdline"; } 2>/dev/null || continue
    [ "${a[0]:-}" = wireguard-go ] || [[ "${a[0]:-}" == */wireguard-go ]] || continue
    [ "${a[*]: -1}" = "$(gw_if "$1")" ] && echo "${p#/proc/}"
  done
  return 0
}

# The clusters' IDs and tenant namespaces, read once by `peer` into the state directory.
ids() {
  local f=$E2E_STATE/net-ids
  if [ "${1:-}" = --read ] || ! [ -s "$f" ]; then
    A_ID=$(cluster_id "$A")
    B_ID=$(cluster_id "$B")
    printf '%s %s\n' "$A_ID" "$B_ID" >"$f"
  else
    read -r A_ID B_ID <"$f"
  fi
  [ -n "$A_ID" ] && [ -n "$B_ID" ] || fail "cluster IDs unknown"
}
id_of() { if [ "$1" = "$A" ]; then echo "$A_ID"; else echo "$B_ID"; fi; }
other() { if [ "$1" = "$A" ]; then echo "$B"; else echo "$A"; fi; }
# tenant CLUSTER: the tenant namespace, on CLUSTER, of the other cluster.
tenant() { jget "$1" '{.items[0].metadata.namespace}' networkconfigs -A -l "discovery.liqo.io/cluster-id=$(id_of "$(other "$1")")"; }
# seen CLUSTER: where CLUSTER sees the other's pods (the status it wrote on the other's NetworkConfig).
seen() {
  local nat
  nat=$(jget "$1" '{.items[0].status.podCIDRNAT}' networkconfigs -A -l "discovery.liqo.io/cluster-id=$(id_of "$(other "$1")")")
  if [ "$nat" = None ]; then cat "$E2E_STATE/$(other "$1")/pod-cidr"; else echo "$nat"; fi
}
tep_field() { # CLUSTER JSONPATH: of the other cluster's TunnelEndpoint on CLUSTER
  jget "$1" "$2" tunnelendpoint "tep-$(id_of "$(other "$1")")" -n "$(tenant "$1")"
}
tep_up() { [ "$(tep_field "$1" '{.status.phase}')" = Up ]; }
# xlate IP CIDR: the address with the host part of IP in the block CIDR (IPv4).
xlate() {
  local ip=$1 net=${2%/*} len=${2#*/} a b c d n m
  IFS=. read -r a b c d <<<"$ip"
  n=$(((a << 24) | (b << 16) | (c << 8) | d))
  IFS=. read -r a b c d <<<"$net"
  m=$(((a << 24) | (b << 16) | (c << 8) | d))
  n=$(((m & ~((1 << (32 - len)) - 1)) | (n & ((1 << (32 - len)) - 1))))
  echo "$(((n >> 24) & 255)).$(((n >> 16) & 255)).$(((n >> 8) & 255)).$((n & 255))"
}
# What the gateway installed, read with independent tools inside the node.
wg_peer_count() { in_node "$1" wg show "$(gw_if "$1")" peers 2>/dev/null | grep -c . || true; }
cliqo_routes() { in_node "$1" ip -4 route show proto 146; }
link_mtu() { in_node "$1" ip -o link show dev "$2" | sed -n 's/.* mtu \([0-9]*\) .*/\1/p'; } # CLUSTER IFACE
cliqo_table() { in_node "$1" nft list table ip cliqo 2>/dev/null || true; }

# The node mode (`cliqo-agent node`, docs/dataplane.md section 5), started by `join` on cluster-1's nodes as the
# gateways are (a process in the node's network and mount namespaces), with the token of ServiceAccount cliqo-node
# (na_kubeconfig): the rights of deploy/rbac.yaml, not the admin's. Its pid file and log are an agent's named
# node-CLUSTER-J. Node 2 exists once `join` has added it.
JOIN_NODE=2
node_netns_j() { echo "$(cat "$E2E_STATE/netns.conf")$(idx "$1")n$2"; } # CLUSTER J
in_node_j() { # CLUSTER J command...: in node J's network and mount namespaces
  local c=$1 j=$2
  shift 2
  nsenter --net="/run/netns/$(node_netns_j "$c" "$j")" --mount="$E2E_STATE/mnt/$c-real-$j" "$@"
}
node_exists() { [ -e "/run/netns/$(node_netns_j "$1" "$2")" ]; } # CLUSTER J
na_name() { echo "node-$1-$2"; }
na_kubeconfig() { echo "$E2E_STATE/node-$1.kubeconfig"; }
na_start() { # CLUSTER J
  local c=$1 j=$2 n
  n=$(na_name "$c" "$j")
  agent_alive "$n" && return 0
  printf -- '--- start %s\n' "$(now_rfc3339)" >>"$(agent_log "$n")"
  setsid nsenter --net="/run/netns/$(node_netns_j "$c" "$j")" --mount="$E2E_STATE/mnt/$c-real-$j" \
    "$CLIQO_AGENT" node --kubeconfig "$(na_kubeconfig "$c")" --node-name "$c-real-$j" --http-addr 127.0.0.1:18096 \
    --identity "$n" >>"$(agent_log "$n")" 2>&1 </dev/null &
  echo $! >"$(agent_pidfile "$n")"
}
na_stop() { stop_agent "$(na_name "$1" "$2")" "${3:-TERM}"; } # CLUSTER J [SIGNAL]
node_routes() { in_node_j "$1" "$2" ip -4 route show proto 146; } # CLUSTER J

net_on_exit() { # agents_on_exit, with the gateways' and node agents' logs too (named as agents: see gw_log)
  local rc=$? ALL=("${ALL[@]}" "gateway-$A" "gateway-$B" "$(na_name "$A" 1)" "$(na_name "$A" "$JOIN_NODE")")
  (exit "$rc") || agents_on_exit # (a bare `(exit N)` would end the trap under errexit)
}

pod_json() { # name node command...
  local name=$1 node=$2 args="" a ref
  shift 2
  ref=$(awk '$1 == "ref" {print $2}' "$E2E_STATE/realnodes.conf")
  for a in "$@"; do args+="${args:+, }$(json_str "$a")"; done
  printf '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "%s", "namespace": "%s", "labels": {"app": "%s"}},
  "spec": {"nodeName": "%s", "terminationGracePeriodSeconds": 0, "automountServiceAccountToken": false,
  "containers": [{"name": "main", "image": "%s", "imagePullPolicy": "Never", "command": [%s]}]}}' \
    "$name" "$NS" "$name" "$node" "$ref" "$args"
}
pod_ip() { jget "$1" '{.status.podIP}' pod "$2" -n "$NS"; }
pod_running() { [ "$(jget "$1" '{.status.phase}' pod "$2" -n "$NS")" = Running ]; }
# fetch CLUSTER URL: the client pod of CLUSTER fetches URL (busybox's timeout: its wget -T crashes)
fetch() { kc "$1" exec -n "$NS" client -- timeout 5 wget -qO- "$2" 2>/dev/null; }
