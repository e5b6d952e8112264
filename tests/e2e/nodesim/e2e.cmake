# The node simulator against a real control plane: two clusters whose `dev up` starts cliqo-nodesim
# with three nodes each (an extended resource, a label, a fast heartbeat). The simulator tests use
# cluster-1; the kubelet API tests (logs, exec, auth) go through cluster-1's API server, and the
# relay test joins cluster-1 to cluster-2 with kla-relay-test (src/kubeletapi's relay with a
# resolver of its own); `agent` starts cliqo-agent on cluster-2 (agents.sh: its kubelet API on slot
# 8) and checks the kubelet API it serves. Tests share the clusters and their simulators (one
# restarts it), so they run one at a time (the group's resource lock).
if(TARGET cliqo-nodesim)
    set(nodesim_tests nodes pods inject restart deployment logs exec auth)
    if(TARGET cliqo_kubeletapi)
        add_executable(kla-relay-test ${CMAKE_CURRENT_LIST_DIR}/kla-relay-test.c)
        target_link_libraries(kla-relay-test PRIVATE cliqo_kubeletapi cliqo_kube_api)
        list(APPEND nodesim_tests relay)
    endif()
    if(TARGET cliqo-agent)
        list(APPEND nodesim_tests agent)
    endif()
    cliqo_e2e_group(nodesim 2 ${nodesim_tests})
    set(nodesim_e2e_tests e2e.nodesim.up e2e.nodesim.down)
    foreach(t ${nodesim_tests})
        list(APPEND nodesim_e2e_tests e2e.nodesim.${t})
    endforeach()
    set_property(TEST ${nodesim_e2e_tests} APPEND PROPERTY ENVIRONMENT
        "CLIQO_NODESIM=$<TARGET_FILE:cliqo-nodesim>" "CLIQO_DEV_NODES=3"
        "CLIQO_DEV_NODESIM_ARGS=--extended-resource nvidia.com/gpu=2 --label e2e.cliqo.io/sim=yes --heartbeat 2s --lease-duration 10s --status-interval 20s")
    set_property(TEST ${nodesim_e2e_tests} APPEND PROPERTY RESOURCE_LOCK e2e_nodesim)
    if(TARGET cliqo-agent)
        set_property(TEST e2e.nodesim.agent APPEND PROPERTY ENVIRONMENT
            "CLIQO_AGENT=$<TARGET_FILE:cliqo-agent>")
    endif()
    if(TARGET kla-relay-test)
        set_property(TEST e2e.nodesim.relay APPEND PROPERTY ENVIRONMENT
            "KLA_RELAY_TEST=$<TARGET_FILE:kla-relay-test>")
    endif()
endif()
