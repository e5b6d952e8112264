# The peering group (tests/e2e/peering/): two clusters, cliqo installed without the in-cluster agent, the
# agents run as local processes by the tests (health on P+6, auth endpoint on P+7 of each cluster's ports).
# Peering, credential scope, refusals, a peer that goes down, agent restarts. The tests share the clusters and
# the agents' ports, so they run one at a time. The clusters are the foundation group's (base port 17400),
# after its tests, which leave them as they found them: the same two bare clusters, one `up` and `down`
# fewer (about 37 s of the lane in a cold run).
if(TARGET cliqo-agent)
    set(peering_e2e_tests peer scope reject rotate peer-down restart)
    cliqo_e2e_group_on(foundation peering ${peering_e2e_tests})
    foreach(t ${peering_e2e_tests})
        set_property(TEST e2e.peering.${t} APPEND PROPERTY ENVIRONMENT "CLIQO_AGENT=$<TARGET_FILE:cliqo-agent>")
        set_property(TEST e2e.peering.${t} PROPERTY RESOURCE_LOCK e2e_peering_clusters)
        set_property(TEST e2e.peering.${t} PROPERTY TIMEOUT 180)
    endforeach()
endif()
