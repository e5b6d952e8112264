#!/usr/bin/env bash
# Fixture of the discovery group: the test hosts (net.sh) and three clusters, cluster i inside
# namespace cqd-i (cliqoctl dev up --netns-prefix cqd-). Fails, never skips, without root.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/net.sh"
TEST_NAME=${TEST_NAME:-e2e.discovery.up}
net_require || fail "see above"
trap 'rc=$?; if [ $rc -ne 0 ]; then "$CLIQOCTL" dev down >/dev/null 2>&1 || true; net_down; fi' EXIT
net_up || fail "cannot create the test hosts"
"$CLIQOCTL" dev up --clusters 3 --netns-prefix "$NET_PREFIX-" || fail "cliqoctl dev up failed"
pass "3 clusters in network namespaces $NET_PREFIX-1..3, test host $NET_PREFIX-4"
