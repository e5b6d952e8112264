# The broker (src/broker/, docs/broker.md): cliqo-broker, built in steps (issue 20). For now its pure
# core, a library of its own for the unit tests: the selection of providers by policy, toggle and KPIs
# (select.c), the providers' measured KPIs (kpi.c), the aggregated offer (aggregate.c), the catalog's
# filters and pages (catalog.c, which matches labels with offloading's selector code) and the state
# kept in the broker's cluster (state.c).
cliqo_module(cliqo_broker_core SOURCES broker/select.c broker/aggregate.c broker/kpi.c broker/catalog.c
             broker/state.c
             DEPS cliqo_kube_quantity cliqo_kube_names cliqo_offloading PkgConfig::OPENSSL
                  PkgConfig::JANSSON)
# The dashboard's static files, compiled in (library cliqo_broker_dashboard, broker/dashboard.h).
include(${CMAKE_CURRENT_LIST_DIR}/dashboard/dashboard.cmake)

# The daemon (docs/broker.md): the core (informers, providers, probes, selection), the API, the
# orchestrator and the aggregator, as modules on the agent's skeleton, and its command line.
if(TARGET cliqo_agent_core AND TARGET cliqo_broker_core AND TARGET cliqo_broker_dashboard)
    add_library(cliqo_broker STATIC broker/config.c broker/core.c broker/api.c broker/orchestrator.c
                broker/aggregator.c)
    target_link_libraries(cliqo_broker PUBLIC cliqo_agent_core cliqo_broker_core cliqo_broker_dashboard)
    add_executable(cliqo-broker broker/main.c)
    target_link_libraries(cliqo-broker PRIVATE cliqo_broker)
    install(TARGETS cliqo-broker RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
