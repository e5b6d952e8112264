#!/usr/bin/env bash
# The main job: a local multi-cluster demo. Installs what it needs, builds cliqo and the Kubernetes
# binaries (cached after the first run), brings up local clusters with one real node each (a kubelet,
# containerd and kube-proxy in network namespaces of their own; root is needed), installs cliqo on each,
# runs one cliqo-agent per cluster, peers cluster-1 with cluster-2 through the printed `cliqoctl add` command
# and starts each cluster's gateway (`cliqo-agent gateway`, a WireGuard tunnel through wireguard-go) on its
# real node, so that pods of the two clusters (the same pod CIDR, remapped) reach each other.
# cluster-2 then shares 30 % of its free resources with cluster-1: the demo waits until cluster-2's
# Advertisement is Accepted on cluster-1 and the virtual node liqo-<cluster-2 ID> is Ready, and shows it.
# Then cluster-1 offloads namespace demo (strategy Remote) and deploys a web server Deployment with a Service
# and a ConfigMap there; the demo prints where each pod runs (Running on both sides), then a pod on
# cluster-1's real node fetches the page through the Service and the demo prints who answered: a container
# on cluster-2's real node.
# Idempotent: running it again reuses the binaries, the clusters, the agents, gateways and the peering.
# Options: --clusters N (default 2), --down (stop the gateways, agents and clusters, remove all state).
set -euo pipefail
cd "$(dirname "$0")/.."
CLUSTERS=2
DOWN=
while [ $# -gt 0 ]; do
  case "$1" in
    --clusters) CLUSTERS=${2:?}; shift 2 ;;
    --down) DOWN=1; shift ;;
    -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo: unknown option '$1'" >&2; exit 2 ;;
  esac
done
t0=$(date +%s)
step() { printf '\n==> %s (%ss)\n' "$*" "$(($(date +%s) - t0))"; }

[ "$(id -u)" -eq 0 ] ||
  { echo "demo: run it as root: its clusters' real nodes are network and mount namespaces with containerd and a kubelet" >&2; exit 1; }
if [ -n "${CLIQO_DEMO_BIN_DIR:-}" ]; then
  # Tests: the binaries of an existing build (and CLIQO_KUBE_BIN_DIR, CLIQO_KUBE_NODE_BIN_DIR) as they are.
  : "${CLIQO_KUBE_BIN_DIR:?CLIQO_DEMO_BIN_DIR needs CLIQO_KUBE_BIN_DIR}"
  : "${CLIQO_KUBE_NODE_BIN_DIR:?CLIQO_DEMO_BIN_DIR needs CLIQO_KUBE_NODE_BIN_DIR}"
  export CLIQO_KUBE_BIN_DIR CLIQO_KUBE_NODE_BIN_DIR
  BIN=$CLIQO_DEMO_BIN_DIR
elif [ -n "$DOWN" ] && [ -x build/release/src/cliqoctl ]; then
  BIN=$PWD/build/release/src # stopping needs no package and no build
else
  step "installing Debian packages"
  bash scripts/install-deps.sh
  step "Kubernetes binaries (built once from Debian's source package, then cached)"
  CLIQO_KUBE_BIN_DIR=$(bash scripts/build-kube.sh)
  CLIQO_KUBE_NODE_BIN_DIR=$(bash scripts/build-kube.sh --node)
  CLIQO_KPBGEN=$(bash scripts/build-kube.sh --kpbgen)/kpbgen # the informers' protobuf schema
  export CLIQO_KUBE_BIN_DIR CLIQO_KUBE_NODE_BIN_DIR
  step "building cliqo"
  cmake --preset release -DCLIQO_KUBE_BIN_DIR="$CLIQO_KUBE_BIN_DIR" -DCLIQO_KPBGEN="$CLIQO_KPBGEN" >/dev/null
  # only what the demo runs (the tests are scripts/test.sh's); the compiler's words when it fails
  cmake --build --preset release --target cliqoctl cliqo-agent >build/demo-build.log 2>&1 ||
    { tail -40 build/demo-build.log >&2; echo "demo: the build failed (build/demo-build.log)" >&2; exit 1; }
  BIN=$PWD/build/release/src
