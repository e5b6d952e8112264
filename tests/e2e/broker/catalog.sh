#!/usr/bin/env bash
# The catalog (docs/broker.md, "Catalog"): GET /api/clusters lists K's ForeignClusters as Kubernetes objects, the
# providers with their offers (equal to the Advertisements K has from them) and measured KPIs; filters, pages
# with a continue token, ETag and If-None-Match.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/common.sh"
trap brk_on_exit EXIT
ensure_agents
ensure_broker
ids

say "every ForeignCluster of K, as an object"
body=$(clusters)
expect GET /api/clusters 200
[ "$(jq 'length' <<<"$body")" = 3 ] || fail "expected 3 clusters (C, P1, P2): $(jq -c '[.[].metadata.name]' <<<"$body")"
jq -e 'all(.[]; .apiVersion == "discovery.liqo.io/v1alpha1" and .kind == "ForeignCluster" and
  (.metadata.name | type == "string") and (.spec | type == "object"))' <<<"$body" >/dev/null ||
  fail "an item is not a ForeignCluster object: $body"
[ "$(cluster_field "$C_ID" .broker.provider)" = false ] || fail "C is listed as a provider"

say "the providers' offers are what K received, their KPIs are measured"
for p in "$P1" "$P2"; do
  want=$(adv_hard "$K" "$p")
  [ "$want" != "{}" ] || fail "K has no Advertisement from $p"
  wait_for 20 "the catalog shows $p's offer as K's Advertisement from it ($want)" eval \
    "[ \"\$(cluster_field $(id_of "$p") '.broker.offer' | jq -cS .)\" = \"\$(jq -cS . <<<'$want')\" ]"
  wait_for 20 "probes of $p answered" eval "[ \"\$(cluster_field $(id_of "$p") '.broker.kpi.probes')\" -ge 2 ] 2>/dev/null"
  kpi=$(cluster_field "$(id_of "$p")" '.broker.kpi')
  jq -e '.uptimeSeconds >= 0 and .latencyMs >= 0 and .availabilityPercent > 0 and .failures >= 0' <<<"$kpi" >/dev/null ||
    fail "$p's KPIs are not measured: $kpi"
done

say "filters: fieldSelector, labelSelector"
[ "$(api GET "/api/clusters?fieldSelector=metadata.name%3D$P1" | jq -r '[.[].metadata.name] | join(",")')" = "$P1" ] ||
  fail "fieldSelector metadata.name=$P1: $API_BODY"
[ "$(api GET "/api/clusters?fieldSelector=metadata.name!%3D$P1" | jq 'length')" = 2 ] || fail "fieldSelector !=: $API_BODY"
n=$(api GET "/api/clusters?labelSelector=discovery.liqo.io%2Fcluster-id%20in%20($P1_ID,$P2_ID)" | jq 'length')
[ "$n" = 2 ] || fail "labelSelector cluster-id in (P1, P2): $n items ($API_BODY)"
[ "$(api GET "/api/clusters?labelSelector=!discovery.liqo.io%2Fcluster-id" | jq 'length')" = 0 ] ||
  fail "labelSelector !cluster-id: $API_BODY"

say "pages of one, following the continue token"
hdr=$(mktemp)
names=() cont=
for i in 1 2 3 4; do
  q="limit=1"
  [ -z "$cont" ] || q="$q&continue=$cont"
  page=$(curl -s -D "$hdr" "$API/api/clusters?$q")
  [ "$(jq 'length' <<<"$page")" = 1 ] || fail "page $i: $page"
  names+=("$(jq -r '.[0].metadata.name' <<<"$page")")
  cont=$(tr -d '\r' <"$hdr" | sed -n 's/^[Cc]ontinue: //p')
  [ -n "$cont" ] || break
done
[ "${#names[@]}" = 3 ] && [ -z "$cont" ] || fail "3 pages expected, the last without a token: ${names[*]} (token '$cont')"
[ "$(printf '%s\n' "${names[@]}" | sort -u | wc -l)" = 3 ] || fail "pages repeat a cluster: ${names[*]}"
expect GET "/api/clusters?limit=1&continue=00000000000000000000000000000000_$P1" 410
expect GET "/api/clusters?limit=1&continue=garbage" 400
expect GET "/api/clusters?limit=0" 400
expect GET "/api/clusters?fieldSelector=spec.x%3D1" 400

say "ETag and If-None-Match"
curl -s -D "$hdr" -o /dev/null "$API/api/clusters?fieldSelector=metadata.name%3D$C"
etag=$(tr -d '\r' <"$hdr" | sed -n 's/^[Ee][Tt]ag: //p')
[ -n "$etag" ] || fail "no ETag"
# C's entry carries no KPI, but the generation moves with every probe: retry until one answer lands between two.
wait_for 10 "a 304 for If-None-Match" eval \
  "e=\$(curl -s -D - -o /dev/null \"$API/api/clusters?fieldSelector=metadata.name%3D$C\" | tr -d '\r' | sed -n 's/^[Ee][Tt]ag: //p');
   [ \"\$(curl -s -o /dev/null -w '%{http_code}' -H \"If-None-Match: \$e\" \"$API/api/clusters?fieldSelector=metadata.name%3D$C\")\" = 304 ]"
rm -f "$hdr"
pass "catalog: 3 clusters, offers equal the Advertisements, KPIs measured; filters, pages, 410, 304"
