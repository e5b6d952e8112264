# The network group (tests/e2e/network/): two clusters with one real node each and no simulated node
# (`cliqoctl dev up --real-nodes 1`, docs/dataplane.md section 1: a kubelet, containerd and kube-proxy per
# cluster, in network namespaces the devenv makes and removes), base port from tests/ports.tsv. Needs root
# (the fixture fails with a clear message without it, never skips) and kubelet and kube-proxy: their
# directory is CLIQO_KUBE_NODE_BIN_DIR (`scripts/build-kube.sh --node` prints it; scripts/test.sh passes
# it). Empty, the group is not registered. The clusters' links to the host are 10.255.<i>.0/30 unless
# CLIQO_DEV_LINK_NET (exported before ctest) names other octets: two checkouts running this group at once need
# two values.
set(CLIQO_KUBE_NODE_BIN_DIR "" CACHE PATH
    "Directory with kubelet and kube-proxy (scripts/build-kube.sh --node; enables the e2e group network)")
if(NOT CLIQO_KUBE_NODE_BIN_DIR)
    message(STATUS "CLIQO_KUBE_NODE_BIN_DIR is not set: the e2e group network (real nodes) is not registered "
                   "(scripts/test.sh sets it from scripts/build-kube.sh --node)")
    return()
endif()
set(net_state ${E2E_ROOT}/network)
cliqo_port(e2e.network net_port 2)
set(net_env "CLIQOCTL=$<TARGET_FILE:cliqoctl>" "E2E_STATE=${net_state}" "CLIQO_KUBE_BIN_DIR=${CLIQO_KUBE_BIN_DIR}"
            "CLIQO_KUBE_NODE_BIN_DIR=${CLIQO_KUBE_NODE_BIN_DIR}" "CLIQO_DEV_DIR=${net_state}"
            "CLIQO_DEV_BASE_PORT=${net_port}" "CLIQO_DEV_NODES=0" ${CLIQO_E2E_DEV_SETTINGS})
# The binaries first (scripts/test.sh may still be building them): a unit of its own in the group's lane,
# just before its up, with room for a cold build.
add_test(NAME e2e.network.binaries COMMAND ${E2E_DIR}/network/binaries.sh)
set_tests_properties(e2e.network.binaries PROPERTIES FIXTURES_SETUP e2e_network_binaries
                     ENVIRONMENT "${net_env};TEST_NAME=e2e.network.binaries" LABELS e2e TIMEOUT 2700)
add_test(NAME e2e.network.up COMMAND ${E2E_DIR}/network/up.sh)
add_test(NAME e2e.network.down COMMAND ${E2E_DIR}/network/down.sh)
set_tests_properties(e2e.network.up PROPERTIES FIXTURES_SETUP e2e_network FIXTURES_REQUIRED e2e_network_binaries
                     ENVIRONMENT "${net_env}"
                     LABELS e2e TIMEOUT 300 RESOURCE_LOCK e2e_network)
set_tests_properties(e2e.network.down PROPERTIES FIXTURES_CLEANUP e2e_network ENVIRONMENT "${net_env}"
                     LABELS e2e TIMEOUT 120 RESOURCE_LOCK e2e_network)
foreach(t nodes)
    add_test(NAME e2e.network.${t} COMMAND ${E2E_DIR}/network/${t}.sh)
    set_tests_properties(e2e.network.${t} PROPERTIES FIXTURES_REQUIRED e2e_network
                         ENVIRONMENT "${net_env};TEST_NAME=e2e.network.${t}" LABELS e2e TIMEOUT 240
                         RESOURCE_LOCK e2e_network_clusters)
endforeach()
# The data plane (docs/dataplane.md, sections 2-4): `peer` installs cliqo, starts the agents, peers the two
# clusters and starts each gateway in its gateway node's namespaces; the tests after it share that state, one at
# a time in this order (`join` adds a real node to cluster-1 and runs `cliqo-agent node` there); `unpeer` ends
# the peering, checks that nothing is left, and stops everything it started.
# The agent's image for `deployed` (the agent and the gateway as pods from deploy/): CLIQO_IMAGE_AGENT_DIR is a
# directory with a release build's cliqo-agent and cliqo-broker (scripts/test.sh builds them), what users run;
# empty, the image holds this build's own (with the sanitizers' runtime libraries when it has them).
set(CLIQO_IMAGE_AGENT_DIR "" CACHE PATH
    "Directory with the cliqo-agent and cliqo-broker to put in the agent's image (e2e.network.deployed)")
set(net_image "")
if(CLIQO_IMAGE_AGENT_DIR)
    set(net_image "CLIQO_IMAGE_AGENT=${CLIQO_IMAGE_AGENT_DIR}/cliqo-agent"
                  "CLIQO_IMAGE_BROKER=${CLIQO_IMAGE_AGENT_DIR}/cliqo-broker")
elseif(TARGET cliqo-agent AND TARGET cliqo-broker)
    set(net_image "CLIQO_IMAGE_AGENT=$<TARGET_FILE:cliqo-agent>" "CLIQO_IMAGE_BROKER=$<TARGET_FILE:cliqo-broker>")
endif()
if(TARGET cliqo-agent)
    # `deployed` comes after `unpeer` and reuses the clusters: it uninstalls what the others installed, installs
    # cliqo with the agent and the gateway as pods, peers, offloads, and uninstalls again.
    set(net_dp_tests peer traffic offload join hostile restart unpeer deployed)
    set(prev nodes)
    foreach(t ${net_dp_tests})
        add_test(NAME e2e.network.${t} COMMAND ${E2E_DIR}/network/${t}.sh)
        set_tests_properties(e2e.network.${t} PROPERTIES FIXTURES_REQUIRED e2e_network
                             ENVIRONMENT "${net_env};${net_image};TEST_NAME=e2e.network.${t};CLIQO_AGENT=$<TARGET_FILE:cliqo-agent>"
                             LABELS e2e TIMEOUT 240 RESOURCE_LOCK e2e_network_clusters DEPENDS e2e.network.${prev})
        set(prev ${t})
    endforeach()
    # `deployed` takes 165-190 s (real kubelets start and stop the agent's and gateways' pods twice); on a
    # busy CI machine its last uninstall once ran it past 240 s.
    set_property(TEST e2e.network.deployed PROPERTY TIMEOUT 420)
    set_property(TEST e2e.network.peer APPEND PROPERTY FIXTURES_SETUP e2e_network_peered)
    set_property(TEST e2e.network.unpeer APPEND PROPERTY FIXTURES_CLEANUP e2e_network_peered)
    foreach(t traffic offload join hostile restart)
        set_property(TEST e2e.network.${t} APPEND PROPERTY FIXTURES_REQUIRED e2e_network_peered)
    endforeach()
endif()