fi
CLIQOCTL=$BIN/cliqoctl
AGENT=$BIN/cliqo-agent
export CLIQO_NODESIM=$BIN/cliqo-nodesim
BASE=${CLIQO_DEV_BASE_PORT:-16400}
STATE=${CLIQO_DEV_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/cliqo/dev}
export CLIQO_DEV_DIR=$STATE CLIQO_DEV_BASE_PORT=$BASE
kcfg() { echo "$STATE/cluster-$1/kubeconfig"; }
# An agent runs while its pid file names a live cliqo-agent process, or its supervisor lives (it is about to
# start the agent again).
pid_named() { # FILE WORD: the file names a live process whose command line has WORD
  local pid
  [ -f "$1" ] && pid=$(cat "$1") && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -- "$2" >/dev/null
}
agent_running() {
  pid_named "$STATE/cluster-$1/agent.pid" cliqo-agent || pid_named "$STATE/cluster-$1/agent.supervisor.pid" __supervise
}
gateway_running() {
  pid_named "$STATE/cluster-$1/gateway.pid" cliqo-agent || pid_named "$STATE/cluster-$1/gateway.supervisor.pid" __supervise
}
# Each agent and gateway runs under the dev environment's supervisor, which starts it again when it exits
# (with a backoff, as a kubelet restarts a container): agent.pid names the agent, agent.supervisor.pid its
# supervisor (gateway.pid, gateway.supervisor.pid the same for the gateway).
SUPERVISE=(bash "$(dirname "$0")/../src/devenv/cliqo-devenv" __supervise)
# stop_daemons NAME: every cluster's NAME (agent or gateway), its supervisor first (which passes SIGTERM on
# and waits: a gateway then takes its tunnel, routes and rules down), then the daemon if it still runs.
stop_daemons() {
  local f pid
  for f in "$STATE"/cluster-*/"$1".supervisor.pid "$STATE"/cluster-*/"$1".pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
    rm -f "$f"
  done
}

if [ -n "$DOWN" ]; then
  step "stopping the gateways, the agents and the clusters"
  stop_daemons gateway
  stop_daemons agent
  "$CLIQOCTL" dev down
  exit 0
fi

step "bringing up $CLUSTERS local clusters with one real node each (kubelet, containerd, kube-proxy)"
"$CLIQOCTL" dev up --clusters "$CLUSTERS" --nodes 0 --real-nodes 1
# The clusters live in network namespaces (docs/dataplane.md, section 1): their API servers call the agents'
# webhooks and kubelet API at this side of each cluster's link, <link>.<i>.1.
LINK=$(awk '$1 == "link" {print $2}' "$STATE/realnodes.conf")
REF=$(awk '$1 == "ref" {print $2}' "$STATE/realnodes.conf")
PREFIX=$(cat "$STATE/netns.conf")
step "installing cliqo and starting one cliqo-agent per cluster"
for ((i = 1; i <= CLUSTERS; i++)); do
  p=$((BASE + 10 * (i - 1)))
  h=$LINK.$i.1
  "$CLIQOCTL" install --kubeconfig "$(kcfg "$i")" --cluster-name "cluster-$i" \
    --auth-address "127.0.0.1:$((p + 7))" --skip-agent | tail -n 2
  # the pod and service CIDRs of the real nodes, which the peering remaps (every cluster has the same)
  kubectl --kubeconfig "$(kcfg "$i")" patch clusterconfig configuration --type=merge -p \
    "{\"spec\":{\"liqonetConfig\":{\"podCIDR\":\"$(cat "$STATE/cluster-$i/pod-cidr")\",\"serviceCIDR\":\"10.96.0.0/16\"}}}" >/dev/null
  if ! agent_running "$i"; then
    setsid "${SUPERVISE[@]}" "$STATE/cluster-$i/agent.pid" -- "$AGENT" --kubeconfig "$(kcfg "$i")" --http-addr "127.0.0.1:$((p + 6))" \
      --auth-addr "127.0.0.1:$((p + 7))" --identity "demo-agent-$i" \
      --kubelet-addr "$h:$((p + 8))" --node-address "$h" \
      --webhook-addr "$h:$((p + 9))" --webhook-url "https://$h:$((p + 9))" \
      --webhook-client-ca "$STATE/cluster-$i/pki/webhook-client-ca.crt" \
      >>"$STATE/cluster-$i/logs/cliqo-agent.log" 2>&1 </dev/null &
    echo $! >"$STATE/cluster-$i/agent.supervisor.pid"
  fi
  for _ in $(seq 100); do
    curl -fs "http://127.0.0.1:$((p + 6))/readyz" >/dev/null && break
    sleep 0.2
  done
  echo "cluster-$i: agent ready (health and metrics on 127.0.0.1:$((p + 6)), auth on :$((p + 7)), webhooks on $h:$((p + 9)))"
