#!/usr/bin/env bash
# The real nodes' kubelet and kube-proxy are there before the network group starts its clusters. Cold,
# scripts/test.sh builds them in the background while the suite runs (at idle CPU priority) and writes
# CLIQO_KUBE_NODE_BUILD_STATUS when the build ends: this test waits for that (the group is the last of its
# lane, so nothing waits behind it), and fails with the build's log when the build failed. Outside
# scripts/test.sh the binaries must already be in CLIQO_KUBE_NODE_BIN_DIR (scripts/build-kube.sh --node).
# It also waits for the release build of cliqo-agent that scripts/test.sh makes next, for the agent's image
# (not as e2e.demo.binaries: the demo runs this build's agent, and its environment empties the status file's name).
source "$(dirname "$0")/../lib.sh"
TEST_NAME=${TEST_NAME:-e2e.network.binaries}
dir=${CLIQO_KUBE_NODE_BIN_DIR:?CLIQO_KUBE_NODE_BIN_DIR must name the node binaries directory}
status=${CLIQO_KUBE_NODE_BUILD_STATUS:-}
have() { [ -x "$dir/kubelet" ] && [ -x "$dir/kube-proxy" ]; }
if ! have; then
  [ -n "$status" ] || fail "no kubelet and kube-proxy in $dir, and no build under way (run scripts/build-kube.sh --node)"
  say "waiting for the background build of kubelet and kube-proxy (status file $status)"
  deadline=$((SECONDS + 2400))
  until [ -s "$status" ]; do
    [ "$SECONDS" -lt "$deadline" ] || fail "the build of kubelet and kube-proxy did not end within 2400 s"
    sleep 2
  done
  log=$(dirname "$status")/kube-node-build.log
  [ "$(cat "$status")" = ok ] || { tail -30 "$log" >&2 2>/dev/null || true; fail "the build of kubelet and kube-proxy $(cat "$status")"; }
  have || fail "the build said ok, but $dir has no kubelet and kube-proxy"
  say "built: $(grep -o 'built in [0-9]*s' "$log" 2>/dev/null || echo 'see the log')"
fi
# The release build of the agent for its image (e2e.network.deployed), built after them by scripts/test.sh.
status=${CLIQO_IMAGE_AGENT_BUILD_STATUS:-}
if [ -n "$status" ]; then
  deadline=$((SECONDS + 1200))
  until [ -s "$status" ]; do
    [ "$SECONDS" -lt "$deadline" ] || fail "the release build of cliqo-agent did not end within 1200 s"
    sleep 2
  done
  [ "$(cat "$status")" = ok ] || { tail -30 "$(dirname "$status")/image-agent-build.log" >&2 2>/dev/null || true
    fail "the release build of cliqo-agent $(cat "$status")"; }
fi
pass "kubelet and kube-proxy in $dir${status:+; the release build of cliqo-agent done}"
