# The consumer-provider pair of a shared-state e2e group: A consumes, B provides (the group's common.sh sets
# A, B, B_ID and VNODE, and sources this after ../agents.sh).
tenant_of() { jget "$A" '{.status.tenantNamespace.local}' foreigncluster "$1"; }
adv_status() { jget "$A" '{.status.advertisementStatus}' advertisement -n "$(tenant_of "$B")" "advertisement-$B_ID"; }
vnode_ready() { [ "$(jget "$A" '{.status.conditions[?(@.type=="Ready")].status}' node "$VNODE")" = True ]; }
shared() { [ "$(adv_status)" = Accepted ] && vnode_ready; }
wait_shared() { wait_for "${1:-60}" "B's Advertisement Accepted and its virtual node Ready" shared; }
