#!/usr/bin/env bash
# Every shell program in the tree must at least parse.
set -euo pipefail
cd "$1"
n=0
while IFS= read -r f; do
  if head -1 "$f" | grep 'bash' >/dev/null; then
    bash -n "$f"
    n=$((n + 1))
  fi
done < <(git ls-files | grep -vE '\.(c|h|md|json|yaml|yml|txt|cmake)$' | grep -v CMakeLists)
[ "$n" -gt 0 ] || { echo "no shell programs found"; exit 1; }
# A pipe into `grep -q` under pipefail: grep exits at the first match, cmd may then die of SIGPIPE and the
# pipeline fails although it matched (a flaky false). Use grep_q (tests/e2e/lib.sh) or grep >/dev/null.
bad=$(git ls-files | grep -vE '\.(c|h|md|json|yaml|yml|txt|cmake)$' | grep -v CMakeLists |
  xargs grep -nE '\|[[:space:]]*grep -q' 2>/dev/null || true)
if [ -n "$bad" ]; then
  echo "pipes into grep -q (flaky under pipefail: use grep_q or grep ... >/dev/null):"
  echo "$bad"
  exit 1
fi
echo "shell: $n programs parse"
