#!/usr/bin/env bash
# Fixture cleanup of the network group: cliqoctl dev down, then prove that nothing of the real nodes is left:
# no process (the recorded daemons, containerd's shims, the containers in their cgroups), no mount under the
# state directory in any mount namespace, no network namespace, veth or bridge of the environment, no
# container cgroup, no state.
source "$(dirname "$0")/../lib.sh"
TEST_NAME=${TEST_NAME:-e2e.network.down}
pids=() ids=() prefix=""
if [ -d "$E2E_STATE" ]; then
  for f in "$E2E_STATE"/*/*.pid; do [ -f "$f" ] && pids+=("$(cat "$f")"); done
  [ -f "$E2E_STATE/netns.conf" ] && prefix=$(cat "$E2E_STATE/netns.conf")
  # the containers' IDs: directories named by a 64-hex ID, four levels under each node's containerd
  for d in "$E2E_STATE"/*/real-*/containerd; do
    [ -d "$d" ] && mapfile -t -O "${#ids[@]}" ids < <(find "$d" -mindepth 4 -maxdepth 4 -type d \
      -regextype posix-extended -regex '.*/[0-9a-f]{64}' -printf '%f\n' | sort -u)
  done
fi
t0=${EPOCHREALTIME/./}
"$CLIQOCTL" dev down || fail "dev down failed"
t1=${EPOCHREALTIME/./}
say "down took $(((t1 - t0) / 1000)) ms (${#ids[@]} containers, ${#pids[@]} recorded processes)"
for p in "${pids[@]}"; do
  for _ in $(seq 1 20); do pid_running "$p" || break; sleep 0.1; done
  pid_running "$p" && fail "process $p still runs after down"
done
for p in /proc/[0-9]*; do # builtins only: a host has hundreds of processes
  a=()
  { mapfile -d '' -t a <"$p/cmdline"; } 2>/dev/null || continue
  [[ "${a[*]}" != *"$E2E_STATE/"* ]] || fail "process ${p#/proc/} (${a[*]:0:6}) names the state directory after down"
done
for id in "${ids[@]}"; do
  for cg in /sys/fs/cgroup/*/k8s.io/"$id"; do [ -e "$cg" ] && fail "container cgroup $cg left after down"; done
done
# Every mount namespace: a node's mounts (overlays, shm, volumes) would show under the state directory.
left=$(grep -slF " $E2E_STATE/" /proc/[0-9]*/mountinfo || true)
[ -z "$left" ] || fail "mounts under $E2E_STATE left in: $left"
if [ -n "$prefix" ]; then
  left=$(ip netns list 2>/dev/null | awk '{print $1}' | grep -F -- "$prefix" || true)
  [ -z "$left" ] || fail "network namespaces left: $left"
  left=$(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -F -- "$prefix" || true)
  [ -z "$left" ] || fail "links left: $left"
fi
[ -e "$E2E_STATE" ] && fail "state directory $E2E_STATE still exists after down"
pass "${#pids[@]} processes and ${#ids[@]} containers stopped; no mount, namespace, link or state left"
