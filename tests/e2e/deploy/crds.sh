#!/usr/bin/env bash
# Every CRD of deploy/crds/ against the real apiserver: Established with a structural schema, a valid minimal
# object of each kind is accepted, invalid ones are rejected by the schema (server side), defaults are
# applied, unknown fields pruned, the status subresource separates spec and status, printer columns, short
# names, the "cliqo" category and `kubectl explain` work.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
NS=e2e-crds
ID_A=2f1c7a0e-1111-4a2b-9c3d-00000000000a
ID_B=2f1c7a0e-1111-4a2b-9c3d-00000000000b

cleanup() {
  ns_remove "$NS"
  crds_remove
}
trap cleanup EXIT
cleanup # a previous run may have been interrupted

crds_install
for n in $(crd_names); do
  st=$(jpath "$C" '{.status.conditions[?(@.type=="NonStructuralSchema")].status}' "crd/$n")
  [ -z "$st" ] || [ "$st" = False ] || fail "$n: the schema is not structural"
  [ "$(jpath "$C" '{.spec.versions[0].subresources.status}' "crd/$n")" = '{}' ] ||
    fail "$n: no status subresource"
  [ "$(jpath "$C" '{.spec.names.categories[0]}' "crd/$n")" = cliqo ] || fail "$n: not in category cliqo"
done
say "$(crd_names | wc -l) CRDs Established, structural, with status subresources"
kc "$C" create namespace "$NS" >/dev/null

# 1. A valid minimal object of each kind.
kc "$C" create -f - >/dev/null <<YAML
apiVersion: discovery.liqo.io/v1alpha1
kind: ForeignCluster
metadata: {name: cluster-b}
spec: {clusterIdentity: {clusterID: $ID_B}}
---
apiVersion: discovery.liqo.io/v1alpha1
kind: PeeringRequest
metadata: {name: $ID_A, namespace: $NS}
spec:
  clusterIdentity: {clusterID: $ID_A, clusterName: cluster-a}
  namespace: cliqo-tenant-cluster-b-0a1b2c
  kubeConfigRef: {name: pr-$ID_A, namespace: $NS}
  authUrl: https://127.0.0.1:8443
---
apiVersion: discovery.liqo.io/v1alpha1
kind: SearchDomain
metadata: {name: example}
spec: {domain: example.com}
---
apiVersion: sharing.liqo.io/v1alpha1
kind: Advertisement
metadata: {name: advertisement-$ID_B, namespace: $NS}
spec:
  clusterId: $ID_B
  resourceQuota: {hard: {cpu: "2", memory: 4Gi, pods: 110}}
  limitRange: {limits: [{type: Container, max: {cpu: 500m}}]}
  images: [{names: [busybox:1.36], sizeBytes: 4261550}]
  prices: {cpu: "1", memory: 2m}
  kubeConfigRef: {name: vk-kubeconfig-secret-$ID_B, namespace: $NS}
  timestamp: "2024-01-01T00:00:00Z"
  timeToLive: "2024-01-01T00:30:00Z"
