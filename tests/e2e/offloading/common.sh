# Helpers of the offloading group (tests/e2e/offloading/): source after ../lib.sh.
#
# Two clusters: A = cluster-1 (the consumer, home of the workloads) and B = cluster-2 (the provider). `setup`
# installs cliqo on both with short test settings, starts their agents and peers A with B; every test starts
# from that state (B's Advertisement Accepted, virtual node liqo-<B> Ready on A) and leaves it so: it removes
# the namespaces it made and waits until B holds nothing of them.
A=cluster-1
B=cluster-2
PROVIDERS=("$B")
ALL=("$A" "$B")
AGENT_ID_PREFIX=off-agent
# A test-only setting: 8 remote creations in flight per virtual kubelet (96 by default), so that every test
# of the group with more pods than that at once has the others wait their turn (throttled.sh checks it).
agent_extra_flags() { echo --vk-pod-creations 8; }
source "$(dirname "${BASH_SOURCE[0]}")/../agents.sh"
off_on_exit() { agents_on_exit; }

ids() {
  A_ID=$(cluster_id "$A")
  B_ID=$(cluster_id "$B")
  [ -n "$A_ID" ] && [ -n "$B_ID" ] || fail "cluster IDs unknown"
  VNODE="liqo-$B_ID"
}
source "$(dirname "${BASH_SOURCE[0]}")/../pair.sh"
