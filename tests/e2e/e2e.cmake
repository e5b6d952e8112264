# End-to-end test groups. Each group brings its clusters up once (a FIXTURES_SETUP test), runs its tests,
# and tears them down (FIXTURES_CLEANUP, which also checks nothing is left behind). Groups use distinct
# state directories and port ranges (tests/ports.tsv, one table) so they never collide.
set(E2E_DIR ${CMAKE_CURRENT_SOURCE_DIR}/e2e)
set(E2E_ROOT ${CMAKE_BINARY_DIR}/e2e)

# Developers running several builds at once on one machine shift every group's ports with
# -DCLIQO_E2E_PORT_OFFSET=N (CI uses 0; tests/ports.cmake).

# Test-only settings of every environment the tests bring up: an API server they stop gets a second after
# SIGTERM (it would wait for its clients' watches; its state is in etcd).
set(CLIQO_E2E_DEV_SETTINGS "CLIQO_DEV_APISERVER_STOP_TIMEOUT=1")
# API priority and fairness off (src/devenv/cliqo-devenv, APF), but for the environments of the tests that make
# it answer 429 ("single": e2e.kuberes.resilience; "offloading": e2e.offloading.throttled, and the whole
# offloading flow under it): with it, an idle 1.20 API server uses about twice the CPU.
list(APPEND CLIQO_E2E_DEV_SETTINGS "CLIQO_DEV_APF=0")
# The control planes' Go processes on one P each (GOMAXPROCS=1): two test groups run beside each other on
# two cores, and with a P per core every process's scheduler spins and wakes for work the other cores
# hold. Measured with process accounting over the advertisement group (4 clusters, 275 s, the machine
# otherwise idle): their CPU fell from 164 to 151 CPU-s (etcd -19 %, controller-manager -15 %, API server
# -5 %), its wall time the same.
list(APPEND CLIQO_E2E_DEV_SETTINGS "CLIQO_DEV_GOMAXPROCS=1")

# The tests' HTTPS client (tests/e2e/lib/https.c): kcurl's requests, thousands a run, without curl's start-up.
# Built without the sanitizers: a test tool, whose start-up they would make six times dearer.
add_executable(cliqo-e2e-https ${E2E_DIR}/lib/https.c)
target_link_libraries(cliqo-e2e-https PRIVATE PkgConfig::OPENSSL)
foreach(prop COMPILE_OPTIONS LINK_OPTIONS)
    get_target_property(opts cliqo-e2e-https ${prop})
    if(opts)
        list(FILTER opts EXCLUDE REGEX "sanitize")
        set_target_properties(cliqo-e2e-https PROPERTIES ${prop} "${opts}")
    endif()
endforeach()
list(APPEND CLIQO_E2E_DEV_SETTINGS "E2E_HTTPS=$<TARGET_FILE:cliqo-e2e-https>")
# etcd keeps its data on a tmpfs when the machine has one with room (4 GiB; each etcd preallocates a 64 MiB
# WAL): its fsyncs cost nothing there, and every write of every test waits for one. -DCLIQO_E2E_ETCD_DIR=
# (empty) keeps etcd's data in the state directories.
if(NOT DEFINED CLIQO_E2E_ETCD_DIR)
    set(CLIQO_E2E_ETCD_DIR "")
    execute_process(COMMAND df --output=fstype,avail -k /dev/shm OUTPUT_VARIABLE shm RESULT_VARIABLE rc
                    ERROR_QUIET)
    if(rc EQUAL 0 AND shm MATCHES "tmpfs +([0-9]+)")
        if(CMAKE_MATCH_1 GREATER_EQUAL 4194304)
            set(CLIQO_E2E_ETCD_DIR /dev/shm)
        endif()
    endif()
    set(CLIQO_E2E_ETCD_DIR "${CLIQO_E2E_ETCD_DIR}" CACHE PATH "etcd's data directory in e2e environments")
endif()
if(CLIQO_E2E_ETCD_DIR)
    list(APPEND CLIQO_E2E_DEV_SETTINGS "CLIQO_DEV_ETCD_DIR=${CLIQO_E2E_ETCD_DIR}")
endif()

