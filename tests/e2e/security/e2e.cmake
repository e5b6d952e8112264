# The security group (tests/e2e/security/, docs/security.md): three clusters (base port 19800), A =
# cluster-1 a consumer, B = cluster-2 the provider, C = cluster-3 a second consumer of B that plays the
# hostile peer; one simulated node each. `setup` installs cliqo, starts one agent per cluster and peers A
# and C with B; every test in between tries attacks on identities, credentials, the network servers and
# the network exchange with the credentials a hostile party really holds, and leaves the shared state as
# it found it; `teardown` unpeers and checks B is clean. The admission side is the group secadmit
# (webhook-auth here: who may call B's webhooks at all).
if(TARGET cliqo-agent)
    cliqo_e2e_shared_group(security 3 setup identity limiter peer-tls limits sa-tokens peer-cidr
                            webhook-auth teardown)
    set_property(TEST e2e.security.up APPEND PROPERTY ENVIRONMENT "CLIQO_DEV_NODES=1")
endif()
