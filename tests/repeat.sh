#!/usr/bin/env bash
# tests/repeat.sh GROUP N [--build-dir DIR]: runs the e2e group GROUP (its up, tests and down) N times in a
# row and prints, per test, how many runs failed; the failing runs' output is kept under DIR/repeat/. A test
# that fails by chance shows up here before it stops somebody's work in CI. Exits 1 when any run failed.
set -euo pipefail

usage() {
  cat <<EOF
Usage: tests/repeat.sh GROUP N [--build-dir DIR]

Runs the e2e group GROUP (e2e.GROUP.*: up, every test, down) N times in a row with ctest and prints a table
of runs and failures per test. The output of every failing run is kept in DIR/repeat/GROUP-RUN.log.

  GROUP            an e2e group, e.g. offloading, peering, advertisement (ctest -N -L e2e lists them)
  N                how many runs (1 to 100)
  --build-dir DIR  the configured build with e2e tests (default: build/asan)
  -h, --help       this text
EOF
}

group='' n='' build=build/asan
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --build-dir) [ $# -ge 2 ] || { echo "repeat: --build-dir needs a directory" >&2; exit 2; }; build=$2; shift ;;
    -*) echo "repeat: unknown option $1 (see --help)" >&2; exit 2 ;;
    *)
      if [ -z "$group" ]; then group=$1
      elif [ -z "$n" ]; then n=$1
      else echo "repeat: too many arguments (see --help)" >&2; exit 2; fi ;;
  esac
  shift
done
if [ -z "$group" ] || [ -z "$n" ]; then usage >&2; exit 2; fi
[[ "$group" =~ ^[a-z0-9-]+$ ]] || { echo "repeat: '$group' is not a group name" >&2; exit 2; }
if ! [[ "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ] || [ "$n" -gt 100 ]; then echo "repeat: N must be 1 to 100" >&2; exit 2; fi
[ -f "$build/CTestTestfile.cmake" ] || { echo "repeat: $build is not a configured build directory" >&2; exit 2; }
tests=$(ctest --test-dir "$build" -N -R "^e2e\\.$group\\." | sed -n 's/^ *Test *#[0-9]*: //p')
[ -n "$tests" ] || { echo "repeat: no e2e tests in group '$group' in $build" >&2; exit 2; }

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
logs="$build/repeat"
mkdir -p "$logs"
declare -A fails runs secs
for t in $tests; do fails[$t]=0 runs[$t]=0 secs[$t]=0; done
bad_runs=0
for ((i = 1; i <= n; i++)); do
  out=$(ctest --test-dir "$build" -R "^e2e\\.$group\\." --output-on-failure 2>&1) || true
  failed=0
  while read -r name result time; do
    [ -n "${runs[$name]+x}" ] || continue
    runs[$name]=$((runs[$name] + 1))
    secs[$name]=$(awk -v a="${secs[$name]}" -v b="$time" 'BEGIN { printf "%.1f", a + b }')
    if [ "$result" != Passed ]; then fails[$name]=$((fails[$name] + 1)); failed=1; fi
  done < <(awk '/ Test +#[0-9]+: / {
      for (i = 1; i <= NF; i++) if ($i ~ /^#[0-9]+:$/) name = $(i + 1)
      res = "Failed"
      if ($0 ~ /Passed/) res = "Passed"; else if ($0 ~ /Not Run/) res = "NotRun"; else if ($0 ~ /Timeout/) res = "Timeout"
      print name, res, ($NF == "sec" ? $(NF - 1) : 0) }' <<<"$out")
  if [ "$failed" = 1 ]; then
    bad_runs=$((bad_runs + 1))
    printf '%s\n' "$out" >"$logs/$group-$i.log"
    echo "run $i/$n: FAILED (output in $logs/$group-$i.log)"
  else
    echo "run $i/$n: passed"
  fi
done

printf '\n%-45s %5s %8s %10s\n' "test ($group, $n runs)" runs failures "mean (s)"
for t in $tests; do
  mean=$(awk -v s="${secs[$t]}" -v r="${runs[$t]}" 'BEGIN { printf "%.1f", r ? s / r : 0 }')
  printf '%-45s %5d %8d %10s\n' "$t" "${runs[$t]}" "${fails[$t]}" "$mean"
done
echo "failed runs: $bad_runs of $n"
[ "$bad_runs" = 0 ]