---
apiVersion: config.liqo.io/v1alpha1
kind: ClusterConfig
metadata: {name: configuration}
---
apiVersion: net.liqo.io/v1alpha1
kind: NetworkConfig
metadata: {name: net-config-b, namespace: $NS}
spec: {clusterID: $ID_B, podCIDR: 10.244.0.0/16}
---
apiVersion: net.liqo.io/v1alpha1
kind: TunnelEndpoint
metadata: {name: tun-endpoint-b, namespace: $NS}
spec: {clusterID: $ID_B, publicKey: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", endpoint: "192.0.2.1:51820", mtu: 1420}
---
apiVersion: offloading.liqo.io/v1alpha1
kind: NamespaceOffloading
metadata: {name: offloading, namespace: $NS}
---
apiVersion: virtualkubelet.liqo.io/v1alpha1
kind: NamespaceNattingTable
metadata: {name: $ID_B}
spec: {clusterId: $ID_B, nattingTable: {$NS: $NS-remote}, deNattingTable: {$NS-remote: $NS}}
---
apiVersion: virtualkubelet.liqo.io/v1alpha1
kind: NamespaceMap
metadata: {name: $ID_A, namespace: $NS}
spec: {desiredMapping: {app: app-remote}}
YAML
say "a valid object of each of the 10 kinds is accepted"

# 2. Invalid objects are rejected by the apiserver's schema (--validate=false: no client-side check).
bad() { # bad DESCRIPTION MESSAGE YAML
  expect_reject "$1" "$2" kc "$C" create --validate=false -f - <<<"$3"
}
fc() { printf 'apiVersion: discovery.liqo.io/v1alpha1\nkind: ForeignCluster\nmetadata: {name: bad}\nspec: %s\n' "$1"; }
bad "FC without clusterID" "spec.clusterIdentity.clusterID: Required value" "$(fc '{clusterIdentity: {clusterName: x}}')"
bad "FC without spec" "spec: Required value" \
  "$(printf 'apiVersion: discovery.liqo.io/v1alpha1\nkind: ForeignCluster\nmetadata: {name: bad}\n')"
bad "FC bad enum" 'spec.outgoingPeeringEnabled: Unsupported value: "Maybe"' \
  "$(fc "{clusterIdentity: {clusterID: $ID_B}, outgoingPeeringEnabled: Maybe}")"
bad "FC http:// auth URL" "spec.foreignAuthUrl in body should match '^https://" \
  "$(fc "{clusterIdentity: {clusterID: $ID_B}, foreignAuthUrl: 'http://127.0.0.1:8443'}")"
bad "FC bad cluster ID" "spec.clusterIdentity.clusterID in body should match" \
  "$(fc '{clusterIdentity: {clusterID: Not_An_ID}}')"
bad "FC cluster ID too long" "spec.clusterIdentity.clusterID in body should be at most 63 chars long" \
  "$(fc "{clusterIdentity: {clusterID: $(printf 'a%.0s' $(seq 64))}}")"
bad "FC negative ttl" "spec.ttl in body should be greater than or equal to 0" \
  "$(fc "{clusterIdentity: {clusterID: $ID_B}, ttl: -1}")"
bad "ClusterConfig sharing 101%" \
  "spec.advertisementConfig.outgoingConfig.resourceSharingPercentage in body should be less than or equal to 100" \
  "$(printf 'apiVersion: config.liqo.io/v1alpha1\nkind: ClusterConfig\nmetadata: {name: bad}\n%s\n' \
    'spec: {advertisementConfig: {outgoingConfig: {resourceSharingPercentage: 101}}}')"
bad "ClusterConfig bad accept policy" 'Unsupported value: "ManualAccept"' \
  "$(printf 'apiVersion: config.liqo.io/v1alpha1\nkind: ClusterConfig\nmetadata: {name: bad}\n%s\n' \
    'spec: {advertisementConfig: {ingoingConfig: {acceptPolicy: ManualAccept}}}')"
# (discovery lowered the minimum from 30 to 1 so that tests can use TTLs of seconds; docs/discovery.md)
bad "ClusterConfig mDNS ttl 0" "spec.discoveryConfig.ttl in body should be greater than or equal to 1" \
  "$(printf 'apiVersion: config.liqo.io/v1alpha1\nkind: ClusterConfig\nmetadata: {name: bad}\n%s\n' \
    'spec: {discoveryConfig: {ttl: 0}}')"
bad "ClusterConfig unpeer timeout 0" "spec.peeringConfig.unpeerTimeoutSeconds in body should be greater than or equal to 1" \
  "$(printf 'apiVersion: config.liqo.io/v1alpha1\nkind: ClusterConfig\nmetadata: {name: bad}\n%s\n' \
    'spec: {peeringConfig: {unpeerTimeoutSeconds: 0}}')"
bad "PeeringRequest without kubeConfigRef" "spec.kubeConfigRef: Required value" \
  "$(printf 'apiVersion: discovery.liqo.io/v1alpha1\nkind: PeeringRequest\nmetadata: {name: bad, namespace: %s}\n%s\n' \
    "$NS" "spec: {clusterIdentity: {clusterID: $ID_A}, namespace: x}")"
bad "Advertisement without timeToLive" "spec.timeToLive: Required value" \
  "$(printf 'apiVersion: sharing.liqo.io/v1alpha1\nkind: Advertisement\nmetadata: {name: bad, namespace: %s}\n%s\n' \
    "$NS" "spec: {clusterId: $ID_B, kubeConfigRef: {name: s}, timestamp: '2024-01-01T00:00:00Z'}")"
bad "Advertisement bad quantity" "spec.resourceQuota.hard.cpu in body should match" \
  "$(printf 'apiVersion: sharing.liqo.io/v1alpha1\nkind: Advertisement\nmetadata: {name: bad, namespace: %s}\n%s\n' \
    "$NS" "spec: {clusterId: $ID_B, kubeConfigRef: {name: s}, timestamp: '2024-01-01T00:00:00Z',
      timeToLive: '2024-01-01T00:30:00Z', resourceQuota: {hard: {cpu: lots}}}")"
bad "NamespaceOffloading bad strategy" 'Unsupported value: "Everywhere"' \
  "$(printf 'apiVersion: offloading.liqo.io/v1alpha1\nkind: NamespaceOffloading\nmetadata: {name: bad, namespace: %s}\n%s\n' \
    "$NS" 'spec: {podOffloadingStrategy: Everywhere}')"
bad "NamespaceMap with a name longer than a namespace's" "should be at most 63 chars long" \
  "$(printf 'apiVersion: virtualkubelet.liqo.io/v1alpha1\nkind: NamespaceMap\nmetadata: {name: bad, namespace: %s}\nspec: {desiredMapping: {a: %s}}\n' "$NS" "$(printf 'n%.0s' $(seq 70))")"
bad "ClusterConfig perCluster percentage above 100" "should be less than or equal to 100" \
  "$(printf 'apiVersion: config.liqo.io/v1alpha1\nkind: ClusterConfig\nmetadata: {name: bad}\nspec: {advertisementConfig: {outgoingConfig: {perCluster: [{clusterID: x, percentage: 130}]}}}\n')"
bad "ClusterConfig perCluster entry with neither percentage nor resources" "oneOf" \
  "$(printf 'apiVersion: config.liqo.io/v1alpha1\nkind: ClusterConfig\nmetadata: {name: bad}\nspec: {advertisementConfig: {outgoingConfig: {perCluster: [{clusterID: x}]}}}\n')"
bad "NamespaceNattingTable without clusterId" "spec.clusterId: Required value" \
  "$(printf 'apiVersion: virtualkubelet.liqo.io/v1alpha1\nkind: NamespaceNattingTable\nmetadata: {name: bad}\nspec: {}\n')"
bad "TunnelEndpoint without publicKey" "spec.publicKey: Required value" \
  "$(printf 'apiVersion: net.liqo.io/v1alpha1\nkind: TunnelEndpoint\nmetadata: {name: bad, namespace: %s}\n%s\n' \
    "$NS" "spec: {clusterID: $ID_B, endpoint: \"192.0.2.1:51820\", mtu: 1420}")"
bad "ClusterConfig negative grace period" "spec.offloadingConfig.unreachableGraceSeconds in body should be greater than or equal to 0" \
  "$(printf 'apiVersion: config.liqo.io/v1alpha1\nkind: ClusterConfig\nmetadata: {name: bad}\n%s\n' \
    'spec: {offloadingConfig: {unreachableGraceSeconds: -1}}')"
bad "NamespaceOffloading selector with too many values" "values in body should have at most 64 items" \
  "$(printf 'apiVersion: offloading.liqo.io/v1alpha1\nkind: NamespaceOffloading\nmetadata: {name: bad, namespace: %s}\n%s\n' \
    "$NS" "spec: {clusterSelector: {nodeSelectorTerms: [{matchExpressions: [{key: k, operator: In, values: [$(seq -s, -f 'v%g' 65)]}]}]}}")"
bad "NamespaceOffloading selector operator" 'Unsupported value: "Near"' \
  "$(printf 'apiVersion: offloading.liqo.io/v1alpha1\nkind: NamespaceOffloading\nmetadata: {name: bad, namespace: %s}\n%s\n' \
    "$NS" "spec: {clusterSelector: {nodeSelectorTerms: [{matchExpressions: [{key: k, operator: Near}]}]}}")"
expect_reject "NamespaceOffloading status.offloadingPhase enum" 'Unsupported value: "Sideways"' \
  kc "$C" -n "$NS" patch nsof offloading --subresource=status --type=merge -p '{"status":{"offloadingPhase":"Sideways"}}'
expect_reject "NamespaceOffloading condition type enum" 'Unsupported value: "Happy"' \
  kc "$C" -n "$NS" patch nsof offloading --subresource=status --type=merge \
  -p '{"status":{"remoteNamespacesConditions":{"x":[{"type":"Happy","status":"True"}]}}}'
expect_reject "PeeringRequest status.phase enum" 'Unsupported value: "Maybe"' \
  kc "$C" -n "$NS" patch peeringrequest "$ID_A" --subresource=status --type=merge -p '{"status":{"phase":"Maybe"}}'
say "invalid objects are rejected with the schema's messages"

# 3. Defaults and pruning.
get() { kc "$C" get "$@"; }
[ "$(get fc cluster-b -o jsonpath='{.spec.outgoingPeeringEnabled}/{.spec.incomingPeeringEnabled}/{.spec.networkingEnabled}/{.spec.insecureSkipTLSVerify}')" = \
  Auto/Auto/Yes/false ] || fail "ForeignCluster defaults: $(get fc cluster-b -o jsonpath='{.spec}')"
want=30/true/5/AutoAcceptMax/3/20/MyLiqo/_liqo._tcp/local./90/false/Yes/30
got=$(get clusterconfig configuration -o jsonpath='{.spec.advertisementConfig.outgoingConfig.resourceSharingPercentage}/{.spec.advertisementConfig.outgoingConfig.enableBroadcaster}/{.spec.advertisementConfig.ingoingConfig.maxAcceptableAdvertisement}/{.spec.advertisementConfig.ingoingConfig.acceptPolicy}/{.spec.advertisementConfig.keepaliveThreshold}/{.spec.advertisementConfig.keepaliveRetryTime}/{.spec.discoveryConfig.name}/{.spec.discoveryConfig.service}/{.spec.discoveryConfig.domain}/{.spec.discoveryConfig.ttl}/{.spec.discoveryConfig.autojoinUntrusted}/{.spec.peeringConfig.incomingPeeringEnabled}/{.spec.peeringConfig.unpeerTimeoutSeconds}')
[ "$got" = "$want" ] || fail "ClusterConfig defaults: got $got, want $want"
[ "$(get -n "$NS" nsof offloading -o jsonpath='{.spec.namespaceMappingStrategy}/{.spec.podOffloadingStrategy}')" = \
  DefaultName/LocalAndRemote ] || fail "NamespaceOffloading defaults"
[ "$(get searchdomain example -o jsonpath='{.spec.autojoin}')" = false ] || fail "SearchDomain autojoin default"
[ "$(get clusterconfig configuration -o jsonpath='{.spec.offloadingConfig.unreachableGraceSeconds}')" = 300 ] ||
  fail "ClusterConfig offloadingConfig default: $(get clusterconfig configuration -o jsonpath='{.spec.offloadingConfig}')"
# What the agent and the virtual kubelets write in a NamespaceOffloading's status is accepted.
kc "$C" -n "$NS" patch nsof offloading --subresource=status --type=merge -p '{"status":{"offloadingPhase":"Invalid",
  "message":"term 0, expression 0: In and NotIn need at least one value","observedGeneration":1,
  "remoteNamespaceName":"e2e-crds","remoteNamespacesConditions":{"x":[{"type":"OffloadingRequired","status":"True"},
  {"type":"Ready","status":"False","reason":"AlreadyExists","lastTransitionTime":"2024-01-01T00:00:00Z"}]}}}' >/dev/null ||
  fail "the NamespaceOffloading status was refused"
