#!/usr/bin/env bash
# Refused peerings change nothing: a wrong token, a wrong CA hash, a truncated body, an oversized body, and
# the per-address rate limit of failed token attempts on B's auth endpoint. After each, neither cluster
# holds a peering object. The rate limiter lives in the agent's memory: B's agent is restarted before the
# rate-limit check (the wrong-token add already counted failures from 127.0.0.1) and after it, so the other
# tests, which add from the same address, are not blocked.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
setup
add_command
URL=$(auth_url "$B")
# Requests by hand are signed with A's identity key, as A's agent signs them (docs/peering.md).
wait_for 30 "A's identity key" kc "$A" -n cliqo get secret identity-key
kc "$A" -n cliqo get secret identity-key -o jsonpath='{.data.tls\.key}' | base64 -d >"$PEER_TMP/a.key"
# with_flag FLAG VALUE: ADD_CMD with one flag's value replaced, in ARGS.
with_flag() {
  local i
  ARGS=("${ADD_CMD[@]}")
  for i in "${!ARGS[@]}"; do
    [ "${ARGS[$i]}" = "$1" ] && ARGS[i + 1]=$2
  done
  return 0
}
one_error_line() { # FILE: exactly one "cliqoctl add: error: ..." line
  local n
  n=$(grep -c 'error:' "$1" || true)
  [ "$n" -eq 1 ] || fail "expected one error line, got: $(cat "$1")"
  grep -q '^cliqoctl add: error: ' "$1" || fail "error line has the wrong form: $(cat "$1")"
}
nothing_changed() { # DESCRIPTION
  say "$1: nothing on either cluster"
  assert_no_peering_objects "$A"
  assert_no_peering_objects "$B"
}
# post BODY-FILE: POST /identity on B; status, headers and body in POST_CODE, $PEER_TMP/post.h and .b.
post() {
  POST_CODE=$(curl -sk -o "$PEER_TMP/post.b" -D "$PEER_TMP/post.h" -w '%{http_code}' --max-time 10 -X POST \
    -H 'Content-Type: application/json' --data-binary "@$1" "$URL/identity" || true)
}
error_is() { # WANT: the JSON error code of the last answer
  local got
  got=$(jq -r .error "$PEER_TMP/post.b" 2>/dev/null || true)
  [ "$got" = "$1" ] || fail "error '$got', want '$1': $(cat "$PEER_TMP/post.b")"
}

say "wrong token"
with_flag --token "$(openssl rand -hex 32)"
run_add "$PEER_TMP/out" "$PEER_TMP/err" "${ARGS[@]}" --timeout 30s
[ "$ADD_RC" -ne 0 ] || fail "add with a wrong token succeeded"
one_error_line "$PEER_TMP/err"
grep 'error:' "$PEER_TMP/err" | grep_q -i token || fail "the error does not mention the token: $(cat "$PEER_TMP/err")"
say "add: $(grep 'error:' "$PEER_TMP/err")"
grep -q "wrong peering token from 127.0.0.1 (cluster $A_ID)" "$(agent_log "$B")" ||
  fail "no 'wrong peering token' line in $B's agent log"
nothing_changed "wrong token"

say "wrong CA hash"
bad_hash="sha256:$(sha256sum </dev/null | cut -d' ' -f1)"
with_flag --ca-cert-hash "$bad_hash"
run_add "$PEER_TMP/out" "$PEER_TMP/err" "${ARGS[@]}" --timeout 30s
[ "$ADD_RC" -ne 0 ] || fail "add with a wrong CA hash succeeded"
one_error_line "$PEER_TMP/err"
contains "the error names the hash" "$(cat "$PEER_TMP/err")" "does not match --ca-cert-hash"
contains "the error names the expected hash" "$(cat "$PEER_TMP/err")" "expected $bad_hash"
say "add: $(grep 'error:' "$PEER_TMP/err")"
nothing_changed "wrong CA hash"

