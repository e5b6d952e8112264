#!/usr/bin/env bash
# The API's errors (docs/broker.md, "API quality and security"; docs/broker-openapi.yaml): each documented error
# for a bad request, as a JSON {"error": ...} with the status and Content-Type the description gives (checked by
# test-broker-openapi --check on every answer), the bearer token on the mutating endpoints, and the rate limit.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
trap brk_on_exit EXIT
ensure_agents
ensure_broker
ids
J='Content-Type: application/json'

say "400: bad parameters and bodies, each named"
expect POST "/api/toggle?enable=true" 400 -H "$(auth)"
grep_q '"id' <<<"$API_BODY" || fail "the 400 does not name id: $API_BODY"
expect POST "/api/toggle?id=$P1_ID&enable=yes" 400 -H "$(auth)"
grep_q 'enable' <<<"$API_BODY" || fail "the 400 does not name enable: $API_BODY"
expect POST "/api/toggle?id=Not_An_ID&enable=true" 400 -H "$(auth)"
expect PUT /api/policy 400 -H "$(auth)" -H "$J" -d '{"minUptimeSeconds": 5, "bogus": 1}'
grep_q 'bogus' <<<"$API_BODY" || fail "the 400 does not name the unknown field: $API_BODY"
expect PUT /api/policy 400 -H "$(auth)" -H "$J" -d '{"maxLatencyMs": "fast"}'
grep_q 'maxLatencyMs' <<<"$API_BODY" || fail "the 400 does not name the field of the wrong type: $API_BODY"
expect PUT /api/policy 400 -H "$(auth)" -H "$J" -d '{"minUptimeSeconds": 5'
expect GET "/api/clusters?limit=many" 400
expect GET "/api/clusters?labelSelector=a%20in%20(" 400

say "401: no token, a wrong token, on the mutating endpoints"
expect POST "/api/toggle?id=$P1_ID&enable=true" 401
expect POST "/api/toggle?id=$P1_ID&enable=true" 401 -H "Authorization: Bearer $(token)x"
expect PUT /api/policy 401 -H "$J" -d '{}'
expect GET "/api/toggle?id=$P1_ID&enable=true" 401

say "404, 405, 413, 415"
expect POST "/api/toggle?id=nobody-here&enable=true" 404 -H "$(auth)"
expect GET /api/nothing 404
expect DELETE /api/policy 405
expect POST /api/clusters 405
big=$(mktemp)
head -c 70000 /dev/zero | tr '\0' ' ' >"$big"
expect PUT /api/policy 413 -H "$(auth)" -H "$J" --data-binary @"$big"
rm -f "$big"
expect PUT /api/policy 415 -H "$(auth)" -H 'Content-Type: text/plain' -d '{}'

say "429 over the rate limit (50/s, bursts of 100), with Retry-After"
urls=()
for i in $(seq 300); do urls+=("$API/api/policy"); done
codes=$(curl -s -o /dev/null -w '%{http_code}\n' "${urls[@]}")
n429=$(grep -c '^429$' <<<"$codes" || true)
[ "$n429" -gt 0 ] || fail "300 requests at once were all served: no rate limit"
hdr=$(curl -s -D - -o /dev/null "${urls[@]:0:150}" | tr -d '\r' | grep -i '^retry-after:' | head -1)
[ -n "$hdr" ] || fail "a 429 without Retry-After"
wait_for 10 "the bucket refills" eval "[ \"\$(http_code $API/api/policy)\" = 200 ]"
pass "each documented error, matching the API description; $n429 of 300 requests at once refused with 429"
