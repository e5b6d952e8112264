#!/usr/bin/env bash
# Helpers of the deploy group (tests/e2e/deploy/): source after ../lib.sh. One cluster, cluster-1.
DEPLOY_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../deploy" && pwd)
C=cluster-1

# expect_reject DESCRIPTION TEXT command...: the command must fail and its output must contain TEXT (the
# apiserver's message, so that the rejection is the schema's and not some other error).
expect_reject() {
  local d=$1 want=$2 out
  shift 2
  if out=$("$@" 2>&1); then fail "accepted, should be rejected: $d"; fi
  grep -qF -- "$want" <<<"$out" || fail "$d: rejected, but the message lacks '$want': $out"
}

# crd_names: the CRD names, from the file names crds/<group>_<plural>.yaml.
crd_names() {
  local f b
  for f in "$DEPLOY_DIR"/crds/*.yaml; do
    b=$(basename "$f" .yaml)
    printf '%s.%s\n' "${b#*_}" "${b%%_*}"
  done
}

# crds_install: apply every CRD for real, then wait until each is Established and served.
# (one kubectl call for all of them: kubectl wait takes several objects, kubectl get several kinds).
crds_install() {
  local names
  names=$(crd_names)
  kc "$C" apply -f "$DEPLOY_DIR/crds/" >/dev/null
  # shellcheck disable=SC2046 # one word per CRD
  wait_for 60 "CRDs Established" kc "$C" wait --for condition=Established $(sed 's|^|crd/|' <<<"$names") --timeout=2s
  wait_for 60 "CRDs served" kc "$C" get "$(paste -sd, <<<"$names")" --all-namespaces
}

# crds_remove: delete every CRD (and so every object of cliqo's kinds) and wait until they are gone.
crds_remove() {
  kc "$C" delete -f "$DEPLOY_DIR/crds/" --ignore-not-found --wait=true --timeout=120s >/dev/null
}

ns_absent() { ! kc "$C" get namespace "$1" >/dev/null 2>&1; }

# ns_remove NAME...: delete namespaces and wait until they are gone (a Terminating one blocks a re-run).
ns_remove() {
  local n
  for n in "$@"; do kc "$C" delete namespace "$n" --ignore-not-found --wait=false >/dev/null; done
  for n in "$@"; do wait_for 120 "namespace $n deleted" ns_absent "$n"; done
}
