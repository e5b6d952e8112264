#!/usr/bin/env bash
# tests/repeat.sh GROUP N [--beside OTHER] [--build-dir DIR]: runs the e2e group GROUP (its up, tests and down)
# N times in a row and prints, per test, how many runs failed (GROUP "all": every e2e group, in CI's lanes); the failing runs' output is kept under
# DIR/repeat/. With --beside, the group OTHER runs over and over beside it meanwhile, as the two e2e lanes of
# CI run two groups side by side, and its table is printed too. A test that fails by chance shows up here
# before it stops somebody's work in CI. Exits 1 when any run failed.
set -euo pipefail

usage() {
  cat <<EOF
Usage: tests/repeat.sh GROUP N [--beside OTHER] [--build-dir DIR] [--lanes LANES]

Runs the e2e group GROUP (e2e.GROUP.*: up, every test, down) N times in a row with ctest and prints a table
of runs and failures per test. The output of every failing run is kept in DIR/repeat/GROUP-RUN.log.

  GROUP            an e2e group, e.g. offloading, peering, advertisement (ctest -N -L e2e lists them),
                   or several run together, comma-separated: the groups on the shared one-cluster
                   environment are single,kube,kuberes,agent,cli,deploy; "all" runs every e2e
                   test as CI does (its lanes side by side, ctest -j LANES) and adds a table per group
  N                how many runs (1 to 100)
  --beside OTHER   meanwhile run the group OTHER over and over beside it (as CI's two e2e lanes do; its
                   last run ends after GROUP's last) and print its table too
  --build-dir DIR  the configured build with e2e tests (default: build/asan)
  --lanes LANES    how many tests ctest runs side by side (default 2 for "all", as the build's
                   CLIQO_E2E_LANES; 1 otherwise); a comma-separated list of groups run with
                   --lanes 2 pairs its groups as CI's lanes do, and gets the per-group table too
  -h, --help       this text
EOF
}

group='' n='' build=build/asan beside= lanes=
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --beside) [ $# -ge 2 ] || { echo "repeat: --beside needs a group" >&2; exit 2; }; beside=$2; shift ;;
    --build-dir) [ $# -ge 2 ] || { echo "repeat: --build-dir needs a directory" >&2; exit 2; }; build=$2; shift ;;
    --lanes) [[ "${2:-}" =~ ^[1-9]$ ]] || { echo "repeat: --lanes needs 1 to 9" >&2; exit 2; }; lanes=$2; shift ;;
    -*) echo "repeat: unknown option $1 (see --help)" >&2; exit 2 ;;
    *)
      if [ -z "$group" ]; then group=$1
      elif [ -z "$n" ]; then n=$1
      else echo "repeat: too many arguments (see --help)" >&2; exit 2; fi ;;
  esac
  shift
done
if [ -z "$group" ] || [ -z "$n" ]; then usage >&2; exit 2; fi
for g in "$group" $beside; do
  [[ "$g" =~ ^[a-z0-9-]+(,[a-z0-9-]+)*$ ]] || { echo "repeat: '$g' is not a group name or a list of them" >&2; exit 2; }