done

step "peering: cluster-2 prints the command, cluster-1 runs it"
ADD=$("$CLIQOCTL" generate-add-command --kubeconfig "$(kcfg 2)")
echo "$ADD" | sed -E 's/--token [0-9a-f]+/--token <hidden>/'
read -r -a add_args <<<"$ADD"
"$CLIQOCTL" "${add_args[@]:1}" --kubeconfig "$(kcfg 1)"
for ((i = 1; i <= 2; i++)); do
  echo "--- cluster-$i"
  "$CLIQOCTL" status --kubeconfig "$(kcfg "$i")"
done

step "the gateways: one WireGuard tunnel between the real nodes of cluster-1 and cluster-2"
# Each runs as a host process inside its gateway node's network and mount namespaces (as the e2e group
# network starts it), listening on the node's link between the clusters (192.168.77.<i>).
for ((i = 1; i <= 2; i++)); do
  if ! gateway_running "$i"; then
    setsid "${SUPERVISE[@]}" "$STATE/cluster-$i/gateway.pid" -- \
      nsenter --net="/run/netns/${PREFIX}${i}n1" --mount="$STATE/mnt/cluster-$i-real-1" \
      "$AGENT" gateway --kubeconfig "$(kcfg "$i")" --leader-elect=false --http-addr 127.0.0.1:18095 \
      --identity "demo-gateway-$i" --gateway-endpoint "192.168.77.$i:51820" --tunnel-interface "${PREFIX}g$i" \
      >>"$STATE/cluster-$i/logs/cliqo-gateway.log" 2>&1 </dev/null &
    echo $! >"$STATE/cluster-$i/gateway.supervisor.pid"
  fi
done
tep_phases() {
  local i
  for ((i = 1; i <= 2; i++)); do
    kubectl --kubeconfig "$(kcfg "$i")" get tunnelendpoints -A -o jsonpath='{.items[*].status.phase}' 2>/dev/null || true
    echo
  done | tr '\n' ' '
}
for _ in $(seq 240); do
  [ "$(tep_phases)" = "Up Up " ] && break
  sleep 0.5
done
[ "$(tep_phases)" = "Up Up " ] ||
  { echo "demo: the tunnels are '$(tep_phases)' after 2 minutes, not Up (see $STATE/cluster-*/logs/cliqo-gateway.log)" >&2; exit 1; }
for ((i = 1; i <= 2; i++)); do
  echo "--- cluster-$i"
  kubectl --kubeconfig "$(kcfg "$i")" get tunnelendpoints -A \
    -o custom-columns='PEER:.spec.clusterID,ENDPOINT:.spec.endpoint,PHASE:.status.phase,HANDSHAKE:.status.lastHandshake'
done

step "cluster-2 shares with cluster-1: Advertisement Accepted, virtual node Ready"
ID2=$(kubectl --kubeconfig "$(kcfg 2)" get configmap -n cliqo cluster-id -o jsonpath='{.data.cluster-id}')
NODE=liqo-$ID2
for _ in $(seq 240); do
  st=$(kubectl --kubeconfig "$(kcfg 1)" get advertisements -A -o \
    jsonpath="{.items[?(@.spec.clusterId==\"$ID2\")].status.advertisementStatus}" 2>/dev/null || true)
  ready=$(kubectl --kubeconfig "$(kcfg 1)" get node "$NODE" \
    -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null || true)
  [ "$st" = Accepted ] && [ "$ready" = True ] && break
  sleep 0.5
