#!/usr/bin/env bash
# The house banned-function list (c-conventions rule 9): unbounded or unchecked libc calls.
set -euo pipefail
cd "$1"
banned='\b(strcpy|strcat|sprintf|vsprintf|strtok|strtok_r|atoi|atol|atoll|gets|strncpy|strtol|strtoul|strtoll|strtoull)[[:space:]]*\('
mapfile -t files < <(git ls-files 'src/*.c' 'src/*.h' 'bench/*.c' 'fuzz/*.c' 2>/dev/null)
[ ${#files[@]} -gt 0 ] || { echo "no C files found"; exit 1; }
if grep -nE "$banned" "${files[@]}"; then
  echo "banned functions used (see docs/architecture.md, house style)"
  exit 1
fi
echo "banned: ${#files[@]} files clean"
