#!/usr/bin/env bash
# Every C file of the build compiles as the release preset compiles it: glibc's _FORTIFY_SOURCE, which the
# release and RelWithDebInfo builds turn on (CMakeLists.txt) and the sanitized build cannot (it needs an
# optimising build), marks calls such as read() and write() warn_unused_result, an error with -Werror. The
# test command builds only the sanitized preset, so a test file that ignored a read() once broke the
# release build that the benchmarks use, unseen. Each file of the build's compile_commands.json is
# compiled again at -O2 (the release preset's level: -Og warns where -O2 does not) with _FORTIFY_SOURCE=2,
# to /dev/null, without the sanitizers: about a minute of one CPU.
# Usage: check-fortify.sh BUILD_DIR   (the directory holding compile_commands.json)
set -euo pipefail
db=$1/compile_commands.json
[ -s "$db" ] || { echo "no $db (CMAKE_EXPORT_COMPILE_COMMANDS)"; exit 1; }
cc=""
# First, that the check can fail: an ignored read() must be refused under the same flags.
probe=$(mktemp --suffix=.c)
trap 'rm -f "$probe"' EXIT
printf '#include <unistd.h>\nint probe(void);\nint probe(void) { char b = 0; read(0, &b, 1); return b; }\n' >"$probe"
failed=0 n=0
while IFS= read -r -d '' dir && IFS= read -r -d '' cmd; do
  # The command is the build's own, written by CMake for this tree: split as the shell would.
  eval "set -- $cmd"
  args=()
  while [ $# -gt 0 ]; do
    case "$1" in
      -o | -MF | -MT) shift 2; continue ;;
      -c | -MD | -fsanitize=* | -fno-sanitize-recover=* | -O*) shift; continue ;;
    esac
    args+=("$1")
    shift
  done
  [ -n "$cc" ] || {
    cc=${args[0]}
    if "$cc" -std=c17 -Wall -Werror -O2 -D_FORTIFY_SOURCE=2 -c -o /dev/null "$probe" 2>/dev/null; then
      echo "an ignored read() compiles with _FORTIFY_SOURCE=2: this check would catch nothing"
      exit 1
    fi
  }
  n=$((n + 1))
  if ! (cd "$dir" && "${args[@]}" -O2 -D_FORTIFY_SOURCE=2 -c -o /dev/null 2>&1); then
    failed=$((failed + 1))
  fi
done < <(jq -j '.[] | .directory, "\u0000", .command, "\u0000"' "$db")
[ "$n" -gt 0 ] || { echo "no compile commands in $db"; exit 1; }
if [ "$failed" -gt 0 ]; then
  echo "fortify: $failed of $n files do not compile as the release build compiles them"
  exit 1
fi
echo "fortify: $n files compile with _FORTIFY_SOURCE=2"
