#!/usr/bin/env bash
# tests/lint/check-docs.sh SRC CLIQOCTL E2E_TESTS: the docs name what the tree has, no more and no less.
#   SRC        the repository root
#   CLIQOCTL   the built cliqoctl (its --help is the list of subcommands)
#   E2E_TESTS  a file with the name of every registered e2e test, one a line (written by tests/CMakeLists.txt
#              at configure time; empty when the e2e tests are not registered: then only the subcommands are
#              checked)
# Checks:
#   1. docs/architecture.md's `cliqoctl` row names exactly the subcommands cliqoctl has;
#   2. its `tests/e2e/<group>/` bullet names exactly the e2e groups that have tests (an environment with
#      only its up and down, such as `single`, is not a group);
#   3. every `cliqoctl WORD` in the docs (README.md, deploy/README.md, docs/*.md) names a subcommand;
#   4. every e2e test the docs name (e2e.GROUP.TEST) is registered, and every tests/e2e/DIR/ they name exists.
# Prints each mismatch with where it is; exits 1 when there is any.
set -euo pipefail
[ $# -eq 3 ] || { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
src=$1 cliqoctl=$2 tests_file=$3
cd "$src"
docs=(README.md deploy/README.md docs/*.md)
bad=0
problem() { echo "check-docs: $*" >&2; bad=1; }
# same NAME WANT GOT: WANT and GOT (one word a line) are the same set; else both differences are shown.
same() {
  local missing extra
  missing=$(comm -23 <(sort -u <<<"$2") <(sort -u <<<"$3") | paste -sd' ')
  extra=$(comm -13 <(sort -u <<<"$2") <(sort -u <<<"$3") | paste -sd' ')
  [ -z "$missing" ] || problem "$1 does not name: $missing"
  [ -z "$extra" ] || problem "$1 names what does not exist: $extra"
}

# cliqoctl --help: "Commands:" then "  NAME  description" lines up to a blank line.
subs=$("$cliqoctl" --help | awk '/^Commands:/ {on = 1; next} on && /^$/ {exit} on && /^  [a-z]/ {print $1}')
[ -n "$subs" ] || { echo "check-docs: no subcommand found in '$cliqoctl --help'" >&2; exit 1; }

# 1. The row of the programs' table.
row=$(grep -m1 '^| `cliqoctl` |' docs/architecture.md || true)
[ -n "$row" ] || problem "docs/architecture.md has no | \`cliqoctl\` | row"
named=$(sed -n 's/.*cliqoctl\.c`: //p' <<<"$row" | grep -o '`[a-z][a-z-]*`' | tr -d '`' || true)
same "docs/architecture.md's cliqoctl row" "$subs" "$named"

# 3. Every `cliqoctl WORD` (in code: after a backtick, at a line's start or after "$ ").
while IFS=: read -r file line word; do
  grep -qxF "$word" <<<"$subs" || problem "$file:$line: 'cliqoctl $word' is not a subcommand"
done < <(grep -noE '(`|^|\$ )cliqoctl [a-z][a-z-]*' "${docs[@]}" | sed -E 's/^([^:]*):([0-9]+):.*cliqoctl /\1:\2:/')

if [ ! -s "$tests_file" ]; then
  echo "check-docs: no e2e test registered (CLIQO_KUBE_BIN_DIR unset): e2e groups not checked"
  [ "$bad" = 0 ] || exit 1
  echo "check-docs: $(wc -w <<<"$subs") subcommands named as they are"
  exit 0
fi
groups=$(awk -F. '$3 != "up" && $3 != "down" {print $2}' "$tests_file" | sort -u)
envs=$(awk -F. '{print $2}' "$tests_file" | sort -u)

# 2. The tests bullet: "* `tests/e2e/<group>/` (a, b, c): ..." (the list may wrap).
bullet=$(awk '/^\* `tests\/e2e\/<group>\/` \(/ {on = 1} on {printf "%s ", $0} on && /\)/ {exit}' docs/architecture.md |
  sed -E 's/^[^(]*\(([^)]*)\).*/\1/')
[ -n "$bullet" ] || problem "docs/architecture.md has no * \`tests/e2e/<group>/\` (...) bullet"
same "docs/architecture.md's list of e2e groups" "$groups" "$(tr ', ' '\n\n' <<<"$bullet" | grep -v '^$' || true)"

# 4. Named tests and folders.
while IFS=: read -r file line name; do
  [[ "$name" == *"<"* ]] && continue # a pattern such as e2e.<env>.up
  grep -qxF "$name" "$tests_file" || problem "$file:$line: $name is not a registered test"
done < <(grep -noE 'e2e\.[a-z0-9<>-]+\.[a-z0-9<>-]+' "${docs[@]}")
while IFS=: read -r file line dir; do
  [[ "$dir" == *"<"* ]] && continue
  [ -d "$dir" ] || problem "$file:$line: $dir does not exist"
done < <(grep -noE 'tests/e2e/[a-z0-9<>-]+/' "${docs[@]}")

[ "$bad" = 0 ] || exit 1
echo "check-docs: $(wc -w <<<"$subs") subcommands, $(wc -w <<<"$groups") e2e groups ($(wc -w <<<"$envs") environments) named as they are"