# cliqo_e2e_env(NAME CLUSTERS): clusters brought up once (e2e.NAME.up, the fixture e2e_NAME) and torn down
# after the last test on them (e2e.NAME.down); base port e2e.NAME's in tests/ports.tsv. The settings its
# tests get are in the global property cliqo_e2e_env_NAME.
function(cliqo_e2e_env name clusters)
    cliqo_port(e2e.${name} base_port ${clusters})
    set(state ${E2E_ROOT}/${name})
    # No simulated nodes unless the group asks for them (by appending CLIQO_DEV_NODES=N, which wins).
    set(env "CLIQOCTL=$<TARGET_FILE:cliqoctl>" "E2E_STATE=${state}" "CLIQO_KUBE_BIN_DIR=${CLIQO_KUBE_BIN_DIR}"
            "CLIQO_DEV_DIR=${state}" "CLIQO_DEV_BASE_PORT=${base_port}" "CLIQO_DEV_NODES=0"
            ${CLIQO_E2E_DEV_SETTINGS})
    if(TARGET cliqo-nodesim)
        list(APPEND env "CLIQO_NODESIM=$<TARGET_FILE:cliqo-nodesim>")
    endif()
    add_test(NAME e2e.${name}.up COMMAND $<TARGET_FILE:cliqoctl> dev up --clusters ${clusters})
    add_test(NAME e2e.${name}.down COMMAND ${E2E_DIR}/down-and-check.sh)
    set_tests_properties(e2e.${name}.up PROPERTIES FIXTURES_SETUP e2e_${name} ENVIRONMENT "${env}"
                         LABELS e2e TIMEOUT 300 RESOURCE_LOCK e2e_${name})
    set_tests_properties(e2e.${name}.down PROPERTIES FIXTURES_CLEANUP e2e_${name} ENVIRONMENT "${env}"
                         LABELS e2e TIMEOUT 120 RESOURCE_LOCK e2e_${name})
    set_property(GLOBAL PROPERTY cliqo_e2e_env_${name} "${env}")
endfunction()

# cliqo_e2e_on(ENV TESTS...): existing tests put on the clusters of ENV, with its settings. They run after
# every test put on ENV before this call, so that groups sharing an environment never interleave (each
# group's tests leave the clusters as they found them; the first of a group does not rely on it either).
function(cliqo_e2e_on envname)
    get_property(env GLOBAL PROPERTY cliqo_e2e_env_${envname})
    get_property(before GLOBAL PROPERTY cliqo_e2e_on_${envname})
    foreach(t ${ARGN})
        set_tests_properties(${t} PROPERTIES FIXTURES_REQUIRED e2e_${envname} LABELS e2e TIMEOUT 300)
        set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT ${env} "TEST_NAME=${t}")
        if(before)
            set_property(TEST ${t} APPEND PROPERTY DEPENDS ${before})
        endif()
    endforeach()
    set_property(GLOBAL APPEND PROPERTY cliqo_e2e_on_${envname} ${ARGN})
endfunction()

# cliqo_e2e_test_name(NAME ENTRY VAR): the test of the group NAME's list entry ENTRY, e2e.NAME.T for T
# (tests/e2e/NAME/T.sh), e2e.G.T for G/T (tests/e2e/G/T.sh: another group's test in this group's run), in VAR.
function(cliqo_e2e_test_name name entry var)
    if(entry MATCHES "^([a-z0-9-]+)/([a-z0-9-]+)$")
        set(${var} e2e.${CMAKE_MATCH_1}.${CMAKE_MATCH_2} PARENT_SCOPE)
    else()
        set(${var} e2e.${name}.${entry} PARENT_SCOPE)
    endif()
endfunction()

# cliqo_e2e_group_on(ENV NAME TESTS...): the group NAME's tests (tests/e2e/NAME/T.sh, named e2e.NAME.T, or
# G/T for tests/e2e/G/T.sh, named e2e.G.T) on the clusters of ENV.
function(cliqo_e2e_group_on envname name)
    set(tests "")
    foreach(t ${ARGN})
        cliqo_e2e_test_name(${name} ${t} tn)
        string(REGEX REPLACE "^e2e\\.([^.]+)\\.(.+)$" "\\1/\\2" path ${tn})
        add_test(NAME ${tn} COMMAND ${E2E_DIR}/${path}.sh)
        list(APPEND tests ${tn})
    endforeach()
    cliqo_e2e_on(${envname} ${tests})
endfunction()

# cliqo_e2e_group(NAME CLUSTERS TESTS...): a group with clusters of its own (the environment NAME).
function(cliqo_e2e_group name clusters)
    cliqo_e2e_env(${name} ${clusters})
    cliqo_e2e_group_on(${name} ${name} ${ARGN})
endfunction()

# The environment "single": one cluster shared by the groups that need one and leave it as they found it
# (kube, kuberes, agent, cli, deploy), in that order: one `up` instead of five.
cliqo_e2e_env(single 1)
set_property(TEST e2e.single.up APPEND PROPERTY ENVIRONMENT "CLIQO_DEV_APF=1")

