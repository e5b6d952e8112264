#!/usr/bin/env bash
# cliqoctl generate-add-command: the printed hash is the CA's SPKI hash (as openssl computes it), the ID is the
# cluster's, the URL comes from the flag or the ClusterConfig; the token is a new single-use one (a Secret with
# its SHA-256 and expiry only), or the cluster's with --shared-token; --rotate-token replaces the shared token
# and revokes the unused single-use ones.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
ensure_installed
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

id=$(jpath "$C" '{.data.cluster-id}' configmap -n cliqo cluster-id)
name=$(jpath "$C" '{.data.cluster-name}' configmap -n cliqo cluster-id)
token=$(jpath "$C" '{.data.token}' secret -n cliqo auth-token | base64 -d)
jpath "$C" '{.data.ca\.crt}' secret -n cliqo auth-tls | base64 -d >"$tmp/ca.crt"
hash=$(openssl x509 -in "$tmp/ca.crt" -pubkey -noout | openssl pkey -pubin -outform der | sha256sum | cut -d' ' -f1)
url=$(jpath "$C" '{.spec.peeringConfig.authUrl}' clusterconfig configuration)
[ -n "$url" ] || fail "no authUrl after install --auth-address"

say "the printed command, --shared-token"
run_cq rc out err generate-add-command --shared-token
[ "$rc" -eq 0 ] || fail "exit $rc: $err"
[ "$out" = "cliqoctl add --name $name --id $id --auth-url $url --token $token --ca-cert-hash sha256:$hash" ] ||
  fail "unexpected command: $out (hash should be sha256:$hash)"

say "by default a single-use token with an expiry"
run_cq rc out err generate-add-command --ttl 10m
[ "$rc" -eq 0 ] || fail "exit $rc: $err"
single=$(sed -n 's/.* --token \([0-9a-f]*\) .*/\1/p' <<<"$out")
[[ "$single" =~ ^[0-9a-f]{64}$ ]] && [ "$single" != "$token" ] || fail "not a new token: $out"
[ "$out" = "cliqoctl add --name $name --id $id --auth-url $url --token $single --ca-cert-hash sha256:$hash" ] ||
  fail "unexpected command: $out"
sha=$(printf %s "$single" | sha256sum | cut -d' ' -f1)
sec=$(kget "$C" secret -n cliqo "peering-token-${sha:0:32}") || fail "no Secret for the single-use token"
jq -e --arg s "$sha" '(.data.sha256 | @base64d) == $s and (.data | keys) == ["expires","sha256"] and
  .metadata.labels["cliqo.io/peering-token"] == "single-use"' <<<"$sec" >/dev/null || fail "token Secret: $sec"
exp=$(date -d "$(jq -r '.data.expires | @base64d' <<<"$sec")" +%s)
[ $((exp - $(date +%s))) -gt 540 ] && [ $((exp - $(date +%s))) -le 601 ] || fail "the expiry is not in 10 minutes"
contains "the expiry is shown" "$err" "single-use token, valid until"
run_cq rc out err generate-add-command --ttl 2d
[ "$rc" -eq 2 ] || fail "--ttl 2d: exit $rc"
run_cq rc out err generate-add-command --shared-token --ttl 1h
[ "$rc" -eq 2 ] || fail "--shared-token --ttl: exit $rc"

say "--auth-url overrides the ClusterConfig; -o json"
run_cq rc out err generate-add-command --shared-token --auth-url https://peer.example.org:30443 -o json
[ "$rc" -eq 0 ] || fail "json: exit $rc: $err"
python3 - "$out" "$id" "$token" "sha256:$hash" <<'PY' || fail "json output wrong: $out"
import json, sys
d = json.loads(sys.argv[1])
assert d["clusterID"] == sys.argv[2] and d["token"] == sys.argv[3] and d["caCertHash"] == sys.argv[4], d
assert d["authUrl"] == "https://peer.example.org:30443", d
PY

say "--rotate-token"
run_cq rc out err generate-add-command --rotate-token
[ "$rc" -eq 0 ] || fail "rotate: exit $rc: $err"
new=$(jpath "$C" '{.data.token}' secret -n cliqo auth-token | base64 -d)
[[ "$new" =~ ^[0-9a-f]{64}$ ]] || fail "rotated token has the wrong format"
[ "$new" != "$token" ] || fail "--rotate-token did not change the token"
contains "rotation is reported" "$err" "rotated"
kc "$C" get secret -n cliqo "peering-token-${sha:0:32}" >/dev/null 2>&1 && fail "the unused single-use token survived --rotate-token"
run_cq rc out err generate-add-command --shared-token
contains "the printed command has the new token" "$out" "--token $new "
kc "$C" delete secret -n cliqo -l cliqo.io/peering-token=single-use >/dev/null

say "no auth URL anywhere: one-line error"
kc "$C" patch clusterconfig configuration --type=json -p '[{"op":"remove","path":"/spec/peeringConfig/authUrl"}]' >/dev/null
run_cq rc out err generate-add-command
[ "$rc" -eq 1 ] || fail "no URL: exit $rc"
one_error_line "$err"
contains "no URL explained" "$err" "no auth URL"
kc "$C" patch clusterconfig configuration --type=merge -p "{\"spec\":{\"peeringConfig\":{\"authUrl\":\"$url\"}}}" >/dev/null

say "bad flags"
run_cq rc out err generate-add-command -o yaml
[ "$rc" -eq 2 ] || fail "-o yaml: exit $rc"
one_error_line "$err"
run_cq rc out err generate-add-command --auth-url ftp://x
[ "$rc" -eq 2 ] || fail "ftp URL: exit $rc"
pass
