# The README's main command (scripts/demo.sh) with this build's binaries: two clusters come up, peer, offload
# a namespace and run a workload there; checked with kubectl, run again (idempotent), then --down.
if(TARGET cliqo-agent AND TARGET cliqo-nodesim)
    cliqo_port(e2e.demo demo_port 2)
    add_test(NAME e2e.demo.run COMMAND ${E2E_DIR}/demo/run.sh)
    set_tests_properties(e2e.demo.run PROPERTIES LABELS e2e TIMEOUT 420 RESOURCE_LOCK e2e_demo ENVIRONMENT
        "CLIQOCTL=$<TARGET_FILE:cliqoctl>;E2E_STATE=${E2E_ROOT}/demo;CLIQO_DEV_DIR=${E2E_ROOT}/demo;CLIQO_DEV_BASE_PORT=${demo_port};CLIQO_KUBE_BIN_DIR=${CLIQO_KUBE_BIN_DIR};CLIQO_DEMO_BIN_DIR=$<TARGET_FILE_DIR:cliqoctl>;TEST_NAME=e2e.demo.run")
endif()
