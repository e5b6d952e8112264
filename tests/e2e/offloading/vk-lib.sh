# Helpers of the virtual kubelet's tests in the offloading group (pods, provider-down, agent-restart,
# mapping): source after ../lib.sh and common.sh, then call `ids`.
#
# OFFLOAD_BY_HAND=1 (the default until the pod webhook is merged): the pods of the tests carry the toleration of
# the virtual node's taint and a node affinity to virtual nodes themselves. With 0 the webhook adds them (the
# NamespaceOffloadings use podOffloadingStrategy Remote, so every pod goes to the provider either way).
OFFLOAD_BY_HAND=${OFFLOAD_BY_HAND:-1}

# The pod spec fragment that sends a pod to the virtual nodes by hand (JSON, for templates).
by_hand_spec() {
  if [ "$OFFLOAD_BY_HAND" = 1 ]; then
    cat <<'JSON'
"tolerations":[{"key":"virtual-node.liqo.io/not-allowed","operator":"Exists","effect":"NoExecute"}],
"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
  {"matchExpressions":[{"key":"liqo.io/type","operator":"In","values":["virtual-node"]}]}]}}},
JSON
  fi
}

# offload NS [MAPPING]: namespace NS on A with its NamespaceOffloading (Remote, MAPPING default DefaultName).
offload() {
  local ns=$1 mapping=${2:-DefaultName}
  kc "$A" create namespace "$ns" >/dev/null 2>&1 || true
  kc "$A" apply -f - >/dev/null <<JSON || fail "cannot create the NamespaceOffloading of $ns"
{"apiVersion":"offloading.liqo.io/v1alpha1","kind":"NamespaceOffloading",
 "metadata":{"name":"offloading","namespace":"$ns"},
 "spec":{"namespaceMappingStrategy":"$mapping","podOffloadingStrategy":"Remote"}}
JSON
}
# The NamespaceMap of A on B (its spec and status).
nsmap_json() { kget "$B" namespacemaps -A | jq -c --arg a "$A_ID" '.items[] | select(.metadata.name == $a)'; }
# remote_ns NS: the namespace B made for NS (empty until asked for).
remote_ns() { nsmap_json | jq -r --arg n "$1" '.spec.desiredMapping[$n] // empty'; }
# cond NS TYPE: the status of B's condition TYPE in the NamespaceOffloading of NS.
cond_field() { # NS TYPE FIELD
  kget "$A" namespaceoffloading offloading -n "$1" 2>/dev/null |
    jq -r --arg b "$B_ID" --arg t "$2" --arg f "$3" '.status.remoteNamespacesConditions[$b][]? | select(.type == $t) | .[$f]'
}
cond() { cond_field "$1" "$2" status; }
cond_reason() { cond_field "$1" "$2" reason; }
# has_key NS: the NamespaceOffloading of NS has B's key in its conditions.
has_key() {
  kget "$A" namespaceoffloading offloading -n "$1" 2>/dev/null |
    jq -e --arg b "$B_ID" '.status.remoteNamespacesConditions[$b] != null' >/dev/null
}
mapped() { [ "$(cond "$1" Ready)" = True ] && [ -n "$(remote_ns "$1")" ] && kc "$B" get namespace "$(remote_ns "$1")" >/dev/null 2>&1; }
wait_mapped() { wait_for "${2:-60}" "namespace $1 offloaded to $B (NamespaceOffloading Ready, remote namespace)" mapped "$1"; }

# unoffload NS...: removes the NamespaceOffloading and the namespace on A of each; waits until B holds nothing of
# them. All are deleted before the first wait, so that their deletions (five seconds at least each: the
# namespace controller's grace period) overlap.
unoffload() {
  local i nss=("$@") rns=()
  for i in "${!nss[@]}"; do
    rns[i]=$(remote_ns "${nss[i]}")
    kc "$A" delete namespaceoffloading offloading -n "${nss[i]}" --ignore-not-found --wait=false >/dev/null 2>&1 || true
    kc "$A" delete namespace "${nss[i]}" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  done
  for i in "${!nss[@]}"; do
    wait_for 90 "namespace ${nss[i]} gone from A" eval "! kc \"$A\" get namespace \"${nss[i]}\" >/dev/null 2>&1"
    [ -z "${rns[i]}" ] ||
      wait_for 90 "namespace ${rns[i]} gone from $B" eval "! kc \"$B\" get namespace \"${rns[i]}\" >/dev/null 2>&1"
    wait_for 30 "entry ${nss[i]} gone from the NamespaceMap" eval "[ -z \"\$(remote_ns \"${nss[i]}\")\" ]"
  done
}