done
[ "$st" = Accepted ] && [ "$ready" = True ] ||
  { echo "demo: cluster-2's Advertisement is '$st' and $NODE Ready='$ready' after 2 minutes" >&2; exit 1; }
kubectl --kubeconfig "$(kcfg 1)" get advertisements -A
kubectl --kubeconfig "$(kcfg 1)" get node "$NODE" -o wide
kubectl --kubeconfig "$(kcfg 1)" get node "$NODE" \
  -o jsonpath='{"capacity: "}{.status.capacity}{"\ntaints:   "}{.spec.taints}{"\n"}'
"$CLIQOCTL" status --kubeconfig "$(kcfg 1)" | sed -n '/^SHARING/,$p'

step "offloading namespace demo from cluster-1 to cluster-2 (strategy Remote)"
K1=(kubectl --kubeconfig "$(kcfg 1)")
K2=(kubectl --kubeconfig "$(kcfg 2)")
"${K1[@]}" create namespace demo --dry-run=client -o yaml | "${K1[@]}" apply -f - >/dev/null
"$CLIQOCTL" offload namespace demo --strategy Remote --wait --timeout 120s --kubeconfig "$(kcfg 1)"
RNS=$("${K1[@]}" get namespaceoffloading offloading -n demo -o jsonpath='{.status.remoteNamespaceName}')
echo "demo's pods run on cluster-2 in namespace $RNS"

step "a workload in demo on cluster-1: a web server Deployment of 2 replicas, its Service and a ConfigMap"
# The image is the real nodes' busybox (built locally, never pulled); each pod's page says which pod and node
# served it, with the ConfigMap's greeting (read on cluster-2 from its reflected copy).
"${K1[@]}" apply -n demo -f - <<YAML
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  greeting: "hello from cluster-1"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      terminationGracePeriodSeconds: 1
      automountServiceAccountToken: false
      containers:
        - name: web
          image: $REF
          imagePullPolicy: Never
          command:
            - sh
            - -c
            - echo "\$GREETING; answered by pod \$POD_NAME on node \$NODE_NAME at \$POD_IP" >/www/index.html && exec httpd -f -p 8080 -h /www
          ports: [{containerPort: 8080}]
          readinessProbe:
            httpGet: {path: /, port: 8080}
            periodSeconds: 2
          env:
            - name: GREETING
              valueFrom: {configMapKeyRef: {name: web-config, key: greeting}}
            - name: POD_NAME
              valueFrom: {fieldRef: {fieldPath: metadata.name}}
            - name: NODE_NAME
              valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
            - name: POD_IP
              valueFrom: {fieldRef: {fieldPath: status.podIP}}
          resources:
            requests: {cpu: 50m, memory: 32Mi}
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
YAML
"${K1[@]}" rollout status -n demo deployment/web --timeout=180s
for _ in $(seq 120); do # the copies on cluster-2: the ConfigMap and the Service
  "${K2[@]}" get configmap web-config -n "$RNS" >/dev/null 2>&1 &&
    "${K2[@]}" get service web -n "$RNS" >/dev/null 2>&1 && break
  sleep 0.5
done

step "where each pod runs"
# One row per home pod of cluster-1, with its remote copy on cluster-2 (found by the home UID label).
printf '%-24s %-41s %-8s %-12s| %-24s %-17s %-8s %s\n' "CLUSTER-1 POD" NODE PHASE IP \
  "CLUSTER-2 POD" NODE PHASE IP
"${K2[@]}" get pods -n "$RNS" -o \
  jsonpath='{range .items[*]}{.metadata.labels.offloading\.cliqo\.io/home-uid}{" "}{.metadata.name}{" "}{.spec.nodeName}{" "}{.status.phase}{" "}{.status.podIP}{"\n"}{end}' \
  >"$STATE/remote-pods.txt"
