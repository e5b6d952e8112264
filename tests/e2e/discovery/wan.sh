#!/usr/bin/env bash
# WAN discovery through a SearchDomain against a real DNS server: dnsmasq (Debian's dnsmasq-base)
# on 127.0.0.1 of test host 1 (base port + 38), serving PTR, SRV and TXT records of the domain wan.test.
#   - creation: ForeignClusters labelled WAN, owned by the SearchDomain, URL from TXT (cluster 2)
#     or from SRV (a cluster "wanx"); a malformed instance is ignored; an instance whose lookups
#     fail (forwarded to a dead server) does not stop the others and shows in the status (Partial);
#   - update: a changed SRV record changes the ForeignCluster's URL;
#   - an outage of the DNS server changes nothing but the status (Error);
#   - removal: an instance that leaves DNS loses its ForeignCluster; deleting the SearchDomain
#     removes the rest (owner references).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
: "${DNSMASQ:?DNSMASQ must name the dnsmasq binary of dnsmasq-base}"
[ -x "$DNSMASQ" ] || fail "dnsmasq not found at '$DNSMASQ' (install dnsmasq-base)"
DNS_PORT=$((CLIQO_DEV_BASE_PORT + 38))
DOM=wan.test
SVC=_liqo_auth._tcp
DNS_PID=
cleanup_hook() { stop_dns; }
setup
start_agents 1
json=$(cqn 2 generate-add-command -o json) || fail "generate-add-command on cluster 2 failed"
H2=$(sed -n 's/.*"caCertHash": "\(.*\)".*/\1/p' <<<"$json")
I2="cluster-2_$ID2"

# start_dns X-PORT [with-x]: dnsmasq with the zone; instance wanx on port X-PORT (or absent).
start_dns() {
  local xport=$1 with_x=${2:-yes} args
  args=(--keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts --pid-file=
    --listen-address=127.0.0.1 --bind-interfaces "--port=$DNS_PORT" --user=root "--local=/$DOM/"
    "--ptr-record=$SVC.$DOM,$I2.$SVC.$DOM"
    "--srv-host=$I2.$SVC.$DOM,auth2.$DOM,$(auth_port 2)"
    "--txt-record=$I2.$SVC.$DOM,txtvers=1,id=$ID2,name=cluster-2,url=$(auth_url 2),cahash=$H2"
    "--ptr-record=$SVC.$DOM,z_wanz.$SVC.$DOM"
    "--srv-host=z_wanz.$SVC.$DOM,authz.$DOM,1"
    "--txt-record=z_wanz.$SVC.$DOM,id=wanz,url=http://authz.$DOM"
    "--ptr-record=$SVC.$DOM,y_wany.$SVC.$DOM"
    "--server=/y_wany.$SVC.$DOM/127.0.0.1#9")
  if [ "$with_x" = yes ]; then
    args+=("--ptr-record=$SVC.$DOM,x_wanx.$SVC.$DOM" "--srv-host=x_wanx.$SVC.$DOM,authx.$DOM,$xport"
      "--txt-record=x_wanx.$SVC.$DOM,txtvers=1,id=wanx,name=wanx")
  fi
  nsenter --net="/run/netns/$(net_ns 1)" "$DNSMASQ" "${args[@]}" >>"$DTMP/dnsmasq.log" 2>&1 &
  DNS_PID=$!
  dns_up() { nsx 1 ss -Huln "sport = :$DNS_PORT" | grep_q .; }
  wait_for 30 "dnsmasq listens" dns_up
}
stop_dns() {
  [ -n "$DNS_PID" ] || return 0
  kill -TERM "$DNS_PID" 2>/dev/null || true
  wait "$DNS_PID" 2>/dev/null || true
  DNS_PID=
}
sd_field() { jgetn 1 "$1" searchdomain wan-test; }
sd_result_is() { [ "$(sd_field '{.status.discovery.result}')" = "$1" ]; }
contains() { grep -qF -- "$2" <<<"$1" || fail "'$2' not in: $1"; }

