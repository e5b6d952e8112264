#!/usr/bin/env bash
# Pod Security on the provider (docs/security.md, "Pod Security on the provider"): A offloads a namespace, so B
# makes one for A; as A's virtual kubelet on B (the credential a hostile consumer really holds there), one pod per
# control is created with --dry-run=server and must be refused by B's webhook with the control's reason at the
# level B gives A: baseline (the default), then restricted (a perCluster override for A, while C, offloading too,
# stays at baseline), then privileged (every pod admitted). The namespaces B makes carry the level as their
# pod-security.kubernetes.io/enforce label (enforce-version latest), following the ClusterConfig. v1.20 API
# servers drop procMount (alpha gate off) and windowsOptions.hostProcess (1.22) before admission: those two
# controls are checked by the unit tests only.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
NS=e2e-podsec
T=$(mktemp -d)
HOOK='admission webhook "offer.admission.cliqo.io" denied the request'

# nsmap_of CONSUMER_ID: that consumer's NamespaceMap on B.
nsmap_of() { kget "$B" namespacemaps -A | jq -c --arg id "$1" '.items[] | select(.metadata.name == $id)'; }
remote_of() { nsmap_of "$1" | jq -r --arg n "$NS" '.spec.desiredMapping[$n] // empty'; }
level_of() { jget "$B" '{.metadata.labels.pod-security\.kubernetes\.io/enforce}/{.metadata.labels.pod-security\.kubernetes\.io/enforce-version}' namespace "$1"; }
made() { local r; r=$(remote_of "$1") && [ -n "$r" ] && kc "$B" get namespace "$r" >/dev/null 2>&1 &&
  [ "$(kc "$B" auth can-i create pods -n "$r" --as="$(vk_user "$1")")" = yes ]; }

cleanup() {
  patch_config "$B" '{"spec":{"offloadingConfig":{"podSecurity":null}}}'
  for c in "$A" "$C"; do
    cq "$c" unoffload namespace "$NS" >/dev/null 2>&1
    kc "$c" delete namespace "$NS" --ignore-not-found --wait=false >/dev/null 2>&1
  done
  wait_for 90 "$A's and $C's namespaces gone from $B" eval \
    '[ -z "$(kc "$B" get namespaces -l virtualkubelet.liqo.io/origin -o name | grep "/$NS-")" ]'
  rm -rf "$T"
}
on_exit() {
  local rc=$?
  cleanup >/dev/null 2>&1 || true
  (exit "$rc")
  sec_on_exit
}
trap on_exit EXIT
ensure_agents
ids
wait_shared 60

say "$A and $C offload $NS: $B makes a namespace for each"
for c in "$A" "$C"; do
  kc "$c" create namespace "$NS" >/dev/null || fail "cannot create $NS on $c"
  out=$(cq "$c" offload namespace "$NS" --strategy Remote 2>&1) || fail "offload on $c failed: $out"
done
wait_for 60 "$B made $A's namespace and bound its virtual kubelet there" made "$A_ID"
wait_for 60 "$B made $C's namespace and bound its virtual kubelet there" made "$C_ID"
RA=$(remote_of "$A_ID")
RC=$(remote_of "$C_ID")
wait_default_sa "$B" "$RA"
wait_default_sa "$B" "$RC"
[ "$(level_of "$RA")" = baseline/latest ] || fail "$RA on $B: Pod Security labels $(level_of "$RA"), not baseline/latest"

