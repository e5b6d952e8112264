#!/usr/bin/env bash
# The main job: a local multi-cluster demo. Installs what it needs, builds cliqo and the Kubernetes
# control planes (cached after the first run), brings up local clusters and shows how to reach them.
# Idempotent: running it again reuses the binaries and the clusters that are already up.
# Options: --clusters N (default 2). Stop everything with: build/release/src/cliqoctl dev down
set -euo pipefail
cd "$(dirname "$0")/.."
CLUSTERS=2
while [ $# -gt 0 ]; do
  case "$1" in
    --clusters) CLUSTERS=${2:?}; shift 2 ;;
    -h | --help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo: unknown option '$1'" >&2; exit 2 ;;
  esac
done
t0=$(date +%s)
step() { printf '\n==> %s (%ss)\n' "$*" "$(($(date +%s) - t0))"; }

step "installing Debian packages"
bash scripts/install-deps.sh
step "Kubernetes binaries (built once from Debian's source package, then cached)"
CLIQO_KUBE_BIN_DIR=$(bash scripts/build-kube.sh)
export CLIQO_KUBE_BIN_DIR
step "building cliqo"
cmake --preset release -DCLIQO_KUBE_BIN_DIR="$CLIQO_KUBE_BIN_DIR" >/dev/null
cmake --build --preset release >/dev/null
CLIQOCTL=build/release/src/cliqoctl

step "bringing up $CLUSTERS local clusters"
"$CLIQOCTL" dev up --clusters "$CLUSTERS"
step "each cluster answers"
for ((i = 1; i <= CLUSTERS; i++)); do
  kcfg=$("$CLIQOCTL" dev env --cluster "cluster-$i" | sed -e 's/^export KUBECONFIG=//')
  eval "kcfg=$kcfg"
  echo "--- cluster-$i"
  kubectl --kubeconfig "$kcfg" get namespaces
done
step "status"
"$CLIQOCTL" dev status
cat <<EOT

The clusters keep running. To reach one:
  eval "\$($CLIQOCTL dev env --cluster cluster-1)" && kubectl get ns
Stop everything and remove all state:
  $CLIQOCTL dev down
EOT
