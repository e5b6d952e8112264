#!/usr/bin/env bash
# cliqoctl add against real HTTPS servers (openssl s_server -WWW serves the files "ca" and "ids" of its
# directory): the CA pin, the single-certificate rule, the ID check, TLS verification with the pinned CA
# (another CA's server certificate, a host name the certificate does not cover), unreachable endpoints,
# then the Secret and ForeignCluster it writes, the wait for the agent, and --insecure-skip-tls-verify.
# Nothing may be created when a check fails. Its HTTPS servers listen on $SRV .. $SRV + 9 (common.sh).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
ensure_installed

RID=7e57c0de-0000-4000-8000-0000000000aa
TOKEN=$(openssl rand -hex 32)
tmp=$(mktemp -d)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  kc "$C" delete foreigncluster remote-one --ignore-not-found >/dev/null 2>&1 || true
  kc "$C" delete secret -n cliqo "remote-auth-$RID" --ignore-not-found >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

say "certificates and servers"
mkca() { # NAME
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tmp/$1.key" -out "$tmp/$1.crt" \
    -subj "/CN=$1" -days 2 2>/dev/null
}
mkserver() { # NAME CA SAN
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tmp/$1.key" -out "$tmp/$1.csr" \
    -subj "/CN=$1" 2>/dev/null
  printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' "$3" >"$tmp/$1.ext"
  openssl x509 -req -in "$tmp/$1.csr" -CA "$tmp/$2.crt" -CAkey "$tmp/$2.key" -CAcreateserial -days 1 \
    -extfile "$tmp/$1.ext" -out "$tmp/$1.crt" 2>/dev/null
}
serve() { # PORT CERT CA-FILE-CONTENTS-FROM...
  local port=$1 cert=$2 d="$tmp/www-$1"
  shift 2
  mkdir -p "$d"
  cat "$@" >"$d/ca"
  printf '{"clusterId": "%s", "clusterName": "remote-one"}' "$RID" >"$d/ids"
  (cd "$d" && exec openssl s_server -quiet -WWW -accept "$port" -cert "$tmp/$cert.crt" -key "$tmp/$cert.key" \
    </dev/null >"$tmp/s_server-$port.log" 2>&1) &
  pids+=($!)
  wait_for 20 "s_server on $port" bash -c "exec 3<>/dev/tcp/127.0.0.1/$port"
}
mkca ca1
mkca ca2
mkserver good ca1 IP:127.0.0.1
mkserver impostor ca2 IP:127.0.0.1
serve $SRV good "$tmp/ca1.crt"
serve $((SRV + 1)) good "$tmp/ca1.crt" "$tmp/ca2.crt"
serve $((SRV + 2)) impostor "$tmp/ca1.crt"
HASH=sha256:$(openssl x509 -in "$tmp/ca1.crt" -pubkey -noout | openssl pkey -pubin -outform der | sha256sum | cut -d' ' -f1)
HASH2=sha256:$(openssl x509 -in "$tmp/ca2.crt" -pubkey -noout | openssl pkey -pubin -outform der | sha256sum | cut -d' ' -f1)
own=$(jpath "$C" '{.data.cluster-id}' configmap -n cliqo cluster-id)

nothing_created() { # DESCRIPTION
  kc "$C" get secret -n cliqo "remote-auth-$RID" >/dev/null 2>&1 && fail "$1: the Secret was created"
  [ -z "$(kc "$C" get foreignclusters -l "discovery.liqo.io/cluster-id=$RID" -o name)" ] ||
    fail "$1: a ForeignCluster was created"
  return 0
}
refused() { # DESCRIPTION NEEDLE args...
  local d=$1 needle=$2
  shift 2
  run_cq rc out err add --no-wait "$@"
  [ "$rc" -eq 1 ] || fail "$d: exit $rc, want 1: $err"
  one_error_line "$(grep 'error:' <<<"$err")"
  contains "$d: reason" "$err" "$needle"
  nothing_created "$d"
}

say "refusals"
refused "own ID" "own ID" --auth-url https://127.0.0.1:$SRV --id "$own" --token "$TOKEN" --ca-cert-hash "$HASH"
refused "unreachable" "https://127.0.0.1:$((SRV + 9))/ca" --auth-url https://127.0.0.1:$((SRV + 9)) --id "$RID" --token "$TOKEN" --ca-cert-hash "$HASH"
refused "wrong hash" "expected $HASH2, the endpoint has $HASH" --auth-url https://127.0.0.1:$SRV --id "$RID" --token "$TOKEN" --ca-cert-hash "$HASH2"
refused "wrong id" "belongs to cluster $RID" --auth-url https://127.0.0.1:$SRV --id 7e57c0de-0000-4000-8000-0000000000bb --token "$TOKEN" --ca-cert-hash "$HASH"
refused "two certificates" "not a single CA certificate" --auth-url https://127.0.0.1:$((SRV + 1)) --id "$RID" --token "$TOKEN" --ca-cert-hash "$HASH"
refused "server certificate of another CA" "https://127.0.0.1:$((SRV + 2))/ids" --auth-url https://127.0.0.1:$((SRV + 2)) --id "$RID" --token "$TOKEN" --ca-cert-hash "$HASH"
refused "host name not in the certificate" "https://localhost:$SRV/ids" --auth-url https://localhost:$SRV --id "$RID" --token "$TOKEN" --ca-cert-hash "$HASH"
run_cq rc out err add --auth-url https://127.0.0.1:$SRV --id "$RID" --token not-a-token --ca-cert-hash "$HASH"
[ "$rc" -eq 2 ] || fail "bad token: exit $rc"
one_error_line "$err"
run_cq rc out err add --auth-url https://127.0.0.1:$SRV --id "$RID" --token "$TOKEN"
[ "$rc" -eq 2 ] || fail "no hash: exit $rc"
one_error_line "$err"
run_cq rc out err add --auth-url https://127.0.0.1:$SRV --id "$RID" --token "$TOKEN" --ca-cert-hash sha256:xyz
[ "$rc" -eq 2 ] || fail "bad hash: exit $rc"
one_error_line "$err"
nothing_created "flag errors"

