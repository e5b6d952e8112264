#!/usr/bin/env bash
# Fails when a C source or header differs from the repository's .clang-format.
set -euo pipefail
cd "$1"
mapfile -t files < <(git ls-files '*.c' '*.h' 2>/dev/null || find src tests bench fuzz -name '*.[ch]')
[ ${#files[@]} -gt 0 ] || { echo "no C files found"; exit 1; }
clang-format --dry-run --Werror "${files[@]}"
echo "format: ${#files[@]} files clean"