# deployment NS NAME REPLICAS [IMAGE [EXTRA]]: a Deployment whose pods go to B; EXTRA, members of its pods'
# spec ending with a comma ('"nodeSelector":{...},').
deployment() {
  kc "$A" apply -f - >/dev/null <<JSON || fail "cannot create Deployment $1/$2"
{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"$2","namespace":"$1"},
 "spec":{"replicas":$3,"selector":{"matchLabels":{"app":"$2"}},
  "template":{"metadata":{"labels":{"app":"$2"},"annotations":{"e2e.cliqo.io/note":"one"}},
   "spec":{$(by_hand_spec)${5:-}"terminationGracePeriodSeconds":5,
    "containers":[{"name":"c","image":"${4:-nginx:1}"}]}}}}
JSON
}
# bare_pod NS NAME: a pod without controller that goes to B.
bare_pod() {
  kc "$A" apply -f - >/dev/null <<JSON || fail "cannot create pod $1/$2"
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"$2","namespace":"$1","labels":{"app":"$2"}},
 "spec":{$(by_hand_spec)"containers":[{"name":"c","image":"busybox"}]}}
JSON
}
# Counts: home pods Running (and Ready), home pods, pods in the remote namespace of NS on B.
home_running() { kget "$A" pods -n "$1" | jq '[.items[] | select(.status.phase == "Running" and ([.status.conditions[]? | select(.type == "Ready" and .status == "True")] | length) == 1)] | length'; }
home_count() { kget "$A" pods -n "$1" | jq '.items | length'; }
remote_count() { kc "$B" get pods -n "$(remote_ns "$1")" -o json 2>/dev/null | jq '.items | length'; }
all_running() { [ "$(home_running "$1")" = "$2" ] && [ "$(home_count "$1")" = "$2" ] && [ "$(remote_count "$1")" = "$2" ]; }

# pairs_ok NS: every home pod has one remote pod of the same name carrying its UID, and B has no other pod
# there (no duplicate, no orphan). Prints what is wrong.
pairs_ok() {
  local ns=$1 rns home remote
  rns=$(remote_ns "$ns")
  home=$(kget "$A" pods -n "$ns" | jq -c '[.items[] | {n: .metadata.name, u: .metadata.uid}] | sort')
  remote=$(kget "$B" pods -n "$rns" | jq -c --arg a "$A_ID" '[.items[] |
    select(.metadata.labels["virtualkubelet.liqo.io/origin"] == $a) |
    {n: .metadata.name, u: .metadata.labels["offloading.cliqo.io/home-uid"]}] | sort')
  [ "$home" = "$remote" ] && return 0
  echo "home: $home" | cut -c1-400
  echo "remote: $remote" | cut -c1-400
  return 1
}

# Raises (or restores) B's share of its resources, and waits until A's virtual node shows at least PODS pods.
share_percent() {
  patch_config "$B" "{\"spec\":{\"advertisementConfig\":{\"outgoingConfig\":{\"resourceSharingPercentage\":$1}}}}"
}
vnode_pods() { # as a number (the node shows a quantity: "330", "2k")
  local q
  q=$(jget "$A" '{.status.allocatable.pods}' node "$VNODE")
  case "$q" in *k) echo $((${q%k} * 1000)) ;; '') echo 0 ;; *) echo "$q" ;; esac
}
vnode_pods_ge() { [ "$(vnode_pods)" -ge "$1" ]; }
wait_vnode_pods() { wait_for "${2:-60}" "virtual node with at least $1 pods" vnode_pods_ge "$1"; }