say "verified add creates the Secret and the ForeignCluster"
run_cq rc out err add --no-wait --auth-url https://127.0.0.1:$SRV --id "$RID" --token "$TOKEN" --ca-cert-hash "$HASH"
[ "$rc" -eq 0 ] || fail "add: exit $rc: $err"
sec=$(kget "$C" secret -n cliqo "remote-auth-$RID")
fc=$(kget "$C" foreigncluster remote-one)
python3 - "$sec" "$fc" "$RID" "$TOKEN" "$tmp/ca1.crt" "https://127.0.0.1:$SRV" <<'PY' || fail "objects wrong"
import base64, json, sys
sec, fc, rid, token = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
ca = open(sys.argv[5]).read()
assert base64.b64decode(sec["data"]["token"]).decode() == token
assert base64.b64decode(sec["data"]["ca.crt"]).decode().strip() == ca.strip()
assert sec["metadata"]["labels"]["discovery.liqo.io/cluster-id"] == rid
assert sec["metadata"]["labels"]["discovery.liqo.io/auth-token"] == "true"
[o] = sec["metadata"]["ownerReferences"]
assert o["kind"] == "ForeignCluster" and o["name"] == "remote-one" and o["uid"] == fc["metadata"]["uid"], o
l, s = fc["metadata"]["labels"], fc["spec"]
assert l["discovery.liqo.io/cluster-id"] == rid and l["discovery.liqo.io/discovery-type"] == "Manual", l
assert s["clusterIdentity"] == {"clusterID": rid, "clusterName": "remote-one"}, s
assert s["outgoingPeeringEnabled"] == "Yes" and s["incomingPeeringEnabled"] == "Auto", s
assert s["foreignAuthUrl"] == sys.argv[6] and s["insecureSkipTLSVerify"] is False, s
PY

say "add again updates; another --name for the same cluster is refused"
run_cq rc out err add --no-wait --auth-url https://127.0.0.1:$SRV --id "$RID" --token "$TOKEN" --ca-cert-hash "$HASH"
[ "$rc" -eq 0 ] || fail "re-add: exit $rc: $err"
contains "re-add configures" "$out" "foreigncluster/remote-one configured"
run_cq rc out err add --no-wait --name other-name --auth-url https://127.0.0.1:$SRV --id "$RID" --token "$TOKEN" --ca-cert-hash "$HASH"
[ "$rc" -eq 1 ] || fail "other name: exit $rc"
contains "other name explained" "$err" "already known as ForeignCluster remote-one"
kc "$C" get foreigncluster other-name >/dev/null 2>&1 && fail "other-name created"

say "--wait: Established, Denied, timeout"
cq add --timeout 60s --auth-url https://127.0.0.1:$SRV --id "$RID" --token "$TOKEN" --ca-cert-hash "$HASH" \
  >"$tmp/wait.out" 2>"$tmp/wait.err" &
pid=$!
sleep 1.5
set_condition remote-one OutgoingPeering Established
wait "$pid" || fail "add --wait did not succeed once Established: $(cat "$tmp/wait.err")"
grep -q "peered with remote-one" "$tmp/wait.out" || fail "no success line: $(cat "$tmp/wait.out")"
set_condition remote-one OutgoingPeering Denied "the provider says no"
run_cq rc out err add --timeout 30s --auth-url https://127.0.0.1:$SRV --id "$RID" --token "$TOKEN" --ca-cert-hash "$HASH"
[ "$rc" -eq 1 ] || fail "Denied: exit $rc"
contains "Denied message" "$err" "the provider says no"
set_condition remote-one OutgoingPeering Pending
run_cq rc out err add --timeout 2s --auth-url https://127.0.0.1:$SRV --id "$RID" --token "$TOKEN" --ca-cert-hash "$HASH"
[ "$rc" -eq 1 ] || fail "timeout: exit $rc"
contains "timeout says where" "$err" "not established after 2s"
contains "progress shown" "$err" "outgoing peering Pending"

say "the Secret goes with the ForeignCluster"
kc "$C" delete foreigncluster remote-one >/dev/null
secret_gone() { ! kc "$C" get secret -n cliqo "remote-auth-$RID" >/dev/null 2>&1; }
wait_for 60 "remote-auth Secret garbage-collected" secret_gone

say "--insecure-skip-tls-verify warns and skips the checks"
run_cq rc out err add --no-wait --insecure-skip-tls-verify --auth-url https://127.0.0.1:$((SRV + 2)) --id "$RID" --token "$TOKEN"
[ "$rc" -eq 0 ] || fail "insecure: exit $rc: $err"
contains "warning printed" "$err" "WARNING"
[ "$(jpath "$C" '{.spec.insecureSkipTLSVerify}' foreigncluster remote-one)" = true ] || fail "insecureSkipTLSVerify not set"
pass
