# Helpers of the advertisement group (tests/e2e/advertisement/): source after ../lib.sh.
#
# Four clusters: A = cluster-1 (the consumer) and three providers P1 = cluster-2, P2 = cluster-3,
# P3 = cluster-4. The group's `setup` test installs cliqo on all four, gives them short test settings
# (keepalive 1 s x 3, Advertisements refreshed every 15 s with a 180 s TTL), starts one agent per
# cluster as a local process and peers A with the three providers; `teardown` unpeers, checks that
# both sides are clean, stops the agents and checks their logs. Every test in between starts from
# that state (three Advertisements Accepted, three virtual nodes Ready) and leaves it so.
# Pod CIDRs (dev up --pod-cidr): A 10.200.0.0/16, P1 10.202.0.0/16, P2 10.200.0.0/16 (= A's),
# P3 10.200.16.0/20 (inside A's): P2 and P3 must be remapped on A, P1 not.
A=cluster-1
P1=cluster-2
P2=cluster-3
P3=cluster-4
PROVIDERS=("$P1" "$P2" "$P3")
ALL=("$A" "$P1" "$P2" "$P3")
AGENT_ID_PREFIX=adv-agent
source "$(dirname "${BASH_SOURCE[0]}")/../agents.sh"
adv_on_exit() { agents_on_exit; }

# ---- the protocol's objects ----------------------------------------------------------------------------

# A cluster's ID never changes once cliqo is installed: ids reads them once per test, and id_of (called
# in subshells, several times per poll) answers from there. A check re-reading them cost 3 kubectl calls
# per Advertisement field, about 25 per poll of the acceptance test's state.
# `setup` reads them once after the install (ids --read) and keeps them in $E2E_STATE/cluster-ids for the
# tests after it (4 reads, about 0.8 s, per test otherwise); a run killed before teardown leaves the file,
# which the next run's setup writes again.
declare -A CLUSTER_IDS=()
ids() {
  local f=$E2E_STATE/cluster-ids
  if [ "${1:-}" = --read ] || ! [ -s "$f" ]; then
    A_ID=$(cluster_id "$A")
    P1_ID=$(cluster_id "$P1")
    P2_ID=$(cluster_id "$P2")
    P3_ID=$(cluster_id "$P3")
    printf '%s %s %s %s\n' "$A_ID" "$P1_ID" "$P2_ID" "$P3_ID" >"$f.tmp" && mv "$f.tmp" "$f"
  else
    read -r A_ID P1_ID P2_ID P3_ID <"$f"
  fi
  [ -n "$A_ID" ] && [ -n "$P1_ID" ] && [ -n "$P2_ID" ] && [ -n "$P3_ID" ] || fail "cluster IDs unknown"
  CLUSTER_IDS=([$A]=$A_ID [$P1]=$P1_ID [$P2]=$P2_ID [$P3]=$P3_ID)
  tenants
}
id_of() { if [ -n "${CLUSTER_IDS[$1]:-}" ]; then echo "${CLUSTER_IDS[$1]}"; else cluster_id "$1"; fi; }
vnode_of() { echo "liqo-$(id_of "$1")"; }
# tenant_of PROVIDER: A's tenant namespace for that provider.
# tenant_of PROVIDER: A's tenant namespace for that provider. It never changes while the group's peerings
# last: ids reads all of them in one list read, and tenant_of answers from there (a read each time, in the
# subshell of every adv_field, doubled the reads of each poll); it reads the object before the peering.
declare -A TENANTS=()
tenants() {
  local fcs name tns
  TENANTS=()
  fcs=$(kget "$A" foreignclusters) || return 0
  while read -r name tns; do
    [ -z "$tns" ] || TENANTS[$name]=$tns
  done < <(jq -r '.items[] | "\(.metadata.name) \(.status.tenantNamespace.local // "")"' <<<"$fcs")
}
tenant_of() {
  if [ -n "${TENANTS[$1]:-}" ]; then echo "${TENANTS[$1]}"; else jget "$A" '{.status.tenantNamespace.local}' foreigncluster "$1"; fi
}
adv_of() { echo "advertisement-$(id_of "$1")"; }
adv_field() { # PROVIDER jsonpath: a field of the provider's Advertisement on A
  jget "$A" "$2" advertisement -n "$(tenant_of "$1")" "$(adv_of "$1")"
}
adv_status() { adv_field "$1" '{.status.advertisementStatus}'; }
adv_reason() { adv_field "$1" '{.status.reason}'; }
# adv_status_is PROVIDER STATUS [REASON], node_is PROVIDER READY [REASON]: one read for both fields.
adv_status_is() {
  local s
  s=$(adv_field "$1" '{.status.advertisementStatus}/{.status.reason}')
  [ "${s%%/*}" = "$2" ] && { [ -z "${3:-}" ] || [ "${s#*/}" = "$3" ]; }
}
node_ready() { jget "$A" '{.status.conditions[?(@.type=="Ready")].status}' node "$(vnode_of "$1")"; }
node_reason() { jget "$A" '{.status.conditions[?(@.type=="Ready")].reason}' node "$(vnode_of "$1")"; }
node_is() {
  local s
  s=$(jget "$A" '{.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].reason}' \
    node "$(vnode_of "$1")")
  [ "${s%%/*}" = "$2" ] && { [ -z "${3:-}" ] || [ "${s#*/}" = "$3" ]; }
}
node_gone() { ! kc "$A" get node "$(vnode_of "$1")" >/dev/null 2>&1; }
capacity() { jget "$A" "{.status.capacity.${2//./\\.}}" node "$(vnode_of "$1")"; }
# patch_config CLUSTER JSON: merge patch of the ClusterConfig.
patch_config() { kc "$1" patch clusterconfig configuration --type=merge -p "$2" >/dev/null || fail "cannot patch the ClusterConfig of $1"; }

# all_shared: the group's steady state, from two list reads on A (one per provider and field took about
# 2 s a call, and every test starts with it).
all_shared() {
  local advs nodes
  advs=$(kget "$A" advertisements -A) && nodes=$(kget "$A" nodes) || return 1
  jq -e -n --argjson advs "$advs" --argjson nodes "$nodes" --arg ids "$P1_ID $P2_ID $P3_ID" '
    ($ids | split(" ")) | all(. as $id |
      ([$advs.items[] | select(.metadata.name == "advertisement-" + $id and
        .status.advertisementStatus == "Accepted")] | length == 1) and
      ([$nodes.items[] | select(.metadata.name == "liqo-" + $id) |
        .status.conditions[]? | select(.type == "Ready" and .status == "True")] | length == 1))' >/dev/null
}
wait_all_shared() { wait_for "${1:-60}" "three Advertisements Accepted and three virtual nodes Ready" all_shared; }

# bind_pod NS NAME PROVIDER: a pod in A's namespace NS bound to the provider's virtual node (tolerating its
# taint), as the scheduler would bind it.
bind_pod() {
  apply_pod "$A" "$1" "$2" "  nodeName: $(vnode_of "$3")
  tolerations: [{key: virtual-node.liqo.io/not-allowed, operator: Exists, effect: NoExecute}]
  containers: [{name: c, image: busybox}]"
}