# cliqo_e2e_shared_group(NAME CLUSTERS TESTS...): a group whose first test makes a state every other
# test shares (setup) and whose last undoes it (teardown: it runs even after a failure); the tests run one at a
# time, in order, each with CLIQO_AGENT set. A group's own fragment adds what else it needs (nodes, CIDRs).
function(cliqo_e2e_shared_group name clusters)
    cliqo_e2e_env(${name} ${clusters})
    cliqo_e2e_shared_group_on(${name} ${name} ${ARGN})
endfunction()
# cliqo_e2e_shared_group_on(ENV NAME TESTS...): the same, on the clusters of ENV (after the tests put on it before).
function(cliqo_e2e_shared_group_on envname name)
    cliqo_e2e_group_on(${envname} ${name} ${ARGN})
    list(GET ARGN 0 first)
    list(GET ARGN -1 last)
    set(prev "")
    foreach(t ${ARGN})
        cliqo_e2e_test_name(${name} ${t} tn)
        set_property(TEST ${tn} APPEND PROPERTY ENVIRONMENT "CLIQO_AGENT=$<TARGET_FILE:cliqo-agent>")
        set_property(TEST ${tn} PROPERTY RESOURCE_LOCK e2e_${name}_clusters)
        set_property(TEST ${tn} PROPERTY TIMEOUT 240)
        if(prev)
            set_property(TEST ${tn} APPEND PROPERTY DEPENDS ${prev})
        endif()
        set(prev ${tn})
        if(t STREQUAL first)
            set_property(TEST ${tn} APPEND PROPERTY FIXTURES_SETUP e2e_${name}_shared)
        elseif(t STREQUAL last)
            set_property(TEST ${tn} APPEND PROPERTY FIXTURES_CLEANUP e2e_${name}_shared)
        else()
            set_property(TEST ${tn} APPEND PROPERTY FIXTURES_REQUIRED e2e_${name}_shared)
        endif()
    endforeach()
endfunction()

# The foundation group: two clusters, checked with kubectl.
cliqo_e2e_group(foundation 2 api scheduler gc isolation status)

# The environment's own life cycle (it manages its clusters itself: up, idempotence, failures, down).
cliqo_port(e2e.devenv devenv_port 3)
add_test(NAME e2e.devenv.lifecycle COMMAND ${E2E_DIR}/devenv/lifecycle.sh)
set_tests_properties(e2e.devenv.lifecycle PROPERTIES LABELS e2e TIMEOUT 600 ENVIRONMENT
    "CLIQOCTL=$<TARGET_FILE:cliqoctl>;E2E_STATE=${E2E_ROOT}/devenv;CLIQO_KUBE_BIN_DIR=${CLIQO_KUBE_BIN_DIR};CLIQO_DEV_BASE_PORT=${devenv_port};TEST_NAME=e2e.devenv.lifecycle;${CLIQO_E2E_DEV_SETTINGS}")

# The Kubernetes client against a real apiserver (tests/e2e/kube/).
if(TARGET cliqo_kube_api)
    add_executable(test-kube-client ${E2E_DIR}/kube/test-kube-client.c)
    target_link_libraries(test-kube-client PRIVATE cliqo_kube_api PkgConfig::CMOCKA)
    add_test(NAME e2e.kube.client COMMAND test-kube-client)
    cliqo_e2e_on(single e2e.kube.client)

    # Failure handling (apiserver restarts, 410, limits, token rotation): the cluster's API server is stopped
    # and started, and comes back as it was.
    add_executable(test-kube-resilience ${E2E_DIR}/kube/test-kube-resilience.c)
    target_link_libraries(test-kube-resilience PRIVATE cliqo_kube_api PkgConfig::CMOCKA)
    add_test(NAME e2e.kuberes.resilience COMMAND test-kube-resilience)
    cliqo_e2e_on(single e2e.kuberes.resilience)

    # The protobuf decoder (src/kube/kpb.h) against the server's own JSON, object by object: every kind
    # of its schema, the objects of protobuf-objects.json and the benchmarks' templates. Needs the
    # generated schema (CLIQO_KPBGEN).
    if(CLIQO_KPBGEN)
        add_executable(test-kube-protobuf ${E2E_DIR}/kube/test-kube-protobuf.c)
        target_link_libraries(test-kube-protobuf PRIVATE cliqo_kube_api PkgConfig::CMOCKA)
        target_compile_definitions(test-kube-protobuf PRIVATE
                                   FIXTURES="${E2E_DIR}/kube/protobuf-objects.json")
        add_test(NAME e2e.kube.protobuf COMMAND test-kube-protobuf)
        cliqo_e2e_on(single e2e.kube.protobuf)
    endif()