done
[ "$beside" != "$group" ] || { echo "repeat: --beside needs another group than $group" >&2; exit 2; }
[ "$group" != all ] || [ -z "$beside" ] || { echo "repeat: all runs every group: no --beside" >&2; exit 2; }
if ! [[ "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ] || [ "$n" -gt 100 ]; then echo "repeat: N must be 1 to 100" >&2; exit 2; fi
[ -f "$build/CTestTestfile.cmake" ] || { echo "repeat: $build is not a configured build directory" >&2; exit 2; }
# lanes_of GROUP: how many tests ctest runs side by side for GROUP: --lanes (default 2 for all, 1
# otherwise).
lanes_of() {
  if [ -n "$lanes" ]; then echo "$lanes"; elif [ "$1" = all ]; then echo 2; else echo 1; fi
}
# test_regex GROUP: the ctest -R of a group, a list of them, or all.
test_regex() {
  if [ "$1" = all ]; then echo '^e2e\.'; else echo "^e2e\\.(${1//,/|})\\."; fi
}
group_tests() {
  local t
  t=$(ctest --test-dir "$build" -N -R "$(test_regex "$1")" | sed -n 's/^ *Test *#[0-9]*: //p')
  [ -n "$t" ] || { echo "repeat: no e2e tests in group '$1' in $build" >&2; exit 2; }
  printf '%s\n' "$t"
}
tests=$(group_tests "$group")
[ -z "$beside" ] || beside_tests=$(group_tests "$beside")

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
logs="$build/repeat"
mkdir -p "$logs"

# repeat_group GROUP TESTS N|until:FILE TABLE: runs GROUP N times (or until FILE exists, at least once) and
# writes its table to TABLE; returns 1 when any run failed.
repeat_group() {
  local g=$1 gtests=$2 count=$3 table=$4 i out failed name result time bad_runs=0 t mean
  local -A fails runs secs
  for t in $gtests; do fails[$t]=0 runs[$t]=0 secs[$t]=0; done
  for ((i = 1; ; i++)); do
    case "$count" in
      until:*) [ "$i" -eq 1 ] || [ ! -e "${count#until:}" ] || break ;;
      *) [ "$i" -le "$count" ] || break ;;
    esac
    out=$(ctest --test-dir "$build" -R "$(test_regex "$g")" -j "$(lanes_of "$g")" \
      --output-on-failure 2>&1) || true
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
      printf '%s\n' "$out" >"$logs/$g-$i.log"
      echo "$g run $i: FAILED (output in $logs/$g-$i.log)"
    else
      echo "$g run $i: passed"
    fi
  done
  i=$((i - 1))
  {
    printf '\n%-45s %5s %8s %10s\n' "test ($g, $i runs)" runs failures "mean (s)"
    for t in $gtests; do
      mean=$(awk -v s="${secs[$t]}" -v r="${runs[$t]}" 'BEGIN { printf "%.1f", r ? s / r : 0 }')
      printf '%-45s %5d %8d %10s\n' "$t" "${runs[$t]}" "${fails[$t]}" "$mean"
    done
    echo "failed runs of $g: $bad_runs of $i"
    if [ "$g" = all ] || [[ "$g" == *,* ]]; then
      # Per group (e2e.GROUP.TEST; a test outside a group, e2e.GROUP.TEST too, is its own group):
      # runs and the failures of its tests added up.
      printf '\n%-20s %6s %8s %12s\n' group tests failures "mean sum (s)"
      for t in $gtests; do
        mean=$(awk -v s="${secs[$t]}" -v r="${runs[$t]}" 'BEGIN { printf "%.1f", r ? s / r : 0 }')
        echo "$t ${fails[$t]} $mean"
      done | awk '{ split($1, p, "."); g = p[2]; n[g]++; f[g] += $2; s[g] += $3; if (!(g in o)) o[g] = ++k }
        END { for (g in o) order[o[g]] = g
              for (j = 1; j <= k; j++) { g = order[j]; printf "%-20s %6d %8d %12.1f\n", g, n[g], f[g], s[g] } }'
    fi
  } >"$table"
  [ "$bad_runs" = 0 ]
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rc=0
if [ -n "$beside" ]; then
  # Another ctest in the same build: both write Testing/Temporary's logs, which this script does not read.
  repeat_group "$beside" "$beside_tests" "until:$work/done" "$work/beside.txt" &
  bpid=$!
fi
repeat_group "$group" "$tests" "$n" "$work/main.txt" || rc=1
if [ -n "$beside" ]; then
  touch "$work/done"
  wait "$bpid" || rc=1
fi
cat "$work/main.txt"
[ -z "$beside" ] || cat "$work/beside.txt"
exit "$rc"