kc "$C" -n "$NS" get nsof -o wide | grep_q 'In and NotIn need at least one value' || fail "no Message column in -o wide"
fc "{clusterIdentity: {clusterID: $ID_A}, unknownField: 1}" | sed -e 's/name: bad/name: pruned/' |
  kc "$C" create --validate=false -f - >/dev/null
[ -z "$(get fc pruned -o jsonpath='{.spec.unknownField}')" ] || fail "unknown fields are not pruned"
say "defaults applied (ForeignCluster, ClusterConfig, NamespaceOffloading, SearchDomain), unknown fields pruned"

# 4. The status subresource: the main resource ignores status, /status ignores spec.
kc "$C" patch fc cluster-b --subresource=status --type=merge -p \
  '{"status":{"peeringConditions":[{"type":"OutgoingPeering","status":"Established","lastTransitionTime":"2024-01-01T00:00:00Z","reason":"Accepted"},{"type":"IncomingPeering","status":"Pending"}],"tenantNamespace":{"local":"cliqo-tenant-cluster-b-0a1b2c"}}}' >/dev/null
gen=$(get fc cluster-b -o jsonpath='{.metadata.generation}')
kc "$C" patch fc cluster-b --type=merge -p \
  '{"spec":{"outgoingPeeringEnabled":"Yes"},"status":{"peeringConditions":[{"type":"OutgoingPeering","status":"Error"}]}}' >/dev/null