"${K1[@]}" get pods -n demo -o \
  jsonpath='{range .items[*]}{.metadata.uid}{" "}{.metadata.name}{" "}{.spec.nodeName}{" "}{.status.phase}{" "}{.status.podIP}{"\n"}{end}' |
  while read -r uid name node phase ip; do
    remote=$(awk -v u="$uid" '$1 == u {print $2, $3, $4, $5}' "$STATE/remote-pods.txt")
    read -r rname rnode rphase rip <<<"${remote:-- - - -}"
    printf '%-24s %-41s %-8s %-12s| %-24s %-17s %-8s %s\n' "$name" "$node" "$phase" "${ip:--}" \
      "$rname" "$rnode" "$rphase" "$rip"
  done
echo
echo "--- reflected to cluster-2 ($RNS):"
"${K2[@]}" get configmap,service,endpointslices -n "$RNS" -l liqo.io/reflected=true
echo "--- both clusters give their pods 10.244.0.0/16: cluster-1 shows cluster-2's pods at their addresses as"
echo "    remapped by the peering, which the gateways translate in the tunnel."

step "a pod on cluster-1 fetches the page through Service web: answered by a container on cluster-2"
# The client: a pod on cluster-1's real node, in a namespace that is not offloaded.
"${K1[@]}" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: demo-client
  namespace: default
spec:
  nodeName: cluster-1-real-1
  terminationGracePeriodSeconds: 0
  automountServiceAccountToken: false
  containers:
    - {name: client, image: $REF, imagePullPolicy: Never, command: [sleep, infinity]}
YAML
"${K1[@]}" wait -n default pod/demo-client --for=condition=Ready --timeout=60s >/dev/null
VIP=$("${K1[@]}" get service web -n demo -o jsonpath='{.spec.clusterIP}')
fetch() { "${K1[@]}" exec -n default demo-client -- timeout 5 wget -qO- "http://$VIP/" 2>/dev/null || true; }
page=""
for _ in $(seq 60); do
  page=$(fetch)
  [ -n "$page" ] && break
  sleep 1
done
[ -n "$page" ] || { echo "demo: no answer from http://$VIP/ (Service web) within a minute" >&2; exit 1; }
printf '%-30s %-20s %-28s %-10s %-17s %s\n' "FETCHED BY (CLUSTER-1)" URL "ANSWERED BY POD" CLUSTER NODE "POD IP THERE"
for n in 1 2 3; do
  [ "$n" = 1 ] || page=$(fetch)
  # the page: "<greeting>; answered by pod <name> on node <node> at <ip>"
  read -r apod anode aip <<<"$(sed -n 's/.*answered by pod \([^ ]*\) on node \([^ ]*\) at \([^ ]*\).*/\1 \2 \3/p' <<<"$page")"
  acluster=-
  for ((i = 1; i <= CLUSTERS; i++)); do
    kubectl --kubeconfig "$(kcfg "$i")" get node "${anode:-none}" >/dev/null 2>&1 && acluster=cluster-$i
  done
  printf '%-30s %-20s %-28s %-10s %-17s %s\n' "default/demo-client" "http://$VIP/" "${apod:--}" "$acluster" \
    "${anode:--}" "${aip:--}"
done
echo "--- the page: $page"

step "status"
"$CLIQOCTL" dev status
cat <<EOT

The clusters, agents and gateways keep running. To reach a cluster:
  eval "\$($CLIQOCTL dev env --cluster cluster-1)" && kubectl get foreignclusters
cluster-1's scheduler sees cluster-2 as the virtual node $NODE; namespace demo is offloaded there:
  kubectl --kubeconfig $(kcfg 1) get pods -n demo -o wide     # home pods, bound to $NODE
  kubectl --kubeconfig $(kcfg 2) get pods -n $RNS -o wide     # where they really run
  kubectl --kubeconfig $(kcfg 1) exec demo-client -- wget -qO- http://$VIP/   # through the tunnel
Stop everything and remove all state:
  bash scripts/demo.sh --down
EOT
