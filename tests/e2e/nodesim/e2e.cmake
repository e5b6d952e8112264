# The node simulator against a real control plane: one cluster whose `dev up` starts cliqo-nodesim with
# three nodes (an extended resource, a label, a fast heartbeat). Tests share the cluster and its
# simulator (one restarts it), so they run one at a time (the group's resource lock).
if(TARGET cliqo-nodesim)
    set(nodesim_tests nodes pods inject restart deployment)
    cliqo_e2e_group(nodesim 1 17700 ${nodesim_tests})
    set(nodesim_e2e_tests e2e.nodesim.up e2e.nodesim.down)
    foreach(t ${nodesim_tests})
        list(APPEND nodesim_e2e_tests e2e.nodesim.${t})
    endforeach()
    set_property(TEST ${nodesim_e2e_tests} APPEND PROPERTY ENVIRONMENT
        "CLIQO_NODESIM=$<TARGET_FILE:cliqo-nodesim>" "CLIQO_DEV_NODES=3"
        "CLIQO_DEV_NODESIM_ARGS=--extended-resource nvidia.com/gpu=2 --label e2e.cliqo.io/sim=yes --heartbeat 2s --lease-duration 10s --status-interval 20s")
    set_property(TEST ${nodesim_e2e_tests} APPEND PROPERTY RESOURCE_LOCK e2e_nodesim)
endif()
