#!/usr/bin/env bash
# Test hosts of the discovery group: network namespaces cqd-1 .. cqd-N, each with one veth
# ("eth0", 198.18.77.<i>/24, the RFC 2544 benchmarking range) whose peer (cqd-h<i>) is a port of
# the bridge cqd-br in the root namespace. The bridge has no address: the test hosts reach each
# other, and nothing else. Clusters 1..3 run inside cqd-1..cqd-3 (cliqo-devenv --netns-prefix);
# cqd-4 is a host without a cluster (spoofer, injector, benchmark announcer). Source it.
NET_PREFIX=${NET_PREFIX:-cqd}
NET_BRIDGE=$NET_PREFIX-br
NET_SUBNET=${NET_SUBNET:-198.18.77}
NET_HOSTS=${NET_HOSTS:-4}

net_ns() { echo "$NET_PREFIX-$1"; }
net_addr() { echo "$NET_SUBNET.$1"; }

# net_require: root and the tools, or a clear failure (these tests never skip).
net_require() {
  local t
  if [ "$(id -u)" -ne 0 ]; then
    echo "the discovery tests need root: they create network namespaces, veth pairs and a bridge" \
      "(run them as root, as CI does)" >&2
    return 1
  fi
  for t in ip nsenter ss; do
    command -v "$t" >/dev/null || { echo "the discovery tests need '$t' (iproute2, util-linux)" >&2; return 1; }
  done
  if ! ip netns add "$NET_PREFIX-probe" 2>/dev/null; then
    echo "cannot create a network namespace (ip netns add): the discovery tests need CAP_SYS_ADMIN" >&2
    return 1
  fi
  ip netns del "$NET_PREFIX-probe"
}

# net_down: removes every namespace, veth and the bridge of this group (idempotent), killing
# whatever still runs inside the namespaces (only this group's tests start processes there).
net_down() {
  local ns pid
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$NET_PREFIX-" || true); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
  for l in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep "^$NET_PREFIX-" || true); do
    ip link del "$l" 2>/dev/null || true
  done
}

# net_up: the bridge and NET_HOSTS test hosts (removing leftovers of an earlier run first).
net_up() {
  local i ns
  net_down
  ip link add "$NET_BRIDGE" type bridge
  # Link-local multicast (224.0.0.251) is always flooded; no snooping surprises either way.
  echo 0 >"/sys/class/net/$NET_BRIDGE/bridge/multicast_snooping" 2>/dev/null || true
  ip link set "$NET_BRIDGE" up
  for ((i = 1; i <= NET_HOSTS; i++)); do
    ns=$(net_ns "$i")
    ip netns add "$ns"
    ip link add "$NET_PREFIX-h$i" type veth peer name eth0 netns "$ns"
    ip link set "$NET_PREFIX-h$i" master "$NET_BRIDGE" up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$(net_addr "$i")/24" dev eth0
    ip -n "$ns" link set eth0 up
  done
}

# net_leftovers: prints what is left of the group's network (nothing when clean).
net_leftovers() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep "^$NET_PREFIX-" || true
  ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep "^$NET_PREFIX-" || true
}
