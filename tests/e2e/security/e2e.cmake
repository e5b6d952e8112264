# The security group (tests/e2e/security/, docs/security.md): three clusters (base port 19800), A =
# cluster-1 a consumer, B = cluster-2 the provider, C = cluster-3 a second consumer of B that plays the
# hostile peer; one simulated node each. `setup` installs cliqo, starts one agent per cluster and peers A
# and C with B; every test in between tries attacks with the credentials a hostile party really holds and
# leaves the shared state as it found it; `teardown` unpeers and checks B is clean. One at a time, in order.
if(TARGET cliqo-agent)
    set(sec_tests setup identity limiter peer-tls limits sa-tokens podsec placement objects namespaces provider-ips
                  peer-cidr teardown)
    cliqo_e2e_group(security 3 19800 ${sec_tests})
    set_property(TEST e2e.security.up APPEND PROPERTY ENVIRONMENT "CLIQO_DEV_NODES=1")
    set(prev "")
    foreach(t ${sec_tests})
        set_property(TEST e2e.security.${t} APPEND PROPERTY ENVIRONMENT "CLIQO_AGENT=$<TARGET_FILE:cliqo-agent>")
        set_property(TEST e2e.security.${t} PROPERTY RESOURCE_LOCK e2e_security_clusters)
        set_property(TEST e2e.security.${t} PROPERTY TIMEOUT 240)
        if(prev)
            set_property(TEST e2e.security.${t} APPEND PROPERTY DEPENDS e2e.security.${prev})
        endif()
        set(prev ${t})
    endforeach()
    set_property(TEST e2e.security.setup APPEND PROPERTY FIXTURES_SETUP e2e_security_shared)
    set_property(TEST e2e.security.teardown APPEND PROPERTY FIXTURES_CLEANUP e2e_security_shared)
    foreach(t ${sec_tests})
        if(NOT t STREQUAL "setup" AND NOT t STREQUAL "teardown")
            set_property(TEST e2e.security.${t} APPEND PROPERTY FIXTURES_REQUIRED e2e_security_shared)
        endif()
    endforeach()
endif()
