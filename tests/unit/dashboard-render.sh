#!/usr/bin/env bash
# tests/unit/dashboard-render.sh: the broker's dashboard (src/broker/dashboard/) in headless Chromium, driven by
# tests/e2e/lib/cdp.py, without the broker: tests/unit/dashboard-fake-api.py serves the three files (under
# Content-Security-Policy default-src 'self') and fixture answers of the API on 127.0.0.1. Checks that the page
# renders the fixture's clusters (identity, peering, offer, KPIs, selection, toggle), keeps hostile text as text,
# polls with If-None-Match, follows a change of the list, shows an error state, toggles with the bearer token
# (also when a changed list arrives between the press and the release of the click: the rows are then
# replaced only after it, or the click would be lost, as it was once in the broker's e2e dashboard test),
# and keeps the policy typed in its editor when a load that was on its way lands after the typing
# kept in sessionStorage, shows a 401's and a 400's message, saves the policy, and breaks no CSP rule; and that
# the driver fails as documented (timeout, JavaScript exception, CSP violation, HTTP 404, bad usage) and leaves
# no browser behind. The real dashboard test against cliqo-broker is the broker's e2e group's.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
CDP=$root/tests/e2e/lib/cdp.py
TOKEN=secret-token-42
fail() { printf 'dashboard-render: FAIL: %s\n' "$*" >&2; exit 1; }
say() { printf 'dashboard-render: %s\n' "$*"; }

command -v chromium >/dev/null || fail "chromium is not installed (scripts/install-deps.sh installs it)"
[ -x /usr/bin/python3 ] || fail "/usr/bin/python3 is not installed (scripts/install-deps.sh installs it)"

tmp=$(mktemp -d)
server=
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
# cdp.py makes its browser profile under TMPDIR: here, so that what it leaves behind can be seen.
export TMPDIR=$tmp/cdp
mkdir -p "$TMPDIR"

cat >"$tmp/clusters.json" <<'EOF'
[
 {"apiVersion": "discovery.liqo.io/v1alpha1", "kind": "ForeignCluster", "metadata": {"name": "c1"},
  "spec": {"clusterIdentity": {"clusterID": "c1", "clusterName": "cluster-one"}},
  "status": {"peeringConditions": [{"type": "OutgoingPeering", "status": "Established", "reason": "Joined"},
                                   {"type": "IncomingPeering", "status": "None"}],
             "advertisement": {"received": {"status": "Accepted"}}},
  "broker": {"enabled": true, "selected": true, "offer": {"cpu": "4", "memory": "8Gi"},
             "kpi": {"uptimeSeconds": 3725, "latencyMs": 12, "availabilityPercent": 99, "probes": 120,
                     "failures": 1}}},
 {"apiVersion": "discovery.liqo.io/v1alpha1", "kind": "ForeignCluster", "metadata": {"name": "c2"},
  "spec": {"clusterIdentity": {"clusterID": "c2", "clusterName": "<img src=x onerror=\"window.pwned=1\">"}},
  "broker": {"enabled": false, "selected": false, "why": "disabled by toggle", "offer": {"nvidia.com/gpu": "1"},
             "kpi": {"uptimeSeconds": null, "latencyMs": null, "availabilityPercent": null, "probes": 0,
                     "failures": 0, "jitterMs": 3}}}
]
EOF

/usr/bin/python3 "$root/tests/unit/dashboard-fake-api.py" "$root/src/broker/dashboard" "$tmp" "$TOKEN" &
server=$!
for _ in $(seq 100); do
  [ -s "$tmp/port" ] && break
  kill -0 "$server" 2>/dev/null || fail "the fake API exited"
  sleep 0.1
done
[ -s "$tmp/port" ] || fail "the fake API did not listen within 10 s"
url=http://127.0.0.1:$(cat "$tmp/port")/

