#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs the Debian packages, builds (or reuses) the Kubernetes
# binaries, builds cliqo with ASan + UBSan, and runs every CTest test (unit, lint, CLI and e2e against
# real local control planes). Idempotent; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)

# How busy the machine was since the last step (every CPU, from /proc/stat): a step that leaves a core idle
# is one that something else could run beside.
cpu_last=""
cpu_busy() {
  local user nice sys idle iow irq sirq steal rest now busy total
  read -r _ user nice sys idle iow irq sirq steal rest </proc/stat
  now="$((user + nice + sys + irq + sirq + steal)) $((user + nice + sys + idle + iow + irq + sirq + steal))"
  if [ -n "$cpu_last" ]; then
    busy=$((${now% *} - ${cpu_last% *})) total=$((${now#* } - ${cpu_last#* }))
    [ "$total" -le 0 ] || printf '    (the CPUs were %d%% busy since the last step)\n' $((100 * busy / total))
  fi
  cpu_last=$now
}
step() { cpu_busy; printf '\n==> %s (%ss)\n' "$*" "$(($(date +%s) - t0))"; }

step "installing Debian packages"
bash scripts/install-deps.sh
mkdir -p build
# The Kubernetes binaries build in the background, one after the other, each writing a status file when
# it ends:
# - the control plane (kube-apiserver, kube-scheduler, kube-controller-manager), at normal priority: every
#   e2e test needs it, and this script waits for it before the suite. kpbgen and cliqo's build go beside
#   it, at a lower priority, to use what it leaves idle of the cores (its code generators ran one at a
#   time; its Go build has serial stretches). Measured on a 2-core machine, cold
#   (providerless build, every code generator run): the control plane alone took 386 s (668 CPU-s), beside
#   that work 550 s; the suite started at 541-587 s, about what one step after the other would give (some
#   560 s). So two cores gain nothing from the overlap, and lose nothing; more cores gain. Generating only
#   the one file the source package lacks (scripts/build-kube.sh) brought the control plane alone, with an
#   empty Go cache, to about 325 s (about 605 CPU-s); in a cold run of this script it ended at 507 s instead
#   of 581, the suite started at 594 s instead of 615 (the work beside it, at a lower priority, now ends
#   last).
# - kubelet and kube-proxy, for the real nodes of the e2e groups network and demo, at idle CPU priority
#   while the suite runs: about 5 minutes of both cores cold, which the e2e lanes (waiting on timers and
#   API servers much of the time) leave free; only those groups need them (their first test,
#   e2e.network.binaries, waits for this build's status file).
# - then the release build of cliqo-agent and cliqo-broker that the network group puts in the agent's
#   image (e2e.network.deployed: the agent and the gateway as pods, as users run them).
CLIQO_KUBE_BIN_DIR=$(bash scripts/build-kube.sh --print-dir)
export CLIQO_KUBE_BIN_DIR
CLIQO_KPBGEN=$(bash scripts/build-kube.sh --kpbgen --print-dir)/kpbgen # built below, before anything uses it
export CLIQO_KPBGEN
CLIQO_KUBE_NODE_BIN_DIR=$(bash scripts/build-kube.sh --node --print-dir)
export CLIQO_KUBE_NODE_BIN_DIR
kube_status=$PWD/build/kube-build.status
export CLIQO_KUBE_NODE_BUILD_STATUS=$PWD/build/kube-node-build.status
export CLIQO_IMAGE_AGENT_BUILD_STATUS=$PWD/build/image-agent-build.status
rm -f "$kube_status" "$CLIQO_KUBE_NODE_BUILD_STATUS" "$CLIQO_IMAGE_AGENT_BUILD_STATUS"
# status_of FILE LOG command...: runs the command with its output in LOG, then writes "ok" or why not to FILE.
status_of() {
  local f=$1 log=$2
  shift 2
  if "$@" >"$log" 2>&1; then echo ok >"$f.tmp"; else echo "failed (see $log)" >"$f.tmp"; fi
  mv "$f.tmp" "$f"
}
set -m # the builds in a process group of their own, to stop all of it if this script ends first
(
  status_of "$kube_status" build/kube-build.log bash scripts/build-kube.sh
  status_of "$CLIQO_KUBE_NODE_BUILD_STATUS" build/kube-node-build.log chrt --idle 0 nice -n 19 bash scripts/build-kube.sh --node
  # shellcheck disable=SC2016 # expanded by the inner shell (CLIQO_KPBGEN is exported)
  status_of "$CLIQO_IMAGE_AGENT_BUILD_STATUS" build/image-agent-build.log bash -c \
    'cmake --preset release -DBUILD_TESTING=OFF -DCLIQO_KUBE_BIN_DIR= -DCLIQO_KPBGEN="$CLIQO_KPBGEN" &&
     chrt --idle 0 nice -n 19 cmake --build --preset release --target cliqo-agent cliqo-broker'
) &
kube_build=$!
set +m
trap 'kill -TERM -- "-$kube_build" 2>/dev/null || true' EXIT
# Meanwhile, beside it: the generator of the protobuf schema tables (src/kube/kpb.h), which cliqo's build
# needs (about 40 s, from the same source, in a directory of its own), and cliqo's build.
step "the protobuf schema generator (kpbgen), beside the Kubernetes control plane's build"
[ "$(nice -n 10 bash scripts/build-kube.sh --kpbgen)/kpbgen" = "$CLIQO_KPBGEN" ] || {
  echo "scripts/build-kube.sh --kpbgen built another directory than it named" >&2
  exit 1
}
step "building cliqo (ASan + UBSan), beside the control plane's build"
fuzz_status=$PWD/build/fuzz.status
rm -f "$fuzz_status"
cmake --preset asan -DCLIQO_KUBE_BIN_DIR="$CLIQO_KUBE_BIN_DIR" -DCLIQO_KUBE_NODE_BIN_DIR="$CLIQO_KUBE_NODE_BIN_DIR" \
  -DCLIQO_KPBGEN="$CLIQO_KPBGEN" -DCLIQO_FUZZ_STATUS="$fuzz_status" \
  -DCLIQO_IMAGE_AGENT_DIR="$PWD/build/release/src" >/dev/null
nice -n 10 cmake --build --preset asan
# The fuzz smoke runs go in the background at the lowest priority, into what the e2e lanes leave idle of the
# cores (about a fifth of them over the suite); the test fuzz.smoke waits for their status file and fails
# with their log. Run before the suite, between cliqo's build and the control plane's end, they had been
# the last step before it (a cold run here: the harnesses' build 36 s and their runs 51 s, about 150
# CPU-s, and the suite started 87 s after the control plane's build had ended). In the cold run after this
# change the suite started at 427 s instead of 594, and the fuzz runs ended about 14 minutes into it.
step "fuzz smoke runs (clang libFuzzer), in the background while the suite runs (fuzz.smoke waits for them)"
cmake --preset fuzz -DCLIQO_KUBE_BIN_DIR= -DCLIQO_KPBGEN="$CLIQO_KPBGEN" >/dev/null
set -m
# Two at a time: each harness is one single-threaded process (50,000 runs or 120 s: fuzz/CMakeLists.txt).
status_of "$fuzz_status" build/fuzz.log nice -n 19 bash -c \
  'cmake --build --preset fuzz --target fuzzers && ctest --test-dir build/fuzz -L fuzz --output-on-failure -j2' &
fuzz_job=$!
set +m
trap 'kill -TERM -- "-$kube_build" "-$fuzz_job" 2>/dev/null || true' EXIT
step "waiting for the Kubernetes control plane's build"
until [ -s "$kube_status" ]; do
  kill -0 "$kube_build" 2>/dev/null || { echo "the background build ended without a status" >&2; exit 1; }
  sleep 2
done
grep -v '\.\.\. [0-9]*s elapsed' build/kube-build.log | sed 's/^/    /' || true
[ "$(cat "$kube_status")" = ok ] || { tail -30 build/kube-build.log; echo "the control plane's build $(cat "$kube_status")" >&2; exit 1; }
step "running the test suite"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
rc=0
# Three at a time: the two e2e lanes (two groups side by side, one test at a time in each; RESOURCE_LOCK
# cliqo_e2e_lane1..2, CLIQO_E2E_LANES in tests/e2e/e2e.cmake) and the unit, lint and CLI tests beside them.
ctest --test-dir build/asan --output-on-failure --timeout 900 -j3 "$@" || rc=$?
# (not in CTest's own words: what reads the suite's summary line must find the suite's, not the fuzzers')
if [ -s "$fuzz_status" ]; then
  # libFuzzer's last line per harness, "Done N runs in S second(s)": fewer than 50,000 is the time budget.
  short=$(awk '/^Done [0-9]+ runs in/ && $2 < 50000 { n++ } END { print n + 0 }' \
    build/fuzz/Testing/Temporary/LastTest.log 2>/dev/null || echo 0)
  echo "    fuzz smoke runs: $(cat "$fuzz_status"), $(grep -c 'Test  *#[0-9]*: fuzz\..* Passed' build/fuzz.log || true)" \
    "harnesses passed, $short of them stopped by the 120 s budget before 50,000 inputs (build/fuzz.log)"
fi
step "done (exit $rc)"
exit "$rc"
