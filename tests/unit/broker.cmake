# The broker (src/broker/): its pure core.
cliqo_unit_test(broker-select cliqo_broker_core)
cliqo_unit_test(broker-aggregate cliqo_broker_core)
cliqo_unit_test(broker-kpi cliqo_broker_core)
cliqo_unit_test(broker-catalog cliqo_broker_core)
cliqo_unit_test(broker-state cliqo_broker_core)
# The dashboard's files compiled in (src/broker/dashboard/): paths, types, bytes, ETags, the strict page.
cliqo_unit_test(broker-dashboard cliqo_broker_dashboard)
if(TARGET test-broker-dashboard)
    target_link_libraries(test-broker-dashboard PRIVATE PkgConfig::OPENSSL)
    target_compile_definitions(test-broker-dashboard PRIVATE
                               CLIQO_DASHBOARD_DIR="${PROJECT_SOURCE_DIR}/src/broker/dashboard")
endif()
# The dashboard in headless Chromium against a fake API, and the browser driver tests/e2e/lib/cdp.py itself.
add_test(NAME unit.dashboard-render COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/unit/dashboard-render.sh)
set_tests_properties(unit.dashboard-render PROPERTIES LABELS unit TIMEOUT 300)
# The daemon's pure parts (src/broker/{config,api,orchestrator,aggregator}.c): the command line, the
# rate limit's token bucket, the NamespaceOffloading spec, the consumer test. Linked with the daemon's
# library, which brings the agent's skeleton.
cliqo_unit_test(broker-daemon cliqo_broker)
# docs/broker-openapi.yaml against the server's route table and the statuses its handlers answer. The
# same binary, run as `test-broker-openapi --check METHOD PATH STATUS CONTENT_TYPE`, tells the e2e tests
# whether a real answer is documented (exit 0) or not (exit 1, one line on stderr).
cliqo_unit_test(broker-openapi cliqo_broker)
if(TARGET test-broker-openapi)
    target_link_libraries(test-broker-openapi PRIVATE cliqo_kube_yaml)
    target_compile_definitions(test-broker-openapi PRIVATE
                               CLIQO_OPENAPI_YAML="${PROJECT_SOURCE_DIR}/docs/broker-openapi.yaml")
endif()