# The page, in one browser: every step is bounded (cdp.py --timeout), the 2 s polls included.
cat >"$tmp/steps.json" <<'EOF'
[
 ["eval", "window.row = (id) => document.querySelector(`#cluster-rows tr[data-cluster-id=\"${id}\"]`); window.cell = (id, sel) => row(id).querySelector(sel).textContent; window.stats = () => fetch('/fake/stats').then((r) => r.json()); true"],
 ["wait", "document.querySelectorAll('#cluster-rows tr[data-cluster-id]').length === 2"],
 ["assert", "document.querySelector('#status').dataset.state === 'ok' && document.querySelector('#empty').hidden"],
 ["assert", "cell('c1', '.c-name') === 'cluster-one' && cell('c1', '.c-id') === 'c1'"],
 ["assert", "cell('c1', '[data-k=OutgoingPeering] .v') === 'Established' && cell('c1', '[data-k=IncomingPeering] .v') === 'None' && cell('c1', '[data-k=\"advertisement.received\"] .v') === 'Accepted'"],
 ["assert", "cell('c1', '.c-offer [data-k=cpu] .v') === '4' && cell('c1', '.c-offer [data-k=memory] .v') === '8Gi'"],
 ["assert", "cell('c1', '[data-k=uptimeSeconds] .v') === '1 h 2 min' && cell('c1', '[data-k=latencyMs] .v') === '12 ms' && cell('c1', '[data-k=availabilityPercent] .v') === '99 %' && cell('c1', '[data-k=probes] .v') === '120' && cell('c1', '[data-k=failures] .v') === '1'"],
 ["assert", "row('c1').dataset.enabled === 'true' && row('c1').querySelector('.toggle').checked && row('c1').dataset.selected === 'true' && cell('c1', '.c-selected') === 'selected'"],
 ["assert", "cell('c2', '.c-name') === '<img src=x onerror=\"window.pwned=1\">' && !document.querySelector('#clusters img') && window.pwned === undefined"],
 ["assert", "cell('c2', '.c-selected .why') === 'disabled by toggle' && cell('c2', '[data-k=latencyMs] .v') === '—' && cell('c2', '[data-k=jitterMs] .v') === '3' && cell('c2', '[data-k=\"nvidia.com/gpu\"] .v') === '1' && cell('c2', '.c-peering') === '—' && !row('c2').querySelector('.toggle').checked"],
 ["wait", "+document.querySelector('#status').dataset.polls >= 2"],
 ["assert", "stats().then((s) => s.notModified >= 1)"],

 ["click", "tr[data-cluster-id=\"c1\"] .toggle"],
 ["wait", "document.querySelector('#notice').textContent.includes('a bearer token is required (401)') && !document.querySelector('#notice').hidden"],
 ["wait", "row('c1').querySelector('.toggle').checked && !row('c1').querySelector('.toggle').disabled"],
 ["set", "#token", "secret-token-42"],
 ["assert", "sessionStorage.getItem('cliqo-broker-token') === 'secret-token-42'"],
 ["click", "tr[data-cluster-id=\"c1\"] .toggle"],
 ["wait", "row('c1').dataset.enabled === 'false' && !row('c1').querySelector('.toggle').checked && document.querySelector('#notice').hidden"],
 ["assert", "stats().then((s) => s.toggles === 1)"],
 ["wait", "fetch('api/clusters').then((r) => r.json()).then((a) => a[0].broker.enabled === false)"],

 ["eval", "fetch('api/clusters').then((r) => r.json()).then((a) => { a.push({apiVersion: 'discovery.liqo.io/v1alpha1', kind: 'ForeignCluster', metadata: {name: 'c3'}, spec: {clusterIdentity: {clusterID: 'c3', clusterName: 'cluster-three'}}}); return fetch('/fake/clusters', {method: 'PUT', body: JSON.stringify(a)}); }).then((r) => r.ok)"],
 ["wait", "document.querySelectorAll('#cluster-rows tr[data-cluster-id]').length === 3 && cell('c3', '.c-name') === 'cluster-three' && cell('c3', '.c-offer') === '—' && cell('c3', '.c-kpi') === '—' && cell('c3', '.c-selected') === '—'"],
 ["eval", "window.saved = null; fetch('api/clusters').then((r) => r.text()).then((t) => { window.saved = t; return fetch('/fake/clusters', {method: 'PUT', body: '{\"not\": \"a list\"}'}); }).then((r) => r.ok)"],
 ["wait", "document.querySelector('#status').dataset.state === 'error' && document.querySelector('#status').textContent.includes('not a JSON array')"],
 ["assert", "document.querySelectorAll('#cluster-rows tr[data-cluster-id]').length === 3"],
 ["eval", "fetch('/fake/clusters', {method: 'PUT', body: window.saved}).then((r) => r.ok)"],
 ["wait", "document.querySelector('#status').dataset.state === 'ok'"],
 ["press", "tr[data-cluster-id=\"c2\"] .toggle"],
 ["eval", "window.pollsAtPress = +document.querySelector('#status').dataset.polls; fetch('api/clusters').then((r) => r.json()).then((a) => { a[2].spec.clusterIdentity.clusterName = 'cluster-three-b'; return fetch('/fake/clusters', {method: 'PUT', body: JSON.stringify(a)}); }).then((r) => r.ok)"],
 ["wait", "+document.querySelector('#status').dataset.polls >= window.pollsAtPress + 2"],
 ["release"],
 ["wait", "row('c2').dataset.enabled === 'true' && row('c2').querySelector('.toggle').checked && cell('c3', '.c-name') === 'cluster-three-b'"],
 ["assert", "stats().then((s) => s.toggles === 2)"],

 ["wait", "document.querySelector('#policy').value.includes('\"maxLatencyMs\": 50') && document.querySelector('#policy-note').textContent.startsWith('Loaded')"],
 ["set", "#policy", "{\"bogus\": 1}"],
 ["click", "#policy-save"],
 ["wait", "document.querySelector('#policy-error').textContent === 'policy: unknown field \"bogus\" (400)'"],
 ["set", "#policy", "{\"maxLatencyMs\": "],
 ["click", "#policy-save"],
 ["wait", "document.querySelector('#policy-error').textContent.startsWith('Not valid JSON')"],
 ["assert", "stats().then((s) => s.policyPuts === 0)"],
 ["set", "#policy", "{\"maxLatencyMs\": 20, \"minUptimeSeconds\": 600}"],
 ["click", "#policy-save"],
 ["wait", "document.querySelector('#policy-note').textContent.startsWith('Saved') && document.querySelector('#policy-error').textContent === ''"],
 ["assert", "JSON.parse(document.querySelector('#policy').value).minUptimeSeconds === 600"],
 ["assert", "fetch('api/policy').then((r) => r.json()).then((p) => p.maxLatencyMs === 20 && p.minUptimeSeconds === 600)"],

 ["eval", "fetch('/fake/policy-delay', {method: 'PUT', body: '{\"seconds\": 1.5}'}).then((r) => r.ok)"],
 ["open", "URL_HERE"],
 ["set", "#policy", "{\"maxLatencyMs\": 7}"],
 ["wait", "+(document.querySelector('#policy').dataset.loads || 0) >= 1", 10],
 ["assert", "document.querySelector('#policy').value === '{\"maxLatencyMs\": 7}'"],
 ["eval", "fetch('/fake/policy-delay', {method: 'PUT', body: '{\"seconds\": 0}'}).then((r) => r.ok)"],
 ["click", "#policy-reload"],
 ["wait", "document.querySelector('#policy').value.includes('\"minUptimeSeconds\": 600')"],
 ["errors"]
]
EOF
sed -i "s|URL_HERE|$url|" "$tmp/steps.json" # the page again, for the late policy load above
# The token survives a reload of the page (sessionStorage is per tab: the reload is in the same run).
cat >"$tmp/reload.json" <<EOF
[
 ["set", "#token", "$TOKEN"],
 ["open", "$url"],
 ["wait", "document.querySelector('#token').value === '$TOKEN' && document.querySelectorAll('#cluster-rows tr').length === 3"],
 ["errors"],
 ["shot", "$tmp/dashboard.png"]
]
EOF