say "truncated body"
printf '%s' '{"clusterID":"abc' >"$PEER_TMP/trunc.json"
post "$PEER_TMP/trunc.json"
[ "$POST_CODE" = 400 ] || fail "truncated body: $POST_CODE, want 400"
error_is malformed-json
nothing_changed "truncated body"

say "oversized body"
python3 -c 'import json, sys; json.dump({"clusterID": "c" * 20480, "clusterName": "big", "token": "0" * 64}, sys.stdout)' \
  >"$PEER_TMP/big.json"
[ "$(stat -c %s "$PEER_TMP/big.json")" -gt 20480 ] || fail "the big body is not over 20 KiB"
post "$PEER_TMP/big.json"
[ "$POST_CODE" = 413 ] || fail "oversized body: $POST_CODE, want 413"
grep -q '"error":"body-too-large"' "$PEER_TMP/post.b" || fail "413 body is not the body-too-large JSON error"
say "413 answer: $(cat "$PEER_TMP/post.b")"
nothing_changed "oversized body"

say "rate limit: 5 wrong tokens are refused with 403, the 6th attempt with 429"
restart_agent "$B"
for i in 1 2 3 4 5 6; do
  identity_body "$PEER_TMP/a.key" "$B_ID" "$A_ID" probe "$(openssl rand -hex 32)" >"$PEER_TMP/wrong.json"
  post "$PEER_TMP/wrong.json"
  if [ "$i" -le 5 ]; then
    [ "$POST_CODE" = 403 ] || fail "wrong token attempt $i: $POST_CODE, want 403"
    error_is forbidden
  fi
done
[ "$POST_CODE" = 429 ] || fail "6th attempt: $POST_CODE, want 429"
error_is too-many-attempts
grep -qi '^retry-after: *[0-9]' "$PEER_TMP/post.h" || fail "no Retry-After header: $(cat "$PEER_TMP/post.h")"
say "429 with $(grep -i '^retry-after' "$PEER_TMP/post.h" | tr -d '\r')"
[ "$(current_log "$B" | grep -c 'wrong peering token from 127.0.0.1')" -eq 5 ] ||
  fail "$B's agent did not log the 5 wrong tokens"
current_log "$B" | grep_q 'refused a peering request from 127.0.0.1: too many failed attempts' ||
  fail "$B's agent did not log the rate limit"
# A right token is never refused by the limiter (issue 17, point 6: the address may be shared): B's shared
# token, for a cluster ID of the test's own, is issued (201); its tenant namespace is deleted right after. A wrong
# token after it is still refused with 429 (a success does not reset the count).
shared_token=$(jpath "$B" '{.data.token}' secret -n cliqo auth-token | base64 -d)
probe_id=$(cat /proc/sys/kernel/random/uuid)
identity_body "$PEER_TMP/a.key" "$B_ID" "$probe_id" probe-ok "$shared_token" >"$PEER_TMP/right.json"
post "$PEER_TMP/right.json"
[ "$POST_CODE" = 201 ] || fail "the shared token while blocked: $POST_CODE, want 201: $(cat "$PEER_TMP/post.b")"
kc "$B" delete namespace -l "discovery.liqo.io/cluster-id=$probe_id" --wait=true --timeout=60s >/dev/null ||
  fail "cannot delete the probe's tenant namespace"
identity_body "$PEER_TMP/a.key" "$B_ID" "$A_ID" probe "$(openssl rand -hex 32)" >"$PEER_TMP/wrong.json"
post "$PEER_TMP/wrong.json"
[ "$POST_CODE" = 429 ] || fail "a wrong token after it: $POST_CODE, want 429"
nothing_changed "rate limit"
say "restart $B's agent: the limiter is in memory, other tests add from 127.0.0.1"
restart_agent "$B"
identity_body "$PEER_TMP/a.key" "$B_ID" "$A_ID" probe "$(openssl rand -hex 32)" >"$PEER_TMP/wrong.json"
post "$PEER_TMP/wrong.json"
[ "$POST_CODE" = 403 ] || fail "after the restart: $POST_CODE, want 403 (not blocked any more)"
nothing_changed "probes"
finish
pass "every refusal left both clusters untouched"