# One case per control: NAME, the jq edit of a pod restricted admits, the reason at baseline ("" admitted), the
# reason at restricted. The v1.20 API server refuses privileged or SYS_ADMIN with allowPrivilegeEscalation=false.
C1='container "c"'
CASES=(
  "hostns|.spec.hostNetwork=true|.spec.hostPID=true|.spec.hostIPC=true"
  "host namespaces (hostNetwork=true, hostPID=true, hostIPC=true)"
  "host namespaces (hostNetwork=true, hostPID=true, hostIPC=true)"
  "privileged|.spec.containers[0].securityContext+={privileged:true,allowPrivilegeEscalation:true}"
  "privileged ($C1 must not set securityContext.privileged=true)"
  "allowPrivilegeEscalation != false ($C1 must set securityContext.allowPrivilegeEscalation=false), privileged ($C1 must not set securityContext.privileged=true)"
  "caps|.spec.containers[0].securityContext.capabilities.add=[\"NET_ADMIN\"]"
  "non-default capabilities ($C1 must not include \"NET_ADMIN\" in securityContext.capabilities.add)"
  "unrestricted capabilities ($C1 must not include \"NET_ADMIN\" in securityContext.capabilities.add)"
  "hostpath|.spec.volumes=[{name:\"h\",hostPath:{path:\"/tmp\"}}]"
  "hostPath volumes (volume \"h\")"
  "hostPath volumes (volume \"h\"), restricted volume types (volume \"h\" uses restricted volume type \"hostPath\")"
  "hostport|.spec.containers[0].ports=[{containerPort:80,hostPort:8080}]"
  "hostPort ($C1 uses hostPort 8080)"
  "hostPort ($C1 uses hostPort 8080)"
  "apparmor|.metadata.annotations={\"container.apparmor.security.beta.kubernetes.io/c\":\"unconfined\"}"
  "forbidden AppArmor profile (container.apparmor.security.beta.kubernetes.io/c=\"unconfined\")"
  "forbidden AppArmor profile (container.apparmor.security.beta.kubernetes.io/c=\"unconfined\")"
  "selinux|.spec.containers[0].securityContext.seLinuxOptions={type:\"spc_t\"}"
  "seLinuxOptions ($C1 set forbidden securityContext.seLinuxOptions: type \"spc_t\")"
  "seLinuxOptions ($C1 set forbidden securityContext.seLinuxOptions: type \"spc_t\")"
  "seccomp|.spec.securityContext={seccompProfile:{type:\"Unconfined\"}}"
  "seccompProfile (pod must not set securityContext.seccompProfile.type to \"Unconfined\")"
  "seccompProfile (pod must not set securityContext.seccompProfile.type to \"Unconfined\")"
  "sysctls|.spec.securityContext={sysctls:[{name:\"net.core.somaxconn\",value:\"1024\"}]}"
  "forbidden sysctls (net.core.somaxconn)"
  "forbidden sysctls (net.core.somaxconn)"
  "escalation|.spec.containers[0].securityContext.allowPrivilegeEscalation=true"
  ""
  "allowPrivilegeEscalation != false ($C1 must set securityContext.allowPrivilegeEscalation=false)"
  "nonroot|.spec.containers[0].securityContext.runAsNonRoot=false"
  ""
  "runAsNonRoot != true ($C1 must not set securityContext.runAsNonRoot=false)"
  "rootuser|.spec.containers[0].securityContext.runAsUser=0"
  ""
  "runAsUser=0 ($C1 must not set runAsUser=0)"
  "nfs|.spec.volumes=[{name:\"n\",nfs:{server:\"nfs.example\",path:\"/\"}}]"
  ""
  "restricted volume types (volume \"n\" uses restricted volume type \"nfs\")"
  "nodrop|del(.spec.containers[0].securityContext.capabilities)"
  ""
  "unrestricted capabilities ($C1 must set securityContext.capabilities.drop=[\"ALL\"])"
  "noseccomp|del(.spec.containers[0].securityContext.seccompProfile)"
  ""
  "seccompProfile (pod or $C1 must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
  "hardened|."
  ""
  ""
)
# The manifests, per consumer, in one jq run: every case's pod ("NAME<tab>JSON" lines), labelled as a virtual
# kubelet's pods are.
prog=
for ((i = 0; i < ${#CASES[@]}; i += 3)); do
  prog+="${prog:+, }[\"${CASES[i]%%|*}\", (\$base | ${CASES[i]#*|})]"
done
for id in "$A_ID" "$C_ID"; do
  jq -nr --arg o "$id" '{apiVersion:"v1",kind:"Pod",metadata:{labels:{"virtualkubelet.liqo.io/origin":$o}},
    spec:{containers:[{name:"c",image:"busybox",securityContext:{allowPrivilegeEscalation:false,
      capabilities:{drop:["ALL"]},runAsNonRoot:true,seccompProfile:{type:"RuntimeDefault"}}}]}} as $base |
    '"$prog"' | .[1].metadata.name = .[0] | "\(.[0])\t\(.[1] | tojson)"' >"$T/$id.tsv" ||
    fail "cannot build the pods of the cases"
  while IFS=$'\t' read -r name json; do printf '%s\n' "$json" >"$T/$id-$name.json"; done <"$T/$id.tsv"
done
[ "$(ls "$T"/*.json | wc -l)" = $((2 * ${#CASES[@]} / 3)) ] || fail "not every case has its pod: $(ls "$T")"
VK_A=$(vk_user "$A_ID")
VK_C=$(vk_user "$C_ID")
# create CONSUMER_ID NAMESPACE CASE: the case's pod created (dry run) as that consumer's virtual kubelet; the
# answer in $T/CASE.rc and .err.
create() {
  local as=$VK_A
  [ "$1" = "$A_ID" ] || as=$VK_C
  if kc "$B" --as="$as" create --dry-run=server -n "$2" -f - <"$T/$1-$3.json" >/dev/null 2>"$T/$3.err"; then
    echo 0 >"$T/$3.rc"
  else
    echo "$?" >"$T/$3.rc"
  fi
}
# check CASE LEVEL WANT: the answer is admitted (WANT empty) or refused with exactly WANT at LEVEL.
check() {
  local rc out
  rc=$(cat "$T/$1.rc")
  out=$(cat "$T/$1.err")
  if [ -z "$3" ]; then
    [ "$rc" = 0 ] || fail "$1 at $2: refused: $out"
  else
    [ "$rc" != 0 ] || fail "$1 at $2: admitted"
    [ "$out" = "Error from server (Forbidden): error when creating \"STDIN\": $HOOK: violates PodSecurity \"$2:latest\": $3" ] ||
      fail "$1 at $2: unexpected refusal: $out
  want: violates PodSecurity \"$2:latest\": $3"
  fi
}
# try CONSUMER_ID NAMESPACE CASE LEVEL WANT: create, then check.
try() {
  create "$1" "$2" "$3"
  check "$3" "$4" "$5"
}
# every LEVEL COLUMN: every case for A at LEVEL (COLUMN 1: the baseline reasons, 2: restricted, none: admitted),
# the kubectl calls eight at a time (the webhook server takes at most 16 connections from one address, and the
# API server is one address), then the answers checked in order.
every() {
  local pids=()
  for ((i = 0; i < ${#CASES[@]}; i += 3)); do
    create "$A_ID" "$RA" "${CASES[i]%%|*}" &
    pids+=($!)
    if [ "${#pids[@]}" = 8 ]; then
      wait "${pids[@]}"
      pids=()
    fi
  done
  [ "${#pids[@]}" = 0 ] || wait "${pids[@]}"
  for ((i = 0; i < ${#CASES[@]}; i += 3)); do
    check "${CASES[i]%%|*}" "$1" "${2:+${CASES[i + $2]}}"
  done
}
# level_is NS LEVEL: B's namespace NS labelled LEVEL.
level_is() { wait_for 30 "$1 labelled pod-security.kubernetes.io/enforce=$2 (now $(level_of "$1"))" eval "[ \"\$(level_of $1)\" = $2/latest ]"; }

say "baseline, the default: one refusal per control, each with its reason (at ${SECONDS} s)"
every baseline 1
try "$C_ID" "$RC" hostns baseline "${CASES[1]}"

say "restricted for $A only (ClusterConfig perCluster): $A's namespace relabelled, the restricted controls too"
patch_config "$B" "{\"spec\":{\"offloadingConfig\":{\"podSecurity\":{\"perCluster\":[{\"clusterID\":\"$A_ID\",\"level\":\"restricted\"}]}}}}"
level_is "$RA" restricted
every restricted 2
say "$C keeps the default, baseline"
[ "$(level_of "$RC")" = baseline/latest ] || fail "$RC on $B: labels $(level_of "$RC"), not baseline/latest"
try "$C_ID" "$RC" escalation baseline ""
try "$C_ID" "$RC" hostns baseline "${CASES[1]}"

say "privileged for $A: every pod admitted"
patch_config "$B" "{\"spec\":{\"offloadingConfig\":{\"podSecurity\":{\"perCluster\":[{\"clusterID\":\"$A_ID\",\"level\":\"privileged\"}]}}}}"
level_is "$RA" privileged
every privileged

say "a level the CRD does not know is refused by the API server"
out=$(kc "$B" patch clusterconfig configuration --type=merge \
  -p '{"spec":{"offloadingConfig":{"podSecurity":{"level":"lax"}}}}' 2>&1) && fail "level lax accepted"
grep -q 'Unsupported value: "lax"' <<<"$out" || fail "level lax: unexpected answer: $out"

say "the ClusterConfig restored: back to baseline (at ${SECONDS} s)"
patch_config "$B" '{"spec":{"offloadingConfig":{"podSecurity":null}}}'
level_is "$RA" baseline
try "$A_ID" "$RA" hostns baseline "${CASES[1]}"
pass "every control refused with its reason at baseline and restricted, admitted at privileged; per-consumer levels; namespace labels follow"
