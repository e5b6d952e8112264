# Helpers of the security groups (tests/e2e/security/ and secadmit/, docs/security.md): source after ../lib.sh.
#
# Three clusters: A = cluster-1 (a consumer), B = cluster-2 (the provider under attack) and C = cluster-3
# (another consumer of B, the hostile peer). `setup` installs cliqo on all three with short test settings,
# starts their agents, peers A with B until B's virtual node is Ready on A, and peers C with B. Each test
# tries an attack with the credentials a hostile party really holds (C's, A's virtual kubelet's on B, or
# none over the network) and checks that it fails with nothing changed; it leaves the shared state as it
# found it.
A=cluster-1
B=cluster-2
C=cluster-3
PROVIDERS=("$B")
ALL=("$A" "$B" "$C")
AGENT_ID_PREFIX=sec-agent
source "$(dirname "${BASH_SOURCE[0]}")/../agents.sh"
sec_on_exit() { agents_on_exit; }
# sec_cleanup_on_exit FN: when the test exits, FN undoes what it changed (whatever the status; its output
# is dropped), then the agents' logs are shown on failure. FN must be idempotent.
sec_cleanup_on_exit() {
  SEC_CLEANUP=$1
  trap 'sec_rc=$?; "$SEC_CLEANUP" >/dev/null 2>&1 || true; (exit "$sec_rc"); sec_on_exit' EXIT
}

ids() {
  A_ID=$(cluster_id "$A")
  B_ID=$(cluster_id "$B")
  C_ID=$(cluster_id "$C")
  [ -n "$A_ID" ] && [ -n "$B_ID" ] && [ -n "$C_ID" ] || fail "cluster IDs unknown"
  VNODE="liqo-$B_ID"
}
# fc_field CLUSTER PEER_ID JQ: a field of CLUSTER's ForeignCluster of PEER_ID.
fc_field() {
  kget "$1" foreignclusters |
    jq -r --arg id "$2" ".items[] | select(.spec.clusterIdentity.clusterID == \$id) | $3"
}
# tenant_on_b CONSUMER_ID: B's tenant namespace for that consumer.
tenant_on_b() { fc_field "$B" "$1" .status.tenantNamespace.local; }
source "$(dirname "${BASH_SOURCE[0]}")/../pair.sh"
# vk_user CONSUMER_ID: the user name of that consumer's virtual kubelet on B.
vk_user() { echo "system:serviceaccount:$(tenant_on_b "$1"):vk-$1"; }
remote_name_of() { jget "$A" '{.status.remoteNamespaceName}' namespaceoffloading -n "$1" offloading; }
has_remote_name() { [ -n "$(remote_name_of "$1")" ]; }
# offload_ns NS: namespace NS made on A and offloaded (Remote); sets RNS to its namespace on B once B has it.
# Both take pods when it returns (their default ServiceAccounts and tokens: wait_default_sa in lib.sh).
offload_ns() {
  kc "$A" create namespace "$1" >/dev/null || fail "cannot create $1 on $A"
  cq "$A" offload namespace "$1" --strategy Remote >/dev/null || fail "offload $1 failed"
  wait_for 30 "the remote name of $1" has_remote_name "$1"
  RNS=$(remote_name_of "$1")
  wait_for 60 "namespace $RNS on $B" kc "$B" get namespace "$RNS"
  wait_default_sa "$A" "$1"
  wait_default_sa "$B" "$RNS"
}
# unoffload_ns NS: undoes offload_ns (RNS, when set, waited for until gone from B).
unoffload_ns() {
  cq "$A" unoffload namespace "$1" >/dev/null 2>&1
  kc "$A" delete namespace "$1" --ignore-not-found --wait=false >/dev/null
  [ -z "${RNS:-}" ] || wait_for 90 "namespace $RNS gone from $B" eval "! kc \"$B\" get namespace \"$RNS\""
}
