# The README's main command (scripts/demo.sh) with this build's binaries: two clusters with a real node each
# come up, peer, start their gateways, offload a namespace and run a web server there, fetched from cluster-1
# through its Service and answered on cluster-2; checked with kubectl, run again (idempotent), then --down.
# Real nodes need root and kubelet and kube-proxy (CLIQO_KUBE_NODE_BIN_DIR, as the network group): without
# that directory the group is not registered. e2e.demo.binaries waits for scripts/test.sh's background build of
# them (tests/e2e/network/binaries.sh). The demo goes last in its lane, just before the network group
# (tests/e2e/e2e.cmake), so the two are never up at once; the clusters' links to the host are 10.255.<i>.0/30
# unless CLIQO_DEV_LINK_NET (exported before ctest) names other octets, as for the network group.
if(TARGET cliqo-agent AND CLIQO_KUBE_NODE_BIN_DIR)
    cliqo_port(e2e.demo demo_port 2)
    set(demo_env "CLIQOCTL=$<TARGET_FILE:cliqoctl>" "E2E_STATE=${E2E_ROOT}/demo" "CLIQO_DEV_DIR=${E2E_ROOT}/demo"
                 "CLIQO_DEV_BASE_PORT=${demo_port}" "CLIQO_KUBE_BIN_DIR=${CLIQO_KUBE_BIN_DIR}"
                 "CLIQO_KUBE_NODE_BIN_DIR=${CLIQO_KUBE_NODE_BIN_DIR}" "CLIQO_DEMO_BIN_DIR=$<TARGET_FILE_DIR:cliqoctl>"
                 # the demo runs this build's agent, not the release agent of the network group's image:
                 # e2e.demo.binaries does not wait for that build (it waited 105 s of a cold run for it)
                 "CLIQO_IMAGE_AGENT_BUILD_STATUS=")
    add_test(NAME e2e.demo.binaries COMMAND ${E2E_DIR}/network/binaries.sh)
    set_tests_properties(e2e.demo.binaries PROPERTIES LABELS e2e TIMEOUT 2700
                         ENVIRONMENT "${demo_env};TEST_NAME=e2e.demo.binaries")
    # (DEPENDS, not a fixture: the lanes take a test requiring a fixture for a test of that environment)
    add_test(NAME e2e.demo.run COMMAND ${E2E_DIR}/demo/run.sh)
    set_tests_properties(e2e.demo.run PROPERTIES LABELS e2e TIMEOUT 600 RESOURCE_LOCK e2e_demo
                         DEPENDS e2e.demo.binaries ENVIRONMENT "${demo_env};TEST_NAME=e2e.demo.run")
elseif(TARGET cliqo-agent)
    message(STATUS "CLIQO_KUBE_NODE_BIN_DIR is not set: the e2e group demo (real nodes) is not registered")
endif()
