# The security group (tests/e2e/security/ and tests/e2e/secadmit/, docs/security.md): three clusters (base port
# 19800), A = cluster-1 a consumer, B = cluster-2 the provider, C = cluster-3 a second consumer of B that plays
# the hostile peer; one simulated node each. `setup` installs cliqo, starts one agent per cluster and peers A
# and C with B; every test in between tries attacks with the credentials a hostile party really holds, and
# leaves the shared state as it found it; `teardown` unpeers and checks B is clean. The tests of
# tests/e2e/security/ attack identities, credentials, the network servers and the network exchange
# (webhook-auth: who may call B's webhooks at all); those of tests/e2e/secadmit/ (named e2e.secadmit.*) the
# admission side: what a consumer's credentials may create on its provider (Pod Security, placement,
# Services, EndpointSlices, Secrets, namespaces) and what a provider may report back (pod addresses).
# secadmit was a group of its own with the same three clusters and setup, to run beside security in
# another lane; with two lanes both ran in lane 1, so they share one `up`, `setup`, `teardown` and `down`
# (about 88 s of the lane in a cold run).
if(TARGET cliqo-agent)
    cliqo_e2e_shared_group(security 3 setup identity limiter peer-tls limits sa-tokens peer-cidr
                            webhook-auth secadmit/podsec secadmit/placement secadmit/objects secadmit/namespaces
                            secadmit/provider-ips secadmit/quota secadmit/not-ready teardown)
    set_property(TEST e2e.security.up APPEND PROPERTY ENVIRONMENT "CLIQO_DEV_NODES=1")
endif()
