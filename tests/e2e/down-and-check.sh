#!/usr/bin/env bash
# Fixture cleanup: `cliqoctl dev down`, then prove nothing is left: no recorded process runs, no port
# listens, no state directory remains (nor etcd's data kept outside it).
source "$(dirname "$0")/lib.sh"
TEST_NAME=${TEST_NAME:-down}
pids=()
ports=()
datadirs=() # etcd's data kept outside the state directory (CLIQO_DEV_ETCD_DIR)
if [ -f "$E2E_STATE/clusters" ]; then
  for f in "$E2E_STATE"/*/*.pid; do [ -f "$f" ] && pids+=("$(cat "$f")"); done
  for f in "$E2E_STATE"/*/etcd-data; do [ -L "$f" ] && datadirs+=("$(readlink "$f")"); done
  while read -r _ api etcd peer sched cm; do ports+=("$api" "$etcd" "$peer" "$sched" "$cm"); done <"$E2E_STATE/clusters"
fi
"$CLIQOCTL" dev down || fail "dev down failed"
for p in "${pids[@]}"; do
  for _ in $(seq 1 20); do pid_running "$p" || break; sleep 0.1; done
  pid_running "$p" && fail "process $p ($(tr '\0' ' ' <"/proc/$p/cmdline" | cut -c1-80)) still runs after down"
done
for p in "${ports[@]}"; do
  ss -Htln "sport = :$p" | grep_q . && fail "port $p still listens after down"
done
for d in "${datadirs[@]}"; do [ -e "$d" ] && fail "etcd's data $d still exists after down"; done
[ -e "$E2E_STATE" ] && fail "state directory $E2E_STATE still exists after down"
pass "${#pids[@]} processes stopped, ${#ports[@]} ports free, no state left"
