# End-to-end test groups. Each group brings its clusters up once (a FIXTURES_SETUP test), runs its tests,
# and tears them down (FIXTURES_CLEANUP, which also checks nothing is left behind). Groups use distinct
# state directories and port ranges (tests/ports.tsv, one table) so they never collide.
set(E2E_DIR ${CMAKE_CURRENT_SOURCE_DIR}/e2e)
set(E2E_ROOT ${CMAKE_BINARY_DIR}/e2e)

# Developers running several builds at once on one machine shift every group's ports with
# -DCLIQO_E2E_PORT_OFFSET=N (CI uses 0; tests/ports.cmake).

# cliqo_e2e_group(NAME CLUSTERS TESTS...): its base port is e2e.NAME's in tests/ports.tsv.
function(cliqo_e2e_group name clusters)
    cliqo_port(e2e.${name} base_port ${clusters})
    set(state ${E2E_ROOT}/${name})
    # No simulated nodes unless the group asks for them (by appending CLIQO_DEV_NODES=N, which wins).
    set(env "CLIQOCTL=$<TARGET_FILE:cliqoctl>" "E2E_STATE=${state}" "CLIQO_KUBE_BIN_DIR=${CLIQO_KUBE_BIN_DIR}"
            "CLIQO_DEV_DIR=${state}" "CLIQO_DEV_BASE_PORT=${base_port}" "CLIQO_DEV_NODES=0")
    if(TARGET cliqo-nodesim)
        list(APPEND env "CLIQO_NODESIM=$<TARGET_FILE:cliqo-nodesim>")
    endif()
    add_test(NAME e2e.${name}.up COMMAND $<TARGET_FILE:cliqoctl> dev up --clusters ${clusters})
    add_test(NAME e2e.${name}.down COMMAND ${E2E_DIR}/down-and-check.sh)
    set_tests_properties(e2e.${name}.up PROPERTIES FIXTURES_SETUP e2e_${name} ENVIRONMENT "${env}"
                         LABELS e2e TIMEOUT 300 RESOURCE_LOCK e2e_${name})
    set_tests_properties(e2e.${name}.down PROPERTIES FIXTURES_CLEANUP e2e_${name} ENVIRONMENT "${env}"
                         LABELS e2e TIMEOUT 120 RESOURCE_LOCK e2e_${name})
    foreach(t ${ARGN})
        add_test(NAME e2e.${name}.${t} COMMAND ${E2E_DIR}/${name}/${t}.sh)
        set_tests_properties(e2e.${name}.${t} PROPERTIES FIXTURES_REQUIRED e2e_${name} ENVIRONMENT
                             "${env};TEST_NAME=e2e.${name}.${t}" LABELS e2e TIMEOUT 300)
    endforeach()
endfunction()

# cliqo_e2e_shared_group(NAME CLUSTERS TESTS...): a group whose first test makes a state every other
# test shares (setup) and whose last undoes it (teardown: it runs even after a failure); the tests run one at a
# time, in order, each with CLIQO_AGENT set. A group's own fragment adds what else it needs (nodes, CIDRs).
function(cliqo_e2e_shared_group name clusters)
    cliqo_e2e_group(${name} ${clusters} ${ARGN})
    list(GET ARGN 0 first)
    list(GET ARGN -1 last)
    set(prev "")
    foreach(t ${ARGN})
        set_property(TEST e2e.${name}.${t} APPEND PROPERTY ENVIRONMENT "CLIQO_AGENT=$<TARGET_FILE:cliqo-agent>")
        set_property(TEST e2e.${name}.${t} PROPERTY RESOURCE_LOCK e2e_${name}_clusters)
        set_property(TEST e2e.${name}.${t} PROPERTY TIMEOUT 240)
        if(prev)
            set_property(TEST e2e.${name}.${t} APPEND PROPERTY DEPENDS e2e.${name}.${prev})
        endif()
        set(prev ${t})
        if(t STREQUAL first)
            set_property(TEST e2e.${name}.${t} APPEND PROPERTY FIXTURES_SETUP e2e_${name}_shared)
        elseif(t STREQUAL last)
            set_property(TEST e2e.${name}.${t} APPEND PROPERTY FIXTURES_CLEANUP e2e_${name}_shared)
        else()
            set_property(TEST e2e.${name}.${t} APPEND PROPERTY FIXTURES_REQUIRED e2e_${name}_shared)
        endif()
    endforeach()
endfunction()

