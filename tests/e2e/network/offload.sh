#!/usr/bin/env bash
# An offloaded pod and a home pod through the real tunnel (issue 21's first "Done when" case). cluster-1
# offloads namespace nettest-off to cluster-2 (LocalAndRemote: the pod webhook lets a pod stay home or go to
# the virtual node). In it: `client` and `home` (a web server), bound to cluster-1's real node, and `off`, a
# web server that the scheduler places on the virtual node liqo-<cluster-2> (a nodeSelector on the virtual
# nodes' label), so that its container runs on cluster-2's real node. Then, with independent tools (kubectl
# on both clusters):
# - the client fetches off's page at the IP shown in off's status on cluster-1 (the remote pod's address
#   as remapped on cluster-1), and the remote pod's log shows the client at its address as remapped on
#   cluster-2;
# - the remote pod (kubectl exec on cluster-2) fetches home's page at home's address as remapped on
#   cluster-2, and home's log shows the remote pod at the IP of off's status;
# - Services: the client fetches Service off's ClusterIP on cluster-1 (kube-proxy to the remapped address,
#   then the tunnel); the remote pod fetches the reflected Service home's ClusterIP on cluster-2, whose
#   reflected EndpointSlice holds home at its remapped address.
# The namespace is removed at the end (nothing of it left on cluster-2), as the tests after it expect.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
ONS=nettest-off
cleanup() {
  kc "$A" delete namespaceoffloading offloading -n "$ONS" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  kc "$A" delete namespace "$ONS" --ignore-not-found --wait=false >/dev/null 2>&1 || true
}
trap 'rc=$?; if [ $rc != 0 ]; then kc "$A" get pods -n "$ONS" -o wide >&2 2>&1 || true; kc "$B" get pods -A -o wide >&2 2>&1 || true; cleanup; fi; (exit $rc) || net_on_exit' EXIT
ids
VNODE=liqo-$B_ID
REF=$(awk '$1 == "ref" {print $2}' "$E2E_STATE/realnodes.conf")
off_json() { # name app node-spec-fragment page: a busybox web server on port 8080 saying PAGE
  printf '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "%s", "namespace": "%s", "labels": {"app": "%s"}},
  "spec": {%s, "terminationGracePeriodSeconds": 0, "automountServiceAccountToken": false,
  "containers": [{"name": "main", "image": "%s", "imagePullPolicy": "Never",
    "command": ["sh", "-c", "echo %s >/www/index.html && echo serving && exec httpd -f -vv -p 8080 -h /www"]}]}}' \
    "$1" "$ONS" "$2" "$3" "$REF" "$4"
}
svc_json() { # name: a Service of port 80 to the pods of app NAME on 8080
  printf '{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "%s", "namespace": "%s"},
  "spec": {"selector": {"app": "%s"}, "ports": [{"port": 80, "targetPort": 8080}]}}' "$1" "$ONS" "$1"
}

# 0. cluster-2's Advertisement accepted on cluster-1 (AutoAcceptMax, the default), its virtual node Ready.
vnode_ready() { [ "$(jget "$A" '{.status.conditions[?(@.type=="Ready")].status}' node "$VNODE")" = True ]; }
wait_for 60 "virtual node $VNODE Ready on $A" vnode_ready
t0=${EPOCHREALTIME/./}

# 1. The namespace, offloaded; the two pods and two Services.
ns_gone() { ! kc "$A" get namespace "$ONS" >/dev/null 2>&1; }
wait_for 60 "namespace $ONS of an earlier run deleted" ns_gone
kc "$A" create namespace "$ONS" >/dev/null || fail "cannot create namespace $ONS in $A"
out=$(cq "$A" offload namespace "$ONS" --strategy LocalAndRemote --wait --timeout 60s 2>&1) ||
  fail "cliqoctl offload namespace $ONS failed: $out"
RNS=$(jget "$A" '{.status.remoteNamespaceName}' namespaceoffloading offloading -n "$ONS")
[ -n "$RNS" ] && kc "$B" get namespace "$RNS" >/dev/null 2>&1 || fail "no remote namespace '$RNS' on $B"
sa_ready() { kc "$A" get serviceaccount default -n "$ONS" >/dev/null 2>&1; }
wait_for 30 "default service account in $ONS" sa_ready
NS=$ONS pod_json client "$A-real-1" sleep 3600 | kc "$A" apply -f - >/dev/null || fail "cannot create pod client"
off_json home home "\"nodeName\": \"$A-real-1\"" hello-from-home | kc "$A" apply -f - >/dev/null ||
  fail "cannot create pod home"
off_json off off '"nodeSelector": {"liqo.io/type": "virtual-node"}' hello-from-off | kc "$A" apply -f - >/dev/null ||
  fail "cannot create pod off"
for s in home off; do svc_json "$s" | kc "$A" apply -f - >/dev/null || fail "cannot create service $s"; done
[ "$(jget "$A" '{.spec.nodeName}' pod off -n "$ONS")" = "$VNODE" ] ||
  wait_for 30 "pod off scheduled on $VNODE (it is on '$(jget "$A" '{.spec.nodeName}' pod off -n "$ONS")')" \
    eval '[ "$(jget "$A" "{.spec.nodeName}" pod off -n "$ONS")" = "$VNODE" ]'
