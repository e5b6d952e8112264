# cliqo-agent against a real control plane (tests/e2e/agent/), on the environment "single" (../e2e.cmake). The
# agents the tests start listen on its base port + 50 .. + 59 (health and auth on + 50 .. + 57, their kubelet API
# on + 58 and + 59). The tests stop and start the apiserver, so they run one at a time (RESOURCE_LOCK).
if(TARGET cliqo-agent)
    set(agent_e2e_tests basics leader apiserver)
    cliqo_e2e_group_on(single agent ${agent_e2e_tests})
    foreach(t ${agent_e2e_tests})
        set_property(TEST e2e.agent.${t} APPEND PROPERTY ENVIRONMENT "CLIQO_AGENT=$<TARGET_FILE:cliqo-agent>")
        set_property(TEST e2e.agent.${t} PROPERTY RESOURCE_LOCK e2e_agent_group)
    endforeach()
    # The command line needs no cluster.
    add_test(NAME e2e.agent.flags COMMAND ${CMAKE_CURRENT_LIST_DIR}/flags.sh)
    set_tests_properties(e2e.agent.flags PROPERTIES LABELS e2e TIMEOUT 60
                         ENVIRONMENT "CLIQO_AGENT=$<TARGET_FILE:cliqo-agent>;TEST_NAME=e2e.agent.flags")
endif()
