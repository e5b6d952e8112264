#!/usr/bin/env bash
# The periodic re-send (refreshSeconds, 15 s in this group): an offer that does not change is sent again, its
# timestamp advances and its timeToLive (timestamp + ttlSeconds, 180 s here) moves with it, so a consumer
# never lets a live provider's Advertisement expire. The consumer's ForeignCluster shows what was received.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
trap adv_on_exit EXIT
ensure_agents
ids
wait_all_shared
epoch() { date -u -d "$1" +%s; }
copy() { adv_field "$P1" '{.spec.timestamp} {.spec.timeToLive} {.metadata.resourceVersion}'; }
offer() { adv_field "$P1" '{.spec.resourceQuota.hard}'; }

say "$A's ForeignCluster of each provider shows the Advertisement received and accepted"
for p in "${PROVIDERS[@]}"; do
  got=$(jget "$A" '{.status.advertisement.received.status}/{.status.advertisement.received.reason}/{.status.advertisement.received.virtualNode}' \
    foreigncluster "$p")
  want="$(adv_field "$p" '{.status.advertisementStatus}/{.status.reason}')/$(vnode_of "$p")"
  [ "$got" = "$want" ] && [ "${got%%/*}" = Accepted ] || fail "$p's ForeignCluster shows received '$got', not '$want'"
done

say "$P1's unchanged offer is sent again within one refresh period (15 s)"
read -r ts0 ttl0 rv0 <<<"$(copy)"
[ -n "$ts0" ] && [ -n "$ttl0" ] || fail "$P1's Advertisement has no timestamp or timeToLive"
[ $(($(epoch "$ttl0") - $(epoch "$ts0"))) = 180 ] || fail "timeToLive $ttl0 is not timestamp $ts0 + 180 s"
offer0=$(offer)
wait_for 25 "a new copy of $P1's Advertisement (timestamp $ts0)" eval '[ "$(copy | cut -d" " -f1)" != "$ts0" ]'
read -r ts1 ttl1 rv1 <<<"$(copy)"
[ "$rv1" != "$rv0" ] || fail "the timestamp moved without a new resourceVersion"
[ "$(epoch "$ts1")" -gt "$(epoch "$ts0")" ] || fail "the timestamp went from $ts0 to $ts1"
[ $(($(epoch "$ttl1") - $(epoch "$ts1"))) = 180 ] || fail "timeToLive $ttl1 is not timestamp $ts1 + 180 s"
[ "$(epoch "$ttl1")" -gt "$(epoch "$ttl0")" ] || fail "timeToLive did not move: $ttl0 -> $ttl1"
[ "$(offer)" = "$offer0" ] || fail "the offer changed meanwhile ($offer0 -> $(offer)): this was not a refresh"
grep -q "sending the Advertisement to $A_ID: refresh" "$(agent_log "$P1")" ||
  fail "$P1's log does not say it re-sent for the refresh: $(grep -i "$A_ID" "$(agent_log "$P1")" | tail -3)"
echo "FIGURE refresh timestamp $ts0 -> $ts1, timeToLive $ttl0 -> $ttl1"
pass "the unchanged offer was re-sent; timestamp and timeToLive advanced together"