[ "$(get fc cluster-b -o jsonpath='{.spec.outgoingPeeringEnabled}')" = Yes ] || fail "spec update lost"
[ "$(get fc cluster-b -o jsonpath='{.status.peeringConditions[?(@.type=="OutgoingPeering")].status}')" = Established ] ||
  fail "a spec update changed the status"
[ "$(get fc cluster-b -o jsonpath='{.metadata.generation}')" -gt "$gen" ] || fail "a spec update did not bump generation"
gen=$(get fc cluster-b -o jsonpath='{.metadata.generation}')
kc "$C" patch fc cluster-b --subresource=status --type=merge -p \
  '{"spec":{"outgoingPeeringEnabled":"No"},"status":{"tenantNamespace":{"remote":"cliqo-tenant-cluster-a-0d0e0f"}}}' >/dev/null
[ "$(get fc cluster-b -o jsonpath='{.spec.outgoingPeeringEnabled}')" = Yes ] || fail "a status update changed the spec"
[ "$(get fc cluster-b -o jsonpath='{.status.tenantNamespace.remote}')" = cliqo-tenant-cluster-a-0d0e0f ] ||
  fail "status update lost"
[ "$(get fc cluster-b -o jsonpath='{.metadata.generation}')" = "$gen" ] || fail "a status update bumped generation"
expect_reject "FC condition with a bad status" 'Unsupported value: "Maybe"' \
  kc "$C" patch fc cluster-b --subresource=status --type=merge -p \
  '{"status":{"peeringConditions":[{"type":"OutgoingPeering","status":"Maybe"}]}}'
