#!/usr/bin/env bash
# The real nodes of the network group, checked with kubectl: in each of the two clusters the node
# <cluster>-real-1 is Ready with its InternalIP and pod CIDR (the same in both clusters, on purpose); a
# busybox pod runs httpd and gets an IP of the node's block; another pod reaches it over HTTP by that IP
# and through a Service's ClusterIP (kube-proxy); `kubectl logs` and `kubectl exec` reach the real kubelet
# (its serving certificate verified by the API server). Each step says how long it took.
source "$(dirname "$0")/../lib.sh"
TEST_NAME=${TEST_NAME:-e2e.network.nodes}
NS=nettest
REF=$(awk '$1 == "ref" {print $2}' "$E2E_STATE/realnodes.conf")
[ -n "$REF" ] || fail "no image reference in $E2E_STATE/realnodes.conf (was the group brought up with --real-nodes?)"
CLUSTERS=(cluster-1 cluster-2)
trap 'for c in "${CLUSTERS[@]}"; do kc "$c" delete namespace "$NS" --ignore-not-found --wait=false >/dev/null 2>&1 || true; done' EXIT

step_t0=${EPOCHREALTIME/./}
step() { # what was done: the time since the previous step
  local n=${EPOCHREALTIME/./}
  say "$* ($(((n - step_t0) / 1000)) ms)"
  step_t0=$n
}

pod_json() { # name node command...
  local name=$1 node=$2 args="" a
  shift 2
  for a in "$@"; do args+="${args:+, }$(json_str "$a")"; done
  printf '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "%s", "namespace": "%s", "labels": {"app": "%s"}},
  "spec": {"nodeName": "%s", "terminationGracePeriodSeconds": 0, "automountServiceAccountToken": false,
  "containers": [{"name": "main", "image": "%s", "imagePullPolicy": "Never", "command": [%s]}]}}' \
    "$name" "$NS" "$name" "$node" "$REF" "$args"
}
pod_running() { [ "$(jpath "$1" '{.status.phase}' pod "$2" -n "$NS")" = Running ]; }
ns_gone() { ! kc "$1" get namespace "$NS" >/dev/null 2>&1; }
sa_ready() { kc "$1" get serviceaccount default -n "$NS" >/dev/null 2>&1; }
pods_running() { pod_running "$1" web && pod_running "$1" client; }
node_ready() { [ "$(jpath "$1" '{.status.conditions[?(@.type=="Ready")].status}' node "$2")" = True ]; }
# (busybox's timeout, not wget -T: the wget of Debian's static busybox 1.35 dies of SIGSEGV with -T.)
fetch() { # cluster url: the client pod fetches the URL; true when its own web server answered
  [ "$(kc "$1" exec -n "$NS" client -- timeout 2 wget -qO- "$2" 2>/dev/null)" = "hello-from-$1" ]
}

# 1. The nodes: Ready, the InternalIP of their namespace, the pod CIDR of docs/dataplane.md.
for c in "${CLUSTERS[@]}"; do
  node=$c-real-1
  wait_for 30 "$node Ready" node_ready "$c" "$node"
  ip=$(jpath "$c" '{.status.addresses[?(@.type=="InternalIP")].address}' node "$node")
  [ "$ip" = 10.250.0.11 ] || fail "$node has InternalIP '$ip', want 10.250.0.11"
  cidr=$(jpath "$c" '{.spec.podCIDR}' node "$node")
  [ "$cidr" = 10.244.1.0/24 ] || fail "$node has pod CIDR '$cidr', want 10.244.1.0/24"
  [ "$(cat "$E2E_STATE/$c/pod-cidr")" = 10.244.0.0/16 ] || fail "$c's pod CIDR is $(cat "$E2E_STATE/$c/pod-cidr"), want 10.244.0.0/16"
  kver=$(jpath "$c" '{.status.nodeInfo.containerRuntimeVersion}' node "$node")
  case "$kver" in containerd://*) ;; *) fail "$node runs '$kver', not containerd" ;; esac
