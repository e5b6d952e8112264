# The offloading group (tests/e2e/offloading/, docs/offloading.md): two clusters (base port 19400), the consumer
# A = cluster-1 and the provider B = cluster-2 with the same pod CIDR (so addresses are remapped both ways),
# three simulated nodes each. `setup` installs cliqo, starts one agent per cluster (local processes with their
# kubelet API on base+8 and webhooks on base+9, living for the whole group) and peers A with B until B's virtual
# node is Ready on A; the tests in between share that state and leave it as they found it; `teardown` unpeers,
# checks that both sides are clean and stops the agents. They run one at a time, in this order.
# The reflect group's test runs first on these clusters (tests/e2e/reflect/e2e.cmake, included here for that
# order): it needs them bare, and after the teardown cliqo's admission webhooks stay registered on both sides
# with no agent to answer them.
if(TARGET cliqo-agent)
    cliqo_e2e_env(offloading 2)
    set_property(TEST e2e.offloading.up APPEND PROPERTY ENVIRONMENT
        "CLIQO_DEV_NODES=3" "CLIQO_DEV_APF=1"
        "CLIQO_DEV_POD_CIDRS=cluster-1=10.210.0.0/16,cluster-2=10.210.0.0/16")
    include(${E2E_DIR}/reflect/e2e.cmake)
    cliqo_e2e_shared_group_on(offloading offloading setup namespaces webhook webhook-down offer mapping pods throttled
                              logs-exec objects agent-restart provider-down teardown)
endif()
