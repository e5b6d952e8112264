#!/usr/bin/env bash
# tests/lint/check-docs-selftest.sh: check-docs.sh passes on a small tree whose docs name what it has, and fails,
# naming the culprit, on each kind of drift: a subcommand or a group left out, one named that does not exist,
# an unknown e2e test or tests/e2e folder.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

mkdir -p "$t/docs" "$t/deploy" "$t/tests/e2e/alpha" "$t/tests/e2e/beta"
cat >"$t/cliqoctl" <<'EOF'
#!/bin/sh
printf 'Usage: cliqoctl <command> [options]\n\nCommands:\n  install   Install\n  add       Peer\n  dev       Local\n\nRun it.\n'
EOF
chmod +x "$t/cliqoctl"
good_arch() {
  cat <<'EOF'
| Program | Source | Role |
|---|---|---|
| `cliqoctl` | `src/cli/` | The tool, a table in `cliqoctl.c`: `install`, `add`, and `dev` (local). |

* `tests/e2e/<group>/` (alpha,
  beta): each group runs on an environment (`e2e.<env>.up`).
EOF
}
reset() {
  printf 'e2e.alpha.up\ne2e.alpha.one\ne2e.alpha.down\ne2e.beta.up\ne2e.beta.two\ne2e.beta.down\ne2e.single.up\ne2e.single.down\n' \
    >"$t/tests.txt"
  good_arch >"$t/docs/architecture.md"
  printf '# r\n\n```sh\ncliqoctl install\n$ cliqoctl add x\n```\n' >"$t/README.md"
  printf 'See `cliqoctl dev up` and e2e.alpha.one in tests/e2e/beta/.\n' >"$t/deploy/README.md"
}
n=0
# expect_fail WHAT PATTERN: check-docs fails and says PATTERN.
expect_fail() {
  local out
  if out=$("$here/check-docs.sh" "$t" "$t/cliqoctl" "$t/tests.txt" 2>&1); then
    echo "check-docs-selftest: FAIL: passed with $1" >&2
    exit 1
  fi
  grep -qF -- "$2" <<<"$out" || { echo "check-docs-selftest: FAIL: $1: expected '$2' in: $out" >&2; exit 1; }
  n=$((n + 1))
  reset
}

reset
"$here/check-docs.sh" "$t" "$t/cliqoctl" "$t/tests.txt" >/dev/null ||
  { echo "check-docs-selftest: FAIL: the consistent tree was refused" >&2; exit 1; }

sed -i 's/`add`, //' "$t/docs/architecture.md"
expect_fail "a subcommand left out of the row" "cliqoctl row does not name: add"
sed -i 's/`dev` (local)/`dev` (local), `frob`/' "$t/docs/architecture.md"
expect_fail "a subcommand in the row that does not exist" "names what does not exist: frob"
printf 'Run `cliqoctl frobnicate`.\n' >>"$t/docs/architecture.md"
expect_fail "a doc naming an unknown subcommand" "'cliqoctl frobnicate' is not a subcommand"
sed -i 's/(alpha,/(/' "$t/docs/architecture.md"
expect_fail "a group left out of the list" "list of e2e groups does not name: alpha"
sed -i 's/  beta)/  beta, gamma)/' "$t/docs/architecture.md"
expect_fail "a group in the list that does not exist" "names what does not exist: gamma"
printf 'e2e.beta.three is slow.\n' >>"$t/README.md"
expect_fail "an unknown e2e test" "e2e.beta.three is not a registered test"
printf 'see tests/e2e/gamma/.\n' >>"$t/README.md"
expect_fail "an unknown tests/e2e folder" "tests/e2e/gamma/ does not exist"
printf 'e2e.gamma.four\n' >>"$t/tests.txt"
expect_fail "a registered group the docs do not name" "does not name: gamma"
echo "check-docs-selftest: the consistent tree passes; $n kinds of drift each refused"