endif()

# The tests' fast kubectl (kc_fast in lib.sh) against kubectl itself.
add_test(NAME e2e.kube.kc-fast COMMAND ${E2E_DIR}/kube/kc-fast.sh)
cliqo_e2e_on(single e2e.kube.kc-fast)

# Further groups register themselves in tests/e2e/<group>/e2e.cmake.
file(GLOB e2e_fragments ${E2E_DIR}/*/e2e.cmake)
foreach(frag ${e2e_fragments})
    include(${frag})
endforeach()

# The e2e lanes. Each e2e test runs in one of CLIQO_E2E_LANES lanes (default 2): inside a lane one test at a
# time and one group at a time (each group's `up`, and each test outside a group, waits for what came before
# it in its lane, in the order of the directory's TESTS property; RESOURCE_LOCK cliqo_e2e_lane<N>), and the
# lanes run side by side. Groups share nothing (ports from tests/ports.tsv, their own state directories,
# etcd data and agents), and a group keeps the machine's two cores mostly idle, waiting on real timers and
# API servers: measured on one, the peering group used 13 % of the CPUs; offloading and advertisement took
# 367 s side by side against 478 s one after the other. scripts/test.sh runs ctest -j3: the two lanes and
# the unit, lint and CLI tests beside them. A unit (an environment's up..down with every test on it, or a
# test outside a group) goes to lane 2 when it is listed in cliqo_e2e_lane2, else to lane 1; the lists are
# balanced by each unit's time beside the other lane (seconds, a quiet repeat round on a 2-core machine:
# lane 2 single 274, advertisement 457, secadmit 254, discovery 508, devenv 318, broker 440: 2,251; lane 1
# offloading 715, peering 433, security 418 (about 110 less since sa-tokens uses curl), nodesim 315, reflect
# 206, foundation 187, demo 174: 2,448 before that change). The broker group went to lane 2 when it came,
# where it also never meets the other four-cluster group, advertisement; lane 1 had been 2,680 s with it.
# The advertisement group grew with issue 24's assertions: 413 s alone, 712 s beside the security group (it
# had been 457 s beside the other lane), about 200 s more in lane 2 (333 s alone after the cuts that came
# next, so likely less); secadmit (254) went to lane 1 and
# foundation (187) to lane 2 to keep the lanes even: about 2,405 s for lane 1 and 2,380 for lane 2.
# The network group (real nodes, issue 21) went to lane 2: 243-305 s at a load of 10.
# Three lanes (the default since issue 21's data plane): a cold run here, at two lanes, spent 1,510 s in lane
# 1 and about 1,500 in lane 2 (its network group had waited 424 s for the node binaries), while the whole
# run used 28 minutes of CPU time in 42 minutes of two cores; the data plane's tests add about four minutes
# more. The two four-cluster groups (advertisement, broker) stay in one lane; the groups with real nodes
# (demo, network) go last in theirs, one after the other, since they wait for the node binaries that
# scripts/test.sh builds in the background (tests/e2e/network/binaries.sh) and nothing should wait behind
# them. Seconds of that cold run (load 10 to 20): lane 1 offloading 485, nodesim 296, security 124, reflect
# 74, devenv 53, foundation 40; lane 2 advertisement 588, secadmit 205, broker 190, peering 175; lane 3
# single 393, discovery 147, demo 143, network 100 and more. -DCLIQO_E2E_LANES=2 keeps the two lanes of
# before (lane 3's groups join lane 2), =1 runs every group in one lane.
# Two lanes again (the default since issue 22's CI ran out of time): on the 2-core machines CI runs on now,
# where a process switch and a page fault cost several times what they did, three lanes and the unit tests
# beside them made every test 4-6 times slower than alone (a load of 12-14: the devenv group took 566 s
# against 94 s alone, the peering group 955 s against 212 s, four tests timed out) and a warm run took 3,417 s.
# Two groups side by side measured 277 s against 306 s one after the other (peering and devenv, alone on the
# machine): a second lane still gains a little, a third lost it all. In the first warm run of two lanes, lane 2
# took 2,919 s (single 447, advertisement 818, broker 642, network 330, discovery 275, devenv 195, foundation
# 118, demo 94) and lane 1 2,435 s (offloading 1,123, peering 356, nodesim 336, secadmit 247, security 230,
# reflect 99): the discovery group went to lane 1, about 2,710 s against 2,644.
# Fewer environments (issue 22, the cold CI over 45 minutes): in a cold run lane 2 took 2,977 s (single and
# its groups 573, advertisement 748, foundation 121, devenv 325, broker 516, demo 237, network 462) and lane 1
# 2,778 (offloading 835, peering 348, security 344, nodesim 343, secadmit 268, reflect 105, discovery 528),
# and the suite's last 150 s ran on one core. secadmit's tests now run in the security group's shared state
# (one up, setup, teardown and down instead of two: 88 s) and peering's on the foundation group's clusters
# (37 s), a unit that goes to lane 1: about 2,780 s for lane 1 and 2,860 for lane 2. The broker group runs
# on the advertisement group's four clusters after its teardown (one up and down of four clusters fewer:
# about 80 s of lane 2), the reflect group on the offloading group's two clusters before its tests (37 s
# of lane 1). A unit is an environment with every group on it. The cold run that followed: lane 1 2,600 s,
# lane 2 2,708 s (network 586, advertisement 819, broker 286, devenv 171), 36 API server starts instead of 47.
set(CLIQO_E2E_LANES 2 CACHE STRING "how many e2e groups run side by side (1, 2 or 3)")
if(NOT CLIQO_E2E_LANES MATCHES "^[123]$")
    message(FATAL_ERROR "CLIQO_E2E_LANES must be 1, 2 or 3, not '${CLIQO_E2E_LANES}'")
endif()
set(cliqo_e2e_lane2 advertisement foundation)
set(cliqo_e2e_lane3 single discovery e2e.demo.binaries e2e.demo.run demo e2e.network.binaries network)
if(CLIQO_E2E_LANES EQUAL 2)
    set(cliqo_e2e_lane2 single advertisement e2e.devenv.lifecycle
        e2e.demo.binaries e2e.demo.run demo e2e.network.binaries network)
    set(cliqo_e2e_lane3 "")
endif()
get_property(cliqo_all_tests DIRECTORY PROPERTY TESTS)
# The groups with real nodes go last in their lane, the demo before the network group.
set(cliqo_e2e_last_tests "")
foreach(g demo network)
    set(g_tests ${cliqo_all_tests})
    list(FILTER g_tests INCLUDE REGEX "^e2e\\.${g}\\.")
    list(FILTER cliqo_all_tests EXCLUDE REGEX "^e2e\\.${g}\\.")
    list(APPEND cliqo_e2e_last_tests ${g_tests})
endforeach()
list(APPEND cliqo_all_tests ${cliqo_e2e_last_tests})
set(prev_last_1 "")
set(prev_last_2 "")
set(prev_last_3 "")
foreach(t ${cliqo_all_tests})
    if(NOT t MATCHES "^e2e\\.")
        continue()
    endif()
    get_property(req TEST ${t} PROPERTY FIXTURES_REQUIRED)
    if(t MATCHES "^e2e\\.(.+)\\.up$")
        set(unit ${CMAKE_MATCH_1})
        set(last e2e.${CMAKE_MATCH_1}.down)
    elseif(t MATCHES "^e2e\\.(.+)\\.down$")
        set(unit ${CMAKE_MATCH_1})
        set(last "")
    elseif(req)
        # inside its environment, between its up and its down: the lane of that environment
        list(FILTER req INCLUDE REGEX "^e2e_[^_]+$")
        string(REGEX REPLACE "^e2e_" "" unit "${req}")
        set(last "")
    else()
        set(unit ${t})
        set(last ${t})
    endif()
    set(lane 1)
    if(CLIQO_E2E_LANES GREATER 1 AND unit IN_LIST cliqo_e2e_lane2)
        set(lane 2)
    elseif(CLIQO_E2E_LANES GREATER 2 AND unit IN_LIST cliqo_e2e_lane3)
        set(lane 3)
    endif()
    set_property(TEST ${t} APPEND PROPERTY RESOURCE_LOCK cliqo_e2e_lane${lane})
    if(NOT last)
        continue()
    endif()
    if(prev_last_${lane})
        set_property(TEST ${t} APPEND PROPERTY DEPENDS ${prev_last_${lane}})
    endif()
    set(prev_last_${lane} ${last})
endforeach()
# bench/ comes later: its smoke run goes at the end of lane 1.
set(CLIQO_E2E_LAST ${prev_last_1} CACHE INTERNAL "the last e2e test of lane 1, which bench tests run after")
set(CLIQO_E2E_LAST_LOCK cliqo_e2e_lane1 CACHE INTERNAL "the lock of the lane bench tests run in")
