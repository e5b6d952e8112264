#!/usr/bin/env bash
# Helpers of the cli group (tests/e2e/cli/): source after ../lib.sh. One cluster, cluster-1.
C=cluster-1
KCFG="$E2E_STATE/$C/kubeconfig"
# The group's own ports, beside its cluster's: the auth endpoint the install names and add.sh's HTTPS test
# servers (SRV .. SRV + 9).
SRV=$((${CLIQO_DEV_BASE_PORT:?} + 40))

# cq args...: cliqoctl against the cluster, with the kubeconfig given by flag.
cq() { "$CLIQOCTL" "$@" --kubeconfig "$KCFG"; }

# run_cq RC-VAR OUT-VAR ERR-VAR args...: cliqoctl with its exit code, stdout and stderr captured.
run_cq() {
  local __rc=$1 __out=$2 __err=$3 __tmp
  shift 3
  __tmp=$(mktemp -d)
  set +e
  cq "$@" >"$__tmp/out" 2>"$__tmp/err"
  printf -v "$__rc" '%s' "$?"
  set -e
  printf -v "$__out" '%s' "$(cat "$__tmp/out")"
  printf -v "$__err" '%s' "$(cat "$__tmp/err")"
  rm -rf "$__tmp"
}

# one_error_line TEXT: the text is exactly one "cliqoctl <verb>: error: ..." line.
one_error_line() {
  local n
  n=$(printf '%s\n' "$1" | grep -c 'error:' || true)
  [ "$n" -eq 1 ] || fail "expected one error line, got: $1"
  printf '%s\n' "$1" | grep_q '^cliqoctl [a-z-]*: error: ' || fail "error line has the wrong form: $1"
}

contains() { # DESCRIPTION HAYSTACK NEEDLE
  grep -qF -- "$3" <<<"$2" || fail "$1: '$3' not in: $2"
}

# ensure_installed: cliqo installed without the agent (idempotent).
ensure_installed() {
  cq install --skip-agent --auth-address 127.0.0.1:$SRV >/dev/null 2>&1 || fail "install failed"
}

# make_fc NAME ID [OUTGOING [INCOMING]]: a hand-made ForeignCluster, with conditions when given.
make_fc() {
  local name=$1 id=$2 out=${3:-} in=${4:-} conds=""
  kc "$C" apply -f - >/dev/null <<YAML
apiVersion: discovery.liqo.io/v1alpha1
kind: ForeignCluster
metadata:
  name: $name
  labels:
    discovery.liqo.io/cluster-id: $id
spec:
  clusterIdentity:
    clusterID: $id
    clusterName: $name
YAML
  [ -n "$out" ] && conds="{\"type\":\"OutgoingPeering\",\"status\":\"$out\",\"reason\":\"Test\",\"message\":\"set by the test\",\"lastTransitionTime\":\"$(now_rfc3339)\"}"
  [ -n "$in" ] && conds="${conds:+$conds,}{\"type\":\"IncomingPeering\",\"status\":\"$in\",\"lastTransitionTime\":\"$(now_rfc3339)\"}"
  if [ -n "$conds" ]; then
    kc "$C" patch foreigncluster "$name" --subresource=status --type=merge \
      -p "{\"status\":{\"peeringConditions\":[$conds],\"tenantNamespace\":{\"local\":\"cliqo-tenant-$name-abcdef\"}}}" >/dev/null
  fi
}

# set_condition NAME TYPE STATUS [MESSAGE]: replaces the FC's conditions with one.
set_condition() {
  kc "$C" patch foreigncluster "$1" --subresource=status --type=merge \
    -p "{\"status\":{\"peeringConditions\":[{\"type\":\"$2\",\"status\":\"$3\",\"reason\":\"Test\",\"message\":\"${4:-set by the test}\",\"lastTransitionTime\":\"$(now_rfc3339)\"}]}}" >/dev/null
}

fc_absent() { ! kc "$C" get foreigncluster "$1" >/dev/null 2>&1; }
