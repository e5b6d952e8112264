#!/usr/bin/env bash
# Issue 17 point 6: the failure limiter of B's auth endpoint cannot lock out a right token arriving
# through a shared source address. From 127.0.0.1, with no credential, wrong tokens get 403 and then
# 429; right after them, a request with B's real token (read from B's auth-token Secret) from the same
# address still gets 201, and a wrong one is still refused with 429 (the right one did not reset the
# count). The 201 asks for a fresh cluster ID of this test; its tenant namespace is deleted after.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"

URL="https://127.0.0.1:$(auth_port "$B")/identity"
ID=$(cat /proc/sys/kernel/random/uuid)
NAME=limiter-test
NS=""
cleanup() {
  [ -n "$NS" ] && kc "$B" delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  rm -f "$E2E_STATE/limiter-body" "$E2E_STATE/limiter-key.pem"
}
on_exit() {
  local rc=$?
  cleanup
  (exit "$rc")
  sec_on_exit
}
trap on_exit EXIT
ids
KEY=$E2E_STATE/limiter-key.pem
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$KEY" 2>/dev/null || fail "cannot make a key"
# post TOKEN: the HTTP code of POST /identity with that token, signed with the test's own key (docs/peering.md,
# "Identity keys"); the answer's body in $E2E_STATE/limiter-body.
post() {
  curl -sk -o "$E2E_STATE/limiter-body" -w '%{http_code}' --max-time 30 -X POST \
    -H 'Content-Type: application/json' --data "$(identity_body "$KEY" "$B_ID" "$ID" "$NAME" "$1")" "$URL" || true
}

TOKEN=$(jpath "$B" '{.data.token}' secret -n cliqo auth-token | base64 -d)
[ "${#TOKEN}" = 64 ] || fail "cannot read B's token from its auth-token Secret"
WRONG=$(printf '%064d' 0)
[ "$WRONG" != "$TOKEN" ] || fail "the wrong token is B's token"

say "wrong tokens from 127.0.0.1: 403 until the limit, then 429"
codes=""
for _ in 1 2 3 4 5 6 7 8; do codes+="$(post "$WRONG") "; done
[[ "$codes" =~ ^(403 ){0,5}(429 )+$ ]] || fail "wrong tokens answered: $codes (want 403s, then 429s)"
[[ "$codes" == "403 "* ]] || say "note: 127.0.0.1 was already over the limit (an earlier test's failures)"
grep_q -F '"too-many-attempts"' "$E2E_STATE/limiter-body" || fail "the 429 body is not too-many-attempts"

say "the right token from the same address: 201"
code=$(post "$TOKEN")
[ "$code" = 201 ] || fail "B's real token was answered $code: $(head -c 300 "$E2E_STATE/limiter-body")"
NS=$(jq -r .namespace "$E2E_STATE/limiter-body")
[ -n "$NS" ] && [ "$NS" != null ] || fail "the 201 names no namespace"
kc "$B" get namespace "$NS" >/dev/null || fail "the tenant namespace $NS does not exist on B"

say "a wrong token right after: still 429 (a right token does not reset the count)"
code=$(post "$WRONG")
[ "$code" = 429 ] || fail "a wrong token after the right one was answered $code"

say "clean up the test's tenant namespace $NS"
kc "$B" delete namespace "$NS" --wait=true --timeout=60s >/dev/null || fail "cannot delete $NS on B"
NS=""
pass "wrong tokens: $codes; the right token: 201; a wrong one after: 429"
