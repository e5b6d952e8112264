# The offloading group (tests/e2e/offloading/, docs/offloading.md): two clusters (base port 19400), the consumer
# A = cluster-1 and the provider B = cluster-2 with the same pod CIDR (so addresses are remapped both ways),
# three simulated nodes each. `setup` installs cliqo, starts one agent per cluster (local processes with their
# kubelet API on base+8 and webhooks on base+9, living for the whole group) and peers A with B until B's virtual
# node is Ready on A; the tests in between share that state and leave it as they found it; `teardown` unpeers,
# checks that both sides are clean and stops the agents. They run one at a time, in this order.
if(TARGET cliqo-agent)
    set(off_tests setup namespaces webhook webhook-down offer mapping pods throttled logs-exec objects
        agent-restart provider-down teardown)
    cliqo_e2e_group(offloading 2 ${off_tests})
    set_property(TEST e2e.offloading.up APPEND PROPERTY ENVIRONMENT
        "CLIQO_DEV_NODES=3"
        "CLIQO_DEV_POD_CIDRS=cluster-1=10.210.0.0/16,cluster-2=10.210.0.0/16")
    set(prev "")
    foreach(t ${off_tests})
        set_property(TEST e2e.offloading.${t} APPEND PROPERTY ENVIRONMENT "CLIQO_AGENT=$<TARGET_FILE:cliqo-agent>")
        set_property(TEST e2e.offloading.${t} PROPERTY RESOURCE_LOCK e2e_offloading_clusters)
        set_property(TEST e2e.offloading.${t} PROPERTY TIMEOUT 240)
        if(prev)
            set_property(TEST e2e.offloading.${t} APPEND PROPERTY DEPENDS e2e.offloading.${prev})
        endif()
        set(prev ${t})
    endforeach()
    set_property(TEST e2e.offloading.setup APPEND PROPERTY FIXTURES_SETUP e2e_offloading_shared)
    set_property(TEST e2e.offloading.teardown APPEND PROPERTY FIXTURES_CLEANUP e2e_offloading_shared)
    foreach(t ${off_tests})
        if(NOT t STREQUAL "setup" AND NOT t STREQUAL "teardown")
            set_property(TEST e2e.offloading.${t} APPEND PROPERTY FIXTURES_REQUIRED e2e_offloading_shared)
        endif()
    endforeach()
endif()
