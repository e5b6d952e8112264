# The discovery group (tests/e2e/discovery/): test hosts in network namespaces cqd-1..4 on a bridge
# (net.sh), three clusters inside cqd-1..3 (cliqo-devenv --netns-prefix), base port from tests/ports.tsv, agents
# run by the tests as local processes inside the namespaces. Needs root: without it the fixture
# fails with a clear message (never skips). The tests share the test hosts and the agents' ports,
# so they run one at a time.
if(TARGET cliqo-agent AND TARGET cliqo_discovery_net)
    add_executable(cliqo-mdns-tool ${E2E_DIR}/discovery/mdns-tool.c)
    target_link_libraries(cliqo-mdns-tool PRIVATE cliqo_discovery_net)
    find_program(DNSMASQ dnsmasq PATHS /usr/sbin /sbin)
    set(disc_state ${E2E_ROOT}/discovery)
    cliqo_port(e2e.discovery disc_port 3)
    set(disc_env "CLIQOCTL=$<TARGET_FILE:cliqoctl>" "E2E_STATE=${disc_state}"
                 "CLIQO_KUBE_BIN_DIR=${CLIQO_KUBE_BIN_DIR}" "CLIQO_DEV_DIR=${disc_state}"
                 "CLIQO_DEV_BASE_PORT=${disc_port}" "CLIQO_DEV_NODES=0" ${CLIQO_E2E_DEV_SETTINGS}
                 "CLIQO_AGENT=$<TARGET_FILE:cliqo-agent>" "MDNS_TOOL=$<TARGET_FILE:cliqo-mdns-tool>"
                 "DNSMASQ=${DNSMASQ}")
    add_test(NAME e2e.discovery.up COMMAND ${E2E_DIR}/discovery/up.sh)
    add_test(NAME e2e.discovery.down COMMAND ${E2E_DIR}/discovery/down.sh)
    set_tests_properties(e2e.discovery.up PROPERTIES FIXTURES_SETUP e2e_discovery
                         ENVIRONMENT "${disc_env}" LABELS e2e TIMEOUT 300 RESOURCE_LOCK e2e_discovery)
    set_tests_properties(e2e.discovery.down PROPERTIES FIXTURES_CLEANUP e2e_discovery
                         ENVIRONMENT "${disc_env}" LABELS e2e TIMEOUT 120 RESOURCE_LOCK e2e_discovery)
    foreach(t lan conflict malformed spoof autojoin wan)
        add_test(NAME e2e.discovery.${t} COMMAND ${E2E_DIR}/discovery/${t}.sh)
        set_tests_properties(e2e.discovery.${t} PROPERTIES FIXTURES_REQUIRED e2e_discovery
                             ENVIRONMENT "${disc_env};TEST_NAME=e2e.discovery.${t}" LABELS e2e
                             TIMEOUT 240 RESOURCE_LOCK e2e_discovery_hosts)
    endforeach()
endif()
