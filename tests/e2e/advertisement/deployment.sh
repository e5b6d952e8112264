#!/usr/bin/env bash
# Deployment mode: the operator runs each virtual kubelet as a Deployment (ServiceAccount, RBAC, a copy of the
# provider's credential mounted from a Secret) instead of inside the agent, all in the agent's namespace: never
# in the tenant namespace, where the provider may write Secrets and could so mint the ServiceAccount's token
# (docs/security.md). Local clusters have no container runtime, so this test reads the command, its arguments
# and the mounted Secret from the Deployment the operator created and starts exactly that process, with the
# Deployment's own ServiceAccount token as its identity (so its RBAC is what is tested). The process keeps the virtual node Ready (Lease renewed); a deleted Deployment is created
# again; when the Advertisement is deleted the process tears down, releases the Advertisement and exits 0.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
T=$(mktemp -d)
VK_PID=
cleanup() {
  local rc=$?
  [ -n "$VK_PID" ] && kill "$VK_PID" 2>/dev/null
  patch_config "$A" '{"spec":{"advertisementConfig":{"ingoingConfig":{"virtualKubeletMode":"Embedded"}}}}'
  if [ "$rc" != 0 ] && [ -f "$T/vk.log" ]; then echo "--- the standalone virtual kubelet's log" >&2; tail -30 "$T/vk.log" >&2; fi
  if [ "$rc" = 0 ]; then wait_all_shared 90; fi
  rm -rf "$T"
  (exit "$rc")
  adv_on_exit
}
trap cleanup EXIT
ensure_agents
ids
wait_all_shared
TNS=$(tenant_of "$P2")
DEP=virtual-kubelet-$P2_ID
DNS=cliqo # where the Deployment mode's objects live
NODE=$(vnode_of "$P2")

say "Deployment mode"
patch_config "$A" '{"spec":{"advertisementConfig":{"ingoingConfig":{"virtualKubeletMode":"Deployment"}}}}'
wait_for 30 "Deployment $DNS/$DEP" kc "$A" get deployment -n "$DNS" "$DEP"
kget "$A" deployment -n "$DNS" "$DEP" >"$T/dep.json"
python3 - "$T/dep.json" "$P2_ID" "$A_ID" "$TNS" <<'EOF' >"$T/args" || fail "the Deployment is not as expected"
import json, sys
d = json.load(open(sys.argv[1]))
peer, home, ns = sys.argv[2], sys.argv[3], sys.argv[4]
pod = d["spec"]["template"]["spec"]
c = pod["containers"][0]
cmd = c["command"] + c.get("args", [])
assert cmd[:2] == ["cliqo-agent", "virtual-kubelet"], cmd
def flag(f):
    return cmd[cmd.index(f) + 1]
assert flag("--peer") == peer and flag("--home-id") == home, cmd
assert flag("--advertisement") == ns + "/advertisement-" + peer, cmd
mount = [m for m in c["volumeMounts"] if m["name"] == "remote-kubeconfig"][0]
vol = [v for v in pod["volumes"] if v["name"] == "remote-kubeconfig"][0]
assert vol["secret"]["secretName"] == "vk-kubeconfig-" + peer, vol
assert flag("--remote-kubeconfig") == mount["mountPath"] + "/kubeconfig", (cmd, mount)
assert pod["serviceAccountName"] == "virtual-kubelet-" + peer
assert c["securityContext"]["runAsNonRoot"] and c["securityContext"]["readOnlyRootFilesystem"]
assert d["metadata"]["namespace"] == "cliqo" and not d["metadata"].get("ownerReferences"), d["metadata"]
print(mount["mountPath"])
print("\n".join(cmd[1:]))
EOF
MOUNT=$(head -1 "$T/args")
mapfile -t ARGS < <(tail -n +2 "$T/args")

say "the mounted Secret and the ServiceAccount's token, materialised"
mkdir -p "$T/mount"
src=$(jpath "$A" '{.data.kubeconfig}' secret -n "$TNS" "vk-kubeconfig-secret-$P2_ID")
wait_for 20 "the credential copied to $DNS" eval \
  "[ \"\$(jpath $A '{.data.kubeconfig}' secret -n $DNS vk-kubeconfig-$P2_ID)\" = \"$src\" ]"
jpath "$A" '{.data.kubeconfig}' secret -n "$DNS" "vk-kubeconfig-$P2_ID" | base64 -d >"$T/mount/kubeconfig"
sa_secret=$(jpath "$A" '{.secrets[0].name}' serviceaccount -n "$DNS" "$DEP")
[ -n "$sa_secret" ] || fail "the ServiceAccount $DEP has no token"
token=$(jpath "$A" '{.data.token}' secret -n "$DNS" "$sa_secret" | base64 -d)
say "the tenant namespace $TNS, where $P2 writes Secrets, holds no ServiceAccount of the virtual kubelet"
[ -z "$(kc "$A" get serviceaccounts -n "$TNS" -o name | grep virtual-kubelet)" ] ||
  fail "a virtual-kubelet ServiceAccount in the tenant namespace: $(kc "$A" get serviceaccounts -n "$TNS" -o name)"