# The foundation group: two clusters, checked with kubectl.
cliqo_e2e_group(foundation 2 api scheduler gc isolation status)

# The environment's own life cycle (it manages its clusters itself: up, idempotence, failures, down).
cliqo_port(e2e.devenv devenv_port 3)
add_test(NAME e2e.devenv.lifecycle COMMAND ${E2E_DIR}/devenv/lifecycle.sh)
set_tests_properties(e2e.devenv.lifecycle PROPERTIES LABELS e2e TIMEOUT 600 ENVIRONMENT
    "CLIQOCTL=$<TARGET_FILE:cliqoctl>;E2E_STATE=${E2E_ROOT}/devenv;CLIQO_KUBE_BIN_DIR=${CLIQO_KUBE_BIN_DIR};CLIQO_DEV_BASE_PORT=${devenv_port};TEST_NAME=e2e.devenv.lifecycle")

# The Kubernetes client against a real apiserver (tests/e2e/kube/).
if(TARGET cliqo_kube_api)
    add_executable(test-kube-client ${E2E_DIR}/kube/test-kube-client.c)
    target_link_libraries(test-kube-client PRIVATE cliqo_kube_api PkgConfig::CMOCKA)
    cliqo_e2e_group(kube 1)
    add_test(NAME e2e.kube.client COMMAND test-kube-client)
    set_tests_properties(e2e.kube.client PROPERTIES FIXTURES_REQUIRED e2e_kube LABELS e2e TIMEOUT 300
        ENVIRONMENT "E2E_STATE=${E2E_ROOT}/kube")

    # Failure handling (apiserver restarts, 410, limits, token rotation) on a cluster of its own.
    add_executable(test-kube-resilience ${E2E_DIR}/kube/test-kube-resilience.c)
    target_link_libraries(test-kube-resilience PRIVATE cliqo_kube_api PkgConfig::CMOCKA)
    cliqo_e2e_group(kuberes 1)
    cliqo_port(e2e.kuberes kuberes_port)
    add_test(NAME e2e.kuberes.resilience COMMAND test-kube-resilience)
    set_tests_properties(e2e.kuberes.resilience PROPERTIES FIXTURES_REQUIRED e2e_kuberes LABELS e2e
        TIMEOUT 300 ENVIRONMENT
        "E2E_STATE=${E2E_ROOT}/kuberes;CLIQOCTL=$<TARGET_FILE:cliqoctl>;CLIQO_DEV_DIR=${E2E_ROOT}/kuberes;CLIQO_DEV_BASE_PORT=${kuberes_port};CLIQO_KUBE_BIN_DIR=${CLIQO_KUBE_BIN_DIR}")
endif()

# Further groups register themselves in tests/e2e/<group>/e2e.cmake.
file(GLOB e2e_fragments ${E2E_DIR}/*/e2e.cmake)
foreach(frag ${e2e_fragments})
    include(${frag})
endforeach()

# One e2e test at a time, and one group at a time: they start control planes and agents and wait on real
# timers, and the machines that run them have two cores. Unit, lint and CLI tests run beside them
# (scripts/test.sh runs ctest -j2), so their minute and a half of CPU overlaps the e2e groups instead of
# adding to them. The lock keeps two e2e tests from running at once; the chain keeps groups from
# interleaving (ctest -j would otherwise bring a second group's clusters up between the first group's
# tests): each group's `up` and each test outside a group waits for what came before, in definition order.
get_property(cliqo_all_tests DIRECTORY PROPERTY TESTS)
set(prev_last "")
foreach(t ${cliqo_all_tests})
    if(NOT t MATCHES "^e2e\\.")
        continue()
    endif()
    set_property(TEST ${t} APPEND PROPERTY RESOURCE_LOCK cliqo_e2e_serial)
    get_property(req TEST ${t} PROPERTY FIXTURES_REQUIRED)
    if(t MATCHES "^e2e\\.(.+)\\.up$")
        set(last e2e.${CMAKE_MATCH_1}.down)
    elseif(t MATCHES "\\.down$" OR req)
        continue() # inside its group, between its up and its down
    else()
        set(last ${t})
    endif()
    if(prev_last)
        set_property(TEST ${t} APPEND PROPERTY DEPENDS ${prev_last})
    endif()
    set(prev_last ${last})
endforeach()
# bench/ comes later: its smoke run goes after the last group.
set(CLIQO_E2E_LAST ${prev_last} CACHE INTERNAL "the last e2e test, which bench tests run after")
