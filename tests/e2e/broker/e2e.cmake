# The broker group (tests/e2e/broker/, docs/broker.md): four clusters (base port in tests/ports.tsv), the consumer
# C = cluster-1, the broker K = cluster-2 and two providers P1 = cluster-3, P2 = cluster-4, one simulated node
# each. `setup` installs cliqo, starts one agent per cluster and cliqo-broker beside K's agent (local processes
# living for the whole group), peers K with P1 and P2 and C with K; the tests in between share that state and
# leave it as they found it; `teardown` unpeers and stops everything. They run one at a time, in this order.
if(TARGET cliqo-agent AND TARGET cliqo-broker AND TARGET test-broker-openapi)
    cliqo_e2e_shared_group(broker 4 setup catalog toggle aggregate policy restart errors hostile cli dashboard deploy teardown)
    set_property(TEST e2e.broker.up APPEND PROPERTY ENVIRONMENT "CLIQO_DEV_NODES=1")
    foreach(t setup catalog toggle aggregate policy restart errors hostile cli dashboard deploy teardown)
        set_property(TEST e2e.broker.${t} APPEND PROPERTY ENVIRONMENT
            "CLIQO_BROKER=$<TARGET_FILE:cliqo-broker>"
            "CLIQO_OPENAPI_CHECK=$<TARGET_FILE:test-broker-openapi>"
            "CLIQO_CDP=${E2E_DIR}/lib/cdp.py")
    endforeach()
endif()
# The two four-cluster groups (this one and advertisement) never run side by side in CI's two lanes: eight
# control planes on two cores made a 10 s wait of advertisement.values time out (it took 157 s instead of 29 s).
if(TARGET cliqo-agent AND TARGET cliqo-broker AND TARGET test-broker-openapi)
    foreach(t up down setup catalog toggle aggregate policy restart errors hostile cli dashboard deploy teardown)
        set_property(TEST e2e.broker.${t} APPEND PROPERTY RESOURCE_LOCK e2e_four_clusters)
    endforeach()
endif()
