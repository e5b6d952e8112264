# src/agent: the metrics registry (checked with promtool when it is installed) and the agent's
# command line.
if(TARGET cliqo_metrics)
    find_program(PROMTOOL promtool)
    add_executable(test-metrics unit/test-metrics.c)
    target_link_libraries(test-metrics PRIVATE cliqo_metrics PkgConfig::CMOCKA)
    add_test(NAME unit.metrics COMMAND test-metrics)
    set_tests_properties(unit.metrics PROPERTIES LABELS unit TIMEOUT 60
                         ENVIRONMENT "PROMTOOL=$<$<BOOL:${PROMTOOL}>:${PROMTOOL}>")
endif()
if(TARGET cliqo_agent_core)
    add_executable(test-agent-config unit/test-agent-config.c)
    target_link_libraries(test-agent-config PRIVATE cliqo_agent_core PkgConfig::CMOCKA)
    add_test(NAME unit.agent.config COMMAND test-agent-config)
    set_tests_properties(unit.agent.config PROPERTIES LABELS unit TIMEOUT 60)
endif()
