#!/usr/bin/env bash
# The agent deployed as users deploy it (issue 21, point 5): after `unpeer`, on the group's two clusters, cliqo
# is uninstalled and installed again by `cliqoctl install` from its embedded manifests (deploy/), with only the
# image changed (--agent-image: the image of scripts/build-images.sh, imported into the real nodes with
# `cliqoctl dev import`). So the agent and the gateway run as pods, in-cluster, under their ServiceAccounts and
# RBAC. What a user sets on top: the API server URL, auth address and gateway endpoint peers reach (install
# flags), the auth URL with the NodePort of cliqo-auth and the pod CIDR (ClusterConfig). Then, with the CLI and checked with kubectl: cluster-1 peers with
# cluster-2, both TunnelEndpoints come Up (the gateways' pods), a pod of an offloaded namespace runs on
# cluster-2's real node and is Running on cluster-1; then everything is removed (unoffload, unpeer, uninstall)
# and neither the nodes nor the clusters keep anything of it.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
DNS=nettest-deployed # the offloaded namespace
IMG_AGENT=${CLIQO_IMAGE_AGENT:?CLIQO_IMAGE_AGENT must name the cliqo-agent to put in the image}
IMG_BROKER=${CLIQO_IMAGE_BROKER:-}
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
link=$(awk '$1 == "link" {print $2}' "$E2E_STATE/realnodes.conf")
addr() { echo "$link.$(idx "$1").2"; } # the cluster's address, from here and from the other cluster's pods
api_url() { echo "https://$(addr "$1"):$(base_port "$1")"; }
gw_pod_ok() { [ "$(jget "$1" '{.items[0].status.phase}' pods -n cliqo-gateway)" = Running ]; }
agent_ready() { [ "$(jget "$1" '{.status.readyReplicas}' deployment cliqo-agent -n cliqo)" = 1 ]; }
# node_procs CLUSTER: the cliqo-agent and wireguard-go processes in the node's network namespace ("PID NAME").
node_procs() {
  local p n
  for p in /proc/[0-9]*; do
    [ "$p/ns/net" -ef "/run/netns/$(node_netns "$1")" ] 2>/dev/null || continue
    n=$(cat "$p/comm" 2>/dev/null) || continue
    case "$n" in cliqo-agent | wireguard-go) echo "${p#/proc/} $n" ;; esac
  done
  return 0
}
# gw_wg CLUSTER wg-show-args...: `wg show cliqo0 ...` of the gateway's pod. Its userspace API socket is in the
# pod's own /var/run/wireguard, an emptyDir (a tmpfs the kubelet mounts in the node's mount namespace), where
# wg does not look: in the node's namespaces, plus a mount namespace of its own where that directory covers
# /var/run/wireguard.
gw_wg() {
  local c=$1 sock
  shift
  sock=$(in_node "$c" sh -c 'ls "$1"/real-1/kubelet/pods/*/volumes/kubernetes.io~empty-dir/wireguard/cliqo0.sock' \
    sh "$E2E_STATE/$c" 2>/dev/null | head -n 1)
  [ -n "$sock" ] || return 1
  in_node "$c" unshare --mount --propagation private sh -c \
    'mkdir -p /var/run/wireguard && mount --bind "$1" /var/run/wireguard && shift && exec wg show cliqo0 "$@"' \
    sh "${sock%/*}" "$@"
}
on_exit() {
  local rc=$? c
  if [ "$rc" != 0 ]; then
    for c in "${ALL[@]}"; do
      echo "--- $c: pods of cliqo and cliqo-gateway" >&2
      kc "$c" get pods -n cliqo -o wide >&2 2>&1 || true
      kc "$c" get pods -n cliqo-gateway -o wide >&2 2>&1 || true
      echo "--- $c: the agent's log (last lines)" >&2
      kc "$c" logs -n cliqo deployment/cliqo-agent --tail 30 >&2 2>&1 || true
      echo "--- $c: the gateway's log (last lines)" >&2
      kc "$c" logs -n cliqo-gateway deployment/cliqo-gateway --tail 20 >&2 2>&1 || true
    done
  fi
  exit "$rc"
}
trap on_exit EXIT
t0=${EPOCHREALTIME/./}
secs() { local t=${EPOCHREALTIME/./}; echo "$(((t - t0) / 1000000)).$(((t - t0) / 100000 % 10))"; }

say "the agent's image, into the real nodes"
# shellcheck disable=SC2086 # the broker: one word or none
tar=$("$REPO/scripts/build-images.sh" agent "$IMG_AGENT" $IMG_BROKER) || fail "scripts/build-images.sh agent failed"
"$CLIQOCTL" dev import "$tar" >/dev/null || fail "cliqoctl dev import $tar failed"
ref=$(cat "$tar.ref")
for c in "${ALL[@]}"; do
  in_node "$c" ctr --address "$E2E_STATE/$c/real-1/containerd.sock" -n k8s.io images ls -q | grep_q -x "docker.io/$ref" ||
    fail "$c: $ref not in the node's containerd"
