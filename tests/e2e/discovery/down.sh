#!/usr/bin/env bash
# Fixture cleanup of the discovery group: stop the clusters, remove the test hosts, and prove that
# nothing is left: no process of the environment, no namespace, veth or bridge, no state.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/net.sh"
TEST_NAME=${TEST_NAME:-e2e.discovery.down}
pids=()
if [ -d "$E2E_STATE" ]; then
  for f in "$E2E_STATE"/*/*.pid; do [ -f "$f" ] && pids+=("$(cat "$f")"); done
fi
"$CLIQOCTL" dev down || fail "dev down failed"
net_down
for p in "${pids[@]}"; do
  for _ in $(seq 1 20); do pid_running "$p" || break; sleep 0.1; done
  pid_running "$p" && fail "process $p still runs after down"
done
left=$(net_leftovers)
[ -z "$left" ] || fail "network left behind: $left"
[ -e "$E2E_STATE" ] && fail "state directory $E2E_STATE still exists after down"
pass "${#pids[@]} processes stopped, test hosts removed, no state left"