start_dns 19999
kcn 1 apply -f - >/dev/null <<EOF || fail "cannot create the SearchDomain"
apiVersion: discovery.liqo.io/v1alpha1
kind: SearchDomain
metadata:
  name: wan-test
spec:
  domain: $DOM
  dnsServer: 127.0.0.1:$DNS_PORT
  refreshSeconds: 2
EOF
SD_UID=$(jgetn 1 '{.metadata.uid}' searchdomain wan-test)

wait_for 60 "cluster 2 is found on the WAN" fc_announced 1 "$ID2"
[ "$(fc_field 1 "$ID2" '{.metadata.labels.discovery\.liqo\.io/discovery-type}')" = WAN ] || fail "not labelled WAN"
[ "$(fc_field 1 "$ID2" '{.metadata.ownerReferences[0].uid}')" = "$SD_UID" ] || fail "not owned by the SearchDomain"
[ "$(fc_field 1 "$ID2" '{.spec.foreignAuthUrl}')" = "$(auth_url 2)" ] || fail "wrong URL for cluster 2"
[ "$(fc_field 1 "$ID2" '{.status.discovery.searchDomain}')" = wan-test ] || fail "no searchDomain in status"
[ "$(fc_field 1 "$ID2" '{.status.discovery.caCertHash}')" = "$H2" ] || fail "announced hash not shown"
wait_for 60 "wanx is found, its URL from SRV" fc_announced 1 wanx
[ "$(fc_field 1 wanx '{.spec.foreignAuthUrl}')" = "https://authx.$DOM:19999" ] || fail "wanx: URL $(fc_field 1 wanx '{.spec.foreignAuthUrl}')"
fc_exists 1 wanz && fail "the malformed instance z got a ForeignCluster"
wait_for 60 "the failing instance shows in the SearchDomain's status" sd_result_is Partial
contains "$(sd_field '{.status.discovery.message}')" "y_wany"
[ "$(sd_field '{.status.discovery.failed}')" = 1 ] || fail "failed count: $(sd_field '{.status.discovery.failed}')"
[ "$(sd_field '{.status.discovery.ignored}')" -ge 1 ] || fail "the malformed instance is not counted"
[ "$(metric 1 cliqo_discovery_records_ignored_total 'source="wan"')" -ge 1 ] || fail "no WAN record counted as ignored"
out=$(cqn 1 discovered) || fail "cliqoctl discovered failed"
grep -q "^$ID2 .*WAN(wan-test)" <<<"$out" || fail "cliqoctl discovered does not show the WAN cluster: $out"
say "created from PTR/SRV/TXT; one failing instance did not stop the others"

# Update: the SRV record of wanx changes.
stop_dns
start_dns 20000
url_is() { [ "$(fc_field 1 wanx '{.spec.foreignAuthUrl}')" = "$1" ]; }
wait_for 60 "wanx follows its new SRV record" url_is "https://authx.$DOM:20000"

# Outage: a DNS server that does not answer changes nothing but the status.
stop_dns
wait_for 60 "the SearchDomain reports the DNS error" sd_result_is Error
contains "$(sd_field '{.status.discovery.message}')" "PTR"
fc_exists 1 wanx && fc_exists 1 "$ID2" || fail "a DNS outage removed ForeignClusters"

# Removal: wanx leaves DNS.
start_dns 20000 no
wait_for 60 "wanx's ForeignCluster goes when it leaves DNS" fc_gone 1 wanx
fc_exists 1 "$ID2" || fail "cluster 2 went with wanx"
[ "$(metric 1 cliqo_discovery_events_total 'event="wan-refresh-ok"')" -ge 3 ] || fail "refreshes not counted"

kcn 1 delete searchdomain wan-test >/dev/null || fail "cannot delete the SearchDomain"
wait_for 90 "the SearchDomain's ForeignClusters go with it" fc_gone 1 "$ID2"
stop_dns
finish
pass "WAN: created, updated, kept through an outage, removed"