running() { [ "$(jget "$1" '{.status.phase}' pod "$2" -n "$3")" = Running ] && [ -n "$(jget "$1" '{.status.podIP}' pod "$2" -n "$3")" ]; }
wait_for 60 "pods client and home Running on $A-real-1" eval 'running "$A" client "$ONS" && running "$A" home "$ONS"'
wait_for 60 "remote pod off Running on $B in $RNS" running "$B" off "$RNS"
wait_for 30 "home pod off Running with an IP" running "$A" off "$ONS"
t1=${EPOCHREALTIME/./}
rnode=$(jget "$B" '{.spec.nodeName}' pod off -n "$RNS")
[ "$rnode" = "$B-real-1" ] || fail "the remote pod runs on '$rnode', want $B-real-1"
cid=$(jget "$B" '{.status.containerStatuses[0].containerID}' pod off -n "$RNS")
[[ $cid == containerd://* ]] || fail "the remote pod's container is '$cid', not containerd's"
HOME_IP=$(jget "$A" '{.status.podIP}' pod home -n "$ONS")
CLIENT_IP=$(jget "$A" '{.status.podIP}' pod client -n "$ONS")
OFF_SHOWN=$(jget "$A" '{.status.podIP}' pod off -n "$ONS")
OFF_REAL=$(jget "$B" '{.status.podIP}' pod off -n "$RNS")
SEEN_A=$(cat "$E2E_STATE/seen-$A")
SEEN_B=$(cat "$E2E_STATE/seen-$B")
[ "$OFF_SHOWN" = "$(xlate "$OFF_REAL" "$SEEN_A")" ] ||
  fail "off's status on $A shows $OFF_SHOWN, want $(xlate "$OFF_REAL" "$SEEN_A") ($OFF_REAL in $SEEN_A)"
HOME_THERE=$(xlate "$HOME_IP" "$SEEN_B")
CLIENT_THERE=$(xlate "$CLIENT_IP" "$SEEN_B")
say "offloaded in $(((t1 - t0) / 1000)) ms: off runs on $rnode at $OFF_REAL, shown on $A as $OFF_SHOWN; home at $HOME_IP, $HOME_THERE on $B; client at $CLIENT_IP, $CLIENT_THERE on $B"

# 2. The client fetches off's page by the IP of off's status; off's server sees it at its address on B.
afetch() { [ "$(kc "$A" exec -n "$ONS" client -- timeout 5 wget -qO- "$1" 2>/dev/null)" = "$2" ]; }
bfetch() { [ "$(kc "$B" exec -n "$RNS" off -- timeout 5 wget -qO- "$1" 2>/dev/null)" = "$2" ]; }
wait_for 20 "client fetches http://$OFF_SHOWN:8080/ (off, on $B)" afetch "http://$OFF_SHOWN:8080/" hello-from-off
grep_q -F "$CLIENT_THERE" <<<"$(kc "$B" logs -n "$RNS" off 2>&1)" ||
  fail "off's server on $B did not log the client at $CLIENT_THERE: $(kc "$B" logs -n "$RNS" off 2>&1 | tail -3)"
say "$A client -> off at $OFF_SHOWN (the IP in its status); off's server saw the client as $CLIENT_THERE"

# 3. The offloaded pod fetches the home pod's page at its address as remapped on B.
wait_for 20 "off (on $B) fetches http://$HOME_THERE:8080/ (home, on $A)" bfetch "http://$HOME_THERE:8080/" hello-from-home
grep_q -F "$OFF_SHOWN" <<<"$(kc "$A" logs -n "$ONS" home 2>&1)" ||
  fail "home's server did not log off at $OFF_SHOWN: $(kc "$A" logs -n "$ONS" home 2>&1 | tail -3)"
say "$B off -> home at $HOME_THERE; home's server saw off as $OFF_SHOWN"

# 4. Services: off's on A (its endpoint is the remapped address, through kube-proxy and the tunnel); home's
# reflected to B (its EndpointSlice reflected with the home pod's address as remapped on B).
vip=$(jget "$A" '{.spec.clusterIP}' service off -n "$ONS")
[ -n "$vip" ] || fail "service off has no ClusterIP on $A"
wait_for 30 "client fetches http://$vip/ (Service off on $A)" afetch "http://$vip/" hello-from-off
say "$A client -> Service off ($vip) -> off on $B"
reflected_eps() {
  kget "$B" endpointslices -n "$RNS" -l kubernetes.io/service-name=home 2>/dev/null |
    jq -r '[.items[] | select(.metadata.labels["liqo.io/reflected"] == "true") | .endpoints[]?.addresses[]] | join(" ")'
}
wait_for 30 "Service home and its EndpointSlice reflected to $B with $HOME_THERE ($(reflected_eps))" \
  eval '[ "$(reflected_eps)" = "$HOME_THERE" ] && kc "$B" get service home -n "$RNS" >/dev/null 2>&1'
rvip=$(jget "$B" '{.spec.clusterIP}' service home -n "$RNS")
[ -n "$rvip" ] || fail "the reflected service home has no ClusterIP on $B"
wait_for 30 "off fetches http://$rvip/ (Service home reflected to $B)" bfetch "http://$rvip/" hello-from-home
t2=${EPOCHREALTIME/./}
say "$B off -> reflected Service home ($rvip, EndpointSlice $HOME_THERE) -> home on $A"
echo "FIGURE offload-to-both-ways-seconds=$(((t2 - t0) / 1000000)).$(((t2 - t0) / 100000 % 10))"

# 5. Unoffloaded: nothing of the namespace left on B.
cleanup
rgone() { ! kc "$B" get namespace "$RNS" >/dev/null 2>&1; }
wait_for 90 "namespace $RNS gone from $B" rgone
wait_for 60 "namespace $ONS gone from $A" ns_gone
check_logs
pass "an offloaded pod on $B's real node and home pods reach each other by their shown and remapped IPs and through Services both ways"