done

# Their agents are stopped (`unpeer`): --force takes what finalizers would hold.
say "uninstall (what the host-process tests installed), install with the image $ref ($(secs)s)"
for c in "${ALL[@]}"; do cq "$c" uninstall --force --timeout 60s >"$AGENTS_DIR/uninstall-$c.out" 2>&1 & done
wait || true
for c in "${ALL[@]}"; do
  ! kc "$c" get namespace cliqo >/dev/null 2>&1 || fail "$c: uninstall left namespace cliqo: $(cat "$AGENTS_DIR/uninstall-$c.out")"
  # What a forced uninstall leaves: the virtual nodes no agent deleted.
  kc "$c" delete nodes -l liqo.io/type=virtual-node --wait=false >/dev/null 2>&1 || true
done
# A CRD still being deleted (its last objects finalized) would take the install's copy with it.
crds_gone() { [ -z "$(kc "$A" get crd -l app.kubernetes.io/part-of=cliqo -o name)$(kc "$B" get crd -l app.kubernetes.io/part-of=cliqo -o name)" ]; }
wait_for 60 "cliqo's CRDs gone from both clusters" crds_gone
say "uninstalled ($(secs)s)"
inst=()
for c in "${ALL[@]}"; do
  cq "$c" install --cluster-name "$c" --agent-image "$ref" --api-server-url "$(api_url "$c")" \
    --auth-address "$(addr "$c")" --gateway-endpoint "$(gw_endpoint "$c")" >"$AGENTS_DIR/install-$c.out" 2>&1 &
  inst+=($!)
done
for i in "${!inst[@]}"; do wait "${inst[i]}" || fail "install on ${ALL[i]}: $(cat "$AGENTS_DIR/install-${ALL[i]}.out")"; done
say "installed ($(secs)s)"
for c in "${ALL[@]}"; do
  np=$(jget "$c" '{.spec.ports[0].nodePort}' service cliqo-auth -n cliqo)
  [ -n "$np" ] || fail "$c: Service cliqo-auth has no NodePort"
  patch_config "$c" "{\"spec\":{\"peeringConfig\":{\"authUrl\":\"https://$(addr "$c"):$np\"},\"liqonetConfig\":{\"podCIDR\":\"$(cat "$E2E_STATE/$c/pod-cidr")\",\"serviceCIDR\":\"10.96.0.0/16\"}}}"
done
# Only the image differs from the embedded manifests.
for c in "${ALL[@]}"; do
  [ "$(jget "$c" '{.spec.template.spec.containers[0].image}' deployment cliqo-agent -n cliqo)" = "$ref" ] &&
    [ "$(jget "$c" '{.spec.template.spec.containers[0].image}' deployment cliqo-gateway -n cliqo-gateway)" = "$ref" ] ||
    fail "$c: the Deployments do not run $ref"
done
wait_for 120 "the agents' Deployments ready on both clusters" eval 'agent_ready "$A" && agent_ready "$B"'
wait_for 60 "the gateways' pods Running on both clusters" eval 'gw_pod_ok "$A" && gw_pod_ok "$B"'
for c in "${ALL[@]}"; do
  [ "$(jget "$c" '{.items[0].spec.nodeName}' pods -n cliqo-gateway)" = "$c-real-1" ] ||
    fail "$c: the gateway is not on the node labelled net.liqo.io/gateway=true"
  [ "$(jget "$c" '{.items[0].spec.serviceAccountName}' pods -n cliqo-gateway)" = cliqo-gateway ] ||
    fail "$c: the gateway does not run as its ServiceAccount"
done
say "agents Ready and gateways Running as pods on both clusters ($(secs)s)"

say "peer $A with $B through the CLI"
ids --read
peer_with "$B"
both_up() { tep_up "$A" && tep_up "$B"; }
wait_for 90 "both TunnelEndpoints Up (the gateways' pods)" both_up
# The key was made by the gateway's pod in the gateway's namespace, and is the one its tunnel uses.
for c in "${ALL[@]}"; do
  key=$(jget "$c" '{.data.privateKey}' secret cliqo-wg-key -n cliqo-gateway | base64 -d)
  [ "${#key}" = 44 ] && [ "$(gw_wg "$c" public-key)" = "$(wg pubkey <<<"$key")" ] ||
    fail "$c: the tunnel cliqo0 does not use the key of Secret cliqo-gateway/cliqo-wg-key"
  [ "$(tep_field "$(other "$c")" '{.spec.endpoint}')" = "$(gw_endpoint "$c")" ] ||
    fail "$(other "$c") received another endpoint than $c's --gateway-endpoint"
done
say "peered, both tunnels Up ($(secs)s)"

