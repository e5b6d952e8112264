#!/usr/bin/env bash
# Every shell program in the tree must at least parse.
set -euo pipefail
cd "$1"
n=0
while IFS= read -r f; do
  if head -1 "$f" | grep -q 'bash'; then
    bash -n "$f"
    n=$((n + 1))
  fi
done < <(git ls-files | grep -vE '\.(c|h|md|json|yaml|yml|txt|cmake)$' | grep -v CMakeLists)
[ "$n" -gt 0 ] || { echo "no shell programs found"; exit 1; }
echo "shell: $n programs parse"
