#!/usr/bin/env bash
# fuzz.smoke STATUS-FILE: the result of the fuzz smoke runs that scripts/test.sh builds and runs in the
# background (build/fuzz: every harness of fuzz/, 50,000 runs or 120 s each) while the suite runs. Waits
# for the status file it writes when they end ("ok", or why not) and fails with their log when the build
# or a run failed.
set -euo pipefail
status=${1:?usage: smoke-result.sh STATUS-FILE}
log=${status%.status}.log
deadline=$((SECONDS + 2400))
until [ -s "$status" ]; do
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "the fuzz smoke runs did not end within 2400 s (status file $status)" >&2
    exit 1
  fi
  sleep 2
done
grep -E 'Test +#[0-9]+: fuzz\.|tests passed' "$log" || true
if [ "$(cat "$status")" != ok ]; then
  tail -60 "$log" >&2 || true
  echo "the fuzz smoke runs $(cat "$status")" >&2
  exit 1
fi
