#!/usr/bin/env bash
# cliqoctl behaviour that needs no cluster: help, misuse, version, dev argument checking.
set -uo pipefail
CLIQOCTL=$1
fails=0
check() { # description expected-rc command...
  local d=$1 want=$2 rc
  shift 2
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" -ne "$want" ]; then echo "FAIL: $d: exit $rc, want $want; output: $out"; fails=$((fails + 1)); else echo "ok: $d"; fi
}
contains() { # description needle
  case "$out" in *"$2"*) echo "ok: $1" ;; *) echo "FAIL: $1: '$2' not in: $out"; fails=$((fails + 1)) ;; esac
}
check "--help exits 0" 0 "$CLIQOCTL" --help; contains "help lists dev" "dev "
check "no arguments is misuse" 2 "$CLIQOCTL"
check "unknown command is misuse" 2 "$CLIQOCTL" frobnicate; contains "unknown command named" "unknown command 'frobnicate'"
check "version" 0 "$CLIQOCTL" version; contains "version text" "cliqoctl 0."
check "version -o json" 0 "$CLIQOCTL" version -o json
echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["version"]' && echo "ok: version json parses" ||
  { echo "FAIL: version json"; fails=$((fails + 1)); }
check "version bad arg" 1 "$CLIQOCTL" version --bogus
check "dev --help" 0 "$CLIQOCTL" dev --help; contains "dev help lists up" "up "
check "dev up --help" 0 "$CLIQOCTL" dev up --help
check "dev unknown verb" 1 "$CLIQOCTL" dev sideways; contains "dev unknown verb named" "unknown command 'sideways'"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check "dev up bad count" 1 "$CLIQOCTL" dev up --clusters 0 --state-dir "$tmp/s"; contains "bad count explained" "--clusters must be"
check "dev up bad port" 1 "$CLIQOCTL" dev up --base-port 80 --state-dir "$tmp/s"; contains "bad port explained" "--base-port must be"
check "dev status with no env" 1 "$CLIQOCTL" dev status --state-dir "$tmp/none"; contains "status says none" "no environment"
check "dev env with no env" 1 "$CLIQOCTL" dev env --state-dir "$tmp/none"
check "dev down with no env is fine" 0 "$CLIQOCTL" dev down --state-dir "$tmp/none"
check "dev unknown option" 1 "$CLIQOCTL" dev up --frob; contains "unknown option named" "unknown option '--frob'"
echo "cli basics: $fails failed"
[ "$fails" -eq 0 ]