say "the page against the fake API ($url)"
"$CDP" --timeout 20 --url "$url" --script "$tmp/steps.json" >"$tmp/out" 2>"$tmp/err" || {
  cat "$tmp/err" >&2
  fail "the page's checks failed (above)"
}
say "the token through a reload, a screenshot"
"$CDP" --timeout 20 --url "$url" --script "$tmp/reload.json" >"$tmp/out" 2>"$tmp/err" || {
  cat "$tmp/err" >&2
  fail "the reload's checks failed (above)"
}
[ "$(head -c 8 "$tmp/dashboard.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
  fail "the screenshot is not a PNG"

# expect_fail STATUS PATTERN ARGS...: cdp.py exits STATUS and says PATTERN on stderr.
expect_fail() {
  local want=$1 pattern=$2 rc=0
  shift 2
  "$CDP" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ "$rc" = "$want" ] || { cat "$tmp/err" >&2; fail "cdp.py $* exited $rc, not $want"; }
  grep -E -- "$pattern" "$tmp/err" >/dev/null || { cat "$tmp/err" >&2; fail "cdp.py $*: no '$pattern' on stderr"; }
}
say "the driver's failures"
expect_fail 2 "unknown step 'bogus'" bogus
expect_fail 2 "step 'set' needs 2 argument" set '#token'
expect_fail 1 "step 2/2 \(wait .*\): timed out" --timeout 20 --url "$url" wait false 3
expect_fail 1 "step 2/3 \(eval .*\): ReferenceError: nosuch is not defined" --timeout 20 --url "$url" eval 'nosuch.x' eval 1
expect_fail 1 "step 3/3 \(errors\): 1 page error" --timeout 20 --url "${url}fake/inline" \
  assert "document.title === 'inline'" errors
grep -E "^  security error: .*Content Security Policy" "$tmp/err" >/dev/null || fail "the CSP violation is not listed"
expect_fail 1 "step 1/1 \(open .*\): .*HTTP status 404" --timeout 20 --url "${url}nope"

# Nothing left behind: no browser with a profile under this TMPDIR, no profile.
if pgrep -f -- "--user-data-dir=$TMPDIR/" >/dev/null; then
  fail "a browser outlived cdp.py: $(pgrep -af -- "--user-data-dir=$TMPDIR/" | head -3)"
fi
[ -z "$(ls -A "$TMPDIR")" ] || fail "cdp.py left $(ls -A "$TMPDIR") in TMPDIR"
say "PASS"
