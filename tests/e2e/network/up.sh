#!/usr/bin/env bash
# Fixture of the network group: two clusters with one real node each (cliqoctl dev up --real-nodes 1), no
# simulated node. A second up must find them up and change nothing. Fails, never skips, without root.
source "$(dirname "$0")/../lib.sh"
TEST_NAME=${TEST_NAME:-e2e.network.up}
[ "$(id -u)" -eq 0 ] ||
  fail "the network group needs root: its real nodes are network and mount namespaces with containerd and a kubelet (run it as root, as CI does)"
trap 'if [ $? -ne 0 ]; then "$CLIQOCTL" dev down >/dev/null 2>&1 || true; fi' EXIT
"$CLIQOCTL" dev up --clusters 2 --real-nodes 1 || fail "cliqoctl dev up --real-nodes 1 failed"
say "up: 2 clusters with a real node each"
"$CLIQOCTL" dev up --clusters 2 --real-nodes 1 2>&1 | grep_q 'already up' || fail "a second up did not find the clusters up"
"$CLIQOCTL" dev status || fail "status reports an unhealthy component"
say "second up and status: unchanged, healthy"
pass "2 clusters, real nodes $(awk '$1 == "nodes" {print $2}' "$E2E_STATE/realnodes.conf") each"