kc "$C" -n "$NS" patch peeringrequest "$ID_A" --subresource=status --type=merge -p \
  '{"status":{"phase":"Accepted","reason":"Admitted"}}' >/dev/null
kc "$C" -n "$NS" patch adv "advertisement-$ID_B" --subresource=status --type=merge -p \
  '{"status":{"advertisementStatus":"Accepted","vkCreated":true}}' >/dev/null
say "status subresource: spec and status are updated independently"

# 5. Printer columns, short names, category.
header() { kc "$C" get "$@" | head -1 | tr -s ' ' ' ' | sed -e 's/ $//'; }
row() { kc "$C" get "$@" --no-headers | tr -s ' ' ' '; }
[ "$(header fc cluster-b)" = "NAME CLUSTERID OUTGOING INCOMING AGE" ] || fail "fc columns: $(header fc cluster-b)"
row fc cluster-b | grep_q -E "^cluster-b $ID_B Established Pending [0-9]" || fail "fc row: $(row fc cluster-b)"
[ "$(header -n "$NS" pr)" = "NAME CLUSTERID PHASE ADVERTISEMENT AGE" ] || fail "pr columns: $(header -n "$NS" pr)"
row -n "$NS" pr | grep_q -E "^$ID_A $ID_A Accepted [0-9]" || fail "pr row: $(row -n "$NS" pr)"
[ "$(header -n "$NS" adv)" = "NAME STATUS REASON EXPIRATION AGE" ] || fail "adv columns: $(header -n "$NS" adv)"
row -n "$NS" adv | grep_q -E "^advertisement-$ID_B Accepted 2024-01-01T00:30:00Z [0-9]" ||
  fail "adv row: $(row -n "$NS" adv)"
[ "$(header clusterconfig)" = "NAME SHARING ACCEPTPOLICY INCOMINGPEERING AGE" ] || fail "clusterconfig columns"
row clusterconfig | grep_q -E '^configuration 30 AutoAcceptMax Yes [0-9]' || fail "clusterconfig row: $(row clusterconfig)"
row nnt | grep_q -E "^$ID_B $ID_B [0-9]" || fail "nnt row: $(row nnt)"
row -n "$NS" nsof | grep_q -E '^offloading DefaultName LocalAndRemote e2e-crds Invalid [0-9]' ||
  fail "nsof row: $(row -n "$NS" nsof)"
for s in fc pr adv nsof nnt; do kc "$C" get "$s" -A >/dev/null || fail "short name $s does not resolve"; done
# Kinds, not objects: the agent may create objects of its own (a NamespaceMap) while this runs.
n=$(kc "$C" get cliqo -A --no-headers -o name | cut -d/ -f1 | sort -u | wc -l)
want=$(crd_names | wc -l)
[ "$n" -eq "$want" ] || fail "kubectl get cliqo lists $n kinds, want $want: $(kc "$C" get cliqo -A -o name)"
say "printer columns, short names (fc pr adv nsof nnt) and the category cliqo work"

# 6. kubectl explain reads the published (structural) schema.
kc "$C" explain foreignclusters.spec.clusterIdentity | grep_q 'clusterID' || fail "explain fc"
kc "$C" explain fc.spec.insecureSkipTLSVerify | grep_q 'Skip every TLS check' || fail "explain fc description"
kc "$C" explain clusterconfig.spec.advertisementConfig.outgoingConfig | grep_q resourceSharingPercentage ||
  fail "explain clusterconfig"
kc "$C" explain pr.status.phase | grep_q 'decision' || fail "explain pr"
kc "$C" explain adv.spec.resourceQuota.hard >/dev/null || fail "explain adv"
say "kubectl explain works"

trap - EXIT
cleanup
pass
