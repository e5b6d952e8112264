#!/usr/bin/env bash
# check-layers.sh fails on what it is meant to catch: a copy of src/ with, one at a time, an include
# that runs up a layer, one that closes a loop between two features, one of a composition root and one
# from a folder in no layer; the untouched copy passes.
set -euo pipefail
root=$1
check="$root/tests/lint/check-layers.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fresh() { rm -rf "$tmp/src"; cp -r "$root/src" "$tmp/src"; }
expect() { # what pattern
  local out
  if out=$(bash "$check" "$tmp" 2>&1); then
    echo "FAIL: check-layers passed with $1"
    exit 1
  fi
  grep -q -- "$2" <<<"$out" || { echo "FAIL: $1: the output does not say '$2':"; echo "$out"; exit 1; }
  echo "ok: $1 refused"
}
fresh
bash "$check" "$tmp" >/dev/null || { echo "FAIL: the untouched copy of src/ does not pass"; exit 1; }
echo "ok: the untouched copy passes"

fresh # kube (layer 2) including the agent's runtime (layer 5)
sed -i '0,/^#include "kube\/api.h"/s//#include "kube\/api.h"\n#include "agent\/agent.h"/' "$tmp/src/kube/api.c"
expect "an upward include" "src/kube/api.c:[0-9]*: includes agent/agent.h: kube (layer 2) runs up to agent"

fresh # admission includes offloading, which includes admission
printf '#include "offloading/pods.h"\n' >>"$tmp/src/admission/review.c"
expect "a loop between two features" "admission <-> offloading"

fresh # a feature including the composition root
printf '#include "agent/main.c"\n' >>"$tmp/src/offloading/nsof.c"
expect "an include of a composition root" "includes agent/main.c, a composition root"

fresh # a new folder nobody placed
mkdir "$tmp/src/newfeature" && printf '#include "common/log.h"\n' >"$tmp/src/newfeature/x.c"
expect "a folder in no layer" "unit newfeature is in no layer"
echo "check-layers self-test: 5 cases"