say "offload $DNS; a pod there runs on $B's real node"
kc "$A" get namespace "$DNS" >/dev/null 2>&1 || kc "$A" create namespace "$DNS" >/dev/null || fail "cannot create namespace $DNS"
out=$(cq "$A" offload namespace "$DNS" --strategy Remote 2>&1) || fail "offload failed: $out"
offloaded() {
  kget "$A" namespaceoffloading offloading -n "$DNS" |
    jq -e --arg b "$B_ID" '[.status.remoteNamespacesConditions[$b][]? | select(.type == "Ready" and .status == "True")] | length == 1' >/dev/null
}
wait_for 60 "namespace $DNS offloaded to $B" offloaded
wait_default_sa "$A" "$DNS"
kc "$A" apply -f - >/dev/null <<JSON || fail "cannot create the pod"
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "offloaded", "namespace": "$DNS"},
 "spec": {"terminationGracePeriodSeconds": 0, "automountServiceAccountToken": false,
  "containers": [{"name": "main", "image": "$(awk '$1 == "ref" {print $2}' "$E2E_STATE/realnodes.conf")",
   "imagePullPolicy": "Never", "command": ["sleep", "3600"]}]}}
JSON
# The pod on B: in the namespace B made for $DNS, with the same name, on B's real node.
remote_ok() {
  kget "$B" pods -A | jq -e --arg n "$B-real-1" '[.items[] | select(.metadata.name == "offloaded"
    and .status.phase == "Running" and .spec.nodeName == $n)] | length == 1' >/dev/null
}
running() {
  [ "$(jget "$A" '{.status.phase}' pod offloaded -n "$DNS")" = Running ] &&
    [ "$(jget "$A" '{.spec.nodeName}' pod offloaded -n "$DNS")" = "liqo-$B_ID" ] && remote_ok
}
wait_for 90 "the pod Running on $A's virtual node and on $B's real node" running
say "the offloaded pod runs on $B-real-1 ($(secs)s)"
both_up || fail "a tunnel is no longer Up"

say "remove: unoffload, unpeer, uninstall"
kc "$A" delete pod offloaded -n "$DNS" --wait=false >/dev/null
cq "$A" unoffload namespace "$DNS" >/dev/null 2>&1 || fail "unoffload failed"
kc "$A" delete namespace "$DNS" --wait=false >/dev/null
out=$(cq "$A" unpeer "$B" --timeout 60s 2>&1) || fail "unpeer failed: $out"
gone_remote() { kget "$B" pods -A | jq -e '[.items[] | select(.metadata.name == "offloaded")] | length == 0' >/dev/null; }
wait_for 60 "the pod gone from $B" gone_remote
gw_peers() { gw_wg "$1" peers | grep -c . || true; }
# The virtual node and B's Advertisement go too (the agent's teardown, whose finalizer an uninstall would
# otherwise leave without its agent).
unpeered() {
  [ -z "$(kc "$A" get tunnelendpoints -A -o name 2>&1)$(kc "$B" get tunnelendpoints -A -o name 2>&1)" ] &&
    [ "$(gw_peers "$A")" = 0 ] && [ "$(gw_peers "$B")" = 0 ] &&
    ! kc "$A" get node "liqo-$B_ID" >/dev/null 2>&1 && [ -z "$(kc "$A" get advertisements -A -o name 2>&1)" ]
}
wait_for 60 "no TunnelEndpoint, WireGuard peer, virtual node or Advertisement left" unpeered
say "unoffloaded and unpeered ($(secs)s)"
pids=()
for c in "${ALL[@]}"; do cq "$c" uninstall --timeout 120s >"$AGENTS_DIR/uninstall-$c.out" 2>&1 & pids+=($!); done
for i in "${!pids[@]}"; do # (what the checks below find is the verdict; a failed uninstall says why here)
  wait "${pids[$i]}" || say "${ALL[$i]}: uninstall failed: $(tail -5 "$AGENTS_DIR/uninstall-${ALL[$i]}.out")"
done
say "uninstall ended ($(secs)s)"
nothing() {
  local c
  for c in "${ALL[@]}"; do
    ! kc "$c" get namespace cliqo >/dev/null 2>&1 && ! kc "$c" get namespace cliqo-gateway >/dev/null 2>&1 &&
      ! in_node "$c" ip link show cliqo0 >/dev/null 2>&1 && [ -z "$(cliqo_routes "$c")" ] && [ -z "$(cliqo_table "$c")" ] || return 1
  done
}
wait_for 60 "no namespace, pod, link, route or table of cliqo left on either cluster" nothing
no_procs() { [ -z "$(node_procs "$A")$(node_procs "$B")" ]; }
wait_for 30 "no cliqo-agent or wireguard-go left in the nodes ($(node_procs "$A") $(node_procs "$B"))" no_procs
echo "FIGURE deployed-seconds=$(secs)"
pass "agent and gateway as pods from deploy/: peered, tunnels Up, a pod offloaded to $B's real node, all removed in $(secs)s"
