#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs the Debian packages, builds (or reuses) the Kubernetes
# binaries, builds cliqo with ASan + UBSan, and runs every CTest test (unit, lint, CLI and e2e against
# real local control planes). Idempotent; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
step() { printf '\n==> %s (%ss)\n' "$*" "$(($(date +%s) - t0))"; }

step "installing Debian packages"
bash scripts/install-deps.sh
step "Kubernetes binaries"
CLIQO_KUBE_BIN_DIR=$(bash scripts/build-kube.sh)
export CLIQO_KUBE_BIN_DIR
# The generator of the protobuf schema tables (src/kube/kpb.h), from the same source: seconds once the
# control plane's Go build cache is there.
CLIQO_KPBGEN=$(bash scripts/build-kube.sh --kpbgen)/kpbgen
export CLIQO_KPBGEN
# kubelet and kube-proxy, for the real nodes of the e2e group network. When not cached, they build in the
# background at idle CPU priority while the suite runs: about 5 minutes of both cores cold, which the e2e
# lanes (waiting on timers and API servers much of the time) leave free, and only the network group needs
# them (its first test, e2e.network.binaries, waits for this build's status file).
CLIQO_KUBE_NODE_BIN_DIR=$(bash scripts/build-kube.sh --node --print-dir)
export CLIQO_KUBE_NODE_BIN_DIR
mkdir -p build
export CLIQO_KUBE_NODE_BUILD_STATUS=$PWD/build/kube-node-build.status
# Then, in the same background job, the release build of cliqo-agent and cliqo-broker that the network group
# puts in the agent's image (e2e.network.deployed: the agent and the gateway as pods, as users run them).
export CLIQO_IMAGE_AGENT_BUILD_STATUS=$PWD/build/image-agent-build.status
rm -f "$CLIQO_KUBE_NODE_BUILD_STATUS" "$CLIQO_IMAGE_AGENT_BUILD_STATUS"
set -m # the build in a process group of its own, to stop all of it if this script ends first
(
  if chrt --idle 0 nice -n 19 bash scripts/build-kube.sh --node >/dev/null 2>build/kube-node-build.log; then
    echo ok >"$CLIQO_KUBE_NODE_BUILD_STATUS.tmp"
  else
    echo "failed (see build/kube-node-build.log)" >"$CLIQO_KUBE_NODE_BUILD_STATUS.tmp"
  fi
  mv "$CLIQO_KUBE_NODE_BUILD_STATUS.tmp" "$CLIQO_KUBE_NODE_BUILD_STATUS"
  if { cmake --preset release -DBUILD_TESTING=OFF -DCLIQO_KUBE_BIN_DIR= -DCLIQO_KPBGEN="$CLIQO_KPBGEN" &&
    chrt --idle 0 nice -n 19 cmake --build --preset release --target cliqo-agent cliqo-broker; } \
    >build/image-agent-build.log 2>&1; then
    echo ok >"$CLIQO_IMAGE_AGENT_BUILD_STATUS.tmp"
  else
    echo "failed (see build/image-agent-build.log)" >"$CLIQO_IMAGE_AGENT_BUILD_STATUS.tmp"
  fi
  mv "$CLIQO_IMAGE_AGENT_BUILD_STATUS.tmp" "$CLIQO_IMAGE_AGENT_BUILD_STATUS"
) &
node_build=$!
set +m
trap 'kill -TERM -- "-$node_build" 2>/dev/null || true' EXIT
step "building cliqo (ASan + UBSan)"
cmake --preset asan -DCLIQO_KUBE_BIN_DIR="$CLIQO_KUBE_BIN_DIR" -DCLIQO_KUBE_NODE_BIN_DIR="$CLIQO_KUBE_NODE_BIN_DIR" \
  -DCLIQO_KPBGEN="$CLIQO_KPBGEN" \
  -DCLIQO_IMAGE_AGENT_DIR="$PWD/build/release/src" >/dev/null
cmake --build --preset asan
step "fuzz smoke runs (clang libFuzzer)"
cmake --preset fuzz -DCLIQO_KUBE_BIN_DIR= -DCLIQO_KPBGEN="$CLIQO_KPBGEN" >/dev/null
cmake --build --preset fuzz --target fuzzers
# Two at a time: each harness is one single-threaded process, and nothing else runs yet.
ctest --test-dir build/fuzz -L fuzz --output-on-failure -j2
step "running the test suite"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
rc=0
# Three at a time: the two e2e lanes (two groups side by side, one test at a time in each; RESOURCE_LOCK
# cliqo_e2e_lane1..2, CLIQO_E2E_LANES in tests/e2e/e2e.cmake) and the unit, lint and CLI tests beside them.
ctest --test-dir build/asan --output-on-failure --timeout 900 -j3 "$@" || rc=$?
step "done (exit $rc)"
exit "$rc"