server=$(kc "$A" config view --minify --raw -o jsonpath='{.clusters[0].cluster.server}')
kc "$A" config view --minify --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$T/ca.crt"
"$KUBECTL" config --kubeconfig "$T/local" set-cluster a --server "$server" --certificate-authority "$T/ca.crt" >/dev/null
"$KUBECTL" config --kubeconfig "$T/local" set-credentials vk --token "$token" >/dev/null
"$KUBECTL" config --kubeconfig "$T/local" set-context a --cluster a --user vk >/dev/null
"$KUBECTL" config --kubeconfig "$T/local" use-context a >/dev/null
for i in "${!ARGS[@]}"; do ARGS[$i]=${ARGS[$i]//$MOUNT/$T/mount}; done
[ "$("$KUBECTL" --kubeconfig "$T/local" auth can-i create pods -n default)" = no ] || fail "the Deployment's identity can create pods"
subjects() { jget "$A" '{range .subjects[*]}{.namespace}/{.name} {end}' clusterrolebinding cliqo-virtual-kubelet-local; }
grep -q "$DNS/$DEP" <<<"$(subjects)" || fail "$DEP is not a subject of ClusterRoleBinding cliqo-virtual-kubelet-local: $(subjects)"
[ "$("$KUBECTL" --kubeconfig "$T/local" auth can-i patch nodes 2>/dev/null)" = yes ] || fail "the Deployment's identity cannot patch nodes"

# Exactly that, but its kubelet API on loopback inside this group's port range (tests/ports.tsv): by default
# it listens on every address of port 10250, as it would in its pod.
KLA_ADDR=127.0.0.1:$((CLIQO_DEV_BASE_PORT + 40))
say "run exactly that: cliqo-agent ${ARGS[*]} --kubelet-addr $KLA_ADDR"
"$CLIQO_AGENT" "${ARGS[@]}" --kubeconfig "$T/local" --kubelet-addr "$KLA_ADDR" >"$T/vk.log" 2>&1 &
VK_PID=$!
lease() { jget "$A" '{.spec.renewTime}' lease -n kube-node-lease "$NODE"; }
l0=$(lease)
wait_for 30 "the process renews $NODE's Lease" eval '[ "$(lease)" != "$l0" ] && grep -q "starting the virtual kubelet" '"$T/vk.log"
wait_for 30 "$NODE Ready under the process" node_is "$P2" True ProviderReady

say "a deleted Deployment is created again"
uid=$(jget "$A" '{.metadata.uid}' deployment -n "$DNS" "$DEP")
kc "$A" delete deployment -n "$DNS" "$DEP" --wait=true >/dev/null
wait_for 30 "Deployment $DEP created again" eval "[ -n \"\$(jget $A '{.metadata.uid}' deployment -n $DNS $DEP)\" ] && [ \"\$(jget $A '{.metadata.uid}' deployment -n $DNS $DEP)\" != $uid ]"

say "the Advertisement deleted: the process tears down, releases it and exits 0"
kc "$A" delete advertisement -n "$TNS" "$(adv_of "$P2")" --wait=false >/dev/null
rc=0
wait "$VK_PID" || rc=$?
VK_PID=
[ "$rc" = 0 ] || fail "the standalone virtual kubelet exited $rc"
grep -q "node deleted; virtual kubelet stopped" "$T/vk.log" || fail "the process did not tear the node down"
grep -q "released; exiting" "$T/vk.log" || fail "the process did not release the Advertisement"
if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$T/vk.log"; then cat "$T/vk.log" >&2; fail "sanitizer report"; fi

say "back to Embedded: the Deployments go, the agent runs the virtual kubelets again"
patch_config "$A" '{"spec":{"advertisementConfig":{"ingoingConfig":{"virtualKubeletMode":"Embedded"}}}}'
wait_all_shared 90
wait_for 30 "no virtual-kubelet Deployment left" eval "[ -z \"\$(kc $A get deployments -A -l app.kubernetes.io/name=cliqo-virtual-kubelet -o name)\" ]"
wait_for 30 "no virtual kubelet left in the shared ClusterRoleBinding" eval '[ -z "$(subjects | tr -d " ")" ]'
wait_for 30 "no ServiceAccount or credential copy of the Deployment mode left in $DNS" eval \
  "[ -z \"\$(kc $A get serviceaccounts,secrets -n $DNS -o name | grep -E 'virtual-kubelet-|vk-kubeconfig-')\" ]"
pass "the Deployment's command, run as is with its identity, keeps the node; teardown and exit on deletion"
