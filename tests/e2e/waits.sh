#!/usr/bin/env bash
# tests/e2e/waits.sh FILE [N]: summarises a wait log written by the e2e tests when E2E_WAIT_LOG=FILE is set
# (one line per wait_for: test, seconds since the test started, seconds waited, what it waited for). Prints
# the N longest waits (default 20) and, per test, the total waited, to see where a group's time goes.
#   E2E_WAIT_LOG=/tmp/waits.log ctest --test-dir build/asan -R '^e2e\.offloading\.'; tests/e2e/waits.sh /tmp/waits.log
set -euo pipefail
case "${1:-}" in
  -h | --help | '')
    sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'
    [ -n "${1:-}" ] || exit 2
    exit 0 ;;
esac
f=$1 n=${2:-20}
[ -r "$f" ] || { echo "waits: cannot read $f" >&2; exit 2; }
[[ "$n" =~ ^[0-9]+$ ]] || { echo "waits: N must be a number" >&2; exit 2; }
echo "longest waits (seconds, test, at, what):"
sort -t$'\t' -k3,3 -g -r "$f" | head -n "$n" | awk -F'\t' '{ printf "%7.2f  %-40s +%-7s %s\n", $3, $1, $2, $4 }'
echo
echo "waited per test (seconds, waits, test):"
awk -F'\t' '{ s[$1] += $3; c[$1]++ } END { for (t in s) printf "%7.2f %4d  %s\n", s[t], c[t], t }' "$f" | sort -g -r