done
step "both real nodes Ready at 10.250.0.11, pod CIDR 10.244.1.0/24 of 10.244.0.0/16 in both clusters ($kver)"

# 2. A web server and a client in each cluster.
for c in "${CLUSTERS[@]}"; do
  wait_for 60 "$c: namespace $NS of an earlier run deleted" ns_gone "$c"
  kc "$c" create namespace "$NS" >/dev/null || fail "cannot create namespace $NS in $c"
  wait_for 30 "$c: default service account in $NS" sa_ready "$c"
  pod_json web "$c-real-1" sh -c "echo hello-from-$c >/www/index.html && echo serving && exec httpd -f -vv -p 8080 -h /www" |
    kc "$c" apply -f - >/dev/null || fail "cannot create pod web in $c"
  pod_json client "$c-real-1" sleep 3600 | kc "$c" apply -f - >/dev/null || fail "cannot create pod client in $c"
  printf '{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "%s"},
    "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}}' "$NS" |
    kc "$c" apply -f - >/dev/null || fail "cannot create service web in $c"
done
for c in "${CLUSTERS[@]}"; do
  wait_for 60 "$c: pods web and client Running" pods_running "$c"
done
declare -A WEB_IP
for c in "${CLUSTERS[@]}"; do
  WEB_IP[$c]=$(jpath "$c" '{.status.podIP}' pod web -n "$NS")
  cip=$(jpath "$c" '{.status.podIP}' pod client -n "$NS")
  for ip in "${WEB_IP[$c]}" "$cip"; do
    [[ $ip == 10.244.1.* ]] || fail "$c: pod IP '$ip' is not in the node's block 10.244.1.0/24"
  done
done
step "pods Running: web ${WEB_IP[cluster-1]} in cluster-1, ${WEB_IP[cluster-2]} in cluster-2 (the same block)"

# 3. HTTP from the other pod, by pod IP (kubectl exec: the API server to the real kubelet, verified).
for c in "${CLUSTERS[@]}"; do
  out=$(kc "$c" exec -n "$NS" client -- timeout 5 wget -qO- "http://${WEB_IP[$c]}:8080/" 2>&1) ||
    fail "$c: client cannot fetch http://${WEB_IP[$c]}:8080/: $out"
  [ "$out" = "hello-from-$c" ] || fail "$c: http://${WEB_IP[$c]}:8080/ answered '$out', want hello-from-$c"
done
step "kubectl exec client -- wget http://<web pod IP>:8080/: each cluster's own web server answered"

# 4. The same through the Service's ClusterIP (kube-proxy's iptables rules on the node).
for c in "${CLUSTERS[@]}"; do
  vip=$(jpath "$c" '{.spec.clusterIP}' service web -n "$NS")
  [ -n "$vip" ] || fail "$c: service web has no ClusterIP"
  wait_for 30 "$c: http://$vip/ (service web) answers" fetch "$c" "http://$vip/"
done
step "kubectl exec client -- wget http://<ClusterIP>/: answered through kube-proxy"

# 5. kubectl logs and exec against the real kubelet.
for c in "${CLUSTERS[@]}"; do
  out=$(kc "$c" logs -n "$NS" web 2>&1) || fail "$c: kubectl logs web failed: $out"
  grep_q -x serving <<<"$out" || fail "$c: kubectl logs web lacks the line 'serving': $out"
  out=$(kc "$c" exec -n "$NS" web -- cat /www/index.html 2>&1) || fail "$c: kubectl exec web failed: $out"
  [ "$out" = "hello-from-$c" ] || fail "$c: kubectl exec web -- cat answered '$out'"
done
step "kubectl logs web and kubectl exec web -- cat /www/index.html"

pass "real nodes Ready, pods Running in the node's block in both clusters, HTTP by pod IP and ClusterIP, logs and exec"
