#!/usr/bin/env bash
# The controller-manager's garbage collector deletes dependents whose owner is gone, and only those.
source "$(dirname "$0")/../lib.sh"
c=cluster-2
kc "$c" create namespace e2e-gc >/dev/null
kc "$c" -n e2e-gc create configmap owner-a >/dev/null
kc "$c" -n e2e-gc create configmap owner-b >/dev/null
uid_a=$(kc "$c" -n e2e-gc get configmap owner-a -o jsonpath='{.metadata.uid}')
uid_b=$(kc "$c" -n e2e-gc get configmap owner-b -o jsonpath='{.metadata.uid}')
mk_dep() { # name owner uid
  kc "$c" -n e2e-gc create -f - >/dev/null <<YAML
apiVersion: v1
kind: ConfigMap
metadata:
  name: $1
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: $2, uid: $3}]
YAML
}
gone() { ! kc "$c" -n e2e-gc get "$@" >/dev/null 2>&1; }
has_rs() { [ -n "$(kc "$c" -n e2e-gc get rs -o name)" ]; }
mk_dep dep-of-a owner-a "$uid_a"
mk_dep dep-of-b owner-b "$uid_b"
# A Deployment's ReplicaSet is collected through the same mechanism.
kc "$c" -n e2e-gc create deployment web --image=registry.invalid/web:1 >/dev/null
wait_for 60 "ReplicaSet owned by the Deployment" has_rs

kc "$c" -n e2e-gc delete configmap owner-a >/dev/null
wait_for 60 "dep-of-a collected" gone configmap dep-of-a
kc "$c" -n e2e-gc delete deployment web >/dev/null
wait_for 60 "ReplicaSet collected" eval '! has_rs'
# Give the collector time to (wrongly) act on the other dependent, then check it survived.
sleep 3
kc "$c" -n e2e-gc get configmap dep-of-b >/dev/null || fail "dep-of-b was collected although owner-b exists"
kc "$c" delete namespace e2e-gc --wait=false >/dev/null
pass "dependents collected by ownerReference; unrelated dependent kept"
