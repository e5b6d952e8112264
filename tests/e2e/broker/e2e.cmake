# The broker group (tests/e2e/broker/, docs/broker.md): four clusters, the consumer C = cluster-1, the broker
# K = cluster-2 and two providers P1 = cluster-3, P2 = cluster-4. `setup` installs cliqo, starts one agent per
# cluster and cliqo-broker beside K's agent (local processes living for the whole group; the broker's API at
# base+40), peers K with P1 and P2 and C with K; the tests in between share that state and leave it as they
# found it; `teardown` unpeers and stops everything. They run one at a time, in this order, on the
# advertisement group's four clusters (base port 18800, two simulated nodes each, pod CIDRs of their own:
# P1's and P2's overlap, so K remaps one), after that group's teardown: one `up` and `down` of four
# clusters fewer (about 80 s of the lane in a cold run). The broker's figures are read from what the
# clusters report, not assumed.
if(TARGET cliqo-agent AND TARGET cliqo-broker AND TARGET test-broker-openapi)
    set(broker_tests setup catalog toggle aggregate policy restart errors hostile cli dashboard deploy teardown)
    cliqo_e2e_shared_group_on(advertisement broker ${broker_tests})
    foreach(t ${broker_tests})
        set_property(TEST e2e.broker.${t} APPEND PROPERTY ENVIRONMENT
            "CLIQO_BROKER=$<TARGET_FILE:cliqo-broker>"
            "CLIQO_OPENAPI_CHECK=$<TARGET_FILE:test-broker-openapi>"
            "CLIQO_CDP=${E2E_DIR}/lib/cdp.py")
    endforeach()
endif()
