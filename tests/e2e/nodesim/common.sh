# shellcheck shell=bash disable=SC2034
# Helpers shared by the node simulator's e2e tests (sourced after ../lib.sh).
c=cluster-1
NODES=(cluster-1-node-0 cluster-1-node-1 cluster-1-node-2)

# jp OBJECT JSONPATH [kubectl args...]: one field with kubectl's jsonpath.
jp() { local o=$1 p=$2; shift 2; jpath "$c" "$p" "$o" "$@"; }
node_ready() { [ "$(jp "node/$1" '{.status.conditions[?(@.type=="Ready")].status}')" = "${2:-True}" ]; }
pod_phase_is() { [ "$(jp "pod/$2" '{.status.phase}' -n "$1")" = "$3" ]; }
# in_cidr IP CIDR
in_cidr() { python3 -c 'import ipaddress,sys; sys.exit(0 if ipaddress.ip_address(sys.argv[1]) in ipaddress.ip_network(sys.argv[2]) else 1)' "$1" "$2"; }
# running_count NS: pods of the namespace in phase Running with every container ready.
running_count() {
  kc "$c" -n "$1" get pods -o json | python3 -c '
import json, sys
items = json.load(sys.stdin)["items"]
print(sum(1 for p in items if p["status"].get("phase") == "Running"
          and all(s.get("ready") for s in p["status"].get("containerStatuses", []))))'
}
# check_ips NS: every pod IP unique and inside its node's podCIDR; prints the number of pods checked.
check_ips() {
  local nodes
  nodes=$(kget "$c" nodes)
  kc "$c" -n "$1" get pods -o json | python3 -c '
import ipaddress, json, sys
nodes = {n["metadata"]["name"]: n for n in json.loads(sys.argv[1])["items"]}
pods = [p for p in json.load(sys.stdin)["items"] if p["status"].get("podIP")]
ips = [p["status"]["podIP"] for p in pods]
dups = {ip for ip in ips if ips.count(ip) > 1}
if dups: sys.exit("duplicate pod IPs: %s" % sorted(dups))
for p in pods:
    n = nodes[p["spec"]["nodeName"]]
    if ipaddress.ip_address(p["status"]["podIP"]) not in ipaddress.ip_network(n["spec"]["podCIDR"]):
        sys.exit("%s: IP %s outside %s" % (p["metadata"]["name"], p["status"]["podIP"], n["spec"]["podCIDR"]))
    addr = [a["address"] for a in n["status"]["addresses"] if a["type"] == "InternalIP"][0]
    if p["status"].get("hostIP") != addr: sys.exit("%s: hostIP %s, want %s" % (p["metadata"]["name"], p["status"].get("hostIP"), addr))
print(len(pods))' "$nodes"
}
# wait_sa NS: the default ServiceAccount of NS on cluster c, with its token (lib.sh: before the first pod there).
wait_sa() { wait_default_sa "$c" "$1"; }
# fresh_ns CLUSTER NS: creates the namespace, after waiting for a previous run's to be gone.
fresh_ns() {
  local cl=$1 n=$2
  gone_ns() { ! kc "$cl" get namespace "$n" >/dev/null 2>&1; }
  wait_for 90 "namespace $n of an earlier run deleted" gone_ns
  kc "$cl" create namespace "$n" >/dev/null
}
