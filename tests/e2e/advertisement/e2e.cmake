# The advertisement group (tests/e2e/advertisement/, docs/advertisement.md): four clusters (base port 18800), a
# consumer A and three providers with their own pod CIDRs (two overlap A's), two simulated nodes each. `setup`
# installs cliqo, starts one agent per cluster (local processes that live for the whole group) and peers A with
# the three providers; the tests in between share that state and leave it as they found it; `teardown` unpeers,
# checks that both sides are clean and stops the agents. The tests share the clusters and agents, so they run
# one at a time, in this order.
if(TARGET cliqo-agent)
    set(adv_tests setup refresh values percentage acceptance policy malformed remap networking keepalive recreate deletion-order
                  credential deployment teardown)
    cliqo_e2e_group(advertisement 4 ${adv_tests})
    set_property(TEST e2e.advertisement.up APPEND PROPERTY ENVIRONMENT
        "CLIQO_DEV_NODES=2"
        "CLIQO_DEV_POD_CIDRS=cluster-1=10.200.0.0/16,cluster-2=10.202.0.0/16,cluster-3=10.200.0.0/16,cluster-4=10.200.16.0/20")
    set(prev "")
    foreach(t ${adv_tests})
        set_property(TEST e2e.advertisement.${t} APPEND PROPERTY ENVIRONMENT "CLIQO_AGENT=$<TARGET_FILE:cliqo-agent>")
        set_property(TEST e2e.advertisement.${t} PROPERTY RESOURCE_LOCK e2e_advertisement_clusters)
        set_property(TEST e2e.advertisement.${t} PROPERTY TIMEOUT 240)
        if(prev)
            set_property(TEST e2e.advertisement.${t} APPEND PROPERTY DEPENDS e2e.advertisement.${prev})
        endif()
        set(prev ${t})
    endforeach()
    # The shared state: every test needs what setup made; teardown runs even when a test failed.
    set_property(TEST e2e.advertisement.setup APPEND PROPERTY FIXTURES_SETUP e2e_advertisement_shared)
    set_property(TEST e2e.advertisement.teardown APPEND PROPERTY FIXTURES_CLEANUP e2e_advertisement_shared)
    foreach(t ${adv_tests})
        if(NOT t STREQUAL "setup" AND NOT t STREQUAL "teardown")
            set_property(TEST e2e.advertisement.${t} APPEND PROPERTY FIXTURES_REQUIRED e2e_advertisement_shared)
        endif()
    endforeach()
endif()
# The broker group runs on these clusters after this group's teardown (tests/e2e/broker/e2e.cmake). The two
# four-cluster groups had never run side by side in CI's two lanes either: eight control planes on two cores
# made a 10 s wait of advertisement.values time out (it took 157 s instead of 29 s).
